// list/watch against the fake API server: pagination, bookmarks, 410 Gone (HTTP, ERROR
// event, expired continue token), resuming after a dropped connection, and a burst of
// 10,000 MODIFIED events after which the cache equals the fake's state.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "fake_client.hpp"
#include "fixture.hpp"
#include "k8s/list_watch.hpp"
#include "payloads.hpp"

namespace gpubank::k8s {
// The alias src/k8s/watch_event.hpp declares (a unity build may include it after this file).
using Json = nlohmann::json;
namespace {

using namespace testing;

ListWatchOptions paged(int page_size) {
  ListWatchOptions options;
  options.page_size = page_size;
  return options;
}

std::vector<Json> cached(const ListWatch& lw) {
  std::vector<Json> out;
  for (const auto& [key, o] : lw.store().objects()) out.push_back(o);
  return out;
}

// run() on its own thread, stopped on request; what it has seen is published after every
// event through should_stop (called on that thread).
class Runner {
 public:
  Runner(Transport& t, std::string collection, ListWatchOptions options = {}) {
    options.should_stop = [this] {
      std::lock_guard lock(m_);
      rv_ = lw_->store().resource_version();
      stats_ = lw_->stats();
      return stop_.load();
    };
    lw_ = std::make_unique<ListWatch>(t, std::move(collection), ObjectStore::Handler{}, options);
    thread_ = std::thread([this] { result_ = std::make_unique<ApiResult<std::monostate>>(lw_->run()); });
  }
  std::string rv() {
    std::lock_guard lock(m_);
    return rv_;
  }
  ListWatchStats stats() {
    std::lock_guard lock(m_);
    return stats_;
  }
  // Stops the loop; `wake` makes the fake send something so run() looks at the flag.
  const ApiResult<std::monostate>& stop(FakeApiServer& fake) {
    stop_ = true;
    fake.bookmark();
    thread_.join();
    return *result_;
  }
  ListWatch& lw() { return *lw_; }

 private:
  std::mutex m_;
  std::string rv_;
  ListWatchStats stats_;
  std::atomic<bool> stop_{false};
  std::unique_ptr<ListWatch> lw_;
  std::unique_ptr<ApiResult<std::monostate>> result_;
  std::thread thread_;
};

TEST(ListWatch, ListsEveryPage) {
  FakeApiServer fake({});
  for (int i = 0; i < 25; ++i) fake.put("pods", pod_json(i % 2 ? "team-a" : "team-b", "p" + std::to_string(i)));
  SleepLog sleeps;
  auto t = make_transport(config_for(fake), sleeps);
  ListWatch lw(*t, "/api/v1/pods", {}, paged(10));
  ASSERT_TRUE(lw.list().ok());
  EXPECT_EQ(lw.stats().pages, 3u);
  EXPECT_EQ(cached(lw), fake.objects("pods"));
  EXPECT_EQ(lw.store().resource_version(), std::to_string(fake.resource_version()));

  ListWatch team_a(*t, "/api/v1/namespaces/team-a/pods", {}, paged(5));
  ASSERT_TRUE(team_a.list().ok());
  EXPECT_EQ(team_a.store().objects().size(), 12u);
}

// A token source that runs `hook` before the n-th request: the test's way of acting
// between two pages of one list.
class HookedToken final : public TokenSource {
 public:
  HookedToken(int n, std::function<void()> hook) : n_(n), hook_(std::move(hook)) {}
  Expected<std::string> token() override {
    if (++calls_ == n_) hook_();
    return std::string("fake-token");
  }

