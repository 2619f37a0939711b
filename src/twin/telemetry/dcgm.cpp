#include "twin/telemetry/dcgm.hpp"

#include <array>
#include <cmath>
#include <set>
#include <utility>

#include "metrics/names.hpp"

namespace gpubank::twin::telemetry {

namespace {

// dcgm-exporter's internal/pkg/collector/xid_errors.go at d5e5f51 (after NVIDIA's XID
// catalogue), index = XID code.
constexpr std::array<std::string_view, 173> kXidMessages{
    "No Error",  // 0
    "Invalid or corrupted push buffer stream",  // 1
    "Invalid or corrupted push buffer stream",  // 2
    "Invalid or corrupted push buffer stream",  // 3
    "Invalid or corrupted push buffer stream",  // 4
    "Unused",  // 5
    "Invalid or corrupted push buffer stream",  // 6
    "Invalid or corrupted push buffer address",  // 7
    "GPU stopped processing",  // 8
    "Driver error programming GPU",  // 9
    "Unused",  // 10
    "Invalid or corrupted push buffer stream",  // 11
    "Driver error handling GPU exception",  // 12
    "Graphics Engine Exception",  // 13
    "Unused",  // 14
    "Unused",  // 15
    "Display engine hung",  // 16
    "Unused",  // 17
    "Bus mastering disabled in PCI Config Space",  // 18
    "Display Engine error",  // 19
    "Invalid or corrupted Mpeg push buffer",  // 20
    "Invalid or corrupted Motion Estimation push buffer",  // 21
    "Invalid or corrupted Video Processor push buffer",  // 22
    "Unused",  // 23
    "GPU semaphore timeout",  // 24
    "Invalid or illegal push buffer stream",  // 25
    "Framebuffer timeout",  // 26
    "Video processor exception",  // 27
    "Video processor exception",  // 28
    "Video processor exception",  // 29
    "GPU semaphore access error",  // 30
    "GPU memory page fault",  // 31
    "Invalid or corrupted push buffer stream",  // 32
    "Internal micro-controller error",  // 33
    "Video processor exception",  // 34
    "Video processor exception",  // 35
    "Video processor exception",  // 36
    "Driver firmware error",  // 37
    "Driver firmware error",  // 38
    "Unused",  // 39
    "Unused",  // 40
    "Unused",  // 41
    "Video processor exception",  // 42
    "GPU stopped processing",  // 43
    "Graphics Engine fault during context switch",  // 44
    "Preemptive cleanup, due to previous errors -- Most likely to see when running multiple cuda",  // 45
    "GPU stopped processing",  // 46
    "Video processor exception",  // 47
    "Double Bit ECC Error",  // 48
    "Unused",  // 49
    "Unused",  // 50
    "Unused",  // 51
    "Unused",  // 52
    "Unused",  // 53
    "Auxiliary power is not connected to the GPU board",  // 54
    "Unused",  // 55
    "Display Engine error",  // 56
    "Error programming video memory interface",  // 57
    "Unstable video memory interface detected",  // 58
    "Internal micro-controller error",  // 59
    "Video processor exception",  // 60
    "Internal micro-controller breakpoint/warning",  // 61
    "Internal micro-controller halt",  // 62
    "ECC page retirement or row remapping recording event",  // 63
    "ECC page retirement or row remapper recording failure",  // 64
    "Video processor exception",  // 65
    "Illegal access by driver",  // 66
    "Illegal access by driver",  // 67
    "NVDEC0 Exception",  // 68
    "Graphics Engine class error",  // 69
    "CE3: Unknown Error",  // 70
    "CE4: Unknown Error",  // 71
    "CE5: Unknown Error",  // 72
    "NVENC2 Error",  // 73
    "NVLINK Error",  // 74
    "CE6: Unknown Error",  // 75
    "CE7: Unknown Error",  // 76
    "CE8: Unknown Error",  // 77
    "vGPU Start Error",  // 78
    "GPU has fallen off the bus",  // 79
    "Corrupted data sent to GPU",  // 80
    "VGA Subsystem Error",  // 81
    "NVJPG0 Error",  // 82
    "NVDEC1 Error",  // 83
    "NVDEC2 Error",  // 84
    "CE9: Unknown Error",  // 85
    "OFA Exception",  // 86
    "Reserved",  // 87
    "NVDEC3 Error",  // 88
    "NVDEC4 Error",  // 89
    "Reserved",  // 90
    "Reserved",  // 91
    "High single-bit ECC error rate",  // 92
    "Non-fatal violation of provisioned InfoROM wear limit",  // 93
    "Contained ECC error",  // 94
    "Uncontained ECC error",  // 95
    "NVDEC5 Error",  // 96
    "NVDEC6 Error",  // 97
    "NVDEC7 Error",  // 98
    "NVJPG1 Error",  // 99
    "NVJPG2 Error",  // 100
    "NVJPG3 Error",  // 101
    "NVJPG4 Error",  // 102
    "NVJPG5 Error",  // 103
    "NVJPG6 Error",  // 104
    "NVJPG7 Error",  // 105
    "SMBPBI Test Message",  // 106
    "SMBPBI Test Message Silent",  // 107
    "Reserved",  // 108
    "Context Switch Timeout Error",  // 109
    "Security Fault Error",  // 110
    "Display Bundle Error Event",  // 111
    "Display Supervisor Error",  // 112
    "DP Link Training Error",  // 113
    "Display Pipeline Underflow Error",  // 114
    "Display Core Channel Error",  // 115
    "Display Window Channel Error",  // 116
    "Display Cursor Channel Error",  // 117
    "Display Pixel Pipeline Error",  // 118
    "GSP RPC Timeout",  // 119
    "GSP Error",  // 120
    "C2C Link Error",  // 121
    "SPI PMU RPC Read Failure",  // 122
    "SPI PMU RPC Write Failure",  // 123
    "SPI PMU RPC Erase Failure",  // 124
    "Inforom FS Failure",  // 125
    "Robust Channel CE10 Error",  // 126
    "Robust Channel CE11 Error",  // 127
    "Robust Channel CE12 Error",  // 128
    "Robust Channel CE13 Error",  // 129
    "Robust Channel CE14 Error",  // 130
    "Robust Channel CE15 Error",  // 131
    "Robust Channel CE16 Error",  // 132
    "Robust Channel CE17 Error",  // 133
    "Robust Channel CE18 Error",  // 134
    "Robust Channel CE19 Error",  // 135
    "ALI Training Fail",  // 136
    "NVLink Privilege Error",  // 137
    "Robust Channel DLA Error",  // 138
    "Robust Channel OFA1 Error",  // 139
    "Unrecovered ECC Error",  // 140
    "Robust Channel Fast Path Error",  // 141
    "Robust Channel NVENVC3 Error",  // 142
    "GPU Initialization Failure",  // 143
    "NVLINK: Saw Error",  // 144
    "NVLINK: RLW Error",  // 145
    "NVLINK: TLW Error",  // 146
    "NVLINK: TREX Error",  // 147
    "NVLINK: NVLPW_CTRL Error",  // 148
    "NVLINK: NETIR Error",  // 149
    "NVLINK: MSE Error",  // 150
    "Robust Channel Key rotation Error",  // 151
    "Robust Channel DLA SMMU Error",  // 152
    "Robust Channel DLA timeout Error",  // 153
    "GPU Recovery Action Changed",  // 154
    "NVLINK: SW Defined Error",  // 155
    "Resource Retirement Event",  // 156
    "Resource Retirement Failure",  // 157
    "GPU Fatal Timeout",  // 158
    "Robust Channel CHI Non-Data Error",  // 159
    "Channel Retirement Event",  // 160
    "Channel Retirement Failure",  // 161
    "Power Smoothing HW Circuitry Reengaged",  // 162
    "Power Smoothing HW Circuitry Disengaged",  // 163
    "Power Smoothing HW Circuitry Low Lifetime",  // 164
    "Power Smoothing HW Circuitry Lifetime Exhausted",  // 165
    "NVLINK Secure Crypto Error",  // 166
    "PCIE Fatal Timeout",  // 167
    "Reduced GPU Memory Capacity (Errors found in write protection region)",  // 168
    "Internal micro-controller halt",  // 169
    "NVLINK: Interrupt seen in CC mode",  // 170
    "Uncorrectable DRAM Error",  // 171
    "Uncorrectable SRAM Error",  // 172
};

}  // namespace

std::string_view xid_message(int code) {
  if (code < 0 || static_cast<std::size_t>(code) >= kXidMessages.size()) return "Unknown Error";
  return kXidMessages[static_cast<std::size_t>(code)];
}

namespace {

using Snapshot = std::vector<std::pair<metrics::LabelValues, double>>;

Unexpected fail(std::string message, std::string_view rule) { return Unexpected{metrics::with_rule(std::move(message), rule)}; }

// The default-counters.csv entries the twin serves: name, type, HELP, in the file's order.
struct Field {
  const char* name;
  bool counter;
  const char* help;
};
constexpr std::array<Field, 15> kFields{{
    {"DCGM_FI_DEV_SM_CLOCK", false, "SM clock frequency (in MHz)."},
    {"DCGM_FI_DEV_GPU_TEMP", false, "GPU temperature (in C)."},
    {"DCGM_FI_DEV_POWER_USAGE", false, "Power draw (in W)."},
    {"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", true, "Total energy consumption since boot (in mJ)."},
    {"DCGM_FI_DEV_GPU_UTIL", false, "GPU utilization (in %)."},
    {"DCGM_FI_DEV_MEM_COPY_UTIL", false, "Memory utilization (in %)."},
    {"DCGM_FI_DEV_XID_ERRORS", false, "Value of the last XID error encountered."},
    {"DCGM_FI_DEV_FB_FREE", false, "Framebuffer memory free (in MiB)."},
    {"DCGM_FI_DEV_FB_USED", false, "Framebuffer memory used (in MiB)."},
    {"DCGM_FI_PROF_GR_ENGINE_ACTIVE", false, "Ratio of time the graphics engine is active."},
    {"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", false, "Ratio of cycles the tensor (HMMA) pipe is active."},
    {"DCGM_FI_PROF_DRAM_ACTIVE", false,
     "Ratio of cycles the device memory interface is active sending or receiving data."},
    // Added to the CSV as docs/metrics-contract.md asks: the ECC and row-remap lines as the
    // CSV has them (the first commented out), the power limit with DCGM's description of
    // field 164.
    {"DCGM_FI_DEV_ENFORCED_POWER_LIMIT", false,
     "Effective power limit that the driver enforces after taking into account all limiters (in W)."},
    {"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", true, "Total number of double-bit volatile ECC errors."},
    {"DCGM_FI_DEV_ROW_REMAP_FAILURE", false, "Whether remapping of rows has failed"},
}};

// Positions in dcgm_label_names(): the Kubernetes attributes come last, sorted.
constexpr std::size_t kContainer = 9;  // container, namespace, pod follow

std::string device_name(const GpuState& g) { return g.device.empty() ? "nvidia" + std::to_string(g.gpu_index) : g.device; }

std::string instance_id(const GpuState& g) { return g.mig ? std::to_string(g.mig->instance_id) : std::string(); }

// One device's repeated device (uuid + GPU instance), or nothing.
std::optional<std::string> repeated_device(std::span<const GpuState> gpus, std::string_view who) {
  std::set<std::pair<std::string_view, int>> seen;
  for (const GpuState& g : gpus) {
    if (!seen.emplace(g.uuid, g.mig ? g.mig->instance_id : -1).second) {
      return metrics::with_rule(std::string(who) + ": device " + g.uuid +
                                    (g.mig ? " GPU instance " + std::to_string(g.mig->instance_id) : std::string()) +
                                    " is listed twice",
                                kRuleDuplicateDevice);
    }
  }
  return std::nullopt;
}

}  // namespace

std::vector<std::string> dcgm_label_names(const DcgmOptions& options) {
  return {"gpu",           "UUID",     "pci_bus_id",         "device", "modelName",
          "GPU_I_PROFILE", "GPU_I_ID", options.hostname_label, "DCGM_FI_DRIVER_VERSION",
          "container",     "namespace", "pod"};
}

Expected<DcgmFamilies> register_dcgm(metrics::Registry& registry, const DcgmOptions& options) {
  const std::vector<std::string> labels = dcgm_label_names(options);
  std::vector<std::string> xid_labels = labels;
  // Go's template prints the attributes map sorted: err_code and err_msg fall between
  // container and namespace.
  xid_labels.insert(xid_labels.begin() + kContainer + 1, {"err_code", "err_msg"});
  std::array<metrics::ScalarFamily*, kFields.size()> made{};
  for (std::size_t i = 0; i < kFields.size(); ++i) {
    const Field& f = kFields[i];
    const auto& names = std::string_view(f.name) == "DCGM_FI_DEV_XID_ERRORS" ? xid_labels : labels;
    if (f.counter) {
      auto c = registry.counter(f.name, f.help, names);
      if (!c) return Unexpected{c.error()};
      made[i] = *c;
    } else {
      auto g = registry.gauge(f.name, f.help, names);
      if (!g) return Unexpected{g.error()};
      made[i] = *g;
    }
  }
  auto gauge = [&](std::size_t i) { return static_cast<metrics::GaugeFamily*>(made[i]); };
  DcgmFamilies f;
  f.sm_clock = gauge(0);
  f.gpu_temp = gauge(1);
  f.power_usage = gauge(2);
  f.total_energy = static_cast<metrics::CounterFamily*>(made[3]);
  f.gpu_util = gauge(4);
  f.mem_copy_util = gauge(5);
  f.xid_errors = gauge(6);
  f.fb_free = gauge(7);
  f.fb_used = gauge(8);
  f.gr_engine_active = gauge(9);
  f.tensor_active = gauge(10);
  f.dram_active = gauge(11);
  f.enforced_power_limit = gauge(12);
  f.ecc_dbe_vol_total = static_cast<metrics::CounterFamily*>(made[13]);
  f.row_remap_failure = gauge(14);
  return f;
}

metrics::Status update_dcgm(const DcgmFamilies& f, std::span<const GpuState> gpus) {
  if (auto bad = repeated_device(gpus, "update_dcgm")) return Unexpected{*bad};
  for (const GpuState& g : gpus) {
    const double e = g.sample.energy_mj;
    if (!std::isfinite(e) || e < 0) {
      return fail("update_dcgm: device " + g.uuid + ": energy " + std::to_string(e) +
                      " mJ is not a finite number >= 0",
                  kRuleEnergy);
    }
    if (g.ecc_dbe_volatile < 0) {
      return fail("update_dcgm: device " + g.uuid + ": ECC error count " + std::to_string(g.ecc_dbe_volatile) +
                      " is negative",
                  kRuleEccCount);
    }
  }
  std::size_t series = 0;
  for (const GpuState& g : gpus) series += std::max<std::size_t>(1, g.allocations.size());
  Snapshot clock, temp, power, util, copy, xid, fb_free, fb_used, gr, tensor, dram, limit, remap;
  Snapshot energy, ecc;  // counters
  for (Snapshot* s : {&clock, &temp, &power, &util, &copy, &xid, &fb_free, &fb_used, &gr, &tensor, &dram, &limit, &remap,
                      &energy, &ecc}) {
    s->reserve(series);
  }

  static const Allocation kNone{};
  for (const GpuState& g : gpus) {
    const GpuSample& s = g.sample;
    metrics::LabelValues base{std::to_string(g.gpu_index),
                              g.uuid,
                              g.pci_bus_id,
                              device_name(g),
                              g.model_name,
                              g.mig ? g.mig->profile : std::string(),
                              instance_id(g),
                              g.hostname,
                              g.driver_version,
                              {},
                              {},
                              {}};
    const std::span<const Allocation> holders =
        g.allocations.empty() ? std::span<const Allocation>(&kNone, 1) : std::span<const Allocation>(g.allocations);
    for (const Allocation& a : holders) {
      metrics::LabelValues labels = base;
      labels[kContainer] = a.container;
      labels[kContainer + 1] = a.pod_namespace;
      labels[kContainer + 2] = a.pod;
      metrics::LabelValues xid_labels = labels;
      xid_labels.insert(xid_labels.begin() + kContainer + 1,
                        {std::to_string(g.xid), std::string(xid_message(g.xid))});
      xid.emplace_back(std::move(xid_labels), g.xid);
      clock.emplace_back(labels, s.sm_clock_mhz);
      temp.emplace_back(labels, s.temperature_c);
      power.emplace_back(labels, s.power_w);
      energy.emplace_back(labels, std::floor(s.energy_mj));
      ecc.emplace_back(labels, static_cast<double>(g.ecc_dbe_volatile));
      limit.emplace_back(labels, s.power_limit_w);
      remap.emplace_back(labels, g.row_remap_failure ? 1.0 : 0.0);
      // NVML has no utilisation for a MIG instance: dcgm-exporter skips the blank value.
      if (!g.mig) {
        util.emplace_back(labels, s.gpu_util_pct);
        copy.emplace_back(labels, s.mem_copy_util_pct);
      }
      fb_free.emplace_back(labels, static_cast<double>(s.fb_free_mib));
      gr.emplace_back(labels, s.gr_engine_active);
      tensor.emplace_back(labels, s.tensor_active);
      dram.emplace_back(labels, s.dram_active);
      fb_used.emplace_back(std::move(labels), static_cast<double>(s.fb_used_mib));
    }
  }
  // fb_used first: every family has the same label tuples (the XID pair is one per device,
  // the *_UTIL ones a subset), so if it takes them, all do.
  const std::pair<metrics::GaugeFamily*, const Snapshot*> gauges[] = {
      {f.fb_used, &fb_used}, {f.sm_clock, &clock}, {f.gpu_temp, &temp}, {f.power_usage, &power},
      {f.gpu_util, &util},   {f.mem_copy_util, &copy}, {f.xid_errors, &xid}, {f.fb_free, &fb_free},
      {f.gr_engine_active, &gr}, {f.tensor_active, &tensor}, {f.dram_active, &dram},
      {f.enforced_power_limit, &limit}, {f.row_remap_failure, &remap}};
  for (const auto& entry : gauges) {
    if (auto done = entry.first->set_all(*entry.second); !done) return done;
  }
  // A counter family has no snapshot: start afresh (series of devices gone disappear) and
  // set each total; the engine keeps the values monotonic (EnergyBase for energy).
  for (const auto& [family, totals] : {std::pair{f.total_energy, &energy}, std::pair{f.ecc_dbe_vol_total, &ecc}}) {
    family->clear();
    for (const auto& entry : *totals) {
      if (auto done = family->set_total(entry.first, entry.second); !done) return done;
    }
  }
  return std::monostate{};
}

}  // namespace gpubank::twin::telemetry
