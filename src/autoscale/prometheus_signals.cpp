#include "autoscale/prometheus_signals.hpp"

#include <cmath>

#include <cstdio>

#include "metrics/names.hpp"
#include "render/scaling.hpp"

namespace gpubank::autoscale {

using metrics::with_rule;

Expected<SignalSelector> rendered_selector(const policy::InferenceScalingPolicySpec& spec) {
  const auto target = render::scale_target_of(spec);
  if (!target) {
    return Unexpected{std::string("workloadRef ") + spec.workload_ref.name +
                      ": KEDA cannot scale this kind (RayService) and gpubank renders no ScaledObject for it; give --selector"};
  }
  return SignalSelector{render::pod_matchers(spec.workload_ref, *target), "pod"};
}

SignalQueries signal_queries(const policy::InferenceScalingPolicySpec& spec, const SignalSelector& selector,
                             Duration rate_window) {
  const std::string& m = selector.matchers;
  const std::string waiting = "vllm:num_requests_waiting{" + m + "}";
  SignalQueries q;
  q.queue_depth = render::queue_depth_query(m);
  q.running = "sum(vllm:num_requests_running{" + m + "})";
  q.ttft_p95 = render::ttft_p95_query(m, rate_window);
  q.kv_cache = render::kv_cache_query(m, selector.replica_label);
  q.pods_reporting = "count(count by (" + selector.replica_label + ") (" + waiting + "))";
  if (spec.scale_up.requests_per_second_per_replica) q.request_rate = render::request_rate_query(m, rate_window);
  q.freshness = "min(timestamp(" + waiting + "))";
  const std::string by = "sum by (" + selector.replica_label + ") (";
  q.in_flight_by_replica = by + "vllm:num_requests_running{" + m + "}) + " + by + waiting + ")";
  q.replica_label = selector.replica_label;
  return q;
}

namespace {

std::string seconds_text(std::int64_t ms) {
  const double s = static_cast<double>(ms) / 1000.0;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f s", s);
  return buf;
}

}  // namespace

Expected<serving::Observation> read_prometheus_signals(const SignalQueries& queries, const QueryFunction& query,
                                                       std::int64_t now_ms, std::chrono::milliseconds max_age) {
  auto run = [&](const std::string& name, const std::string& promql) -> Expected<std::vector<serving::PromSample>> {
    auto samples = query(promql, now_ms);
    if (!samples) return Unexpected{with_rule("the " + name + " query (" + promql + ") failed: " + samples.error(), kRuleSignalsQuery)};
    return samples;
  };
  // Freshness first: a stale answer says nothing about the other queries' worth.
  auto fresh = run("freshness", queries.freshness);
  if (!fresh) return Unexpected{fresh.error()};
  if (fresh->size() > 1) {
    return Unexpected{with_rule("the freshness query returned " + std::to_string(fresh->size()) + " samples, not one",
                                serving::kRulePromShape)};
  }
  if (fresh->size() == 1) {
    const double oldest_s = fresh->front().value;
    if (!std::isfinite(oldest_s) || oldest_s < 0) {
      return Unexpected{with_rule("the freshness query returned a time that is not one", serving::kRulePromValue)};
    }
    const auto oldest_ms = static_cast<std::int64_t>(std::llround(oldest_s * 1000.0));
    const std::int64_t age = now_ms - oldest_ms;
    if (age > max_age.count()) {
      return Unexpected{with_rule("the oldest pod's latest vllm:num_requests_waiting sample is " + seconds_text(age) +
                                      " old (limit " + seconds_text(max_age.count()) +
                                      "): Prometheus no longer scrapes it, and its last values are not the load now",
                                  kRuleSignalsStale)};
    }
  }
  serving::PrometheusResults r;
  r.t_ms = now_ms;
  auto take = [&](const std::string& name, const std::string& promql, std::vector<serving::PromSample>& into) -> Expected<bool> {
    auto samples = run(name, promql);
    if (!samples) return Unexpected{samples.error()};
    into = std::move(*samples);
    return true;
  };
  if (auto ok = take("queue-depth", queries.queue_depth, r.queue_depth); !ok) return Unexpected{ok.error()};
  if (auto ok = take("ttft-p95", queries.ttft_p95, r.ttft_p95); !ok) return Unexpected{ok.error()};
  if (auto ok = take("kv-cache", queries.kv_cache, r.kv_cache); !ok) return Unexpected{ok.error()};
  if (auto ok = take("pods-reporting", queries.pods_reporting, r.pods_reporting); !ok) return Unexpected{ok.error()};
  r.running.emplace();
  if (auto ok = take("running", queries.running, *r.running); !ok) return Unexpected{ok.error()};
  if (!queries.request_rate.empty()) {
    r.request_rate.emplace();
    if (auto ok = take("request-rate", queries.request_rate, *r.request_rate); !ok) return Unexpected{ok.error()};
  }
  return serving::from_prometheus(r);
}

Expected<std::vector<ReplicaLoad>> read_prometheus_loads(const SignalQueries& queries, const QueryFunction& query,
                                                         std::int64_t now_ms) {
  auto samples = query(queries.in_flight_by_replica, now_ms);
  if (!samples) {
    return Unexpected{with_rule("the in-flight query (" + queries.in_flight_by_replica + ") failed: " + samples.error(),
                                kRuleSignalsQuery)};
  }
  std::vector<ReplicaLoad> out;
  for (const auto& s : *samples) {
    const auto it = s.labels.find(queries.replica_label);
    if (it == s.labels.end()) {
      return Unexpected{with_rule("the in-flight query returned a sample without the label " + queries.replica_label,
                                  serving::kRulePromShape)};
    }
    if (!std::isfinite(s.value) || s.value < 0) {
      return Unexpected{with_rule("the in-flight query returned a count that is not one for " + it->second,
                                  serving::kRulePromValue)};
    }
    out.push_back({it->second, s.value});
  }
  return out;
}

}  // namespace gpubank::autoscale
