// The periodic quota review (the scheduling chapter's runbook): what to change, each finding
// naming the policy to edit and its evidence. Pure: the showback of the period, the answers
// of plan_review's queries, the policies and, when a store is given, the alert record.
//
//   guarantee-unused      a group used on average under `unused_below` of its guarantee on a
//                         pool: lower guaranteed to the average use plus `headroom`
//   borrowed-most-of-the-time  a group borrowed during more than `borrowed_above` of the
//                         period's minutes: raise guaranteed by what it borrowed on average
//   pending-long          a Kueue ClusterQueue had inadmissible workloads (no quota) during
//                         more than `pending_above` of the minutes
//   pool-without-policy   devices of a pool the guardrails do not define, or a guardrails pool
//                         no GPUQuotaPolicy guarantees anything on
//   queue-without-policy  a ClusterQueue Kueue reports that no GPUQuotaPolicy renders
//                         (`<group>-<pool>`, docs/render.md)
//   alert-reopened        a workload whose low-utilisation alert opened `reopened_at_least`
//                         times or more: a policy that flags it and an owner who disagrees
//   lease-expired         a CapacityLease whose end is not after the period's end: it grants
//                         nothing any more, delete it
//   lease-unused          a TemporaryQuota lease in force during part of the period whose
//                         group's use of the pool never went above its guarantee without the
//                         lease (the peak of any minute of the period): the extra was not needed
//   replicas-idle-above-floor  an inference service ran more replicas than its minReplicas
//                         with at least one of them idle (no request running or waiting)
//                         during more than `idle_above` of the minutes: its floor or its
//                         scale-down keeps replicas nobody uses. Pods are matched to the
//                         InferenceScalingPolicy by workloadRef namespace and name.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "governance/alert_store.hpp"
#include "governance/showback.hpp"
#include "policy/policy_set.hpp"

namespace gpubank::governance {

struct ReviewOptions {
  double unused_below = 0.3;
  double headroom = 0.2;
  double borrowed_above = 0.5;
  double pending_above = 0.25;
  std::int64_t reopened_at_least = 3;
  double idle_above = 0.5;
};

// The queries the review adds to plan_showback's (one per distinct minReplicas of the
// set's InferenceScalingPolicies for the idle replicas).
[[nodiscard]] std::vector<Query> plan_review(const ShowbackPeriod& period, const policy::PolicySet& set);
[[nodiscard]] std::string idle_above_floor_query_name(int min_replicas);

struct Finding {
  std::string kind;
  std::string policy;   // "GPUQuotaPolicy/search-team-h100", "PlatformGuardrails/platform", ...
  std::string subject;  // "search on h100-rdma-training", a queue, a pool, a workload
  std::string message;  // what to change, with the numbers
  nlohmann::ordered_json evidence;
};

[[nodiscard]] std::vector<Finding> review(const Showback& s, const Answers& answers, const policy::PolicySet& set,
                                          const AlertBook* alerts, const ReviewOptions& options = {});

[[nodiscard]] nlohmann::ordered_json to_json(const std::vector<Finding>& findings);
[[nodiscard]] std::string review_text(const std::vector<Finding>& findings);

}  // namespace gpubank::governance
