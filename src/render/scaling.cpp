#include "render/scaling.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <map>
#include <set>
#include <utility>

#include "policy/prewarm.hpp"
#include "policy/types.hpp"

namespace gpubank::render {
namespace {

using policy::InferenceScalingPolicySpec;
using policy::Kind;
using policy::PolicyObject;
using policy::TidalPolicySpec;
using policy::WorkloadRefKind;

// KServe: serving.kserve.io/autoscalerClass "external" makes KServe create no HPA or
// ScaledObject for the component and delete one it owns (pkg/constants AutoscalerClass*,
// reconcilers/hpa shouldCreateHPA/shouldDeleteHPA); KEDA needs the Standard (formerly
// RawDeployment) mode, where the predictor is a plain Deployment.
constexpr std::string_view kAnnotationAutoscalerClass = "serving.kserve.io/autoscalerClass";
constexpr std::string_view kAutoscalerClassExternal = "external";
constexpr std::string_view kAnnotationDeploymentMode = "serving.kserve.io/deploymentMode";
constexpr std::string_view kDeploymentModeStandard = "Standard";
// KEDA: pauses a ScaledObject at a fixed replica count (ScaledObject specification).
constexpr std::string_view kAnnotationPausedReplicas = "autoscaling.keda.sh/paused-replicas";

// KEDA's documented defaults (ScaledObject specification): how often triggers are polled.
constexpr int kPollingIntervalSeconds = 30;
// Bounds the HPA API puts on behavior (autoscaling/v2 HPAScalingRules).
constexpr std::int64_t kMaxStabilizationSeconds = 3600;
constexpr std::int64_t kMaxPeriodSeconds = 1800;
// The HPA controller's sync period: a 100% policy over it is the HPA's own scale-down default.
constexpr int kHpaSyncSeconds = 15;

// Characters RE2 treats specially outside a class.
constexpr std::string_view kRegexSpecial = R"(\.+*?()|[]{}^$)";

std::string regex_literal(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (kRegexSpecial.find(c) != std::string_view::npos) out += '\\';
    out += c;
  }
  return out;
}

// A PromQL double-quoted string body.
std::string promql_string(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '\\' || c == '"') out += '\\';
    out += c;
  }
  return out;
}

// Pods of a Deployment are named <deployment>-<pod-template-hash>-<5 random characters>
// (ReplicaSet controller + the API server's generateName). The name generator cuts the
// base ("<replicaset>-") at 58 characters, so long names keep only their prefix.
std::string deployment_pod_pattern(std::string_view deployment) {
  constexpr std::size_t kMaxGeneratedBase = 58;
  constexpr std::size_t kMaxHash = 10;  // a uint32 in Kubernetes' safe alphabet
  if (deployment.size() + 1 + kMaxHash + 1 <= kMaxGeneratedBase) {
    return regex_literal(deployment) + "-[a-z0-9]+-[a-z0-9]{5}";
  }
  return regex_literal(deployment.substr(0, std::min(deployment.size(), kMaxGeneratedBase))) + "[-a-z0-9]*";
}

