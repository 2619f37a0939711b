#include "twin/inference/vllm_metrics.hpp"

#include <algorithm>
#include <cmath>

#include "metrics/number.hpp"

namespace gpubank::twin::inference {

namespace {

using metrics::Family;
using metrics::Label;
using metrics::MetricType;
using metrics::Sample;

constexpr double kUsPerSecond = 1e6;

std::vector<Label> base_labels(std::string_view model_name, const VllmExpositionOptions& options,
                               const VllmReplicaSeries& replica) {
  std::vector<Label> labels{{"model_name", std::string(model_name)}, {"engine", options.engine}};
  if (!options.replica_label.empty()) labels.push_back({options.replica_label, replica.replica});
  return labels;
}

Family gauge(std::string_view name, std::string_view help, std::string_view model_name,
             std::span<const VllmReplicaSeries> replicas, const VllmExpositionOptions& options,
             double (*value)(const VllmReplicaSeries&)) {
  Family f{std::string(name), MetricType::gauge, std::string(help), {}};
  for (const auto& r : replicas) f.samples.push_back({f.name, base_labels(model_name, options, r), value(r), {}});
  return f;
}

Family counter(std::string_view name, std::string_view help, std::string_view model_name,
               std::span<const VllmReplicaSeries> replicas, const VllmExpositionOptions& options,
               std::int64_t VllmCounters::*field) {
  Family f{std::string(name), MetricType::counter, std::string(help), {}};
  for (const auto& r : replicas) {
    f.samples.push_back({f.name, base_labels(model_name, options, r), static_cast<double>(r.counters->*field), {}});
  }
  return f;
}

Family histogram(std::string_view name, std::string_view help, std::string_view model_name,
                 std::span<const VllmReplicaSeries> replicas, const VllmExpositionOptions& options,
                 DurationHistogram VllmCounters::*field) {
  Family f{std::string(name), MetricType::histogram, std::string(help), {}};
  for (const auto& r : replicas) {
    const DurationHistogram& h = r.counters->*field;
    const auto labels = base_labels(model_name, options, r);
    std::int64_t cumulative = 0;
    const auto bounds = h.bounds_seconds();
    for (std::size_t i = 0; i <= bounds.size(); ++i) {
      cumulative += h.bucket_counts()[i];
      std::vector<Label> bucket_labels;
      bucket_labels.reserve(labels.size() + 1);
      bucket_labels = labels;
      bucket_labels.push_back({"le", i < bounds.size() ? python_float(bounds[i]) : std::string("+Inf")});
      f.samples.push_back({f.name + "_bucket", std::move(bucket_labels), static_cast<double>(cumulative), {}});
    }
    f.samples.push_back({f.name + "_count", labels, static_cast<double>(h.count()), {}});
    f.samples.push_back({f.name + "_sum", labels, static_cast<double>(h.sum_us()) / kUsPerSecond, {}});
  }
  return f;
}

Family request_success(std::string_view model_name, std::span<const VllmReplicaSeries> replicas,
                        const VllmExpositionOptions& options) {
  Family success{std::string(kRequestSuccessTotal), MetricType::counter, "Count of successfully processed requests.",
                 {}};
  for (const auto& r : replicas) {
    for (std::size_t i = 0; i < kFinishedReasons.size(); ++i) {
      std::vector<Label> labels{{"model_name", std::string(model_name)},
                                {"engine", options.engine},
                                {"finished_reason", std::string(kFinishedReasons[i])}};
      if (!options.replica_label.empty()) labels.push_back({options.replica_label, r.replica});
      success.samples.push_back(
          {success.name, std::move(labels), static_cast<double>(r.counters->request_success[i]), {}});
    }
  }
  return success;
}

}  // namespace

DurationHistogram::DurationHistogram(std::span<const double> bounds_seconds)
    : bounds_seconds_(bounds_seconds), counts_(bounds_seconds.size() + 1, 0) {
  bounds_us_.reserve(bounds_seconds.size());
  for (double b : bounds_seconds) bounds_us_.push_back(std::llround(b * kUsPerSecond));
}

void DurationHistogram::observe(std::int64_t us, std::int64_t n) {
  if (n <= 0) return;
  // The first bound >= us: an observation equal to a bound counts in that bucket (le).
  const auto it = std::lower_bound(bounds_us_.begin(), bounds_us_.end(), us);
  counts_[static_cast<std::size_t>(it - bounds_us_.begin())] += n;
  count_ += n;
  sum_us_ += us * n;
}

std::string python_float(double value) {
  std::string s = metrics::format_value(value);
  if (std::isfinite(value) && s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

metrics::Exposition vllm_exposition(std::string_view model_name, std::span<const VllmReplicaSeries> replicas,
                                    const VllmExpositionOptions& options) {
  metrics::Exposition e;
  auto& out = e.families;
  if (options.autoscaling_signals_only) {  // what an autoscaler scrape reads, in the same order
    out.push_back(gauge(kKvCacheUsagePerc, "KV-cache usage. 1 means 100 percent usage.", model_name, replicas, options,
                        [](const VllmReplicaSeries& r) { return r.kv_cache_usage; }));
    out.push_back(gauge(kNumRequestsRunning, "Number of requests in model execution batches.", model_name, replicas,
                        options, [](const VllmReplicaSeries& r) { return static_cast<double>(r.running); }));
    out.push_back(gauge(kNumRequestsWaiting, "Number of requests waiting to be processed.", model_name, replicas,
                        options, [](const VllmReplicaSeries& r) { return static_cast<double>(r.waiting); }));
    out.push_back(histogram(kTimeToFirstTokenSeconds, "Histogram of time to first token in seconds.", model_name,
                            replicas, options, &VllmCounters::time_to_first_token));
    out.push_back(request_success(model_name, replicas, options));
    return e;
  }
  out.push_back(histogram(kE2eRequestLatencySeconds, "Histogram of e2e request latency in seconds.", model_name,
                          replicas, options, &VllmCounters::e2e_request_latency));
  out.push_back(counter(kGenerationTokensTotal, "Number of generation tokens processed.", model_name, replicas,
                        options, &VllmCounters::generation_tokens));
  if (options.gpu_cache_usage) {
    out.push_back(gauge(kGpuCacheUsagePerc,
                        "GPU KV-cache usage. 1 means 100 percent usage.DEPRECATED: Use vllm:kv_cache_usage_perc "
                        "instead.",
                        model_name, replicas, options, [](const VllmReplicaSeries& r) { return r.kv_cache_usage; }));
  }
  out.push_back(histogram(kInterTokenLatencySeconds, "Histogram of inter-token latency in seconds.", model_name,
                          replicas, options, &VllmCounters::inter_token_latency));
  out.push_back(gauge(kKvCacheUsagePerc, "KV-cache usage. 1 means 100 percent usage.", model_name, replicas, options,
                      [](const VllmReplicaSeries& r) { return r.kv_cache_usage; }));
  out.push_back(counter(kNumPreemptionsTotal, "Cumulative number of preemption from the engine.", model_name,
                        replicas, options, &VllmCounters::preemptions));
  out.push_back(gauge(kNumRequestsRunning, "Number of requests in model execution batches.", model_name, replicas,
                      options, [](const VllmReplicaSeries& r) { return static_cast<double>(r.running); }));
  out.push_back(gauge(kNumRequestsWaiting, "Number of requests waiting to be processed.", model_name, replicas,
                      options, [](const VllmReplicaSeries& r) { return static_cast<double>(r.waiting); }));
  out.push_back(counter(kPromptTokensTotal, "Number of prefill tokens processed.", model_name, replicas, options,
                        &VllmCounters::prompt_tokens));

  out.push_back(request_success(model_name, replicas, options));

  if (options.time_per_output_token) {
    out.push_back(histogram(kTimePerOutputTokenSeconds,
                            "Histogram of time per output token in seconds.DEPRECATED: Use "
                            "vllm:inter_token_latency_seconds instead.",
                            model_name, replicas, options, &VllmCounters::inter_token_latency));
  }
  out.push_back(histogram(kTimeToFirstTokenSeconds, "Histogram of time to first token in seconds.", model_name,
                          replicas, options, &VllmCounters::time_to_first_token));
  return e;
}

}  // namespace gpubank::twin::inference
