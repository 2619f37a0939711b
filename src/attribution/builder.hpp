// SnapshotBuilder: metasync's pure core. It hears pod events (the pod as the API server
// reports it, or a PodMeta) with the time, and keeps per node the pods by UID, from which it
// produces each node's NodeSnapshot. No I/O, no clock of its own.
//
// What is pinned and what may change (docs/attribution.md, "Pinning"):
//   - A UID's attribution (business_group ... model_version, the workload) is what the pod
//     carried when metasync first saw it. A later label change (a re-organisation) does not
//     rewrite it: the samples of a running pod keep the group it started under.
//   - Later events may change only: the node, once, from none (pending) to the node the pod
//     was scheduled on (spec.nodeName is immutable after that); the pod's end, when it is
//     deleted or finishes (phase Succeeded/Failed), which makes it a tombstone (deleted_ms);
//     and keep_running_until, the low-utilisation exception an owner may add or withdraw
//     while the pod runs (it says nothing about who the pod belongs to).
//   - A tombstone stays in its node's snapshot for the tombstone period, then expire()
//     removes it. A finished pod that the API server still lists is remembered as retired
//     (not in any snapshot) until it is deleted, so that its later events do not bring it
//     back.
//   - The key is the UID: a pod re-created under the same name, on the same node or another
//     one, is a new UID with its own attribution and never inherits the old one's.
//   - A node's generation grows only when its snapshot's content changes; it is then
//     max(generation + 1, now_ms), so that it also grows across a restart of metasync (an
//     exporter's cached ETag never matches other content). produced_ms is the time of that
//     change. A node stays known (with its generation) after its last pod expired.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "attribution/labels.hpp"
#include "attribution/snapshot.hpp"

namespace gpubank::attribution {

struct BuilderOptions {
  std::chrono::milliseconds tombstone = std::chrono::minutes(5);
};

class SnapshotBuilder {
 public:
  explicit SnapshotBuilder(BuilderOptions options = {});

  // ADDED or MODIFIED (a re-list's too): the pod as it is now. Returns the nodes whose
  // snapshot changed. A pod pod_meta_from_json refuses is counted (rejected()) and ignored.
  std::vector<std::string> upsert(const nlohmann::json& pod, std::int64_t now_ms);
  // The same from a PodMeta (its deleted_ms is ignored); `finished`: phase Succeeded/Failed.
  std::vector<std::string> upsert(const PodMeta& pod, bool finished, std::int64_t now_ms);
  // DELETED: the pod becomes a tombstone (or is forgotten, when it never had a node).
  std::vector<std::string> remove(std::string_view uid, std::int64_t now_ms);
  // An informer's change, as k8s::ObjectStore reports it: `before` null for an addition,
  // `after` null for a deletion. A change whose UID differs from the one before (a re-list
  // that finds a name re-created while the watch was down) deletes the old UID first.
  std::vector<std::string> apply(const nlohmann::json* before, const nlohmann::json* after, std::int64_t now_ms);
  // Removes the tombstones older than the tombstone period.
  std::vector<std::string> expire(std::int64_t now_ms);

  [[nodiscard]] std::optional<NodeSnapshot> snapshot(std::string_view node) const;
  [[nodiscard]] std::int64_t generation(std::string_view node) const;  // 0: unknown node
  [[nodiscard]] std::vector<std::string> nodes() const;

  struct Counts {
    std::size_t live = 0;        // in a node's snapshot, not deleted
    std::size_t tombstones = 0;  // in a node's snapshot, deleted or finished
    std::size_t pending = 0;     // not scheduled yet
    std::size_t retired = 0;     // finished, expired, still listed by the API server
    std::size_t nodes = 0;
  };
  [[nodiscard]] Counts counts() const;
  [[nodiscard]] const LabelStats& stats() const { return stats_; }
  [[nodiscard]] std::uint64_t rejected() const { return rejected_; }
  [[nodiscard]] const std::string& last_rejection() const { return last_rejection_; }

 private:
  struct Entry {
    PodMeta meta;
    bool gone = false;     // the API server deleted it
    bool retired = false;  // out of every snapshot, kept only to ignore its events
  };
  struct NodeState {
    std::int64_t generation = 0;
    std::int64_t produced_ms = 0;
    std::set<std::string, std::less<>> uids;
  };
  void bump(const std::string& node, std::int64_t now_ms, std::vector<std::string>& changed);
  void end(Entry& entry, std::int64_t now_ms, std::vector<std::string>& changed);

  BuilderOptions options_;
  std::map<std::string, Entry, std::less<>> pods_;
  std::map<std::string, NodeState, std::less<>> nodes_;
  std::set<std::pair<std::int64_t, std::string>> expiry_;  // (deleted_ms, uid) of tombstones
  LabelStats stats_;
  std::uint64_t rejected_ = 0;
  std::string last_rejection_;
};

}  // namespace gpubank::attribution
