// The admission core against Kueue's documented behaviour, with the numbers worked out.
#include "twin/admission/core.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>

namespace gpubank::twin {
namespace {

ResourceQuota quota(std::string resource, Amount nominal, std::optional<Amount> borrowing = std::nullopt,
                    std::optional<Amount> lending = std::nullopt) {
  return ResourceQuota{std::move(resource), nominal, borrowing, lending};
}

ClusterQueueSpec queue(std::string name, std::string cohort, std::vector<ResourceQuota> quotas,
                       std::string flavor = "default") {
  ClusterQueueSpec q;
  q.name = std::move(name);
  q.cohort = std::move(cohort);
  ResourceGroup g;
  for (const auto& r : quotas) g.covered_resources.push_back(r.resource);
  g.flavors.push_back(FlavorQuotas{std::move(flavor), std::move(quotas)});
  q.resource_groups.push_back(std::move(g));
  return q;
}

WorkloadSpec workload(std::string name, std::string cq, Amount gpus, std::int32_t priority = 0, VirtualTime created = 0) {
  WorkloadSpec w;
  w.ns = "default";
  w.name = name;
  w.uid = "uid-" + name;
  w.cluster_queue = std::move(cq);
  w.priority = priority;
  w.creation = created;
  w.pod_sets.push_back(PodSetSpec{"main", 1, {{"nvidia.com/gpu", gpus}}, {}, {}, {}, -1, {}});
  return w;
}

std::unique_ptr<AdmissionCore> make(std::vector<ClusterQueueSpec> queues, std::vector<CohortSpec> cohorts = {},
                                    CoreOptions options = {}) {
  auto core = AdmissionCore::create(options, {ResourceFlavorSpec{"default", {}, {}, {}}, ResourceFlavorSpec{"spot", {}, {}, {}}},
                                    std::move(cohorts), std::move(queues));
  EXPECT_TRUE(core.ok()) << (core.ok() ? "" : core.error());
  return std::move(core).value();
}

const Condition* condition(const WorkloadStatus& s, const std::string& type) {
  for (const auto& c : s.conditions) {
    if (c.type == type) return &c;
  }
  return nullptr;
}

bool admitted(const AdmissionCore& core, WorkloadId id) { return core.status(id).phase == WorkloadPhase::Admitted; }

// A workload asking for CPUs (millicores) instead of GPUs.
WorkloadSpec cpu_workload(std::string name, std::string cq, Amount millicores, std::int32_t priority = 0,
                          VirtualTime created = 0) {
  WorkloadSpec w = workload(std::move(name), std::move(cq), 0, priority, created);
  w.pod_sets.front().requests = {{"cpu", millicores}};
  return w;
}

void expect_condition(const WorkloadStatus& s, const std::string& type, bool status, const std::string& reason,
                      const std::string& message, VirtualTime at) {
  const Condition* c = condition(s, type);
  ASSERT_NE(c, nullptr) << type;
  EXPECT_EQ(c->status, status) << type;
  EXPECT_EQ(c->reason, reason) << type;
  EXPECT_EQ(c->message, message) << type;
  EXPECT_EQ(c->last_transition, at) << type;
}


Amount potential(const AdmissionCore& core, const std::string& node) {
  return core.figures(node, "default", "nvidia.com/gpu")->potential_available;
}

// kueue-semantics.md worked check: nominal 9 and 12 in a flat cohort.
TEST(QuotaTree, FlatCohortBorrowingAndLendingLimits) {
  {
    auto core = make({queue("a", "c", {quota("nvidia.com/gpu", 9)}), queue("b", "c", {quota("nvidia.com/gpu", 12)})});
    EXPECT_EQ(potential(*core, "a"), 21);
    EXPECT_EQ(potential(*core, "b"), 21);
  }
  {
    auto core = make({queue("a", "c", {quota("nvidia.com/gpu", 9, 1)}), queue("b", "c", {quota("nvidia.com/gpu", 12)})});
    EXPECT_EQ(potential(*core, "a"), 10);
    EXPECT_EQ(potential(*core, "b"), 21);
  }
  {
    auto core = make({queue("a", "c", {quota("nvidia.com/gpu", 9)}),
                      queue("b", "c", {quota("nvidia.com/gpu", 12, std::nullopt, 1)})});
    EXPECT_EQ(potential(*core, "a"), 10);
    EXPECT_EQ(potential(*core, "b"), 21);
  }
}

// A Cohort's own nominalQuota adds to the children's; a child's private part stays out.
TEST(QuotaTree, CohortQuotaAddsToChildren) {
  CohortSpec parent{"org", "", {}, 1.0};
  ResourceGroup g{{"nvidia.com/gpu"}, {FlavorQuotas{"default", {quota("nvidia.com/gpu", 4)}}}};
  parent.resource_groups.push_back(g);
  auto core = make({queue("a", "team", {quota("nvidia.com/gpu", 8, std::nullopt, 2)}),
                    queue("b", "team", {quota("nvidia.com/gpu", 8)})},
                   {CohortSpec{"team", "org", {}, 1.0}, parent});
  // team = (8 - 6) + 8 = 10; org = 4 + 10 = 14.
  EXPECT_EQ(core->figures("team", "default", "nvidia.com/gpu")->subtree_quota, 10);
  EXPECT_EQ(core->figures("org", "default", "nvidia.com/gpu")->subtree_quota, 14);
  // a: private 6 + everything above = 6 + 14 = 20; b: 0 + 14.
  EXPECT_EQ(potential(*core, "a"), 20);
  EXPECT_EQ(potential(*core, "b"), 14);
}

// Kueue's snapshot leaves out the Cohorts that lead into a cycle and the ClusterQueues under
// them (cache/scheduler/snapshot.go, skipInactiveCQReason: inactiveCQReasonHasCycle); the
// rest is scheduled. w under a cohort whose parent is in the cycle waits too.
TEST(QuotaTree, ACohortCycleLeavesOutOnlyTheQueuesUnderIt) {
  auto core = AdmissionCore::create(
      {}, {ResourceFlavorSpec{"default", {}, {}, {}}},
      {CohortSpec{"x", "y", {}, 1.0}, CohortSpec{"y", "x", {}, 1.0}, CohortSpec{"w", "x", {}, 1.0}},
      {queue("a", "x", {quota("nvidia.com/gpu", 1)}), queue("c", "w", {quota("nvidia.com/gpu", 1)}),
       queue("b", "z", {quota("nvidia.com/gpu", 1)})});
  ASSERT_TRUE(core.ok()) << core.error();
  const auto in_cycle = (*core)->submit(workload("in-cycle", "a", 1), 0);
  const auto below = (*core)->submit(workload("below", "c", 1), 0);
  const auto elsewhere = (*core)->submit(workload("elsewhere", "b", 1), 0);
  (*core)->run_cycle(0);
  EXPECT_TRUE(admitted(**core, elsewhere));
  EXPECT_FALSE(admitted(**core, in_cycle));
  EXPECT_FALSE(admitted(**core, below));
  for (const auto& [id, cq] : {std::pair{in_cycle, "a"}, std::pair{below, "c"}}) {
    const WorkloadStatus status = (*core)->status(id);
    const Condition* reserved = condition(status, "QuotaReserved");
    ASSERT_NE(reserved, nullptr) << cq;
    EXPECT_EQ(reserved->message, std::string("ClusterQueue ") + cq + " is inactive");
  }
}

TEST(Cycle, BorrowsUpToCohortTotalAndGuardsSameCycleOveradmission) {
  auto core = make({queue("a", "c", {quota("nvidia.com/gpu", 4)}), queue("b", "c", {quota("nvidia.com/gpu", 4)})});
  // Both heads want 6 of the cohort's 8: each fits alone, only one fits after the other.
  const auto wa = core->submit(workload("wa", "a", 6, 0, 1), 0);
  const auto wb = core->submit(workload("wb", "b", 6, 0, 2), 0);
  const auto result = core->run_cycle(0);
  EXPECT_TRUE(admitted(*core, wa));
  EXPECT_FALSE(admitted(*core, wb));
  EXPECT_EQ(condition(core->status(wb), "QuotaReserved")->message,
            "Workload no longer fits after processing another workload");
  EXPECT_EQ(condition(core->status(wb), "QuotaReserved")->reason, "WaitingForQuota");
  EXPECT_EQ(result.heads, 2u);
  // Next cycle: wb is NoFit on quota now (2 left).
  core->run_cycle(1);
  EXPECT_EQ(condition(core->status(wb), "QuotaReserved")->message,
            "couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in flavor "
            "default, 4 more needed");
  core->finish(wa, 2);
  core->run_cycle(3);
  EXPECT_TRUE(admitted(*core, wb));
}

TEST(Cycle, MaximumCapacityMessage) {
  auto core = make({queue("a", "", {quota("nvidia.com/gpu", 4)})});
  const auto w = core->submit(workload("big", "a", 5), 0);
  core->run_cycle(0);
  EXPECT_EQ(condition(core->status(w), "QuotaReserved")->message,
            "couldn't assign flavors to pod set main: insufficient quota for nvidia.com/gpu in flavor default, "
            "previously considered podsets requests (0) + current podset request (5) > maximum capacity (4)");
  // UnadmittedWorkloadsObservability (on by default): granular reason, explicit Admitted=False.
  EXPECT_EQ(condition(core->status(w), "QuotaReserved")->reason, "ExceedsMaxQuota");
  EXPECT_EQ(condition(core->status(w), "Admitted")->reason, "NoReservation");
  EXPECT_FALSE(condition(core->status(w), "Admitted")->status);
}

// A queue with two resource groups: `first` on flavor default, nvidia.com/gpu on spot.
ClusterQueueSpec two_groups(const std::string& first, Amount first_nominal, Amount gpus) {
  ClusterQueueSpec q = queue("a", "", {quota(first, first_nominal)});
  q.resource_groups.push_back(ResourceGroup{{"nvidia.com/gpu"}, {FlavorQuotas{"spot", {quota("nvidia.com/gpu", gpus)}}}});
  return q;
}

TEST(Cycle, OfTwoFailingResourceGroupsTheMessageNamesTheOneKueueVisitsFirst) {
  // assignFlavors visits a pod set's requests in SliceRequests order, by the FNV-1a hash of
  // the name: nvidia.com/gpu (0x4f75...) before cpu (0xf5a8...). It stops at the first
  // group that fails, so only the GPU group is named, though cpu (first by name) fails too.
  auto core = make({two_groups("cpu", 4000, 4)});
  WorkloadSpec w = workload("big", "a", 8);
  w.pod_sets.front().requests = {{"cpu", 8000}, {"nvidia.com/gpu", 8}};
  const auto id = core->submit(std::move(w), 0);
  core->run_cycle(0);
  EXPECT_EQ(condition(core->status(id), "QuotaReserved")->message,
            "couldn't assign flavors to pod set main: insufficient quota for nvidia.com/gpu in flavor spot, "
            "previously considered podsets requests (0) + current podset request (8) > maximum capacity (4)");
}

TEST(Cycle, AFailingResourceGroupReplacesTheReasonsOfTheGroupsBeforeIt) {
  // memory (0x2e78...) is visited before nvidia.com/gpu: it fits by preempting `low`, with
  // a reason, and then the GPU group fails. groupStatus becomes the failing search's
  // status, so the memory reason is not in the message.
  auto q = two_groups("memory", 100, 4);
  q.preemption.within_cluster_queue = PreemptionPolicy::LowerPriority;
  auto core = make({q});
  WorkloadSpec low = workload("low", "a", 0, 1);
  low.pod_sets.front().requests = {{"memory", 100}};
  const auto low_id = core->submit(std::move(low), 0);
  core->run_cycle(0);
  ASSERT_TRUE(admitted(*core, low_id));
  WorkloadSpec high = workload("high", "a", 8, 10, 1);
  high.pod_sets.front().requests = {{"memory", 50}, {"nvidia.com/gpu", 8}};
  const auto high_id = core->submit(std::move(high), 1);
  const CycleResult r = core->run_cycle(1);
  EXPECT_TRUE(r.evicted.empty());
  EXPECT_EQ(condition(core->status(high_id), "QuotaReserved")->message,
            "couldn't assign flavors to pod set main: insufficient quota for nvidia.com/gpu in flavor spot, "
            "previously considered podsets requests (0) + current podset request (8) > maximum capacity (4)");
  // With the GPUs in range, the memory group's reason is there, and `low` is preempted.
  WorkloadSpec fitting = workload("fitting", "a", 4, 10, 2);
  fitting.pod_sets.front().requests = {{"memory", 50}, {"nvidia.com/gpu", 4}};
  const auto fitting_id = core->submit(std::move(fitting), 2);
  core->run_cycle(2);
  EXPECT_EQ(core->status(low_id).phase, WorkloadPhase::Evicted);
  EXPECT_EQ(condition(core->status(fitting_id), "QuotaReserved")->message,
            "couldn't assign flavors to pod set main: insufficient unused quota for memory in flavor default, 50 more "
            "needed. Pending the preemption of 1 workload(s)");
}

TEST(Cycle, TheGranularReasonCountsFlavorAttemptsOfGroupsThatFitted) {
  // resolveNoFitReason merges the attempts of every group searched: per group the least
  // severe NoFit attempt, across groups the most severe. memory (searched first) fits on
  // f2 after f1 refused it on a taint (NoMatchingFlavor); the GPU group then exceeds its
  // maximum capacity. The message names the GPUs only, yet the reason is NoMatchingFlavor,
  // from memory's f1.
  ClusterQueueSpec q = queue("a", "", {quota("memory", 100)}, "f1");
  q.resource_groups[0].flavors.push_back(FlavorQuotas{"f2", {quota("memory", 100)}});
  q.resource_groups.push_back(ResourceGroup{{"nvidia.com/gpu"}, {FlavorQuotas{"g1", {quota("nvidia.com/gpu", 4)}}}});
  ResourceFlavorSpec tainted{"f1", {}, {Taint{"spot", "true", TaintEffect::NoSchedule, std::nullopt}}, {}};
  auto made = AdmissionCore::create({}, {tainted, ResourceFlavorSpec{"f2", {}, {}, {}}, ResourceFlavorSpec{"g1", {}, {}, {}}},
                                    {}, {q});
  ASSERT_TRUE(made.ok());
  auto core = std::move(made).value();
  WorkloadSpec w = workload("w", "a", 5);
  w.pod_sets.front().requests = {{"memory", 50}, {"nvidia.com/gpu", 5}};
  const auto id = core->submit(std::move(w), 0);
  const auto gpus_id = core->submit(workload("gpus-only", "a", 5, 0, 1), 1);
  core->run_cycle(1);
  core->run_cycle(2);  // one head per queue and cycle
  const WorkloadStatus status = core->status(id);
  const Condition* c = condition(status, "QuotaReserved");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->message,
            "couldn't assign flavors to pod set main: insufficient quota for nvidia.com/gpu in flavor g1, previously "
            "considered podsets requests (0) + current podset request (5) > maximum capacity (4)");
  EXPECT_EQ(c->reason, "NoMatchingFlavor");
  // Without memory only the GPU group is searched: ExceedsMaxQuota.
  EXPECT_EQ(condition(core->status(gpus_id), "QuotaReserved")->reason, "ExceedsMaxQuota");
}

TEST(Cycle, PodSetTotalsSaturateLikeKueuesScaledUp) {
  // 2^62 GPUs per pod times 4 pods does not fit in int64: Kueue's SaturatingMul makes it
  // the largest Amount (no wrap-around to a small or negative request).
  auto core = make({queue("a", "", {quota("nvidia.com/gpu", 4)})});
  WorkloadSpec w = workload("huge", "a", Amount{1} << 62);
  w.pod_sets.front().count = 4;
  const auto id = core->submit(std::move(w), 0);
  core->run_cycle(0);
  EXPECT_FALSE(admitted(*core, id));
  EXPECT_EQ(condition(core->status(id), "QuotaReserved")->reason, "ExceedsMaxQuota");
  EXPECT_NE(condition(core->status(id), "QuotaReserved")->message.find("current podset request (9223372036854775807)"),
            std::string::npos)
      << condition(core->status(id), "QuotaReserved")->message;
  static_assert(request_times(3, 4) == 12);
  static_assert(request_times(kUnlimitedAmount, 2) == kUnlimitedAmount);
  static_assert(request_times(std::numeric_limits<Amount>::min(), 2) == std::numeric_limits<Amount>::min());
  static_assert(request_times(5, 0) == 0);
}

TEST(Preemption, WithinClusterQueueLowerPriorityWaitsForVictim) {
  auto q = queue("a", "", {quota("nvidia.com/gpu", 4)});
  q.preemption.within_cluster_queue = PreemptionPolicy::LowerPriority;
  auto core = make({q});
  const auto low = core->submit(workload("low", "a", 4, 1), 0);
  core->run_cycle(0);
  ASSERT_TRUE(admitted(*core, low));
  const auto high = core->submit(workload("high", "a", 4, 10, 5), 5);
  auto r = core->run_cycle(5);
  ASSERT_EQ(r.evicted, std::vector<WorkloadId>{low});
  EXPECT_EQ(core->status(low).phase, WorkloadPhase::Evicted);
  EXPECT_EQ(condition(core->status(low), "Preempted")->reason, "InClusterQueue");
  EXPECT_EQ(condition(core->status(low), "Evicted")->message,
            "Preempted to accommodate a workload (UID: uid-high, JobUID: UNKNOWN) due to prioritization in the "
            "ClusterQueue; preemptor path: /a; preemptee path: /a");
  EXPECT_EQ(condition(core->status(high), "QuotaReserved")->message,
            "couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in flavor "
            "default, 4 more needed. Pending the preemption of 1 workload(s)");
  // Still held by the victim: the preemptor cannot be admitted yet.
  core->run_cycle(6);
  EXPECT_FALSE(admitted(*core, high));
  core->release_evicted(low, 7);
  core->run_cycle(7);
  EXPECT_TRUE(admitted(*core, high));
  EXPECT_EQ(core->status(low).phase, WorkloadPhase::Pending);
}

TEST(Preemption, LenderReclaimsFromBorrower) {
  auto lender = queue("lender", "c", {quota("nvidia.com/gpu", 6)});
  lender.preemption.reclaim_within_cohort = PreemptionPolicy::Any;
  auto core = make({lender, queue("borrower", "c", {quota("nvidia.com/gpu", 2)})});
  const auto b = core->submit(workload("b", "borrower", 8), 0);
  core->run_cycle(0);
  ASSERT_TRUE(admitted(*core, b));
  const auto l = core->submit(workload("l", "lender", 2, 0, 1), 1);
  auto r = core->run_cycle(1);
  ASSERT_EQ(r.evicted, std::vector<WorkloadId>{b});
  EXPECT_EQ(condition(core->status(b), "Preempted")->reason, "InCohortReclamation");
  core->release_evicted(b, 2);
  core->run_cycle(2);
  EXPECT_TRUE(admitted(*core, l));
}

// Three lenders reclaim in one cycle from two borrowers whose workloads tie on priority
// and reservation time, so CandidatesOrdering falls to the UID (ascending); the UIDs share
// their first eight bytes. All three lenders nominate the lowest UID, a (the first search
// merges the borrowers' queues itself, the later ones walk the cohort's shared order),
// although the workloads were admitted in the order e a d b c f. l1 evicts a. l2's target
// overlaps, so it recomputes with a gone (RecomputeAssignmentUponPreemptionTargetsOverlap)
// and evicts b; l3 then evicts c, all in the same cycle.
TEST(Preemption, LendersInOneCycleTakeVictimsInUidOrderAcrossQueues) {
  std::vector<ClusterQueueSpec> queues;
  for (const std::string name : {"l1", "l2", "l3"}) {
    auto l = queue(name, "c", {quota("nvidia.com/gpu", 2)});
    l.preemption.reclaim_within_cohort = PreemptionPolicy::Any;
    queues.push_back(l);
  }
  queues.push_back(queue("b1", "c", {quota("nvidia.com/gpu", 0)}));
  queues.push_back(queue("b2", "c", {quota("nvidia.com/gpu", 0)}));
  auto core = make(queues);
  std::map<std::string, WorkloadId> by_uid;
  for (const auto& [letter, cq] : std::vector<std::pair<std::string, std::string>>{
           {"e", "b1"}, {"a", "b1"}, {"d", "b1"}, {"b", "b2"}, {"c", "b2"}, {"f", "b2"}}) {
    WorkloadSpec w = workload("victim-" + letter, cq, 1);
    w.uid = "victim-uid-" + letter;
    by_uid[letter] = core->submit(std::move(w), 0);
  }
  for (int k = 0; k < 3; ++k) core->run_cycle(0);  // one head per queue and cycle, all at time 0
  for (const auto& [letter, id] : by_uid) ASSERT_TRUE(admitted(*core, id)) << letter;

  const auto p1 = core->submit(workload("p1", "l1", 1, 0, 1), 1);
  const auto p2 = core->submit(workload("p2", "l2", 1, 0, 2), 1);
  const auto p3 = core->submit(workload("p3", "l3", 1, 0, 3), 1);
  const auto r = core->run_cycle(1);
  EXPECT_EQ(r.evicted, (std::vector<WorkloadId>{by_uid["a"], by_uid["b"], by_uid["c"]}));
  std::map<WorkloadId, std::vector<WorkloadId>> issued;
  for (const auto& d : r.decisions) {
    if (d.kind == Decision::Kind::PreemptionIssued) issued[d.workload] = d.related;
  }
  EXPECT_EQ(issued[p1], std::vector<WorkloadId>{by_uid["a"]});
  EXPECT_EQ(issued[p2], std::vector<WorkloadId>{by_uid["b"]});
  EXPECT_EQ(issued[p3], std::vector<WorkloadId>{by_uid["c"]});
}

// Kueue's integration test "Should preempt all necessary workloads in concurrent scheduling
// with the same priority (RecomputeAssignmentUponPreemptionTargetsOverlap=true)"
// (test/integration/singlecluster/scheduler/preemption_test.go at ff69552): alpha, beta
// and gamma have 2 CPUs each in one cohort; beta runs three 2-CPU workloads, 4 of them
// borrowed. alpha and gamma (reclaimWithinCohort Any) each ask for 2 and both nominate the
// same victim. The second recomputes with that victim gone, as usage and as candidate, and
// preempts another one: two evictions in the first cycle, not one per cycle.
TEST(Preemption, OverlappingTargetsAreRecomputedWithoutTheOtherVictims) {
  auto reclaimer = [](const std::string& name) {
    auto q = queue(name, "all", {quota("cpu", 2000)});
    q.preemption.within_cluster_queue = PreemptionPolicy::LowerPriority;
    q.preemption.reclaim_within_cohort = PreemptionPolicy::Any;
    return q;
  };
  auto core = make({reclaimer("alpha-cq"), queue("beta-cq", "all", {quota("cpu", 2000)}), reclaimer("gamma-cq")});
  std::vector<WorkloadId> beta;
  for (int i = 0; i < 3; ++i) beta.push_back(core->submit(cpu_workload("beta-" + std::to_string(i), "beta-cq", 2000, 0, i), i));
  for (int k = 0; k < 3; ++k) core->run_cycle(k);
  for (const auto id : beta) ASSERT_TRUE(admitted(*core, id));

  const auto alpha = core->submit(cpu_workload("alpha", "alpha-cq", 2000, 0, 10), 10);
  const auto gamma = core->submit(cpu_workload("gamma", "gamma-cq", 2000, 0, 11), 11);
  const auto r = core->run_cycle(12);
  ASSERT_EQ(r.evicted.size(), 2u);
  for (const auto v : r.evicted) EXPECT_EQ(condition(core->status(v), "Preempted")->reason, "InCohortReclamation");
  for (const auto v : r.evicted) core->release_evicted(v, 13);
  core->run_cycle(13);
  EXPECT_TRUE(admitted(*core, alpha));
  EXPECT_TRUE(admitted(*core, gamma));
  EXPECT_EQ(std::count_if(beta.begin(), beta.end(), [&](WorkloadId id) { return admitted(*core, id); }), 1);
}

// Kueue's scheduler_recompute_preemption_test.go (ff69552) "flavor stickiness with
// RecomputePreemptionTargetsUponOverlap and TAS disabled", fair sharing on. cq-1 and cq-2
// have 5 CPUs on each of two flavors; cq-1 runs 10 on default and 10 on on-demand. Both
// pending workloads (10 CPUs) nominate default and the same victim there. cq-2 goes first
// (lower share) and preempts wl-admitted-default. cq-1's recomputation keeps the nominated
// flavor: on-demand is skipped with Kueue's message, default no longer fits (cq-2's 10
// are held), and no candidate is left, so wl-admitted-on-demand is not touched.
TEST(Preemption, RecomputedAssignmentKeepsTheNominatedFlavors) {
  auto cq = [](const std::string& name) {
    ClusterQueueSpec q;
    q.name = name;
    q.cohort = "root";
    q.preemption.within_cluster_queue = PreemptionPolicy::LowerPriority;
    q.preemption.reclaim_within_cohort = PreemptionPolicy::Any;
    q.resource_groups.push_back(ResourceGroup{
        {"cpu"}, {FlavorQuotas{"default", {quota("cpu", 5000)}}, FlavorQuotas{"on-demand", {quota("cpu", 5000)}}}});
    return q;
  };
  CoreOptions options;
  options.fair_sharing = true;
  auto created = AdmissionCore::create(
      options, {ResourceFlavorSpec{"default", {}, {}, {}}, ResourceFlavorSpec{"on-demand", {}, {}, {}}}, {},
      {cq("cq-1"), cq("cq-2")});
  ASSERT_TRUE(created.ok()) << created.error();
  auto core = std::move(created).value();
  auto cpu10 = [](const std::string& name, const std::string& queue, std::int32_t priority, VirtualTime created_at) {
    WorkloadSpec w = cpu_workload(name, queue, 10000, priority, created_at);
    w.uid = name + "-uid";
    return w;
  };
  auto admission = [](const std::string& flavor) {
    Admission a;
    a.cluster_queue = "cq-1";
    a.pod_sets.push_back(PodSetAssignment{"main", {{"cpu", flavor}}, {{"cpu", 10000}}, 1});
    return a;
  };
  const auto on_default = core->restore_admitted(cpu10("wl-admitted-default", "cq-1", 0, 0), admission("default"), 0);
  const auto on_demand = core->restore_admitted(cpu10("wl-admitted-on-demand", "cq-1", 0, 0), admission("on-demand"), 0);
  ASSERT_TRUE(on_default.ok() && on_demand.ok());
  WorkloadSpec high1 = cpu10("wl-pending-high-prio-1", "cq-1", 11, 1);
  high1.job_uid = "job-high-prio-1-uid";
  WorkloadSpec high2 = cpu10("wl-pending-high-prio-2", "cq-2", 10, 2);
  high2.job_uid = "job-high-prio-2-uid";
  const auto p1 = core->submit(high1, 2);
  const auto p2 = core->submit(high2, 2);

  const auto r = core->run_cycle(3);
  EXPECT_EQ(r.evicted, std::vector<WorkloadId>{*on_default});
  expect_condition(core->status(*on_default), "Preempted", true, "InCohortFairSharing",
                   "Preempted to accommodate a workload (UID: wl-pending-high-prio-2-uid, JobUID: job-high-prio-2-uid) "
                   "due to Fair Sharing within the cohort; preemptor path: /root/cq-2; preemptee path: /root/cq-1",
                   3);
  EXPECT_TRUE(admitted(*core, *on_demand));
  expect_condition(core->status(p1), "QuotaReserved", false, "WaitingForQuota",
                   "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor default, 10 "
                   "more needed, skipping flavor on-demand as it is not found in the nomination mapping for resource cpu",
                   3);
  expect_condition(core->status(p2), "QuotaReserved", false, "WaitingForPreemptedWorkloads",
                   "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor default, 10 "
                   "more needed, insufficient unused quota for cpu in flavor on-demand, 10 more needed. Pending the "
                   "preemption of 1 workload(s)",
                   3);
}

// Kueue's scheduler_recompute_preemption_test.go (ff69552) "two workloads reclaim nominal
// quota; RecomputePreemptionTargetsUponOverlap enabled". Cohorts root (3005 CPUs) over a
// (0), b and c; cq-hero 3000 and cq-noisy 0 under a, cq-tiny 50 under b, cq-rest 0 under c.
// cq-rest runs all 6055. wl-tiny-pending (50, older) and wl-hero (2950) both nominate
// wl-rest-admitted. tiny goes first and preempts it. hero recomputes without that victim:
// it fits then, so its assignment is DeferredFit, and it waits for the preemption.
TEST(Preemption, RecomputedAssignmentThatFitsIsDeferred) {
  auto cq = [](const std::string& name, const std::string& cohort, Amount cpus) {
    auto q = queue(name, cohort, {quota("cpu", cpus * 1000)});
    q.preemption.within_cluster_queue = PreemptionPolicy::LowerPriority;
    q.preemption.reclaim_within_cohort = PreemptionPolicy::Any;
    return q;
  };
  std::vector<CohortSpec> cohorts{
      CohortSpec{"root-cohort", "", {ResourceGroup{{"cpu"}, {FlavorQuotas{"default", {quota("cpu", 3005000)}}}}}, 1.0},
      CohortSpec{"parent-cohort-a", "root-cohort", {ResourceGroup{{"cpu"}, {FlavorQuotas{"default", {quota("cpu", 0)}}}}}, 1.0},
      CohortSpec{"parent-cohort-b", "root-cohort", {}, 1.0},
      CohortSpec{"parent-cohort-c", "root-cohort", {}, 1.0}};
  auto core = make({cq("cq-hero", "parent-cohort-a", 3000), cq("cq-noisy", "parent-cohort-a", 0),
                    cq("cq-tiny", "parent-cohort-b", 50), cq("cq-rest", "parent-cohort-c", 0)},
                   cohorts);
  auto cpu = [](const std::string& name, const std::string& queue, Amount cpus, VirtualTime created) {
    WorkloadSpec w = cpu_workload(name, queue, cpus * 1000, 0, created);
    w.uid = name;
    return w;
  };
  Admission all;
  all.cluster_queue = "cq-rest";
  all.pod_sets.push_back(PodSetAssignment{"main", {{"cpu", "default"}}, {{"cpu", 6055000}}, 1});
  const auto rest = core->restore_admitted(cpu("wl-rest-admitted", "cq-rest", 6055, 0), all, 0);
  ASSERT_TRUE(rest.ok()) << rest.error();
  WorkloadSpec hero = cpu("wl-hero", "cq-hero", 2950, 1000);  // a second after tiny: timestamps are whole seconds
  hero.job_uid = "job-h-uid";
  WorkloadSpec tiny = cpu("wl-tiny-pending", "cq-tiny", 50, 0);
  tiny.job_uid = "job-t-uid";
  const auto h = core->submit(hero, 1000);
  const auto t = core->submit(tiny, 1000);

  const auto r = core->run_cycle(2000);
  EXPECT_EQ(r.evicted, std::vector<WorkloadId>{*rest});
  expect_condition(core->status(*rest), "Preempted", true, "InCohortReclamation",
                   "Preempted to accommodate a workload (UID: wl-tiny-pending, JobUID: job-t-uid) due to reclamation "
                   "within the cohort; preemptor path: /root-cohort/parent-cohort-b/cq-tiny; preemptee path: "
                   "/root-cohort/parent-cohort-c/cq-rest",
                   2000);
  expect_condition(core->status(t), "QuotaReserved", false, "WaitingForPreemptedWorkloads",
                   "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor default, 50 "
                   "more needed. Pending the preemption of 1 workload(s)",
                   2000);
  expect_condition(core->status(h), "QuotaReserved", false, "WaitingForPreemptedWorkloads",
                   "Workload has overlapping preemption targets with another workload, but will fit after these "
                   "preemptions complete",
                   2000);
}

TEST(Preemption, BorrowingRequestMayNotPreemptWithoutBorrowWithinCohort) {
  auto a = queue("a", "c", {quota("nvidia.com/gpu", 2)});
  a.preemption.reclaim_within_cohort = PreemptionPolicy::Any;
  auto core = make({a, queue("b", "c", {quota("nvidia.com/gpu", 6)})});
  const auto wb = core->submit(workload("wb", "b", 6, 0), 0);  // within b's nominal
  core->run_cycle(0);
  const auto wa = core->submit(workload("wa", "a", 4, 100, 1), 1);  // would borrow 2
  auto r = core->run_cycle(1);
  EXPECT_TRUE(r.evicted.empty());
  EXPECT_FALSE(admitted(*core, wa));
  EXPECT_TRUE(admitted(*core, wb));
}

TEST(FairSharing, WeightedShareAsKueueReportsIt) {
  // kueue-semantics.md: quota cpu 2, gpu 5 next to a lender with cpu 8, gpu 5.
  auto q1 = queue("q1", "c", {quota("cpu", 2000), quota("nvidia.com/gpu", 5)});
  auto q2 = queue("q2", "c", {quota("cpu", 8000), quota("nvidia.com/gpu", 5)});
  CoreOptions options;
  options.fair_sharing = true;
  auto core = make({q1, q2}, {}, options);
  WorkloadSpec w = workload("w", "q1", 7);
  w.pod_sets[0].requests = {{"cpu", 3000}, {"nvidia.com/gpu", 7}};
  core->submit(w, 0);
  core->run_cycle(0);
  auto s = core->cluster_queue_status("q1");
  ASSERT_TRUE(s.weighted_share.has_value());
  EXPECT_EQ(*s.weighted_share, 200);  // (7-5)*1000/10
  EXPECT_EQ(s.dominant_resource, "nvidia.com/gpu");
}

TEST(Preemption, BorrowWithinCohortRespectsMaxPriorityThreshold) {
  // a (nominal 2) wants 4 while b borrows: a may reclaim while borrowing only from
  // workloads below its priority and at most the threshold.
  auto a = queue("a", "c", {quota("nvidia.com/gpu", 2)});
  a.preemption.reclaim_within_cohort = PreemptionPolicy::Any;
  a.preemption.borrow_within_cohort = BorrowWithinCohortPolicy::LowerPriority;
  a.preemption.max_priority_threshold = 10;
  auto core = make({a, queue("b", "c", {quota("nvidia.com/gpu", 4)})});
  const auto b_low = core->submit(workload("b-low", "b", 3, 5, 0), 0);    // b borrows 1... with b-high
  const auto b_high = core->submit(workload("b-high", "b", 3, 20, 1), 0);
  core->run_cycle(0);
  core->run_cycle(0);
  ASSERT_TRUE(admitted(*core, b_low));
  ASSERT_TRUE(admitted(*core, b_high));  // b uses 6 of the cohort's 6
  const auto wa = core->submit(workload("wa", "a", 4, 50, 2), 2);
  auto r = core->run_cycle(2);
  // Removing b-low (priority 5 <= 10) frees 3: a gets 3 of 6, not 4; removing b-high too
  // is not allowed (20 > threshold) -> no targets, a stays pending.
  EXPECT_TRUE(r.evicted.empty());
  EXPECT_FALSE(admitted(*core, wa));
  // With 3 GPUs requested, b-low alone is enough and it is taken while borrowing.
  core->finish(wa, 3);
  const auto wa3 = core->submit(workload("wa3", "a", 3, 50, 4), 4);
  r = core->run_cycle(4);
  ASSERT_EQ(r.evicted, std::vector<WorkloadId>{b_low});
  EXPECT_EQ(condition(core->status(b_low), "Preempted")->reason, "InCohortReclaimWhileBorrowing");
  core->release_evicted(b_low, 5);
  core->run_cycle(5);
  EXPECT_TRUE(admitted(*core, wa3));
}

// org -> {left -> {a}, right -> {b}}: b borrows left's quota through org. a's own subtree
// has room, so its victims are hierarchical-reclaim candidates: borrowWithinCohort rules do
// not apply, but reclaimWithinCohort still does (classifyPreemptionVariant checks the
// policy before the hierarchical advantage). So LowerPriority protects b's higher-priority
// workload and Any reclaims it.
TEST(Preemption, HierarchicalReclaimStillAppliesReclaimPolicy) {
  for (const auto policy : {PreemptionPolicy::LowerPriority, PreemptionPolicy::Any}) {
    auto a = queue("a", "left", {quota("nvidia.com/gpu", 4)});
    a.preemption.reclaim_within_cohort = policy;
    auto core = make({a, queue("b", "right", {quota("nvidia.com/gpu", 4)})},
                     {CohortSpec{"org", "", {}, 1.0}, CohortSpec{"left", "org", {}, 1.0}, CohortSpec{"right", "org", {}, 1.0}});
    const auto wb = core->submit(workload("wb", "b", 8, 100, 0), 0);
    core->run_cycle(0);
    ASSERT_TRUE(admitted(*core, wb));
    const auto wa = core->submit(workload("wa", "a", 2, 1, 1), 1);
    auto r = core->run_cycle(1);
    if (policy == PreemptionPolicy::LowerPriority) {
      EXPECT_TRUE(r.evicted.empty());
      EXPECT_FALSE(admitted(*core, wa));
      continue;
    }
    ASSERT_EQ(r.evicted, std::vector<WorkloadId>{wb});
    EXPECT_EQ(condition(core->status(wb), "Preempted")->reason, "InCohortReclamation");
    EXPECT_NE(condition(core->status(wb), "Evicted")->message.find("preemptor path: /org/left/a; preemptee path: /org/right/b"),
              std::string::npos);
    core->release_evicted(wb, 2);
    core->run_cycle(2);
    EXPECT_TRUE(admitted(*core, wa));
  }
}

TEST(FlavorAssignment, ListOrderAndWhenCanBorrow) {
  auto two_flavors = [](FungibilityPolicy when_can_borrow) {
    ClusterQueueSpec q;
    q.name = "a";
    q.cohort = "c";
    q.flavor_fungibility.when_can_borrow = when_can_borrow;
    q.resource_groups.push_back(ResourceGroup{{"nvidia.com/gpu"},
                                              {FlavorQuotas{"default", {quota("nvidia.com/gpu", 2)}},
                                               FlavorQuotas{"spot", {quota("nvidia.com/gpu", 4)}}}});
    ClusterQueueSpec lender;
    lender.name = "lender";
    lender.cohort = "c";
    lender.resource_groups.push_back(ResourceGroup{{"nvidia.com/gpu"}, {FlavorQuotas{"default", {quota("nvidia.com/gpu", 4)}}}});
    return std::vector<ClusterQueueSpec>{q, lender};
  };
  auto flavor_of = [](const AdmissionCore& core, WorkloadId id) {
    return core.status(id).admission->pod_sets.at(0).flavors.at(0).second;
  };
  {  // MayStopSearch: the first flavor fits by borrowing -> take it.
    auto core = make(two_flavors(FungibilityPolicy::MayStopSearch));
    const auto w = core->submit(workload("w", "a", 3), 0);
    core->run_cycle(0);
    ASSERT_TRUE(admitted(*core, w));
    EXPECT_EQ(flavor_of(*core, w), "default");
  }
  {  // TryNextFlavor: borrowing on the first -> prefer the second where it fits in nominal.
    auto core = make(two_flavors(FungibilityPolicy::TryNextFlavor));
    const auto w = core->submit(workload("w", "a", 3), 0);
    core->run_cycle(0);
    ASSERT_TRUE(admitted(*core, w));
    EXPECT_EQ(flavor_of(*core, w), "spot");
  }
}

TEST(Queueing, StrictFifoBlocksBehindItsHeadBestEffortDoesNot) {
  for (const auto strategy : {QueueingStrategy::StrictFIFO, QueueingStrategy::BestEffortFIFO}) {
    auto q = queue("a", "", {quota("nvidia.com/gpu", 4)});
    q.queueing_strategy = strategy;
    auto core = make({q});
    const auto running = core->submit(workload("running", "a", 2, 0, 0), 0);
    core->run_cycle(0);
    ASSERT_TRUE(admitted(*core, running));
    const auto big = core->submit(workload("big", "a", 4, 0, 1), 1);
    const auto small = core->submit(workload("small", "a", 1, 0, 2), 1);
    for (int i = 0; i < 3; ++i) core->run_cycle(1 + i);
    EXPECT_FALSE(admitted(*core, big));
    EXPECT_EQ(admitted(*core, small), strategy == QueueingStrategy::BestEffortFIFO);
  }
}

// SchedulingEquivalenceHashing: when big-1 cannot fit, big-2 (same shape) waits with it
// instead of becoming the next head, so small is tried in the very next cycle.
TEST(Queueing, EquivalentWorkloadsWaitWithTheirHead) {
  for (const bool hashing : {true, false}) {
    CoreOptions options;
    options.scheduling_equivalence_hashing = hashing;
    auto core = make({queue("a", "", {quota("nvidia.com/gpu", 4)})}, {}, options);
    core->submit(workload("running", "a", 2, 0, 0), 0);
    core->run_cycle(0);
    const auto big1 = core->submit(workload("big-1", "a", 4, 0, 1), 1);
    const auto big2 = core->submit(workload("big-2", "a", 4, 0, 2), 1);
    const auto small = core->submit(workload("small", "a", 1, 0, 3), 1);
    core->run_cycle(1);  // head big-1: NoFit
    core->run_cycle(2);
    EXPECT_EQ(admitted(*core, small), hashing);
    EXPECT_FALSE(admitted(*core, big1));
    EXPECT_FALSE(admitted(*core, big2));
    // big-2 was never evaluated when its class was moved: no condition yet.
    EXPECT_EQ(condition(core->status(big2), "QuotaReserved") == nullptr, hashing);
  }
}

TEST(FairSharing, PreemptsFromTheQueueWithTheHighestShare) {
  CoreOptions options;
  options.fair_sharing = true;
  auto a = queue("a", "c", {quota("nvidia.com/gpu", 4)});
  a.preemption.reclaim_within_cohort = PreemptionPolicy::Any;
  auto core = make({a, queue("b", "c", {quota("nvidia.com/gpu", 4)}), queue("d", "c", {quota("nvidia.com/gpu", 4)})}, {},
                   options);
  // b borrows 3, d borrows 1 (12 in the cohort, all used).
  std::vector<WorkloadId> b_w, d_w;
  for (int i = 0; i < 7; ++i) b_w.push_back(core->submit(workload("b" + std::to_string(i), "b", 1, 0, i), 0));
  for (int i = 0; i < 5; ++i) d_w.push_back(core->submit(workload("d" + std::to_string(i), "d", 1, 0, i), 0));
  for (int i = 0; i < 20; ++i) core->run_cycle(0);
  ASSERT_EQ(core->cluster_queue_status("b").flavors_reservation.at(0).total, 7);
  ASSERT_EQ(core->cluster_queue_status("d").flavors_reservation.at(0).total, 5);
  EXPECT_EQ(*core->cluster_queue_status("b").weighted_share, 250);  // 3*1000/12
  const auto wa = core->submit(workload("wa", "a", 1, 0, 100), 1);
  auto r = core->run_cycle(1);
  ASSERT_EQ(r.evicted.size(), 1u);
  EXPECT_EQ(core->spec(r.evicted[0]).cluster_queue, "b");
  // a stays within its nominal: taken without the share test.
  EXPECT_EQ(condition(core->status(r.evicted[0]), "Preempted")->reason, "InCohortReclamation");
  core->release_evicted(r.evicted[0], 2);
  core->run_cycle(2);
  EXPECT_TRUE(admitted(*core, wa));
}

// Invariants in any reachable state, over seeded random operations.
TEST(Properties, QuotaInvariantsHoldUnderRandomOperations) {
  for (std::uint32_t seed = 1; seed <= 30; ++seed) {
    std::mt19937 rng(seed);
    CoreOptions options;
    options.fair_sharing = seed % 2 == 0;
    std::vector<CohortSpec> cohorts{CohortSpec{"root", "", {}, 1.0}, CohortSpec{"left", "root", {}, 1.0},
                                    CohortSpec{"right", "root", {}, 1.0}};
    std::vector<ClusterQueueSpec> queues;
    const char* parents[] = {"left", "left", "right", "right", ""};
    for (int i = 0; i < 5; ++i) {
      std::optional<Amount> borrow, lend;
      if (rng() % 2) borrow = rng() % 5;
      const Amount nominal = 2 + rng() % 6;
      if (rng() % 2) lend = rng() % (nominal + 1);
      auto q = queue("q" + std::to_string(i), parents[i], {quota("nvidia.com/gpu", nominal, borrow, lend)});
      q.preemption.within_cluster_queue = PreemptionPolicy::LowerPriority;
      q.preemption.reclaim_within_cohort = (rng() % 2) ? PreemptionPolicy::Any : PreemptionPolicy::LowerPriority;
      if (rng() % 2) q.preemption.borrow_within_cohort = BorrowWithinCohortPolicy::LowerPriority;
      queues.push_back(q);
    }
    auto core = make(queues, cohorts, options);
    std::vector<WorkloadId> ids;
    for (int step = 0; step < 200; ++step) {
      const int op = static_cast<int>(rng() % 4);
      if (op <= 1) {
        const int qi = static_cast<int>(rng() % 5);
        ids.push_back(core->submit(workload("w" + std::to_string(step), "q" + std::to_string(qi),
                                            1 + static_cast<Amount>(rng() % 5), static_cast<int>(rng() % 3), step),
                                   step));
      } else if (op == 2 && !ids.empty()) {
        core->finish(ids[rng() % ids.size()], step);
      }
      auto r = core->run_cycle(step);
      for (WorkloadId v : r.evicted) core->release_evicted(v, step);
      for (const auto& q : queues) {
        const auto f = *core->figures(q.name, "default", "nvidia.com/gpu");
        const auto& rq = q.resource_groups[0].flavors[0].resources[0];
        if (rq.borrowing_limit) {
          EXPECT_LE(f.usage, rq.nominal + *rq.borrowing_limit) << "seed " << seed << " queue " << q.name;
        }
        EXPECT_GE(f.usage, 0);
        // A lender's private part (nominal - lendingLimit) stays available to it.
        if (rq.lending_limit) {
          const Amount private_part = std::max<Amount>(0, rq.nominal - *rq.lending_limit);
          EXPECT_GE(f.available, std::max<Amount>(0, private_part - f.usage)) << "seed " << seed << " " << q.name;
        }
      }
      // The whole tree never holds more than its quota. (An inner cohort may exceed its own
      // subtree quota: that is borrowing from its parent.)
      const auto root = *core->figures("root", "default", "nvidia.com/gpu");
      EXPECT_LE(root.usage, root.subtree_quota) << "seed " << seed;
      const auto q4 = *core->figures("q4", "default", "nvidia.com/gpu");  // a queue without cohort
      EXPECT_LE(q4.usage, q4.subtree_quota) << "seed " << seed;
    }
    for (WorkloadId id = 0; id < core->workload_count(); ++id) core->finish(id, 1000);
    for (const auto& n : {"q0", "q1", "q2", "q3", "q4", "root", "left", "right"}) {
      EXPECT_EQ(core->figures(n, "default", "nvidia.com/gpu")->usage, 0) << n;
    }
  }
}

}  // namespace
}  // namespace gpubank::twin

