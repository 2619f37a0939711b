// Which borrowed workloads yield on reclaim, and how few GPUs it takes.
#include "bank/victims.hpp"

#include <gtest/gtest.h>

namespace gpubank::bank {
namespace {

VictimCandidate c(std::string name, std::int64_t gpus, VictimClass klass, std::int32_t priority = 0,
                  std::int64_t admitted = 0) {
  VictimCandidate v;
  v.workload = std::move(name);
  v.gpus = gpus;
  v.klass = klass;
  v.priority = priority;
  v.admitted_at = admitted;
  return v;
}

std::vector<std::string> names(const VictimChoice& choice) {
  std::vector<std::string> out;
  for (const auto& v : choice.victims) out.push_back(v.workload);
  return out;
}

TEST(Victims, ClassesFollowTheFacts) {
  EXPECT_EQ(classify({.running = false}), VictimClass::NotRunning);
  EXPECT_EQ(classify({.running = true, .checkpointable = true, .expected_runtime = 1}), VictimClass::Checkpointable);
  EXPECT_EQ(classify({.running = true, .development = true, .expected_runtime = 1}), VictimClass::Development);
  EXPECT_EQ(classify({.running = true, .expected_runtime = 30 * 60 * 1000}), VictimClass::ShortRetryable);
  EXPECT_EQ(classify({.running = true, .expected_runtime = 30 * 60 * 1000 + 1}), VictimClass::LongStateless);
}

TEST(Victims, EarlierClassesYieldFirst) {
  const std::vector<VictimCandidate> all{c("long", 8, VictimClass::LongStateless), c("dev", 8, VictimClass::Development),
                                         c("ckpt", 8, VictimClass::Checkpointable), c("short", 8, VictimClass::ShortRetryable),
                                         c("starting", 8, VictimClass::NotRunning)};
  EXPECT_EQ(names(choose_victims(all, 8)), std::vector<std::string>{"starting"});
  EXPECT_EQ(names(choose_victims(all, 16)), (std::vector<std::string>{"starting", "short"}));
  EXPECT_EQ(names(choose_victims(all, 40)), (std::vector<std::string>{"starting", "short", "ckpt", "dev", "long"}));
}

TEST(Victims, TheFewestGpusThatCoverTheDemand) {
  // 6 needed: the 8 covers it alone; the 4 and the 2 together as well, but taking the
  // largest first (8) and stopping is fewer workloads and the smallest single cover.
  const std::vector<VictimCandidate> all{c("four", 4, VictimClass::Checkpointable), c("eight", 8, VictimClass::Checkpointable),
                                         c("sixteen", 16, VictimClass::Checkpointable), c("two", 2, VictimClass::Checkpointable)};
  auto choice = choose_victims(all, 6);
  EXPECT_EQ(names(choice), std::vector<std::string>{"eight"});
  EXPECT_TRUE(choice.covers);
  // 20 needed: none covers alone: the largest (16), then the smallest covering the 4 left.
  choice = choose_victims(all, 20);
  EXPECT_EQ(names(choice), (std::vector<std::string>{"sixteen", "four"}));
  EXPECT_EQ(choice.gpus, 20);
}

TEST(Victims, FillBackDropsVictimsThatAreNotNeeded) {
  // 10 needed: first the largest of the first class (a 4), then in the next class the
  // smallest that covers the 6 left (a 12): 4 + 12 = 16, and the 4 is not needed after all.
  auto choice = choose_victims({c("short-4", 4, VictimClass::ShortRetryable), c("ckpt-12", 12, VictimClass::Checkpointable)}, 10);
  EXPECT_EQ(names(choice), (std::vector<std::string>{"ckpt-12"}));
  // With an 8 in the next class, 4 + 8 = 12 is both needed and fewer GPUs than a 16.
  choice = choose_victims({c("short-4", 4, VictimClass::ShortRetryable), c("ckpt-8", 8, VictimClass::Checkpointable),
                           c("ckpt-16", 16, VictimClass::Checkpointable)},
                          10);
  EXPECT_EQ(names(choice), (std::vector<std::string>{"short-4", "ckpt-8"}));
}

TEST(Victims, ProtectedWorkloadsNeverYieldAndShortfallsAreReported) {
  auto inference = c("inference", 8, VictimClass::LongStateless);
  inference.protected_ = true;
  const auto choice = choose_victims({inference, c("batch", 4, VictimClass::ShortRetryable)}, 8);
  EXPECT_EQ(names(choice), std::vector<std::string>{"batch"});
  EXPECT_FALSE(choice.covers);
  EXPECT_EQ(choice.gpus, 4);
  EXPECT_TRUE(choose_victims({}, 0).victims.empty());
}

TEST(Victims, NonPreemptibleClassesNeverYield) {
  // The cheapest victim by class and size, but its priority class says preemptible: false.
  auto pinned = c("pinned", 8, VictimClass::NotRunning);
  pinned.preemptible = false;
  EXPECT_FALSE(eligible_victim(pinned));
  const auto choice = choose_victims({pinned, c("long", 8, VictimClass::LongStateless)}, 8);
  EXPECT_EQ(names(choice), std::vector<std::string>{"long"});
  EXPECT_TRUE(choice.covers);
  EXPECT_TRUE(choose_victims({pinned}, 8).victims.empty());
}

TEST(Victims, OnlyPreemptTraitsDecideWhatALenderMayTake) {
  auto batch = c("batch", 4, VictimClass::LongStateless);
  batch.traits = {"batch"};
  auto ckpt = c("ckpt", 8, VictimClass::Checkpointable);
  ckpt.traits = {"training", "checkpointable"};
  auto plain = c("plain", 8, VictimClass::NotRunning);
  plain.traits = {"training"};
  const std::vector<std::string> only{"batch", "checkpointable"};
  EXPECT_FALSE(eligible_victim(plain, only));
  EXPECT_TRUE(eligible_victim(plain));
  EXPECT_TRUE(eligible_victim(batch, only));
  EXPECT_TRUE(eligible_victim(ckpt, only));
  // Protection and preemptible: false win over the traits.
  ckpt.preemptible = false;
  EXPECT_FALSE(eligible_victim(ckpt, only));
  batch.protected_ = true;
  EXPECT_FALSE(eligible_victim(batch, only));
}

TEST(Victims, WithinAClassLowPriorityAndFreshCheckpointsGoFirst) {
  auto old_ckpt = c("old-ckpt", 8, VictimClass::Checkpointable);
  old_ckpt.checkpoint_age = 50 * 60 * 1000;
  auto fresh = c("fresh", 8, VictimClass::Checkpointable);
  fresh.checkpoint_age = 60 * 1000;
  EXPECT_EQ(names(choose_victims({old_ckpt, fresh}, 8)), std::vector<std::string>{"fresh"});
  EXPECT_EQ(names(choose_victims({c("dev-high", 4, VictimClass::Development, 900), c("dev-low", 4, VictimClass::Development, 100)}, 4)),
            std::vector<std::string>{"dev-low"});
}

}  // namespace
}  // namespace gpubank::bank
