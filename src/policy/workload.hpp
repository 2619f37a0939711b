// Rules for workloads (Pods, Jobs, Deployments, JobSets, ...): the labels only admission
// may write, and the priority classes a business group may use for a workload type.
// Shared by `gpubank validate` (manifests in files) and the admission webhook.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "document/node.hpp"
#include "policy/types.hpp"

namespace gpubank::policy {

// (rule, field path, message, position)
using WorkloadReport = std::function<void(std::string_view, std::string, std::string, SourcePos)>;

// Checks a workload in namespace `ns`. `old_root` is the object before an update (or
// nullptr): a reserved label that is already there and unchanged is not the user's doing.
//
// Reserved labels (business-group, cost-center) may only carry the value admission
// writes for the namespace's group; any other value, or any value in a namespace that
// belongs to no group, is forged. Priority classes (spec.priorityClassName of every pod
// template and the kueue.x-k8s.io/priority-class label) must be listed in the guardrails
// and allowed for the namespace's group and the workload-type label.
void check_workload(const doc::Node& root, std::string_view ns, const PlatformGuardrailsSpec& guardrails,
                    const doc::Node* old_root, const WorkloadReport& report);

}  // namespace gpubank::policy
