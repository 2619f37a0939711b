#include "governance/prometheus_client.hpp"

#include <httplib.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "governance/http_error.hpp"

namespace gpubank::governance {
namespace {

class HttpPrometheus final : public PrometheusClient {
 public:
  HttpPrometheus(std::string url, const std::string& base, std::string prefix, std::chrono::milliseconds timeout)
      : url_(std::move(url)), prefix_(std::move(prefix)), timeout_(timeout), client_(base) {
    configure_client(client_, timeout);
    client_.set_keep_alive(true);
  }

  Expected<std::vector<serving::PromSample>> query(const std::string& promql, std::int64_t time_ms) override {
    char when[32];
    std::snprintf(when, sizeof when, "%lld.%03lld", static_cast<long long>(time_ms / 1000),
                  static_cast<long long>(time_ms % 1000));
    const httplib::Params form{{"query", promql}, {"time", when}};
    std::string body;
    bool too_large = false;
    httplib::Request req;
    req.method = "POST";
    req.path = prefix_ + "/api/v1/query";
    req.set_header("Content-Type", "application/x-www-form-urlencoded");
    req.body = httplib::detail::params_to_query_str(form);
    // The read timeout bounds each wait for bytes; a server that trickles them would
    // hold the caller for ever, so the whole answer has the timeout too.
    bool too_slow = false;
    const auto deadline = std::chrono::steady_clock::now() + timeout_;
    req.content_receiver = [&](const char* data, std::size_t n, std::uint64_t, std::uint64_t) {
      if (std::chrono::steady_clock::now() > deadline) {
        too_slow = true;
        return false;
      }
      if (body.size() + n > serving::kPromMaxBodyBytes) {
        too_large = true;
        return false;
      }
      body.append(data, n);
      return true;
    };
    httplib::Response res;
    httplib::Error error = httplib::Error::Success;
    const bool sent = client_.send(req, res, error);
    if (too_large) {
      return Unexpected{url_ + ": the answer is over " + std::to_string(serving::kPromMaxBodyBytes) + " bytes"};
    }
    if (too_slow) {
      return Unexpected{url_ + ": the answer took longer than " + std::to_string(timeout_.count()) + " ms to arrive"};
    }
    if (!sent) return Unexpected{url_ + ": " + describe(error)};
    if (res.status != 200) {
      const nlohmann::json j = nlohmann::json::parse(body, nullptr, false);
      std::string why = "HTTP " + std::to_string(res.status);
      if (j.is_object() && j.contains("error") && j["error"].is_string()) {
        why += " " + j.value("errorType", std::string()) + ": " + j["error"].get<std::string>();
      }
      return Unexpected{url_ + ": " + why.substr(0, 2000)};
    }
    auto samples = serving::read_prometheus_query(body);
    if (!samples) return Unexpected{url_ + ": " + samples.error()};
    return samples;
  }

  [[nodiscard]] const std::string& url() const override { return url_; }

 private:
  std::string url_;
  std::string prefix_;
  std::chrono::milliseconds timeout_;
  httplib::Client client_;
};

}  // namespace

Expected<std::unique_ptr<PrometheusClient>> PrometheusClient::create(const std::string& url,
                                                                     std::chrono::milliseconds timeout) {
  auto e = split_http_url(url, "--prometheus");
  if (!e) return Unexpected{e.error()};
  return std::unique_ptr<PrometheusClient>(new HttpPrometheus(url, e->base, e->path, timeout));
}

}  // namespace gpubank::governance
