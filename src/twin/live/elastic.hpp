// The serving controllers of the embedded platform: per InferenceScalingPolicy an
// autoscaler that reads its service's vLLM metrics every sync period and asks the bank
// for replica workloads (or drains them), and per TidalPolicy the tidal controller that
// sets floors, reserves the inference group's GPUs before a window and caps training's
// borrowing. What they decide is logged as events.md events in the run's own log.
//
// One step per period (15 s, the HPA's sync period), after the run and the services
// have reached that instant:
//   1. scrape: each service's vLLM exposition, as its pods' /metrics would show it, into
//      a serving::SignalWindow (TTFT p95 over 2 min, the rendered KEDA query's window);
//   2. decide the replicas the service should have, by the day's ServingControl:
//      - Autoscaler: serving::Autoscaler's desired count, then the tidal floor in force
//        = max(tidal floor, real-time desired) (tidal::TidalController);
//      - Static: DayOptions::static_replicas_by_policy, else static_replicas (maxReplicas
//        when 0) all day;
//      - HpaGpuUtilization: a CPU-style HPA on the mean GPU utilisation of the replicas
//        (the engine busy fraction, what DCGM_FI_DEV_GPU_UTIL reports), 70 % target;
//      - Keda: the HPA the rendered ScaledObject creates (serving::hpa_spec_for);
//      - Planned: nothing (the day carries its replica workloads);
//   3. scale out: the replica shape is checked against the pool first
//      (serving::check_shape on the cluster's free GPUs and the group's quota); when it
//      fits (or fits after a graceful reclaim) the replicas are submitted to the bank as
//      workloads (ScaleUpRequested), else ScaleUpBlocked says why, once per reason;
//   4. scale in: a replica still waiting for GPUs is withdrawn at once; otherwise the
//      replica with the fewest requests in flight is drained (router weight 0, requests
//      in flight finish, at most drainTimeout) and then deleted, never below the floor
//      (DrainStarted, DrainCompleted, ReplicaRemoved);
//   5. tidal: before a window, the inference group reserves floor x gpuPerReplica GPUs of
//      its guarantee in replica shapes, pieces of gpuPerReplica / nodesPerReplica GPUs on
//      one node (run::Simulation::reserve: borrowers get checkpoint notices with the
//      policy's reclaim.gracePeriod) and training groups' borrowing on the pool is capped
//      at the window's trainingBorrowLimit, at what they hold during the admission hold.
// Pure: a function of the policies, the day, the run and the services it is shown.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/expected.hpp"
#include "policy/policy_set.hpp"
#include "serving/autoscaler.hpp"
#include "serving/capacity.hpp"
#include "serving/drain.hpp"
#include "serving/gateway_capacity.hpp"
#include "serving/hpa_model.hpp"
#include "serving/signals.hpp"
#include "tidal/controller.hpp"
#include "twin/live/day.hpp"
#include "twin/live/serving.hpp"
#include "twin/run/engine.hpp"

namespace gpubank::twin::live {

class ElasticControl {
 public:
  static constexpr std::int64_t kPeriodMs = serving::kHpaSyncPeriodMs;
  static constexpr std::int64_t kTtftWindowMs = 120'000;
  static constexpr int kHpaGpuUtilizationTarget = 70;
  inline static const std::string kActor = "gpubank-serving";

  // Nothing to control with ServingControl::Planned (returns a controller that only
  // reports). Errors: a TidalPolicy that does not load.
  static Expected<std::unique_ptr<ElasticControl>> create(const policy::PolicySet& policies, const DayOptions& day,
                                                          Serving& serving, run::Simulation& simulation);

  // One step at `now` (the run and the services are there).
  Expected<bool> step(VirtualTime now);
  // The next instant a step is due.
  [[nodiscard]] VirtualTime next_step() const { return next_step_; }

  // Manual freeze of a TidalPolicy (`gpubank tidal freeze`): pins its services' replicas.
  Expected<bool> freeze(const std::string& tidal_policy, const std::string& actor, const std::string& reason);
  Expected<bool> unfreeze(const std::string& tidal_policy, const std::string& actor);
  // Fault injection: the next `count` replicas of the policy's service to finish loading
  // fail to load the model (event ReplicaFailed, the workload deleted); a prewarm they
  // belonged to fails and is retried on the tidal controller's backoff.
  Expected<bool> fail_model_loads(const std::string& policy, int count, const std::string& actor);

  // Per service: replicas by phase, the last recommendation and floor, blocked reason.
  [[nodiscard]] nlohmann::ordered_json json() const;
  // What a gateway needs about the policy's capacity at the last step (serving/
  // gateway_capacity.hpp); nullopt for a policy this control does not serve.
  [[nodiscard]] std::optional<serving::Capacity> capacity(const std::string& policy) const;
  [[nodiscard]] std::vector<std::string> policies() const;

