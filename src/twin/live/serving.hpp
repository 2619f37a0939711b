// Inference serving inside the embedded platform (`gpubank up`): one vLLM-like
// twin::inference::InferenceService per InferenceScalingPolicy, its replicas following
// the day's replica workloads on the engine, its load a seeded day of requests with a
// daytime peak. The rules (docs/up.md, "Serving"):
//   - service: tensorParallelSize from replicaShape, the GPU model of the policy's pool,
//     Llama-3.1-70B when its weights fit in half the replica's GPU memory, else
//     Llama-3.1-8B; served model name = workloadRef.name (what KServe passes to vLLM);
//   - load: Poisson arrivals whose rate follows trace::default_diurnal_curve() by local
//     hour, ramping linearly between the hours' middles (RateShape::Linear); prompt and
//     output tokens log-normal with the Azure conversation trace's median and mean for a
//     generate service, short inputs and one output for an embed one (TokenProfile); or,
//     for a generate service when a trace is given, the trace through
//     trace::diurnal_repeat with the same curve (hourly factors: within each hour the
//     trace's own burstiness). Scale: the peak hour needs the policy's largest replica floor (with
//     planned replicas; with a controller, kPeakShareOfMaxReplicas x maxReplicas when
//     that is more), each replica taking replica_capacity_rps requests per second;
//   - replicas: a replica workload placed (Starting) becomes a replica that is ready after
//     its startupTime; one that is deleted, finishes or is stopped is removed at once and
//     its requests in flight are cut. The serving controller (elastic.hpp) drains a
//     replica (start_drain) before it deletes its workload, so only a drain that timed
//     out cuts anything.
// Pure: a function of the policies, the day, the seed and the events it is shown.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/expected.hpp"
#include "core/timestamp.hpp"
#include "metrics/exposition.hpp"
#include "policy/policy_set.hpp"
#include "serving/signals.hpp"
#include "twin/inference/service.hpp"
#include "twin/inference/service_model.hpp"
#include "twin/live/day.hpp"
#include "twin/run/engine.hpp"
#include "twin/trace/azure_llm.hpp"

