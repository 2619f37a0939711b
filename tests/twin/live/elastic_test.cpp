// The serving controllers in the embedded platform (elastic.hpp): the autoscaler with the
// tidal floors on the example policies' weekday, and on a small cluster where shapes do
// not fit: no half replica, prewarm failure kept and retried, manual freeze.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "support/paths.hpp"
#include "support/policy_fixture.hpp"
#include "twin/cluster/inventory.hpp"
#include "twin/live/platform.hpp"

namespace gpubank::twin::live {
namespace {

constexpr std::int64_t kHour = 3'600'000, kMinute = 60'000;

std::shared_ptr<const cluster::Inventory> inventory_from(std::string_view yaml) {
  Diagnostics d;
  auto inventory = cluster::parse_inventory(yaml, "inventory.yaml", d);
  EXPECT_TRUE(inventory) << (d.empty() ? "" : d.front().to_string());
  return std::make_shared<const cluster::Inventory>(std::move(*inventory));
}

std::vector<const run::Event*> events_of(const Platform& p, std::string_view kind, std::string_view object = "") {
  std::vector<const run::Event*> out;
  for (const auto& e : p.result().events) {
    if (e.kind == kind && (object.empty() || e.object.find(object) != std::string::npos)) out.push_back(&e);
  }
  return out;
}

// ---- a small cluster: two nodes of 3 GPUs ----------------------------------------------

constexpr std::string_view kSmallPolicies = R"(
apiVersion: platform.gpubank.dev/v1alpha1
kind: PlatformGuardrails
metadata: {name: platform}
spec:
  platformAdmins: [group:platform]
  pools:
  - name: serve
    gpuModel: H100
    capacity: 6
    role: inference
    gpusPerNode: 3
    nodeLabels: {platform.gpubank.dev/pool: serve}
  groups:
  - {name: cs, costCenter: CC-1, admins: [group:cs], namespaces: [cs], limits: {serve: {minGuaranteed: 0, maxCapacity: 6}}}
  priorities:
  - {name: serving, value: 100000, workloadTypes: [inference], preemptible: false}
---
apiVersion: platform.gpubank.dev/v1alpha1
kind: GPUQuotaPolicy
metadata: {name: cs-serve}
spec: {businessGroup: cs, resourcePool: serve, guaranteed: 6, borrowLimit: 0}
---
apiVersion: platform.gpubank.dev/v1alpha1
kind: InferenceScalingPolicy
metadata: {name: big}
spec:
  workloadRef: {kind: Deployment, name: big, namespace: cs}
  businessGroup: cs
  resourcePool: serve
  replicaShape: {tensorParallelSize: 4, gpuPerReplica: 4}
  minReplicas: 1
  maxReplicas: 1
  scaleUp: {queueDepthPerReplica: 8, ttftP95: 1500ms}
  scaleDown: {queueDepthPerReplica: 1, stabilizationWindow: 10m, drainTimeout: 5m}
  modelLoadTime: 2m
---
apiVersion: platform.gpubank.dev/v1alpha1
kind: InferenceScalingPolicy
metadata: {name: chat}
spec:
  workloadRef: {kind: Deployment, name: chat, namespace: cs}
  businessGroup: cs
  resourcePool: serve
  replicaShape: {tensorParallelSize: 2, gpuPerReplica: 2}
  minReplicas: 1
  maxReplicas: 3
  scaleUp: {queueDepthPerReplica: 8, ttftP95: 1500ms}
  scaleDown: {queueDepthPerReplica: 1, stabilizationWindow: 10m, drainTimeout: 5m}
  modelLoadTime: 2m
---
apiVersion: platform.gpubank.dev/v1alpha1
kind: TidalPolicy
metadata: {name: day}
spec:
  timezone: Etc/UTC
  windows:
  - {name: busy, start: "0 1 * * *", end: "0 5 * * *", inferenceReplicaFloor: {chat: 3}, prewarmBefore: 10m}
  targets: {inferencePolicies: [chat], trainingGroups: [], resourcePool: serve}
)";

constexpr std::string_view kSmallInventory = R"(
kind: Inventory
nodeGroups:
- namePrefix: serve
  count: 2
  gpuModel: H100
  product: NVIDIA-H100-80GB-HBM3
  gpusPerNode: 3
  gpuMemory: 80Gi
  labels: {platform.gpubank.dev/pool: serve}
)";

