// Client-side rate limiting of requests to the API server, as client-go's
// flowcontrol.NewTokenBucketRateLimiter does it: a token bucket that refills at `qps`
// tokens a second up to `burst`. Each request (each attempt, retries included) and each
// watch start takes one token; the lines of a watch stream take none.
//
// Waits are reserved, not polled (golang.org/x/time/rate's Reserve, which client-go's
// limiter uses): a request that finds the bucket empty takes a token from the future and
// is told how long to wait for it, so ten requests at once with burst 0 left wait 1/qps,
// 2/qps, ... exactly, in order. The caller sleeps (the Transport, through its injectable
// and cancellable sleep), so tests assert the waits without waiting.
//
// One limiter is shared by every Transport of a process (one Transport per thread), as one
// rest.Config's limiter is shared by client-go's clients: the API server's priority and
// fairness sees one client. Thread-safe.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>

#include "core/expected.hpp"

namespace gpubank::k8s {

// gpubank's controller defaults: 50 requests a second, bursts of 100. client-go's own are
// 5 and 10, which controllers raise (Kueue's default configuration: 50/100;
// controller-runtime: 20/30). gpubank lists and watches twelve kinds at start-up and writes
// status and Events for each decision; 50/100 lets a start-up's lists through at once while
// keeping a misbehaving loop well under what an API server's priority and fairness gives
// one workload-controller client.
struct RateLimit {
  double qps = 50.0;
  int burst = 100;
};

class RateLimiter {
 public:
  using Clock = std::function<std::chrono::steady_clock::time_point()>;

  // qps > 0 and burst >= 1, else an error naming the field. The bucket starts full. An
  // empty clock is the steady clock.
  [[nodiscard]] static Expected<std::shared_ptr<RateLimiter>> create(RateLimit limit, Clock clock = {});

  // Takes a token and returns how long the caller must wait before using it (zero when
  // one was available). Never fails: the wait grows with the queue.
  [[nodiscard]] std::chrono::nanoseconds reserve();
  // Takes a token only when one is available now.
  [[nodiscard]] bool try_accept();

  [[nodiscard]] const RateLimit& limit() const { return limit_; }

 private:
  RateLimiter(RateLimit limit, Clock clock);
  void refill_locked(std::chrono::steady_clock::time_point now);

  RateLimit limit_;
  Clock clock_;
  std::mutex m_;
  double tokens_;  // may go negative: tokens reserved from the future
  std::chrono::steady_clock::time_point last_;
};

}  // namespace gpubank::k8s
