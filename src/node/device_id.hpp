// What a kubelet device ID names. Seen in the wild (../shared/spec/node-apis.md):
//   GPU-<uuid>              a whole GPU
//   MIG-<uuid>              a MIG device (its own UUID; NVML maps it to parent + GI/CI)
//   MIG-<uuid>::<n>         the same, as some plugin versions report it
//   <uuid>::<n>, GPU-<uuid>::<n>   replica n of a time-sliced (shared) GPU
//   nvidia<i>/gi<g>/vgpu<v> GKE's names: GPU index i, GPU instance g, shared replica v
// Only these exact shapes parse (UUIDs in NVML's 8-4-4-4-12 hex form, returned lower-case as
// NVML writes them; numbers in decimal without sign or leading zeros); anything else is
// Unknown, never a guess. Pure.
#pragma once

#include <string>
#include <string_view>

namespace gpubank::node {

struct DeviceRef {
  enum class Kind { Gpu, Mig, Replica, Indexed, Unknown };
  Kind kind = Kind::Unknown;
  std::string uuid;          // Gpu, Replica: "GPU-<uuid>" (prefix added when missing); Mig: "MIG-<uuid>"
  int replica = -1;          // Replica: n; Mig with "::N": N; Indexed: v (vgpu<v>)
  int gpu_index = -1;        // Indexed
  int gpu_instance = -1;     // Indexed
  friend bool operator==(const DeviceRef&, const DeviceRef&) = default;
};

[[nodiscard]] DeviceRef parse_device_id(std::string_view id);

}  // namespace gpubank::node
