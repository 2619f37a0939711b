// What an LLM gateway (Gateway API Inference Extension's endpoint picker, or any router)
// needs to know about an inference service's capacity to queue or shed load instead of
// letting requests time out: the queue, the replicas by phase, how many more requests per
// second the ready replicas take before the SLO breaks, whether a scale-out can happen now
// and when its replica would serve, and the GPUs behind it.
//
// Pure: the shell (twin/live/elastic.hpp; on a cluster, the controller) fills the inputs
// from what it observes. docs/serving.md ("Capacity signals for the gateway") says how a
// gateway uses the answer.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/duration.hpp"
#include "core/expected.hpp"
#include "metrics/registry.hpp"
#include "serving/capacity.hpp"

namespace gpubank::serving {

struct CapacityInputs {
  std::string policy;
  // Replicas by phase: serving; pod started, model loading; router weight 0, finishing
  // what is in flight; asked for, no GPUs yet (admission or placement pending).
  int ready = 0, loading = 0, draining = 0, requested = 0;
  int max_replicas = 0;
  std::optional<double> queue_depth;  // waiting at the replicas and at the router; nullopt: not observed
  std::optional<double> arrival_rps;  // requests per second arriving over the last minute
  // Requests per second one ready replica takes within the SLO (the twin: the service's
  // reference capacity at batch 32, serving.hpp replica_capacity_rps; on a cluster the
  // policy's requestsPerSecondPerReplica). 0: not known, and so neither is the headroom.
  double replica_rps = 0;
  Duration model_load_time;
  // check_shape for one more replica now; nullopt: no view of the pool (none is possible).
  std::optional<ShapeDecision> next_replica;
  // The notice borrowers get when the replica needs GPUs they hold (the reclaim's grace).
  Duration reclaim_grace;
};

struct Capacity {
  std::string policy;
  int ready = 0, loading = 0, draining = 0, requested = 0;
  std::optional<double> queue_depth, arrival_rps;
  double capacity_rps = 0;  // ready x replica_rps
  double coming_rps = 0;    // (loading + requested) x replica_rps: capacity on its way
  // capacity_rps - arrival_rps, at least 0; nullopt without an arrival rate.
  std::optional<double> headroom_rps;
  bool scale_out_possible = false;
  // Fits: modelLoadTime; FitsAfterReclaim: the borrowers' grace, then modelLoadTime.
  std::optional<double> scale_out_ready_seconds;
  // Why not: "MaxReplicas", "NoPoolView", or check_shape's reason (QuotaCap, Fragmented,
  // LentOut, InsufficientCapacity); with check_shape's sentence.
  std::string scale_out_blocked_reason, scale_out_message;
  // GPUs the group could still get on the pool for replicas: its quota's room (maxCapacity
  // - used) bounded by what is free plus what borrowers hold of its guarantee.
  int borrowable_gpus = 0;
};

[[nodiscard]] Capacity gateway_capacity(const CapacityInputs& in);
[[nodiscard]] nlohmann::ordered_json to_json(const Capacity& c);

// The same as Prometheus series, one per service (and phase): gpubank_service_replicas,
// _queue_depth, _headroom_requests_per_second, _scale_out_possible,
// _scale_out_ready_seconds, _borrowable_gpus (a series is absent when its figure is not known).
[[nodiscard]] Expected<bool> export_capacity(metrics::Registry& registry, const std::vector<Capacity>& services);

}  // namespace gpubank::serving
