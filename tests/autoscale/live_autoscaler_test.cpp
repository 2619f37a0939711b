// LiveAutoscaler: signals that cannot be read hold the count (never a scale-down, and a
// scale-down the window had prepared waits again); a reading with replicas left unread may
// scale out, never in.
#include <gtest/gtest.h>

#include "autoscale/live_autoscaler.hpp"

#include <cmath>

namespace gpubank::autoscale {
namespace {

constexpr std::int64_t kLiveT0 = 1'796'000'000'000;
constexpr std::int64_t kLiveSync = 15'000;

policy::InferenceScalingPolicySpec spec() {
  policy::InferenceScalingPolicySpec s;
  s.workload_ref.name = "chat";
  s.workload_ref.namespace_ = "serving";
  s.min_replicas = 1;
  s.max_replicas = 8;
  s.scale_up.queue_depth_per_replica = 8;
  s.scale_down.queue_depth_per_replica = 1;
  s.scale_down.stabilization_window = Duration(std::chrono::minutes(1));
  return s;
}

SignalReading queue(double q, int replicas) {
  SignalReading r;
  r.observation.replicas_reporting = replicas;
  r.observation.queue_depth = q;
  return r;
}

TEST(LiveAutoscaler, UnreadableSignalsHoldAndSayWhy) {
  LiveAutoscaler a(spec());
  const Expected<SignalReading> down = Unexpected{std::string("the freshness query failed: could not connect")};
  const auto step = a.step(down, kLiveT0, 5);
  EXPECT_TRUE(step.held);
  EXPECT_EQ(step.recommendation.desired, 5);
  EXPECT_FALSE(step.reading);
  EXPECT_EQ(step.signals_error, down.error());
  EXPECT_NE(step.recommendation.reason.find("could not connect"), std::string::npos) << step.recommendation.reason;
  EXPECT_NE(step.recommendation.reason.find("never scales down"), std::string::npos);
  const auto j = to_json(step);
  EXPECT_EQ(j["held"], true);
  EXPECT_EQ(j["desired"], 5);
  EXPECT_TRUE(j["observation"].is_null());
  // Still moved into [minReplicas, maxReplicas]: a count the policy forbids is not held.
  EXPECT_EQ(a.step(down, kLiveT0 + kLiveSync, 12).recommendation.desired, 8);
  EXPECT_EQ(a.step(down, kLiveT0 + 2 * kLiveSync, 0).recommendation.desired, 1);
}

TEST(LiveAutoscaler, AnOutageInTheMiddleOfAQuietSpellRestartsTheScaleDownWindow) {
  // Idle at 5 replicas: the queue is empty, so each scale-down window may take one away.
  auto run = [](bool outage) {
    LiveAutoscaler a(spec());
    int replicas = 5;
    std::vector<int> counts;
    for (int i = 0; i < 12; ++i) {
      const std::int64_t t = kLiveT0 + i * kLiveSync;
      const bool down = outage && i >= 3 && i < 6;
      const auto step = down ? a.step(Expected<SignalReading>(Unexpected{std::string("Prometheus down")}), t, replicas)
                             : a.step(queue(0, replicas), t, replicas);
      if (down) EXPECT_GE(step.recommendation.desired, replicas) << "sync " << i;
      replicas = step.recommendation.desired;
      counts.push_back(replicas);
    }
    return counts;
  };
  const auto quiet = run(false);
  const auto interrupted = run(true);
  // One replica per scale-down window (four syncs), from the first sync's 4.
  EXPECT_EQ(quiet, (std::vector<int>{4, 4, 4, 4, 3, 3, 3, 3, 2, 2, 2, 2}));
  // Held through syncs 3-5; the step due at sync 4 waits for a window of readings after.
  EXPECT_EQ(interrupted, (std::vector<int>{4, 4, 4, 4, 4, 4, 4, 4, 4, 3, 3, 3}));
  for (std::size_t i = 3; i < 6; ++i) EXPECT_EQ(interrupted[i], interrupted[2]);
}

TEST(LiveAutoscaler, UnreadReplicasNeverLetTheServiceScaleInButItMayScaleOut) {
  LiveAutoscaler quiet(spec());
  SignalReading partial = queue(0, 3);
  partial.unread = {"http://10.0.0.7:8000/metrics: timed out connecting"};
  int replicas = 4;
  for (int i = 0; i < 10; ++i) {
    const auto step = quiet.step(partial, kLiveT0 + i * kLiveSync, replicas);
    EXPECT_EQ(step.recommendation.desired, 4) << "sync " << i;
    if (i > 5) {
      EXPECT_TRUE(step.held);
      EXPECT_NE(step.recommendation.reason.find("could not be read"), std::string::npos) << step.recommendation.reason;
    }
  }
  // Above maxReplicas the count still comes down to it.
  LiveAutoscaler above(spec());
  EXPECT_EQ(above.step(partial, kLiveT0, 10).recommendation.desired, 8);
  LiveAutoscaler busy(spec());
  SignalReading loaded = queue(60, 3);
  loaded.unread = partial.unread;
  const auto out = busy.step(loaded, kLiveT0, 4);
  EXPECT_FALSE(out.held);
  EXPECT_EQ(out.recommendation.desired, 8);  // ceil(60 / 8)
  const auto j = to_json(out);
  EXPECT_EQ(j["unread"].size(), 1u);
  EXPECT_EQ(j["observation"]["queueDepth"], 60.0);
}

TEST(DeletionCosts, TheReplicaWithTheFewestRequestsGoesFirstWithinTheAnnotationsRange) {
  const std::vector<ReplicaLoad> loads{{"b", 12.4}, {"a", 12.6}, {"c", 0}, {"d", 1e12}, {"e", -1}, {"f", std::nan("")}};
  EXPECT_EQ(deletion_costs(loads), (std::vector<DeletionCost>{{"c", 0}, {"e", 0}, {"b", 12}, {"a", 13},
                                                              {"d", 2147483647}, {"f", 2147483647}}));
  SignalReading r = queue(3, 2);
  r.loads = {{"pod-x", 7}, {"pod-y", 2}};
  LiveAutoscaler a(spec());
  const auto j = to_json(a.step(r, kLiveT0, 2));
  ASSERT_EQ(j["deletionCosts"].size(), 2u);
  EXPECT_EQ(j["deletionCosts"][0]["replica"], "pod-y");
  EXPECT_EQ(j["deletionCosts"][0]["cost"], 2);
}

}  // namespace
}  // namespace gpubank::autoscale
