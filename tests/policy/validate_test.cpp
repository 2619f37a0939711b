// Rules at their boundaries (the valid side of each limit), and the rules the invalid
// examples cannot show: warnings, missing guardrails, and where findings are attributed.
#include "policy/validate.hpp"

#include <gtest/gtest.h>

#include <climits>
#include <functional>

#include "policy/lease_approval.hpp"
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

TEST(Validate, AKvCacheSignalOnAnEmbedServiceIsAWarning) {
  // The examples' embeddings Deployment, with a KV watermark it can never reach.
  const std::string embed = std::string(kHeader) + R"(kind: InferenceScalingPolicy
metadata: {name: more-embeddings}
spec:
  workloadRef: {kind: Deployment, name: embeddings-b, namespace: customer-service}
  businessGroup: customer-service
  resourcePool: l40s-inference
  task: embed
  replicaShape: {tensorParallelSize: 1, gpuPerReplica: 1}
  minReplicas: 0
  maxReplicas: 1
  scaleUp: {ttftP95: 200ms, kvCacheHighWatermark: 85}
)";
  auto f = findings_of(examples_plus(embed));
  ASSERT_EQ(rules_of(f), std::vector<std::string>{"inference.kv-signal-on-embed"});
  EXPECT_EQ(f[0].severity, Severity::Warning);
  EXPECT_EQ(f[0].path, "spec.scaleUp.kvCacheHighWatermark");
  // The same signal on a generate service (the default task) is fine.
  std::string generate = embed;
  generate.replace(generate.find("  task: embed\n"), 14, "");
  EXPECT_TRUE(findings_of(examples_plus(generate)).empty());
}

TEST(Validate, ARequestRateAsTheOnlySignalIsAWarningAndItsTargetMustBePositive) {
  const std::string rate_only = std::string(kHeader) + R"(kind: InferenceScalingPolicy
metadata: {name: more-embeddings}
spec:
  workloadRef: {kind: Deployment, name: embeddings-b, namespace: customer-service}
  businessGroup: customer-service
  resourcePool: l40s-inference
  task: embed
  replicaShape: {tensorParallelSize: 1, gpuPerReplica: 1}
  minReplicas: 0
  maxReplicas: 1
  scaleUp: {requestsPerSecondPerReplica: 250.5}
)";
  auto f = findings_of(examples_plus(rate_only));
  ASSERT_EQ(rules_of(f), std::vector<std::string>{"inference.rate-signal-alone"});
  EXPECT_EQ(f[0].severity, Severity::Warning);
  EXPECT_EQ(f[0].path, "spec.scaleUp.requestsPerSecondPerReplica");
  // Beside a queue or latency signal, which sees an overload, it is fine.
  std::string with_latency = rate_only;
  with_latency.replace(with_latency.find("{requestsPerSecondPerReplica: 250.5}"), 36,
                       "{requestsPerSecondPerReplica: 250.5, ttftP95: 200ms}");
  EXPECT_TRUE(findings_of(examples_plus(with_latency)).empty());
  // Zero, negative, infinite and absurd targets are refused, naming the field.
  for (const std::string bad : {"0", "-3", ".inf", "1e7"}) {
    std::string text = rate_only;
    text.replace(text.find("250.5"), 5, bad);
    auto refused = findings_of(examples_plus(text));
    ASSERT_FALSE(refused.empty()) << bad;
    EXPECT_EQ(refused[0].severity, Severity::Error) << bad;
    EXPECT_NE(refused[0].path.find("requestsPerSecondPerReplica"), std::string::npos) << bad << ": " << refused[0].path;
  }
}

