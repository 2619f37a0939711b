#include "policy/decode.hpp"

#include <gtest/gtest.h>

#include <fstream>

#include "document/yaml_writer.hpp"
#include "policy/rules.hpp"
#include "support/policy_fixture.hpp"

namespace gpubank::policy {
namespace {

using gpubank::testing::examples_dir;
using gpubank::testing::from_yaml;
using gpubank::testing::has_rule;

TEST(PolicyDecode, EveryExampleRoundTripsThroughItsCanonicalEncoding) {
  const PolicySet original = load_policy_set({examples_dir() + "/policies"});
  ASSERT_TRUE(original.diagnostics().empty());
  for (const auto& p : original.policies()) {
    const doc::Json encoded = encode_policy(p);
    // Through YAML text and back: the canonical form decodes to the same canonical form.
    const PolicySet again = from_yaml(doc::to_yaml(encoded));
    ASSERT_TRUE(again.diagnostics().empty()) << again.diagnostics()[0].to_string();
    ASSERT_EQ(again.policies().size(), 1u);
    EXPECT_EQ(encode_policy(again.policies()[0]).dump(), encoded.dump()) << p.ref();
  }
}

TEST(PolicyDecode, CanonicalFormFillsDefaults) {
  const PolicySet set = from_yaml(R"(
apiVersion: platform.gpubank.dev/v1alpha1
kind: GPUQuotaPolicy
metadata: {name: q}
spec: {businessGroup: search, resourcePool: pool, guaranteed: 4}
)");
  ASSERT_EQ(set.policies().size(), 1u);
  EXPECT_EQ(encode_policy(set.policies()[0]).dump(),
            R"({"apiVersion":"platform.gpubank.dev/v1alpha1","kind":"GPUQuotaPolicy","metadata":{"name":"q"},)"
            R"("spec":{"businessGroup":"search","resourcePool":"pool","guaranteed":4,"borrowLimit":0,"fairShareWeight":1.0}})");
}

TEST(PolicyDecode, JsonFilesDecodeWithLinesAndColumns) {
  const std::string path = ::testing::TempDir() + "/quota.json";
  std::ofstream(path) << R"({
  "apiVersion": "platform.gpubank.dev/v1alpha1",
  "kind": "GPUQuotaPolicy",
  "metadata": {"name": "q"},
  "spec": {"businessGroup": "search", "resourcePool": "pool", "guaranteed": "8"}
})";
  const PolicySet set = load_policy_set({path});
  ASSERT_EQ(set.diagnostics().size(), 1u);
  const Diagnostic& d = set.diagnostics()[0];
  EXPECT_EQ(d.rule, rule::kWrongType);
  EXPECT_EQ(d.file, path);
  EXPECT_EQ(d.pos, (SourcePos{5, 77}));
  EXPECT_EQ(d.kind, "GPUQuotaPolicy");
  EXPECT_EQ(d.name, "q");
  EXPECT_EQ(d.path, "spec.guaranteed");
}

TEST(PolicyDecode, ReadsKubernetesListsAndKeepsStatus) {
  const PolicySet set = from_yaml(R"(
apiVersion: v1
kind: List
items:
- apiVersion: platform.gpubank.dev/v1alpha1
  kind: CapacityLease
  metadata: {name: l, uid: 0b6c, resourceVersion: "42", creationTimestamp: "2026-11-30T00:00:00Z"}
  spec: {businessGroup: ads, resourcePool: p, type: TemporaryQuota, extraGuaranteed: 2, end: "2026-12-01T00:00:00Z", reason: r}
  status: {phase: Approved, approvedBy: alice}
)");
  ASSERT_TRUE(set.diagnostics().empty()) << set.diagnostics()[0].to_string();
  ASSERT_EQ(set.policies().size(), 1u);
  EXPECT_EQ(set.policies()[0].status["approvedBy"], "alice");
  EXPECT_EQ(encode_policy(set.policies()[0])["status"]["phase"], "Approved");
}

TEST(PolicyDecode, ReportsUnknownKindsAndVersions) {
  const PolicySet set = from_yaml(R"(
apiVersion: platform.gpubank.dev/v1alpha1
kind: QuotaPolicy
metadata: {name: a}
spec: {}
---
apiVersion: platform.gpubank.dev/v2
kind: GPUQuotaPolicy
metadata: {name: b}
spec: {}
---
apiVersion: platfrom.gpubank.dev/v1alpha1
kind: GPUQuotaPolicy
metadata: {name: c}
spec: {}
)");
  ASSERT_EQ(set.diagnostics().size(), 3u);
  for (const auto& d : set.diagnostics()) EXPECT_EQ(d.rule, rule::kUnknownKind) << d.to_string();
  EXPECT_NE(set.diagnostics()[0].message.find("supported kinds are PlatformGuardrails"), std::string::npos);
  EXPECT_EQ(set.diagnostics()[1].path, "apiVersion");
}

