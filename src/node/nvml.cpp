#include "node/nvml.hpp"

#include <dlfcn.h>

#include <array>
#include <cstring>

namespace gpubank::node {
namespace {

// NVML's C types, as ../shared/spec/node-apis.md gives them: every function returns an int
// (0 success), devices and event sets are opaque pointers.
using Return = int;
using Device = void*;
constexpr Return kSuccess = 0;
constexpr Return kNotSupported = 3;

struct Memory {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};
struct PciInfo {
  char bus_id_legacy[16];
  unsigned domain;
  unsigned bus;
  unsigned device;
  unsigned pci_device_id;
  unsigned pci_sub_system_id;
  char bus_id[32];
};
struct Utilization {
  unsigned gpu;
  unsigned memory;
};

// "MIG 1g.10gb" at the end of a MIG device's name, else "".
std::string mig_profile(const std::string& name) {
  const auto at = name.rfind("MIG ");
  return at == std::string::npos ? std::string() : name.substr(at + 4);
}

}  // namespace

struct Nvml::Api {
  void* handle = nullptr;
  Return (*init)() = nullptr;
  Return (*shutdown)() = nullptr;
  const char* (*error_string)(Return) = nullptr;
  Return (*driver_version)(char*, unsigned) = nullptr;
  Return (*count)(unsigned*) = nullptr;
  Return (*by_index)(unsigned, Device*) = nullptr;
  Return (*uuid)(Device, char*, unsigned) = nullptr;
  Return (*name)(Device, char*, unsigned) = nullptr;
  Return (*minor)(Device, unsigned*) = nullptr;
  Return (*memory)(Device, Memory*) = nullptr;
  Return (*compute)(Device, int*, int*) = nullptr;
  Return (*architecture)(Device, unsigned*) = nullptr;
  Return (*numa)(Device, unsigned*) = nullptr;
  Return (*mig_mode)(Device, unsigned*, unsigned*) = nullptr;
  Return (*max_mig)(Device, unsigned*) = nullptr;
  Return (*mig_by_index)(Device, unsigned, Device*) = nullptr;
  Return (*gpu_instance)(Device, unsigned*) = nullptr;
  Return (*compute_instance)(Device, unsigned*) = nullptr;
  Return (*pci)(Device, PciInfo*) = nullptr;
  Return (*utilization)(Device, Utilization*) = nullptr;
  Return (*power)(Device, unsigned*) = nullptr;
  Return (*temperature)(Device, int, unsigned*) = nullptr;

  std::string error(const char* what, Return r) const {
    const char* text = error_string != nullptr ? error_string(r) : nullptr;
    return std::string("nvml ") + what + ": " + (text != nullptr ? text : "error") + " (" + std::to_string(r) + ")";
  }

