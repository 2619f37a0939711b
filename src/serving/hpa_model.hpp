// What the rendered KEDA ScaledObject would do: a model of the Kubernetes HPA
// (autoscaling/v2) as KEDA drives it, to compare with gpubank's own autoscaler in the
// twin and in docs/serving.md. Deterministic; the caller passes time in ms and the metric
// values KEDA's scalers would report.
//
// Matched against (read from upstream source):
//  - kubernetes pkg/controller/podautoscaler/horizontal.go: reconcileAutoscaler,
//    computeReplicasForMetrics (max over metrics; invalid metrics), recordInitialRecommendation,
//    stabilizeRecommendationWithBehaviors, convertDesiredReplicasWithBehaviorRate,
//    calculateScale{Up,Down}Limit*, getReplicasChangePerPeriod, storeScaleEvent;
//  - replica_calculator.go: GetExternalMetricReplicas / getUsageRatioReplicaCount (Value)
//    and GetExternalPerPodMetricReplicas (AverageValue), tolerance 0.1;
//  - pkg/apis/autoscaling/v2 defaults (GenerateHPAScaleUpRules / ...ScaleDownRules);
//  - KEDA pkg/scalers: cron_scaler.go (GetMetricsAndActivity, target AverageValue 1),
//    prometheus_scaler.go (ExecutePromQuery: empty result, NaN or Inf -> 0 with
//    ignoreNullValues, the default, else an error; a query error is an error), scaler.go
//    (GenerateMetricInMili / GetMetricTargetMili: values as milli-quantities, "%.3f";
//    NaN, Inf and negatives become 0; metricType defaults to AverageValue).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/cron.hpp"
#include "core/expected.hpp"
#include "policy/policy_set.hpp"

namespace date {
class time_zone;
}

namespace gpubank::serving {

// The HPA controller's sync period (--horizontal-pod-autoscaler-sync-period, 15 s): call
// step() this often.
inline constexpr std::int64_t kHpaSyncPeriodMs = 15'000;

enum class HpaMetricKind {
  Value,         // desired = ceil(ready * value / target)
  AverageValue,  // desired = ceil(value / target), the value a total over pods
  CronFloor,     // KEDA's cron scaler: AverageValue 1 of desiredReplicas inside the window, else 0
};

// Where a metric's value comes from, so metric_values() can fill it the way the rendered
// trigger's query would answer.
enum class HpaSource { QueueDepth, QueueHold, TtftP95, KvCache, RequestRate, GpuUtilization, Cron, Other };

// A KEDA cron trigger: active from a start firing until the next end firing. `lead` is
// the effective prewarmBefore (policy/prewarm.hpp, whole minutes), by which
// render::prewarm_start moves the start earlier in the rendered expression.
struct CronWindow {
  CronSchedule start;
  CronSchedule end;
  const date::time_zone* zone = nullptr;
  std::chrono::seconds lead{0};
  int desired_replicas = 0;
};

struct HpaMetric {
  std::string name;  // the trigger's name
  HpaMetricKind kind = HpaMetricKind::AverageValue;
  double target = 1;  // the trigger's threshold (CronFloor: 1)
  HpaSource source = HpaSource::Other;
  int hold_per_replica = 0;        // QueueHold: scaleDown.queueDepthPerReplica
  std::optional<CronWindow> cron;  // CronFloor
  // KEDA's Prometheus scaler: an empty result or NaN is 0 (true, KEDA's default) or an
  // error (false, what gpubank renders: the HPA then skips the metric).
  bool ignore_null_values = true;
};

enum class HpaPolicyType { Pods, Percent };
struct HpaScalingPolicy {
  HpaPolicyType type = HpaPolicyType::Pods;
  int value = 0;
  int period_s = 15;
};
enum class HpaSelectPolicy { Max, Min, Disabled };
struct HpaScalingRules {
  int stabilization_s = 0;
  HpaSelectPolicy select = HpaSelectPolicy::Max;
  std::vector<HpaScalingPolicy> policies;
};

// The API server's defaults (autoscaling/v2 GenerateHPAScaleUpRules/...ScaleDownRules):
// up without stabilization, max(4 pods, 100 %) per 15 s; down after 300 s of
// stabilization (the controller's --horizontal-pod-autoscaler-downscale-stabilization),
// 100 % per 15 s.
[[nodiscard]] HpaScalingRules default_scale_up();
[[nodiscard]] HpaScalingRules default_scale_down();

struct HpaBehavior {
  HpaScalingRules scale_up = default_scale_up();
  HpaScalingRules scale_down = default_scale_down();
};

struct HpaSpec {
  int min = 1;  // minReplicaCount; KEDA gives the HPA max(min, 1) and scales 0 <-> 1 itself
  int max = 1;  // maxReplicaCount
  std::vector<HpaMetric> metrics;
  HpaBehavior behavior;
  double tolerance = 0.1;      // --horizontal-pod-autoscaler-tolerance
  std::int64_t cooldown_s = 300;  // KEDA cooldownPeriod: only for scaling to zero (min 0)
};

// One metric's part in a sync.
struct HpaProposal {
  std::string name;
  std::optional<std::int64_t> value_milli;  // nullopt: the metric could not be read
  std::int64_t target_milli = 0;
  double ratio = 0;                // value / target (AverageValue: per current replica)
  std::optional<int> replicas;     // nullopt: invalid
};

struct HpaDecision {
  std::int64_t t_ms = 0;
  int current = 0;
  std::vector<HpaProposal> proposals;
  int metric_desired = 0;  // max over valid proposals (before behavior)
  int stabilized = 0;      // after the stabilization windows
  int desired = 0;         // after rate limits and min/max: what the HPA writes
  // The HPA's condition reasons: "DesiredWithinRange", "ScaleDownStabilized",
  // "ScaleUpStabilized", "ScaleUpLimit", "ScaleDownLimit", "TooManyReplicas",
  // "TooFewReplicas", "FailedGetExternalMetric" (no change: all metrics invalid, or some
  // invalid and the rest would scale down), "KedaActivation", "KedaDeactivation".
  std::string reason;
};

class HpaModel {
 public:
  explicit HpaModel(HpaSpec spec);

