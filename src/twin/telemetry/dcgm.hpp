// The twin's GPUs as dcgm-exporter exposes them, so that each twin node's gpubank exporter
// attributes them with the code it runs on a cluster (twin/live/node_agents.hpp), and the
// dashboards, the rendered PrometheusRules and the scanner read the twin exactly as they
// read a real cluster.
//
// dcgm-exporter's families keep its names, types, HELP texts (etc/default-counters.csv) and
// label order (internal/pkg/rendermetrics, NVIDIA/dcgm-exporter 4.5.3-4.8.2): gpu, UUID,
// pci_bus_id, device, modelName, GPU_I_PROFILE, GPU_I_ID, Hostname, DCGM_FI_DRIVER_VERSION,
// then the Kubernetes attributes in the order Go's template prints a map (sorted):
// container, [err_code, err_msg,] namespace, pod. The registry gives every series of a
// family the same label names, so labels dcgm-exporter leaves out (the MIG pair on whole
// GPUs, the pod triple on unallocated GPUs) are written with empty values, which Prometheus
// stores as absent labels. docs/twin-telemetry.md says more.
//
//   metrics::Registry registry;
//   auto dcgm = register_dcgm(registry);           // once
//   update_dcgm(*dcgm, gpus);                      // every scrape: the devices now
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/expected.hpp"
#include "metrics/registry.hpp"
#include "twin/telemetry/profile.hpp"

namespace gpubank::twin::telemetry {

inline constexpr std::string_view kRuleDuplicateDevice = "telemetry.duplicate-device";
inline constexpr std::string_view kRuleEnergy = "telemetry.energy";
inline constexpr std::string_view kRuleEccCount = "telemetry.ecc-count";

// A MIG GPU instance as dcgm-exporter labels it.
struct MigInstance {
  std::string profile;  // GPU_I_PROFILE, e.g. "1g.10gb"
  int instance_id = 0;  // GPU_I_ID
};

// A container holding the device, as dcgm-exporter's own pod mapping labels it (the
// kubelet's PodResources triple). gpubank's exporter replaces these labels with its join's
// (attribution/enrich.hpp).
struct Allocation {
  std::string pod_namespace;
  std::string pod;
  std::string container;
};

// One device as the engine sees it at a scrape: a whole GPU, or one MIG GPU instance (then
// `uuid` is the parent GPU's, and the sample's device-level fields are the parent's: see
// with_device_fields_of).
struct GpuState {
  int gpu_index = 0;               // gpu="0"
  std::string uuid;                // "GPU-…"
  std::string pci_bus_id;          // "00000000:18:00.0"
  std::string device;              // "nvidia0"; empty: "nvidia<gpu_index>"
  std::string model_name;          // NVML's name, "NVIDIA H100 80GB HBM3"
  std::string hostname;            // the node
  std::string driver_version;      // DCGM_FI_DRIVER_VERSION label, "580.159.04"
  std::optional<MigInstance> mig;  // set for a MIG GPU instance
  std::vector<Allocation> allocations;  // containers holding it (several when time-sliced)
  GpuSample sample;
  int xid = 0;                     // the last XID error, 0 = none
  std::int64_t ecc_dbe_volatile = 0;  // double-bit ECC errors since the driver loaded
  bool row_remap_failure = false;
};

struct DcgmOptions {
  // "Hostname" as released dcgm-exporter writes it (up to 4.5.3-4.8.2); dcgm-exporter's
  // main branch writes "hostname" since #655 (May 2026).
  std::string hostname_label = "Hostname";
};

// The families, owned by the registry.
struct DcgmFamilies {
  metrics::GaugeFamily* sm_clock = nullptr;            // DCGM_FI_DEV_SM_CLOCK
  metrics::GaugeFamily* gpu_temp = nullptr;            // DCGM_FI_DEV_GPU_TEMP
  metrics::GaugeFamily* power_usage = nullptr;         // DCGM_FI_DEV_POWER_USAGE
  metrics::CounterFamily* total_energy = nullptr;      // DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION
  metrics::GaugeFamily* gpu_util = nullptr;            // DCGM_FI_DEV_GPU_UTIL (whole GPUs only)
  metrics::GaugeFamily* mem_copy_util = nullptr;       // DCGM_FI_DEV_MEM_COPY_UTIL (whole GPUs only)
  metrics::GaugeFamily* xid_errors = nullptr;          // DCGM_FI_DEV_XID_ERRORS (+ err_code, err_msg)
  metrics::GaugeFamily* fb_free = nullptr;             // DCGM_FI_DEV_FB_FREE
  metrics::GaugeFamily* fb_used = nullptr;             // DCGM_FI_DEV_FB_USED
  metrics::GaugeFamily* gr_engine_active = nullptr;    // DCGM_FI_PROF_GR_ENGINE_ACTIVE
  metrics::GaugeFamily* tensor_active = nullptr;       // DCGM_FI_PROF_PIPE_TENSOR_ACTIVE
  metrics::GaugeFamily* dram_active = nullptr;         // DCGM_FI_PROF_DRAM_ACTIVE
  // Not in default-counters.csv; docs/metrics-contract.md asks operators to add them, and
  // the rendered rules read them.
  metrics::GaugeFamily* enforced_power_limit = nullptr;  // DCGM_FI_DEV_ENFORCED_POWER_LIMIT
  metrics::CounterFamily* ecc_dbe_vol_total = nullptr;   // DCGM_FI_DEV_ECC_DBE_VOL_TOTAL
  metrics::GaugeFamily* row_remap_failure = nullptr;     // DCGM_FI_DEV_ROW_REMAP_FAILURE
};

// The label names of dcgm-exporter's per-device series (without XID's err_code/err_msg).
[[nodiscard]] std::vector<std::string> dcgm_label_names(const DcgmOptions& options = {});

// dcgm-exporter's text for an XID code (its xid_errors.go table), "Unknown Error" outside it.
[[nodiscard]] std::string_view xid_message(int code);

// Registers the fifteen families (the registry must not hold them yet).
[[nodiscard]] Expected<DcgmFamilies> register_dcgm(metrics::Registry& registry, const DcgmOptions& options = {});

// Replaces every family's series with the devices in `gpus`: a device that is not in the
// list any more loses its series, as with dcgm-exporter, which only reports the devices it
// sees. One series per device and allocation (none: one with empty pod labels). MIG
// instances have no *_UTIL series. Energy is written in whole mJ (DCGM's integer). All or
// nothing: a repeated device (uuid + GPU_I_ID), a NaN, infinite or negative energy or a
// negative ECC count changes nothing.
metrics::Status update_dcgm(const DcgmFamilies& families, std::span<const GpuState> gpus);

}  // namespace gpubank::twin::telemetry
