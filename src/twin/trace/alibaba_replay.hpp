// Everything `gpubank twin run --trace alibaba:<pods.csv> --inventory alibaba:<nodes.csv>`
// needs: the cluster (the trace's GPU nodes), a policy set that fits it, and the workloads.
//
// Pools: each node's pool is alibaba_pool_for_model(model) ("alibaba-g2", ...), except the
// nodes of `shared_model` (default T4, the trace's inference card), which form the shared
// pool that the pods asking for a fraction of a GPU (gpu_milli < 1000) go to. Whole-GPU
// pods go to the pool of their gpu_spec's first model, or `default_pool` (alibaba-g2) when
// gpu_spec is empty (every pod of the public files). In the shared pool quota counts
// time-slicing replicas, `share_replicas` per GPU (what the NVIDIA device plugin advertises
// as nvidia.com/gpu with replicas set), while placement packs the fractions (gpu_milli) on
// the GPUs. The policies come from trace_policy_yaml (policies.hpp).
#pragma once

#include <string>
#include <string_view>

#include "core/diagnostic.hpp"
#include "core/expected.hpp"
#include "twin/cluster/inventory.hpp"
#include "twin/trace/alibaba_scenario.hpp"
#include "twin/trace/philly.hpp"
#include "twin/trace/policies.hpp"

namespace gpubank::twin::trace {

struct AlibabaReplayOptions {
  TraceMapping mapping;
  std::string shared_model = "T4";
  std::int64_t share_replicas = 4;  // 1..64
  TracePolicyOptions policy;
};

struct AlibabaReplay {
  cluster::Inventory inventory;  // pool labels as above
  std::vector<PoolInventory> pools;
  std::string policy_yaml;
  run::Scenario scenario;
  MappingReport report;
};

// Errors (in `diagnostics`, nothing returned): unreadable CSV rows, a shared model with no
// nodes or equal to the default pool's model, options out of range, mapping errors.
[[nodiscard]] std::optional<AlibabaReplay> alibaba_replay(std::string_view pods_csv, const std::string& pods_file,
                                                          std::string_view nodes_csv, const std::string& nodes_file,
                                                          const AlibabaReplayOptions& options, Diagnostics& diagnostics);

// The same for the Philly trace (`--trace philly:<folder with philly_vc.csv and
// philly_node_sequence.csv>`): the cluster is generated, one node of `gpus_per_node` GPUs
// (model `gpu_model`, default P100: Philly's 2017 GPUs were P100s and P40s) per VC node of
// philly_vc.csv, all in one pool "philly"; the business groups are the VCs ("vc-<name>"),
// weighted by their node counts; the workloads follow each VC's share of the active nodes
// minute by minute (philly.hpp, philly_scenario).
struct PhillyReplayOptions {
  PhillyScenarioOptions scenario;
  std::string gpu_model = "P100";
  TracePolicyOptions policy;
};

struct PhillyReplay {
  cluster::Inventory inventory;
  std::string policy_yaml;
  run::Scenario scenario;
  std::int64_t vcs = 0, nodes = 0, missing_minutes = 0;
};

[[nodiscard]] std::optional<PhillyReplay> philly_replay(std::string_view vc_csv, const std::string& vc_file,
                                                        std::string_view sequence_csv, const std::string& sequence_file,
                                                        const PhillyReplayOptions& options, Diagnostics& diagnostics);

}  // namespace gpubank::twin::trace
