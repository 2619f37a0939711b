// Approving the reclaim of a ReclaimCandidate: the lifecycle's last step is a person's.
//
//   gpubank scan approve|reject <workload-uid> --user NAME   records the decision (decide);
//     approve --downgrade-to CLASS                           a downgrade instead of a reclaim
//   gpubank controller --store ...                          acts on the approved ones
//                                                            (controller/reclaim.hpp)
//   gpubank scan                                            resolves the alert "reclaimed"
//                                                            once the workload holds no GPU
//
// Who decides: a platform administrator (the guardrails' platformAdmins) or an admin of the
// alert's business group (the guardrails' groups[].admins). A decision is final: one per alert;
// a rejected candidate stays open (and is re-notified) until its utilisation recovers or it
// ends. The decision is an audit entry whose actor is the decider, in the same transaction
// discipline as the scanner's transitions (alert_store.hpp).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/expected.hpp"
#include "governance/alert_store.hpp"
#include "governance/alerts.hpp"
#include "policy/authorize.hpp"
#include "policy/policy_set.hpp"

namespace gpubank::governance {

inline constexpr std::size_t kMaxDecisionReasonLength = 1024;
inline constexpr std::size_t kMaxDeciderLength = 253;  // a Kubernetes user name's bound

struct DecisionRequest {
  std::string workload_uid;
  bool approve = true;
  policy::UserInfo user;
  std::string reason;
  // Approve a downgrade to this priority class instead of a reclaim. It must be one of the
  // guardrails' priorities that applies to the alert's group and workload type and is
  // preemptible (a downgrade exists to make the GPUs preemptible); the controller checks
  // that its value is below the workload's priority.
  std::string downgrade_to;
};

// The priority classes an approved downgrade of this alert may name (the guardrails'
// priorities open to its group and workload type and preemptible), in the guardrails'
// order: what a decision form offers.
[[nodiscard]] std::vector<std::string> downgrade_options(const Alert& alert, const policy::PolicySet& set);

// May the user decide on this alert? Denied: the rule ("governance.decision-forbidden") and
// a message naming who may.
[[nodiscard]] policy::AuthResult authorize_decision(const policy::UserInfo& user, const Alert& alert,
                                                    const policy::PolicySet& set);

// The transition that records the decision, from the open alert: an error names the field
// and the rule (no such open alert, not a ReclaimCandidate, already decided, forbidden,
// reason too long). Pure.
[[nodiscard]] Expected<Transition> decide(const AlertBook& book, const DecisionRequest& request,
                                          const policy::PolicySet& set, std::int64_t now_ms);

// The same on `open` (alerts by workload_uid) for a caller that checked the decider's
// authority itself (the twin's API: a platform-admin token, or a group-admin token of the
// alert's group) instead of the guardrails' admin lists.
[[nodiscard]] Expected<Transition> decide_with_authority(const std::map<std::string, Alert, std::less<>>& open,
                                                         const DecisionRequest& request, const policy::PolicySet& set,
                                                         std::int64_t now_ms);

// The open alerts whose reclaim or downgrade was approved: what the controller acts on.
struct ApprovedReclaim {
  std::string workload_uid;  // the workload's controller owner (the job): its metadata.uid
  std::int64_t alert_id = 0;
  std::string approver;
  std::int64_t approved_ms = 0;
  std::string downgrade_to;  // empty: stop it (a reclaim)
};
[[nodiscard]] std::vector<ApprovedReclaim> approved_reclaims(const AlertBook& book);

}  // namespace gpubank::governance
