// `twin run` with a cluster: admitted workloads wait (state Placing, event Unschedulable
// with the fragmentation numbers) until their whole shape fits, the summary's figures,
// streaming the records instead of keeping them, Kueue's waitForPodsReady (evict, back
// off, deactivate) and the reclaim of quota lent to a borrower that is still Placing.
#include <gtest/gtest.h>

#include "support/policy_fixture.hpp"
#include "twin/cluster/identity.hpp"
#include "twin/cluster/inventory.hpp"
#include "twin/run/engine.hpp"
#include "render/kueue.hpp"
#include "twin/run/pods_ready.hpp"
#include "twin/run/summary.hpp"

namespace gpubank::twin::run {
namespace {

constexpr std::string_view kPolicies = R"(
apiVersion: platform.gpubank.dev/v1alpha1
kind: PlatformGuardrails
metadata: {name: platform}
spec:
  platformAdmins: [group:platform]
  pools:
  - name: serve
    gpuModel: H100
    capacity: 16
    role: inference
    gpusPerNode: 8
    nodeLabels: {platform.gpubank.dev/pool: serve}
    taints: [{key: platform.gpubank.dev/pool, value: serve, effect: NoSchedule}]
  groups:
  - {name: cs, costCenter: CC-1, admins: [group:cs], namespaces: [cs], limits: {serve: {minGuaranteed: 0, maxCapacity: 16}}}
  priorities:
  - {name: standard, value: 1000, workloadTypes: [training, batch, inference]}
---
apiVersion: platform.gpubank.dev/v1alpha1
kind: GPUQuotaPolicy
metadata: {name: cs-serve}
spec: {businessGroup: cs, resourcePool: serve, guaranteed: 16, borrowLimit: 0}
)";

// Two nodes of 8 H100 in the pool, tainted as the pool says (so only the pool's
// workloads, which Kueue gives the toleration, land there).
constexpr std::string_view kInventory = R"(
kind: Inventory
nodeGroups:
- namePrefix: serve
  count: 2
  gpuModel: H100
  product: NVIDIA-H100-80GB-HBM3
  gpusPerNode: 8
  gpuMemory: 80Gi
  labels: {platform.gpubank.dev/pool: serve}
  taints: [{key: platform.gpubank.dev/pool, value: serve, effect: NoSchedule}]
)";

// w1 and w2 take 5 GPUs each (one per node: 3 + 3 left); w3 wants 4 on one node at 1 min:
// its quota is there (14 of 16) but no node has 4 free until w1 and w2 finish at 1 h.
constexpr std::string_view kWorkloads = R"(
workloads:
- {name: w1, businessGroup: cs, resourcePool: serve, gpus: 5, runTime: 1h, workloadType: inference}
- {name: w2, businessGroup: cs, resourcePool: serve, gpus: 5, runTime: 1h, workloadType: inference}
- {name: w3, businessGroup: cs, resourcePool: serve, gpus: 4, arrivalTime: 1m, runTime: 1h, workloadType: inference}
)";

constexpr std::int64_t kHour = 3'600'000, kMinute = 60'000;

struct PlacedRun {
  policy::PolicySet policies = testing::from_yaml(kPolicies);
  std::optional<Scenario> scenario;
  RunResult result;
};

PlacedRun run(RunOptions options = {}, std::string_view workloads = kWorkloads, std::string_view policies = kPolicies) {
  PlacedRun r;
  r.policies = testing::from_yaml(policies);
  Diagnostics d;
  r.scenario = parse_scenario(workloads, "scenario.yaml", d);
  EXPECT_TRUE(r.scenario);
  auto inventory = cluster::parse_inventory(kInventory, "inventory.yaml", d);
  EXPECT_TRUE(inventory) << (d.empty() ? "" : d.front().to_string());
  options.inventory = std::make_shared<const cluster::Inventory>(std::move(*inventory));
  r.result = run_scenario(r.policies, *r.scenario, options);
  EXPECT_TRUE(r.result.ok()) << (r.result.diagnostics.empty() ? "" : r.result.diagnostics.front().to_string());
  return r;
}

const Event* find(const RunResult& r, std::string_view kind, std::string_view object) {
  for (const auto& e : r.events) {
    if (e.kind == kind && e.object == object) return &e;
  }
  return nullptr;
}

