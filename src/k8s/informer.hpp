// Informers: a ListWatch on a thread of its own, with its own Transport, and a cache that
// other threads read.
//
//   - The cache: objects by key ("namespace/name", or "name" when cluster-scoped), each a
//     shared_ptr to an immutable Json. Readers take a Snapshot: an immutable map that is
//     built at most once per change (lazily, by the first reader after it) and shared by
//     every reader until the next one, so a reader never sees half of a change and never
//     blocks the informer for longer than a map copy of pointers. A (re)list is one change:
//     readers see the cache before it or after it, never in between.
//   - Handlers are called ON THE INFORMER'S THREAD, one event at a time, after the snapshot
//     that contains the change is published (a handler that reads snapshot() sees its own
//     event). A slow handler delays the informer's next event, not the readers; a handler
//     must not call stop() (it would join its own thread).
//   - No resync. client-go's resyncPeriod re-delivers every cached object to the handlers
//     on a timer, which hides handlers that drop events. gpubank's reconciler is
//     level-triggered: it recomputes from snapshots on its own schedule and uses events only
//     as a hint to run sooner, and a 410 relist already reports every difference (deletions
//     included). A resync would only repeat work.
//   - A dead informer is visible: when run() fails (403, repeated failures, a malformed
//     event), error() holds the ApiError, wait_for_sync returns it, on_error is called, and
//     running() is false. It is not restarted here: the caller decides (the controller exits
//     so that Kubernetes restarts it with fresh discovery and credentials).
//   - The thread is named "gpubank-inform" (top -H, /proc/PID/task/*/comm).
//   - stop() cancels the Transport (a blocked watch returns at once, even when the server
//     sends nothing) and joins the thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/expected.hpp"
#include "k8s/apply.hpp"
#include "k8s/list_watch.hpp"
#include "k8s/transport.hpp"

namespace gpubank::k8s {

using ObjectPtr = std::shared_ptr<const Json>;

// One consistent view of an informer's cache.
struct CacheSnapshot {
  std::map<std::string, ObjectPtr> objects;  // by key
  std::string resource_version;              // of the last change it contains
  std::uint64_t version = 0;                 // grows with every published change
  bool synced = false;                       // the first list is in it
};
using SnapshotPtr = std::shared_ptr<const CacheSnapshot>;

struct InformerOptions {
  // Page size, watch timeout, failure limit, transform. should_stop, on_list_begin and on_list_end are
  // the informer's own and are overwritten.
  ListWatchOptions list_watch{};
  // For the informer's own Transport (a shared RateLimiter goes here).
  TransportOptions transport{};
  // Called on the informer's thread when run() fails, before the thread ends.
  std::function<void(const ApiError&)> on_error{};
  // Called on the informer's thread, with no lock held, after it synced and after it ended
  // (stopped or failed): for a caller that waits on several informers at once.
  std::function<void()> on_state_change{};
};

class Informer {
 public:
  // `before` is null for an ADDED, `after` for a DELETED. Called on the informer's thread.
  using Handler = std::function<void(EventType type, const ObjectPtr& before, const ObjectPtr& after)>;

  // An informer for the collection at `collection` ("/api/v1/pods",
  // "/apis/kueue.x-k8s.io/v1beta2/workloads"): all namespaces unless the path names one.
  // Fails when its Transport cannot be created (TLS material).
  [[nodiscard]] static Expected<std::unique_ptr<Informer>> create(ClientConfig config, std::string collection,
                                                                  InformerOptions options = {});
  ~Informer();  // stop()
  Informer(const Informer&) = delete;
  Informer& operator=(const Informer&) = delete;

  // Before start() only.
  void add_handler(Handler handler);
  // Starts the thread; once.
  void start();
  // Cancels the watch without waiting (thread-safe, any thread, a handler's too).
  void request_stop();
  // request_stop(), then joins the thread; idempotent; not from a handler (it would join
  // its own thread). A stopped informer keeps its last snapshot.
  void stop();

  // The first list is in the cache.
  [[nodiscard]] bool has_synced() const;
  // Waits until synced (success), the informer died (its error), it was stopped (reason
  // "Stopped") or `timeout` passed (reason "Timeout"). Condition-variable wait: returns as
  // soon as any of them happens.
  [[nodiscard]] ApiResult<std::monostate> wait_for_sync(std::chrono::milliseconds timeout) const;

  // The current view; never null (empty before the first list).
  [[nodiscard]] SnapshotPtr snapshot() const;
  // One object by key, or null.
  [[nodiscard]] ObjectPtr get(std::string_view key) const;

  // The thread is alive (started, not stopped, not failed).
  [[nodiscard]] bool running() const;
  // Why run() ended, when it ended with an error.
  [[nodiscard]] std::optional<ApiError> error() const;
  [[nodiscard]] const std::string& collection() const;
  // The ListWatch's counters as of the last change (lists, watches, 410s).
  [[nodiscard]] ListWatchStats stats() const;

 private:
  struct Impl;
  explicit Informer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// ---- The kinds the controller watches ----

struct InformedKind {
  std::string api_version;  // "v1", "kueue.x-k8s.io/v1beta2"
  std::string kind;         // "Pod"
  friend bool operator==(const InformedKind&, const InformedKind&) = default;
};

// core v1 Nodes and Pods; Kueue v1beta2 Workloads, ClusterQueues, Cohorts, LocalQueues; the
// six platform.gpubank.dev/v1alpha1 kinds.
[[nodiscard]] std::vector<InformedKind> controller_kinds();

// One informer per kind, each resolved through the RESTMapper (the plural and scope from
// discovery) and watching all namespaces.
class InformerSet {
 public:
  // Fails naming the kind when discovery does not list it (a CRD not installed).
  [[nodiscard]] static Expected<std::unique_ptr<InformerSet>> create(const ClientConfig& config, const RestMapper& mapper,
                                                                     const std::vector<InformedKind>& kinds,
                                                                     const InformerOptions& options = {});
  ~InformerSet();  // stop()

  // The informer of a kind (to add handlers before start(), or to read); null when the set
  // has none.
  [[nodiscard]] Informer* find(std::string_view api_version, std::string_view kind) const;
  [[nodiscard]] const std::vector<std::pair<InformedKind, std::unique_ptr<Informer>>>& informers() const {
    return informers_;
  }

  void start();
  // Stops every informer (cancel all first, then join: they stop in parallel).
  void stop();
  // All synced (success); or as soon as any informer ends unsynced or dies, its error (the
  // kind named; "Stopped" when stopped); or "Timeout" naming those not synced yet, after
  // `timeout`. Condition-variable wait, woken by every informer's on_state_change.
  [[nodiscard]] ApiResult<std::monostate> wait_for_sync(std::chrono::milliseconds timeout) const;
  // The informers that died, with their errors.
  [[nodiscard]] std::vector<std::pair<InformedKind, ApiError>> errors() const;

 private:
  struct Sync;  // what wait_for_sync waits on
  InformerSet();
  std::shared_ptr<Sync> sync_;
  std::vector<std::pair<InformedKind, std::unique_ptr<Informer>>> informers_;
};

}  // namespace gpubank::k8s
