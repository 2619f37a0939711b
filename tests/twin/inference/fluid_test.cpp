// The fluid serving model (twin/inference/fluid.hpp) against the request model it is
// calibrated on: a steady load gives the same SLO verdict and a TTFT p95 of the same order
// (higher: the calibration is one replica, without the router's pooling);
// an overload queues what one replica cannot take and the TTFT grows with the backlog; no
// replica keeps arrivals at the router; a drain empties a replica to zero; and the same
// calls give the same exposition byte for byte.
#include "twin/inference/fluid.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "metrics/exposition.hpp"
#include "twin/inference/load.hpp"

namespace gpubank::twin::inference {
namespace {

using testing::splitmix64;

// Poisson arrivals at `rps` (exponential gaps), prompts 200-1800 and outputs 50-350 tokens.
std::vector<Request> fluid_poisson_load(double rps, std::int64_t horizon_ms, std::uint64_t seed) {
  std::vector<Request> out;
  double t = 0;
  while (true) {
    const double u = static_cast<double>(splitmix64(seed) >> 11) * 0x1.0p-53;
    t += -std::log1p(-u) / rps * 1000.0;
    if (t >= static_cast<double>(horizon_ms)) break;
    out.push_back({static_cast<std::int64_t>(t), static_cast<std::int32_t>(testing::uniform(seed, 200, 1800)),
                   static_cast<std::int32_t>(testing::uniform(seed, 50, 350)), out.size()});
  }
  return out;
}

Service fluid_test_service() {
  Service s;
  s.name = "chat";
  return s;  // Llama-3.1-70B, TP=4 on H100
}

std::shared_ptr<const Calibration> calibration() {
  static const auto made = []() -> std::shared_ptr<const Calibration> {
    auto c = calibrate(fluid_test_service(), 3.0, [](double rps, std::int64_t horizon) { return fluid_poisson_load(rps, horizon, 7); });
    EXPECT_TRUE(c) << c.error();
    return std::make_shared<const Calibration>(c ? *c : Calibration{});
  }();
  return made;
}

TEST(FluidCalibration, ClimbsTheLaddersToTheKneeAndMeasuresSaturation) {
  const auto c = calibration();
  ASSERT_EQ(c->ladders.size(), kCalibrationReplicas.size());
  for (const Ladder& ladder : c->ladders) {
    ASSERT_GE(ladder.levels.size(), 5U) << ladder.replicas;
    for (std::size_t i = 1; i < ladder.levels.size(); ++i) {
      EXPECT_GT(ladder.levels[i].offered_rps, ladder.levels[i - 1].offered_rps);
    }
    for (const LoadLevel& l : ladder.levels) {
      EXPECT_NEAR(l.served_rps, l.offered_rps, 0.15 * l.offered_rps + 0.1) << l.offered_rps;
      EXPECT_GE(l.running, 0);
      EXPECT_LE(l.kv_usage, 1.0);
      EXPECT_TRUE(std::is_sorted(l.ttft_us.begin(), l.ttft_us.end()));
    }
    // More load, more queueing: the top level's p95 is well above the lowest's.
    EXPECT_GT(ladder.levels.back().ttft_us[190], ladder.levels.front().ttft_us[190]);
    EXPECT_GE(ladder.saturation_rps, ladder.levels.back().served_rps * 0.95);
  }
  // Pooling: at the same load per replica, four replicas behind the router queue less
  // than one alone (compared at the highest rung both hold).
  const Ladder& one = c->ladders.front();
  const Ladder& four = c->ladders.back();
  const std::size_t rung = std::min(one.levels.size(), four.levels.size()) - 1;
  EXPECT_LT(four.levels[rung].ttft_us[190], one.levels[rung].ttft_us[190]);
}

TEST(FluidCalibration, RefusesANonsenseReference) {
  auto c = calibrate(fluid_test_service(), 0, [](double, std::int64_t) { return std::vector<Request>{}; });
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().find("reference rate"), std::string::npos);
  const std::array<int, 2> descending{4, 1};
  auto d = calibrate(fluid_test_service(), 3.0, [](double, std::int64_t) { return std::vector<Request>{}; }, descending);
  ASSERT_FALSE(d);
  EXPECT_NE(d.error().find("ascending"), std::string::npos);
}

// The TTFT p95 (nearest rank) of the requests the request model answered that arrived in
// [from, to) ms.
double fluid_test_exact_p95_ms(const InferenceService& s, std::int64_t from, std::int64_t to) {
  std::vector<std::int64_t> ttft;
  for (const Completion& c : s.completions()) {
    if (c.arrival_us >= from * 1000 && c.arrival_us < to * 1000) ttft.push_back(c.first_token_us - c.arrival_us);
  }
  std::sort(ttft.begin(), ttft.end());
  const auto rank = static_cast<std::size_t>(std::ceil(0.95 * static_cast<double>(ttft.size())));
  return ttft.empty() ? 0 : static_cast<double>(ttft[rank - 1]) / 1000.0;
}

TEST(FluidService, ASteadyLoadAgreesWithTheRequestModel) {
  // Three replicas at 60 % of what they saturate at, 20 minutes.
  const double rps = 3 * 0.6 * calibration()->ladders.back().saturation_rps;
  const auto load = fluid_poisson_load(rps, 20 * 60'000, 99);
  Diagnostics findings;
  ServiceOptions keep;
  keep.keep_completions = true;
  auto requests = InferenceService::create(fluid_test_service(), findings, keep);
  auto fluid = FluidService::create(fluid_test_service(), calibration(), findings);
  ASSERT_TRUE(requests && fluid) << (findings.empty() ? "" : findings.front().to_string());
  for (int i = 0; i < 3; ++i) {
    requests->add_replica({}, 0);
    fluid->add_replica({}, 0);
  }
  ASSERT_TRUE(requests->add_requests(load, findings));
  ASSERT_TRUE(fluid->add_requests(load, findings));
  for (std::int64_t t = 15'000; t <= 20 * 60'000; t += 15'000) {
    ASSERT_TRUE(requests->advance_to(t));
    ASSERT_TRUE(fluid->advance_to(t));
  }
  const auto* minutes = fluid->minute_ttft();
  ASSERT_NE(minutes, nullptr);
  ASSERT_GE(minutes->size(), 19U);
  // Over minutes 5-18: the fluid p95 per minute against the request model's.
  for (std::int64_t m = 5; m < 19; ++m) {
    const double exact = fluid_test_exact_p95_ms(*requests, m * 60'000, (m + 1) * 60'000);
    const double fluid_ms = static_cast<double>((*minutes)[static_cast<std::size_t>(m)].p95_us) / 1000.0;
    EXPECT_NEAR(fluid_ms, exact, 0.3 * exact) << "minute " << m;
    EXPECT_LT(fluid_ms, 1500.0) << "a steady load meets a 1.5 s target in both";
  }
  const ServiceSnapshot a = requests->snapshot(), b = fluid->snapshot();
  EXPECT_EQ(b.router_waiting, 0);
  EXPECT_NEAR(static_cast<double>(b.finished), static_cast<double>(a.finished), 0.03 * static_cast<double>(a.finished));
  EXPECT_EQ(b.arrived, a.arrived);
  // The counters the autoscaler and the attribution read: tokens and TTFT observations.
  std::int64_t tokens_a = 0, tokens_b = 0, ttft_a = 0, ttft_b = 0;
  for (ReplicaId id = 0; id < 3; ++id) {
    tokens_a += requests->counters(id).prompt_tokens + requests->counters(id).generation_tokens;
    tokens_b += fluid->counters(id).prompt_tokens + fluid->counters(id).generation_tokens;
    ttft_a += requests->counters(id).time_to_first_token.count();
    ttft_b += fluid->counters(id).time_to_first_token.count();
  }
  EXPECT_NEAR(static_cast<double>(tokens_b), static_cast<double>(tokens_a), 0.05 * static_cast<double>(tokens_a));
  EXPECT_NEAR(static_cast<double>(ttft_b), static_cast<double>(ttft_a), 0.03 * static_cast<double>(ttft_a));
}

TEST(FluidService, AnOverloadQueuesAndTheWaitGrows) {
  const double mu = calibration()->ladders.back().saturation_rps;
  Diagnostics findings;
  auto fluid = FluidService::create(fluid_test_service(), calibration(), findings);
  ASSERT_TRUE(fluid);
  fluid->add_replica({"r0", 1}, 0);
  std::vector<ArrivalBatch> batches;
  for (std::int64_t t = 0; t < 10 * 60'000; t += kFluidSliceMs) batches.push_back({t, t + kFluidSliceMs, 2 * mu * 5, 0, 0});
  ASSERT_TRUE(fluid->add_batches(batches));
  ASSERT_TRUE(fluid->advance_to(10 * 60'000));
  // Twice what it can take for 10 minutes: about mu x 600 requests wait.
  const ReplicaSnapshot r = fluid->replica_snapshot(0);
  EXPECT_NEAR(static_cast<double>(r.waiting), mu * 600, 0.1 * mu * 600 + 5);
  const auto& minutes = *fluid->minute_ttft();
  ASSERT_GE(minutes.size(), 9U);
  EXPECT_GT(minutes[8].p95_us, minutes[1].p95_us);
  EXPECT_GT(minutes[8].p95_us, 60LL * 1'000'000) << "minute 8 waits behind minutes of backlog";
  // Out of order batches are refused.
  std::vector<ArrivalBatch> late{{0, kFluidSliceMs, 1, 0, 0}};
  EXPECT_FALSE(fluid->add_batches(late));
}

TEST(FluidService, WithoutAReplicaArrivalsWaitAtTheRouter) {
  Diagnostics findings;
  auto fluid = FluidService::create(fluid_test_service(), calibration(), findings);
  ASSERT_TRUE(fluid);
  const auto load = fluid_poisson_load(2.0, 120'000, 3);
  ASSERT_TRUE(fluid->add_requests(load, findings));
  ASSERT_TRUE(fluid->advance_to(60'000));
  EXPECT_GT(fluid->snapshot().router_waiting, 80);
  EXPECT_EQ((*fluid->minute_ttft())[0].p95_us, MinuteTtft::kNeverUs) << "no replica will ever answer them";
  // A replica loading for 30 s: the second minute's arrivals wait for it.
  fluid->add_replica({}, 90'000);
  ASSERT_TRUE(fluid->advance_to(180'000));
  const auto& minutes = *fluid->minute_ttft();
  ASSERT_GE(minutes.size(), 2U);
  EXPECT_NE(minutes[1].p95_us, MinuteTtft::kNeverUs);
  EXPECT_GT(minutes[1].p95_us, 0);
  EXPECT_EQ(fluid->snapshot().router_waiting, 0);
}

TEST(FluidService, ADrainEmptiesTheReplicaAndAnAbortCountsWhatItCut) {
  Diagnostics findings;
  auto fluid = FluidService::create(fluid_test_service(), calibration(), findings);
  ASSERT_TRUE(fluid);
  const ReplicaId a = fluid->add_replica({}, 0), b = fluid->add_replica({}, 0);
  const double rps = 2 * 0.8 * calibration()->ladders.back().saturation_rps;
  ASSERT_TRUE(fluid->add_requests(fluid_poisson_load(rps, 30 * 60'000, 5), findings));
  ASSERT_TRUE(fluid->advance_to(5 * 60'000));
  const std::int64_t held = fluid->replica_snapshot(a).in_flight;
  EXPECT_GT(held, 0);
  ASSERT_TRUE(fluid->start_drain(a));
  EXPECT_EQ(fluid->replica_snapshot(a).state, ReplicaState::draining);
  ASSERT_TRUE(fluid->advance_to(10 * 60'000));
  EXPECT_EQ(fluid->replica_snapshot(a).in_flight, 0) << "drained";
  const std::int64_t on_b = fluid->replica_snapshot(b).in_flight;
  auto cut = fluid->abort_replica(b);
  ASSERT_TRUE(cut);
  EXPECT_EQ(*cut, on_b);
  EXPECT_EQ(fluid->snapshot().aborted, on_b);
  EXPECT_FALSE(fluid->abort_replica(b)) << "removed already";
  EXPECT_FALSE(fluid->start_drain(42));
}

TEST(FluidService, TheSameCallsGiveTheSameExpositionByteForByte) {
  auto run = []() -> std::string {
    Diagnostics findings;
    auto fluid = FluidService::create(fluid_test_service(), calibration(), findings);
    fluid->add_replica({"a", 1}, 0);
    fluid->add_replica({"b", 1}, 30'000);
    EXPECT_TRUE(fluid->add_requests(fluid_poisson_load(5.0, 600'000, 11), findings));
    EXPECT_TRUE(fluid->advance_to(600'000));
    auto text = metrics::write_text(fluid->exposition());
    EXPECT_TRUE(text);
    return text ? *text : std::string();
  };
  const std::string first = run();
  EXPECT_EQ(first, run());
  EXPECT_NE(first.find("vllm:time_to_first_token_seconds_bucket"), std::string::npos);
}

TEST(FluidService, RefusesRequestsOutOfOrderNamingTheRequest) {
  Diagnostics findings;
  auto fluid = FluidService::create(fluid_test_service(), calibration(), findings);
  ASSERT_TRUE(fluid);
  std::vector<Request> bad{{100, 10, 10, 0}, {50, 10, 10, 1}, {200, 0, 10, 2}};
  EXPECT_FALSE(fluid->add_requests(bad, findings));
  ASSERT_EQ(findings.size(), 2U);
  EXPECT_EQ(findings[0].path, "requests[1]");
  EXPECT_EQ(findings[0].rule, kRuleRequest);
  EXPECT_EQ(findings[1].path, "requests[2]");
  EXPECT_FALSE(FluidService::create(fluid_test_service(), nullptr, findings)) << "no calibration";
}

}  // namespace
}  // namespace gpubank::twin::inference
