#include "twin/telemetry/profile.hpp"

#include <algorithm>
#include <array>
#include <cmath>

#include "core/fnv1a.hpp"

namespace gpubank::twin::telemetry {

namespace {

// The GPU models the twin knows (sources: docs/twin-telemetry.md). Generic last.
constexpr std::array<GpuModelSpec, 5> kSpecs{{
    {"H200", "NVIDIA H200", 700, 78.97, 143771, 615, 35, 72, 345, 1980},
    {"H100", "NVIDIA H100 80GB HBM3", 700, 70, 81559, 512, 30, 72, 345, 1980},
    {"A100", "NVIDIA A100-SXM4-80GB", 400, 50, 81920, 512, 30, 70, 210, 1410},
    {"L40S", "NVIDIA L40S", 350, 35, 46068, 512, 30, 75, 210, 2520},
    {"generic", "NVIDIA GPU", 300, 40, 40960, 512, 30, 75, 300, 1500},
}};

// Virtual times are clamped to ±10^14 ms (about 3,170 years) so that activity integrals
// (at most 10,000 bp × 2 × 10^14 ms) fit in 64 bits whatever the caller passes.
constexpr std::int64_t kMaxTimeMs = 100'000'000'000'000;
constexpr int kFull = 10'000;  // basis points of a fully busy GPU

std::int64_t clamp_time(std::int64_t t) { return std::clamp(t, -kMaxTimeMs, kMaxTimeMs); }

std::int64_t floor_div(std::int64_t a, std::int64_t b) {
  std::int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

char lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

bool contains_ci(std::string_view text, std::string_view word) {
  if (word.empty() || word.size() > text.size()) return false;
  for (std::size_t i = 0; i + word.size() <= text.size(); ++i) {
    bool same = true;
    for (std::size_t j = 0; j < word.size() && same; ++j) same = lower(text[i + j]) == lower(word[j]);
    if (same) return true;
  }
  return false;
}


// An integer in [lo, hi] from the high 32 bits of a hash (multiply-shift, no modulo).
std::int64_t pick(std::uint64_t h, std::int64_t lo, std::int64_t hi) {
  const auto range = static_cast<std::uint64_t>(hi - lo + 1);
  return lo + static_cast<std::int64_t>(((h >> 32) * range) >> 32);
}

// The workload's rhythm: one hash per parameter (`salt`), the same for all its devices.
std::uint64_t rhythm(const ActivityInput& in, std::uint64_t salt) {
  return splitmix64(splitmix64(in.seed ^ in.workload_key) + salt);
}

// ---- cycles --------------------------------------------------------------------------------

struct Phase {
  std::int64_t seconds = 0;
  int level_bp = 0;
  int copy_pct = 0;  // memory-copy utilisation the phase adds regardless of activity
};

// A profile over time: phases repeated from the start, the jitter amplitude (every level
// lies in [jitter, 10,000 - jitter], so a_k never needs clamping and jitter cancels), and
// the ratios that derive the other fields from the activity.
struct Cycle {
  std::array<Phase, 3> phases{};
  int count = 1;
  int jitter_bp = 0;
  int copy_per_activity_pct = 0;  // mem_copy_util += this × a
  int tensor_permille = 0;        // tensor_active = this / 1000 × a
  int dram_permille = 0;          // dram_active = this / 1000 × a + copy_pct / 200
  std::int64_t period_s = 1;
  std::int64_t sum_bp_s = 0;      // Σ seconds × level over one period
};

Cycle finish(Cycle c) {
  c.period_s = 0;
  c.sum_bp_s = 0;
  for (int i = 0; i < c.count; ++i) {
    c.period_s += c.phases[static_cast<std::size_t>(i)].seconds;
    c.sum_bp_s += c.phases[static_cast<std::size_t>(i)].seconds * c.phases[static_cast<std::size_t>(i)].level_bp;
  }
  if (c.period_s <= 0) c.period_s = 1;
  return c;
}

double clean_load(double load) {
  if (std::isnan(load)) return 0;
  return std::clamp(load, 0.0, 1.0);
}

Cycle cycle_of(const ActivityInput& in) {
  Cycle c;
  switch (in.profile) {
    case Profile::idle:
      c.phases[0] = {1, 0, 0};
      break;
    case Profile::training: {
      const std::int64_t period = 60 * pick(rhythm(in, 1), 5, 15);
      const std::int64_t dip = pick(rhythm(in, 2), 20, 120);
      const int level = static_cast<int>(pick(rhythm(in, 3), 8800, 9500));
      c.phases[0] = {period - dip, level, 0};
      c.phases[1] = {dip, 2000, 0};
      c.count = 2;
      c.jitter_bp = 300;
      c.copy_per_activity_pct = 40;
      c.tensor_permille = 600;
      c.dram_permille = 450;
      break;
    }
    case Profile::batch:
      c.phases[0] = {pick(rhythm(in, 1), 60, 180), 1000, 35};
      c.phases[1] = {pick(rhythm(in, 2), 600, 1800), 9000, 0};
      c.phases[2] = {pick(rhythm(in, 3), 60, 120), 500, 25};
      c.count = 3;
      c.jitter_bp = 300;
      c.copy_per_activity_pct = 50;
      c.tensor_permille = 300;
      c.dram_permille = 500;
      break;
    case Profile::notebook: {
      const std::int64_t period = pick(rhythm(in, 1), 300, 1200);
      const std::int64_t burst = pick(rhythm(in, 2), 10, 60);
      const int level = static_cast<int>(pick(rhythm(in, 3), 3000, 7000));
      const std::int64_t offset = pick(rhythm(in, 4), 0, period - burst);
      c.phases[0] = {offset, 200, 0};
      c.phases[1] = {burst, level, 0};
      c.phases[2] = {period - offset - burst, 200, 0};
      c.count = 3;
      c.jitter_bp = 200;
      c.copy_per_activity_pct = 30;
      c.tensor_permille = 200;
      c.dram_permille = 300;
      break;
    }
    case Profile::inference:
      c.phases[0] = {1, 500 + static_cast<int>(std::lround(9000 * clean_load(in.load))), 0};
      c.jitter_bp = 300;
      c.copy_per_activity_pct = 60;
      c.tensor_permille = 350;
      c.dram_permille = 600;
      break;
    case Profile::loading:
      c.phases[0] = {1, 500, 30};
      c.jitter_bp = 200;
      c.dram_permille = 300;
      break;
    case Profile::checkpointing:
      c.phases[0] = {1, 500, 40};
      c.jitter_bp = 200;
      c.dram_permille = 300;
      break;
  }
  return finish(c);
}

// Whole seconds of second k since the profile began (negative before it).
std::int64_t elapsed_s(const ActivityInput& in, std::int64_t k) { return k - floor_div(clamp_time(in.start_ms), 1000); }

const Phase& phase_at(const Cycle& c, std::int64_t e) {
  std::int64_t r = e - floor_div(e, c.period_s) * c.period_s;
  for (int i = 0; i < c.count; ++i) {
    const Phase& p = c.phases[static_cast<std::size_t>(i)];
    if (r < p.seconds) return p;
    r -= p.seconds;
  }
  return c.phases[static_cast<std::size_t>(c.count - 1)];
}

// Σ base over elapsed seconds j in [0, e) (extended to negative e so that
// prefix(e + 1) - prefix(e) is always base(e)).
std::int64_t base_prefix(const Cycle& c, std::int64_t e) {
  const std::int64_t q = floor_div(e, c.period_s);
  std::int64_t r = e - q * c.period_s;
  std::int64_t sum = q * c.sum_bp_s;
  for (int i = 0; i < c.count && r > 0; ++i) {
    const Phase& p = c.phases[static_cast<std::size_t>(i)];
    const std::int64_t n = std::min(r, p.seconds);
    sum += n * p.level_bp;
    r -= n;
  }
  return sum;
}

// +J in even seconds, -J in odd ones; J per pair of seconds from the device's stream.
int jitter_at(const ActivityInput& in, const Cycle& c, std::int64_t k) {
  if (c.jitter_bp == 0) return 0;
  const std::int64_t pair = floor_div(k, 2);
  const std::uint64_t h = splitmix64(splitmix64(in.seed ^ in.device_key ^ 0x6a09e667f3bcc908ULL) +
                                     static_cast<std::uint64_t>(pair));
  const int j = static_cast<int>(pick(h, -c.jitter_bp, c.jitter_bp));
  return (k & 1) == 0 ? j : -j;
}

// Σ jitter over seconds [ka, kb): complete pairs cancel, only unpaired ends remain.
std::int64_t jitter_sum(const ActivityInput& in, const Cycle& c, std::int64_t ka, std::int64_t kb) {
  std::int64_t sum = 0;
  if (ka < kb && (ka & 1) != 0) sum += jitter_at(in, c, ka++);
  if (ka < kb && (kb & 1) != 0) sum += jitter_at(in, c, --kb);
  return sum;
}

int activity_of(const ActivityInput& in, const Cycle& c, std::int64_t k) {
  return phase_at(c, elapsed_s(in, k)).level_bp + jitter_at(in, c, k);
}

// Framebuffer the workload holds at second k (before the driver's reservation).
double held_at(const GpuModelSpec& gpu, const ActivityInput& in, std::int64_t k) {
  const auto available = static_cast<double>(std::max<std::int64_t>(0, gpu.fb_total_mib - gpu.reserved_mib));
  double share = 0;
  switch (in.profile) {
    case Profile::idle: return 0;
    case Profile::inference: {
      const double w = std::isnan(in.weights_mib) ? 0 : std::max(0.0, in.weights_mib);
      const double kv = std::isnan(in.kv_cache_mib) ? 0 : std::max(0.0, in.kv_cache_mib);
      return w + kv;
    }
    case Profile::training: share = 0.90; break;
    case Profile::batch: share = 0.60; break;
    case Profile::notebook: share = 0.30; break;
    case Profile::loading: share = 0.90; break;
    case Profile::checkpointing: share = 0.90; break;
  }
  const double held = (std::isnan(in.held_mib) || in.held_mib < 0) ? std::floor(share * available) : in.held_mib;
  // Ramps: training allocates over its first minute (warm-up), loading over two minutes.
  const std::int64_t ramp_s = in.profile == Profile::training ? 60 : in.profile == Profile::loading ? 120 : 0;
  if (ramp_s == 0) return held;
  const std::int64_t e = std::clamp<std::int64_t>(elapsed_s(in, k), 0, ramp_s);
  return held * static_cast<double>(e) / static_cast<double>(ramp_s);
}

void fill_framebuffer(GpuSample& s, const GpuModelSpec& gpu, double held) {
  const double used = std::min(static_cast<double>(gpu.fb_total_mib),
                               static_cast<double>(gpu.reserved_mib) + std::floor(std::min(held, 1e15)));
  s.fb_used_mib = static_cast<std::int64_t>(std::max(0.0, used));
  s.fb_free_mib = std::max<std::int64_t>(0, gpu.fb_total_mib - s.fb_used_mib);
}

void fill_device_fields(GpuSample& s, const GpuModelSpec& gpu, int a) {
  s.activity_bp = a;
  s.gpu_util_pct = (a + 50) / 100;
  s.gr_engine_active = a / 10000.0;
  s.power_w = gpu.idle_w + (gpu.tdp_w - gpu.idle_w) * a / 10000.0;
  s.power_limit_w = gpu.tdp_w;
  s.temperature_c = gpu.idle_temp_c + ((gpu.max_temp_c - gpu.idle_temp_c) * a + 5000) / 10000;
  s.sm_clock_mhz = a == 0 ? gpu.idle_sm_clock_mhz : gpu.max_sm_clock_mhz;
}

// Σ a_k × ms of second k inside [t0, t1) (times already clamped).
std::int64_t integral_of(const ActivityInput& in, const Cycle& c, std::int64_t t0_ms, std::int64_t t1_ms) {
  if (t1_ms <= t0_ms) return 0;
  const std::int64_t k0 = floor_div(t0_ms, 1000);
  const std::int64_t k1 = floor_div(t1_ms - 1, 1000);  // the last second touched
  if (k0 == k1) return activity_of(in, c, k0) * (t1_ms - t0_ms);
  std::int64_t total = activity_of(in, c, k0) * ((k0 + 1) * 1000 - t0_ms) + activity_of(in, c, k1) * (t1_ms - k1 * 1000);
  // Whole seconds k0 + 1 .. k1 - 1.
  const std::int64_t ka = k0 + 1;
  const std::int64_t kb = k1;
  if (ka < kb) {
    const std::int64_t base = base_prefix(c, elapsed_s(in, kb)) - base_prefix(c, elapsed_s(in, ka));
    total += 1000 * (base + jitter_sum(in, c, ka, kb));
  }
  return total;
}

}  // namespace

// ---- specs and ids ------------------------------------------------------------------------

const GpuModelSpec& gpu_model_spec(std::string_view model) {
  for (std::size_t i = 0; i + 1 < kSpecs.size(); ++i) {
    if (contains_ci(model, kSpecs[i].key)) return kSpecs[i];
  }
  return kSpecs.back();
}

std::span<const GpuModelSpec> gpu_model_specs() { return kSpecs; }

GpuModelSpec mig_instance_spec(const GpuModelSpec& gpu, std::int64_t memory_mib) {
  GpuModelSpec s = gpu;
  s.fb_total_mib = std::max<std::int64_t>(0, memory_mib);
  s.reserved_mib = 0;
  return s;
}

std::uint64_t device_key(std::string_view node, int gpu_index, int gpu_instance) {
  std::uint64_t h = fnv1a64(node);
  h = splitmix64(h ^ static_cast<std::uint64_t>(static_cast<std::int64_t>(gpu_index)));
  return splitmix64(h ^ (static_cast<std::uint64_t>(static_cast<std::int64_t>(gpu_instance)) * 0x9e3779b97f4a7c15ULL));
}

std::uint64_t workload_key(std::string_view workload) { return splitmix64(fnv1a64(workload)); }

std::string_view to_string(Profile profile) {
  switch (profile) {
    case Profile::idle: return "idle";
    case Profile::training: return "training";
    case Profile::batch: return "batch";
    case Profile::notebook: return "notebook";
    case Profile::inference: return "inference";
    case Profile::loading: return "loading";
    case Profile::checkpointing: return "checkpointing";
  }
  return "idle";
}

// ---- activity ------------------------------------------------------------------------------

int activity_bp(const ActivityInput& in, std::int64_t t_ms) {
  const Cycle c = cycle_of(in);
  return activity_of(in, c, floor_div(clamp_time(t_ms), 1000));
}

std::int64_t activity_integral(const ActivityInput& in, std::int64_t t0_ms, std::int64_t t1_ms) {
  return integral_of(in, cycle_of(in), clamp_time(t0_ms), clamp_time(t1_ms));
}

double energy_mj(const GpuModelSpec& gpu, std::int64_t duration_ms, double activity_bp_ms) {
  return gpu.idle_w * static_cast<double>(duration_ms) + (gpu.tdp_w - gpu.idle_w) * activity_bp_ms / kFull;
}

GpuSample sample(const GpuModelSpec& gpu, const ActivityInput& in, std::int64_t t_ms, const EnergyBase& energy) {
  t_ms = clamp_time(t_ms);
  const Cycle c = cycle_of(in);
  const std::int64_t k = floor_div(t_ms, 1000);
  const Phase& phase = phase_at(c, elapsed_s(in, k));
  const int a = phase.level_bp + jitter_at(in, c, k);
  GpuSample s;
  fill_device_fields(s, gpu, a);
  s.mem_copy_util_pct = std::min(100, phase.copy_pct + (c.copy_per_activity_pct * a + 5000) / 10000);
  s.tensor_active = c.tensor_permille * a / 1e7;
  s.dram_active = c.dram_permille * a / 1e7 + phase.copy_pct / 200.0;
  fill_framebuffer(s, gpu, held_at(gpu, in, k));
  const std::int64_t since = clamp_time(energy.since_ms);
  s.energy_mj = energy.mj;
  if (t_ms > since) s.energy_mj += energy_mj(gpu, t_ms - since, static_cast<double>(integral_of(in, c, since, t_ms)));
  return s;
}

// ---- MIG -----------------------------------------------------------------------------------

GpuSample mig_parent_sample(const GpuModelSpec& gpu, std::span<const MigPart> parts, int total_slices,
                            std::int64_t t_ms, const EnergyBase& energy) {
  t_ms = clamp_time(t_ms);
  const int total = std::max(1, total_slices);
  const std::int64_t since = clamp_time(energy.since_ms);
  std::int64_t weighted = 0;       // Σ slices × a at t
  double weighted_integral = 0;    // Σ slices × activity integral over [since, t)
  std::int64_t used = gpu.reserved_mib;
  int copy = 0;
  for (const MigPart& part : parts) {
    const GpuModelSpec slice = mig_instance_spec(gpu, part.memory_mib);
    const GpuSample s = sample(slice, part.input, t_ms);
    const int slices = std::clamp(part.compute_slices, 0, total);
    weighted += static_cast<std::int64_t>(slices) * s.activity_bp;
    copy += slices * s.mem_copy_util_pct;
    used += s.fb_used_mib;
    if (t_ms > since) weighted_integral += slices * static_cast<double>(activity_integral(part.input, since, t_ms));
  }
  const int a = static_cast<int>(std::min<std::int64_t>(kFull, (weighted + total / 2) / total));
  GpuSample s;
  fill_device_fields(s, gpu, a);
  // Power from the unrounded mean, so that the energy is exactly its integral.
  s.power_w = gpu.idle_w + (gpu.tdp_w - gpu.idle_w) * static_cast<double>(weighted) / (10000.0 * total);
  s.mem_copy_util_pct = std::min(100, (copy + total / 2) / total);
  s.fb_used_mib = std::min(used, gpu.fb_total_mib);
  s.fb_free_mib = std::max<std::int64_t>(0, gpu.fb_total_mib - s.fb_used_mib);
  s.energy_mj = energy.mj;
  if (t_ms > since) s.energy_mj += energy_mj(gpu, t_ms - since, weighted_integral / total);
  return s;
}

GpuSample with_device_fields_of(GpuSample instance, const GpuSample& parent) {
  instance.power_w = parent.power_w;
  instance.power_limit_w = parent.power_limit_w;
  instance.temperature_c = parent.temperature_c;
  instance.sm_clock_mhz = parent.sm_clock_mhz;
  instance.energy_mj = parent.energy_mj;
  return instance;
}

}  // namespace gpubank::twin::telemetry
