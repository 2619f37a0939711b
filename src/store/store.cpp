#include "store/store.hpp"

#include <algorithm>

#include "store/backends.hpp"

namespace gpubank::store {

bool is_postgres_url(std::string_view location) {
  return location.starts_with("postgres://") || location.starts_with("postgresql://");
}

Expected<std::unique_ptr<Store>> Store::open(const std::string& location, const OpenOptions& options) {
  if (location.empty()) return Unexpected{"store: no location given (a file path or a postgres:// URL)"};
  if (options.migrate_to < 0 || options.migrate_to > kSchemaVersion) {
    return Unexpected{"store: cannot migrate to schema version " + std::to_string(options.migrate_to) +
                      " (this gpubank knows 1 to " + std::to_string(kSchemaVersion) + ")"};
  }
  if (is_postgres_url(location)) return detail::open_postgres(location, options);
  return detail::open_sqlite(location, options);
}

std::optional<std::string> validate_batch(std::span<const bank::LedgerEntry> ledger,
                                          std::span<const bank::AuditEntry> audit) {
  if (ledger.size() + audit.size() > kMaxBatch) {
    return "batch: " + std::to_string(ledger.size() + audit.size()) + " entries, more than " +
           std::to_string(kMaxBatch) + " in one append";
  }
  for (std::size_t i = 0; i < ledger.size(); ++i) {
    if (auto problem = bank::validate_entry(ledger[i])) return "ledger[" + std::to_string(i) + "]." + *problem;
    if (i > 0 && ledger[i].time_ms < ledger[i - 1].time_ms) {
      return "ledger[" + std::to_string(i) + "].timeMs: " + std::to_string(ledger[i].time_ms) +
             " is before the previous entry's " + std::to_string(ledger[i - 1].time_ms) + " (times must not go back)";
    }
  }
  for (std::size_t i = 0; i < audit.size(); ++i) {
    if (auto problem = bank::validate_audit_entry(audit[i])) return "audit[" + std::to_string(i) + "]." + *problem;
  }
  return std::nullopt;
}

Expected<bool> append_in_batches(Store& store, std::span<const bank::LedgerEntry> ledger,
                                 std::span<const bank::AuditEntry> audit) {
  for (std::size_t l = 0, a = 0; l < ledger.size() || a < audit.size();) {
    const std::size_t nl = std::min(ledger.size() - l, kMaxBatch / 2);
    const std::size_t na = std::min(audit.size() - a, kMaxBatch / 2);
    auto appended = store.append(ledger.subspan(l, nl), audit.subspan(a, na));
    if (!appended) return Unexpected{appended.error()};
    l += nl;
    a += na;
  }
  return true;
}

Expected<bank::LedgerBook> load_book(Store& store, std::size_t page) {
  bank::LedgerBook book;
  std::int64_t after = 0;
  while (true) {
    auto entries = store.ledger(after, page);
    if (!entries) return Unexpected{entries.error()};
    for (const bank::LedgerEntry& e : *entries) {
      if (e.seq != after + 1) {
        return Unexpected{"ledger in " + store.location() + ": gap in seq: expected " + std::to_string(after + 1) +
                          ", found " + std::to_string(e.seq)};
      }
      auto applied = book.apply(e);
      if (!applied) return Unexpected{"ledger in " + store.location() + ": " + applied.error()};
      after = e.seq;
    }
    if (entries->size() < page) break;
  }
  return book;
}

Expected<bank::ChainReport> verify_audit(Store& store, std::size_t page) {
  bank::ChainVerifier verifier;
  std::int64_t after = 0;
  while (true) {
    auto entries = store.audit(after, page);
    if (!entries) return Unexpected{entries.error()};
    for (const bank::AuditEntry& e : *entries) {
      if (!verifier.feed(e)) return verifier.report();
      after = e.seq;
    }
    if (entries->size() < page) break;
  }
  return verifier.report();
}

namespace detail {

Expected<AppendResult> sequence(const Head& head, std::span<const bank::LedgerEntry> ledger,
                                std::span<const bank::AuditEntry> audit) {
  if (!ledger.empty() && head.ledger_seq > 0 && ledger.front().time_ms < head.ledger_time_ms) {
    return Unexpected{"invalid batch, nothing appended: ledger[0].timeMs: " + std::to_string(ledger.front().time_ms) +
                      " is before the last stored entry's (seq " + std::to_string(head.ledger_seq) + " at " +
                      std::to_string(head.ledger_time_ms) + "): ledger times must not go back"};
  }
  AppendResult out;
  out.ledger.assign(ledger.begin(), ledger.end());
  std::int64_t seq = head.ledger_seq;
  for (bank::LedgerEntry& e : out.ledger) e.seq = ++seq;
  out.audit.assign(audit.begin(), audit.end());
  std::int64_t audit_seq = head.audit_seq;
  std::string prev = head.audit_hash;
  for (bank::AuditEntry& e : out.audit) {
    bank::chain_audit_entry(e, audit_seq, prev);
    audit_seq = e.seq;
    prev = e.hash;
  }
  return out;
}

int target_version(int latest, const OpenOptions& options) {
  return options.migrate_to == 0 ? latest : std::min(latest, options.migrate_to);
}

std::string too_new_message(const std::string& location, int found) {
  return "store " + location + " has schema version " + std::to_string(found) + ", newer than the " +
         std::to_string(kSchemaVersion) + " this gpubank knows: use a newer gpubank (refusing to touch it)";
}

}  // namespace detail

}  // namespace gpubank::store
