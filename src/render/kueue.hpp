// The Kueue backend (kueue.x-k8s.io/v1beta2): a ResourceFlavor and a Cohort per pool, a
// ClusterQueue "<group>-<pool>" per GPUQuotaPolicy with a LocalQueue in each of the
// group's namespaces, and a WorkloadPriorityClass per priority of the guardrails. Why each
// field has its value: docs/render.md.
#pragma once

#include <string_view>
#include <vector>

#include "core/diagnostic.hpp"
#include "policy/policy_set.hpp"
#include "render/object.hpp"

namespace gpubank::render {

inline constexpr std::string_view kKueueApiVersion = "kueue.x-k8s.io/v1beta2";

// Names two policies would both render (ClusterQueue "<group>-<pool>").
[[nodiscard]] Diagnostics check_kueue(const policy::PolicySet& set);

// Paths: kueue/resourceflavor-<pool>.yaml, kueue/cohort-<pool>.yaml,
// kueue/clusterqueue-<group>-<pool>.yaml, kueue/localqueue-<namespace>.<pool>.yaml,
// kueue/workloadpriorityclass-<name>.yaml. Objects are not stamped (render() does it).
[[nodiscard]] std::vector<RenderedObject> render_kueue(const policy::PolicySet& set);

}  // namespace gpubank::render
