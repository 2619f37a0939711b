// Running the real promtool from tests: finding it on PATH, running a command line in a
// directory, scratch directories and whole-file reads and writes. Tests that need promtool
// fail (not skip) when it is missing: scripts/bootstrap.sh installs Debian's prometheus.
#pragma once

#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>

#include "support/process.hpp"

namespace gpubank::testing {

namespace fs = std::filesystem;

// promtool from PATH (scripts/bootstrap.sh installs Debian's prometheus package), or
// nothing.
inline std::optional<fs::path> find_promtool() { return find_on_path("promtool"); }

inline constexpr const char* kPromtoolMissing =
    "promtool is not on PATH: install the prometheus package (scripts/bootstrap.sh does) so that rules and "
    "exposition text can be checked";

struct RunResult {
  int status = -1;  // the exit status, or -1 when the command did not exit normally
  std::string output;  // stdout and stderr
};

// Runs a shell command line in a directory.
inline RunResult run_in(const fs::path& dir, const std::string& command) {
  RunResult r;
  const std::string line = "cd '" + dir.string() + "' && " + command + " 2>&1";
  FILE* pipe = popen(line.c_str(), "r");
  if (pipe == nullptr) return r;
  std::array<char, 4096> buffer{};
  std::size_t n = 0;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) r.output.append(buffer.data(), n);
  const int raw = pclose(pipe);
  if (raw != -1 && WIFEXITED(raw)) r.status = WEXITSTATUS(raw);
  return r;
}

// A fresh directory under the system's temporary directory, removed with its contents.
class ScratchDir {
 public:
  ScratchDir() {
    std::string pattern = (fs::temp_directory_path() / "gpubank-promtool-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  [[nodiscard]] const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

inline void write_file(const fs::path& file, const std::string& text) {
  std::ofstream out(file, std::ios::binary);
  out << text;
}

inline std::string read_file(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace gpubank::testing
