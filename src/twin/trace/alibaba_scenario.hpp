// Alibaba v2023 pods -> the workloads of a `gpubank twin run` scenario, with a report of
// what was mapped and what was skipped, and a policy set that fits the trace.
//
// The mapping rules (each seeded draw is a function of (seed, pod name, copy) only, so a
// pod's draws stay put when other pods are added or removed, and the same input and seed
// give the same scenario byte for byte):
// - one workload per pod with num_gpu > 0 (per copy, see replication); CPU-only pods are
//   skipped (reason "cpu-only");
// - name: the pod name as a DNS label (lower-cased; characters other than a-z, 0-9, '-'
//   become '-'; leading and trailing '-' dropped; cut to 48 characters; "pod" when nothing
//   is left); a name taken already gets "-<8 hex digits of a hash of (pod name, copy)>",
//   and then "-2", "-3", ... until it is free, the name cut to stay within 63 characters.
//   Copy j > 0 is "<name>-r<j>" (made unique the same way). Originals are named first, in
//   file order, then the copies;
// - businessGroup: h = hash(seed, "group", pod name, copy) picks group i with probability
//   weight_i / sum of weights (h mod sum, walked over the groups in order);
// - resourcePool: gpu_milli < 1000 (a shared GPU) -> shared_pool; else the pool of the
//   first model in gpu_spec (pool_for_model, by default alibaba_pool_for_model) that has a
//   whole-GPU pool (whole_gpu_pool, by default every pool has), so "T4|G2" goes to G2's
//   pool when the T4 nodes form the shared pool; a spec none of whose models has one is
//   skipped ("no-whole-gpu-pool": a whole GPU asked of the shared model only); else (no
//   gpu_spec: the default and gpushare lists) default_pool;
// - gpus = num_gpu, pods = 1, gpuMilli = gpu_milli when < 1000, gpuModels = gpu_spec;
// - workloadType from qos: LS (latency-sensitive) -> inference, BE (best effort) -> batch,
//   Burstable, Guaranteed or empty -> training;
// - checkpointable: training workloads only, with probability checkpointable_fraction,
//   drawn from hash(seed, "checkpointable", pod name, copy);
// - arrivalTime = creation_time - the earliest creation_time of all pods in the list (CPU
//   pods included: the trace's time 0), plus the copy's jitter;
// - runTime = deletion_time - scheduled_time. A pod never scheduled (empty scheduled_time:
//   the Pending pods) by default runs for deletion_time - creation_time, the time it
//   asked for GPUs before it was given up (counted in fallback_run_time); with
//   NeverScheduled::Skip it is skipped ("never-scheduled"). Pods without creation_time
//   ("no-creation-time") or deletion_time ("no-deletion-time"), or with a run time <= 0
//   ("non-positive-run-time"), are skipped;
// - gpu_milli < 1000 with num_gpu > 1 ("shared-multi-gpu") and num_gpu > 0 with gpu_milli
//   0 ("zero-gpu-milli") cannot be expressed and are skipped;
// - days: only pods created within the first N days (creation_time - time 0 < N x 24h);
//   later ones are skipped ("after-days-limit");
// - replication k: k copies; copy 0 is the original; copy j > 0 arrives later by
//   hash(seed, "jitter", pod name, j) mod 3,600,000 ms, i.e. within [0, 1h);
// - scenario times are at most 8784h (the scenario checker's year): a pod whose arrival
//   plus one hour of jitter or whose run time is beyond it is skipped
//   ("beyond-scenario-year"); the public trace spans ~149 days.
// Workloads are sorted by arrival time, then copy, then file order.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/duration.hpp"
#include "core/expected.hpp"
#include "twin/run/scenario.hpp"
#include "twin/trace/alibaba.hpp"

