// Issue 4's first acceptance item: every object `gpubank render` writes validates against
// the upstream CRD schemas (Kueue, Volcano, KEDA, KServe, prometheus-operator) as the API
// server would check it, and a deliberately broken object does not.
#include <gtest/gtest.h>

#include <functional>
#include <map>

#include "render/render.hpp"
#include "schema/schema_set.hpp"
#include "support/paths.hpp"

namespace gpubank::render {
namespace {

const schema::SchemaSet& upstream_schemas() {
  static const schema::SchemaSet set = [] {
    schema::SchemaSet s;
    Diagnostics diagnostics;
    s.load(gpubank::testing::shared_dir() + "/crds", diagnostics);
    for (const auto& d : diagnostics) ADD_FAILURE() << d.to_string();
    return s;
  }();
  return set;
}

policy::PolicySet examples() { return policy::load_policy_set({gpubank::testing::examples_dir() + "/policies"}); }

std::string describe(const schema::Result& r) {
  std::string out;
  for (const auto& v : r.violations) out += "  " + v.path + ": " + v.message + " [" + v.rule + "]\n";
  return out;
}

class RenderedObjects : public ::testing::TestWithParam<Backend> {};

TEST_P(RenderedObjects, EveryObjectValidatesAgainstItsUpstreamSchema) {
  const policy::PolicySet set = examples();
  const RenderResult r = render(set, {GetParam()});
  ASSERT_TRUE(r.ok());
  std::map<std::string, int> kinds;
  for (const auto& o : r.objects) {
    if (!o.manifest.contains("apiVersion")) {  // Grafana dashboard models are not API objects
      EXPECT_TRUE(o.path.starts_with("grafana/")) << o.path;
      continue;
    }
    const schema::Result result = upstream_schemas().validate(o.manifest);
    EXPECT_TRUE(result.ok()) << o.path << ":\n" << describe(result);
    ++kinds[o.manifest.value("apiVersion", "") + " " + o.manifest.value("kind", "")];
  }
  // Each engine's objects were there to be checked.
  const std::vector<std::string> expected =
      GetParam() == Backend::Kueue
          ? std::vector<std::string>{"kueue.x-k8s.io/v1beta2 ClusterQueue", "kueue.x-k8s.io/v1beta2 Cohort",
                                     "kueue.x-k8s.io/v1beta2 LocalQueue", "kueue.x-k8s.io/v1beta2 ResourceFlavor",
                                     "kueue.x-k8s.io/v1beta2 WorkloadPriorityClass"}
          : std::vector<std::string>{"scheduling.volcano.sh/v1beta1 Queue"};
  for (const auto& k : expected) EXPECT_GT(kinds[k], 0) << k;
  for (const char* k : {"keda.sh/v1alpha1 ScaledObject", "serving.kserve.io/v1beta1 InferenceService",
                        "monitoring.coreos.com/v1 PrometheusRule", "scheduling.k8s.io/v1 PriorityClass",
                        "v1 ConfigMap"}) {
    EXPECT_GT(kinds[k], 0) << k;
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, RenderedObjects, ::testing::Values(Backend::Kueue, Backend::Volcano),
                         [](const auto& param_info) { return std::string(backend_name(param_info.param)); });

const Json& object_at(const RenderResult& r, std::string_view path) {
  for (const auto& o : r.objects) {
    if (o.path == path) return o.manifest;
  }
  throw std::runtime_error("no rendered object at " + std::string(path));
}

// The validator is not vacuous on these objects: breaking a rendered one is caught, with
// the field path and the rule.
TEST(RenderedObjects, BrokenObjectsFailWithPathAndRule) {
  const policy::PolicySet set = examples();
  const RenderResult r = render(set, {Backend::Kueue});
  ASSERT_TRUE(r.ok());
  struct Case {
    std::string path;
    std::function<void(Json&)> breaks;
    std::string field, rule;
  };
  const std::vector<Case> cases{
      {"kueue/clusterqueue-search-h100-inference.yaml",
       [](Json& o) { o["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = "lots"; },
       "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota", "pattern"},  // int-or-string: a quantity
      {"kueue/clusterqueue-search-h100-inference.yaml", [](Json& o) { o["spec"]["resourceGroups"] = "all"; },
       "spec.resourceGroups", "type"},
      {"kueue/clusterqueue-search-h100-inference.yaml", [](Json& o) { o["spec"]["preemption"]["reclaimWithinCohort"] = "Sometimes"; },
       "spec.preemption.reclaimWithinCohort", "enum"},
      {"kueue/clusterqueue-search-h100-inference.yaml", [](Json& o) { o["spec"]["cohortRef"] = "h100"; }, "spec.cohortRef",
       "unknown-field"},
  };
  for (const auto& c : cases) {
    Json broken = object_at(r, c.path);
    c.breaks(broken);
    const schema::Result result = upstream_schemas().validate(broken);
    ASSERT_FALSE(result.ok()) << c.field;
    bool found = false;
    for (const auto& v : result.violations) found = found || (v.path == c.field && v.rule == c.rule);
    EXPECT_TRUE(found) << c.field << " " << c.rule << ":\n" << describe(result);
  }
  // A KEDA trigger without its type, and a PrometheusRule group without rules.
  for (const auto& o : r.objects) {
    if (o.manifest.value("kind", "") == "ScaledObject") {
      Json broken = o.manifest;
      broken["spec"]["triggers"][0].erase("type");
      const schema::Result result = upstream_schemas().validate(broken);
      EXPECT_FALSE(result.ok()) << o.path;
      break;
    }
  }
}

}  // namespace
}  // namespace gpubank::render
