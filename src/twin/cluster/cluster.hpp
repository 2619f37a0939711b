// The twin's cluster state: which GPUs are free, used or unhealthy, and where a workload's
// pods go once admission has given it quota, decided the way kube-scheduler (with the
// NVIDIA device plugin) would decide it. Single-threaded and deterministic: the same
// inventory and the same calls give the same placements.
//
// Units. The schedulable unit is a GPU, or a MIG slice on a MIG node (the slice keeps its
// parent GPU for labels and health). Nodes, GPUs and units have dense ids in inventory
// order (units: node by node, GPU by GPU, slice by slice).
//
// Filtering (kube-scheduler's NodeAffinity, TaintToleration and the device plugin's
// resource fit): a node is a candidate when every node_selector label matches, every
// NoSchedule and NoExecute taint is tolerated, its GPU model is in gpu_models (empty: any),
// and it has enough free healthy units. Tolerations match taints as in Kubernetes: same
// key (an empty key with Exists matches every key), Exists or the same value, the same
// effect or no effect.
//
// Scoring, in this order (kube-scheduler's weighted sum replaced by a fixed order so that
// the result is easy to predict and test):
//  1. PreferNoSchedule: nodes with an untolerated PreferNoSchedule taint are used only when
//     no placement exists without them.
//  2. Whole devices (gpu_milli 0), one pod: best fit, the node left with the fewest free
//     units after the pod (keeps whole nodes free for big shapes); ties by node order. A
//     pod takes the lowest free unit ids of its node.
//  3. Whole devices, gang (pods > 1, all pods at once or none, each pod on one node): the
//     gang goes either onto one node without a fabric (all pods on that node) or onto the
//     nodes of one RDMA fabric. Among those that fit, the one left with the fewest free
//     units (the single node's free units, or all the fabric's matching free units) after
//     the gang; ties by the lowest node id the gang uses. Within a fabric, pods go one by
//     one to the best-fit node, i.e. nodes in order of free units, then node order, each
//     taking as many pods as it can.
//  4. Shared fractions (gpu_milli 1..999, one GPU per pod): the GPU with the least milli
//     left that still fits, among GPUs holding only shared work; ties by unit order. When
//     none fits, a free GPU on the best-fit node (as in 2). A shared GPU never holds
//     whole-device work and a GPU with shared work is never given whole. The fabric rule
//     does not apply: shared pods are independent replicas (placed all or none).
//
// Cost: nodes are grouped into classes (same labels, taints, model, fabric, units per
// node) and within a class indexed by their number of free units, so an attempt costs
// O(matching classes) plus the pods it places, never a scan of all nodes; filter results
// per request shape are memoised.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/expected.hpp"
#include "twin/cluster/inventory.hpp"