namespace gpubank::twin {
namespace {

// Ties in priority and creation time are broken by UID string order (baseCompareFunc).
// The UIDs here nest ever deeper between "a" and the previous one ("ab", "aab", ...), so
// the core's UID labels run out of room and are renumbered; one head is
// admitted per cycle, so the admission order is the queue order. The core compares UIDs by
// their first eight bytes before their labels: the deep ones share those bytes, and bytes
// above 0x7f and embedded NULs must sort as std::string does.
TEST(Queueing, UidTieBreakFollowsStringOrderThroughRenumbering) {
  auto core = make({queue("q", "", {quota("nvidia.com/gpu", 1000)})});
  std::vector<std::string> uids{"a", "b", "\xff", "a\x80", std::string("a\0b", 3), std::string("a\0", 2), "aaaaaaaa"};
  for (int depth = 1; depth <= 70; ++depth) uids.push_back(std::string(static_cast<std::size_t>(depth), 'a') + "b");
  std::vector<std::pair<std::string, WorkloadId>> submitted;
  for (const auto& uid : uids) {
    WorkloadSpec w = workload("w-" + std::to_string(submitted.size()), "q", 1);
    w.uid = uid;
    submitted.emplace_back(uid, core->submit(std::move(w), 0));
  }
  std::vector<std::string> order;
  for (std::size_t cycle = 0; cycle < uids.size(); ++cycle) {
    for (const auto& d : core->run_cycle(1).decisions) {
      if (d.kind == Decision::Kind::Admitted) order.push_back(core->spec(d.workload).uid);
    }
  }
  std::vector<std::string> expected = uids;
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(order, expected);
}

// ---- forgetting finished workloads -------------------------------------------------------

TEST(Forget, OnlyAFinishedWorkloadIsForgottenAndItsIdStaysInvalid) {
  auto core = make({queue("q", "", {quota("nvidia.com/gpu", 1000)})});
  const WorkloadId a = core->submit(workload("a", "q", 1000), 0);
  const WorkloadId b = core->submit(workload("b", "q", 1000), 0);
  core->run_cycle(1);
  ASSERT_TRUE(admitted(*core, a));

  auto refused = core->forget(a);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error(), "workload default/a is admitted: only a finished workload can be forgotten");
  EXPECT_TRUE(admitted(*core, a));  // untouched
  EXPECT_FALSE(core->forget(b));    // pending

