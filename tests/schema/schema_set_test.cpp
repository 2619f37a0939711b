// SchemaSet on the real thing: every upstream CRD in ../shared/crds loads, the Kueue
// objects in examples/kueue validate clean, broken Kueue objects fail with the API
// server's paths, CRD files that the API server would refuse are errors with positions,
// and the built-in PriorityClass and ConfigMap schemas and rules.
#include "schema/schema_set.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "document/loader.hpp"
#include "fixture.hpp"

namespace gpubank::schema {
namespace {

using testing::found;
using testing::object;
using testing::upstream;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(SchemaSet, LoadsEveryUpstreamCrdAndServedVersion) {
  const auto kinds = upstream().kinds();
  std::vector<std::string> names;
  for (const auto& k : kinds) names.push_back(k.api_version + " " + k.kind);
  const std::vector<std::string> expected = {
      "batch.volcano.sh/v1alpha1 Job",
      "keda.sh/v1alpha1 ScaledObject",
      "kueue.x-k8s.io/v1beta1 AdmissionCheck",
      "kueue.x-k8s.io/v1beta1 ClusterQueue",
      "kueue.x-k8s.io/v1beta1 Cohort",
      "kueue.x-k8s.io/v1beta1 LocalQueue",
      "kueue.x-k8s.io/v1beta1 ResourceFlavor",
      "kueue.x-k8s.io/v1beta1 Topology",
      "kueue.x-k8s.io/v1beta1 Workload",
      "kueue.x-k8s.io/v1beta1 WorkloadPriorityClass",
      "kueue.x-k8s.io/v1beta2 AdmissionCheck",
      "kueue.x-k8s.io/v1beta2 ClusterQueue",
      "kueue.x-k8s.io/v1beta2 Cohort",
      "kueue.x-k8s.io/v1beta2 LocalQueue",
      "kueue.x-k8s.io/v1beta2 ResourceFlavor",
      "kueue.x-k8s.io/v1beta2 Topology",
      "kueue.x-k8s.io/v1beta2 Workload",
      "kueue.x-k8s.io/v1beta2 WorkloadPriorityClass",
      "monitoring.coreos.com/v1 PodMonitor",
      "monitoring.coreos.com/v1 PrometheusRule",
      "monitoring.coreos.com/v1 ServiceMonitor",
      "scheduling.k8s.io/v1 PriorityClass",
      "scheduling.volcano.sh/v1beta1 PodGroup",
      "scheduling.volcano.sh/v1beta1 Queue",
      "serving.kserve.io/v1beta1 InferenceService",
      "v1 ConfigMap",
  };
  EXPECT_EQ(names, expected);
  for (const auto& k : kinds) {
    if (k.kind == "ClusterQueue" && k.api_version == "kueue.x-k8s.io/v1beta2") {
      EXPECT_FALSE(k.namespaced);
      EXPECT_EQ(k.cel_rules, 4u);  // spec, spec.flavorFungibility, spec.preemption, spec.resourceGroups[]
      EXPECT_THAT(k.source, HasSubstr("kueue.x-k8s.io_clusterqueues.yaml"));
    }
    if (k.kind == "LocalQueue") {
      EXPECT_TRUE(k.namespaced);
    }
  }
}

TEST(SchemaSet, TheKueueExamplesValidateClean) {
  std::vector<doc::Document> docs;
  Diagnostics diagnostics;
  doc::load_paths({gpubank::testing::examples_dir() + "/kueue"}, docs, diagnostics);
  ASSERT_TRUE(diagnostics.empty());
  ASSERT_EQ(docs.size(), 13u);
  std::size_t cel = 0;
  for (const auto& d : docs) {
    const Json o = doc::to_ordered_json(d.root);
    const Result r = upstream().validate(o);
    EXPECT_THAT(found(r), ElementsAre()) << d.file << " #" << d.index;
    cel += r.cel_rules_not_checked();
    if (o["kind"] == "ClusterQueue" && o["metadata"]["name"] == "search") {
      // spec, spec.preemption and one per resource group (2); flavorFungibility is absent.
      EXPECT_EQ(r.cel_rules_not_checked(), 4u);
      EXPECT_EQ(r.not_checked[0].path, "spec.preemption");
      EXPECT_EQ(r.not_checked[0].reason, "CEL is not evaluated");
    }
  }
  EXPECT_GT(cel, 4u);
}

TEST(SchemaSet, BrokenKueueObjectsFailWithTheApiServersPaths) {
  const Json cq = object(R"(
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: search}
spec:
  cohortName: Research_Team
  queueingStrategy: Sometimes
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: h100
      resources:
      - {name: nvidia.com/gpu, nominalQuota: 8x}
    - name: h100
      resources:
      - {name: nvidia.com/gpu, nominalQuota: 8, borrowLimit: 2}
)");
  const Result r = upstream().validate(cq);
  ASSERT_THAT(found(r), ElementsAre("spec.cohortName [pattern]", "spec.queueingStrategy [enum]",
                                    "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota [pattern]",
                                    "spec.resourceGroups[0].flavors[1].resources[0].borrowLimit [unknown-field]",
                                    "spec.resourceGroups[0].flavors[1] [x-kubernetes-list-type]"));
  EXPECT_EQ(r.violations[1].message,
            "Unsupported value: \"Sometimes\": supported values: \"StrictFIFO\", \"BestEffortFIFO\"");
  EXPECT_EQ(r.violations[3].message, "unknown field \"spec.resourceGroups[0].flavors[1].resources[0].borrowLimit\"");
  EXPECT_EQ(r.violations[4].message, "Duplicate value: {\"name\":\"h100\"}");
}

TEST(SchemaSet, UnknownKindsAndVersionsAreViolations) {
  const Result version = upstream().validate(object("{apiVersion: kueue.x-k8s.io/v1alpha1, kind: ClusterQueue, metadata: {name: a}}"));
  ASSERT_THAT(found(version), ElementsAre("apiVersion [unknown-kind]"));
  EXPECT_THAT(version.violations[0].message, HasSubstr("has schemas for kueue.x-k8s.io/v1beta1, kueue.x-k8s.io/v1beta2"));
  EXPECT_THAT(found(upstream().validate(object("{apiVersion: apps/v1, kind: Deployment, metadata: {name: a}}"))),
              ElementsAre("kind [unknown-kind]"));
  EXPECT_THAT(found(upstream().validate(object("{kind: ClusterQueue}"))), ElementsAre("apiVersion [required]"));
  EXPECT_THAT(found(upstream().validate(object("[1, 2]"))), ElementsAre(" [type]"));
}

TEST(SchemaSet, CrdsTheApiServerWouldRefuseAreErrorsWithPositions) {
  const std::string file = testing::write_temp("bad.yaml", R"(apiVersion: v1
kind: ConfigMap
metadata: {name: not-a-crd}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: things.example.dev}
spec:
  group: example.dev
  scope: Cluster
  names: {kind: Thing, plural: things}
  versions:
  - name: v1
    served: true
  - name: v2
    served: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            properties:
              name: {type: string, pattern: '(a)\1'}
              ref: {$ref: '#/definitions/x'}
              size: {type: integer, minimum: "1"}
  - name: v3
    served: false
)");
  SchemaSet set;
  Diagnostics diagnostics;
  EXPECT_EQ(set.load(file, diagnostics), 0u);
  std::vector<std::string> lines;
  for (const auto& d : diagnostics) lines.push_back(d.to_string());
  EXPECT_THAT(lines, ElementsAre(
      HasSubstr("bad.yaml:1:1: error: CustomResourceDefinition/not-a-crd: not an apiextensions.k8s.io/v1 "
                "CustomResourceDefinition (apiVersion v1, kind ConfigMap) [crd.not-a-crd]"),
      HasSubstr("bad.yaml:13:5: error: CustomResourceDefinition/things.example.dev: spec.versions[0].schema.openAPIV3Schema: "
                "served version v1 has no schema.openAPIV3Schema to validate against [crd.no-schema]"),
      HasSubstr("bad.yaml:23:45: error: CustomResourceDefinition/things.example.dev: "
                "spec.versions[1].schema.openAPIV3Schema.properties.spec.properties.name.pattern: not a valid RE2 "
                "regular expression: backreferences are not RE2 syntax [crd.invalid-schema]"),
      HasSubstr("bad.yaml:24:21: error: CustomResourceDefinition/things.example.dev: "
                "spec.versions[1].schema.openAPIV3Schema.properties.spec.properties.ref.$ref: $ref is forbidden in "
                "apiextensions.k8s.io/v1 schemas [crd.unsupported-keyword]"),
      HasSubstr("bad.yaml:24:20: error: CustomResourceDefinition/things.example.dev: "
                "spec.versions[1].schema.openAPIV3Schema.properties.spec.properties.ref: a structural schema needs a "
                "type here (unless x-kubernetes-int-or-string or x-kubernetes-preserve-unknown-fields is true) "
                "[crd.not-structural]"),
      HasSubstr("bad.yaml:25:46: error: CustomResourceDefinition/things.example.dev: "
                "spec.versions[1].schema.openAPIV3Schema.properties.spec.properties.size.minimum: must be a number, not "
                "a string [crd.invalid-schema]"),
      HasSubstr("bad.yaml:22:13: error: CustomResourceDefinition/things.example.dev: "
                "spec.versions[1].schema.openAPIV3Schema.properties.spec: a structural schema needs a type here")));
  EXPECT_FALSE(set.contains("example.dev/v2", "Thing"));
}

