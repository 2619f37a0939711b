// Resuming `gpubank up --data-dir` on the store of an earlier, interrupted start of the same
// run. The run is a pure function of its inputs, so a restart re-runs it from virtual time 0
// and regenerates, in order, the entries the store already holds. ReplayWriter is that
// run's RunOptions::on_instant: each regenerated entry whose seq the store already holds is
// compared with the stored one on its content fields (never on what the store assigns:
// seq, the audit chain's hashes, any column a later schema adds); one that differs stops the
// run (the store belongs to another run), naming its seq. Entries beyond the stored head are
// appended as a first start would; as a store is written an instant at a time, new entries
// in one log while the other still has stored entries to come are a difference too. How far the earlier start's clock got does not matter:
// the store's own head is where the replay must reach, whatever was or was not saved before
// a SIGKILL.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "bank/audit.hpp"
#include "bank/ledger.hpp"
#include "core/expected.hpp"
#include "policy/policy_set.hpp"
#include "store/store.hpp"

namespace gpubank::twin::live {

// What the run records as its policies' version (run::RunResult::policy_version, in every
// audit entry), known before a run starts: `gpubank up` refuses a data directory of other
// policies before anything is appended to its store.
[[nodiscard]] std::string policy_version(const policy::PolicySet& policies);

// The first content field on which two entries differ, as "<field>: stored <a>, replayed
// <b>"; empty when they are the same run's entry. Ledger: timeMs, kind, pool, flavor,
// businessGroup, lender, workload, record, gpus, lendingLimit, borrowingLimit, reason.
// Audit: timeMs, actor, action, object, policyVersion, decision, reason, numbers.
[[nodiscard]] std::string ledger_difference(const bank::LedgerEntry& stored, const bank::LedgerEntry& replayed);
[[nodiscard]] std::string audit_difference(const bank::AuditEntry& stored, const bank::AuditEntry& replayed);

class ReplayWriter {
 public:
  // Reads the store's head; the stored entries themselves are read in pages as the replay
  // reaches them. The store must outlive the writer.
  static Expected<std::unique_ptr<ReplayWriter>> open(store::Store& store, std::size_t page = 10'000);

  // RunOptions::on_instant: checks what the store holds, appends the rest (one transaction
  // per store::kMaxBatch entries). Errors: a difference (then mismatch() is set), a store
  // that cannot be read or written.
  Expected<bool> operator()(std::span<const bank::LedgerEntry> ledger, std::span<const bank::AuditEntry> audit);

  // The entries the store held when opened.
  [[nodiscard]] std::int64_t stored_ledger() const { return stored_ledger_; }
  [[nodiscard]] std::int64_t stored_audit() const { return stored_audit_; }
  // The entries the run has made so far (checked or appended).
  [[nodiscard]] std::int64_t replayed_ledger() const { return replayed_ledger_; }
  [[nodiscard]] std::int64_t replayed_audit() const { return replayed_audit_; }
  // The run has regenerated (and matched) everything the store held.
  [[nodiscard]] bool caught_up() const {
    return replayed_ledger_ >= stored_ledger_ && replayed_audit_ >= stored_audit_;
  }
  // The first difference, "the store's <ledger|audit> entry <seq> differs from this run's:
  // <field>: stored ..., replayed ..."; empty while none was found.
  [[nodiscard]] const std::string& mismatch() const { return mismatch_; }

 private:
  ReplayWriter(store::Store& store, std::size_t page) : store_(store), page_(page) {}
  // A page of stored entries, from seq `first`.
  template <class Entry>
  struct Page {
    std::vector<Entry> entries;
    std::int64_t first = 1;
  };
  // The stored entry with this seq (1-based) of one log (`read` is Store::ledger or
  // Store::audit), reading its page when needed.
  template <class Entry, class Read>
  Expected<const Entry*> stored_entry(Page<Entry>& page, std::int64_t seq, Read read, const char* log,
                                      std::int64_t head);

  store::Store& store_;
  std::size_t page_;
  std::int64_t stored_ledger_ = 0, stored_audit_ = 0;
  std::int64_t replayed_ledger_ = 0, replayed_audit_ = 0;
  Page<bank::LedgerEntry> ledger_page_;
  Page<bank::AuditEntry> audit_page_;
  std::string mismatch_;
};

}  // namespace gpubank::twin::live