  core->finish(a, 2);
  ASSERT_TRUE(core->forget(a));
  EXPECT_THROW((void)core->spec(a), std::out_of_range);
  EXPECT_THROW((void)core->status(a), std::out_of_range);
  EXPECT_THROW((void)core->phase(a), std::out_of_range);
  EXPECT_THROW(core->finish(a, 3), std::out_of_range);
  EXPECT_THROW(core->release_evicted(a, 3), std::out_of_range);
  auto evicted = core->evict(a, "Reclaim", "gone", 3);
  ASSERT_FALSE(evicted);
  EXPECT_EQ(evicted.error(), "workload 0 was forgotten");
  auto again = core->forget(a);
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error(), "workload 0 was forgotten already");
  auto unknown = core->forget(7);
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error(), "workload 7 does not exist");

  // The rest carries on: b takes the freed quota, ids are not reused.
  core->run_cycle(3);
  EXPECT_TRUE(admitted(*core, b));
  EXPECT_EQ(core->submit(workload("c", "q", 1000), 4), 2u);
  EXPECT_EQ(core->workload_count(), 3u);
}

// A pending workload that is deleted (finished without running) and forgotten can be where
// its queue's head search was to start next; that start must not outlive it (under
// AddressSanitizer a stale start reads its freed UID label).
TEST(Forget, ADeletedPendingWorkloadIsNoLongerWhereTheHeadSearchStarts) {
  auto core = make({queue("q", "", {quota("nvidia.com/gpu", 1000)})});
  const WorkloadId a = core->submit(workload("a", "q", 1000), 0);
  core->run_cycle(1);
  ASSERT_TRUE(admitted(*core, a));
  const WorkloadId b = core->submit(workload("b", "q", 1000), 1);
  const WorkloadId c = core->submit(workload("c", "q", 1000), 1);
  core->run_cycle(2);  // b is the head, does not fit, and waits as inadmissible
  core->finish(b, 3);
  ASSERT_TRUE(core->forget(b));
  core->run_cycle(4);  // c's turn: it does not fit either
  EXPECT_EQ(core->phase(c), WorkloadPhase::Pending);
  core->finish(a, 5);
  core->run_cycle(6);
  EXPECT_TRUE(admitted(*core, c));
}

