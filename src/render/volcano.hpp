// The Volcano backend (scheduling.volcano.sh/v1beta1), for clusters that queue with
// Volcano's capacity plugin and hierarchical queues instead of Kueue: a parent Queue per
// pool under Volcano's root queue, a leaf Queue "<group>-<pool>" per GPUQuotaPolicy, and a
// PodGroup template for gang jobs in each of the group's namespaces. Why each field has
// its value: docs/render.md.
#pragma once

#include <string_view>
#include <vector>

#include "core/diagnostic.hpp"
#include "policy/policy_set.hpp"
#include "render/object.hpp"

namespace gpubank::render {

inline constexpr std::string_view kVolcanoApiVersion = "scheduling.volcano.sh/v1beta1";
// The node label Volcano's nodegroup plugin matches a queue's nodeGroupAffinity against.
inline constexpr std::string_view kVolcanoNodeGroupLabel = "volcano.sh/nodegroup-name";
// Marks the PodGroup templates: manifests to copy per job, not objects to apply.
inline constexpr std::string_view kAnnotationTemplate = "platform.gpubank.dev/template";

// Queue names two policies would both render, and pools named like Volcano's own queues
// ("root", "default").
[[nodiscard]] Diagnostics check_volcano(const policy::PolicySet& set);

// Paths: volcano/queue-<pool>.yaml, volcano/queue-<group>-<pool>.yaml,
// volcano/templates/podgroup-<namespace>.<pool>.yaml. Objects are not stamped.
[[nodiscard]] std::vector<RenderedObject> render_volcano(const policy::PolicySet& set);

}  // namespace gpubank::render
