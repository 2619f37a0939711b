// The activity profiles: exact values at chosen times, worked out here from the formulas of
// docs/twin-telemetry.md (the hashes recomputed with the public splitmix64), determinism,
// the energy integral against a second-by-second sum, MIG.
#include "twin/telemetry/profile.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

namespace gpubank::twin::telemetry {
namespace {

// ---- the documented formulas, restated --------------------------------------------------------

std::int64_t pick(std::uint64_t h, std::int64_t lo, std::int64_t hi) {
  return lo + static_cast<std::int64_t>(((h >> 32) * static_cast<std::uint64_t>(hi - lo + 1)) >> 32);
}

std::uint64_t rhythm(const ActivityInput& in, std::uint64_t salt) {
  return splitmix64(splitmix64(in.seed ^ in.workload_key) + salt);
}

// Jitter of second k (k >= 0 here): +J in even, -J in odd seconds, J per pair k / 2.
int jitter(const ActivityInput& in, std::int64_t k, int amplitude) {
  const std::uint64_t h =
      splitmix64(splitmix64(in.seed ^ in.device_key ^ 0x6a09e667f3bcc908ULL) + static_cast<std::uint64_t>(k / 2));
  const int j = static_cast<int>(pick(h, -amplitude, amplitude));
  return k % 2 == 0 ? j : -j;
}

ActivityInput input(Profile p) {
  ActivityInput in;
  in.profile = p;
  in.seed = 42;
  in.device_key = device_key("node-7", 3);
  in.workload_key = workload_key("team-a/llama-finetune");
  in.start_ms = 100'500;  // not on a second: phases count from second 100
  return in;
}

const GpuModelSpec& h100() { return gpu_model_spec("NVIDIA H100 80GB HBM3"); }
const GpuModelSpec& h200() { return gpu_model_spec("NVIDIA H200"); }

// Σ a_k × overlap, second by second: the definition the closed form must match.
std::int64_t brute_integral(const ActivityInput& in, std::int64_t t0, std::int64_t t1) {
  std::int64_t sum = 0;
  for (std::int64_t k = t0 / 1000; k * 1000 < t1; ++k) {
    const std::int64_t from = std::max(t0, k * 1000);
    const std::int64_t to = std::min(t1, (k + 1) * 1000);
    if (to > from) sum += activity_bp(in, k * 1000) * (to - from);
  }
  return sum;
}

// ---- GPU models ------------------------------------------------------------------------------------

TEST(GpuModels, NamesFindTheirSpec) {
  EXPECT_EQ(gpu_model_spec("NVIDIA H100 80GB HBM3").key, "H100");
  EXPECT_EQ(gpu_model_spec("NVIDIA-H200").key, "H200");  // GPU Feature Discovery's spelling
  EXPECT_EQ(gpu_model_spec("nvidia a100-sxm4-80gb").key, "A100");
  EXPECT_EQ(gpu_model_spec("L40S").key, "L40S");
  EXPECT_EQ(gpu_model_spec("Tesla-T4").key, "generic");
  EXPECT_EQ(gpu_model_spec("").key, "generic");
  // The measured H200 (node-apis.md): 78.97 W and 615 MiB at idle, 143,771 MiB in all.
  EXPECT_EQ(h200().idle_w, 78.97);
  EXPECT_EQ(h200().reserved_mib, 615);
  EXPECT_EQ(h200().fb_total_mib, 143771);
  EXPECT_EQ(h100().tdp_w, 700);
  EXPECT_EQ(h100().idle_w, 70);
  EXPECT_EQ(gpu_model_spec("A100").tdp_w, 400);
  EXPECT_EQ(gpu_model_spec("L40S").idle_w, 35);
  EXPECT_EQ(gpu_model_specs().size(), 5u);
  EXPECT_EQ(gpu_model_specs().back().key, "generic");
}

// ---- idle ------------------------------------------------------------------------------------------

TEST(Profiles, IdleIsTheMeasuredH200AtRest) {
  const ActivityInput in = input(Profile::idle);
  for (const std::int64_t t : {0LL, 999LL, 123'456'789LL}) {
    const GpuSample s = sample(h200(), in, t);
    EXPECT_EQ(s.activity_bp, 0);
    EXPECT_EQ(s.gpu_util_pct, 0);
    EXPECT_EQ(s.mem_copy_util_pct, 0);
    EXPECT_EQ(s.power_w, 78.97);
    EXPECT_EQ(s.fb_used_mib, 615);
    EXPECT_EQ(s.fb_free_mib, 143771 - 615);
    EXPECT_EQ(s.temperature_c, 35);
    EXPECT_EQ(s.sm_clock_mhz, 345);
    EXPECT_EQ(s.gr_engine_active, 0);
  }
  // 2.5 s of idle: 78.97 W × 2,500 ms = 197,425 mJ.
  EXPECT_DOUBLE_EQ(sample(h200(), in, 2'500).energy_mj, 197'425);
}

// ---- training ----------------------------------------------------------------------------------------

TEST(Profiles, TrainingIsBusyWithPeriodicDataLoadingDips) {
  const ActivityInput in = input(Profile::training);
  const std::int64_t period = 60 * pick(rhythm(in, 1), 5, 15);
  const std::int64_t dip = pick(rhythm(in, 2), 20, 120);
  const int level = static_cast<int>(pick(rhythm(in, 3), 8800, 9500));
  ASSERT_GE(period, 300);
  ASSERT_LE(period, 900);
  ASSERT_GE(level, 8800);
  ASSERT_LE(level, 9500);
  // Second 100 is the first of the workload (start 100.5 s). Busy from elapsed second 0 to
  // period - dip - 1, then the dip, then busy again.
  const std::int64_t busy_k = 100 + 7;
  const std::int64_t dip_k = 100 + (period - dip) + 1;
  const std::int64_t next_k = 100 + period + 2;
  for (const auto& [k, base] : std::vector<std::pair<std::int64_t, int>>{{busy_k, level}, {dip_k, 2000}, {next_k, level}}) {
    const int a = base + jitter(in, k, 300);
    const GpuSample s = sample(h100(), in, k * 1000 + 250);
    EXPECT_EQ(s.activity_bp, a) << "second " << k;
    EXPECT_EQ(s.gpu_util_pct, (a + 50) / 100);
    EXPECT_EQ(s.mem_copy_util_pct, (40 * a + 5000) / 10000);
    EXPECT_DOUBLE_EQ(s.gr_engine_active, a / 10000.0);
    EXPECT_DOUBLE_EQ(s.tensor_active, 600 * a / 1e7);
    EXPECT_DOUBLE_EQ(s.dram_active, 450 * a / 1e7);
    EXPECT_DOUBLE_EQ(s.power_w, 70 + 630 * a / 10000.0);
    EXPECT_EQ(s.power_limit_w, 700);
    EXPECT_EQ(s.temperature_c, 30 + (42 * a + 5000) / 10000);
    EXPECT_EQ(s.sm_clock_mhz, 1980);
  }
  // Memory: 90 % of (81,559 - 512) MiB once warm, ramping over the first minute.
  const double held = std::floor(0.9 * (81559 - 512));
  EXPECT_EQ(sample(h100(), in, (100 + 90) * 1000).fb_used_mib, 512 + static_cast<std::int64_t>(held));
  EXPECT_EQ(sample(h100(), in, (100 + 30) * 1000).fb_used_mib, 512 + static_cast<std::int64_t>(std::floor(held * 30 / 60)));
  EXPECT_EQ(sample(h100(), in, (100 + 90) * 1000).fb_free_mib, 81559 - 512 - static_cast<std::int64_t>(held));
  // The caller may say how much it holds.
  ActivityInput fixed = in;
  fixed.held_mib = 40'000;
  EXPECT_EQ(sample(h100(), fixed, (100 + 600) * 1000).fb_used_mib, 40'512);
}

TEST(Profiles, JitterCancelsOverEachPairOfSeconds) {
  const ActivityInput in = input(Profile::training);
  const int level = static_cast<int>(pick(rhythm(in, 3), 8800, 9500));
  int differing = 0;
  for (std::int64_t k = 110; k < 150; k += 2) {  // within the first busy phase (>= 240 s)
    const int even = activity_bp(in, k * 1000);
    const int odd = activity_bp(in, k * 1000 + 1000);
    EXPECT_EQ(even + odd, 2 * level) << k;
    EXPECT_LE(std::abs(even - level), 300);
    if (even != level) ++differing;
  }
  EXPECT_GT(differing, 10);  // the jitter is there
}

// ---- batch, notebook ---------------------------------------------------------------------------------

TEST(Profiles, BatchCyclesThroughLoadComputeWrite) {
  const ActivityInput in = input(Profile::batch);
  const std::int64_t load = pick(rhythm(in, 1), 60, 180);
  const std::int64_t compute = pick(rhythm(in, 2), 600, 1800);
  const std::int64_t write = pick(rhythm(in, 3), 60, 120);
  struct Expect {
    std::int64_t elapsed;
    int base;
    int copy;
  };
  for (const Expect& e : {Expect{0, 1000, 35}, Expect{load - 1, 1000, 35}, Expect{load, 9000, 0},
                          Expect{load + compute + 3, 500, 25}, Expect{load + compute + write, 1000, 35},
                          Expect{2 * (load + compute + write) + load + 10, 9000, 0}}) {
    const std::int64_t k = 100 + e.elapsed;
    const int a = e.base + jitter(in, k, 300);
    const GpuSample s = sample(h100(), in, k * 1000);
    EXPECT_EQ(s.activity_bp, a) << "elapsed " << e.elapsed;
    EXPECT_EQ(s.mem_copy_util_pct, e.copy + (50 * a + 5000) / 10000);
    EXPECT_DOUBLE_EQ(s.dram_active, 500 * a / 1e7 + e.copy / 200.0);
    EXPECT_EQ(s.fb_used_mib, 512 + static_cast<std::int64_t>(std::floor(0.6 * (81559 - 512))));
  }
}

TEST(Profiles, NotebookIsMostlyIdleWithShortBursts) {
  const ActivityInput in = input(Profile::notebook);
  const std::int64_t period = pick(rhythm(in, 1), 300, 1200);
  const std::int64_t burst = pick(rhythm(in, 2), 10, 60);
  const int level = static_cast<int>(pick(rhythm(in, 3), 3000, 7000));
  const std::int64_t offset = pick(rhythm(in, 4), 0, period - burst);
  // Over three periods: exactly `burst` busy seconds per period, the rest at 2 % ± 2 %.
  std::int64_t busy = 0;
  for (std::int64_t e = 0; e < 3 * period; ++e) {
    const std::int64_t k = 100 + e;
    const bool in_burst = e % period >= offset && e % period < offset + burst;
    const int a = activity_bp(in, k * 1000);
    EXPECT_EQ(a, (in_burst ? level : 200) + jitter(in, k, 200)) << e;
    if (a > 400) ++busy;
  }
  EXPECT_EQ(busy, 3 * burst);
  // Memory held all along: 30 % of the H100's.
  EXPECT_EQ(sample(h100(), in, 100'000 + 5'000).fb_used_mib, 512 + static_cast<std::int64_t>(std::floor(0.3 * 81047)));
}

// ---- inference, loading, checkpointing -------------------------------------------------------------------

TEST(Profiles, InferenceFollowsTheLoadAndHoldsWeightsPlusKvCache) {
  ActivityInput in = input(Profile::inference);
  in.weights_mib = 30'000;
  in.kv_cache_mib = 12'345.6;
  for (const double load : {0.0, 0.25, 1.0}) {
    in.load = load;
    const int level = 500 + static_cast<int>(std::lround(9000 * load));  // 500, 2750, 9500
    const std::int64_t k = 5'000;
    EXPECT_EQ(activity_bp(in, k * 1000), level + jitter(in, k, 300));
    EXPECT_EQ(activity_bp(in, k * 1000) + activity_bp(in, (k + 1) * 1000), 2 * level);
    const GpuSample s = sample(h100(), in, k * 1000);
    EXPECT_EQ(s.fb_used_mib, 512 + 30'000 + 12'345);
    EXPECT_DOUBLE_EQ(s.tensor_active, 350 * s.activity_bp / 1e7);
  }
  // Out-of-range loads are clamped, NaN reads as idle load.
  in.load = 7;
  EXPECT_EQ(activity_bp(in, 0) + activity_bp(in, 1000), 2 * 9500);
  in.load = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(activity_bp(in, 0) + activity_bp(in, 1000), 2 * 500);
  // Weights beyond the device fill it, no more.
  in.weights_mib = 1e300;
  EXPECT_EQ(sample(h100(), in, 0).fb_used_mib, 81559);
  EXPECT_EQ(sample(h100(), in, 0).fb_free_mib, 0);
}

TEST(Profiles, LoadingRampsMemoryAndCheckpointingCopies) {
  ActivityInput loading = input(Profile::loading);
  loading.held_mib = 60'000;
  // Two minutes of ramp from the first whole second (100): 45 s in, 60,000 × 45 / 120.
  EXPECT_EQ(sample(h100(), loading, 145'000).fb_used_mib, 512 + 22'500);
  EXPECT_EQ(sample(h100(), loading, 400'000).fb_used_mib, 512 + 60'000);
  const GpuSample l = sample(h100(), loading, 145'000);
  EXPECT_EQ(l.activity_bp, 500 + jitter(loading, 145, 200));
  EXPECT_EQ(l.mem_copy_util_pct, 30);
  EXPECT_DOUBLE_EQ(l.tensor_active, 0);

  ActivityInput checkpoint = input(Profile::checkpointing);
  const GpuSample c = sample(h100(), checkpoint, 777'000);
  EXPECT_EQ(c.activity_bp, 500 + jitter(checkpoint, 777, 200));
  EXPECT_EQ(c.mem_copy_util_pct, 40);
  EXPECT_DOUBLE_EQ(c.dram_active, 300 * c.activity_bp / 1e7 + 0.2);
  EXPECT_EQ(c.fb_used_mib, 512 + static_cast<std::int64_t>(std::floor(0.9 * 81047)));
}

TEST(Profiles, EveryLevelLeavesRoomForTheJitter) {
  // a_k stays within 0..10,000 without clamping (what makes the jitter cancel exactly).
  for (const Profile p : {Profile::idle, Profile::training, Profile::batch, Profile::notebook, Profile::inference,
                          Profile::loading, Profile::checkpointing}) {
    for (std::uint64_t w = 0; w < 20; ++w) {
      ActivityInput in = input(p);
      in.workload_key = workload_key("w" + std::to_string(w));
      in.load = static_cast<double>(w % 5) / 4;
      for (std::int64_t k = 0; k < 4000; k += 7) {
        const int a = activity_bp(in, k * 1000);
        ASSERT_GE(a, 0) << to_string(p);
        ASSERT_LE(a, 10000) << to_string(p);
      }
    }
  }
}

// ---- determinism -------------------------------------------------------------------------------------------

TEST(Profiles, TheSameIdsAndTimeGiveTheSameSample) {
  const ActivityInput in = input(Profile::training);
  const GpuSample a = sample(h100(), in, 3'600'123, {1000, 5});
  const GpuSample b = sample(h100(), in, 3'600'123, {1000, 5});
  EXPECT_EQ(a.activity_bp, b.activity_bp);
  EXPECT_EQ(a.power_w, b.power_w);
  EXPECT_EQ(a.energy_mj, b.energy_mj);
  EXPECT_EQ(a.fb_used_mib, b.fb_used_mib);
  // Another device, seed or workload changes the sequence somewhere in ten minutes.
  auto differs = [&](ActivityInput other) {
    for (std::int64_t k = 200; k < 800; ++k) {
      if (activity_bp(other, k * 1000) != activity_bp(in, k * 1000)) return true;
    }
    return false;
  };
  ActivityInput other = in;
  other.device_key = device_key("node-7", 4);
  EXPECT_TRUE(differs(other));
  other = in;
  other.seed = 43;
  EXPECT_TRUE(differs(other));
  other = in;
  other.workload_key = workload_key("team-b/other");
  EXPECT_TRUE(differs(other));
  // Ids are stable functions of their text.
  EXPECT_EQ(device_key("node-7", 3), device_key("node-7", 3));
  EXPECT_NE(device_key("node-7", 3), device_key("node-7", 3, 0));
  EXPECT_NE(device_key("node-7", 3), device_key("node-73", 3));
  EXPECT_EQ(splitmix64(0), 0xe220a8397b1dcdafULL);  // the reference splitmix64's first output for seed 0
}

// ---- energy ---------------------------------------------------------------------------------------------------

TEST(Energy, TheClosedFormEqualsTheSumSecondBySecond) {
  std::uint64_t h = 1;
  for (const Profile p : {Profile::idle, Profile::training, Profile::batch, Profile::notebook, Profile::inference,
                          Profile::loading, Profile::checkpointing}) {
    ActivityInput in = input(p);
    in.load = 0.6;
    for (int i = 0; i < 40; ++i) {
      h = splitmix64(h);
      const auto t0 = static_cast<std::int64_t>(h % 5'000'000);
      const auto length = static_cast<std::int64_t>(splitmix64(h) % 4'000'000);  // up to 66 minutes
      ASSERT_EQ(activity_integral(in, t0, t0 + length), brute_integral(in, t0, t0 + length))
          << to_string(p) << " [" << t0 << ", " << t0 + length << ")";
    }
    // Within one second, across one boundary, on boundaries.
    EXPECT_EQ(activity_integral(in, 10'100, 10'900), brute_integral(in, 10'100, 10'900));
    EXPECT_EQ(activity_integral(in, 10'100, 11'900), brute_integral(in, 10'100, 11'900));
    EXPECT_EQ(activity_integral(in, 10'000, 14'000), brute_integral(in, 10'000, 14'000));
    EXPECT_EQ(activity_integral(in, 11'000, 14'000), brute_integral(in, 11'000, 14'000));
    EXPECT_EQ(activity_integral(in, 5, 5), 0);
    EXPECT_EQ(activity_integral(in, 9, 5), 0);
  }
}

TEST(Energy, WorkedExample) {
  // Inference at load 0.5 on an H100 over seconds 0 and 1 (one jitter pair, which cancels):
  // activity integral 2 × 1,000 ms × 5,000 bp = 10^7; energy 70 W × 2,000 ms +
  // 630 W × 10^7 / 10^4 = 140,000 + 630,000 = 770,000 mJ.
  ActivityInput in = input(Profile::inference);
  in.start_ms = 0;
  in.load = 0.5;
  EXPECT_EQ(activity_integral(in, 0, 2'000), 10'000'000);
  EXPECT_DOUBLE_EQ(sample(h100(), in, 2'000).energy_mj, 770'000);
  // From a base: the counter was 5 J at 1 s; then [1 s, 2 s) adds 70,000 + 630 × a_1 / 10.
  const int a1 = activity_bp(in, 1'000);
  EXPECT_DOUBLE_EQ(sample(h100(), in, 2'000, {1'000, 5'000}).energy_mj, 5'000 + 70'000 + 630.0 * a1 * 1000 / 10'000);
  EXPECT_DOUBLE_EQ(energy_mj(h100(), 1000, 0), 70'000);
}

TEST(Energy, TheCounterCarriesAcrossChangesOfInput) {
  // An H200 idle until 30.4 s, training until 2,000.7 s, checkpointing after: at each change
  // the engine stores the counter, then keeps counting from it.
  const ActivityInput idle = input(Profile::idle);
  ActivityInput training = input(Profile::training);
  training.start_ms = 30'400;
  ActivityInput checkpoint = input(Profile::checkpointing);
  checkpoint.start_ms = 2'000'700;
  EnergyBase base;
  base = {30'400, sample(h200(), idle, 30'400, base).energy_mj};
  base = {2'000'700, sample(h200(), training, 2'000'700, base).energy_mj};
  const double at_end = sample(h200(), checkpoint, 2'500'000, base).energy_mj;
  // The same, second by second, in integers: idle_w × ms + range × Σ a × ms / 10^4.
  const std::int64_t activity = brute_integral(idle, 0, 30'400) + brute_integral(training, 30'400, 2'000'700) +
                                brute_integral(checkpoint, 2'000'700, 2'500'000);
  const double expected = 78.97 * 2'500'000 + (700 - 78.97) * static_cast<double>(activity) / 10'000;
  EXPECT_NEAR(at_end, expected, expected * 1e-12);
  // Monotonic through the changes.
  double last = 0;
  for (std::int64_t t = 0; t <= 2'500'000; t += 60'700) {
    const ActivityInput& in = t < 30'400 ? idle : t < 2'000'700 ? training : checkpoint;
    const EnergyBase b = t < 30'400 ? EnergyBase{} : t < 2'000'700 ? EnergyBase{30'400, sample(h200(), idle, 30'400).energy_mj} : base;
    const double now = sample(h200(), in, t, b).energy_mj;
    EXPECT_GE(now, last) << t;
    last = now;
  }
}

TEST(Energy, HostileTimesNeitherOverflowNorCrash) {
  ActivityInput in = input(Profile::training);
  in.start_ms = std::numeric_limits<std::int64_t>::min();
  const std::int64_t all = activity_integral(in, std::numeric_limits<std::int64_t>::min(), std::numeric_limits<std::int64_t>::max());
  EXPECT_GT(all, 0);
  EXPECT_LE(all, std::int64_t{10'000} * 200'000'000'000'000);  // 10^4 bp × 2 × 10^14 ms at most
  const GpuSample s = sample(h100(), in, std::numeric_limits<std::int64_t>::max(), {std::numeric_limits<std::int64_t>::min(), 0});
  EXPECT_TRUE(std::isfinite(s.energy_mj));
  EXPECT_GE(s.activity_bp, 0);
}

// ---- MIG -----------------------------------------------------------------------------------------------------------

TEST(Mig, TheParentIsTheSliceWeightedMeanOfItsInstances) {
  // An H100 in MIG mode: a 3g.40gb instance training, a 1g.10gb serving, three slices unused.
  ActivityInput train = input(Profile::training);
  ActivityInput serve = input(Profile::inference);
  serve.device_key = device_key("node-7", 3, 9);
  serve.load = 0.4;
  serve.weights_mib = 6'000;
  const std::vector<MigPart> parts{{train, 3, 40'192}, {serve, 1, 9'856}};
  const std::int64_t t = 500'300;
  const int a_train = activity_bp(train, t);
  const int a_serve = activity_bp(serve, t);
  const GpuSample parent = mig_parent_sample(h100(), parts, 7, t);
  const std::int64_t weighted = 3 * a_train + a_serve;
  EXPECT_EQ(parent.activity_bp, (weighted + 3) / 7);
  EXPECT_DOUBLE_EQ(parent.power_w, 70 + 630 * static_cast<double>(weighted) / 70'000);
  EXPECT_EQ(parent.sm_clock_mhz, 1980);
  // Framebuffer: the driver's 512 MiB plus each instance's use (no reservation of their own).
  const std::int64_t train_used = static_cast<std::int64_t>(std::floor(0.9 * 40'192));
  EXPECT_EQ(parent.fb_used_mib, 512 + train_used + 6'000);

  // The instance as dcgm-exporter reports it: its own memory and activity, the parent's
  // power, temperature, clock and energy.
  const GpuSample instance =
      with_device_fields_of(sample(mig_instance_spec(h100(), 40'192), train, t), parent);
  EXPECT_EQ(instance.fb_used_mib, train_used);
  EXPECT_EQ(instance.fb_free_mib, 40'192 - train_used);
  EXPECT_EQ(instance.activity_bp, a_train);
  EXPECT_DOUBLE_EQ(instance.gr_engine_active, a_train / 10000.0);
  EXPECT_EQ(instance.power_w, parent.power_w);
  EXPECT_EQ(instance.temperature_c, parent.temperature_c);
  EXPECT_EQ(instance.energy_mj, parent.energy_mj);

  // Energy: exactly the integral of the parent's power, second by second.
  const std::int64_t t0 = 123'456;
  const std::int64_t t1 = 2'345'678;
  double expected = 0;
  for (std::int64_t k = t0 / 1000; k * 1000 < t1; ++k) {
    const std::int64_t overlap = std::min(t1, (k + 1) * 1000) - std::max(t0, k * 1000);
    const double w = 3.0 * activity_bp(train, k * 1000) + activity_bp(serve, k * 1000);
    expected += (70 + 630 * w / 70'000) * static_cast<double>(overlap);
  }
  const double got = mig_parent_sample(h100(), parts, 7, t1, {t0, 0}).energy_mj;
  EXPECT_NEAR(got, expected, expected * 1e-12);
  // No instances: an idle GPU.
  EXPECT_EQ(mig_parent_sample(h100(), {}, 7, t).power_w, 70);
  EXPECT_EQ(mig_parent_sample(h100(), {}, 7, t).sm_clock_mhz, 345);
}

}  // namespace
}  // namespace gpubank::twin::telemetry
