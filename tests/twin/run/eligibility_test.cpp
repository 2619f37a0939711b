// Who may be a victim, and who may borrow what, case by case: a protected type's default
// priority class, `preemptible: false`, and reclaimPolicy.onlyPreempt (docs/bank.md).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/policy_fixture.hpp"
#include "twin/run/engine.hpp"

namespace gpubank::twin::run {
namespace {

constexpr std::int64_t kMinute = 60'000;

// One 24-GPU pool. a guarantees 16 and reclaims gracefully; it lends only to checkpointable
// work. c guarantees 8 and lends to anyone. b guarantees nothing and borrows up to 24.
// `pinned` is a training class nothing may take back.
constexpr std::string_view kPolicies = R"(
apiVersion: platform.gpubank.dev/v1alpha1
kind: PlatformGuardrails
metadata: {name: platform}
spec:
  platformAdmins: [group:platform]
  pools:
  - {name: train, gpuModel: H100, capacity: 24, role: training, gpusPerNode: 8}
  groups:
  - {name: a, costCenter: CC-1, admins: [group:a], namespaces: [a], limits: {train: {minGuaranteed: 0, maxCapacity: 24}}}
  - {name: b, costCenter: CC-2, admins: [group:b], namespaces: [b], limits: {train: {minGuaranteed: 0, maxCapacity: 24}}}
  - {name: c, costCenter: CC-3, admins: [group:c], namespaces: [c], limits: {train: {minGuaranteed: 0, maxCapacity: 24}}}
  priorities:
  - {name: serving-low, value: 2000, workloadTypes: [inference]}
  - {name: serving, value: 100000, workloadTypes: [inference], preemptible: false}
  - {name: pinned, value: 1000, workloadTypes: [training], preemptible: false}
  - {name: standard, value: 1000, workloadTypes: [training, batch]}
  - {name: urgent, value: 5000, workloadTypes: [batch]}
  protectedWorkloadTypes: [inference]
---
apiVersion: platform.gpubank.dev/v1alpha1
kind: GPUQuotaPolicy
metadata: {name: a-train}
spec: {businessGroup: a, resourcePool: train, guaranteed: 16, borrowLimit: 8, reclaimPolicy: {gracePeriod: 10m, onlyPreempt: [checkpointable]}}
---
apiVersion: platform.gpubank.dev/v1alpha1
kind: GPUQuotaPolicy
metadata: {name: b-train}
spec: {businessGroup: b, resourcePool: train, guaranteed: 0, borrowLimit: 24}
---
apiVersion: platform.gpubank.dev/v1alpha1
kind: GPUQuotaPolicy
metadata: {name: c-train}
spec: {businessGroup: c, resourcePool: train, guaranteed: 8, borrowLimit: 16, reclaimPolicy: {gracePeriod: 5m}}
)";

struct Ran {
  policy::PolicySet policies;
  RunResult result;
};

Ran run_yaml(std::string_view workloads, std::string_view policies = kPolicies, VirtualTime until = 24 * 60 * kMinute) {
  Ran r{testing::from_yaml(policies), {}};
  const Diagnostics checks = policy::validate(r.policies);
  EXPECT_FALSE(has_errors(checks)) << (checks.empty() ? "" : checks.front().to_string());
  Diagnostics diagnostics;
  const auto scenario = parse_scenario(workloads, "scenario.yaml", diagnostics);
  EXPECT_TRUE(scenario.has_value()) << (diagnostics.empty() ? "" : diagnostics.front().to_string());
  if (!scenario) return r;
  RunOptions options;
  options.until = until;
  r.result = run_scenario(r.policies, *scenario, options);
  return r;
}

std::vector<const Event*> events(const RunResult& r, std::string_view kind, std::string_view object = {}) {
  std::vector<const Event*> out;
  for (const auto& e : r.events) {
    if (e.kind == kind && (object.empty() || e.object == object)) out.push_back(&e);
  }
  return out;
}

std::vector<std::string> victims(const RunResult& r) {
  std::vector<std::string> out;
  for (const auto& rc : r.reclaims) {
    for (const auto& v : rc.victims) out.push_back(v.workload);
  }
  return out;
}

TEST(VictimEligibility, InferenceWithoutAPriorityClassGetsItsTypesHighestAndIsNotPreemptedInItsQueue) {
  // c's 8 GPUs: its inference service (no class) runs; then its batch job (urgent, 5000)
  // arrives while a uses the rest of the pool. Without a default the service would have
  // priority 0 (with serving-low, 2000) and Kueue's withinClusterQueue: LowerPriority
  // would evict it for the batch job.
  const Ran r = run_yaml(R"(
workloads:
- {name: chat, businessGroup: c, resourcePool: train, gpus: 8, workloadType: inference, runTime: 10h}
- {name: sweep, businessGroup: c, resourcePool: train, gpus: 8, workloadType: batch, priorityClass: urgent,
   arrivalTime: 1m, runTime: 1h}
- {name: fill-a, businessGroup: a, resourcePool: train, gpus: 8, pods: 2, workloadType: training, priorityClass: standard,
   arrivalTime: 30s, runTime: 10h}
)");
  ASSERT_TRUE(r.result.ok()) << r.result.diagnostics.front().to_string();
  EXPECT_TRUE(events(r.result, "Preempted", "Workload/c/chat").empty());
  EXPECT_TRUE(events(r.result, "Preempted").empty());
  // The default is `serving` (100000, the highest inference class), not `serving-low`.
  const auto admitted = events(r.result, "Admitted", "Workload/c/sweep");
  ASSERT_EQ(admitted.size(), 1u);
  EXPECT_EQ(admitted.front()->t, 10 * 60 * kMinute) << "the batch job waits until the service is done";
}

TEST(VictimEligibility, AProtectedTypeWithNoClassForItsGroupIsRefusedOnEntry) {
  std::string policies(kPolicies);
  const std::string serving_low = "  - {name: serving-low, value: 2000, workloadTypes: [inference]}\n";
  const std::string serving = "  - {name: serving, value: 100000, workloadTypes: [inference], preemptible: false}\n";
  policies.replace(policies.find(serving_low), serving_low.size(), "");
  policies.replace(policies.find(serving), serving.size(), "");
  const Ran r = run_yaml(R"(
workloads:
- {name: chat, businessGroup: c, resourcePool: train, gpus: 8, workloadType: inference, runTime: 10h}
)",
                    policies);
  ASSERT_FALSE(r.result.ok());
  EXPECT_EQ(r.result.diagnostics.front().path, "workloads[0].priorityClass");
  EXPECT_NE(r.result.diagnostics.front().message.find("inference workloads are protected and need a priority class"),
            std::string::npos)
      << r.result.diagnostics.front().message;
}