std::unique_ptr<Platform> small_platform(std::int64_t hours, int chat_floor = 3) {
  DayOptions day;
  day.seed = 3;
  day.start = *parse_rfc3339("2026-12-01T00:00:00Z");
  day.hours = hours;
  day.serving_load = 0.2;
  run::RunOptions run;
  run.inventory = inventory_from(kSmallInventory);
  std::string policies(kSmallPolicies);
  const std::string floor = "inferenceReplicaFloor: {chat: 3}";
  policies.replace(policies.find(floor), floor.size(), "inferenceReplicaFloor: {chat: " + std::to_string(chat_floor) + "}");
  auto created = Platform::create(testing::from_yaml(policies), day, run);
  EXPECT_TRUE(created) << (created ? "" : created.error());
  return created ? std::move(*created) : nullptr;
}

TEST(ElasticControl, NoHalfReplicaWhenEachNodeHasThreeFreeGpus) {
  auto p = small_platform(1);
  ASSERT_TRUE(p);
  ASSERT_TRUE(p->advance_to(10 * kMinute)) << p->error();
  // At 00:00 `big` (TP=4) is checked first with both nodes empty: 6 GPUs free, at most 3 on
  // a node: blocked as fragmented, once, and nothing is asked of the bank for it.
  const auto blocked = events_of(*p, "ScaleUpBlocked", "/big");
  ASSERT_EQ(blocked.size(), 1u);
  EXPECT_EQ(blocked[0]->t, 0);
  EXPECT_EQ(blocked[0]->reason, "Fragmented");
  EXPECT_EQ(blocked[0]->numbers["free"], 6);
  EXPECT_EQ(blocked[0]->numbers["largestFreeOnNode"], 3);
  EXPECT_NE(blocked[0]->message.find("big"), std::string::npos) << blocked[0]->message;
  EXPECT_TRUE(events_of(*p, "ScaleUpRequested", "/big").empty());
  for (const auto& w : p->result().workloads) EXPECT_EQ(w.workload.find("big-r"), std::string::npos) << w.workload;
  for (const auto& w : p->scenario().workloads) EXPECT_EQ(w.name.find("big-r"), std::string::npos) << w.name;
  // `chat` (TP=2) got its replica: 2 GPUs on one node.
  const auto chat = events_of(*p, "ScaleUpRequested", "/chat");
  ASSERT_FALSE(chat.empty());
  EXPECT_EQ(chat[0]->t, 0);
}

TEST(ElasticControl, PrewarmFailureKeepsTheReplicasAlertsAndRetries) {
  auto p = small_platform(2);
  ASSERT_TRUE(p);
  ASSERT_TRUE(p->advance_to(70 * kMinute)) << p->error();
  // 00:50 prewarm: chat's floor rises to 3. Two TP=2 replicas take one node each (3 + 3
  // GPUs: 2 + 2 used), the third would need 2 on one node with 1 + 1 free: blocked.
  const auto prewarm = events_of(*p, "PrewarmStarted");
  ASSERT_EQ(prewarm.size(), 1u);
  EXPECT_EQ(prewarm[0]->t, 50 * kMinute);
  bool fragmented = false;
  for (const auto* e : events_of(*p, "ScaleUpBlocked", "/chat")) fragmented |= e->reason == "Fragmented";
  EXPECT_TRUE(fragmented);
  // At 01:00 the window starts without its three replicas: an alert, and retries with backoff.
  const auto failed = events_of(*p, "PrewarmFailed");
  ASSERT_FALSE(failed.empty());
  EXPECT_GE(failed[0]->t, 50 * kMinute);
  EXPECT_LE(failed[0]->t, 60 * kMinute);
  const auto retried = events_of(*p, "PrewarmRetried");
  ASSERT_GE(retried.size(), 2u);
  EXPECT_LT(retried[0]->t, retried[1]->t);
  // The replicas there are stay: nothing of chat was drained or removed.
  EXPECT_TRUE(events_of(*p, "DrainStarted", "/chat").empty());
  EXPECT_TRUE(events_of(*p, "ReplicaRemoved", "/chat").empty());
  int chat_replicas = 0;
  for (const auto& s : p->services_json()) {
    if (s["policy"] == "chat") chat_replicas = static_cast<int>(s["replicas"].size());
  }
  EXPECT_EQ(chat_replicas, 2);
}

