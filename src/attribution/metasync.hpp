// `gpubank metasync`, the running service: one informer on core/v1 Pods (one list/watch for
// every node), a SnapshotBuilder fed from its event handler, and the snapshots served:
//
//   GET /v1/nodes/<node>/snapshot   the node's signed snapshot (snapshot.hpp's wire form),
//                                   strong ETag "<node>.<generation>"; If-None-Match that
//                                   matches: 304; an unknown node: 404 with a JSON error
//   GET /healthz                    200 while the informer runs, 500 once it died
//   GET /readyz                     200 once the first list is in (and, with an output
//                                   directory, every node's file was written), else 503
//   GET /metrics                    self-metrics (docs/attribution.md lists them)
//
// and/or one file per node, <out_dir>/<node>.json, replaced atomically when its generation
// changes. A relist after 410 Gone or a dropped watch reports only differences (the
// informer's store diff), and the builder bumps a generation only for a change of content,
// so recovery makes no new generations when nothing changed.
//
// Memory: the informer's store and cache keep pods pruned by prune_pod (a transform on the
// list/watch), not whole objects; the builder keeps one PodMeta per pod.
//
// Threads: the informer's (events into the builder), one flusher (tombstone expiry and file
// writes, every flush_interval or when woken), the HTTP servers'. One mutex guards the
// builder and the encoded snapshots.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>

#include "attribution/builder.hpp"
#include "core/expected.hpp"
#include "k8s/informer.hpp"

namespace gpubank::attribution {

struct MetasyncOptions {
  std::string hmac_key{};  // at least kMinKeyBytes
  std::chrono::milliseconds tombstone = std::chrono::minutes(5);
  // The snapshot endpoint (with /healthz, /readyz, /metrics); port -1: none, 0: any free one.
  std::string listen_address = "127.0.0.1";
  int listen_port = -1;
  // /healthz, /readyz and /metrics alone, on a port of their own; -1: none, 0: any.
  std::string health_address = "0.0.0.0";
  int health_port = -1;
  // One file per node; empty: none.
  std::string out_dir{};
  // How often tombstones expire and changed files are written (at most).
  std::chrono::milliseconds flush_interval = std::chrono::milliseconds(200);
  k8s::InformerOptions informer{};
  // Wall clock in milliseconds since 1970; tests give their own.
  std::function<std::int64_t()> now_ms{};
  std::function<void(const std::string&)> log{};
};

class Metasync {
 public:
  // Checks the options (key length, the output directory) and creates the informer.
  [[nodiscard]] static Expected<std::unique_ptr<Metasync>> create(k8s::ClientConfig config, MetasyncOptions options);
  ~Metasync();  // stop()
  Metasync(const Metasync&) = delete;
  Metasync& operator=(const Metasync&) = delete;

  // Binds the ports (the error names the option), starts the informer and the flusher.
  [[nodiscard]] Expected<bool> start();
  // Until `stop` is requested (success) or the informer dies (its error).
  [[nodiscard]] Expected<bool> run(std::stop_token stop);
  void stop();

  [[nodiscard]] int port() const;         // the snapshot endpoint's, -1 when none
  [[nodiscard]] int health_port() const;  // -1 when none
  [[nodiscard]] k8s::ApiResult<std::monostate> wait_for_sync(std::chrono::milliseconds timeout) const;
  [[nodiscard]] bool ready() const;

  // What the endpoint would serve now (tests, the twin).
  [[nodiscard]] std::optional<NodeSnapshot> snapshot(std::string_view node) const;
  // Expires tombstones and writes changed files now, instead of at the next interval.
  void flush();
  [[nodiscard]] std::string metrics_text() const;
  [[nodiscard]] k8s::ListWatchStats watch_stats() const;

 private:
  struct Impl;
  explicit Metasync(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// The strong ETag of a node's generation, quoted: "\"gpu-node-1.1733251200000\"".
[[nodiscard]] std::string snapshot_etag(std::string_view node, std::int64_t generation);
// Whether an If-None-Match header (a list of entity tags, weak ones too, or "*") matches.
[[nodiscard]] bool if_none_match(std::string_view header, std::string_view etag);

}  // namespace gpubank::attribution
