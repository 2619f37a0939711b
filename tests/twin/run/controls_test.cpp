// Controllers acting on a running simulation (Simulation::submit, remove, reserve,
// cap_borrowing): what the inference autoscaler and the tidal controller use.
#include <gtest/gtest.h>

#include <algorithm>

#include "support/policy_fixture.hpp"
#include "twin/run/engine.hpp"

namespace gpubank::twin::run {
namespace {

// Pool `serve` of 16: cs owns all 16 (lends them all, 5 min grace), train has no guarantee
// and may borrow 16.
constexpr std::string_view kPolicies = R"(
apiVersion: platform.gpubank.dev/v1alpha1
kind: PlatformGuardrails
metadata: {name: platform}
spec:
  platformAdmins: [group:platform]
  pools:
  - {name: serve, gpuModel: H100, capacity: 16, role: inference, gpusPerNode: 8}
  groups:
  - {name: cs, costCenter: CC-1, admins: [group:cs], namespaces: [cs], limits: {serve: {minGuaranteed: 0, maxCapacity: 16}}}
  - {name: train, costCenter: CC-2, admins: [group:train], namespaces: [train], limits: {serve: {minGuaranteed: 0, maxCapacity: 16}}}
  priorities:
  - {name: serving, value: 100000, workloadTypes: [inference], preemptible: false}
  - {name: standard, value: 1000, workloadTypes: [training, batch]}
---
apiVersion: platform.gpubank.dev/v1alpha1
kind: GPUQuotaPolicy
metadata: {name: cs-serve}
spec:
  businessGroup: cs
  resourcePool: serve
  guaranteed: 16
  borrowLimit: 0
  reclaimPolicy: {gracePeriod: 5m}
---
apiVersion: platform.gpubank.dev/v1alpha1
kind: GPUQuotaPolicy
metadata: {name: train-serve}
spec: {businessGroup: train, resourcePool: serve, guaranteed: 0, borrowLimit: 16}
)";

// Two 8-GPU training jobs borrow the whole pool from 0 for 4 h; both checkpoint in 2 min.
constexpr std::string_view kWorkloads = R"(
workloads:
- {name: t1, businessGroup: train, resourcePool: serve, gpus: 8, runTime: 4h, priorityClass: standard,
   checkpointable: true, checkpointInterval: 30m, checkpointDuration: 2m}
- {name: t2, businessGroup: train, resourcePool: serve, gpus: 8, runTime: 4h, arrivalTime: 1s, priorityClass: standard,
   checkpointable: true, checkpointInterval: 30m, checkpointDuration: 2m}
)";

constexpr std::int64_t kMinute = 60'000;

struct Fixture {
  policy::PolicySet policies = testing::from_yaml(kPolicies);
  Scenario scenario;
  std::optional<Simulation> sim;

  Fixture() {
    Diagnostics d;
    auto parsed = parse_scenario(kWorkloads, "scenario.yaml", d);
    EXPECT_TRUE(parsed) << (d.empty() ? "" : d.front().to_string());
    scenario = std::move(*parsed);
    sim.emplace(policies, scenario);
    EXPECT_TRUE(sim->start());
  }
  [[nodiscard]] std::vector<const Event*> events(std::string_view kind) const {
    std::vector<const Event*> out;
    for (const auto& e : sim->result().events) {
      if (e.kind == kind) out.push_back(&e);
    }
    return out;
  }
  [[nodiscard]] std::string state(std::string_view key) const {
    for (const auto& w : sim->workloads()) {
      if (w.workload == key) return w.state;
    }
    return "";
  }
};

ScenarioWorkload replica(std::string name) {
  ScenarioWorkload w;
  w.name = std::move(name);
  w.business_group = "cs";
  w.resource_pool = "serve";
  w.gpus = 4;
  w.workload_type = policy::WorkloadType::Inference;
  w.priority_class = "serving";
  w.run_time = Duration(std::chrono::hours(24));
  return w;
}

