#include "twin/live/serving_report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

#include "twin/live/platform.hpp"

namespace gpubank::twin::live {

namespace {

using Json = nlohmann::ordered_json;
constexpr double kMsPerHour = 3'600'000.0;

std::string fixed(double value, int digits) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", digits, value);
  return buffer;
}

// Nearest-rank percentile of a sorted list.
std::int64_t percentile(const std::vector<std::int64_t>& sorted, double q) {
  if (sorted.empty()) return 0;
  const auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(sorted.size())));
  return sorted[std::clamp<std::size_t>(rank, 1, sorted.size()) - 1];
}

}  // namespace

Expected<std::vector<ServingOutcome>> run_serving_day(const policy::PolicySet& policies, const DayOptions& day,
                                                      std::shared_ptr<const cluster::Inventory> inventory,
                                                      const std::function<void(std::int64_t)>& progress,
                                                      std::vector<run::Event>* events, run::RunResult* stats_out) {
  run::RunOptions options;
  options.inventory = std::move(inventory);
  auto platform = Platform::create(policies, day, options);
  if (!platform) return Unexpected{platform.error()};
  Platform& p = **platform;
  constexpr std::int64_t kHour = 3'600'000;
  for (VirtualTime t = kHour; t <= p.end(); t += kHour) {
    if (!p.advance_to(t)) return Unexpected{p.error()};
    if (progress) progress(t / kHour);
  }
  if (!p.advance_to(p.end())) return Unexpected{p.error()};
  const run::RunResult stats = p.stats();
  if (events != nullptr) *events = p.result().events;
  if (stats_out != nullptr) *stats_out = stats;
  std::vector<ServingOutcome> out;
  const auto reports = p.control().report();
  const auto services = p.serving().stats();
  for (const auto& r : reports) {
    const policy::PolicyObject* object = policies.find(policy::Kind::InferenceScalingPolicy, r.policy);
    if (object == nullptr) continue;
    const auto& spec = object->as<policy::InferenceScalingPolicySpec>();
    ServingOutcome o;
    o.control = r.control;
    o.policy = r.policy;
    o.pool = spec.resource_pool;
    o.business_group = spec.business_group;
    o.ttft_target_ms = spec.scale_up.ttft_p95 ? spec.scale_up.ttft_p95->milliseconds() : 0;
    if (o.ttft_target_ms > 0) {
      const auto slo = p.serving().slo(r.policy, o.ttft_target_ms, 0, p.end());
      o.minutes = slo.minutes;
      o.minutes_within = slo.within;
      o.requests = slo.requests;
      o.unanswered = slo.unanswered;
    }
    for (const auto& s : services) {
      if (s.policy == r.policy) o.cut = s.snapshot.aborted;
    }
    o.inference_gpu_hours = static_cast<double>(r.replica_gpu_ms) / kMsPerHour;
    for (const auto& g : stats.groups) {
      if (g.pool == o.pool && g.business_group != o.business_group) o.training_gpu_hours += static_cast<double>(g.used_gpu_ms) / kMsPerHour;
    }
    o.peak_replicas = r.peak_replicas;
    o.scale_ups = r.scale_ups;
    o.scale_downs = r.scale_downs;
    o.blocked = r.blocked;
    o.reaction_ms = r.reaction_ms;
    std::sort(o.reaction_ms.begin(), o.reaction_ms.end());
    out.push_back(std::move(o));
  }
  return out;
}

