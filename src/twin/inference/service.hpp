// The twin's inference serving model: one Service (a model served by vLLM-like replicas of
// one shape, TP GPUs each) with a router in front, driven in virtual time by the engine
// with advance_to(t). Pure and deterministic: no clocks, no threads; the same service,
// requests and calls give the same results byte for byte. docs/twin-inference.md has the
// model in full; in short:
//
// - Each replica runs vLLM V1's scheduler in simplified form, one engine step after the
//   other: running requests first (a decode token each, or the next prefill chunk), then
//   waiting ones FCFS while the step's token budget, max_num_seqs and free KV blocks allow
//   (chunked prefill); when a running request needs a KV block and none is free, the newest
//   running request is preempted back to the front of the waiting queue (recompute).
// - Step durations come from the cost model (cost_model.hpp). Steps are simulated one by
//   one only when the batch changes; runs of identical decode steps are jumped over in
//   O(1) per step, and an idle replica waits for the next arrival.
// - The router sends each arrival to the ready replica with the fewest outstanding
//   requests per unit of weight (ties: lowest replica id). Weight 0 (draining) receives
//   nothing. With no eligible replica, requests wait at the router, without a timeout,
//   until one becomes ready.
//
// Times: the engine speaks milliseconds (VirtualTime of the twin); inside, steps are
// microseconds, so that inter-token latencies of ~20 ms are not rounded to the millisecond.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "core/diagnostic.hpp"
#include "core/expected.hpp"
#include "metrics/exposition.hpp"
#include "twin/inference/cost_model.hpp"
#include "twin/inference/service_model.hpp"
#include "twin/inference/vllm_metrics.hpp"

namespace gpubank::twin::inference {

// What a replica computes per request, as vLLM's tasks: generate (prefill, then one decode
// step per output token) or embed (a pooling model: prefill only; the request's one output
// is its vector, ready when the prefill step ends, so its TTFT is its whole latency).
enum class Task { Generate, Embed };
[[nodiscard]] std::string_view to_string(Task task);

struct Service {
  std::string name;
  std::string model_name = "meta-llama/Llama-3.1-70B-Instruct";  // vLLM's served_model_name
  std::string gpu_model = "H100";
  int tensor_parallel_size = 4;  // GPUs per replica, all on one node
  Task task = Task::Generate;
  ModelConfig model;
  EngineConfig engine;
};

// Rule ids of check_service.
inline constexpr std::string_view kRuleServiceField = "inference.service-field";
inline constexpr std::string_view kRuleGpuModel = "inference.gpu-model";
inline constexpr std::string_view kRuleKvCapacity = "inference.kv-capacity";
// Rule id of add_requests.
inline constexpr std::string_view kRuleRequest = "inference.request";

// Every problem of a service definition: names, sizes out of range, an unknown GPU model,
// weights that leave no room for the KV cache. Empty when it can be served.
[[nodiscard]] Diagnostics check_service(const Service& service);

// The rules of add_requests (either model's): sorted, none before not_before_ms, an
// arrival in range, at least one prompt and one output token (exactly one for an embed
// service: its vector). False (and findings naming requests[i] and kRuleRequest) on any
// problem.
bool check_requests(std::span<const Request> requests, std::int64_t not_before_ms, Diagnostics& findings,
                    Task task = Task::Generate);

// gpubank_inference_router_waiting_requests{model_name}: the twin's router queue.
[[nodiscard]] metrics::Family router_waiting_family(const std::string& model_name, std::int64_t waiting);

struct ServiceOptions {
  bool keep_completions = false;
  // Longest run of identical decode steps simulated at once; 1 simulates every step on
  // its own (the reference the fast path is tested against).
  std::int64_t max_steps_per_run = std::int64_t{1} << 40;
};

class InferenceService final : public ServiceModel {
 public:
  // Nothing (and findings) when check_service finds errors.
  [[nodiscard]] static std::optional<InferenceService> create(Service service, Diagnostics& findings,
                                                              ServiceOptions options = {});

  [[nodiscard]] const Service& service() const override { return service_; }
  [[nodiscard]] const ReplicaCosts& costs() const override { return costs_; }
  [[nodiscard]] std::int64_t now_ms() const override { return now_us_ / kUsPerMs; }

  // Appends load: sorted by arrival, none before now or before the last one added, at
  // least one prompt and one output token. All or nothing: on any problem nothing is
  // added and the findings name each offending request (requests[i]) and the rule.
  bool add_requests(std::span<const Request> requests, Diagnostics& findings) override;

  // A replica that becomes ready at ready_at_ms (the engine's model load time), at or
  // after now. Returns its id (ids count up from 0 and are never reused).
  ReplicaId add_replica(ReplicaSpec spec, std::int64_t ready_at_ms) override;
  // Weight 0 and state draining: no new requests; those in flight finish.
  Expected<std::monostate> start_drain(ReplicaId replica) override;
  Expected<std::monostate> set_weight(ReplicaId replica, std::uint32_t weight);
  // Draining (or loading and draining) with nothing in flight.
  [[nodiscard]] bool is_drained(ReplicaId replica) const;
  // Only a drained replica, or one still loading, can be removed; its series leave the
  // exposition.
  Expected<std::monostate> remove_replica(ReplicaId replica);
  // The pod is gone (its workload deleted or stopped without a drain): the replica is
  // removed at once, in any state, and the requests in flight on it end unanswered
  // (counted in ServiceSnapshot::aborted; its series leave the exposition with it).
  // Returns how many were cut.
  Expected<std::int64_t> abort_replica(ReplicaId replica) override;

