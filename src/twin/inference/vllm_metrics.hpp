// vLLM's Prometheus metric families for the twin's inference replicas: the names, types,
// label names, HELP texts and bucket bounds of vLLM 0.11's V1 engine
// (vllm/v1/metrics/loggers.py, PrometheusStatLogger), so that the autoscaler, the rules
// and the dashboards read the twin exactly as they read a real vLLM pod.
//
// The accumulators keep times in integer microseconds, so the cumulative counts and sums
// are exact whatever order or batching the model observes them in; they are converted to
// seconds only when exposed.
//
// vLLM serves one replica per /metrics target and Prometheus tells replicas apart by the
// target labels it adds (pod, instance). The twin exposes every replica in one text, so
// each series carries one more label naming the replica (docs/metrics-contract.md).
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "metrics/exposition.hpp"

namespace gpubank::twin::inference {

// Bucket bounds in seconds, as in loggers.py.
inline constexpr std::array<double, 22> kTtftBucketsSeconds{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,
                                                            0.25,  0.5,   0.75, 1.0,  2.5,  5.0,  7.5,  10.0,
                                                            20.0,  40.0,  80.0, 160.0, 640.0, 2560.0};
inline constexpr std::array<double, 19> kItlBucketsSeconds{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2,  0.3,  0.4, 0.5,
                                                           0.75, 1.0,   2.5,  5.0,   7.5, 10.0, 20.0, 40.0, 80.0};
inline constexpr std::array<double, 21> kE2eBucketsSeconds{0.3,  0.5,  0.8,  1.0,   1.5,   2.0,   2.5,
                                                           5.0,  10.0, 15.0, 20.0,  30.0,  40.0,  50.0,
                                                           60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};

// vLLM's FinishReason strings (vllm/v1/engine/__init__.py); every child exists from the start.
inline constexpr std::array<std::string_view, 3> kFinishedReasons{"stop", "length", "abort"};

// A cumulative histogram of durations in microseconds over fixed bounds in seconds (each a
// whole number of microseconds).
class DurationHistogram {
 public:
  explicit DurationHistogram(std::span<const double> bounds_seconds);
  // `n` observations of `us` each.
  void observe(std::int64_t us, std::int64_t n = 1);
  [[nodiscard]] std::span<const double> bounds_seconds() const { return bounds_seconds_; }
  // Observations per bucket, not cumulative; the last entry is +Inf.
  [[nodiscard]] const std::vector<std::int64_t>& bucket_counts() const { return counts_; }
  [[nodiscard]] std::int64_t count() const { return count_; }
  [[nodiscard]] std::int64_t sum_us() const { return sum_us_; }

 private:
  std::span<const double> bounds_seconds_;
  std::vector<std::int64_t> bounds_us_;
  std::vector<std::int64_t> counts_;
  std::int64_t count_ = 0;
  std::int64_t sum_us_ = 0;
};

// Everything cumulative one vLLM engine counts over its life.
struct VllmCounters {
  DurationHistogram time_to_first_token{kTtftBucketsSeconds};
  DurationHistogram inter_token_latency{kItlBucketsSeconds};
  DurationHistogram e2e_request_latency{kE2eBucketsSeconds};
  std::int64_t prompt_tokens = 0;
  std::int64_t generation_tokens = 0;
  std::int64_t preemptions = 0;
  std::array<std::int64_t, kFinishedReasons.size()> request_success{};  // by kFinishedReasons
};

// One replica at a scrape.
struct VllmReplicaSeries {
  std::string replica;  // the value of the distinguishing label
  std::int64_t running = 0;
  std::int64_t waiting = 0;
  double kv_cache_usage = 0;  // 0..1
  const VllmCounters* counters = nullptr;
};

struct VllmExpositionOptions {
  std::string engine = "0";                 // the data-parallel engine index vLLM writes
  std::string replica_label = "replica";    // "" leaves the label out (one replica per text)
  // vLLM 0.11 still shows the deprecated ITL histogram under its old name by default; the
  // KV gauge's old name only with --show-hidden-metrics-for-version=0.10.
  bool time_per_output_token = true;
  bool gpu_cache_usage = false;
  // Only the families an autoscaler scrape reads (KV cache, running, waiting, TTFT, finished
  // requests), same
  // names, labels and values: the twin's controllers scrape every 15 s.
  bool autoscaling_signals_only = false;
};

// Family names as the text format carries them (counters with their _total).
inline constexpr std::string_view kNumRequestsRunning = "vllm:num_requests_running";
inline constexpr std::string_view kNumRequestsWaiting = "vllm:num_requests_waiting";
inline constexpr std::string_view kKvCacheUsagePerc = "vllm:kv_cache_usage_perc";
inline constexpr std::string_view kGpuCacheUsagePerc = "vllm:gpu_cache_usage_perc";
inline constexpr std::string_view kNumPreemptionsTotal = "vllm:num_preemptions_total";
inline constexpr std::string_view kPromptTokensTotal = "vllm:prompt_tokens_total";
inline constexpr std::string_view kGenerationTokensTotal = "vllm:generation_tokens_total";
inline constexpr std::string_view kRequestSuccessTotal = "vllm:request_success_total";
inline constexpr std::string_view kTimeToFirstTokenSeconds = "vllm:time_to_first_token_seconds";
inline constexpr std::string_view kTimePerOutputTokenSeconds = "vllm:time_per_output_token_seconds";
inline constexpr std::string_view kInterTokenLatencySeconds = "vllm:inter_token_latency_seconds";
inline constexpr std::string_view kE2eRequestLatencySeconds = "vllm:e2e_request_latency_seconds";

// The families, sorted by name, each with one child per replica in the given order (and
// per finished_reason for request_success). Labels: model_name, engine, [finished_reason],
// the replica label, and le last; le values are written as Python writes floats ("1.0"),
// as vLLM's prometheus_client does. No _created series: the twin has no wall clock.
[[nodiscard]] metrics::Exposition vllm_exposition(std::string_view model_name,
                                                  std::span<const VllmReplicaSeries> replicas,
                                                  const VllmExpositionOptions& options = {});

// A bound as Python's repr(float) writes it: "0.001", "1.0", "2560.0".
[[nodiscard]] std::string python_float(double value);

}  // namespace gpubank::twin::inference