TEST(ElasticControl, AModelThatFailsToLoadFailsThePrewarmWhichIsRetriedOnBackoff) {
  // Floor 2 for chat: the second TP=2 replica fits on the other node.
  auto p = small_platform(2, 2);
  ASSERT_TRUE(p);
  ASSERT_TRUE(p->advance_to(45 * kMinute)) << p->error();
  ASSERT_TRUE(p->fail_model_loads("chat", 1, "user:sre"));
  EXPECT_FALSE(p->fail_model_loads("nope", 1, "user:sre"));
  EXPECT_FALSE(p->fail_model_loads("chat", 0, "user:sre"));
  ASSERT_TRUE(p->advance_to(80 * kMinute)) << p->error();
  // 00:50 prewarm asks for the second replica; it loads for 2 min and fails at 00:52.
  const auto failed = events_of(*p, "ReplicaFailed", "/chat");
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_EQ(failed[0]->reason, "ModelLoadFailed");
  EXPECT_EQ(failed[0]->t, 52 * kMinute);
  // The tidal controller sees the failed attempt: an alert, and a retry after 30 s (not at
  // once), which loads and resolves the failure.
  const auto alert = events_of(*p, "PrewarmFailed");
  ASSERT_FALSE(alert.empty());
  EXPECT_EQ(alert[0]->t, 52 * kMinute);  // seen in the same step
  const auto asks = events_of(*p, "ScaleUpRequested", "/chat");
  ASSERT_GE(asks.size(), 3u);  // 00:00 the first replica, 00:50 the prewarm, then the retry
  EXPECT_EQ(asks[1]->t, 50 * kMinute);
  EXPECT_GE(asks[2]->t, alert[0]->t + 30'000);
  EXPECT_FALSE(events_of(*p, "PrewarmResolved").empty());
  // The first replica was never touched.
  EXPECT_TRUE(events_of(*p, "DrainStarted", "/chat").empty());
  bool audited = false;
  for (const auto& a : p->result().audit) audited |= a.action == "FaultInjected" && a.actor == "user:sre";
  EXPECT_TRUE(audited);
}

TEST(ElasticControl, FreezePinsTheReplicasAndIsAudited) {
  auto p = small_platform(2);
  ASSERT_TRUE(p);
  ASSERT_TRUE(p->advance_to(20 * kMinute)) << p->error();
  auto frozen = p->freeze_tidal("day", true, "user:mei.chen", "incident 42");
  ASSERT_TRUE(frozen) << frozen.error();
  const auto f = events_of(*p, "TidalFrozen");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0]->t, 20 * kMinute);
  bool audited = false;
  for (const auto& a : p->result().audit) audited |= a.action == "TidalFrozen" && a.actor == "user:mei.chen";
  EXPECT_TRUE(audited);
  // Frozen: the 00:50 prewarm does not raise chat above what it had (the pin).
  ASSERT_TRUE(p->advance_to(55 * kMinute)) << p->error();
  EXPECT_TRUE(events_of(*p, "ScaleUpBlocked", "/chat").empty());
  // Twice: an error; unfreeze: audited too; unknown policy: an error naming it.
  EXPECT_FALSE(p->freeze_tidal("day", true, "user:mei.chen", "again"));
  ASSERT_TRUE(p->freeze_tidal("day", false, "user:mei.chen", ""));
  EXPECT_EQ(events_of(*p, "TidalUnfrozen").size(), 1u);
  auto unknown = p->freeze_tidal("night", true, "user:mei.chen", "");
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().find("night"), std::string::npos);
}

// ---- the example policies' weekday --------------------------------------------------------

// A run of the example policies on the example cluster from `start` for `hours`, with the
// LLM service's ready replicas counted every 15 minutes.
struct ExampleRun {
  std::unique_ptr<Platform> platform;
  std::map<std::int64_t, int> ready;
};

ExampleRun run_example(const char* start, std::int64_t hours, double load) {
  ExampleRun r;
  DayOptions day;
  day.seed = 1;
  day.start = *parse_rfc3339(start);
  day.hours = hours;
  day.serving_load = load;
  Diagnostics d;
  auto inventory = cluster::load_inventory(testing::source_dir() + "/examples/inventory/example.yaml", d);
  EXPECT_TRUE(inventory);
  if (!inventory) return r;
  run::RunOptions run;
  run.inventory = std::make_shared<const cluster::Inventory>(std::move(*inventory));
  auto created = Platform::create(policy::load_policy_set({testing::source_dir() + "/examples/policies"}), day, run);
  EXPECT_TRUE(created) << (created ? "" : created.error());
  if (!created) return r;
  r.platform = std::move(*created);
  for (std::int64_t t = 15 * kMinute; t <= r.platform->end(); t += 15 * kMinute) {
    EXPECT_TRUE(r.platform->advance_to(t)) << r.platform->error();
    int ready = 0;
    for (const auto& s : r.platform->services_json()) {
      if (s["policy"] != "customer-service-llm") continue;
      for (const auto& x : s["replicas"]) ready += x["state"] == "ready" ? 1 : 0;
    }
    r.ready[t] = ready;
  }
  return r;
}

