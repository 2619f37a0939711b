// The PromQL maths against the real thing: one scenario of vLLM TTFT buckets (steady
// traffic, a counter reset, a long idle spell, a scrape gap longer than the window, and
// observations only in +Inf) is written as a `promtool test rules` file whose expected
// values are what histogram.hpp computes; promtool evaluates the same expressions on the
// same samples and compares them exactly (reflect.DeepEqual on float64).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "metrics/histogram.hpp"
#include "metrics/number.hpp"
#include "support/promtool.hpp"

namespace gpubank::metrics {
namespace {

using namespace gpubank::testing;  // promtool.hpp

constexpr std::int64_t kIntervalMs = 15'000;  // a typical vLLM scrape interval
constexpr std::int64_t kWindowMs = 300'000;   // [5m]
constexpr const char* kLabels = R"(engine="0", model_name="llm")";

// One series as promtool's input_series gives it: a value per interval, or none ("_").
struct InputSeries {
  std::string name;
  std::string extra_label;  // `le="0.5"`, or empty
  std::vector<std::optional<double>> values;

  [[nodiscard]] std::vector<Point> points() const {
    std::vector<Point> out;
    for (std::size_t i = 0; i < values.size(); ++i) {
      if (values[i]) out.push_back({static_cast<std::int64_t>(i) * kIntervalMs, *values[i]});
    }
    return out;
  }
  [[nodiscard]] std::string selector() const {
    return name + "{" + kLabels + (extra_label.empty() ? "" : ", " + extra_label) + "}";
  }
};

struct Scenario {
  std::vector<double> bounds;             // the finite ones
  std::vector<InputSeries> buckets;       // one per bound, then +Inf
  InputSeries count;                      // _count (= the +Inf bucket)
  InputSeries waiting;                    // a gauge, for delta()
  std::size_t steps = 0;
};

// The phases, in steps of 15 s.
constexpr std::size_t kResetStep = 25;   // 6m15s: vLLM restarts, every bucket restarts, and runs slower
constexpr std::size_t kIdleFrom = 37;    // no requests for 6 minutes
constexpr std::size_t kGapFrom = 61;     // target down for 6 minutes: no samples at all
constexpr std::size_t kSlowFrom = 85;    // back; every request slower than the last bound ...
constexpr std::size_t kMixedFrom = 97;   // ... then a mix again
constexpr std::size_t kSteps = 111;      // until 27m30s

// New observations per bucket (not cumulative) in one step of a phase.
std::vector<double> observations(std::size_t step) {
  std::vector<double> per_bucket;
  if (step < kResetStep) {
    per_bucket = {50, 70, 40, 20, 10, 1};
  } else if (step < kIdleFrom) {
    per_bucket = {10, 20, 40, 50, 30, 4};
  } else if (step >= kSlowFrom && step < kMixedFrom) {
    per_bucket = {0, 0, 0, 0, 0, 2};
  } else if (step >= kMixedFrom) {
    per_bucket = {0, 0, 1, 2, 3, 1};
  } else {
    return std::vector<double>(6, 0);
  }
  if (step < kIdleFrom) {
    // Uneven from step to step, so that the buckets do not rise in proportion.
    for (std::size_t b = 0; b < per_bucket.size(); ++b) per_bucket[b] += (step + b) % 3 == 0 ? 3 : 0;
  }
  return per_bucket;
}

Scenario make_scenario() {
  Scenario s;
  s.bounds = {0.1, 0.25, 0.5, 1.0, 2.5};
  s.steps = kSteps;
  const std::vector<std::string> le = {"0.1", "0.25", "0.5", "1.0", "2.5", "+Inf"};
  std::vector<double> totals(le.size(), 0);  // per bucket, not cumulative
  for (std::size_t b = 0; b < le.size(); ++b) {
    s.buckets.push_back({"vllm:time_to_first_token_seconds_bucket", "le=\"" + le[b] + "\"", {}});
  }
  s.count.name = "vllm:time_to_first_token_seconds_count";
  s.waiting.name = "vllm:num_requests_waiting";
  for (std::size_t step = 0; step < kSteps; ++step) {
    if (step == kResetStep) std::fill(totals.begin(), totals.end(), 0);
    const auto added = observations(step);
    for (std::size_t b = 0; b < le.size(); ++b) totals[b] += added[b];
    const bool gap = step >= kGapFrom && step < kSlowFrom;
    double cumulative = 0;
    for (std::size_t b = 0; b < le.size(); ++b) {
      cumulative += totals[b];
      s.buckets[b].values.push_back(gap ? std::nullopt : std::optional<double>(cumulative));
    }
    s.count.values.push_back(s.buckets.back().values.back());
    s.waiting.values.push_back(gap ? std::nullopt : std::optional<double>(static_cast<double>((step * 7) % 11)));
  }
  return s;
}

// A float as the YAML promtool reads (gopkg.in/yaml.v2): infinities are .inf / -.inf.
std::string yaml_float(double v) {
  if (std::isinf(v)) return v > 0 ? ".inf" : "-.inf";
  return format_value(v);
}

std::string values_text(const InputSeries& series) {
  std::string out;
  for (const auto& v : series.values) {
    if (!out.empty()) out += ' ';
    out += v ? format_value(*v) : "_";
  }
  return out;
}

std::string eval_time(std::int64_t ms) { return std::to_string(ms) + "ms"; }

struct Expectation {
  std::string expr;
  std::int64_t at_ms = 0;
  std::optional<double> value;  // nothing: PromQL returns no sample
  std::string labels = std::string("{") + kLabels + "}";
};

struct Counts {
  int values = 0, nans = 0, none = 0, plus_inf_bucket = 0, after_reset = 0;
};

// The promql_expr_test entries. A NaN result cannot be compared (NaN != NaN in
// reflect.DeepEqual), so each expression is also checked with `x != bool x`, 1 exactly
// for NaN.
std::string expectations_yaml(const std::vector<Expectation>& expectations) {
  std::string out;
  for (const Expectation& e : expectations) {
    const auto add = [&](const std::string& expr, std::optional<double> value) {
      out += "      - expr: '" + expr + "'\n        eval_time: " + eval_time(e.at_ms) + "\n";
      if (!value) {
        out += "        exp_samples: []\n";
      } else {
        out += "        exp_samples:\n          - labels: '" + e.labels + "'\n            value: " + yaml_float(*value) + "\n";
      }
    };
    const bool nan = e.value && std::isnan(*e.value);
    if (!nan) add(e.expr, e.value);
    add(e.expr + " != bool " + e.expr, e.value ? std::optional<double>(nan ? 1 : 0) : std::nullopt);
  }
  return out;
}

std::string test_file(const Scenario& s, const std::vector<Expectation>& expectations) {
  std::string out =
      "# Generated by tests/metrics/promql_promtool_test.cpp: the expected values are gpubank's.\n"
      "evaluation_interval: 1m\n"
      "tests:\n"
      "  - interval: 15s\n"
      "    input_series:\n";
  std::vector<const InputSeries*> all;
  for (const auto& b : s.buckets) all.push_back(&b);
  all.push_back(&s.count);
  all.push_back(&s.waiting);
  for (const InputSeries* series : all) {
    out += "      - series: '" + series->selector() + "'\n        values: '" + values_text(*series) + "'\n";
  }
  out += "    promql_expr_test:\n";
  out += expectations_yaml(expectations);
  return out;
}

std::vector<Expectation> expectations(const Scenario& s, Counts& counts) {
  std::vector<BucketSeries> buckets;
  for (std::size_t b = 0; b < s.buckets.size(); ++b) {
    buckets.push_back({b < s.bounds.size() ? s.bounds[b] : std::numeric_limits<double>::infinity(),
                       s.buckets[b].points()});
  }
  // Every 37 s, so that the window's edges fall at every distance from the samples, and
  // instants on the scrape grid (samples on both edges).
  std::vector<std::int64_t> times;
  for (std::int64_t t = 20'000; t < static_cast<std::int64_t>(s.steps) * kIntervalMs + 60'000; t += 37'000) {
    times.push_back(t);
  }
  for (const std::int64_t t : {300'000, 375'000, 382'500, 1'275'000}) times.push_back(t);

  std::vector<Expectation> out;
  for (const std::int64_t t : times) {
    const Range r{t, kWindowMs};
    for (const double q : {0.95, 0.5}) {
      const auto v = quantile_of_rate(q, buckets, r);
      out.push_back({"histogram_quantile(" + format_value(q) + ", rate(vllm:time_to_first_token_seconds_bucket[5m]))",
                     t, v});
      if (!v) {
        ++counts.none;
      } else if (std::isnan(*v)) {
        ++counts.nans;
      } else {
        ++counts.values;
        if (*v == s.bounds.back()) ++counts.plus_inf_bucket;
      }
      const std::int64_t reset_ms = static_cast<std::int64_t>(kResetStep) * kIntervalMs;
      if (v && t > reset_ms && t - kWindowMs < reset_ms) ++counts.after_reset;
    }
    const auto count_points = s.count.points();
    out.push_back({"rate(vllm:time_to_first_token_seconds_count[5m])", t, rate(count_points, r)});
    out.push_back({"increase(vllm:time_to_first_token_seconds_count[5m])", t, increase(count_points, r)});
    out.push_back({"increase(vllm:time_to_first_token_seconds_bucket{le=\"0.5\"}[5m])", t,
                   increase(s.buckets[2].points(), r), std::string("{") + kLabels + ", le=\"0.5\"}"});
    out.push_back({"delta(vllm:num_requests_waiting[5m])", t, delta(s.waiting.points(), r)});
  }
  // q outside [0, 1].
  out.push_back({"histogram_quantile(1.5, rate(vllm:time_to_first_token_seconds_bucket[5m]))", 300'000,
                 quantile_of_rate(1.5, buckets, {300'000, kWindowMs})});
  out.push_back({"histogram_quantile(-0.5, rate(vllm:time_to_first_token_seconds_bucket[5m]))", 300'000,
                 quantile_of_rate(-0.5, buckets, {300'000, kWindowMs})});
  return out;
}

TEST(PromqlAgainstPromtool, QuantilesAndRatesEqualPromtoolsToTheLastBit) {
  const auto promtool = find_promtool();
  ASSERT_TRUE(promtool.has_value()) << kPromtoolMissing;
  const Scenario scenario = make_scenario();
  Counts counts;
  std::vector<Expectation> exp = expectations(scenario, counts);

  // The scenario covers what it claims to.
  EXPECT_GE(counts.values, 40);
  EXPECT_GE(counts.nans, 4) << "no window of the idle spell";
  EXPECT_GE(counts.none, 4) << "no window inside the scrape gap";
  EXPECT_GE(counts.plus_inf_bucket, 4) << "no window with observations only in +Inf";
  EXPECT_GE(counts.after_reset, 8) << "no window across the counter reset";

  ScratchDir dir;
  write_file(dir.path() / "promql.test.yaml", test_file(scenario, exp));
  const auto r = run_in(dir.path(), promtool->string() + " test rules promql.test.yaml");
  EXPECT_EQ(r.status, 0) << r.output << "\n(the test file: " << (dir.path() / "promql.test.yaml") << ")";
  EXPECT_NE(r.output.find("SUCCESS"), std::string::npos) << r.output;

  // The comparison is exact: one expected value one ulp off makes promtool fail.
  for (Expectation& e : exp) {
    if (e.value && std::isfinite(*e.value) && *e.value != 0 && e.expr.starts_with("histogram_quantile(0.95")) {
      e.value = std::nextafter(*e.value, std::numeric_limits<double>::infinity());
      break;
    }
  }
  write_file(dir.path() / "promql.test.yaml", test_file(scenario, exp));
  const auto off = run_in(dir.path(), promtool->string() + " test rules promql.test.yaml");
  EXPECT_EQ(off.status, 1) << off.output;
  EXPECT_NE(off.output.find("histogram_quantile(0.95"), std::string::npos) << off.output;
}

}  // namespace
}  // namespace gpubank::metrics
