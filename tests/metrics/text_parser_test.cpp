#include "metrics/text_parser.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "metrics/histogram.hpp"
#include "support/paths.hpp"
#include "support/promtool.hpp"

namespace gpubank::metrics {
namespace {

namespace fs = std::filesystem;

std::string fixture(const std::string& name) {
  return testing::read_file(fs::path(testing::source_dir()) / "tests/metrics/data" / name);
}

Exposition parse_ok(std::string_view text) {
  auto parsed = parse_text(text);
  if (!parsed) throw std::runtime_error(parsed.error());
  return std::move(parsed).value();
}

std::string parse_error(std::string_view text, const ParseLimits& limits = {}) {
  const auto parsed = parse_text(text, limits);
  return parsed ? "(parsed)" : parsed.error();
}

const Family& family(const Exposition& e, std::string_view name) {
  const Family* f = e.find(name);
  if (f == nullptr) throw std::runtime_error("no family " + std::string(name));
  return *f;
}

std::string label(const Sample& s, std::string_view name) {
  for (const Label& l : s.labels) {
    if (l.name == name) return l.value;
  }
  return "(none)";
}

// ---- real payloads (tests/metrics/data, written after the exporters' published formats) ----

// vLLM (v1 engine, vllm/v1/metrics/loggers.py) through prometheus_client's 0.0.4 writer:
// labels sorted, floats as Python prints them ("1.0", "5.3374734336e+010"), each counter's
// and histogram's _created series as a separate gauge family after it.
TEST(TextParser, ReadsVllmMetrics) {
  const Exposition e = parse_ok(fixture("vllm-metrics.txt"));
  ASSERT_EQ(e.families.size(), 17U);
  EXPECT_EQ(family(e, "python_gc_objects_collected_total").type, MetricType::counter);
  EXPECT_EQ(family(e, "process_virtual_memory_bytes").samples.at(0).value, 53374734336.0);

  const Family& waiting = family(e, "vllm:num_requests_waiting");
  EXPECT_EQ(waiting.type, MetricType::gauge);
  EXPECT_EQ(waiting.help, "Number of requests waiting to be processed.");
  ASSERT_EQ(waiting.samples.size(), 1U);
  EXPECT_EQ(waiting.samples[0].labels,
            (std::vector<Label>{{"engine", "0"}, {"model_name", "meta-llama/Llama-3.1-8B-Instruct"}}));
  EXPECT_EQ(waiting.samples[0].value, 1.0);

  EXPECT_EQ(family(e, "vllm:prompt_tokens_total").samples.at(0).value, 1894316.0);
  EXPECT_EQ(family(e, "vllm:prompt_tokens_created").type, MetricType::gauge);
  const Family& success = family(e, "vllm:request_success_total");
  ASSERT_EQ(success.samples.size(), 4U);
  EXPECT_EQ(label(success.samples[1], "finished_reason"), "length");
  EXPECT_EQ(success.samples[1].value, 312.0);
  EXPECT_EQ(label(family(e, "vllm:cache_config_info").samples.at(0), "num_gpu_blocks"), "27330");

  const Family& ttft = family(e, "vllm:time_to_first_token_seconds");
  EXPECT_EQ(ttft.type, MetricType::histogram);
  EXPECT_EQ(ttft.samples.size(), 25U);  // 22 buckets, +Inf, _count, _sum
  EXPECT_EQ(label(ttft.samples[11], "le"), "1.0");
  const auto children = histogram_children(ttft);
  ASSERT_TRUE(children.ok()) << children.error();
  ASSERT_EQ(children->size(), 1U);
  const HistogramChild& child = children->front();
  EXPECT_EQ(child.labels, waiting.samples[0].labels);
  ASSERT_EQ(child.buckets.size(), 23U);
  EXPECT_EQ(child.buckets[12], (Bucket{2.5, 5466}));
  EXPECT_TRUE(std::isinf(child.buckets.back().upper_bound));
  EXPECT_EQ(child.count, 5501.0);
  EXPECT_EQ(child.sum, 1873.2234216928482);
  // TTFT p95 of the cumulative counts: rank 0.95 * 5501 = 5225.95 lies in (0.75, 1.0],
  // whose counts are 5198 and 5339: 0.75 + 0.25 * 27.95 / 141.
  EXPECT_NEAR(bucket_quantile(0.95, child.buckets), 0.7995567375886522, 1e-15);
}

// dcgm-exporter (internal/pkg/rendermetrics/render_metrics.go): gpu, UUID, pci_bus_id,
// device, modelName, MIG and Hostname labels in that order, then the extra labels
// (driver version, Kubernetes pod mapping) and attributes (XID err_code/err_msg); values
// as %d or %f.
TEST(TextParser, ReadsDcgmExporterMetrics) {
  const Exposition e = parse_ok(fixture("dcgm-exporter-metrics.txt"));
  ASSERT_EQ(e.families.size(), 11U);
  const Family& util = family(e, "DCGM_FI_DEV_GPU_UTIL");
  EXPECT_EQ(util.type, MetricType::gauge);
  EXPECT_EQ(util.help, "GPU utilization (in %).");
  ASSERT_EQ(util.samples.size(), 2U);
  const Sample& gpu0 = util.samples[0];
  EXPECT_EQ(gpu0.value, 97);
  ASSERT_EQ(gpu0.labels.size(), 10U);
  EXPECT_EQ(gpu0.labels[0], (Label{"gpu", "0"}));
  EXPECT_EQ(gpu0.labels[1], (Label{"UUID", "GPU-5c8a2c4e-1f5b-9d3e-7a21-0e4b6f9d2c11"}));
  EXPECT_EQ(label(gpu0, "modelName"), "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(label(gpu0, "Hostname"), "gpu-node-07");
  EXPECT_EQ(label(gpu0, "pod"), "customer-service-llm-predictor-7d9f8b6c5-x2k4p");
  EXPECT_EQ(label(util.samples[1], "pod"), "");

  EXPECT_EQ(family(e, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION").type, MetricType::counter);
  EXPECT_EQ(family(e, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION").samples.at(0).value, 9184467735.0);
  EXPECT_EQ(family(e, "DCGM_FI_DEV_POWER_USAGE").samples.at(0).value, 512.384);
  EXPECT_EQ(label(family(e, "DCGM_FI_DEV_XID_ERRORS").samples.at(0), "err_msg"), "No Error");
  const Family& active = family(e, "DCGM_FI_PROF_GR_ENGINE_ACTIVE");
  ASSERT_EQ(active.samples.size(), 3U);
  EXPECT_EQ(label(active.samples[2], "GPU_I_PROFILE"), "1g.10gb");
  EXPECT_EQ(label(active.samples[2], "GPU_I_ID"), "3");
  EXPECT_EQ(active.samples[2].value, 0.021877);
}

// Prometheus' own /metrics (client_golang): a summary, histograms with two children.
TEST(TextParser, ReadsPrometheusOwnMetrics) {
  const Exposition e = parse_ok(fixture("prometheus-metrics.txt"));
  ASSERT_EQ(e.families.size(), 7U);
  const Family& gc = family(e, "go_gc_duration_seconds");
  EXPECT_EQ(gc.type, MetricType::summary);
  ASSERT_EQ(gc.samples.size(), 7U);
  EXPECT_EQ(label(gc.samples[1], "quantile"), "0.25");
  EXPECT_EQ(gc.samples[1].value, 4.1327e-05);
  EXPECT_EQ(gc.samples[6].name, "go_gc_duration_seconds_count");
  const auto children = histogram_children(family(e, "prometheus_http_request_duration_seconds"));
  ASSERT_TRUE(children.ok()) << children.error();
  ASSERT_EQ(children->size(), 2U);
  EXPECT_EQ((*children)[1].labels, (std::vector<Label>{{"handler", "/metrics"}}));
  EXPECT_EQ((*children)[1].count, 9121.0);
  EXPECT_EQ((*children)[0].buckets[3], (Bucket{1, 1451}));
  EXPECT_EQ(family(e, "prometheus_tsdb_head_series").samples.at(0).value, 148231);
}

// Prometheus' /federate: untyped families without HELP, samples with timestamps.
TEST(TextParser, ReadsFederatedSamplesWithTimestamps) {
  const Exposition e = parse_ok(fixture("prometheus-federate.txt"));
  ASSERT_EQ(e.families.size(), 2U);
  const Family& util = family(e, "DCGM_FI_DEV_GPU_UTIL");
  EXPECT_EQ(util.type, MetricType::untyped);
  EXPECT_EQ(util.help, "");
  ASSERT_EQ(util.samples.size(), 2U);
  EXPECT_EQ(util.samples[0].timestamp_ms, 1750428341123);
  EXPECT_EQ(family(e, "vllm:num_requests_waiting").samples.at(0).timestamp_ms, 1750428339871);
}

TEST(TextParser, PromtoolParsesEveryFixtureToo) {
  // The fixtures are valid text format by promtool's own parser: it may only lint them
  // (exit 3: DCGM's camelCase labels, vLLM's colons), never fail to parse them (exit 1).
  const auto promtool = testing::find_promtool();
  ASSERT_TRUE(promtool.has_value()) << testing::kPromtoolMissing;
  const fs::path data = fs::path(testing::source_dir()) / "tests/metrics/data";
  for (const char* name : {"vllm-metrics.txt", "dcgm-exporter-metrics.txt", "prometheus-metrics.txt",
                           "prometheus-federate.txt"}) {
    const auto r = testing::run_in(data, promtool->string() + " check metrics < " + name);
    EXPECT_TRUE(r.status == 0 || r.status == 3) << name << " (exit " << r.status << "):\n" << r.output;
    EXPECT_EQ(r.output.find("error while linting"), std::string::npos) << name << ":\n" << r.output;
  }
}

TEST(TextParser, WritingWhatWasParsedReadsBackTheSame) {
  for (const char* name : {"vllm-metrics.txt", "dcgm-exporter-metrics.txt", "prometheus-metrics.txt",
                           "prometheus-federate.txt"}) {
    const Exposition first = parse_ok(fixture(name));
    const auto text = write_text(first);
    ASSERT_TRUE(text.ok()) << name << ": " << text.error();
    EXPECT_EQ(parse_ok(*text), first) << name;
  }
}

// ---- what the format allows ----

TEST(TextParser, ToleratesWhatTheFormatAllows) {
  const Exposition e = parse_ok(
      "\n"
      "  # a comment\n"
      "#HELP not_metadata (no blank after '#')\n"
      "# HELP   spaced  help with  two spaces\n"
      "# TYPE spaced gauge   \n"
      "\t spaced { a = \"x\" , b=\"\" , } 1.5   \n"
      "spaced{a=\"y\"}-2\n"
      "# HELP empty_help\n"
      "empty_help NaN\n"
      "# TYPE foo counter\n"
      "foo_total 3 1750428341123\n"
      "foo_created 1.7e+09\n"
      "# TYPE h histogram\n"
      "h_bucket{le=\"1\"} 1\n"
      "h_bucket{le=\"+Inf\"} 2\n"
      "h_sum 3\n"
      "h_count 2\n"
      "h_created 1.7e+09\n"
      "inf_values{x=\"a\"} +Inf\n"
      "inf_values{x=\"b\"} -Inf\n"
      "# EOF\n"
      "\n");
  ASSERT_EQ(e.families.size(), 5U);
  const Family& spaced = family(e, "spaced");
  EXPECT_EQ(spaced.help, " help with  two spaces");  // one blank separates name and text
  ASSERT_EQ(spaced.samples.size(), 2U);
  EXPECT_EQ(spaced.samples[0].labels, (std::vector<Label>{{"a", "x"}, {"b", ""}}));
  EXPECT_EQ(spaced.samples[0].value, 1.5);
  EXPECT_EQ(spaced.samples[1].value, -2);
  EXPECT_EQ(family(e, "empty_help").help, "");
  EXPECT_TRUE(std::isnan(family(e, "empty_help").samples.at(0).value));
  const Family& foo = family(e, "foo");
  EXPECT_EQ(foo.type, MetricType::counter);
  ASSERT_EQ(foo.samples.size(), 2U);
  EXPECT_EQ(foo.samples[0].timestamp_ms, 1750428341123);
  EXPECT_EQ(foo.samples[1].name, "foo_created");
  EXPECT_EQ(family(e, "h").samples.size(), 5U);
  EXPECT_TRUE(std::isinf(family(e, "inf_values").samples.at(1).value));
  EXPECT_TRUE(parse_ok("").families.empty());
}

TEST(TextParser, UnescapesLabelValuesAndHelp) {
  const Exposition e = parse_ok(
      "# HELP x Back\\\\slash and\\nnewline, \"quotes\" as they are.\n"
      "x{path=\"C:\\\\jobs\\\\\\\"nightly\\\"\\nretry\",utf8=\"Grüße\"} 1\n");
  const Family& x = family(e, "x");
  EXPECT_EQ(x.help, "Back\\slash and\nnewline, \"quotes\" as they are.");
  EXPECT_EQ(label(x.samples.at(0), "path"), "C:\\jobs\\\"nightly\"\nretry");
  EXPECT_EQ(label(x.samples.at(0), "utf8"), "Grüße");
}

TEST(TextParser, ACounterNamedWithTotalOwnsItsCreatedSeries) {
  // 0.0.4 clients name the family after the _total series; the _created one still belongs.
  const Exposition e = parse_ok("# TYPE reqs_total counter\nreqs_total 3\nreqs_created 1.7e+09\n");
  ASSERT_EQ(e.families.size(), 1U);
  EXPECT_EQ(e.families[0].samples.size(), 2U);
}

// ---- errors: line, column, what and the rule ----

TEST(TextParserErrors, BadNames) {
  EXPECT_EQ(parse_error("9lives 1\n"),
            "line 1, column 1: metric name \"9lives\" is invalid: metric names match [a-zA-Z_:][a-zA-Z0-9_:]* "
            "[metrics.metric-name]");
  EXPECT_EQ(parse_error("ok 1\nvllm-num_requests 1\n"),
            "line 2, column 1: metric name \"vllm-num_requests\" is invalid: metric names match "
            "[a-zA-Z_:][a-zA-Z0-9_:]* [metrics.metric-name]");
  EXPECT_EQ(parse_error("{a=\"b\"} 1\n"), "line 1, column 1: expected a metric name, found '{' [metrics.metric-name]");
  EXPECT_EQ(parse_error("x{model-name=\"a\"} 1\n"),
            "line 1, column 3: label name \"model-name\" is invalid: label names match [a-zA-Z_][a-zA-Z0-9_]* "
            "[metrics.label-name]");
  EXPECT_EQ(parse_error("x{a=\"1\", __name__=\"y\"} 1\n"),
            "line 1, column 10: label name \"__name__\" is reserved: names beginning with \"__\" are Prometheus' own "
            "[metrics.reserved-label]");
  EXPECT_EQ(parse_error("# TYPE 1x counter\n"),
            "line 1, column 8: metric name \"1x\" is invalid: metric names match [a-zA-Z_:][a-zA-Z0-9_:]* "
            "[metrics.metric-name]");
  EXPECT_EQ(parse_error("# HELP \n"), "line 1, column 8: expected a metric name after HELP [metrics.metric-name]");
}

TEST(TextParserErrors, LabelSyntax) {
  EXPECT_EQ(parse_error("x{a=\"abc} 1\n"),
            "line 1, column 5: the value of label a is not terminated: a '\"' on the same line must close it "
            "[metrics.text.unterminated-label-value]");
  EXPECT_EQ(parse_error("x{a=\"abc\\\"} 1\n"),
            "line 1, column 5: the value of label a is not terminated: a '\"' on the same line must close it "
            "[metrics.text.unterminated-label-value]");
  EXPECT_EQ(parse_error("x{a=\"multi\nline\"} 1\n"),
            "line 1, column 5: the value of label a is not terminated: a '\"' on the same line must close it "
            "[metrics.text.unterminated-label-value]");
  EXPECT_EQ(parse_error("x{a=\"tab\\tstop\"} 1\n"),
            "line 1, column 9: invalid escape \"\\\\t\" in the value of label a (only \\\\, \\\" and \\n) "
            "[metrics.text.escape]");
  EXPECT_EQ(parse_error("x{a=\"1\",a=\"2\"} 1\n"),
            "line 1, column 9: label a appears twice in one sample [metrics.duplicate-label]");
  EXPECT_EQ(parse_error("x{a \"1\"} 1\n"), "line 1, column 5: expected '=' after label name a [metrics.text.syntax]");
  EXPECT_EQ(parse_error("x{a=1} 1\n"),
            "line 1, column 5: expected '\"' to open the value of label a [metrics.text.syntax]");
  EXPECT_EQ(parse_error("x{a=\"1\" b=\"2\"} 1\n"),
            "line 1, column 9: expected ',' or '}' after the value of label a [metrics.text.syntax]");
  EXPECT_EQ(parse_error("x{a=\"1\"\n"),
            "line 1, column 8: expected ',' or '}' after the value of label a [metrics.text.syntax]");
  EXPECT_EQ(parse_error("x{a=\"1\", \n"),
            "line 1, column 10: the label set is not closed: expected a label name or '}' [metrics.text.syntax]");
  EXPECT_EQ(parse_error("x{a=\"\xc3\x28\"} 1\n"),
            "line 1, column 5: the value of label a is not valid UTF-8: \"\\xc3(\" [metrics.utf8]");
}

TEST(TextParserErrors, ValuesAndTimestamps) {
  EXPECT_EQ(parse_error("x 12abc\n"), "line 1, column 3: value \"12abc\" is not a number [metrics.text.value]");
  EXPECT_EQ(parse_error("x{a=\"1\"}\n"), "line 1, column 9: expected a value after x{a=\"1\"} [metrics.text.value]");
  EXPECT_EQ(parse_error("x\n"), "line 1, column 2: expected a value after x [metrics.text.value]");
  EXPECT_EQ(parse_error("x 1\r\n"), "line 1, column 3: value \"1\\x0d\" is not a number [metrics.text.value]");
  EXPECT_EQ(parse_error("x 0x1p3\n"), "line 1, column 3: value \"0x1p3\" is not a number [metrics.text.value]");
  EXPECT_EQ(parse_error("x 1 12.5\n"),
            "line 1, column 5: timestamp \"12.5\" is not an int64 of milliseconds since the epoch "
            "[metrics.text.timestamp]");
  EXPECT_EQ(parse_error("x 1 2 3\n"), "line 1, column 7: unexpected text after the timestamp [metrics.text.syntax]");
  EXPECT_EQ(parse_error("x 1"),
            "line 1, column 4: the last line does not end with a line feed, as the format requires "
            "[metrics.text.syntax]");
}

TEST(TextParserErrors, FamiliesAndMetadata) {
  EXPECT_EQ(parse_error("a 1\nb 1\na{x=\"2\"} 2\n"),
            "line 3, column 1: family a continues after another family began; its lines ended on line 1, and a "
            "family's lines must be together [metrics.text.family-not-contiguous]");
  EXPECT_EQ(parse_error("# TYPE h histogram\nh_bucket{le=\"+Inf\"} 1\nh_count 1\ng 1\nh_sum 2\n"),
            "line 5, column 1: family h continues after another family began; its lines ended on line 3, and a "
            "family's lines must be together [metrics.text.family-not-contiguous]");
  EXPECT_EQ(parse_error("a 1\n# TYPE b gauge\nb 1\n# HELP a Late help.\n"),
            "line 4, column 8: family a continues after another family began; its lines ended on line 1, and a "
            "family's lines must be together [metrics.text.family-not-contiguous]");
  EXPECT_EQ(parse_error("# TYPE x gauge\nx 1\n# TYPE x gauge\n"),
            "line 3, column 8: HELP and TYPE of x must come before its samples, which begin on line 2 "
            "[metrics.text.metadata]");
  EXPECT_EQ(parse_error("# HELP x One.\n# HELP x Two.\n"),
            "line 2, column 8: a second HELP line for x (the first is on line 1) [metrics.text.metadata]");
  EXPECT_EQ(parse_error("# TYPE x gauge\n# HELP x Help.\n# TYPE x counter\n"),
            "line 3, column 8: a second TYPE line for x (the first is on line 1) [metrics.text.metadata]");
  EXPECT_EQ(parse_error("# TYPE x gaug\n"),
            "line 1, column 10: unknown metric type \"gaug\" (counter, gauge, histogram, summary or untyped) "
            "[metrics.text.metadata]");
  EXPECT_EQ(parse_error("# TYPE x\n"), "line 1, column 9: expected a metric type after x [metrics.text.metadata]");
  EXPECT_EQ(parse_error("# TYPE x gauge extra\n"),
            "line 1, column 16: unexpected text after the metric type [metrics.text.syntax]");
  EXPECT_EQ(parse_error("# HELP x Bad \\t escape.\n"),
            "line 1, column 14: invalid escape \"\\\\t\" in HELP text (only \\\\ and \\n) [metrics.text.escape]");
  EXPECT_EQ(parse_error("x 1\n# EOF\ny 2\n"), "line 3, column 1: nothing may follow \"# EOF\" [metrics.text.after-eof]");
}

TEST(TextParserErrors, SeriesAndBuckets) {
  EXPECT_EQ(parse_error("x{a=\"1\",b=\"2\"} 1\nx{b=\"2\",a=\"1\"} 2\n"),
            "line 2, column 1: x{b=\"2\",a=\"1\"} appears twice (first on line 1) [metrics.duplicate-series]");
  EXPECT_EQ(parse_error("# TYPE h histogram\nh_bucket{pool=\"a\"} 1\n"),
            "line 2, column 1: h_bucket{pool=\"a\"} has no \"le\" label [metrics.bucket-label]");
  EXPECT_EQ(parse_error("# TYPE h histogram\nh_bucket{le=\"fast\"} 1\n"),
            "line 2, column 1: \"le\" value \"fast\" of h_bucket is not a number [metrics.bucket-label]");
  EXPECT_EQ(parse_error("# TYPE s summary\ns 1\n"), "line 2, column 1: s has no \"quantile\" label [metrics.bucket-label]");
  // A histogram's plain name is not one of its series (and names one family only).
  EXPECT_EQ(parse_error("# TYPE h histogram\nh_count 1\nh 2\n"),
            "line 3, column 1: sample \"h\" is not a series of the histogram h (h_bucket, h_sum, h_count, h_created) "
            "[metrics.sample-name]");
  EXPECT_EQ(parse_error("# TYPE h histogram\nh_count 1\ng 1\nh 2\n"),
            "line 4, column 1: family h continues after another family began; its lines ended on line 2, and a "
            "family's lines must be together [metrics.text.family-not-contiguous]");
}

TEST(TextParserErrors, Limits) {
  ParseLimits limits;
  limits.max_bytes = 10;
  EXPECT_EQ(parse_error("x 1\nyy 22\nz 3\n", limits),
            "line 3, column 1: the input has 14 bytes, more than the limit of 10 [metrics.text.too-large]");
  EXPECT_EQ(parse_error("x 1\nyy 22\n", limits), "(parsed)");
  limits = {};
  limits.max_lines = 2;
  EXPECT_EQ(parse_error("x 1\n\ny 1\n", limits),
            "line 3, column 1: the input has more than 2 lines [metrics.text.too-many-lines]");
  limits = {};
  limits.max_labels_per_sample = 2;
  EXPECT_EQ(parse_error("x{a=\"1\",b=\"2\",c=\"3\"} 1\n", limits),
            "line 1, column 15: a sample has more than 2 labels [metrics.text.too-many-labels]");
  limits = {};
  limits.max_label_value_bytes = 4;
  EXPECT_EQ(parse_error("x{a=\"1234\"} 1\n", limits), "(parsed)");
  EXPECT_EQ(parse_error("x{a=\"12345\"} 1\n", limits),
            "line 1, column 5: the value of label a is longer than 4 bytes [metrics.text.label-value-too-long]");
  // Escapes count as the byte they stand for.
  EXPECT_EQ(parse_error("x{a=\"\\\\\\\\\\n\\\"\"} 1\n", limits), "(parsed)");
}

}  // namespace
}  // namespace gpubank::metrics
