// A business group's LowUtilizationPolicy may only tighten the platform-wide ones it
// overrides (lowutil.loosens-platform), and the merge takes the stricter value of each field.
#include "policy/low_utilization.hpp"

#include <gtest/gtest.h>

#include "policy/rules.hpp"
#include "support/policy_fixture.hpp"

namespace gpubank::policy {
namespace {

using gpubank::testing::examples_plus;
using gpubank::testing::findings_of;

// A policy for search's training workloads; the platform's training-default (examples) has
// window 60m, thresholds GPU 10 / memory 15, startup 30m, checkpoint 20m, escalation to
// business-group-admin after 2h, repeat 6h, and two exclusions.
std::string search_policy(const std::string& spec) {
  return "apiVersion: platform.gpubank.dev/v1alpha1\nkind: LowUtilizationPolicy\nmetadata: {name: search-training}\n"
         "spec:\n  match: {workloadType: training, businessGroup: search}\n" +
         spec;
}

const std::string kTighter = R"(  window: 30m
  thresholds: {averageGpuUtilization: 20}
  startupGracePeriod: 15m
  checkpointGracePeriod: 20m
  notify: {first: owner, after: 1h, escalateTo: business-group-admin, repeatInterval: 6h}
  excludeWhen:
  - {label: platform.gpubank.dev/capacity-role, value: serving-floor}
)";

std::vector<Diagnostic> loosenings_in(const Diagnostics& findings) {
  std::vector<Diagnostic> out;
  for (const auto& f : findings) {
    if (f.rule == rule::kLowUtilLoosensPlatform) out.push_back(f);
  }
  return out;
}

TEST(LowUtilizationMerge, AGroupPolicyThatOnlyTightensIsValid) {
  const auto f = findings_of(examples_plus(search_policy(kTighter)));
  EXPECT_TRUE(f.empty()) << f[0].to_string();
}

TEST(LowUtilizationMerge, EveryWayOfLooseningIsAnErrorNamingTheField) {
  const auto f = loosenings_in(findings_of(examples_plus(search_policy(R"(  window: 2h
  thresholds: {averageGpuUtilization: 5, averagePowerFraction: 30}
  startupGracePeriod: 45m
  checkpointGracePeriod: 30m
  notify: {first: owner, after: 3h, repeatInterval: 12h}
  excludeWhen:
  - {label: team, value: search}
)"))));
  std::vector<std::string> paths;
  for (const auto& d : f) paths.push_back(d.path);
  EXPECT_EQ(paths, (std::vector<std::string>{"spec.thresholds.averageGpuUtilization",
                                             "spec.thresholds.averagePowerFraction", "spec.window",
                                             "spec.startupGracePeriod", "spec.checkpointGracePeriod",
                                             "spec.notify.escalateTo", "spec.notify.repeatInterval",
                                             "spec.excludeWhen[0]"}));
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].name, "search-training");
  EXPECT_NE(f[0].message.find("5% is below the platform's 10%"), std::string::npos) << f[0].message;
  EXPECT_NE(f[0].message.find("LowUtilizationPolicy/training-default"), std::string::npos) << f[0].message;
}

TEST(LowUtilizationMerge, OnlyGroupPoliciesAreBoundByThePlatforms) {
  // A platform policy for one pool (no business group) may differ from the type-wide one;
  // a group's policy for another workload type overrides nothing.
  const std::string pool_policy = R"(apiVersion: platform.gpubank.dev/v1alpha1
kind: LowUtilizationPolicy
metadata: {name: training-inference-pool}
spec:
  match: {workloadType: training, resourcePool: h100-inference}
  window: 4h
  thresholds: {averageGpuUtilization: 1}
  startupGracePeriod: 1h
  checkpointGracePeriod: 1h
  excludeWhen:
  - {label: platform.gpubank.dev/capacity-role, value: serving-floor}
---
apiVersion: platform.gpubank.dev/v1alpha1
kind: LowUtilizationPolicy
metadata: {name: search-batch}
spec:
  match: {workloadType: batch, businessGroup: search}
  window: 4h
  thresholds: {averageGpuUtilization: 1}
)";
  const auto f = findings_of(examples_plus(pool_policy));
  EXPECT_TRUE(f.empty()) << f[0].to_string();
  // ... but a group's policy is bound by that pool policy too where they overlap.
  const auto g = loosenings_in(findings_of(examples_plus(pool_policy + "---\n" + search_policy(kTighter))));
  ASSERT_EQ(g.size(), 0u) << g[0].to_string();
  std::string longer = kTighter;
  longer.replace(longer.find("30m"), 3, "5h");
  const auto h = loosenings_in(findings_of(examples_plus(pool_policy + "---\n" + search_policy(longer))));
  ASSERT_EQ(h.size(), 2u);  // longer than both platform windows
  EXPECT_EQ(h[0].path, "spec.window");
  EXPECT_NE(h[0].message.find("training-default"), std::string::npos) << h[0].message;
  EXPECT_NE(h[1].message.find("training-inference-pool"), std::string::npos) << h[1].message;
}

TEST(LowUtilizationMerge, TheMergeTakesTheStricterValueOfEachField) {
  const PolicySet set = examples_plus(search_policy(R"(  window: 2h
  thresholds: {averageGpuUtilization: 5, averageMemoryUtilization: 40, averagePowerFraction: 30}
  startupGracePeriod: 10m
  checkpointGracePeriod: 45m
  notify: {first: owner, after: 3h, escalateTo: platform-admin}
  excludeWhen:
  - {label: team, value: search}
  - {annotation: platform.gpubank.dev/keep-running-until}
)"));
  const auto merged = effective_low_utilization(*set.find(Kind::LowUtilizationPolicy, "search-training"), set);
  EXPECT_EQ(merged.window.to_string(), "1h");                    // the platform's shorter one
  EXPECT_EQ(merged.thresholds.average_gpu_utilization, 10.0);    // the higher threshold
  EXPECT_EQ(merged.thresholds.average_memory_utilization, 40.0);
  EXPECT_FALSE(merged.thresholds.average_power_fraction);        // a condition the platform lacks: dropped
  EXPECT_EQ(merged.startup_grace_period.to_string(), "10m");     // the group's shorter one
  EXPECT_EQ(merged.checkpoint_grace_period.to_string(), "20m");
  ASSERT_TRUE(merged.notify);
  EXPECT_EQ(merged.notify->escalate_to, NotifyTarget::PlatformAdmin);  // the higher target
  EXPECT_EQ(merged.notify->after->to_string(), "2h");                  // the earlier escalation
  EXPECT_EQ(merged.notify->repeat_interval->to_string(), "6h");
  ASSERT_EQ(merged.exclude_when.size(), 1u);  // only what both exclude
  EXPECT_EQ(merged.exclude_when[0].annotation, "platform.gpubank.dev/keep-running-until");
  // The platform's own policy is as written.
  const auto* platform = set.find(Kind::LowUtilizationPolicy, "training-default");
  EXPECT_EQ(effective_low_utilization(*platform, set).window.to_string(), "1h");
  EXPECT_EQ(effective_low_utilization(*platform, set).exclude_when.size(), 2u);
}

TEST(LowUtilizationMerge, DisjointThresholdsKeepThePlatforms) {
  LowUtilizationPolicySpec group, platform;
  group.thresholds.average_power_fraction = 30;
  platform.thresholds.average_gpu_utilization = 10;
  const auto merged = tighten_low_utilization(group, platform);
  EXPECT_EQ(merged.thresholds.average_gpu_utilization, 10.0);
  EXPECT_FALSE(merged.thresholds.average_power_fraction);
}

}  // namespace
}  // namespace gpubank::policy
