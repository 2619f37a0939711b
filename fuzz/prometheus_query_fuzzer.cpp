// Fuzzes the autoscaler's readers of its signals: read_prometheus_query (a /api/v1/query
// response body) and, on the same bytes, read_vllm_text (a vLLM /metrics page), then the
// SignalWindow and from_prometheus over what they return. Whatever the input: no crash, no
// undefined behaviour, and an error is one line of UTF-8 ending with its [rule]. What is
// read keeps its promises: at most kPromMaxSamples samples with non-negative times;
// replicas sorted and unique, counts non-negative, KV usage within [0, 1], buckets sorted
// with +Inf last.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "core/utf8.hpp"
#include "serving/signals.hpp"

namespace {

using namespace gpubank::serving;

[[noreturn]] void fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "\nprometheus_query_fuzzer: %s\n%s\n", what, detail.c_str());
  std::fflush(stderr);
  __builtin_trap();
}

void check_error(const std::string& message) {
  if (message.empty() || message.find('\n') != std::string::npos || !gpubank::is_utf8(message) ||
      !message.ends_with("]")) {
    fail("malformed error message", message);
  }
}

void check_buckets(const std::vector<gpubank::metrics::Bucket>& buckets, const std::string& replica) {
  if (buckets.empty()) return;
  for (std::size_t i = 0; i < buckets.size(); ++i) {
    if (std::isnan(buckets[i].count) || buckets[i].count < 0 || std::isinf(buckets[i].count)) {
      fail("a bucket count that should have been refused", replica);
    }
    if (i > 0 && !(buckets[i - 1].upper_bound < buckets[i].upper_bound)) fail("buckets not sorted", replica);
  }
  if (!std::isinf(buckets.back().upper_bound)) fail("buckets without +Inf last", replica);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  const auto samples = read_prometheus_query(text);
  if (!samples) {
    check_error(samples.error());
  } else {
    if (samples->size() > kPromMaxSamples) fail("more samples than the limit", std::to_string(samples->size()));
    for (const PromSample& s : *samples) {
      if (s.t_ms < 0) fail("a negative time", std::to_string(s.t_ms));
    }
    PrometheusResults results;
    results.queue_depth = *samples;
    results.ttft_p95 = *samples;
    results.kv_cache = *samples;
    results.pods_reporting = *samples;
    const auto o = from_prometheus(results);
    if (!o) {
      check_error(o.error());
    } else if (o->kv_cache_usage && !(*o->kv_cache_usage >= 0 && *o->kv_cache_usage <= 1)) {
      fail("a KV usage outside [0, 1]", std::to_string(*o->kv_cache_usage));
    }
  }

  ScrapeOptions options;
  options.model_name = size % 2 == 0 ? "m" : "";
  const auto scrape = read_vllm_text(text, 1000, options);
  if (!scrape) {
    check_error(scrape.error());
    return 0;
  }
  for (std::size_t i = 0; i < scrape->replicas.size(); ++i) {
    const ReplicaSignals& r = scrape->replicas[i];
    if (i > 0 && !(scrape->replicas[i - 1].replica < r.replica)) fail("replicas not sorted and unique", r.replica);
    if (r.waiting && !(*r.waiting >= 0 && std::isfinite(*r.waiting))) fail("a bad waiting count", r.replica);
    if (r.running && !(*r.running >= 0 && std::isfinite(*r.running))) fail("a bad running count", r.replica);
    if (r.kv_cache_usage && !(*r.kv_cache_usage >= 0 && *r.kv_cache_usage <= 1)) fail("a bad KV usage", r.replica);
    check_buckets(r.ttft_buckets, r.replica);
    check_buckets(r.itl_buckets, r.replica);
  }
  // Two scrapes of the same page: rates of zero, so the quantile is NaN and reads nothing.
  SignalWindow window;
  Scrape later = *scrape;
  later.t_ms = 16'000;
  if (!window.add(*scrape).ok() || !window.add(later).ok()) fail("SignalWindow refused ordered scrapes", "");
  const Observation o = window.observe();
  if (o.ttft_p95_s) fail("a TTFT quantile without any requests in the window", std::to_string(*o.ttft_p95_s));
  (void)window.quantile(0.5, true);
  return 0;
}
