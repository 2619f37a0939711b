// Philly's demand curve -> training workloads whose aggregate is the curve, and Azure's
// hour of LLM requests -> days with a diurnal cycle.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <string>

#include "document/loader.hpp"
#include "core/timestamp.hpp"
#include "support/paths.hpp"
#include "twin/trace/azure_llm.hpp"
#include "twin/trace/philly.hpp"

namespace gpubank::twin::trace {
namespace {

std::string trace_file(const std::string& relative) {
  auto text = doc::read_file(gpubank::testing::shared_dir() + "/traces/" + relative, std::size_t{64} << 20);
  EXPECT_TRUE(text.ok()) << relative;
  return text.ok() ? *text : std::string();
}

const PhillyDemandCurve& real_curve() {
  static const PhillyDemandCurve curve = [] {
    Diagnostics d;
    const auto vcs = read_philly_vcs(trace_file("philly/philly_vc.csv"), "vc.csv", d);
    const auto samples = read_philly_node_sequence(trace_file("philly/philly_node_sequence.csv"), "seq.csv", d);
    EXPECT_TRUE(vcs && samples);
    auto c = philly_demand_curve(vcs.value_or(std::vector<PhillyVc>{}), samples.value_or(std::vector<PhillyNodeSample>{}));
    EXPECT_TRUE(c.ok());
    return c.ok() ? *c : PhillyDemandCurve{};
  }();
  return curve;
}

// Running nodes of one group at minute m.
std::int64_t running_at(const run::Scenario& s, const std::string& group, std::int64_t minute) {
  const std::int64_t t = minute * 60'000;
  std::int64_t n = 0;
  for (const auto& w : s.workloads) {
    if (w.business_group != group) continue;
    const std::int64_t a = w.arrival_time.milliseconds();
    if (a <= t && t < a + w.run_time.milliseconds()) ++n;
  }
  return n;
}

TEST(PhillyScenario, TheAggregateIsTheHourlyCurve) {
  const auto& curve = real_curve();
  ASSERT_EQ(curve.vcs.size(), 11u);
  const auto out = philly_scenario(curve);
  ASSERT_TRUE(out.ok()) << out.error();
  // Dated as the trace: its first sample, 2017-10-03 00:00:00 (not 1970).
  ASSERT_TRUE(out->scenario.start.has_value());
  EXPECT_EQ(format_rfc3339(*out->scenario.start), "2017-10-03T00:00:00Z");
  // 106243 minutes: 1770 whole hours and 43 minutes, 1771 blocks.
  ASSERT_EQ(out->levels.front().size(), 1771u);
  std::int64_t level_minutes = 0;
  for (const auto& vc : out->levels) {
    for (std::size_t b = 0; b < vc.size(); ++b) level_minutes += vc[b] * (b + 1 < vc.size() ? 60 : 43);
  }
  std::int64_t job_minutes = 0, workloads = 0;
  for (const auto& g : out->per_group) {
    job_minutes += g.second.node_minutes;
    workloads += g.second.workloads;
  }
  // Hourly means rounded half up: 33099199 node-minutes against the raw 33065327 (0.1 %
  // more; an independent script gives the same sum).
  EXPECT_EQ(level_minutes, 33'099'199);
  EXPECT_EQ(job_minutes, level_minutes);
  EXPECT_EQ(workloads, static_cast<std::int64_t>(out->scenario.workloads.size()));
  // The running count equals the level at the start, middle and end of a few blocks.
  for (const std::size_t v : {std::size_t{0}, std::size_t{8}}) {
    const std::string group = "vc-" + curve.vcs[v];
    for (const std::int64_t block : {0, 1, 500, 1000, 1770}) {
      for (const std::int64_t offset : {0, 30, 42}) {
        EXPECT_EQ(running_at(out->scenario, group, block * 60 + offset), out->levels[v][static_cast<std::size_t>(block)])
            << group << " block " << block;
      }
    }
  }
  std::set<std::string> names;
  std::int64_t max_run = 0;
  for (const auto& w : out->scenario.workloads) {
    EXPECT_TRUE(names.insert(w.name).second);
    EXPECT_EQ(w.gpus, 8);
    EXPECT_EQ(w.resource_pool, "philly");
    EXPECT_EQ(w.workload_type, policy::WorkloadType::Training);
    max_run = std::max(max_run, w.run_time.milliseconds());
  }
  EXPECT_LE(max_run, 24LL * 3'600'000);
  EXPECT_TRUE(std::is_sorted(out->scenario.workloads.begin(), out->scenario.workloads.end(),
                             [](const auto& a, const auto& b) { return a.arrival_time < b.arrival_time; }));
  EXPECT_LT(out->scenario.workloads.size(), 200'000u);  // the scenario checker's limit
  // Deterministic, and the seed matters (the job lengths are drawn).
  const auto again = philly_scenario(curve);
  ASSERT_TRUE(again.ok());
  ASSERT_EQ(again->scenario.workloads.size(), out->scenario.workloads.size());
  for (std::size_t i = 0; i < out->scenario.workloads.size(); i += 97) {
    EXPECT_EQ(again->scenario.workloads[i].name, out->scenario.workloads[i].name);
    EXPECT_EQ(again->scenario.workloads[i].run_time, out->scenario.workloads[i].run_time);
  }
  PhillyScenarioOptions other;
  other.seed = 2;
  const auto reseeded = philly_scenario(curve, other);
  ASSERT_TRUE(reseeded.ok());
  auto run_times = [](const run::Scenario& s) {
    std::vector<std::int64_t> v;
    for (const auto& w : s.workloads) v.push_back(w.run_time.milliseconds());
    return v;
  };
  EXPECT_NE(run_times(reseeded->scenario), run_times(out->scenario));
}

TEST(PhillyScenario, SmallCurveByHand) {
  // One VC; levels per 10-minute block 2, 3, 1, 0, 2 (samples every minute, constant per block).
  std::vector<PhillyNodeSample> samples;
  const std::vector<std::int64_t> levels{2, 3, 1, 0, 2};
  for (std::size_t b = 0; b < levels.size(); ++b) {
    for (int m = 0; m < 10; ++m) samples.push_back({static_cast<std::int64_t>(b * 10 + m) * 60, levels[b], 10});
  }
  const auto curve = philly_demand_curve({{"a", 4}}, samples);
  ASSERT_TRUE(curve.ok());
  PhillyScenarioOptions o;
  o.resolution_minutes = 10;
  o.max_run_time = Duration(std::chrono::hours(10));  // long enough: one job per layer stretch
  o.gpus_per_node = 2;
  const auto out = philly_scenario(*curve, o);
  ASSERT_TRUE(out.ok());
  // Layer 1 is up in blocks 0-2 and 4; layer 2 in 0-1 and 4; layer 3 in 1. The draws may cut
  // a stretch into several jobs, but the node-minutes are (2 + 3 + 1 + 0 + 2) x 10 = 80.
  EXPECT_EQ(out->per_group.at("vc-a").node_minutes, 80);
  for (std::int64_t minute = 0; minute < 50; ++minute) {
    EXPECT_EQ(running_at(out->scenario, "vc-a", minute), levels[static_cast<std::size_t>(minute / 10)]) << minute;
  }
  o.days = 400;
  EXPECT_FALSE(philly_scenario(*curve, o).ok());
  o.days.reset();
  o.resolution_minutes = 0;
  EXPECT_FALSE(philly_scenario(*curve, o).ok());
}

TEST(PhillyScenario, DaysLimitCutsTheCurve) {
  PhillyScenarioOptions o;
  o.days = 7;
  const auto out = philly_scenario(real_curve(), o);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->levels.front().size(), 168u);  // 7 x 24 blocks
  for (const auto& w : out->scenario.workloads) {
    EXPECT_LE(w.arrival_time.milliseconds() + w.run_time.milliseconds(), 7LL * 86'400'000);
  }
}

TEST(PhillyCurve, BadInputsAreRefused) {
  EXPECT_FALSE(philly_demand_curve({}, {{0, 1, 1}}).ok());
  EXPECT_FALSE(philly_demand_curve({{"a", 0}}, {{0, 1, 1}}).ok());
  EXPECT_FALSE(philly_demand_curve({{"a", 1}}, {}).ok());
  EXPECT_FALSE(philly_demand_curve({{"a", 1}}, {{0, 1, 1}, {60LL * 400 * 1440, 1, 1}}).ok());  // > a year
}

// ---- Azure ---------------------------------------------------------------------------

const std::vector<AzureRequest>& conv() {
  static const std::vector<AzureRequest> requests = [] {
    Diagnostics d;
    auto r = read_azure_llm(trace_file("azure-llm-2023/AzureLLMInferenceTrace_conv.csv"), "conv.csv", d);
    EXPECT_TRUE(r);
    return r.value_or(std::vector<AzureRequest>{});
  }();
  return requests;
}

TEST(DiurnalRepeat, AFlatCurveRepeatsTheHourExactly) {
  DiurnalCurve flat;
  flat.fill(1.0);
  const auto out = diurnal_repeat(conv(), 1, flat, 1);
  ASSERT_TRUE(out.ok()) << out.error();
  ASSERT_EQ(out->size(), 24u * 19366u);  // every request once an hour (all within the first hour)
  for (std::size_t i = 0; i < conv().size(); i += 101) {
    EXPECT_EQ((*out)[i].offset_ns, conv()[i].offset_ns);
    EXPECT_EQ((*out)[19366 * 5 + i].offset_ns, conv()[i].offset_ns + 5LL * 3'600'000'000'000);
    EXPECT_EQ((*out)[19366 * 5 + i].context_tokens, conv()[i].context_tokens);
  }
}

TEST(DiurnalRepeat, TheDefaultCurveThinsTheNightAndKeepsTheDay) {
  const auto& curve = default_diurnal_curve();
  double sum = 0;
  for (const double f : curve) sum += f;
  EXPECT_DOUBLE_EQ(sum, 15.7);
  for (int h = 9; h < 20; ++h) EXPECT_GE(curve[static_cast<std::size_t>(h)], 0.85) << h;  // the daytime peak
  EXPECT_EQ(*std::min_element(curve.begin(), curve.end()), 0.2);
  const auto out = diurnal_repeat(conv(), 2, curve, 42);
  ASSERT_TRUE(out.ok()) << out.error();
  // Expected 19366 x 15.7 x 2 = 608092 requests; thinning is binomial per hour (standard
  // deviation about 70 per hour, ~500 over 48 hours), so 0.5 % is a safe yet tight band.
  EXPECT_NEAR(static_cast<double>(out->size()), 608092.0, 3000.0);
  std::vector<std::int64_t> per_hour(48, 0);
  for (const auto& r : *out) per_hour[static_cast<std::size_t>(r.t_ms / 3'600'000)] += 1;
  EXPECT_EQ(per_hour[10], 19366);  // factor 1.0: no draw, every request
  EXPECT_EQ(per_hour[34], 19366);
  EXPECT_NEAR(static_cast<double>(per_hour[3]), 0.2 * 19366, 0.05 * 0.2 * 19366);  // 3873 +- 5 %
  EXPECT_NEAR(static_cast<double>(per_hour[27]), 0.2 * 19366, 0.05 * 0.2 * 19366);
  EXPECT_NE(per_hour[3], per_hour[27]);  // different draws on different days
  EXPECT_TRUE(std::is_sorted(out->begin(), out->end(),
                             [](const AzureRequest& a, const AzureRequest& b) { return a.offset_ns < b.offset_ns; }));
  const auto again = diurnal_repeat(conv(), 2, curve, 42);
  ASSERT_TRUE(again.ok());
  ASSERT_EQ(again->size(), out->size());
  EXPECT_TRUE(std::equal(out->begin(), out->end(), again->begin(), [](const AzureRequest& a, const AzureRequest& b) {
    return a.offset_ns == b.offset_ns && a.context_tokens == b.context_tokens && a.generated_tokens == b.generated_tokens;
  }));
  const auto reseeded = diurnal_repeat(conv(), 2, curve, 43);
  ASSERT_TRUE(reseeded.ok());
  EXPECT_FALSE(reseeded->size() == out->size() &&
               std::equal(out->begin(), out->end(), reseeded->begin(),
                          [](const AzureRequest& x, const AzureRequest& y) { return x.offset_ns == y.offset_ns; }));
}

TEST(DiurnalRepeat, FactorsAboveOneDuplicateWithinTheHour) {
  DiurnalCurve curve;
  curve.fill(0.0);
  curve[1] = 2.5;
  const std::vector<AzureRequest> requests{{0, 0, 1, 1}, {3'599'999, 3'599'999'500'000, 2, 2}, {3'600'000, 3'600'000'000'000, 3, 3}};
  const auto out = diurnal_repeat(requests, 1, curve, 5);
  ASSERT_TRUE(out.ok());
  // Hour 1 only; the third request (t = 1h) is past the hour and dropped. Each of the two
  // others is taken 2 or 3 times.
  EXPECT_GE(out->size(), 4u);
  EXPECT_LE(out->size(), 6u);
  for (const auto& r : *out) {
    EXPECT_GE(r.t_ms, 3'600'000);
    EXPECT_LT(r.t_ms, 7'200'000);  // duplicates stay inside their hour
    EXPECT_NE(r.context_tokens, 3);
  }
  // A larger trace: the mean over many requests is 2.5 takes each.
  DiurnalCurve all;
  all.fill(2.5);
  const auto big = diurnal_repeat(conv(), 1, all, 9);
  ASSERT_TRUE(big.ok());
  EXPECT_NEAR(static_cast<double>(big->size()) / (24.0 * 19366.0), 2.5, 0.01);
}

TEST(DiurnalRepeat, BadArgumentsAreRefused) {
  DiurnalCurve curve = default_diurnal_curve();
  EXPECT_FALSE(diurnal_repeat(conv(), 0, curve, 1).ok());
  EXPECT_FALSE(diurnal_repeat(conv(), 367, curve, 1).ok());
  curve[4] = std::nan("");
  EXPECT_FALSE(diurnal_repeat(conv(), 1, curve, 1).ok());
  curve[4] = -0.5;
  EXPECT_FALSE(diurnal_repeat(conv(), 1, curve, 1).ok());
  curve = default_diurnal_curve();
  DiurnalLimits limits;
  limits.max_requests = 100'000;  // 19366 x 24 takes bound a day at 464784
  EXPECT_FALSE(diurnal_repeat(conv(), 1, curve, 1, limits).ok());
}

}  // namespace
}  // namespace gpubank::twin::trace
