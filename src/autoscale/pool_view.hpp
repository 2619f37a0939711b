// An inference service's pool as a cluster shows it, for the capacity a gateway reads
// (serving/gateway_capacity.hpp) and the replica-shape check (serving/capacity.hpp):
//
//   - nodes: those carrying every one of the pool's nodeLabels (PlatformGuardrails);
//     devices = status.allocatable of the pool's resource (render::gpu_resource:
//     nvidia.com/gpu, or nvidia.com/mig-<profile>); devices the device plugin reports in
//     capacity but not in allocatable are unhealthy; a cordoned node (spec.unschedulable)
//     offers nothing free;
//   - pods on those nodes (spec.nodeName set, phase neither Succeeded nor Failed) hold what
//     they request: the sum over containers of requests (limits when only limits are set,
//     as the API server defaults them for extended resources), or the largest init
//     container's when that is more (the kubelet's effective request);
//   - the group (GuardRails: namespace -> business group) of each pod: pods of other groups
//     count as held by borrowers (the same approximation as the twin: a workload within
//     its own guarantee counts too; check_shape uses it only to say where a reclaim helps);
//   - the quota: guaranteed and maxCapacity from the GPUQuotaPolicy, used = the group's
//     pods on the pool, lent = min(guaranteed - used, what other groups use beyond their
//     guarantees), cohort free = the free devices.
//
// The replicas of the service by phase come from its own pods: being deleted: draining;
// Ready: ready; on a node: loading (the model loads after the container starts); else
// requested (no GPUs yet).
//
// Pure: the objects are passed in (informer snapshots, or a list).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/expected.hpp"
#include "policy/policy_set.hpp"
#include "serving/capacity.hpp"
#include "serving/gateway_capacity.hpp"
#include "serving/signals.hpp"

namespace gpubank::autoscale {

struct ClusterObjects {
  std::vector<nlohmann::json> nodes;
  std::vector<nlohmann::json> pods;
};

// Errors: no PlatformGuardrails, the policy's pool not in it.
[[nodiscard]] Expected<serving::PoolCapacity> pool_view(const policy::PolicySet& set,
                                                        const policy::InferenceScalingPolicySpec& spec,
                                                        const ClusterObjects& objects);

// Devices of `resource` a pod holds (the kubelet's effective request); 0 when none or the
// quantity is not a whole number.
[[nodiscard]] int pod_devices(const nlohmann::json& pod, const std::string& resource);

struct ReplicaPhases {
  int ready = 0, loading = 0, draining = 0, requested = 0;
  friend bool operator==(const ReplicaPhases&, const ReplicaPhases&) = default;
};
// The phases of `pods` (the workload's own).
[[nodiscard]] ReplicaPhases replica_phases(const std::vector<nlohmann::json>& pods);

// What a gateway reads about the service now (serving::gateway_capacity): the phases, the
// signals' queue and finished-request rate (the arrivals while the replicas keep up), the
// policy's requestsPerSecondPerReplica as each replica's capacity (none: no headroom is
// stated), and whether one more replica fits the pool after the ones still waiting for
// GPUs are placed, with the reclaim grace of the group's quota.
struct LiveCapacityInputs {
  std::string policy;
  const policy::InferenceScalingPolicySpec* spec = nullptr;
  ReplicaPhases phases;
  std::optional<serving::Observation> observation;  // nullopt: the signals were not read
  serving::PoolCapacity pool;
  int serving_floor_replicas = 0;  // the floor in force (tidal or minReplicas)
};
[[nodiscard]] serving::Capacity live_capacity(const policy::PolicySet& set, const LiveCapacityInputs& in);

}  // namespace gpubank::autoscale
