// The serving autoscaler acting on a cluster: the replica count of an InferenceScalingPolicy's
// workload read from and written to its scale subresource, the tidal floor in force applied
// on top, and controller.kubernetes.io/pod-deletion-cost written before a scale-in.
//
// What a sync does (ScaleActuator::sync):
//   1. Reads the workload's Scale (spec.replicas and its resourceVersion) and the workload
//      (status.readyReplicas, spec.selector). It refuses to act while a
//      HorizontalPodAutoscaler in the namespace targets the same workload (KEDA's
//      ScaledObject creates one): two autoscalers writing one count would undo each other.
//   2. Runs the LiveAutoscaler on the signals read (a hold when they cannot be read).
//   3. The count to set is the floor in force of every TidalPolicy targeting the policy
//      (tidal/controller.hpp: max(tidal floor, real-time desired), at most maxReplicas),
//      kept at the current count when a tidal prewarm failure forbids a scale-down.
//   4. On a scale-in, first writes each selected pod's pod-deletion-cost (merge patch, only
//      where the value changes) so the ReplicaSet removes the least loaded; then the count.
//      Costs are written only then: Kubernetes asks that the annotation not follow a metric
//      continuously (every write is a pod update every watcher receives).
//   5. Writes the count with PUT of the Scale carrying the resourceVersion read: if someone
//      changed the workload in between, the write fails with 409 and nothing is written
//      (the next sync reads again). A Kubernetes Event on the workload says what changed
//      and why (SuccessfulRescale / FailedRescale, the HPA's reasons).
//
// A pod gets a cost only when the workload's selector selects it and it is not being
// deleted; a replica name (from a Prometheus `pod` label or a scraped page) that names no
// such pod is reported and skipped, so a forged label cannot annotate another workload's pod.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "autoscale/live_autoscaler.hpp"
#include "autoscale/pool_view.hpp"
#include "core/expected.hpp"
#include "k8s/apply.hpp"
#include "k8s/transport.hpp"
#include "policy/policy_set.hpp"
#include "tidal/controller.hpp"

namespace gpubank::autoscale {

inline constexpr std::string_view kPodDeletionCostAnnotation = "controller.kubernetes.io/pod-deletion-cost";

// The object whose scale subresource holds the policy's replicas (render::scale_target_of).
struct WorkloadTarget {
  std::string api_version;  // "apps/v1"
  std::string kind;         // "Deployment"
  std::string plural;       // "deployments"
  std::string namespace_name;
  std::string name;
  [[nodiscard]] std::string path() const;      // "/apis/apps/v1/namespaces/ns/deployments/name"
  [[nodiscard]] std::string describe() const;  // "Deployment ns/name"
};
// Errors for a RayService (Ray Serve's autoscaler owns its replicas; no scale subresource).
[[nodiscard]] Expected<WorkloadTarget> workload_target(const policy::InferenceScalingPolicySpec& spec);

// The selector string of a Scale's status.selector (labels.Parse's grammar: "k=v", "k==v",
// "k!=v", "k in (a,b)", "k notin (a)", "k", "!k", comma-separated) as a metav1.LabelSelector;
// for a workload whose spec has no LabelSelector (a LeaderWorkerSet, whose scale
// subresource's selector picks the leader pods). Errors name the requirement.
[[nodiscard]] Expected<nlohmann::json> selector_from_text(const std::string& text);

// What a sync read from the cluster.
struct WorkloadState {
  int replicas = 0;                 // the Scale's spec.replicas
  std::optional<int> ready;         // the workload's status.readyReplicas (absent: 0 when status exists)
  std::string resource_version;     // the Scale's, for the write
  std::string uid;                  // the workload's, for Events
  nlohmann::json selector;          // the workload's spec.selector (a metav1.LabelSelector)
  std::string selector_text;        // the Scale's status.selector
  std::string competing_autoscaler; // "HorizontalPodAutoscaler ns/name" targeting it; empty: none
};

// One pod-deletion-cost the sync meant to write.
struct CostWrite {
  std::string replica;  // as the signals named it
  std::string pod;      // the pod it resolved to; empty: none
  std::int32_t cost = 0;
  // "written", "unchanged", or why not ("no pod of Deployment ns/x is named or addressed so",
  // the API server's error).
  std::string outcome;
};

// The floor every TidalPolicy targeting the policy puts under the count.
struct TidalFloor {
  int floor_in_force = 0;          // max over the TidalPolicies (the real-time desired without one)
  bool scale_down_allowed = true;  // false while any of them has a prewarm failure open
  std::vector<std::string> reasons;  // "TidalPolicy/x: floor 6", one per policy
  std::vector<tidal::TidalRecord> records;  // the TidalPolicies' records that concern this policy
};

// The TidalPolicies of `set` that target `policy`, stepped once per sync.
class TidalFloors {
 public:
  static Expected<TidalFloors> create(const policy::PolicySet& set, const std::string& policy);
  // `ready` serving now, `desired` what the real-time autoscaler asks for.
  [[nodiscard]] Expected<TidalFloor> step(std::chrono::sys_seconds now, int ready, int desired);
  [[nodiscard]] bool empty() const { return controllers_.empty(); }

