// Cancellation of a blocked watch, informers and the controller's informer set, against the
// fake API server. Every wait is on a condition variable (the fake's open watches, an
// informer's sync, a handler's signal, a gate in the transport's sleep); nothing sleeps.
#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <thread>

#include "fake_client.hpp"
#include "fake_clock.hpp"
#include "fixture.hpp"
#include "k8s/informer.hpp"
#include "payloads.hpp"

namespace gpubank::k8s {
// The alias src/k8s/watch_event.hpp declares (a unity build may include it after this file).
using Json = nlohmann::json;
namespace {

using namespace testing;
using std::chrono::milliseconds;

constexpr milliseconds kSync{60'000};  // a hang guard: wait_for_sync returns when synced

TEST(Cancel, ASilentWatchEndsWhenAnotherThreadCancels) {
  FakeApiServer fake({});
  fake.put("pods", pod_json("team-a", "p0"));
  SleepLog sleeps;
  auto t = make_transport(config_for(fake), sleeps);
  ListWatch lw(*t, "/api/v1/pods");
  std::optional<ApiResult<std::monostate>> result;
  std::thread runner([&] { result.emplace(lw.run()); });
  // The fake holds the watch open and sends nothing (no changes, no bookmarks).
  ASSERT_TRUE(fake.wait_for_open_watches(1));
  t->cancel();
  runner.join();
  ASSERT_TRUE(result->ok()) << result->error().describe();
  EXPECT_EQ(lw.stats().lists, 1u);
  EXPECT_EQ(lw.stats().watches, 0u);  // not a line came
  EXPECT_TRUE(sleeps.get().empty());
  // Cancelled for good: nothing more is sent.
  const std::size_t sent = fake.requests();
  auto after = t->get("/version");
  ASSERT_FALSE(after.ok());
  EXPECT_EQ(after.error().reason, "Cancelled");
  EXPECT_EQ(fake.requests(), sent);
}

TEST(Cancel, ARateLimitWaitEndsWhenCancelled) {
  FakeApiServer fake({});
  // One token, then one every 1000 s: the second request would wait 1000 s for real (the
  // transport's own sleep, not an injected one).
  Signal reserved;
  int clock_calls = 0;
  auto limiter = RateLimiter::create({0.001, 1}, [&] {
    if (++clock_calls == 3) reserved.bump();  // create, the first request, the second
    return std::chrono::steady_clock::time_point{};
  });
  ASSERT_TRUE(limiter.ok());
  TransportOptions options;
  options.rate_limiter = limiter.value();
  auto t = Transport::create(config_for(fake), options);
  ASSERT_TRUE(t.ok());
  ASSERT_TRUE(t.value()->get("/version").ok());
  std::optional<ApiResult<Response>> second;
  std::thread caller([&] { second.emplace(t.value()->get("/version")); });
  reserved.wait_until([&] { return reserved.count() > 0; });
  t.value()->cancel();
  caller.join();
  ASSERT_FALSE(second->ok());
  EXPECT_EQ(second->error().reason, "Cancelled");
  EXPECT_EQ(fake.requests(), 1u);
}

std::unique_ptr<Informer> informer_for(FakeApiServer& fake, const std::string& collection, InformerOptions options = {}) {
  if (!options.transport.sleep) options.transport.sleep = [](milliseconds) {};
  auto i = Informer::create(config_for(fake), collection, std::move(options));
  EXPECT_TRUE(i.ok()) << (i.ok() ? "" : i.error());
  return i.ok() ? std::move(i.value()) : nullptr;
}

std::vector<Json> contents(const CacheSnapshot& s) {
  std::vector<Json> out;
  for (const auto& [key, o] : s.objects) out.push_back(*o);
  return out;
}

TEST(Informer, SyncsAndReadersOnAnotherThreadSeeUpdates) {
  FakeApiServer fake({});
  for (int i = 0; i < 5; ++i) fake.put("pods", pod_json("team-a", "p" + std::to_string(i)));
  auto informer = informer_for(fake, "/api/v1/pods");
  Signal changed;
  std::vector<std::string> heard;  // the informer's thread writes, the test reads after stop()
  std::thread::id handler_thread;
  informer->add_handler([&](EventType type, const ObjectPtr& before, const ObjectPtr& after) {
    handler_thread = std::this_thread::get_id();
    // The snapshot already holds what the handler hears.
    const auto key = object_key(after ? *after : *before);
    EXPECT_EQ(informer->get(key) == nullptr, type == EventType::Deleted) << key;
    heard.push_back(std::string(to_string(type)) + " " + key);
    changed.bump();
  });
  EXPECT_FALSE(informer->has_synced());
  EXPECT_EQ(informer->snapshot()->objects.size(), 0u);
  informer->start();
  ASSERT_TRUE(informer->wait_for_sync(kSync).ok());
  EXPECT_TRUE(informer->has_synced());
  const SnapshotPtr first = informer->snapshot();
  EXPECT_TRUE(first->synced);
  EXPECT_EQ(contents(*first), fake.objects("pods"));
  EXPECT_EQ(informer->snapshot(), first);  // nothing changed: the same snapshot, shared

  std::thread reader([&] {
    changed.wait_until([&] { return informer->get("team-b/p9") != nullptr && informer->get("team-a/p0") == nullptr; });
    const auto s = informer->snapshot();
    EXPECT_EQ(s->objects.size(), 5u);
    EXPECT_EQ(s->objects.at("team-a/p1")->at("spec").at("nodeName"), "gpu-node-7");
  });
  fake.put("pods", pod_json("team-a", "p1", "gpu-node-7"));
  fake.remove("pods", "team-a", "p0");
  fake.put("pods", pod_json("team-b", "p9"));
  reader.join();
  EXPECT_EQ(first->objects.size(), 5u);  // an old snapshot never changes
  EXPECT_EQ(first->objects.count("team-b/p9"), 0u);
  EXPECT_EQ(informer->snapshot()->resource_version, std::to_string(fake.resource_version()));
  informer->stop();
  EXPECT_NE(handler_thread, std::this_thread::get_id());
  EXPECT_EQ(heard.size(), 8u);  // five ADDED from the list, then the three changes
  EXPECT_EQ(heard.back(), "ADDED team-b/p9");
  EXPECT_FALSE(informer->error());
}

TEST(Informer, StopsWhileIdleAndKeepsItsSnapshot) {
  FakeApiServer fake({});
  fake.put("nodes", node_json("gpu-node-1"));
  auto informer = informer_for(fake, "/api/v1/nodes");
  informer->start();
  ASSERT_TRUE(informer->wait_for_sync(kSync).ok());
  ASSERT_TRUE(fake.wait_for_open_watches(1));  // idle in a silent watch (timeoutSeconds=300)
  EXPECT_TRUE(informer->running());
  informer->stop();
  EXPECT_FALSE(informer->running());
  EXPECT_FALSE(informer->error());
  EXPECT_EQ(informer->snapshot()->objects.size(), 1u);
  informer->stop();  // idempotent
}

TEST(Informer, AStoppedOrDeadInformerSaysSo) {
  FakeApiServer fake({});
  fake.fail_next(1, 403);
  std::optional<ApiError> reported;
  Signal ended;
  InformerOptions options;
  options.on_error = [&](const ApiError& e) { reported = e; };
  options.on_state_change = [&] { ended.bump(); };
  auto informer = informer_for(fake, "/api/v1/pods", options);
  informer->start();
  const auto synced = informer->wait_for_sync(kSync);
  ASSERT_FALSE(synced.ok());
  EXPECT_EQ(synced.error().http_status, 403);
  ended.wait_until([&] { return ended.count() > 0; });
  EXPECT_FALSE(informer->running());
  ASSERT_TRUE(informer->error());
  EXPECT_EQ(informer->error()->http_status, 403);
  ASSERT_TRUE(reported);
  EXPECT_EQ(reported->describe(), informer->error()->describe());

  // Never started: a wait times out; stopped before it synced: "Stopped".
  auto idle = informer_for(fake, "/api/v1/pods");
  EXPECT_EQ(idle->wait_for_sync(milliseconds(0)).error().reason, "Timeout");
  idle->stop();
  EXPECT_EQ(idle->wait_for_sync(kSync).error().reason, "Stopped");
}

// A 410 while readers read: the relist replaces the cache as one change. The informer is
// held in its backoff (a closed gate in its transport's sleep) after a dropped watch while
// the fake changes every object and compacts its history; let go, it resumes from a
// compacted resourceVersion, gets 410 and lists again.
TEST(Informer, ARelistAfter410IsOneChangeForReaders) {
  FakeApiServer fake({});
  auto pod = [](int i, const std::string& batch) {
    Json p = pod_json("team-a", "p" + std::to_string(i));
    p["metadata"]["annotations"]["gpubank.dev/batch"] = batch;
    return p;
  };
  for (int i = 0; i < 20; ++i) fake.put("pods", pod(i, "1"));
  Gate gate;
  InformerOptions options;
  options.transport.sleep = gate.sleeper();
  auto informer = informer_for(fake, "/api/v1/pods", options);

  // What a snapshot may look like: before the relist (batch 1, p19, no p20) or after it
  // (batch 3, p20, no p19); never a mixture.
  const auto consistent = [](const CacheSnapshot& s) {
    std::set<std::string> batches;
    for (const auto& [key, o] : s.objects) batches.insert(o->at("metadata").at("annotations").at("gpubank.dev/batch"));
    if (batches.size() > 1) return false;
    if (batches.empty()) return s.objects.empty();
    const bool before = *batches.begin() == "1";
    return s.objects.size() == 20 && s.objects.contains("team-a/p19") == before && s.objects.contains("team-a/p20") != before;
  };
  std::atomic<int> relist_events{0};
  std::atomic<bool> handler_saw_mixture{false};
  Signal changed;
  informer->add_handler([&](EventType, const ObjectPtr&, const ObjectPtr&) {
    if (informer->stats().lists == 1) return;  // the first list
    ++relist_events;
    if (!consistent(*informer->snapshot())) handler_saw_mixture = true;
    changed.bump();
  });
  fake.drop_next_watch_after(0);  // the first watch is cut as soon as it starts
  gate.close();
  informer->start();
  ASSERT_TRUE(informer->wait_for_sync(kSync).ok());
  ASSERT_TRUE(gate.wait_for_held());  // in the backoff after the cut

  std::atomic<bool> done{false};
  std::atomic<int> mixtures{0};
  std::atomic<long> reads{0};
  std::vector<std::thread> readers;
  for (int r = 0; r < 2; ++r) {
    readers.emplace_back([&] {
      while (!done) {
        if (!consistent(*informer->snapshot())) ++mixtures;
        ++reads;
        std::this_thread::yield();
      }
    });
  }
  for (int i = 0; i < 19; ++i) fake.put("pods", pod(i, "3"));
  fake.remove("pods", "team-a", "p19");
  fake.put("pods", pod(20, "3"));
  fake.compact();
  gate.open();
  changed.wait_until([&] { return relist_events == 21 && informer->snapshot()->objects.contains("team-a/p20"); });
  done = true;
  for (auto& r : readers) r.join();
  EXPECT_EQ(mixtures, 0);
  EXPECT_FALSE(handler_saw_mixture);
  EXPECT_GT(reads, 0);
  EXPECT_EQ(contents(*informer->snapshot()), fake.objects("pods"));
  EXPECT_EQ(informer->stats().gone, 1u);
  EXPECT_EQ(informer->stats().lists, 2u);
  informer->stop();
}

TEST(InformerSet, TheControllersKindsThroughDiscovery) {
  FakeApiServer fake({});
  fake.put("nodes", node_json("gpu-node-1"));
  fake.put("pods", pod_json("team-a", "train-0"));
  fake.put("workloads", workload_json("team-a", "job-train-3c1d2"));
  fake.put("clusterqueues", cluster_queue_json("team-a-cq"));
  SleepLog sleeps;
  auto t = make_transport(config_for(fake), sleeps);
  auto mapper = discover(*t);
  ASSERT_TRUE(mapper.ok()) << mapper.error().describe();
  InformerOptions options;
  options.transport.sleep = sleeps.sleeper();
  auto set = InformerSet::create(config_for(fake), *mapper, controller_kinds(), options);
  ASSERT_TRUE(set.ok()) << set.error();
  std::vector<std::string> collections;
  for (const auto& [kind, informer] : (*set)->informers()) collections.push_back(informer->collection());
  EXPECT_EQ(collections, (std::vector<std::string>{
                             "/api/v1/nodes",
                             "/api/v1/pods",
                             "/apis/kueue.x-k8s.io/v1beta2/workloads",
                             "/apis/kueue.x-k8s.io/v1beta2/clusterqueues",
                             "/apis/kueue.x-k8s.io/v1beta2/cohorts",
                             "/apis/kueue.x-k8s.io/v1beta2/localqueues",
                             "/apis/platform.gpubank.dev/v1alpha1/platformguardrails",
                             "/apis/platform.gpubank.dev/v1alpha1/gpuquotapolicies",
                             "/apis/platform.gpubank.dev/v1alpha1/inferencescalingpolicies",
                             "/apis/platform.gpubank.dev/v1alpha1/tidalpolicies",
                             "/apis/platform.gpubank.dev/v1alpha1/capacityleases",
                             "/apis/platform.gpubank.dev/v1alpha1/lowutilizationpolicies",
                         }));
  (*set)->start();
  ASSERT_TRUE((*set)->wait_for_sync(kSync).ok());
  EXPECT_EQ((*set)->find("v1", "Pod")->snapshot()->objects.size(), 1u);
  EXPECT_EQ(contents(*(*set)->find("kueue.x-k8s.io/v1beta2", "Workload")->snapshot()), fake.objects("workloads"));
  EXPECT_EQ((*set)->find("v1", "Secret"), nullptr);
  ASSERT_TRUE(fake.wait_for_open_watches(12));
  (*set)->stop();
  EXPECT_TRUE((*set)->errors().empty());
}

TEST(InformerSet, AKindMissingFromDiscoveryOrADeadInformerIsAnError) {
  FakeApiServer::Options no_crds;
  no_crds.gpubank_kinds = false;
  FakeApiServer fake(no_crds);
  SleepLog sleeps;
  auto t = make_transport(config_for(fake), sleeps);
  auto mapper = discover(*t);
  ASSERT_TRUE(mapper.ok());
  auto missing = InformerSet::create(config_for(fake), *mapper, controller_kinds());
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().find("informer for PlatformGuardrails (platform.gpubank.dev/v1alpha1)"), std::string::npos)
      << missing.error();

  InformerOptions options;
  options.transport.sleep = sleeps.sleeper();
  auto set = InformerSet::create(config_for(fake), *mapper, {{"v1", "Pod"}, {"v1", "Node"}}, options);
  ASSERT_TRUE(set.ok()) << set.error();
  fake.fail_next(1, 403);  // whichever informer asks first dies
  (*set)->start();
  const auto synced = (*set)->wait_for_sync(kSync);
  ASSERT_FALSE(synced.ok());
  EXPECT_EQ(synced.error().http_status, 403);
  EXPECT_EQ((*set)->errors().size(), 1u);
  (*set)->stop();
}

}  // namespace
}  // namespace gpubank::k8s