namespace gpubank::twin::trace {

inline constexpr std::int64_t kMaxGroupWeight = 1'000'000'000;

struct GroupWeight {
  std::string name;         // a DNS label
  std::int64_t weight = 1;  // 1..kMaxGroupWeight
};

// "alibaba-" + the model lower-cased, characters other than a-z, 0-9 and '-' as '-'
// ("V100M32" -> "alibaba-v100m32", "G2" -> "alibaba-g2"): the rule the cluster library's
// alibaba_pool_for_model uses.
[[nodiscard]] std::string alibaba_pool_for_model(std::string_view model);

enum class NeverScheduled { RunForWaitedTime, Skip };

struct TraceMapping {
  std::uint64_t seed = 1;
  std::vector<GroupWeight> groups;
  std::string shared_pool = "alibaba-shared";
  // Whole-GPU pods without gpu_spec. G2 is the largest model of openb_node_list_gpu_node.csv
  // (4,392 of its 6,212 GPUs).
  std::string default_pool = "alibaba-g2";
  std::function<std::string(std::string_view)> pool_for_model;  // empty: alibaba_pool_for_model
  std::function<bool(const std::string&)> whole_gpu_pool;       // empty: every pool takes whole GPUs
  std::optional<std::int64_t> days;  // 1..366
  std::int64_t replication = 1;      // 1..1024
  double checkpointable_fraction = 0.5;
  NeverScheduled never_scheduled = NeverScheduled::RunForWaitedTime;
};

// Skip reasons (MappingReport::skipped keys).
inline constexpr std::string_view kSkipCpuOnly = "cpu-only";
inline constexpr std::string_view kSkipNoCreationTime = "no-creation-time";
inline constexpr std::string_view kSkipNoDeletionTime = "no-deletion-time";
inline constexpr std::string_view kSkipNeverScheduled = "never-scheduled";
inline constexpr std::string_view kSkipNonPositiveRunTime = "non-positive-run-time";
inline constexpr std::string_view kSkipSharedMultiGpu = "shared-multi-gpu";
inline constexpr std::string_view kSkipZeroGpuMilli = "zero-gpu-milli";
inline constexpr std::string_view kSkipAfterDays = "after-days-limit";
inline constexpr std::string_view kSkipBeyondYear = "beyond-scenario-year";
inline constexpr std::string_view kSkipInvalidPool = "invalid-pool";  // pool_for_model gave no DNS label
inline constexpr std::string_view kSkipNoWholeGpuPool = "no-whole-gpu-pool";

struct MappingTotals {
  std::int64_t workloads = 0;
  std::int64_t gpu_milli_seconds = 0;  // gpus x (gpuMilli or 1000) x run seconds, requested
  [[nodiscard]] double gpu_seconds() const { return static_cast<double>(gpu_milli_seconds) / 1000.0; }
};

struct MappingReport {
  std::int64_t pods_read = 0;
  std::int64_t pods_mapped = 0;        // pods that became workloads (each `replication` times)
  std::int64_t workloads = 0;          // pods_mapped x replication
  std::int64_t fallback_run_time = 0;  // mapped pods whose run time is the never-scheduled fallback
  std::int64_t renamed = 0;            // workloads whose name is not the pod name (+ "-r<j>")
  std::int64_t first_creation_s = 0;   // the trace's time 0
  std::map<std::string, std::int64_t> skipped;  // reason -> pods (not multiplied by replication)
  std::map<std::string, MappingTotals> per_group;
  std::map<std::string, MappingTotals> per_pool;
};

struct AlibabaScenario {
  run::Scenario scenario;
  MappingReport report;
};

// Errors (nothing mapped): no groups, a group name that is not a DNS label, a repeated
// group, a weight outside 1..kMaxGroupWeight, pool names that are not DNS labels,
// days outside 1..366, replication outside 1..1024, checkpointable_fraction outside [0, 1].
[[nodiscard]] Expected<AlibabaScenario> alibaba_scenario(const std::vector<AlibabaPod>& pods,
                                                         const TraceMapping& mapping);

// The report as text, one fact a line ("skipped cpu-only: 1088", "group a: 2345 workloads,
// 1.23e+09 GPU-seconds"), for the CLI.
[[nodiscard]] std::string to_text(const MappingReport& report);

// Whether `s` is a DNS-1123 label (what scenario names, groups and pools must be).
[[nodiscard]] bool is_dns_label(std::string_view s);

}  // namespace gpubank::twin::trace
