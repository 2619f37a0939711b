// What every backend shares: the extended resource a pool's GPUs are requested by, what
// the guardrails' priority classes mean for preemption, the checks on names, and the
// scheduling.k8s.io/v1 PriorityClass objects (docs/render.md explains each choice).
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/diagnostic.hpp"
#include "policy/policy_set.hpp"
#include "render/object.hpp"

namespace gpubank::render {

// Rule ids of render's own checks (the policy rules are validate's).
inline constexpr std::string_view kRuleNameCollision = "render.name-collision";
inline constexpr std::string_view kRuleReservedPriorityName = "render.reserved-priority-name";
inline constexpr std::string_view kRuleProtectedPriorityOrder = "render.protected-priority-order";

// Labels gpubank puts on the objects it renders, so that dashboards and alerts can join
// on them (values are DNS labels, so always valid label values).
inline constexpr std::string_view kLabelResourcePool = "platform.gpubank.dev/resource-pool";

// The queue of a business group on a pool, in every backend: "<group>-<pool>".
[[nodiscard]] std::string queue_name(const policy::GPUQuotaPolicySpec& quota);

// The resource a pool's devices are requested as: "nvidia.com/gpu" for whole GPUs
// (exclusive or time-sliced), "nvidia.com/mig-<profile>" for MIG slices (the NVIDIA device
// plugin's mixed strategy, the only one that tells profiles apart).
[[nodiscard]] std::string gpu_resource(const policy::Pool& pool);

// The guardrails' priority classes as preemption sees them. A class is protected when it
// is not preemptible, or when every workload type it admits is protected
// (protectedWorkloadTypes). Queueing engines see priorities, not workload types, so
// keeping protected workloads out of reclaim means keeping their classes above the
// thresholds the queues preempt at.
class PriorityModel {
 public:
  explicit PriorityModel(const policy::PlatformGuardrailsSpec& guardrails);

  [[nodiscard]] bool is_protected(const policy::PriorityRule& rule) const;
  [[nodiscard]] static bool may_use(const policy::PriorityRule& rule, std::string_view group);
  // Whether a group other than `group` that holds limits on the pool may run a protected
  // class, i.e. whether a borrower on the pool can be a protected workload.
  [[nodiscard]] bool protected_borrower_possible(const policy::Pool& pool, const policy::Group& group) const;
  // Whether every class the group may use is protected (and it may use at least one).
  [[nodiscard]] bool only_protected(std::string_view group) const;
  // The highest value of an unprotected class; nullopt when every class is protected.
  [[nodiscard]] std::optional<int> highest_unprotected() const { return highest_unprotected_; }
  // The lowest value of a protected class; nullopt when none is.
  [[nodiscard]] std::optional<int> lowest_protected() const { return lowest_protected_; }

 private:
  [[nodiscard]] bool runs_protected(std::string_view group) const;

  const policy::PlatformGuardrailsSpec& guardrails_;
  std::optional<int> highest_unprotected_;
  std::optional<int> lowest_protected_;
  // Per pool, how many groups with limits on it may run a protected class (computed once:
  // renderers ask per quota, and a platform has thousands).
  std::map<std::string, int, std::less<>> protected_runners_;
};

// Each GPUQuotaPolicy of a set with its pool and group, in load order; policies whose
// pool or group the guardrails lack are left out (validation reported them).
struct QuotaPlacement {
  const policy::PolicyObject* policy = nullptr;
  const policy::GPUQuotaPolicySpec* quota = nullptr;
  const policy::Pool* pool = nullptr;
  const policy::Group* group = nullptr;
};
[[nodiscard]] std::vector<QuotaPlacement> quota_placements(const policy::PolicySet& set);

// A finding about a policy's field, positioned at that field.
[[nodiscard]] Diagnostic finding(Severity severity, std::string_view rule, const policy::PolicyObject& object,
                                 const std::string& path, std::string message);

// Reports every group of `objects` (kind, rendered name, the policy and field it came
// from) whose rendered names are equal: two policies would write one object.
struct NamedOrigin {
  std::string name;
  const policy::PolicyObject* policy = nullptr;
  std::string path;  // the field that made the name, e.g. "spec.businessGroup"
};
void check_unique_names(std::string_view kind, std::vector<NamedOrigin> names, Diagnostics& out);
// The queue name of every GPUQuotaPolicy ("<group>-<pool>"), from spec.businessGroup.
[[nodiscard]] std::vector<NamedOrigin> quota_queue_names(const policy::PolicySet& set);

// Checks on the PriorityClasses: names Kubernetes reserves ("system-" prefix), and
// protected classes that do not rank above every unprotected one (warning).
[[nodiscard]] Diagnostics check_priority_classes(const policy::PolicySet& set);

// One scheduling.k8s.io/v1 PriorityClass per priority of the guardrails, at
// "scheduling/priorityclass-<name>.yaml".
[[nodiscard]] std::vector<RenderedObject> render_priority_classes(const policy::PolicySet& set);

// Helpers for the renderers: a Kubernetes object with apiVersion, kind and metadata
// (name, and namespace when not empty), labels in the order given.
[[nodiscard]] Json object_head(std::string_view api_version, std::string_view kind, const std::string& name,
                               const std::string& ns = {});

// The labels gpubank's queue objects carry: the business group (when given) and the pool.
[[nodiscard]] Json pool_labels(const std::string& pool, const std::string* group = nullptr);

}  // namespace gpubank::render