  // What the day's serving cost and gave, per service (the comparison of `twin serving`).
  struct ServiceReport {
    std::string policy;
    std::string control;
    int peak_replicas = 0;
    int static_replicas = 0;  // what static provisioning ran (ServingControl::Static)
    std::int64_t replica_gpu_ms = 0;       // GPUs of replica workloads held x time
    std::int64_t scale_ups = 0, scale_downs = 0, blocked = 0;
    // Scale-out reaction: from the first sync at which the demand signals asked for more
    // than there were, to the replica asked for then being ready; per episode.
    std::vector<std::int64_t> reaction_ms;
  };
  [[nodiscard]] std::vector<ServiceReport> report() const;

 private:
  struct Replica {
    std::string key;
    std::int64_t requested_ms = 0;
    bool placed = false;  // its pod started (the service knows it)
    bool ready = false;
    std::optional<serving::Drain> drain;
  };
  struct Service {
    std::string policy;
    policy::InferenceScalingPolicySpec spec;
    std::string namespace_, priority_class;
    std::unique_ptr<serving::Autoscaler> autoscaler;
    std::unique_ptr<serving::HpaModel> hpa;
    serving::SignalWindow window{kTtftWindowMs};
    std::vector<Replica> replicas;  // live ones, in creation order
    int next_index = 1;
    std::optional<serving::Recommendation> last;
    int tidal_floor = 0, floor_in_force = 0, target = 0;
    bool scale_down_allowed = true;
    int keep_at_least = 0;  // a coming window's floor, between its approaching and prewarm
    bool retry_now = false;  // the tidal controller's backoff says retry the prewarm now
    int load_failures = 0;   // injected: replicas whose model load will fail
    bool prewarm_failed = false;
    std::string blocked_reason;  // the last ScaleUpBlocked said
    // Report.
    int peak = 0;
    std::int64_t scale_ups = 0, scale_downs = 0, blocked = 0;
    std::optional<std::int64_t> short_since;  // demand above the replicas since
    std::vector<std::pair<std::string, std::int64_t>> awaiting_ready;  // replica, episode start
    std::vector<std::int64_t> reaction_ms;
    std::int64_t gpu_ms_ = 0;  // GPUs of its replicas' pods x time, at step granularity
  };
  struct Tidal {
    std::unique_ptr<tidal::TidalController> controller;
    std::vector<std::size_t> services;  // indexes of the services it targets
    std::map<std::string, std::int64_t> hold_caps;  // training group -> borrowing at the hold's start
  };

  ElasticControl(const policy::PolicySet& policies, const DayOptions& day, Serving& serving,
                 run::Simulation& simulation)
      : policies_(policies), day_(day), serving_(serving), simulation_(simulation) {}

  // Scrapes the service and decides its replicas by the day's ServingControl.
  Expected<bool> recommend(Service& s, VirtualTime now);
  [[nodiscard]] int counting(const Service& s) const;  // not draining
  Expected<bool> decide(Service& s, VirtualTime now);
  Expected<bool> scale_out(Service& s, int count, VirtualTime now, const std::string& why);
  Expected<bool> scale_in(Service& s, int count, VirtualTime now);
  Expected<bool> follow_drains(Service& s, VirtualTime now);
  Expected<bool> tidal_step(Tidal& t, VirtualTime now);
  Expected<bool> log(run::Event e, const std::string& actor = kActor);
  Expected<bool> pin(const std::string& tidal_policy, const std::string& actor, const std::string& reason, bool freeze);
  [[nodiscard]] serving::PoolCapacity pool_capacity(const Service& s) const;
  // The pool as a next replica sees it: the replicas asked for and not placed yet take
  // their GPUs first (they hold quota, no GPUs).
  [[nodiscard]] serving::PoolCapacity pool_after_unplaced(const Service& s, const serving::ShapeRequest& request) const;
  [[nodiscard]] serving::ShapeRequest shape_request(const Service& s, int count) const;
  [[nodiscard]] std::chrono::sys_seconds wall(VirtualTime t) const;
  [[nodiscard]] int static_count(const Service& s) const;

  const policy::PolicySet& policies_;
  DayOptions day_;
  Serving& serving_;
  run::Simulation& simulation_;
  std::vector<Service> services_;
  std::vector<Tidal> tidal_;
  VirtualTime next_step_ = 0;
  std::optional<VirtualTime> last_step_;
};

}  // namespace gpubank::twin::live
