#include "k8s/informer.hpp"

#include <pthread.h>

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <utility>

namespace gpubank::k8s {

struct Informer::Impl {
  std::unique_ptr<Transport> transport;
  std::string collection;
  InformerOptions options;
  std::vector<Handler> handlers;  // fixed once started
  std::unique_ptr<ListWatch> list_watch;
  std::thread thread;

  mutable std::mutex m;
  mutable std::condition_variable cv;
  // The cache as the informer's thread keeps it (written under m, by that thread only).
  std::map<std::string, ObjectPtr> live;
  std::string live_rv;
  std::uint64_t version = 0;
  // The snapshot of `live`, built by the first reader after a change; null: stale.
  mutable SnapshotPtr published;
  // While a list is being applied, readers get the cache as it was before it.
  SnapshotPtr before_list;
  bool in_list = false;
  bool synced = false;
  bool started = false;
  bool finished = false;
  bool stop_requested = false;
  std::optional<ApiError> error;
  ListWatchStats stats;
  // A list's changes, heard during the list and delivered once it is published.
  struct Pending {
    EventType type;
    ObjectPtr before;
    ObjectPtr after;
  };
  std::vector<Pending> pending;
  bool announced_sync = false;  // the informer's thread only

  SnapshotPtr build_locked() const {
    if (!published) {
      auto s = std::make_shared<CacheSnapshot>();
      s->objects = live;  // pointers: the objects themselves are shared, never copied
      s->resource_version = live_rv;
      s->version = version;
      s->synced = synced;
      published = std::move(s);
    }
    return published;
  }

  void deliver(EventType type, const ObjectPtr& before, const ObjectPtr& after) const {
    for (const auto& h : handlers) h(type, before, after);
  }

  // The ObjectStore's handler, on the informer's thread.
  void on_change(EventType type, const Json* before, const Json* after) {
    const std::string key = object_key(after != nullptr ? *after : *before);
    ObjectPtr old;
    ObjectPtr fresh = after != nullptr ? std::make_shared<const Json>(*after) : nullptr;
    bool deferred = false;
    {
      std::lock_guard lock(m);
      const auto it = live.find(key);
      if (it != live.end()) old = it->second;
      if (fresh) {
        live.insert_or_assign(key, fresh);
      } else if (it != live.end()) {
        live.erase(it);
      }
      ++version;
      published.reset();
      if (in_list) {
        pending.push_back({type, old, fresh});
        deferred = true;
      } else {
        live_rv = list_watch->store().resource_version();
      }
    }
    if (!deferred) deliver(type, old, fresh);
  }

  void on_list_begin() {
    std::lock_guard lock(m);
    before_list = build_locked();
    in_list = true;
  }

  void on_list_end() {
    std::vector<Pending> events;
    {
      std::lock_guard lock(m);
      in_list = false;
      before_list.reset();
      live_rv = list_watch->store().resource_version();
      synced = true;
      ++version;
      published.reset();
      events.swap(pending);
      stats = list_watch->stats();
    }
    cv.notify_all();
    const bool first = std::exchange(announced_sync, true) == false;
    if (first && options.on_state_change) options.on_state_change();
    for (const auto& e : events) deliver(e.type, e.before, e.after);
  }

  bool should_stop() {
    std::lock_guard lock(m);
    stats = list_watch->stats();
    return stop_requested;
  }

