// The generated CustomResourceDefinitions: structural (what the API server requires),
// consistent with the webhook's rules, and in agreement with the decoder on the examples.
#include "policy/crd.hpp"

#include <gtest/gtest.h>

#include <regex>
#include <set>

#include "document/loader.hpp"
#include "support/policy_fixture.hpp"

namespace gpubank::policy {
namespace {

using doc::Json;

// Every node of a structural schema has a type, unless it keeps unknown fields.
void expect_structural(const Json& s, const std::string& path) {
  if (s.contains("x-kubernetes-preserve-unknown-fields")) return;
  ASSERT_TRUE(s.contains("type")) << path;
  if (s.contains("properties")) {
    for (const auto& [k, v] : s["properties"].items()) expect_structural(v, path + "." + k);
  }
  if (s.contains("items")) expect_structural(s["items"], path + "[]");
  if (s.contains("additionalProperties")) expect_structural(s["additionalProperties"], path + "{}");
}

// A small OpenAPI v3 checker for the keywords the generated schemas use.
void check(const Json& schema, const Json& value, const std::string& path, std::vector<std::string>& errors) {
  if (schema.contains("x-kubernetes-preserve-unknown-fields")) return;
  const std::string type = schema.value("type", "");
  auto fail = [&](const std::string& what) { errors.push_back(path + ": " + what); };
  if (type == "object") {
    if (!value.is_object()) return fail("not an object");
    for (const auto& r : schema.value("required", Json::array())) {
      if (!value.contains(r.get<std::string>())) fail("missing " + r.get<std::string>());
    }
    for (const auto& [k, v] : value.items()) {
      if (schema.contains("properties")) {
        if (schema["properties"].contains(k)) {
          check(schema["properties"][k], v, path + "." + k, errors);
        } else {
          fail("unknown field " + k);
        }
      } else if (schema.contains("additionalProperties")) {
        check(schema["additionalProperties"], v, path + "." + k, errors);
      }
    }
  } else if (type == "array") {
    if (!value.is_array()) return fail("not an array");
    if (schema.contains("minItems") && value.size() < schema["minItems"].get<std::size_t>()) fail("too few items");
    for (std::size_t i = 0; i < value.size(); ++i) check(schema["items"], value[i], path + "[" + std::to_string(i) + "]", errors);
  } else if (type == "string") {
    if (!value.is_string()) return fail("not a string");
    const auto& s = value.get_ref<const std::string&>();
    if (schema.contains("enum") && std::find(schema["enum"].begin(), schema["enum"].end(), value) == schema["enum"].end()) {
      fail("not in enum");
    }
    if (schema.contains("pattern") && !std::regex_search(s, std::regex(schema["pattern"].get<std::string>()))) {
      fail("does not match " + schema["pattern"].get<std::string>());
    }
    if (schema.contains("maxLength") && s.size() > schema["maxLength"].get<std::size_t>()) fail("too long");
  } else if (type == "integer" || type == "number") {
    if (!value.is_number() || (type == "integer" && !value.is_number_integer())) return fail("not an " + type);
    if (schema.contains("minimum")) {
      const double min = schema["minimum"];
      if (value.get<double>() < min || (schema.value("exclusiveMinimum", false) && value.get<double>() <= min)) {
        fail("below minimum");
      }
    }
    if (schema.contains("maximum") && value.get<double>() > schema["maximum"].get<double>()) fail("above maximum");
  } else if (type == "boolean") {
    if (!value.is_boolean()) fail("not a boolean");
  }
}

const Json* crd_for(const std::vector<Json>& crds, const std::string& kind) {
  for (const auto& c : crds) {
    if (c["spec"]["names"]["kind"] == kind) return &c;
  }
  return nullptr;
}

std::vector<std::string> check_file(const std::string& path) {
  const auto crds = custom_resource_definitions();
  std::vector<doc::Document> docs;
  Diagnostics d;
  doc::load_paths({path}, docs, d);
  std::vector<std::string> errors;
  for (const auto& document : docs) {
    const Json object = Json::parse(doc::to_json(document.root).dump());
    const Json* crd = crd_for(crds, object.value("kind", ""));
    if (crd == nullptr) continue;
    check(crd->at("spec")["versions"][0]["schema"]["openAPIV3Schema"], object, object["kind"].get<std::string>(), errors);
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
    expect_structural(c["spec"]["versions"][0]["schema"]["openAPIV3Schema"], c["spec"]["names"]["kind"]);
  }
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
  for (const auto& e : check_file(examples + "/policies")) ADD_FAILURE() << e;
  for (const char* rule : {"schema.wrong-type", "schema.unknown-field", "schema.required", "schema.out-of-range",
                           "schema.invalid-enum", "schema.invalid-format"}) {
    EXPECT_FALSE(check_file(examples + "/invalid/" + rule + ".yaml").empty()) << rule;
  }
}

}  // namespace
}  // namespace gpubank::policy
