// Rules at their boundaries (the valid side of each limit), and the rules the invalid
// examples cannot show: warnings, missing guardrails, and where findings are attributed.
#include "policy/validate.hpp"

#include <gtest/gtest.h>

#include "policy/rules.hpp"
#include "support/policy_fixture.hpp"

namespace gpubank::policy {
namespace {

using gpubank::testing::examples_plus;
using gpubank::testing::find_finding;
using gpubank::testing::findings_of;
using gpubank::testing::has_rule;
using gpubank::testing::rules_of;

constexpr const char* kHeader = "apiVersion: platform.gpubank.dev/v1alpha1\n";

std::string quota(const std::string& name, const std::string& spec) {
  return std::string(kHeader) + "kind: GPUQuotaPolicy\nmetadata: {name: " + name + "}\nspec: " + spec + "\n---\n";
}

TEST(Validate, QuotaAtEveryGuardrailBoundaryIsValid) {
  // customer-service may hold 0..8 on the MIG pool; lendingLimit may equal guaranteed.
  auto f = findings_of(examples_plus(quota(
      "cs-mig", "{businessGroup: customer-service, resourcePool: mig-or-shared-development, guaranteed: 8, "
                "lendingLimit: 8, maxCapacity: 8}")));
  EXPECT_TRUE(f.empty()) << f[0].to_string();
  f = findings_of(examples_plus(quota(
      "cs-mig", "{businessGroup: customer-service, resourcePool: mig-or-shared-development, guaranteed: 0, "
                "borrowLimit: 20, maxCapacity: 8}")));
  EXPECT_TRUE(f.empty()) << "a large borrowLimit is fine when maxCapacity caps it: " << f[0].to_string();
}

TEST(Validate, SumOfGuaranteesMayEqualThePoolButNotExceedIt) {
  // The L40S pool (16) holds customer-service 8; 8 more fill it exactly.
  std::string extra = R"(
apiVersion: platform.gpubank.dev/v1alpha1
kind: PlatformGuardrails
metadata: {name: platform}
spec: {platformAdmins: [user:x], pools: [{name: p, gpuModel: X, capacity: 16, role: training}],
       groups: [{name: a, costCenter: A, limits: {p: {minGuaranteed: 0, maxCapacity: 16}}},
                {name: b, costCenter: B, limits: {p: {minGuaranteed: 0, maxCapacity: 16}}}]}
---
)";
  auto ok = findings_of(gpubank::testing::from_yaml(
      extra + quota("qa", "{businessGroup: a, resourcePool: p, guaranteed: 8}") +
      quota("qb", "{businessGroup: b, resourcePool: p, guaranteed: 8}")));
  EXPECT_TRUE(ok.empty()) << ok[0].to_string();
  auto over = findings_of(gpubank::testing::from_yaml(
      extra + quota("qa", "{businessGroup: a, resourcePool: p, guaranteed: 8}") +
      quota("qb", "{businessGroup: b, resourcePool: p, guaranteed: 9}")));
  ASSERT_EQ(rules_of(over), std::vector<std::string>{"quota.sum-exceeds-pool"});
  EXPECT_EQ(over[0].name, "qb");  // the policy that tipped it over
  EXPECT_EQ(over[0].message, "guarantees on pool p add up to 17 (a 8 + b 9), above its capacity 16");
  EXPECT_EQ(over[0].path, "spec.guaranteed");
  EXPECT_EQ(over[0].pos.line, 17);
}

TEST(Validate, PoliciesWithoutGuardrailsAreReportedOnce) {
  auto f = findings_of(gpubank::testing::from_yaml(quota("q", "{businessGroup: a, resourcePool: p, guaranteed: 1}")));
  ASSERT_EQ(rules_of(f), std::vector<std::string>{"guardrails.missing"});
  EXPECT_TRUE(f[0].kind.empty());
}

TEST(Validate, PriceTableMismatchesAreWarnings) {
  auto f = findings_of(gpubank::testing::from_yaml(std::string(kHeader) + R"(kind: PlatformGuardrails
metadata: {name: platform}
spec:
  platformAdmins: [user:x]
  pools: [{name: p, gpuModel: H100, capacity: 8, role: training}]
  groups: [{name: a, costCenter: A}]
  gpuHourPrice: {B200: 6.0}
)"));
  ASSERT_EQ(f.size(), 2u);
  for (const auto& d : f) {
    EXPECT_EQ(d.rule, rule::kGuardrailsPriceModelMismatch);
    EXPECT_EQ(d.severity, Severity::Warning);
  }
  EXPECT_FALSE(has_errors(f));
}

TEST(Validate, ServingFloorAboveTheGuaranteeIsAWarning) {
  auto f = findings_of(examples_plus(std::string(kHeader) + R"(kind: InferenceScalingPolicy
metadata: {name: cs-big-floor}
spec:
  workloadRef: {kind: Deployment, name: chat, namespace: customer-service}
  businessGroup: customer-service
  resourcePool: h100-inference
  replicaShape: {tensorParallelSize: 4, gpuPerReplica: 4}
  minReplicas: 9
  maxReplicas: 10
  scaleUp: {queueDepthPerReplica: 8}
)"));
  ASSERT_EQ(rules_of(f), std::vector<std::string>{"inference.floor-above-guarantee"});
  EXPECT_EQ(f[0].severity, Severity::Warning);
}

TEST(Validate, MultiNodeReplicasFitWhenSplitEvenly) {
  const std::string base = std::string(kHeader) + R"(kind: InferenceScalingPolicy
metadata: {name: cs-multinode}
spec:
  workloadRef: {kind: Deployment, name: chat, namespace: customer-service}
  businessGroup: customer-service
  resourcePool: h100-inference
  replicaShape: {tensorParallelSize: 8, gpuPerReplica: 16, nodesPerReplica: NODES}
  minReplicas: 1
  maxReplicas: 2
  scaleUp: {queueDepthPerReplica: 8}
)";
  auto with = [&](const std::string& nodes) {
    std::string s = base;
    s.replace(s.find("NODES"), 5, nodes);
    return findings_of(examples_plus(s));
  };
  EXPECT_FALSE(has_errors(with("2")));
  auto uneven = with("3");
  ASSERT_TRUE(has_rule(uneven, rule::kInferenceShapeExceedsNode));
  EXPECT_NE(find_finding(uneven, rule::kInferenceShapeExceedsNode)->message.find("split evenly"), std::string::npos);
}

TEST(Validate, TidalFloorsAtTheEdgesOfTheRangeAreValid) {
  auto f = findings_of(examples_plus(std::string(kHeader) + R"(kind: TidalPolicy
metadata: {name: embeddings-tide}
spec:
  timezone: Europe/Berlin
  windows:
  - {name: day, start: "0 8 * * 1-5", end: "0 18 * * 1-5", inferenceReplicaFloor: {customer-service-embeddings: 8}}
  - {name: night, start: "0 18 * * 1-5", end: "0 8 * * 2-6", inferenceReplicaFloor: 1}
  targets: {inferencePolicies: [customer-service-embeddings], resourcePool: l40s-inference}
)"));
  EXPECT_TRUE(f.empty()) << f[0].to_string();
}

TEST(Validate, LeaseLengthIsMeasuredFromNowWhenItHasNoStart) {
  const std::string lease = std::string(kHeader) + R"(kind: CapacityLease
metadata: {name: l}
spec: {businessGroup: search, resourcePool: h100-rdma-training, type: TemporaryQuota, extraGuaranteed: 2,
       end: "2026-12-02T00:00:00Z", reason: r}
)";
  ValidationOptions at;
  at.now = *parse_rfc3339("2026-12-01T00:00:00Z");  // exactly 24h: allowed
  EXPECT_FALSE(has_errors(findings_of(examples_plus(lease), at)));
  at.now = *parse_rfc3339("2026-11-30T23:59:59Z");
  auto f = findings_of(examples_plus(lease), at);
  ASSERT_EQ(rules_of(f), std::vector<std::string>{"lease.too-long"});
  EXPECT_NE(f[0].message.find("24h1s"), std::string::npos) << f[0].message;
  // Without a time to measure from, the length is not judged.
  EXPECT_FALSE(has_errors(findings_of(examples_plus(lease))));
}

TEST(Validate, LeasesThatDoNotOverlapInTimeDoNotAddUp) {
  // Two 8-GPU temporary quotas on the full training pool, on different days.
  auto lease = [](const std::string& name, const std::string& group, const std::string& day) {
    return std::string(kHeader) + "kind: CapacityLease\nmetadata: {name: " + name + "}\nspec: {businessGroup: " +
           group + ", resourcePool: h100-rdma-training, type: TemporaryQuota, extraGuaranteed: 8, start: \"" + day +
           "T00:00:00Z\", end: \"" + day + "T12:00:00Z\", reason: r}\n---\n";
  };
  EXPECT_FALSE(has_errors(findings_of(examples_plus(lease("a", "search", "2026-12-20")))));
  auto f = findings_of(examples_plus(lease("a", "search", "2026-12-19")));
  EXPECT_TRUE(has_rule(f, rule::kLeaseExceedsPool));
}

TEST(Validate, WorkloadsWithAdmissionsOwnLabelValuesPass) {
  auto f = findings_of(examples_plus(R"(apiVersion: v1
kind: Pod
metadata:
  name: notebook
  namespace: research
  labels:
    platform.gpubank.dev/business-group: research
    platform.gpubank.dev/cost-center: CC-3001
    platform.gpubank.dev/workload-type: notebook
spec:
  priorityClassName: notebook
  containers: [{name: jupyter, image: jupyter}]
)"));
  EXPECT_TRUE(f.empty()) << f[0].to_string();
}

TEST(Validate, EveryFindingNamesARegisteredRule) {
  for (const auto& file : {"quota.sum-exceeds-pool", "tidal.windows-overlap", "labels.reserved"}) {
    const auto set = load_policy_set({gpubank::testing::examples_dir() + "/policies",
                                      gpubank::testing::examples_dir() + "/invalid/" + file + ".yaml"});
    for (const auto& d : findings_of(set)) EXPECT_NE(policy::find_rule(d.rule), nullptr) << d.rule;
  }
}

TEST(Validate, TheOverlapCacheChangesNothingButTheWork) {
  const auto set = load_policy_set({gpubank::testing::examples_dir() + "/policies",
                                    gpubank::testing::examples_dir() + "/invalid/tidal.windows-overlap.yaml"});
  const OverlapCache cache = OverlapCache::of(set);
  ValidationOptions with_cache;
  with_cache.overlaps = &cache;
  const auto plain = validate(set);
  const auto cached = validate(set, with_cache);
  ASSERT_EQ(plain.size(), cached.size());
  for (std::size_t i = 0; i < plain.size(); ++i) EXPECT_EQ(plain[i].to_string(), cached[i].to_string());
  EXPECT_TRUE(has_rule(cached, rule::kTidalWindowsOverlap));
}

TEST(Validate, IsDeterministic) {
  const auto set = load_policy_set({gpubank::testing::examples_dir() + "/policies",
                                    gpubank::testing::examples_dir() + "/invalid"});
  const auto a = findings_of(set);
  const auto b = findings_of(set);
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].to_string(), b[i].to_string());
  EXPECT_GT(a.size(), 60u);
}

}  // namespace
}  // namespace gpubank::policy