TEST(SimulationControls, SubmitArrivesNowAndIsCheckedLikeTheScenario) {
  Fixture f;
  ASSERT_TRUE(f.sim->advance_to(10 * kMinute));
  ASSERT_EQ(f.state("train/t1"), "Running");
  auto key = f.sim->submit(replica("r1"), "autoscaler");
  ASSERT_TRUE(key) << key.error();
  EXPECT_EQ(*key, "cs/r1");
  // cs's 4 GPUs are lent to train: the replica is pending and cs's demand starts a reclaim
  // at once, at 10 min (t1 and t2 are both 8: victims.hpp picks one of them).
  EXPECT_EQ(f.state("cs/r1"), "Pending");
  const auto started = f.events("ReclaimStarted");
  ASSERT_EQ(started.size(), 1u);
  EXPECT_EQ(started[0]->t, 10 * kMinute);
  EXPECT_EQ(started[0]->reason, "LenderDemand");
  // The victim checkpoints in 2 min and stops; the replica is admitted at 12 min.
  ASSERT_TRUE(f.sim->advance_to(13 * kMinute));
  EXPECT_EQ(f.state("cs/r1"), "Running");
  bool admitted = false;
  for (const auto* e : f.events("Admitted")) admitted |= e->object == "Workload/cs/r1" && e->t == 12 * kMinute;
  EXPECT_TRUE(admitted);
  // The audit names the controller for the submission's own decisions.
  // Errors: a name that exists, a group without quota in the pool, a forged priority class.
  auto again = f.sim->submit(replica("r1"), "autoscaler");
  ASSERT_FALSE(again);
  EXPECT_NE(again.error().find("exists already"), std::string::npos);
  auto stranger = replica("r2");
  stranger.business_group = "nobody";
  ASSERT_FALSE(f.sim->submit(stranger, "autoscaler"));
  auto forged = replica("r3");
  forged.workload_type = policy::WorkloadType::Training;
  auto refused = f.sim->submit(forged, "autoscaler");
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().find("not allowed for workload type"), std::string::npos) << refused.error();
}

// An approved downgrade (Simulation::downgrade_approved): train owns the whole pool; t1 and
// t2 (8 GPUs each, standard) run in it; t3 (standard) arrives at 30 min and must wait, since
// withinClusterQueue LowerPriority never takes an equal priority. After t1 is downgraded to
// `low` at 10 min, t3 preempts t1 and is admitted. A downgrade to a class that is not lower
// changes nothing (DowngradeSkipped); an unknown or non-preemptible class is refused.
constexpr std::string_view kDowngradePolicies = R"(
apiVersion: platform.gpubank.dev/v1alpha1
kind: PlatformGuardrails
metadata: {name: platform}
spec:
  platformAdmins: [group:platform]
  pools:
  - {name: pool, gpuModel: H100, capacity: 16, role: training, gpusPerNode: 8}
  groups:
  - {name: train, costCenter: CC-2, admins: [group:train], namespaces: [train], limits: {pool: {minGuaranteed: 0, maxCapacity: 16}}}
  priorities:
  - {name: pinned, value: 5000, workloadTypes: [training], preemptible: false}
  - {name: standard, value: 1000, workloadTypes: [training, batch]}
  - {name: low, value: 10, workloadTypes: [training, batch]}
---
apiVersion: platform.gpubank.dev/v1alpha1
kind: GPUQuotaPolicy
metadata: {name: train-pool}
spec: {businessGroup: train, resourcePool: pool, guaranteed: 16, borrowLimit: 0}
)";

constexpr std::string_view kDowngradeWorkloads = R"(
workloads:
- {name: t1, businessGroup: train, resourcePool: pool, gpus: 8, runTime: 4h, priorityClass: standard}
- {name: t2, businessGroup: train, resourcePool: pool, gpus: 8, runTime: 4h, arrivalTime: 1s, priorityClass: standard}
- {name: t3, businessGroup: train, resourcePool: pool, gpus: 8, runTime: 1h, arrivalTime: 30m, priorityClass: standard}
)";

