// What the inference autoscaler sees: vLLM's serving signals per replica, read from a
// /metrics page (the text format) or from Prometheus' query API, and a window of scrapes
// that turns them into one Observation per sync: queue depth, running requests, KV-cache
// usage, TTFT p95 and the rate of finished requests.
//
// TTFT p95 is computed exactly as Prometheus computes the query gpubank renders for KEDA
// (docs/render-scaling.md):
//   histogram_quantile(0.95, sum by (le) (rate(vllm:time_to_first_token_seconds_bucket[w])))
// rate() per replica and bucket (each its own series, with its own counter resets and its own
// extrapolation; metrics/histogram.hpp is PromQL 2.42's arithmetic), the rates summed per le
// over the replicas that have one, then bucket_quantile. tests/serving/ttft_promtool_test.cpp
// compares it with promtool. Two differences remain, both documented where they arise:
// Prometheus adds the replicas' rates in its storage order, which a test file cannot fix (a
// sum of three or more can differ from ours in the last bit); and several engines of one
// replica are summed into one series here before rate(), where Prometheus keeps a series
// per engine.
//
// Pure: no clocks, files or sockets; the caller scrapes and passes the text and the time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/expected.hpp"
#include "metrics/exposition.hpp"
#include "metrics/histogram.hpp"