// A decimal without exponent or trailing zeros: 1500ms -> "1.5", 200ms -> "0.2".
std::string seconds_text(Duration d) {
  const std::int64_t ns = d.nanoseconds().count();
  std::string out = std::to_string(ns / 1'000'000'000);
  std::string frac = std::to_string(1'000'000'000 + ns % 1'000'000'000).substr(1);
  while (!frac.empty() && frac.back() == '0') frac.pop_back();
  if (!frac.empty()) out += "." + frac;
  return out;
}

// A percentage as the fraction vLLM's gauges use: 85 -> "0.85", 100 -> "1".
std::string fraction_text(int percent) {
  if (percent % 100 == 0) return std::to_string(percent / 100);
  std::string frac = std::to_string(100 + percent % 100).substr(1);
  if (frac.back() == '0') frac.pop_back();
  return std::to_string(percent / 100) + "." + frac;
}

// A threshold as KEDA parses it (strconv.ParseFloat): whole numbers without a fraction,
// others in the shortest text that reads back the same double.
std::string number_text(double v) {
  if (v == std::floor(v) && std::abs(v) < 1e15) return std::to_string(static_cast<std::int64_t>(v));
  return Json(v).dump();
}

std::int64_t clamp_seconds(Duration d, std::int64_t lo, std::int64_t hi) {
  return std::clamp<std::int64_t>(std::chrono::duration_cast<std::chrono::seconds>(d.nanoseconds()).count(), lo, hi);
}

// A scale-down policy's period: the scale-down stabilization window, within the HPA's
// allowed periodSeconds (15 s, the sync period, to 1800 s).
std::int64_t scale_down_period(const InferenceScalingPolicySpec& p) {
  return clamp_seconds(p.scale_down.stabilization_window, kHpaSyncSeconds, kMaxPeriodSeconds);
}

// ---- cron fields ------------------------------------------------------------------

constexpr std::uint64_t kStarBit = std::uint64_t{1} << 63;  // CronSchedule::Fields: "*" or "?"

bool has(std::uint64_t bits, unsigned v) { return ((bits >> v) & 1U) != 0; }

// A field's bits as cron text: "*" for a star field, else values and ranges ("1-5,0").
std::string field_text(std::uint64_t bits, unsigned lo, unsigned hi) {
  if ((bits & kStarBit) != 0) return "*";
  std::string out;
  for (unsigned v = lo; v <= hi; ++v) {
    if (!has(bits, v)) continue;
    unsigned end = v;
    while (end < hi && has(bits, end + 1)) ++end;
    if (!out.empty()) out += ',';
    out += std::to_string(v);
    if (end > v) out += (end == v + 1 ? "," : "-") + std::to_string(end);
    v = end;
  }
  return out;
}

std::uint64_t previous_weekday(std::uint64_t dow) {
  std::uint64_t out = dow & kStarBit;
  for (unsigned d = 0; d < 7; ++d) {
    if (has(dow, d)) out |= std::uint64_t{1} << ((d + 6) % 7);
  }
  return out;
}

// ---- objects ----------------------------------------------------------------------

Json prometheus_trigger(std::string_view name, std::string_view metric_type, const ScalingOptions& options,
                        std::string query, std::string threshold) {
  Json t = Json::object();
  t["type"] = "prometheus";
  t["name"] = name;
  t["metricType"] = metric_type;
  Json& m = t["metadata"];
  m["serverAddress"] = options.prometheus_address;
  m["query"] = std::move(query);
  m["threshold"] = std::move(threshold);
  // An empty result or NaN is an error, not 0 (KEDA's default): the HPA skips a metric it
  // cannot read and never scales down on it, so a lost scrape holds the replicas.
  m["ignoreNullValues"] = "false";
  return t;
}

// The tidal policies targeting each inference policy, by name for a stable order.
std::map<std::string, std::vector<const PolicyObject*>> tidal_by_target(const policy::PolicySet& set) {
  std::map<std::string, std::vector<const PolicyObject*>> out;
  for (const auto& o : set.policies()) {
    if (o.kind != Kind::TidalPolicy) continue;
    for (const auto& name : o.as<TidalPolicySpec>().targets.inference_policies) out[name].push_back(&o);
  }
  for (auto& [name, list] : out) {
    std::sort(list.begin(), list.end(), [](const auto* a, const auto* b) { return a->name() < b->name(); });
    list.erase(std::unique(list.begin(), list.end()), list.end());
  }
  return out;
}

Json behavior(const InferenceScalingPolicySpec& p, int largest_floor_rise) {
  // Scale-up: metrics stay high while new replicas load the model, and the HPA keeps
  // multiplying a Value metric (TTFT) by replicas that are not serving yet. So within one
  // modelLoadTime add at most the larger of: a doubling, the replicas the burst headroom
  // holds ready, or the largest floor rise a tidal window plans (so prewarm is one step).
  const int headroom_replicas = p.effective_burst_headroom() / p.replica_shape.gpu_per_replica;
  const int step = std::max({1, headroom_replicas, largest_floor_rise});
  const std::int64_t load = clamp_seconds(p.model_load_time, 1, kMaxPeriodSeconds);
  Json up = Json::object();
  up["stabilizationWindowSeconds"] = clamp_seconds(p.scale_up.stabilization_window, 0, kMaxStabilizationSeconds);
  up["selectPolicy"] = "Max";
  up["policies"] = Json::array({Json{{"type", "Pods"}, {"value", step}, {"periodSeconds", load}},
                                Json{{"type", "Percent"}, {"value", 100}, {"periodSeconds", load}}});
  // Scale-down: one replica per stabilization window. A TTFT or KV signal below target
  // says capacity is spare, not how much; the HPA's default (100 % per 15 s) jumps to
  // what the metrics ask, misses the SLO and scales up again a model load later (the
  // flapping measured in docs/serving.md). Walking down one replica per window is what
  // gpubank's autoscaler does (serving/autoscaler.hpp).
  Json down = Json::object();
  down["stabilizationWindowSeconds"] = clamp_seconds(p.scale_down.stabilization_window, 0, kMaxStabilizationSeconds);
  down["selectPolicy"] = "Max";
  down["policies"] = Json::array({Json{{"type", "Pods"}, {"value", 1}, {"periodSeconds", scale_down_period(p)}}});
  Json b = Json::object();
  b["scaleUp"] = std::move(up);
  b["scaleDown"] = std::move(down);
  return b;
}

RenderedObject scaled_object(const policy::PolicySet& set, const PolicyObject& o, const ScaleTarget& target,
                             const std::vector<const PolicyObject*>& tidal, const ScalingOptions& options) {
  const auto& p = o.as<InferenceScalingPolicySpec>();
  const std::string matchers = pod_matchers(p.workload_ref, target);

  Json triggers = Json::array();
  if (p.scale_up.queue_depth_per_replica) {
    triggers.push_back(prometheus_trigger("queue-depth", "AverageValue", options, queue_depth_query(matchers),
                                          std::to_string(*p.scale_up.queue_depth_per_replica)));
  }
  if (p.scale_down.queue_depth_per_replica) {
    triggers.push_back(prometheus_trigger("queue-depth-scale-down", "AverageValue", options,
                                          queue_hold_query(matchers, *p.scale_down.queue_depth_per_replica), "1"));
  }
  if (p.scale_up.ttft_p95) {
    // A latency is not divided among replicas: Value makes the HPA scale replicas by
    // the ratio of the current p95 to the target.
    triggers.push_back(prometheus_trigger("ttft-p95", "Value", options,
                                          ttft_p95_guarded_query(matchers, options.rate_window),
                                          seconds_text(*p.scale_up.ttft_p95)));
  }
  if (p.scale_up.kv_cache_high_watermark) {
    triggers.push_back(prometheus_trigger("kv-cache", "AverageValue", options, kv_cache_query(matchers),
                                          fraction_text(*p.scale_up.kv_cache_high_watermark)));
  }
  if (p.scale_up.requests_per_second_per_replica) {
    // A rate of the whole service against a rate per replica: AverageValue divides by the
    // replicas, so the HPA asks for ceil(rate / target).
    triggers.push_back(prometheus_trigger("request-rate", "AverageValue", options,
                                          request_rate_query(matchers, options.rate_window),
                                          number_text(*p.scale_up.requests_per_second_per_replica)));
  }
  // Tidal floors: KEDA's cron scaler reports desiredReplicas while the window is active
  // (AverageValue target 1), and the HPA takes the largest proposal over all triggers,
  // so the floor in force is max(cron, metrics, minReplicaCount).
  int largest_floor = p.min_replicas;
  for (const PolicyObject* t : tidal) {
    const auto& spec = t->as<TidalPolicySpec>();
    for (const auto& w : spec.windows) {
      if (!w.inference_replica_floor) continue;
      const auto floor = w.inference_replica_floor->for_policy(o.name());
      if (!floor || *floor < 1) continue;  // KEDA rejects desiredReplicas 0; a 0 floor asks for nothing
      largest_floor = std::max(largest_floor, *floor);
      // check_consistency warns when the start cannot be moved
      const auto start = prewarm_start(w, policy::effective_prewarm_before(set, spec, w));
      Json c = Json::object();
      c["type"] = "cron";
      c["name"] = t->name() + "-" + w.name;
      Json& m = c["metadata"];
      m["timezone"] = spec.timezone.name;
      m["start"] = start ? *start : w.start.text();
      m["end"] = w.end.text();
      m["desiredReplicas"] = std::to_string(*floor);
      triggers.push_back(std::move(c));
    }
  }

  Json so = Json::object();
  so["apiVersion"] = "keda.sh/v1alpha1";
  so["kind"] = "ScaledObject";
  Json& meta = so["metadata"];
  meta["name"] = o.name();
  meta["namespace"] = p.workload_ref.namespace_;
  if (p.max_replicas == 0) {
    // maxReplicaCount must be at least 1; a service capped at 0 is held there instead.
    meta["annotations"][std::string(kAnnotationPausedReplicas)] = "0";
  }
  Json& spec = so["spec"];
  spec["scaleTargetRef"] = Json{{"apiVersion", target.api_version}, {"kind", target.kind}, {"name", target.name}};
  spec["pollingInterval"] = kPollingIntervalSeconds;
  // Only used when scaling to zero: the same wait as any other scale-down.
  spec["cooldownPeriod"] = clamp_seconds(p.scale_down.stabilization_window, 0, INT32_MAX);
  spec["minReplicaCount"] = p.min_replicas;
  spec["maxReplicaCount"] = std::max(1, p.max_replicas);
  spec["advanced"]["horizontalPodAutoscalerConfig"]["behavior"] = behavior(p, largest_floor - p.min_replicas);
  spec["triggers"] = std::move(triggers);

  RenderedObject out;
  out.manifest = std::move(so);
  out.path = "keda/scaledobject-" + p.workload_ref.namespace_ + "-" + o.name() + ".yaml";
  out.sources.push_back(&o);
  out.sources.insert(out.sources.end(), tidal.begin(), tidal.end());
  return out;
}

}  // namespace

