// Governance on the twin, in virtual time: what `gpubank scan` and `gpubank report` conclude
// from the twin's attributed series, had a Prometheus scraped them once a virtual minute.
// `gpubank up` at its default 60x (or at max) runs far ahead of any wall-clock Prometheus, so
// its own Prometheus cannot answer a 60-minute window; this recorder can.
//
// It keeps, per virtual minute, what the scanner's and the reports' PromQL read (each
// device's holder, share and utilisation; the bank's loans and quotas; the pools' devices),
// and answers the very queries they plan (governance::plan_queries, plan_showback) with the
// same labels Prometheus would. From there the code is the scanner's and the reports':
// facts_from, assess, the alert lifecycle (step), showback_from, kpis and leaderboard. The
// twin has no notifier: a notice counts as delivered when the scan asks for it.
//
// Differences from a Prometheus, on purpose and small: samples are exactly on the minute
// (a scrape is never late or missed), and the device's state is what the twin holds after
// the step that crossed the minute (within one advance: a second at 60x, a minute at max).
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/expected.hpp"
#include "governance/alerts.hpp"
#include "governance/lowutil.hpp"
#include "governance/queries.hpp"
#include "governance/rankings.hpp"
#include "governance/review.hpp"
#include "governance/showback.hpp"
#include "policy/policy_set.hpp"

