// PLACEHOLDER until the bank-store branch lands (it owns this header): the ledger entry
// type as agreed, so that the twin's run engine can produce entries.
#pragma once

#include <cstdint>
#include <string>

namespace gpubank::bank {
enum class LedgerKind { QuotaSet, UsageStarted, UsageEnded, BorrowOpened, BorrowClosed };
struct LedgerEntry {
  std::int64_t seq = 0;
  std::int64_t time_ms = 0;
  LedgerKind kind{};
  std::string pool;
  std::string flavor;
  std::string business_group;
  std::string lender;
  std::string workload;
  std::string record;
  std::int64_t gpus = 0;
  std::int64_t lending_limit = -1;
  std::int64_t borrowing_limit = -1;
  std::string reason;
};
}  // namespace gpubank::bank
