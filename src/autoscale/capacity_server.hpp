// What `gpubank serving autoscale --listen` serves: the last sync's capacity for gateways
// (serving/gateway_capacity.hpp) as JSON and as Prometheus series, over plain HTTP.
//
//   GET /api/v1/services/<policy>/capacity   the capacity JSON; 503 before the first sync
//                                            with a capacity (and with why), 404 for another
//                                            policy
//   GET /metrics                             gpubank_service_* (export_capacity) and
//                                            gpubank_serving_autoscale_* (the count decided,
//                                            whether the last sync held or failed, when)
//   GET /healthz                             200 while the server runs
//
// Read-only and unauthenticated (what a gateway in the cluster reads: replica counts and a
// queue): bind it to the pod's address and restrict callers with a NetworkPolicy. Bodies
// are refused over 4 KiB, a request must arrive within 10 s, methods other than GET and
// HEAD get 405; 32 workers, so clients that connect and stall do not starve the others.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "autoscale/workload_scale.hpp"
#include "core/expected.hpp"

namespace gpubank::autoscale {

class CapacityServer {
 public:
  // Binds address:port (0: any free port) and serves on a thread of its own.
  [[nodiscard]] static Expected<std::unique_ptr<CapacityServer>> start(const std::string& address, int port,
                                                                       std::string policy);
  ~CapacityServer();  // stops and joins
  CapacityServer(const CapacityServer&) = delete;
  CapacityServer& operator=(const CapacityServer&) = delete;

  [[nodiscard]] int port() const;
  // The latest sync (thread-safe).
  void publish(const ScaleSync& sync, std::int64_t now_ms);

 private:
  struct Impl;
  explicit CapacityServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpubank::autoscale
