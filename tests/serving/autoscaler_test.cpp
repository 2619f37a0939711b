// The autoscaler's rules with the example policy customer-service-llm
// (examples/policies/20-inference.yaml): queue U = 8 and D = 1 per replica, TTFT p95
// target 1.5 s, KV watermark 85 %, scale-up window 30 s, scale-down window 10 m, replicas
// 1..8. Every expected count is worked out in a comment.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <vector>

#include "serving/autoscaler.hpp"
#include "support/policy_fixture.hpp"

namespace gpubank::serving {
namespace {

using std::chrono::seconds;

policy::InferenceScalingPolicySpec example() {
  const policy::PolicySet set = testing::examples_plus();
  const policy::PolicyObject* o = set.find(policy::Kind::InferenceScalingPolicy, "customer-service-llm");
  if (o == nullptr) {
    ADD_FAILURE() << "examples/policies has no customer-service-llm";
    return {};
  }
  return o->as<policy::InferenceScalingPolicySpec>();
}

// The example without a scale-down window, so that a scale-down shows at once.
policy::InferenceScalingPolicySpec example_without_down_window() {
  auto p = example();
  p.scale_down.stabilization_window = Duration{};
  return p;
}

Observation obs(std::int64_t t_s, std::optional<double> queue, std::optional<double> ttft, std::optional<double> kv,
                int reporting = 4) {
  Observation o;
  o.t_ms = t_s * 1000;
  o.replicas_reporting = reporting;
  o.queue_depth = queue;
  o.ttft_p95_s = ttft;
  o.kv_cache_usage = kv;
  return o;
}

std::optional<int> asks(const Recommendation& r, std::string_view signal) {
  for (const auto& s : r.signals) {
    if (s.name == signal) return s.replicas;
  }
  ADD_FAILURE() << "no signal " << signal;
  return std::nullopt;
}

TEST(Autoscaler, TheExamplePolicysNumbers) {
  const auto p = example();
  EXPECT_EQ(p.scale_up.queue_depth_per_replica, 8);
  EXPECT_EQ(p.scale_down.queue_depth_per_replica, 1);
  EXPECT_EQ(p.scale_up.ttft_p95, Duration{std::chrono::milliseconds(1500)});
  EXPECT_EQ(p.scale_up.kv_cache_high_watermark, 85);
  EXPECT_EQ(p.scale_up.stabilization_window, Duration{seconds(30)});
  EXPECT_EQ(p.scale_down.stabilization_window, Duration{std::chrono::minutes(10)});
  EXPECT_EQ(p.min_replicas, 1);
  EXPECT_EQ(p.max_replicas, 8);
}

TEST(Autoscaler, QueueDepthAlone) {
  const auto p = example();
  // 4 replicas throughout; TTFT 1 s is below target (no demand), KV 0.8 within tolerance
  // (0.8 / 0.85 = 0.94: holds 4).
  struct Case {
    double queue;
    int want;
  };
  // 40: 10 per replica > 8, ratio 1.25: ceil(40 / 8) = 5.
  // 12: 3 per replica, between 1 and 8: hold 4.
  // 2: 0.5 per replica < 1, ratio 0.5; on 3 replicas 0.67 < 1: one fewer, 3.
  // 0: spare capacity: one fewer, 3 (not 0: an empty queue does not say how much is spare).
  // 3.5: 0.875 per replica, ratio 0.875 below the band, but on 3 replicas 1.17 >= 1: hold 4.
  // 34: 8.5 per replica, ratio 1.0625 within the tolerance: 4.
  // 3.8: 0.95 per replica, ratio 0.95 within the tolerance: 4.
  for (const Case c : {Case{40, 5}, Case{12, 4}, Case{2, 3}, Case{0, 3}, Case{3.5, 4}, Case{34, 4}, Case{3.8, 4}}) {
    Autoscaler a(p);
    const auto r = a.recommend(obs(0, c.queue, 1.0, 0.8), 4);
    EXPECT_EQ(asks(r, "queueDepth"), c.want) << "queue " << c.queue;
    EXPECT_EQ(asks(r, "ttftP95"), std::nullopt);
    EXPECT_EQ(asks(r, "kvCache"), 4);
  }
  // With only U (no scale-down target) the queue is the HPA's AverageValue both ways:
  // 20 over 4 replicas is 5 per replica, ratio 0.625: ceil(20 / 8) = 3.
  auto only_up = p;
  only_up.scale_down.queue_depth_per_replica.reset();
  Autoscaler a(only_up);
  EXPECT_EQ(asks(a.recommend(obs(0, 20, 1.0, 0.8), 4), "queueDepth"), 3);
}

TEST(Autoscaler, TtftAlone) {
  const auto p = example();
  struct Case {
    double ttft;
    std::optional<int> want;
  };
  // 2.25 s: ratio 1.5: ceil(4 * 1.5) = 6.
  // 6 s: ratio 4, capped at 2: ceil(4 * 2) = 8.
  // 1.6 s: ratio 1.067, within the tolerance: 4.
  // 1.5 s and 1.4 s: at or within the tolerance below the target: 4 (no replica may go).
  // 0.2 s: far below: no demand.
  for (const Case c :
       {Case{2.25, 6}, Case{6, 8}, Case{1.6, 4}, Case{1.5, 4}, Case{1.4, 4}, Case{0.2, std::nullopt}}) {
    Autoscaler a(p);
    EXPECT_EQ(asks(a.recommend(obs(0, 12, c.ttft, 0.8), 4), "ttftP95"), c.want) << "ttft " << c.ttft;
  }
  // TTFT alone never pushes down: a policy with only TTFT, below target, holds 4.
  auto only_ttft = example_without_down_window();
  only_ttft.scale_up.queue_depth_per_replica.reset();
  only_ttft.scale_down.queue_depth_per_replica.reset();
  only_ttft.scale_up.kv_cache_high_watermark.reset();
  Autoscaler a(only_ttft);
  const auto r = a.recommend(obs(0, std::nullopt, 0.2, std::nullopt), 4);
  EXPECT_EQ(r.raw, 4);
  EXPECT_EQ(r.desired, 4);
  EXPECT_FALSE(r.metrics_missing);
}

TEST(Autoscaler, KvCacheAlone) {
  const auto p = example();
  struct Case {
    double kv;
    int want;
  };
  // 0.9775: ratio 97.75 / 85 = 1.15: ceil(4 * 1.15) = ceil(4.6) = 5.
  // 0.34: ratio 0.4; on 3 replicas 0.4 * 4 / 3 = 0.53 < 0.9: one fewer, 3.
  // 0.6: ratio 0.706; on 3 replicas 0.94, inside the band: hold 4.
  // 0.8: ratio 0.94, within the tolerance: 4.
  // 1.0: ratio 1.176: ceil(4.7) = 5.
  for (const Case c : {Case{0.9775, 5}, Case{0.34, 3}, Case{0.6, 4}, Case{0.8, 4}, Case{1.0, 5}}) {
    Autoscaler a(p);
    EXPECT_EQ(asks(a.recommend(obs(0, 12, 1.0, c.kv), 4), "kvCache"), c.want) << "kv " << c.kv;
  }
}

// The rate signal alone, as an embeddings service might set it: 300 requests/s per replica.
policy::InferenceScalingPolicySpec rate_only() {
  auto p = example_without_down_window();
  p.scale_up = {};
  p.scale_up.requests_per_second_per_replica = 300;
  p.scale_down.queue_depth_per_replica.reset();
  return p;
}

Observation rate_obs(std::int64_t t_s, std::optional<double> rate, int reporting = 4) {
  Observation o;
  o.t_ms = t_s * 1000;
  o.replicas_reporting = reporting;
  o.request_rate = rate;
  o.queue_depth = 0;
  o.running = rate.value_or(0) > 0 ? 10 : 0;
  return o;
}

TEST(Autoscaler, RequestRateSizesBothWays) {
  struct Case {
    double rate;
    int want;
  };
  // 4 replicas at 300/s each serve 1,200/s with no tolerance to spare.
  // 1,800/s: ratio 1.5, ceil(1800 / 300) = 6 (within the +4 / +100 % limit from 4).
  // 650/s: ratio 0.54, ceil(2.17) = 3 (the HPA's AverageValue goes down as well).
  // 1,250/s: ratio 1.04, within the tolerance: hold 4.
  // 1,090/s: ratio 0.908, within the tolerance: hold 4.
  // 1,070/s: ratio 0.89, outside: ceil(3.57) = 4 anyway.
  // 250/s: ceil(0.83) = 1.
  for (const Case c : {Case{1800, 6}, Case{650, 3}, Case{1250, 4}, Case{1090, 4}, Case{1070, 4}, Case{250, 1}}) {
    Autoscaler a(rate_only());
    const auto r = a.recommend(rate_obs(0, c.rate), 4);
    EXPECT_EQ(asks(r, "requestRate"), c.want) << "rate " << c.rate;
    EXPECT_EQ(r.desired, c.want) << r.reason;
  }
  Autoscaler a(rate_only());
  EXPECT_EQ(a.recommend(rate_obs(0, 1800), 4).reason,
            "requestRate 1800/s (target 300/s per replica) asks for 6; raw 6, desired 6 from 4.");
}

TEST(Autoscaler, RequestRateIdleMissingAndFromZero) {
  auto p = rate_only();
  p.min_replicas = 0;
  {
    // Nothing finished in the window, nothing runs: zero load, and a service whose
    // minReplicas is 0 goes to 0.
    Autoscaler a(p);
    EXPECT_EQ(a.recommend(rate_obs(0, 0.0), 2).desired, 0);
  }
  {
    // No rate (fewer than two scrapes of the counter): missing, hold.
    Autoscaler a(p);
    const auto r = a.recommend(rate_obs(0, std::nullopt), 2);
    EXPECT_EQ(r.desired, 2);
    EXPECT_TRUE(r.metrics_missing);
  }
  {
    // At zero replicas a rate above 0 (a replica that just left still has its series)
    // asks for at least one.
    Autoscaler a(p);
    EXPECT_EQ(a.recommend(rate_obs(0, 40.0, 0), 0).desired, 1);
  }
}

TEST(Autoscaler, RequestRateActsBeforeTheQueueOrTheLatency) {
  // The example LLM policy with a rate target of 4 requests/s per replica: traffic at
  // 30/s on 4 replicas keeps the queue at 4 per replica (below U = 8) and the TTFT at
  // 1.2 s (below 1.5 s), so neither asks for more, while the rate asks for ceil(30 / 4) = 8.
  auto p = example_without_down_window();
  p.scale_up.requests_per_second_per_replica = 4;
  Autoscaler a(p);
  Observation o = obs(0, 16, 1.2, 0.5);
  o.request_rate = 30;
  const auto r = a.recommend(o, 4);
  EXPECT_EQ(asks(r, "queueDepth"), 4);
  EXPECT_EQ(asks(r, "ttftP95"), std::nullopt);
  EXPECT_EQ(asks(r, "requestRate"), 8);
  EXPECT_EQ(r.desired, 8) << r.reason;
}

TEST(Autoscaler, TakesTheLargestCountAndSaysWhy) {
  Autoscaler a(example());
  // queue 40 asks for 5, TTFT 2.25 s for 6, KV 0.9775 for 5: raw 6. No earlier
  // recommendation, so stabilization keeps 6; the rate limit from 4 is max(4 + 4, 4 * 2) = 8.
  const auto r = a.recommend(obs(0, 40, 2.25, 0.9775), 4);
  EXPECT_EQ(r.raw, 6);
  EXPECT_EQ(r.stabilized, 6);
  EXPECT_EQ(r.desired, 6);
  EXPECT_FALSE(r.metrics_missing);
  EXPECT_EQ(r.reason,
            "queueDepth 40 (10 per replica) asks for 5; ttftP95 2.25s (target 1.5s) asks for 6; kvCache 0.9775 "
            "(watermark 0.85) asks for 5; raw 6, desired 6 from 4.");
}

TEST(Autoscaler, ToleranceBandKeepsTheCount) {
  Autoscaler a(example_without_down_window());
  // Every signal within 10 %: queue 8.5 per replica (1.0625), TTFT 1.6 s (1.067), KV 0.8 (0.94).
  const auto r = a.recommend(obs(0, 34, 1.6, 0.8), 4);
  EXPECT_EQ(r.raw, 4);
  EXPECT_EQ(r.desired, 4);
  // One outside: KV 0.95 is 1.118 of the watermark: ceil(4 * 1.118) = 5.
  const auto out = a.recommend(obs(15, 34, 1.6, 0.95), 4);
  EXPECT_EQ(out.raw, 5);
}

TEST(Autoscaler, ScaleUpStabilizationTakesTheMinimumOfTheWindow) {
  Autoscaler a(example());
  // t=0: neutral (queue 12, TTFT 1 s, KV 0.8): raw 4.
  // t=15: TTFT 2.25 s: raw 6, but the 30 s window still holds 4 from t=0: min 4.
  // t=30: raw 6; t=0 is not after the cutoff 30 - 30 = 0, so the window holds only 6: 6.
  std::vector<int> desired;
  int current = 4;
  for (const auto& o : {obs(0, 12, 1.0, 0.8), obs(15, 12, 2.25, 0.8), obs(30, 12, 2.25, 0.8)}) {
    const auto r = a.recommend(o, current);
    desired.push_back(r.desired);
    current = r.desired;
  }
  EXPECT_EQ(desired, (std::vector<int>{4, 4, 6}));
}

TEST(Autoscaler, ScaleDownStabilizationTakesTheMaximumOfTheWindow) {
  Autoscaler a(example());
  // t=0, 6 replicas, queue 12 (2 per replica: hold 6): raw 6.
  // From t=15 the queue is 2 and the KV cache 0.2: both ask for one replica fewer (queue
  // 2 / 5 = 0.4 < 1; KV 0.2 / 0.85 * 6 / 5 = 0.28 < 0.9): raw = current - 1.
  // The 10 m window keeps the largest raw count of the last 600 s (a sample counts while
  // it is after now - 600). The 6 of t=0 leaves at t=600: the largest is then 5 (raw at
  // 6 replicas), so 5. From then raw is 4; the last 5 was recorded at t=600 and leaves at
  // t=1200: 4. One replica per window, each step taken at the smaller size.
  int current = 6;
  std::vector<std::pair<std::int64_t, int>> changes;
  for (std::int64_t t = 0; t <= 1800; t += 15) {
    const double queue = t == 0 ? 12 : 2;
    const auto r = a.recommend(obs(t, queue, 1.0, 0.2), current);
    if (r.desired != current) changes.emplace_back(t, r.desired);
    current = r.desired;
  }
  EXPECT_EQ(changes, (std::vector<std::pair<std::int64_t, int>>{{600, 5}, {1200, 4}, {1800, 3}}));
}

TEST(Autoscaler, ScaleUpRateLimit) {
  Autoscaler a(example());
  // 1 replica, queue 80: ceil(80 / 8) = 10. From 1 the limit is max(1 + 4, ceil(1 * 2)) = 5.
  const auto r0 = a.recommend(obs(0, 80, 1.0, 0.8, 1), 1);
  EXPECT_EQ(r0.raw, 10);
  EXPECT_EQ(r0.desired, 5);
  EXPECT_NE(r0.reason.find("scale-up rate limit 5"), std::string::npos) << r0.reason;
  // t=5: 5 replicas, but 4 of them were added in the last 15 s: the period started at 1,
  // the limit is still 5.
  EXPECT_EQ(a.recommend(obs(5, 80, 1.0, 0.8, 5), 5).desired, 5);
  // t=15: the event of t=0 is not after 15 - 15: the period starts at 5, the limit is
  // max(9, 10) = 10, then maxReplicas 8.
  const auto r15 = a.recommend(obs(15, 80, 1.0, 0.8, 5), 5);
  EXPECT_EQ(r15.desired, 8);
  EXPECT_NE(r15.reason.find("clamped to [1, 8]"), std::string::npos) << r15.reason;
}

TEST(Autoscaler, ScaleDownRateLimits) {
  // The signals step down one replica per sync at most (queue 2 over 6 and KV 0.2 ask for
  // 5), so the rate limit binds only when a scale-down is asked for on a count that fell
  // under a maxReplicas it was above: 10 replicas counted, maxReplicas 8, queue 2 asks for 9.
  // The default 100 % per 15 s lets 10 -> 8 happen at once.
  {
    Autoscaler a(example_without_down_window());
    EXPECT_EQ(a.recommend(obs(0, 2, 1.0, 0.2, 10), 10).desired, 8);
  }
  // At most one replica per 15 s: from 10 the limit is 9 (then within [1, 8]: 8, the clamp
  // is applied after the rate limit, as the HPA applies min/max last).
  AutoscalerOptions options;
  options.scale_down_replicas = 1;
  Autoscaler a(example_without_down_window(), options);
  const auto r = a.recommend(obs(0, 2, 1.0, 0.2, 10), 10);
  EXPECT_EQ(r.stabilized, 9);
  EXPECT_EQ(r.desired, 8);
  // From 6 with one removal a period: raw 5, limit 5: 5; at t=5 the removal of t=0 is
  // still in the period: 5 stays 5 (raw 4 is limited to 6 - 1).
  Autoscaler b(example_without_down_window(), options);
  EXPECT_EQ(b.recommend(obs(0, 2, 1.0, 0.2), 6).desired, 5);
  EXPECT_EQ(b.recommend(obs(5, 2, 1.0, 0.2), 5).desired, 5);
  // t=15: the removal at t=0 has left the period: 5 - 1 = 4.
  EXPECT_EQ(b.recommend(obs(15, 2, 1.0, 0.2), 5).desired, 4);
}

TEST(Autoscaler, MissingMetricsNeverScaleDown) {
  // Without the scale-down window a scale-down would show at once: with every signal
  // present, queue 0 (one fewer), TTFT 1 s (no demand) and KV 0.2 (0.31 on 3: one fewer) give 3.
  {
    Autoscaler control(example_without_down_window());
    const auto r = control.recommend(obs(0, 0, 1.0, 0.2), 4);
    EXPECT_EQ(r.desired, 3);
    EXPECT_FALSE(r.metrics_missing);
  }
  struct Case {
    std::optional<double> queue, ttft, kv;
    int reporting;
  };
  for (const Case c : {Case{std::nullopt, 1.0, 0.2, 4}, Case{0, std::nullopt, 0.2, 4}, Case{0, 1.0, std::nullopt, 4},
                       Case{std::nullopt, std::nullopt, std::nullopt, 4}, Case{0, 1.0, 0.2, 0}}) {
    Autoscaler a(example_without_down_window());
    const auto r = a.recommend(obs(0, c.queue, c.ttft, c.kv, c.reporting), 4);
    EXPECT_EQ(r.raw, 4);
    EXPECT_EQ(r.desired, 4);
    EXPECT_TRUE(r.metrics_missing);
    EXPECT_NE(r.reason.find("held at 4"), std::string::npos) << r.reason;
  }
  // A missing signal does not stop the others from scaling up: TTFT 2.25 s asks for 6.
  Autoscaler a(example_without_down_window());
  const auto up = a.recommend(obs(0, std::nullopt, 2.25, std::nullopt), 4);
  EXPECT_EQ(up.desired, 6);
  EXPECT_TRUE(up.metrics_missing);
  EXPECT_NE(up.reason.find("queueDepth missing"), std::string::npos) << up.reason;
}

TEST(Autoscaler, ScalesFromZero) {
  auto p = example();
  p.min_replicas = 0;
  struct Case {
    std::optional<double> queue;
    int want;
  };
  // Queue 3: ceil(3 / 8) = 1. Queue 20: ceil(20 / 8) = 3, within the limit from 0 (max(0 + 4, 0)).
  // Queue 0: stays at 0. No queue at all: hold 0.
  for (const Case c : {Case{3, 1}, Case{20, 3}, Case{0, 0}, Case{std::nullopt, 0}}) {
    Autoscaler a(p);
    const auto r = a.recommend(obs(0, c.queue, std::nullopt, std::nullopt, 0), 0);
    EXPECT_EQ(r.desired, c.want) << r.reason;
  }
}

TEST(Autoscaler, ClampsToMinAndMax) {
  {
    Autoscaler a(example());
    // 8 replicas, queue 200: ceil(200 / 8) = 25; the rate limit 16; maxReplicas 8.
    const auto r = a.recommend(obs(0, 200, 1.0, 0.8, 8), 8);
    EXPECT_EQ(r.raw, 25);
    EXPECT_EQ(r.desired, 8);
  }
  {
    Autoscaler a(example_without_down_window());
    // Idle at 2: queue 0 and KV 0 ask for one fewer: raw 1, minReplicas 1.
    const auto r = a.recommend(obs(0, 0, 0.1, 0, 2), 2);
    EXPECT_EQ(r.raw, 1);
    EXPECT_EQ(r.desired, 1);
    // At 1 with minReplicas 1: the queue holds 1 (it never asks for 0 replicas while one
    // serves), KV has no demand: 1.
    const auto one = a.recommend(obs(15, 0, 0.1, 0, 1), 1);
    EXPECT_EQ(one.desired, 1);
  }
  {
    Autoscaler a(example());
    // 10 replicas counted (above maxReplicas 8), all holding: brought down to 8.
    EXPECT_EQ(a.recommend(obs(0, 30, 1.0, 0.8, 10), 10).desired, 8);
  }
}

// The series of docs/serving.md ("KEDA ScaledObject versus gpubank's autoscaler"), the
// same phases HpaModel.DocsServingSeries replays, through gpubank's autoscaler: 19:40 is
// t = 0, a sync every 15 s, 8 replicas at the start, the tidal floor 6 until 20:00 and 1
// after (floor in force = max(floor, desired), as the shell applies it).
TEST(Autoscaler, DocsServingSeries) {
  struct Phase {
    int from_s;
    bool scraped;
    double queue, ttft, kv;
  };
  const std::vector<Phase> phases{
      {0, true, 70, 1.4, 0.82},     // 19:40 peak
      {600, true, 4, 0.8, 0.40},    // 19:50 evening
      {1500, false, 0, 0, 0},       // 20:05 the pods are not scraped
      {2400, true, 40, 2.6, 0.90},  // 20:20 surge
      {3000, true, 4, 0.8, 0.40},   // 20:30 calm
  };
  Autoscaler a(example());
  int current = 8;
  std::size_t p = 0;
  std::vector<std::pair<int, int>> changes;  // (seconds after 19:40, replicas)
  for (int t = 0; t < 4800; t += 15) {
    while (p + 1 < phases.size() && phases[p + 1].from_s <= t) ++p;
    const Phase& ph = phases[p];
    const auto o = ph.scraped ? obs(t, ph.queue, ph.ttft, ph.kv, current)
                              : obs(t, std::nullopt, std::nullopt, std::nullopt, 0);
    const int floor = t < 1200 ? 6 : 1;
    const int next = std::max(floor, a.recommend(o, current).desired);
    if (next != current) changes.emplace_back(t, next);
    current = next;
  }
  // 19:40-19:50 (t < 600): every signal within 10 %: hold 8.
  // 19:50 (t = 600): queue 0.5 per replica < 1 and 4 / 7 < 1, KV 0.40 x 8 / 7 = 0.46 (0.54
  //   of the 0.85 watermark, under 0.9): both ask for 7; TTFT 0.8 s far below 1.5 s: no
  //   demand. The 10 m window holds 8 until the last 8 (t = 585) leaves it: 7 at t = 1185
  //   (19:59:45; the floor 6 does not bind).
  // 20:00 (t = 1200): the floor is 1; raws of 6 are recorded from here, but the window
  //   still holds the 7s recorded up to 1185.
  // 20:05-20:20 (t = 1500-2385): no replica reports: hold at 7, recorded as 7, so the
  //   window never empties of 7s.
  // 20:20 (t = 2400): TTFT 2.6 s asks for ceil(7 x 1.733) = 13; the 30 s up window still
  //   has the 7 of t = 2385: 7. At t = 2415 the window holds 13s only: 8 (maxReplicas).
  // 20:30 (t = 3000): calm: one replica fewer per 10 m window: 7 at t = 3585 (the last 8,
  //   recorded at 2985, leaves), 6 at 4185, 5 at 4785.
  EXPECT_EQ(changes, (std::vector<std::pair<int, int>>{{1185, 7}, {2415, 8}, {3585, 7}, {4185, 6}, {4785, 5}}));
}

TEST(Autoscaler, NoTrafficIsZeroLoadNotAMissingMetric) {
  // Four replicas report, nothing waits or runs, and no request got a first token in the
  // TTFT window (PromQL's quantile is NaN): idle. TTFT asks for one fewer, as the queue
  // does (0 per replica < 1; 0 on 3 replicas < 1), instead of holding as for a missing
  // signal; the KV cache (0.0: 0 x 4 / 3 < 0.765) asks one fewer too.
  auto p = example_without_down_window();
  Autoscaler a(p);
  Observation idle = obs(0, 0.0, std::nullopt, 0.0);
  idle.running = 0;
  idle.ttft_idle = true;
  const auto r = a.recommend(idle, 4);
  EXPECT_FALSE(r.metrics_missing) << r.reason;
  EXPECT_EQ(asks(r, "ttftP95"), 3) << r.reason;
  EXPECT_EQ(r.desired, 3) << r.reason;
  EXPECT_NE(r.reason.find("ttftP95 idle"), std::string::npos) << r.reason;

  // Without ttft_idle the same empty quantile is a missing signal: hold.
  Autoscaler b(p);
  Observation missing = idle;
  missing.ttft_idle = false;
  const auto held = b.recommend(missing, 4);
  EXPECT_TRUE(held.metrics_missing);
  EXPECT_EQ(held.desired, 4) << held.reason;

  // Requests running but none got its first token in the window: not idle, TTFT has no
  // demand, the KV cache and the queue decide (0.5 usage: 0.5 x 4 / 3 = 0.67 < 0.765: 3).
  Autoscaler c(p);
  Observation busy = obs(0, 0.0, std::nullopt, 0.5);
  busy.running = 12;
  busy.ttft_idle = true;
  const auto r2 = c.recommend(busy, 4);
  EXPECT_EQ(asks(r2, "ttftP95"), std::nullopt) << r2.reason;
  EXPECT_FALSE(r2.metrics_missing);
}

TEST(Autoscaler, AnIdleServiceScalesToZeroWhereMinReplicasIsZero) {
  // minReplicas 0, the 10 m scale-down window: one replica fewer per window while idle,
  // and from 1 to 0 (both TTFT and the queue ask for 0 at one idle replica).
  auto p = example();
  p.min_replicas = 0;
  Autoscaler a(p);
  int current = 3;
  std::int64_t t = 0;
  std::vector<std::pair<std::int64_t, int>> changes;
  for (; t <= 3600 && current > 0; t += 15) {
    Observation o = obs(t, 0.0, std::nullopt, 0.0, current);
    o.running = 0;
    o.ttft_idle = true;
    const auto r = a.recommend(o, current);
    if (r.desired != current) changes.emplace_back(t, r.desired);
    current = r.desired;
  }
  // t = 0: every signal asks for 2 and the window has nothing older: 2. Each later step
  // asks for one fewer, but the window keeps the largest raw count of the last 10 m (2
  // from t = 0, then 1 from t = 600) until it leaves the window (strictly older than
  // now - 10 m).
  ASSERT_EQ(changes.size(), 3U);
  EXPECT_EQ(changes[0], (std::pair<std::int64_t, int>{0, 2}));
  EXPECT_EQ(changes[1], (std::pair<std::int64_t, int>{600, 1}));
  EXPECT_EQ(changes[2], (std::pair<std::int64_t, int>{1200, 0}));

  // With minReplicas 1 the same idleness stops at one replica.
  Autoscaler b(example());
  current = 3;
  for (t = 0; t <= 3600; t += 15) {
    Observation o = obs(t, 0.0, std::nullopt, 0.0, current);
    o.running = 0;
    o.ttft_idle = true;
    current = b.recommend(o, current).desired;
  }
  EXPECT_EQ(current, 1);
}

TEST(Autoscaler, ReplicasStillLoadingCountAsCapacityOnItsWay) {
  // 4 replicas serve with TTFT 3 s (ratio 2): TTFT asks for 8. While the 4 new ones load
  // the model (6 min), the TTFT stays at 3 s; sizing on the 8 that count would ask for 16
  // (clamped to 8 here only by maxReplicas). Sized on the 4 serving, it asks for 8 = the
  // replicas already there: hold, no wind-up.
  auto p = example();
  p.max_replicas = 64;
  p.scale_up.stabilization_window = Duration{};
  Autoscaler a(p);
  const auto first = a.recommend(obs(0, 0.0, 3.0, 0.5), 4, 4);
  EXPECT_EQ(asks(first, "ttftP95"), 8) << first.reason;
  EXPECT_EQ(first.desired, 8);
  int current = first.desired;
  for (std::int64_t t = 15; t < 360; t += 15) {
    const auto r = a.recommend(obs(t, 0.0, 3.0, 0.5), current, 4);
    EXPECT_EQ(asks(r, "ttftP95"), 8) << "t=" << t << ": " << r.reason;
    EXPECT_EQ(r.desired, 8) << "t=" << t << ": " << r.reason;
    current = r.desired;
  }
  // Without telling it which replicas serve (every replica counted as serving), the same
  // signal keeps doubling while the model loads.
  Autoscaler windup(p);
  current = 4;
  for (std::int64_t t = 0; t < 60; t += 15) current = windup.recommend(obs(t, 0.0, 3.0, 0.5), current).desired;
  EXPECT_GT(current, 16);
}

TEST(Autoscaler, IsDeterministic) {
  // Six hours of 15 s syncs under a demand of 0.5 to 10 replicas' worth that rises and
  // falls every two hours, with noise; the signals follow demand per replica, and the
  // caller follows the desired count. Two autoscalers give the same recommendations,
  // reasons included.
  const auto run = [] {
    Autoscaler a(example());
    std::vector<Recommendation> out;
    int current = 1;
    std::uint64_t x = 42;
    for (std::int64_t t = 0; t < 6 * 3600; t += 15) {
      x = x * 6364136223846793005ULL + 1442695040888963407ULL;
      const double phase = static_cast<double>(t % 7200) / 7200;
      const double noise = static_cast<double>((x >> 33) % 11) / 10 - 0.5;  // -0.5 .. 0.5
      const double demand = 0.5 + 19 * (phase < 0.5 ? phase : 1 - phase) + noise;
      const double per_replica = demand / current;
      const auto r = a.recommend(obs(t, std::max(0.0, demand - current) * 10, per_replica,
                                     std::min(1.0, 0.85 * per_replica), current),
                                 current);
      out.push_back(r);
      current = r.desired;
    }
    return out;
  };
  const auto first = run();
  const auto second = run();
  ASSERT_EQ(first.size(), second.size());
  EXPECT_TRUE(first == second);
  // The load moves the service: it reaches the maximum and comes back down.
  int highest = 0, lowest = 8;
  for (const auto& r : first) {
    highest = std::max(highest, r.desired);
    lowest = std::min(lowest, r.desired);
  }
  EXPECT_EQ(highest, 8);
  EXPECT_LT(lowest, 4);
}

}  // namespace
}  // namespace gpubank::serving