namespace gpubank::twin::live {

// The token counts of the Azure LLM conversation trace 2023 (19,366 requests; computed
// from ../shared in tests/twin/live/serving_test.cpp): the synthetic load's log-normal
// distributions have these medians and means.
inline constexpr double kPromptTokensMedian = 1020;
inline constexpr double kPromptTokensMean = 1154.7;
inline constexpr double kOutputTokensMedian = 129;
inline constexpr double kOutputTokensMean = 211.1;
// Caps of the draws (far in the tails: they move the means by less than 0.1 %).
inline constexpr std::int32_t kMaxPromptTokens = 32'000;
inline constexpr std::int32_t kMaxOutputTokens = 4'000;

// The token counts of a service's synthetic load: log-normal prompt and output lengths with
// these medians and means, capped.
struct TokenProfile {
  double prompt_median = 0, prompt_mean = 0;
  std::int32_t prompt_cap = 0;
  double output_median = 0, output_mean = 0;
  std::int32_t output_cap = 0;
};
// A generate service: the Azure conversation trace's (above).
inline constexpr TokenProfile kChatTokens{kPromptTokensMedian, kPromptTokensMean, kMaxPromptTokens,
                                          kOutputTokensMedian, kOutputTokensMean, kMaxOutputTokens};
// An embed service: short inputs, median 64 and mean 128 tokens, capped at the embedding
// model's 8,192; one output, the vector. An assumption (../shared holds no embeddings
// trace): a mix of search queries (tens of tokens) and document chunks (a few hundred).
inline constexpr TokenProfile kEmbedTokens{64, 128, 8'192, 1, 1, 1};
[[nodiscard]] const TokenProfile& token_profile(inference::Task task);

// An embed replica's reference rate is this share of what it finishes with every engine step
// full (max_num_batched_tokens of mean-length inputs): a batching server at half load
// answers most requests within the step after the one running, and, as for a generate
// service at batch 32, about 1.6 times the reference still holds a 200 ms p95.
inline constexpr double kEmbedReferenceBusy = 0.5;

// The batch at which a replica's capacity is taken: vLLM's max_num_seqs / 8, where a 70B
// model on 4 x H100 still decodes at ~22 ms per token.
inline constexpr int kReferenceBatch = 32;

// With replicas decided by a controller (DayOptions::ServingControl other than Planned),
// the peak hour's load is this many times maxReplicas x replica_capacity_rps (or the
// largest floor's, if higher). replica_capacity_rps is a conservative batch-32 figure: a
// twin replica of the example's 70B TP=4 service holds TTFT p95 under 1.5 s up to about
// 1.6 times it (measured: 6 replicas at 36 requests/s, p95 0.52 s; 8 at 60/s miss it), so
// 1.45 x 8 needs about 7 of the 8 replicas at the peak and the day moves between the
// tidal floor (6) and the maximum.
inline constexpr double kPeakShareOfMaxReplicas = 1.45;

// Requests per second one replica serves with a batch of kReferenceBatch mean requests (of
// the given mean token counts: the synthetic load's by default, a trace's own when a trace
// drives the service, so that a trace of long prompts is sized on its work, not its count):
// 1 / (prefill of the mean prompt alone + mean output x one decode step of the batch /
// kReferenceBatch), with the cost model's step times.
[[nodiscard]] double replica_capacity_rps(const inference::ReplicaCosts& costs, double prompt_tokens_mean = kPromptTokensMean,
                                          double output_tokens_mean = kOutputTokensMean);

// The reference rate of a replica of `service` (either task) for load of the given mean
// token counts: replica_capacity_rps for generate; for embed, kEmbedReferenceBusy x the
// requests per second of full steps (max_num_batched_tokens of inputs of the mean length).
[[nodiscard]] double service_capacity_rps(const inference::Service& service, const inference::ReplicaCosts& costs,
                                          double prompt_tokens_mean, double output_tokens_mean);

// The service the platform runs for an InferenceScalingPolicy on its pool's GPU model. A
// generate service runs Llama-3.1-70B when its weights fit in half the replica's memory,
// else Llama-3.1-8B; an embed service runs an XLM-RoBERTa-large embedding model (BAAI's
// bge-m3: 24 layers, 16 heads of 64, about 568 M parameters, 8,192 tokens), whole inputs
// in one step (pooling models take no chunked prefill).

[[nodiscard]] inference::Service service_for(const std::string& policy_name,
                                             const policy::InferenceScalingPolicySpec& spec,
                                             const std::string& gpu_model);

// One service's request stream over [0, horizon), handed over in time order.
class RequestSource {
 public:
  virtual ~RequestSource() = default;
  // Every request with arrival_ms <= t not handed over yet, in order.
  virtual std::vector<inference::Request> take_until(std::int64_t t_ms) = 0;
  // Requests over the whole horizon (known in advance for a trace, expected for a model).
  [[nodiscard]] virtual double expected_total() const = 0;
  // The same stream counted (for a model that keeps counts, inference/fluid.hpp): batches
  // up to and including t, none across a multiple of inference::kFluidSliceMs. A source
  // gives either requests or batches, not both. By default the requests of take_until,
  // counted; the seeded model draws the counts themselves (Poisson per slice, tokens at
  // the distributions' means), which is what makes a fluid week fast.
  virtual std::vector<inference::ArrivalBatch> batches_until(std::int64_t t_ms);

 protected:
  std::int64_t batched_to_ = 0;  // batches cover [0, batched_to_)
};

// Hourly rates: rates[h] is the requests per second in virtual hour h.
[[nodiscard]] std::vector<double> hourly_rates(double peak_rps, int first_local_hour, std::int64_t hours);

// How the rate moves between the hourly figures: held for each whole hour (Steps), or
// linearly from each hour's middle to the next (Linear: the hour's rate at its middle, the
// mean of two neighbouring hours at their boundary). Real traffic ramps: a step of 40 %
// on the hour, as the morning curve has, hits an autoscaler with a load no real morning
// brings. Linear keeps the day's total; an hour between a lower and a higher one keeps its
// mean too, a peak hour gives an eighth of its difference to each neighbour.
enum class RateShape { Steps, Linear };

// The seeded model: an inhomogeneous Poisson process with the hourly rates (exact: one
// unit exponential per gap spent across the intensity's integral), tokens log-normal. The
// platform's day uses Linear; Steps is the model of whole hours (calibration, tests).
[[nodiscard]] std::unique_ptr<RequestSource> synthetic_requests(std::uint64_t seed, std::vector<double> rates_per_hour,
                                                                std::int64_t horizon_ms,
                                                                const TokenProfile& tokens = kChatTokens,
                                                                RateShape shape = RateShape::Steps);

// The trace repeated over the horizon by trace::diurnal_repeat with the default curve
// rotated to start at `first_local_hour` and multiplied by `scale`; token counts of 0
// become 1 (the service needs one of each).
[[nodiscard]] Expected<std::unique_ptr<RequestSource>> trace_requests(const std::vector<trace::AzureRequest>& trace,
                                                                      std::uint64_t seed, double scale,
                                                                      int first_local_hour, std::int64_t horizon_ms);

// Requests per second of the trace's first hour (what diurnal_repeat replays at factor 1).
[[nodiscard]] double trace_rps(const std::vector<trace::AzureRequest>& trace);

// The local hour (0-23) at `start` in the policies' TidalPolicy time zone (UTC without one).
[[nodiscard]] int local_hour_at(const policy::PolicySet& policies, const Timestamp& start);

// histogram_quantile(q, ...) over vLLM's TTFT buckets given as counts per bucket (not
// cumulative; the last is +Inf), e.g. what each bucket grew by; none without observations.
[[nodiscard]] std::optional<double> ttft_quantile(double q, std::span<const std::int64_t> counts);

// A replica's share of its GPUs' work, for the telemetry's inference profile.
struct ReplicaLoad {
  double load = 0;         // tokens processed over what it processes at capacity, 0..1
  double weights_mib = 0;  // per GPU
  double kv_cache_mib = 0; // KV cache in use, per GPU
};

// What a service's GPUs can do at best, known before anything runs (the consistency check
// of `gpubank twin serving`):
//   - lone_p95_s: the first token (for embed: the vector) of a request of the load's
//     95th-percentile prompt on an idle replica, its prefill steps alone. Every request
//     waits at least its own prefill, so no replica count brings the TTFT p95 below it;
//   - max_replica_rps: requests per second one replica finishes at best (embed: every
//     step a full max_num_batched_tokens of mean inputs; generate: mean requests decoded
//     in batches of max_num_seqs, their prefill compute alone), an upper bound;
//   - peak_rps: the load's peak hour.
// `reachable` is false when the target is below lone_p95_s or the peak above maxReplicas
// x max_replica_rps; `why` then says which, with the numbers.
struct ServingFeasibility {
  std::string policy, task, gpu_model, model;
  int tensor_parallel_size = 1, max_replicas = 0;
  std::optional<double> target_s;  // scaleUp.ttftP95
  std::optional<double> rate_target;  // scaleUp.requestsPerSecondPerReplica
  std::int64_t p95_prompt_tokens = 0;
  double lone_p95_s = 0, max_replica_rps = 0, peak_rps = 0;
  bool reachable = true;
  std::string why;
  // A rate target above what one replica finishes at best: a saturated service's rate is
  // below target x replicas, so the rate signal asks for fewer replicas, never more.
  std::string rate_warning;
};
// Rule id of the consistency check's warnings.
inline constexpr std::string_view kRuleSloUnreachable = "serving.slo-unreachable";
[[nodiscard]] nlohmann::ordered_json feasibility_json(const ServingFeasibility& f);

class Serving {
 public:
  // One service per InferenceScalingPolicy whose pool and group exist; `trace` (may be
  // null) replaces the synthetic model. `placement`: the engine places pods (a Placed event
  // starts a replica), else admission does (Admitted).
  static Expected<std::unique_ptr<Serving>> create(const policy::PolicySet& policies, const run::Scenario& scenario,
                                                   const DayOptions& day, const std::vector<trace::AzureRequest>* trace,
                                                   bool placement);

  // Follows the engine: the events not seen yet, in order, moving the services to each
  // replica change; then every service to `t`.
  bool advance_to(std::span<const run::Event> events, VirtualTime t);

  // The load of the replica running as workload `key` ("namespace/name"), if any.
  [[nodiscard]] std::optional<ReplicaLoad> load_of(const std::string& key) const;
  // vLLM's families of every service merged (one family per name, services in policy
  // order), plus gpubank_inference_requests_cut_total{model_name}.
  [[nodiscard]] std::vector<metrics::Family> families() const;
  [[nodiscard]] nlohmann::ordered_json json() const;

  struct Stats {
    std::string policy, model_name;
    double peak_rps = 0, expected_requests = 0;
    int peak_replicas = 0;
    inference::ServiceSnapshot snapshot;
    std::optional<double> ttft_p95_s;  // over the last kTtftWindowMs
  };
  [[nodiscard]] std::vector<Stats> stats() const;

  // ---- what a serving controller (elastic.hpp) reads and does ----
  // Replica workloads created while the day runs (by the autoscaler): `key` serves
  // `policy`'s service and is ready `startup_ms` after its pod starts. Errors: an unknown
  // policy, a key adopted already.
  Expected<bool> adopt(const std::string& key, const std::string& policy, std::int64_t startup_ms);
  struct ReplicaStatus {
    std::string workload;
    inference::ReplicaSnapshot snapshot;
  };
  // The live replicas of the policy's service (pod started, not gone), by workload key.
  [[nodiscard]] std::vector<ReplicaStatus> replicas_of(const std::string& policy) const;
  // What each live replica's vLLM counts so far, all replicas of every service: its tokens
  // (prompt and generated) and its TTFT bucket counts (not cumulative, the last is +Inf).
  struct ReplicaCounters {
    std::string workload;  // the replica's workload key
    std::int64_t tokens = 0;
    std::vector<std::int64_t> ttft_buckets;
    std::int64_t in_flight = 0;  // requests running or waiting now (vllm:num_requests_running + _waiting)
  };
  [[nodiscard]] std::vector<ReplicaCounters> counters() const;
  // Each live replica's name (the `replica` label of its vLLM series) and workload key.
  [[nodiscard]] std::map<std::string, std::string> replica_workloads() const;
  // Router weight 0, no new requests; the ones in flight finish (drain).
  Expected<bool> start_drain(const std::string& key);
  // The vLLM families of the policy's service (what its pods' /metrics would show).
  [[nodiscard]] metrics::Exposition exposition_of(const std::string& policy,
                                                  const inference::VllmExpositionOptions& options = {}) const;
  // What read_vllm(exposition_of(policy, {autoscaling_signals_only}), t, {itl = false})
  // gives, built from the replicas' state without the page in between: the autoscaler's
  // scrape every 15 s of virtual time (tests/twin/live/serving_test.cpp holds the two equal).
  [[nodiscard]] serving::Scrape scrape_of(const std::string& policy, std::int64_t t_ms) const;
  [[nodiscard]] std::vector<std::string> policies() const;
  // The model name a replica workload's vLLM serves (served_model_name), if it is one.
  [[nodiscard]] std::optional<std::string> model_of(const std::string& key) const;
  [[nodiscard]] std::int64_t router_waiting(const std::string& policy) const;
  // Requests per second that arrived in the last whole minute before t_ms (nullopt before
  // the first minute ends, or for an unknown policy).
  [[nodiscard]] std::optional<double> arrival_rps(const std::string& policy, std::int64_t t_ms) const;
  // Requests per second one ready replica of the policy's service takes at the reference
  // batch (replica_capacity_rps); 0 for an unknown policy.
  [[nodiscard]] double replica_rps(const std::string& policy) const;

  // TTFT SLO attainment by minute of arrival: a minute is within target when the 95th
  // percentile (nearest rank) of the TTFT of the requests that arrived in it is at most
  // the target. The minutes counted lie within [from_ms, until_ms). A request without a
  // first token by `answered_by_ms` (default: until_ms; still queued, cut by a removed
  // replica, rejected) counts as above any target. Minutes without arrivals are not
  // counted.
  struct Slo {
    std::int64_t minutes = 0, within = 0;
    std::int64_t requests = 0, unanswered = 0;
    [[nodiscard]] double attainment() const { return minutes == 0 ? 1.0 : static_cast<double>(within) / minutes; }
  };
  [[nodiscard]] Slo slo(const std::string& policy, std::int64_t target_ms, std::int64_t from_ms,
                        std::int64_t until_ms, std::optional<std::int64_t> answered_by_ms = std::nullopt) const;

  static constexpr std::int64_t kTtftWindowMs = 5 * 60'000;

  // Per service, in policy order: what its GPUs can do at best against its target and load.
  [[nodiscard]] const std::vector<ServingFeasibility>& feasibility() const { return feasibility_; }

 private:
  struct Replica {
    inference::ReplicaId id = 0;
    std::string workload;  // namespace/name
    std::int64_t tokens_at_last_advance = 0;
    ReplicaLoad load;
  };
  struct Live {
    std::string policy;
    std::string workload_ref;
    int peak_replicas = 0;  // what the load is sized for
    int observed_peak = 0;  // the most live replicas at once
    double replica_rps = 0;  // replica_capacity_rps with the load's token means
    double peak_rps = 0;
    double capacity_tokens_per_ms = 0;
    std::unique_ptr<inference::ServiceModel> service;
    std::unique_ptr<RequestSource> source;
    std::map<std::string, Replica> replicas;  // by workload key, live ones
    std::map<std::string, std::int64_t> startup_ms;  // replica workload -> startupTime
    // Summed TTFT bucket counts (all replicas ever) at the end of recent advances.
    std::deque<std::pair<std::int64_t, std::vector<std::int64_t>>> ttft_history;
    std::vector<std::int64_t> arrivals_per_minute;  // by arrival minute
  };
  [[nodiscard]] const Live* find_service(const std::string& policy) const;

  Serving() = default;
  bool move_to(Live& s, std::int64_t t);
  [[nodiscard]] std::vector<std::int64_t> ttft_buckets(const Live& s) const;
  [[nodiscard]] std::optional<double> ttft_p95(const Live& s) const;

  std::vector<Live> services_;
  std::vector<ServingFeasibility> feasibility_;
  std::map<std::string, std::size_t> service_of_;  // replica workload key -> services_ index
  std::string start_kind_;                          // the event that starts a replica
  std::size_t events_seen_ = 0;
  std::int64_t now_ = 0;
};

}  // namespace gpubank::twin::live
