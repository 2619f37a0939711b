// A pod set's requests, computed the way Kueue computes them (pkg/workload/resources.go,
// pkg/workload/workload.go totalRequestsFromPodSets, and k8s.io/component-helpers'
// resource.PodRequests that Kueue calls).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kueue/objects.hpp"
#include "twin/admission/model.hpp"

namespace gpubank::kueue {

// workload.AdjustResources without LimitRanges and RuntimeClasses (the twin has neither):
// every container (and the pod-level resources) takes its limits as requests for the
// resources it requests nothing for.
[[nodiscard]] PodSpec with_limits_as_requests(PodSpec spec);

// resource.PodRequests(pod, {}) on exact quantities: the containers' sum; init containers
// in order, each needing its own requests plus those of the sidecars (restartPolicy:
// Always) before it, the sidecars also adding to the sum; per resource the larger of the
// two; pod-level requests replace cpu, memory and hugepages-*; overhead is added.
[[nodiscard]] ResourceList pod_requests(const PodSpec& spec);

// The manager Configuration's resources section on a pod's requests, as
// totalRequestsFromPodSets applies it: resources whose name starts with one of
// excludeResourcePrefixes are dropped (dropExcludedResources), then the transformations run
// (applyResourceTransformations): an input resource yields its outputs, each the input's
// quantity (times the quantity of multiplyBy, when the pod requests that) times the
// output's factor, summed per name and floored at 0; Replace drops the input itself.
[[nodiscard]] ResourceList counted_requests(ResourceList requests, const ManagerConfiguration& config);

// What one pod of the set counts against quota, sorted by resource: Kueue's
// ResourceValue of pod_requests(with_limits_as_requests(spec)), through the Configuration's
// resources section when there is one, negative values floored at 0 (Requests.FloorToZero).
[[nodiscard]] std::vector<std::pair<std::string, twin::Amount>> pod_amounts(const PodSpec& spec,
                                                                            const ManagerConfiguration* config = nullptr);

// The pod set's count less its status.reclaimablePods entry (floored at 0), as Kueue
// counts pods with the ReclaimablePods feature gate (on by default).
[[nodiscard]] std::int32_t count_after_reclaim(const Workload& wl, const PodSet& ps);

// workload.ValidateResources after AdjustResources: the message Kueue gives a Workload
// whose requests exceed its limits ("resources validation failed: spec.podSets[0]...:
// Invalid value: []v1.ResourceName{"cpu"}: requests must not exceed its limits"), or
// nullopt when none does.
[[nodiscard]] std::optional<std::string> resources_validation_error(const Workload& wl);

}  // namespace gpubank::kueue