TEST(Placement, AShapeThatDoesNotFitWaitsWithItsQuotaThenStartsWhenGpusFree) {
  const PlacedRun r = run();
  const Event* admitted = find(r.result, "Admitted", "Workload/cs/w3");
  ASSERT_NE(admitted, nullptr);
  EXPECT_EQ(admitted->t, kMinute);  // quota: 10 + 4 <= 16
  const Event* waiting = find(r.result, "Unschedulable", "Workload/cs/w3");
  ASSERT_NE(waiting, nullptr);
  EXPECT_EQ(waiting->t, kMinute);
  EXPECT_EQ(waiting->reason, "FragmentedCapacity");  // 6 free in all, at most 3 on a node
  EXPECT_EQ(waiting->numbers["freeGpus"], 6);
  EXPECT_EQ(waiting->numbers["mostFreeOnOneNode"], 3);
  EXPECT_EQ(waiting->numbers["nodesMatching"], 2);
  const Event* placed = find(r.result, "Placed", "Workload/cs/w3");
  ASSERT_NE(placed, nullptr);
  EXPECT_EQ(placed->t, kHour);  // when w1 and w2 finish
  EXPECT_NE(placed->message.find("serve-00"), std::string::npos) << placed->message;  // best fit, ties by node order
  // Its work starts when it is placed: finished at 2 h.
  for (const auto& w : r.result.workloads) {
    if (w.workload == "cs/w3") {
      EXPECT_EQ(w.state, "Finished");
      EXPECT_EQ(w.finished, 2 * kHour);
    }
  }
  EXPECT_EQ(r.result.end, 2 * kHour);  // the hourly fragmentation sample does not prolong the run
}

TEST(Placement, TheSummaryIntegratesQuotaAndGpusHeld) {
  const PlacedRun r = run();
  ASSERT_EQ(r.result.groups.size(), 1u);
  const GroupStats& g = r.result.groups[0];
  // Quota held: w1 and w2 5 GPUs for 1 h each; w3 4 GPUs from admission (1 min) to 2 h,
  // placing included.
  EXPECT_EQ(g.used_gpu_ms, 5 * kHour + 5 * kHour + 4 * (2 * kHour - kMinute));
  EXPECT_EQ(g.workloads, 3);
  EXPECT_EQ(g.admitted, 3);
  EXPECT_EQ(g.waits_ms, (std::vector<std::int64_t>{0, 0, 0}));
  // GPUs held on nodes: 5 + 5 for 1 h, 4 for 1 h (w3 placed at 1 h), in thousandths.
  EXPECT_EQ(r.result.cluster.units, 16);
  EXPECT_EQ(r.result.cluster.allocated_milli_ms, (5000 + 5000 + 4000) * kHour);
  // Samples at 1 h (before anything of that instant: 3 + 3 free, w3's 4-GPU shape waits,
  // so all 6 are stranded) and at 2 h (w3 runs, 12 free, nothing waits: none stranded).
  EXPECT_EQ(r.result.cluster.samples, 2);
  EXPECT_EQ(r.result.cluster.stranded_unit_samples, 6);
  EXPECT_EQ(r.result.cluster.free_unit_samples, 6 + 12);
  const Summary s = summarize(r.result);
  ASSERT_TRUE(s.cluster);
  EXPECT_DOUBLE_EQ(s.cluster->allocation_rate, 14000.0 * kHour / (16000.0 * 2 * kHour));
  EXPECT_DOUBLE_EQ(s.cluster->fragmentation_rate, 6.0 / 18.0);
  EXPECT_DOUBLE_EQ(s.cluster->idle_gpu_hours, 32.0 - 14.0);
}

TEST(Placement, StreamingGivesTheSameEventsAndKeepsNone) {
  const PlacedRun kept = run();
  std::vector<Event> streamed;
  RunOptions options;
  options.retain = false;
  options.on_event = [&](const Event& e) { streamed.push_back(e); };
  const PlacedRun dropped = run(options);
  EXPECT_TRUE(dropped.result.events.empty());
  EXPECT_TRUE(dropped.result.ledger.empty());
  EXPECT_EQ(dropped.result.event_count, static_cast<std::int64_t>(kept.result.events.size()));
  EXPECT_EQ(dropped.result.ledger_count, static_cast<std::int64_t>(kept.result.ledger.size()));
  ASSERT_EQ(streamed.size(), kept.result.events.size());
  for (std::size_t i = 0; i < streamed.size(); ++i) {
    EXPECT_EQ(event_json(streamed[i], {}), event_json(kept.result.events[i], {}));
  }
}

