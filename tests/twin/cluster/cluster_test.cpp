// Placement on the twin's cluster, rule by rule with the numbers worked out: filters
// (selector, taints and tolerations, model), best fit, one node per pod, gangs on one
// fabric, shared fractions, MIG slices, health, bind/release, fragmentation, and an
// index that always agrees with a plain scan of all nodes.
#include "twin/cluster/cluster.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <sstream>

#include "support/paths.hpp"
#include "twin/cluster/identity.hpp"

namespace gpubank::twin::cluster {
namespace {

using ::testing::ElementsAre;

Cluster make(std::string_view yaml) {
  Diagnostics d;
  auto inventory = parse_inventory(yaml, "inv.yaml", d);
  EXPECT_TRUE(inventory.has_value()) << (d.empty() ? "" : d.front().to_string());
  return Cluster(inventory.value_or(Inventory{}));
}

PlacementRequest whole(int gpus, int pods = 1) {
  PlacementRequest r;
  r.workload = "w";
  r.gpus_per_pod = gpus;
  r.pods = pods;
  return r;
}

PlacementRequest shared(int milli, int pods = 1) {
  PlacementRequest r = whole(1, pods);
  r.gpu_milli = milli;
  return r;
}

// Node names of a placement's pods, in pod order.
std::vector<std::string> nodes_of(const Cluster& c, const std::optional<Placement>& p) {
  std::vector<std::string> out;
  if (!p) return out;
  for (const auto& pod : p->pods) out.push_back(c.node(pod.node).name);
  return out;
}

// Finds and binds; the placement (empty when it does not fit).
std::optional<Placement> place(Cluster& c, const std::string& workload, PlacementRequest r) {
  r.workload = workload;
  auto p = c.find(r);
  if (p) {
    const auto bound = c.bind(workload, *p);
    EXPECT_TRUE(bound.ok()) << bound.error();
  }
  return p;
}

// ---- filters -------------------------------------------------------------------------------

TEST(Placement, NoScheduleAndNoExecuteTaintsMustBeTolerated) {
  Cluster c = make(R"(
kind: Inventory
nodes:
- {name: ns, gpuModel: H100, gpusPerNode: 8, gpuMemory: 80Gi, taints: [{key: pool, value: a, effect: NoSchedule}]}
- {name: ne, gpuModel: H100, gpusPerNode: 8, gpuMemory: 80Gi, taints: [{key: gpu, effect: NoExecute}]}
)");
  PlacementRequest r = whole(1);
  EXPECT_FALSE(c.find(r));
  EXPECT_EQ(c.explain(r).rejected_by_taint, 2);
  EXPECT_EQ(c.explain(r).message,
            "no node matches: of 2 nodes, 0 fail the node selector, 2 have a taint not tolerated, 0 have another GPU model");

  r.tolerations = {{"pool", TolerationOperator::Equal, "a", TaintEffect::NoSchedule}};
  EXPECT_THAT(nodes_of(c, c.find(r)), ElementsAre("ns"));
  r.tolerations = {{"pool", TolerationOperator::Equal, "b", std::nullopt}};  // wrong value
  EXPECT_FALSE(c.find(r));
  r.tolerations = {{"pool", TolerationOperator::Exists, "", std::nullopt}};  // any value
  EXPECT_THAT(nodes_of(c, c.find(r)), ElementsAre("ns"));
  r.tolerations = {{"pool", TolerationOperator::Exists, "", TaintEffect::NoExecute}};  // wrong effect
  EXPECT_FALSE(c.find(r));
  r.tolerations = {{"gpu", TolerationOperator::Equal, "", TaintEffect::NoExecute}};  // empty value equals ""
  EXPECT_THAT(nodes_of(c, c.find(r)), ElementsAre("ne"));
  r.tolerations = {{"", TolerationOperator::Exists, "", std::nullopt}};  // tolerates everything
  EXPECT_THAT(nodes_of(c, c.find(r)), ElementsAre("ns"));  // both fit 8 -> 7 left: node order
}

TEST(Placement, PreferNoScheduleIsUsedOnlyWhenNothingElseFits) {
  // Best fit alone would pick `pref` (4 free -> 2 left beats 8 -> 6 left).
  Cluster c = make(R"(
kind: Inventory
nodes:
- {name: pref, gpuModel: H100, gpusPerNode: 4, gpuMemory: 80Gi, taints: [{key: spare, effect: PreferNoSchedule}]}
- {name: plain, gpuModel: H100, gpusPerNode: 8, gpuMemory: 80Gi}
)");
  EXPECT_THAT(nodes_of(c, c.find(whole(2))), ElementsAre("plain"));
  PlacementRequest tolerant = whole(2);
  tolerant.tolerations = {{"spare", TolerationOperator::Exists, "", std::nullopt}};
  EXPECT_THAT(nodes_of(c, c.find(tolerant)), ElementsAre("pref"));
  ASSERT_TRUE(place(c, "fill", whole(8)));  // plain is full
  EXPECT_THAT(nodes_of(c, c.find(whole(2))), ElementsAre("pref"));
}

TEST(Placement, NodeSelectorAndModelFilter) {
  Cluster c = make(R"(
kind: Inventory
nodes:
- {name: a100, gpuModel: A100, gpusPerNode: 4, gpuMemory: 80Gi, labels: {pool: a}}
- {name: h100, gpuModel: H100, gpusPerNode: 8, gpuMemory: 80Gi, labels: {pool: b}}
)");
  PlacementRequest r = whole(1);
  r.node_selector = {{"pool", "b"}};
  EXPECT_THAT(nodes_of(c, c.find(r)), ElementsAre("h100"));
  r.node_selector = {{"pool", "c"}};
  EXPECT_FALSE(c.find(r));
  EXPECT_EQ(c.explain(r).rejected_by_selector, 2);

  PlacementRequest m = whole(1);
  m.gpu_models = {"H100"};
  EXPECT_THAT(nodes_of(c, c.find(m)), ElementsAre("h100"));
  m.gpu_models = {"V100M32", "A100"};
  EXPECT_THAT(nodes_of(c, c.find(m)), ElementsAre("a100"));
  m.gpu_models = {"V100M32"};
  EXPECT_FALSE(c.find(m));
  EXPECT_EQ(c.explain(m).rejected_by_model, 2);
}

// ---- whole devices ---------------------------------------------------------------------------

TEST(Placement, BestFitLeavesWholeNodesFreeAndTakesTheLowestFreeUnits) {
  Cluster c = make(R"(
kind: Inventory
nodes:
- {name: n0, gpuModel: H100, gpusPerNode: 8, gpuMemory: 80Gi}
- {name: n1, gpuModel: H100, gpusPerNode: 8, gpuMemory: 80Gi}
- {name: n2, gpuModel: H100, gpusPerNode: 4, gpuMemory: 80Gi}
)");
  // Units: n0 0..7, n1 8..15, n2 16..19. 5 GPUs: n2 (4) too small, n0 and n1 tie at 8 -> n0.
  auto p = place(c, "five", whole(5));
  ASSERT_TRUE(p);
  EXPECT_EQ(p->pods[0].node, 0U);
  EXPECT_THAT(p->pods[0].units, ElementsAre(0U, 1U, 2U, 3U, 4U));
  // 2 GPUs: n0 has 3 free (-> 1 left), n2 4 (-> 2), n1 8 (-> 6): n0, units 5 and 6.
  p = place(c, "two", whole(2));
  ASSERT_TRUE(p);
  EXPECT_EQ(c.node(p->pods[0].node).name, "n0");
  EXPECT_THAT(p->pods[0].units, ElementsAre(5U, 6U));
  // 4 GPUs: n0 has 1, n2 4 (-> 0 left), n1 8: n2.
  EXPECT_THAT(nodes_of(c, place(c, "four", whole(4))), ElementsAre("n2"));
  // Releasing "five" gives n0 6 free: 6 GPUs now best fit on n0 (6 -> 0) rather than n1.
  ASSERT_TRUE(c.release("five").ok());
  EXPECT_EQ(c.node_free(0), 6);
  p = c.find(whole(6));
  EXPECT_THAT(nodes_of(c, p), ElementsAre("n0"));
  EXPECT_THAT(p->pods[0].units, ElementsAre(0U, 1U, 2U, 3U, 4U, 7U));
}

TEST(Placement, APodNeedsAllItsGpusOnOneNode) {
  Cluster c = make(R"(
kind: Inventory
nodeGroups:
- {namePrefix: n, count: 2, gpuModel: H100, gpusPerNode: 4, gpuMemory: 80Gi, labels: {platform.gpubank.dev/pool: p}}
)");
  // x takes n-00 (4 and 4 free: node order); a second 1-GPU pod would best-fit onto n-00
  // too, so y is bound by hand on n-01: 3 + 3 free.
  ASSERT_TRUE(place(c, "x", whole(1)));
  ASSERT_TRUE(c.bind("y", Placement{{PodPlacement{1, {c.node_first_unit(1)}}}, 0}).ok());
  // 3 + 3 free: TP=4 does not fit.
  const PlacementRequest tp4 = whole(4);
  EXPECT_FALSE(c.find(tp4));
  const Explanation e = c.explain(tp4);
  EXPECT_FALSE(e.fits);
  EXPECT_EQ(e.nodes_matching, 2);
  EXPECT_EQ(e.most_free_on_one_node, 3);
  EXPECT_EQ(e.free_units, 6);
  EXPECT_EQ(e.message, "needs 4 GPUs on one node; 2 nodes match, the most free on one node is 3 (6 free in total)");
  // Both nodes' 3 free GPUs are stranded for a demand of TP=4 only; a 2-GPU demand uses them.
  const std::vector<PlacementRequest> pending{tp4};
  const FragmentationReport f = c.fragmentation(pending);
  EXPECT_EQ(f.pools.at("p").stranded, 6);
  EXPECT_EQ(f.pools.at("p").free, 6);
  EXPECT_EQ(f.pools.at("p").used, 2);
  const std::vector<PlacementRequest> mixed{tp4, whole(2)};
  EXPECT_EQ(c.fragmentation(mixed).pools.at("p").stranded, 0);
  EXPECT_EQ(c.fragmentation({}).pools.at("p").stranded, 0);  // no demand, nothing stranded
}

TEST(Placement, GangsGoOnOneFabricWithTheLeastLeftover) {
  // Fabric a: 3 nodes (24 GPUs), fabric b: 2 nodes (16). A 2x8 gang fits both; b is left
  // with 0 free against a's 8, so b, although a's nodes come first.
  Cluster c = make(R"(
kind: Inventory
nodeGroups:
- {namePrefix: a, count: 3, gpuModel: H100, gpusPerNode: 8, gpuMemory: 80Gi, fabric: rdma-a}
- {namePrefix: b, count: 2, gpuModel: H100, gpusPerNode: 8, gpuMemory: 80Gi, fabric: rdma-b}
)");
  EXPECT_THAT(nodes_of(c, place(c, "g1", whole(8, 2))), ElementsAre("b-00", "b-01"));
  // Next 2x8 gang: only fabric a is left (24 free -> 8 left).
  EXPECT_THAT(nodes_of(c, place(c, "g2", whole(8, 2))), ElementsAre("a-00", "a-01"));
  // Only a-02 is free: one node of fabric a cannot take 2 x 8.
  EXPECT_FALSE(c.find(whole(8, 2)));
  // g1 gone and b-01 held: a-02 (fabric a) and b-00 (fabric b) have 8 free each, 16 in
  // all, but on two fabrics.
  ASSERT_TRUE(c.release("g1").ok());
  ASSERT_TRUE(c.bind("hold-b01", Placement{{PodPlacement{4, {32, 33, 34, 35, 36, 37, 38, 39}}}, 0}).ok());
  const PlacementRequest gang = whole(8, 2);
  EXPECT_FALSE(c.find(gang));
  EXPECT_EQ(c.explain(gang).message,
            "needs 2 pods x 8 GPUs on one node without fabric or on one RDMA fabric; 5 nodes match, at most 1 of the "
            "pods fit together, the most free on one node is 8 (16 free in total)");
  // Released, b is whole again and takes the gang.
  ASSERT_TRUE(c.release("hold-b01").ok());
  EXPECT_THAT(nodes_of(c, c.find(gang)), ElementsAre("b-00", "b-01"));
}

TEST(Placement, GangsSpanningTwoFabricsAreRefused) {
  Cluster c = make(R"(
kind: Inventory
nodes:
- {name: a, gpuModel: H100, gpusPerNode: 8, gpuMemory: 80Gi, fabric: rdma-a}
- {name: b, gpuModel: H100, gpusPerNode: 8, gpuMemory: 80Gi, fabric: rdma-b}
)");
  EXPECT_FALSE(c.find(whole(8, 2)));     // 16 free, one per fabric
  EXPECT_THAT(nodes_of(c, c.find(whole(4, 2))), ElementsAre("a", "a"));  // fits within one node of a fabric
}

TEST(Placement, NodesWithoutFabricTakeAGangOnlyWhenItAllFitsOnOne) {
  Cluster c = make(R"(
kind: Inventory
nodeGroups:
- {namePrefix: solo, count: 2, gpuModel: H100, gpusPerNode: 8, gpuMemory: 80Gi}
)");
  const auto p = c.find(whole(4, 2));
  EXPECT_THAT(nodes_of(c, p), ElementsAre("solo-00", "solo-00"));
  EXPECT_THAT(p->pods[0].units, ElementsAre(0U, 1U, 2U, 3U));
  EXPECT_THAT(p->pods[1].units, ElementsAre(4U, 5U, 6U, 7U));
  EXPECT_FALSE(c.find(whole(8, 2)));  // 16 free on two nodes, but no fabric joins them
  // Fragmentation: a 2x8 gang could not use these nodes even empty: it is no demand on
  // them, and idle capacity without demand is not stranded.
  const std::vector<PlacementRequest> impossible{whole(8, 2)};
  EXPECT_EQ(c.fragmentation(impossible).total.stranded, 0);
  // One GPU used on each node: 7 + 7 free, a 2x4 gang needs 8 on one node: 14 stranded.
  ASSERT_TRUE(c.bind("x", Placement{{PodPlacement{0, {0}}}, 0}).ok());
  ASSERT_TRUE(c.bind("y", Placement{{PodPlacement{1, {8}}}, 0}).ok());
  const std::vector<PlacementRequest> pending{whole(4, 2)};
  EXPECT_FALSE(c.find(whole(4, 2)));
  EXPECT_EQ(c.fragmentation(pending).total.stranded, 14);
  EXPECT_EQ(c.fragmentation(pending).pools.at("").free, 14);
}

// ---- shared fractions ---------------------------------------------------------------------

TEST(Placement, SharedFractionsPackOntoTheFullestGpuThatFits) {
  Cluster c = make(R"(
kind: Inventory
nodes:
- {name: n, gpuModel: T4, gpusPerNode: 2, gpuMemory: 16Gi}
)");
  auto p = place(c, "a", shared(300));  // a free GPU: unit 0
  ASSERT_TRUE(p);
  EXPECT_EQ(p->gpu_milli, 300);
  EXPECT_THAT(p->pods[0].units, ElementsAre(0U));
  p = place(c, "b", shared(700));  // unit 0 has 700 left: exactly fits
  ASSERT_TRUE(p);
  EXPECT_THAT(p->pods[0].units, ElementsAre(0U));
  EXPECT_EQ(c.unit(0).used_milli, 1000);
  p = place(c, "c", shared(400));  // unit 0 is full: unit 1
  ASSERT_TRUE(p);
  EXPECT_THAT(p->pods[0].units, ElementsAre(1U));
  EXPECT_FALSE(c.find(whole(1)));  // both GPUs hold shared work
  EXPECT_THAT(c.workloads_on_unit(0), ElementsAre("a", "b"));
  EXPECT_EQ(c.pool_usage("").used_milli, 1400);
  // 700 does not fit unit 1 (600 left) and there is no free GPU.
  EXPECT_FALSE(c.find(shared(700)));
  EXPECT_EQ(c.explain(shared(700)).message,
            "needs 700 milli-GPU on one GPU for each of 1 pod; 1 node matches, the most left on one GPU is 600 milli, "
            "0 of the pods fit (0 free GPUs)");
  // Fragmentation: 600 milli left; a pending 700 cannot use it, a 500 could.
  std::vector<PlacementRequest> pending{shared(700)};
  EXPECT_EQ(c.fragmentation(pending).total.shared_milli_left, 600);
  EXPECT_EQ(c.fragmentation(pending).total.shared_milli_stranded, 600);
  pending.push_back(shared(500));
  EXPECT_EQ(c.fragmentation(pending).total.shared_milli_stranded, 0);
}

TEST(Placement, SharedWorkNeverLandsOnAWholeGpuAndPicksTheLeastRoom) {
  Cluster c = make(R"(
kind: Inventory
nodes:
- {name: n, gpuModel: T4, gpusPerNode: 4, gpuMemory: 16Gi}
)");
  ASSERT_TRUE(place(c, "whole", whole(1)));  // unit 0
  EXPECT_THAT(place(c, "s1", shared(400))->pods[0].units, ElementsAre(1U));  // a free GPU: 600 left on 1
  EXPECT_THAT(place(c, "s2", shared(900))->pods[0].units, ElementsAre(2U));  // 1 is too small: 100 left on 2
  EXPECT_THAT(place(c, "s3", shared(700))->pods[0].units, ElementsAre(3U));  // 300 left on 3
  // 250: units 1 (600 left) and 3 (300) have room; the least room that fits is unit 3.
  EXPECT_THAT(c.find(shared(250))->pods[0].units, ElementsAre(3U));
  EXPECT_THAT(c.find(shared(550))->pods[0].units, ElementsAre(1U));  // only unit 1
  EXPECT_FALSE(c.find(shared(650)));                                   // none, and no free GPU
  // Gangs of 300: unit 3 takes 1 (300), unit 1 takes 2 (600): 3 pods fit, 4 do not.
  EXPECT_FALSE(c.find(shared(300, 4)));
  const auto gang = c.find(shared(300, 3));
  ASSERT_TRUE(gang);
  std::vector<UnitId> units;
  for (const auto& pod : gang->pods) units.push_back(pod.units.front());
  EXPECT_THAT(units, ElementsAre(3U, 1U, 1U));
  ASSERT_TRUE(c.bind("gang", *gang).ok());
  EXPECT_EQ(c.unit(1).used_milli, 1000);
  EXPECT_EQ(c.unit(3).used_milli, 1000);
  // More than a unit's room is refused.
  const auto over = c.bind("over", Placement{{PodPlacement{0, {2}}}, 200});
  ASSERT_FALSE(over.ok());
  EXPECT_THAT(over.error(), ::testing::HasSubstr("has 100 milli left, 200 asked"));
}

// ---- MIG ----------------------------------------------------------------------------------

TEST(Placement, MigSlicesAreTheUnitsAndKeepTheirParentGpu) {
  Diagnostics d;
  auto inv = load_inventory(testing::examples_dir() + "/inventory/example.yaml", d);
  ASSERT_TRUE(inv.has_value());
  Cluster c(std::move(*inv));
  EXPECT_EQ(c.gpu_count(), 136U);
  EXPECT_EQ(c.unit_count(), 184U);
  PlacementRequest r = whole(2);
  r.node_selector = {{"platform.gpubank.dev/pool", "mig-or-shared-development"}};
  const auto p = place(c, "nb", r);
  ASSERT_TRUE(p);
  EXPECT_THAT(nodes_of(c, p), ElementsAre("a100-mig-dev"));
  const NodeId node = *c.find_node("a100-mig-dev");
  const UnitId first = c.node_first_unit(node);
  EXPECT_THAT(p->pods[0].units, ElementsAre(first, first + 1));
  const Unit& slice1 = c.unit(first + 1);
  EXPECT_EQ(slice1.slice, 1);
  EXPECT_EQ(slice1.uuid, mig_uuid("a100-mig-dev", 0, 1));
  const Gpu& parent = c.gpu(slice1.gpu);
  EXPECT_EQ(parent.uuid, gpu_uuid("a100-mig-dev", 0));
  EXPECT_EQ(parent.units, 7);
  EXPECT_THAT(c.workloads_on_gpu(slice1.gpu), ElementsAre("nb"));
  // 54 slices left on the node; 55 do not fit, 54 do.
  r.gpus_per_pod = 55;
  EXPECT_FALSE(c.find(r));
  r.gpus_per_pod = 54;
  EXPECT_TRUE(c.find(r));
  const PoolUsage u = c.pool_usage("mig-or-shared-development");
  EXPECT_EQ(u.units, 56);
  EXPECT_EQ(u.used, 2);
  EXPECT_EQ(u.free, 54);
  EXPECT_EQ(c.pool_usage("h100-rdma-training").units, 64);
  EXPECT_THAT(c.pool_names(), ElementsAre("h100-inference", "h100-rdma-training", "l40s-inference",
                                          "mig-or-shared-development"));
}

// ---- health -------------------------------------------------------------------------------

TEST(Health, AnUnhealthyGpuReturnsItsWorkloadsAndIsNeverChosen) {
  Cluster c = make(R"(
kind: Inventory
nodes:
- {name: n, gpuModel: T4, gpusPerNode: 2, gpuMemory: 16Gi}
- {name: m, gpuModel: A100, gpusPerNode: 1, gpuMemory: 80Gi, mig: {profile: 3g.40gb, slicesPerGpu: 2}}
)");
  ASSERT_TRUE(place(c, "w1", whole(1)).has_value());  // n and m both have 2 free: node order, unit 0
  EXPECT_EQ(c.unit(0).used_milli, 1000);
  ASSERT_TRUE(c.bind("w3", Placement{{PodPlacement{0, {1}}}, 200}).ok());
  ASSERT_TRUE(c.bind("w2", Placement{{PodPlacement{0, {1}}}, 300}).ok());
  const std::string uuid1 = gpu_uuid("n", 1);
  const auto hit = c.set_gpu_health(uuid1, false, 79);
  ASSERT_TRUE(hit.ok());
  EXPECT_THAT(*hit, ElementsAre("w2", "w3"));  // sorted
  EXPECT_EQ(c.gpu(1).xid_errors, 1);
  EXPECT_EQ(c.gpu(1).last_xid, 79);
  EXPECT_FALSE(c.gpu(1).healthy);
  ASSERT_TRUE(c.release("w2").ok());
  ASSERT_TRUE(c.release("w3").ok());
  PlacementRequest t4 = whole(1);
  t4.gpu_models = {"T4"};
  EXPECT_FALSE(c.find(t4));  // unit 0 is bound, unit 1 unhealthy
  EXPECT_FALSE(c.find([] { PlacementRequest r = shared(100); r.gpu_models = {"T4"}; return r; }()));
  EXPECT_EQ(c.explain(t4).message,
            "needs 1 GPU on one node; 1 node matches, the most free on one node is 0 (0 free in total, 1 unhealthy)");
  const auto bad_bind = c.bind("w4", Placement{{PodPlacement{0, {1}}}, 0});
  ASSERT_FALSE(bad_bind.ok());
  EXPECT_THAT(bad_bind.error(), ::testing::HasSubstr("is unhealthy"));
  PoolUsage u = c.pool_usage("");
  EXPECT_EQ(u.unhealthy, 1);
  EXPECT_EQ(u.free, 2);  // m's two slices
  // Healthy again (no XID this time): chosen again.
  ASSERT_TRUE(c.set_gpu_health(uuid1, true).ok());
  EXPECT_EQ(c.gpu(1).xid_errors, 1);
  EXPECT_THAT(c.find(t4)->pods[0].units, ElementsAre(1U));

  // A MIG slice's uuid marks that slice only; the GPU's uuid marks all its slices.
  // (m's slices are units 2 and 3.)
  ASSERT_TRUE(c.set_gpu_health(mig_uuid("m", 0, 1), false, 48).ok());
  EXPECT_TRUE(c.unit(2).healthy);
  EXPECT_FALSE(c.unit(3).healthy);
  EXPECT_FALSE(c.gpu(2).healthy);
  ASSERT_TRUE(c.set_gpu_health(gpu_uuid("m", 0), false, 48).ok());
  EXPECT_FALSE(c.unit(2).healthy);
  EXPECT_EQ(c.gpu(2).xid_errors, 2);
  EXPECT_FALSE(c.set_gpu_health("GPU-nope", false).ok());
}

// ---- bind / release -------------------------------------------------------------------------

TEST(Binding, ReleaseIsIdempotentAndRebindWorks) {
  Cluster c = make(R"(
kind: Inventory
nodes:
- {name: n, gpuModel: H100, gpusPerNode: 8, gpuMemory: 80Gi}
- {name: m, gpuModel: H100, gpusPerNode: 8, gpuMemory: 80Gi}
)");
  EXPECT_FALSE(c.release("ghost").ok());
  const auto p = c.find(whole(4));
  ASSERT_TRUE(p);
  ASSERT_TRUE(c.bind("w", *p).ok());
  EXPECT_FALSE(c.bind("w", *p).ok());  // already bound
  const auto taken = c.bind("v", *p);   // the same units again
  ASSERT_FALSE(taken.ok());
  EXPECT_THAT(taken.error(), ::testing::HasSubstr("is in use"));
  const auto wrong_node = c.bind("v", Placement{{PodPlacement{1, {0}}}, 0});
  ASSERT_FALSE(wrong_node.ok());
  EXPECT_THAT(wrong_node.error(), ::testing::HasSubstr("is on node n, not m"));
  EXPECT_FALSE(c.bind("v", Placement{{PodPlacement{1, {9, 9}}}, 0}).ok());  // a unit twice
  EXPECT_EQ(c.node_free(1), 8);  // nothing of the refused binds stayed
  ASSERT_NE(c.placement_of("w"), nullptr);
  EXPECT_EQ(*c.placement_of("w"), *p);
  ASSERT_TRUE(c.release("w").ok());
  ASSERT_TRUE(c.release("w").ok());  // again: nothing to do
  EXPECT_EQ(c.placement_of("w"), nullptr);
  EXPECT_EQ(c.node_free(0), 8);
  EXPECT_TRUE(c.workloads_on_unit(0).empty());
  ASSERT_TRUE(c.bind("w", *p).ok());  // rebind after release
  EXPECT_EQ(c.node_free(0), 4);
}

TEST(Binding, MalformedRequestsNeverFit) {
  Cluster c = make("kind: Inventory\nnodes: [{name: n, gpuModel: H100, gpusPerNode: 8, gpuMemory: 80Gi}]\n");
  EXPECT_FALSE(c.find(whole(0)));
  EXPECT_FALSE(c.find(whole(1, 0)));
  EXPECT_FALSE(c.find(shared(1000)));
  PlacementRequest two = shared(500);
  two.gpus_per_pod = 2;
  EXPECT_FALSE(c.find(two));
  EXPECT_TRUE(c.explain(two).invalid);
  EXPECT_EQ(c.explain(two).message, "a shared fraction (gpu_milli) needs 1 GPU per pod, got 2");
  EXPECT_FALSE(c.find(whole(9)));
  EXPECT_FALSE(c.find(whole(1, 100'000)));
}

// ---- scale and determinism -------------------------------------------------------------------

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

Inventory alibaba() {
  const std::string file = testing::shared_dir() + "/traces/alibaba-gpu-v2023/openb_node_list_gpu_node.csv";
  Diagnostics d;
  auto inv = alibaba_inventory(read(file), file, d);
  EXPECT_TRUE(inv.has_value());
  return inv.value_or(Inventory{});
}

// A seeded churn on the Alibaba inventory; the log of every decision.
std::string churn(Cluster& c, std::uint64_t seed, int steps, bool check_against_scan) {
  std::mt19937_64 rng(seed);
  const char* models[] = {"G2", "T4", "P100", "V100M16", "V100M32", "G3", "A10"};
  const int shapes[] = {1, 1, 1, 2, 4, 8};
  std::vector<std::string> bound;
  std::ostringstream log;
  int next = 0;
  for (int step = 0; step < steps; ++step) {
    if (!bound.empty() && rng() % 3 == 0) {
      const std::size_t k = rng() % bound.size();
      EXPECT_TRUE(c.release(bound[k]).ok());
      log << "release " << bound[k] << '\n';
      bound.erase(bound.begin() + static_cast<std::ptrdiff_t>(k));
      continue;
    }
    PlacementRequest r;
    r.workload = "p" + std::to_string(next++);
    const std::uint64_t roll = rng() % 10;
    if (roll < 3) {
      r.gpu_milli = 1 + static_cast<int>(rng() % 999);
    } else {
      r.gpus_per_pod = shapes[rng() % 6];
      if (roll == 9 && r.gpus_per_pod <= 4) r.pods = 2;  // a gang: one node (no fabric here)
    }
    if (rng() % 2 == 0) r.node_selector = {{"platform.gpubank.dev/pool", alibaba_pool_for_model(models[rng() % 7])}};
    const auto p = c.find(r);
    if (check_against_scan) {
      const auto selected = [&](NodeId n) {
        return r.node_selector.empty() || c.node(n).pool() == r.node_selector.begin()->second;
      };
      // The best-fit node by a plain scan: the fewest free units >= need, then node order.
      const int need = r.gpu_milli > 0 ? 1 : r.gpus_per_pod * r.pods;
      std::optional<NodeId> node;
      for (NodeId n = 0; n < c.node_count(); ++n) {
        if (!selected(n) || c.node_free(n) < need) continue;
        if (!node || c.node_free(n) < c.node_free(*node)) node = n;
      }
      std::optional<UnitId> unit;  // shared: the unit with the least room that fits
      if (r.gpu_milli > 0) {
        for (UnitId u = 0; u < c.unit_count(); ++u) {
          const Unit& x = c.unit(u);
          if (!selected(x.node) || !x.healthy || x.whole || x.used_milli == 0) continue;
          if (1000 - x.used_milli < r.gpu_milli) continue;
          if (!unit || x.used_milli > c.unit(*unit).used_milli) unit = u;
        }
      }
      if (r.gpu_milli > 0) {
        EXPECT_EQ(p.has_value(), unit.has_value() || node.has_value()) << r.workload;
        if (p && unit) {
          EXPECT_EQ(p->pods[0].units.front(), *unit) << r.workload;
        } else if (p && node) {  // no shared unit with room: a free one on the best-fit node
          EXPECT_EQ(p->pods[0].node, *node) << r.workload;
          EXPECT_EQ(c.unit(p->pods[0].units.front()).used_milli, 0) << r.workload;
        }
      } else {
        EXPECT_EQ(p.has_value(), node.has_value()) << r.workload;
        if (p && node) {
          EXPECT_EQ(p->pods[0].node, *node) << r.workload;
          EXPECT_EQ(p->pods.back().node, *node) << r.workload;
        }
      }
    }
    log << r.workload << ':';
    if (p) {
      for (const auto& pod : p->pods) {
        for (const UnitId u : pod.units) log << ' ' << u;
      }
      EXPECT_TRUE(c.bind(r.workload, *p).ok());
      bound.push_back(r.workload);
    }
    log << '\n';
  }
  return log.str();
}

TEST(Scale, AlibabaInventoryChurnAgreesWithAScanAndIsDeterministic) {
  Cluster a(alibaba());
  EXPECT_EQ(a.pool_usage("alibaba-g2").units, 4392);
  const std::string first = churn(a, 42, 4000, true);
  // Counters agree with a recount of the units.
  std::int64_t free = 0, used_milli = 0;
  for (UnitId u = 0; u < a.unit_count(); ++u) {
    const Unit& unit = a.unit(u);
    free += unit.healthy && unit.used_milli == 0 ? 1 : 0;
    used_milli += unit.used_milli;
  }
  std::int64_t pool_free = 0, pool_milli = 0;
  for (const auto& pool : a.pool_names()) {
    pool_free += a.pool_usage(pool).free;
    pool_milli += a.pool_usage(pool).used_milli;
  }
  EXPECT_EQ(pool_free, free);
  EXPECT_EQ(pool_milli, used_milli);
  Cluster b(alibaba());
  EXPECT_EQ(churn(b, 42, 4000, false), first);
}

}  // namespace
}  // namespace gpubank::twin::cluster
