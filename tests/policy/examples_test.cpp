// The shipped examples: examples/policies is a complete valid set, and each file of
// examples/invalid is rejected, together with it, with the rule it is named after.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "policy/rules.hpp"
#include "support/policy_fixture.hpp"

namespace gpubank::policy {
namespace {

namespace fs = std::filesystem;
using gpubank::testing::examples_dir;
using gpubank::testing::findings_of;

TEST(Examples, PolicySetIsCompletelyValidWithoutEvenAWarning) {
  const PolicySet set = load_policy_set({examples_dir() + "/policies", examples_dir() + "/workloads"});
  const Diagnostics findings = findings_of(set);
  for (const auto& f : findings) ADD_FAILURE() << f.to_string();
  EXPECT_EQ(set.policies().size(), 19u);
  EXPECT_EQ(set.workloads().size(), 1u);
  // Every kind of the API is represented.
  std::set<Kind> kinds;
  for (const auto& p : set.policies()) kinds.insert(p.kind);
  EXPECT_EQ(kinds.size(), 6u);
}

TEST(Examples, ContainTheMissionsOwnPolicies) {
  const PolicySet set = load_policy_set({examples_dir() + "/policies"});
  const auto* quota = set.find(Kind::GPUQuotaPolicy, "search-team-h100");
  ASSERT_NE(quota, nullptr);
  const auto& q = quota->as<GPUQuotaPolicySpec>();
  EXPECT_EQ(q.guaranteed, 32);
  EXPECT_EQ(q.borrow_limit, 16);
  EXPECT_EQ(q.lending_limit, 8);
  EXPECT_EQ(q.effective_max_capacity(), 48);
  const auto* llm = set.find(Kind::InferenceScalingPolicy, "customer-service-llm");
  ASSERT_NE(llm, nullptr);
  EXPECT_EQ(llm->as<InferenceScalingPolicySpec>().replica_shape.tensor_parallel_size, 4);
  EXPECT_EQ(llm->as<InferenceScalingPolicySpec>().max_replicas, 8);
  ASSERT_NE(set.find(Kind::TidalPolicy, "weekday-serving-training"), nullptr);
  ASSERT_NE(set.find(Kind::LowUtilizationPolicy, "training-default"), nullptr);
  const auto& pools = set.guardrails_spec()->pools;
  ASSERT_EQ(pools.size(), 4u);
  EXPECT_EQ(pools[0].capacity + pools[1].capacity + pools[2].capacity + pools[3].capacity, 64 + 48 + 16 + 56);
}

std::vector<std::string> invalid_example_rules() {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(examples_dir() + "/invalid")) {
    if (e.path().extension() == ".yaml") out.push_back(e.path().stem().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(Examples, EveryRuleWithAnExampleHasExactlyOneFileAndEveryFileNamesARule) {
  const auto files = invalid_example_rules();
  std::set<std::string> file_set(files.begin(), files.end());
  for (const auto& r : all_rules()) {
    if (r.has_example) {
      EXPECT_TRUE(file_set.contains(std::string(r.id))) << "examples/invalid/" << r.id << ".yaml is missing";
    }
  }
  for (const auto& f : files) {
    const RuleInfo* r = find_rule(f);
    EXPECT_NE(r, nullptr) << f << ".yaml is not named after a rule";
    if (r != nullptr) {
      EXPECT_TRUE(r->has_example) << f;
    }
  }
}

class InvalidExample : public ::testing::TestWithParam<std::string> {};

TEST_P(InvalidExample, IsRejectedWithItsRuleAtAPositionInItsFile) {
  const std::string rule = GetParam();
  const std::string file = examples_dir() + "/invalid/" + rule + ".yaml";
  const PolicySet set = load_policy_set({examples_dir() + "/policies", file});
  const Diagnostics findings = findings_of(set);
  const Diagnostic* hit = nullptr;
  for (const auto& f : findings) {
    if (f.rule == rule && f.file == file) hit = &f;
  }
  ASSERT_NE(hit, nullptr) << "no " << rule << " finding in " << file;
  EXPECT_EQ(hit->severity, Severity::Error);
  EXPECT_GT(hit->pos.line, 0) << hit->to_string();
  EXPECT_GT(hit->pos.column, 0) << hit->to_string();
  EXPECT_NE(hit->to_string().find("[" + rule + "]"), std::string::npos);
  if (rule != "schema.syntax") {
    EXPECT_FALSE(hit->kind.empty()) << hit->to_string();
  }
}

INSTANTIATE_TEST_SUITE_P(AllRules, InvalidExample, ::testing::ValuesIn(invalid_example_rules()),
                         [](const ::testing::TestParamInfo<std::string>& param) {
                           std::string name = param.param;
                           for (auto& c : name) {
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace gpubank::policy
