// Golden files: a test compares what it produces with a committed file. A deliberate change
// rewrites the files when the test runs with GPUBANK_UPDATE_GOLDEN=1; the diff is then
// reviewed like any other change.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

namespace gpubank::testing {

inline bool updating_golden_files() {
  const char* v = std::getenv("GPUBANK_UPDATE_GOLDEN");
  return v != nullptr && std::string(v) == "1";
}

// The whole file, byte for byte; nullopt when it cannot be read.
inline std::optional<std::string> read_golden_file(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

inline void write_golden_file(const std::filesystem::path& file, const std::string& text) {
  std::filesystem::create_directories(file.parent_path());
  std::ofstream(file, std::ios::binary) << text;
}

}  // namespace gpubank::testing