// At 30 min GPU 0 of serve-00, under w1, falls off the bus: w1 keeps its quota, gets new
// pods and restarts from scratch (no checkpoint): 5 GPUs x 30 min lost. serve-00 then has
// 7 healthy free GPUs (1-7), enough for w1's 5 again; w3 (4 on one node) still waits until
// w2 frees serve-01 at 1 h.
TEST(Placement, AnXidErrorRestartsTheWorkloadsOnTheGpuElsewhere) {
  const std::string workloads = std::string(kWorkloads) + "gpuFaults:\n- {node: serve-00, gpu: 0, xid: 79, at: 30m}\n";
  const PlacedRun r = run({}, workloads);
  const Event* fault = find(r.result, "GpuUnhealthy", "GPU/" + cluster::gpu_uuid("serve-00", 0));
  ASSERT_NE(fault, nullptr);
  EXPECT_EQ(fault->t, 30 * kMinute);
  EXPECT_EQ(fault->numbers["xid"], 79);
  EXPECT_EQ(fault->related, (std::vector<std::string>{"Workload/cs/w1"}));
  const Event* failed = find(r.result, "Failed", "Workload/cs/w1");
  ASSERT_NE(failed, nullptr);
  EXPECT_EQ(failed->reason, "GpuXidError");
  EXPECT_DOUBLE_EQ(failed->numbers["recomputeLossGpuHours"].get<double>(), 2.5);  // 5 GPUs x 0.5 h
  int placed_w1 = 0;
  for (const auto& e : r.result.events) {
    if (e.kind == "Placed" && e.object == "Workload/cs/w1") {
      ++placed_w1;
      EXPECT_NE(e.message.find("serve-00"), std::string::npos) << e.message;
    }
  }
  EXPECT_EQ(placed_w1, 2);  // at 0 and again at 30 min, on the GPUs left healthy
  for (const auto& w : r.result.workloads) {
    if (w.workload == "cs/w1") {
      EXPECT_EQ(w.finished, 30 * kMinute + kHour);
    }
    if (w.workload == "cs/w3") {
      EXPECT_EQ(w.finished, 2 * kHour);  // placed on serve-01 at 1 h
    }
  }
}

std::vector<const Event*> all(const RunResult& r, std::string_view object) {
  std::vector<const Event*> out;
  for (const auto& e : r.events) {
    if (e.object == object) out.push_back(&e);
  }
  return out;
}

const WorkloadOutcome* outcome(const RunResult& r, std::string_view key) {
  for (const auto& w : r.workloads) {
    if (w.workload == key) return &w;
  }
  return nullptr;
}