// A forgotten workload's UID label goes when no other workload has that UID; the order of
// the remaining and of new UIDs is still the string order.
TEST(Forget, UidOrderSurvivesForgottenUids) {
  auto core = make({queue("q", "", {quota("nvidia.com/gpu", 1000)})});
  auto submit = [&](const std::string& uid, VirtualTime at) {
    WorkloadSpec w = workload("w-" + uid, "q", 1000);
    w.uid = uid;
    return core->submit(std::move(w), at);
  };
  // "m" runs and finishes; "m" (again), "k" and "n" wait with equal priority and creation.
  const WorkloadId first = submit("m", 0);
  core->run_cycle(1);
  ASSERT_TRUE(admitted(*core, first));
  const WorkloadId twin_uid = submit("m", 0);
  submit("n", 0);
  submit("k", 0);
  core->finish(first, 2);
  ASSERT_TRUE(core->forget(first));  // "m" keeps its label: twin_uid still has it
  submit("l", 0);
  std::vector<std::string> order;
  for (VirtualTime t = 3; t < 8; ++t) {
    for (const auto& d : core->run_cycle(t).decisions) {
      if (d.kind != Decision::Kind::Admitted) continue;
      order.push_back(core->spec(d.workload).uid);
      core->finish(d.workload, t);
      ASSERT_TRUE(core->forget(d.workload));
    }
  }
  EXPECT_EQ(order, (std::vector<std::string>{"k", "l", "m", "n"}));
  EXPECT_THROW((void)core->spec(twin_uid), std::out_of_range);
}

