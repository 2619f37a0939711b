// The seeded day behind `gpubank up`: deterministic, shaped by the policies, and it runs.
#include <gtest/gtest.h>

#include "policy/policy_set.hpp"
#include "support/paths.hpp"
#include "twin/live/day.hpp"
#include "twin/live/platform.hpp"

namespace gpubank::twin::live {
namespace {

policy::PolicySet example_policies() {
  return policy::load_policy_set({testing::source_dir() + "/examples/policies"});
}

DayOptions options(std::uint64_t seed) {
  DayOptions o;
  o.seed = seed;
  o.start = *parse_rfc3339("2026-11-30T16:00:00Z");  // 00:00 on Tuesday 1 December in Asia/Shanghai
  return o;
}

TEST(Day, RunsToTheEndOfTheDay) {
  auto created = Platform::create(example_policies(), options(1));
  ASSERT_TRUE(created) << created.error();
  auto& p = *created.value();
  ASSERT_TRUE(p.advance_to(p.end())) << p.error();
  EXPECT_EQ(p.now(), 24 * 3'600'000);
}

}  // namespace
}  // namespace gpubank::twin::live