namespace gpubank::twin::live {

// One device (a whole GPU or a MIG instance) at a minute, as its exporter attributes it:
// one entry per holder (a time-sliced device held by n pods gives n entries of share 1/n),
// or one entry of share 0 for a free device. A held device whose pod metasync could not
// attribute has a share and empty attribution: showback's `unknown`.
struct DeviceMinute {
  std::string device;  // the device's identity (UUID, and the MIG instance)
  std::string pool, gpu_model, partition;  // partition: "full" or the MIG profile
  // The holder's attribution (gpubank_gpu_allocation_info's labels); empty when free.
  std::string business_group, owner_id, namespace_name, workload_kind, workload, workload_uid, workload_type,
      capacity_role, checkpointable, keep_running_until;
  // The twin's own workload ("namespace/name") holding it: the drill-down's link and its
  // events' object (an inference replica's attribution names its InferenceService instead).
  std::string twin_workload;
  double share = 0;               // 1 / holders; 0 for a free device
  double pod_started_s = 0;       // Unix seconds (gpubank_pod_start_time_seconds)
  double gpu_utilization = 0;     // percent (100 x DCGM_FI_PROF_GR_ENGINE_ACTIVE)
  double memory_utilization = 0;  // percent (FB_USED / (FB_USED + FB_FREE))
  double power_fraction = 0;      // percent (POWER_USAGE / ENFORCED_POWER_LIMIT)
};

struct QuotaMinute {
  std::string business_group, pool;
  double guaranteed = 0, borrowable = 0;
};

struct LoanMinute {
  std::string lender, borrower, pool;
  double gpus = 0;
};

// One inference workload's vLLM signals at a minute, as showback's PromQL reads them
// (two-minute rates over its pods): tokens per minute, prompt and generated, and the TTFT
// p95, none in a minute without requests.
struct ServingMinute {
  std::string namespace_name, workload_kind, workload, workload_uid;
  double tokens_per_minute = 0;
  std::optional<double> ttft_p95_s;
  // Its pods with vLLM series, and those with no request running or waiting (the review's
  // idle replicas). rated: false while no pod has the two samples a rate needs (the tokens
  // and TTFT above say nothing then).
  int pods = 0, idle_pods = 0;
  bool rated = true;
};

// A ClusterQueue at a minute with the workloads it leaves pending: the twin runs admission
// at every instant, so a workload still pending was tried and did not fit (what Kueue
// reports as kueue_pending_workloads{status="inadmissible"}).
struct PendingMinute {
  std::string cluster_queue;
  std::int64_t workloads = 0;
};

// A Kueue admission counted at this minute (it happened since the minute before), with
// what kueue_admission_wait_time_seconds observed.
struct AdmissionMinute {
  std::string cluster_queue;
  double wait_seconds = 0;
};

// GPU-hours of work a group's workloads lost on a pool since the minute before (stopped or
// preempted after their last checkpoint): the increase of
// gpubank_recompute_loss_gpu_hours_total{business_group,pool}.
struct LossMinute {
  std::string business_group, pool;
  double gpu_hours = 0;
};
struct MinuteObservation {
  std::int64_t t_ms = 0;  // Unix ms of a whole virtual minute
  std::vector<DeviceMinute> devices;
  std::vector<QuotaMinute> quotas;
  std::vector<LoanMinute> loans;
  // The bank's last checkpoint notice or completion per workload ("<namespace>/<workload>",
  // Unix ms): the checkpoint grace, as the scanner reads it from the controller's audit.
  std::map<std::string, std::int64_t, std::less<>> last_checkpoint_ms;
  std::vector<ServingMinute> serving;
  std::vector<AdmissionMinute> admissions;
  std::vector<LossMinute> recompute_loss;
  std::vector<PendingMinute> pending;  // every ClusterQueue, 0 included
};

class TwinGovernance {
 public:
  // scan_every_ms: how often the scanner runs (a multiple of a minute), as `gpubank scan --every`.
  explicit TwinGovernance(const policy::PolicySet& policies, std::int64_t scan_every_ms = 15 * 60'000);

  // Records a minute (t_ms a whole minute after the last one recorded; an earlier or equal
  // one is ignored) and scans when t_ms is a multiple of scan_every_ms.
  void observe(MinuteObservation minute);
  [[nodiscard]] std::optional<std::int64_t> last_minute_ms() const;

  // What Prometheus would answer to plan_queries at the last minute.
  [[nodiscard]] governance::Answers scan_answers() const;
  // ... and to plan_showback(period) (minutes outside what was recorded count nothing).
  [[nodiscard]] governance::Answers showback_answers(const governance::ShowbackPeriod& period) const;

  // The reports over `period` (Expected: an answer of the wrong shape, which would be a bug).
  [[nodiscard]] Expected<governance::Showback> showback(const governance::ShowbackPeriod& period) const;
  [[nodiscard]] Expected<std::vector<governance::Kpi>> kpis(const governance::ShowbackPeriod& period) const;
  [[nodiscard]] Expected<std::vector<governance::LeaderboardEntry>> leaderboard(
      const governance::ShowbackPeriod& period, double min_gpu_hours) const;
  // What Prometheus would answer to plan_showback and plan_review over `period`, and the
  // quota review from them with the alert record (`gpubank report review --store`).
  [[nodiscard]] governance::Answers review_answers(const governance::ShowbackPeriod& period) const;
  [[nodiscard]] Expected<std::vector<governance::Finding>> review(const governance::ShowbackPeriod& period,
                                                                  const governance::ReviewOptions& options = {}) const;

  // The alert record: every alert still open, and the last scan's verdict and exclusion counts.
  [[nodiscard]] const std::map<std::string, governance::Alert, std::less<>>& open_alerts() const { return open_; }
  // The alerts resolved so far (the last kResolvedKept), oldest first.
  [[nodiscard]] const std::deque<governance::Alert>& resolved_alerts() const { return resolved_; }
  [[nodiscard]] nlohmann::ordered_json alerts_json() const;
  // A person's decision on the open ReclaimCandidate of `workload_uid` (governance::
  // decide_with_authority: the caller checked the decider's authority), recorded on the
  // alert: an approved reclaim resolves "reclaimed" at the first scan after its workload
  // holds no GPU; an approved downgrade (`downgrade_to`, a WorkloadPriorityClass of the
  // guardrails, preemptible, open to the workload) leaves it open and running. Errors name
  // the rule (no open alert, not a candidate, decided already, a class refused).
  Expected<governance::Alert> decide(const std::string& workload_uid, bool approve, const std::string& by,
                                     const std::string& reason, std::int64_t now_ms,
                                     const std::string& downgrade_to = {});
  // decide() without recording anything: the error it would give, or the alert as decided.
  [[nodiscard]] Expected<governance::Alert> check_decision(const std::string& workload_uid, bool approve,
                                                           const std::string& by, const std::string& reason,
                                                           std::int64_t now_ms, const std::string& downgrade_to) const;
  // The twin's workload ("namespace/name") that the workload with this uid held devices as
  // in the last minute recorded; nullopt when it held none.
  [[nodiscard]] std::optional<std::string> twin_workload(const std::string& workload_uid) const;

  // The last scan's error (an answer facts_from refused), empty when it went through.
  [[nodiscard]] const std::string& scan_error() const { return scan_error_; }

  static constexpr std::size_t kResolvedKept = 1000;

  // A per-minute value of one series (GPU-minutes, GPUs), in minute order.
  struct MinuteValue {
    std::int64_t t_ms = 0;
    double value = 0;
  };

 private:
  void scan(std::int64_t now_ms);

  // A device-minute series of one holder (what one DCGM series with its pod labels is).
  struct Sample {
    std::int64_t t_ms = 0;
    double gpu = 0, memory = 0, power = 0;
  };
  struct Series {
    DeviceMinute last;  // labels and the last minute's values
    std::deque<Sample> samples;  // within the longest policy window
  };
  // The allocated minutes of one row of showback's "allocated" answer, and its low minutes.
  // business_group, owner_id, namespace, workload_kind, workload, workload_uid, workload_type,
  // pool, gpu_model, partition, capacity_role: the "allocated" query's `by`.
  using RowKey = std::array<std::string, 11>;
  // namespace, workload_kind, workload, workload_uid: the low queries' `by`.
  using WorkloadLabels = std::array<std::string, 4>;

  policy::PolicySet policies_;
  std::vector<governance::ScanPolicy> scan_policies_;
  std::int64_t scan_every_ms_;
  std::int64_t longest_window_ms_ = 0;
  std::optional<std::int64_t> last_ms_;
  MinuteObservation last_;  // the last minute, for the instant queries
  std::map<std::pair<std::string, std::string>, Series> series_;  // (workload key, device)
  std::map<RowKey, std::vector<MinuteValue>> allocated_;
  std::map<std::string, std::map<WorkloadLabels, std::vector<MinuteValue>>> low_;  // query name -> workload -> minutes
  std::set<double> busy_thresholds_;
  std::vector<governance::ServingSlo> slos_;
  std::set<double> slo_targets_;
  // tokens, and the SLO minutes and tokens per target: query name -> workload -> minutes
  std::map<std::string, std::map<WorkloadLabels, std::vector<MinuteValue>>> serving_;
  // Admission waits per ClusterQueue: count, sum and each bucket's count (Kueue's bounds).
  struct QueueWait {
    std::vector<MinuteValue> count, sum;
    std::vector<std::vector<MinuteValue>> buckets;  // by kAdmissionWaitBounds, then +Inf
  };
  std::map<std::string, QueueWait> queue_wait_;
  std::map<std::string, std::map<WorkloadLabels, std::vector<MinuteValue>>> busy_;  // the same for busy minutes
  std::map<std::tuple<std::string, std::string, std::string>, std::vector<MinuteValue>> loans_;  // lender, borrower, pool
  std::map<std::pair<std::string, std::string>, std::vector<MinuteValue>> recompute_loss_;  // group, pool
  std::map<std::pair<std::string, std::string>, std::vector<MinuteValue>> capacity_;  // pool, gpu model
  std::map<std::tuple<std::string, std::string, std::string>, std::vector<MinuteValue>> quota_;  // group, pool, kind
  // The review's: minutes a ClusterQueue left work pending (value 1), minutes it existed.
  std::map<std::string, std::vector<MinuteValue>> pending_, queues_seen_;
  struct ReplicasMinute {
    std::int64_t t_ms = 0;
    int pods = 0, idle = 0;
  };
  std::map<std::pair<std::string, std::string>, std::vector<ReplicasMinute>> replicas_;  // (namespace, workload)
  std::map<std::string, governance::Alert, std::less<>> open_;
  std::map<std::string, std::int64_t, std::less<>> last_ids_;
  std::deque<governance::Alert> resolved_;
  std::optional<std::int64_t> last_scan_ms_;
  std::size_t scans_ = 0;
  std::map<std::string, std::size_t, std::less<>> last_verdicts_, last_excluded_;
  std::string scan_error_;
};

}  // namespace gpubank::twin::live