TEST(SchemaSet, AKindLoadedTwiceIsAnError) {
  const std::string crd = R"(apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: things.example.dev}
spec:
  group: example.dev
  scope: Namespaced
  names: {kind: Thing, plural: things}
  versions:
  - {name: v1, served: true, schema: {openAPIV3Schema: {type: object}}}
)";
  SchemaSet set;
  Diagnostics diagnostics;
  EXPECT_EQ(set.load(testing::write_temp("a.yaml", crd), diagnostics), 1u);
  EXPECT_EQ(set.load(testing::write_temp("b.yaml", crd), diagnostics), 0u);
  ASSERT_EQ(diagnostics.size(), 1u);
  EXPECT_EQ(diagnostics[0].rule, kRuleDuplicateCrd);
  EXPECT_THAT(diagnostics[0].message, HasSubstr("example.dev/v1 Thing is already defined by "));
  EXPECT_THAT(diagnostics[0].message, HasSubstr("a.yaml"));
}

// x-kubernetes-list-map-keys must name scalar properties of the items that every item has
// (required, or defaulted): the API server refuses the CRD otherwise. Every upstream CRD
// keeps to it (412 keys in ../shared/crds), as LoadsEveryUpstreamCrdAndServedVersion shows.
TEST(SchemaSet, ListMapKeysMustBeRequiredOrDefaultedScalars) {
  const std::string crd = R"(apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: things.example.dev}
spec:
  group: example.dev
  scope: Cluster
  names: {kind: Thing, plural: things}
  versions:
  - name: v1
    served: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          good:
            type: array
            x-kubernetes-list-type: map
            x-kubernetes-list-map-keys: [name, protocol]
            items:
              type: object
              required: [name]
              properties: {name: {type: string}, protocol: {type: string, default: TCP}}
          optional:
            type: array
            x-kubernetes-list-type: map
            x-kubernetes-list-map-keys: [name]
            items: {type: object, properties: {name: {type: string}}}
          missing:
            type: array
            x-kubernetes-list-type: map
            x-kubernetes-list-map-keys: [id]
            items: {type: object, required: [name], properties: {name: {type: string}}}
          nested:
            type: array
            x-kubernetes-list-type: map
            x-kubernetes-list-map-keys: [ref]
            items: {type: object, required: [ref], properties: {ref: {type: object}}}
)";
  SchemaSet set;
  Diagnostics diagnostics;
  set.load(testing::write_temp("keys.yaml", crd), diagnostics);
  std::vector<std::string> lines;
  for (const auto& d : diagnostics) lines.push_back(d.path + ": " + d.message + " [" + d.rule + "]");
  const std::string at = "spec.versions[0].schema.openAPIV3Schema.properties.";
  EXPECT_THAT(lines, ElementsAre(at + "optional.x-kubernetes-list-map-keys: map key \"name\": this property is in "
                                      "x-kubernetes-list-map-keys, so it must have a default or be a required "
                                      "property [crd.invalid-schema]",
                                 at + "missing.x-kubernetes-list-map-keys: map key \"id\" is not a property of the "
                                      "items [crd.invalid-schema]",
                                 at + "nested.x-kubernetes-list-map-keys: map key \"ref\" must be a scalar "
                                      "[crd.invalid-schema]"));
}

