// render(): validation first, then the checks, then the renderers; stamping, ordering,
// determinism and locality (a changed policy changes only the objects it affects).
#include "render/render.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "document/yaml_writer.hpp"
#include "render/engines_fixture.hpp"
#include "render/scheduling.hpp"

namespace gpubank::render {
namespace {

using testing::example_set;
using ::testing::ElementsAre;

std::map<std::string, std::string> texts(const RenderResult& r) {
  std::map<std::string, std::string> out;
  for (const auto& o : r.objects) out[o.path] = to_file_text(o);
  return out;
}

// The paths whose text differs, or that only one side has.
std::vector<std::string> changed(const std::map<std::string, std::string>& a, const std::map<std::string, std::string>& b) {
  std::set<std::string> paths;
  for (const auto& [p, _] : a) paths.insert(p);
  for (const auto& [p, _] : b) paths.insert(p);
  std::vector<std::string> out;
  for (const auto& p : paths) {
    auto x = a.find(p), y = b.find(p);
    if (x == a.end() || y == b.end() || x->second != y->second) out.push_back(p);
  }
  return out;
}

TEST(Render, ExamplesRenderWithoutFindings) {
  for (Backend backend : {Backend::Kueue, Backend::Volcano}) {
    const RenderResult r = render(example_set(), {backend});
    EXPECT_TRUE(r.diagnostics.empty()) << r.diagnostics.front().to_string();
    EXPECT_FALSE(r.objects.empty());
  }
}

TEST(Render, RefusesAnInvalidSetAndRendersNothing) {
  const auto set = gpubank::testing::examples_plus(R"(
apiVersion: platform.gpubank.dev/v1alpha1
kind: GPUQuotaPolicy
metadata: {name: cs-training}
spec: {businessGroup: customer-service, resourcePool: h100-rdma-training, guaranteed: 16}
)");
  const RenderResult r = render(set, {Backend::Kueue});
  EXPECT_FALSE(r.ok());
  EXPECT_TRUE(r.objects.empty());
  EXPECT_TRUE(gpubank::testing::has_rule(r.diagnostics, "quota.pool-not-allowed"));
}

TEST(Render, EveryObjectIsStampedAsStampWouldStampIt) {
  const policy::PolicySet set = example_set();  // sources point into it
  const RenderResult r = render(set, {Backend::Kueue});
  for (const auto& o : r.objects) {
    SCOPED_TRACE(o.path);
    if (!o.manifest.contains("metadata")) {  // a Grafana dashboard model: nothing to stamp
      EXPECT_TRUE(o.path.starts_with("grafana/") && o.path.ends_with(".json"));
      continue;
    }
    const Json& meta = o.manifest.at("metadata");
    EXPECT_EQ(meta.at("labels").at(std::string(kLabelManagedBy)), "gpubank");
    // The cached hashing of stamp_all() gives what stamp() computes from scratch.
    RenderedObject fresh{o.manifest, o.path, o.sources};
    fresh.manifest["metadata"]["annotations"].erase(std::string(kAnnotationSource));
    fresh.manifest["metadata"]["annotations"].erase(std::string(kAnnotationSourceHash));
    stamp(fresh);
    EXPECT_EQ(fresh.manifest["metadata"]["annotations"], meta.at("annotations"));
  }
}

TEST(Render, PathsAreSortedAndFollowAreaKindName) {
  const RenderResult r = render(example_set(), {Backend::Volcano});
  ASSERT_FALSE(r.objects.empty());
  for (std::size_t i = 1; i < r.objects.size(); ++i) EXPECT_LT(r.objects[i - 1].path, r.objects[i].path);
  EXPECT_NE(testing::find_object(r, "volcano/queue-h100-inference.yaml"), nullptr);
  EXPECT_NE(testing::find_object(r, "scheduling/priorityclass-batch-low.yaml"), nullptr);
}

TEST(Render, RenderingTwiceIsByteIdentical) {
  for (Backend backend : {Backend::Kueue, Backend::Volcano}) {
    // Two loads, so nothing can depend on addresses or on state kept between calls.
    EXPECT_EQ(texts(render(example_set(), {backend})), texts(render(example_set(), {backend})));
  }
}

// search-borrow-h100-inference: guaranteed 0, borrowLimit 16 -> borrowLimit 8.
policy::PolicySet with_smaller_borrow_limit() {
  policy::PolicySet set = example_set();
  policy::PolicyObject changed_policy = *set.find(policy::Kind::GPUQuotaPolicy, "search-borrow-h100-inference");
  std::get<policy::GPUQuotaPolicySpec>(changed_policy.spec).borrow_limit = 8;
  EXPECT_TRUE(set.upsert(std::move(changed_policy)));
  return set;
}

TEST(Render, ChangingOneBorrowLimitChangesExactlyOneClusterQueue) {
  const auto before = render(example_set(), {Backend::Kueue});
  const auto after = render(with_smaller_borrow_limit(), {Backend::Kueue});
  ASSERT_TRUE(after.ok());
  // The group's PrometheusRule reads the quota too (its quota-exhausted alert compares usage
  // with nominal + borrowingLimit), so it changes with it. The pool's Cohort lists the
  // pool's quotas among its sources (its quota is what their guarantees leave), so only
  // its source-hash annotation changes. No other file does.
  EXPECT_THAT(changed(texts(before), texts(after)),
              ElementsAre("kueue/clusterqueue-search-h100-inference.yaml", "kueue/cohort-h100-inference.yaml",
                          "monitoring/prometheusrule-gpubank-group-search.yaml"));
  const Json& cohort = testing::manifest_at(after, "kueue/cohort-h100-inference.yaml");
  EXPECT_EQ(cohort["spec"], testing::manifest_at(before, "kueue/cohort-h100-inference.yaml")["spec"]);
  const Json& cq = testing::manifest_at(after, "kueue/clusterqueue-search-h100-inference.yaml");
  const Json& quota = cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0];
  EXPECT_EQ(quota["borrowingLimit"], 8);
}

TEST(Render, ChangingOneBorrowLimitChangesExactlyOneVolcanoQueue) {
  const auto before = render(example_set(), {Backend::Volcano});
  const auto after = render(with_smaller_borrow_limit(), {Backend::Volcano});
  EXPECT_THAT(changed(texts(before), texts(after)),
              ElementsAre("monitoring/prometheusrule-gpubank-group-search.yaml", "volcano/queue-search-h100-inference.yaml"));
}

TEST(Render, ChecksRunBeforeRenderersAndAnErrorStopsThem) {
  bool rendered = false;
  Pipeline p;
  p.checks.emplace_back([](const policy::PolicySet& set) {
    return Diagnostics{finding(Severity::Error, "test.capacity", *set.guardrails(), "spec.pools", "over capacity")};
  });
  p.renderers.emplace_back([&](const policy::PolicySet&) {
    rendered = true;
    return std::vector<RenderedObject>{};
  });
  const RenderResult r = render(example_set(), p);
  EXPECT_FALSE(r.ok());
  EXPECT_FALSE(rendered);
  ASSERT_EQ(r.diagnostics.size(), 1U);
  EXPECT_EQ(r.diagnostics[0].rule, "test.capacity");
}

TEST(Render, MoreRenderersPlugIntoThePipeline) {
  Pipeline p = default_pipeline({Backend::Kueue});
  p.renderers.emplace_back([](const policy::PolicySet& set) {
    const policy::PolicyObject* lowutil = set.find(policy::Kind::LowUtilizationPolicy, "training-default");
    Json cm = Json::parse(R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","namespace":"gpubank"}})");
    return std::vector<RenderedObject>{{cm, "aaa/configmap-gpubank.x.yaml", {lowutil}}};
  });
  const RenderResult r = render(example_set(), p);
  ASSERT_TRUE(r.ok());
  ASSERT_FALSE(r.objects.empty());
  EXPECT_EQ(r.objects.front().path, "aaa/configmap-gpubank.x.yaml");  // merged, then sorted
  EXPECT_EQ(r.objects.front().manifest["metadata"]["annotations"][std::string(kAnnotationSource)],
            "LowUtilizationPolicy/training-default");
}

TEST(Render, WarningsDoNotStopTheRender) {
  // A protected class below an unprotected one: warned, still rendered.
  const auto set = gpubank::testing::from_yaml(testing::guardrails_yaml(
      "  - {name: gpu, gpuModel: H100, capacity: 64, role: training}\n",
      "  - {name: serving, value: 10, workloadTypes: [inference], preemptible: false}\n"
      "  - {name: batch, value: 100, workloadTypes: [batch, training]}\n"));
  const RenderResult r = render(set, {Backend::Kueue});
  EXPECT_TRUE(r.ok());
  EXPECT_TRUE(gpubank::testing::has_rule(r.diagnostics, kRuleProtectedPriorityOrder));
  EXPECT_FALSE(r.objects.empty());
}

TEST(Render, FileTextsOnThreadsMatchOneByOne) {
  // 150 groups with two namespaces each on one pool: 451+ objects, enough for threads.
  std::string groups, quotas;
  for (int i = 0; i < 150; ++i) {
    const std::string g = "g" + std::to_string(i);
    groups += "  - {name: " + g + ", costCenter: CC, namespaces: [" + g + ", " + g +
              "-jobs], limits: {gpu: {minGuaranteed: 0, maxCapacity: 8}}}\n";
    quotas += testing::quota_yaml(g + "-gpu", g, "gpu", "  guaranteed: 1\n  borrowLimit: 7\n");
  }
  const auto set = gpubank::testing::from_yaml(
      testing::guardrails_yaml("  - {name: gpu, gpuModel: H100, capacity: 256, role: training}\n",
                               "  - {name: batch, value: 100}\n", groups) +
      quotas);
  const RenderResult r = render(set, {Backend::Kueue});
  ASSERT_TRUE(r.ok()) << r.diagnostics.front().to_string();
  ASSERT_GT(r.objects.size(), 450U);
  const std::vector<std::string> parallel = to_file_texts(r.objects);
  ASSERT_EQ(parallel.size(), r.objects.size());
  for (std::size_t i = 0; i < r.objects.size(); ++i) {
    EXPECT_EQ(parallel[i], to_file_text(r.objects[i])) << i;
    if (r.objects[i].path.ends_with(".yaml")) {
      EXPECT_EQ(parallel[i], doc::to_yaml(r.objects[i].manifest)) << i;
    }
  }
}

// to_file_text writes most objects without yaml-cpp; the text must be doc::to_yaml's.
TEST(Render, FileTextIsWhatToYamlWrites) {
  const policy::PolicySet set = example_set();
  for (Backend backend : {Backend::Kueue, Backend::Volcano}) {
    for (const auto& o : render(set, {backend}).objects) {
      if (o.path.ends_with(".json")) {  // dashboards are written as JSON
        EXPECT_EQ(to_file_text(o), o.manifest.dump(2) + "\n") << o.path;
        continue;
      }
      EXPECT_EQ(to_file_text(o), doc::to_yaml(o.manifest)) << o.path;
      // The many objects of a large platform are all written directly (only priority
      // classes, with their descriptions, and PodGroup templates are not).
      const std::string kind = o.manifest.value("kind", "");
      if (kind == "ClusterQueue" || kind == "LocalQueue" || kind == "ResourceFlavor" || kind == "Cohort" ||
          kind == "Queue") {
        const auto text = simple_yaml(o.manifest);
        ASSERT_TRUE(text.has_value()) << o.path;
        EXPECT_EQ(*text, doc::to_yaml(o.manifest)) << o.path;
      }
    }
  }
  // Every shape: maps in lists in maps, empty collections, numbers, booleans, and names
  // that would read back as other types unless quoted.
  const Json shapes = Json::parse(R"({
    "a": {"b": [{"c": 1, "d": [{"e": "x"}, "y"], "f": {}}, {}, "z"], "g": [], "h": {}},
    "names": ["true", "on", "123", "1.5", "0x1F", "1500m", "nvidia.com/mig-1g.10gb", "a,b", "null", "Yes"],
    "flags": [true, false, -3, 18446744073709551615],
    "true": "name", "1": 2
  })");
  for (const auto& [key, value] : shapes.items()) {
    const Json doc{{key, value}};
    const auto text = simple_yaml(doc);
    ASSERT_TRUE(text.has_value()) << key;
    EXPECT_EQ(*text, doc::to_yaml(doc)) << key;
  }
  // Left to yaml-cpp: spaces, lists in lists, floats, nulls, empty strings.
  for (const char* other : {R"({"a": "two words"})", R"({"a": [[1]]})", R"({"a": 1.5})", R"({"a": null})",
                            R"({"a": ""})", R"({"-a": 1})"}) {
    EXPECT_FALSE(simple_yaml(Json::parse(other)).has_value()) << other;
  }
}

TEST(Render, BackendNames) {
  EXPECT_EQ(backend_from_name("kueue"), Backend::Kueue);
  EXPECT_EQ(backend_from_name("volcano"), Backend::Volcano);
  EXPECT_EQ(backend_from_name("yunikorn"), std::nullopt);
  EXPECT_EQ(backend_name(Backend::Volcano), "volcano");
}

}  // namespace
}  // namespace gpubank::render
