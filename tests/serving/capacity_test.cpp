#include "serving/capacity.hpp"

#include <gtest/gtest.h>

namespace gpubank::serving {
namespace {

policy::ReplicaShape tp(int tensor_parallel, int gpus, int nodes = 1) {
  return policy::ReplicaShape{tensor_parallel, gpus, nodes};
}

ShapeRequest request(policy::ReplicaShape shape, int replicas = 1) {
  ShapeRequest r;
  r.service = "customer-service-llm";
  r.shape = shape;
  r.replicas = replicas;
  r.serving_floor_gpus = 4;
  r.burst_headroom_gpus = 4;
  return r;
}

NodeCapacity node(std::string name, int gpus, int free, int unhealthy = 0, int held = 0, std::string fabric = "") {
  return NodeCapacity{std::move(name), gpus, free, unhealthy, held, std::move(fabric)};
}

PoolCapacity pool(std::vector<NodeCapacity> nodes, QuotaView quota = {32, 48, 10, 0, 0}) {
  return PoolCapacity{"h100-inference", std::move(nodes), quota};
}

std::vector<std::string> nodes_of(const ShapeDecision& d) {
  std::vector<std::string> out;
  for (const auto& p : d.placements) {
    std::string joined;
    for (const auto& n : p.nodes) joined += (joined.empty() ? "" : "+") + n;
    out.push_back(joined);
  }
  return out;
}

// The issue's case: 3 GPUs free on each of two nodes, a TP=4 replica needs 4 on one.
TEST(CheckShape, ThreeFreeOnEachOfTwoNodesCannotFormATp4ReplicaAndNothingIsSplit) {
  const auto d = check_shape(request(tp(4, 4)), pool({node("node-a", 8, 3), node("node-b", 8, 3)}));
  EXPECT_EQ(d.outcome, ShapeOutcome::Blocked);
  EXPECT_EQ(d.reason, BlockedReason::Fragmented);
  EXPECT_TRUE(d.placements.empty());  // no half replica
  EXPECT_EQ(d.message,
            "customer-service-llm needs a TP=4 replica (4 GPUs on one node) in h100-inference: 6 GPUs are free but "
            "at most 3 on any node (node-a 3, node-b 3)");
  EXPECT_EQ(d.numbers["requested"], 4);
  EXPECT_EQ(d.numbers["free"], 6);  // 3 + 3
  EXPECT_EQ(d.numbers["largestFreeOnNode"], 3);
  EXPECT_EQ(d.numbers["quotaRemaining"], 38);  // 48 - 10
  EXPECT_EQ(d.numbers["replicasThatFit"], 0);
  // used 10 is beyond floor 4 + headroom 4: all 4 GPUs would be cold capacity
  EXPECT_EQ(d.numbers["headroomGpus"], 0);
  EXPECT_EQ(d.numbers["coldGpus"], 4);
  // The order the ScaleUpBlocked event keeps.
  EXPECT_EQ(d.numbers.dump(),
            R"({"requested":4,"replicas":1,"gpuPerReplica":4,"nodesPerReplica":1,"gpusPerNode":4,"free":6,)"
            R"("largestFreeOnNode":3,"unhealthy":0,"heldByBorrowers":0,"lent":0,"quotaRemaining":38,"cohortFree":0,)"
            R"("servingFloor":4,"burstHeadroom":4,"headroomGpus":0,"coldGpus":4,"replicasThatFit":0,)"
            R"("replicasAfterReclaim":0})");
}

TEST(CheckShape, FitsOnTheNodeWithTheFewestFreeGpusThatStillFits) {
  // node-c has 8 free, node-b 5, node-a 3: best fit is node-b (5 >= 4, fewer than 8).
  const auto d = check_shape(request(tp(4, 4)), pool({node("node-a", 8, 3), node("node-b", 8, 5), node("node-c", 8, 8)}));
  EXPECT_EQ(d.outcome, ShapeOutcome::Fits);
  EXPECT_EQ(nodes_of(d), std::vector<std::string>{"node-b"});
  EXPECT_EQ(d.message,
            "customer-service-llm: a TP=4 replica (4 GPUs on one node) fits in h100-inference on node-b "
            "(16 GPUs free, at most 8 on one node)");
}

TEST(CheckShape, TiesGoByNodeName) {
  const auto d = check_shape(request(tp(4, 4)), pool({node("node-z", 8, 4), node("node-m", 8, 4)}));
  EXPECT_EQ(nodes_of(d), std::vector<std::string>{"node-m"});
}

TEST(CheckShape, QuotaCapBlocksBeforeLookingAtNodes) {
  // 30 used of maxCapacity 32: 2 more allowed, 4 needed.
  const auto d = check_shape(request(tp(4, 4)), pool({node("node-a", 8, 8)}, QuotaView{32, 32, 30, 0, 0}));
  EXPECT_EQ(d.outcome, ShapeOutcome::Blocked);
  EXPECT_EQ(d.reason, BlockedReason::QuotaCap);
  EXPECT_EQ(d.message,
            "customer-service-llm needs a TP=4 replica (4 GPUs on one node) in h100-inference (4 GPUs) but its "
            "group's quota allows only 2 more (30 used of maxCapacity 32)");
  EXPECT_EQ(d.numbers["quotaRemaining"], 2);
}

TEST(CheckShape, LentGuaranteeHeldByBorrowersThatFormsTheShapeFitsAfterReclaim) {
  // node-a: 3 free + 2 held by borrowers; node-b: 3 free + 1 held. Free alone forms
  // nothing; with reclaim node-b needs 1, node-a 1: the least reclaim, then best fit
  // (node-b could give 4, node-a 5) -> node-b, 1 GPU to reclaim.
  const auto d = check_shape(request(tp(4, 4)), pool({node("node-a", 8, 3, 0, 2), node("node-b", 8, 3, 0, 1)},
                                                     QuotaView{32, 48, 10, 8, 0}));
  EXPECT_EQ(d.outcome, ShapeOutcome::FitsAfterReclaim);
  EXPECT_EQ(nodes_of(d), std::vector<std::string>{"node-b"});
  ASSERT_EQ(d.reclaim.size(), 1U);
  EXPECT_EQ(d.reclaim[0].node, "node-b");
  EXPECT_EQ(d.reclaim[0].gpus, 1);
  EXPECT_EQ(d.reclaim_gpus, 1);
  EXPECT_EQ(d.numbers["reclaim"], 1);
  EXPECT_EQ(d.message,
            "customer-service-llm needs a TP=4 replica (4 GPUs on one node) in h100-inference: 6 GPUs are free but "
            "at most 3 on any node (node-a 3, node-b 3); 1 GPU must first be reclaimed from borrowers (node-b 1) to "
            "place it on node-b; 8 GPUs of its guarantee are lent to borrowers");
}

TEST(CheckShape, LentOutWhenTheBorrowersGpusDoNotFormTheShapeEither) {
  // 1 free + 2 held on each node: at most 3 per node even after reclaim; 2 free < 4.
  const auto d = check_shape(request(tp(4, 4)), pool({node("node-a", 4, 1, 0, 2), node("node-b", 4, 1, 0, 2)},
                                                     QuotaView{32, 48, 10, 8, 0}));
  EXPECT_EQ(d.outcome, ShapeOutcome::Blocked);
  EXPECT_EQ(d.reason, BlockedReason::LentOut);
  EXPECT_EQ(d.message,
            "customer-service-llm needs a TP=4 replica (4 GPUs on one node) in h100-inference: only 2 GPUs are free "
            "(node-a 1, node-b 1); 8 GPUs of its guarantee are lent to borrowers, and the 4 GPUs they hold here "
            "(node-a 2, node-b 2) do not form the shape either");
  EXPECT_EQ(d.numbers["heldByBorrowers"], 4);
}

TEST(CheckShape, ReclaimNeverTakesMoreThanTheGroupLent) {
  // node-a: 2 free + 2 held would form 4, but only 1 GPU of the guarantee is lent.
  const auto d = check_shape(request(tp(4, 4)), pool({node("node-a", 4, 2, 0, 2)}, QuotaView{32, 48, 10, 1, 0}));
  EXPECT_EQ(d.reason, BlockedReason::LentOut);
  // Lent 2: now it can.
  const auto e = check_shape(request(tp(4, 4)), pool({node("node-a", 4, 2, 0, 2)}, QuotaView{32, 48, 10, 2, 0}));
  EXPECT_EQ(e.outcome, ShapeOutcome::FitsAfterReclaim);
  EXPECT_EQ(e.reclaim_gpus, 2);
}

TEST(CheckShape, InsufficientCapacityWhenTooFewFreeAndNothingLent) {
  const auto d = check_shape(request(tp(4, 4)), pool({node("node-a", 8, 2), node("node-b", 8, 0)}));
  EXPECT_EQ(d.reason, BlockedReason::InsufficientCapacity);
  EXPECT_EQ(d.message,
            "customer-service-llm needs a TP=4 replica (4 GPUs on one node) in h100-inference: only 2 GPUs are free "
            "(node-a 2), 4 needed, and nothing of its guarantee is lent to take back");
}

TEST(CheckShape, UnhealthyGpusAreNeverFreeAndAreNamed) {
  // node-a: 4 GPUs, 1 unhealthy, 3 free; node-b: 4 GPUs, 3 free. A shell reporting
  // node-c with 4 free of 4 but 2 unhealthy is clamped to 2 free.
  const auto d = check_shape(request(tp(4, 4)),
                             pool({node("node-a", 4, 3, 1), node("node-b", 4, 3), node("node-c", 4, 4, 2)}));
  EXPECT_EQ(d.reason, BlockedReason::Fragmented);
  EXPECT_EQ(d.numbers["free"], 8);  // 3 + 3 + 2
  EXPECT_EQ(d.numbers["unhealthy"], 3);
  EXPECT_EQ(d.message,
            "customer-service-llm needs a TP=4 replica (4 GPUs on one node) in h100-inference: 8 GPUs are free but "
            "at most 3 on any node (node-a 3, node-b 3, node-c 2); 3 GPUs are unhealthy");
}

TEST(CheckShape, MultiNodeReplicaNeedsNodesOfOneFabric) {
  // TP=8 over 2 nodes, 16 GPUs: 8 on each. fabric-a has one node with 8 free, fabric-b two.
  const auto shape = tp(8, 16, 2);
  const auto d = check_shape(request(shape), pool({node("n1", 8, 8, 0, 0, "fabric-a"), node("n2", 8, 8, 0, 0, "fabric-b"),
                                                   node("n3", 8, 8, 0, 0, "fabric-b"), node("n4", 8, 4, 0, 0, "fabric-a")}));
  EXPECT_EQ(d.outcome, ShapeOutcome::Fits);
  EXPECT_EQ(nodes_of(d), std::vector<std::string>{"n2+n3"});
  EXPECT_EQ(d.placements[0].gpus_per_node, 8);

  // Enough free GPUs on two nodes, but not on one fabric (n2 has none).
  const auto e = check_shape(request(shape), pool({node("n1", 8, 8, 0, 0, "fabric-a"), node("n2", 8, 8),
                                                   node("n3", 8, 8, 0, 0, "fabric-b")}));
  EXPECT_EQ(e.reason, BlockedReason::Fragmented);
  EXPECT_EQ(e.message,
            "customer-service-llm needs a TP=8 replica (16 GPUs: 8 on each of 2 nodes of one RDMA fabric) in "
            "h100-inference: 24 GPUs are free but no RDMA fabric has 2 nodes with 8 free each (n1 8, n2 8, n3 8)");
}

TEST(CheckShape, MultiNodePrefersTheFabricWithTheFewestFreeGpusOnItsChosenNodes) {
  // fabric-c's two nodes have 10 free each (20), fabric-a's 8 each (16): fabric-a.
  const auto d = check_shape(request(tp(8, 16, 2)),
                             pool({node("c1", 16, 10, 0, 0, "fabric-c"), node("c2", 16, 10, 0, 0, "fabric-c"),
                                   node("a1", 8, 8, 0, 0, "fabric-a"), node("a2", 8, 8, 0, 0, "fabric-a")}));
  EXPECT_EQ(nodes_of(d), std::vector<std::string>{"a1+a2"});
}

TEST(CheckShape, SeveralReplicasAreEachPlacedOnWhatThePreviousLeft) {
  // Free: a 8, b 4, c 6. Replica 1: best fit b (4) -> b 0. Replica 2: c (6) -> c 2.
  // Replica 3: a (8) -> a 4. Replica 4: a (4) -> a 0.
  const auto nodes = std::vector<NodeCapacity>{node("a", 8, 8), node("b", 4, 4), node("c", 8, 6)};
  const auto d = check_shape(request(tp(4, 4), 4), pool(nodes));
  EXPECT_EQ(d.outcome, ShapeOutcome::Fits);
  EXPECT_EQ(nodes_of(d), (std::vector<std::string>{"b", "c", "a", "a"}));
  EXPECT_EQ(d.message,
            "customer-service-llm: 4 TP=4 replicas (4 GPUs on one node each) fit in h100-inference on b, c, a, a "
            "(18 GPUs free, at most 8 on one node)");

  // Five: 20 GPUs asked, 18 free; four would fit, all or nothing.
  const auto e = check_shape(request(tp(4, 4), 5), pool(nodes));
  EXPECT_EQ(e.outcome, ShapeOutcome::Blocked);
  EXPECT_EQ(e.reason, BlockedReason::InsufficientCapacity);
  EXPECT_TRUE(e.placements.empty());
  EXPECT_EQ(e.numbers["replicasThatFit"], 4);
  EXPECT_EQ(e.message,
            "customer-service-llm needs 5 TP=4 replicas (4 GPUs on one node each) in h100-inference: only 18 GPUs "
            "are free (a 8, c 6, b 4), 20 needed, and nothing of its guarantee is lent to take back; only 4 of the 5 "
            "replicas would fit");
}

TEST(CheckShape, TwoReplicasOnFragmentedNodesFitOnlyOnce) {
  // a 5, b 3, c 3: replica 1 on a (a 1 left), replica 2 finds no node; 11 free >= 8.
  const auto d = check_shape(request(tp(4, 4), 2), pool({node("a", 8, 5), node("b", 8, 3), node("c", 8, 3)}));
  EXPECT_EQ(d.reason, BlockedReason::Fragmented);
  EXPECT_EQ(d.numbers["replicasThatFit"], 1);
}

TEST(CheckShape, HeadroomAndColdGpusSplitTheRequest) {
  // Floor 4 + headroom 4 = 8; 2 used: 6 GPUs of headroom left; 2 replicas = 8 GPUs:
  // 6 headroom, 2 cold.
  auto r = request(tp(4, 4), 2);
  const auto d = check_shape(r, pool({node("a", 8, 8)}, QuotaView{32, 48, 2, 0, 0}));
  EXPECT_EQ(d.outcome, ShapeOutcome::Fits);
  EXPECT_EQ(d.numbers["headroomGpus"], 6);
  EXPECT_EQ(d.numbers["coldGpus"], 2);
}

TEST(CheckShape, MalformedShapesAreBlockedNotPlaced) {
  EXPECT_EQ(check_shape(request(tp(4, 6, 4)), pool({node("a", 8, 8)})).reason, BlockedReason::InvalidShape);
  EXPECT_EQ(check_shape(request(tp(4, 4), 0), pool({node("a", 8, 8)})).reason, BlockedReason::InvalidShape);
  EXPECT_EQ(check_shape(request(tp(4, 0)), pool({node("a", 8, 8)})).reason, BlockedReason::InvalidShape);
}

}  // namespace
}  // namespace gpubank::serving
