// deploy/webhook's admission configurations: valid admissionregistration.k8s.io/v1 objects
// (checked with the schema validator against the API's fields, as strict field validation
// would), routed to the paths the server serves, and the mutating webhook in step with the
// validating workloads webhook it works with.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "document/loader.hpp"
#include "schema/schema_set.hpp"
#include "support/paths.hpp"

namespace gpubank::policy {
namespace {

using Json = schema::Json;

// The webhook configuration kinds as CustomResourceDefinitions, written from the Kubernetes
// API reference (admissionregistration.k8s.io/v1 MutatingWebhook and ValidatingWebhook):
// every field, with the enums and bounds the API server's validation enforces (v1 allows
// only sideEffects None and NoneOnDryRun; timeoutSeconds 1 to 30). %KIND%, %PLURAL%,
// %SELECTOR% (a metav1.LabelSelector) and %EXTRA% (reinvocationPolicy for the mutating
// kind) are filled in.
constexpr std::string_view kWebhookConfigurationCrd = R"(
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: "%PLURAL%.admissionregistration.k8s.io"}
spec:
  group: admissionregistration.k8s.io
  scope: Cluster
  names: {kind: "%KIND%", plural: "%PLURAL%"}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          apiVersion: {type: string}
          kind: {type: string}
          metadata: {type: object}
          webhooks:
            type: array
            items:
              type: object
              required: [name, clientConfig, sideEffects, admissionReviewVersions]
              properties:
                name: {type: string}
                admissionReviewVersions: {type: array, minItems: 1, items: {type: string, enum: [v1, v1beta1]}}
                clientConfig:
                  type: object
                  properties:
                    url: {type: string}
                    caBundle: {type: string, format: byte}
                    service:
                      type: object
                      required: [namespace, name]
                      properties:
                        namespace: {type: string}
                        name: {type: string}
                        path: {type: string}
                        port: {type: integer, format: int32, minimum: 1, maximum: 65535}
                rules:
                  type: array
                  items:
                    type: object
                    properties:
                      apiGroups: {type: array, items: {type: string}}
                      apiVersions: {type: array, items: {type: string}}
                      operations: {type: array, items: {type: string, enum: [CREATE, UPDATE, DELETE, CONNECT, "*"]}}
                      resources: {type: array, items: {type: string}}
                      scope: {type: string, enum: [Cluster, Namespaced, "*"]}
                failurePolicy: {type: string, enum: [Ignore, Fail]}
                matchPolicy: {type: string, enum: [Exact, Equivalent]}
                namespaceSelector: %SELECTOR%
                objectSelector: %SELECTOR%
                sideEffects: {type: string, enum: [None, NoneOnDryRun]}
                timeoutSeconds: {type: integer, format: int32, minimum: 1, maximum: 30}
                matchConditions:
                  type: array
                  items:
                    type: object
                    required: [name, expression]
                    properties:
                      name: {type: string}
                      expression: {type: string}
                %EXTRA%
)";

