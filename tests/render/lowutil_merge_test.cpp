// The low-utilisation rules a business group's policy renders to are never weaker than the
// platform-wide policy it overrides, even for a set that validation would refuse.
#include <gtest/gtest.h>

#include "policy/low_utilization.hpp"
#include "policy/rules.hpp"
#include "policy/validate.hpp"
#include "render/prometheus_rules.hpp"
#include "render/promtool/promtool.hpp"

namespace gpubank::render {
namespace {

std::string low_util_expr(const std::vector<RenderedObject>& objects, std::string_view object) {
  for (const auto& o : objects) {
    if (o.manifest["metadata"]["name"] != object) continue;
    for (const auto& g : o.manifest["spec"]["groups"]) {
      for (const auto& r : g["rules"]) {
        if (r.contains("record") && r["record"] == series::kAllocationLowUtilization) return r["expr"];
      }
    }
  }
  return {};
}

// training-default (examples) for search only, with the given change.
policy::PolicySet with_search_policy(const std::function<void(policy::LowUtilizationPolicySpec&)>& change) {
  policy::PolicySet set = gpubank::testing::example_policies().policies_only();
  policy::PolicyObject search = *set.find(policy::Kind::LowUtilizationPolicy, "training-default");
  search.metadata.name = "search-training";
  auto& spec = std::get<policy::LowUtilizationPolicySpec>(search.spec);
  spec.match.business_group = "search";
  change(spec);
  set.add(std::move(search));
  return set;
}

TEST(LowUtilizationRender, AGroupPolicyThatLoosensRendersThePlatformsStricterValues) {
  const policy::PolicySet set = with_search_policy([](policy::LowUtilizationPolicySpec& s) {
    s.window = Duration(std::chrono::hours(4));
    s.thresholds.average_gpu_utilization = 2;
    s.exclude_when.push_back({std::string("team"), std::string("search"), std::nullopt});
  });
  // Validation refuses it ...
  const auto findings = policy::validate(set);
  ASSERT_FALSE(findings.empty());
  for (const auto& f : findings) EXPECT_EQ(f.rule, policy::rule::kLowUtilLoosensPlatform) << f.to_string();
  // ... and rendered anyway, it is as strict as the platform's.
  const auto objects = render_prometheus_rules(set);
  const std::string expr = low_util_expr(objects, "gpubank-lowutil-search-training");
  EXPECT_NE(expr.find("allocation:dcgm_utilization:percent{workload_type=\"training\", business_group=\"search\"}[1h]) < 10"),
            std::string::npos)
      << expr;
  EXPECT_EQ(expr.find("[4h]"), std::string::npos) << expr;
  EXPECT_EQ(expr.find("label_team"), std::string::npos) << expr;
  for (const auto& o : objects) {
    if (o.manifest["metadata"]["name"] != "gpubank-lowutil-search-training") continue;
    ASSERT_EQ(o.sources.size(), 2u);
    EXPECT_EQ(o.sources[1]->ref(), "LowUtilizationPolicy/training-default");
  }
}

TEST(LowUtilizationRender, AGroupPolicyThatTightensRendersItsOwnValues) {
  const policy::PolicySet set = with_search_policy([](policy::LowUtilizationPolicySpec& s) {
    s.window = Duration(std::chrono::minutes(30));
    s.thresholds.average_gpu_utilization = 25;
  });
  ASSERT_TRUE(policy::validate(set).empty());
  const std::string expr = low_util_expr(render_prometheus_rules(set), "gpubank-lowutil-search-training");
  EXPECT_NE(expr.find("business_group=\"search\"}[30m]) < 25"), std::string::npos) << expr;
}

}  // namespace
}  // namespace gpubank::render
