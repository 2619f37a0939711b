// Rules for workloads (Pods, Jobs, Deployments, JobSets, ...): the labels only admission
// may write, the labels that grant privileges and who may set them, the Kueue queue every
// GPU workload must name, and the priority classes a business group may use for a
// workload type. Shared by `gpubank validate` (manifests in files) and the admission webhook.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "document/node.hpp"
#include "policy/authorize.hpp"
#include "policy/policy_set.hpp"
#include "policy/types.hpp"

namespace gpubank::policy {

// (rule, field path, message, position)
using WorkloadReport = std::function<void(std::string_view, std::string, std::string, SourcePos)>;

// What a workload is checked against besides itself.
struct WorkloadContext {
  std::string_view ns;  // the workload's namespace
  const PlatformGuardrailsSpec& guardrails;
  // The InferenceScalingPolicies that say which workloads are inference (nullptr: none).
  const PolicySet* policies = nullptr;
  // The object before an update (nullptr on CREATE and for manifests in files): a label
  // that is already there and unchanged is not the user's doing.
  const doc::Node* old_root = nullptr;
  // Who writes it, as the API server's userInfo says (nullptr for manifests in files:
  // then the checks that depend on the writer, owner-id and capacity-role, are skipped).
  const UserInfo* requester = nullptr;
};

// Checks a workload; see docs/webhook.md ("Workloads") for every rule.
//
// Reserved labels (business-group, cost-center) may only carry the value admission
// writes for the namespace's group; any other value, or any value in a namespace that
// belongs to no group, is forged. In a group's namespace, unless the writer is one of the
// guardrails' controllers: owner-id must be the writer's username (and stays as it was on
// update), capacity-role is the controllers' alone, workload-type inference needs an
// InferenceScalingPolicy that targets the object, checkpointable is "true" on a workload
// of an unprotected type, and a workload that asks for GPUs must name a Kueue queue.
// Priority classes (spec.priorityClassName of every pod template and the
// kueue.x-k8s.io/priority-class label) must be listed in the guardrails and allowed for
// the namespace's group and the workload-type label; a user's workload of a protected type
// must name one (missing_priority_class; POST /mutate adds it before this check runs).
void check_workload(const doc::Node& root, const WorkloadContext& context, const WorkloadReport& report);

// A workload that names no priority class although its type is protected: in a group's
// namespace, its type (the first workload-type label found, top level first) among the
// guardrails' protectedWorkloadTypes, and neither a kueue.x-k8s.io/priority-class label
// (at any level) nor a priorityClassName (in the pod spec or any pod template). Kueue would
// give it priority 0, so admission gives it its type's default (docs/bank.md).
struct MissingPriorityClass {
  WorkloadType type = WorkloadType::Inference;
  const Group* group = nullptr;
  // What admission writes (default_priority_for); null when the guardrails have no class
  // for the type and group, and the workload is refused.
  const PriorityRule* default_class = nullptr;
};

// nullopt when the workload needs no default: a namespace of no group, no protected type,
// or a priority class named anywhere (the other priority rules judge that class).
[[nodiscard]] std::optional<MissingPriorityClass> missing_priority_class(const doc::Node& root, std::string_view ns,
                                                                         const PlatformGuardrailsSpec& guardrails);

// The reason of priority.protected-needs-class, naming the default or saying there is none.
[[nodiscard]] std::string missing_priority_message(const MissingPriorityClass& missing);

// Where admission writes the default: the object's own labels, where Kueue reads it (on
// the job object, and on each pod for the pod integration).
inline constexpr std::string_view kPriorityClassLabelPath = "metadata.labels[kueue.x-k8s.io/priority-class]";

// Whether the writer is one of the guardrails' controllers.
[[nodiscard]] bool is_controller(const UserInfo& user, const PlatformGuardrailsSpec& guardrails);

}  // namespace gpubank::policy