// Kueue's Workload keeps spec.priority mutable: an admitted workload whose priority is
// lowered (the twin's approved downgrade) keeps its quota and becomes a preemption
// candidate below a preemptor it outranked, and the waiting preemptor is requeued.
TEST(PriorityChange, ALoweredPriorityMakesAnAdmittedWorkloadTheVictim) {
  auto q = queue("a", "", {quota("nvidia.com/gpu", 8)});
  q.preemption.within_cluster_queue = PreemptionPolicy::LowerPriority;
  auto core = make({q});
  const auto old_id = core->submit(workload("old", "a", 4, 100, 0), 0);
  const auto young_id = core->submit(workload("young", "a", 4, 100, 1), 1);
  for (int i = 0; i < 5 && core->has_active_heads(); ++i) core->run_cycle(1);
  ASSERT_TRUE(admitted(*core, old_id) && admitted(*core, young_id));
  // Priority 50 outranks neither: it waits, inadmissible.
  const auto urgent = core->submit(workload("urgent", "a", 4, 50, 2), 2);
  CycleResult r = core->run_cycle(2);
  EXPECT_TRUE(r.evicted.empty());
  EXPECT_FALSE(core->has_active_heads());
  // The older one is downgraded (the newest reservation would otherwise go first).
  ASSERT_TRUE(core->set_priority(old_id, 10).ok());
  EXPECT_EQ(core->spec(old_id).priority, 10);
  EXPECT_FALSE(*core->set_priority(old_id, 10)) << "the same priority changes nothing";
  EXPECT_TRUE(admitted(*core, old_id)) << "a priority change evicts nobody by itself";
  EXPECT_TRUE(core->has_active_heads()) << "the preemptor is requeued";
  r = core->run_cycle(3);
  EXPECT_EQ(core->status(old_id).phase, WorkloadPhase::Evicted);
  EXPECT_TRUE(admitted(*core, young_id));
  core->release_evicted(old_id, 3);
  for (int i = 0; i < 5 && core->has_active_heads(); ++i) core->run_cycle(4);
  EXPECT_TRUE(admitted(*core, urgent));
  // Only an admitted workload's priority changes here; unknown ids are refused.
  EXPECT_FALSE(core->set_priority(old_id, 1).ok());
  EXPECT_FALSE(core->set_priority(999, 1).ok());
}

