#include "policy/priority.hpp"

#include <algorithm>

namespace gpubank::policy {

bool is_protected_type(const PlatformGuardrailsSpec& guardrails, WorkloadType type) {
  const auto& types = guardrails.protected_workload_types;
  return std::find(types.begin(), types.end(), type) != types.end();
}

const PriorityRule* default_priority_for(const PlatformGuardrailsSpec& guardrails, WorkloadType type,
                                         std::string_view group) {
  const PriorityRule* best = nullptr;
  for (const auto& rule : guardrails.priorities) {
    const bool names_type = std::find(rule.workload_types.begin(), rule.workload_types.end(), type) != rule.workload_types.end();
    const bool allows_group = rule.groups.empty() || std::find(rule.groups.begin(), rule.groups.end(), group) != rule.groups.end();
    // Strictly greater: on equal values the first listed stays.
    if (names_type && allows_group && (best == nullptr || rule.value > best->value)) best = &rule;
  }
  return best;
}

}  // namespace gpubank::policy
