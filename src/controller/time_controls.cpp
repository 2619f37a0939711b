#include "controller/time_controls.hpp"

#include <algorithm>
#include <map>

#include "policy/cohort_quota.hpp"
#include "policy/lease_approval.hpp"
#include "policy/types.hpp"
#include "tidal/controller.hpp"

namespace gpubank::controller {
namespace {

using Json = render::Json;

// The resources of `flavor` in an object's spec.resourceGroups (a ClusterQueue or Cohort).
std::vector<Json*> flavor_resources(Json& manifest, const std::string& flavor) {
  std::vector<Json*> out;
  if (!manifest.contains("spec") || !manifest["spec"].contains("resourceGroups")) return out;
  for (Json& group : manifest["spec"]["resourceGroups"]) {
    if (!group.contains("flavors")) continue;
    for (Json& f : group["flavors"]) {
      if (f.value("name", "") != flavor || !f.contains("resources")) continue;
      for (Json& r : f["resources"]) out.push_back(&r);
    }
  }
  return out;
}

std::string label(const Json& manifest, const char* key) {
  if (!manifest.contains("metadata") || !manifest["metadata"].contains("labels")) return {};
  return manifest["metadata"]["labels"].value(key, "");
}

void earliest(std::optional<Timestamp>& next, Timestamp t) {
  if (!next || t < *next) next = t;
}

}  // namespace

TimeControls adjust_for_time(std::vector<render::RenderedObject>& objects, const policy::PolicySet& set, Timestamp now,
                             const bank::LedgerBook* /*ledger*/) {
  TimeControls out;
  const policy::PlatformGuardrailsSpec* guardrails = set.guardrails_spec();
  if (guardrails == nullptr) return out;

  // Leases in force, and the next start or end.
  std::vector<const policy::CapacityLeaseSpec*> active;
  for (const policy::PolicyObject& o : set.policies()) {
    if (o.kind != policy::Kind::CapacityLease) continue;
    const auto window = policy::lease_window(o);
    if (!window) continue;
    const auto& lease = o.as<policy::CapacityLeaseSpec>();
    if (now < window->start) {
      earliest(out.next_change, window->start);
    } else if (now < window->end) {
      earliest(out.next_change, window->end);
      if (lease.type == policy::LeaseType::TemporaryQuota) active.push_back(&lease);
      out.active_leases.push_back(o.ref());
    }
  }

  // Tidal borrow limits in force, by (group, pool), and the next boundary.
  std::map<std::pair<std::string, std::string>, std::int64_t> caps;
  std::map<std::string, policy::InferenceScalingPolicySpec> inference;
  for (const policy::PolicyObject& o : set.policies()) {
    if (o.kind == policy::Kind::InferenceScalingPolicy) inference[o.metadata.name] = o.as<policy::InferenceScalingPolicySpec>();
  }
  const auto seconds = std::chrono::floor<std::chrono::seconds>(now);
  for (const policy::PolicyObject& o : set.policies()) {
    if (o.kind != policy::Kind::TidalPolicy) continue;
    const auto& spec = o.as<policy::TidalPolicySpec>();
    auto controller = tidal::TidalController::create(o.metadata.name, spec, inference);
    if (!controller) continue;  // validation reports it
    const tidal::TidalState state = controller->state_at(seconds);
    if (state.next) earliest(out.next_change, Timestamp(state.next->at));
    if (!state.training_borrow_limit) continue;
    for (const std::string& group : spec.targets.training_groups) {
      auto [it, inserted] = caps.emplace(std::pair(group, spec.targets.resource_pool), *state.training_borrow_limit);
      if (!inserted) it->second = std::min<std::int64_t>(it->second, *state.training_borrow_limit);
    }
  }

  for (render::RenderedObject& object : objects) {
    Json& m = object.manifest;
    const std::string kind = m.value("kind", "");
    if (kind == "ClusterQueue") {
      const std::string group = label(m, "platform.gpubank.dev/business-group");
      const std::string pool = label(m, "platform.gpubank.dev/resource-pool");
      std::int64_t extra = 0;
      for (const policy::CapacityLeaseSpec* l : active) {
        if (l->business_group == group && l->resource_pool == pool) extra += l->extra_guaranteed.value_or(0);
      }
      const auto cap = caps.find({group, pool});
      if (extra == 0 && cap == caps.end()) continue;
      for (Json* r : flavor_resources(m, pool)) {
        if (extra != 0 && r->contains("nominalQuota") && (*r)["nominalQuota"].is_number_integer()) {
          (*r)["nominalQuota"] = (*r)["nominalQuota"].get<std::int64_t>() + extra;
        }
        if (cap != caps.end()) {
          const std::int64_t limit = r->contains("borrowingLimit") && (*r)["borrowingLimit"].is_number_integer()
                                         ? std::min((*r)["borrowingLimit"].get<std::int64_t>(), cap->second)
                                         : cap->second;
          (*r)["borrowingLimit"] = limit;
        }
      }
      out.adjustments.push_back("ClusterQueue/" + m["metadata"].value("name", "") +
                                (extra != 0 ? ": nominalQuota +" + std::to_string(extra) + " (leases)" : "") +
                                (cap != caps.end() ? ": borrowingLimit at most " + std::to_string(cap->second) + " (tidal)" : ""));
    } else if (kind == "Cohort" && !active.empty()) {
      const std::string pool = m["metadata"].value("name", "");
      const auto p = std::find_if(guardrails->pools.begin(), guardrails->pools.end(),
                                  [&](const policy::Pool& x) { return x.name == pool; });
      if (p == guardrails->pools.end()) continue;
      const std::int64_t quota = policy::cohort_nominal_quota(set, *p, active);
      bool changed = false;
      for (Json* r : flavor_resources(m, pool)) {
        if ((*r).value("nominalQuota", std::int64_t{-1}) != quota) changed = true;
        (*r)["nominalQuota"] = quota;
      }
      if (changed) out.adjustments.push_back("Cohort/" + pool + ": nominalQuota " + std::to_string(quota) + " (leases)");
    }
  }
  return out;
}

}  // namespace gpubank::controller
