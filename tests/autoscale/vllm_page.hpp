// A vLLM replica's /metrics page as the twin writes it (twin/inference/vllm_metrics.hpp:
// vLLM's names, labels and buckets), served on loopback by a real HTTP server; each GET
// first counts `per_scrape` more finished requests with the given TTFT, so rates move.
#pragma once

#include <httplib.h>

#include <chrono>
#include <mutex>
#include <string>
#include <thread>

#include "metrics/exposition.hpp"
#include "twin/inference/vllm_metrics.hpp"

namespace gpubank::autoscale::testing {

class VllmPageServer {
 public:
  VllmPageServer(std::int64_t waiting, std::int64_t running, double kv, std::int64_t per_scrape, std::int64_t ttft_us,
                 std::string token = "")
      : waiting_(waiting), running_(running), kv_(kv), per_scrape_(per_scrape), ttft_us_(ttft_us), token_(std::move(token)) {
    server_.Get("/metrics", [this](const httplib::Request& req, httplib::Response& res) {
      if (!token_.empty() && req.get_header_value("Authorization") != "Bearer " + token_) {
        res.status = 401;
        return;
      }
      res.set_content(page(), "text/plain; version=0.0.4");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    // stop() before the loop runs would be lost, and the join would wait for ever.
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~VllmPageServer() { stop(); }
  void stop() {
    server_.stop();
    if (thread_.joinable()) thread_.join();
  }
  [[nodiscard]] int port() const { return port_; }
  [[nodiscard]] std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  [[nodiscard]] std::string url() const { return "http://" + address() + "/metrics"; }

  std::string page() {
    std::lock_guard lock(m_);
    counters_.time_to_first_token.observe(ttft_us_, per_scrape_);
    counters_.request_success[0] += per_scrape_;
    twin::inference::VllmReplicaSeries replica{"", running_, waiting_, kv_, &counters_};
    twin::inference::VllmExpositionOptions options;
    options.replica_label = "";  // a real vLLM pod: one replica per page
    options.autoscaling_signals_only = true;
    auto text = metrics::write_text(twin::inference::vllm_exposition("chat", {&replica, 1}, options));
    return text ? *text : std::string();
  }

 private:
  std::int64_t waiting_, running_;
  double kv_;
  std::int64_t per_scrape_, ttft_us_;
  std::string token_;
  std::mutex m_;
  twin::inference::VllmCounters counters_;
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
};

}  // namespace gpubank::autoscale::testing