std::string drain_script(int port, std::int64_t drain_seconds, std::int64_t propagation_seconds) {
  // Python 3 (every vLLM and KServe serving image has it), standard library only. Reads the
  // engine's own gauges; an unreachable page ends the wait (the server is already gone).
  return "import re,time,urllib.request\n"
         "deadline=time.monotonic()+" + std::to_string(drain_seconds) + "\n"
         "time.sleep(" + std::to_string(propagation_seconds) + ")\n"
         "pattern=re.compile(r'^vllm:num_requests_(?:running|waiting)(?:\\{[^}]*\\})? ([0-9.eE+-]+)$',re.M)\n"
         "while time.monotonic()<deadline:\n"
         "    try:\n"
         "        page=urllib.request.urlopen('http://127.0.0.1:" + std::to_string(port) + "/metrics',timeout=2).read().decode()\n"
         "    except Exception:\n"
         "        break\n"
         "    if sum(float(v) for v in pattern.findall(page))==0:\n"
         "        break\n"
         "    time.sleep(2)\n";
}

std::int64_t termination_grace_seconds(const InferenceScalingPolicySpec& p) {
  const auto drain = std::chrono::duration_cast<std::chrono::seconds>(p.scale_down.drain_timeout.nanoseconds()).count();
  return std::max<std::int64_t>(0, drain) + kDrainPropagationSeconds + kShutdownSeconds;
}