// Tuesday 07:00 to 21:00 in Asia/Shanghai at full load.
class ElasticWeekday : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { run_ = new ExampleRun(run_example("2026-11-30T23:00:00Z", 14, 1.0)); }
  static void TearDownTestSuite() {
    delete run_;
    run_ = nullptr;
  }
  // Virtual time of a local Shanghai wall time: day 0 is Tuesday, 07:00 is 0.
  static std::int64_t local(int day, int hour, int minute) { return (day * 24 + hour - 7) * kHour + minute * kMinute; }
  static ExampleRun* run_;
};
ExampleRun* ElasticWeekday::run_ = nullptr;

TEST_F(ElasticWeekday, AtTheFloorBeforeHalfPastEightThenBetweenTheFloorAndTheMaximumUntilEight) {
  ASSERT_TRUE(run_->platform);
  const auto& p = *run_->platform;
  const auto& ready_ = run_->ready;
  // Prewarm at 08:00, the floor 6 from then; six replicas ready by 08:30 (model load 6 min).
  const auto prewarm = events_of(p, "PrewarmStarted");
  ASSERT_FALSE(prewarm.empty());
  EXPECT_EQ(prewarm[0]->t, local(0, 8, 0));
  EXPECT_GE(ready_.at(local(0, 8, 30)), 6);
  const auto started = events_of(p, "TidalWindowStarted");
  ASSERT_FALSE(started.empty());
  EXPECT_EQ(started[0]->t, local(0, 8, 30));
  std::cout << "ready replicas at 08:15 " << ready_.at(local(0, 8, 15)) << ", 08:30 " << ready_.at(local(0, 8, 30)) << '\n';

  // Between nine and eight it moves between the floor and the maximum (one test: each
  // test of a suite is its own process under ctest, and the day is the cost).
  std::set<int> seen;
  for (std::int64_t t = local(0, 9, 0); t < local(0, 20, 0); t += 15 * kMinute) {
    const int ready = ready_.at(t);
    EXPECT_GE(ready, 6) << "at " << t;
    EXPECT_LE(ready, 8) << "at " << t;
    seen.insert(ready);
  }
  EXPECT_GE(seen.size(), 2u) << "the load should move it";
  std::string counts;
  for (const auto& [t, n] : ready_) counts += std::to_string(n);
  std::cout << "ready replicas every 15 min from 07:15: " << counts << '\n';
  // Every replica that went was drained first (at most the ones draining now are not
  // done), and none of its requests were cut.
  const auto drains = events_of(p, "DrainStarted", "customer-service-llm").size();
  const auto completed = events_of(p, "DrainCompleted", "customer-service-llm");
  EXPECT_LE(completed.size(), drains);
  EXPECT_GE(completed.size() + 8, drains);
  for (const auto* e : completed) EXPECT_EQ(e->reason, "Drained") << e->message;
  for (const auto& s : p.services_json()) {
    if (s["policy"] == "customer-service-llm") {
      EXPECT_EQ(s["cut"], 0);
    }
  }
}

