// What every backend shares: PriorityClasses, the GPU resource of a pool, and what the
// guardrails' priorities mean for preemption.
#include "render/scheduling.hpp"

#include <gtest/gtest.h>

#include "policy/rules.hpp"
#include "render/engines_fixture.hpp"

namespace gpubank::render {
namespace {

using testing::example_set;
using testing::guardrails_yaml;
using testing::manifest_at;

TEST(PriorityClasses, OnePerPriorityInEveryBackend) {
  for (Backend backend : {Backend::Kueue, Backend::Volcano}) {
    const RenderResult r = render(example_set(), {backend});
    const Json& pc = manifest_at(r, "scheduling/priorityclass-inference-critical.yaml");
    EXPECT_EQ(pc["apiVersion"], "scheduling.k8s.io/v1");
    EXPECT_EQ(pc["value"], 100000);
    EXPECT_EQ(pc["globalDefault"], false);
    // Not preemptible: protected, may preempt lower classes at the node.
    EXPECT_EQ(pc["preemptionPolicy"], "PreemptLowerPriority");
    // Preemptible classes leave preemption to the queueing engine.
    for (const char* name : {"training-high", "training-standard", "batch-low", "notebook"}) {
      EXPECT_EQ(manifest_at(r, std::string("scheduling/priorityclass-") + name + ".yaml")["preemptionPolicy"], "Never")
          << name;
    }
  }
}

TEST(PriorityClasses, DescriptionSaysWhoMayUseTheClass) {
  const RenderResult r = render(example_set(), {Backend::Kueue});
  EXPECT_EQ(manifest_at(r, "scheduling/priorityclass-training-high.yaml")["description"],
            "gpubank: training of search, ads; preemptible: preempted only through the queueing engine's quota");
}

TEST(PriorityClasses, SystemPrefixIsReserved) {
  const auto set = gpubank::testing::from_yaml(
      guardrails_yaml("  - {name: gpu, gpuModel: H100, capacity: 64, role: training}\n",
                      "  - {name: system-batch, value: 100}\n"));
  const RenderResult r = render(set, {Backend::Kueue});
  EXPECT_FALSE(r.ok());
  const Diagnostic* d = gpubank::testing::find_finding(r.diagnostics, kRuleReservedPriorityName);
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->path, "spec.priorities[0].name");
}

TEST(PriorityModel, ProtectedMeansNotPreemptibleOrOnlyProtectedTypes) {
  const auto set = gpubank::testing::from_yaml(guardrails_yaml(
      "  - {name: gpu, gpuModel: H100, capacity: 64, role: training}\n",
      "  - {name: pinned, value: 5, preemptible: false}\n"
      "  - {name: serving, value: 900, workloadTypes: [inference]}\n"
      "  - {name: mixed, value: 800, workloadTypes: [inference, batch], groups: [b]}\n"
      "  - {name: anything, value: 10}\n"));
  ASSERT_TRUE(policy::check_all(set).empty());
  const auto& g = *set.guardrails_spec();
  const PriorityModel model(g);
  EXPECT_TRUE(model.is_protected(*g.find_priority("pinned")));
  EXPECT_TRUE(model.is_protected(*g.find_priority("serving")));  // protectedWorkloadTypes defaults to [inference]
  EXPECT_FALSE(model.is_protected(*g.find_priority("mixed")));
  EXPECT_FALSE(model.is_protected(*g.find_priority("anything")));
  EXPECT_EQ(model.highest_unprotected(), 800);
  EXPECT_EQ(model.lowest_protected(), 5);
  EXPECT_FALSE(model.only_protected("a"));  // "anything" is open to every group
  // pinned (5) ranks below the unprotected "mixed" (800); serving (900) is above it.
  const Diagnostics found = check_priority_classes(set);
  ASSERT_EQ(found.size(), 1U);
  EXPECT_EQ(found[0].severity, Severity::Warning);
  EXPECT_EQ(found[0].path, "spec.priorities[0].value");
}

TEST(GpuResource, FullGpusAndMigProfiles) {
  policy::Pool pool;
  EXPECT_EQ(gpu_resource(pool), "nvidia.com/gpu");
  pool.sharing = policy::Sharing::Shared;  // time-slicing keeps the resource name
  EXPECT_EQ(gpu_resource(pool), "nvidia.com/gpu");
  pool.partition = "3g.40gb";
  EXPECT_EQ(gpu_resource(pool), "nvidia.com/mig-3g.40gb");
}

TEST(SchedulingRender, RenderRulesAreRegisteredForGpubankRules) {
  for (auto id : {kRuleNameCollision, kRuleReservedPriorityName, kRuleProtectedPriorityOrder}) {
    const policy::RuleInfo* info = policy::find_rule(id);
    ASSERT_NE(info, nullptr) << id;
    EXPECT_EQ(info->scope, policy::RuleScope::PolicySet) << id;
    EXPECT_FALSE(info->summary.empty()) << id;
  }
}

}  // namespace
}  // namespace gpubank::render
