// SignalWindow's TTFT p95 against the real promtool. Three replicas of the twin's vLLM
// metrics are scraped about every 15 s (with jitter, so the 2m window's edges fall at every
// distance from the samples): "a" throughout, restarting halfway (its counters reset); "b"
// starting late from zero; "c" disappearing; then a spell without requests. Each scrape
// goes the whole way a real one does: the twin's exposition, written as text, read by
// read_vllm_text, added to the window. The same bucket samples become a `promtool test
// rules` file whose expected value of
//   histogram_quantile(0.95, sum by (le) (rate(vllm:time_to_first_token_seconds_bucket[2m])))
// at every scrape is what SignalWindow::observe() says; promtool compares exactly.
//
// One freedom is Prometheus': it adds the replicas' rates in its storage order (the order
// promtool created the series, which follows a Go map's iteration and changes from run to
// run), and a sum of three doubles can depend on the order. So the test works out the
// quantile for every order of the replicas: where all orders give the same double (or none
// has a rate, or all give NaN) that value is expected exactly; where they do not, promtool's
// value must lie between the smallest and the largest of them (an ulp or two apart), and
// SignalWindow's is the one for replica-name order.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "metrics/exposition.hpp"
#include "metrics/histogram.hpp"
#include "metrics/number.hpp"
#include "serving/signals.hpp"
#include "support/promtool.hpp"
#include "twin/inference/vllm_metrics.hpp"

