#include "k8s/rate_limiter.hpp"

#include <cmath>
#include <string>

namespace gpubank::k8s {

Expected<std::shared_ptr<RateLimiter>> RateLimiter::create(RateLimit limit, Clock clock) {
  if (!(limit.qps > 0.0) || !std::isfinite(limit.qps)) {
    return Unexpected{"rate limit: qps must be a positive number, got " + std::to_string(limit.qps)};
  }
  if (limit.burst < 1) return Unexpected{"rate limit: burst must be at least 1, got " + std::to_string(limit.burst)};
  if (!clock) clock = [] { return std::chrono::steady_clock::now(); };
  return std::shared_ptr<RateLimiter>(new RateLimiter(limit, std::move(clock)));
}

RateLimiter::RateLimiter(RateLimit limit, Clock clock)
    : limit_(limit), clock_(std::move(clock)), tokens_(limit.burst), last_(clock_()) {}

void RateLimiter::refill_locked(std::chrono::steady_clock::time_point now) {
  if (now <= last_) return;  // a clock that stands still (or a fake moved back) adds nothing
  const double elapsed = std::chrono::duration<double>(now - last_).count();
  tokens_ = std::min(static_cast<double>(limit_.burst), tokens_ + elapsed * limit_.qps);
  last_ = now;
}

std::chrono::nanoseconds RateLimiter::reserve() {
  std::lock_guard lock(m_);
  refill_locked(clock_());
  tokens_ -= 1.0;
  if (tokens_ >= 0.0) return std::chrono::nanoseconds(0);
  // The token will exist once the deficit has refilled. Rounded up: never a wait too short.
  const double seconds = -tokens_ / limit_.qps;
  return std::chrono::nanoseconds(static_cast<std::int64_t>(std::ceil(seconds * 1e9 - 1e-3)));
}

bool RateLimiter::try_accept() {
  std::lock_guard lock(m_);
  refill_locked(clock_());
  if (tokens_ < 1.0) return false;
  tokens_ -= 1.0;
  return true;
}

}  // namespace gpubank::k8s
