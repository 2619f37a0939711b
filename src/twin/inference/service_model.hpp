// What the embedded platform (twin/live/serving.hpp) drives and reads of one inference
// service, whichever model answers it:
//   - InferenceService (service.hpp): every request through a vLLM-like engine, step by
//     step; what `gpubank up` and `gpubank twin serving` run;
//   - FluidService (fluid.hpp): a quasi-static model calibrated on InferenceService, one
//     replica at a ladder of loads; what the impact preview runs by default, so that seven
//     days under two policy sets take seconds instead of minutes.
// Both are pure and deterministic: the same calls give the same answers byte for byte.
#pragma once

#include <cstdint>
#include <span>
#include <variant>
#include <vector>

#include "core/diagnostic.hpp"
#include "core/expected.hpp"
#include "metrics/exposition.hpp"
#include "twin/inference/cost_model.hpp"
#include "twin/inference/vllm_metrics.hpp"

namespace gpubank::twin::inference {

// One request of the load (the Azure LLM trace: arrival, context and generated tokens).
struct Request {
  std::int64_t arrival_ms = 0;
  std::int32_t prompt_tokens = 0;
  std::int32_t output_tokens = 0;
  std::uint64_t id = 0;
};

using ReplicaId = std::uint32_t;

enum class ReplicaState { loading, ready, draining, removed };
[[nodiscard]] std::string_view to_string(ReplicaState state);

struct ReplicaSpec {
  std::string name;         // the replica label of its metrics (a pod name); "" gives "replica-<id>"
  std::uint32_t weight = 1; // router weight; 0 takes no new requests
};

struct ReplicaSnapshot {
  ReplicaId id = 0;
  std::string name;
  ReplicaState state = ReplicaState::loading;
  std::uint32_t weight = 0;
  std::int64_t running = 0;
  std::int64_t waiting = 0;
  std::int64_t in_flight = 0;  // routed to it and not finished: running + waiting
  double kv_cache_usage = 0;   // used KV blocks / all, 0..1
  std::int64_t prompt_tokens = 0;      // so far (vllm:prompt_tokens_total)
  std::int64_t generation_tokens = 0;  // so far
  std::int64_t finished = 0;
  std::int64_t preemptions = 0;
  std::int64_t busy_us = 0;  // time spent in engine steps so far
  // Fraction of the last advance_to interval the engine spent in steps (0..1): the input
  // of the GPU utilisation model.
  double load_factor = 0;
};

struct ServiceSnapshot {
  std::int64_t now_ms = 0;
  std::int64_t router_waiting = 0;  // arrived, no eligible replica yet
  std::int64_t arrived = 0;         // requests whose arrival time has passed
  std::int64_t rejected = 0;        // prompt + output above max_request_tokens (vLLM answers 400)
  std::int64_t finished = 0;
  std::int64_t aborted = 0;         // in flight on a replica that was aborted (abort_replica)
  std::vector<ReplicaSnapshot> replicas;  // by id, removed ones included
};

// A finished request, when completions are kept (for tests and exact quantiles).
struct Completion {
  std::uint64_t id = 0;
  ReplicaId replica = 0;
  std::int64_t arrival_us = 0;      // at the router
  std::int64_t dispatched_us = 0;   // to the replica: vLLM's arrival time
  std::int64_t first_token_us = 0;
  std::int64_t finished_us = 0;
  std::int32_t preemptions = 0;
};

// Arrivals counted over [from_ms, to_ms), for a model that keeps counts (FluidService).
struct ArrivalBatch {
  std::int64_t from_ms = 0, to_ms = 0;
  double count = 0, prompt_tokens = 0, output_tokens = 0;
};

// A model's own estimate of one arrival minute's TTFT, where it keeps no requests.
struct MinuteTtft {
  std::int64_t arrived = 0;
  std::int64_t p95_us = 0;        // nearest rank; kNeverUs: more than 5 % are never answered
  std::int64_t answered_by_us = 0;  // when the last of its answered requests got its first token
  static constexpr std::int64_t kNeverUs = INT64_MAX;
};

struct Service;

class ServiceModel {
 public:
  virtual ~ServiceModel() = default;

  [[nodiscard]] virtual const Service& service() const = 0;
  [[nodiscard]] virtual const ReplicaCosts& costs() const = 0;
  [[nodiscard]] virtual std::int64_t now_ms() const = 0;

  // Appends load: sorted by arrival, none before now or before the last one added, at
  // least one prompt and one output token. All or nothing: on any problem nothing is
  // added and the findings name each offending request (requests[i]) and the rule.
  virtual bool add_requests(std::span<const Request> requests, Diagnostics& findings) = 0;
  // A replica that becomes ready at ready_at_ms (the engine's model load time), at or
  // after now. Returns its id (ids count up from 0 and are never reused).
  virtual ReplicaId add_replica(ReplicaSpec spec, std::int64_t ready_at_ms) = 0;
  // Weight 0 and state draining: no new requests; those in flight finish.
  virtual Expected<std::monostate> start_drain(ReplicaId replica) = 0;
  // The pod is gone: the replica is removed at once, in any state, and the requests in
  // flight on it end unanswered (ServiceSnapshot::aborted). Returns how many were cut.
  virtual Expected<std::int64_t> abort_replica(ReplicaId replica) = 0;
  // Runs everything up to and including t_ms. False (and nothing done) when t_ms is
  // before now.
  virtual bool advance_to(std::int64_t t_ms) = 0;

  [[nodiscard]] virtual ServiceSnapshot snapshot() const = 0;
  // Cheap reads for every-step callers (a snapshot copies every replica ever added).
  [[nodiscard]] virtual std::size_t replica_count() const = 0;  // ids are 0 .. replica_count() - 1
  [[nodiscard]] virtual ReplicaState replica_state(ReplicaId replica) const = 0;
  [[nodiscard]] virtual std::int64_t router_waiting() const = 0;
  [[nodiscard]] virtual ReplicaSnapshot replica_snapshot(ReplicaId replica) const = 0;
  [[nodiscard]] virtual const VllmCounters& counters(ReplicaId replica) const = 0;
  // The vLLM families of every ready or draining replica (vllm_metrics.hpp; a loading pod
  // serves no /metrics yet, a removed one is gone), plus
  // gpubank_inference_router_waiting_requests{model_name}: the same for either model, from
  // the reads above.
  [[nodiscard]] metrics::Exposition exposition(const VllmExpositionOptions& options = {}) const;

  // Every finished request, when the model keeps them (InferenceService with
  // keep_completions); else empty.
  [[nodiscard]] virtual const std::vector<Completion>& completions() const = 0;
  // By minute of arrival (index = minute), the model's estimate where it keeps no
  // requests (FluidService); null where completions() is the record.
  [[nodiscard]] virtual const std::vector<MinuteTtft>* minute_ttft() const { return nullptr; }
  // A model that takes its load as counts (add_batches) rather than requests.
  [[nodiscard]] virtual bool takes_batches() const { return false; }
  // Appends counted load: batches in order, none before now. False (nothing added) on
  // a batch out of order or a model that takes requests.
  virtual bool add_batches(std::span<const ArrivalBatch> /*batches*/) { return false; }
};

}  // namespace gpubank::twin::inference
