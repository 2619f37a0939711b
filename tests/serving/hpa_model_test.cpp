#include "serving/hpa_model.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include <date/date.h>
#include <date/tz.h>

#include "render/scaling.hpp"
#include "support/paths.hpp"

namespace gpubank::serving {
namespace {

using std::chrono::seconds;
using Values = std::vector<std::optional<double>>;

policy::PolicySet examples() { return policy::load_policy_set({gpubank::testing::examples_dir() + "/policies"}); }

HpaSpec example_spec() {
  auto spec = hpa_spec_for(examples(), "customer-service-llm");
  if (!spec) throw std::runtime_error(spec.error());
  return *spec;
}

// The ScaledObject gpubank rendered before issue 33, with KEDA's and the HPA's defaults:
// empty results and NaN read as 0 (ignoreNullValues true) and the HPA's default scale-down
// (100 % per 15 s). docs/serving.md's worked series shows what those defaults do.
HpaSpec keda_defaults_spec() {
  HpaSpec spec = example_spec();
  for (auto& m : spec.metrics) m.ignore_null_values = true;
  spec.behavior.scale_down.policies = {HpaScalingPolicy{HpaPolicyType::Percent, 100, 15}};
  return spec;
}

// Local wall-clock time in Asia/Shanghai (UTC+8, no DST).
std::chrono::sys_seconds shanghai(int y, unsigned mo, unsigned d, int h, int mi, int s = 0) {
  const auto* zone = date::locate_zone("Asia/Shanghai");
  const auto local = date::local_days{date::year{y} / mo / d} + std::chrono::hours(h) + std::chrono::minutes(mi) + seconds(s);
  return std::chrono::floor<seconds>(zone->to_sys(local));
}

// Monday 2 March 2026.
std::chrono::sys_seconds monday(int h, int mi, int s = 0) { return shanghai(2026, 3, 2, h, mi, s); }

ServiceSample sample(std::chrono::sys_seconds now, int pods, double waiting, std::optional<double> ttft, double kv_mean) {
  ServiceSample s;
  s.now = now;
  s.pods_reporting = pods;
  s.waiting = waiting;
  s.ttft_p95_s = ttft;
  s.kv_cache_sum = kv_mean * pods;
  return s;
}

// ---- the spec, as rendered ----------------------------------------------------------

TEST(HpaSpecFor, MatchesTheRenderedScaledObject) {
  const auto set = examples();
  const auto spec = example_spec();
  const render::RenderedObject* so = nullptr;
  const auto objects = render::render_scaling(set);
  for (const auto& o : objects) {
    if (o.path == "keda/scaledobject-customer-service-customer-service-llm.yaml") so = &o;
  }
  ASSERT_NE(so, nullptr);
  const auto& s = so->manifest["spec"];
  EXPECT_EQ(spec.min, s["minReplicaCount"].get<int>());
  EXPECT_EQ(spec.max, s["maxReplicaCount"].get<int>());
  const auto& triggers = s["triggers"];
  ASSERT_EQ(spec.metrics.size(), triggers.size());
  for (std::size_t i = 0; i < spec.metrics.size(); ++i) {
    const auto& m = spec.metrics[i];
    const auto& t = triggers[i];
    EXPECT_EQ(m.name, t["name"].get<std::string>());
    if (t["type"] == "cron") {
      EXPECT_EQ(m.kind, HpaMetricKind::CronFloor);
      ASSERT_TRUE(m.cron.has_value());
      EXPECT_EQ(std::to_string(m.cron->desired_replicas), t["metadata"]["desiredReplicas"].get<std::string>());
      EXPECT_EQ(m.cron->end.text(), t["metadata"]["end"].get<std::string>());
    } else {
      EXPECT_EQ(m.kind == HpaMetricKind::Value ? "Value" : "AverageValue", t["metricType"].get<std::string>());
      EXPECT_DOUBLE_EQ(m.target, std::stod(t["metadata"]["threshold"].get<std::string>()));
    }
  }
  const auto& b = s["advanced"]["horizontalPodAutoscalerConfig"]["behavior"];
  EXPECT_EQ(spec.behavior.scale_up.stabilization_s, b["scaleUp"]["stabilizationWindowSeconds"].get<int>());
  EXPECT_EQ(spec.behavior.scale_down.stabilization_s, b["scaleDown"]["stabilizationWindowSeconds"].get<int>());
  ASSERT_EQ(spec.behavior.scale_up.policies.size(), b["scaleUp"]["policies"].size());
  for (std::size_t i = 0; i < spec.behavior.scale_up.policies.size(); ++i) {
    const auto& p = spec.behavior.scale_up.policies[i];
    const auto& r = b["scaleUp"]["policies"][i];
    EXPECT_EQ(p.type == HpaPolicyType::Pods ? "Pods" : "Percent", r["type"].get<std::string>());
    EXPECT_EQ(p.value, r["value"].get<int>());
    EXPECT_EQ(p.period_s, r["periodSeconds"].get<int>());
  }
  ASSERT_EQ(spec.behavior.scale_down.policies.size(), b["scaleDown"]["policies"].size());
  EXPECT_EQ(spec.behavior.scale_down.policies[0].period_s, b["scaleDown"]["policies"][0]["periodSeconds"].get<int>());
  EXPECT_EQ(spec.cooldown_s, s["cooldownPeriod"].get<std::int64_t>());

  // The example's numbers: U 8, hold at D 1, TTFT 1.5 s (Value), KV 0.85; the day
  // window's floor 6 starts 30m early; up within modelLoadTime 6m (360 s) at most
  // max(5 pods = the floor rise 6 - 1, 100 %); down after 10m.
  EXPECT_EQ(spec.metrics[0].target, 8);
  EXPECT_EQ(spec.metrics[1].hold_per_replica, 1);
  EXPECT_EQ(spec.metrics[2].target, 1.5);
  EXPECT_EQ(spec.metrics[3].target, 0.85);
  EXPECT_EQ(spec.metrics[4].name, "weekday-serving-training-daytime-serving");
  EXPECT_EQ(spec.metrics[4].cron->lead, std::chrono::minutes(30));
  EXPECT_EQ(spec.behavior.scale_up.policies[0].value, 5);
  EXPECT_EQ(spec.behavior.scale_up.policies[0].period_s, 360);
  EXPECT_EQ(spec.behavior.scale_down.stabilization_s, 600);
}

TEST(HpaSpecFor, TheRequestRateTriggerIsAnAverageValueOfTheRate) {
  // The embeddings example scales on the rate of finished requests; its trigger, as rendered.
  auto spec = hpa_spec_for(examples(), "customer-service-embeddings");
  ASSERT_TRUE(spec.ok()) << spec.error();
  const auto rate = std::find_if(spec->metrics.begin(), spec->metrics.end(),
                                 [](const HpaMetric& m) { return m.source == HpaSource::RequestRate; });
  ASSERT_NE(rate, spec->metrics.end());
  EXPECT_EQ(rate->name, "request-rate");
  EXPECT_EQ(rate->kind, HpaMetricKind::AverageValue);
  EXPECT_FALSE(rate->ignore_null_values);
  const double target = rate->target;
  ASSERT_GT(target, 0);
  // Only the rate trigger, so the proposals are its own: 3.5 x the target on 2 pods asks for 4.
  HpaSpec alone = *spec;
  alone.metrics = {*rate};
  HpaModel hpa(alone);
  ServiceSample s;
  s.pods_reporting = 2;
  s.request_rate = 3.5 * target;
  EXPECT_EQ(metric_values(alone, s), (Values{3.5 * target}));
  EXPECT_EQ(hpa.step(0, 2, metric_values(alone, s)), 4);
  // No pod scraped, or no pod with two points of its counter: an error, never "no load".
  s.request_rate.reset();
  EXPECT_EQ(metric_values(alone, s), (Values{std::nullopt}));
  s.request_rate = 10;
  s.pods_reporting = 0;
  EXPECT_EQ(metric_values(alone, s), (Values{std::nullopt}));
}

TEST(HpaSpecFor, CronWithLeadIsActiveExactlyWhenTheRenderedPrewarmedStartIs) {
  // The rendered start "0 8 * * 1-5" (08:30 moved 30m earlier) evaluated the way KEDA
  // does, against the model's start + lead, every minute of a week.
  const auto spec = example_spec();
  const CronWindow& day = *spec.metrics[4].cron;
  const auto set = examples();
  const auto* tidal = set.find(policy::Kind::TidalPolicy, "weekday-serving-training");
  ASSERT_NE(tidal, nullptr);
  const auto& window = tidal->as<policy::TidalPolicySpec>().windows[0];
  const auto rendered_start = render::prewarm_start(window, *window.prewarm_before);
  ASSERT_TRUE(rendered_start.ok());
  EXPECT_EQ(*rendered_start, "0 8 * * 1-5");
  CronWindow rendered = day;
  rendered.start = *CronSchedule::parse(*rendered_start);
  rendered.lead = seconds(0);
  int active_minutes = 0;
  for (auto t = monday(0, 0); t < monday(0, 0) + std::chrono::days(7); t += std::chrono::minutes(1)) {
    ASSERT_EQ(cron_metric_value(day, t), cron_metric_value(rendered, t)) << date::format("%F %T", t);
    if (cron_metric_value(day, t) > 0) ++active_minutes;
  }
  EXPECT_EQ(active_minutes, 5 * 12 * 60);  // 08:00-20:00 on five weekdays
}

TEST(CronMetricValue, KedaWindowBoundaries) {
  const CronWindow day = *example_spec().metrics[4].cron;
  EXPECT_EQ(cron_metric_value(day, monday(7, 59, 59)), 0);
  EXPECT_EQ(cron_metric_value(day, monday(8, 0)), 6);  // the prewarmed start itself
  EXPECT_EQ(cron_metric_value(day, monday(19, 59, 59)), 6);
  EXPECT_EQ(cron_metric_value(day, monday(20, 0)), 0);  // the end firing ends it
  EXPECT_EQ(cron_metric_value(day, shanghai(2026, 3, 7, 12, 0)), 0);  // Saturday
  const CronWindow night = *example_spec().metrics[5].cron;
  EXPECT_EQ(cron_metric_value(night, monday(20, 0)), 1);
  EXPECT_EQ(cron_metric_value(night, shanghai(2026, 3, 3, 7, 29)), 1);  // Tuesday morning
  EXPECT_EQ(cron_metric_value(night, shanghai(2026, 3, 3, 7, 30)), 0);
  EXPECT_EQ(cron_metric_value(night, monday(3, 0)), 0);  // Monday night-time: the window opens Monday 20:00
}

// ---- worked series ------------------------------------------------------------------

TEST(HpaModel, TtftSpikeScalesInProportionToReadyReplicasAfterTheUpWindow) {
  HpaModel hpa(example_spec());
  // Monday 10:00, 6 replicas (the day floor). Queue 12, TTFT 2.4 s, KV 0.5:
  //   queue-depth     12 / (8 x 6) = 0.25        -> ceil(12/8) = 2
  //   queue hold      12/6 = 2 >= 1 -> value 6: 6 / (1 x 6) = 1 -> 6
  //   ttft-p95 Value  2.4 / 1.5 = 1.6            -> ceil(1.6 x 6) = ceil(9.6) = 10
  //   kv-cache        3.0 / (0.85 x 6) = 0.588   -> ceil(3000/850) = 4
  //   cron day 6      6 / (1 x 6) = 1            -> 6;  cron night 0 -> 0
  // max = 10.
  auto at = [](int s) { return monday(10, 0) + seconds(s); };
  auto v = metric_values(hpa.spec(), sample(at(0), 6, 12, 2.4, 0.5));
  // First sync: the initial recommendation (6, recorded now) is inside the 30 s up
  // window, and up takes the min: 6.
  EXPECT_EQ(hpa.step(0, 6, v), 6);
  EXPECT_EQ(hpa.last().metric_desired, 10);
  EXPECT_EQ(hpa.last().reason, "ScaleUpStabilized");
  ASSERT_EQ(hpa.last().proposals.size(), 6U);
  EXPECT_EQ(hpa.last().proposals[2].replicas, 10);
  EXPECT_EQ(hpa.last().proposals[3].replicas, 4);
  EXPECT_EQ(hpa.step(15'000, 6, metric_values(hpa.spec(), sample(at(15), 6, 12, 2.4, 0.5))), 6);
  // At 30 s the recommendations of t=0 leave the window (strictly after now - 30 s):
  // up = 10; rate limit: max(6 + 5, 6 x 2) = 12 per 360 s; maxReplicaCount 8 caps it.
  EXPECT_EQ(hpa.step(30'000, 6, metric_values(hpa.spec(), sample(at(30), 6, 12, 2.4, 0.5))), 8);
  EXPECT_EQ(hpa.last().reason, "TooManyReplicas");
}

TEST(HpaModel, ValueMetricCountsOnlyReadyPods) {
  // While 2 of 8 replicas still load the model, TTFT 3.0 s against 1.5 s proposes
  // ceil(2 x 6 ready) = 12, not 16; with none ready, ceil(2 x 0) = 0.
  HpaSpec spec;
  spec.min = 1;
  spec.max = 20;
  spec.behavior.scale_up.stabilization_s = 0;
  spec.metrics.push_back({"ttft-p95", HpaMetricKind::Value, 1.5, HpaSource::TtftP95, 0, {}});
  HpaModel hpa(spec);
  const Values v{3.0};
  EXPECT_EQ(hpa.step(0, 8, v, 6), 12);
  EXPECT_EQ(hpa.last().proposals[0].replicas, 12);
  HpaModel none(spec);
  (void)none.step(0, 8, v, 0);
  EXPECT_EQ(none.last().proposals[0].replicas, 0);
}

TEST(HpaModel, QueueSurgeIsRateLimitedToFourPodsOrDoublingPer15s) {
  // Default behavior: no up stabilization, max(4 pods, 100 %) per 15 s.
  HpaSpec spec;
  spec.min = 1;
  spec.max = 20;
  spec.metrics.push_back({"queue-depth", HpaMetricKind::AverageValue, 8, HpaSource::QueueDepth, 0, {}});
  HpaModel hpa(spec);
  const Values v{100.0};  // ceil(100 / 8) = 13
  // t=0, 1 replica: limit max(1 + 4, 2 x 1) = 5.
  EXPECT_EQ(hpa.step(0, 1, v), 5);
  EXPECT_EQ(hpa.last().reason, "ScaleUpLimit");
  // t=15 s: the +4 of t=0 is not after now - 15 s: start 5, limit max(9, 10) = 10.
  EXPECT_EQ(hpa.step(15'000, 5, v), 10);
  // t=30 s: limit max(14, 20) = 20 >= 13.
  EXPECT_EQ(hpa.step(30'000, 10, v), 13);
  EXPECT_EQ(hpa.last().reason, "DesiredWithinRange");
  // Within one period the events add up: at t=35 s the +3 of t=30 counts: start 10.
  HpaModel fast(spec);
  EXPECT_EQ(fast.step(0, 1, v), 5);
  EXPECT_EQ(fast.step(5'000, 5, v), 5);  // +4 at t=0 is inside 15 s: start 1, limit 5
}

TEST(HpaModel, ScaleDownWaitsForTheDefault300sStabilization) {
  HpaModel hpa(gpu_utilization_hpa(1, 8, 60));
  // 4 pods at 30 % each: 120 / (60 x 4) = 0.5 -> ceil(120 / 60) = 2.
  const Values low{120.0};
  for (int t = 0; t < 300'000; t += 15'000) {
    ASSERT_EQ(hpa.step(t, 4, low), 4) << t;  // the recommendation of t=0 (4, recorded first) is in the window
  }
  EXPECT_EQ(hpa.last().reason, "ScaleDownStabilized");
  // At 300 s every t=0 recommendation is not after now - 300 s: max over (0, 300] is 2.
  EXPECT_EQ(hpa.step(300'000, 4, low), 2);
}

TEST(HpaModel, OneHighRecommendationInTheWindowHoldsScaleDown) {
  HpaModel hpa(gpu_utilization_hpa(1, 8, 60));
  const Values low{120.0};   // -> 2
  const Values high{270.0};  // 270 / 240 = 1.125 -> ceil(4.5) = 5, scales up at once
  EXPECT_EQ(hpa.step(0, 4, low), 4);
  EXPECT_EQ(hpa.step(60'000, 4, high), 5);
  // Back to low with 5 pods: 120 / 300 -> 2; the 5 of t=60 s holds it until 360 s.
  EXPECT_EQ(hpa.step(345'000, 5, low), 5);
  EXPECT_EQ(hpa.step(360'000, 5, low), 2);
}

TEST(HpaModel, ToleranceKeepsTheCountWithin10Percent) {
  HpaSpec spec;
  spec.min = 1;
  spec.max = 20;
  spec.behavior.scale_up.stabilization_s = 0;
  spec.behavior.scale_down.stabilization_s = 0;
  spec.metrics.push_back({"queue-depth", HpaMetricKind::AverageValue, 8, HpaSource::QueueDepth, 0, {}});
  spec.metrics.push_back({"ttft-p95", HpaMetricKind::Value, 1.5, HpaSource::TtftP95, 0, {}});
  auto run = [&](double queue, double ttft) {
    HpaModel hpa(spec);
    return hpa.step(0, 4, Values{queue, ttft});
  };
  // TTFT 1.5 (ratio 1) keeps 4 in every case; the queue decides.
  EXPECT_EQ(run(35, 1.5), 4);  // 35 / 32 = 1.094: within
  EXPECT_EQ(run(36, 1.5), 5);  // 36 / 32 = 1.125: ceil(36 / 8) = 5
  EXPECT_EQ(run(29, 1.5), 4);  // 29 / 32 = 0.906: within
  // Down needs every metric to ask less: TTFT 1.0 -> ceil(0.667 x 4) = 3, queue 24 -> 3.
  EXPECT_EQ(run(24, 1.0), 3);
  // TTFT 1.64 / 1.5 = 1.093: within; 1.66 / 1.5 = 1.107: ceil(1.107 x 4) = 5.
  EXPECT_EQ(run(32, 1.64), 4);
  EXPECT_EQ(run(32, 1.66), 5);
}

TEST(HpaModel, AMetricThatErrorsNeverScalesDownButTheOthersScaleUp) {
  HpaSpec spec;
  spec.min = 1;
  spec.max = 20;
  spec.behavior.scale_up.stabilization_s = 0;
  spec.behavior.scale_down.stabilization_s = 0;
  spec.metrics.push_back({"queue-depth", HpaMetricKind::AverageValue, 8, HpaSource::QueueDepth, 0, {}});
  spec.metrics.push_back({"ttft-p95", HpaMetricKind::Value, 1.5, HpaSource::TtftP95, 0, {}});
  HpaModel hpa(spec);
  // TTFT errors, the queue alone would go down (8 -> 1): no change.
  EXPECT_EQ(hpa.step(0, 4, Values{8.0, std::nullopt}), 4);
  EXPECT_EQ(hpa.last().reason, "FailedGetExternalMetric");
  // TTFT errors, the queue asks for more (64 / 8 = 8): scales up on it.
  EXPECT_EQ(hpa.step(15'000, 4, Values{64.0, std::nullopt}), 8);
  // Both error: no change.
  EXPECT_EQ(hpa.step(30'000, 8, Values{std::nullopt, std::nullopt}), 8);
  EXPECT_EQ(hpa.last().reason, "FailedGetExternalMetric");
}

TEST(HpaModel, PodsThatStopReportingLookLikeNoLoadToKedasDefaults) {
  // KEDA's Prometheus scaler answers an empty result with 0 (ignoreNullValues, the
  // default): unscraped pods read as an idle service, and the HPA scales down after the
  // window. Prometheus itself down is an error: the HPA holds.
  const auto spec = keda_defaults_spec();
  auto gap = sample(monday(3, 0), 0, 0, std::nullopt, 0);
  EXPECT_EQ(metric_values(spec, gap), (Values{0.0, 0.0, 0.0, 0.0, 0.0, 0.0}));
  gap.prometheus_up = false;
  EXPECT_EQ(metric_values(spec, gap), (Values{std::nullopt, std::nullopt, std::nullopt, std::nullopt, 0.0, 0.0}));

  HpaModel hpa(spec);
  auto at = [](int s) { return monday(3, 0) + seconds(s); };
  // Monday 03:00 (no window active), 4 replicas, then nothing reported for 10 minutes.
  int current = 4;
  for (int s = 0; s <= 600; s += 15) {
    current = hpa.step(s * 1000LL, current, metric_values(spec, sample(at(s), 0, 0, std::nullopt, 0)));
  }
  // Every metric 0 -> 0 proposals; the t=0 recommendation of 4 leaves the 600 s window
  // at 600 s; then minReplicaCount 1.
  EXPECT_EQ(current, 1);
  EXPECT_EQ(hpa.last().t_ms, 600'000);
  EXPECT_EQ(hpa.last().reason, "TooFewReplicas");

  HpaModel held(spec);
  current = 4;
  for (int s = 0; s <= 900; s += 15) {
    auto down = sample(at(s), 4, 0, std::nullopt, 0);
    down.prometheus_up = false;
    current = held.step(s * 1000LL, current, metric_values(spec, down));
  }
  EXPECT_EQ(current, 4);  // cron metrics alone would go down: invalid + down = no change
}

TEST(HpaModel, TheRenderedScaledObjectHoldsWhenPodsStopReportingAndScalesDownWhenIdle) {
  // gpubank renders ignoreNullValues "false": unscraped pods make every Prometheus query an
  // error, and the HPA never scales down on errors (the cron triggers alone would). An
  // idle service (the pods report, no request in the window) reads TTFT 0 from the guarded
  // query and walks down one replica per 10 m window.
  const auto spec = example_spec();
  for (const auto& m : spec.metrics) {
    EXPECT_EQ(m.ignore_null_values, m.source == HpaSource::Cron) << m.name;
  }
  const auto lost = sample(monday(3, 0), 0, 0, std::nullopt, 0);
  EXPECT_EQ(metric_values(spec, lost), (Values{std::nullopt, std::nullopt, std::nullopt, std::nullopt, 0.0, 0.0}));
  auto at = [](int s) { return monday(3, 0) + seconds(s); };
  HpaModel held(spec);
  int current = 4;
  for (int s = 0; s <= 1800; s += 15) current = held.step(s * 1000LL, current, metric_values(spec, lost));
  EXPECT_EQ(current, 4);
  EXPECT_EQ(held.last().reason, "FailedGetExternalMetric");

  // Idle: queue 0, KV 0, TTFT NaN with the histogram there -> 0.
  HpaModel idle(spec);
  current = 4;
  std::vector<std::pair<int, int>> changes;
  for (int s = 0; s <= 3600; s += 15) {
    auto quiet = sample(at(s), current, 0, std::nullopt, 0);
    quiet.ttft_idle = true;
    const int next = idle.step(s * 1000LL, current, metric_values(spec, quiet));
    if (next != current) changes.emplace_back(s, next);
    current = next;
  }
  // Every metric proposes 0 (minReplicaCount 1); the first recommendation (4, t = 0)
  // holds the 600 s window; then one pod per 600 s period: 3 at 600 s, 2 at 1200 s, 1 at
  // 1800 s (the HPA's scale-down limit counts the pods removed within the period).
  EXPECT_EQ(changes, (std::vector<std::pair<int, int>>{{600, 3}, {1200, 2}, {1800, 1}}));
}

TEST(HpaModel, CronFloorRaisesReplicasAtThePrewarmedStart) {
  HpaModel hpa(example_spec());
  const auto& spec = hpa.spec();
  // Monday from 07:59:00, 1 replica, idle: queue 0, no TTFT sample, KV 0.1.
  //   queue 0 -> 0, hold 0 -> 0, ttft 0 -> ceil(0 x 1) = 0, kv 0.1/0.85 -> ceil(100/850) = 1,
  //   day cron: 0 before 08:00, 6 from 08:00 -> ceil(6/1) = 6; night 0 (Monday's opens at 20:00).
  int current = 1;
  std::vector<std::pair<std::string, int>> changes;
  for (int s = 0; s <= 120; s += 15) {
    const auto now = monday(7, 59) + seconds(s);
    const int next = hpa.step(s * 1000LL, current, metric_values(spec, sample(now, 1, 0, std::nullopt, 0.1)));
    if (next != current) changes.emplace_back(date::format("%T", now + std::chrono::hours(8)), next);
    current = next;
  }
  // 08:00:00: 6 asked, but the 30 s up window still holds 1s (07:59:45, 07:59:30);
  // 08:00:15: min over (07:59:45, 08:00:15] = 6; limit max(1 + 5, 2) = 6 per 360 s.
  ASSERT_EQ(changes.size(), 1U);
  EXPECT_EQ(changes[0], (std::pair<std::string, int>{"08:00:15", 6}));
}

TEST(HpaModel, ToleranceAlsoAppliesToACronFloor) {
  // The cron trigger is an AverageValue metric like any other: a floor of 20 over 19
  // replicas is 20 / 19 = 1.053, within 10 %: the HPA keeps 19. 6 over 5 (1.2) is enforced.
  HpaSpec spec;
  spec.min = 1;
  spec.max = 30;
  spec.behavior.scale_up.stabilization_s = 0;
  spec.metrics.push_back({"cron", HpaMetricKind::CronFloor, 1, HpaSource::Cron, 0, {}});
  HpaModel hpa(spec);
  EXPECT_EQ(hpa.step(0, 19, Values{20.0}), 19);
  HpaModel small(spec);
  EXPECT_EQ(small.step(0, 5, Values{6.0}), 6);
}

TEST(HpaModel, KedaScalesFromAndToZero) {
  HpaSpec spec;
  spec.min = 0;
  spec.max = 4;
  spec.cooldown_s = 60;
  spec.metrics.push_back({"queue-depth", HpaMetricKind::AverageValue, 8, HpaSource::QueueDepth, 0, {}});
  HpaModel hpa(spec);
  EXPECT_EQ(hpa.step(0, 0, Values{0.0}), 0);
  EXPECT_EQ(hpa.step(15'000, 0, Values{3.0}), 1);
  EXPECT_EQ(hpa.last().reason, "KedaActivation");
  EXPECT_EQ(hpa.step(30'000, 1, Values{0.0}), 1);
  // Inactive since 30 s (last active at 15 s): cooldown 60 s passes at 75 s.
  EXPECT_EQ(hpa.step(60'000, 1, Values{0.0}), 1);
  EXPECT_EQ(hpa.step(75'000, 1, Values{0.0}), 0);
  EXPECT_EQ(hpa.last().reason, "KedaDeactivation");
}

TEST(HpaModel, SameInputsSameDecisions) {
  auto run = [] {
    HpaModel hpa(example_spec());
    std::vector<int> out;
    int current = 6;
    for (int s = 0; s < 1800; s += 15) {
      const double queue = (s / 60) % 7 * 13.0;
      const double ttft = 0.5 + (s / 45) % 5 * 0.4;
      current = hpa.step(s * 1000LL, current,
                         metric_values(hpa.spec(), sample(monday(11, 0) + seconds(s), current, queue, ttft, 0.6)));
      out.push_back(current);
    }
    return out;
  };
  EXPECT_EQ(run(), run());
}

}  // namespace
}  // namespace gpubank::serving

namespace gpubank::serving {
namespace {

// The worked series of docs/serving.md ("KEDA ScaledObject versus gpubank's autoscaler"):
// Monday 2 March 2026 in Asia/Shanghai, the example policy, one HPA sync every 15 s,
// the same measured series for every sync of a phase.
struct Phase {
  int from_s;  // seconds after 19:40:00
  int pods;    // pods Prometheus scrapes (0: none)
  double queue;
  std::optional<double> ttft;
  double kv;
};

// Each change the HPA makes, as in the table of docs/serving.md (the gpubank column
// there is worked by hand from the autoscaler's rules).
TEST(HpaModel, DocsServingSeries) {
  const std::vector<Phase> phases{
      {0, -1, 70, 1.4, 0.82},         // 19:40 peak
      {600, -1, 4, 0.8, 0.40},        // 19:50 evening
      {1500, 0, 0, std::nullopt, 0},  // 20:05 the pods are not scraped: empty results
      {2400, -1, 40, 2.6, 0.90},      // 20:20 surge
      {3000, -1, 4, 0.8, 0.40},       // 20:30 calm
  };
  HpaModel hpa(keda_defaults_spec());
  int current = 8;
  std::size_t p = 0;
  std::vector<std::pair<std::string, int>> changes;
  for (int s = 0; s < 4800; s += 15) {
    while (p + 1 < phases.size() && phases[p + 1].from_s <= s) ++p;
    const auto& ph = phases[p];
    const auto now = monday(19, 40) + seconds(s);
    const int pods = ph.pods < 0 ? current : ph.pods;  // -1: every replica reports
    const int next = hpa.step(s * 1000LL, current, metric_values(hpa.spec(), sample(now, pods, ph.queue, ph.ttft, ph.kv)));
    if (next != current) changes.emplace_back(date::format("%T", now + std::chrono::hours(8)), next);
    current = next;
  }
  // 19:59:45  600 s after the last peak recommendation (8 at 19:49:45): max(queue 1,
  //           hold 0, ttft ceil(0.533 x 8) = 5, kv ceil(3200/850) = 4, day cron 6) = 6.
  // 20:09:45  the day cron ended at 20:00; 600 s after the last 6: ttft ceil(0.533 x 6) = 4.
  // 20:14:45  no pods scraped since 20:05: every metric 0, night cron 1; 600 s after the
  //           last 4 (20:04:45): 1.
  // 20:20:15  surge, 30 s up window: queue ceil(40/8) = 5.
  // 20:20:45  ttft ceil(1.733 x 5) = 9, limited to +5 per 360 s from 1 (the +4 at 20:20:15 counts): 6.
  // 20:26:15  the +4 leaves the 360 s period: start 5, limit 10, maxReplicaCount 8.
  // 20:39:45  calm, 600 s after the last surge recommendation: ttft ceil(0.533 x 8) = 5.
  // 20:49:45  from 5: ttft ceil(0.533 x 5) = 3, kv 3, hold 4/5 < 1 -> 0: 3; at 3 the
  //           hold query (4/3 >= 1) keeps 3.
  EXPECT_EQ(changes, (std::vector<std::pair<std::string, int>>{{"19:59:45", 6},
                                                               {"20:09:45", 4},
                                                               {"20:14:45", 1},
                                                               {"20:20:15", 5},
                                                               {"20:20:45", 6},
                                                               {"20:26:15", 8},
                                                               {"20:39:45", 5},
                                                               {"20:49:45", 3}}));
}

}  // namespace
}  // namespace gpubank::serving
