// Showback: what each business group, owner and workload held over a period, in GPU-hours
// and money per GPU model, with what of it was at low utilisation, what was serving-floor
// retention, and what the group borrowed and lent. Pure: the PromQL plan and the arithmetic
// on its answers.
//
// GPU-hours are counted as the rendered recording rules count them (docs/render-monitoring.md,
// "GPU-hours: why a sum of samples"): the allocation share (a time-sliced device counts
// 1/holders) sampled every minute over the period by a subquery, summed, divided by 60.
// Every period is cut to whole minutes, [from, to). Money is device-hours times the
// guardrails' gpuHourPrice of the device's GPU model, a price per device of the pools of that
// model (per slice for a MIG pool, as examples/policies prices A100 per 1g.10gb slice, and
// as the rendered FinOps rules join it). A device-hour nobody is attributed to is its own
// row (business group "unknown"), never dropped, so rows add up to the pools.
//
// Low-utilisation GPU-hours: device-minutes whose utilisation (100 x
// DCGM_FI_PROF_GR_ENGINE_ACTIVE, else DCGM_FI_DEV_GPU_UTIL) was below the
// averageGpuUtilization threshold of the LowUtilizationPolicy governing the workload, not
// counting minutes while a pod was younger than the policy's startupGracePeriod (one query
// per distinct threshold and grace), serving floors excluded (their hours are retention).
// Recomputation loss: what gpubank_recompute_loss_gpu_hours_total{business_group,pool} (the
// controller's and the twin's) grew by over the period.
// The plan also asks for the pools' device-minutes and the groups' guaranteed and
// borrowable GPU-minutes, for the KPIs (rankings.hpp).
//
// Effective GPU-hours: device-minutes that produced something, counted where a signal says
// so ("measured" hours); a workload without one is measured nothing, never guessed.
//   inference with an SLO   an InferenceScalingPolicy names the workload (workloadRef's
//                           namespace and name) and sets scaleUp.ttftP95: a minute is
//                           effective when vLLM's TTFT p95 over the last two minutes
//                           (vllm:time_to_first_token_seconds_bucket of the workload's pods)
//                           met it. A minute without requests has no p95 and is not
//                           effective; a workload with no vLLM series at all in the period
//                           falls to the rule below. Tokens (vllm:prompt_tokens_total +
//                           vllm:generation_tokens_total) are counted per minute, and those
//                           of the minutes within the SLO are the effective tokens.
//   everything else         a LowUtilizationPolicy governs it: a device-minute at or above
//                           its averageGpuUtilization threshold. No training-progress series
//                           is standard, so busy stands for progress.
// vLLM's series are joined to the workload through the pod (namespace, pod), as Prometheus's
// PodMonitor labels them, and gpubank_gpu_allocation_info.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/expected.hpp"
#include "governance/lowutil.hpp"
#include "governance/queries.hpp"
#include "policy/policy_set.hpp"
#include "policy/types.hpp"

