// KPIs and the team leaderboard, from a showback (showback.hpp) and the capacity and quota
// series of the same period. Pure.
//
// KPIs, per pool and per business group on a pool, over the period:
//   allocation rate   allocated GPU-hours / available GPU-hours (a pool: its devices in
//                     gpubank_gpu_info; a group: its guarantee, gpubank_quota_gpus{kind="guaranteed"})
//   borrow rate       borrowed GPU-hours / borrowable GPU-hours (gpubank_quota_gpus{kind="borrowable"})
//   idle waste        low-utilisation GPU-hours, absolute and as a share of the allocated
//   effective utilisation  effective GPU-hours / measured GPU-hours (showback.hpp: the hours
//                     a signal judged; a workload without one counts in neither)
//   inference unit cost  the inference workloads' GPU cost / million effective tokens
//   recompute loss    GPU-hours of work a group's workloads lost when stopped before their
//                     next checkpoint (showback.hpp), absolute: reclaim's price
//   queue wait        a group's workloads' wait for admission on the pool (its ClusterQueue,
//                     `<group>-<pool>` as rendered: kueue_admission_wait_time_seconds),
//                     mean and p90 of the admissions in the period; none without admissions
// Each is null when its denominator is zero (no capacity, no guarantee, nothing borrowable)
// rather than a made-up 0 or infinity. Never one utilisation figure across GPU models: a
// pool has one model, and group KPIs are per pool.
//
// The leaderboard ranks business groups by their idle-waste share within each class of
// devices: GPU model, partition (MIG profiles apart from whole GPUs) and sharing
// (time-sliced pools apart), so a notebook slice is never ranked against an H100 training
// node. A group with fewer allocated GPU-hours than the minimum sample is listed unranked.
// Serving floors are not waste (their hours are shown apart), and neither is time under a
// policy's startup grace. Absolute waste and its cost are shown beside the share.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "governance/showback.hpp"
#include "policy/types.hpp"

namespace gpubank::governance {

struct Kpi {
  std::string pool;
  std::string business_group;  // empty: the pool
  std::string gpu_model;
  double allocated_gpu_hours = 0;
  double available_gpu_hours = 0;   // the pool's devices, or the group's guarantee
  double borrowed_gpu_hours = 0;
  double borrowable_gpu_hours = 0;
  double recompute_loss_gpu_hours = 0;
  double low_utilization_gpu_hours = 0;
  std::optional<double> allocation_rate;
  std::optional<double> borrow_rate;
  std::optional<double> idle_waste_share;
  double effective_gpu_hours = 0;
  double measured_gpu_hours = 0;
  double inference_cost = 0;
  double effective_tokens = 0;
  std::optional<double> effective_utilization;
  std::optional<double> inference_unit_cost;  // currency per million effective tokens
  double admissions = 0;  // groups only: Kueue admissions in the period
  std::optional<double> queue_wait_mean_seconds, queue_wait_p90_seconds;
};

// The KPIs from the showback and the answers to plan_showback's "capacity" and "quota".
[[nodiscard]] std::vector<Kpi> kpis(const Showback& s, const Answers& answers);

struct LeaderboardEntry {
  std::string device_class;  // "<gpuModel>/<partition>/<sharing>"
  std::optional<int> rank;   // 1 = the largest idle-waste share; none below the minimum sample
  std::string business_group;
  double allocated_gpu_hours = 0;
  double low_utilization_gpu_hours = 0;
  double idle_waste_share = 0;
  double serving_floor_gpu_hours = 0;
  double low_utilization_cost = 0;
};

// Per device class (sorted), the ranked groups then the unranked ones; the `unknown` group
// (unattributed devices) is listed, never ranked.
[[nodiscard]] std::vector<LeaderboardEntry> leaderboard(const Showback& s, const policy::PlatformGuardrailsSpec& g,
                                                        double min_gpu_hours);

[[nodiscard]] nlohmann::ordered_json to_json(const std::vector<Kpi>& kpis);
[[nodiscard]] nlohmann::ordered_json to_json(const std::vector<LeaderboardEntry>& board);
[[nodiscard]] std::string kpi_table(const std::vector<Kpi>& kpis);
[[nodiscard]] std::string leaderboard_table(const std::vector<LeaderboardEntry>& board, const std::string& currency);
[[nodiscard]] std::string kpi_csv(const std::vector<Kpi>& kpis);
[[nodiscard]] std::string leaderboard_csv(const std::vector<LeaderboardEntry>& board);

}  // namespace gpubank::governance
