// A FAKE libnvidia-ml.so.1 for tests on machines without an NVIDIA GPU: the NVML entry
// points gpubank's loader (src/node/nvml.cpp) looks up, with NVML's C signatures and return
// codes, answering from a JSON description of the GPUs named by the environment variable
// GPUBANK_FAKE_NVML (read at nvmlInit). The default description is the real H200 that
// ../shared/spec/node-apis.md records (driver 580.159.04, MIG off, NUMA "not supported").
//
// Built twice: with the versioned names (nvmlInit_v2, nvmlDeviceGetCount_v2, ...), and with
// FAKE_NVML_LEGACY only the older ones, so the loader's fallback is tested.
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace {

constexpr int kSuccess = 0;
constexpr int kInvalidArgument = 2;
constexpr int kNotSupported = 3;
constexpr int kUninitialized = 1;
constexpr int kInsufficientSize = 7;
constexpr int kNotFound = 6;

struct Mig {
  std::string uuid, name;
  unsigned gpu_instance = 0, compute_instance = 0;
  unsigned long long memory_total = 0;
};
struct Gpu {
  std::string uuid, name, pci_bus_id;
  unsigned minor = 0;
  unsigned long long memory_total = 0, memory_used = 0;
  int cc_major = 0, cc_minor = 0;
  unsigned architecture = 0;
  int numa = -1;  // -1: not supported
  unsigned mig_mode = 0;
  unsigned max_mig = 0;
  std::vector<Mig> mig;
  unsigned util_gpu = 0, util_memory = 0, power_mw = 0, temperature = 0;
};

struct State {
  bool initialised = false;
  int init_error = 0;
  std::string driver = "580.159.04";
  std::vector<Gpu> gpus;
};
State& state() {
  static State s;
  return s;
}

// The real H200 of node-apis.md.
const char* kDefault = R"({
  "driverVersion": "580.159.04",
  "gpus": [{
    "uuid": "GPU-e46a8f8f-eb27-178a-160e-ae0ab04e8dfc", "name": "NVIDIA H200", "pciBusId": "00000000:00:06.0",
    "minor": 0, "memoryTotal": 150754820096, "memoryUsed": 644874240, "computeCapability": [9, 0], "architecture": 9,
    "migMode": 0, "utilization": [0, 0], "powerMw": 78970, "temperatureC": 35
  }]
})";

void load() {
  State& s = state();
  s.gpus.clear();
  std::string text = kDefault;
  if (const char* path = std::getenv("GPUBANK_FAKE_NVML"); path != nullptr && *path != '\0') {
    std::ifstream in(path);
    std::stringstream buffer;
    buffer << in.rdbuf();
    text = buffer.str();
  }
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded()) {
    s.init_error = 999;
    return;
  }
  s.init_error = j.value("initError", 0);
  s.driver = j.value("driverVersion", s.driver);
  for (const auto& g : j.value("gpus", nlohmann::json::array())) {
    Gpu gpu;
    gpu.uuid = g.value("uuid", "");
    gpu.name = g.value("name", "");
    gpu.pci_bus_id = g.value("pciBusId", "");
    gpu.minor = g.value("minor", 0u);
    gpu.memory_total = g.value("memoryTotal", 0ull);
    gpu.memory_used = g.value("memoryUsed", 0ull);
    if (g.contains("computeCapability")) {
      gpu.cc_major = g["computeCapability"][0];
      gpu.cc_minor = g["computeCapability"][1];
    }
    gpu.architecture = g.value("architecture", 0u);
    gpu.numa = g.contains("numaNode") && g["numaNode"].is_number() ? g["numaNode"].get<int>() : -1;
    gpu.mig_mode = g.value("migMode", 0u);
    for (const auto& m : g.value("mig", nlohmann::json::array())) {
      gpu.mig.push_back({m.value("uuid", ""), m.value("name", ""), m.value("gpuInstance", 0u), m.value("computeInstance", 0u),
                         m.value("memoryTotal", 0ull)});
    }
    gpu.max_mig = g.value("maxMigDevices", gpu.mig_mode == 1 ? 7u : 0u);
    if (g.contains("utilization")) {
      gpu.util_gpu = g["utilization"][0];
      gpu.util_memory = g["utilization"][1];
    }
    gpu.power_mw = g.value("powerMw", 0u);
    gpu.temperature = g.value("temperatureC", 0u);
    s.gpus.push_back(std::move(gpu));
  }
}

