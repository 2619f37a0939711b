// PromQL instant queries over Prometheus' HTTP API (POST /api/v1/query, form-encoded, so a
// long query never meets a URL length limit). Bodies are read up to serving's
// kPromMaxBodyBytes and parsed by serving::read_prometheus_query; an error answer's
// errorType and error are reported as Prometheus wrote them.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/expected.hpp"
#include "serving/signals.hpp"

namespace gpubank::governance {

class PrometheusClient {
 public:
  // `url`: http://host:port, optionally with a path prefix (a Prometheus behind
  // --web.route-prefix or a proxy: http://host/prometheus).
  static Expected<std::unique_ptr<PrometheusClient>> create(const std::string& url,
                                                            std::chrono::milliseconds timeout);
  virtual ~PrometheusClient() = default;

  // The samples of `promql` evaluated at `time_ms` (Unix ms).
  virtual Expected<std::vector<serving::PromSample>> query(const std::string& promql, std::int64_t time_ms) = 0;
  [[nodiscard]] virtual const std::string& url() const = 0;
};

}  // namespace gpubank::governance
