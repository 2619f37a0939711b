// `gpubank twin serving`'s comparison: the seeds it parses, the peak windows it judges each
// service on, and the refusals of static counts outside a service's range.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>

#include "core/diagnostic.hpp"
#include "support/paths.hpp"
#include "support/policy_fixture.hpp"
#include "twin/cluster/inventory.hpp"
#include "twin/live/serving_comparison.hpp"

namespace gpubank::twin::live {
namespace {

constexpr std::int64_t kPeakHourMs = 3'600'000;

Timestamp wall_at(const char* rfc3339) { return *parse_rfc3339(rfc3339); }

TEST(ServingComparisonSeeds, RangesListsAndRefusals) {
  EXPECT_EQ(*parse_seeds("4"), (std::vector<std::uint64_t>{4}));
  EXPECT_EQ(*parse_seeds("1..5"), (std::vector<std::uint64_t>{1, 2, 3, 4, 5}));
  EXPECT_EQ(*parse_seeds("7,1..2"), (std::vector<std::uint64_t>{7, 1, 2}));
  for (const auto* bad : {"", "x", "1..", "..3", "5..1", "1,,2", "1,1", "1..3,2", "-1", "1..1000", "99999999999999999999"}) {
    const auto parsed = parse_seeds(bad);
    ASSERT_FALSE(parsed) << bad;
    EXPECT_EQ(parsed.error().rfind("--seeds: ", 0), 0U) << parsed.error();
  }
}

TEST(ServingComparisonPeak, TheTidalDayWindowOfEachServiceOrThePlatforms) {
  const policy::PolicySet set = testing::examples_plus();
  // Tuesday 00:00 in Asia/Shanghai, 32 hours: the daytime window 08:30-20:00 once
  // (Wednesday's starts at 08:30, after the run).
  const auto peaks = peak_windows(set, wall_at("2026-11-30T16:00:00Z"), 32, std::nullopt);
  ASSERT_TRUE(peaks) << peaks.error();
  const auto& llm = peaks->at("customer-service-llm");
  EXPECT_EQ(llm.source, "TidalPolicy weekday-serving-training window daytime-serving");
  ASSERT_EQ(llm.intervals_ms.size(), 1U);
  EXPECT_EQ(llm.intervals_ms[0], (std::pair<std::int64_t, std::int64_t>{8 * kPeakHourMs + kPeakHourMs / 2, 20 * kPeakHourMs}));
  // The embeddings service has no TidalPolicy: the platform's daytime window.
  const auto& embeddings = peaks->at("customer-service-embeddings");
  EXPECT_EQ(embeddings.source, "TidalPolicy weekday-serving-training window daytime-serving");
  EXPECT_EQ(embeddings.intervals_ms, llm.intervals_ms);

  // Starting at 12:00 local on a Friday for 72 hours: Friday's rest of the window, no
  // weekend window, Monday's from 08:30 until the run ends at 12:00.
  const auto weekend = peak_windows(set, wall_at("2026-12-04T04:00:00Z"), 72, std::nullopt);
  ASSERT_TRUE(weekend) << weekend.error();
  const auto& w = weekend->at("customer-service-llm").intervals_ms;
  ASSERT_EQ(w.size(), 2U);
  EXPECT_EQ(w[0], (std::pair<std::int64_t, std::int64_t>{0, 8 * kPeakHourMs}));
  EXPECT_EQ(w[1], (std::pair<std::int64_t, std::int64_t>{68 * kPeakHourMs + kPeakHourMs / 2, 72 * kPeakHourMs}));
}

TEST(ServingComparisonPeak, AnExplicitRangeInTheTidalTimeZone) {
  const policy::PolicySet set = testing::examples_plus();
  // 22:00-02:00 local crosses midnight: from Tuesday 00:00 for 32 hours, [0, 2h) of
  // Monday night's range and [22h, 26h) of Tuesday's.
  const auto peaks = peak_windows(set, wall_at("2026-11-30T16:00:00Z"), 32, std::string("22:00-02:00"));
  ASSERT_TRUE(peaks) << peaks.error();
  const auto& llm = peaks->at("customer-service-llm");
  EXPECT_EQ(llm.source, "--peak 22:00-02:00 (Asia/Shanghai)");
  ASSERT_EQ(llm.intervals_ms.size(), 2U);
  EXPECT_EQ(llm.intervals_ms[0], (std::pair<std::int64_t, std::int64_t>{0, 2 * kPeakHourMs}));
  EXPECT_EQ(llm.intervals_ms[1], (std::pair<std::int64_t, std::int64_t>{22 * kPeakHourMs, 26 * kPeakHourMs}));
  EXPECT_EQ(peaks->at("customer-service-embeddings").intervals_ms, llm.intervals_ms);

  for (const auto* bad : {"9-17", "09:00", "09:00-25:00", "09:60-10:00", "10:00-10:00", "ab:cd-10:00"}) {
    const auto refused = peak_windows(set, wall_at("2026-11-30T16:00:00Z"), 32, std::string(bad));
    ASSERT_FALSE(refused) << bad;
    EXPECT_EQ(refused.error().rfind("--peak: ", 0), 0U) << refused.error();
  }
}

TEST(ServingComparisonOptions, AStaticCountOutsideAServicesRangeIsRefusedNamingIt) {
  const policy::PolicySet set = testing::examples_plus();
  ComparisonOptions o;
  o.day.start = wall_at("2026-11-30T16:00:00Z");
  o.day.hours = 1;
  o.controls = {DayOptions::ServingControl::Static};
  for (const int n : {0, 9, 10'000}) {
    o.static_replicas = n;
    const auto c = compare_serving(set, o, nullptr);
    ASSERT_FALSE(c) << n;
    EXPECT_NE(c.error().find("--static-replicas: " + std::to_string(n) + " is outside [1, maxReplicas] of "),
              std::string::npos)
        << c.error();
  }
  o.static_replicas.reset();
  o.seeds.clear();
  EXPECT_FALSE(compare_serving(set, o, nullptr));
}

// The comparison's direction on one day (Tuesday in Shanghai, two seeds, the LLM service
// alone) with the fluid serving model (the impact preview's, calibrated on the request
// model), so that it fits CI: a few seconds against minutes for every request under the
// sanitizers. The static baseline is searched; the autoscaler with the tidal controller
// meets the peak SLO in the worst seed with fewer GPU-hours than that baseline. The
// request model over five seeds and the Azure traces is scripts/bench-serving.sh (the
// fluid model is the harsher judge: 97.1 % worst-seed peak attainment on this day against
// 98.7 % for the request model's 32 hours, measured with the release build).
TEST(ServingComparisonDirection, TheAutoscalerMeetsThePeakSloWithFewerGpuHoursThanTheSmallestStaticCountThatDoes) {
  // Every service: the chat LLM and the embeddings service (an embed task, served on its
  // fluid model).
  policy::PolicySet set = testing::examples_plus();
  Diagnostics d;
  auto inventory = cluster::load_inventory(testing::source_dir() + "/examples/inventory/example.yaml", d);
  ASSERT_TRUE(inventory.has_value());
  ComparisonOptions o;
  o.day.start = wall_at("2026-11-30T16:00:00Z");
  o.day.hours = 24;
  o.day.serving_model = DayOptions::ServingModel::Fluid;
  o.seeds = {1, 2};
  o.controls = {DayOptions::ServingControl::Autoscaler, DayOptions::ServingControl::Static};
  const auto c = compare_serving(set, o, std::make_shared<const cluster::Inventory>(std::move(*inventory)));
  ASSERT_TRUE(c) << c.error();
  for (const std::string service : {"customer-service-llm", "customer-service-embeddings"}) {
    SCOPED_TRACE(service);
    ASSERT_EQ(c->static_baseline.count(service), 1U);
    const int baseline = c->static_baseline.at(service);
    EXPECT_TRUE(c->static_met.at(service)) << "no static count meets the SLO";
    // The search probed below the baseline, and the count below it misses the target.
    bool below_misses = baseline == 1;
    for (const auto& p : c->probes) {
      if (p.policy == service && p.replicas == baseline - 1) below_misses = p.worst_peak_attainment < o.slo_target;
    }
    EXPECT_TRUE(below_misses) << "baseline " << baseline;
    const ControlSummary* autoscaler = nullptr;
    const ControlSummary* fixed = nullptr;
    for (const auto& s : c->summaries) {
      if (s.policy != service) continue;
      if (s.control == "autoscaler") autoscaler = &s;
      if (s.control == "static") fixed = &s;
    }
    ASSERT_NE(autoscaler, nullptr);
    ASSERT_NE(fixed, nullptr);
    EXPECT_EQ(autoscaler->seeds, 2);
    EXPECT_GE(autoscaler->worst_peak_attainment, o.slo_target);
    EXPECT_LT(autoscaler->mean_inference_gpu_hours, fixed->mean_inference_gpu_hours);
    ASSERT_TRUE(autoscaler->gpu_hours_saved_share.has_value());
    EXPECT_GT(*autoscaler->gpu_hours_saved_share, 0.0);
  }
  // The consistency check found both services within reach of their GPUs.
  ASSERT_EQ(c->feasibility.size(), 2U);
  for (const auto& f : c->feasibility) EXPECT_TRUE(f.reachable) << f.policy << ": " << f.why;
  // Every run is judged on the daytime window's 690 minutes (08:30-20:00).
  for (const auto& r : c->runs) EXPECT_EQ(r.peak_minutes, 690) << r.control << " seed " << r.seed;
}

}  // namespace
}  // namespace gpubank::twin::live

namespace gpubank::twin::live {
namespace {

// The consistency check says, before anything runs, when a service's GPUs cannot meet its
// target, with the numbers: a target below a lone request's own prefill, a peak above what
// maxReplicas replicas finish at best.
ComparisonOptions one_hour_autoscaler() {
  ComparisonOptions o;
  o.day.start = wall_at("2026-11-30T16:00:00Z");
  o.day.hours = 1;
  o.day.serving_model = DayOptions::ServingModel::Fluid;
  o.controls = {DayOptions::ServingControl::Autoscaler};
  return o;
}

std::shared_ptr<const cluster::Inventory> example_inventory() {
  Diagnostics d;
  auto inventory = cluster::load_inventory(testing::source_dir() + "/examples/inventory/example.yaml", d);
  EXPECT_TRUE(inventory.has_value());
  return std::make_shared<const cluster::Inventory>(std::move(*inventory));
}

const ServingFeasibility* feasibility_of(const ServingComparison& c, const std::string& policy) {
  for (const auto& f : c.feasibility) {
    if (f.policy == policy) return &f;
  }
  return nullptr;
}

TEST(ServingFeasibilityCheck, TheExampleServicesAreWithinReachWithTheirNumbers) {
  std::vector<std::string> lines;
  const auto c = compare_serving(testing::examples_plus(), one_hour_autoscaler(), example_inventory(),
                                 [&](const std::string& line) { lines.push_back(line); });
  ASSERT_TRUE(c) << c.error();
  const auto* embed = feasibility_of(*c, "customer-service-embeddings");
  ASSERT_NE(embed, nullptr);
  EXPECT_TRUE(embed->reachable) << embed->why;
  EXPECT_EQ(embed->task, "embed");
  EXPECT_EQ(embed->gpu_model, "L40S");
  // kEmbedTokens' 95th percentile: 64 x exp(1.645 x sqrt(2 ln 2)) = 444 tokens, one step.
  EXPECT_EQ(embed->p95_prompt_tokens, 444);
  EXPECT_GT(embed->lone_p95_s, 0.003);
  EXPECT_LT(embed->lone_p95_s, 0.2);
  ASSERT_TRUE(embed->target_s.has_value());
  EXPECT_DOUBLE_EQ(*embed->target_s, 0.2);
  EXPECT_GT(embed->max_replica_rps * embed->max_replicas, embed->peak_rps);
  // Its rate target (700/s per replica) plus the HPA's 10 % tolerance is below what a
  // replica finishes at best (837/s): no replica saturates before another is asked for.
  ASSERT_TRUE(embed->rate_target.has_value());
  EXPECT_DOUBLE_EQ(*embed->rate_target, 700);
  EXPECT_LT(*embed->rate_target * 1.1, embed->max_replica_rps);
  EXPECT_TRUE(embed->rate_warning.empty()) << embed->rate_warning;
  const auto* llm = feasibility_of(*c, "customer-service-llm");
  ASSERT_NE(llm, nullptr);
  EXPECT_TRUE(llm->reachable) << llm->why;
  EXPECT_EQ(llm->task, "generate");
  EXPECT_EQ(llm->p95_prompt_tokens, 2314);
  for (const auto& line : lines) EXPECT_EQ(line.rfind("warning:", 0), std::string::npos) << line;
  const auto json = comparison_json(*c);
  ASSERT_EQ(json["feasibility"].size(), 2U);
  EXPECT_TRUE(json["feasibility"][0].contains("loneP95Seconds"));
}

TEST(ServingFeasibilityCheck, ATargetBelowALoneRequestsPrefillIsUnreachableAtAnyReplicaCount) {
  policy::PolicySet set = testing::examples_plus();
  const auto* object = set.find(policy::Kind::InferenceScalingPolicy, "customer-service-embeddings");
  ASSERT_NE(object, nullptr);
  policy::PolicyObject changed = *object;
  std::get<policy::InferenceScalingPolicySpec>(changed.spec).scale_up.ttft_p95 = Duration(std::chrono::milliseconds(5));
  ASSERT_TRUE(set.upsert(std::move(changed)));
  std::vector<std::string> warnings;
  const auto c = compare_serving(set, one_hour_autoscaler(), example_inventory(), [&](const std::string& line) {
    if (line.rfind("warning: ", 0) == 0) warnings.push_back(line);
  });
  ASSERT_TRUE(c) << c.error();
  const auto* embed = feasibility_of(*c, "customer-service-embeddings");
  ASSERT_NE(embed, nullptr);
  EXPECT_FALSE(embed->reachable);
  EXPECT_NE(embed->why.find("ttftP95 5.0 ms"), std::string::npos) << embed->why;
  EXPECT_NE(embed->why.find("444 tokens"), std::string::npos) << embed->why;
  EXPECT_NE(embed->why.find("L40S"), std::string::npos) << embed->why;
  ASSERT_EQ(warnings.size(), 1U);
  EXPECT_NE(warnings[0].find("customer-service-embeddings"), std::string::npos);
  EXPECT_NE(comparison_text(*c).find("UNREACHABLE"), std::string::npos);
}

TEST(ServingFeasibilityCheck, ARateTargetAboveWhatAReplicaFinishesIsAWarning) {
  policy::PolicySet set = testing::examples_plus();
  const auto* object = set.find(policy::Kind::InferenceScalingPolicy, "customer-service-embeddings");
  ASSERT_NE(object, nullptr);
  policy::PolicyObject changed = *object;
  std::get<policy::InferenceScalingPolicySpec>(changed.spec).scale_up.requests_per_second_per_replica = 5000;
  ASSERT_TRUE(set.upsert(std::move(changed)));
  std::vector<std::string> warnings;
  const auto c = compare_serving(set, one_hour_autoscaler(), example_inventory(), [&](const std::string& line) {
    if (line.rfind("warning: ", 0) == 0) warnings.push_back(line);
  });
  ASSERT_TRUE(c) << c.error();
  const auto* embed = feasibility_of(*c, "customer-service-embeddings");
  ASSERT_NE(embed, nullptr);
  EXPECT_TRUE(embed->reachable);  // the service can meet its target; the signal is what is wrong
  EXPECT_NE(embed->rate_warning.find("requestsPerSecondPerReplica 5000.0 requests/s is above"), std::string::npos) << embed->rate_warning;
  ASSERT_EQ(warnings.size(), 1U);
  EXPECT_NE(warnings[0].find("customer-service-embeddings"), std::string::npos);
  EXPECT_NE(comparison_text(*c).find("WARNING: requestsPerSecondPerReplica"), std::string::npos);
  bool in_json = false;
  const auto json = comparison_json(*c);
  for (const auto& f : json["feasibility"]) {
    if (f["policy"] != "customer-service-embeddings") continue;
    EXPECT_EQ(f["requestsPerSecondPerReplicaTarget"], 5000.0);
    EXPECT_TRUE(f.contains("rateWarning"));
    in_json = true;
  }
  EXPECT_TRUE(in_json);
}

TEST(ServingFeasibilityCheck, ARateTargetWhoseToleranceBandReachesWhatAReplicaFinishesIsAWarning) {
  policy::PolicySet set = testing::examples_plus();
  const auto* object = set.find(policy::Kind::InferenceScalingPolicy, "customer-service-embeddings");
  ASSERT_NE(object, nullptr);
  policy::PolicyObject changed = *object;
  // 800 is below the 837.1/s a replica finishes, but 800 x 1.1 = 880 is not.
  std::get<policy::InferenceScalingPolicySpec>(changed.spec).scale_up.requests_per_second_per_replica = 800;
  ASSERT_TRUE(set.upsert(std::move(changed)));
  const auto c = compare_serving(set, one_hour_autoscaler(), example_inventory());
  ASSERT_TRUE(c) << c.error();
  const auto* embed = feasibility_of(*c, "customer-service-embeddings");
  ASSERT_NE(embed, nullptr);
  EXPECT_TRUE(embed->reachable);
  EXPECT_NE(embed->rate_warning.find("requestsPerSecondPerReplica 800.0 requests/s plus the HPA's 10 % tolerance "
                                     "(880.0 requests/s) is above what"),
            std::string::npos)
      << embed->rate_warning;
  EXPECT_NE(embed->rate_warning.find("at most 761.0 requests/s keeps them within"), std::string::npos) << embed->rate_warning;
}

TEST(ServingFeasibilityCheck, APeakAboveWhatMaxReplicasFinishIsUnreachable) {
  policy::PolicySet set = testing::examples_plus();
  ComparisonOptions o = one_hour_autoscaler();
  o.day.serving_load = 10;  // ten times the scale rule's peak: beyond 8 replicas' best
  const auto c = compare_serving(set, o, example_inventory());
  ASSERT_TRUE(c) << c.error();
  for (const char* policy : {"customer-service-llm", "customer-service-embeddings"}) {
    const auto* f = feasibility_of(*c, policy);
    ASSERT_NE(f, nullptr);
    EXPECT_FALSE(f->reachable) << policy;
    EXPECT_GT(f->peak_rps, f->max_replicas * f->max_replica_rps) << policy;
    EXPECT_NE(f->why.find("maxReplicas 8"), std::string::npos) << f->why;
  }
}

}  // namespace
}  // namespace gpubank::twin::live

namespace gpubank::twin::live {
namespace {

// The tidal floor search, on Tuesday 06:00-14:00 in Shanghai (the morning's rise and the
// window's first 330 minutes): with the daytime window's floor lowered to 1 and a target
// of 97 %, the autoscaler alone misses the peak (it adds replicas as the morning rises, a
// model load late); the search finds the smallest floor that meets it, probing the
// policy's own floor first, and every reported run uses that floor.
TEST(ServingFloorSearch, TheSmallestPeakWindowFloorThatMeetsTheTargetAndTheRunsUseIt) {
  policy::PolicySet set = testing::examples_plus();
  const auto* object = set.find(policy::Kind::TidalPolicy, "weekday-serving-training");
  ASSERT_NE(object, nullptr);
  policy::PolicyObject lowered = *object;
  for (auto& w : std::get<policy::TidalPolicySpec>(lowered.spec).windows) {
    if (w.name == "daytime-serving") w.inference_replica_floor = policy::ReplicaFloor{1, {}};
  }
  ASSERT_TRUE(set.upsert(std::move(lowered)));
  ComparisonOptions o;
  o.day.start = wall_at("2026-11-30T22:00:00Z");
  o.day.hours = 8;
  o.day.serving_model = DayOptions::ServingModel::Fluid;
  o.controls = {DayOptions::ServingControl::Autoscaler};
  o.slo_target = 0.97;
  o.search_floor = true;
  std::vector<std::string> progress;
  const auto c = compare_serving(set, o, example_inventory(), [&](const std::string& line) { progress.push_back(line); });
  ASSERT_TRUE(c) << c.error();
  // Only the chat LLM is staffed by a TidalPolicy window; the embeddings service is not.
  ASSERT_EQ(c->floors.size(), 1U);
  const FloorSearch& f = c->floors[0];
  EXPECT_EQ(f.policy, "customer-service-llm");
  EXPECT_EQ(f.tidal_policy, "weekday-serving-training");
  EXPECT_EQ(f.window, "daytime-serving");
  EXPECT_EQ(f.policy_floor, 1);
  ASSERT_GE(f.probes.size(), 2U);
  EXPECT_EQ(f.probes[0].replicas, 1);
  EXPECT_LT(f.probes[0].worst_peak_attainment, o.slo_target);
  ASSERT_TRUE(f.met);
  EXPECT_GT(f.floor, 1);
  bool at_floor_meets = false, below_misses = false;
  for (const auto& p : f.probes) {
    if (p.replicas == f.floor) at_floor_meets = p.worst_peak_attainment >= o.slo_target;
    if (p.replicas == f.floor - 1) below_misses = p.worst_peak_attainment < o.slo_target;
  }
  EXPECT_TRUE(at_floor_meets);
  EXPECT_TRUE(below_misses) << "floor " << f.floor;
  // The reported autoscaler runs are the ones at that floor: they meet the target.
  ASSERT_EQ(c->runs.size(), 2U);
  for (const auto& s : c->summaries) {
    if (s.policy == "customer-service-llm") {
      EXPECT_GE(s.worst_peak_attainment, o.slo_target);
    }
  }
  bool probe_logged = false;
  for (const auto& line : progress) probe_logged |= line.find("customer-service-llm floor 1") != std::string::npos;
  EXPECT_TRUE(probe_logged);
  const auto json = comparison_json(*c);
  ASSERT_EQ(json["tidalFloors"].size(), 1U);
  EXPECT_EQ(json["tidalFloors"][0]["floor"], f.floor);
  EXPECT_EQ(json["tidalFloors"][0]["policyFloor"], 1);
  EXPECT_EQ(json["tidalFloors"][0]["probes"][0]["floor"], 1);
  EXPECT_NE(comparison_text(*c).find("window daytime-serving searched: " + std::to_string(f.floor) + " (the policy sets 1;"),
            std::string::npos);

  // A target the policy's own floor meets settles on the first probe (one hour around
  // the window's start is enough to judge a 1 % target).
  o.day.start = wall_at("2026-11-30T23:45:00Z");
  o.day.hours = 1;
  o.slo_target = 0.01;
  const auto same = compare_serving(set, o, example_inventory());
  ASSERT_TRUE(same) << same.error();
  ASSERT_EQ(same->floors.size(), 1U);
  EXPECT_EQ(same->floors[0].floor, 1);
  EXPECT_TRUE(same->floors[0].met);
  EXPECT_EQ(same->floors[0].probes.size(), 1U);
}

}  // namespace
}  // namespace gpubank::twin::live

namespace gpubank::twin::live {
namespace {

// A 45-minute model load under waitForPodsReady as gpubank renders it: the timeout grows
// with the load (render::pods_ready_timeout_seconds), so the replicas the night's load asks
// for serve after their load instead of being evicted (PodsReadyTimeout) before it ends,
// requeued and evicted again, every one of them, all day (what a fixed 10 minutes did).
TEST(ServingModelLoad, ALoadLongerThanKueuesDefaultTimeoutEndsInAServingReplica) {
  policy::PolicySet set = testing::examples_plus();
  const auto* llm = set.find(policy::Kind::InferenceScalingPolicy, "customer-service-llm");
  ASSERT_NE(llm, nullptr);
  policy::PolicyObject slow = *llm;
  std::get<policy::InferenceScalingPolicySpec>(slow.spec).model_load_time = Duration(std::chrono::minutes(45));
  ASSERT_TRUE(set.upsert(std::move(slow)));
  DayOptions day;
  day.seed = 1;
  day.start = wall_at("2026-11-30T16:00:00Z");
  day.hours = 2;
  day.serving_model = DayOptions::ServingModel::Fluid;
  day.serving_control = DayOptions::ServingControl::Autoscaler;
  std::vector<run::Event> events;
  const auto outcomes = run_serving_day(set, day, example_inventory(), {}, &events);
  ASSERT_TRUE(outcomes) << outcomes.error();
  int loaded = 0, evicted = 0;
  for (const auto& e : events) {
    if (e.object.find("customer-service-llm") == std::string::npos) continue;
    if (e.kind == "ReplicaReady" && e.message.find("model load 2700 s") != std::string::npos &&
        e.numbers.contains("sinceRequestSeconds") && e.numbers.at("sinceRequestSeconds") >= 2700) {
      ++loaded;
    }
    if (e.kind == "Evicted" && e.reason == "PodsReadyTimeout") ++evicted;
  }
  EXPECT_GT(loaded, 0);
  EXPECT_EQ(evicted, 0);
}

}  // namespace
}  // namespace gpubank::twin::live
