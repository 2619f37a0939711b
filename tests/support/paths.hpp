// Where tests find the repository and ../shared: from the environment CTest sets, never
// from the working directory.
#pragma once

#include <cstdlib>
#include <string>

namespace gpubank::testing {

inline std::string env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : fallback;
}

// The defaults are the configure-time paths, for runs outside CTest (test discovery, a
// developer running one binary by hand).
inline std::string source_dir() { return env_or("GPUBANK_SOURCE_DIR", GPUBANK_DEFAULT_SOURCE_DIR); }
inline std::string shared_dir() { return env_or("GPUBANK_SHARED_DIR", GPUBANK_DEFAULT_SOURCE_DIR "/../shared"); }
inline std::string binary_dir() { return env_or("GPUBANK_BINARY_DIR", GPUBANK_DEFAULT_BINARY_DIR); }
inline std::string examples_dir() { return source_dir() + "/examples"; }

}  // namespace gpubank::testing
