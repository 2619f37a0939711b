// 64-bit FNV-1a: a hash of text that is the same on every platform and standard library
// (std::hash is not), for seeds per name and for Kueue's hashResourceName.
#pragma once

#include <cstdint>
#include <string_view>

namespace gpubank {

inline constexpr std::uint64_t kFnv1aOffsetBasis = 0xcbf29ce484222325ULL;

// FNV-1a over the bytes of `text`, continuing from `h` (the offset basis for a fresh hash).
[[nodiscard]] constexpr std::uint64_t fnv1a64(std::string_view text, std::uint64_t h = kFnv1aOffsetBasis) {
  for (const char c : text) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  return h;
}

}  // namespace gpubank