namespace gpubank::serving {

// Rule ids of the errors below (parse errors keep the text parser's metrics.text.* ids).
inline constexpr std::string_view kRuleSignalValue = "serving.signal-value";        // negative, NaN, KV outside [0, 1]
inline constexpr std::string_view kRuleSignalType = "serving.signal-type";          // a family of the wrong TYPE
inline constexpr std::string_view kRuleReplicaLabel = "serving.replica-label";      // a series without the replica label
inline constexpr std::string_view kRuleHistogram = "serving.histogram";             // buckets without +Inf
inline constexpr std::string_view kRuleScrapeOrder = "serving.scrape-order";        // SignalWindow::add out of order
inline constexpr std::string_view kRulePromStatus = "serving.prometheus-status";    // "status": "error"
inline constexpr std::string_view kRulePromJson = "serving.prometheus-json";        // not JSON
inline constexpr std::string_view kRulePromShape = "serving.prometheus-shape";      // a field missing or of a wrong type
inline constexpr std::string_view kRulePromValue = "serving.prometheus-value";      // not a Prometheus number
inline constexpr std::string_view kRulePromTooLarge = "serving.prometheus-too-large";  // body or sample count

// vLLM's family names (vllm/v1/metrics/loggers.py). The deprecated names are still served
// by vLLM releases that renamed them, alone or beside the new name.
inline constexpr std::string_view kWaiting = "vllm:num_requests_waiting";
inline constexpr std::string_view kRunning = "vllm:num_requests_running";
inline constexpr std::string_view kKvCacheUsage = "vllm:kv_cache_usage_perc";
inline constexpr std::string_view kKvCacheUsageDeprecated = "vllm:gpu_cache_usage_perc";
inline constexpr std::string_view kTtft = "vllm:time_to_first_token_seconds";
inline constexpr std::string_view kItl = "vllm:inter_token_latency_seconds";
inline constexpr std::string_view kItlDeprecated = "vllm:time_per_output_token_seconds";
inline constexpr std::string_view kRequestSuccess = "vllm:request_success_total";

// A KV usage this far outside [0, 1] is rounding (vLLM divides block counts); it is
// clamped. Further out is an error.
inline constexpr double kKvUsageEpsilon = 1e-6;

// One replica at one scrape. A signal the page did not carry is nullopt (or empty buckets).
struct ReplicaSignals {
  std::string replica;
  std::optional<double> waiting, running;
  std::optional<double> kv_cache_usage;  // 0..1
  std::vector<metrics::Bucket> ttft_buckets;  // cumulative, sorted by bound, +Inf last
  std::vector<metrics::Bucket> itl_buckets;   // the same, inter-token latency
  std::optional<double> requests_finished;    // vllm:request_success_total, over engines and finished reasons
  friend bool operator==(const ReplicaSignals&, const ReplicaSignals&) = default;
};

struct Scrape {
  std::int64_t t_ms = 0;
  std::vector<ReplicaSignals> replicas;  // sorted by name, each once
  friend bool operator==(const Scrape&, const Scrape&) = default;
};

struct ScrapeOptions {
  std::string model_name;                // "": any; else series of other model_names are ignored
  std::string replica_label = "replica";  // "": one replica per page, as a real vLLM pod serves it
  std::string page_replica;               // with replica_label "": that replica's name
  bool itl = true;                        // read the inter-token latency histogram too
};

// The replicas of one /metrics page. Per replica (the value of replica_label): waiting and
// running summed over its engines (label "engine"), the KV gauge averaged over them (each
// engine reports its own cache's usage) under vllm:kv_cache_usage_perc or, when a replica
// has no series of that name, vllm:gpu_cache_usage_perc; TTFT and ITL buckets summed per
// bound over the engines (ITL from vllm:inter_token_latency_seconds, else
// vllm:time_per_output_token_seconds); vllm:request_success_total summed over engines and
// finished reasons (a counter: a reset of one of them within a scrape interval reads as a
// smaller drop than Prometheus' per-series rate sees). Unknown families are ignored, and so are series of
// another model_name. Errors name the family, the series and the rule: a parse error (as
// metrics::parse_text reports it), a family of another TYPE (gauges may be untyped), a
// negative, infinite or NaN count, a KV usage outside [0, 1] (beyond kKvUsageEpsilon), a
// histogram without a +Inf bucket, a series without replica_label when one is set, a
// request counter that is not a counter (or untyped).
[[nodiscard]] Expected<Scrape> read_vllm_text(std::string_view text, std::int64_t t_ms, const ScrapeOptions& options);
// The same for a page already parsed (or built: the twin hands its services' exposition
// over without a text round trip, which tests/serving/signals_test.cpp checks equal).
[[nodiscard]] Expected<Scrape> read_vllm(const metrics::Exposition& page, std::int64_t t_ms, const ScrapeOptions& options);

// One sample of a Prometheus instant query result.
struct PromSample {
  std::map<std::string, std::string> labels;
  double value = 0;
  std::int64_t t_ms = 0;
  friend bool operator==(const PromSample&, const PromSample&) = default;
};

inline constexpr std::size_t kPromMaxBodyBytes = std::size_t{8} << 20;
inline constexpr std::size_t kPromMaxSamples = 100'000;

// The body of a /api/v1/query response,
//   {"status":"success","data":{"resultType":"vector","result":[{"metric":{...},"value":[1718000000.5,"42"]}]}}
// or resultType "scalar" with "result":[<time>,"<value>"] (one sample without labels).
// Times are Unix seconds with up to millisecond precision (Prometheus writes three
// decimals at most); values strings as Prometheus writes them: decimal numbers, "NaN",
// "+Inf", "-Inf". Errors: "status":"error" (its errorType and error quoted), malformed
// JSON, a missing field or one of a wrong type, resultType matrix or string, a sample
// without a float value (native histograms), a value or time that is not a number, a
// negative time, a body over kPromMaxBodyBytes, more than kPromMaxSamples samples.
[[nodiscard]] Expected<std::vector<PromSample>> read_prometheus_query(std::string_view json_body);

// The autoscaler's view at one instant. A signal no replica reported is nullopt.
struct Observation {
  std::int64_t t_ms = 0;
  int replicas_reporting = 0;
  std::optional<double> queue_depth;     // sum of waiting
  std::optional<double> running;         // sum of running
  std::optional<double> kv_cache_usage;  // mean over the replicas reporting it, 0..1
  std::optional<double> ttft_p95_s;      // PromQL's histogram_quantile over the window
  // The TTFT histogram is there but no request got a first token in the window (PromQL's
  // quantile is NaN): no load, which is not a missing signal. ttft_p95_s is then nullopt.
  bool ttft_idle = false;
  // Requests finished per second over the window: sum(rate(vllm:request_success_total[w])).
  // What the replicas serve, which is what arrives while they keep up; a saturated
  // service's is its capacity (the queue and TTFT see the rest).
  std::optional<double> request_rate;
  friend bool operator==(const Observation&, const Observation&) = default;
};

// The scrapes of the last retain_ms, which is also the rate window `[retain_ms]`.
class SignalWindow {
 public:
  explicit SignalWindow(std::int64_t retain_ms = 120'000);

  // A scrape strictly after the newest one (kRuleScrapeOrder otherwise, and nothing
  // changes); scrapes that fall out of the window are dropped.
  Expected<std::monostate> add(Scrape scrape);

  // At the newest scrape (a default Observation when there is none):
  // - replicas_reporting: the replicas in the newest scrape;
  // - queue_depth, running: sums over the replicas of the newest scrape that report them;
  //   kv_cache_usage their mean; nullopt when none does;
  // - ttft_p95_s: histogram_quantile(0.95, sum by (le) (rate(ttft_bucket[retain_ms]))) at
  //   the newest scrape's time: every replica of every retained scrape is a series (one
  //   that left still counts while two of its scrapes lie in the window, as in PromQL),
  //   rates are summed per bound in replica-name order, nullopt when no bucket has a rate
  //   or the quantile is NaN (no requests in the window);
  // - ttft_idle: buckets have rates but every rate is 0 (the NaN case: nothing arrived);
  // - request_rate: sum(rate(vllm:request_success_total[retain_ms])), each replica a
  //   series, summed in replica-name order; nullopt when no replica has a rate (fewer
  //   than two scrapes of its counter in the window).
  [[nodiscard]] Observation observe() const;

  // The same quantile for any q and either histogram (ITL with itl = true).
  [[nodiscard]] std::optional<double> quantile(double q, bool itl = false) const;

  [[nodiscard]] std::int64_t retain_ms() const { return retain_ms_; }
  [[nodiscard]] const std::deque<Scrape>& scrapes() const { return scrapes_; }

 private:
  // The quantile, and whether any bucket had a rate at all (a NaN with rates is idle).
  [[nodiscard]] std::optional<double> quantile_of(double q, bool itl, bool* had_rates) const;
  [[nodiscard]] std::optional<double> request_rate() const;

  std::int64_t retain_ms_;
  std::deque<Scrape> scrapes_;
};

// The results of docs/render-scaling.md's queries at one instant, each as
// read_prometheus_query returned it.
struct PrometheusResults {
  std::int64_t t_ms = 0;
  std::vector<PromSample> queue_depth;     // sum(vllm:num_requests_waiting{...})
  std::vector<PromSample> ttft_p95;        // histogram_quantile(0.95, sum by (le) (rate(..._bucket{...}[2m])))
  std::vector<PromSample> kv_cache;        // sum(avg by (pod) (kv_cache_usage_perc) or avg by (pod) (gpu_cache_usage_perc))
  std::vector<PromSample> pods_reporting;  // count(count by (pod) (vllm:num_requests_waiting{...}))
  std::optional<std::vector<PromSample>> running;  // sum(vllm:num_requests_running{...}), when queried
  std::optional<std::vector<PromSample>> request_rate;  // sum(rate(vllm:request_success_total{...}[2m])), when queried
};

// The Observation those results describe: an empty result is a missing signal (where KEDA
// reads 0), a NaN TTFT is no requests in the window (ttft_idle); kv_cache_usage is the sum of the pods'
// averages divided by the pods reporting; request_rate the rate query's value. Errors (kRulePromShape, kRulePromValue): a result
// of more than one sample (each query aggregates to one, as KEDA requires), a negative or
// non-finite count, a KV mean outside [0, 1].
[[nodiscard]] Expected<Observation> from_prometheus(const PrometheusResults& results);

}  // namespace gpubank::serving
