// Client-side rate limiting: the token bucket's waits exactly (a hand-moved clock), shared
// by threads, and in the transport: every request, retry and watch start takes a token,
// the lines of a watch none, and two Transports share one bucket.
#include <gtest/gtest.h>

#include <algorithm>
#include <thread>

#include "fake_client.hpp"
#include "fixture.hpp"
#include "k8s/rate_limiter.hpp"
#include "payloads.hpp"

namespace gpubank::k8s {
namespace {

using namespace testing;
using std::chrono::milliseconds;
using std::chrono::nanoseconds;

// A steady clock the test moves.
struct Hand {
  std::mutex m;
  std::chrono::steady_clock::time_point t{};
  RateLimiter::Clock clock() {
    return [this] {
      std::lock_guard lock(m);
      return t;
    };
  }
  void advance(nanoseconds d) {
    std::lock_guard lock(m);
    t += d;
  }
};

std::shared_ptr<RateLimiter> limiter(RateLimit limit, Hand& hand) {
  auto l = RateLimiter::create(limit, hand.clock());
  EXPECT_TRUE(l.ok()) << (l.ok() ? "" : l.error());
  return l.ok() ? l.value() : nullptr;
}

TEST(RateLimiter, ABurstThenOneTokenPerInterval) {
  Hand hand;
  auto l = limiter({5.0, 10}, hand);  // client-go's defaults
  for (int i = 0; i < 10; ++i) EXPECT_EQ(l->reserve(), nanoseconds(0)) << i;
  EXPECT_EQ(l->reserve(), milliseconds(200));
  EXPECT_EQ(l->reserve(), milliseconds(400));
  EXPECT_EQ(l->reserve(), milliseconds(600));
  // One second later five tokens came back; three were owed.
  hand.advance(std::chrono::seconds(1));
  EXPECT_EQ(l->reserve(), nanoseconds(0));
  EXPECT_EQ(l->reserve(), nanoseconds(0));
  EXPECT_EQ(l->reserve(), milliseconds(200));
}

TEST(RateLimiter, RefillStopsAtTheBurst) {
  Hand hand;
  auto l = limiter({50.0, 100}, hand);
  for (int i = 0; i < 100; ++i) ASSERT_EQ(l->reserve(), nanoseconds(0));
  hand.advance(std::chrono::hours(1));
  for (int i = 0; i < 100; ++i) ASSERT_EQ(l->reserve(), nanoseconds(0)) << i;
  EXPECT_EQ(l->reserve(), milliseconds(20));
}

TEST(RateLimiter, TryAcceptTakesOnlyWhatIsThere) {
  Hand hand;
  auto l = limiter({2.0, 1}, hand);
  EXPECT_TRUE(l->try_accept());
  EXPECT_FALSE(l->try_accept());
  hand.advance(milliseconds(499));
  EXPECT_FALSE(l->try_accept());
  hand.advance(milliseconds(1));
  EXPECT_TRUE(l->try_accept());
  // A fractional rate: 3 a second is a wait of 333.33... ms, rounded up.
  auto thirds = limiter({3.0, 1}, hand);
  EXPECT_EQ(thirds->reserve(), nanoseconds(0));
  EXPECT_EQ(thirds->reserve(), nanoseconds(333'333'334));
}

TEST(RateLimiter, RefusesLimitsThatCannotWork) {
  EXPECT_FALSE(RateLimiter::create({0.0, 10}).ok());
  EXPECT_FALSE(RateLimiter::create({-1.0, 10}).ok());
  EXPECT_FALSE(RateLimiter::create({5.0, 0}).ok());
  const auto e = RateLimiter::create({5.0, 0});
  EXPECT_EQ(e.error(), "rate limit: burst must be at least 1, got 0");
  const RateLimit defaults;
  EXPECT_EQ(defaults.qps, 50.0);
  EXPECT_EQ(defaults.burst, 100);
}

TEST(RateLimiter, ThreadsSharingOneBucketGetEveryWaitOnce) {
  Hand hand;  // frozen: every wait is a place in the queue
  auto l = limiter({10.0, 5}, hand);
  std::mutex m;
  std::vector<nanoseconds> waits;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 50; ++i) {
        const auto w = l->reserve();
        std::lock_guard lock(m);
        waits.push_back(w);
      }
    });
  }
  for (auto& t : threads) t.join();
  std::sort(waits.begin(), waits.end());
  ASSERT_EQ(waits.size(), 200u);
  for (std::size_t i = 0; i < 5; ++i) EXPECT_EQ(waits[i], nanoseconds(0));
  for (std::size_t i = 5; i < waits.size(); ++i) {
    EXPECT_EQ(waits[i], milliseconds(100) * static_cast<int>(i - 4)) << i;
  }
}

