// The generated CustomResourceDefinitions: accepted by the schema validator as the API
// server would accept them (structural, only apiextensions.k8s.io/v1 keywords), consistent
// with the webhook's rules, and in agreement with the decoder on the examples.
#include "policy/crd.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "document/loader.hpp"
#include "schema/schema_set.hpp"
#include "support/policy_fixture.hpp"

namespace gpubank::policy {
namespace {

using doc::Json;
using ::testing::ElementsAre;

const Json* crd_for(const std::vector<Json>& crds, const std::string& kind) {
  for (const auto& c : crds) {
    if (c["spec"]["names"]["kind"] == kind) return &c;
  }
  return nullptr;
}

// The schemas of the generated CRDs; any load error (a non-structural schema, a keyword
// apiextensions.k8s.io/v1 refuses) fails the test.
schema::SchemaSet policy_schemas() {
  schema::SchemaSet set;
  Diagnostics diagnostics;
  for (const auto& c : custom_resource_definitions()) {
    EXPECT_EQ(set.add_crd(c, "gpubank crds", diagnostics), 1u) << c["metadata"]["name"];
  }
  for (const auto& d : diagnostics) ADD_FAILURE() << d.to_string();
  return set;
}

// "path [rule]" of every violation of the policy objects in a file or directory.
std::vector<std::string> check_file(const std::string& path) {
  const schema::SchemaSet set = policy_schemas();
  std::vector<doc::Document> docs;
  Diagnostics d;
  doc::load_paths({path}, docs, d);
  std::vector<std::string> errors;
  for (const auto& document : docs) {
    const Json object = doc::to_ordered_json(document.root);
    if (!set.contains(object.value("apiVersion", ""), object.value("kind", ""))) continue;
    for (const auto& v : set.validate(object).violations) errors.push_back(v.path + " [" + v.rule + "]");
  }
  return errors;
}

TEST(Crd, OnePerKindAndStructural) {
  const auto crds = custom_resource_definitions();
  ASSERT_EQ(crds.size(), 6u);
  for (const auto& c : crds) {
    EXPECT_EQ(c["apiVersion"], "apiextensions.k8s.io/v1");
    EXPECT_EQ(c["spec"]["scope"], "Cluster");
    EXPECT_EQ(c["metadata"]["name"], c["spec"]["names"]["plural"].get<std::string>() + ".platform.gpubank.dev");
  }
  const auto kinds = policy_schemas().kinds();
  EXPECT_EQ(std::count_if(kinds.begin(), kinds.end(),
                          [](const schema::KindInfo& k) { return k.api_version == "platform.gpubank.dev/v1alpha1"; }),
            6);
  const auto& quota = crd_for(crds, "GPUQuotaPolicy")->at("spec")["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"];
  EXPECT_EQ(quota["required"], Json({"businessGroup", "resourcePool", "guaranteed"}));
  EXPECT_EQ(quota["properties"]["guaranteed"]["minimum"], 0);
}

TEST(Crd, TheWebhookConfigurationNamesEveryResource) {
  std::vector<doc::Document> docs;
  Diagnostics d;
  doc::load_paths({gpubank::testing::source_dir() + "/deploy/webhook/validatingwebhookconfiguration.yaml"}, docs, d);
  ASSERT_EQ(docs.size(), 1u);
  const Json config = Json::parse(doc::to_json(docs[0].root).dump());
  std::set<std::string> routed;
  for (const auto& hook : config["webhooks"]) {
    for (const auto& r : hook["rules"]) {
      if (r["apiGroups"][0] != "platform.gpubank.dev") continue;
      for (const auto& res : r["resources"]) routed.insert(res.get<std::string>());
    }
  }
  for (const auto& c : custom_resource_definitions()) {
    EXPECT_TRUE(routed.contains(c["spec"]["names"]["plural"].get<std::string>())) << c["spec"]["names"]["plural"];
  }
}

TEST(Crd, TheExamplesPassTheSchemaAndShapeErrorsFailIt) {
  const std::string examples = gpubank::testing::examples_dir();
  EXPECT_THAT(check_file(examples + "/policies"), ElementsAre());
  const std::string invalid = examples + "/invalid/";
  EXPECT_THAT(check_file(invalid + "schema.wrong-type.yaml"), ElementsAre("spec.guaranteed [type]"));
  EXPECT_THAT(check_file(invalid + "schema.unknown-field.yaml"),
              ElementsAre("spec.guaranted [unknown-field]", "spec.guaranteed [required]"));
  EXPECT_THAT(check_file(invalid + "schema.required.yaml"), ElementsAre("spec.resourcePool [required]"));
  EXPECT_THAT(check_file(invalid + "schema.out-of-range.yaml"), ElementsAre("spec.guaranteed [minimum]"));
  EXPECT_THAT(check_file(invalid + "schema.invalid-enum.yaml"), ElementsAre("spec.match.workloadType [enum]"));
  EXPECT_THAT(check_file(invalid + "schema.invalid-format.yaml"),
              ElementsAre("spec.window [pattern]", "metadata.name [name]"));
}

}  // namespace
}  // namespace gpubank::policy
