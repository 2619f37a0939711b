#include "twin/inference/vllm_metrics.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "metrics/histogram.hpp"
#include "metrics/number.hpp"
#include "metrics/text_parser.hpp"
#include "support/promtool.hpp"
#include "twin/inference/load.hpp"
#include "twin/inference/service.hpp"

namespace gpubank::twin::inference {
namespace {

using metrics::MetricType;

InferenceService make(ServiceOptions options = {}) {
  Service s;
  s.name = "chat";
  Diagnostics findings;
  auto service = InferenceService::create(std::move(s), findings, options);
  EXPECT_TRUE(service.has_value());
  return std::move(*service);
}

std::string scrape(const InferenceService& s) {
  auto text = metrics::write_text(s.exposition());
  EXPECT_TRUE(text.ok()) << text.error();
  return text.ok() ? *text : std::string();
}

TEST(VllmMetrics, FamiliesAsVllmNamesThem) {
  auto s = make();
  s.add_replica({"chat-0", 1}, 0);
  Diagnostics findings;
  ASSERT_TRUE(s.add_requests(std::vector<Request>{{0, 1000, 3, 1}}, findings));
  ASSERT_TRUE(s.advance_to(1000));
  const auto parsed = metrics::parse_text(scrape(s));
  ASSERT_TRUE(parsed.ok()) << parsed.error();

  struct Expected {
    const char* name;
    MetricType type;
    const char* help;
  };
  // vllm/v1/metrics/loggers.py of vLLM 0.11 (counters carry _total in the text format).
  const Expected expected[] = {
      {"gpubank_inference_router_waiting_requests", MetricType::gauge,
       "Requests of an inference service waiting at the twin's router for a ready replica."},
      {"vllm:e2e_request_latency_seconds", MetricType::histogram, "Histogram of e2e request latency in seconds."},
      {"vllm:generation_tokens_total", MetricType::counter, "Number of generation tokens processed."},
      {"vllm:inter_token_latency_seconds", MetricType::histogram, "Histogram of inter-token latency in seconds."},
      {"vllm:kv_cache_usage_perc", MetricType::gauge, "KV-cache usage. 1 means 100 percent usage."},
      {"vllm:num_preemptions_total", MetricType::counter, "Cumulative number of preemption from the engine."},
      {"vllm:num_requests_running", MetricType::gauge, "Number of requests in model execution batches."},
      {"vllm:num_requests_waiting", MetricType::gauge, "Number of requests waiting to be processed."},
      {"vllm:prompt_tokens_total", MetricType::counter, "Number of prefill tokens processed."},
      {"vllm:request_success_total", MetricType::counter, "Count of successfully processed requests."},
      {"vllm:time_per_output_token_seconds", MetricType::histogram,
       "Histogram of time per output token in seconds.DEPRECATED: Use vllm:inter_token_latency_seconds instead."},
      {"vllm:time_to_first_token_seconds", MetricType::histogram, "Histogram of time to first token in seconds."},
  };
  ASSERT_EQ(parsed->families.size(), std::size(expected));
  for (std::size_t i = 0; i < std::size(expected); ++i) {
    const auto& f = parsed->families[i];
    EXPECT_EQ(f.name, expected[i].name);
    EXPECT_EQ(f.type, expected[i].type) << f.name;
    EXPECT_EQ(f.help, expected[i].help) << f.name;
  }

  const auto* prompt = parsed->find("vllm:prompt_tokens_total");
  ASSERT_EQ(prompt->samples.size(), 1u);
  EXPECT_EQ(prompt->samples[0].labels,
            (std::vector<metrics::Label>{{"model_name", "meta-llama/Llama-3.1-70B-Instruct"},
                                         {"engine", "0"},
                                         {"replica", "chat-0"}}));
  EXPECT_EQ(prompt->samples[0].value, 1000);
  const auto* success = parsed->find("vllm:request_success_total");
  ASSERT_EQ(success->samples.size(), 3u);  // stop, length, abort exist from the start
  EXPECT_EQ(success->samples[0].labels[2].value, "stop");
  EXPECT_EQ(success->samples[0].value, 1);
  EXPECT_EQ(success->samples[2].labels[2].value, "abort");
  EXPECT_EQ(success->samples[2].value, 0);

  // The TTFT histogram: vLLM's 22 bounds, written as Python writes floats, and +Inf.
  const auto* ttft = parsed->find("vllm:time_to_first_token_seconds");
  auto children = metrics::histogram_children(*ttft);
  ASSERT_TRUE(children.ok());
  ASSERT_EQ(children->size(), 1u);
  const auto& buckets = (*children)[0].buckets;
  ASSERT_EQ(buckets.size(), kTtftBucketsSeconds.size() + 1);
  const double vllm_ttft[] = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,  0.25,  0.5,   0.75,
                              1.0,   2.5,   5.0,  7.5,  10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0};
  for (std::size_t i = 0; i < std::size(vllm_ttft); ++i) {
    EXPECT_EQ(buckets[i].upper_bound, vllm_ttft[i]);
    EXPECT_EQ(buckets[i].count, i >= 8 ? 1 : 0) << i;  // 0.104912 s is in (0.1, 0.25]
  }
  EXPECT_TRUE(std::isinf(buckets.back().upper_bound));
  EXPECT_EQ((*children)[0].sum, 0.104912);
  EXPECT_EQ((*children)[0].count, 1);
  const auto* itl = parsed->find("vllm:inter_token_latency_seconds");
  EXPECT_EQ(itl->samples.size(), kItlBucketsSeconds.size() + 3);  // buckets, +Inf, _count, _sum
  EXPECT_EQ(itl->samples[11].labels.back(), (metrics::Label{"le", "1.0"}));
  EXPECT_EQ(parsed->find("vllm:e2e_request_latency_seconds")->samples.size(), kE2eBucketsSeconds.size() + 3);
}

TEST(VllmMetrics, WrittenTextReadsBackUnchanged) {
  auto s = make();
  s.add_replica({"chat-0", 1}, 0);
  s.add_replica({"chat-1", 1}, 0);
  Diagnostics findings;
  ASSERT_TRUE(s.add_requests(testing::random_load(3, 200, 50, 3000, 300), findings));
  ASSERT_TRUE(s.advance_to(30'000));
  VllmExpositionOptions options;
  options.gpu_cache_usage = true;
  const auto e = s.exposition(options);
  const auto text = metrics::write_text(e);
  ASSERT_TRUE(text.ok()) << text.error();
  const auto parsed = metrics::parse_text(*text);
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  EXPECT_EQ(*parsed, e);
  ASSERT_NE(parsed->find("vllm:gpu_cache_usage_perc"), nullptr);
  EXPECT_EQ(parsed->find("vllm:gpu_cache_usage_perc")->samples[1].value,
            parsed->find("vllm:kv_cache_usage_perc")->samples[1].value);
}

TEST(VllmMetrics, PromtoolCheckMetricsAcceptsTheText) {
  const auto promtool = gpubank::testing::find_promtool();
  ASSERT_TRUE(promtool.has_value()) << gpubank::testing::kPromtoolMissing;
  auto s = make();
  s.add_replica({"chat-0", 1}, 0);
  Diagnostics findings;
  ASSERT_TRUE(s.add_requests(testing::random_load(5, 100, 50, 3000, 300), findings));
  ASSERT_TRUE(s.advance_to(20'000));
  VllmExpositionOptions options;
  options.gpu_cache_usage = true;
  const auto text = metrics::write_text(s.exposition(options));
  ASSERT_TRUE(text.ok());
  gpubank::testing::ScratchDir dir;
  gpubank::testing::write_file(dir.path() / "metrics.prom", *text);
  const auto checked = gpubank::testing::run_in(dir.path(), promtool->string() + " check metrics < metrics.prom");
  // The text parses; promlint's only objection is the colon vLLM puts in every name
  // (colons are meant for recording rules), one line per family.
  EXPECT_EQ(checked.status, 3) << checked.output;
  std::string lint;
  for (const char* name :
       {"vllm:e2e_request_latency_seconds", "vllm:generation_tokens_total", "vllm:gpu_cache_usage_perc",
        "vllm:inter_token_latency_seconds", "vllm:kv_cache_usage_perc", "vllm:num_preemptions_total",
        "vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:prompt_tokens_total",
        "vllm:request_success_total", "vllm:time_per_output_token_seconds", "vllm:time_to_first_token_seconds"}) {
    lint += std::string(name) + " metric names should not contain ':'\n";
  }
  EXPECT_EQ(checked.output, lint);
}

TEST(VllmMetrics, TtftP95FromTwoScrapesMatchesTheExactQuantile) {
  ServiceOptions options;
  options.keep_completions = true;
  auto s = make(options);
  s.add_replica({"chat-0", 1}, 0);
  s.add_replica({"chat-1", 1}, 0);
  Diagnostics findings;
  // About 5 requests/s for 240 s on two replicas, prompts up to 3,000 tokens.
  ASSERT_TRUE(s.add_requests(testing::random_load(11, 1200, 200, 3000, 400), findings));
  const std::int64_t t1 = 60'000;
  const std::int64_t t2 = 400'000;  // long after the last request finished
  std::vector<metrics::HistogramSnapshot> snapshots;
  for (std::int64_t t : {t1, t2}) {
    ASSERT_TRUE(s.advance_to(t));
    const auto parsed = metrics::parse_text(scrape(s));
    ASSERT_TRUE(parsed.ok());
    auto children = metrics::histogram_children(*parsed->find("vllm:time_to_first_token_seconds"));
    ASSERT_TRUE(children.ok());
    // Sum the two replicas' buckets, as sum by (le) does.
    metrics::HistogramSnapshot snap{t, (*children)[0].buckets};
    for (std::size_t i = 0; i < snap.buckets.size(); ++i) snap.buckets[i].count += (*children)[1].buckets[i].count;
    snapshots.push_back(snap);
  }
  ASSERT_EQ(s.snapshot().finished, 1200);
  auto series = metrics::bucket_series(snapshots);
  ASSERT_TRUE(series.ok());
  // The window starts exactly at the first scrape: no extrapolation, the rate is the
  // increase over the window.
  const auto estimate = metrics::quantile_of_rate(0.95, *series, {t2, t2 - t1});
  ASSERT_TRUE(estimate.has_value());

  // The exact p95 of the TTFTs observed between the scrapes (first token in (t1, t2]).
  std::vector<std::int64_t> ttfts;
  for (const auto& c : s.completions()) {
    if (c.first_token_us > t1 * 1000) ttfts.push_back(c.first_token_us - c.dispatched_us);
  }
  std::sort(ttfts.begin(), ttfts.end());
  ASSERT_GT(ttfts.size(), 800u);
  const auto rank = static_cast<std::size_t>(std::ceil(0.95 * static_cast<double>(ttfts.size()))) - 1;
  const double exact = static_cast<double>(ttfts[rank]) / 1e6;
  // Both lie in the same bucket: histogram_quantile interpolates inside the bucket the
  // rank falls into.
  const auto upper = std::lower_bound(kTtftBucketsSeconds.begin(), kTtftBucketsSeconds.end(), *estimate);
  ASSERT_NE(upper, kTtftBucketsSeconds.end());
  const double lower = upper == kTtftBucketsSeconds.begin() ? 0.0 : *(upper - 1);
  EXPECT_GT(exact, lower) << "estimate " << *estimate;
  EXPECT_LE(exact, *upper) << "estimate " << *estimate;
  EXPECT_GT(*estimate, 0.1);  // the load does queue: p95 well above a lone prefill
}

TEST(VllmMetrics, DurationHistogramCountsBoundsInTheirBucket) {
  DurationHistogram h(kItlBucketsSeconds);
  h.observe(10'000);      // exactly 0.01 s: le="0.01"
  h.observe(10'001, 3);   // just above: le="0.025"
  h.observe(90'000'000);  // above 80 s: +Inf only
  EXPECT_EQ(h.bucket_counts()[0], 1);
  EXPECT_EQ(h.bucket_counts()[1], 3);
  EXPECT_EQ(h.bucket_counts().back(), 1);
  EXPECT_EQ(h.count(), 5);
  EXPECT_EQ(h.sum_us(), 10'000 + 3 * 10'001 + 90'000'000);
  EXPECT_EQ(python_float(1.0), "1.0");
  EXPECT_EQ(python_float(2560.0), "2560.0");
  EXPECT_EQ(python_float(0.025), "0.025");
}

}  // namespace
}  // namespace gpubank::twin::inference
