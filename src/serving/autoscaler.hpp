// The inference autoscaler of one InferenceScalingPolicy: from an Observation (signals.hpp)
// and the replicas that count now to the number of replicas the service should have.
//
// It follows the Kubernetes HPA (pkg/controller/podautoscaler/horizontal.go and
// replica_calculator.go) wherever the HPA has a rule, so that it and the KEDA
// ScaledObject gpubank renders for the same policy (docs/render-scaling.md) agree except
// where noted. One call per sync period, in virtual time:
//
// 1. A desired count per configured signal, with c = current replicas:
//    - queueDepth (scaleUp.queueDepthPerReplica U, scaleDown.queueDepthPerReplica D), total
//      queue Q, per replica q = Q / c: q > U asks for ceil(Q / U); q < D asks for c - 1
//      when Q / (c - 1) would still be below D, else c; between the two, c (hold). With U
//      only, ceil(Q / U) either way (the HPA's AverageValue, what KEDA's queue-depth
//      trigger does); with D only, nothing above D asks for more than c.
//      Why one replica at a time on the way down: a queue below D says capacity is spare,
//      not how much. A served LLM has an empty queue at any replica count that keeps up,
//      so ceil(Q / D) would ask for zero replicas at every quiet moment and the service
//      would swing between its maximum and its minimum (measured in the twin: 8 -> 1 -> 8
//      every 20 minutes). So scale-down walks: one replica fewer per scale-down
//      stabilization window (step 5 keeps the largest recommendation of the window), each
//      step taken only while every signal stays below its target at the smaller size.
//    - ttftP95 (scaleUp.ttftP95 T): above T, max(c, ceil(r * min(ttft / T, 2))) with r the
//      replicas serving now: the latency measures the r that serve, so they are what is
//      scaled, at most doubling per sync, and replicas still loading count as capacity on
//      its way (sizing on c would ask for more every sync of a model load while the TTFT
//      stays high: a wind-up to maxReplicas). Within the tolerance below T: c (no replica
//      may go). Further below: no demand: it never pushes down by itself.
//    Idle: no request got a first token in the TTFT window, nothing runs and nothing waits
//    (Observation::ttft_idle). No traffic is zero load, not a missing metric: TTFT asks
//    for c - 1 (one replica fewer per scale-down window, like the queue), and at one
//    replica both TTFT and the queue ask for 0, so a service whose minReplicas is 0 scales
//    to zero after a scale-down stabilization window of idleness (KEDA's cooldownPeriod).
//    A TTFT without observations while requests run is not idle: it holds.
//    - kvCache (scaleUp.kvCacheHighWatermark W %): the mean usage u against W / 100:
//      above, ceil(c * u / (W / 100)) (the HPA's AverageValue: GetMetricReplicas); within
//      the band, c; below, c - 1 when the cache of the replicas left, u * c / (c - 1),
//      would stay below the band, else c. The watermark is a ceiling, not a target: a
//      proportional c * u / W below it would size the service to run its cache at 85 %,
//      far past where its TTFT holds.
//    - requestRate (scaleUp.requestsPerSecondPerReplica R): the rate r of requests
//      finished over the window (sum(rate(vllm:request_success_total[2m]))), ceil(r / R)
//      up and down (the HPA's AverageValue; Knative's "rps" target). A rate says how many
//      replicas the traffic needs, so it sizes before a queue forms or the TTFT rises and
//      lets the service go down as the traffic falls, where the queue and TTFT only say
//      "enough". It counts what is served: while the replicas keep up that is what
//      arrives; a saturated service's rate is its capacity, so it still asks for
//      ready x capacity / R (more when R is below the capacity) and the queue and TTFT see
//      the rest (inference.rate-signal-alone warns when it is the only signal). At c = 0,
//      a rate above 0 asks for at least 1.
//    Tolerance (replica_calculator.go: `math.Abs(1.0-usageRatio) <= c.tolerance`): a
//    signal whose ratio (q / U above U, q / D below D, ttft / T, u / (W / 100), r / (c R)) lies
//    within [1 - tolerance, 1 + tolerance] asks for c, so when every signal is within the
//    band the count stays.
// 2. raw = the largest count any signal asks for (horizontal.go computeReplicasForMetrics
//    takes the max over metrics); c when no signal asks for a count (TTFT alone, below
//    target).
// 3. Missing metrics never cause a scale-down (the HPA's rule for pods without metrics
//    when scaling down, and for metrics that fail: "invalid metrics ... will not scale
//    down"): when a configured signal is nullopt raw is at least c; when none is present,
//    or no replica reports while c > 0, raw = c.
// 4. Zero replicas (c = 0, minReplicas 0): a queue above 0 asks for ceil(Q / U), at least
//    1 (scaling from zero; at zero replicas the queue is the router's, which the caller
//    passes). The HPA does not scale from zero; KEDA activates to 1 first.
// 5. Stabilization (stabilizeRecommendationWithBehaviors): every raw count is recorded;
//    up = min(raw, the raw counts of the last scaleUp.stabilizationWindow), down =
//    max(raw, those of the last scaleDown.stabilizationWindow); stabilized = c brought
//    into [up, down]. Samples count when strictly newer than now - window, as the HPA's
//    `timestamp.After(cutoff)`.
// 6. Rate limits (convertDesiredReplicasWithBehaviorRate, with the HPA's default
//    policies): from the replicas at the start of the period (c minus what was added in
//    the last period, plus what was removed), up at most max(+4, +100 %) per 15 s, down at
//    most 100 % per 15 s, optionally at most N replicas per period; never a limit that
//    would move against the direction of scaling.
// 7. desired = that, clamped to [minReplicas, maxReplicas]. A change (desired != c) is
//    recorded as a scale event for the rate limits, as the HPA records the scale it sets.
//
// The tidal floor is applied by the caller (floor in force = max(tidal floor, desired)).
// Pure and deterministic: the same observations give the same recommendations.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "policy/types.hpp"
#include "serving/signals.hpp"