// Handles are pointers to a tagged slot: whole GPU (mig == -1) or one MIG device.
struct Handle {
  std::size_t gpu;
  int mig;
};
std::vector<Handle>& handles() {
  static std::vector<Handle> h(4096);
  return h;
}
void* handle_of(std::size_t gpu, int mig) {
  const std::size_t slot = gpu * 64 + static_cast<std::size_t>(mig + 1);
  handles()[slot] = Handle{gpu, mig};
  return &handles()[slot];
}
const Handle* from(void* device) { return static_cast<const Handle*>(device); }

int copy(const std::string& text, char* out, unsigned length) {
  if (out == nullptr) return kInvalidArgument;
  if (text.size() + 1 > length) return kInsufficientSize;
  std::memcpy(out, text.c_str(), text.size() + 1);
  return kSuccess;
}

int init() {
  load();
  if (state().init_error != 0) return state().init_error;
  state().initialised = true;
  return kSuccess;
}
int count(unsigned* n) {
  if (!state().initialised) return kUninitialized;
  *n = static_cast<unsigned>(state().gpus.size());
  return kSuccess;
}
int by_index(unsigned i, void** device) {
  if (!state().initialised) return kUninitialized;
  if (i >= state().gpus.size()) return kInvalidArgument;
  *device = handle_of(i, -1);
  return kSuccess;
}
struct PciInfo {
  char bus_id_legacy[16];
  unsigned domain, bus, device, pci_device_id, pci_sub_system_id;
  char bus_id[32];
};
int pci(void* device, PciInfo* info) {
  const Handle* h = from(device);
  if (h->mig >= 0) return kNotSupported;
  std::memset(info, 0, sizeof *info);
  const std::string& id = state().gpus[h->gpu].pci_bus_id;
  std::strncpy(info->bus_id, id.c_str(), sizeof info->bus_id - 1);
  return kSuccess;
}

}  // namespace

