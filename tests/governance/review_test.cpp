// The review's findings that the end-to-end hour (showback_prometheus_test.cpp) does not
// reach: a pool the guardrails do not define, and alerts that keep re-opening.
#include "governance/review.hpp"

#include <gtest/gtest.h>

#include <set>

#include "core/timestamp.hpp"
#include "support/policy_fixture.hpp"

namespace gpubank::governance {
namespace {

std::optional<std::int64_t> parse_ms(const std::string& text) {
  const auto t = parse_rfc3339(text);
  if (!t) return std::nullopt;
  return std::chrono::duration_cast<std::chrono::milliseconds>(t->time_since_epoch()).count();
}

// An hour in which every guarantee of the set was fully used, so that only the findings
// under test remain.
Showback every_guarantee_used(const policy::PolicySet& set, std::int64_t from_ms) {
  Showback s;
  s.period = *showback_period(from_ms, from_ms + 3'600'000);
  for (const policy::PolicyObject& p : set.policies()) {
    if (p.kind != policy::Kind::GPUQuotaPolicy) continue;
    const auto& q = p.as<policy::GPUQuotaPolicySpec>();
    ShowbackRow r;
    r.business_group = q.business_group;
    r.pool = q.resource_pool;
    r.allocated_gpu_hours = q.guaranteed;
    s.rows.push_back(r);
  }
  return s;
}

TEST(QuotaReview, AnUndefinedPoolAndAlertsThatKeepReopening) {
  const policy::PolicySet set = gpubank::testing::examples_plus();
  const Showback s = every_guarantee_used(set, 0);
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

// The examples' leases reviewed over 10:00-11:00Z on 19 December 2026: search's Protection
// lease ended on 2 December; ads's TemporaryQuota (8 extra on h100-rdma-training, 19
// December 00:00-20:00Z) is in force, and ads (16 guaranteed there) held at most 10 GPUs.
TEST(QuotaReview, LeasesThatEndedOrWereNotNeeded) {
  const policy::PolicySet set = gpubank::testing::examples_plus();
  Showback s = every_guarantee_used(set, *parse_ms("2026-12-19T10:00:00Z"));
  Answers answers;
  answers["peak_used"] = {serving::PromSample{{{"business_group", "ads"}, {"pool", "h100-rdma-training"}}, 10, 0}};
  auto kinds = [&](const Answers& a) {
    std::vector<std::pair<std::string, std::string>> out;
    for (const Finding& f : review(s, a, set, nullptr)) out.emplace_back(f.kind, f.policy);
    return out;
  };
  EXPECT_EQ(kinds(answers), (std::vector<std::pair<std::string, std::string>>{
                                {"lease-expired", "CapacityLease/search-ranking-finetune-protection"},
                                {"lease-unused", "CapacityLease/ads-holiday-retrain"}}));
  const auto f = review(s, answers, set, nullptr);
  EXPECT_EQ(f[1].subject, "ads on h100-rdma-training");
  EXPECT_EQ(f[1].evidence["peakGpusUsed"], 10.0);
  EXPECT_EQ(f[1].evidence["guaranteed"], 16);
  EXPECT_EQ(f[1].evidence["extraGuaranteed"], 8);
  EXPECT_EQ(f[0].evidence["end"], "2026-12-02T12:00:00Z");

  // Above the guarantee in some minute: the lease was needed.
  answers["peak_used"] = {serving::PromSample{{{"business_group", "ads"}, {"pool", "h100-rdma-training"}}, 17, 0}};
  EXPECT_EQ(kinds(answers).size(), 1u);
  // Nothing known about the peaks: nothing said about use.
  EXPECT_EQ(kinds({}).size(), 1u);
  // A period before the lease: not in force, nothing to say.
  s.period = *showback_period(*parse_ms("2026-12-01T10:00:00Z"), *parse_ms("2026-12-01T11:00:00Z"));
  EXPECT_TRUE(review(s, answers, set, nullptr).empty());
}

// customer-service-llm (minReplicas 1) ran two or more replicas with one idle during 40 of
// the hour's 60 minutes: over half, a finding; 20 minutes is not.
TEST(QuotaReview, InferenceReplicasIdleAboveTheirFloor) {
  const policy::PolicySet set = gpubank::testing::examples_plus();
  const Showback s = every_guarantee_used(set, 0);
  std::set<int> floors;
  for (const policy::PolicyObject& p : set.policies()) {
    if (p.kind == policy::Kind::InferenceScalingPolicy) floors.insert(p.as<policy::InferenceScalingPolicySpec>().min_replicas);
  }
  std::size_t idle_queries = 0;
  for (const Query& q : plan_review(s.period, set)) idle_queries += q.name.starts_with("idle_above_floor_") ? 1 : 0;
  EXPECT_EQ(idle_queries, floors.size());

  Answers answers;
  answers[idle_above_floor_query_name(1)] = {
      serving::PromSample{{{"namespace", "customer-service"}, {"workload", "customer-service-llm"}}, 40, 0},
      serving::PromSample{{{"namespace", "elsewhere"}, {"workload", "customer-service-llm"}}, 60, 0}};
  const auto f = review(s, answers, set, nullptr);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].kind, "replicas-idle-above-floor");
  EXPECT_EQ(f[0].policy, "InferenceScalingPolicy/customer-service-llm");
  EXPECT_EQ(f[0].subject, "customer-service/customer-service-llm");
  EXPECT_EQ(f[0].evidence["idleAboveFloorMinutes"], 40.0);
  EXPECT_EQ(f[0].evidence["minReplicas"], 1);
  answers[idle_above_floor_query_name(1)][0].value = 20;
  EXPECT_TRUE(review(s, answers, set, nullptr).empty());
}

}  // namespace
}  // namespace gpubank::governance

namespace gpubank::governance {
namespace {

// The printed forms: an aligned table with the totals, and CSV with a header. The row has
// no effectiveness signal: its effective hours print as "-", not 0.
TEST(ShowbackText, TableAndCsv) {
  Showback s;
  s.period = *showback_period(0, 3'600'000);
  s.currency = "USD";
  ShowbackRow a;
  a.pool = "h100-rdma-training";
  a.business_group = "search";
  a.owner_id = "u1";
  a.gpu_model = "H100";
  a.partition = "full";
  a.allocated_gpu_hours = 2;
  a.low_utilization_gpu_hours = 0.5;
  a.cost = 7;
  a.low_utilization_cost = 1.75;
  s.rows = {a};
  EXPECT_EQ(to_table(s, ShowbackLevel::Group),
            "POOL                GROUP         GPU   GPU-HOURS  LOW-UTIL  FLOOR  EFFECTIVE  COST USD  LOW-UTIL COST\n"
            "h100-rdma-training  search        H100       2.00      0.50   0.00          -      7.00           1.75\n"
            "h100-rdma-training  (pool total)  H100       2.00      0.50   0.00          -      7.00           1.75\n"
            "                    TOTAL                    2.00      0.50   0.00          -      7.00           1.75\n");
  EXPECT_EQ(to_csv(s, ShowbackLevel::Owner),
            "pool,business_group,owner_id,namespace,workload_kind,workload,workload_uid,gpu_model,partition,"
            "allocated_gpu_hours,low_utilization_gpu_hours,serving_floor_gpu_hours,cost,low_utilization_cost,currency,"
            "effective_gpu_hours,measured_gpu_hours,tokens,effective_tokens\n"
            "h100-rdma-training,search,u1,,,,,H100,full,2.0000,0.5000,0.0000,7.00,1.75,USD,0.0000,0.0000,0,0\n");
}

}  // namespace
}  // namespace gpubank::governance
