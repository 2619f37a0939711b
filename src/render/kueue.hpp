// The Kueue backend (kueue.x-k8s.io/v1beta2): a ResourceFlavor and a Cohort per pool, a
// ClusterQueue "<group>-<pool>" per GPUQuotaPolicy with a LocalQueue in each of the
// group's namespaces, and a WorkloadPriorityClass per priority of the guardrails. Why each
// field has its value: docs/render.md.
#pragma once

#include <cstdint>
#include <span>
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

// The Cohort of `pool` (a root: pools never share GPUs), holding as its own nominalQuota
// the pool's GPUs no guarantee holds while the `active` CapacityLeases are in force
// (policy/cohort_quota.hpp). render_kueue() writes it with no lease active; a controller
// renders it again whenever a TemporaryQuota lease starts or ends, so that the quota
// tree always adds up to the pool's capacity. Sources: the guardrails and the pool's
// GPUQuotaPolicies (the quota depends on their guarantees). Not stamped.
[[nodiscard]] RenderedObject render_kueue_cohort(const policy::PolicySet& set, const policy::Pool& pool,
                                                 std::span<const policy::CapacityLeaseSpec* const> active = {});

// Kueue's manager Configuration with waitForPodsReady on: a Workload admitted whose pods
// are not all ready within the timeout (an unplaceable gang: nodes too fragmented, GPUs
// failed) is evicted and gives its quota back, instead of holding borrowed quota it
// cannot use until someone deletes it. Requeued after 60 s doubling up to an hour
// (Kueue's defaults), without a limit, ordered by its eviction. The twin runs the same
// (twin/run/pods_ready.hpp). 10 minutes leaves room for image pulls and a model load.
inline constexpr std::int64_t kPodsReadyTimeoutSeconds = 600;
inline constexpr std::int64_t kPodsReadyBackoffBaseSeconds = 60;
inline constexpr std::int64_t kPodsReadyBackoffMaxSeconds = 3600;
inline constexpr std::string_view kKueueNamespace = "kueue-system";
inline constexpr std::string_view kKueueManagerConfigMap = "kueue-manager-config";

// Path kueue/configmap-kueue-manager-config.yaml: the ConfigMap Kueue's deployment mounts
// its Configuration from (key controller_manager_config.yaml), holding a
// config.kueue.x-k8s.io/v1beta2 Configuration with waitForPodsReady; every other field
// is left to Kueue's defaults. Nothing without PlatformGuardrails.
[[nodiscard]] std::vector<RenderedObject> render_kueue_manager_config(const policy::PolicySet& set);

}  // namespace gpubank::render
