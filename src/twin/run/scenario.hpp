// The input of `gpubank twin run`: timed workloads for the admission core plus the bank.
//
//   start: "2026-12-01T00:00:00Z"     # optional: the wall time of virtual time 0
//   workloads:
//   - name: ranking-finetune           # unique; a DNS label
//     namespace: search-training       # optional: the group's first namespace
//     businessGroup: search
//     resourcePool: h100-rdma-training
//     gpus: 8                          # per pod
//     pods: 2                          # gang size (default 1): 16 GPUs at once
//     workloadType: training           # training | inference | batch | notebook
//     checkpointable: true
//     checkpointInterval: 30m          # periodic checkpoints while running
//     checkpointDuration: 2m           # how long the checkpoint on a reclaim notice takes
//     checkpointFails: false           # fault injection: the notice's checkpoint fails
//     priorityClass: training-high     # one of the guardrails' priorities (optional)
//     arrivalTime: 10m                 # after virtual time 0
//     runTime: 4h                      # work to do (progress resumes from checkpoints)
//     startupTime: 1m                  # optional: admitted -> running (pods starting)
//     labels: {app: ranking-finetune}  # optional: what Protection leases select on
//     deleteTime: 2h                   # optional: deleted then (pending or running)
//     gpuMilli: 500                    # optional: a shared fraction of one GPU per pod
//                                      # (1..999 thousandths; needs gpus: 1)
//     gpuModels: [V100M32, A100]       # optional: GPU models the pods may run on
//
//   gpuFaults:                         # with an inventory: XID errors on GPUs
//   - {node: h100-train-00, gpu: 3, xid: 79, at: 2h, recoverAt: 3h}
//   - {node: h100-train-01, gpu: 0, eccDoubleBit: 2, at: 5h}   # XID 48, ECC counter +2
//
//   leases:                            # decisions on the policies' CapacityLeases
//   - name: ads-holiday-retrain
//     requestedAt: 0s
//     requestedBy: {username: bob, groups: [ads-admins]}
//     decision: Approved               # or Rejected
//     decidedAt: 10m
//     decidedBy: {username: alice, groups: [gpubank-platform-admins]}
//
// Decoding reports every problem with its field path and rule (unknown fields, wrong
// types, out-of-range numbers, duplicate names, too many workloads); nothing runs then.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/diagnostic.hpp"
#include "core/duration.hpp"
#include "core/timestamp.hpp"
#include "document/reader.hpp"
#include "policy/types.hpp"

namespace gpubank::twin::run {

inline constexpr std::string_view kRuleDuplicateWorkload = "scenario.duplicate-workload";
inline constexpr std::string_view kRuleDuplicateLease = "scenario.duplicate-lease";
inline constexpr std::string_view kRuleTooManyWorkloads = "scenario.too-many-workloads";

struct ScenarioWorkload {
  std::string name;
  std::string namespace_;  // empty: the group's first namespace
  std::string business_group;
  std::string resource_pool;
  std::int64_t gpus = 1;  // per pod
  std::int64_t pods = 1;
  policy::WorkloadType workload_type = policy::WorkloadType::Training;
  bool checkpointable = false;
  std::optional<Duration> checkpoint_interval;
  Duration checkpoint_duration{};
  bool checkpoint_fails = false;
  std::string priority_class;
  Duration arrival_time{};
  Duration run_time{};
  Duration startup_time{};
  std::optional<Duration> delete_time;
  std::map<std::string, std::string> labels;
  std::int64_t gpu_milli = 0;  // 0: whole GPUs; 1..999: one shared fraction per pod
  std::vector<std::string> gpu_models;  // empty: any model of the pool

  [[nodiscard]] std::int64_t total_gpus() const { return gpus * pods; }
};

struct Requester {
  std::string username;
  std::vector<std::string> groups;
};

enum class LeaseDecision { Approved, Rejected };

struct ScenarioLease {
  std::string name;  // a CapacityLease among the policies
  Duration requested_at{};
  Requester requested_by;
  LeaseDecision decision = LeaseDecision::Approved;
  Duration decided_at{};
  Requester decided_by;
  std::string reason;  // optional words for the decision
};

// A GPU fault injected into the cluster (needs an inventory): the GPU reports an XID error
// at `at` and is unhealthy until `recoverAt` (never when unset). The workloads on it lose
// their pods: they keep their quota, restart from their last checkpoint and wait for
// healthy GPUs.
struct ScenarioGpuFault {
  std::string node;
  int gpu = 0;   // index on the node
  std::optional<int> xid;           // default 79 ("GPU has fallen off the bus"), 48 with eccDoubleBit
  std::int64_t ecc_double_bit = 0;  // double-bit ECC errors reported with it
  [[nodiscard]] int effective_xid() const { return xid.value_or(ecc_double_bit > 0 ? 48 : 79); }
  Duration at{};
  std::optional<Duration> recover_at;
};

struct Scenario {
  std::optional<Timestamp> start;
  std::vector<ScenarioWorkload> workloads;
  std::vector<ScenarioLease> leases;
  std::vector<ScenarioGpuFault> gpu_faults;
};

struct ScenarioLimits {
  std::size_t max_workloads = 200'000;
  std::int64_t max_gpus = 100'000;  // per pod and per gang
  // What the YAML reader may read for a scenario follows from max_workloads, so that the
  // workload limit is the one a large file meets: at most this many YAML nodes (keys,
  // values, label keys and values) per workload, and bytes per workload, on average.
  std::size_t max_nodes_per_workload = 64;
  std::size_t max_bytes_per_workload = 1024;

  // The reader's limits for a scenario under these limits: nodes and bytes for
  // max_workloads + 1,000 entries (the leases and GPU faults beside the workloads), and at
  // least the reader's default bytes.
  [[nodiscard]] doc::ReadLimits read_limits() const;
};

// Decodes a scenario file's text; nullopt when any error was reported.
[[nodiscard]] std::optional<Scenario> parse_scenario(std::string_view text, const std::string& file,
                                                     Diagnostics& diagnostics, const ScenarioLimits& limits = {});
[[nodiscard]] std::optional<Scenario> load_scenario(const std::string& path, Diagnostics& diagnostics,
                                                    const ScenarioLimits& limits = {});

}  // namespace gpubank::twin::run