  // Runs everything up to and including t_ms: arrivals, replicas becoming ready, engine
  // steps that end by then. False (and nothing done) when t_ms is before now.
  bool advance_to(std::int64_t t_ms) override;

  [[nodiscard]] ServiceSnapshot snapshot() const override;
  [[nodiscard]] std::size_t replica_count() const override { return replicas_.size(); }
  [[nodiscard]] ReplicaState replica_state(ReplicaId replica) const override { return replicas_.at(replica).state; }
  [[nodiscard]] std::int64_t router_waiting() const override { return static_cast<std::int64_t>(router_queue_.size()); }
  [[nodiscard]] ReplicaSnapshot replica_snapshot(ReplicaId replica) const override;
  [[nodiscard]] const VllmCounters& counters(ReplicaId replica) const override;
  [[nodiscard]] const std::vector<Completion>& completions() const override { return completions_; }

  // The vLLM families of every replica not removed (vllm_metrics.hpp), plus
  // gpubank_inference_router_waiting_requests{model_name}.


  static constexpr std::int64_t kUsPerMs = 1000;

 private:
  struct Seq {
    Request request;
    std::int64_t arrival_us = 0;     // at the router
    std::int64_t dispatched_us = 0;  // at the replica
    std::int64_t generated = 0;
    std::int64_t computed = 0;  // tokens whose KV is computed
    std::int64_t blocks = 0;    // KV blocks held
    std::int64_t first_token_us = -1;
    std::int64_t last_token_us = -1;
    std::int32_t preemptions = 0;
    [[nodiscard]] std::int64_t tokens() const { return request.prompt_tokens + generated; }
  };
  struct Scheduled {
    std::size_t position;  // in running
    std::int64_t tokens;
  };
  struct Step {
    std::int64_t start_us = 0;
    std::int64_t end_us = 0;
    std::vector<Scheduled> scheduled;
  };
  // A run of identical decode steps: every running request takes one token per step, with
  // no admission, preemption or finish before the last step. Steps are applied lazily as
  // time passes; a request routed to the replica cuts the run after the step under way.
  struct DecodeRun {
    std::int64_t start_us = 0;   // of step `next`
    std::int64_t next = 0;       // the first step not yet applied
    std::int64_t steps = 0;      // next < steps
    std::int64_t batch = 0;      // running requests
    std::int64_t context0 = 0;   // their computed tokens before step 0
    bool next_allocated = true;  // step `next` has started: its KV blocks are allocated
    // Step m lasts costs.step_us(batch, context0 + batch (m + 1)).
  };
  struct Replica {
    ReplicaId id = 0;
    std::string name;
    ReplicaState state = ReplicaState::loading;
    std::uint32_t weight = 1;
    std::int64_t ready_at_us = 0;
    std::int64_t clock_us = 0;  // when the next step may start
    std::vector<Seq> running;   // in admission order
    std::deque<Seq> waiting;    // FCFS; preempted requests at the front
    std::int64_t free_blocks = 0;
    std::optional<Step> in_flight;
    std::optional<DecodeRun> run;
    std::int64_t busy_applied_us = 0;
    std::int64_t busy_at_last_advance_us = 0;
    double load_factor = 0;
    std::int64_t finished = 0;
    VllmCounters counters;
  };

  InferenceService(Service service, ReplicaCosts costs, ServiceOptions options);

  void advance_replica(Replica& r, std::int64_t until_us);
  Step schedule(Replica& r, std::int64_t start_us, bool& pure_decode);
  [[nodiscard]] DecodeRun plan_run(const Replica& r, const Step& first) const;
  [[nodiscard]] std::int64_t run_step_us(const DecodeRun& run, std::int64_t m) const;
  bool advance_run(Replica& r, std::int64_t until_us);  // true when the run is over
  void cut_run(Replica& r, std::int64_t at_us);
  void apply(Replica& r, const Step& step);
  void finish_done(Replica& r, std::int64_t end_us);
  void preempt_newest(Replica& r);
  void route(Seq seq, std::int64_t at_us);
  void enqueue(Replica& r, Seq seq, std::int64_t at_us);
  [[nodiscard]] Replica* choose_replica();
  [[nodiscard]] std::int64_t busy_us(const Replica& r, std::int64_t at_us) const;
  [[nodiscard]] Expected<Replica*> find(ReplicaId id);

  Service service_;
  ReplicaCosts costs_;
  ServiceOptions options_;
  std::int64_t now_us_ = 0;
  std::vector<Request> arrivals_;
  std::size_t next_arrival_ = 0;
  std::deque<Seq> router_queue_;
  std::vector<Replica> replicas_;
  std::int64_t arrived_ = 0;
  std::int64_t rejected_ = 0;
  std::int64_t finished_ = 0;
  std::int64_t aborted_ = 0;
  std::vector<Completion> completions_;
};

}  // namespace gpubank::twin::inference
