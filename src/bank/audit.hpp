// PLACEHOLDER until the bank-store branch lands (it owns this header).
#pragma once

#include <cstdint>
#include <string>

namespace gpubank::bank {
struct AuditEntry {
  std::int64_t seq = 0;
  std::int64_t time_ms = 0;
  std::string actor;
  std::string action;
  std::string object;
  std::string policy_version;
  std::string decision;
  std::string reason;
  std::string numbers;
  std::string prev_hash;
  std::string hash;
};
}  // namespace gpubank::bank