// The embeddings service sizes on its request rate (examples/policies/20-inference.yaml:
// 700/s per replica): on the morning's ramp it scales out while its latency is within
// its 200 ms target and its queue below 32 per replica, that is before either of those
// signals would ask for a replica, and the rate is what asks.
TEST_F(ElasticWeekday, TheEmbeddingsRateSignalScalesOutBeforeTheLatencyOrTheQueueAsks) {
  ASSERT_TRUE(run_->platform);
  const auto& p = *run_->platform;
  int ahead = 0;
  for (const auto* e : events_of(p, "ScaleUpRequested", "/embeddings")) {
    const auto& n = e->numbers;
    if (!n.contains("requestRate") || !n.contains("realtime")) continue;
    const double from = n["from"].get<double>();
    if (n["realtime"].get<double>() <= from) continue;  // a tidal floor's, not the signals'
    const double rate = n["requestRate"].get<double>();
    const bool latency_fine = !n.contains("ttftP95") || n["ttftP95"].get<double>() < 0.2 * 0.9;
    const bool queue_fine = !n.contains("queueDepth") || n["queueDepth"].get<double>() / from < 32 * 0.9;
    if (latency_fine && queue_fine) {
      // The rate asked: ceil(rate / 700) is what the replicas grew towards.
      EXPECT_GT(rate, from * 700 * 1.1) << e->message;
      EXPECT_NE(e->message.find("requestRate"), std::string::npos) << e->message;
      ++ahead;
    }
  }
  EXPECT_GE(ahead, 1) << "no scale-out of the embeddings service came from its request rate alone";
  for (const auto& s : p.services_json()) {
    if (s["policy"] == "customer-service-embeddings") {
      EXPECT_EQ(s["cut"], 0);
    }
  }
}

// Tuesday 19:00 to Wednesday 09:00 at half the load: the night, and the morning's approach.
class ElasticNight : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { run_ = new ExampleRun(run_example("2026-12-01T11:00:00Z", 14, 0.5)); }
  static void TearDownTestSuite() {
    delete run_;
    run_ = nullptr;
  }
  // Virtual time of a local Shanghai wall time: day 0 is Tuesday, 19:00 is 0.
  static std::int64_t local(int day, int hour, int minute) { return (day * 24 + hour - 19) * kHour + minute * kMinute; }
  static ExampleRun* run_;
};
ExampleRun* ElasticNight::run_ = nullptr;

TEST_F(ElasticNight, AfterEightTheGpusGoToTrainingAndAtHalfPastSevenTheDayFloorIsReserved) {
  ASSERT_TRUE(run_->platform);
  const auto& p = *run_->platform;
  // 20:00: the window ends, the reservation drops to the night floor (1 replica, 4 GPUs),
  // training's borrowing cap rises to the night's 40.
  bool released = false;
  for (const auto* e : events_of(p, "CapacityReserved")) {
    released |= e->t == local(0, 20, 0) && e->numbers["reserved"] == 4;
  }
  EXPECT_TRUE(released);
  // The night queue runs: training of other groups admitted on h100-inference after 20:00.
  int night_training = 0;
  for (const auto* e : events_of(p, "Admitted")) {
    if (e->pool == "h100-inference" && e->business_group != "customer-service" && e->t >= local(0, 20, 0)) ++night_training;
  }
  EXPECT_GT(night_training, 0);
  // Wednesday 07:30 (approaching: 08:30 - 30m prewarm - 30m checkpoint): the reservation
  // rises to the day floor (6 x 4 = 24 GPUs). Borrowers get notices, with the tidal
  // policy's 10 min grace and checkpoint requests, for what is not free then. On this night
  // at half the load none is needed: training borrowed from customer-service's idle 24 and
  // the 16 no group is guaranteed (the Cohort's) and left enough free at 07:30. (The
  // reservation's reclaim and its grace: tests/twin/run/controls_test.cpp; checkpoints on
  // notice: engine_test.cpp.)
  const std::int64_t approach = local(1, 7, 30);
  const auto approaching = events_of(p, "TidalWindowApproaching");
  ASSERT_FALSE(approaching.empty());
  EXPECT_EQ(approaching.back()->t, approach);
  bool reserved = false;
  for (const auto* e : events_of(p, "CapacityReserved")) {
    reserved |= e->t == approach && e->numbers["reserved"] == 24;
  }
  EXPECT_TRUE(reserved);
  int notices = 0;
  for (const auto* e : events_of(p, "ReclaimNoticeSent")) {
    if (e->t != approach || e->pool != "h100-inference") continue;
    ++notices;
    EXPECT_EQ(e->numbers["graceSeconds"], 600);
  }
  int reclaims = 0;
  for (const auto* e : events_of(p, "ReclaimStarted")) {
    reclaims += e->t == approach && e->pool == "h100-inference" && e->reason == "Reservation" ? 1 : 0;
  }
  EXPECT_EQ(notices > 0, reclaims > 0) << "notices exactly when the reservation had to reclaim";
  // Reserved in time, reclaimed or free: six replicas serve when the window opens.
  EXPECT_GE(run_->ready.at(local(1, 8, 30)), 6);
  std::cout << "night training admissions " << night_training << ", notices at 07:30 " << notices << '\n';
}

}  // namespace
}  // namespace gpubank::twin::live
