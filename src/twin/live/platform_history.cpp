// Platform's history views for the portal's charts: a workload's, a GPU's, a business
// group's, a pool's and an inference service's minutes with their markers
// (gpu_history.hpp, position_history.hpp, service_history.hpp).
#include "twin/live/platform.hpp"

#include <algorithm>
#include <array>
#include <string_view>

namespace gpubank::twin::live {


std::optional<Json> Platform::workload_history_json(const std::string& key, std::int64_t from_ms,
                                                    std::int64_t to_ms) const {
  auto details = workload_json(key);
  if (!details) return std::nullopt;
  Json j = gpu_history_.workload_json(key, details->value("pool", ""), from_ms, to_ms, events(),
                                      [this](std::int64_t t) { return unix_ms(t); });
  j["businessGroup"] = details->value("businessGroup", "");
  return j;
}

std::optional<Json> Platform::group_history_json(const std::string& group, std::int64_t from_ms,
                                                 std::int64_t to_ms) const {
  const policy::PlatformGuardrailsSpec* guardrails = policies().guardrails_spec();
  if (guardrails == nullptr) return std::nullopt;
  const bool known = std::any_of(guardrails->groups.begin(), guardrails->groups.end(),
                                 [&](const auto& g) { return g.name == group; });
  if (!known) return std::nullopt;
  return position_history_.json(group, from_ms, to_ms, events(), [this](std::int64_t t) { return unix_ms(t); });
}

std::optional<Json> Platform::pool_history_json(const std::string& pool, std::int64_t from_ms,
                                                std::int64_t to_ms) const {
  const policy::PlatformGuardrailsSpec* guardrails = policies().guardrails_spec();
  if (guardrails == nullptr) return std::nullopt;
  const bool known = std::any_of(guardrails->pools.begin(), guardrails->pools.end(),
                                 [&](const auto& p) { return p.name == pool; });
  if (!known) return std::nullopt;
  return position_history_.pool_json(pool, from_ms, to_ms, events(), [this](std::int64_t t) { return unix_ms(t); });
}

std::optional<Json> Platform::service_history_json(const std::string& policy, std::int64_t from_ms,
                                                   std::int64_t to_ms) const {
  for (const policy::PolicyObject& o : policies().policies()) {
    if (o.kind != policy::Kind::InferenceScalingPolicy || o.name() != policy) continue;
    const auto& spec = o.as<policy::InferenceScalingPolicySpec>();
    // The workload's object as the serving controllers name it in their events.
    static constexpr std::array<std::string_view, 4> kKinds{"InferenceService", "LLMInferenceService", "Deployment",
                                                            "RayService"};
    const auto k = static_cast<std::size_t>(spec.workload_ref.kind);
    // Its namespace as the serving controller gives its replicas one (elastic.cpp): the
    // workloadRef's, else the group's first.
    std::string ns = spec.workload_ref.namespace_;
    if (ns.empty() && policies().guardrails_spec() != nullptr) {
      if (const policy::Group* g = policies().guardrails_spec()->find_group(spec.business_group)) {
        ns = g->effective_namespaces().front();
      }
    }
    const std::string object =
        std::string(k < kKinds.size() ? kKinds[k] : "InferenceService") + "/" + ns + "/" + spec.workload_ref.name;
    Json j = service_history_.json(ns, spec.workload_ref.name, object, o.ref(), spec.resource_pool, from_ms, to_ms,
                                   events(), [this](std::int64_t t) { return unix_ms(t); });
    j["policy"] = policy;
    j["workload"] = object;
    j["businessGroup"] = spec.business_group;
    j["ttftP95TargetSeconds"] = spec.scale_up.ttft_p95 ? Json(static_cast<double>(spec.scale_up.ttft_p95->milliseconds()) / 1000.0)
                                                       : Json(nullptr);
    return j;
  }
  return std::nullopt;
}

std::optional<Json> Platform::gpu_history_json(const std::string& uuid, std::int64_t from_ms, std::int64_t to_ms) const {
  const cluster::Cluster* c = simulation_.cluster();
  if (c == nullptr || !c->find_gpu(uuid)) return std::nullopt;
  const auto gpu = gpu_json(uuid);
  const std::string pool = gpu ? gpu->value("pool", "") : std::string();
  return gpu_history_.json(uuid, pool, from_ms, to_ms, events(), [this](std::int64_t t) { return unix_ms(t); });
}

}  // namespace gpubank::twin::live
