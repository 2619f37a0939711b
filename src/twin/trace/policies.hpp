// A policy set for replaying a trace: PlatformGuardrails with one pool per inventory entry
// and the trace's business groups, and one GPUQuotaPolicy per (group, pool) splitting each
// pool's GPUs by the groups' weights. The text is the gpubank policy YAML format (what
// examples/policies holds), so `gpubank validate` and the policy loader read it.
//
// Rules:
// - pools: name, gpuModel, capacity = the inventory's GPU count, gpusPerNode, partition
//   full, sharing exclusive (shared for the shared pool), role training (inference for the
//   shared pool: the trace's shared GPUs serve mostly LS pods), nodeLabels
//   {platform.gpubank.dev/pool: <pool>};
// - groups: namespaces [<group>], costCenter "CC-<group>", admins [group:<group>-admins],
//   limits on every pool {minGuaranteed: 0, maxCapacity: the pool's capacity};
// - priorities: inference-critical (100000, inference, not preemptible), training-standard
//   (10000, training and batch), batch-low (1000, batch);
// - quotas: one GPUQuotaPolicy "<group>-<pool>" per group and pool (a name above 63
//   characters is cut to 54 and gets "-<8 hex digits of a hash of group/pool>"): guaranteed = the
//   pool's capacity x weight / sum of weights rounded down, the remainder one GPU each to
//   the first groups in order; borrowLimit = capacity - guaranteed, maxCapacity =
//   capacity (so every group can borrow the whole pool); reclaimPolicy only when asked
//   (gracePeriod, onlyPreempt [batch, checkpointable]).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/duration.hpp"
#include "core/expected.hpp"
#include "twin/trace/alibaba_scenario.hpp"

namespace gpubank::twin::trace {

struct PoolInventory {
  std::string name;       // a DNS label
  std::string gpu_model;  // the policy API's model format
  std::int64_t gpus = 0;  // capacity (for the shared pool too: its GPUs)
  std::int64_t gpus_per_node = 8;
  bool shared = false;
};

struct TracePolicyOptions {
  std::string platform_admins = "group:gpubank-platform-admins";
  bool reclaim = false;
  Duration reclaim_grace_period{std::chrono::minutes(10)};
};

// The quota split of one pool: guaranteed GPUs per group, in `groups` order.
[[nodiscard]] std::vector<std::int64_t> split_by_weight(std::int64_t capacity, const std::vector<GroupWeight>& groups);

// The YAML text (documents separated by "---"). Errors: no pools or no groups, names that
// are not DNS labels, repeated names, counts outside 0..1,000,000, weights outside
// 1..kMaxGroupWeight.
[[nodiscard]] Expected<std::string> trace_policy_yaml(const std::vector<PoolInventory>& pools,
                                                      const std::vector<GroupWeight>& groups,
                                                      const TracePolicyOptions& options = {});

}  // namespace gpubank::twin::trace