// ---- quota changes and evictions outside a cycle (the bank's hooks) ---------------------

Amount available(const AdmissionCore& core, const std::string& node) {
  return core.figures(node, "default", "nvidia.com/gpu")->available;
}

// search lends at most 8 of its 32; ads borrows 16 beyond its 16. Holding ads' borrowing
// at 0 must not change what anyone has or could get now, only what ads may add.
TEST(QuotaUpdate, LoweringABorrowingLimitKeepsUsageAndBlocksNewBorrowing) {
  auto core = make({queue("search", "pool", {quota("nvidia.com/gpu", 32, 16, 8)}),
                    queue("ads", "pool", {quota("nvidia.com/gpu", 16, 16)}),
                    queue("research", "pool", {quota("nvidia.com/gpu", 8, 24)})});
  const auto s = core->submit(workload("s", "search", 24), 0);
  const auto a1 = core->submit(workload("a1", "ads", 16), 0);
  const auto a2 = core->submit(workload("a2", "ads", 8), 0);
  const auto a3 = core->submit(workload("a3", "ads", 8), 0);
  for (int i = 0; i < 5 && core->has_active_heads(); ++i) core->run_cycle(1);
  ASSERT_TRUE(admitted(*core, s) && admitted(*core, a1) && admitted(*core, a2) && admitted(*core, a3));
  EXPECT_EQ(available(*core, "search"), 0);
  EXPECT_EQ(core->figures("pool", "default", "nvidia.com/gpu")->usage, 32);

  ASSERT_TRUE(core->set_quota("ads", "default", quota("nvidia.com/gpu", 16, 0)).ok());
  EXPECT_EQ(core->figures("pool", "default", "nvidia.com/gpu")->usage, 32);
  EXPECT_EQ(available(*core, "search"), 0);
  EXPECT_TRUE(admitted(*core, a3)) << "a quota change evicts nobody";

  // The bank stops a3 (evict + release): search can take the 8 back, ads cannot borrow them.
  ASSERT_TRUE(core->evict(a3, "GracefulReclaim", "stopped", 2).ok());
  EXPECT_EQ(core->status(a3).phase, WorkloadPhase::Evicted);
  EXPECT_FALSE(core->evict(a3, "GracefulReclaim", "again", 2).ok()) << "only an admitted workload can be evicted";
  core->release_evicted(a3, 2);
  EXPECT_EQ(available(*core, "search"), 8);
  const auto s2 = core->submit(workload("s2", "search", 8), 3);
  for (int i = 0; i < 5 && core->has_active_heads(); ++i) core->run_cycle(3);
  EXPECT_TRUE(admitted(*core, s2));
  EXPECT_FALSE(admitted(*core, a3));

  EXPECT_FALSE(core->set_quota("nope", "default", quota("nvidia.com/gpu", 1)).ok());
  EXPECT_FALSE(core->set_quota("ads", "spot", quota("nvidia.com/gpu", 1)).ok());
  EXPECT_FALSE(core->set_quota("ads", "default", quota("nvidia.com/gpu", 4, std::nullopt, 5)).ok());
}