  // One HPA sync at t_ms (increasing) with `current` = the scale target's spec.replicas,
  // `metric_values` in spec.metrics order (nullopt: the scaler returned an error), and
  // `ready` the pods Running and Ready (default: all of current) that a Value metric
  // multiplies. Returns the replicas the HPA (or KEDA, between 0 and 1) sets.
  int step(std::int64_t t_ms, int current, std::span<const std::optional<double>> metric_values,
           std::optional<int> ready = std::nullopt);

  [[nodiscard]] const HpaDecision& last() const { return last_; }
  [[nodiscard]] const HpaSpec& spec() const { return spec_; }

 private:
  struct Recommendation {
    int replicas;
    std::int64_t t_ms;
  };
  struct ScaleEvent {
    int change;
    std::int64_t t_ms;
  };
  int behave(std::int64_t t_ms, int current, int metric_desired, int hpa_min);
  [[nodiscard]] int change_in_period(const std::vector<ScaleEvent>& events, int period_s, std::int64_t t_ms) const;
  void store_event(std::int64_t t_ms, int previous, int desired);

  HpaSpec spec_;
  std::vector<Recommendation> recommendations_;
  std::vector<ScaleEvent> up_events_;
  std::vector<ScaleEvent> down_events_;
  std::optional<std::int64_t> last_active_ms_;
  HpaDecision last_;
};

// KEDA's value for a cron trigger at `now`: desired_replicas while the window is active
// (the next end firing comes before the next start firing), else 0.
[[nodiscard]] double cron_metric_value(const CronWindow& window, std::chrono::sys_seconds now);

// What the service's pods report, as the rendered triggers' queries see it.
struct ServiceSample {
  bool prometheus_up = true;  // false: every Prometheus query errors (nullopt values)
  int pods_reporting = 0;     // pods with vLLM series
  double waiting = 0;         // sum of vllm:num_requests_waiting
  std::optional<double> ttft_p95_s;  // nullopt: histogram_quantile gave no sample or NaN (no requests)
  bool ttft_idle = false;            // the NaN case: the pods report the histogram, nothing arrived
  double kv_cache_sum = 0;           // sum over pods of each pod's KV usage (0..1)
  double gpu_utilization_sum = 0;    // sum over pods of each pod's mean DCGM_FI_DEV_GPU_UTIL (0..100)
  // sum(rate(vllm:request_success_total[2m])); nullopt: no pod's counter has two points in
  // the window (an empty result).
  std::optional<double> request_rate;
  std::chrono::sys_seconds now{};    // for cron triggers
};

// The value KEDA reports for each metric of `spec` (in order): with no pod reporting,
// every query of the pods' series is an empty result: 0 with ignoreNullValues, else an
// error (nullopt); the queue hold query is pods x (waiting/pods >= per_replica); TTFT
// without requests is NaN: 0 with ignoreNullValues, and 0 from the rendered guard
// (render::ttft_p95_guarded_query) when the pods report, else an error.
[[nodiscard]] std::vector<std::optional<double>> metric_values(const HpaSpec& spec, const ServiceSample& sample);

// The HPA the rendered ScaledObject of InferenceScalingPolicy `name` creates, built from
// the same policy the way render/scaling.cpp renders it: triggers in the same order and
// with the same thresholds, the cron floors of the TidalPolicies that target it, the
// same behavior. An error for an unknown policy or a RayService (not rendered).
[[nodiscard]] Expected<HpaSpec> hpa_spec_for(const policy::PolicySet& set, std::string_view name);

// The "CPU-style" HPA the issue compares against: one AverageValue trigger on the mean
// GPU utilisation of the pods (DCGM_FI_DEV_GPU_UTIL, percent), default behavior.
[[nodiscard]] HpaSpec gpu_utilization_hpa(int min, int max, int target_percent);

}  // namespace gpubank::serving
