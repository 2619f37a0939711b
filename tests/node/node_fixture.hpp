// Shared by the node tests: fixture paths, expected allocations, a client of a fake kubelet.
#pragma once

#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>

#include "node/pod_resources.hpp"
#include "support/fake_kubelet.hpp"
#include "support/paths.hpp"

namespace gpubank::node::test {

inline std::string fixture(const std::string& name) { return testing::source_dir() + "/tests/node/data/" + name; }

inline DeviceAllocation plugin_device(std::string ns, std::string pod, std::string container, std::string resource,
                                      std::string id) {
  DeviceAllocation a;
  a.namespace_name = std::move(ns);
  a.pod = std::move(pod);
  a.container = std::move(container);
  a.resource_name = std::move(resource);
  a.device_id = std::move(id);
  return a;
}

inline DeviceAllocation dra_device(std::string ns, std::string pod, std::string container, std::string device,
                                   std::string claim, std::string pool) {
  DeviceAllocation a;
  a.namespace_name = ns;
  a.pod = std::move(pod);
  a.container = std::move(container);
  a.device_id = std::move(device);
  a.claim_name = std::move(claim);
  a.claim_namespace = std::move(ns);
  a.driver = "gpu.nvidia.com";
  a.pool = std::move(pool);
  return a;
}

inline std::unique_ptr<PodResourcesClient> client_of(const testing::FakeKubelet& kubelet,
                                                     std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  PodResourcesOptions options;
  options.socket = kubelet.socket_path();
  options.timeout = timeout;
  auto client = PodResourcesClient::create(options);
  if (!client) throw std::runtime_error(client.error());
  return std::move(client).value();
}

}  // namespace gpubank::node::test
