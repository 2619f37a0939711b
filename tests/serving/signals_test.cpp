// read_vllm_text on the twin's own exposition and on hand-written pages (deprecated names,
// several engines, errors); read_prometheus_query and from_prometheus; SignalWindow's
// bookkeeping (order, retention, sums and means). The TTFT quantile against promtool is
// ttft_promtool_test.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "metrics/exposition.hpp"
#include "metrics/text_parser.hpp"
#include "serving/signals.hpp"
#include "twin/inference/vllm_metrics.hpp"

namespace gpubank::serving {
namespace {

using metrics::Bucket;
constexpr double kInf = std::numeric_limits<double>::infinity();

bool has_rule(const std::string& message, std::string_view rule) {
  return message.ends_with("[" + std::string(rule) + "]");
}

ScrapeOptions for_model(std::string model) {
  ScrapeOptions o;
  o.model_name = std::move(model);
  return o;
}

// ---- the twin's page ----------------------------------------------------------------------

struct TwinPage {
  twin::inference::VllmCounters r0, r1, r9;
  std::string text;
};

// Two replicas of model "llm" and one of "other" in one page, as the twin's metrics
// endpoint serves them (the replica label on every series, both ITL names).
TwinPage twin_page() {
  TwinPage p;
  p.r0.time_to_first_token.observe(30'000, 2);     // 0.03 s: le="0.04" and above
  p.r0.time_to_first_token.observe(2'000'000, 1);  // 2 s: le="2.5" and above
  p.r0.inter_token_latency.observe(20'000, 5);     // 0.02 s: le="0.025" and above
  p.r1.time_to_first_token.observe(100'000, 4);    // 0.1 s: le="0.1" (inclusive) and above
  p.r9.time_to_first_token.observe(100'000, 9);
  p.r0.request_success = {4, 2, 1};  // stop, length, abort
  const std::vector<twin::inference::VllmReplicaSeries> llm{{"r0", 3, 5, 0.25, &p.r0}, {"r1", 1, 0, 0.75, &p.r1}};
  const std::vector<twin::inference::VllmReplicaSeries> other{{"r9", 7, 9, 0.5, &p.r9}};
  metrics::Exposition page = twin::inference::vllm_exposition("llm", llm);
  const metrics::Exposition more = twin::inference::vllm_exposition("other", other);
  EXPECT_EQ(page.families.size(), more.families.size());
  for (std::size_t i = 0; i < page.families.size(); ++i) {
    auto& samples = page.families[i].samples;
    samples.insert(samples.end(), more.families[i].samples.begin(), more.families[i].samples.end());
  }
  auto text = metrics::write_text(page);
  EXPECT_TRUE(text.ok()) << text.error();
  p.text = *text;
  return p;
}

TEST(ReadVllmText, ReadsTheTwinsExposition) {
  const TwinPage p = twin_page();
  const auto scrape = read_vllm_text(p.text, 15'000, for_model("llm"));
  ASSERT_TRUE(scrape.ok()) << scrape.error();
  EXPECT_EQ(scrape->t_ms, 15'000);
  ASSERT_EQ(scrape->replicas.size(), 2u);  // r9 serves another model

  const ReplicaSignals& r0 = scrape->replicas[0];
  EXPECT_EQ(r0.replica, "r0");
  EXPECT_EQ(r0.waiting, 5.0);
  EXPECT_EQ(r0.running, 3.0);
  EXPECT_EQ(r0.kv_cache_usage, 0.25);
  // vLLM's 22 TTFT bounds and +Inf; cumulative.
  ASSERT_EQ(r0.ttft_buckets.size(), 23u);
  EXPECT_EQ(r0.ttft_buckets[3], (Bucket{0.02, 0}));
  EXPECT_EQ(r0.ttft_buckets[4], (Bucket{0.04, 2}));
  EXPECT_EQ(r0.ttft_buckets[11], (Bucket{1.0, 2}));
  EXPECT_EQ(r0.ttft_buckets[12], (Bucket{2.5, 3}));
  EXPECT_EQ(r0.ttft_buckets.back(), (Bucket{kInf, 3}));
  // ITL under its current name (the twin also writes the deprecated one, same values).
  ASSERT_EQ(r0.itl_buckets.size(), 20u);
  EXPECT_EQ(r0.itl_buckets[0], (Bucket{0.01, 0}));
  EXPECT_EQ(r0.itl_buckets[1], (Bucket{0.025, 5}));
  EXPECT_EQ(r0.itl_buckets.back(), (Bucket{kInf, 5}));
  EXPECT_EQ(r0.requests_finished, 7.0);  // over the finished reasons

  const ReplicaSignals& r1 = scrape->replicas[1];
  EXPECT_EQ(r1.replica, "r1");
  EXPECT_EQ(r1.waiting, 0.0);
  EXPECT_EQ(r1.kv_cache_usage, 0.75);
  EXPECT_EQ(r1.ttft_buckets[6], (Bucket{0.08, 0}));
  EXPECT_EQ(r1.ttft_buckets[7], (Bucket{0.1, 4}));
  EXPECT_EQ(r1.itl_buckets.back(), (Bucket{kInf, 0}));
  EXPECT_EQ(r1.requests_finished, 0.0);  // exported, nothing finished yet

  // The same page handed over without the text round trip (what the twin does) reads the same.
  const auto parsed = metrics::parse_text(p.text);
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  const auto direct = read_vllm(*parsed, 15'000, for_model("llm"));
  ASSERT_TRUE(direct.ok()) << direct.error();
  EXPECT_EQ(*direct, *scrape);

  // Any model: r9 too.
  const auto all = read_vllm_text(p.text, 15'000, {});
  ASSERT_TRUE(all.ok()) << all.error();
  ASSERT_EQ(all->replicas.size(), 3u);
  EXPECT_EQ(all->replicas[2].replica, "r9");
  EXPECT_EQ(all->replicas[2].waiting, 9.0);

  // One scrape: sums and means, but no rate yet.
  SignalWindow window;
  ASSERT_TRUE(window.add(*scrape).ok());
  const Observation o = window.observe();
  EXPECT_EQ(o.t_ms, 15'000);
  EXPECT_EQ(o.replicas_reporting, 2);
  EXPECT_EQ(o.queue_depth, 5.0);        // 5 + 0
  EXPECT_EQ(o.running, 4.0);            // 3 + 1
  EXPECT_EQ(o.kv_cache_usage, 0.5);     // (0.25 + 0.75) / 2
  EXPECT_EQ(o.ttft_p95_s, std::nullopt);
  EXPECT_EQ(o.request_rate, std::nullopt);
}

// One replica per page, as a real vLLM pod serves it: no replica label, two data-parallel
// engines, and the deprecated names of the KV gauge and the ITL histogram.
constexpr const char* kDeprecatedPage = R"(# HELP vllm:num_requests_waiting Number of requests waiting to be processed.
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="m"} 4.0
vllm:num_requests_waiting{engine="1",model_name="m"} 2.0
vllm:num_requests_waiting{engine="0",model_name="other"} 100.0
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} 8.0
vllm:num_requests_running{engine="1",model_name="m"} 7.0
# HELP vllm:gpu_cache_usage_perc GPU KV-cache usage. 1 means 100 percent usage.
# TYPE vllm:gpu_cache_usage_perc gauge
vllm:gpu_cache_usage_perc{engine="0",model_name="m"} 0.5
vllm:gpu_cache_usage_perc{engine="1",model_name="m"} 0.25
# TYPE vllm:time_per_output_token_seconds histogram
vllm:time_per_output_token_seconds_sum{engine="0",model_name="m"} 0.5
vllm:time_per_output_token_seconds_bucket{engine="0",le="0.01",model_name="m"} 1.0
vllm:time_per_output_token_seconds_bucket{engine="0",le="0.1",model_name="m"} 3.0
vllm:time_per_output_token_seconds_bucket{engine="0",le="+Inf",model_name="m"} 4.0
vllm:time_per_output_token_seconds_count{engine="0",model_name="m"} 4.0
vllm:time_per_output_token_seconds_bucket{engine="1",le="0.01",model_name="m"} 0.0
vllm:time_per_output_token_seconds_bucket{engine="1",le="0.1",model_name="m"} 2.0
vllm:time_per_output_token_seconds_bucket{engine="1",le="+Inf",model_name="m"} 2.0
# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.5",model_name="m"} 1.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="1.0",model_name="m"} 2.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="+Inf",model_name="m"} 2.0
vllm:time_to_first_token_seconds_bucket{engine="1",le="0.5",model_name="m"} 3.0
vllm:time_to_first_token_seconds_bucket{engine="1",le="1.0",model_name="m"} 5.0
vllm:time_to_first_token_seconds_bucket{engine="1",le="+Inf",model_name="m"} 6.0
# TYPE vllm:some_future_metric counter
vllm:some_future_metric_total{engine="0",model_name="m"} 1.0
)";

TEST(ReadVllmText, OneReplicaPerPageWithDeprecatedNamesAndTwoEngines) {
  ScrapeOptions options = for_model("m");
  options.replica_label = "";
  options.page_replica = "pod-0";
  const auto scrape = read_vllm_text(kDeprecatedPage, 30'000, options);
  ASSERT_TRUE(scrape.ok()) << scrape.error();
  ASSERT_EQ(scrape->replicas.size(), 1u);
  const ReplicaSignals& r = scrape->replicas[0];
  EXPECT_EQ(r.replica, "pod-0");
  EXPECT_EQ(r.waiting, 6.0);           // 4 + 2; model "other" is not counted
  EXPECT_EQ(r.running, 15.0);          // 8 + 7
  EXPECT_EQ(r.kv_cache_usage, 0.375);  // engines' mean (0.5 + 0.25) / 2, from the deprecated name
  EXPECT_EQ(r.ttft_buckets, (std::vector<Bucket>{{0.5, 4}, {1.0, 7}, {kInf, 8}}));  // engines summed per le
  EXPECT_EQ(r.itl_buckets, (std::vector<Bucket>{{0.01, 1}, {0.1, 5}, {kInf, 6}}));   // from the deprecated name
}

TEST(ReadVllmText, TheCurrentNameWinsOverTheDeprecatedOne) {
  const std::string page = R"(# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{replica="x"} 0.6
# TYPE vllm:gpu_cache_usage_perc gauge
vllm:gpu_cache_usage_perc{replica="x"} 0.9
vllm:gpu_cache_usage_perc{replica="y"} 0.9
# TYPE vllm:inter_token_latency_seconds histogram
vllm:inter_token_latency_seconds_bucket{replica="x",le="0.1"} 1
vllm:inter_token_latency_seconds_bucket{replica="x",le="+Inf"} 1
# TYPE vllm:time_per_output_token_seconds histogram
vllm:time_per_output_token_seconds_bucket{replica="x",le="0.1"} 7
vllm:time_per_output_token_seconds_bucket{replica="x",le="+Inf"} 7
)";
  const auto scrape = read_vllm_text(page, 0, {});
  ASSERT_TRUE(scrape.ok()) << scrape.error();
  ASSERT_EQ(scrape->replicas.size(), 2u);
  EXPECT_EQ(scrape->replicas[0].kv_cache_usage, 0.6);  // x exports both: the current name
  EXPECT_EQ(scrape->replicas[0].itl_buckets, (std::vector<Bucket>{{0.1, 1}, {kInf, 1}}));
  EXPECT_EQ(scrape->replicas[1].kv_cache_usage, 0.9);  // y only the deprecated one
  EXPECT_EQ(scrape->replicas[1].waiting, std::nullopt);
  EXPECT_TRUE(scrape->replicas[1].ttft_buckets.empty());
}

TEST(ReadVllmText, RequestsFinishedOverEnginesAndReasonsUnderEitherFamilyName) {
  // The text format's family name (after the _total series) and OpenMetrics' (without the
  // suffix, with _created samples that are times, not counts).
  for (const std::string family : {"vllm:request_success_total", "vllm:request_success"}) {
    const std::string page = "# TYPE " + family + " counter\n" +
                             R"(vllm:request_success_total{replica="x",engine="0",finished_reason="stop"} 10
vllm:request_success_total{replica="x",engine="1",finished_reason="stop"} 5
vllm:request_success_total{replica="x",engine="0",finished_reason="length"} 2
vllm:request_success_total{replica="y",engine="0",finished_reason="stop",model_name="other"} 100
)" + (family == "vllm:request_success" ? "vllm:request_success_created{replica=\"x\",engine=\"0\",finished_reason=\"stop\"} 1.7e9\n"
                                                 : "");
    const auto scrape = read_vllm_text(page, 0, {});
    ASSERT_TRUE(scrape.ok()) << family << ": " << scrape.error();
    ASSERT_EQ(scrape->replicas.size(), 2u);
    EXPECT_EQ(scrape->replicas[0].requests_finished, 17.0) << family;
    const auto model = read_vllm_text(page, 0, for_model("other"));
    ASSERT_TRUE(model.ok()) << model.error();
    ASSERT_EQ(model->replicas.size(), 1u);
    EXPECT_EQ(model->replicas[0].requests_finished, 100.0);
  }
  // Not a count, or not a counter.
  const auto negative = read_vllm_text("vllm:request_success_total{replica=\"x\"} -4\n", 0, {});
  ASSERT_FALSE(negative.ok());
  EXPECT_TRUE(has_rule(negative.error(), kRuleSignalValue)) << negative.error();
  EXPECT_NE(negative.error().find("vllm:request_success_total{replica=\"x\"} is -4"), std::string::npos)
      << negative.error();
  const auto gauge = read_vllm_text("# TYPE vllm:request_success_total gauge\nvllm:request_success_total{replica=\"x\"} 4\n", 0, {});
  ASSERT_FALSE(gauge.ok());
  EXPECT_TRUE(has_rule(gauge.error(), kRuleSignalType)) << gauge.error();
}

TEST(ReadVllmText, ClampsRoundingAroundTheKvRange) {
  const auto scrape = read_vllm_text("vllm:kv_cache_usage_perc{replica=\"x\"} 1.0000000001\n", 0, {});
  ASSERT_TRUE(scrape.ok()) << scrape.error();
  EXPECT_EQ(scrape->replicas[0].kv_cache_usage, 1.0);
}

struct BadPage {
  const char* text;
  std::string_view rule;
  const char* names;  // what the message must quote
};

TEST(ReadVllmText, RefusesBadValuesNamingFamilyAndLabels) {
  const std::vector<BadPage> cases{
      {"vllm:num_requests_waiting{replica=\"x\"} -1\n", kRuleSignalValue,
       "vllm:num_requests_waiting{replica=\"x\"} is -1, a negative number"},
      {"vllm:num_requests_running{replica=\"x\"} NaN\n", kRuleSignalValue, "vllm:num_requests_running{replica=\"x\"} is NaN"},
      {"vllm:num_requests_running{replica=\"x\"} +Inf\n", kRuleSignalValue, "is +Inf"},
      {"vllm:kv_cache_usage_perc{replica=\"x\"} 1.5\n", kRuleSignalValue, "outside the usage range [0, 1]"},
      {"vllm:gpu_cache_usage_perc{replica=\"x\"} -0.01\n", kRuleSignalValue, "vllm:gpu_cache_usage_perc{replica=\"x\"} is -0.01"},
      {"vllm:num_requests_waiting{engine=\"0\",pod=\"p\"} 1\n", kRuleReplicaLabel,
       "vllm:num_requests_waiting{engine=\"0\",pod=\"p\"} has no label \"replica\""},
      {"# TYPE vllm:num_requests_waiting counter\nvllm:num_requests_waiting{replica=\"x\"} 1\n", kRuleSignalType,
       "vllm:num_requests_waiting is a counter, not a gauge"},
      {"# TYPE vllm:time_to_first_token_seconds histogram\n"
       "vllm:time_to_first_token_seconds_bucket{replica=\"x\",le=\"1\"} 1\n",
       kRuleHistogram, "vllm:time_to_first_token_seconds_bucket{replica=\"x\"} has no le=\"+Inf\" bucket"},
      {"# TYPE vllm:time_to_first_token_seconds histogram\n"
       "vllm:time_to_first_token_seconds_bucket{replica=\"x\",le=\"1\"} -2\n"
       "vllm:time_to_first_token_seconds_bucket{replica=\"x\",le=\"+Inf\"} 1\n",
       kRuleSignalValue, "vllm:time_to_first_token_seconds_bucket{replica=\"x\",le=\"1\"} is -2"},
      {"# TYPE vllm:time_to_first_token_seconds histogram\n"
       "vllm:time_to_first_token_seconds_bucket{le=\"+Inf\"} 1\n",
       kRuleReplicaLabel, "has no label \"replica\""},
  };
  for (const BadPage& c : cases) {
    const auto scrape = read_vllm_text(c.text, 0, {});
    ASSERT_FALSE(scrape.ok()) << c.text;
    EXPECT_TRUE(has_rule(scrape.error(), c.rule)) << scrape.error();
    EXPECT_NE(scrape.error().find(c.names), std::string::npos) << scrape.error();
  }
  // A parse error is the text parser's, with its position and rule.
  const auto broken = read_vllm_text("vllm:num_requests_waiting{replica=\"x} 1\n", 0, {});
  ASSERT_FALSE(broken.ok());
  EXPECT_TRUE(broken.error().starts_with("line 1, column ")) << broken.error();
  EXPECT_NE(broken.error().find("[metrics.text."), std::string::npos) << broken.error();
  // Series of another model are not looked at, not even for the replica label.
  const auto other = read_vllm_text("vllm:num_requests_waiting{model_name=\"n\"} -1\n", 0, for_model("m"));
  ASSERT_TRUE(other.ok()) << other.error();
  EXPECT_TRUE(other->replicas.empty());
}

// ---- Prometheus' query API --------------------------------------------------------------

TEST(ReadPrometheusQuery, ReadsVectorsAndScalars) {
  const auto v = read_prometheus_query(
      R"({"status":"success","data":{"resultType":"vector","result":[)"
      R"({"metric":{"pod":"p-1","namespace":"cs"},"value":[1718000000.5,"42"]},)"
      R"({"metric":{},"value":[1718000001,"NaN"]},)"
      R"({"value":[1718000001.123,"+Inf"]},)"
      R"({"metric":{"le":"x"},"value":[0.001,"-0.25"]}]},"warnings":["w"]})");
  ASSERT_TRUE(v.ok()) << v.error();
  ASSERT_EQ(v->size(), 4u);
  EXPECT_EQ((*v)[0].labels, (std::map<std::string, std::string>{{"namespace", "cs"}, {"pod", "p-1"}}));
  EXPECT_EQ((*v)[0].value, 42.0);
  EXPECT_EQ((*v)[0].t_ms, 1'718'000'000'500);
  EXPECT_TRUE(std::isnan((*v)[1].value));
  EXPECT_EQ((*v)[1].t_ms, 1'718'000'001'000);
  EXPECT_EQ((*v)[2].value, kInf);
  EXPECT_EQ((*v)[2].t_ms, 1'718'000'001'123);
  EXPECT_EQ((*v)[3].value, -0.25);
  EXPECT_EQ((*v)[3].t_ms, 1);

  const auto s = read_prometheus_query(R"({"status":"success","data":{"resultType":"scalar","result":[12.5,"3"]}})");
  ASSERT_TRUE(s.ok()) << s.error();
  ASSERT_EQ(s->size(), 1u);
  EXPECT_TRUE((*s)[0].labels.empty());
  EXPECT_EQ((*s)[0].value, 3.0);
  EXPECT_EQ((*s)[0].t_ms, 12'500);

  const auto empty = read_prometheus_query(R"({"status":"success","data":{"resultType":"vector","result":[]}})");
  ASSERT_TRUE(empty.ok()) << empty.error();
  EXPECT_TRUE(empty->empty());
}

struct BadBody {
  std::string body;
  std::string_view rule;
  const char* says;
};

TEST(ReadPrometheusQuery, RefusesErrorsAndMalformedBodies) {
  const std::string ok_head = R"({"status":"success","data":{"resultType":"vector","result":[)";
  const std::vector<BadBody> cases{
      {R"({"status":"error","errorType":"bad_data","error":"parse error at char 5"})", kRulePromStatus,
       "errorType \"bad_data\", error \"parse error at char 5\""},
      {R"({"status":"success","data":)", kRulePromJson, "Prometheus query response: "},
      {"[1]", kRulePromShape, "the body is not a JSON object"},
      {R"({"data":{}})", kRulePromShape, "\"status\" is missing"},
      {R"({"status":"partial"})", kRulePromShape, "\"status\" is \"partial\""},
      {R"({"status":"success","data":{"resultType":"matrix","result":[]}})", kRulePromShape,
       "data.resultType is \"matrix\""},
      {R"({"status":"success","data":{"resultType":"vector","result":{}}})", kRulePromShape,
       "data.result is missing or not a list"},
      {ok_head + R"({"metric":{},"value":[1,42]}]}})", kRulePromShape, "data.result[0].value[1] is an integer"},
      {ok_head + R"({"metric":{},"value":[1,"4x2"]}]}})", kRulePromValue,
       "data.result[0].value[1] is \"4x2\", not a number"},
      {ok_head + R"({"metric":{},"value":[1,"inf"]}]}})", kRulePromValue, "is \"inf\""},
      {ok_head + R"({"metric":{},"value":[1,""]}]}})", kRulePromValue, "is \"\""},
      {ok_head + R"({"metric":{},"value":[-1,"1"]}]}})", kRulePromValue, "data.result[0].value[0] is -1"},
      {ok_head + R"({"metric":{},"value":["1","1"]}]}})", kRulePromShape, "value[0] is a string"},
      {ok_head + R"({"metric":{},"value":[1]}]}})", kRulePromShape, "is not a pair"},
      {ok_head + R"({"metric":{"pod":3},"value":[1,"1"]}]}})", kRulePromShape, "data.result[0].metric.pod is an integer"},
      {ok_head + R"({"metric":{},"histogram":[1,{"count":"1"}]}]}})", kRulePromShape, "native histogram"},
      {ok_head + R"({"metric":{}}]}})", kRulePromShape, "data.result[0].value is missing"},
  };
  for (const BadBody& c : cases) {
    const auto r = read_prometheus_query(c.body);
    ASSERT_FALSE(r.ok()) << c.body;
    EXPECT_TRUE(has_rule(r.error(), c.rule)) << r.error();
    EXPECT_NE(r.error().find(c.says), std::string::npos) << r.error();
  }
}

TEST(ReadPrometheusQuery, RefusesOversizedBodiesAndTooManySamples) {
  std::string big = R"({"status":"success","data":{"resultType":"vector","result":[]}})";
  big.append(kPromMaxBodyBytes + 1 - big.size(), ' ');
  const auto too_big = read_prometheus_query(big);
  ASSERT_FALSE(too_big.ok());
  EXPECT_TRUE(has_rule(too_big.error(), kRulePromTooLarge)) << too_big.error();
  EXPECT_NE(too_big.error().find(std::to_string(kPromMaxBodyBytes + 1) + " bytes"), std::string::npos);

  const auto body_of = [](std::size_t n) {
    std::string b = R"({"status":"success","data":{"resultType":"vector","result":[)";
    for (std::size_t i = 0; i < n; ++i) b += i == 0 ? R"({"value":[1,"1"]})" : R"(,{"value":[1,"1"]})";
    return b + "]}}";
  };
  const auto at_limit = read_prometheus_query(body_of(kPromMaxSamples));
  ASSERT_TRUE(at_limit.ok()) << at_limit.error();
  EXPECT_EQ(at_limit->size(), kPromMaxSamples);
  const auto over = read_prometheus_query(body_of(kPromMaxSamples + 1));
  ASSERT_FALSE(over.ok());
  EXPECT_TRUE(has_rule(over.error(), kRulePromTooLarge)) << over.error();
  EXPECT_NE(over.error().find("100001 samples"), std::string::npos) << over.error();
}

PromSample sample(double v) { return PromSample{{}, v, 60'000}; }

TEST(FromPrometheus, BuildsTheObservationOfTheRenderedQueries) {
  PrometheusResults r;
  r.t_ms = 60'000;
  r.pods_reporting = {sample(4)};
  r.queue_depth = {sample(30)};
  r.ttft_p95 = {sample(1.25)};
  r.kv_cache = {sample(2.6)};  // the sum of four pods' averages
  const auto o = from_prometheus(r);
  ASSERT_TRUE(o.ok()) << o.error();
  EXPECT_EQ(o->t_ms, 60'000);
  EXPECT_EQ(o->replicas_reporting, 4);
  EXPECT_EQ(o->queue_depth, 30.0);
  EXPECT_EQ(o->ttft_p95_s, 1.25);
  EXPECT_EQ(o->kv_cache_usage, 0.65);  // 2.6 / 4
  EXPECT_EQ(o->running, std::nullopt);  // not queried
  EXPECT_EQ(o->request_rate, std::nullopt);

  r.request_rate = std::vector<PromSample>{sample(12.5)};
  const auto with_rate = from_prometheus(r);
  ASSERT_TRUE(with_rate.ok()) << with_rate.error();
  EXPECT_EQ(with_rate->request_rate, 12.5);
  r.request_rate = std::vector<PromSample>{sample(-1)};
  EXPECT_TRUE(has_rule(from_prometheus(r).error(), kRulePromValue));
  r.request_rate.reset();

  EXPECT_FALSE(o->ttft_idle);

  // No requests in the window (NaN): no TTFT, and idle (zero load, not a missing signal);
  // an empty result: missing, not zero.
  r.ttft_p95 = {sample(std::numeric_limits<double>::quiet_NaN())};
  r.queue_depth.clear();
  const auto missing = from_prometheus(r);
  ASSERT_TRUE(missing.ok()) << missing.error();
  EXPECT_EQ(missing->ttft_p95_s, std::nullopt);
  EXPECT_TRUE(missing->ttft_idle);
  EXPECT_EQ(missing->queue_depth, std::nullopt);
  r.ttft_p95.clear();
  const auto no_series = from_prometheus(r);
  ASSERT_TRUE(no_series.ok()) << no_series.error();
  EXPECT_FALSE(no_series->ttft_idle);
  r.ttft_p95 = {sample(1.25)};

  // Each query aggregates to one sample; two is an error, so are impossible values.
  r.queue_depth = {sample(1), sample(2)};
  const auto two = from_prometheus(r);
  ASSERT_FALSE(two.ok());
  EXPECT_TRUE(has_rule(two.error(), kRulePromShape)) << two.error();
  r.queue_depth = {sample(-3)};
  EXPECT_TRUE(has_rule(from_prometheus(r).error(), kRulePromValue));
  r.queue_depth = {sample(3)};
  r.kv_cache = {sample(4.4)};  // a mean of 1.1
  EXPECT_TRUE(has_rule(from_prometheus(r).error(), kRulePromValue));
  r.kv_cache = {sample(1)};
  r.pods_reporting = {sample(2.5)};
  EXPECT_TRUE(has_rule(from_prometheus(r).error(), kRulePromValue));
}

// ---- the window ---------------------------------------------------------------------------

Scrape scrape_of(std::int64_t t_ms, std::vector<ReplicaSignals> replicas) { return Scrape{t_ms, std::move(replicas)}; }

ReplicaSignals replica(std::string name, std::optional<double> waiting, std::optional<double> kv,
                       std::vector<Bucket> ttft = {}) {
  ReplicaSignals r;
  r.replica = std::move(name);
  r.waiting = waiting;
  r.kv_cache_usage = kv;
  r.ttft_buckets = std::move(ttft);
  return r;
}

TEST(SignalWindow, KeepsOrderAndRetention) {
  SignalWindow w(120'000);
  ASSERT_TRUE(w.add(scrape_of(0, {})).ok());
  const auto same_time = w.add(scrape_of(0, {}));
  ASSERT_FALSE(same_time.ok());
  EXPECT_TRUE(has_rule(same_time.error(), kRuleScrapeOrder)) << same_time.error();
  ASSERT_TRUE(w.add(scrape_of(60'000, {})).ok());
  ASSERT_TRUE(w.add(scrape_of(120'000, {})).ok());
  EXPECT_EQ(w.scrapes().size(), 3u);  // 0 is still in [0, 120 s]
  ASSERT_TRUE(w.add(scrape_of(120'001, {})).ok());
  EXPECT_EQ(w.scrapes().size(), 3u);  // 0 fell out
  EXPECT_EQ(w.scrapes().front().t_ms, 60'000);
}

TEST(SignalWindow, SumsAndMeansAtTheNewestScrapeAndTtftFromTheRates) {
  SignalWindow w(120'000);
  ASSERT_TRUE(w.add(scrape_of(0, {replica("a", 1, 0.5, {{0.5, 0}, {1.0, 0}, {kInf, 0}})})).ok());
  // Missing signals: "b" reports no queue, nobody the running count.
  ASSERT_TRUE(w.add(scrape_of(120'000, {replica("b", std::nullopt, 0.2),
                                        replica("a", 7, 0.6, {{0.5, 60}, {1.0, 100}, {kInf, 100}})}))
                  .ok());
  const Observation o = w.observe();
  EXPECT_EQ(o.replicas_reporting, 2);
  EXPECT_EQ(o.queue_depth, 7.0);
  EXPECT_EQ(o.running, std::nullopt);
  EXPECT_EQ(o.kv_cache_usage, 0.4);  // (0.6 + 0.2) / 2
  // Samples on both edges of [0, 120 s]: rates 60/120 = 0.5, 100/120 for le 1 and +Inf.
  // rank 0.95 * 100/120 = 0.7917 lies in (0.5, 1.0]: 0.5 + 0.5 * (0.7917 - 0.5) / (0.8333 - 0.5)
  // = 0.5 + 0.5 * 0.875 = 0.9375.
  ASSERT_TRUE(o.ttft_p95_s.has_value());
  EXPECT_DOUBLE_EQ(*o.ttft_p95_s, 0.9375);
  // q 0.5: rank 0.4167 within the first bucket (0, 0.5]: 0.5 * 0.4167 / 0.5 = 5/12.
  EXPECT_DOUBLE_EQ(*w.quantile(0.5), 5.0 / 12);

  EXPECT_FALSE(o.ttft_idle);

  // No requests over the next two minutes: the rates are 0 and the quantile NaN: nullopt,
  // and idle (the histogram is there, nothing arrived).
  ASSERT_TRUE(w.add(scrape_of(240'000, {replica("a", 0, 0.1, {{0.5, 60}, {1.0, 100}, {kInf, 100}})})).ok());
  EXPECT_EQ(w.observe().ttft_p95_s, std::nullopt);
  EXPECT_TRUE(w.observe().ttft_idle);
  EXPECT_EQ(w.observe().queue_depth, 0.0);  // reported as 0: not missing

  // One scrape of a histogram has no rate yet: missing, not idle.
  SignalWindow fresh(120'000);
  ASSERT_TRUE(fresh.add(scrape_of(0, {replica("a", 0, 0.1, {{0.5, 0}, {kInf, 0}})})).ok());
  EXPECT_EQ(fresh.observe().ttft_p95_s, std::nullopt);
  EXPECT_FALSE(fresh.observe().ttft_idle);
}

ReplicaSignals finished(std::string name, double count) {
  ReplicaSignals r;
  r.replica = std::move(name);
  r.requests_finished = count;
  return r;
}

TEST(SignalWindow, RequestRateIsTheSumOfTheReplicasRates) {
  SignalWindow w(120'000);
  // Samples on both edges of [0, 120 s], so no extrapolation: a 1,200 / 120 = 10 per
  // second, b 600 / 120 = 5; c has one scrape in the window, so no rate of its own.
  ASSERT_TRUE(w.add(scrape_of(0, {finished("a", 0), finished("b", 100)})).ok());
  EXPECT_EQ(w.observe().request_rate, std::nullopt);  // one scrape: no rate yet
  ASSERT_TRUE(w.add(scrape_of(60'000, {finished("a", 500), finished("b", 400)})).ok());
  ASSERT_TRUE(w.add(scrape_of(120'000, {finished("a", 1200), finished("b", 700), finished("c", 50)})).ok());
  ASSERT_TRUE(w.observe().request_rate.has_value());
  EXPECT_DOUBLE_EQ(*w.observe().request_rate, 15.0);
  // A counter reset (a restarted engine) is an increase from 0, as in PromQL: a goes
  // 1,200 -> 300 between 120 s and 180 s; over [60 s, 180 s] its increase is
  // (1200 - 500) + 300 = 1000 in 120 s.
  SignalWindow only_a(120'000);
  for (const auto& [t, v] : std::vector<std::pair<std::int64_t, double>>{{60'000, 500}, {120'000, 1200}, {180'000, 300}}) {
    ASSERT_TRUE(only_a.add(scrape_of(t, {finished("a", v)})).ok());
  }
  EXPECT_DOUBLE_EQ(*only_a.observe().request_rate, 1000.0 / 120);
  // Nothing finished: a rate of 0, not a missing signal.
  SignalWindow quiet(120'000);
  ASSERT_TRUE(quiet.add(scrape_of(0, {finished("a", 9)})).ok());
  ASSERT_TRUE(quiet.add(scrape_of(120'000, {finished("a", 9)})).ok());
  EXPECT_EQ(quiet.observe().request_rate, 0.0);
}

}  // namespace
}  // namespace gpubank::serving
