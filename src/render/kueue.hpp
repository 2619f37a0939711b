// The Kueue backend (kueue.x-k8s.io/v1beta2): a ResourceFlavor and a Cohort per pool, a
// ClusterQueue "<group>-<pool>" per GPUQuotaPolicy with a LocalQueue in each of the
// group's namespaces, and a WorkloadPriorityClass per priority of the guardrails. Why each
// field has its value: docs/render.md.
#pragma once

#include <cstdint>
#include <optional>
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
// (twin/run/pods_ready.hpp). 10 minutes leaves room for image pulls and a model load of a
// few minutes; pods_ready_timeout_seconds lengthens it for longer loads.
inline constexpr std::int64_t kPodsReadyTimeoutSeconds = 600;
inline constexpr std::int64_t kPodsReadyBackoffBaseSeconds = 60;
inline constexpr std::int64_t kPodsReadyBackoffMaxSeconds = 3600;
inline constexpr std::string_view kKueueNamespace = "kueue-system";

// The timeout rendered into waitForPodsReady: kPodsReadyTimeoutSeconds, or 1.5 x the
// longest modelLoadTime of the set's InferenceScalingPolicies when that is longer (the
// half for the image pull, scheduling and start). An inference replica's pods turn Ready
// only once its model is loaded (the readiness probe): with a timeout shorter than the
// load, Kueue evicts every replica before it serves, requeues it and evicts it again.
[[nodiscard]] std::int64_t pods_ready_timeout_seconds(const policy::PolicySet& set);
inline constexpr std::string_view kKueueManagerConfigMap = "kueue-manager-config";

// What Kueue must not count against quota: the ClusterQueues cover only the pools' GPU
// resources, and Kueue refuses a workload that requests a resource its ClusterQueue does
// not cover. Prefixes (Kueue matches with strings.HasPrefix); none is a prefix of the
// GPU resources (nvidia.com/gpu, nvidia.com/mig-<profile>).
inline constexpr std::string_view kKueueExcludedResourcePrefixes[] = {"cpu", "memory", "ephemeral-storage",
                                                                      "hugepages-"};
// The workload kinds Kueue manages: every kind gpubank's webhook makes carry a
// kueue.x-k8s.io/queue-name label when it asks for GPUs (docs/webhook.md). Kueue ignores
// the label on a kind whose integration is off, and such a workload would skip quota.
inline constexpr std::string_view kKueueFrameworks[] = {"batch/job",
                                                        "deployment",
                                                        "jobset.x-k8s.io/jobset",
                                                        "kubeflow.org/pytorchjob",
                                                        "leaderworkerset.x-k8s.io/leaderworkerset",
                                                        "pod",
                                                        "ray.io/raycluster",
                                                        "ray.io/rayjob",
                                                        "statefulset"};
// Kueue's own order and default: the next strategy is tried only when the preemptor still
// does not fit.
inline constexpr std::string_view kFairSharingStrategies[] = {"LessThanOrEqualToFinalShare", "LessThanInitialShare"};

// Kueue's manager Configuration (config.kueue.x-k8s.io/v1beta2) as the policies need it,
// as a JSON value: fair sharing on exactly when the guardrails say so (fairSharing:
// present means on in v1beta2), the frameworks above, the group namespaces as the only
// managed ones, manageJobsWithoutQueueName off, the ClusterQueue resource metrics the
// rendered rules read, the excluded resource prefixes and waitForPodsReady. nullopt without PlatformGuardrails. The twin runs with what this says
// (twin/run reads it back as `twin admit` reads the ConfigMap).
[[nodiscard]] std::optional<Json> kueue_manager_configuration(const policy::PolicySet& set);

// Path kueue/configmap-kueue-manager-config.yaml: the ConfigMap Kueue's deployment mounts
// its Configuration from (key controller_manager_config.yaml), holding
// kueue_manager_configuration() as YAML. It replaces the installed one: fields it does not
// set take Kueue's defaults (docs/render.md says what to merge). Nothing without
// PlatformGuardrails.
[[nodiscard]] std::vector<RenderedObject> render_kueue_manager_config(const policy::PolicySet& set);

}  // namespace gpubank::render