TEST(PodsReady, TheBackoffDoublesUpToItsMaxAndTheLimitDeactivates) {
  WaitForPodsReady config;  // Kueue's defaults: 60 s doubling, at most 3600 s, no limit
  std::vector<std::int64_t> seconds;
  for (std::int32_t count = 1; count <= 8; ++count) seconds.push_back(pods_ready_backoff_ms(config, count) / 1000);
  EXPECT_EQ(seconds, (std::vector<std::int64_t>{60, 120, 240, 480, 960, 1920, 3600, 3600}));
  EXPECT_FALSE(on_pods_ready_timeout(config, 1000).deactivate);  // backoffLimitCount null: without end
  config.backoff_limit_count = 2;
  const PodsReadyEviction first = on_pods_ready_timeout(config, 0);
  EXPECT_FALSE(first.deactivate);
  EXPECT_EQ(first.requeue_count, 1);
  EXPECT_EQ(first.backoff_ms, 60'000);
  EXPECT_EQ(on_pods_ready_timeout(config, 1).requeue_count, 2);
  EXPECT_EQ(on_pods_ready_timeout(config, 1).backoff_ms, 120'000);
  EXPECT_TRUE(on_pods_ready_timeout(config, 2).deactivate);  // count + 1 > backoffLimitCount
  // The examples' longest model load (6 min) fits in 10 minutes.
  policy::PolicySet policies = testing::examples_plus();
  const WaitForPodsReady rendered = rendered_wait_for_pods_ready(policies);
  EXPECT_EQ(rendered.timeout_ms, 10 * kMinute);
  EXPECT_EQ(rendered.recovery_ms(), 10 * kMinute);
  EXPECT_FALSE(rendered.backoff_limit_count);
  // A 45-minute model load: the replica's pods are Ready only once it is loaded, so the
  // timeout is 1.5 x the load, or Kueue would evict every replica before it serves.
  const auto* llm = policies.find(policy::Kind::InferenceScalingPolicy, "customer-service-llm");
  ASSERT_NE(llm, nullptr);
  policy::PolicyObject slow = *llm;
  std::get<policy::InferenceScalingPolicySpec>(slow.spec).model_load_time = Duration(std::chrono::minutes(45));
  ASSERT_TRUE(policies.upsert(std::move(slow)));
  EXPECT_EQ(rendered_wait_for_pods_ready(policies).timeout_ms, 67 * kMinute + 30'000);
  EXPECT_EQ(render::pods_ready_timeout_seconds(policies), 4050);
  EXPECT_EQ(render::pods_ready_timeout_seconds(policy::PolicySet{}), 600);
}

// w3 (4 GPUs on one node) cannot be placed before 1 h. With Kueue's timeout of 5 min and
// backoffLimitCount 2: admitted at 1 min, evicted at 6 min (PodsReadyTimeout, requeued in
// 60 s), admitted again at 7, evicted at 12 (120 s), admitted at 14 and deactivated at 19:
// it holds its quota 3 x 5 min, not 59 min.
TEST(PodsReady, AWorkloadThatCannotBePlacedIsEvictedRequeuedWithBackoffThenDeactivated) {
  RunOptions options;
  options.wait_for_pods_ready = WaitForPodsReady{};
  options.wait_for_pods_ready->backoff_limit_count = 2;
  const PlacedRun r = run(options);
  std::vector<std::pair<std::string, std::int64_t>> seen;
  for (const Event* e : all(r.result, "Workload/cs/w3")) {
    if (e->kind == "Admitted" || e->kind == "Evicted" || e->kind == "Deactivated" || e->kind == "Placed") {
      seen.emplace_back(e->kind + "/" + e->reason, e->t / kMinute);
    }
  }
  EXPECT_EQ(seen, (std::vector<std::pair<std::string, std::int64_t>>{{"Admitted/Admitted", 1},
                                                                      {"Evicted/PodsReadyTimeout", 6},
                                                                      {"Admitted/Admitted", 7},
                                                                      {"Evicted/PodsReadyTimeout", 12},
                                                                      {"Admitted/Admitted", 14},
                                                                      {"Deactivated/RequeuingLimitExceeded", 19}}));
  for (const Event* e : all(r.result, "Workload/cs/w3")) {
    if (e->kind != "Evicted") continue;
    EXPECT_EQ(e->numbers["requeueBackoffSeconds"], e->t == 6 * kMinute ? 60 : 120);
    EXPECT_NE(e->message.find("Exceeded the PodsReady timeout cs/w3"), std::string::npos) << e->message;
  }
  const WorkloadOutcome* w3 = outcome(r.result, "cs/w3");
  ASSERT_NE(w3, nullptr);
  EXPECT_EQ(w3->state, "Deactivated");
  EXPECT_EQ(w3->admissions, 3);
  EXPECT_FALSE(w3->finished);
  // Quota held: w1 and w2 5 GPUs for 1 h each, w3 4 GPUs for 3 x 5 min.
  ASSERT_EQ(r.result.groups.size(), 1u);
  EXPECT_EQ(r.result.groups[0].used_gpu_ms, 5 * kHour + 5 * kHour + 4 * 15 * kMinute);
  EXPECT_EQ(r.result.end, kHour);  // nothing waits for w3 any more
}

// Placed in time it stays: the timeout is disarmed once its pods run; and a workload that
// loses its pods (XID) gets recoveryTimeout from then.
TEST(PodsReady, APlacedWorkloadIsNotEvictedAndARecoveryGetsItsOwnTimeout) {
  RunOptions options;
  options.wait_for_pods_ready = WaitForPodsReady{};
  options.wait_for_pods_ready->timeout_ms = 2 * kHour;  // w3 is placed at 1 h: in time
  options.wait_for_pods_ready->recovery_timeout_ms = 10 * kMinute;
  // At 30 min w1's node loses 4 GPUs: w1 (5) no longer fits anywhere (serve-00 has 4 left
  // healthy and free, serve-01 3), so it is evicted 10 min later.
  std::string workloads = std::string(kWorkloads) + "gpuFaults:\n";
  for (int gpu = 0; gpu < 4; ++gpu) workloads += "- {node: serve-00, gpu: " + std::to_string(gpu) + ", xid: 79, at: 30m}\n";
  const PlacedRun r = run(options, workloads);
  for (const Event* e : all(r.result, "Workload/cs/w3")) EXPECT_NE(e->kind, "Evicted");
  // w3 takes the 4 healthy GPUs w1 left on serve-00 at 30 min.
  EXPECT_EQ(outcome(r.result, "cs/w3")->finished, 90 * kMinute);
  const Event* evicted = find(r.result, "Evicted", "Workload/cs/w1");
  ASSERT_NE(evicted, nullptr);
  EXPECT_EQ(evicted->t, 40 * kMinute);
  EXPECT_EQ(evicted->reason, "PodsReadyTimeout");
}

// A borrower admitted on lent quota that cannot be placed holds the lender's GPUs without
// using them: the lender's reclaim takes it first (class NotRunning), at once, instead of
// reporting that nothing is lent.
constexpr std::string_view kLendingPolicies = R"(
apiVersion: platform.gpubank.dev/v1alpha1
kind: PlatformGuardrails
metadata: {name: platform}
spec:
  platformAdmins: [group:platform]
  pools:
  - name: serve
    gpuModel: H100
    capacity: 16
    role: inference
    gpusPerNode: 8
    nodeLabels: {platform.gpubank.dev/pool: serve}
    taints: [{key: platform.gpubank.dev/pool, value: serve, effect: NoSchedule}]
  groups:
  - {name: cs, costCenter: CC-1, admins: [group:cs], namespaces: [cs], limits: {serve: {minGuaranteed: 0, maxCapacity: 16}}}
  - {name: tr, costCenter: CC-2, admins: [group:tr], namespaces: [tr], limits: {serve: {minGuaranteed: 0, maxCapacity: 16}}}
  priorities:
  - {name: standard, value: 1000, workloadTypes: [training, batch, inference]}
---
apiVersion: platform.gpubank.dev/v1alpha1
kind: GPUQuotaPolicy
metadata: {name: cs-serve}
spec: {businessGroup: cs, resourcePool: serve, guaranteed: 6, borrowLimit: 0, reclaimPolicy: {gracePeriod: 5m}}
---
apiVersion: platform.gpubank.dev/v1alpha1
kind: GPUQuotaPolicy
metadata: {name: tr-serve}
spec: {businessGroup: tr, resourcePool: serve, guaranteed: 10, borrowLimit: 6}
)";

// tr/a and tr/b (5 GPUs each) fill tr's guarantee, one per node (3 + 3 free). tr/g (6 on
// one node) borrows cs's 6 at 1 min and cannot be placed. cs/s (3 GPUs, within cs's
// guarantee) arrives at 10 min.
constexpr std::string_view kLendingWorkloads = R"(
workloads:
- {name: a, businessGroup: tr, resourcePool: serve, gpus: 5, runTime: 2h, workloadType: training}
- {name: b, businessGroup: tr, resourcePool: serve, gpus: 5, runTime: 2h, workloadType: training}
- {name: g, businessGroup: tr, resourcePool: serve, gpus: 6, arrivalTime: 1m, runTime: 1h, workloadType: training}
- {name: s, businessGroup: cs, resourcePool: serve, gpus: 3, arrivalTime: 10m, runTime: 1h, workloadType: inference}
)";

TEST(PlacingReclaim, ABorrowerThatIsNotPlacedIsTheFirstVictimAndStopsAtOnce) {
  const PlacedRun r = run({}, kLendingWorkloads, kLendingPolicies);  // no waitForPodsReady: the reclaim alone
  ASSERT_NE(find(r.result, "Unschedulable", "Workload/tr/g"), nullptr);
  const Event* borrow = find(r.result, "BorrowStarted", "Workload/tr/g");
  ASSERT_NE(borrow, nullptr);
  EXPECT_EQ(borrow->numbers["gpus"], 6);
  EXPECT_EQ(find(r.result, "ReclaimBlocked", "BusinessGroup/cs"), nullptr);
  const Event* started = find(r.result, "ReclaimStarted", "BusinessGroup/cs");
  ASSERT_NE(started, nullptr);
  EXPECT_EQ(started->t, 10 * kMinute);
  const Event* stopped = find(r.result, "ReclaimVictimStopped", "Workload/tr/g");
  ASSERT_NE(stopped, nullptr);
  EXPECT_EQ(stopped->t, 10 * kMinute);  // no grace to wait for: nothing runs
  EXPECT_NE(stopped->message.find("its pods were not placed yet"), std::string::npos) << stopped->message;
  ASSERT_EQ(r.result.reclaims.size(), 1u);
  ASSERT_EQ(r.result.reclaims[0].victims.size(), 1u);
  EXPECT_EQ(r.result.reclaims[0].victims[0].victim_class, "NotRunning");
  EXPECT_EQ(r.result.reclaims[0].victims[0].loss_gpu_ms, 0);
  const Event* placed = find(r.result, "Placed", "Workload/cs/s");
  ASSERT_NE(placed, nullptr);
  EXPECT_EQ(placed->t, 10 * kMinute);
}

// The tidal controller's approach reserves the inference group's floors
// (Simulation::reserve): the same reclaim, so the unplaced borrower goes first there too.
TEST(PlacingReclaim, AReservationTakesBackQuotaLentToABorrowerThatIsNotPlaced) {
  Diagnostics d;
  const auto policies = testing::from_yaml(kLendingPolicies);
  const auto scenario = parse_scenario(
      "workloads:\n"
      "- {name: a, businessGroup: tr, resourcePool: serve, gpus: 5, runTime: 2h, workloadType: training}\n"
      "- {name: b, businessGroup: tr, resourcePool: serve, gpus: 5, runTime: 2h, workloadType: training}\n"
      "- {name: g, businessGroup: tr, resourcePool: serve, gpus: 6, arrivalTime: 1m, runTime: 1h, workloadType: training}\n",
      "scenario.yaml", d);
  ASSERT_TRUE(scenario);
  auto inventory = cluster::parse_inventory(kInventory, "inventory.yaml", d);
  ASSERT_TRUE(inventory);
  RunOptions options;
  options.inventory = std::make_shared<const cluster::Inventory>(std::move(*inventory));
  Simulation sim(policies, *scenario, options);
  ASSERT_TRUE(sim.start());
  ASSERT_TRUE(sim.advance_to(5 * kMinute));
  ASSERT_TRUE(sim.reserve("cs", "serve", 6, 2 * kMinute, "TidalPolicy day floors", "gpubank-tidal"));
  const RunResult& r = sim.result();
  const Event* stopped = find(r, "ReclaimVictimStopped", "Workload/tr/g");
  ASSERT_NE(stopped, nullptr);
  EXPECT_EQ(stopped->t, 5 * kMinute);
  EXPECT_EQ(find(r, "ReclaimBlocked", "BusinessGroup/cs"), nullptr);
  for (const auto& p : sim.positions()) {
    if (p.business_group == "cs") {
      EXPECT_EQ(p.lent, 0);
    }
  }
}

// tr/a (4) and tr/b (6) fill tr's guarantee of 10: a on serve-00 (4 free), b on serve-01
// (2 free). Two borrowers of cs's 6: x (2 GPUs, 20 min: a short job, the bank's first
// victim) lands on serve-01 (best fit), y (2 GPUs, 2 h) on serve-00. At 5 min cs reserves 4
// GPUs for one TP=4 replica: 2 are free by quota, so 2 come back; only y's make 4 free on
// one node (serve-00: 2 free + 2), x's would leave 2 + 2 on two nodes.
constexpr std::string_view kShapeWorkloads = R"(
workloads:
- {name: a, businessGroup: tr, resourcePool: serve, gpus: 4, runTime: 2h, workloadType: training}
- {name: b, businessGroup: tr, resourcePool: serve, gpus: 6, runTime: 2h, workloadType: training}
- {name: x, businessGroup: tr, resourcePool: serve, gpus: 2, arrivalTime: 1m, runTime: 20m, workloadType: training}
- {name: y, businessGroup: tr, resourcePool: serve, gpus: 2, arrivalTime: 2m, runTime: 2h, workloadType: training}
)";

