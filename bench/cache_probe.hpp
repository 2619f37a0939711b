// How contended the host's shared cache is right now: the mean latency of a pointer chase
// through a fixed 8 MiB buffer, larger than a core's L2 and smaller than an EPYC L3.
//
// Why: on the shared VM these benchmarks run on, memory-bound code runs up to twice as
// slowly for tens of seconds at a time while ALU-bound code does not slow down at all
// (another tenant thrashing the L3 we share), so a run's absolute latency mixes our code
// with the neighbours'. A benchmark reads the probe next to its own timings, outside them,
// so that each run says how loaded the cache was while it ran.
//
// The chase is one cycle over every slot (Sattolo's shuffle, fixed seed): each load depends
// on the one before, and a prefetcher cannot guess the next address.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

namespace gpubank::bench {

class CacheProbe {
 public:
  static constexpr std::size_t kBytes = std::size_t{8} << 20;
  static constexpr std::size_t kLoads = std::size_t{1} << 20;

  CacheProbe() : next_(kBytes / sizeof(std::uint32_t)) {
    std::iota(next_.begin(), next_.end(), std::uint32_t{0});
    std::mt19937 rng(7);
    for (std::size_t i = next_.size() - 1; i > 0; --i) {
      std::uniform_int_distribution<std::size_t> pick(0, i - 1);  // j < i: one cycle
      std::swap(next_[i], next_[pick(rng)]);
    }
  }

  // Nanoseconds per dependent load, over kLoads loads (a few tens of milliseconds).
  [[nodiscard]] double nanoseconds_per_load() {
    std::uint32_t at = 0;
    for (std::size_t i = 0; i < next_.size() / 8; ++i) at = next_[at];  // bring the buffer in
    const auto start = std::chrono::steady_clock::now();
    for (std::size_t i = 0; i < kLoads; ++i) at = next_[at];
    const auto end = std::chrono::steady_clock::now();
    sink_ = at;
    return std::chrono::duration<double, std::nano>(end - start).count() / static_cast<double>(kLoads);
  }

 private:
  std::vector<std::uint32_t> next_;
  volatile std::uint32_t sink_ = 0;
};

}  // namespace gpubank::bench