namespace gpubank::serving {
namespace {

using namespace gpubank::testing;  // promtool.hpp
using twin::inference::kTtftBucketsSeconds;
using twin::inference::VllmCounters;

constexpr std::int64_t kWindowMs = 120'000;  // [2m]
constexpr int kSteps = 84;                   // scrapes, about 21 minutes
constexpr int kRestartA = 30;                // "a" restarts before this scrape
constexpr int kStartB = 20;                  // "b"'s first scrape
constexpr int kLastC = 49;                   // "c"'s last scrape
constexpr int kIdleFrom = 60;                // no requests anywhere from here ...
constexpr int kIdleTo = 72;                  // ... to here
const std::array<std::string, 3> kReplicas{"a", "b", "c"};

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

// Whole seconds, so that promtool's 1s grid holds every scrape.
std::int64_t scrape_ms(int k) { return (15 * k + static_cast<std::int64_t>(splitmix64(k) % 5)) * 1000; }

bool present(int replica, int k) {
  if (replica == 1) return k >= kStartB;
  if (replica == 2) return k <= kLastC;
  return true;
}

// The requests a replica finished between scrape k-1 and k: TTFTs in microseconds, mostly
// 20-600 ms, one in five 0.6-6 s.
void serve(VllmCounters& counters, int replica, int k) {
  if (k >= kIdleFrom && k < kIdleTo) return;
  std::uint64_t r = splitmix64(static_cast<std::uint64_t>(k) * 7 + static_cast<std::uint64_t>(replica) + 1000);
  const int n = 3 + static_cast<int>(r % (10 + 6 * static_cast<std::uint64_t>(replica)));
  for (int i = 0; i < n; ++i) {
    r = splitmix64(r);
    const bool slow = r % 5 == 0;
    const std::int64_t us = slow ? 600'000 + static_cast<std::int64_t>((r >> 8) % 5'400'000)
                                 : 20'000 + static_cast<std::int64_t>((r >> 8) % 580'000);
    counters.time_to_first_token.observe(us);
  }
}

// The twin's page at scrape k, read back as the autoscaler reads it.
struct Scenario {
  std::vector<Scrape> scrapes;
  // Cumulative counts of replica r's bucket b at scrape k, when scraped.
  std::array<std::vector<std::vector<std::optional<double>>>, 3> counts;  // [r][b][k]
  std::vector<double> bounds;  // with +Inf last
};

Scenario make_scenario() {
  Scenario s;
  s.bounds.assign(kTtftBucketsSeconds.begin(), kTtftBucketsSeconds.end());
  s.bounds.push_back(std::numeric_limits<double>::infinity());
  for (auto& per_bucket : s.counts) per_bucket.assign(s.bounds.size(), std::vector<std::optional<double>>(kSteps));
  std::array<VllmCounters, 3> counters;
  for (int k = 0; k < kSteps; ++k) {
    if (k == kRestartA) counters[0] = VllmCounters{};  // the restart: every count from zero
    std::vector<twin::inference::VllmReplicaSeries> series;
    for (int r = 0; r < 3; ++r) {
      if (!present(r, k)) continue;
      if (!(r == 1 && k == kStartB)) serve(counters[r], r, k);  // "b" is first scraped with nothing served
      series.push_back({kReplicas[r], 2, 1, 0.5, &counters[r]});
      std::int64_t cumulative = 0;
      const auto& per_bucket = counters[r].time_to_first_token.bucket_counts();
      for (std::size_t b = 0; b < s.bounds.size(); ++b) {
        cumulative += per_bucket[b];
        s.counts[r][b][k] = static_cast<double>(cumulative);
      }
    }
    const auto text = metrics::write_text(twin::inference::vllm_exposition("llm", series));
    EXPECT_TRUE(text.ok()) << text.error();
    ScrapeOptions options;
    options.model_name = "llm";
    auto scrape = read_vllm_text(*text, scrape_ms(k), options);
    EXPECT_TRUE(scrape.ok()) << scrape.error();
    s.scrapes.push_back(std::move(*scrape));
  }
  return s;
}

// The points of one series up to and including scrape k.
std::vector<metrics::Point> points(const Scenario& s, int r, std::size_t b, int k) {
  std::vector<metrics::Point> out;
  for (int i = 0; i <= k; ++i) {
    if (s.counts[r][b][i]) out.push_back({scrape_ms(i), *s.counts[r][b][i]});
  }
  return out;
}

// PromQL's answer at scrape k when it adds the replicas' rates in `order`.
std::optional<double> quantile_in_order(const Scenario& s, int k, const std::array<int, 3>& order, int& contributing) {
  const metrics::Range range{scrape_ms(k), kWindowMs};
  std::map<double, double> sums;
  std::array<bool, 3> has_rate{};
  for (const int r : order) {
    for (std::size_t b = 0; b < s.bounds.size(); ++b) {
      if (const auto rate = metrics::rate(points(s, r, b, k), range)) {
        has_rate[r] = true;
        const auto [it, fresh] = sums.emplace(s.bounds[b], *rate);
        if (!fresh) it->second += *rate;
      }
    }
  }
  contributing = static_cast<int>(std::count(has_rate.begin(), has_rate.end(), true));
  if (sums.empty()) return std::nullopt;
  std::vector<metrics::Bucket> buckets;
  for (const auto& entry : sums) buckets.push_back({entry.first, entry.second});
  return metrics::bucket_quantile(0.95, buckets);
}

bool same(std::optional<double> x, std::optional<double> y) {
  if (!x || !y) return !x && !y;
  if (std::isnan(*x) || std::isnan(*y)) return std::isnan(*x) && std::isnan(*y);
  return *x == *y;
}

std::string yaml_float(double v) {
  if (std::isinf(v)) return v > 0 ? ".inf" : "-.inf";
  return metrics::format_value(v);
}

constexpr const char* kQuery =
    "histogram_quantile(0.95, sum by (le) (rate(vllm:time_to_first_token_seconds_bucket[2m])))";

struct Expectation {
  std::int64_t at_ms = 0;
  std::optional<double> value;  // exact; nothing: no sample
  std::optional<std::pair<double, double>> envelope;  // instead: between these
};

std::string test_file(const Scenario& s, const std::vector<Expectation>& expectations) {
  std::string out =
      "# Generated by tests/serving/ttft_promtool_test.cpp: the expected values are SignalWindow's.\n"
      "evaluation_interval: 1s\n"
      "tests:\n"
      "  - interval: 1s\n"
      "    input_series:\n";
  const std::int64_t last_second = scrape_ms(kSteps - 1) / 1000;
  for (int r = 0; r < 3; ++r) {
    for (std::size_t b = 0; b < s.bounds.size(); ++b) {
      const std::string le =
          std::isinf(s.bounds[b]) ? std::string("+Inf") : twin::inference::python_float(s.bounds[b]);
      out += "      - series: 'vllm:time_to_first_token_seconds_bucket{engine=\"0\", le=\"" + le +
             "\", model_name=\"llm\", replica=\"" + kReplicas[r] + "\"}'\n        values: '";
      std::map<std::int64_t, double> by_second;
      for (int k = 0; k < kSteps; ++k) {
        if (s.counts[r][b][k]) by_second[scrape_ms(k) / 1000] = *s.counts[r][b][k];
      }
      for (std::int64_t second = 0; second <= last_second; ++second) {
        if (second > 0) out += ' ';
        const auto it = by_second.find(second);
        out += it == by_second.end() ? "_" : metrics::format_value(it->second);
      }
      out += "'\n";
    }
  }
  out += "    promql_expr_test:\n";
  const auto add = [&out](const std::string& expr, std::int64_t at_ms, std::optional<double> value) {
    out += "      - expr: '" + expr + "'\n        eval_time: " + std::to_string(at_ms) + "ms\n";
    if (!value) {
      out += "        exp_samples: []\n";
    } else {
      out += "        exp_samples:\n          - labels: '{}'\n            value: " + yaml_float(*value) + "\n";
    }
  };
  const std::string q = kQuery;
  for (const Expectation& e : expectations) {
    if (e.envelope) {
      add("(" + q + " >= bool " + metrics::format_value(e.envelope->first) + ") * (" + q + " <= bool " +
              metrics::format_value(e.envelope->second) + ")",
          e.at_ms, 1.0);
      continue;
    }
    // NaN != NaN in promtool's comparison too: a NaN is checked as `x != bool x` == 1.
    const bool nan = e.value && std::isnan(*e.value);
    if (!nan) add(q, e.at_ms, e.value);
    add(q + " != bool " + q, e.at_ms, e.value ? std::optional<double>(nan ? 1 : 0) : std::nullopt);
  }
  return out;
}

TEST(TtftAgainstPromtool, SignalWindowsQuantileIsPromtools) {
  const auto promtool = find_promtool();
  ASSERT_TRUE(promtool.has_value()) << kPromtoolMissing;
  const Scenario s = make_scenario();
  ASSERT_EQ(s.scrapes.size(), static_cast<std::size_t>(kSteps));

  SignalWindow window(kWindowMs);
  std::vector<Expectation> expectations;
  int exact_three = 0, envelopes = 0, nans = 0, none = 0, across_reset = 0, after_c_left = 0, with_b_start = 0;
  std::array<std::array<int, 3>, 6> orders{{{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}}};
  for (int k = 0; k < kSteps; ++k) {
    ASSERT_TRUE(window.add(s.scrapes[static_cast<std::size_t>(k)]).ok());
    const Observation obs = window.observe();
    ASSERT_EQ(obs.t_ms, scrape_ms(k));

    int contributing = 0;
    std::vector<std::optional<double>> results;
    for (const auto& order : orders) results.push_back(quantile_in_order(s, k, order, contributing));
    // SignalWindow adds in replica-name order, a, b, c.
    const std::optional<double> by_name = results.front();
    const bool nan_or_none = !by_name || std::isnan(*by_name);
    if (nan_or_none) {
      EXPECT_FALSE(obs.ttft_p95_s.has_value()) << "scrape " << k;
    } else {
      ASSERT_TRUE(obs.ttft_p95_s.has_value()) << "scrape " << k;
      EXPECT_EQ(*obs.ttft_p95_s, *by_name) << "scrape " << k;  // bit for bit
    }

    const std::int64_t t = scrape_ms(k);
    const bool order_free = std::all_of(results.begin(), results.end(),
                                        [&](const std::optional<double>& x) { return same(x, by_name); });
    if (order_free) {
      expectations.push_back({t, by_name, std::nullopt});
      if (contributing == 3) ++exact_three;
    } else {
      double lo = *by_name, hi = *by_name;
      for (const auto& x : results) {
        lo = std::min(lo, *x);
        hi = std::max(hi, *x);
      }
      expectations.push_back({t, std::nullopt, std::make_pair(lo, hi)});
      ++envelopes;
    }
    if (!by_name) ++none;
    if (by_name && std::isnan(*by_name)) ++nans;
    const bool has_value = by_name && !std::isnan(*by_name);
    if (has_value && t - kWindowMs < scrape_ms(kRestartA) && t >= scrape_ms(kRestartA)) ++across_reset;
    if (has_value && k > kLastC && contributing == 3) ++after_c_left;
    if (has_value && k > kStartB && t - kWindowMs <= scrape_ms(kStartB)) ++with_b_start;
  }

  // The scenario covers what it claims to.
  EXPECT_GE(exact_three, 3) << "no instant with three replicas whose sum is order-free";
  EXPECT_GE(nans, 2) << "no window of the idle spell";
  EXPECT_EQ(none, 1) << "only the first scrape has no rate";
  EXPECT_GE(across_reset, 6) << "no window across a's restart";
  EXPECT_GE(after_c_left, 4) << "no window with c gone from the scrape but still in the range";
  EXPECT_GE(with_b_start, 6) << "no window over b's first scrapes";
  std::cout << "[ info ] " << expectations.size() << " instants: " << exact_three
            << " exact with three replicas, " << envelopes << " within the orders' envelope, " << nans
            << " NaN\n";

  ScratchDir dir;
  write_file(dir.path() / "ttft.test.yaml", test_file(s, expectations));
  const auto r = run_in(dir.path(), promtool->string() + " test rules ttft.test.yaml");
  EXPECT_EQ(r.status, 0) << r.output << "\n(the test file: " << (dir.path() / "ttft.test.yaml") << ")";
  EXPECT_NE(r.output.find("SUCCESS"), std::string::npos) << r.output;

  // The comparison is exact: one expected value an ulp off makes promtool fail.
  for (Expectation& e : expectations) {
    if (!e.envelope && e.value && std::isfinite(*e.value) && e.at_ms > scrape_ms(kLastC)) {
      e.value = std::nextafter(*e.value, std::numeric_limits<double>::infinity());
      break;
    }
  }
  write_file(dir.path() / "ttft.test.yaml", test_file(s, expectations));
  const auto off = run_in(dir.path(), promtool->string() + " test rules ttft.test.yaml");
  EXPECT_EQ(off.status, 1) << off.output;
  EXPECT_NE(off.output.find("histogram_quantile(0.95"), std::string::npos) << off.output;
}

}  // namespace
}  // namespace gpubank::serving