TEST(PolicyDecode, ClassifiesWorkloadsAndSkipsOtherObjects) {
  const PolicySet set = from_yaml(R"(
apiVersion: v1
kind: ConfigMap
metadata: {name: cm, namespace: search}
data: {a: b}
---
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: search}
spec: {containers: [{name: c, image: i}]}
---
- not an object
)");
  ASSERT_EQ(set.entries().size(), 3u);
  EXPECT_EQ(set.entries()[0].category, ObjectEntry::Category::Skipped);
  EXPECT_EQ(set.entries()[1].category, ObjectEntry::Category::Workload);
  EXPECT_EQ(set.entries()[2].category, ObjectEntry::Category::Rejected);
  ASSERT_EQ(set.workloads().size(), 1u);
  EXPECT_EQ(set.workloads()[0]->namespace_, "search");
  EXPECT_TRUE(has_rule(set.diagnostics(), rule::kWrongType));
}

TEST(PolicyDecode, WarnsAboutANamespaceOnAClusterScopedPolicy) {
  const PolicySet set = from_yaml(R"(
apiVersion: platform.gpubank.dev/v1alpha1
kind: GPUQuotaPolicy
metadata: {name: q, namespace: search}
spec: {businessGroup: search, resourcePool: pool, guaranteed: 4}
)");
  ASSERT_EQ(set.policies().size(), 1u);
  ASSERT_EQ(set.diagnostics().size(), 1u);
  EXPECT_EQ(set.diagnostics()[0].severity, Severity::Warning);
  EXPECT_EQ(set.diagnostics()[0].rule, rule::kIgnoredField);
}

TEST(PolicyDecode, CollectsEveryErrorOfAFile) {
  const PolicySet set = from_yaml(R"(
apiVersion: platform.gpubank.dev/v1alpha1
kind: InferenceScalingPolicy
metadata: {name: svc}
spec:
  workloadRef: {kind: StatefulSet, name: x, namespace: ns}
  businessGroup: cs
  resourcePool: p
  replicaShape: {tensorParallelSize: 0, gpuPerReplica: 4, extra: 1}
  minReplicas: one
  scaleUp: {ttftP95: 1500, kvCacheHighWatermark: 101}
---
apiVersion: platform.gpubank.dev/v1alpha1
kind: TidalPolicy
metadata: {name: t}
spec:
  timezone: Europe/Atlantis
  windows: [{name: w, start: "0 25 * * *", end: "@every 1h"}]
  targets: {resourcePool: p}
)");
  std::vector<std::string> got;
  for (const auto& d : set.diagnostics()) got.push_back(d.name + " " + d.path + " " + d.rule);
  EXPECT_EQ(got, (std::vector<std::string>{
                     "svc spec.workloadRef.kind schema.invalid-enum",
                     "svc spec.replicaShape.tensorParallelSize schema.out-of-range",
                     "svc spec.replicaShape.extra schema.unknown-field",
                     "svc spec.minReplicas schema.wrong-type",
                     "svc spec.maxReplicas schema.required",
                     "svc spec.scaleUp.ttftP95 schema.wrong-type",
                     "svc spec.scaleUp.kvCacheHighWatermark schema.out-of-range",
                     "t spec.timezone timezone.unknown",
                     "t spec.windows[0].start cron.invalid",
                     "t spec.windows[0].end cron.invalid",
                 }));
  for (const auto& d : set.diagnostics()) EXPECT_GT(d.pos.line, 0) << d.to_string();
  EXPECT_TRUE(set.policies().empty());
}

TEST(PolicyDecode, ReplicaFloorIsAnIntegerOrAMap) {
  const PolicySet set = from_yaml(R"(
apiVersion: platform.gpubank.dev/v1alpha1
kind: TidalPolicy
metadata: {name: t}
spec:
  timezone: UTC
  windows:
  - {name: a, start: "0 8 * * *", end: "0 12 * * *", inferenceReplicaFloor: 3}
  - {name: b, start: "0 13 * * *", end: "0 18 * * *", inferenceReplicaFloor: {svc: 2, other: 1}}
  - {name: c, start: "0 19 * * *", end: "0 20 * * *", inferenceReplicaFloor: [1]}
  targets: {inferencePolicies: [svc, other], resourcePool: p}
)");
  ASSERT_EQ(set.diagnostics().size(), 1u);
  EXPECT_EQ(set.diagnostics()[0].path, "spec.windows[2].inferenceReplicaFloor");
  EXPECT_EQ(set.diagnostics()[0].rule, rule::kWrongType);
}

}  // namespace
}  // namespace gpubank::policy
