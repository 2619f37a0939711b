// The review's findings that the end-to-end hour (showback_prometheus_test.cpp) does not
// reach: a pool the guardrails do not define, and alerts that keep re-opening.
#include "governance/review.hpp"

#include <gtest/gtest.h>

#include "support/policy_fixture.hpp"

namespace gpubank::governance {
namespace {

TEST(QuotaReview, AnUndefinedPoolAndAlertsThatKeepReopening) {
  const policy::PolicySet set = gpubank::testing::examples_plus();
  Showback s;
  s.period = *showback_period(0, 3'600'000);
  // Every guarantee fully used, so only the findings under test remain.
  for (const policy::PolicyObject& p : set.policies()) {
    if (p.kind != policy::Kind::GPUQuotaPolicy) continue;
    const auto& q = p.as<policy::GPUQuotaPolicySpec>();
    ShowbackRow r;
    r.business_group = q.business_group;
    r.pool = q.resource_pool;
    r.allocated_gpu_hours = q.guaranteed;
    s.rows.push_back(r);
  }
  Answers answers;
  answers["capacity"] = {serving::PromSample{{{"pool", "h200-lab"}, {"gpu_model", "H200"}}, 480, 0}};
  AlertBook book;
  book.reopened = {{"uid-a", 3}, {"uid-b", 2}};
  book.open["uid-a"].policy = "training-default";

  const std::vector<Finding> f = review(s, answers, set, &book);
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].kind, "alert-reopened");
  EXPECT_EQ(f[0].policy, "LowUtilizationPolicy/training-default");
  EXPECT_EQ(f[0].subject, "workload uid-a");
  EXPECT_EQ(f[0].evidence["alerts"], 3);
  EXPECT_EQ(f[1].kind, "pool-without-policy");
  EXPECT_EQ(f[1].policy, "PlatformGuardrails/platform");
  EXPECT_EQ(f[1].message, "devices report pool h200-lab, which the guardrails do not define: add it to spec.pools");
  // Without the record there is nothing to say about alerts.
  EXPECT_EQ(review(s, answers, set, nullptr).size(), 1u);
}

}  // namespace
}  // namespace gpubank::governance
