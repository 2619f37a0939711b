// A seeded synthetic request load for the inference tests (splitmix64, no <random>
// distributions: their output differs between standard libraries).
#pragma once

#include <cstdint>
#include <vector>

#include "twin/inference/service.hpp"

namespace gpubank::twin::inference::testing {

inline std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// An integer in [low, high].
inline std::int64_t uniform(std::uint64_t& state, std::int64_t low, std::int64_t high) {
  return low + static_cast<std::int64_t>(splitmix64(state) % static_cast<std::uint64_t>(high - low + 1));
}

// `count` requests with gaps of 0..2*mean_gap_ms ms, prompts and outputs uniform in the ranges.
inline std::vector<Request> random_load(std::uint64_t seed, int count, std::int64_t mean_gap_ms,
                                        std::int32_t max_prompt, std::int32_t max_output) {
  std::vector<Request> out;
  std::int64_t t = 0;
  for (int i = 0; i < count; ++i) {
    t += uniform(seed, 0, 2 * mean_gap_ms);
    out.push_back({t, static_cast<std::int32_t>(uniform(seed, 1, max_prompt)),
                   static_cast<std::int32_t>(uniform(seed, 1, max_output)), static_cast<std::uint64_t>(i)});
  }
  return out;
}

}  // namespace gpubank::twin::inference::testing
