// An append-only JSON-lines audit log that loses nothing it acknowledged. append()
// returns only after the line is on disk (fdatasync); concurrent appends share one sync
// (group commit), so durability costs one disk flush per batch, not per decision. On
// open, a torn last line left by a crash (never acknowledged) is cut off.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include <nlohmann/json.hpp>

#include "core/expected.hpp"

namespace gpubank::api {

class AuditLog {
 public:
  static Expected<std::unique_ptr<AuditLog>> open(const std::string& path);
  ~AuditLog();
  AuditLog(const AuditLog&) = delete;
  AuditLog& operator=(const AuditLog&) = delete;

  // Appends one entry as a single line. An error means the entry may not be durable;
  // after a write error the log refuses further appends (fail closed).
  Expected<bool> append(const nlohmann::ordered_json& entry);

  [[nodiscard]] const std::string& path() const { return path_; }

 private:
  AuditLog(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}

  std::string path_;
  int fd_;
  std::mutex mu_;
  std::condition_variable flushed_;
  std::string pending_;
  std::uint64_t appended_ = 0;  // sequence of the last appended entry
  std::uint64_t durable_ = 0;   // sequence of the last entry on disk
  bool flushing_ = false;
  std::string broken_;          // the write error that closed the log, if any
};

}  // namespace gpubank::api
