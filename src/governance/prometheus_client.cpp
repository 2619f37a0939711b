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
      : url_(std::move(url)), prefix_(std::move(prefix)), client_(base) {
    const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(timeout);
    const auto micros = std::chrono::duration_cast<std::chrono::microseconds>(timeout - seconds);
    client_.set_connection_timeout(seconds.count(), static_cast<time_t>(micros.count()));
    client_.set_read_timeout(seconds.count(), static_cast<time_t>(micros.count()));
    client_.set_keep_alive(true);
    client_.set_tcp_nodelay(true);  // else Nagle and delayed ACKs add ~40 ms to every query (bench/scan_bench)
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
    req.content_receiver = [&](const char* data, std::size_t n, std::uint64_t, std::uint64_t) {
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
  httplib::Client client_;
};

}  // namespace

Expected<std::unique_ptr<PrometheusClient>> PrometheusClient::create(const std::string& url,
                                                                     std::chrono::milliseconds timeout) {
  const std::string_view scheme = "http://";
  if (!url.starts_with(scheme)) return Unexpected{"--prometheus: " + url + ": must be an http:// URL"};
  const auto slash = url.find('/', scheme.size());
  if (slash == scheme.size() || url.size() == scheme.size()) return Unexpected{"--prometheus: " + url + ": names no host"};
  std::string base = slash == std::string::npos ? url : url.substr(0, slash);
  std::string prefix = slash == std::string::npos ? std::string() : url.substr(slash);
  while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
  return std::unique_ptr<PrometheusClient>(new HttpPrometheus(url, base, std::move(prefix), timeout));
}

}  // namespace gpubank::governance