namespace {

RenderedObject kserve_annotations(const PolicyObject& o, const ScalingOptions& options) {
  const auto& spec = o.as<InferenceScalingPolicySpec>();
  const auto& ref = spec.workload_ref;
  Json isvc = Json::object();
  isvc["apiVersion"] = "serving.kserve.io/v1beta1";
  isvc["kind"] = "InferenceService";
  Json& meta = isvc["metadata"];
  meta["name"] = ref.name;
  meta["namespace"] = ref.namespace_;
  meta["annotations"][std::string(kAnnotationDeploymentMode)] = kDeploymentModeStandard;
  meta["annotations"][std::string(kAnnotationAutoscalerClass)] = kAutoscalerClassExternal;
  // The drain (docs/render-scaling.md, "Draining a replica"): when the HPA removes a pod,
  // the preStop hook holds SIGTERM until the engine has nothing running or waiting, at
  // most drainTimeout, and the grace period covers the hook and vLLM's shutdown.
  const auto drain = std::chrono::duration_cast<std::chrono::seconds>(spec.scale_down.drain_timeout.nanoseconds()).count();
  Json& predictor = isvc["spec"]["predictor"];
  predictor["terminationGracePeriodSeconds"] = termination_grace_seconds(spec);
  predictor["model"]["lifecycle"]["preStop"]["exec"]["command"] =
      Json::array({"python3", "-c", drain_script(options.vllm_port, std::max<std::int64_t>(0, drain), kDrainPropagationSeconds)});
  RenderedObject out;
  out.manifest = std::move(isvc);
  out.path = "kserve/inferenceservice-" + ref.namespace_ + "-" + ref.name + ".yaml";
  out.sources.push_back(&o);
  return out;
}

}  // namespace