// The transport sleeps through this: it records the wait and moves the clock by it, as a
// real sleep would.
struct ClockedSleep {
  Hand& hand;
  SleepLog log;
  std::function<void(milliseconds)> sleeper() {
    return [this](milliseconds d) {
      log.sleeper()(d);
      hand.advance(d);
    };
  }
};

TEST(RateLimit, EachRequestRetryAndWatchStartTakesATokenAndWatchLinesNone) {
  FakeApiServer fake({});
  for (int i = 0; i < 5; ++i) fake.put("pods", pod_json("team-a", "p" + std::to_string(i)));
  Hand hand;
  ClockedSleep sleep{hand, {}};
  TransportOptions options;
  options.rate_limiter = limiter({5.0, 2}, hand);
  options.sleep = sleep.sleeper();
  options.retry.jitter = 0;
  auto t = Transport::create(config_for(fake), options);
  ASSERT_TRUE(t.ok()) << t.error();
  Transport& tr = *t.value();

  ASSERT_TRUE(tr.get("/version").ok());
  ASSERT_TRUE(tr.get("/version").ok());
  EXPECT_TRUE(sleep.log.get().empty());  // the burst
  ASSERT_TRUE(tr.get("/version").ok());
  EXPECT_EQ(sleep.log.get(), (std::vector<milliseconds>{milliseconds(200)}));

  // A watch start takes one token; its five lines take none.
  int lines = 0;
  auto watched = tr.stream("/api/v1/pods?watch=true&resourceVersion=0", [&](std::string_view) { return ++lines < 5; });
  ASSERT_TRUE(watched.ok()) << watched.error().describe();
  EXPECT_EQ(lines, 5);
  EXPECT_EQ(sleep.log.get(), (std::vector<milliseconds>{milliseconds(200), milliseconds(200)}));

  // A retried request: a token for each attempt, the backoff between them.
  fake.fail_next(1, 500);
  ASSERT_TRUE(tr.get("/version").ok());
  // 200 (the first attempt's token), 500 (backoff), 0: the backoff refilled 2.5 tokens, so
  // the second attempt's is there.
  EXPECT_EQ(sleep.log.get(), (std::vector<milliseconds>{milliseconds(200), milliseconds(200), milliseconds(200),
                                                        milliseconds(500)}));
  EXPECT_EQ(tr.throttled(), milliseconds(600));
}

TEST(RateLimit, TwoTransportsShareOneBucket) {
  FakeApiServer fake({});
  Hand hand;
  auto shared = limiter({5.0, 2}, hand);
  SleepLog first_sleeps, second_sleeps;
  TransportOptions options;
  options.rate_limiter = shared;
  auto first = make_transport(config_for(fake), first_sleeps, options);
  auto second = make_transport(config_for(fake), second_sleeps, options);
  ASSERT_TRUE(first->get("/version").ok());
  ASSERT_TRUE(second->get("/version").ok());
  ASSERT_TRUE(first->get("/version").ok());  // the bucket is the same: the third waits
  ASSERT_TRUE(second->get("/version").ok());
  EXPECT_EQ(first_sleeps.get(), (std::vector<milliseconds>{milliseconds(200)}));
  EXPECT_EQ(second_sleeps.get(), (std::vector<milliseconds>{milliseconds(400)}));
}

}  // namespace
}  // namespace gpubank::k8s
