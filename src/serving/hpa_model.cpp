#include "serving/hpa_model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>

#include "policy/prewarm.hpp"
#include "policy/types.hpp"

namespace gpubank::serving {
namespace {

using policy::InferenceScalingPolicySpec;
using policy::Kind;
using policy::PolicyObject;
using policy::TidalPolicySpec;

// KEDA's quantityFromFloat64 (pkg/scalers/scaler.go): NaN, Inf and negatives are 0, else
// resource.MustParse(fmt.Sprintf("%.3f", v)); the HPA reads it with MilliValue(). C's
// "%.3f" rounds the exact binary value to nearest-even like Go's, so the milli values agree.
std::int64_t milli(double value) {
  if (std::isnan(value) || std::isinf(value) || value < 0) return 0;
  constexpr double kMax = 9.0e15;  // beyond: int64 milli would overflow; clamp
  value = std::min(value, kMax);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3f", value);
  std::int64_t out = 0;
  for (const char* c = buf; *c != '\0'; ++c) {
    if (*c >= '0' && *c <= '9') out = out * 10 + (*c - '0');
  }
  return out;  // "%.3f" always writes three decimals: the digits read as an integer are milli
}

std::int64_t clamp_seconds(Duration d, std::int64_t lo, std::int64_t hi) {
  return std::clamp<std::int64_t>(std::chrono::duration_cast<std::chrono::seconds>(d.nanoseconds()).count(), lo, hi);
}

// As render/scaling.cpp: the HPA API's bounds on behavior, the HPA sync period.
constexpr std::int64_t kMaxStabilizationSeconds = 3600;
constexpr std::int64_t kMaxPeriodSeconds = 1800;
constexpr int kHpaSyncSeconds = 15;

}  // namespace

HpaScalingRules default_scale_up() {
  return HpaScalingRules{0, HpaSelectPolicy::Max,
                         {HpaScalingPolicy{HpaPolicyType::Pods, 4, 15}, HpaScalingPolicy{HpaPolicyType::Percent, 100, 15}}};
}

HpaScalingRules default_scale_down() {
  return HpaScalingRules{300, HpaSelectPolicy::Max, {HpaScalingPolicy{HpaPolicyType::Percent, 100, 15}}};
}

HpaModel::HpaModel(HpaSpec spec) : spec_(std::move(spec)) {}

int HpaModel::change_in_period(const std::vector<ScaleEvent>& events, int period_s, std::int64_t t_ms) const {
  // getReplicasChangePerPeriod: events strictly after now - period.
  const std::int64_t cutoff = t_ms - std::int64_t{period_s} * 1000;
  int sum = 0;
  for (const auto& e : events) {
    if (e.t_ms > cutoff) sum += e.change;
  }
  return sum;
}

void HpaModel::store_event(std::int64_t t_ms, int previous, int desired) {
  // storeScaleEvent: events older than the longest policy period are never counted again.
  const bool up = desired > previous;
  auto& events = up ? up_events_ : down_events_;
  const auto& rules = up ? spec_.behavior.scale_up : spec_.behavior.scale_down;
  int longest = 0;
  for (const auto& p : rules.policies) longest = std::max(longest, p.period_s);
  const std::int64_t cutoff = t_ms - std::int64_t{longest} * 1000;
  std::erase_if(events, [cutoff](const ScaleEvent& e) { return e.t_ms < cutoff; });
  events.push_back(ScaleEvent{up ? desired - previous : previous - desired, t_ms});
}

int HpaModel::behave(std::int64_t t_ms, int current, int metric_desired, int hpa_min) {
  // stabilizeRecommendationWithBehaviors: up = min of the recommendations within the
  // scale-up window, down = max within the scale-down window, both including this one;
  // the current count is brought within [up, down].
  const auto& up_rules = spec_.behavior.scale_up;
  const auto& down_rules = spec_.behavior.scale_down;
  const std::int64_t up_cutoff = t_ms - std::int64_t{up_rules.stabilization_s} * 1000;
  const std::int64_t down_cutoff = t_ms - std::int64_t{down_rules.stabilization_s} * 1000;
  int up = metric_desired;
  int down = metric_desired;
  std::optional<std::size_t> old;
  for (std::size_t i = 0; i < recommendations_.size(); ++i) {
    const auto& rec = recommendations_[i];
    if (rec.t_ms > up_cutoff) up = std::min(up, rec.replicas);
    if (rec.t_ms > down_cutoff) down = std::max(down, rec.replicas);
    if (rec.t_ms < up_cutoff && rec.t_ms < down_cutoff) old = i;
  }
  int stabilized = current;
  if (stabilized < up) stabilized = up;
  if (stabilized > down) stabilized = down;
  if (old) {
    recommendations_[*old] = Recommendation{metric_desired, t_ms};
  } else {
    recommendations_.push_back(Recommendation{metric_desired, t_ms});
  }
  last_.stabilized = stabilized;
  last_.reason = "DesiredWithinRange";
  if (stabilized != metric_desired) last_.reason = metric_desired >= current ? "ScaleUpStabilized" : "ScaleDownStabilized";

  // convertDesiredReplicasWithBehaviorRate with calculateScale{Up,Down}Limit*: each
  // policy allows a change relative to the replicas at the start of its period.
  if (stabilized > current) {
    int limit = current;
    if (up_rules.select != HpaSelectPolicy::Disabled) {
      const bool pick_min = up_rules.select == HpaSelectPolicy::Min;
      limit = pick_min ? std::numeric_limits<int>::max() : std::numeric_limits<int>::min();
      for (const auto& p : up_rules.policies) {
        const int start = current - change_in_period(up_events_, p.period_s, t_ms) +
                          change_in_period(down_events_, p.period_s, t_ms);
        const int proposed = p.type == HpaPolicyType::Pods
                                 ? start + p.value
                                 : static_cast<int>(std::ceil(static_cast<double>(start) * (1 + p.value / 100.0)));
        limit = pick_min ? std::min(limit, proposed) : std::max(limit, proposed);
      }
    }
    limit = std::max(limit, current);
    int allowed = spec_.max;
    std::string why = "TooManyReplicas";
    if (allowed > limit) {
      allowed = limit;
      why = "ScaleUpLimit";
    }
    if (stabilized > allowed) {
      last_.reason = why;
      return allowed;
    }
  } else if (stabilized < current) {
    int limit = current;
    if (down_rules.select != HpaSelectPolicy::Disabled) {
      const bool pick_min_change = down_rules.select == HpaSelectPolicy::Min;
      limit = pick_min_change ? std::numeric_limits<int>::min() : std::numeric_limits<int>::max();
      for (const auto& p : down_rules.policies) {
        const int start = current - change_in_period(up_events_, p.period_s, t_ms) +
                          change_in_period(down_events_, p.period_s, t_ms);
        const int proposed = p.type == HpaPolicyType::Pods
                                 ? start - p.value
                                 : static_cast<int>(static_cast<double>(start) * (1 - p.value / 100.0));
        limit = pick_min_change ? std::max(limit, proposed) : std::min(limit, proposed);
      }
    }
    limit = std::min(limit, current);
    int allowed = hpa_min;
    std::string why = "TooFewReplicas";
    if (allowed < limit) {
      allowed = limit;
      why = "ScaleDownLimit";
    }
    if (stabilized < allowed) {
      last_.reason = why;
      return allowed;
    }
  }
  return stabilized;
}

int HpaModel::step(std::int64_t t_ms, int current, std::span<const std::optional<double>> metric_values,
                   std::optional<int> ready) {
  last_ = HpaDecision{};
  last_.t_ms = t_ms;
  last_.current = current;
  const int hpa_min = std::max(spec_.min, 1);  // KEDA never gives the HPA minReplicas 0
  // recordInitialRecommendation: the first sync remembers the current count, so nothing
  // scales down within the first stabilization window.
  if (recommendations_.empty()) recommendations_.push_back(Recommendation{current, t_ms});

  // Per metric (replica_calculator.go).
  bool any_active = false;
  int invalid = 0;
  int replicas = 0;
  for (std::size_t i = 0; i < spec_.metrics.size(); ++i) {
    const HpaMetric& m = spec_.metrics[i];
    HpaProposal p;
    p.name = m.name;
    p.target_milli = m.kind == HpaMetricKind::CronFloor ? 1000 : milli(m.target);
    const std::optional<double> v = i < metric_values.size() ? metric_values[i] : std::nullopt;
    if (!v || p.target_milli <= 0) {
      ++invalid;
      last_.proposals.push_back(std::move(p));
      continue;
    }
    const std::int64_t u = milli(*v);
    p.value_milli = u;
    if (u > 0) any_active = true;  // KEDA: activationThreshold 0; a cron trigger is active when it reports
    if (current > 0) {
      if (m.kind == HpaMetricKind::Value) {
        // GetExternalMetricReplicas -> getUsageRatioReplicaCount: the ready pods carry it.
        p.ratio = static_cast<double>(u) / static_cast<double>(p.target_milli);
        const int ready_pods = std::clamp(ready.value_or(current), 0, current);
        p.replicas = std::abs(1.0 - p.ratio) <= spec_.tolerance
                         ? current
                         : static_cast<int>(std::ceil(p.ratio * static_cast<double>(ready_pods)));
      } else {
        // GetExternalPerPodMetricReplicas: the total per current replica.
        p.ratio = static_cast<double>(u) / (static_cast<double>(p.target_milli) * static_cast<double>(current));
        p.replicas = std::abs(1.0 - p.ratio) > spec_.tolerance
                         ? static_cast<int>(std::ceil(static_cast<double>(u) / static_cast<double>(p.target_milli)))
                         : current;
      }
      if (replicas == 0 || *p.replicas > replicas) replicas = *p.replicas;
    }
    last_.proposals.push_back(std::move(p));
  }
  if (any_active || !last_active_ms_) last_active_ms_ = any_active ? t_ms : recommendations_.front().t_ms;

  auto decide = [&](int desired, std::string reason) {
    last_.metric_desired = replicas;
    last_.stabilized = desired;
    last_.desired = desired;
    last_.reason = std::move(reason);
    if (desired != current) store_event(t_ms, current, desired);
    return desired;
  };

  // KEDA's scale handler owns 0 <-> 1 (the HPA is disabled at 0 replicas).
  if (current == 0) {
    if (spec_.min > 0) return decide(spec_.min, "TooFewReplicas");
    return decide(any_active ? 1 : 0, any_active ? "KedaActivation" : "DesiredWithinRange");
  }
  if (spec_.min == 0 && !any_active && t_ms - *last_active_ms_ >= spec_.cooldown_s * 1000) {
    return decide(0, "KedaDeactivation");
  }
  // reconcileAutoscaler: outside [min, max] the count is corrected before any metric.
  if (current > spec_.max) return decide(spec_.max, "TooManyReplicas");
  if (current < hpa_min) return decide(hpa_min, "TooFewReplicas");

  // computeReplicasForMetrics: all invalid, or some invalid and the valid ones would
  // scale down -> no change this sync (and no recommendation recorded).
  const auto n = static_cast<int>(spec_.metrics.size());
  if (invalid >= n || (invalid > 0 && replicas < current)) {
    last_.metric_desired = replicas;
    last_.stabilized = current;
    last_.desired = current;
    last_.reason = "FailedGetExternalMetric";
    return current;
  }
  last_.metric_desired = replicas;
  const int desired = behave(t_ms, current, replicas, hpa_min);
  last_.desired = desired;
  if (desired != current) store_event(t_ms, current, desired);
  return desired;
}

double cron_metric_value(const CronWindow& window, std::chrono::sys_seconds now) {
  if (window.zone == nullptr) return 0;
  // cron_scaler.go GetMetricsAndActivity: with the next start before the next end the
  // window has not begun (now is never after a *next* start), otherwise it is running.
  // The start is the prewarmed one: `lead` earlier than the policy's start.
  const auto start = window.start.next(now + window.lead, *window.zone);
  const auto end = window.end.next(now, *window.zone);
  if (!start || !end) return 0;
  const auto next_start = *start - window.lead;
  const bool active = next_start < *end ? (now > next_start && now < *end) : (now > next_start || now < *end);
  return active ? window.desired_replicas : 0;
}

std::vector<std::optional<double>> metric_values(const HpaSpec& spec, const ServiceSample& s) {
  std::vector<std::optional<double>> out;
  out.reserve(spec.metrics.size());
  const bool pods = s.pods_reporting > 0;  // else every sum(...) is an empty result
  for (const auto& m : spec.metrics) {
    const std::optional<double> null_value = m.ignore_null_values ? std::optional<double>(0.0) : std::nullopt;
    if (m.source == HpaSource::Cron) {
      out.push_back(m.cron ? cron_metric_value(*m.cron, s.now) : 0.0);
      continue;
    }
    if (!s.prometheus_up || m.source == HpaSource::Other) {
      out.push_back(std::nullopt);
      continue;
    }
    switch (m.source) {
      case HpaSource::QueueDepth: out.push_back(pods ? std::optional<double>(s.waiting) : null_value); break;
      case HpaSource::QueueHold: {
        // count(pods) * (sum(waiting) / count(pods) >= bool D)
        const bool hold = pods && s.waiting / s.pods_reporting >= m.hold_per_replica;
        out.push_back(!pods ? null_value : std::optional<double>(hold ? static_cast<double>(s.pods_reporting) : 0.0));
        break;
      }
      case HpaSource::TtftP95:
        out.push_back(s.ttft_p95_s ? s.ttft_p95_s : pods && s.ttft_idle ? std::optional<double>(0.0) : null_value);
        break;
      case HpaSource::KvCache: out.push_back(pods ? std::optional<double>(s.kv_cache_sum) : null_value); break;
      case HpaSource::RequestRate: out.push_back(pods && s.request_rate ? s.request_rate : null_value); break;
      case HpaSource::GpuUtilization:
        out.push_back(pods ? std::optional<double>(s.gpu_utilization_sum) : null_value);
        break;
      case HpaSource::Cron:
      case HpaSource::Other: out.push_back(std::nullopt); break;
    }
  }
  return out;
}

Expected<HpaSpec> hpa_spec_for(const policy::PolicySet& set, std::string_view name) {
  const PolicyObject* o = set.find(Kind::InferenceScalingPolicy, name);
  if (o == nullptr) return Unexpected{"no InferenceScalingPolicy named \"" + std::string(name) + "\""};
  const auto& p = o->as<InferenceScalingPolicySpec>();
  if (p.workload_ref.kind == policy::WorkloadRefKind::RayService) {
    return Unexpected{"InferenceScalingPolicy/" + std::string(name) +
                      ": a RayService is scaled by Ray Serve's autoscaler; no ScaledObject is rendered"};
  }
  HpaSpec h;
  h.min = p.min_replicas;
  h.max = std::max(1, p.max_replicas);
  // The triggers of render/scaling.cpp scaled_object(), in its order.
  if (p.scale_up.queue_depth_per_replica) {
    h.metrics.push_back({"queue-depth", HpaMetricKind::AverageValue,
                         static_cast<double>(*p.scale_up.queue_depth_per_replica), HpaSource::QueueDepth, 0, {}});
  }
  if (p.scale_down.queue_depth_per_replica) {
    h.metrics.push_back({"queue-depth-scale-down", HpaMetricKind::AverageValue, 1.0, HpaSource::QueueHold,
                         *p.scale_down.queue_depth_per_replica, {}});
  }
  if (p.scale_up.ttft_p95) {
    h.metrics.push_back({"ttft-p95", HpaMetricKind::Value,
                         static_cast<double>(p.scale_up.ttft_p95->nanoseconds().count()) / 1e9, HpaSource::TtftP95, 0,
                         {}});
  }
  if (p.scale_up.kv_cache_high_watermark) {
    h.metrics.push_back({"kv-cache", HpaMetricKind::AverageValue, *p.scale_up.kv_cache_high_watermark / 100.0,
                         HpaSource::KvCache, 0, {}});
  }
  if (p.scale_up.requests_per_second_per_replica) {
    h.metrics.push_back({"request-rate", HpaMetricKind::AverageValue, *p.scale_up.requests_per_second_per_replica,
                         HpaSource::RequestRate, 0, {}});
  }
  // render/scaling.cpp prometheus_trigger(): ignoreNullValues "false".
  for (auto& m : h.metrics) m.ignore_null_values = false;
  // Cron floors: every window of a TidalPolicy targeting this one (policies by name)
  // with a floor of at least 1 (KEDA rejects desiredReplicas 0).
  std::map<std::string, const PolicyObject*> tidal;
  for (const auto& t : set.policies()) {
    if (t.kind != Kind::TidalPolicy) continue;
    const auto& targets = t.as<TidalPolicySpec>().targets.inference_policies;
    if (std::find(targets.begin(), targets.end(), std::string(name)) != targets.end()) tidal[t.name()] = &t;
  }
  int largest_floor = p.min_replicas;
  for (const auto& [tidal_name, t] : tidal) {
    const auto& spec = t->as<TidalPolicySpec>();
    for (const auto& w : spec.windows) {
      if (!w.inference_replica_floor) continue;
      const auto floor = w.inference_replica_floor->for_policy(std::string(name));
      if (!floor || *floor < 1) continue;
      largest_floor = std::max(largest_floor, *floor);
      CronWindow c;
      c.start = w.start;
      c.end = w.end;
      c.zone = spec.timezone.zone;
      c.desired_replicas = *floor;
      // render::prewarm_start: the effective prewarmBefore rounded up to whole minutes; a
      // day or more is not moved.
      if (const Duration before = policy::effective_prewarm_before(set, spec, w); before.nanoseconds().count() > 0) {
        const auto lead = std::chrono::ceil<std::chrono::minutes>(before.nanoseconds());
        if (lead < std::chrono::hours(24)) c.lead = lead;
      }
      h.metrics.push_back({tidal_name + "-" + w.name, HpaMetricKind::CronFloor, 1.0, HpaSource::Cron, 0, c});
    }
  }
  // render/scaling.cpp behavior(): up within one modelLoadTime at most the larger of a
  // doubling and N pods (burst headroom replicas, largest planned floor rise); down
  // after the scale-down window, one pod per window (the window within [15 s, 1800 s]).
  const int headroom_replicas = p.effective_burst_headroom() / std::max(1, p.replica_shape.gpu_per_replica);
  const int step = std::max({1, headroom_replicas, largest_floor - p.min_replicas});
  const int load = static_cast<int>(clamp_seconds(p.model_load_time, 1, kMaxPeriodSeconds));
  h.behavior.scale_up = HpaScalingRules{
      static_cast<int>(clamp_seconds(p.scale_up.stabilization_window, 0, kMaxStabilizationSeconds)),
      HpaSelectPolicy::Max,
      {HpaScalingPolicy{HpaPolicyType::Pods, step, load}, HpaScalingPolicy{HpaPolicyType::Percent, 100, load}}};
  h.behavior.scale_down = HpaScalingRules{
      static_cast<int>(clamp_seconds(p.scale_down.stabilization_window, 0, kMaxStabilizationSeconds)),
      HpaSelectPolicy::Max,
      {HpaScalingPolicy{HpaPolicyType::Pods, 1,
                        static_cast<int>(clamp_seconds(p.scale_down.stabilization_window, kHpaSyncSeconds,
                                                       kMaxPeriodSeconds))}}};
  h.cooldown_s = clamp_seconds(p.scale_down.stabilization_window, 0, std::numeric_limits<std::int32_t>::max());
  return h;
}

HpaSpec gpu_utilization_hpa(int min, int max, int target_percent) {
  HpaSpec h;
  h.min = min;
  h.max = max;
  h.metrics.push_back(
      {"gpu-utilization", HpaMetricKind::AverageValue, static_cast<double>(target_percent), HpaSource::GpuUtilization, 0, {}});
  return h;
}

}  // namespace gpubank::serving