std::optional<ScaleTarget> scale_target_of(const InferenceScalingPolicySpec& spec) {
  const std::string& name = spec.workload_ref.name;
  switch (spec.workload_ref.kind) {
    case WorkloadRefKind::InferenceService: {
      // KServe names the predictor's Deployment PredictorServiceName(isvc) = "<isvc>-predictor".
      std::string deployment = name + "-predictor";
      std::string pattern = deployment_pod_pattern(deployment);
      return ScaleTarget{"apps/v1", "Deployment", std::move(deployment), std::move(pattern)};
    }
    case WorkloadRefKind::LLMInferenceService: {
      // KServe's LLMInferenceService reconciler names its workload ChildName(name, "-kserve"):
      // a Deployment, or a LeaderWorkerSet when a replica spans nodes (leader pods
      // "<lws>-<group>", which serve the metrics).
      std::string workload = name + "-kserve";
      if (spec.replica_shape.nodes_per_replica > 1) {
        std::string pattern = regex_literal(workload) + "-[0-9]+";
        return ScaleTarget{"leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", std::move(workload), std::move(pattern)};
      }
      std::string pattern = deployment_pod_pattern(workload);
      return ScaleTarget{"apps/v1", "Deployment", std::move(workload), std::move(pattern)};
    }
    case WorkloadRefKind::Deployment:
      return ScaleTarget{"apps/v1", "Deployment", name, deployment_pod_pattern(name)};
    case WorkloadRefKind::RayService:
      return std::nullopt;
  }
  return std::nullopt;
}

// vLLM labels its series with model_name and engine only; neither names the Kubernetes
// service (two services may serve one model), so the pods are selected by the namespace
// and pod labels Prometheus' Kubernetes discovery attaches (PodMonitor/ServiceMonitor).
std::string pod_matchers(const policy::WorkloadRef& ref, const ScaleTarget& target) {
  return "namespace=\"" + promql_string(ref.namespace_) + "\",pod=~\"" + promql_string(target.pod_pattern) + "\"";
}

// Metric names as vLLM's v1 engine exports them (vllm/v1/metrics/loggers.py).
std::string queue_depth_query(std::string_view matchers) {
  return "sum(vllm:num_requests_waiting{" + std::string(matchers) + "})";
}

std::string queue_hold_query(std::string_view matchers, int per_replica) {
  // A pod may run several engines (data parallelism), so replicas are counted by pod.
  const std::string waiting = "vllm:num_requests_waiting{" + std::string(matchers) + "}";
  const std::string pods = "count(count by (pod) (" + waiting + "))";
  return pods + " * (sum(" + waiting + ") / " + pods + " >= bool " + std::to_string(per_replica) + ")";
}

std::string ttft_p95_query(std::string_view matchers, Duration window) {
  return "histogram_quantile(0.95, sum by (le) (rate(vllm:time_to_first_token_seconds_bucket{" + std::string(matchers) +
         "}[" + window.to_string() + "])))";
}

std::string ttft_p95_guarded_query(std::string_view matchers, Duration window) {
  return "(" + ttft_p95_query(matchers, window) + " >= 0) or (sum(rate(vllm:time_to_first_token_seconds_count{" +
         std::string(matchers) + "}[" + window.to_string() + "])) == 0)";
}

