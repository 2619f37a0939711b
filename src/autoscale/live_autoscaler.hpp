// The inference autoscaler (serving/autoscaler.hpp) run against live signals, one sync at
// a time, and what it does when they cannot be read.
//
// Prometheus down, a query that fails or times out, samples older than the staleness
// limit: the sync holds. The autoscaler gets an observation without any signal, which by
// its rule 3 (the HPA's "invalid metrics never scale down") asks for the current count;
// recorded in its stabilization window, that keeps a later scale-down waiting a whole
// window after the signals come back. The count still moves into [minReplicas,
// maxReplicas] (a policy change), as the HPA does without metrics.
// Some replicas read and others not (a scrape target that timed out): the sync may scale
// out, never in (the HPA counts a pod without metrics at 100 % of target when scaling in).
//
// Pure: readings and times come from the caller.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/expected.hpp"
#include "policy/types.hpp"
#include "serving/autoscaler.hpp"
#include "serving/signals.hpp"

namespace gpubank::autoscale {

// Requests one replica holds now (running + waiting), by the name its series carry.
struct ReplicaLoad {
  std::string replica;
  double in_flight = 0;
  friend bool operator==(const ReplicaLoad&, const ReplicaLoad&) = default;
};

// What one sync read.
struct SignalReading {
  serving::Observation observation;
  // Replicas (scrape targets) that could not be read, each "<url>: <why>".
  std::vector<std::string> unread;
  // Per replica, when the source tells them apart (empty otherwise).
  std::vector<ReplicaLoad> loads;
};

// controller.kubernetes.io/pod-deletion-cost per replica: the ReplicaSet removes the pod
// of lowest cost first on a scale-in, so the cost is the requests it holds (rounded,
// within the annotation's int32) and the replica with the fewest goes first, its drain the
// shortest. Sorted by cost, then name.
struct DeletionCost {
  std::string replica;
  std::int32_t cost = 0;
  friend bool operator==(const DeletionCost&, const DeletionCost&) = default;
};
[[nodiscard]] std::vector<DeletionCost> deletion_costs(const std::vector<ReplicaLoad>& loads);

struct LiveStep {
  std::int64_t t_ms = 0;
  int current = 0;
  std::optional<int> ready;
  std::optional<SignalReading> reading;  // nullopt: the signals could not be read
  std::string signals_error;             // why not
  bool held = false;                     // the count was kept because of missing signals
  serving::Recommendation recommendation;
};

class LiveAutoscaler {
 public:
  explicit LiveAutoscaler(const policy::InferenceScalingPolicySpec& spec, serving::AutoscalerOptions options = {});

  // One sync at now_ms (not before the previous one's) with `current` replicas counting,
  // `ready` of them serving.
  [[nodiscard]] LiveStep step(const Expected<SignalReading>& reading, std::int64_t now_ms, int current,
                              std::optional<int> ready = std::nullopt);

 private:
  serving::Autoscaler autoscaler_;
};

// {"time": RFC 3339, "current", "ready", "desired", "held", "signalsError", "observation":
//  {...}, "unread": [...], "deletionCosts": [{"replica", "cost"}], "recommendation": {"raw",
//  "stabilized", "desired", "reason", "signals": [...]}}
[[nodiscard]] nlohmann::ordered_json to_json(const LiveStep& step);

}  // namespace gpubank::autoscale
