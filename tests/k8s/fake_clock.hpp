// Time and hand-offs for the tests of loops on threads (informers, leader election), with
// condition variables only: nothing here sleeps for real or polls.
//
//   - FakeClock: a steady and a wall clock that move only when the test says so. sleep()
//     blocks until the time passes its wake-up or stop is requested; the test waits until
//     the threads it drives are all asleep (wait_for_sleepers) before it moves the time, so
//     each step is deterministic.
//   - Gate: a sleep function (for a Transport) that blocks while the gate is closed, so a
//     test can hold a loop in its backoff while it changes the world.
//   - Signal: a counter that threads bump and others wait on.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <set>
#include <stop_token>
#include <vector>

namespace gpubank::k8s::testing {

inline constexpr std::chrono::seconds kHangGuard{60};  // only a hang reaches it

class FakeClock {
 public:
  using Steady = std::chrono::steady_clock::time_point;
  using Wall = std::chrono::system_clock::time_point;

  explicit FakeClock(Wall wall_start = Wall(std::chrono::seconds(1'767'225'600)))  // 2026-01-01T00:00:00Z
      : wall_start_(wall_start) {}

  Steady now() {
    std::lock_guard lock(m_);
    return now_;
  }
  Wall wall() {
    std::lock_guard lock(m_);
    return wall_start_ + std::chrono::duration_cast<Wall::duration>(now_ - Steady());
  }
  std::chrono::milliseconds elapsed() {
    std::lock_guard lock(m_);
    return std::chrono::duration_cast<std::chrono::milliseconds>(now_ - Steady());
  }

  void advance(std::chrono::milliseconds d) {
    {
      std::lock_guard lock(m_);
      now_ += d;
    }
    cv_.notify_all();
  }

  void sleep(std::chrono::milliseconds d, std::stop_token stop) {
    std::unique_lock lock(m_);
    const Steady wake = now_ + d;
    const auto ticket = sleeping_.insert(wake);
    cv_.notify_all();
    cv_.wait(lock, stop, [&] { return now_ >= wake; });
    sleeping_.erase(ticket);
    cv_.notify_all();
  }
  std::function<void(std::chrono::milliseconds, std::stop_token)> sleeper() {
    return [this](std::chrono::milliseconds d, std::stop_token stop) { sleep(d, stop); };
  }

  // Waits until `n` threads sleep with a wake-up still ahead (false on a hang).
  bool wait_for_sleepers(std::size_t n) {
    std::unique_lock lock(m_);
    const bool ok = cv_.wait_for(lock, kHangGuard, [&] { return asleep_locked() >= n; });
    if (!ok) ADD_FAILURE() << "fewer than " << n << " sleepers within " << kHangGuard.count() << " s";
    return ok;
  }

 private:
  std::size_t asleep_locked() const {
    std::size_t n = 0;
    for (const Steady w : sleeping_) n += w > now_ ? 1 : 0;
    return n;
  }

  std::mutex m_;
  std::condition_variable_any cv_;
  Steady now_{};
  Wall wall_start_;
  std::multiset<Steady> sleeping_;
};

class Gate {
 public:
  void close() {
    std::lock_guard lock(m_);
    open_ = false;
  }
  void open() {
    {
      std::lock_guard lock(m_);
      open_ = true;
    }
    cv_.notify_all();
  }
  // For TransportOptions::sleep: records the wait, then blocks while closed.
  std::function<void(std::chrono::milliseconds)> sleeper() {
    return [this](std::chrono::milliseconds d) {
      std::unique_lock lock(m_);
      waits_.push_back(d);
      ++held_;
      cv_.notify_all();
      cv_.wait(lock, [&] { return open_; });
      --held_;
    };
  }
  // Waits until a sleeper is held at the closed gate.
  bool wait_for_held() {
    std::unique_lock lock(m_);
    const bool ok = cv_.wait_for(lock, kHangGuard, [&] { return held_ > 0; });
    if (!ok) ADD_FAILURE() << "nothing reached the gate within " << kHangGuard.count() << " s";
    return ok;
  }
  std::vector<std::chrono::milliseconds> waits() {
    std::lock_guard lock(m_);
    return waits_;
  }

 private:
  std::mutex m_;
  std::condition_variable cv_;
  bool open_ = true;
  int held_ = 0;
  std::vector<std::chrono::milliseconds> waits_;
};

class Signal {
 public:
  void bump() {
    {
      std::lock_guard lock(m_);
      ++count_;
    }
    cv_.notify_all();
  }
  std::size_t count() {
    std::lock_guard lock(m_);
    return count_;
  }
  // Waits until `done()` holds, re-checking after each bump (false on a hang). done() runs
  // without the lock; a bump while it runs is not lost (the count is compared).
  bool wait_until(const std::function<bool()>& done) {
    const auto deadline = std::chrono::steady_clock::now() + kHangGuard;
    std::unique_lock lock(m_);
    while (true) {
      const std::size_t seen = count_;
      lock.unlock();
      const bool d = done();
      lock.lock();
      if (d) return true;
      if (!cv_.wait_until(lock, deadline, [&] { return count_ != seen; })) {
        ADD_FAILURE() << "condition not reached within " << kHangGuard.count() << " s";
        return false;
      }
    }
  }

 private:
  std::mutex m_;
  std::condition_variable cv_;
  std::size_t count_ = 0;
};

}  // namespace gpubank::k8s::testing
