// What the twin's GPUs report: per workload type an activity profile, and from it the
// fields dcgm-exporter serves (utilisation, memory, power, temperature, clock, profiling
// ratios) and the energy counter. Pure functions of (profile, seed, ids, virtual time):
// no state, no clock, O(1) per device and scrape. Tables and formulas:
// docs/twin-telemetry.md.
//
// The model in one paragraph: time runs in whole seconds; second k = floor(t / 1000 ms) has
// one activity a_k in basis points (0..10,000 = 0..100 % of the GPU busy), constant within
// the second. a_k = base + jitter: `base` cycles through the profile's phases (e.g.
// training: busy, then a data-loading dip), counted in whole seconds from the workload's
// start; `jitter` is +J in even and -J in odd seconds, J drawn per pair of seconds from
// splitmix64(seed, device, k / 2), so that it cancels over each pair and the energy of any
// interval has a closed form. Power = idle + (TDP - idle) * a; energy is its exact integral
// (integer activity-milliseconds, one rounding at the end).
//
//   const GpuModelSpec& h100 = gpu_model_spec("NVIDIA H100 80GB HBM3");
//   ActivityInput in{.profile = Profile::training, .seed = 7, .device_key = device_key("node-3", 5),
//                    .workload_key = workload_key("team-a/llama-ft"), .start_ms = 60'000};
//   GpuSample s = sample(h100, in, 3'600'000, {.since_ms = 60'000, .mj = energy_at_start});
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace gpubank::twin::telemetry {

// ---- GPU models ----------------------------------------------------------------------------

// What the model needs to know of a GPU model (the table: docs/twin-telemetry.md).
struct GpuModelSpec {
  std::string_view key;        // gpubank's gpuModel spelling: "H100", "H200", "A100", "L40S", "generic"
  std::string_view nvml_name;  // NVML's name, dcgm-exporter's modelName
  double tdp_w = 0;            // board power at full activity
  double idle_w = 0;           // board power with nothing running
  std::int64_t fb_total_mib = 0;
  std::int64_t reserved_mib = 0;  // framebuffer the driver holds on an idle GPU
  int idle_temp_c = 0;
  int max_temp_c = 0;  // at full activity
  int idle_sm_clock_mhz = 0;
  int max_sm_clock_mhz = 0;
};

// The spec whose key occurs in `model` (case-insensitive: "H200" before "H100", then
// "A100", "L40S"), so NVML names, GPU Feature Discovery labels and gpubank's gpuModel keys
// all find it; the generic spec otherwise.
[[nodiscard]] const GpuModelSpec& gpu_model_spec(std::string_view model);
[[nodiscard]] std::span<const GpuModelSpec> gpu_model_specs();  // every entry, generic last

// A MIG GPU instance of `gpu` with `memory_mib` of framebuffer: the same GPU otherwise, no
// driver reservation of its own.
[[nodiscard]] GpuModelSpec mig_instance_spec(const GpuModelSpec& gpu, std::int64_t memory_mib);

// ---- hashing -----------------------------------------------------------------------------

[[nodiscard]] constexpr std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Stable 64-bit ids: FNV-1a of the text, mixed with splitmix64. `gpu_instance` < 0 for a
// whole GPU, else the MIG GPU instance id.
[[nodiscard]] std::uint64_t device_key(std::string_view node, int gpu_index, int gpu_instance = -1);
[[nodiscard]] std::uint64_t workload_key(std::string_view workload);

// ---- activity ----------------------------------------------------------------------------

enum class Profile { idle, training, batch, notebook, inference, loading, checkpointing };

[[nodiscard]] std::string_view to_string(Profile profile);

// One device's state over an interval in which nothing about it changes.
struct ActivityInput {
  Profile profile = Profile::idle;
  std::uint64_t seed = 0;          // the run's seed
  std::uint64_t device_key = 0;    // the device: its jitter
  std::uint64_t workload_key = 0;  // the workload: its rhythm (periods, levels), shared by all its devices
  std::int64_t start_ms = 0;       // when this profile began on the device: phases count from here
  double load = 0;                 // inference: the replica's load, 0..1 (clamped; NaN reads as 0)
  double weights_mib = 0;          // inference: model weights on this device
  double kv_cache_mib = 0;         // inference: KV cache in use on this device
  // Framebuffer the workload holds (training, batch, notebook, checkpointing; loading's
  // target). Negative: the profile's default share of the device (docs/twin-telemetry.md).
  double held_mib = -1;
};

// The sample of one device at one instant, in dcgm-exporter's units.
struct GpuSample {
  int activity_bp = 0;          // a_k: 0..10,000
  int gpu_util_pct = 0;         // DCGM_FI_DEV_GPU_UTIL
  int mem_copy_util_pct = 0;    // DCGM_FI_DEV_MEM_COPY_UTIL
  std::int64_t fb_used_mib = 0;
  std::int64_t fb_free_mib = 0;
  double power_w = 0;
  double power_limit_w = 0;     // DCGM_FI_DEV_ENFORCED_POWER_LIMIT: the model's TDP (no power capping)
  double gr_engine_active = 0;  // DCGM_FI_PROF_GR_ENGINE_ACTIVE, 0..1
  double tensor_active = 0;     // DCGM_FI_PROF_PIPE_TENSOR_ACTIVE, 0..1
  double dram_active = 0;       // DCGM_FI_PROF_DRAM_ACTIVE, 0..1
  int temperature_c = 0;
  int sm_clock_mhz = 0;
  double energy_mj = 0;         // DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION (see EnergyBase)
};

// The energy counter's value `mj` at `since_ms`, the last time the device's input changed
// (the workload, its profile, an inference load). The counter at t is mj plus the exact
// energy of [since_ms, t) under the current input: the caller keeps one EnergyBase per
// device and, at each change at time c, replaces it with {c, sample(old input, c).energy_mj}.
struct EnergyBase {
  std::int64_t since_ms = 0;
  double mj = 0;
};

// The activity of second k = floor(t_ms / 1000), in basis points.
[[nodiscard]] int activity_bp(const ActivityInput& in, std::int64_t t_ms);

// The sample at t_ms. O(1).
[[nodiscard]] GpuSample sample(const GpuModelSpec& gpu, const ActivityInput& in, std::int64_t t_ms,
                               const EnergyBase& energy = {});

// Σ a_k × (milliseconds of second k inside [t0_ms, t1_ms)), exactly, in O(1); 0 when
// t1 <= t0.
[[nodiscard]] std::int64_t activity_integral(const ActivityInput& in, std::int64_t t0_ms, std::int64_t t1_ms);

// Energy in mJ (W × ms) of a device over `duration_ms` whose activity integral is
// `activity_bp_ms`: idle_w × duration + (tdp_w - idle_w) × activity_bp_ms / 10,000.
[[nodiscard]] double energy_mj(const GpuModelSpec& gpu, std::int64_t duration_ms, double activity_bp_ms);

// ---- MIG ---------------------------------------------------------------------------------

// One MIG GPU instance of a physical GPU: its input, its compute slices (1g = 1, 3g = 3,
// 7g = 7) and its memory.
struct MigPart {
  ActivityInput input;
  int compute_slices = 1;
  std::int64_t memory_mib = 0;
};

// The physical GPU under MIG: activity Σ slices_i × a_i / total_slices (slices without an
// instance are idle), power, temperature, clock and energy from it (the energy's activity
// integral is Σ slices_i × integral_i / total_slices, exactly), framebuffer the sum of the
// parts'. `total_slices`: 7 on A100/H100/H200.
[[nodiscard]] GpuSample mig_parent_sample(const GpuModelSpec& gpu, std::span<const MigPart> parts, int total_slices,
                                          std::int64_t t_ms, const EnergyBase& energy = {});

// A MIG instance's sample as dcgm-exporter reports it: its own framebuffer, utilisation and
// profiling fields, the device-level fields (power and its limit, temperature, SM clock,
// energy) of its parent GPU.
[[nodiscard]] GpuSample with_device_fields_of(GpuSample instance, const GpuSample& parent);

}  // namespace gpubank::twin::telemetry
