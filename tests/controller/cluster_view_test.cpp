// The portal's views of a cluster (controller/cluster_view.hpp), pure: pools and groups from
// ledger positions, ClusterQueues as Kueue writes them (quantities as strings), Workload
// states and filters, and reclaims folded from the controller's audit steps.
#include "controller/cluster_view.hpp"

#include <gtest/gtest.h>

#include "support/paths.hpp"
#include "support/policy_fixture.hpp"

namespace gpubank::controller {
namespace {

using nlohmann::json;

policy::PolicySet view_examples() { return policy::load_policy_set({gpubank::testing::examples_dir() + "/policies"}); }

TEST(ClusterView, PoolsAndGroupsAreTheLedgersPositions) {
  bank::Position research{"h100-rdma-training", "research", 8, -1, 24, 12, 4, 0, 0, 10};
  bank::Position ads{"h100-rdma-training", "ads", 16, -1, 16, 4, 0, 4, 0, 0};
  const auto pools = pools_view(view_examples(), {research, ads});
  bool found = false;
  for (const auto& p : pools) {
    if (p["name"] != "h100-rdma-training") continue;
    found = true;
    EXPECT_EQ(p["guaranteed"], 24);
    EXPECT_EQ(p["used"], 16);
    EXPECT_EQ(p["free"], p["capacity"].get<std::int64_t>() - 16);
  }
  EXPECT_TRUE(found);
  for (const auto& g : groups_view(view_examples(), {research, ads})) {
    if (g["name"] != "research") continue;
    ASSERT_EQ(g["positions"].size(), 1U);
    EXPECT_EQ(g["positions"][0]["borrowed"], 4);
    EXPECT_EQ(g["positions"][0]["borrowable"], 10);
  }
  // No guardrails, no pools: nothing to show rather than a guess.
  EXPECT_TRUE(pools_view(policy::PolicySet{}, {research}).empty());
}

TEST(ClusterView, QueuesReadKueuesQuantitiesAndSkipForeignQueues) {
  const json ours = json::parse(R"({
    "metadata": {"name": "research-h100", "labels": {"platform.gpubank.dev/business-group": "research",
                                                     "platform.gpubank.dev/resource-pool": "h100-rdma-training"}},
    "spec": {"resourceGroups": [{"coveredResources": ["nvidia.com/gpu"], "flavors": [{"name": "h100",
             "resources": [{"name": "nvidia.com/gpu", "nominalQuota": "8", "borrowingLimit": 24, "lendingLimit": "1k"}]}]}]},
    "status": {"flavorsUsage": [{"name": "h100", "resources": [{"name": "nvidia.com/gpu", "total": "6"}]}],
               "pendingWorkloads": 2, "admittedWorkloads": 1}})");
  const json foreign = json::parse(R"({"metadata": {"name": "someone-elses"}, "spec": {}})");
  const auto queues = queues_view({foreign, ours});
  ASSERT_EQ(queues.size(), 1U);
  EXPECT_EQ(queues[0]["clusterQueue"], "research-h100");
  EXPECT_EQ(queues[0]["nominalQuota"], 8);
  EXPECT_EQ(queues[0]["borrowingLimit"], 24);
  EXPECT_TRUE(queues[0]["lendingLimit"].is_null());  // "1k" is not a GPU count
  EXPECT_EQ(queues[0]["used"], 6);
  EXPECT_EQ(queues[0]["pendingWorkloads"], 2);
}

TEST(ClusterView, WorkloadStatesAndFilters) {
  ClusterWorkload running;
  running.key = "research/a";
  running.group = "research";
  running.pool = "h100-rdma-training";
  running.admitted = true;
  running.gpus = 8;
  ClusterWorkload pending = running;
  pending.key = "research/b";
  pending.admitted = false;
  ClusterWorkload stopped = running;
  stopped.key = "ads/c";
  stopped.group = "ads";
  stopped.admitted = false;
  stopped.active = false;
  ClusterWorkload done = running;
  done.key = "ads/d";
  done.group = "ads";
  done.finished = true;
  EXPECT_EQ(workload_state(running), "Running");
  EXPECT_EQ(workload_state(pending), "Pending");
  EXPECT_EQ(workload_state(stopped), "Deactivated");
  EXPECT_EQ(workload_state(done), "Finished");
  const std::vector<ClusterWorkload> all{done, stopped, pending, running};
  EXPECT_EQ(workloads_view(all, {}).size(), 4U);
  EXPECT_EQ(workloads_view(all, {}).front()["workload"], "ads/c");  // sorted by key
  EXPECT_EQ(workloads_view(all, {"research", "", ""}).size(), 2U);
  EXPECT_EQ(workloads_view(all, {"", "", "Pending"}).size(), 1U);
  EXPECT_EQ(workloads_view(all, {"", "l40s-inference", ""}).size(), 0U);
}

bank::AuditEntry audit_step(std::int64_t seq, std::string action, std::string workload, std::string decision, json numbers) {
  bank::AuditEntry e;
  e.seq = seq;
  e.time_ms = 1'800'000'000'000 + seq * 60'000;
  e.actor = "gpubank-controller/a";
  e.action = std::move(action);
  e.object = "Workload/" + workload;
  e.decision = std::move(decision);
  e.numbers = numbers.dump();
  return e;
}

TEST(ClusterView, ReclaimsAreFoldedFromTheControllersSteps) {
  const json notice{{"gpus", 8}, {"lender", "ads"}, {"pool", "h100-rdma-training"}, {"deadlineMs", 1'800'000'900'000}};
  json stop = notice;
  stop["recomputeLossGpuHours"] = 1.5;
  ClusterWorkload victim;
  victim.key = "research/a";
  victim.group = "research";
  const std::vector<bank::AuditEntry> steps{
      audit_step(1, "ReclaimNoticeSent", "research/a", "CheckpointRequested", notice),
      audit_step(2, "ObjectConfigured", "research/a", "configured", json::object()),  // not a reclaim step
      audit_step(3, "ReclaimNoticeSent", "research/b", "GraceStarted", notice),
      audit_step(4, "ReclaimVictimStopped", "research/a", "CheckpointCompleted", stop),
      audit_step(5, "ReclaimCancelled", "search/z", "DemandGone", notice),  // no notice seen: left out
      audit_step(6, "ReclaimNoticeSent", "research/c", "CheckpointRequested", notice),
      audit_step(7, "ReclaimCancelled", "research/c", "DemandGone", notice),
  };
  const auto r = reclaims_view(steps, {victim}, 100);
  ASSERT_EQ(r.size(), 3U);
  // Newest first.
  EXPECT_EQ(r[0]["id"], "notice-6");
  EXPECT_EQ(r[0]["result"], "Cancelled");
  EXPECT_FALSE(r[0]["victims"][0]["released"].is_null());
  EXPECT_EQ(r[1]["id"], "notice-3");
  EXPECT_EQ(r[1]["result"], "InProgress");
  EXPECT_TRUE(r[1]["ended"].is_null());
  EXPECT_EQ(r[1]["victims"][0]["businessGroup"], "");  // gone from the cluster: no group known
  EXPECT_EQ(r[2]["id"], "notice-1");
  EXPECT_EQ(r[2]["result"], "Completed");
  EXPECT_EQ(r[2]["lender"], "ads");
  EXPECT_EQ(r[2]["demandGpus"], 8);
  EXPECT_EQ(r[2]["victims"][0]["businessGroup"], "research");
  EXPECT_EQ(r[2]["victims"][0]["class"], "Checkpointable");
  EXPECT_EQ(r[2]["victims"][0]["recomputeLossGpuHours"], 1.5);
  EXPECT_EQ(r[2]["victims"][0]["stopped"], r[2]["ended"]);
  EXPECT_EQ(reclaims_view(steps, {victim}, 1).size(), 1U);
}

}  // namespace
}  // namespace gpubank::controller
