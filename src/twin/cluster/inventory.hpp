// The twin's cluster inventory: which nodes exist, their GPUs (model, count, memory, MIG
// layout), labels, taints and RDMA fabric. Two sources:
//
// 1. An Inventory YAML file (docs/twin-cluster.md, examples/inventory/example.yaml):
//
//   kind: Inventory
//   nodeGroups:                  # `count` identical nodes named <namePrefix>-<NN>
//   - namePrefix: h100-train     # NN: 0-based, zero-padded to max(2, digits of count-1)
//     count: 8                   # 1..10000
//     gpuModel: H100             # short model name, what scenarios' gpuModels list
//     product: NVIDIA-H100-80GB-HBM3   # optional: the nvidia.com/gpu.product label
//     gpusPerNode: 8             # 1..16 physical GPUs
//     gpuMemory: 80Gi            # quantity, per GPU
//     nvlink: true               # optional (false)
//     fabric: rdma-a             # optional RDMA fabric id; empty: none
//     labels: {platform.gpubank.dev/pool: h100-rdma-training}
//     taints: [{key: platform.gpubank.dev/pool, value: h100-rdma-training, effect: NoSchedule}]
//     mig: {profile: 1g.10gb, slicesPerGpu: 7}   # optional; sliceMemory defaults to the
//                                                # profile's (10gb: 10Gi)
//     cpu: "96"                  # optional quantities (0: unknown)
//     memory: 1Ti
//   nodes:                       # optional single nodes: the same fields with `name`
//   - {name: a100-dev, gpuModel: A100, gpusPerNode: 8, gpuMemory: 80Gi}
//
//   A node's labels get `nvidia.com/gpu.product: <product>` (when product is set) and, on
//   MIG nodes, `nvidia.com/mig.config: all-<profile>`, as GPU feature discovery and the
//   MIG manager label real nodes; an explicit label with another value is an error.
//
// 2. The Alibaba GPU trace v2023 node list (openb_node_list_gpu_node.csv, header
//    `sn,cpu_milli,memory_mib,gpu,model`): one node per row named by `sn`, labelled with
//    the pool alibaba_pool_for_model(model); rows with 0 GPUs (CPU-only nodes) are skipped.
//    GPU memory per model (the trace has none): P100 16 GiB, T4 16 GiB, V100M16 16 GiB,
//    V100M32 32 GiB, A10 24 GiB; G2 and G3 are anonymised in the trace, assumed 32 GiB
//    (like V100M32; only metrics read it); an unknown model gets 0 (unknown) and a warning.
//    No fabric and no NVLink: the trace's pods are single pods.
//
// Both report every problem through Diagnostics with a field path (YAML) or line and
// column name (CSV) and a rule id, and reject oversized or hostile input; nothing is
// returned then.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/diagnostic.hpp"

namespace gpubank::twin::cluster {

inline constexpr std::string_view kRuleInventoryKind = "inventory.kind";
inline constexpr std::string_view kRuleDuplicateNode = "inventory.duplicate-node";
inline constexpr std::string_view kRuleTooManyNodes = "inventory.too-many-nodes";
inline constexpr std::string_view kRuleTooManyGpus = "inventory.too-many-gpus";
inline constexpr std::string_view kRuleMigLayout = "inventory.mig-layout";
inline constexpr std::string_view kRuleLabel = "inventory.label";
inline constexpr std::string_view kRuleLabelConflict = "inventory.label-conflict";
inline constexpr std::string_view kRuleCsvHeader = "alibaba.header";
inline constexpr std::string_view kRuleCsvColumns = "alibaba.columns";
inline constexpr std::string_view kRuleCsvNumber = "alibaba.number";
inline constexpr std::string_view kRuleUnknownModel = "alibaba.unknown-model";

// The label that names a node's resource pool (the policies' pools select on it).
inline constexpr std::string_view kPoolLabel = "platform.gpubank.dev/pool";
inline constexpr std::string_view kProductLabel = "nvidia.com/gpu.product";
inline constexpr std::string_view kMigConfigLabel = "nvidia.com/mig.config";

enum class TaintEffect { NoSchedule, PreferNoSchedule, NoExecute };

struct Taint {
  std::string key;
  std::string value;
  TaintEffect effect = TaintEffect::NoSchedule;
  friend bool operator==(const Taint&, const Taint&) = default;
};

struct MigLayout {
  std::string profile;              // "1g.10gb"
  int slices_per_gpu = 0;           // 7
  std::int64_t slice_memory_mib = 0;
  friend bool operator==(const MigLayout&, const MigLayout&) = default;
};

struct NodeSpec {
  std::string name;
  std::string gpu_model;  // short name: H100, A100, L40S, V100M16, T4
  std::string product;    // nvidia.com/gpu.product value; may be empty
  int gpus = 0;           // physical GPUs
  std::int64_t gpu_memory_mib = 0;  // per GPU; 0 = unknown
  bool nvlink = false;
  std::string fabric;     // RDMA fabric id; empty = none
  std::map<std::string, std::string> labels;  // including the derived ones (see above)
  std::vector<Taint> taints;
  std::optional<MigLayout> mig;
  std::int64_t cpu_milli = 0;   // 0 = unknown
  std::int64_t memory_mib = 0;  // 0 = unknown

  // Schedulable devices: GPUs, or MIG slices on a MIG node.
  [[nodiscard]] int units() const { return mig ? gpus * mig->slices_per_gpu : gpus; }
  // The value of kPoolLabel, or empty.
  [[nodiscard]] std::string_view pool() const;
  friend bool operator==(const NodeSpec&, const NodeSpec&) = default;
};

struct Inventory {
  std::vector<NodeSpec> nodes;

  [[nodiscard]] std::int64_t gpu_count() const;   // physical GPUs
  [[nodiscard]] std::int64_t unit_count() const;  // GPUs, counting MIG slices instead
};

struct InventoryLimits {
  std::size_t max_nodes = 10'000;
  int max_gpus_per_node = 16;
  int max_slices_per_gpu = 7;          // what MIG allows on A100 and H100
  std::int64_t max_units = 200'000;    // GPUs, MIG slices counting one each
  std::size_t max_bytes = std::size_t{16} << 20;
};

// Decodes an Inventory YAML document; nullopt when any error was reported.
[[nodiscard]] std::optional<Inventory> parse_inventory(std::string_view text, const std::string& file,
                                                       Diagnostics& diagnostics, const InventoryLimits& limits = {});
[[nodiscard]] std::optional<Inventory> load_inventory(const std::string& path, Diagnostics& diagnostics,
                                                      const InventoryLimits& limits = {});

// The Alibaba node list (see above); nullopt when any error was reported (warnings for
// unknown models do not stop it).
[[nodiscard]] std::optional<Inventory> alibaba_inventory(std::string_view text, const std::string& file,
                                                         Diagnostics& diagnostics, const InventoryLimits& limits = {});

// "alibaba-" + the model lower-cased, any character other than [a-z0-9-] becoming '-':
// V100M16 -> alibaba-v100m16. The trace replay names its pools by the same rule.
[[nodiscard]] std::string alibaba_pool_for_model(std::string_view model);

struct AlibabaModel {
  std::string_view model;
  std::string_view product;  // nvidia.com/gpu.product as the device plugin would print it
  std::int64_t memory_mib = 0;
};
// The table above; nullopt for a model not in it.
[[nodiscard]] std::optional<AlibabaModel> alibaba_model(std::string_view model);

}  // namespace gpubank::twin::cluster
