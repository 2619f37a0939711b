// Quota numbers at the edges of the integer range: what renders is exact and, for a set
// that validates, non-negative and within the pool (issue 28: a borrowLimit of
// 2147483647 rendered a Volcano capability of -2147483641).
#include <gtest/gtest.h>

#include <climits>
#include <cstdint>
#include <set>
#include <string>

#include "policy/rules.hpp"
#include "render/consistency.hpp"
#include "render/engines_fixture.hpp"
#include "render/kueue.hpp"
#include "render/volcano.hpp"

namespace gpubank::render {
namespace {

using testing::guardrails_yaml;
using testing::manifest_at;
using testing::quota_yaml;

// Every number under a quota-like key of a rendered object, with where it is.
void quota_numbers(const Json& v, const std::string& path, std::vector<std::pair<std::string, std::int64_t>>& out) {
  static const std::set<std::string> keys{"nominalQuota", "borrowingLimit", "lendingLimit", "capability", "deserved",
                                          "guarantee"};
  if (v.is_object()) {
    for (const auto& [k, item] : v.items()) {
      const std::string at = path + "." + k;
      if (keys.contains(k)) {
        // A number, or {resource: number} (Volcano), or {resource: {resource: number}}.
        std::vector<const Json*> todo{&item};
        while (!todo.empty()) {
          const Json* x = todo.back();
          todo.pop_back();
          if (x->is_number_integer()) out.emplace_back(at, x->get<std::int64_t>());
          if (x->is_object()) {
            for (const auto& [_, y] : x->items()) todo.push_back(&y);
          }
        }
      }
      quota_numbers(item, at, out);
    }
  } else if (v.is_array()) {
    for (std::size_t i = 0; i < v.size(); ++i) quota_numbers(v[i], path + "[" + std::to_string(i) + "]", out);
  }
}

TEST(RenderLimits, TheIssuesBorrowLimitIsRefusedBeforeAnythingRenders) {
  const auto set = gpubank::testing::from_yaml(guardrails_yaml() +
                                               quota_yaml("qa", "a", "gpu", "  guaranteed: 8\n  borrowLimit: 2147483647\n"));
  for (const Backend backend : {Backend::Kueue, Backend::Volcano}) {
    const RenderResult r = render(set, {backend});
    EXPECT_FALSE(r.ok());
    EXPECT_TRUE(r.objects.empty());
    const Diagnostic* f = gpubank::testing::find_finding(r.diagnostics, policy::rule::kOutOfRange);
    ASSERT_NE(f, nullptr);
    EXPECT_EQ(f->path, "spec.borrowLimit");
  }
}

TEST(RenderLimits, RenderersComputeCapsIn64Bits) {
  // Built in code, past decoding's bound: the renderers alone must not wrap.
  policy::PolicySet set = gpubank::testing::from_yaml(guardrails_yaml() +
                                                      quota_yaml("qa", "a", "gpu", "  guaranteed: 8\n"));
  policy::PolicyObject q = *set.find(policy::Kind::GPUQuotaPolicy, "qa");
  std::get<policy::GPUQuotaPolicySpec>(q.spec).borrow_limit = INT32_MAX;
  set.upsert(std::move(q));
  for (const auto& o : render_kueue(set)) {
    if (o.path != "kueue/clusterqueue-a-gpu.yaml") continue;
    const Json& quota = o.manifest["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0];
    EXPECT_EQ(quota["nominalQuota"], 8);
    EXPECT_EQ(quota["borrowingLimit"], std::int64_t{INT32_MAX});
  }
  bool seen = false;
  for (const auto& o : render_volcano(set)) {
    if (o.path != "volcano/queue-a-gpu.yaml") continue;
    seen = true;
    EXPECT_EQ(o.manifest["spec"]["capability"]["nvidia.com/gpu"], std::int64_t{INT32_MAX} + 8);  // main: -2147483641
  }
  EXPECT_TRUE(seen);
}

TEST(RenderLimits, APlatformAtTheGpuBoundRendersExactNumbersWithinThePool) {
  // 1,000,000 GPUs (policy::kMaxGpus) in one pool; group b borrows up to all of it.
  const std::string pool = "  - {name: gpu, gpuModel: H100, capacity: 1000000, role: training, gpusPerNode: 8}\n";
  const std::string groups = "  - {name: a, costCenter: CC-1, limits: {gpu: {minGuaranteed: 0, maxCapacity: 1000000}}}\n"
                             "  - {name: b, costCenter: CC-2, limits: {gpu: {minGuaranteed: 0, maxCapacity: 1000000}}}\n";
  const auto set = gpubank::testing::from_yaml(
      guardrails_yaml(pool, "  - {name: batch, value: 100, workloadTypes: [batch, training]}\n", groups) +
      quota_yaml("qa", "a", "gpu", "  guaranteed: 600000\n  borrowLimit: 400000\n  lendingLimit: 1\n") +
      quota_yaml("qb", "b", "gpu", "  guaranteed: 400000\n  borrowLimit: 1000000\n  maxCapacity: 1000000\n"));
  for (const Backend backend : {Backend::Kueue, Backend::Volcano}) {
    const RenderResult r = render(set, {backend});
    ASSERT_TRUE(r.ok()) << (r.diagnostics.empty() ? "" : r.diagnostics[0].to_string());
    std::vector<std::pair<std::string, std::int64_t>> numbers;
    for (const auto& o : r.objects) quota_numbers(o.manifest, o.path, numbers);
    EXPECT_GE(numbers.size(), 4u);
    for (const auto& [where, n] : numbers) {
      EXPECT_GE(n, 0) << where;
      EXPECT_LE(n, 1000000) << where;
    }
  }
  const RenderResult kueue = render(set, {Backend::Kueue});
  const Json& qb = manifest_at(kueue, "kueue/clusterqueue-b-gpu.yaml")["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0];
  EXPECT_EQ(qb["borrowingLimit"], 600000);
  const ConsistencyReport report = check_consistency(set);
  ASSERT_EQ(report.groups.size(), 2u);
  EXPECT_EQ(report.groups[0].queue_reach, 1000000);  // a: 600000 + the 400000 b lends
  EXPECT_EQ(report.groups[1].queue_reach, 400001);   // b: 400000 + the 1 a lends
  ASSERT_EQ(report.pools.size(), 1u);
  EXPECT_EQ(report.pools[0].guaranteed, 1000000);
}

TEST(RenderLimits, AFloorOfAMillionReplicasIsPlacedInLinearTime) {
  // A million one-GPU nodes and a floor of a million one-GPU replicas: first fit scanned
  // the pool from its first node for every replica (10^12 steps, hours); now once.
  const std::string pool = "  - {name: serve, gpuModel: L40S, capacity: 1000000, role: inference, gpusPerNode: 1}\n";
  const std::string groups = "  - {name: a, costCenter: CC-1, limits: {serve: {minGuaranteed: 0, maxCapacity: 1000000}}}\n";
  const auto set = gpubank::testing::from_yaml(
      guardrails_yaml(pool, "  - {name: serving, value: 1000, workloadTypes: [inference], preemptible: false}\n", groups) +
      quota_yaml("qa", "a", "serve", "  guaranteed: 1000000\n") +
      "---\napiVersion: platform.gpubank.dev/v1alpha1\nkind: InferenceScalingPolicy\nmetadata: {name: chat}\nspec:\n"
      "  workloadRef: {kind: Deployment, name: chat, namespace: a}\n  businessGroup: a\n  resourcePool: serve\n"
      "  replicaShape: {tensorParallelSize: 1, gpuPerReplica: 1}\n  minReplicas: 1000000\n  maxReplicas: 1000000\n"
      "  scaleUp: {queueDepthPerReplica: 4}\n");
  ASSERT_FALSE(has_errors(policy::check_all(set)));
  const ConsistencyReport report = check_consistency(set);
  ASSERT_EQ(report.services.size(), 1u);
  EXPECT_EQ(report.services[0].pool_allows, 1000000);
  EXPECT_EQ(report.services[0].required, 1000000);
  EXPECT_TRUE(report.ok()) << report.to_text();
}

}  // namespace
}  // namespace gpubank::render