// The victims of the reservation cs makes at 5 min, in pieces of `piece` GPUs, and the
// most GPUs free on one node once their grace (2 min) is over.
std::pair<std::vector<std::string>, int> reserve_in_pieces(int piece, const Event** started = nullptr,
                                                           std::optional<RunResult>* kept = nullptr) {
  Diagnostics d;
  const auto policies = testing::from_yaml(kLendingPolicies);  // cs guarantees 6, tr 10 and may borrow 6
  const auto scenario = parse_scenario(kShapeWorkloads, "scenario.yaml", d);
  EXPECT_TRUE(scenario);
  auto inventory = cluster::parse_inventory(kInventory, "inventory.yaml", d);
  EXPECT_TRUE(inventory);
  RunOptions options;
  options.inventory = std::make_shared<const cluster::Inventory>(std::move(*inventory));
  Simulation sim(policies, *scenario, options);
  EXPECT_TRUE(sim.start());
  EXPECT_TRUE(sim.advance_to(5 * kMinute));
  EXPECT_EQ(sim.cluster()->node_free(0), 2);  // a + y on serve-00
  EXPECT_EQ(sim.cluster()->node_free(1), 0);  // b + x on serve-01
  EXPECT_TRUE(sim.reserve("cs", "serve", 4, 2 * kMinute, "TidalPolicy day floors", "gpubank-tidal", piece));
  std::vector<std::string> victims;
  for (const auto& e : sim.result().events) {
    if (e.kind == "ReclaimNoticeSent") victims.push_back(e.object);
  }
  EXPECT_TRUE(sim.advance_to(8 * kMinute));
  const int most_free = std::max(sim.cluster()->node_free(0), sim.cluster()->node_free(1));
  if (kept != nullptr) {
    *kept = sim.result();
    if (started != nullptr) *started = find(**kept, "ReclaimStarted", "BusinessGroup/cs");
  }
  return {victims, most_free};
}

