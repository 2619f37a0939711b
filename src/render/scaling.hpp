// InferenceScalingPolicy (+ the TidalPolicy windows that target it) -> one KEDA
// ScaledObject (keda.sh/v1alpha1) per service, and for KServe InferenceServices the
// annotations that hand the predictor's replicas to that ScaledObject. Pure and
// deterministic: the same set and options give byte-identical objects. The mapping and
// the upstream facts it rests on are in docs/render-scaling.md.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/duration.hpp"
#include "core/expected.hpp"
#include "policy/policy_set.hpp"
#include "render/object.hpp"

namespace gpubank::render {

struct ScalingOptions {
  // Where KEDA's Prometheus scaler sends its queries (trigger metadata.serverAddress;
  // KEDA has no default). This one is the governing Service the Prometheus Operator
  // creates for every Prometheus ("prometheus-operated", port 9090) in the namespace
  // kube-prometheus-stack is usually installed in.
  std::string prometheus_address = "http://prometheus-operated.monitoring.svc:9090";
  // rate() window of the TTFT histogram: four scrapes at the Operator's 30s default.
  Duration rate_window{std::chrono::minutes(2)};
  // Where the predictor's vLLM serves /metrics inside its pod, for the drain hook: KServe
  // gives the predictor container port 8080.
  int vllm_port = 8080;
};

// The drain of a replica the HPA removes (docs/render-scaling.md, "Draining a replica"):
// the pod leaves the Service's endpoints as it starts terminating; the preStop hook waits
// kDrainPropagationSeconds for that to reach every proxy, then polls vLLM's /metrics until
// vllm:num_requests_running + vllm:num_requests_waiting is 0, at most until drainTimeout
// (counted from the hook's start); SIGTERM follows. The grace period is drainTimeout +
// kDrainPropagationSeconds + kShutdownSeconds (vLLM's own shutdown).
inline constexpr std::int64_t kDrainPropagationSeconds = 5;
inline constexpr std::int64_t kShutdownSeconds = 30;
// The hook's Python program (python3 -c): sleeps propagation_seconds, then polls
// 127.0.0.1:<port>/metrics every 2 s until nothing runs or waits, drain_seconds at most.
[[nodiscard]] std::string drain_script(int port, std::int64_t drain_seconds, std::int64_t propagation_seconds);
// terminationGracePeriodSeconds for the policy's pods.
[[nodiscard]] std::int64_t termination_grace_seconds(const policy::InferenceScalingPolicySpec& p);

// One ScaledObject per InferenceScalingPolicy whose workload KEDA can scale, at
// keda/scaledobject-<namespace>-<policy>.yaml, and for workloadRef.kind InferenceService
// a partial InferenceService at kserve/inferenceservice-<namespace>-<name>.yaml (for
// server-side apply): the annotations that hand its replicas to the ScaledObject and the
// predictor's drain (grace period and preStop hook).
// Objects are stamped (managed-by label, source policies and their hash) and sorted by
// path. Expects a set that passed validation.
std::vector<RenderedObject> render_scaling(const policy::PolicySet& set, const ScalingOptions& options = {});

// What the ScaledObject scales and which pods export the service's vLLM metrics.
struct ScaleTarget {
  std::string api_version;
  std::string kind;
  std::string name;
  // An RE2 pattern (anchored, as PromQL's =~ is) matching the names of exactly the
  // target's pods, not a sibling workload's.
  std::string pod_pattern;
};

// InferenceService -> the predictor Deployment KServe's Standard (raw) mode creates;
// LLMInferenceService -> the workload KServe creates for it; Deployment -> itself.
// nullopt for RayService: Ray Serve's autoscaler owns its replicas and KEDA cannot scale
// it (no scale subresource).
[[nodiscard]] std::optional<ScaleTarget> scale_target_of(const policy::InferenceScalingPolicySpec& spec);

// The PromQL label matchers selecting the target's pods: `namespace="ns",pod=~"..."`.
[[nodiscard]] std::string pod_matchers(const policy::WorkloadRef& ref, const ScaleTarget& target);

// The queries of the Prometheus triggers, each returning one sample (KEDA's Prometheus
// scaler rejects more than one), over the pods `matchers` selects.
// Requests waiting, summed over the service's pods (per replica with AverageValue).
[[nodiscard]] std::string queue_depth_query(std::string_view matchers);
// The serving replicas while the waiting requests per replica are at or above
// `per_replica`, else 0: with an AverageValue target of 1 it holds the replica count,
// so scale-down waits until the queue is below the scale-down target.
[[nodiscard]] std::string queue_hold_query(std::string_view matchers, int per_replica);
// p95 time to first token, in seconds, over `window`: NaN when no request got its first
// token in the window (what gpubank's own autoscaler reads as idle, serving/signals.hpp).
[[nodiscard]] std::string ttft_p95_query(std::string_view matchers, Duration window);
// The same for the KEDA trigger, guarded so that no traffic reads as 0 and no series as
// nothing:
//   (histogram_quantile(...) >= 0) or (sum(rate(..._count[w])) == 0)
// The comparison drops the NaN that histogram_quantile gives without requests; the right
// side is then a 0 exactly when the pods report the histogram and nothing arrived. Pods
// not scraped give an empty result, which with ignoreNullValues "false" is an error: the
// HPA skips the metric and never scales down on it (a plain `or vector(0)` would turn a
// lost scrape into "no load" and scale down).
[[nodiscard]] std::string ttft_p95_guarded_query(std::string_view matchers, Duration window);
// KV-cache usage (0..1) summed over pods, each pod counted once: vllm:kv_cache_usage_perc
// where a pod exports it, the deprecated vllm:gpu_cache_usage_perc where it exports only
// that. `replica_label` names a pod ("pod" under Kubernetes discovery).
[[nodiscard]] std::string kv_cache_query(std::string_view matchers, std::string_view replica_label = "pod");
// Requests finished per second over `window`, summed over the pods (every engine and
// finished_reason is a series of its own). 0 when the pods report and nothing finished;
// an empty result (an error for the trigger) when no pod is scraped.
[[nodiscard]] std::string request_rate_query(std::string_view matchers, Duration window);

// The cron expression a window's trigger starts on: `start` moved `prewarm_before` earlier
// (the window's effective prewarmBefore, policy/prewarm.hpp; rounded up to whole minutes,
// in local wall-clock time) so replicas are loaded when the window starts; `start` itself
// for a zero lead. An error (and the caller keeps `start`) when one five-field expression
// cannot say it, e.g. when some firings would cross midnight and others not, or a firing
// would leave its day of the month.
[[nodiscard]] Expected<std::string> prewarm_start(const policy::TidalWindow& window, Duration prewarm_before);

}  // namespace gpubank::render