namespace gpubank::serving {

struct AutoscalerOptions {
  double tolerance = 0.1;  // the HPA's --horizontal-pod-autoscaler-tolerance default
  double ttft_max_ratio = 2;  // at most +100 % per sync from TTFT
  // The HPA's default behavior (horizontal.go / pkg/apis/autoscaling defaults): scale-up
  // policies {Pods 4, Percent 100} per 15 s with selectPolicy Max (the larger step wins);
  // scale-down {Percent 100} per 15 s.
  std::int64_t scale_up_period_ms = 15'000;
  int scale_up_replicas = 4;
  int scale_up_percent = 100;
  std::int64_t scale_down_period_ms = 15'000;
  int scale_down_percent = 100;
  // At most this many replicas removed per scale-down period (none by default). With the
  // percent limit, the smaller removal applies (the HPA's selectPolicy Min).
  std::optional<int> scale_down_replicas;
};

// What one signal asked for.
struct SignalDesire {
  std::string name;             // "queueDepth", "ttftP95", "kvCache", "requestRate"
  std::optional<double> value;  // nullopt: missing from the observation
  double target = 0;            // U (queue per replica), T seconds, W / 100, R (requests/s per replica)
  std::optional<int> replicas;  // nullopt: missing, or no demand (TTFT at or below target)
  bool idle = false;            // present, with no load: no request in the window (Observation::ttft_idle)
  friend bool operator==(const SignalDesire&, const SignalDesire&) = default;
};

struct Recommendation {
  std::int64_t t_ms = 0;
  int current = 0;
  int raw = 0;         // step 2-4
  int stabilized = 0;  // step 5
  int desired = 0;     // steps 6-7
  std::vector<SignalDesire> signals;  // in the order queueDepth, ttftP95, kvCache, requestRate; configured ones only
  bool metrics_missing = false;
  std::string reason;  // one sentence with the numbers
  friend bool operator==(const Recommendation&, const Recommendation&) = default;
};

class Autoscaler {
 public:
  explicit Autoscaler(const policy::InferenceScalingPolicySpec& policy, AutoscalerOptions options = {});

  // `current`: the replicas that count (ready or loading, not draining); `ready`: those of
  // them serving now (the rest are loading; unset: all of them). obs.t_ms must not go back
  // in time; a time before the last call's is taken as the last call's.
  [[nodiscard]] Recommendation recommend(const Observation& obs, int current, std::optional<int> ready = std::nullopt);

  [[nodiscard]] const policy::InferenceScalingPolicySpec& policy() const { return policy_; }
  [[nodiscard]] const AutoscalerOptions& options() const { return options_; }

 private:
  struct Timed {
    std::int64_t t_ms;
    int value;
  };

  [[nodiscard]] std::vector<SignalDesire> desires(const Observation& obs, int current, int ready) const;
  [[nodiscard]] int change_within(const std::deque<Timed>& events, std::int64_t now, std::int64_t period_ms) const;

  policy::InferenceScalingPolicySpec policy_;
  AutoscalerOptions options_;
  std::int64_t last_t_ms_ = 0;
  bool started_ = false;
  std::deque<Timed> recommendations_;  // raw counts
  std::deque<Timed> scale_up_events_;    // replicas added
  std::deque<Timed> scale_down_events_;  // replicas removed
};

}  // namespace gpubank::serving
