#include "autoscale/live_autoscaler.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/timestamp.hpp"

namespace gpubank::autoscale {

LiveAutoscaler::LiveAutoscaler(const policy::InferenceScalingPolicySpec& spec, serving::AutoscalerOptions options)
    : autoscaler_(spec, options) {}

LiveStep LiveAutoscaler::step(const Expected<SignalReading>& reading, std::int64_t now_ms, int current,
                              std::optional<int> ready) {
  LiveStep out;
  out.t_ms = now_ms;
  out.current = current;
  out.ready = ready;
  if (!reading) {
    out.signals_error = reading.error();
    serving::Observation nothing;
    nothing.t_ms = now_ms;
    out.recommendation = autoscaler_.recommend(nothing, current, ready);
    out.held = true;
    out.recommendation.reason = "signals unavailable (" + reading.error() + "): holding at " +
                                std::to_string(out.recommendation.desired) +
                                "; without signals the autoscaler never scales down";
    return out;
  }
  out.reading = *reading;
  serving::Observation seen = reading->observation;
  seen.t_ms = now_ms;
  out.recommendation = autoscaler_.recommend(seen, current, ready);
  if (!reading->unread.empty() && out.recommendation.desired < current) {
    // Only the count returned is kept; the raw recommendation stays in the autoscaler's
    // window, which the next complete reading reconsiders.
    const int asked = out.recommendation.desired;
    // The count stays, moved into [minReplicas, maxReplicas] as every count is.
    const auto& p = autoscaler_.policy();
    out.recommendation.desired = std::clamp(current, p.min_replicas, std::max(p.min_replicas, p.max_replicas));
    out.held = out.recommendation.desired != asked;
    out.recommendation.reason += "; holding at " + std::to_string(out.recommendation.desired) + " instead of " +
                                 std::to_string(asked) + ": " + std::to_string(reading->unread.size()) +
                                 " replica(s) could not be read, and a replica without signals never lets the service scale in";
  }
  return out;
}

std::vector<DeletionCost> deletion_costs(const std::vector<ReplicaLoad>& loads) {
  std::vector<DeletionCost> out;
  out.reserve(loads.size());
  constexpr double kMax = std::numeric_limits<std::int32_t>::max();
  for (const auto& l : loads) {
    const double v = std::isfinite(l.in_flight) ? std::clamp(std::round(l.in_flight), 0.0, kMax) : kMax;
    out.push_back({l.replica, static_cast<std::int32_t>(v)});
  }
  std::sort(out.begin(), out.end(), [](const DeletionCost& a, const DeletionCost& b) {
    return a.cost != b.cost ? a.cost < b.cost : a.replica < b.replica;
  });
  return out;
}

namespace {

nlohmann::ordered_json optional_number(const std::optional<double>& v) { return v ? nlohmann::ordered_json(*v) : nullptr; }

}  // namespace

nlohmann::ordered_json to_json(const LiveStep& step) {
  nlohmann::ordered_json j;
  j["time"] = format_rfc3339(Timestamp(std::chrono::milliseconds(step.t_ms)));
  j["current"] = step.current;
  j["ready"] = step.ready ? nlohmann::ordered_json(*step.ready) : nullptr;
  j["desired"] = step.recommendation.desired;
  j["held"] = step.held;
  j["signalsError"] = step.signals_error.empty() ? nullptr : nlohmann::ordered_json(step.signals_error);
  if (step.reading) {
    const auto& o = step.reading->observation;
    j["observation"] = {{"replicasReporting", o.replicas_reporting},
                        {"queueDepth", optional_number(o.queue_depth)},
                        {"running", optional_number(o.running)},
                        {"kvCacheUsage", optional_number(o.kv_cache_usage)},
                        {"ttftP95Seconds", optional_number(o.ttft_p95_s)},
                        {"ttftIdle", o.ttft_idle},
                        {"requestRate", optional_number(o.request_rate)}};
    j["unread"] = step.reading->unread;
  } else {
    j["observation"] = nullptr;
    j["unread"] = nlohmann::ordered_json::array();
  }
  nlohmann::ordered_json costs = nlohmann::ordered_json::array();
  if (step.reading) {
    for (const auto& c : deletion_costs(step.reading->loads)) costs.push_back({{"replica", c.replica}, {"cost", c.cost}});
  }
  j["deletionCosts"] = std::move(costs);
  const auto& r = step.recommendation;
  nlohmann::ordered_json signals = nlohmann::ordered_json::array();
  for (const auto& s : r.signals) {
    signals.push_back({{"name", s.name},
                       {"value", optional_number(s.value)},
                       {"target", s.target},
                       {"replicas", s.replicas ? nlohmann::ordered_json(*s.replicas) : nullptr},
                       {"idle", s.idle}});
  }
  j["recommendation"] = {{"raw", r.raw},
                         {"stabilized", r.stabilized},
                         {"desired", r.desired},
                         {"metricsMissing", r.metrics_missing},
                         {"reason", r.reason},
                         {"signals", std::move(signals)}};
  return j;
}

}  // namespace gpubank::autoscale