TEST(SchemaSet, PriorityClassFollowsTheApiReferenceAndItsValidation) {
  const SchemaSet set;
  EXPECT_THAT(found(set.validate(object(R"(
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: gpubank-training-high, labels: {app.kubernetes.io/managed-by: gpubank}}
value: 1000
globalDefault: false
description: training that may not be preempted
preemptionPolicy: Never
)"))),
              ElementsAre());
  const Result r = set.validate(object(R"(
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: Too_Big}
value: 3000000000
preemptionPolicy: Sometimes
weight: 2
)"));
  ASSERT_THAT(found(r), ElementsAre("value [format]", "preemptionPolicy [enum]", "weight [unknown-field]",
                                    "metadata.name [name]", "value [priorityclass.value]"));
  EXPECT_EQ(r.violations[0].message, "Invalid value: 3000000000: must be of type integer with format int32");
  EXPECT_EQ(r.violations[4].message, "Forbidden: maximum allowed value of a user defined priority is 1000000000");
  EXPECT_THAT(found(set.validate(object("{apiVersion: scheduling.k8s.io/v1, kind: PriorityClass, metadata: {name: p}}"))),
              ElementsAre("value [required]"));
  EXPECT_THAT(found(set.validate(object(
                  "{apiVersion: scheduling.k8s.io/v1, kind: PriorityClass, metadata: {name: system-gpu}, value: 5}"))),
              ElementsAre("metadata.name [priorityclass.reserved-name]"));
  EXPECT_THAT(found(set.validate(object("{apiVersion: scheduling.k8s.io/v1, kind: PriorityClass, "
                                        "metadata: {name: system-cluster-critical}, value: 2000000000}"))),
              ElementsAre());
}

TEST(SchemaSet, ConfigMapFollowsTheApiReferenceAndItsValidation) {
  const SchemaSet set;
  EXPECT_THAT(found(set.validate(object(R"(
apiVersion: v1
kind: ConfigMap
metadata: {name: gpubank-dashboards, namespace: monitoring}
data: {gpu-noc.json: "{}"}
binaryData: {logo.png: iVBORw0KGgo=}
immutable: true
)"))),
              ElementsAre());
  const Result r = set.validate(object(R"(
apiVersion: v1
kind: ConfigMap
metadata: {name: cm, namespace: Monitoring}
data: {"bad key": x, count: 3, ..hidden: y, same: z}
binaryData: {same: "not base64!"}
)"));
  EXPECT_THAT(found(r), ElementsAre("data[count] [type]", "binaryData[same] [format]", "metadata.namespace [namespace]",
                                    "data[bad key] [configmap.key]", "data[..hidden] [configmap.key]",
                                    "binaryData[same] [configmap.duplicate-key]"));
  const Json big = object("{apiVersion: v1, kind: ConfigMap, metadata: {name: big}, data: {a: x}}");
  Json huge = big;
  huge["data"]["a"] = std::string(1024 * 1024 + 1, 'x');
  EXPECT_THAT(found(set.validate(huge)), ElementsAre(" [configmap.size]"));
}

TEST(SchemaSet, ValidationIsDeterministic) {
  const Json cq = object(R"(
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: BAD, labels: {"a b": "c d"}}
spec: {resourceGroups: [{coveredResources: [cpu, cpu], flavors: []}], extra: 1}
)");
  const Result a = upstream().validate(cq);
  const Result b = upstream().validate(cq);
  EXPECT_EQ(a.violations, b.violations);
  EXPECT_FALSE(a.violations.empty());
}

}  // namespace
}  // namespace gpubank::schema