  template <class F>
  void find(F& into, std::initializer_list<const char*> names) {
    for (const char* n : names) {
      if (void* s = dlsym(handle, n); s != nullptr) {
        static_assert(sizeof(F) == sizeof(void*));
        std::memcpy(&into, &s, sizeof into);  // dlsym's object pointer as the function pointer it is
        return;
      }
    }
  }
};

Nvml::Nvml(std::unique_ptr<Api> api) : api_(std::move(api)) {}

Nvml::~Nvml() {
  if (api_->shutdown != nullptr) api_->shutdown();
  dlclose(api_->handle);
}

Expected<std::unique_ptr<Nvml>> Nvml::open(const std::string& library) {
  auto api = std::make_unique<Api>();
  api->handle = dlopen(library.c_str(), RTLD_LAZY | RTLD_GLOBAL);
  if (api->handle == nullptr) {
    const char* why = dlerror();
    return Unexpected{"nvml: cannot load " + library + ": " + (why != nullptr ? why : "unknown error") +
                      " (no NVIDIA driver on this machine? use the dcgm-exporter source instead)"};
  }
  Api& a = *api;
  a.find(a.init, {"nvmlInit_v2", "nvmlInit"});
  a.find(a.shutdown, {"nvmlShutdown"});
  a.find(a.error_string, {"nvmlErrorString"});
  a.find(a.driver_version, {"nvmlSystemGetDriverVersion"});
  a.find(a.count, {"nvmlDeviceGetCount_v2", "nvmlDeviceGetCount"});
  a.find(a.by_index, {"nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex"});
  a.find(a.uuid, {"nvmlDeviceGetUUID"});
  a.find(a.name, {"nvmlDeviceGetName"});
  a.find(a.minor, {"nvmlDeviceGetMinorNumber"});
  a.find(a.memory, {"nvmlDeviceGetMemoryInfo"});
  a.find(a.compute, {"nvmlDeviceGetCudaComputeCapability"});
  a.find(a.architecture, {"nvmlDeviceGetArchitecture"});
  a.find(a.numa, {"nvmlDeviceGetNumaNodeId"});
  a.find(a.mig_mode, {"nvmlDeviceGetMigMode"});
  a.find(a.max_mig, {"nvmlDeviceGetMaxMigDeviceCount"});
  a.find(a.mig_by_index, {"nvmlDeviceGetMigDeviceHandleByIndex"});
  a.find(a.gpu_instance, {"nvmlDeviceGetGpuInstanceId"});
  a.find(a.compute_instance, {"nvmlDeviceGetComputeInstanceId"});
  a.find(a.pci, {"nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetPciInfo_v2", "nvmlDeviceGetPciInfo"});
  a.find(a.utilization, {"nvmlDeviceGetUtilizationRates"});
  a.find(a.power, {"nvmlDeviceGetPowerUsage"});
  a.find(a.temperature, {"nvmlDeviceGetTemperature"});
  // What every use needs; the rest is optional and read as "unknown" when missing.
  for (const auto& [present, what] : std::initializer_list<std::pair<bool, const char*>>{
           {a.init != nullptr, "nvmlInit_v2"},
           {a.count != nullptr, "nvmlDeviceGetCount_v2"},
           {a.by_index != nullptr, "nvmlDeviceGetHandleByIndex_v2"},
           {a.uuid != nullptr, "nvmlDeviceGetUUID"},
           {a.name != nullptr, "nvmlDeviceGetName"}}) {
    if (!present) {
      dlclose(a.handle);
      return Unexpected{"nvml: " + library + " has no " + what + " (nor its older name): not NVML?"};
    }
  }
  if (const Return r = a.init(); r != kSuccess) {
    const std::string message = a.error("init", r);
    dlclose(a.handle);
    return Unexpected{message};
  }
  return std::unique_ptr<Nvml>(new Nvml(std::move(api)));
}

std::string Nvml::driver_version() const {
  std::array<char, 96> buffer{};
  if (api_->driver_version == nullptr || api_->driver_version(buffer.data(), 80) != kSuccess) return {};
  return std::string(buffer.data(), strnlen(buffer.data(), buffer.size()));
}

Expected<std::vector<GpuDevice>> Nvml::devices() const {
  const Api& a = *api_;
  unsigned count = 0;
  if (const Return r = a.count(&count); r != kSuccess) return Unexpected{a.error("device count", r)};
  auto text = [](auto fn, Device d) {
    std::array<char, 128> buffer{};
    if (fn(d, buffer.data(), 96) != kSuccess) return std::string();
    return std::string(buffer.data(), strnlen(buffer.data(), buffer.size()));
  };
  std::vector<GpuDevice> out;
  for (unsigned i = 0; i < count; ++i) {
    Device d = nullptr;
    if (const Return r = a.by_index(i, &d); r != kSuccess) return Unexpected{a.error(("device " + std::to_string(i)).c_str(), r)};
    GpuDevice g;
    g.index = i;
    g.uuid = text(a.uuid, d);
    g.name = text(a.name, d);
    if (g.uuid.empty()) return Unexpected{"nvml: device " + std::to_string(i) + " reports no UUID"};
    if (a.minor != nullptr) (void)a.minor(d, &g.minor);
    if (Memory m{}; a.memory != nullptr && a.memory(d, &m) == kSuccess) g.memory_total = m.total;
    if (a.compute != nullptr) (void)a.compute(d, &g.compute_major, &g.compute_minor);
    if (a.architecture != nullptr) (void)a.architecture(d, &g.architecture);
    if (unsigned numa = 0; a.numa != nullptr && a.numa(d, &numa) == kSuccess) g.numa_node = static_cast<int>(numa);
    if (PciInfo p{}; a.pci != nullptr && a.pci(d, &p) == kSuccess) g.pci_bus_id.assign(p.bus_id, strnlen(p.bus_id, sizeof p.bus_id));
    unsigned current = 0;
    unsigned pending = 0;
    // "Not supported" is a GPU without MIG, not an error.
    if (a.mig_mode != nullptr) {
      const Return r = a.mig_mode(d, &current, &pending);
      if (r != kSuccess && r != kNotSupported) return Unexpected{a.error(("MIG mode of " + g.uuid).c_str(), r)};
      g.mig_enabled = r == kSuccess && current == 1;
    }
    if (g.mig_enabled && a.max_mig != nullptr && a.mig_by_index != nullptr) {
      unsigned slots = 0;
      (void)a.max_mig(d, &slots);
      for (unsigned s = 0; s < slots; ++s) {
        Device m = nullptr;
        if (a.mig_by_index(d, s, &m) != kSuccess) continue;  // an empty slot
        MigDevice mig;
        mig.uuid = text(a.uuid, m);
        mig.profile = mig_profile(text(a.name, m));
        if (a.gpu_instance != nullptr) (void)a.gpu_instance(m, &mig.gpu_instance);
        if (a.compute_instance != nullptr) (void)a.compute_instance(m, &mig.compute_instance);
        if (Memory mm{}; a.memory != nullptr && a.memory(m, &mm) == kSuccess) mig.memory_total = mm.total;
        g.mig.push_back(std::move(mig));
      }
    }
    out.push_back(std::move(g));
  }
  return out;
}

Expected<GpuReading> Nvml::read(unsigned index) const {
  const Api& a = *api_;
  Device d = nullptr;
  if (const Return r = a.by_index(index, &d); r != kSuccess) return Unexpected{a.error(("device " + std::to_string(index)).c_str(), r)};
  GpuReading out;
  if (Utilization u{}; a.utilization != nullptr && a.utilization(d, &u) == kSuccess) {
    out.gpu_util = u.gpu;
    out.memory_util = u.memory;
  }
  if (Memory m{}; a.memory != nullptr && a.memory(d, &m) == kSuccess) {
    out.memory_used = m.used;
    out.memory_free = m.free;
  }
  if (a.power != nullptr) (void)a.power(d, &out.power_mw);
  if (a.temperature != nullptr) (void)a.temperature(d, 0, &out.temperature_c);
  return out;
}

}  // namespace gpubank::node
