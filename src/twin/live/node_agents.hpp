// The node agents of `gpubank up`: what `gpubank metasync` and each node's `gpubank
// exporter` do on a cluster, done on the twin with their code, so that the attributed series
// of /metrics are the exporter's and not a second implementation (docs/attribution.md, "On
// the twin").
//
//   the twin's pods (Pod objects as the API server reports them)
//       -> metasync's SnapshotBuilder (UID-keyed, pinned, tombstones)   -> a snapshot per node
//   each node's dcgm-exporter page (twin/telemetry/dcgm.hpp)
//     + the kubelet's PodResources view of the pods on it (device IDs as the kubelet writes them)
//     + the node's NVML inventory (MIG device UUIDs)
//     + its snapshot                                  -> attribution::enrich -> the node's page
//   the nodes' pages, merged family by family         -> /metrics
//
// What the twin cannot reproduce, it does not pretend to: no HTTP between the parts, and the
// snapshot is handed over in memory rather than signed and verified (the builder and the join
// are the parts that decide; the wire is tested on its own in tests/attribution).
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "attribution/builder.hpp"
#include "attribution/enrich.hpp"
#include "metrics/exposition.hpp"
#include "node/nvml.hpp"
#include "node/pod_resources.hpp"

namespace gpubank::twin::live {

// A GPU node of the twin: what its exporter knows of itself, and its dcgm-exporter's page.
struct TwinNode {
  attribution::NodeInfo info;
  metrics::Exposition dcgm;
  std::vector<node::GpuDevice> inventory;
};

// What the twin knows of one pod, for pod_object().
struct TwinPodSpec {
  std::string namespace_name, name, node, uid;
  std::string created;  // RFC 3339: the admission that started the pod, in virtual time
  std::string business_group, cost_center, owner_id, workload_type, queue;
  // The governance labels (docs/attribution.md): serving-floor, burst-headroom,
  // borrowable-cold or empty; checkpointable writes "true", the one value admission lets a
  // workload carry (absent otherwise, as on a cluster).
  std::string capacity_role;
  bool checkpointable = false;
  // The top-level owner: an inference replica belongs to a Deployment (through a ReplicaSet
  // named <workload>-<pod-template-hash>), everything else to a batch/v1 Job.
  bool deployment = false;
  std::string workload, workload_uid;
  std::map<std::string, std::string> labels;  // the workload's own labels
};

// The Pod object for `spec`: the labels admission writes (business group, cost centre), the
// owner's, Kueue's queue label, the governance labels, the controller ownerReference,
// creationTimestamp, spec.nodeName and phase Running, so that
// attribution::pod_meta_from_json reads it as it reads a cluster's pod.
[[nodiscard]] nlohmann::json pod_object(const TwinPodSpec& spec);

// A pod of the twin: what it is (its Pod object is built from this only when metasync first
// sees it, not on every scrape), and the devices the kubelet would report for its containers.
struct TwinPod {
  TwinPodSpec spec;
  std::vector<node::DeviceAllocation> devices;
};

// A pod UID for the twin: uuid5 over "<kind>/<namespace>/<name>/<epoch>", so that the same
// pod of the same admission keeps its UID and a re-admission gets a new one.
[[nodiscard]] std::string twin_uid(std::string_view kind, std::string_view namespace_name, std::string_view name,
                                   int epoch);

class NodeAgents {
 public:
  // One scrape at `now_ms`: `pods` are every pod that holds devices now (a pod not in the
  // list any more was deleted: a tombstone for the tombstone period), `nodes` every GPU node
  // with its page. Returns the exporter pages of all nodes, merged by family (the nodes in
  // the order given), without the exporters' self-metrics.
  [[nodiscard]] metrics::Exposition scrape(std::span<const TwinPod> pods, std::span<const TwinNode> nodes,
                                           std::int64_t now_ms);

  // The join's figures of the last scrape, summed over nodes.
  [[nodiscard]] const attribution::EnrichStats& last_stats() const { return stats_; }
  [[nodiscard]] const attribution::SnapshotBuilder& builder() const { return builder_; }

 private:
  attribution::SnapshotBuilder builder_;
  std::set<std::string, std::less<>> live_;  // UIDs of the pods of the last scrape
  attribution::EnrichStats stats_;
};

}  // namespace gpubank::twin::live