extern "C" {

#ifdef FAKE_NVML_LEGACY
__attribute__((visibility("default"))) int nvmlInit() { return init(); }
__attribute__((visibility("default"))) int nvmlDeviceGetCount(unsigned* n) { return count(n); }
__attribute__((visibility("default"))) int nvmlDeviceGetHandleByIndex(unsigned i, void** d) { return by_index(i, d); }
__attribute__((visibility("default"))) int nvmlDeviceGetPciInfo(void* d, PciInfo* p) { return pci(d, p); }
#else
__attribute__((visibility("default"))) int nvmlInit_v2() { return init(); }
__attribute__((visibility("default"))) int nvmlDeviceGetCount_v2(unsigned* n) { return count(n); }
__attribute__((visibility("default"))) int nvmlDeviceGetHandleByIndex_v2(unsigned i, void** d) { return by_index(i, d); }
__attribute__((visibility("default"))) int nvmlDeviceGetPciInfo_v3(void* d, PciInfo* p) { return pci(d, p); }
#endif

__attribute__((visibility("default"))) int nvmlShutdown() {
  state().initialised = false;
  return kSuccess;
}
__attribute__((visibility("default"))) const char* nvmlErrorString(int r) {
  switch (r) {
    case 0: return "Success";
    case 1: return "Uninitialized";
    case 2: return "Invalid Argument";
    case 3: return "Not Supported";
    case 9: return "Driver Not Loaded";
    default: return "Unknown Error";
  }
}
__attribute__((visibility("default"))) int nvmlSystemGetDriverVersion(char* out, unsigned length) {
  return copy(state().driver, out, length);
}
__attribute__((visibility("default"))) int nvmlDeviceGetUUID(void* d, char* out, unsigned length) {
  const Handle* h = from(d);
  const Gpu& g = state().gpus[h->gpu];
  return copy(h->mig < 0 ? g.uuid : g.mig[static_cast<std::size_t>(h->mig)].uuid, out, length);
}
__attribute__((visibility("default"))) int nvmlDeviceGetName(void* d, char* out, unsigned length) {
  const Handle* h = from(d);
  const Gpu& g = state().gpus[h->gpu];
  return copy(h->mig < 0 ? g.name : g.mig[static_cast<std::size_t>(h->mig)].name, out, length);
}
__attribute__((visibility("default"))) int nvmlDeviceGetMinorNumber(void* d, unsigned* minor) {
  *minor = state().gpus[from(d)->gpu].minor;
  return kSuccess;
}
__attribute__((visibility("default"))) int nvmlDeviceGetMemoryInfo(void* d, unsigned long long* memory) {
  const Handle* h = from(d);
  const Gpu& g = state().gpus[h->gpu];
  const unsigned long long total = h->mig < 0 ? g.memory_total : g.mig[static_cast<std::size_t>(h->mig)].memory_total;
  const unsigned long long used = h->mig < 0 ? g.memory_used : 0;
  memory[0] = total;
  memory[1] = total - used;
  memory[2] = used;
  return kSuccess;
}
__attribute__((visibility("default"))) int nvmlDeviceGetCudaComputeCapability(void* d, int* major, int* minor) {
  const Gpu& g = state().gpus[from(d)->gpu];
  *major = g.cc_major;
  *minor = g.cc_minor;
  return kSuccess;
}
__attribute__((visibility("default"))) int nvmlDeviceGetArchitecture(void* d, unsigned* arch) {
  *arch = state().gpus[from(d)->gpu].architecture;
  return kSuccess;
}
__attribute__((visibility("default"))) int nvmlDeviceGetNumaNodeId(void* d, unsigned* node) {
  const Gpu& g = state().gpus[from(d)->gpu];
  if (g.numa < 0) return kNotSupported;
  *node = static_cast<unsigned>(g.numa);
  return kSuccess;
}
__attribute__((visibility("default"))) int nvmlDeviceGetMigMode(void* d, unsigned* current, unsigned* pending) {
  const Gpu& g = state().gpus[from(d)->gpu];
  *current = g.mig_mode;
  *pending = g.mig_mode;
  return kSuccess;
}
__attribute__((visibility("default"))) int nvmlDeviceGetMaxMigDeviceCount(void* d, unsigned* n) {
  *n = state().gpus[from(d)->gpu].max_mig;
  return kSuccess;
}
__attribute__((visibility("default"))) int nvmlDeviceGetMigDeviceHandleByIndex(void* d, unsigned i, void** mig) {
  const Handle* h = from(d);
  const Gpu& g = state().gpus[h->gpu];
  if (i >= g.mig.size()) return kNotFound;
  *mig = handle_of(h->gpu, static_cast<int>(i));
  return kSuccess;
}
__attribute__((visibility("default"))) int nvmlDeviceGetGpuInstanceId(void* d, unsigned* id) {
  const Handle* h = from(d);
  if (h->mig < 0) return kNotSupported;
  *id = state().gpus[h->gpu].mig[static_cast<std::size_t>(h->mig)].gpu_instance;
  return kSuccess;
}
__attribute__((visibility("default"))) int nvmlDeviceGetComputeInstanceId(void* d, unsigned* id) {
  const Handle* h = from(d);
  if (h->mig < 0) return kNotSupported;
  *id = state().gpus[h->gpu].mig[static_cast<std::size_t>(h->mig)].compute_instance;
  return kSuccess;
}
__attribute__((visibility("default"))) int nvmlDeviceGetUtilizationRates(void* d, unsigned* rates) {
  const Handle* h = from(d);
  if (h->mig >= 0) return kNotSupported;  // MIG instances have no *_UTIL (node-apis.md)
  rates[0] = state().gpus[h->gpu].util_gpu;
  rates[1] = state().gpus[h->gpu].util_memory;
  return kSuccess;
}
__attribute__((visibility("default"))) int nvmlDeviceGetPowerUsage(void* d, unsigned* mw) {
  *mw = state().gpus[from(d)->gpu].power_mw;
  return kSuccess;
}
__attribute__((visibility("default"))) int nvmlDeviceGetTemperature(void* d, int sensor, unsigned* celsius) {
  if (sensor != 0) return kInvalidArgument;
  *celsius = state().gpus[from(d)->gpu].temperature;
  return kSuccess;
}

}  // extern "C"