namespace gpubank::twin::cluster {

using NodeId = std::uint32_t;
using GpuId = std::uint32_t;
using UnitId = std::uint32_t;

inline constexpr int kMilliPerGpu = 1000;

enum class TolerationOperator { Equal, Exists };

struct Toleration {
  std::string key;  // empty with Exists: every key
  TolerationOperator op = TolerationOperator::Equal;
  std::string value;
  std::optional<TaintEffect> effect;  // empty: every effect
};

struct PlacementRequest {
  std::string workload;  // the workload's key, for bind and messages
  int pods = 1;
  int gpus_per_pod = 1;  // units (MIG slices on MIG nodes)
  int gpu_milli = 0;     // 0: whole devices; 1..999: one shared fraction per pod (gpus_per_pod 1)
  std::map<std::string, std::string> node_selector;
  std::vector<Toleration> tolerations;
  std::vector<std::string> gpu_models;  // allowed; empty: any
};

struct PodPlacement {
  NodeId node = 0;
  std::vector<UnitId> units;
  friend bool operator==(const PodPlacement&, const PodPlacement&) = default;
};

struct Placement {
  std::vector<PodPlacement> pods;
  int gpu_milli = 0;  // as requested: 0 whole units, else the fraction each pod holds
  friend bool operator==(const Placement&, const Placement&) = default;
};

// Why a request does not fit (or that it does), with the numbers for a message.
struct Explanation {
  bool fits = false;
  bool invalid = false;          // the request itself is malformed (see message)
  int nodes_total = 0;
  int rejected_by_selector = 0;  // first failing filter per node, in this order
  int rejected_by_taint = 0;
  int rejected_by_model = 0;
  int nodes_matching = 0;        // pass the three filters
  std::int64_t free_units = 0;   // free healthy units on matching nodes
  std::int64_t unhealthy_units = 0;
  int most_free_on_one_node = 0;
  int nodes_with_room = 0;       // matching nodes with room for one pod
  int pods_that_fit = 0;         // the most pods of the shape placeable together (gang rule included)
  int most_milli_left = 0;       // shared requests: the most milli left on one shared or free GPU
  // e.g. "needs 4 GPUs on one node; 2 nodes match, the most free on one node is 3 (6 free
  // in total)".
  std::string message;
};

// Free, used and unhealthy units of one pool (the nodes whose kPoolLabel has that value;
// "" for nodes without one), and what is stranded.
struct PoolUsage {
  std::int64_t units = 0;      // all units
  std::int64_t free = 0;       // healthy, holding nothing
  std::int64_t used = 0;       // holding whole or shared work (healthy or not)
  std::int64_t unhealthy = 0;  // unhealthy, holding nothing or something
  std::int64_t used_milli = 0; // whole units count 1000, shared ones the fractions held
  std::int64_t stranded = 0;   // fragmentation(): free units no pending shape can use
  std::int64_t shared_milli_left = 0;      // fragmentation(): milli left on shared units
  std::int64_t shared_milli_stranded = 0;  // ... that no pending shared shape fits in
  friend bool operator==(const PoolUsage&, const PoolUsage&) = default;
};

// Fragmentation relative to the pending demand's shapes, after "Beware of Fragmentation"
// (Weng et al., USENIX ATC 2023): free capacity counts as fragmented not in itself but
// when the workloads that want it cannot use it. Precisely, per pool P:
//  - the demand of P is the pending requests that could use at least one node of P if it
//    were empty (selector, taints, model, and the shape fits the node's units);
//  - a free unit on node n of P is usable when some demand request R matches n and fits
//    on n as it is now: for whole devices free(n) >= R's units per pod (a multi-pod R on a
//    node without fabric: free(n) >= pods x units), for shared R free(n) >= 1;
//  - stranded(P) = free units of P that are not usable (0 when P has no demand: idle
//    capacity without demand is not fragmentation);
//  - shared_milli_stranded(P): milli left on shared units of P that no shared demand
//    request matching the node fits in.
// Example: two matching nodes with 3 free GPUs each, pending shapes all needing 4 GPUs on
// one node: 6 stranded.
struct FragmentationReport {
  std::map<std::string, PoolUsage> pools;  // by pool name
  PoolUsage total;
};

struct Gpu {
  NodeId node = 0;
  int index = 0;            // on its node
  std::string uuid;         // GPU-<uuid v5>
  std::string pci_bus_id;   // 00000000:<bus>:00.0
  std::string device;       // nvidia<index>
  UnitId first_unit = 0;    // its units are first_unit .. first_unit + units - 1
  int units = 1;            // MIG slices, or 1
  bool healthy = true;
  std::int64_t xid_errors = 0;  // XID events reported through set_gpu_health
  int last_xid = 0;
  std::int64_t ecc_dbe = 0;     // double-bit ECC errors since the driver loaded (volatile)
};

struct Unit {
  NodeId node = 0;
  GpuId gpu = 0;
  int slice = -1;           // MIG slice index on its GPU; -1 for a whole GPU
  std::string uuid;         // the GPU's uuid, or MIG-<uuid v5> for a slice
  int used_milli = 0;       // 1000 when whole; the sum of fractions when shared
  bool whole = false;       // bound as a whole device
  bool healthy = true;
};

class Cluster {
 public:
  // Throws std::invalid_argument for a node with more than 127 units or a name given twice
  // (inventories from the parsers above never have them).
  explicit Cluster(Inventory inventory);
  ~Cluster();
  Cluster(Cluster&&) noexcept;
  Cluster& operator=(Cluster&&) noexcept;
  Cluster(const Cluster&) = delete;
  Cluster& operator=(const Cluster&) = delete;