Json serving_json(const std::vector<ServingOutcome>& outcomes) {
  Json runs = Json::array();
  for (const auto& o : outcomes) {
    Json j = Json::object();
    j["control"] = o.control;
    j["policy"] = o.policy;
    j["pool"] = o.pool;
    j["businessGroup"] = o.business_group;
    j["ttftTargetSeconds"] = static_cast<double>(o.ttft_target_ms) / 1000.0;
    j["sloAttainment"] = o.attainment();
    j["minutes"] = o.minutes;
    j["minutesWithinTarget"] = o.minutes_within;
    j["requests"] = o.requests;
    j["unanswered"] = o.unanswered;
    j["cut"] = o.cut;
    j["inferenceGpuHours"] = o.inference_gpu_hours;
    j["trainingGpuHoursOnPool"] = o.training_gpu_hours;
    j["peakReplicas"] = o.peak_replicas;
    j["scaleUps"] = o.scale_ups;
    j["scaleDowns"] = o.scale_downs;
    j["scaleUpBlocked"] = o.blocked;
    Json reaction = Json::object();
    reaction["episodes"] = static_cast<std::int64_t>(o.reaction_ms.size());
    if (!o.reaction_ms.empty()) {
      reaction["p50Seconds"] = static_cast<double>(percentile(o.reaction_ms, 0.5)) / 1000.0;
      reaction["maxSeconds"] = static_cast<double>(o.reaction_ms.back()) / 1000.0;
    }
    j["scaleOutReaction"] = std::move(reaction);
    runs.push_back(std::move(j));
  }
  // Each service's runs against its first (the autoscaler when all are compared).
  Json comparison = Json::array();
  std::map<std::string, const ServingOutcome*> first;
  for (const auto& o : outcomes) {
    const auto [at, fresh] = first.emplace(o.policy, &o);
    if (fresh) continue;
    const ServingOutcome& base = *at->second;
    Json c = Json::object();
    c["policy"] = o.policy;
    c["control"] = base.control;
    c["against"] = o.control;
    c["inferenceGpuHoursSaved"] = o.inference_gpu_hours - base.inference_gpu_hours;
    c["inferenceGpuHoursSavedShare"] =
        o.inference_gpu_hours > 0 ? (o.inference_gpu_hours - base.inference_gpu_hours) / o.inference_gpu_hours : 0.0;
    c["trainingGpuHoursGained"] = base.training_gpu_hours - o.training_gpu_hours;
    c["sloAttainment"] = base.attainment();
    c["againstSloAttainment"] = o.attainment();
    comparison.push_back(std::move(c));
  }
  Json out = Json::object();
  out["runs"] = std::move(runs);
  out["comparison"] = std::move(comparison);
  return out;
}

std::string serving_text(const std::vector<ServingOutcome>& outcomes) {
  std::ostringstream out;
  out << "SERVICE / CONTROL                          SLO(TTFT p95)  MINUTES     INFERENCE GPU-h  TRAINING GPU-h  PEAK  "
         "UP/DOWN  REACTION p50/max  CUT\n";
  for (const auto& o : outcomes) {
    std::string name = o.policy + " / " + o.control;
    name.resize(std::max<std::size_t>(name.size() + 1, 43), ' ');
    std::string minutes = std::to_string(o.minutes_within) + "/" + std::to_string(o.minutes);
    minutes.resize(std::max<std::size_t>(minutes.size() + 1, 12), ' ');
    std::string slo = fixed(100.0 * o.attainment(), 1) + " %";
    slo.resize(15, ' ');
    std::string inf = fixed(o.inference_gpu_hours, 1);
    inf.resize(17, ' ');
    std::string train = fixed(o.training_gpu_hours, 1);
    train.resize(16, ' ');
    std::string peak = std::to_string(o.peak_replicas);
    peak.resize(6, ' ');
    std::string updown = std::to_string(o.scale_ups) + "/" + std::to_string(o.scale_downs);
    updown.resize(9, ' ');
    std::string reaction = o.reaction_ms.empty() ? "-" : fixed(static_cast<double>(percentile(o.reaction_ms, 0.5)) / 1000.0, 0) +
                                                             "/" + fixed(static_cast<double>(o.reaction_ms.back()) / 1000.0, 0) + " s";
    reaction.resize(18, ' ');
    out << name << slo << minutes << inf << train << peak << updown << reaction << o.cut << '\n';
  }
  std::map<std::string, const ServingOutcome*> first;
  for (const auto& o : outcomes) {
    const auto [at, fresh] = first.emplace(o.policy, &o);
    if (fresh || o.inference_gpu_hours <= 0) continue;
    const ServingOutcome& base = *at->second;
    out << o.policy << ": " << base.control << " uses "
        << fixed(100.0 * (o.inference_gpu_hours - base.inference_gpu_hours) / o.inference_gpu_hours, 1)
        << " % fewer inference GPU-hours than " << o.control << " (" << fixed(base.inference_gpu_hours, 1) << " vs "
        << fixed(o.inference_gpu_hours, 1) << "), gives training " << fixed(base.training_gpu_hours - o.training_gpu_hours, 1)
        << " GPU-hours more on " << o.pool << ", SLO " << fixed(100.0 * base.attainment(), 1) << " % vs "
        << fixed(100.0 * o.attainment(), 1) << " %\n";
  }
  return out.str();
}

}  // namespace gpubank::twin::live