 private:
  std::string policy_;
  std::vector<std::string> others_;  // other policies the TidalPolicies target: observed idle
  std::vector<tidal::TidalController> controllers_;
};

struct ScaleSync {
  LiveStep step;                      // the autoscaler's sync (current = the Scale's replicas)
  std::optional<TidalFloor> tidal;    // when a TidalPolicy targets the policy
  int target = 0;                     // the count decided
  std::string decision;               // why `target`, in words
  bool written = false;               // the count was written this sync
  bool standby = false;               // not the leader: decided, nothing written
  std::string error;                  // what stopped the sync (read, competing autoscaler, write)
  std::vector<CostWrite> costs;       // on a scale-in
  // With ActuatorOptions::cluster_objects: what a gateway reads (pool_view.hpp), or why not.
  std::optional<serving::Capacity> capacity;
  std::string capacity_error;
};

struct ActuatorOptions {
  bool dry_run = false;  // decide and report; write nothing
  std::string reporting_instance = "gpubank-serving-autoscale";
  // Leader election: whether this replica leads. At the start of a sync, false makes it a
  // standby's (decide, write nothing); asked again right before each write. Unset: always.
  std::function<bool()> may_write;
  // The capacity for gateways: the policy's name, its set (guardrails, quotas) and the
  // nodes and pods to read the pool from (informer snapshots). Unset: no capacity.
  std::string policy_name;
  const policy::PolicySet* policies = nullptr;
  std::function<Expected<ClusterObjects>()> cluster_objects;
};

class ScaleActuator {
 public:
  ScaleActuator(k8s::Transport& transport, WorkloadTarget target, const policy::InferenceScalingPolicySpec& spec,
                TidalFloors tidal, ActuatorOptions options = {});

  // Reads the workload, then the signals (read_signals at now_ms), decides and writes.
  ScaleSync sync(const std::function<Expected<SignalReading>(std::int64_t)>& read_signals, std::int64_t now_ms);

  // The cluster side alone (tests use it directly).
  [[nodiscard]] Expected<WorkloadState> read_workload();
  [[nodiscard]] std::vector<CostWrite> write_deletion_costs(const WorkloadState& state, const std::vector<DeletionCost>& costs);

 private:
  ScaleSync sync_once(const std::function<Expected<SignalReading>(std::int64_t)>& read_signals, std::int64_t now_ms);
  void add_capacity(ScaleSync& sync, const WorkloadState& state) const;
  ScaleSync decide_and_write(const WorkloadState& state, const std::function<Expected<SignalReading>(std::int64_t)>& read_signals,
                             std::int64_t now_ms);

  k8s::Transport& transport_;
  WorkloadTarget target_;
  policy::InferenceScalingPolicySpec spec_;
  LiveAutoscaler autoscaler_;
  TidalFloors tidal_;
  ActuatorOptions options_;
  k8s::EventRecorder events_;
  bool standby_ = false;  // of the sync in progress
};

// The LiveStep's JSON (to_json) with "target", "decision", "written", "error", "tidal"
// {"floorInForce", "scaleDownAllowed", "reasons", "records"}, "costWrites" and, when
// computed, "capacity" (serving::to_json) or "capacityError".
[[nodiscard]] nlohmann::ordered_json to_json(const ScaleSync& sync);

}  // namespace gpubank::autoscale
