// The platform's interventions (platform.hpp, interventions.hpp): journalled, then applied
// at now(); on a restart, applied again at their virtual time by advance_to.
#include <algorithm>
#include <sstream>
#include <tuple>

#include "twin/live/platform.hpp"

#include "document/reader.hpp"
#include "policy/validate.hpp"

namespace gpubank::twin::live {

namespace {

std::string gpus_text(double gpus) {  // 4 -> "4", a time-sliced share 0.5 -> "0.5"
  std::ostringstream out;
  out << gpus;
  return out.str();
}

}  // namespace

void Platform::schedule(std::vector<Intervention> recorded) {
  std::stable_sort(recorded.begin(), recorded.end(),
                   [](const Intervention& a, const Intervention& b) { return std::tie(a.t, a.seq) < std::tie(b.t, b.seq); });
  scheduled_ = std::move(recorded);
  next_scheduled_ = 0;
  scheduled_refused_ = 0;
}

Expected<bool> Platform::intervene(InterventionAction action, const std::string& actor) {
  if (persist_failed_) return Unexpected{error()};
  Intervention i;
  i.t = now();
  i.actor = actor;
  i.action = std::move(action);
  if (auto ok = check_intervention(i); !ok) return ok;
  if (journal_) {
    if (auto journalled = journal_(i); !journalled) return Unexpected{"not journalled, nothing changed: " + journalled.error()};
  }
  return apply(i);
}

Expected<bool> Platform::apply(const Intervention& i) {
  if (persist_failed_) return Unexpected{error()};
  return std::visit(
      [&](const auto& a) -> Expected<bool> {
        using A = std::decay_t<decltype(a)>;
        if constexpr (std::is_same_v<A, GpuHealthChange>) return apply_gpu_health(a, i.actor);
        if constexpr (std::is_same_v<A, TidalFreeze>) return apply_tidal_freeze(a, i.actor);
        if constexpr (std::is_same_v<A, ModelLoadFaults>) return apply_model_load_faults(a, i.actor);
        if constexpr (std::is_same_v<A, ReclaimDecisionRequest>) return apply_reclaim_decision(a, i.actor);
        if constexpr (std::is_same_v<A, PolicyChange>) return apply_change(a, i.actor);
      },
      i.action);
}

Expected<bool> Platform::set_gpu_health(const std::string& uuid, bool healthy, int xid, const std::string& actor,
                                        std::int64_t ecc_double_bit) {
  // A recovery carries no XID or ECC count (the journal's rule).
  return intervene(GpuHealthChange{uuid, healthy, healthy ? 0 : xid, healthy ? 0 : ecc_double_bit}, actor);
}

Expected<bool> Platform::freeze_tidal(const std::string& policy, bool freeze, const std::string& actor,
                                      const std::string& reason) {
  return intervene(TidalFreeze{policy, freeze, reason}, actor);
}

Expected<bool> Platform::fail_model_loads(const std::string& policy, int count, const std::string& actor) {
  return intervene(ModelLoadFaults{policy, count}, actor);
}

Expected<bool> Platform::decide_reclaim(const std::string& workload_uid, bool approve, const std::string& reason,
                                        const std::string& actor, const std::string& downgrade_to) {
  // A decision the rules refuse (not a candidate, decided already, a class refused) is not
  // journalled: checked first, it changes nothing.
  if (governance_) {
    auto checked = governance_->check_decision(workload_uid, approve, actor, reason, unix_ms(now()), downgrade_to);
    if (!checked) return Unexpected{checked.error()};
  }
  return intervene(ReclaimDecisionRequest{workload_uid, approve, reason, downgrade_to}, actor);
}

Expected<bool> Platform::apply_policy_change(const std::string& proposal_id, const std::string& document,
                                            const std::string& actor) {
  return intervene(PolicyChange{proposal_id, document}, actor);
}

Expected<bool> Platform::apply_gpu_health(const GpuHealthChange& a, const std::string& actor) {
  return simulation_.set_gpu_health(a.uuid, a.healthy, a.xid, actor, a.ecc_double_bit);
}

Expected<bool> Platform::apply_tidal_freeze(const TidalFreeze& a, const std::string& actor) {
  auto done = a.freeze ? control_->freeze(a.policy, actor, a.reason.empty() ? "manual" : a.reason)
                       : control_->unfreeze(a.policy, actor);
  if (!done) return done;
  if (!follow_run()) return Unexpected{error()};
  return true;
}

Expected<bool> Platform::apply_model_load_faults(const ModelLoadFaults& a, const std::string& actor) {
  auto done = control_->fail_model_loads(a.policy, a.count, actor);
  if (!done) return done;
  if (!follow_run()) return Unexpected{error()};
  return true;
}

Expected<bool> Platform::apply_reclaim_decision(const ReclaimDecisionRequest& a, const std::string& actor) {
  if (!governance_) return Unexpected{std::string("governance.off: this platform runs without governance")};
  // The workload it names must still hold devices here (what the controller stops); checked
  // before the decision is recorded, so a refusal changes nothing.
  const auto key = governance_->twin_workload(a.workload_uid);
  const auto open = governance_->open_alerts().find(a.workload_uid);
  if (a.approve && open != governance_->open_alerts().end() && !key) {
    return Unexpected{"workload " + a.workload_uid + ": it holds no GPU any more; the alert resolves at the next scan"};
  }
  auto decided = governance_->decide(a.workload_uid, a.approve, actor, a.reason, unix_ms(now()), a.downgrade_to);
  if (!decided) return Unexpected{decided.error()};
  const governance::Alert& alert = *decided;
  const bool downgrade = a.approve && !a.downgrade_to.empty();
  run::Event e;
  e.kind = downgrade ? "DowngradeApproved" : a.approve ? "ReclaimApproved" : "ReclaimRejected";
  e.object = key ? "Workload/" + *key : "Workload/" + alert.evidence.namespace_name + "/" + alert.evidence.workload;
  e.business_group = alert.evidence.business_group;
  e.pool = alert.evidence.pool;
  e.reason = e.kind;
  const std::string verb = a.approve ? "approved" : "rejected";
  e.message = actor + " " + verb + (downgrade ? " the downgrade of " : " the reclaim of ") +
              alert.evidence.namespace_name + "/" + alert.evidence.workload +
              (downgrade ? " to priority class " + a.downgrade_to : std::string()) + " (low-utilisation alert " +
              std::to_string(alert.id) + ", " + gpus_text(alert.evidence.gpus) + " GPUs)" +
              (a.reason.empty() ? "" : ": " + a.reason);
  e.numbers = {{"alertId", alert.id}, {"gpus", alert.evidence.gpus}};
  if (downgrade) e.numbers["priorityClass"] = a.downgrade_to;
  e.related = {"LowUtilizationPolicy/" + alert.policy};
  const std::string message = e.message;
  if (auto recorded = simulation_.record(std::move(e), actor); !recorded) return recorded;
  if (downgrade) {
    if (auto done = simulation_.downgrade_approved(*key, a.downgrade_to, message, actor); !done) return done;
  } else if (a.approve) {
    if (auto stopped = simulation_.stop_approved(*key, message, actor); !stopped) return stopped;
  }
  if (!follow_run()) return Unexpected{error()};
  return true;
}

Expected<bool> Platform::apply_change(const PolicyChange& a, const std::string& actor) {
  // The proposal's object, read as the proposals desk read it, upserted into the set in force.
  Diagnostics findings;
  std::vector<doc::Document> docs;
  doc::ReadLimits limits;
  limits.max_bytes = kMaxInterventionDocument;
  limits.max_depth = 32;
  limits.max_nodes = 20'000;
  doc::read_yaml(a.document, "proposal-" + a.proposal_id + ".yaml", docs, findings, limits);
  policy::PolicySet one;
  if (!has_errors(findings) && docs.size() == 1) one.add(docs[0].root, "proposal-" + a.proposal_id + ".yaml", 0);
  for (const Diagnostic& d : one.diagnostics()) findings.push_back(d);
  if (has_errors(findings) || one.policies().size() != 1) {
    for (const Diagnostic& d : findings) {
      if (d.severity == Severity::Error) return Unexpected{"proposal " + a.proposal_id + ": " + d.to_string()};
    }
    return Unexpected{"proposal " + a.proposal_id + ": not exactly one policy document"};
  }
  policy::PolicySet next = policies().policies_only();
  next.upsert(one.policies()[0]);
  for (const Diagnostic& d : policy::validate(next)) {
    if (d.severity == Severity::Error) return Unexpected{"proposal " + a.proposal_id + ": the policies with it are invalid: " + d.to_string()};
  }
  auto changed = simulation_.change_policies(next, "proposal " + a.proposal_id + " (" + one.policies()[0].ref() + ")", actor);
  if (!changed) return Unexpected{"proposal " + a.proposal_id + ": " + changed.error()};
  in_force_ = std::move(next);
  applied_proposals_.push_back(a.proposal_id);
  if (!follow_run()) return Unexpected{error()};
  return true;
}

}  // namespace gpubank::twin::live