TEST(Validate, AWindowStartingInADstGapIsAWarningNamingTheMissingTime) {
  // Sunday 02:30 in New York: on 2024-03-10 clocks go from 02:00 to 03:00, so robfig's cron
  // (KEDA's) does not fire that Sunday and the window does not open.
  auto f = findings_of(examples_plus(std::string(kHeader) + R"(kind: TidalPolicy
metadata: {name: sunday-batch}
spec:
  timezone: America/New_York
  windows:
  - {name: night, start: "30 2 * * 0", end: "0 6 * * 0", trainingBorrowLimit: 8}
  targets: {trainingGroups: [search], resourcePool: h100-inference}
)"));
  ASSERT_EQ(rules_of(f), std::vector<std::string>{"tidal.start-in-dst-gap"});
  EXPECT_EQ(f[0].severity, Severity::Warning);
  EXPECT_EQ(f[0].path, "spec.windows[0].start");
  EXPECT_NE(f[0].message.find("2024-03-10 02:30"), std::string::npos) << f[0].message;
  // The same window at 03:30, or in a zone without DST (the examples' Asia/Shanghai): none.
  EXPECT_TRUE(findings_of(examples_plus(std::string(kHeader) + R"(kind: TidalPolicy
metadata: {name: sunday-batch}
spec:
  timezone: America/New_York
  windows:
  - {name: night, start: "30 3 * * 0", end: "0 6 * * 0", trainingBorrowLimit: 8}
  targets: {trainingGroups: [search], resourcePool: h100-inference}
)")).empty());
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

// ---- numbers at the edges of int32 ---------------------------------------------------

// The example set with one quota's spec changed in place: decoding bounds every count,
// so validation's own arithmetic is reached only by specs built in code (the twin's, the
// webhook's upserted objects).
PolicySet with_quota(const std::string& name, const std::function<void(GPUQuotaPolicySpec&)>& change) {
  PolicySet set = examples_plus();
  PolicyObject q = *set.find(Kind::GPUQuotaPolicy, name);
  change(std::get<GPUQuotaPolicySpec>(q.spec));
  set.upsert(std::move(q));
  return set;
}

TEST(ValidateNumbers, BorrowLimitAtInt32MaxIsAboveThePoolNotWrappedBelowIt) {
  // search-team-h100: guaranteed 32 on the 64-GPU training pool, guardrail cap 48. On
  // main, 32 + 2147483647 wrapped to a negative cap and passed every check.
  auto f = findings_of(with_quota("search-team-h100", [](GPUQuotaPolicySpec& q) {
    q.borrow_limit = INT32_MAX;
    q.max_capacity.reset();
  }));
  ASSERT_EQ(rules_of(f), std::vector<std::string>{"quota.borrow-limit-exceeds-pool"});
  EXPECT_EQ(f[0].path, "spec.borrowLimit");
  EXPECT_EQ(f[0].message,
            "borrowLimit 2147483647 is above the capacity 64 of pool h100-rdma-training: a group cannot borrow more "
            "GPUs than the pool has");
}

TEST(ValidateNumbers, AHugeBorrowLimitIsRejectedEvenUnderAMaxCapacity) {
  // maxCapacity 48 caps the queue; on main guaranteed + borrowLimit wrapped and made
  // maxCapacity look above it (quota.max-capacity-range) while the huge borrowLimit passed.
  auto f = findings_of(with_quota("search-team-h100", [](GPUQuotaPolicySpec& q) { q.borrow_limit = INT32_MAX; }));
  EXPECT_EQ(rules_of(f), std::vector<std::string>{"quota.borrow-limit-exceeds-pool"});
  // Up to the pool it is still the cap that wins (docs/policy-api.md).
  f = findings_of(with_quota("search-team-h100", [](GPUQuotaPolicySpec& q) { q.borrow_limit = 64; }));
  EXPECT_TRUE(f.empty()) << f[0].to_string();
}

TEST(ValidateNumbers, SumsNearInt32MaxAreExact) {
  // Without maxCapacity, guaranteed + borrowLimit = 2^31 + 15: above the guardrail, said
  // with the exact sum (main printed -2147483633 and let it pass).
  auto f = findings_of(with_quota("search-team-h100", [](GPUQuotaPolicySpec& q) {
    q.guaranteed = 48;
    q.borrow_limit = INT32_MAX - 32;
    q.max_capacity.reset();
    q.lending_limit.reset();
  }));
  EXPECT_TRUE(has_rule(f, rule::kQuotaBorrowLimitExceedsPool));
  // maxCapacity within guaranteed..guaranteed + borrowLimit, the sum past INT32_MAX.
  f = findings_of(with_quota("search-team-h100", [](GPUQuotaPolicySpec& q) {
    q.guaranteed = INT32_MAX;
    q.borrow_limit = INT32_MAX;
    q.max_capacity = INT32_MAX;
  }));
  EXPECT_FALSE(has_rule(f, rule::kQuotaMaxCapacityRange)) << f[0].to_string();
  EXPECT_TRUE(has_rule(f, rule::kQuotaGuaranteedOutsideGuardrail));
  const Diagnostic* sum = find_finding(f, rule::kQuotaSumExceedsPool);
  ASSERT_NE(sum, nullptr);
  // INT32_MAX plus ads' 16 and research's 8, in whatever order the set holds them.
  EXPECT_TRUE(sum->message.find("add up to 2147483647 ") != std::string::npos ||
              sum->message.find("add up to 2147483671 ") != std::string::npos)
      << sum->message;
}

TEST(ValidateNumbers, ALeaseOfInt32MaxGpusExceedsTheGroupCap) {
  PolicySet set = examples_plus();
  PolicyObject lease = *set.find(Kind::CapacityLease, "ads-holiday-retrain");
  std::get<CapacityLeaseSpec>(lease.spec).extra_guaranteed = INT32_MAX;  // ads holds 16: the sum wrapped on main
  set.upsert(std::move(lease));
  const auto f = findings_of(set);
  ASSERT_EQ(rules_of(f), std::vector<std::string>{"lease.exceeds-group-cap"});
  EXPECT_NE(f[0].message.find(" = 2147483663 is above"), std::string::npos) << f[0].message;
}

TEST(ValidateNumbers, ALeaseSpanningCenturiesIsTooLongNotOverflowed) {
  // 1700 to 2250: end - start does not fit int64 nanoseconds (UBSan traps on main).
  const std::string lease = std::string(kHeader) + R"(kind: CapacityLease
metadata: {name: l}
spec: {businessGroup: search, resourcePool: h100-rdma-training, type: Protection, selector: {matchLabels: {app: x}},
       start: "1700-01-01T00:00:00Z", end: "2250-01-01T00:00:00Z", reason: r}
)";
  const auto f = findings_of(examples_plus(lease));
  ASSERT_EQ(rules_of(f), std::vector<std::string>{"lease.too-long"});
  EXPECT_NE(f[0].message.find("more than 292 years"), std::string::npos) << f[0].message;
}

TEST(ValidateNumbers, GpuCountsAreBoundedWhenDecoded) {
  const auto decoded = [](const std::string& spec) {
    return findings_of(examples_plus(quota("cs-mig", "{businessGroup: customer-service, resourcePool: "
                                                     "mig-or-shared-development, " + spec + "}")));
  };
  // The issue's case: accepted on main, and rendered as a Volcano capability of -2147483641.
  auto f = decoded("guaranteed: 8, borrowLimit: 2147483647");
  ASSERT_EQ(rules_of(f), std::vector<std::string>{"schema.out-of-range"});
  EXPECT_EQ(f[0].path, "spec.borrowLimit");
  EXPECT_EQ(f[0].message, "must be between 0 and 1000000 (the most GPUs gpubank accounts for), got 2147483647");
  f = decoded("guaranteed: 0, borrowLimit: 1000001, maxCapacity: 8");
  EXPECT_EQ(rules_of(f), std::vector<std::string>{"schema.out-of-range"});
  f = decoded("guaranteed: 0, borrowLimit: 1000000, maxCapacity: 8");  // the bound itself decodes
  EXPECT_EQ(rules_of(f), std::vector<std::string>{"quota.borrow-limit-exceeds-pool"});
  EXPECT_EQ(f[0].message,
            "borrowLimit 1000000 is above the capacity 56 of pool mig-or-shared-development: a group cannot borrow "
            "more GPUs than the pool has");
  // Still int32 first: a value past it says so.
  f = decoded("guaranteed: 0, borrowLimit: 9223372036854775807");
  ASSERT_EQ(rules_of(f), std::vector<std::string>{"schema.out-of-range"});
}

// ---- lease approval -------------------------------------------------------------------

std::string approved_lease(const std::string& end, const std::string& status) {
  return std::string(kHeader) + R"(kind: CapacityLease
metadata: {name: l}
spec: {businessGroup: search, resourcePool: h100-rdma-training, type: TemporaryQuota, extraGuaranteed: 2,
       end: ")" + end + R"(", reason: r}
status: )" + status + "\n";
}

std::string hash_of_lease(const std::string& end) {
  PolicySet set = examples_plus(approved_lease(end, "{}"));
  return lease_spec_hash(set.find(Kind::CapacityLease, "l")->as<CapacityLeaseSpec>());
}

TEST(ValidateLease, AnApprovalHoldsForTheSpecItApproved) {
  const std::string hash = hash_of_lease("2026-12-02T00:00:00Z");
  EXPECT_EQ(hash.size(), std::string("sha256:").size() + 64);
  const std::string approval = "{approval: {approvedBy: \"user:pat\", specHash: \"" + hash + "\"}}";
  EXPECT_TRUE(findings_of(examples_plus(approved_lease("2026-12-02T00:00:00Z", approval))).empty());
  // The same approval on a changed spec (one hour longer) is void.
  const auto f = findings_of(examples_plus(approved_lease("2026-12-02T01:00:00Z", approval)));
  ASSERT_EQ(rules_of(f), std::vector<std::string>{"lease.approval-mismatch"});
  EXPECT_EQ(f[0].path, "status.approval.specHash");
  EXPECT_NE(f[0].message.find("the approval by user:pat was for another spec (" + hash), std::string::npos)
      << f[0].message;
  // An approval that does not say what it approved approves nothing.
  const auto bare = findings_of(examples_plus(approved_lease("2026-12-02T00:00:00Z", "{approval: {approvedBy: x}}")));
  ASSERT_EQ(rules_of(bare), std::vector<std::string>{"lease.approval-mismatch"});
  EXPECT_NE(bare[0].message.find("specHash is missing"), std::string::npos) << bare[0].message;
}

TEST(ValidateLease, TheSpecHashIgnoresSpellingButNotMeaning) {
  // The same end in another offset is the same spec; a second later is not.
  EXPECT_EQ(hash_of_lease("2026-12-02T00:00:00Z"), hash_of_lease("2026-12-02T08:00:00+08:00"));
  EXPECT_NE(hash_of_lease("2026-12-02T00:00:00Z"), hash_of_lease("2026-12-02T00:00:01Z"));
}

TEST(ValidateLease, ALeaseWithoutStartIsMeasuredFromItsApproval) {
  const std::string end = "2026-12-02T00:00:00Z";
  const std::string approval = "{approval: {approvedBy: \"user:pat\", specHash: \"" + hash_of_lease(end) +
                               "\", approvedAt: \"2026-11-30T00:00:00Z\"}}";
  ValidationOptions at;
  at.now = *parse_rfc3339("2026-12-01T12:00:00Z");  // 12h before the end, but approved 48h before it
  const auto f = findings_of(examples_plus(approved_lease(end, approval)), at);
  ASSERT_EQ(rules_of(f), std::vector<std::string>{"lease.too-long"});
  EXPECT_NE(f[0].message.find("48h from its approval"), std::string::npos) << f[0].message;
}

}  // namespace
}  // namespace gpubank::policy
