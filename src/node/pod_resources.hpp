// The kubelet's PodResources API v1 (gRPC on a unix socket, by default
// /var/lib/kubelet/pod-resources/kubelet.sock; proto/podresources/v1/api.proto, written
// from ../shared/spec/node-apis.md): which devices each container holds.
//
// The exporter calls List in the background (never on a scrape) and keeps the last good
// answer; a node with many pods can answer more than gRPC's default 4 MiB, so the client's
// receive limit is raised (kMaxResponseBytes). Device IDs are kept as the kubelet reports
// them; device_id.hpp says what they name.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/expected.hpp"

namespace gpubank::node {

inline constexpr std::size_t kMaxResponseBytes = std::size_t{64} << 20;
inline constexpr const char* kDefaultPodResourcesSocket = "/var/lib/kubelet/pod-resources/kubelet.sock";

// One device one container holds: from a device plugin (resource_name, device_id) or from a
// DRA ResourceClaim (dynamic_resources: claim, driver, pool, device).
struct DeviceAllocation {
  std::string namespace_name;
  std::string pod;
  std::string container;
  std::string resource_name;  // nvidia.com/gpu, nvidia.com/mig-1g.10gb, ...; empty for DRA
  std::string device_id;      // as reported: GPU-<uuid>, MIG-<uuid>[::N], <uuid>::<n>, ...; DRA: the device name
  // DRA only.
  std::string claim_name;
  std::string claim_namespace;
  std::string driver;  // gpu.nvidia.com
  std::string pool;
  friend bool operator==(const DeviceAllocation&, const DeviceAllocation&) = default;
};

struct PodResourcesOptions {
  std::string socket = kDefaultPodResourcesSocket;
  std::chrono::milliseconds timeout{5000};
};

// "unix:<socket>" (the socket unchanged when it already says "unix:"): the gRPC target, and
// what errors name.
[[nodiscard]] std::string pod_resources_target(std::string_view socket);
// gRPC's name of a status code ("UNAVAILABLE"), as errors spell it.
[[nodiscard]] std::string_view grpc_status_name(int code);

class PodResourcesClient {
 public:
  [[nodiscard]] static Expected<std::unique_ptr<PodResourcesClient>> create(const PodResourcesOptions& options);
  virtual ~PodResourcesClient() = default;
  // Every device of every container (List), in the kubelet's order (per container: device
  // plugin devices, then DRA claim devices); an error names the socket, the method and the
  // gRPC status: "podresources unix:/... List: UNAVAILABLE: <gRPC's message>".
  [[nodiscard]] virtual Expected<std::vector<DeviceAllocation>> list() = 0;
  // The node's allocatable devices (GetAllocatableResources): resource_name and device_id
  // set, the pod fields empty.
  [[nodiscard]] virtual Expected<std::vector<DeviceAllocation>> allocatable() = 0;
};

}  // namespace gpubank::node
