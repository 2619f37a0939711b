// PodResourcesCache: the last good answer survives kubelet failures, its age and the error
// count are reported, and reading it never reaches the kubelet (the fake counts calls).
#include "node/pod_resources_cache.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "node_fixture.hpp"

namespace gpubank::node {
namespace {

using namespace std::chrono_literals;
using test::client_of;
using test::fixture;
using testing::FakeKubelet;

// Polls (the cache's thread owns the timing) until pred holds or 10 s pass.
template <class Pred>
bool eventually(Pred pred) {
  const auto give_up = std::chrono::steady_clock::now() + 10s;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > give_up) return false;
    std::this_thread::sleep_for(5ms);
  }
  return true;
}

TEST(PodResourcesCache, EmptyBeforeTheFirstRefresh) {
  FakeKubelet kubelet;
  PodResourcesCache cache(client_of(kubelet), 1h);
  const auto state = cache.state();
  ASSERT_NE(state, nullptr);
  EXPECT_EQ(state->devices, nullptr);
  EXPECT_EQ(state->age(), std::nullopt);
  EXPECT_EQ(state->refreshes, 0u);
  EXPECT_EQ(kubelet.list_calls(), 0);
}

TEST(PodResourcesCache, KeepsTheLastGoodAnswerAcrossFailures) {
  FakeKubelet kubelet;
  kubelet.set_list_fixture(fixture("list-multi-gpu.json"));
  PodResourcesCache cache(client_of(kubelet), 1h);

  cache.refresh();
  const auto good = cache.state();
  ASSERT_NE(good->devices, nullptr);
  EXPECT_EQ(good->devices->size(), 8u);
  EXPECT_EQ(good->generation, 1u);
  EXPECT_EQ(good->errors, 0u);
  EXPECT_TRUE(good->last_error.empty());

  kubelet.set_mode(FakeKubelet::Mode::Unavailable);
  cache.refresh();
  cache.refresh();
  const auto failed = cache.state();
  EXPECT_EQ(failed->devices, good->devices);  // the same answer, not a copy and not empty
  EXPECT_EQ(failed->last_success, good->last_success);
  EXPECT_EQ(failed->generation, 1u);
  EXPECT_EQ(failed->errors, 2u);
  EXPECT_EQ(failed->refreshes, 3u);
  EXPECT_EQ(failed->last_error, "podresources unix:" + kubelet.socket_path() + " List: UNAVAILABLE: fake kubelet told to fail");

  kubelet.set_mode(FakeKubelet::Mode::Serve);
  kubelet.set_list_fixture(fixture("list-mig.json"));
  cache.refresh();
  const auto recovered = cache.state();
  ASSERT_NE(recovered->devices, nullptr);
  EXPECT_EQ(recovered->devices->size(), 4u);
  EXPECT_EQ(recovered->devices->front().pod, "triton-embed-6c8b7d-4xq2m");
  EXPECT_EQ(recovered->generation, 2u);
  EXPECT_EQ(recovered->errors, 2u);  // a running count, not reset by a success
  EXPECT_TRUE(recovered->last_error.empty());
  // Readers that held the old answer still hold it whole.
  EXPECT_EQ(good->devices->size(), 8u);
}

TEST(PodResourcesCache, ReportsTheAgeOfTheLastSuccess) {
  FakeKubelet kubelet;
  PodResourcesCache cache(client_of(kubelet), 1h);
  cache.refresh();
  const auto fresh = cache.state();
  ASSERT_TRUE(fresh->last_success);
  EXPECT_EQ(fresh->age(*fresh->last_success + 3s), std::optional<PodResourcesState::Clock::duration>(3s));

  std::this_thread::sleep_for(50ms);
  kubelet.set_mode(FakeKubelet::Mode::Unavailable);
  cache.refresh();
  const auto stale = cache.state();
  EXPECT_EQ(stale->last_success, fresh->last_success);  // a failure does not make it fresh
  ASSERT_TRUE(stale->age());
  EXPECT_GE(*stale->age(), 50ms);
  EXPECT_EQ(stale->errors, 1u);
}

TEST(PodResourcesCache, ReadingNeverCallsTheKubelet) {
  FakeKubelet kubelet;
  kubelet.set_list_fixture(fixture("list-plain-gpus.json"));
  PodResourcesCache cache(client_of(kubelet), 1h);
  cache.refresh();
  ASSERT_EQ(kubelet.list_calls(), 1);
  for (int i = 0; i < 10000; ++i) {
    const auto state = cache.state();
    ASSERT_EQ(state->devices->size(), 5u);
  }
  EXPECT_EQ(kubelet.list_calls(), 1);
  EXPECT_EQ(kubelet.get_calls(), 0);
  EXPECT_EQ(kubelet.allocatable_calls(), 0);
}

TEST(PodResourcesCache, ReadsDoNotWaitForAStalledKubelet) {
  FakeKubelet kubelet;
  kubelet.set_list_fixture(fixture("list-plain-gpus.json"));
  PodResourcesCache cache(client_of(kubelet, 3s), 10ms);
  cache.start();
  ASSERT_TRUE(eventually([&] { return cache.state()->devices != nullptr; }));
  kubelet.set_mode(FakeKubelet::Mode::Stall);
  const int calls = kubelet.list_calls();
  ASSERT_TRUE(eventually([&] { return kubelet.list_calls() > calls; }));  // a refresh is stuck now
  const auto started = std::chrono::steady_clock::now();
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(cache.state()->devices->size(), 5u);
  EXPECT_LT(std::chrono::steady_clock::now() - started, 1s);
  // The stuck refresh ends at its deadline and counts as an error.
  ASSERT_TRUE(eventually([&] { return cache.state()->errors >= 1; }));
  EXPECT_NE(cache.state()->last_error.find("List: DEADLINE_EXCEEDED"), std::string::npos) << cache.state()->last_error;
  cache.stop();
}

TEST(PodResourcesCache, RefreshesEveryIntervalAndStopsCleanly) {
  FakeKubelet kubelet;
  kubelet.set_list_fixture(fixture("list-time-slicing.json"));
  PodResourcesCache cache(client_of(kubelet), 20ms);
  cache.start();
  ASSERT_TRUE(eventually([&] { return kubelet.list_calls() >= 3; }));
  cache.stop();
  const int calls = kubelet.list_calls();
  EXPECT_EQ(cache.state()->refreshes, static_cast<std::uint64_t>(calls));
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(kubelet.list_calls(), calls);  // no refresh after stop()
  cache.stop();                            // idempotent
  cache.start();                           // a stopped cache stays stopped
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(kubelet.list_calls(), calls);
}

TEST(PodResourcesCache, StopWaitsAtMostForTheCallInFlight) {
  FakeKubelet kubelet;
  kubelet.set_mode(FakeKubelet::Mode::Stall);
  PodResourcesCache cache(client_of(kubelet, 500ms), 1h);
  cache.start();
  ASSERT_TRUE(eventually([&] { return kubelet.list_calls() == 1; }));
  const auto started = std::chrono::steady_clock::now();
  cache.stop();
  EXPECT_LT(std::chrono::steady_clock::now() - started, 3s);
  EXPECT_EQ(cache.state()->errors, 1u);
}

}  // namespace
}  // namespace gpubank::node