  void run() {
    // Named so that `top -H` and /proc/PID/task/*/comm show where an informer's CPU goes
    // (bench/watch_bench reads it), as the webhook's threads are; at most 15 characters.
    pthread_setname_np(pthread_self(), "gpubank-inform");
    auto result = list_watch->run();
    {
      std::lock_guard lock(m);
      finished = true;
      stats = list_watch->stats();
      if (!result.ok()) error = result.error();
    }
    cv.notify_all();
    if (!result.ok() && options.on_error) options.on_error(result.error());
    if (options.on_state_change) options.on_state_change();
  }
};

Informer::Informer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Expected<std::unique_ptr<Informer>> Informer::create(ClientConfig config, std::string collection,
                                                     InformerOptions options) {
  auto transport = Transport::create(std::move(config), options.transport);
  if (!transport.ok()) return Unexpected{"informer for " + collection + ": " + transport.error()};
  auto impl = std::make_unique<Impl>();
  Impl* im = impl.get();
  im->transport = std::move(transport.value());
  im->collection = std::move(collection);
  ListWatchOptions lw = options.list_watch;
  lw.should_stop = [im] { return im->should_stop(); };
  lw.on_list_begin = [im] { im->on_list_begin(); };
  lw.on_list_end = [im] { im->on_list_end(); };
  im->options = std::move(options);
  im->list_watch = std::make_unique<ListWatch>(
      *im->transport, im->collection,
      [im](EventType type, const Json* before, const Json* after) { im->on_change(type, before, after); }, std::move(lw));
  return std::unique_ptr<Informer>(new Informer(std::move(impl)));
}

Informer::~Informer() { stop(); }

void Informer::add_handler(Handler handler) {
  std::lock_guard lock(impl_->m);
  if (impl_->started) return;  // documented: before start() only
  impl_->handlers.push_back(std::move(handler));
}

void Informer::start() {
  {
    std::lock_guard lock(impl_->m);
    if (impl_->started) return;
    impl_->started = true;
  }
  impl_->thread = std::thread([im = impl_.get()] { im->run(); });
}

void Informer::request_stop() {
  {
    std::lock_guard lock(impl_->m);
    impl_->stop_requested = true;
  }
  impl_->cv.notify_all();
  impl_->transport->cancel();  // a silent watch returns now, not at its timeout
}

void Informer::stop() {
  request_stop();
  if (impl_->thread.joinable()) impl_->thread.join();
}

bool Informer::has_synced() const {
  std::lock_guard lock(impl_->m);
  return impl_->synced;
}

ApiResult<std::monostate> Informer::wait_for_sync(std::chrono::milliseconds timeout) const {
  const Impl& im = *impl_;
  std::unique_lock lock(im.m);
  im.cv.wait_for(lock, timeout, [&] { return im.synced || im.finished || im.stop_requested; });
  if (im.synced) return std::monostate{};
  if (im.error) return *im.error;
  ApiError e;
  e.request = im.collection;
  if (im.finished || im.stop_requested) {
    e.reason = "Stopped";
    e.message = "the informer stopped before its first list";
  } else {
    e.reason = "Timeout";
    e.message = "not synced within " + std::to_string(timeout.count()) + " ms";
  }
  return e;
}

SnapshotPtr Informer::snapshot() const {
  std::lock_guard lock(impl_->m);
  if (impl_->in_list) return impl_->before_list;
  return impl_->build_locked();
}

ObjectPtr Informer::get(std::string_view key) const {
  const auto s = snapshot();
  const auto it = s->objects.find(std::string(key));
  return it == s->objects.end() ? nullptr : it->second;
}

bool Informer::running() const {
  std::lock_guard lock(impl_->m);
  return impl_->started && !impl_->finished && !impl_->stop_requested;
}

std::optional<ApiError> Informer::error() const {
  std::lock_guard lock(impl_->m);
  return impl_->error;
}

const std::string& Informer::collection() const { return impl_->collection; }

ListWatchStats Informer::stats() const {
  std::lock_guard lock(impl_->m);
  return impl_->stats;
}

// ---- InformerSet ----

std::vector<InformedKind> controller_kinds() {
  return {
      {"v1", "Node"},
      {"v1", "Pod"},
      {"kueue.x-k8s.io/v1beta2", "Workload"},
      {"kueue.x-k8s.io/v1beta2", "ClusterQueue"},
      {"kueue.x-k8s.io/v1beta2", "Cohort"},
      {"kueue.x-k8s.io/v1beta2", "LocalQueue"},
      {"platform.gpubank.dev/v1alpha1", "PlatformGuardrails"},
      {"platform.gpubank.dev/v1alpha1", "GPUQuotaPolicy"},
      {"platform.gpubank.dev/v1alpha1", "InferenceScalingPolicy"},
      {"platform.gpubank.dev/v1alpha1", "TidalPolicy"},
      {"platform.gpubank.dev/v1alpha1", "CapacityLease"},
      {"platform.gpubank.dev/v1alpha1", "LowUtilizationPolicy"},
  };
}

namespace {

std::string kind_name(const InformedKind& k) { return k.kind + " (" + k.api_version + ")"; }

}  // namespace

struct InformerSet::Sync {
  std::mutex m;
  std::condition_variable cv;
  std::uint64_t changes = 0;
};

InformerSet::InformerSet() : sync_(std::make_shared<Sync>()) {}

Expected<std::unique_ptr<InformerSet>> InformerSet::create(const ClientConfig& config, const RestMapper& mapper,
                                                           const std::vector<InformedKind>& kinds,
                                                           const InformerOptions& options) {
  std::unique_ptr<InformerSet> set(new InformerSet());
  InformerOptions each = options;
  // Every informer's sync or end wakes wait_for_sync (after the caller's own hook).
  each.on_state_change = [sync = set->sync_, theirs = options.on_state_change] {
    if (theirs) theirs();
    {
      std::lock_guard lock(sync->m);
      ++sync->changes;
    }
    sync->cv.notify_all();
  };
  for (const auto& k : kinds) {
    auto mapping = mapper.find(k.api_version, k.kind);
    if (!mapping.ok()) return Unexpected{"informer for " + kind_name(k) + ": " + mapping.error()};
    auto informer = Informer::create(config, mapping->collection_path(""), each);
    if (!informer.ok()) return Unexpected{informer.error()};
    set->informers_.emplace_back(k, std::move(informer.value()));
  }
  return set;
}

InformerSet::~InformerSet() { stop(); }

Informer* InformerSet::find(std::string_view api_version, std::string_view kind) const {
  for (const auto& [k, informer] : informers_) {
    if (k.api_version == api_version && k.kind == kind) return informer.get();
  }
  return nullptr;
}

void InformerSet::start() {
  for (auto& [k, informer] : informers_) informer->start();
}

void InformerSet::stop() {
  for (auto& [k, informer] : informers_) informer->request_stop();
  for (auto& [k, informer] : informers_) informer->stop();
}

ApiResult<std::monostate> InformerSet::wait_for_sync(std::chrono::milliseconds timeout) const {
  // Returns the first informer that ended without syncing; nullopt while none has.
  const auto dead = [this]() -> std::optional<ApiError> {
    for (const auto& [k, informer] : informers_) {
      if (informer->has_synced() || informer->running()) continue;
      auto res = informer->wait_for_sync(std::chrono::milliseconds(0));
      if (res.ok() || res.error().reason == "Timeout") continue;  // synced meanwhile, or not started
      ApiError e = res.error();
      e.message = kind_name(k) + ": " + e.message;
      return e;
    }
    return std::nullopt;
  };
  const auto all_synced = [this] {
    return std::all_of(informers_.begin(), informers_.end(), [](const auto& p) { return p.second->has_synced(); });
  };
  std::optional<ApiError> failed;
  {
    std::unique_lock lock(sync_->m);
    sync_->cv.wait_for(lock, timeout, [&] {
      failed = dead();
      return failed.has_value() || all_synced();
    });
  }
  if (failed) return *failed;
  std::string waiting;
  for (const auto& [k, informer] : informers_) {
    if (!informer->has_synced()) waiting += (waiting.empty() ? "" : ", ") + kind_name(k);
  }
  if (waiting.empty()) return std::monostate{};
  ApiError e;
  e.reason = "Timeout";
  e.message = "not synced within " + std::to_string(timeout.count()) + " ms: " + waiting;
  return e;
}

std::vector<std::pair<InformedKind, ApiError>> InformerSet::errors() const {
  std::vector<std::pair<InformedKind, ApiError>> out;
  for (const auto& [k, informer] : informers_) {
    if (auto e = informer->error()) out.emplace_back(k, std::move(*e));
  }
  return out;
}

}  // namespace gpubank::k8s
