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
// The plan also asks for the pools' device-minutes and the groups' guaranteed and
// borrowable GPU-minutes, for the KPIs (rankings.hpp).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/expected.hpp"
#include "governance/lowutil.hpp"
#include "governance/queries.hpp"
#include "policy/types.hpp"

namespace gpubank::governance {

struct ShowbackPeriod {
  std::int64_t from_ms = 0;  // inclusive, cut to a whole minute
  std::int64_t to_ms = 0;    // exclusive
  [[nodiscard]] std::int64_t minutes() const { return (to_ms - from_ms) / 60'000; }
};

// The period cut to whole minutes; an error when it is empty or longer than 400 days.
[[nodiscard]] Expected<ShowbackPeriod> showback_period(std::int64_t from_ms, std::int64_t to_ms);

// The name of the low-utilisation query for one (threshold, startup grace) of the policies:
// one such query per distinct pair.
[[nodiscard]] std::string low_query_name(double threshold, const Duration& grace);

// The queries, evaluated at period.to_ms - 1 ms so the subquery's last minute is to - 1m.
[[nodiscard]] std::vector<Query> plan_showback(const ShowbackPeriod& period, const std::vector<ScanPolicy>& policies);

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
};

struct GroupLoans {
  double borrowed_gpu_hours = 0;
  double lent_gpu_hours = 0;
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
                                               const policy::PlatformGuardrailsSpec& guardrails);

// Rows summed to a level: "group" (business group and pool), "owner" (and owner), or
// "workload" (every row). Each level's rows are followed by nothing else: totals are
// separate (showback_totals).
enum class ShowbackLevel { Group, Owner, Workload };
[[nodiscard]] std::vector<ShowbackRow> roll_up(const std::vector<ShowbackRow>& rows, ShowbackLevel level);

// Per pool (business_group empty) and overall (pool empty too).
[[nodiscard]] std::vector<ShowbackRow> showback_totals(const std::vector<ShowbackRow>& rows);

[[nodiscard]] nlohmann::ordered_json to_json(const Showback& s, ShowbackLevel level);
[[nodiscard]] std::string to_csv(const Showback& s, ShowbackLevel level);
[[nodiscard]] std::string to_table(const Showback& s, ShowbackLevel level);

}  // namespace gpubank::governance
