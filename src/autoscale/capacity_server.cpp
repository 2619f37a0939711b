#include "autoscale/capacity_server.hpp"

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include "metrics/registry.hpp"
#include "serving/gateway_capacity.hpp"

namespace gpubank::autoscale {
namespace {

void send_json(httplib::Response& res, int status, const nlohmann::ordered_json& body) {
  res.status = status;
  res.set_content(body.dump() + "\n", "application/json");
}

void send_error(httplib::Response& res, int status, const std::string& message) {
  send_json(res, status, nlohmann::ordered_json{{"error", message}});
}

}  // namespace

struct CapacityServer::Impl {
  std::string policy;
  httplib::Server server;
  std::thread thread;
  std::atomic<bool> done{false};
  int port = 0;

  std::mutex m;
  bool synced = false;
  std::optional<serving::Capacity> capacity;
  std::string capacity_error;
  int target = 0;
  bool held = false, failed = false;
  std::int64_t last_ms = 0;

  std::string metrics_text() {
    metrics::Registry registry;
    std::lock_guard lock(m);
    if (capacity) {
      if (auto done_ = serving::export_capacity(registry, {*capacity}); !done_) return "# " + done_.error() + "\n";
    }
    if (synced) {
      auto target_family = registry.gauge("gpubank_serving_autoscale_target_replicas",
                                          "The replica count the last sync decided (written or not).", {"policy"});
      auto held_family = registry.gauge("gpubank_serving_autoscale_held",
                                        "1 when the last sync could not read its signals and kept the count.", {"policy"});
      auto failed_family = registry.gauge(
          "gpubank_serving_autoscale_failed",
          "1 when the last sync could not read or write the workload, or found another autoscaler on it.", {"policy"});
      auto time_family = registry.gauge("gpubank_serving_autoscale_last_sync_timestamp_seconds",
                                        "When the last sync ran (Unix seconds).", {"policy"});
      for (auto* f : {&target_family, &held_family, &failed_family, &time_family}) {
        if (!*f) return "# " + f->error() + "\n";
      }
      (void)(*target_family)->set({policy}, target);
      (void)(*held_family)->set({policy}, held ? 1 : 0);
      (void)(*failed_family)->set({policy}, failed ? 1 : 0);
      (void)(*time_family)->set({policy}, static_cast<double>(last_ms) / 1000.0);
    }
    return metrics::write_text(registry);
  }
};

CapacityServer::CapacityServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

CapacityServer::~CapacityServer() {
  if (!impl_->thread.joinable()) return;
  while (!impl_->done.load() && !impl_->server.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  if (!impl_->done.load()) impl_->server.stop();
  impl_->thread.join();
}

int CapacityServer::port() const { return impl_->port; }

void CapacityServer::publish(const ScaleSync& sync, std::int64_t now_ms) {
  std::lock_guard lock(impl_->m);
  impl_->synced = true;
  impl_->capacity = sync.capacity;
  impl_->capacity_error = sync.capacity_error;
  impl_->target = sync.target;
  impl_->held = sync.step.held;
  impl_->failed = !sync.error.empty();
  impl_->last_ms = now_ms;
}

Expected<std::unique_ptr<CapacityServer>> CapacityServer::start(const std::string& address, int port, std::string policy) {
  auto impl = std::make_unique<Impl>();
  impl->policy = std::move(policy);
  Impl* self = impl.get();
  httplib::Server& svr = impl->server;
  svr.set_payload_max_length(4096);
  svr.set_read_timeout(10, 0);
  svr.set_write_timeout(10, 0);
  svr.set_keep_alive_max_count(100);
  // Each connection holds a worker until its request arrives (at most the read timeout):
  // enough workers that a few stalled clients do not starve the gateway's polls.
  svr.new_task_queue = [] { return new httplib::ThreadPool(32); };
  svr.set_default_headers({{"Cache-Control", "no-store"}, {"X-Content-Type-Options", "nosniff"}});
  svr.set_pre_routing_handler([](const httplib::Request& req, httplib::Response& res) {
    if (req.method != "GET" && req.method != "HEAD") {
      res.set_header("Allow", "GET, HEAD");
      send_error(res, 405, "only GET and HEAD are served");
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  svr.Get("/healthz", [](const httplib::Request&, httplib::Response& res) { res.set_content("ok\n", "text/plain"); });
  svr.Get("/metrics", [self](const httplib::Request&, httplib::Response& res) {
    res.set_content(self->metrics_text(), "text/plain; version=0.0.4; charset=utf-8");
  });
  svr.Get(R"(/api/v1/services/([^/]+)/capacity)", [self](const httplib::Request& req, httplib::Response& res) {
    const std::string name = req.matches[1];
    if (name != self->policy) {
      return send_error(res, 404, "this process serves InferenceScalingPolicy " + self->policy + " only");
    }
    std::lock_guard lock(self->m);
    if (!self->capacity) {
      return send_error(res, 503, self->synced ? "no capacity at the last sync: " + self->capacity_error
                                               : "no sync has run yet");
    }
    send_json(res, 200, serving::to_json(*self->capacity));
  });
  svr.set_error_handler([](const httplib::Request&, httplib::Response& res) {
    if (!res.body.empty()) return;
    send_error(res, res.status,
               res.status == 404   ? "no such path: GET /api/v1/services/<policy>/capacity, /metrics or /healthz"
               : res.status == 413 ? "the body is over 4096 bytes"
                                   : "the request could not be served");
  });
  if (port == 0) {
    impl->port = svr.bind_to_any_port(address);
    if (impl->port < 0) return Unexpected{"--listen: cannot bind " + address + " to any port"};
  } else {
    if (!svr.bind_to_port(address, port)) return Unexpected{"--listen: cannot bind " + address + ":" + std::to_string(port) + " (in use?)"};
    impl->port = port;
  }
  impl->thread = std::thread([self] {
    self->server.listen_after_bind();
    self->done = true;
  });
  return std::unique_ptr<CapacityServer>(new CapacityServer(std::move(impl)));
}

}  // namespace gpubank::autoscale
