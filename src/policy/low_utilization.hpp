// How LowUtilizationPolicies combine. The most specific policy decides for a workload
// (business group beats resource pool beats neither), but a policy that names a business
// group (written by that group's admins) may only tighten the platform-wide policies
// (those naming no group, written by platform administrators) it overrides:
// `gpubank validate` and the webhook reject it otherwise (lowutil.loosens-platform), and
// the monitoring render takes the stricter value field by field (docs/webhook.md).
#pragma once

#include <string>
#include <vector>

#include "policy/policy_set.hpp"
#include "policy/types.hpp"

namespace gpubank::policy {

// Whether some workload matches both.
[[nodiscard]] bool low_utilization_overlaps(const LowUtilizationMatch& a, const LowUtilizationMatch& b);

// The platform-wide policies a group's policy overrides for some of its workloads (every
// overlapping policy without a businessGroup); none for a policy without a businessGroup.
[[nodiscard]] std::vector<const PolicyObject*> overridden_platform_policies(const PolicyObject& policy,
                                                                            const PolicySet& set);

struct Loosening {
  std::string path;     // "spec.thresholds.averageGpuUtilization"
  std::string message;  // what is weaker, with both values
};

// Every field in which `group` is weaker than `platform` (named in the messages):
// a threshold lower than the platform's, or one the platform does not set (thresholds
// must all hold, so an extra one flags fewer workloads); a longer window, startup or
// checkpoint grace period; later, lower or no escalation; rarer or no repeated notices;
// an exclusion the platform does not have.
[[nodiscard]] std::vector<Loosening> low_utilization_loosenings(const LowUtilizationPolicySpec& group,
                                                                const LowUtilizationPolicySpec& platform,
                                                                const std::string& platform_ref);

// `group` made at least as strict as `platform` in every field (the stricter value of
// each; exclusions only where both have them). If that leaves no threshold (each set a
// different one), the platform's thresholds are kept.
[[nodiscard]] LowUtilizationPolicySpec tighten_low_utilization(LowUtilizationPolicySpec group,
                                                               const LowUtilizationPolicySpec& platform);

// The policy as it takes effect: a group's policy tightened by every platform-wide policy
// it overrides; any other policy as written.
[[nodiscard]] LowUtilizationPolicySpec effective_low_utilization(const PolicyObject& policy, const PolicySet& set);

}  // namespace gpubank::policy
