#include "node/pod_resources_cache.hpp"

#include <utility>

namespace gpubank::node {

PodResourcesCache::PodResourcesCache(std::unique_ptr<PodResourcesClient> client, std::chrono::milliseconds interval)
    : client_(std::move(client)), interval_(interval), state_(std::make_shared<const PodResourcesState>()) {}

PodResourcesCache::~PodResourcesCache() { stop(); }

void PodResourcesCache::start() {
  std::lock_guard lock(mutex_);
  if (thread_.joinable() || stopping_) return;
  thread_ = std::thread([this] { run(); });
}

void PodResourcesCache::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void PodResourcesCache::refresh() {
  std::lock_guard serial(refresh_mutex_);
  auto result = client_->list();
  // Only this function writes state_ and refresh_mutex_ serialises it: load, copy, store.
  auto next = std::make_shared<PodResourcesState>(*state_.load());
  ++next->refreshes;
  if (result) {
    next->devices = std::make_shared<const std::vector<DeviceAllocation>>(std::move(result).value());
    next->last_success = Clock::now();
    next->last_error.clear();
    ++next->generation;
  } else {
    // The previous answer stays: a kubelet hiccup must not blank every attribution.
    next->last_error = result.error();
    ++next->errors;
  }
  state_.store(std::move(next));
}

void PodResourcesCache::run() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    lock.unlock();
    refresh();
    lock.lock();
    wake_.wait_for(lock, interval_, [this] { return stopping_; });
  }
}

}  // namespace gpubank::node