// t3's state at 40 min, with or without t1's downgrade at 10 min; the events of the run.
std::pair<std::string, std::vector<Event>> run_with_downgrade(bool downgrade) {
  const policy::PolicySet policies = testing::from_yaml(kDowngradePolicies);
  Diagnostics d;
  auto parsed = parse_scenario(kDowngradeWorkloads, "scenario.yaml", d);
  EXPECT_TRUE(parsed);
  Simulation sim(policies, *parsed);
  EXPECT_TRUE(sim.start());
  EXPECT_TRUE(sim.advance_to(10 * kMinute));
  if (downgrade) {
    auto done = sim.downgrade_approved("train/t1", "low", "rita approved the downgrade", "api:rita");
    EXPECT_TRUE(done) << (done ? "" : done.error());
    EXPECT_TRUE(done && *done);
    // Not lower than where it is now: nothing to do, said as an event.
    auto again = sim.downgrade_approved("train/t1", "standard", "again", "api:rita");
    EXPECT_TRUE(again && !*again);
    EXPECT_FALSE(sim.downgrade_approved("train/t1", "nope", "", "api:rita"));
    auto pinned = sim.downgrade_approved("train/t2", "pinned", "", "api:rita");
    EXPECT_FALSE(pinned);
    EXPECT_FALSE(sim.downgrade_approved("train/none", "low", "", "api:rita"));
  }
  EXPECT_TRUE(sim.advance_to(40 * kMinute));
  std::string t3;
  for (const auto& w : sim.workloads()) {
    if (w.workload == "train/t3") t3 = w.state;
  }
  return {t3, sim.result().events};
}

TEST(SimulationControls, AnApprovedDowngradeMakesTheWorkloadPreemptibleByItsPeers) {
  const auto [without, plain_events] = run_with_downgrade(false);
  EXPECT_EQ(without, "Pending") << "an equal priority preempts nobody";
  const auto [with, events] = run_with_downgrade(true);
  EXPECT_EQ(with, "Running");
  std::vector<std::string> t1;
  for (const Event& e : events) {
    if (e.object == "Workload/train/t1" && e.t >= 10 * kMinute) t1.push_back(e.kind + "/" + e.reason);
  }
  ASSERT_GE(t1.size(), 3u) << ::testing::PrintToString(t1);
  EXPECT_EQ(t1[0], "WorkloadDowngraded/DowngradeApproved");
  EXPECT_EQ(t1[1], "DowngradeSkipped/DowngradeApproved");
  EXPECT_NE(std::find(t1.begin(), t1.end(), "Preempted/InClusterQueue"), t1.end()) << ::testing::PrintToString(t1);
  for (const Event& e : events) {
    if (e.kind == "WorkloadDowngraded") {
      EXPECT_EQ(e.numbers.at("fromPriority"), 1000);
      EXPECT_EQ(e.numbers.at("priority"), 10);
    }
  }
}

TEST(SimulationControls, RemoveDeletesNowAndFreesTheGpus) {
  Fixture f;
  ASSERT_TRUE(f.sim->advance_to(kMinute));
  auto removed = f.sim->remove("train/t1", "operator");
  ASSERT_TRUE(removed) << removed.error();
  EXPECT_TRUE(*removed);
  EXPECT_EQ(f.state("train/t1"), "Deleted");
  const auto deleted = f.events("Deleted");
  ASSERT_EQ(deleted.size(), 1u);
  EXPECT_EQ(deleted[0]->t, kMinute);
  const auto& audit = f.sim->result().audit;
  const auto entry = std::find_if(audit.begin(), audit.end(), [](const bank::AuditEntry& a) { return a.action == "Deleted"; });
  ASSERT_NE(entry, audit.end());
  EXPECT_EQ(entry->actor, "operator");
  // Twice: false, nothing happens; unknown: an error.
  auto twice = f.sim->remove("train/t1", "operator");
  ASSERT_TRUE(twice);
  EXPECT_FALSE(*twice);
  EXPECT_FALSE(f.sim->remove("train/none", "operator"));
  // 8 GPUs are free now: cs uses 0, train 8.
  for (const auto& q : f.sim->queues()) {
    if (q.business_group == "train") {
      EXPECT_EQ(q.used, 8);
    }
  }
}

