#include "controller/policy_watch.hpp"

#include <condition_variable>
#include <mutex>
#include <thread>

#include "policy/types.hpp"

namespace gpubank::controller {

std::vector<k8s::InformedKind> policy_kinds() {
  std::vector<k8s::InformedKind> kinds;
  for (const policy::Kind kind : {policy::Kind::PlatformGuardrails, policy::Kind::GPUQuotaPolicy,
                                  policy::Kind::InferenceScalingPolicy, policy::Kind::TidalPolicy,
                                  policy::Kind::CapacityLease, policy::Kind::LowUtilizationPolicy}) {
    kinds.push_back({std::string(kPolicyApiVersion), std::string(policy::kind_name(kind))});
  }
  return kinds;
}

std::vector<nlohmann::json> snapshot_objects(const k8s::InformerSet& informers) {
  std::vector<nlohmann::json> out;
  for (const auto& [kind, informer] : informers.informers()) {
    // Held for the loop: the informer may swap in a new snapshot meanwhile, and a
    // range-for over a member of the temporary shared_ptr would read freed memory.
    const auto snapshot = informer->snapshot();
    for (const auto& [key, object] : snapshot->objects) {
      nlohmann::json o = *object;
      // A typed list's items carry no apiVersion and kind; the informer's kind does.
      if (!o.contains("apiVersion")) o["apiVersion"] = kind.api_version;
      if (!o.contains("kind")) o["kind"] = kind.kind;
      out.push_back(std::move(o));
    }
  }
  return out;
}

struct PolicyWatch::Impl {
  OnChange on_change;
  std::chrono::milliseconds debounce{100};
  std::unique_ptr<k8s::InformerSet> informers;
  std::mutex m;
  std::condition_variable cv;
  bool dirty = false;
  bool stopping = false;
  std::thread deliverer;

  void notify() {
    {
      std::lock_guard lock(m);
      dirty = true;
    }
    cv.notify_all();
  }

  void deliver_loop() {
    std::unique_lock lock(m);
    while (!stopping) {
      cv.wait(lock, [&] { return stopping || dirty; });
      if (stopping) break;
      // Coalesce a burst (a kubectl apply of a directory) into one rebuild.
      cv.wait_for(lock, debounce, [&] { return stopping; });
      if (stopping) break;
      dirty = false;
      lock.unlock();
      on_change(read_cluster_policies(snapshot_objects(*informers)));
      lock.lock();
    }
  }
};

PolicyWatch::PolicyWatch(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

PolicyWatch::~PolicyWatch() { stop(); }

Expected<std::unique_ptr<PolicyWatch>> PolicyWatch::create(const k8s::ClientConfig& config, OnChange on_change,
                                                           std::chrono::milliseconds debounce) {
  auto impl = std::make_unique<Impl>();
  impl->on_change = std::move(on_change);
  impl->debounce = debounce;
  auto transport = k8s::Transport::create(config);
  if (!transport) return Unexpected{transport.error()};
  auto mapper = k8s::discover(**transport);
  if (!mapper) return Unexpected{"discovery: " + mapper.error().describe()};
  Impl* raw = impl.get();
  auto informers = k8s::InformerSet::create(config, *mapper, policy_kinds(),
                                            k8s::InformerOptions{.on_state_change = [raw] { raw->notify(); }});
  if (!informers) {
    return Unexpected{informers.error() + " (install the CRDs first: kubectl apply --server-side -k deploy/crds)"};
  }
  impl->informers = std::move(*informers);
  for (const auto& [kind, informer] : impl->informers->informers()) {
    informer->add_handler([raw](k8s::EventType, const k8s::ObjectPtr&, const k8s::ObjectPtr&) { raw->notify(); });
  }
  return std::unique_ptr<PolicyWatch>(new PolicyWatch(std::move(impl)));
}

Expected<bool> PolicyWatch::start(std::chrono::milliseconds timeout) {
  Impl& im = *impl_;
  im.informers->start();
  if (auto synced = im.informers->wait_for_sync(timeout); !synced) {
    return Unexpected{"the cluster's gpubank resources: " + synced.error().describe()};
  }
  {
    std::lock_guard lock(im.m);
    im.dirty = false;  // the first set below covers every change so far
  }
  im.on_change(read_cluster_policies(snapshot_objects(*im.informers)));
  im.deliverer = std::thread([&im] { im.deliver_loop(); });
  return true;
}

void PolicyWatch::stop() {
  Impl& im = *impl_;
  {
    std::lock_guard lock(im.m);
    im.stopping = true;
  }
  im.cv.notify_all();
  if (im.deliverer.joinable()) im.deliverer.join();
  if (im.informers) im.informers->stop();
}

std::vector<std::string> PolicyWatch::errors() const {
  std::vector<std::string> out;
  for (const auto& [kind, error] : impl_->informers->errors()) out.push_back(kind.kind + ": " + error.describe());
  return out;
}

}  // namespace gpubank::controller