  // Where the request's pods would go now; nullopt when they do not all fit (or the
  // request is malformed: pods or gpus_per_pod < 1, gpu_milli outside 0..999, gpu_milli
  // with gpus_per_pod != 1).
  [[nodiscard]] std::optional<Placement> find(const PlacementRequest& request) const;
  // Why find() gives what it gives, with numbers. Scans the matching nodes: for messages,
  // not for every attempt.
  [[nodiscard]] Explanation explain(const PlacementRequest& request) const;

  // Takes the placement's units for the workload; an error (and no change) when the
  // workload is already bound, or a unit is not free enough, unhealthy, or not on the pod's
  // node.
  Expected<bool> bind(const std::string& workload, const Placement& placement);
  // Gives the workload's units back. Releasing a released workload does nothing; a
  // workload never bound is an error.
  Expected<bool> release(const std::string& workload);
  [[nodiscard]] const Placement* placement_of(std::string_view workload) const;

  // Marks a GPU (a GPU-... uuid: the GPU and all its slices; a MIG-... uuid: that slice)
  // healthy or not, counting an XID event when xid != 0. Returns the workloads bound to
  // what it marked (sorted, each once), which the engine fails or requeues; unhealthy units
  // are never chosen. Unknown uuid: an error.
  Expected<std::vector<std::string>> set_gpu_health(std::string_view uuid, bool healthy, int xid = 0);
  // Counts double-bit ECC errors on a GPU (or the parent GPU of a MIG slice); n >= 0.
  Expected<bool> add_ecc_errors(std::string_view uuid, std::int64_t n);

  [[nodiscard]] FragmentationReport fragmentation(std::span<const PlacementRequest> pending) const;

  // ---- reading the state ----
  [[nodiscard]] const Inventory& inventory() const { return inventory_; }
  [[nodiscard]] std::size_t node_count() const { return inventory_.nodes.size(); }
  [[nodiscard]] const NodeSpec& node(NodeId id) const { return inventory_.nodes[id]; }
  [[nodiscard]] std::optional<NodeId> find_node(std::string_view name) const;
  [[nodiscard]] int node_free(NodeId id) const;   // free healthy units
  [[nodiscard]] int node_units(NodeId id) const;
  [[nodiscard]] UnitId node_first_unit(NodeId id) const;

  [[nodiscard]] std::size_t gpu_count() const { return gpus_.size(); }
  [[nodiscard]] const Gpu& gpu(GpuId id) const { return gpus_[id]; }
  [[nodiscard]] std::optional<GpuId> find_gpu(std::string_view uuid) const;
  [[nodiscard]] std::size_t unit_count() const { return units_.size(); }
  [[nodiscard]] const Unit& unit(UnitId id) const { return units_[id]; }
  // The workloads holding a unit / any unit of a GPU, in binding order.
  [[nodiscard]] std::vector<std::string> workloads_on_unit(UnitId id) const;
  [[nodiscard]] std::vector<std::string> workloads_on_gpu(GpuId id) const;

  // Free, used and unhealthy units per pool (stranded fields 0: see fragmentation()).
  [[nodiscard]] PoolUsage pool_usage(std::string_view pool) const;
  [[nodiscard]] std::vector<std::string> pool_names() const;  // sorted

  struct State;  // indexes, bindings and the filter memo; defined in cluster.cpp

 private:
  Inventory inventory_;
  std::vector<Gpu> gpus_;
  std::vector<Unit> units_;
  std::unique_ptr<State> state_;
};

}  // namespace gpubank::twin::cluster
