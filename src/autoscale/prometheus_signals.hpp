// The inference autoscaler's signals read from a real Prometheus: the queries the rendered
// KEDA ScaledObject runs (render/scaling.hpp), one instant, with a staleness guard.
//
// Prometheus answers an instant query with the latest sample of each series up to five
// minutes old (its lookback delta), so a target it stopped scraping keeps answering with
// its last values for minutes. The freshness query asks for the oldest of the pods' latest
// samples (`min(timestamp(vllm:num_requests_waiting{...}))`); older than max_age, the
// reading is refused (kRuleSignalsStale) and the caller holds (live_autoscaler.hpp).
//
// Pure: the query function is the caller's (governance::PrometheusClient over HTTP; a
// test's recorded answers).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/duration.hpp"
#include "autoscale/live_autoscaler.hpp"
#include "core/expected.hpp"
#include "policy/types.hpp"
#include "serving/signals.hpp"

namespace gpubank::autoscale {

inline constexpr std::string_view kRuleSignalsStale = "autoscale.signals-stale";
inline constexpr std::string_view kRuleSignalsQuery = "autoscale.signals-query";

// Which series are the service's pods, and how they are told apart.
struct SignalSelector {
  // PromQL label matchers: render::pod_matchers of the policy's scale target by default
  // (`namespace="ns",pod=~"name-predictor-..."`, what Kubernetes service discovery
  // attaches).
  std::string matchers;
  // The label that names a replica: "pod" under Kubernetes discovery; the twin's
  // /metrics page names them by "replica".
  std::string replica_label = "pod";
};

// The selector of the rendered ScaledObject for `spec`; an error for a workload KEDA
// cannot scale (RayService).
[[nodiscard]] Expected<SignalSelector> rendered_selector(const policy::InferenceScalingPolicySpec& spec);

struct SignalQueries {
  std::string queue_depth;     // render::queue_depth_query
  std::string running;         // sum(vllm:num_requests_running{...})
  std::string ttft_p95;        // render::ttft_p95_query (unguarded: NaN is idle, serving::from_prometheus)
  std::string kv_cache;        // render::kv_cache_query, grouped by the replica label
  std::string pods_reporting;  // count(count by (<replica label>) (vllm:num_requests_waiting{...}))
  std::string request_rate;    // render::request_rate_query; empty when the policy has no rate target
  std::string freshness;       // min(timestamp(vllm:num_requests_waiting{...}))
  // sum by (<label>) (running) + sum by (<label>) (waiting): each replica's requests
  std::string in_flight_by_replica;
  std::string replica_label;
};

// The queries for `spec` over `selector`, rates over `rate_window` (KEDA's, 2m, by default).
[[nodiscard]] SignalQueries signal_queries(const policy::InferenceScalingPolicySpec& spec, const SignalSelector& selector,
                                           Duration rate_window = Duration(std::chrono::minutes(2)));

// PromQL at an instant (Unix ms) -> its samples, or why not.
using QueryFunction = std::function<Expected<std::vector<serving::PromSample>>(const std::string& promql, std::int64_t t_ms)>;

// One reading at `now_ms`: every query, then serving::from_prometheus. Errors: a query
// that fails (kRuleSignalsQuery, naming the query and quoting the cause), an answer
// from_prometheus refuses (its rule), samples older than max_age (kRuleSignalsStale, with
// their age). No pod scraped at all is not an error: an Observation with no replica
// reporting, on which the autoscaler holds.
[[nodiscard]] Expected<serving::Observation> read_prometheus_signals(const SignalQueries& queries, const QueryFunction& query,
                                                                     std::int64_t now_ms, std::chrono::milliseconds max_age);

// Each replica's requests in flight at now_ms (for pod-deletion-cost); errors as above, and
// a sample without the replica label.
[[nodiscard]] Expected<std::vector<ReplicaLoad>> read_prometheus_loads(const SignalQueries& queries, const QueryFunction& query,
                                                                       std::int64_t now_ms);

}  // namespace gpubank::autoscale
