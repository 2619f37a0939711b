// What a kubelet device ID names. Seen in the wild (../shared/spec/node-apis.md):
//   GPU-<uuid>              a whole GPU
//   MIG-<uuid>              a MIG device (its own UUID; NVML maps it to parent + GI/CI)
//   MIG-<uuid>::<n>         the same, as some plugin versions report it
//   <uuid>::<n>, GPU-<uuid>::<n>   replica n of a time-sliced (shared) GPU
//   nvidia<i>/gi<g>/vgpu<v> GKE's names: GPU index i, GPU instance g
// Pure.
#pragma once

#include <string>
#include <string_view>

namespace gpubank::node {

struct DeviceRef {
  enum class Kind { Gpu, Mig, Replica, Indexed, Unknown };
  Kind kind = Kind::Unknown;
  std::string uuid;          // Gpu, Replica: "GPU-<uuid>" (prefix added when missing); Mig: "MIG-<uuid>"
  int replica = -1;          // Replica: n; Mig with "::N": N
  int gpu_index = -1;        // Indexed
  int gpu_instance = -1;     // Indexed
  friend bool operator==(const DeviceRef&, const DeviceRef&) = default;
};

[[nodiscard]] DeviceRef parse_device_id(std::string_view id);

}  // namespace gpubank::node