namespace gpubank::governance {

struct ShowbackPeriod {
  std::int64_t from_ms = 0;  // inclusive, cut to a whole minute
  std::int64_t to_ms = 0;    // exclusive
  [[nodiscard]] std::int64_t minutes() const { return (to_ms - from_ms) / 60'000; }
};

// The period cut to whole minutes; an error when it is empty or longer than 400 days.
[[nodiscard]] Expected<ShowbackPeriod> showback_period(std::int64_t from_ms, std::int64_t to_ms);

// What one low-utilisation query of the showback depends on: one query per distinct kind
// among the policies that set a GPU utilisation threshold. The window caps the job-phase
// excuse (metrics/job_phase.hpp).
struct LowQueryKind {
  double threshold = 0;           // averageGpuUtilization, percent
  std::int64_t startup_grace_s = 0;
  std::int64_t checkpoint_grace_s = 0;
  std::int64_t window_s = 0;
  auto operator<=>(const LowQueryKind&) const = default;
};
[[nodiscard]] std::optional<LowQueryKind> low_query_kind(const ScanPolicy& p);  // none without a threshold
[[nodiscard]] std::set<LowQueryKind> low_query_kinds(const std::vector<ScanPolicy>& policies);
[[nodiscard]] std::string low_query_name(const LowQueryKind& kind);

// The name of the query counting device-minutes at or above a utilisation threshold.
[[nodiscard]] std::string busy_query_name(double threshold);

// A serving SLO: an InferenceScalingPolicy's scaleUp.ttftP95 for its workloadRef.
struct ServingSlo {
  std::string policy;  // the InferenceScalingPolicy's name
  std::string namespace_name, workload;
  double ttft_p95_seconds = 0;
};
[[nodiscard]] std::vector<ServingSlo> serving_slos(const policy::PolicySet& set);
// The names of the queries counting, per workload, the device-minutes and the tokens of the
// minutes whose TTFT p95 met `seconds`; and of the one counting all tokens.
[[nodiscard]] std::string slo_minutes_query_name(double seconds);
[[nodiscard]] std::string slo_tokens_query_name(double seconds);
inline constexpr const char* kTokensQuery = "tokens";

// The queries, evaluated at period.to_ms - 1 ms so the subquery's last minute is to - 1m.
[[nodiscard]] std::vector<Query> plan_showback(const ShowbackPeriod& period, const std::vector<ScanPolicy>& policies,
                                               const std::vector<ServingSlo>& slos = {});

// One workload on one pool (the finest level).
struct ShowbackRow {
  std::string business_group;  // "unknown" when unattributed
  std::string owner_id;
  std::string namespace_name;
  std::string workload_kind;
  std::string workload;
  std::string workload_uid;
  std::string workload_type;
  std::string pool;
  std::string gpu_model;
  std::string partition;
  double allocated_gpu_hours = 0;
  double low_utilization_gpu_hours = 0;
  double serving_floor_gpu_hours = 0;
  double cost = 0;
  double low_utilization_cost = 0;
  double effective_gpu_hours = 0;
  double measured_gpu_hours = 0;  // the allocated hours some signal judged (see above)
  double tokens = 0;              // prompt and generated, vLLM's counters
  double effective_tokens = 0;    // those of the minutes within the SLO
};

// What a group's position in the bank cost or earned on a pool: borrowed and lent GPU-hours
// (the ledger's loans), and the GPU-hours of work its workloads lost when stopped or
// preempted before their next checkpoint (gpubank_recompute_loss_gpu_hours_total).
struct GroupLoans {
  double borrowed_gpu_hours = 0;
  double lent_gpu_hours = 0;
  double recompute_loss_gpu_hours = 0;
};

struct Showback {
  ShowbackPeriod period;
  std::string currency;
  std::vector<ShowbackRow> rows;                                       // sorted
  std::map<std::pair<std::string, std::string>, GroupLoans> loans;     // (group, pool)
  std::vector<std::string> unpriced_models;                            // GPU models without gpuHourPrice
};

[[nodiscard]] Expected<Showback> showback_from(const Answers& answers, const ShowbackPeriod& period,
                                               const std::vector<ScanPolicy>& policies,
                                               const policy::PlatformGuardrailsSpec& guardrails,
                                               const std::vector<ServingSlo>& slos = {});

// Rows summed to a level: "group" (business group and pool), "owner" (and owner), or
// "workload" (every row). Each level's rows are followed by nothing else: totals are
// separate (showback_totals).
enum class ShowbackLevel { Group, Owner, Workload };
// "group", "owner" or "workload"; none for anything else.
[[nodiscard]] std::optional<ShowbackLevel> showback_level(std::string_view name);
[[nodiscard]] std::vector<ShowbackRow> roll_up(const std::vector<ShowbackRow>& rows, ShowbackLevel level);

// Per pool (business_group empty) and overall (pool empty too).
[[nodiscard]] std::vector<ShowbackRow> showback_totals(const std::vector<ShowbackRow>& rows);

[[nodiscard]] nlohmann::ordered_json to_json(const Showback& s, ShowbackLevel level);
[[nodiscard]] std::string to_csv(const Showback& s, ShowbackLevel level);
[[nodiscard]] std::string to_table(const Showback& s, ShowbackLevel level);

}  // namespace gpubank::governance
