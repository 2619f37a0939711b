// showback_from's effective hours on hand-made answers: which signal judges a row, and a
// row no signal judges (measured nothing, never guessed).
#include "governance/showback.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "support/policy_fixture.hpp"

namespace gpubank::governance {
namespace {

using serving::PromSample;

PromSample allocated(const std::string& workload, const std::string& type, double minutes) {
  return PromSample{{{"business_group", "customer-service"},
                     {"namespace", "customer-service"},
                     {"workload_kind", "Deployment"},
                     {"workload", workload},
                     {"workload_type", type},
                     {"pool", "h100-inference"},
                     {"gpu_model", "H100"},
                     {"partition", "full"}},
                    minutes,
                    0};
}

PromSample per_workload(const std::string& workload, double value) {
  return PromSample{{{"namespace", "customer-service"}, {"workload_kind", "Deployment"}, {"workload", workload}},
                    value, 0};
}

TEST(ShowbackEffective, TheSloJudgesServingWithVllmSeriesAndNothingJudgesServingWithout) {
  const policy::PolicySet set = gpubank::testing::examples_plus();
  const auto slos = serving_slos(set);
  const auto it = std::find_if(slos.begin(), slos.end(),
                               [](const ServingSlo& x) { return x.workload == "customer-service-llm"; });
  ASSERT_NE(it, slos.end());
  const ServingSlo& slo = *it;
  EXPECT_EQ(slo.namespace_name, "customer-service");
  EXPECT_DOUBLE_EQ(slo.ttft_p95_seconds, 1.5);
  const ShowbackPeriod period = *showback_period(0, 3'600'000);
  const auto policies = scan_policies(set);

  // The plan asks for tokens once and for minutes and tokens per distinct target.
  std::size_t slo_queries = 0, token_queries = 0;
  for (const Query& q : plan_showback(period, policies, slos)) {
    if (q.name.starts_with("slo_")) ++slo_queries;
    if (q.name == kTokensQuery) ++token_queries;
  }
  std::set<double> targets;
  for (const ServingSlo& x : slos) targets.insert(x.ttft_p95_seconds);
  EXPECT_EQ(slo_queries, 2 * targets.size());
  EXPECT_EQ(token_queries, 1u);

  Answers answers;
  // Two GPUs all hour; another Deployment without an SLO, one GPU.
  answers["allocated"] = {allocated("customer-service-llm", "inference", 120), allocated("other", "inference", 60)};
  answers[slo_minutes_query_name(slo.ttft_p95_seconds)] = {per_workload("customer-service-llm", 90)};
  answers[slo_tokens_query_name(slo.ttft_p95_seconds)] = {per_workload("customer-service-llm", 30000)};
  answers[kTokensQuery] = {per_workload("customer-service-llm", 40000), per_workload("other", 500)};
  auto s = showback_from(answers, period, policies, *set.guardrails_spec(), slos);
  ASSERT_TRUE(s) << s.error();
  std::map<std::string, ShowbackRow> by;
  for (const ShowbackRow& r : s->rows) by[r.workload] = r;
  EXPECT_DOUBLE_EQ(by["customer-service-llm"].measured_gpu_hours, 2.0);
  EXPECT_DOUBLE_EQ(by["customer-service-llm"].effective_gpu_hours, 1.5);  // 90 of 120 device-minutes
  EXPECT_DOUBLE_EQ(by["customer-service-llm"].tokens, 40000);
  EXPECT_DOUBLE_EQ(by["customer-service-llm"].effective_tokens, 30000);
  // No SLO and no LowUtilizationPolicy for inference in the examples: its tokens are
  // counted, its hours judged by nothing.
  EXPECT_DOUBLE_EQ(by["other"].tokens, 500);
  EXPECT_DOUBLE_EQ(by["other"].measured_gpu_hours, 0);
  EXPECT_DOUBLE_EQ(by["other"].effective_gpu_hours, 0);

  // Without vLLM series the SLO cannot judge: not measured rather than 0 % effective.
  answers.erase(kTokensQuery);
  s = showback_from(answers, period, policies, *set.guardrails_spec(), slos);
  ASSERT_TRUE(s) << s.error();
  for (const ShowbackRow& r : s->rows) {
    EXPECT_DOUBLE_EQ(r.measured_gpu_hours, 0) << r.workload;
    EXPECT_DOUBLE_EQ(r.tokens, 0) << r.workload;
  }

  // Effective hours never exceed the allocated ones.
  answers[kTokensQuery] = {per_workload("customer-service-llm", 40000)};
  answers[slo_minutes_query_name(slo.ttft_p95_seconds)] = {per_workload("customer-service-llm", 500)};
  s = showback_from(answers, period, policies, *set.guardrails_spec(), slos);
  ASSERT_TRUE(s);
  for (const ShowbackRow& r : s->rows) {
    if (r.workload == "customer-service-llm") EXPECT_DOUBLE_EQ(r.effective_gpu_hours, 2.0);
  }
}

}  // namespace
}  // namespace gpubank::governance
