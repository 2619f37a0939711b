// The Volcano backend: hierarchical queues per pool and group, the PodGroup templates,
// and the names Volcano keeps for itself.
#include "render/volcano.hpp"

#include <gtest/gtest.h>

#include "render/engines_fixture.hpp"
#include "render/scheduling.hpp"

namespace gpubank::render {
namespace {

using testing::example_set;
using testing::guardrails_yaml;
using testing::manifest_at;
using testing::quota_yaml;

RenderResult render_volcano_set(const policy::PolicySet& set) { return render(set, {Backend::Volcano}); }

TEST(VolcanoRender, PoolQueueHoldsThePoolUnderRoot) {
  const RenderResult r = render_volcano_set(example_set());
  const Json& q = manifest_at(r, "volcano/queue-h100-rdma-training.yaml");
  EXPECT_EQ(q["apiVersion"], "scheduling.volcano.sh/v1beta1");
  EXPECT_EQ(q["spec"].dump(),
            R"({"parent":"root","deserved":{"nvidia.com/gpu":64},"guarantee":{"resource":{"nvidia.com/gpu":64}},)"
            R"("capability":{"nvidia.com/gpu":64}})");
}

TEST(VolcanoRender, GroupQueueCarriesTheQuotaPolicy) {
  const RenderResult r = render_volcano_set(example_set());
  // customer-service-inference-h100: guaranteed 32, lendingLimit 24 (floor 8), maxCapacity 40.
  const Json& q = manifest_at(r, "volcano/queue-customer-service-h100-inference.yaml");
  EXPECT_EQ(q["spec"].dump(),
            R"({"parent":"h100-inference","deserved":{"nvidia.com/gpu":32},"guarantee":{"resource":{"nvidia.com/gpu":8}},)"
            R"("capability":{"nvidia.com/gpu":40},"reclaimable":true,)"
            R"("affinity":{"nodeGroupAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":["h100-inference"]}}})");
  EXPECT_EQ(q["metadata"]["labels"][std::string(policy::kLabelBusinessGroup)], "customer-service");
}

TEST(VolcanoRender, LendingAllMeansNoGuarantee) {
  const RenderResult r = render_volcano_set(example_set());
  // ads-training-h100: no lendingLimit, so the whole guarantee may be lent.
  const Json& spec = manifest_at(r, "volcano/queue-ads-h100-rdma-training.yaml")["spec"];
  EXPECT_FALSE(spec.contains("guarantee"));
  EXPECT_EQ(spec["deserved"]["nvidia.com/gpu"], 16);
  EXPECT_EQ(spec["capability"]["nvidia.com/gpu"], 32);
  EXPECT_EQ(manifest_at(r, "volcano/queue-search-mig-or-shared-development.yaml")["spec"]["capability"].dump(),
            R"({"nvidia.com/mig-1g.10gb":16})");
}

TEST(VolcanoRender, PodGroupTemplatePerNamespaceAndPool) {
  const RenderResult r = render_volcano_set(example_set());
  const Json& pg = manifest_at(r, "volcano/templates/podgroup-ads-training.h100-rdma-training.yaml");
  EXPECT_EQ(pg["kind"], "PodGroup");
  EXPECT_EQ(pg["metadata"]["namespace"], "ads-training");
  EXPECT_TRUE(pg["metadata"]["annotations"].contains(std::string(kAnnotationTemplate)));
  EXPECT_EQ(pg["spec"].dump(), R"({"queue":"ads-h100-rdma-training","minMember":1})");
}

TEST(VolcanoRender, NoKueueObjects) {
  const RenderResult r = render_volcano_set(example_set());
  for (const auto& o : r.objects) EXPECT_FALSE(o.path.starts_with("kueue/")) << o.path;
}

TEST(VolcanoRender, ProtectedOnlyGroupsKeepWhatTheyBorrowAndNodeGroupsComeFromThePool) {
  const std::string guardrails = guardrails_yaml(
      "  - {name: gpu, gpuModel: H100, capacity: 64, role: inference, nodeLabels: {volcano.sh/nodegroup-name: serving-nodes}}\n",
      "  - {name: serving, value: 1000, workloadTypes: [inference], preemptible: false}\n"
      "  - {name: batch, value: 100, workloadTypes: [batch], groups: [b]}\n");
  const auto set = gpubank::testing::from_yaml(guardrails +
                                               quota_yaml("a-gpu", "a", "gpu", "  guaranteed: 8\n  borrowLimit: 8\n") +
                                               quota_yaml("b-gpu", "b", "gpu", "  guaranteed: 8\n  borrowLimit: 8\n"));
  const RenderResult r = render_volcano_set(set);
  ASSERT_TRUE(r.ok()) << r.diagnostics.front().to_string();
  // a may only use "serving" (protected); b may also use "batch".
  EXPECT_EQ(manifest_at(r, "volcano/queue-a-gpu.yaml")["spec"]["reclaimable"], false);
  EXPECT_EQ(manifest_at(r, "volcano/queue-b-gpu.yaml")["spec"]["reclaimable"], true);
  EXPECT_EQ(manifest_at(r, "volcano/queue-b-gpu.yaml")["spec"]["affinity"]["nodeGroupAffinity"]
                       ["requiredDuringSchedulingIgnoredDuringExecution"][0],
            "serving-nodes");
}

TEST(VolcanoRender, PoolsMayNotTakeVolcanosOwnQueueNames) {
  const auto set = gpubank::testing::from_yaml(guardrails_yaml(
      "  - {name: default, gpuModel: H100, capacity: 64, role: training}\n", "  - {name: batch, value: 100}\n",
      "  - {name: a, costCenter: CC-1, limits: {default: {minGuaranteed: 0, maxCapacity: 64}}}\n"));
  const RenderResult r = render_volcano_set(set);
  EXPECT_FALSE(r.ok());
  const Diagnostic* d = gpubank::testing::find_finding(r.diagnostics, kRuleNameCollision);
  ASSERT_NE(d, nullptr) << (r.diagnostics.empty() ? "" : r.diagnostics.front().to_string());
  EXPECT_EQ(d->path, "spec.pools[0].name");
  EXPECT_NE(d->message.find("which Volcano creates itself"), std::string::npos) << d->message;
  // Kueue has no such queue: the same set renders there.
  EXPECT_TRUE(render(set, {Backend::Kueue}).ok());
}

TEST(VolcanoRender, GroupQueueNamedLikeAPoolQueueIsAnError) {
  // Group "a" on pool "gpu" renders Queue a-gpu, the parent queue of pool "a-gpu".
  const std::string guardrails = guardrails_yaml(
      "  - {name: gpu, gpuModel: H100, capacity: 64, role: training, nodeLabels: {pool: gpu}}\n"
      "  - {name: a-gpu, gpuModel: H100, capacity: 8, role: training, nodeLabels: {pool: a-gpu}}\n",
      "  - {name: batch, value: 100}\n",
      "  - {name: a, costCenter: CC-1, limits: {gpu: {minGuaranteed: 0, maxCapacity: 64}}}\n");
  const auto set = gpubank::testing::from_yaml(guardrails + quota_yaml("a-gpu", "a", "gpu", "  guaranteed: 8\n"));
  const RenderResult r = render_volcano_set(set);
  const Diagnostic* d = gpubank::testing::find_finding(r.diagnostics, kRuleNameCollision);
  ASSERT_NE(d, nullptr) << (r.diagnostics.empty() ? "" : r.diagnostics.front().to_string());
  EXPECT_EQ(d->kind, "GPUQuotaPolicy");
  EXPECT_NE(d->message.find("renders Queue a-gpu, which PlatformGuardrails/platform (spec.pools[1].name)"),
            std::string::npos)
      << d->message;
}

}  // namespace
}  // namespace gpubank::render