std::string kv_cache_query(std::string_view matchers, std::string_view replica_label) {
  // `or` keeps a right-hand sample only where no left-hand sample has the same labels;
  // both sides are reduced to {pod} first, so a pod exporting both names counts once.
  const std::string m(matchers);
  const std::string by = "avg by (" + std::string(replica_label) + ") (";
  return "sum(" + by + "vllm:kv_cache_usage_perc{" + m + "}) or " + by + "vllm:gpu_cache_usage_perc{" + m + "}))";
}

std::string request_rate_query(std::string_view matchers, Duration window) {
  return "sum(rate(vllm:request_success_total{" + std::string(matchers) + "}[" + window.to_string() + "]))";
}

Expected<std::string> prewarm_start(const policy::TidalWindow& window, Duration prewarm_before) {
  const CronSchedule& start = window.start;
  if (prewarm_before.nanoseconds().count() <= 0) return start.text();
  const auto lead = std::chrono::ceil<std::chrono::minutes>(prewarm_before.nanoseconds()).count();
  const std::string quoted = "cron \"" + start.text() + "\"";
  constexpr int kDay = 24 * 60;
  if (lead >= kDay) return Unexpected{quoted + ": prewarmBefore " + prewarm_before.to_string() + " is a day or more"};

  const auto& f = start.fields();
  std::set<int> shifted;  // minutes of the day
  bool wraps = false;
  bool stays = false;
  for (int h = 0; h < 24; ++h) {
    if (!has(f.hour, static_cast<unsigned>(h))) continue;
    for (int m = 0; m < 60; ++m) {
      if (!has(f.minute, static_cast<unsigned>(m))) continue;
      const int t = h * 60 + m - static_cast<int>(lead);
      (t < 0 ? wraps : stays) = true;
      shifted.insert((t + kDay) % kDay);
    }
  }
  const bool dom_star = (f.day_of_month & kStarBit) != 0;
  const bool dow_star = (f.day_of_week & kStarBit) != 0;
  const bool month_star = (f.month & kStarBit) != 0;
  std::uint64_t dow = f.day_of_week;
  if (wraps && !(dom_star && dow_star && month_star)) {
    if (stays) return Unexpected{quoted + ": moved " + prewarm_before.to_string() + " earlier, some firings fall on the previous day and some do not"};
    if (!dom_star || !month_star) return Unexpected{quoted + ": moved before midnight, its day of the month or month would change"};
    dow = previous_weekday(dow);  // robfig ANDs the fields when day-of-month is "*"
  }
  std::set<int> hours;
  std::set<int> minutes;
  for (int t : shifted) {
    hours.insert(t / 60);
    minutes.insert(t % 60);
  }
  if (hours.size() * minutes.size() != shifted.size()) {
    return Unexpected{quoted + ": moved " + prewarm_before.to_string() + " earlier, its firings are not one minute list at one hour list"};
  }
  std::uint64_t hour_bits = 0;
  std::uint64_t minute_bits = 0;
  for (int h : hours) hour_bits |= std::uint64_t{1} << h;
  for (int m : minutes) minute_bits |= std::uint64_t{1} << m;
  return field_text(minute_bits, 0, 59) + " " + field_text(hour_bits, 0, 23) + " " + field_text(f.day_of_month, 1, 31) +
         " " + field_text(f.month, 1, 12) + " " + field_text(dow, 0, 6);
}

std::vector<RenderedObject> render_scaling(const policy::PolicySet& set, const ScalingOptions& options) {
  std::vector<RenderedObject> out;
  const auto tidal = tidal_by_target(set);
  const std::vector<const PolicyObject*> none;
  for (const auto& o : set.policies()) {
    if (o.kind != Kind::InferenceScalingPolicy) continue;
    const auto& p = o.as<InferenceScalingPolicySpec>();
    const auto target = scale_target_of(p);
    if (!target) continue;  // check_consistency says why (render.autoscaler-unsupported)
    const auto it = tidal.find(o.name());
    out.push_back(scaled_object(set, o, *target, it != tidal.end() ? it->second : none, options));
    if (p.workload_ref.kind == WorkloadRefKind::InferenceService) out.push_back(kserve_annotations(o, options));
  }
  stamp_all(out);
  sort_and_check_unique(out);
  return out;
}

}  // namespace gpubank::render
