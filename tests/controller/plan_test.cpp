#include "controller/plan.hpp"

#include <gtest/gtest.h>

namespace gpubank::controller {
namespace {

using nlohmann::json;

render::RenderedObject rendered(const std::string& api_version, const std::string& kind, const std::string& ns,
                                const std::string& name, const std::string& path) {
  render::RenderedObject o;
  o.manifest = {{"apiVersion", api_version}, {"kind", kind}, {"metadata", {{"name", name}}}};
  if (!ns.empty()) o.manifest["metadata"]["namespace"] = ns;
  o.manifest["metadata"]["labels"] = {{"app.kubernetes.io/managed-by", "gpubank"}};
  o.path = path;
  return o;
}

json live(const std::string& api_version, const std::string& kind, const std::string& ns, const std::string& name,
          bool labelled, const std::string& apply_manager) {
  json o{{"apiVersion", api_version}, {"kind", kind}, {"metadata", {{"name", name}, {"resourceVersion", "5"}}}};
  if (!ns.empty()) o["metadata"]["namespace"] = ns;
  if (labelled) o["metadata"]["labels"] = {{"app.kubernetes.io/managed-by", "gpubank"}};
  o["metadata"]["managedFields"] = json::array();
  if (!apply_manager.empty()) {
    o["metadata"]["managedFields"].push_back({{"manager", apply_manager}, {"operation", "Apply"}, {"fieldsType", "FieldsV1"}});
  }
  o["metadata"]["managedFields"].push_back({{"manager", "kube-controller-manager"}, {"operation", "Update"}});
  return o;
}

TEST(Plan, AppliesEveryRenderedObjectAndSkipsDashboardModels) {
  render::RenderedObject dashboard;
  dashboard.manifest = {{"uid", "gpubank-bank"}, {"title", "bank"}};
  dashboard.path = "grafana/bank.json";
  const Plan plan = make_plan({rendered("kueue.x-k8s.io/v1beta2", "ClusterQueue", "", "a-h100", "kueue/cq-a.yaml"), dashboard},
                              {}, {});
  ASSERT_EQ(plan.apply.size(), 1U);
  EXPECT_EQ(plan.apply[0].path, "kueue/cq-a.yaml");
  ASSERT_EQ(plan.skipped.size(), 1U);
  EXPECT_EQ(plan.skipped[0].path, "grafana/bank.json");
}

TEST(Plan, KueueManagerConfigIsAppliedOnlyWhenManagedAndNeverPruned) {
  const auto config = rendered("v1", "ConfigMap", "kueue-system", "kueue-manager-config", "kueue/configmap.yaml");
  EXPECT_TRUE(make_plan({config}, {}, {}).apply.empty());
  EXPECT_EQ(make_plan({config}, {}, {.manage_kueue_config = true}).apply.size(), 1U);
  // Applied by gpubank earlier and no longer rendered or managed: kept.
  const Plan plan = make_plan({}, {live("v1", "ConfigMap", "kueue-system", "kueue-manager-config", true, "gpubank")}, {});
  EXPECT_TRUE(plan.prune.empty());
}

TEST(Plan, PrunesOnlyWhatGpubankApplied) {
  const std::vector<json> cluster{
      live("kueue.x-k8s.io/v1beta2", "ClusterQueue", "", "kept", true, "gpubank"),
      live("kueue.x-k8s.io/v1beta2", "ClusterQueue", "", "stale", true, "gpubank"),
      // The label was copied (kubectl apply of `gpubank render` output): not gpubank's.
      live("kueue.x-k8s.io/v1beta2", "ClusterQueue", "", "copied-label", true, "kubectl"),
      // Applied by gpubank, label removed by hand: not pruned either.
      live("kueue.x-k8s.io/v1beta2", "ClusterQueue", "", "unlabelled", false, "gpubank"),
      // Another field manager name (a second installation): not this one's.
      live("kueue.x-k8s.io/v1beta2", "ClusterQueue", "", "other-install", true, "gpubank-staging"),
  };
  const Plan plan = make_plan({rendered("kueue.x-k8s.io/v1beta2", "ClusterQueue", "", "kept", "kueue/cq-kept.yaml")}, cluster, {});
  ASSERT_EQ(plan.prune.size(), 1U);
  EXPECT_EQ(plan.prune[0]["metadata"]["name"], "stale");
  const Plan staging = make_plan({}, cluster, {.field_manager = "gpubank-staging"});
  ASSERT_EQ(staging.prune.size(), 1U);
  EXPECT_EQ(staging.prune[0]["metadata"]["name"], "other-install");
}

TEST(Plan, AnObjectIsTheSameAcrossApiVersions) {
  // Listed at v1beta1, rendered at v1beta2: the same ClusterQueue, not a stale one.
  const Plan plan = make_plan({rendered("kueue.x-k8s.io/v1beta2", "ClusterQueue", "", "a", "kueue/a.yaml")},
                              {live("kueue.x-k8s.io/v1beta1", "ClusterQueue", "", "a", true, "gpubank")}, {});
  EXPECT_TRUE(plan.prune.empty());
}

TEST(Plan, UsersInferenceServicesAreReleasedNotDeleted) {
  const Plan plan =
      make_plan({}, {live("serving.kserve.io/v1beta1", "InferenceService", "team-a", "chat", true, "gpubank")}, {});
  EXPECT_TRUE(plan.prune.empty());
  ASSERT_EQ(plan.release.size(), 1U);
  EXPECT_EQ(plan.release[0], (json{{"apiVersion", "serving.kserve.io/v1beta1"},
                                   {"kind", "InferenceService"},
                                   {"metadata", {{"name", "chat"}, {"namespace", "team-a"}}}}));
}

TEST(Plan, KeysPrintAsKubectlNamesThem) {
  EXPECT_EQ(key_of(live("kueue.x-k8s.io/v1beta2", "ClusterQueue", "", "a", true, "")).to_string(), "clusterqueue.kueue.x-k8s.io/a");
  EXPECT_EQ(key_of(live("v1", "ConfigMap", "ns", "b", true, "")).to_string(), "configmap/ns/b");
}

}  // namespace
}  // namespace gpubank::controller
