#include "controller/time_controls.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "policy/cohort_quota.hpp"
#include "policy/lease_approval.hpp"
#include "policy/types.hpp"
#include "tidal/controller.hpp"

namespace gpubank::controller {
namespace {

using Json = render::Json;

using render::flavor_resources;

std::string label(const Json& manifest, const char* key) { return render::label_of(manifest, key); }

void earliest(std::optional<Timestamp>& next, Timestamp t) {
  if (!next || t < *next) next = t;
}

// The instant the admission hold in force at `t` began: the first boundary of the run of
// boundaries up to `t` after which the hold is on. Holds that follow each other without a
// gap make one run, as in the twin, which keeps what it captured while the hold stays on.
// A function of the policy and `t` only, so a restarted controller finds the same instant.
tidal::sys_seconds hold_began(const tidal::TidalController& controller, tidal::sys_seconds t) {
  std::optional<tidal::sys_seconds> began;
  for (std::chrono::days span{1}; span <= std::chrono::days(730); span *= 2) {
    const std::vector<tidal::TidalAction> actions = controller.timeline(t - span, t + std::chrono::seconds(1));
    for (auto a = actions.rbegin(); a != actions.rend(); ++a) {
      if (!a->admission_hold) return began.value_or(t);
      began = a->at;
    }
  }
  return began.value_or(t);
}

std::int64_t unix_ms(tidal::sys_seconds t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

// The tightest borrowingLimit the tidal rules put on a (group, pool), and why.
struct BorrowCap {
  std::int64_t limit = 0;
  std::string why;
};

void tighten(std::map<std::pair<std::string, std::string>, BorrowCap>& caps, const std::string& group,
             const std::string& pool, std::int64_t limit, const std::string& why) {
  auto [it, inserted] = caps.emplace(std::pair(group, pool), BorrowCap{limit, why});
  if (!inserted && limit < it->second.limit) it->second = BorrowCap{limit, why};
}

// The largest tidal floor for an InferenceScalingPolicy, and the TidalPolicy that sets it.
struct TidalFloor {
  std::int64_t replicas = 0;
  std::string tidal;
};

}  // namespace

TimeControls adjust_for_time(std::vector<render::RenderedObject>& objects, const policy::PolicySet& set, Timestamp now,
                             const bank::LedgerBook* ledger) {
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

  // Tidal floors and borrow limits in force, and the next boundary. Every boundary (a
  // window's approaching, prewarm, start and end: floor changes and hold start and end
  // included) is a TidalAction, so state.next is the next instant anything here changes.
  std::map<std::pair<std::string, std::string>, BorrowCap> caps;  // by (group, pool)
  std::map<std::string, TidalFloor> floors;                       // by InferenceScalingPolicy
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
    for (const auto& [policy_name, replicas] : state.floors) {
      TidalFloor& largest = floors[policy_name];
      if (largest.tidal.empty() || replicas > largest.replicas) largest = TidalFloor{replicas, o.metadata.name};
    }
    const std::string& pool = spec.targets.resource_pool;
    if (state.training_borrow_limit) {
      for (const std::string& group : spec.targets.training_groups) {
        tighten(caps, group, pool, *state.training_borrow_limit, "tidal");
      }
    }
    if (!state.admission_hold) continue;
    if (ledger == nullptr) {
      // What the groups borrowed when the hold began is in the ledger only.
      out.adjustments.push_back(o.ref() +
                                ": admission hold not applied, no ledger is kept (the controller runs without "
                                "--store); training borrowing is capped at the window's trainingBorrowLimit only");
      continue;
    }
    // Training may keep what it borrowed when the hold began, and borrow no more, so the
    // capacity the window needs is not lent out again before it starts.
    const tidal::sys_seconds began = hold_began(*controller, seconds);
    const std::vector<bank::Position> positions = ledger->positions(unix_ms(began));
    const std::string why = "tidal admission hold since " + format_rfc3339(Timestamp(began));
    for (const std::string& group : spec.targets.training_groups) {
      const auto p = std::find_if(positions.begin(), positions.end(), [&](const bank::Position& x) {
        return x.pool == pool && x.business_group == group;
      });
      tighten(caps, group, pool, p == positions.end() ? 0 : p->borrowed, why);
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
                                         ? std::min((*r)["borrowingLimit"].get<std::int64_t>(), cap->second.limit)
                                         : cap->second.limit;
          (*r)["borrowingLimit"] = limit;
        }
      }
      out.adjustments.push_back("ClusterQueue/" + m["metadata"].value("name", "") +
                                (extra != 0 ? ": nominalQuota +" + std::to_string(extra) + " (leases)" : "") +
                                (cap != caps.end() ? ": borrowingLimit at most " + std::to_string(cap->second.limit) + " (" +
                                                          cap->second.why + ")"
                                                    : ""));
    } else if (kind == "ScaledObject" && m.value("apiVersion", "") == "keda.sh/v1alpha1" && m.contains("spec")) {
      // The rendered cron triggers carry the floors too (they hold while the controller is
      // down; the HPA takes the largest proposal, so the two agree). minReplicaCount is the
      // exact one: counted back in absolute time, it stays right across a DST change where
      // a cron start cannot move (render/consistency.cpp, tidal/controller.hpp).
      const auto source = std::find_if(object.sources.begin(), object.sources.end(), [](const policy::PolicyObject* p) {
        return p->kind == policy::Kind::InferenceScalingPolicy;
      });
      if (source == object.sources.end()) continue;
      const auto floor = floors.find((*source)->metadata.name);
      if (floor == floors.end()) continue;  // no TidalPolicy targets it
      Json& spec = m["spec"];
      if (!spec.contains("minReplicaCount") || !spec["minReplicaCount"].is_number_integer()) continue;
      const std::int64_t rendered = spec["minReplicaCount"].get<std::int64_t>();
      const std::int64_t most = spec.contains("maxReplicaCount") && spec["maxReplicaCount"].is_number_integer()
                                    ? spec["maxReplicaCount"].get<std::int64_t>()
                                    : floor->second.replicas;
      const std::int64_t replicas = std::max(rendered, std::min(floor->second.replicas, most));
      if (replicas == rendered) continue;
      spec["minReplicaCount"] = replicas;
      out.adjustments.push_back("ScaledObject/" + m["metadata"].value("namespace", "") + "/" +
                                m["metadata"].value("name", "") + ": minReplicaCount " + std::to_string(replicas) +
                                " (tidal " + floor->second.tidal + ")");
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