TEST(VictimEligibility, ANonPreemptibleClassIsNeverAGracefulReclaimVictim) {
  // a runs its whole guarantee. b borrows c's 8 idle GPUs twice: a short job of class
  // pinned (the cheapest victim by class: short and retryable) and a long standard one.
  // c's own job at 5m takes 4 back: the long one yields.
  const Ran r = run_yaml(R"(
workloads:
- {name: fill, businessGroup: a, resourcePool: train, gpus: 8, pods: 2, workloadType: training, priorityClass: standard,
   runTime: 10h}
- {name: pinned-short, businessGroup: b, resourcePool: train, gpus: 4, workloadType: training, priorityClass: pinned,
   arrivalTime: 1s, runTime: 20m}
- {name: long, businessGroup: b, resourcePool: train, gpus: 4, workloadType: training, priorityClass: standard,
   arrivalTime: 2s, runTime: 10h}
- {name: own, businessGroup: c, resourcePool: train, gpus: 4, workloadType: training, priorityClass: standard,
   arrivalTime: 5m, runTime: 1h}
)");
  ASSERT_TRUE(r.result.ok()) << r.result.diagnostics.front().to_string();
  EXPECT_EQ(victims(r.result), std::vector<std::string>{"b/long"});
  EXPECT_TRUE(events(r.result, "ReclaimNoticeSent", "Workload/b/pinned-short").empty());
}

TEST(VictimEligibility, OnlyPreemptKeepsWorkWithoutTheTraitsOffTheLendersGpus) {
  // b borrows: a plain job first (c lends it 8), a second plain job (only a has idle GPUs,
  // and a lends only to checkpointable work: refused, requeued), a checkpointable job
  // (a lends it 8). When a needs its guarantee, the checkpointable job yields.
  const Ran r = run_yaml(R"(
workloads:
- {name: plain-1, businessGroup: b, resourcePool: train, gpus: 8, workloadType: training, priorityClass: standard, runTime: 10h}
- {name: plain-2, businessGroup: b, resourcePool: train, gpus: 8, workloadType: training, priorityClass: standard,
   arrivalTime: 1s, runTime: 10h}
- {name: ckpt, businessGroup: b, resourcePool: train, gpus: 8, workloadType: training, priorityClass: standard,
   checkpointable: true, checkpointInterval: 10m, checkpointDuration: 1m, arrivalTime: 2s, runTime: 10h}
- {name: a-1, businessGroup: a, resourcePool: train, gpus: 8, pods: 2, workloadType: training, priorityClass: standard,
   arrivalTime: 1h, runTime: 1h}
)",
                    kPolicies, 3 * 60 * kMinute);
  ASSERT_TRUE(r.result.ok()) << r.result.diagnostics.front().to_string();
  const auto refused = events(r.result, "BorrowRefused", "Workload/b/plain-2");
  ASSERT_FALSE(refused.empty());
  EXPECT_EQ(refused.front()->reason, "OnlyPreempt");
  EXPECT_EQ(refused.front()->t, 1000);
  for (const auto& e : r.result.ledger) {
    if (e.kind == bank::LedgerKind::BorrowOpened && e.lender == "a") {
      EXPECT_EQ(e.workload, "b/ckpt") << "a lends only to checkpointable work";
    }
  }
  EXPECT_EQ(victims(r.result), std::vector<std::string>{"b/ckpt"});
  // Refused again after each backoff while nobody else lends: never admitted onto a's GPUs.
  EXPECT_GE(refused.size(), 2u);
  EXPECT_TRUE(events(r.result, "Admitted", "Workload/b/plain-2").empty());
}

}  // namespace
}  // namespace gpubank::twin::run
