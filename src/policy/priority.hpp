// The priority class a protected-type workload gets when it names none. Kueue's
// WorkloadPriorityClass cannot default per workload type, and a protected workload at
// priority 0 would be the first victim of its own queue's batch jobs (docs/bank.md,
// "Protected workload types and their priority"). The admission webhook writes this
// default into the kueue.x-k8s.io/priority-class label (POST /mutate) and the twin gives
// it to such a workload when it enters, so both take it from here.
#pragma once

#include <string_view>

#include "policy/types.hpp"

namespace gpubank::policy {

// Whether the guardrails' protectedWorkloadTypes list the type.
[[nodiscard]] bool is_protected_type(const PlatformGuardrailsSpec& guardrails, WorkloadType type);

// The highest-valued class of the guardrails' priorities that names the type in its
// workloadTypes (a class for every type does not count: it was not chosen for this one)
// and allows the group; the first listed on equal values. Null when there is none.
[[nodiscard]] const PriorityRule* default_priority_for(const PlatformGuardrailsSpec& guardrails, WorkloadType type,
                                                       std::string_view group);

}  // namespace gpubank::policy
