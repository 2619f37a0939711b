// The Kueue backend's mapping, field by field, on the example policy set and on small
// sets that isolate one decision (docs/render.md gives the reasons).
#include "render/kueue.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "policy/cohort_quota.hpp"
#include "render/consistency.hpp"
#include "render/engines_fixture.hpp"
#include "render/scheduling.hpp"

namespace gpubank::render {
namespace {

using testing::example_set;
using testing::guardrails_yaml;
using testing::manifest_at;
using testing::quota_yaml;

RenderResult render_kueue_set(const policy::PolicySet& set) { return render(set, {Backend::Kueue}); }

const Json& quota_of(const Json& cluster_queue) {
  return cluster_queue["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0];
}

// Kueue's manager Configuration, as the example set needs it (docs/render.md): an admitted
// gang that cannot be placed gives its quota back (waitForPodsReady), only GPUs count
// against quota, every kind the webhook makes name a queue is managed, only in the groups'
// namespaces, the ClusterQueue metrics the rendered rules read are on, and fair sharing
// stays off (the guardrails do not turn it on).
TEST(KueueRender, TheManagerConfigurationIsWhatThePoliciesNeed) {
  const RenderResult r = render_kueue_set(example_set());
  const Json& cm = manifest_at(r, "kueue/configmap-kueue-manager-config.yaml");
  EXPECT_EQ(cm["apiVersion"], "v1");
  EXPECT_EQ(cm["kind"], "ConfigMap");
  EXPECT_EQ(cm["metadata"]["name"], "kueue-manager-config");
  EXPECT_EQ(cm["metadata"]["namespace"], "kueue-system");
  EXPECT_EQ(cm["data"]["controller_manager_config.yaml"],
            "apiVersion: config.kueue.x-k8s.io/v1beta2\n"
            "kind: Configuration\n"
            "manageJobsWithoutQueueName: false\n"
            "managedJobsNamespaceSelector:\n"
            "  matchExpressions:\n"
            "    - key: kubernetes.io/metadata.name\n"
            "      operator: In\n"
            "      values:\n"
            "        - ads\n"
            "        - ads-training\n"
            "        - customer-service\n"
            "        - research\n"
            "        - search\n"
            "        - search-training\n"
            "integrations:\n"
            "  frameworks:\n"
            "    - batch/job\n"
            "    - deployment\n"
            "    - jobset.x-k8s.io/jobset\n"
            "    - kubeflow.org/pytorchjob\n"
            "    - leaderworkerset.x-k8s.io/leaderworkerset\n"
            "    - pod\n"
            "    - ray.io/raycluster\n"
            "    - ray.io/rayjob\n"
            "    - statefulset\n"
            "metrics:\n"
            "  enableClusterQueueResources: true\n"
            "resources:\n"
            "  excludeResourcePrefixes:\n"
            "    - cpu\n"
            "    - memory\n"
            "    - ephemeral-storage\n"
            "    - hugepages-\n"
            "waitForPodsReady:\n"
            "  timeout: 600s\n"
            "  blockAdmission: false\n"
            "  requeuingStrategy:\n"
            "    timestamp: Eviction\n"
            "    backoffBaseSeconds: 60\n"
            "    backoffMaxSeconds: 3600\n");
  const auto config = kueue_manager_configuration(example_set());
  ASSERT_TRUE(config.has_value());
  EXPECT_FALSE(config->contains("fairSharing"));
}

// A platform that turns fair sharing on (guardrails fairSharing: true).
policy::PolicySet fair_sharing_set(bool fair_sharing) {
  return gpubank::testing::from_yaml(
      guardrails_yaml() + (fair_sharing ? "  fairSharing: true\n" : "") +
      quota_yaml("a-gpu", "a", "gpu", "  guaranteed: 32\n  borrowLimit: 16\n  fairShareWeight: 2\n") +
      quota_yaml("b-gpu", "b", "gpu", "  guaranteed: 16\n  borrowLimit: 16\n"));
}

// Kueue ignores borrowWithinCohort under fair sharing: it is rendered in one mode only, and
// the Configuration says which mode Kueue runs.
TEST(KueueRender, FairSharingModeDecidesHowBorrowersYield) {
  for (const bool fair : {false, true}) {
    SCOPED_TRACE(fair ? "fair sharing" : "classic");
    const RenderResult r = render_kueue_set(fair_sharing_set(fair));
    ASSERT_TRUE(r.ok()) << r.diagnostics.front().to_string();
    const Json& a = manifest_at(r, "kueue/clusterqueue-a-gpu.yaml")["spec"];
    // Both modes: reclaim within the guarantee, by priority, so that protected (serving)
    // classes, which rank highest, are never chosen; the weight is written either way.
    EXPECT_EQ(a["preemption"]["reclaimWithinCohort"], "LowerPriority");
    EXPECT_EQ(a["preemption"]["withinClusterQueue"], "LowerPriority");
    EXPECT_EQ(a["fairSharing"]["weight"], 2);
    const std::string text = manifest_at(r, "kueue/configmap-kueue-manager-config.yaml")["data"]
                                 ["controller_manager_config.yaml"].get<std::string>();
    if (fair) {
      EXPECT_FALSE(a["preemption"].contains("borrowWithinCohort"));
      EXPECT_NE(text.find("fairSharing:\n  preemptionStrategies:\n    - LessThanOrEqualToFinalShare\n"
                          "    - LessThanInitialShare\n"),
                std::string::npos)
          << text;
    } else {
      // Classic: while borrowing, displace lower classes up to the highest unprotected one.
      EXPECT_EQ(a["preemption"]["borrowWithinCohort"].dump(), R"({"policy":"LowerPriority","maxPriorityThreshold":100})");
      EXPECT_EQ(text.find("fairSharing"), std::string::npos) << text;
    }
  }
  // No ClusterQueue of any example carries borrowWithinCohort once fair sharing is on.
  policy::PolicySet examples = example_set();
  policy::PolicyObject guardrails = *examples.guardrails();
  std::get<policy::PlatformGuardrailsSpec>(guardrails.spec).fair_sharing = true;
  ASSERT_TRUE(examples.upsert(std::move(guardrails)));
  const RenderResult r = render_kueue_set(examples);
  ASSERT_TRUE(r.ok()) << r.diagnostics.front().to_string();
  int queues = 0;
  for (const auto& o : r.objects) {
    if (o.manifest.value("kind", "") != "ClusterQueue") continue;
    ++queues;
    EXPECT_FALSE(o.manifest["spec"]["preemption"].contains("borrowWithinCohort")) << o.path;
  }
  EXPECT_EQ(queues, 11);
}

TEST(KueueRender, ClusterQueueCarriesTheQuotaPolicy) {
  const RenderResult r = render_kueue_set(example_set());
  const Json& cq = manifest_at(r, "kueue/clusterqueue-search-h100-rdma-training.yaml");
  EXPECT_EQ(cq["apiVersion"], "kueue.x-k8s.io/v1beta2");
  EXPECT_EQ(cq["metadata"]["name"], "search-h100-rdma-training");
  EXPECT_EQ(cq["metadata"]["annotations"][std::string(kAnnotationSource)],
            "PlatformGuardrails/platform,GPUQuotaPolicy/search-team-h100");
  const Json& spec = cq["spec"];
  EXPECT_EQ(spec["cohortName"], "h100-rdma-training");
  EXPECT_EQ(spec["queueingStrategy"], "BestEffortFIFO");
  EXPECT_EQ(spec["namespaceSelector"].dump(),
            R"({"matchExpressions":[{"key":"kubernetes.io/metadata.name","operator":"In","values":["search","search-training"]}]})");
  EXPECT_EQ(spec["resourceGroups"][0]["coveredResources"].dump(), R"(["nvidia.com/gpu"])");
  EXPECT_EQ(spec["resourceGroups"][0]["flavors"][0]["name"], "h100-rdma-training");
  // guaranteed 32, maxCapacity 48 (borrowLimit 16), lendingLimit 8, fairShareWeight 2.
  EXPECT_EQ(quota_of(cq).dump(),
            R"({"name":"nvidia.com/gpu","nominalQuota":32,"borrowingLimit":16,"lendingLimit":8})");
  EXPECT_EQ(spec["fairSharing"]["weight"], 2);
  // Lends 8, other groups on the pool may run inference-critical (protected): LowerPriority;
  // borrowing may displace classes up to training-high (50000), never inference-critical.
  EXPECT_EQ(spec["preemption"].dump(),
            R"({"reclaimWithinCohort":"LowerPriority",)"
            R"("borrowWithinCohort":{"policy":"LowerPriority","maxPriorityThreshold":50000},)"
            R"("withinClusterQueue":"LowerPriority"})");
}

TEST(KueueRender, BorrowingLimitIsTheCapAboveTheGuarantee) {
  const RenderResult r = render_kueue_set(example_set());
  // search-borrow-h100-inference: guaranteed 0, borrowLimit 16, no maxCapacity: cap 16.
  const Json& q = quota_of(manifest_at(r, "kueue/clusterqueue-search-h100-inference.yaml"));
  EXPECT_EQ(q.dump(), R"({"name":"nvidia.com/gpu","nominalQuota":0,"borrowingLimit":16})");
  // Nothing to lend, nothing to reclaim: a pure borrower takes idle GPUs only.
  const Json& p = manifest_at(r, "kueue/clusterqueue-search-h100-inference.yaml")["spec"]["preemption"];
  EXPECT_EQ(p["reclaimWithinCohort"], "Never");
  EXPECT_EQ(p["borrowWithinCohort"]["policy"], "Never");
}

TEST(KueueRender, MigPoolsQuoteTheirProfile) {
  const RenderResult r = render_kueue_set(example_set());
  const Json& cq = manifest_at(r, "kueue/clusterqueue-research-mig-or-shared-development.yaml");
  EXPECT_EQ(cq["spec"]["resourceGroups"][0]["coveredResources"][0], "nvidia.com/mig-1g.10gb");
  EXPECT_EQ(quota_of(cq)["name"], "nvidia.com/mig-1g.10gb");
}

TEST(KueueRender, ResourceFlavorHasThePoolsLabelsAndToleratesItsTaints) {
  const RenderResult r = render_kueue_set(example_set());
  const Json& flavor = manifest_at(r, "kueue/resourceflavor-h100-inference.yaml");
  EXPECT_EQ(flavor["spec"].dump(),
            R"({"nodeLabels":{"nvidia.com/gpu.product":"NVIDIA-H100-80GB-HBM3","platform.gpubank.dev/pool":"h100-inference"},)"
            R"("tolerations":[{"key":"platform.gpubank.dev/pool","operator":"Equal","value":"h100-inference",)"
            R"("effect":"NoSchedule"}]})");
  // l40s-inference has no taints: no tolerations.
  EXPECT_FALSE(manifest_at(r, "kueue/resourceflavor-l40s-inference.yaml")["spec"].contains("tolerations"));
}

// The GPUs no group is guaranteed are the Cohort's own quota, so that idle ones can be
// borrowed: 48 - 32 of h100-inference, 64 - 56 of h100-rdma-training, 56 - 32 MIG slices,
// 16 - 8 L40S.
TEST(KueueRender, EachPoolsCohortHoldsWhatNoGuaranteeHolds) {
  const RenderResult r = render_kueue_set(example_set());
  int cohorts = 0;
  for (const auto& o : r.objects) cohorts += o.manifest.value("kind", "") == "Cohort" ? 1 : 0;
  EXPECT_EQ(cohorts, 4);
  const Json& cohort = manifest_at(r, "kueue/cohort-h100-inference.yaml");
  EXPECT_EQ(cohort["spec"].dump(),
            R"({"resourceGroups":[{"coveredResources":["nvidia.com/gpu"],"flavors":[{"name":"h100-inference",)"
            R"("resources":[{"name":"nvidia.com/gpu","nominalQuota":16}]}]}]})");
  // A root: no parent, no limits (Kueue's webhook allows them only under a parent).
  EXPECT_FALSE(cohort["spec"].contains("parentName"));
  // Its quota depends on the pool's guarantees: the quota policies are its sources.
  EXPECT_EQ(cohort["metadata"]["annotations"][std::string(kAnnotationSource)],
            "PlatformGuardrails/platform,GPUQuotaPolicy/ads-borrow-h100-inference,"
            "GPUQuotaPolicy/customer-service-inference-h100,GPUQuotaPolicy/research-borrow-h100-inference,"
            "GPUQuotaPolicy/search-borrow-h100-inference");
  EXPECT_EQ(quota_of(manifest_at(r, "kueue/cohort-h100-rdma-training.yaml"))["nominalQuota"], 8);
  EXPECT_EQ(quota_of(manifest_at(r, "kueue/cohort-l40s-inference.yaml"))["nominalQuota"], 8);
  const Json& mig = quota_of(manifest_at(r, "kueue/cohort-mig-or-shared-development.yaml"));
  EXPECT_EQ(mig.dump(), R"({"name":"nvidia.com/mig-1g.10gb","nominalQuota":24})");
}

// policy::cohort_nominal_quota, which the controller calls as leases start and end.
TEST(CohortQuota, ActiveTemporaryQuotaLeasesComeOutOfTheCohort) {
  const policy::PolicySet set = example_set();
  const policy::Pool& training = *set.guardrails_spec()->find_pool("h100-rdma-training");
  const policy::Pool& inference = *set.guardrails_spec()->find_pool("h100-inference");
  EXPECT_EQ(policy::guaranteed_on_pool(set, "h100-rdma-training"), 56);
  EXPECT_EQ(policy::cohort_nominal_quota(set, training), 8);

  auto lease = [](std::string pool, policy::LeaseType type, int extra) {
    policy::CapacityLeaseSpec l;
    l.business_group = "ads";
    l.resource_pool = std::move(pool);
    l.type = type;
    if (type == policy::LeaseType::TemporaryQuota) l.extra_guaranteed = extra;
    return l;
  };
  const auto holiday = lease("h100-rdma-training", policy::LeaseType::TemporaryQuota, 6);
  const auto protection = lease("h100-rdma-training", policy::LeaseType::Protection, 0);
  const auto elsewhere = lease("h100-inference", policy::LeaseType::TemporaryQuota, 4);
  const std::vector<const policy::CapacityLeaseSpec*> active{&holiday, &protection, &elsewhere};
  // Only the TemporaryQuota lease on the pool counts: 64 - 56 - 6.
  EXPECT_EQ(policy::lease_extras_on_pool(active, "h100-rdma-training"), 6);
  EXPECT_EQ(policy::cohort_nominal_quota(set, training, active), 2);
  EXPECT_EQ(policy::cohort_nominal_quota(set, inference, active), 12);  // 48 - 32 - 4

  // Extras beyond what no one is guaranteed (validation's lease.exceeds-pool, or a lease
  // approved against another set): the Cohort holds nothing, never a negative quota.
  const auto big = lease("h100-rdma-training", policy::LeaseType::TemporaryQuota, 12);
  const std::vector<const policy::CapacityLeaseSpec*> too_much{&holiday, &big};
  EXPECT_EQ(policy::cohort_nominal_quota(set, training, too_much), 0);
  EXPECT_EQ(policy::unguaranteed_gpus(64, 56, 18), 0);
  EXPECT_EQ(policy::unguaranteed_gpus(64, 70, 0), 0);

  // The Cohort object the controller applies then: same path, the new quota.
  const RenderedObject cohort = render_kueue_cohort(set, training, active);
  EXPECT_EQ(cohort.path, "kueue/cohort-h100-rdma-training.yaml");
  EXPECT_EQ(quota_of(cohort.manifest)["nominalQuota"], 2);
  EXPECT_EQ(cohort.sources.front(), set.guardrails());
}

// A pool whose capacity is all guaranteed: its Cohort holds 0 (rendered, so that a
// controller only ever changes the number).
TEST(CohortQuota, APoolWithNoUnguaranteedGpus) {
  const auto set = gpubank::testing::from_yaml(guardrails_yaml() + quota_yaml("a-gpu", "a", "gpu", "  guaranteed: 40\n") +
                                               quota_yaml("b-gpu", "b", "gpu", "  guaranteed: 24\n"));
  const RenderResult r = render_kueue_set(set);
  ASSERT_TRUE(r.ok()) << r.diagnostics.front().to_string();
  EXPECT_EQ(quota_of(manifest_at(r, "kueue/cohort-gpu.yaml"))["nominalQuota"], 0);
  policy::CapacityLeaseSpec lease;
  lease.business_group = "a";
  lease.resource_pool = "gpu";
  lease.extra_guaranteed = 8;
  const std::vector<const policy::CapacityLeaseSpec*> active{&lease};
  EXPECT_EQ(policy::cohort_nominal_quota(set, *set.guardrails_spec()->find_pool("gpu"), active), 0);
  const ConsistencyReport report = check_consistency(set);
  ASSERT_EQ(report.pools.size(), 1u);
  EXPECT_EQ(report.pools[0].cohort_quota, 0);
}

TEST(KueueRender, LocalQueuePerNamespaceNamedAfterThePool) {
  const RenderResult r = render_kueue_set(example_set());
  for (const char* ns : {"search", "search-training"}) {
    const Json& lq = manifest_at(r, std::string("kueue/localqueue-") + ns + ".h100-rdma-training.yaml");
    EXPECT_EQ(lq["metadata"]["namespace"], ns);
    EXPECT_EQ(lq["metadata"]["name"], "h100-rdma-training");
    EXPECT_EQ(lq["spec"]["clusterQueue"], "search-h100-rdma-training");
  }
  // customer-service holds no quota on the training pool: no LocalQueue there.
  EXPECT_EQ(testing::find_object(r, "kueue/localqueue-customer-service.h100-rdma-training.yaml"), nullptr);
}

TEST(KueueRender, WorkloadPriorityClassPerPriority) {
  const RenderResult r = render_kueue_set(example_set());
  const Json& wpc = manifest_at(r, "kueue/workloadpriorityclass-training-high.yaml");
  EXPECT_EQ(wpc["value"], 50000);
  EXPECT_FALSE(wpc.contains("spec"));
}

// A lender whose borrowers can only be reclaimable (onlyPreempt set, no protected class
// for the other groups) takes its GPUs back regardless of priority.
TEST(KueueRender, ReclaimAnyWhenNoProtectedWorkloadCanBorrow) {
  const std::string guardrails = guardrails_yaml(
      "  - {name: gpu, gpuModel: H100, capacity: 64, role: training}\n",
      "  - {name: serving, value: 1000, workloadTypes: [inference], preemptible: false, groups: [a]}\n"
      "  - {name: batch, value: 100, workloadTypes: [batch, training]}\n");
  const auto set = gpubank::testing::from_yaml(
      guardrails +
      quota_yaml("a-gpu", "a", "gpu", "  guaranteed: 32\n  reclaimPolicy: {gracePeriod: 5m, onlyPreempt: [checkpointable]}\n") +
      quota_yaml("b-gpu", "b", "gpu", "  guaranteed: 16\n  borrowLimit: 8\n  fairShareWeight: 1.5\n"));
  const RenderResult r = render_kueue_set(set);
  ASSERT_TRUE(r.ok()) << r.diagnostics.front().to_string();
  // a: lends, traits-only, and b cannot run "serving": Any.
  EXPECT_EQ(manifest_at(r, "kueue/clusterqueue-a-gpu.yaml")["spec"]["preemption"]["reclaimWithinCohort"], "Any");
  // b: a may run "serving" and could be borrowing b's GPUs: LowerPriority (and no onlyPreempt).
  const Json& b = manifest_at(r, "kueue/clusterqueue-b-gpu.yaml")["spec"];
  EXPECT_EQ(b["preemption"]["reclaimWithinCohort"], "LowerPriority");
  // Kueue reads weights in thousandths.
  EXPECT_EQ(b["fairSharing"]["weight"], "1500m");
}

TEST(KueueRender, ClusterQueueNamesThatCollideAreErrors) {
  // Group "a" on pool "b-gpu" and group "a-b" on pool "gpu" would both be ClusterQueue a-b-gpu.
  const std::string guardrails = guardrails_yaml(
      "  - {name: gpu, gpuModel: H100, capacity: 64, role: training, nodeLabels: {pool: gpu}}\n"
      "  - {name: b-gpu, gpuModel: H100, capacity: 64, role: training, nodeLabels: {pool: b-gpu}}\n",
      "  - {name: batch, value: 100}\n",
      "  - {name: a, costCenter: CC-1, limits: {b-gpu: {minGuaranteed: 0, maxCapacity: 64}}}\n"
      "  - {name: a-b, costCenter: CC-2, limits: {gpu: {minGuaranteed: 0, maxCapacity: 64}}}\n");
  const auto set = gpubank::testing::from_yaml(guardrails + quota_yaml("first", "a", "b-gpu", "  guaranteed: 8\n") +
                                               quota_yaml("second", "a-b", "gpu", "  guaranteed: 8\n"));
  const RenderResult r = render_kueue_set(set);
  EXPECT_FALSE(r.ok());
  EXPECT_TRUE(r.objects.empty());
  const Diagnostic* d = gpubank::testing::find_finding(r.diagnostics, kRuleNameCollision);
  ASSERT_NE(d, nullptr) << (r.diagnostics.empty() ? "" : r.diagnostics.front().to_string());
  EXPECT_EQ(d->to_string(),
            "in.yaml:27:18: error: GPUQuotaPolicy/second: spec.businessGroup: renders ClusterQueue a-b-gpu, which "
            "GPUQuotaPolicy/first (spec.businessGroup) renders too; rename a group or pool so that the names differ "
            "[render.name-collision]");
}

}  // namespace
}  // namespace gpubank::render
