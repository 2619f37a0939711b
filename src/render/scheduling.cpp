#include "render/scheduling.hpp"

#include <algorithm>
#include <map>

#include "policy/schema.hpp"

namespace gpubank::render {

std::string queue_name(const policy::GPUQuotaPolicySpec& quota) {
  return quota.business_group + "-" + quota.resource_pool;
}

std::string gpu_resource(const policy::Pool& pool) {
  // The NVIDIA device plugin advertises whole GPUs (also time-sliced ones, unless
  // renameByDefault is set) as nvidia.com/gpu and, with MIG strategy "mixed", each MIG
  // profile as nvidia.com/mig-<profile> (k8s-device-plugin README, "MIG support").
  if (pool.partition == "full") return "nvidia.com/gpu";
  return "nvidia.com/mig-" + pool.partition;
}

PriorityModel::PriorityModel(const policy::PlatformGuardrailsSpec& guardrails) : guardrails_(guardrails) {
  for (const auto& rule : guardrails.priorities) {
    if (is_protected(rule)) {
      lowest_protected_ = std::min(lowest_protected_.value_or(rule.value), rule.value);
    } else {
      highest_unprotected_ = std::max(highest_unprotected_.value_or(rule.value), rule.value);
    }
  }
  for (const auto& g : guardrails.groups) {
    if (!runs_protected(g.name)) continue;
    for (const auto& [pool, _] : g.limits) ++protected_runners_[pool];
  }
}

bool PriorityModel::is_protected(const policy::PriorityRule& rule) const {
  if (!rule.preemptible) return true;
  if (rule.workload_types.empty()) return false;  // admits every type, the unprotected ones too
  const auto& guarded = guardrails_.protected_workload_types;
  return std::all_of(rule.workload_types.begin(), rule.workload_types.end(), [&](policy::WorkloadType t) {
    return std::find(guarded.begin(), guarded.end(), t) != guarded.end();
  });
}

bool PriorityModel::may_use(const policy::PriorityRule& rule, std::string_view group) {
  return rule.groups.empty() || std::find(rule.groups.begin(), rule.groups.end(), group) != rule.groups.end();
}

bool PriorityModel::runs_protected(std::string_view group) const {
  return std::any_of(guardrails_.priorities.begin(), guardrails_.priorities.end(),
                     [&](const policy::PriorityRule& rule) { return is_protected(rule) && may_use(rule, group); });
}

bool PriorityModel::protected_borrower_possible(const policy::Pool& pool, const policy::Group& group) const {
  const auto it = protected_runners_.find(pool.name);
  const int runners = it == protected_runners_.end() ? 0 : it->second;
  const int self = group.limits.contains(pool.name) && runs_protected(group.name) ? 1 : 0;
  return runners - self > 0;
}

bool PriorityModel::only_protected(std::string_view group) const {
  bool any = false;
  for (const auto& rule : guardrails_.priorities) {
    if (!may_use(rule, group)) continue;
    if (!is_protected(rule)) return false;
    any = true;
  }
  return any;
}

std::vector<QuotaPlacement> quota_placements(const policy::PolicySet& set) {
  std::vector<QuotaPlacement> out;
  const policy::PlatformGuardrailsSpec* g = set.guardrails_spec();
  if (g == nullptr) return out;
  // By name, once: the guardrails' own lookups are linear, and there is a lookup per quota.
  std::map<std::string_view, const policy::Pool*> pools;
  std::map<std::string_view, const policy::Group*> groups;
  for (const auto& p : g->pools) pools.emplace(p.name, &p);
  for (const auto& gr : g->groups) groups.emplace(gr.name, &gr);
  for (const auto& p : set.policies()) {
    if (p.kind != policy::Kind::GPUQuotaPolicy) continue;
    const auto& q = p.as<policy::GPUQuotaPolicySpec>();
    const auto pool = pools.find(q.resource_pool);
    const auto group = groups.find(q.business_group);
    if (pool == pools.end() || group == groups.end()) continue;
    out.push_back({&p, &q, pool->second, group->second});
  }
  return out;
}

Diagnostic finding(Severity severity, std::string_view rule, const policy::PolicyObject& object,
                   const std::string& path, std::string message) {
  return Diagnostic{severity,
                    std::string(rule),
                    object.origin.file,
                    object.position_of(path),
                    std::string(policy::kind_name(object.kind)),
                    object.name(),
                    path,
                    std::move(message)};
}

void check_unique_names(std::string_view kind, std::vector<NamedOrigin> names, Diagnostics& out) {
  std::map<std::string, std::vector<const NamedOrigin*>> by_name;
  for (const auto& n : names) by_name[n.name].push_back(&n);
  for (const auto& [name, origins] : by_name) {
    if (origins.size() < 2) continue;
    // Reported on every origin after the first, naming the first.
    const NamedOrigin& first = *origins.front();
    for (std::size_t i = 1; i < origins.size(); ++i) {
      const NamedOrigin& o = *origins[i];
      out.push_back(finding(Severity::Error, kRuleNameCollision, *o.policy, o.path,
                            "renders " + std::string(kind) + " " + name + ", which " + first.policy->ref() +
                                " (" + first.path + ") renders too; rename a group or pool so that the names differ"));
    }
  }
}

std::vector<NamedOrigin> quota_queue_names(const policy::PolicySet& set) {
  std::vector<NamedOrigin> names;
  for (const auto& q : quota_placements(set)) names.push_back({queue_name(*q.quota), q.policy, "spec.businessGroup"});
  return names;
}

Diagnostics check_priority_classes(const policy::PolicySet& set) {
  Diagnostics out;
  const policy::PolicyObject* g = set.guardrails();
  if (g == nullptr) return out;
  const auto& spec = g->as<policy::PlatformGuardrailsSpec>();
  const PriorityModel model(spec);
  for (std::size_t i = 0; i < spec.priorities.size(); ++i) {
    const auto& rule = spec.priorities[i];
    const std::string path = "spec.priorities[" + std::to_string(i) + "]";
    // The API server refuses PriorityClass names with this prefix (they are the system's).
    if (rule.name.starts_with("system-")) {
      out.push_back(finding(Severity::Error, kRuleReservedPriorityName, *g, path + ".name",
                            "PriorityClass names starting with \"system-\" are reserved for Kubernetes' own classes"));
    }
    if (model.is_protected(rule) && model.highest_unprotected() && rule.value <= *model.highest_unprotected()) {
      out.push_back(finding(Severity::Warning, kRuleProtectedPriorityOrder, *g, path + ".value",
                            "protected class " + rule.name + " (" + std::to_string(rule.value) +
                                ") does not rank above every unprotected class (highest " +
                                std::to_string(*model.highest_unprotected()) +
                                "); queues preempt by priority, so its workloads can be chosen for reclaim"));
    }
  }
  return out;
}

namespace {

std::string join_names(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

std::string describe(const policy::PriorityRule& rule, bool protected_class) {
  std::vector<std::string> types;
  for (auto t : rule.workload_types) types.emplace_back(doc::enum_name(t));
  std::string text = "gpubank: " + (types.empty() ? std::string("every workload type") : join_names(types)) + " of " +
                     (rule.groups.empty() ? std::string("every business group") : join_names(rule.groups));
  text += protected_class ? "; protected: never reclaimed, may preempt lower classes"
                          : "; preemptible: preempted only through the queueing engine's quota";
  return text;
}

}  // namespace

Json object_head(std::string_view api_version, std::string_view kind, const std::string& name, const std::string& ns) {
  Json o = Json::object();
  o["apiVersion"] = api_version;
  o["kind"] = kind;
  Json& meta = o["metadata"];
  meta["name"] = name;
  if (!ns.empty()) meta["namespace"] = ns;
  return o;
}

Json pool_labels(const std::string& pool, const std::string* group) {
  Json labels = Json::object();
  if (group != nullptr) labels[std::string(policy::kLabelBusinessGroup)] = *group;
  labels[std::string(kLabelResourcePool)] = pool;
  return labels;
}

std::vector<RenderedObject> render_priority_classes(const policy::PolicySet& set) {
  std::vector<RenderedObject> out;
  const policy::PolicyObject* g = set.guardrails();
  if (g == nullptr) return out;
  const auto& spec = g->as<policy::PlatformGuardrailsSpec>();
  const PriorityModel model(spec);
  for (const auto& rule : spec.priorities) {
    const bool protected_class = model.is_protected(rule);
    Json o = object_head("scheduling.k8s.io/v1", "PriorityClass", rule.name);
    o["value"] = rule.value;
    o["globalDefault"] = false;
    // kube-scheduler's preemption ignores quotas: a preemptible class that preempted pods
    // there could take GPUs the queueing engine accounted to another group. Only protected
    // classes keep PreemptLowerPriority (scheduling.k8s.io/v1 PriorityClass.preemptionPolicy).
    o["preemptionPolicy"] = protected_class ? "PreemptLowerPriority" : "Never";
    o["description"] = describe(rule, protected_class);
    out.push_back(RenderedObject{std::move(o), "scheduling/priorityclass-" + rule.name + ".yaml", {g}});
  }
  return out;
}

}  // namespace gpubank::render
