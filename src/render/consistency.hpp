// The capacity check `gpubank render --check` runs before writing anything: do the four
// control points agree on what each inference service may use? Queue quota (the Kueue
// ClusterQueue <group>-<pool> in its pool's cohort), pool (the nodes and the replica
// shape), autoscaler (the ScaledObject's maxReplicaCount, or a lower cap the workload
// itself carries) and scheduler priority. Runs on a set that passed validation, so it
// checks only what no single policy shows (validation already holds maxReplicas x
// gpuPerReplica to the quota's maxCapacity, floors to the replica range, ...). Pure.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/diagnostic.hpp"
#include "policy/policy_set.hpp"
#include "render/object.hpp"

namespace gpubank::render {

// Registered in src/policy/rules.cpp, so `gpubank rules` lists them.
namespace rule {
inline constexpr std::string_view kQueueBelowMaxReplicas = "render.queue-below-max-replicas";
inline constexpr std::string_view kPoolBelowMaxReplicas = "render.pool-below-max-replicas";
inline constexpr std::string_view kAutoscalerBelowMaxReplicas = "render.autoscaler-below-max-replicas";
inline constexpr std::string_view kServicesExceedQueue = "render.services-exceed-queue";
inline constexpr std::string_view kWorkloadShapeMismatch = "render.workload-shape-mismatch";
inline constexpr std::string_view kTidalFloorExceedsUnlent = "render.tidal-floor-exceeds-unlent";
inline constexpr std::string_view kInferencePriorityNotAboveTraining = "render.inference-priority-not-above-training";
inline constexpr std::string_view kNonPreemptibleBorrowExceedsSpare = "render.non-preemptible-borrow-exceeds-spare";
// Warnings.
inline constexpr std::string_view kAutoscalerUnsupported = "render.autoscaler-unsupported";
inline constexpr std::string_view kPrewarmNotExpressible = "render.prewarm-not-expressible";
inline constexpr std::string_view kBehaviorClamped = "render.behavior-clamped";
inline constexpr std::string_view kBurstHeadroomLendable = "render.burst-headroom-lendable";
}  // namespace rule

// GPU counts are devices of the pool's flavor; "allows" values are whole replicas' GPUs.
// 64-bit: each policy count is an int32, and sums and products of them need not be.
using Gpus = std::int64_t;

struct ServiceCapacity {
  std::string policy;    // the InferenceScalingPolicy
  std::string workload;  // "InferenceService customer-service/customer-service-llm"
  std::string group;
  std::string pool;
  int tensor_parallel = 1;
  int gpu_per_replica = 1;
  int nodes_per_replica = 1;
  int min_replicas = 0;
  int max_replicas = 0;
  Gpus required = 0;                // maxReplicas x gpuPerReplica, all at once
  Gpus peak_floor = 0;              // the highest floor (minReplicas or a tidal window) x gpuPerReplica
  Gpus quota_max_capacity = 0;      // the group's GPUQuotaPolicy hard cap on the pool
  Gpus guardrail_max_capacity = 0;  // the guardrails' cap for the group on the pool
  Gpus queue_allows = 0;            // what ClusterQueue <group>-<pool> reaches, less the group's other floors
  Gpus pool_allows = 0;             // what the pool's nodes hold in this shape beside the other floors
  std::optional<Gpus> autoscaler_allows;  // maxReplicaCount x gpuPerReplica; none without a ScaledObject
  Gpus burst_headroom = 0;
  Gpus lendable_to_non_preemptible = 0;  // of the pool (see PoolCapacity)
};

struct GroupPoolCapacity {
  std::string group;
  std::string pool;
  std::string queue;  // the ClusterQueue, "<group>-<pool>"
  Gpus guaranteed = 0;
  Gpus borrow_cap = 0;      // maxCapacity - guaranteed (the queue's borrowingLimit)
  Gpus max_capacity = 0;
  Gpus lending_floor = 0;   // guaranteed - lendingLimit: never lent
  Gpus lendable = 0;
  Gpus queue_reach = 0;     // nominal + what the cohort can lend it, up to borrow_cap
  int services = 0;
  Gpus services_required = 0;  // sum over the group's services on the pool at maxReplicas
  Gpus services_floor = 0;     // sum of their peak floors
};

struct PoolCapacity {
  std::string pool;
  Gpus capacity = 0;
  Gpus guaranteed = 0;
  // The GPUs no guarantee holds: the pool's Cohort's own quota (Volcano: the pool queue's
  // deserved beyond its children's), borrowable by every queue within its cap.
  Gpus cohort_quota = 0;
  Gpus inference_required = 0;    // sum over the pool's services at maxReplicas
  // GPUs in the queues that neither a guarantee nor an inference service at
  // maxReplicas ever claims back: all a non-preemptible borrower may hold safely.
  Gpus lendable_to_non_preemptible = 0;
  Gpus non_preemptible_borrow = 0;  // what groups with a non-preemptible training class may borrow
};

struct ConsistencyReport {
  std::vector<ServiceCapacity> services;  // by pool, group, policy
  std::vector<GroupPoolCapacity> groups;  // by pool, group
  std::vector<PoolCapacity> pools;        // by name
  Diagnostics diagnostics;                // errors are conflicts; warnings are notes

  [[nodiscard]] bool ok() const { return !has_errors(diagnostics); }
  [[nodiscard]] Json to_json() const;
  // The three tables, then one line per finding.
  [[nodiscard]] std::string to_text() const;
};

[[nodiscard]] ConsistencyReport check_consistency(const policy::PolicySet& set);

}  // namespace gpubank::render