 private:
  int n_;
  int calls_ = 0;
  std::function<void()> hook_;
};

TEST(ListWatch, AnExpiredContinueTokenRestartsTheList) {
  FakeApiServer fake({});
  for (int i = 0; i < 9; ++i) fake.put("nodes", node_json("gpu-node-" + std::to_string(i)));
  SleepLog sleeps;
  auto config = config_for(fake, "");
  config.token = std::make_shared<HookedToken>(2, [&] {
    fake.put("nodes", node_json("gpu-node-late"));
    fake.compact();
  });
  auto t = make_transport(config, sleeps);
  ListWatch lw(*t, "/api/v1/nodes", {}, paged(4));
  auto res = lw.list();
  ASSERT_TRUE(res.ok()) << res.error().describe();
  EXPECT_EQ(lw.stats().gone, 1u);
  EXPECT_EQ(lw.stats().lists, 1u);
  EXPECT_EQ(cached(lw), fake.objects("nodes"));
  EXPECT_EQ(cached(lw).size(), 10u);
}

TEST(ListWatch, WatchesFromTheListAndFollowsBookmarks) {
  FakeApiServer fake({});
  for (int i = 0; i < 3; ++i) fake.put("workloads", workload_json("team-a", "w" + std::to_string(i)));
  SleepLog sleeps;
  auto t = make_transport(config_for(fake), sleeps);
  Runner run(*t, "/apis/kueue.x-k8s.io/v1beta2/workloads");
  eventually([&] { return run.stats().lists == 1; });
  const std::string listed = std::to_string(fake.resource_version());
  fake.put("workloads", workload_json("team-a", "w1", 2));
  fake.remove("workloads", "team-a", "w0");
  fake.put("workloads", workload_json("team-b", "w9"));
  eventually([&] { return run.rv() == std::to_string(fake.resource_version()); });
  fake.bookmark();
  eventually([&] { return run.stats().bookmarks >= 1; });
  ASSERT_TRUE(run.stop(fake).ok());
  EXPECT_EQ(cached(run.lw()), fake.objects("workloads"));
  const auto targets = fake.targets();
  EXPECT_EQ(targets.at(1), "/apis/kueue.x-k8s.io/v1beta2/workloads?watch=true&allowWatchBookmarks=true&resourceVersion=" +
                               listed + "&timeoutSeconds=300");
}

TEST(ListWatch, AnErrorEvent410ReLists) {
  FakeApiServer fake({});
  fake.put("clusterqueues", cluster_queue_json("team-a-cq"));
  SleepLog sleeps;
  auto t = make_transport(config_for(fake), sleeps);
  std::vector<std::string> seen;
  bool compacted = false;
  ListWatch* self = nullptr;
  ListWatchOptions options;
  options.should_stop = [&] {
    if (!compacted && self->stats().lists == 1) {  // after the first list: history moves past it before the watch starts
      compacted = true;
      fake.put("clusterqueues", cluster_queue_json("team-b-cq"));
      fake.compact();
    }
    return self->stats().lists == 2;
  };
  ListWatch lw(*t, "/apis/kueue.x-k8s.io/v1beta2/clusterqueues",
               [&](EventType type, const Json*, const Json* after) {
                 seen.push_back(std::string(to_string(type)) + " " + (after ? after->at("metadata").at("name").get<std::string>() : ""));
               },
               options);
  self = &lw;
  ASSERT_TRUE(lw.run().ok());
  EXPECT_EQ(lw.stats().gone, 1u);
  EXPECT_EQ(seen, (std::vector<std::string>{"ADDED team-a-cq", "ADDED team-b-cq"}));
  EXPECT_EQ(cached(lw), fake.objects("clusterqueues"));
}

TEST(ListWatch, AnHttp410ReListsAndAStatusOtherwiseIsAnError) {
  FakeApiServer fake({});
  fake.put("nodes", node_json("n1"));
  SleepLog sleeps;
  auto t = make_transport(config_for(fake), sleeps);
  bool injected = false;
  ListWatch* self = nullptr;
  ListWatchOptions options;
  options.should_stop = [&] {
    if (!injected && self->stats().lists == 1) {
      injected = true;
      fake.fail_next(1, 410);
    }
    return self->stats().lists == 2;
  };
  ListWatch lw(*t, "/api/v1/nodes", {}, options);
  self = &lw;
  const auto res410 = lw.run();
  ASSERT_TRUE(res410.ok()) << res410.error().describe();
  EXPECT_EQ(lw.stats().gone, 1u);

  fake.fail_next(1, 403);
  ListWatch refused(*t, "/api/v1/nodes");
  auto res = refused.run();
  ASSERT_FALSE(res.ok());
  EXPECT_EQ(res.error().http_status, 403);
}

TEST(ListWatch, ResumesFromTheLastResourceVersionAfterADrop) {
  FakeApiServer fake({});
  for (int i = 0; i < 5; ++i) fake.put("pods", pod_json("team-a", "p" + std::to_string(i)));
  SleepLog sleeps;
  auto t = make_transport(config_for(fake), sleeps);
  fake.drop_next_watch_after(3);
  Runner run(*t, "/api/v1/pods");
  eventually([&] { return run.stats().lists == 1; });
  std::vector<std::string> rvs;
  for (int i = 0; i < 5; ++i) {
    rvs.push_back(fake.put("pods", pod_json("team-a", "p" + std::to_string(i), "gpu-node-2"))["metadata"]["resourceVersion"]);
  }
  eventually([&] { return run.rv() == std::to_string(fake.resource_version()); });
  ASSERT_TRUE(run.stop(fake).ok());
  EXPECT_EQ(cached(run.lw()), fake.objects("pods"));
  EXPECT_EQ(run.lw().stats().resumes, 1u);
  EXPECT_EQ(sleeps.get().size(), 1u);  // one backoff before resuming
  const auto targets = fake.targets();
  ASSERT_GE(targets.size(), 3u);
  EXPECT_NE(targets[2].find("resourceVersion=" + rvs[2] + "&"), std::string::npos) << targets[2];
  EXPECT_EQ(run.lw().stats().lists, 1u);  // a drop resumes, it does not re-list
}

TEST(ListWatchBurst, TenThousandModificationsEndWithTheFakesState) {
  FakeApiServer fake({});
  for (int i = 0; i < 100; ++i) fake.put("pods", pod_json("team-" + std::to_string(i % 4), "p" + std::to_string(i)));
  SleepLog sleeps;
  auto t = make_transport(config_for(fake), sleeps);
  Runner run(*t, "/api/v1/pods", paged(30));
  eventually([&] { return run.stats().lists == 1; });
  for (int i = 0; i < 10'000; ++i) {
    const int n = i % 100;
    Json p = pod_json("team-" + std::to_string(n % 4), "p" + std::to_string(n));
    p["metadata"]["annotations"]["gpubank.dev/step"] = std::to_string(i);
    fake.put("pods", std::move(p));
  }
  eventually([&] { return run.rv() == std::to_string(fake.resource_version()); });
  ASSERT_TRUE(run.stop(fake).ok());
  EXPECT_EQ(cached(run.lw()), fake.objects("pods"));
  EXPECT_EQ(run.lw().store().objects().at("team-3/p99")["metadata"]["annotations"]["gpubank.dev/step"], "9999");
}

}  // namespace
}  // namespace gpubank::k8s
