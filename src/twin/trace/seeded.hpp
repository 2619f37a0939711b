// Seeded, portable hashing for the trace mappings: every "random" choice of a mapping is
// a function of (seed, stable key), so the same inputs and seed give the same scenario
// byte for byte on every standard library, and a pod's choices do not move when other
// pods are added to or removed from the trace.
#pragma once

#include <cstdint>
#include <string_view>

#include "core/fnv1a.hpp"

namespace gpubank::twin::trace {

// splitmix64's finaliser (Steele, Lea, Flood 2014): a bijective 64-bit mixer.
[[nodiscard]] constexpr std::uint64_t mix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// FNV-1a over the bytes of `text`, then mixed: a stable hash of a name.
[[nodiscard]] constexpr std::uint64_t hash_text(std::string_view text) { return mix64(fnv1a64(text)); }

// The hash of (seed, purpose, key, index): `purpose` keeps the draws of different rules
// (group, checkpointable, jitter, ...) independent of each other.
[[nodiscard]] constexpr std::uint64_t seeded_hash(std::uint64_t seed, std::string_view purpose, std::string_view key,
                                                  std::uint64_t index = 0) {
  return mix64(mix64(mix64(seed ^ hash_text(purpose)) ^ hash_text(key)) ^ mix64(index));
}

// The hash of (seed, purpose, three integers), for rules keyed by positions (hour, request
// index, copy) rather than names.
[[nodiscard]] constexpr std::uint64_t seeded_hash(std::uint64_t seed, std::string_view purpose, std::uint64_t a,
                                                  std::uint64_t b, std::uint64_t c) {
  return mix64(mix64(mix64(mix64(seed ^ hash_text(purpose)) ^ a) ^ b) ^ c);
}

// A draw in [0, bound) from a 64-bit hash (bound > 0). Plain modulo: its bias is at most
// bound / 2^64, far below anything a test or a replay can see.
[[nodiscard]] constexpr std::uint64_t below(std::uint64_t hash, std::uint64_t bound) { return hash % bound; }

// A draw in [0, 1) with 53 bits, exact in a double.
[[nodiscard]] constexpr double unit_interval(std::uint64_t hash) {
  return static_cast<double>(hash >> 11) * (1.0 / 9007199254740992.0);
}

}  // namespace gpubank::twin::trace
