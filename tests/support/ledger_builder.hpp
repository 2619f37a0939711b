// Builds ledger entries for tests, numbering them 1, 2, 3, ... as the store would.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bank/audit.hpp"
#include "bank/ledger.hpp"

namespace gpubank::testing {

class LedgerBuilder {
 public:
  std::string pool = "p";
  std::string flavor = "h100";
  std::vector<bank::LedgerEntry> entries;

  bank::LedgerEntry& quota(std::int64_t t, const std::string& group, std::int64_t guaranteed,
                           std::int64_t lending_limit = -1, std::int64_t borrowing_limit = -1,
                           const std::string& reason = "Policy") {
    bank::LedgerEntry e = base(t, bank::LedgerKind::QuotaSet, group);
    e.flavor.clear();
    e.gpus = guaranteed;
    e.lending_limit = lending_limit;
    e.borrowing_limit = borrowing_limit;
    e.reason = reason;
    return add(std::move(e));
  }
  bank::LedgerEntry& start(std::int64_t t, const std::string& group, const std::string& workload, std::int64_t gpus) {
    bank::LedgerEntry e = base(t, bank::LedgerKind::UsageStarted, group);
    e.workload = workload;
    e.gpus = gpus;
    return add(std::move(e));
  }
  bank::LedgerEntry& end(std::int64_t t, const std::string& group, const std::string& workload, std::int64_t gpus,
                         const std::string& reason = "Finished") {
    bank::LedgerEntry e = base(t, bank::LedgerKind::UsageEnded, group);
    e.workload = workload;
    e.gpus = gpus;
    e.reason = reason;
    return add(std::move(e));
  }
  bank::LedgerEntry& open(std::int64_t t, const std::string& record, const std::string& lender,
                          const std::string& borrower, const std::string& workload, std::int64_t gpus) {
    bank::LedgerEntry e = base(t, bank::LedgerKind::BorrowOpened, borrower);
    e.lender = lender;
    e.workload = workload;
    e.record = record;
    e.gpus = gpus;
    return add(std::move(e));
  }
  bank::LedgerEntry& close(std::int64_t t, const std::string& record, const std::string& lender,
                           const std::string& borrower, const std::string& workload, std::int64_t gpus,
                           const std::string& reason = "Finished") {
    bank::LedgerEntry e = base(t, bank::LedgerKind::BorrowClosed, borrower);
    e.lender = lender;
    e.workload = workload;
    e.record = record;
    e.gpus = gpus;
    e.reason = reason;
    return add(std::move(e));
  }

 private:
  bank::LedgerEntry base(std::int64_t t, bank::LedgerKind kind, const std::string& group) const {
    bank::LedgerEntry e;
    e.seq = static_cast<std::int64_t>(entries.size()) + 1;
    e.time_ms = t;
    e.kind = kind;
    e.pool = pool;
    e.flavor = flavor;
    e.business_group = group;
    return e;
  }
  bank::LedgerEntry& add(bank::LedgerEntry e) {
    entries.push_back(std::move(e));
    return entries.back();
  }
};

inline bank::AuditEntry audit_entry(std::int64_t t, const std::string& object, const std::string& decision = "Admitted",
                                    const std::string& numbers = R"({"requested":4,"available":8})") {
  bank::AuditEntry e;
  e.time_ms = t;
  e.actor = "gpubank-bank";
  e.action = "Admitted";
  e.object = object;
  e.policy_version = "sha256:0123abcd";
  e.decision = decision;
  e.reason = "4 GPUs requested, 8 available within the guarantee";
  e.numbers = numbers;
  return e;
}

}  // namespace gpubank::testing
