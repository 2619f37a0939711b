// Where the exporter's inputs come from, each read in the background (never on a scrape):
//
//   UpstreamSource   GPU samples: dcgm-exporter's /metrics on localhost (fetched over HTTP,
//                    size-limited, parsed by metrics::parse_text), or NVML read directly
//                    (dcgm-exporter's family names and label order, for what NVML can say)
//   SnapshotSource   the node's metadata snapshot: `gpubank metasync`'s endpoint (with
//                    If-None-Match, so an unchanged snapshot costs a 304) or a file; the
//                    snapshot is verified with the HMAC key, and one that fails keeps the
//                    last good one
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "attribution/snapshot.hpp"
#include "core/expected.hpp"
#include "metrics/exposition.hpp"
#include "node/nvml.hpp"

namespace gpubank::attribution {

// The largest upstream page read: dcgm-exporter's for 8 GPUs x 7 MIG instances x 30 fields
// is a few hundred KiB.
inline constexpr std::size_t kMaxUpstreamBytes = std::size_t{16} << 20;

class UpstreamSource {
 public:
  virtual ~UpstreamSource() = default;
  [[nodiscard]] virtual Expected<metrics::Exposition> read() = 0;
  // The devices as NVML knows them (empty for the dcgm source without NVML).
  [[nodiscard]] virtual std::vector<node::GpuDevice> inventory() const = 0;
};

// http://host:port/path of dcgm-exporter. `nvml`: when given, used for the MIG inventory
// only (which MIG device UUID is which GPU instance).
[[nodiscard]] Expected<std::unique_ptr<UpstreamSource>> dcgm_source(const std::string& url, std::chrono::milliseconds timeout,
                                                                    std::unique_ptr<node::Nvml> nvml = nullptr);
// NVML directly: DCGM_FI_DEV_GPU_UTIL, _MEM_COPY_UTIL, _FB_USED, _FB_FREE (MiB),
// _POWER_USAGE (W), _GPU_TEMP, with labels gpu, UUID, pci_bus_id, device, modelName,
// Hostname, for whole GPUs. MIG instances get none: NVML gives their memory total but no
// use or activity (those need DCGM's profiling), so MIG samples come from dcgm-exporter.
[[nodiscard]] std::unique_ptr<UpstreamSource> nvml_source(std::unique_ptr<node::Nvml> nvml, std::string hostname);
// The NVML source's text for devices and readings (pure; the source and tests use it).
[[nodiscard]] metrics::Exposition nvml_exposition(const std::vector<node::GpuDevice>& devices,
                                                  const std::vector<std::optional<node::GpuReading>>& readings,
                                                  const std::string& hostname);

struct SnapshotRead {
  std::shared_ptr<const NodeSnapshot> snapshot;  // null: none yet
  bool changed = false;                          // a new one was accepted by this read
};

class SnapshotSource {
 public:
  virtual ~SnapshotSource() = default;
  // Reads again; an error (unreachable, 5xx, bad signature, malformed) keeps the last good
  // snapshot and says why.
  [[nodiscard]] virtual Expected<SnapshotRead> read() = 0;
};

// metasync's http://host:port/v1/nodes/<node>/snapshot.
[[nodiscard]] Expected<std::unique_ptr<SnapshotSource>> http_snapshot_source(const std::string& url, std::string key,
                                                                             std::chrono::milliseconds timeout);
[[nodiscard]] std::unique_ptr<SnapshotSource> file_snapshot_source(std::string path, std::string key);

}  // namespace gpubank::attribution
