// NVIDIA's management library, loaded at run time: dlopen("libnvidia-ml.so.1") as NVIDIA's
// own tools do, so gpubank builds and runs on machines without a driver and fails with a
// clear error only when asked for GPUs. Symbols are looked up versioned first and the older
// name second (nvmlInit_v2, then nvmlInit), as ../shared/spec/node-apis.md lists them.
//
// What it reads, per GPU: index, UUID, name, PCI bus id, memory, compute capability,
// architecture, minor number, NUMA node (unknown when NVML says "not supported"), MIG mode
// and, with MIG on, each MIG device (its UUID, GPU and compute instance ids, profile and
// memory); and, per sample, utilisation, memory use, power and temperature.
//
// Thread-safe: NVML is, and the handle table is read-only after open().
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/expected.hpp"

namespace gpubank::node {

inline constexpr const char* kNvmlLibrary = "libnvidia-ml.so.1";

struct MigDevice {
  std::string uuid;             // "MIG-<uuid>"
  unsigned gpu_instance = 0;    // GPU_I_ID in dcgm-exporter's labels
  unsigned compute_instance = 0;
  std::string profile;          // "1g.10gb", from the MIG device's name ("... MIG 1g.10gb")
  std::uint64_t memory_total = 0;  // bytes
  friend bool operator==(const MigDevice&, const MigDevice&) = default;
};

struct GpuDevice {
  unsigned index = 0;
  std::string uuid;        // "GPU-<uuid>"
  std::string name;        // NVML's name, "NVIDIA H200"
  std::string pci_bus_id;  // "00000000:00:06.0"
  unsigned minor = 0;      // /dev/nvidia<minor>
  std::uint64_t memory_total = 0;  // bytes
  int compute_major = 0;
  int compute_minor = 0;
  unsigned architecture = 0;        // 7 Ampere, 8 Ada, 9 Hopper, 10 Blackwell
  std::optional<int> numa_node{};   // unset: NVML does not know (e.g. a virtual machine)
  bool mig_enabled = false;
  std::vector<MigDevice> mig{};
  friend bool operator==(const GpuDevice&, const GpuDevice&) = default;
};

struct GpuReading {
  unsigned gpu_util = 0;       // percent
  unsigned memory_util = 0;    // percent (memory controller busy)
  std::uint64_t memory_used = 0;  // bytes
  std::uint64_t memory_free = 0;  // bytes
  unsigned power_mw = 0;
  unsigned temperature_c = 0;
};

class Nvml {
 public:
  // Loads the library (a path, or a name for the loader's search) and initialises NVML.
  // The error names the library and NVML's message.
  [[nodiscard]] static Expected<std::unique_ptr<Nvml>> open(const std::string& library = kNvmlLibrary);
  ~Nvml();
  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;

  [[nodiscard]] std::string driver_version() const;
  // Every GPU, in index order, with its MIG devices.
  [[nodiscard]] Expected<std::vector<GpuDevice>> devices() const;
  // A reading of GPU `index` now.
  [[nodiscard]] Expected<GpuReading> read(unsigned index) const;

  struct Api;  // the resolved symbols (nvml.cpp)

 private:
  explicit Nvml(std::unique_ptr<Api> api);
  std::unique_ptr<Api> api_;
};

}  // namespace gpubank::node