constexpr std::string_view kLabelSelector =
    "{type: object, properties: {matchLabels: {type: object, additionalProperties: {type: string}}, "
    "matchExpressions: {type: array, items: {type: object, required: [key, operator], properties: {"
    "key: {type: string}, operator: {type: string, enum: [In, NotIn, Exists, DoesNotExist]}, "
    "values: {type: array, items: {type: string}}}}}}}";

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  for (auto at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

Json webhook_configuration_crd(const std::string& kind, const std::string& plural, const std::string& extra) {
  std::string yaml = replaced(std::string(kWebhookConfigurationCrd), "%KIND%", kind);
  yaml = replaced(yaml, "%PLURAL%", plural);
  yaml = replaced(yaml, "%SELECTOR%", std::string(kLabelSelector));
  yaml = replaced(yaml, "%EXTRA%", extra);
  std::vector<doc::Document> docs;
  Diagnostics d;
  doc::read_yaml(yaml, kind + ".crd.yaml", docs, d);
  for (const auto& x : d) ADD_FAILURE() << x.to_string();
  EXPECT_EQ(docs.size(), 1u);
  return docs.empty() ? Json() : doc::to_ordered_json(docs[0].root);
}

const schema::SchemaSet& admission_schemas() {
  static const schema::SchemaSet set = [] {
    schema::SchemaSet s;
    Diagnostics d;
    EXPECT_EQ(s.add_crd(webhook_configuration_crd("ValidatingWebhookConfiguration", "validatingwebhookconfigurations", ""),
                        "test", d),
              1u);
    EXPECT_EQ(s.add_crd(webhook_configuration_crd("MutatingWebhookConfiguration", "mutatingwebhookconfigurations",
                                                  "reinvocationPolicy: {type: string, enum: [Never, IfNeeded]}"),
                        "test", d),
              1u);
    for (const auto& x : d) ADD_FAILURE() << x.to_string();
    return s;
  }();
  return set;
}

std::string deploy_file(const std::string& name) { return gpubank::testing::source_dir() + "/deploy/webhook/" + name; }

Json load_one(const std::string& name) {
  std::vector<doc::Document> docs;
  Diagnostics d;
  doc::load_paths({deploy_file(name)}, docs, d);
  for (const auto& x : d) ADD_FAILURE() << x.to_string();
  EXPECT_EQ(docs.size(), 1u) << name;
  return docs.empty() ? Json() : doc::to_ordered_json(docs[0].root);
}

// "path [rule]" of every violation.
std::vector<std::string> violations(const Json& object) {
  std::vector<std::string> out;
  for (const auto& v : admission_schemas().validate(object).violations) out.push_back(v.path + " [" + v.rule + "]");
  return out;
}

const Json* webhook_named(const Json& config, const std::string& name) {
  for (const auto& hook : config["webhooks"]) {
    if (hook["name"] == name) return &hook;
  }
  return nullptr;
}

TEST(DeployWebhook, BothConfigurationsAreValidAdmissionRegistrationObjects) {
  const Json validating = load_one("validatingwebhookconfiguration.yaml");
  const Json mutating = load_one("mutatingwebhookconfiguration.yaml");
  EXPECT_EQ(validating["kind"], "ValidatingWebhookConfiguration");
  EXPECT_EQ(mutating["kind"], "MutatingWebhookConfiguration");
  EXPECT_EQ(violations(validating), std::vector<std::string>{});
  EXPECT_EQ(violations(mutating), std::vector<std::string>{});
  // The schema does catch what the API server refuses: reinvocationPolicy on a validating
  // webhook (an unknown field), a side effect v1 does not allow, a misspelt policy.
  Json wrong = validating;
  wrong["webhooks"][1]["reinvocationPolicy"] = "IfNeeded";
  wrong["webhooks"][1]["sideEffects"] = "Unknown";
  Json wrong_mutating = mutating;
  wrong_mutating["webhooks"][0]["reinvocationPolicy"] = "Always";
  wrong_mutating["webhooks"][0].erase("sideEffects");
  EXPECT_EQ(violations(wrong),
            (std::vector<std::string>{"webhooks[1].sideEffects [enum]", "webhooks[1].reinvocationPolicy [unknown-field]"}));
  EXPECT_EQ(violations(wrong_mutating),
            (std::vector<std::string>{"webhooks[0].reinvocationPolicy [enum]", "webhooks[0].sideEffects [required]"}));
}

TEST(DeployWebhook, EachWebhookCallsTheEndpointOfItsKind) {
  for (const auto& [file, path] : {std::pair{"validatingwebhookconfiguration.yaml", "/validate"},
                                   std::pair{"mutatingwebhookconfiguration.yaml", "/mutate"}}) {
    const Json config = load_one(file);
    ASSERT_FALSE(config["webhooks"].empty()) << file;
    for (const auto& hook : config["webhooks"]) {
      EXPECT_EQ(hook["clientConfig"]["service"]["path"], path) << file << " " << hook["name"];
      EXPECT_EQ(hook["admissionReviewVersions"], Json({"v1"})) << file << " " << hook["name"];
    }
  }
}

// The mutating webhook must see exactly what the validating workloads webhook sees: a
// workload it skips would reach the validating rule without its class and be denied.
TEST(DeployWebhook, TheMutatingWebhookMirrorsTheWorkloadsWebhook) {
  const Json validating = load_one("validatingwebhookconfiguration.yaml");
  const Json mutating = load_one("mutatingwebhookconfiguration.yaml");
  const Json* workloads = webhook_named(validating, "workloads.gpubank.dev");
  ASSERT_NE(workloads, nullptr);
  ASSERT_EQ(mutating["webhooks"].size(), 1u);  // policies are never mutated
  const Json& hook = mutating["webhooks"][0];
  EXPECT_EQ(hook["rules"], (*workloads)["rules"]);
  EXPECT_EQ(hook["namespaceSelector"], (*workloads)["namespaceSelector"]);
  EXPECT_EQ(hook.contains("objectSelector"), workloads->contains("objectSelector"));
  for (const char* field : {"failurePolicy", "matchPolicy", "sideEffects", "timeoutSeconds"}) {
    EXPECT_EQ(hook[field], (*workloads)[field]) << field;
  }
  EXPECT_EQ(hook["failurePolicy"], "Fail");
  EXPECT_EQ(hook["sideEffects"], "None");
  EXPECT_EQ(hook["reinvocationPolicy"], "IfNeeded");
  Json service = hook["clientConfig"]["service"];
  Json workloads_service = (*workloads)["clientConfig"]["service"];
  service.erase("path");
  workloads_service.erase("path");
  EXPECT_EQ(service, workloads_service);  // the same Service and port
  EXPECT_EQ(mutating["metadata"]["annotations"], validating["metadata"]["annotations"]);  // the same injected CA
}

TEST(DeployWebhook, TheKustomizationAppliesBothConfigurations) {
  std::ifstream in(deploy_file("kustomization.yaml"));
  std::stringstream text;
  text << in.rdbuf();
  std::vector<doc::Document> docs;
  Diagnostics d;
  doc::read_yaml(text.str(), "kustomization.yaml", docs, d);
  ASSERT_EQ(docs.size(), 1u);
  const Json kustomization = doc::to_ordered_json(docs[0].root);
  std::vector<std::string> resources = kustomization["resources"];
  for (const char* file : {"mutatingwebhookconfiguration.yaml", "validatingwebhookconfiguration.yaml"}) {
    EXPECT_NE(std::find(resources.begin(), resources.end(), file), resources.end()) << file;
  }
}

}  // namespace
}  // namespace gpubank::policy
