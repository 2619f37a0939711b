// The last good PodResources answer, refreshed by a background thread: the exporter's scrape
// reads it without blocking and never calls the kubelet (issue 30). A failed refresh keeps
// the previous answer and is counted; the age of the last success says how stale it is.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "node/pod_resources.hpp"

namespace gpubank::node {

// One coherent view, replaced whole after every refresh (never changed in place).
struct PodResourcesState {
  using Clock = std::chrono::steady_clock;
  // The last good List answer; null until the first success.
  std::shared_ptr<const std::vector<DeviceAllocation>> devices;
  std::optional<Clock::time_point> last_success;
  std::string last_error;        // of the latest refresh; empty when it succeeded
  std::uint64_t refreshes = 0;   // List calls made
  std::uint64_t errors = 0;      // of those, failed
  std::uint64_t generation = 0;  // successes so far: changes when devices is replaced

  // Time since the last success; nullopt before the first.
  [[nodiscard]] std::optional<Clock::duration> age(Clock::time_point now = Clock::now()) const {
    if (!last_success) return std::nullopt;
    return now - *last_success;
  }
};

class PodResourcesCache {
 public:
  using Clock = PodResourcesState::Clock;

  // Calls client->list() once at start() and then every interval until stop().
  PodResourcesCache(std::unique_ptr<PodResourcesClient> client, std::chrono::milliseconds interval);
  ~PodResourcesCache();  // stops
  PodResourcesCache(const PodResourcesCache&) = delete;
  PodResourcesCache& operator=(const PodResourcesCache&) = delete;

  void start();
  // Returns once the thread has ended (waiting for a call in flight, at most the client's
  // timeout). Idempotent.
  void stop();

  // What a scrape reads: a pointer load, no lock held across I/O, no kubelet call.
  [[nodiscard]] std::shared_ptr<const PodResourcesState> state() const { return state_.load(); }

  // One refresh on the caller's thread, as the background thread does it (tests, or a
  // first answer before serving). Not for the scrape path.
  void refresh();

 private:
  void run();

  std::unique_ptr<PodResourcesClient> client_;
  std::chrono::milliseconds interval_;
  std::atomic<std::shared_ptr<const PodResourcesState>> state_;
  std::mutex refresh_mutex_;  // one refresh at a time (the thread, or refresh())
  std::mutex mutex_;          // guards stopping_ for the condition variable
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace gpubank::node