TEST(PlacingReclaim, AReservationInReplicaShapesTakesBackTheBorrowerWhoseGpusMakeAPieceOnANode) {
  // In loose GPUs the bank takes its first victim, the short job, and the 4 GPUs are free in
  // total but never on one node: a TP=4 replica could not start.
  const auto [loose, loose_most] = reserve_in_pieces(1);
  EXPECT_EQ(loose, (std::vector<std::string>{"Workload/tr/x"}));
  EXPECT_EQ(loose_most, 2);
  // In pieces of 4: y, on the node where 2 are already free.
  const Event* started = nullptr;
  std::optional<RunResult> run;
  const auto [shaped, shaped_most] = reserve_in_pieces(4, &started, &run);
  EXPECT_EQ(shaped, (std::vector<std::string>{"Workload/tr/y"}));
  EXPECT_EQ(shaped_most, 4);
  ASSERT_NE(started, nullptr);
  EXPECT_EQ(started->reason, "Reservation");
  EXPECT_EQ(started->numbers["pieceGpus"], 4);
  EXPECT_EQ(started->numbers["piecesShort"], 1);
  EXPECT_NE(started->message.find("1 more replica needs 4 GPUs on one node"), std::string::npos) << started->message;
  const Event* reserved = find(*run, "CapacityReserved", "BusinessGroup/cs");
  ASSERT_NE(reserved, nullptr);
  EXPECT_NE(reserved->message.find("in pieces of 4 GPUs on one node"), std::string::npos) << reserved->message;
}

TEST(Summary, PercentilesAreNearestRank) {
  EXPECT_EQ(percentile({}, 50), 0);
  EXPECT_EQ(percentile({7}, 99), 7);
  // 1..10: p50 is the 5th, p90 the 9th, p99 the 10th value.
  const std::vector<std::int64_t> v{10, 9, 8, 7, 6, 5, 4, 3, 2, 1};
  EXPECT_EQ(percentile(v, 50), 5);
  EXPECT_EQ(percentile(v, 90), 9);
  EXPECT_EQ(percentile(v, 99), 10);
}

}  // namespace
}  // namespace gpubank::twin::run
