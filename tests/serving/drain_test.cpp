#include "serving/drain.hpp"

#include <gtest/gtest.h>

namespace gpubank::serving {
namespace {

constexpr std::int64_t kMinute = 60'000;

DrainSpec spec(std::int64_t timeout_ms) {
  return DrainSpec{"customer-service-llm", "customer-service-llm-predictor-7d9f-x2k4q", timeout_ms, 4, 4};
}

TEST(Drain, StartsWithRouterWeightZeroThenStopsNewRequestsThenWaits) {
  Drain drain(spec(20 * kMinute));
  const auto s = drain.start(1000, 5, 2);
  EXPECT_EQ(s.steps, (std::vector<DrainStep>{DrainStep::RouterWeightZero, DrainStep::StopNewRequests,
                                             DrainStep::WaitInFlight}));
  EXPECT_EQ(s.event.kind, "DrainStarted");
  EXPECT_EQ(s.event.t_ms, 1000);
  EXPECT_EQ(s.event.message,
            "customer-service-llm: draining replica customer-service-llm-predictor-7d9f-x2k4q (router weight 0, no new "
            "requests) with 5 requests in flight (2 streaming); it is removed when they finish or after drainTimeout 20m");
  EXPECT_EQ(s.event.numbers.dump(), R"({"inFlight":5,"streaming":2,"drainTimeoutMs":1200000})");
  EXPECT_EQ(drain.state(), DrainState::Waiting);
  // A second start does nothing.
  EXPECT_TRUE(drain.start(2000).steps.empty());
}

TEST(Drain, LongStreamingRequestDrainsToCompletionWithinTheTimeout) {
  Drain drain(spec(20 * kMinute));
  (void)drain.start(0, 3, 1);
  // Two short requests finish in the first minute; the long stream goes on.
  auto o = drain.observe(1 * kMinute, 1, 1);
  EXPECT_EQ(o.state, DrainState::Waiting);
  EXPECT_TRUE(o.events.empty());
  o = drain.observe(14 * kMinute, 1, 1);
  EXPECT_EQ(o.state, DrainState::Waiting);
  // It ends after 15 minutes, 5 minutes before drainTimeout.
  o = drain.observe(15 * kMinute, 0, 0);
  EXPECT_EQ(o.state, DrainState::Completed);
  EXPECT_EQ(o.cut, 0);
  ASSERT_EQ(o.events.size(), 2U);
  EXPECT_EQ(o.events[0].kind, "DrainCompleted");
  EXPECT_EQ(o.events[0].reason, "Drained");
  EXPECT_EQ(o.events[0].message,
            "customer-service-llm: replica customer-service-llm-predictor-7d9f-x2k4q drained in 15m, every request in "
            "flight finished");
  EXPECT_EQ(o.events[0].numbers.dump(),
            R"({"elapsedMs":900000,"drainTimeoutMs":1200000,"cut":0,"cutStreaming":0})");
  EXPECT_EQ(o.events[1].kind, "ReplicaRemoved");
  EXPECT_EQ(o.events[1].message,
            "customer-service-llm: replica customer-service-llm-predictor-7d9f-x2k4q removed, its 4 GPUs (TP=4) "
            "released together");
  // Finished: later observations repeat the state without events.
  o = drain.observe(16 * kMinute, 0, 0);
  EXPECT_EQ(o.state, DrainState::Completed);
  EXPECT_TRUE(o.events.empty());
}

TEST(Drain, RequestsStillInFlightAtTheTimeoutAreCutAndCounted) {
  Drain drain(spec(5 * kMinute));
  (void)drain.start(10'000, 4, 2);
  // 1 ms before the timeout: still waiting.
  auto o = drain.observe(10'000 + 5 * kMinute - 1, 3, 2);
  EXPECT_EQ(o.state, DrainState::Waiting);
  // At start + drainTimeout, 3 in flight, 2 of them streaming: cut.
  o = drain.observe(10'000 + 5 * kMinute, 3, 2);
  EXPECT_EQ(o.state, DrainState::TimedOut);
  EXPECT_EQ(o.cut, 3);
  ASSERT_EQ(o.events.size(), 2U);
  EXPECT_EQ(o.events[0].reason, "DrainTimeout");
  EXPECT_EQ(o.events[0].message,
            "customer-service-llm: replica customer-service-llm-predictor-7d9f-x2k4q still had 3 requests in flight "
            "(2 streaming) when drainTimeout 5m passed; they are cut");
  EXPECT_EQ(o.events[0].numbers["cut"], 3);
  EXPECT_EQ(o.events[0].numbers["cutStreaming"], 2);
  EXPECT_EQ(o.events[1].kind, "ReplicaRemoved");
}

TEST(Drain, NothingInFlightAtTheTimeoutIsACompletion) {
  Drain drain(spec(5 * kMinute));
  (void)drain.start(0, 1, 0);
  EXPECT_EQ(drain.observe(5 * kMinute, 0, 0).state, DrainState::Completed);
}

TEST(Drain, ObservingBeforeStartChangesNothing) {
  Drain drain(spec(5 * kMinute));
  const auto o = drain.observe(0, 0, 0);
  EXPECT_EQ(o.state, DrainState::NotStarted);
  EXPECT_TRUE(o.events.empty());
}

std::vector<ReplicaState> fleet() {
  return {
      {"r-a", Phase::ready, 4, 1, 100},
      {"r-b", Phase::ready, 2, 2, 200},
      {"r-c", Phase::ready, 2, 1, 300},
      {"r-d", Phase::ready, 2, 1, 400},
      {"r-e", Phase::draining, 0, 0, 500},
  };
}

TEST(ChooseScaleIn, FewestInFlightThenFewestStreamingThenNewestThenId) {
  auto replicas = fleet();
  // r-b, r-c, r-d have 2 in flight; r-c and r-d 1 streaming; r-d is newer (400).
  EXPECT_EQ(choose_scale_in(replicas), 3U);
  replicas[3].started_ms = 300;  // same start as r-c: the smaller id
  EXPECT_EQ(choose_scale_in(replicas), 2U);
  replicas[0].in_flight = 1;  // r-a now has the fewest in flight
  EXPECT_EQ(choose_scale_in(replicas), 0U);
}

TEST(ChooseScaleIn, ALoadingReplicaGoesFirstTheNewestOfThem) {
  auto replicas = fleet();
  replicas.push_back({"r-f", Phase::loading, 0, 0, 600});
  replicas.push_back({"r-g", Phase::loading, 0, 0, 700});
  EXPECT_EQ(choose_scale_in(replicas), 6U);  // r-g, started last
}

TEST(ChooseScaleIn, NeverOneAlreadyDraining) {
  std::vector<ReplicaState> replicas{{"r-a", Phase::draining, 0, 0, 1}, {"r-b", Phase::draining, 0, 0, 2}};
  EXPECT_EQ(choose_scale_in(replicas), std::nullopt);
  EXPECT_EQ(choose_scale_in(std::span<const ReplicaState>{}), std::nullopt);
}

TEST(PlanScaleIn, NeverBelowTheFloorNorMoreThanCurrentMinusDesired) {
  const auto replicas = fleet();  // 4 serving, 1 draining
  // 4 -> 1 asked, floor 3: only 1 goes (4 - 3), the one choose_scale_in picks: r-d.
  auto plan = plan_scale_in(4, 1, 3, replicas);
  EXPECT_EQ(plan.count, 1);
  EXPECT_EQ(plan.ids, std::vector<std::string>{"r-d"});
  // 4 -> 2, floor 1: 2 go, r-d then r-c.
  plan = plan_scale_in(4, 2, 1, replicas);
  EXPECT_EQ(plan.ids, (std::vector<std::string>{"r-d", "r-c"}));
  // Desired above current, or floor at current: nothing.
  EXPECT_EQ(plan_scale_in(4, 5, 1, replicas).count, 0);
  EXPECT_EQ(plan_scale_in(4, 1, 4, replicas).count, 0);
  // Floor 0, desired 0: every serving replica, never the draining r-e.
  plan = plan_scale_in(4, 0, 0, replicas);
  EXPECT_EQ(plan.ids, (std::vector<std::string>{"r-d", "r-c", "r-b", "r-a"}));
}

}  // namespace
}  // namespace gpubank::serving