TEST(QuotaUpdate, CyclesAfterAHoldKeepTheUsageSpillOver) {
  auto core = make({queue("search", "pool", {quota("nvidia.com/gpu", 32, 16, 8)}),
                    queue("ads", "pool", {quota("nvidia.com/gpu", 16, 16)}),
                    queue("research", "pool", {quota("nvidia.com/gpu", 8, 24)})});
  core->submit(workload("s", "search", 24), 0);
  core->submit(workload("a1", "ads", 16), 0);
  core->submit(workload("a2", "ads", 8), 0);
  core->submit(workload("a3", "ads", 8), 0);
  core->submit(workload("a4", "ads", 8), 0);  // pending: ads is at its cap
  for (int i = 0; i < 5 && core->has_active_heads(); ++i) core->run_cycle(1);
  const auto s2 = core->submit(workload("s2", "search", 8), 2);
  for (int i = 0; i < 5 && core->has_active_heads(); ++i) core->run_cycle(2);
  EXPECT_FALSE(admitted(*core, s2));
  ASSERT_TRUE(core->set_quota("search", "default", quota("nvidia.com/gpu", 32, 16, 8)).ok());
  ASSERT_TRUE(core->set_quota("ads", "default", quota("nvidia.com/gpu", 16, 0)).ok());
  ASSERT_TRUE(core->set_quota("research", "default", quota("nvidia.com/gpu", 8, 0)).ok());
  EXPECT_EQ(core->figures("pool", "default", "nvidia.com/gpu")->usage, 32);
  // a4's head now borrows above ads' held limit: what Kueue reserves for it must not leak
  // into the cohort's usage.
  for (int i = 0; i < 5 && core->has_active_heads(); ++i) core->run_cycle(3);
  EXPECT_EQ(core->figures("pool", "default", "nvidia.com/gpu")->usage, 32);
  EXPECT_EQ(available(*core, "search"), 0);
}

TEST(QuotaUpdate, RaisingAGuaranteeAdmitsWhatWaits) {
  auto core = make({queue("a", "pool", {quota("nvidia.com/gpu", 8, 0)}), queue("b", "pool", {quota("nvidia.com/gpu", 8, 0)})});
  const auto w = core->submit(workload("w", "a", 12), 0);
  for (int i = 0; i < 5 && core->has_active_heads(); ++i) core->run_cycle(0);
  EXPECT_FALSE(admitted(*core, w));
  ASSERT_TRUE(core->set_quota("a", "default", quota("nvidia.com/gpu", 16, 0)).ok());
  EXPECT_TRUE(core->has_active_heads()) << "pending workloads are requeued";
  for (int i = 0; i < 5 && core->has_active_heads(); ++i) core->run_cycle(1);
  EXPECT_TRUE(admitted(*core, w));
  EXPECT_EQ(core->figures("pool", "default", "nvidia.com/gpu")->subtree_quota, 24);
}

// The core keeps statuses compact and status() renders them: what each stage of a
// workload's life renders to.
TEST(StatusRendering, AdmissionListsEachPodSetWithFlavorsByResourceAndTotals) {
  auto core = make({queue("cq", "", {quota("cpu", 10000), quota("memory", 1 << 30), quota("nvidia.com/gpu", 8)})});
  WorkloadSpec w = workload("a", "cq", 0);
  w.pod_sets[0] = PodSetSpec{"main", 2, {{"cpu", 500}, {"nvidia.com/gpu", 1}}, {}, {}, {}, -1, {}};
  w.pod_sets.push_back(PodSetSpec{"aux", 1, {{"memory", 1024}}, {}, {}, {}, -1, {}});
  const WorkloadId id = core->submit(w, 0);
  core->run_cycle(3);

  const WorkloadStatus s = core->status(id);
  EXPECT_EQ(core->phase(id), WorkloadPhase::Admitted);
  EXPECT_EQ(s.admitted_at, 3);
  ASSERT_TRUE(s.admission.has_value());
  EXPECT_EQ(s.admission->cluster_queue, "cq");
  ASSERT_EQ(s.admission->pod_sets.size(), 2u);
  const auto& main = s.admission->pod_sets[0];
  EXPECT_EQ(main.name, "main");
  EXPECT_EQ(main.count, 2);
  using Flavors = std::vector<std::pair<std::string, std::string>>;
  using Usage = std::vector<std::pair<std::string, Amount>>;
  EXPECT_EQ(main.flavors, (Flavors{{"cpu", "default"}, {"nvidia.com/gpu", "default"}}));
  EXPECT_EQ(main.resource_usage, (Usage{{"cpu", 1000}, {"nvidia.com/gpu", 2}}));  // per pod x count
  const auto& aux = s.admission->pod_sets[1];
  EXPECT_EQ(aux.name, "aux");
  EXPECT_EQ(aux.flavors, (Flavors{{"memory", "default"}}));
  EXPECT_EQ(aux.resource_usage, (Usage{{"memory", 1024}}));
  ASSERT_EQ(s.conditions.size(), 2u);
  expect_condition(s, "QuotaReserved", true, "QuotaReserved", "Quota reserved in ClusterQueue cq", 3);
  expect_condition(s, "Admitted", true, "Admitted", "The workload is admitted", 3);

  // A finished workload keeps its admission in the status, as the Workload object does.
  core->finish(id, 9);
  const WorkloadStatus f = core->status(id);
  EXPECT_EQ(core->phase(id), WorkloadPhase::Finished);
  ASSERT_TRUE(f.admission.has_value());
  EXPECT_EQ(f.admission->pod_sets.size(), 2u);
  expect_condition(f, "Finished", true, "Succeeded", "Job finished successfully", 9);
}