TEST(SimulationControls, ReservationReclaimsWithItsOwnGraceAndIsNotLentAgain) {
  Fixture f;
  ASSERT_TRUE(f.sim->advance_to(30 * kMinute));
  // A tidal window will need 8 of cs's GPUs: reserve them with a 10 min grace.
  auto reserved = f.sim->reserve("cs", "serve", 8, 10 * kMinute, "window daytime-serving", "tidal-controller");
  ASSERT_TRUE(reserved) << reserved.error();
  const auto started = f.events("ReclaimStarted");
  ASSERT_EQ(started.size(), 1u);
  EXPECT_EQ(started[0]->reason, "Reservation");
  EXPECT_EQ(started[0]->numbers["demand"], 8);
  const auto notices = f.events("ReclaimNoticeSent");
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_EQ(notices[0]->numbers["graceSeconds"], 600);  // the reservation's, not the policy's 300
  // The victim saves in 2 min and stops at 32 min; it goes back to the queue after the
  // 60 s backoff, but the 8 reserved GPUs are no longer lendable: it stays pending.
  ASSERT_TRUE(f.sim->advance_to(3 * 60 * kMinute));
  EXPECT_EQ(f.events("ReclaimVictimStopped").size(), 1u);
  EXPECT_EQ(f.events("ReclaimStarted").size(), 1u);  // no second round: nothing re-borrowed
  std::int64_t train_used = 0;
  for (const auto& q : f.sim->queues()) {
    if (q.business_group == "train") train_used = q.used;
    if (q.business_group == "cs") {
      EXPECT_EQ(q.lending_limit, 8);  // 16 - 8 reserved
    }
  }
  EXPECT_EQ(train_used, 8);
  // Withdrawn: the lending limit goes back and the waiting job borrows again.
  ASSERT_TRUE(f.sim->reserve("cs", "serve", 0, std::nullopt, "window over", "tidal-controller"));
  train_used = 0;
  for (const auto& q : f.sim->queues()) {
    if (q.business_group == "train") train_used = q.used;
  }
  EXPECT_EQ(train_used, 16);
  EXPECT_EQ(f.events("CapacityReserved").size(), 2u);
  EXPECT_FALSE(f.sim->reserve("cs", "nowhere", 8, std::nullopt, "x", "y"));
  EXPECT_FALSE(f.sim->reserve("cs", "serve", -1, std::nullopt, "x", "y"));
}

TEST(SimulationControls, BorrowingCapStopsNewBorrowingWithoutEvicting) {
  Fixture f;
  ASSERT_TRUE(f.sim->advance_to(kMinute));
  auto capped = f.sim->cap_borrowing("train", "serve", 8, "daytime trainingBorrowLimit", "tidal-controller");
  ASSERT_TRUE(capped) << capped.error();
  EXPECT_TRUE(*capped);
  const auto cap = f.events("BorrowingCapped");
  ASSERT_EQ(cap.size(), 1u);
  EXPECT_EQ(cap[0]->numbers["borrowed"], 16);
  EXPECT_EQ(cap[0]->numbers["cap"], 8);
  // Both jobs keep running (16 > 8): a lowered borrowingLimit evicts nobody.
  EXPECT_EQ(f.state("train/t1"), "Running");
  EXPECT_EQ(f.state("train/t2"), "Running");
  // A third job cannot borrow above the cap even once t1 is gone: 8 (t2) + 8 > 8.
  ScenarioWorkload t3;
  t3.name = "t3";
  t3.business_group = "train";
  t3.resource_pool = "serve";
  t3.gpus = 8;
  t3.priority_class = "standard";
  t3.run_time = Duration(std::chrono::hours(1));
  ASSERT_TRUE(f.sim->remove("train/t1", "operator"));
  ASSERT_TRUE(f.sim->submit(t3, "operator"));
  EXPECT_EQ(f.state("train/t3"), "Pending");
  // Lifted: it is admitted.
  ASSERT_TRUE(f.sim->cap_borrowing("train", "serve", std::nullopt, "night", "tidal-controller"));
  EXPECT_EQ(f.state("train/t3"), "Running");
  auto same = f.sim->cap_borrowing("train", "serve", std::nullopt, "night", "tidal-controller");
  ASSERT_TRUE(same);
  EXPECT_FALSE(*same);
}

}  // namespace
}  // namespace gpubank::twin::run
