#include "governance/reclaim_approval.hpp"

#include <algorithm>
#include <optional>

#include "core/timestamp.hpp"
#include "policy/schema.hpp"

namespace gpubank::governance {

policy::AuthResult authorize_decision(const policy::UserInfo& user, const Alert& alert, const policy::PolicySet& set) {
  const policy::PlatformGuardrailsSpec* guardrails = set.guardrails_spec();
  const std::string& group = alert.evidence.business_group;
  if (guardrails != nullptr) {
    if (policy::is_platform_admin(user, *guardrails)) return {};
    if (const policy::Group* g = guardrails->find_group(group); g != nullptr && policy::is_group_admin(user, *g)) return {};
  }
  return {false, "governance.decision-forbidden",
          "user " + user.username + " is neither a platform administrator nor an admin of business group " +
              (group.empty() ? std::string("(unknown)") : group) + ", which alone decide on its reclaim"};
}

namespace {

// Why a downgrade to `name` cannot be approved for this alert, naming the field and rule.
std::optional<std::string> check_downgrade(const std::string& name, const Alert& alert, const policy::PolicySet& set) {
  const policy::PlatformGuardrailsSpec* guardrails = set.guardrails_spec();
  const policy::PriorityRule* rule = nullptr;
  if (guardrails != nullptr) {
    for (const policy::PriorityRule& r : guardrails->priorities) {
      if (r.name == name) rule = &r;
    }
  }
  if (rule == nullptr) {
    return "downgradeTo: governance.downgrade-unknown-class: " + name +
           " is not one of the guardrails' priorities, the only priority classes workloads may use";
  }
  const std::string& group = alert.evidence.business_group;
  if (!rule->groups.empty() && std::find(rule->groups.begin(), rule->groups.end(), group) == rule->groups.end()) {
    return "downgradeTo: governance.downgrade-class-not-allowed: priority class " + name +
           " is not open to business group " + (group.empty() ? std::string("(unknown)") : group);
  }
  if (!rule->workload_types.empty()) {
    const bool fits = std::any_of(rule->workload_types.begin(), rule->workload_types.end(), [&](policy::WorkloadType t) {
      return doc::enum_name(t) == alert.evidence.workload_type;
    });
    if (!fits) {
      return "downgradeTo: governance.downgrade-class-not-allowed: priority class " + name + " is not open to " +
             (alert.evidence.workload_type.empty() ? std::string("workloads of unknown type")
                                                   : alert.evidence.workload_type + " workloads");
    }
  }
  if (!rule->preemptible) {
    return "downgradeTo: governance.downgrade-not-preemptible: priority class " + name +
           " is preemptible: false, so a downgrade to it would free nothing";
  }
  return std::nullopt;
}

}  // namespace

std::vector<std::string> downgrade_options(const Alert& alert, const policy::PolicySet& set) {
  std::vector<std::string> out;
  const policy::PlatformGuardrailsSpec* guardrails = set.guardrails_spec();
  if (guardrails == nullptr) return out;
  for (const policy::PriorityRule& r : guardrails->priorities) {
    if (!check_downgrade(r.name, alert, set)) out.push_back(r.name);
  }
  return out;
}

namespace {

Expected<Transition> decide_on(const std::map<std::string, Alert, std::less<>>& open, const DecisionRequest& request,
                               const policy::PolicySet& set, std::int64_t now_ms, bool check_authority) {
  if (request.user.username.empty()) return Unexpected{std::string("user: required (who decides)")};
  if (request.user.username.size() > kMaxDeciderLength) {
    return Unexpected{"user: at most " + std::to_string(kMaxDeciderLength) + " bytes"};
  }
  if (!request.approve && !request.downgrade_to.empty()) {
    return Unexpected{std::string("downgradeTo: only with an approval (a rejection changes nothing)")};
  }
  if (request.reason.size() > kMaxDecisionReasonLength) {
    return Unexpected{"reason: at most " + std::to_string(kMaxDecisionReasonLength) + " bytes"};
  }
  const auto it = open.find(request.workload_uid);
  if (it == open.end()) {
    return Unexpected{"workload " + request.workload_uid + ": no open low-utilisation alert (resolved, or never raised)"};
  }
  const Alert& a = it->second;
  if (a.state != AlertState::ReclaimCandidate) {
    return Unexpected{"alert.state: only a ReclaimCandidate is approved or rejected; the alert of " + a.workload_uid +
                      " is " + std::string(to_string(a.state))};
  }
  if (a.decision) {
    return Unexpected{"alert.decision: already " + std::string(a.decision->approved ? "approved" : "rejected") + " by " +
                      a.decision->by + " at " + format_rfc3339(Timestamp(std::chrono::milliseconds(a.decision->at_ms))) +
                      "; a decision is final"};
  }
  if (check_authority) {
    if (const policy::AuthResult auth = authorize_decision(request.user, a, set); !auth.allowed) {
      return Unexpected{std::string(auth.rule) + ": " + auth.message};
    }
  }
  if (!request.downgrade_to.empty()) {
    if (auto refused = check_downgrade(request.downgrade_to, a, set)) return Unexpected{*refused};
  }
  Transition t{a.state, a, request.approve ? "ReclaimApproved" : "ReclaimRejected", std::nullopt};
  t.alert.decision = ReclaimDecision{request.approve, request.user.username, now_ms, request.reason, request.downgrade_to};
  return t;
}

}  // namespace

Expected<Transition> decide(const AlertBook& book, const DecisionRequest& request, const policy::PolicySet& set,
                            std::int64_t now_ms) {
  return decide_on(book.open, request, set, now_ms, true);
}

Expected<Transition> decide_with_authority(const std::map<std::string, Alert, std::less<>>& open,
                                           const DecisionRequest& request, const policy::PolicySet& set,
                                           std::int64_t now_ms) {
  return decide_on(open, request, set, now_ms, false);
}

std::vector<ApprovedReclaim> approved_reclaims(const AlertBook& book) {
  std::vector<ApprovedReclaim> out;
  for (const auto& [uid, a] : book.open) {
    if (a.state == AlertState::ReclaimCandidate && a.decision && a.decision->approved) {
      out.push_back({uid, a.id, a.decision->by, a.decision->at_ms, a.decision->downgrade_to});
    }
  }
  return out;
}

}  // namespace gpubank::governance