// Partial admission (PodSetReducer): scheduler_test.go TestSchedule "partial admission
// multiple variable pod sets" and "partial admission disabled, multiple variable pod sets".
// A queue of 50 cpu; pod sets of 1-cpu pods: one 20 (fixed), two 30 (minCount 10), three 15
// (minCount 5). The full 65 cpu is over the maximum capacity. totalDelta = 20 + 10 = 30,
// index i gives two 30 - 20i/30 and three 15 - 10i/30 pods. Probes: i=15 (20 + 20 + 10 =
// 50) fits; i=7 (20 + 26 + 13 = 59) no; i=11 (20 + 23 + 12 = 55) no; i=13 (20 + 22 + 11 =
// 53) no; i=14 (20 + 21 + 11 = 52) no. First fit: i=15.
WorkloadSpec variable_pod_sets(const std::string& cq) {
  WorkloadSpec w = cpu_workload("new", cq, 0);
  w.pod_sets = {PodSetSpec{"one", 20, {{"cpu", 1000}}, {}, {}, {}, -1, {}},
                PodSetSpec{"two", 30, {{"cpu", 1000}}, {}, {}, 10, -1, {}},
                PodSetSpec{"three", 15, {{"cpu", 1000}}, {}, {}, 5, -1, {}}};
  return w;
}

TEST(PartialAdmission, VariablePodSetsShrinkTogetherToTheFirstIndexThatFits) {
  auto core = make({queue("sales", "", {quota("cpu", 50000, 0)})});
  const WorkloadId id = core->submit(variable_pod_sets("sales"), 0);
  const CycleResult r = core->run_cycle(1);
  ASSERT_EQ(r.decisions.size(), 1u);
  EXPECT_EQ(r.decisions[0].kind, Decision::Kind::Admitted);
  const WorkloadStatus s = core->status(id);
  ASSERT_TRUE(s.admission.has_value());
  ASSERT_EQ(s.admission->pod_sets.size(), 3u);
  using Usage = std::vector<std::pair<std::string, Amount>>;
  const std::vector<std::int32_t> counts = {20, 20, 10};
  for (std::size_t p = 0; p < 3; ++p) {
    EXPECT_EQ(s.admission->pod_sets[p].count, counts[p]) << p;
    EXPECT_EQ(s.admission->pod_sets[p].resource_usage, (Usage{{"cpu", 1000 * counts[p]}})) << p;
  }
  EXPECT_EQ(core->figures("sales", "default", "cpu")->usage, 50000);
  expect_condition(s, "QuotaReserved", true, "QuotaReserved", "Quota reserved in ClusterQueue sales", 1);
  // The spec keeps its counts; finishing gives back what the admission took.
  EXPECT_EQ(core->spec(id).pod_sets[1].count, 30);
  core->finish(id, 2);
  EXPECT_EQ(core->figures("sales", "default", "cpu")->usage, 0);
}

TEST(PartialAdmission, OffItWaitsWithTheFullAssignmentsMessage) {
  CoreOptions options;
  options.partial_admission = false;
  auto core = make({queue("sales", "", {quota("cpu", 50000, 0)})}, {}, options);
  const WorkloadId id = core->submit(variable_pod_sets("sales"), 0);
  core->run_cycle(1);
  EXPECT_FALSE(admitted(*core, id));
  const WorkloadStatus s = core->status(id);
  const Condition* c = condition(s, "QuotaReserved");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->message,
            "couldn't assign flavors to pod set three: insufficient quota for cpu in flavor default, previously "
            "considered podsets requests (50) + current podset request (15) > maximum capacity (50)");
}

TEST(PartialAdmission, MinCountIsPartOfTheSchedulingShape) {
  // computeSchedulingHash includes minCount: a workload that differs from a failed head
  // only in it is not set aside with the head's class. Quota 4 GPUs, 2 in use.
  auto core = make({queue("a", "", {quota("nvidia.com/gpu", 4)})});
  core->submit(workload("running", "a", 2, 0, 0), 0);
  core->run_cycle(0);
  WorkloadSpec strict = workload("needs-3", "a", 1, 0, 1);
  strict.pod_sets[0].count = 4;
  strict.pod_sets[0].min_count = 3;
  WorkloadSpec flexible = strict;
  flexible.name = "needs-2";
  flexible.uid = "uid-needs-2";
  flexible.creation = 2;
  flexible.pod_sets[0].min_count = 2;
  const WorkloadId a = core->submit(strict, 1);
  const WorkloadId b = core->submit(flexible, 1);
  core->run_cycle(1);  // head needs-3: even 3 pods are over the 2 unused, NoFit
  core->run_cycle(2);  // needs-2 is evaluated: 2 pods fit
  EXPECT_FALSE(admitted(*core, a));
  ASSERT_TRUE(admitted(*core, b));
  EXPECT_EQ(core->status(b).admission->pod_sets[0].count, 2);
}

TEST(StatusRendering, RestoredAdmissionIsRenderedAsGiven) {
  auto core = make({queue("cq", "", {quota("nvidia.com/gpu", 8)})});
  Admission given;
  given.cluster_queue = "cq";
  given.pod_sets.push_back(PodSetAssignment{"main", {{"nvidia.com/gpu", "default"}}, {{"nvidia.com/gpu", 3}}, 1});
  // The spec asks for 1 GPU; the admission read back from the object says 3, and wins.
  const auto id = core->restore_admitted(workload("r", "cq", 1), given, 7);
  ASSERT_TRUE(id.ok()) << id.error();
  const WorkloadStatus s = core->status(*id);
  ASSERT_TRUE(s.admission.has_value());
  EXPECT_EQ(s.admission->pod_sets.at(0).resource_usage, given.pod_sets[0].resource_usage);
  EXPECT_EQ(s.admission->pod_sets.at(0).flavors, given.pod_sets[0].flavors);
  EXPECT_EQ(s.admitted_at, 7);
  expect_condition(s, "QuotaReserved", true, "QuotaReserved", "Quota reserved in ClusterQueue cq", 7);
  expect_condition(s, "Admitted", true, "Admitted", "The workload is admitted", 7);
  EXPECT_EQ(core->figures("cq", "default", "nvidia.com/gpu")->usage, 3);
}

TEST(StatusRendering, EvictionRequeueAndReadmissionKeepKueuesConditionHistory) {
  auto core = make({queue("cq", "", {quota("nvidia.com/gpu", 4)})});
  const WorkloadId id = core->submit(workload("a", "cq", 4), 0);
  core->run_cycle(1);
  ASSERT_TRUE(core->evict(id, "InCohortReclamation", "reclaimed by the bank", 10).ok());
  WorkloadStatus s = core->status(id);
  EXPECT_EQ(s.phase, WorkloadPhase::Evicted);
  EXPECT_TRUE(s.admission.has_value());  // the victim holds its quota until its pods are gone
  expect_condition(s, "Evicted", true, "Preempted", "reclaimed by the bank", 10);
  expect_condition(s, "Preempted", true, "InCohortReclamation", "reclaimed by the bank", 10);

  core->release_evicted(id, 11);
  s = core->status(id);
  EXPECT_EQ(s.phase, WorkloadPhase::Pending);
  EXPECT_FALSE(s.admission.has_value());
  expect_condition(s, "QuotaReserved", false, "Preempted", "reclaimed by the bank", 11);
  expect_condition(s, "Admitted", false, "NoReservation", "The workload has no reservation", 11);
  expect_condition(s, "Requeued", true, "Preempted", "reclaimed by the bank", 11);

  core->run_cycle(12);
  s = core->status(id);
  EXPECT_EQ(s.phase, WorkloadPhase::Admitted);
  expect_condition(s, "QuotaReserved", true, "QuotaReserved", "Quota reserved in ClusterQueue cq", 12);
  expect_condition(s, "Evicted", false, "QuotaReserved", "Previously: reclaimed by the bank", 12);
  expect_condition(s, "Preempted", false, "QuotaReserved", "Previously: reclaimed by the bank", 12);
  expect_condition(s, "Admitted", true, "Admitted", "The workload is admitted", 12);
  // Kueue's order: each condition where it was first set.
  std::vector<std::string> types;
  for (const auto& c : s.conditions) types.push_back(c.type);
  EXPECT_EQ(types, (std::vector<std::string>{"QuotaReserved", "Admitted", "Evicted", "Preempted", "Requeued"}));
}

}  // namespace
}  // namespace gpubank::twin
