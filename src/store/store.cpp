#include "store/store.hpp"

#include <algorithm>
#include <functional>

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

Expected<bool> read_audit_after(Store& store, std::int64_t& after_seq,
                                const std::function<std::optional<std::string>(const bank::AuditEntry&)>& visit) {
  constexpr std::size_t kPage = 10'000;
  for (;;) {
    auto page = store.audit(after_seq, kPage);
    if (!page) return Unexpected{page.error()};
    for (const bank::AuditEntry& e : *page) {
      if (auto refused = visit(e)) return Unexpected{"audit entry " + std::to_string(e.seq) + ": " + *refused};
      after_seq = e.seq;
    }
    if (page->size() < kPage) return true;
  }
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

namespace {

// Reads a chain page by page; next() is nullptr at the end.
template <class Entry, class Read>
class Cursor {
 public:
  Cursor(Read read, std::size_t page) : read_(std::move(read)), page_(page) {}
  Expected<const Entry*> next() {
    if (index_ == entries_.size()) {
      if (done_) return static_cast<const Entry*>(nullptr);
      auto read = read_(after_, page_);
      if (!read) return Unexpected{read.error()};
      entries_ = std::move(*read);
      index_ = 0;
      done_ = entries_.size() < page_;
      if (entries_.empty()) return static_cast<const Entry*>(nullptr);
    }
    const Entry* e = &entries_[index_++];
    after_ = e->seq;
    return e;
  }

 private:
  Read read_;
  std::size_t page_;
  std::vector<Entry> entries_;
  std::size_t index_ = 0;
  std::int64_t after_ = 0;
  bool done_ = false;
};

// Marks the ledger report broken at an entry the verifier had accepted.
void break_at(bank::ChainReport& report, const bank::LedgerEntry& e, std::string problem) {
  report.ok = false;
  report.broken_seq = e.seq;
  report.entries -= 1;
  report.last_seq = e.seq - 1;
  report.head = e.prev_hash;
  report.problem = std::move(problem);
}

std::string anchor_problem(const char* chain, const bank::Anchor& anchor, const std::optional<std::string>& found,
                           std::int64_t last_seq, bool intact) {
  const std::string name = std::string(chain) + " anchor " + std::to_string(anchor.seq) + ":" + anchor.hash;
  if (!found) {
    if (!intact) return name + ": not reached (the chain breaks before it)";
    return name + ": the " + chain + " chain has no seq " + std::to_string(anchor.seq) + " (it ends at seq " +
           std::to_string(last_seq) + "): entries were removed from its tail";
  }
  if (*found != anchor.hash) {
    return name + ": seq " + std::to_string(anchor.seq) + " has hash " + *found +
           " instead: the chain was rewritten";
  }
  return {};
}

}  // namespace

Expected<StoreReport> verify_store(Store& store, const VerifyOptions& options, std::size_t page) {
  StoreReport out;
  bank::ChainVerifier audit_verifier;
  std::optional<std::string> audit_at_anchor;
  Cursor<bank::AuditEntry, std::function<Expected<std::vector<bank::AuditEntry>>(std::int64_t, std::size_t)>> audit(
      [&store](std::int64_t after, std::size_t n) { return store.audit(after, n); }, page);
  // The audit entry last read (its seq and hash), whether or not the chain held there.
  std::int64_t audit_seq = 0;
  std::string audit_hash;
  const auto advance_audit = [&]() -> Expected<bool> {
    auto e = audit.next();
    if (!e) return Unexpected{e.error()};
    if (*e == nullptr) return false;
    audit_verifier.feed(**e);
    if (options.audit_anchor && (*e)->seq == options.audit_anchor->seq) audit_at_anchor = (*e)->hash;
    audit_seq = (*e)->seq;
    audit_hash = (*e)->hash;
    return true;
  };

  bank::LedgerChainVerifier ledger_verifier;
  std::optional<std::string> ledger_at_anchor;
  Cursor<bank::LedgerEntry, std::function<Expected<std::vector<bank::LedgerEntry>>(std::int64_t, std::size_t)>> ledger(
      [&store](std::int64_t after, std::size_t n) { return store.ledger(after, n); }, page);
  while (true) {
    auto e = ledger.next();
    if (!e) return Unexpected{e.error()};
    if (*e == nullptr) break;
    const bank::LedgerEntry& entry = **e;
    if (!ledger_verifier.feed(entry)) break;
    if (options.ledger_anchor && entry.seq == options.ledger_anchor->seq) ledger_at_anchor = entry.hash;
    if (entry.audit_seq == 0) continue;  // chained at migration 4, before the link existed
    bool more = true;
    while (more && audit_seq < entry.audit_seq) {
      auto advanced = advance_audit();
      if (!advanced) return Unexpected{advanced.error()};
      more = *advanced;
    }
    std::string problem;
    if (audit_seq < entry.audit_seq) {
      problem = "auditSeq " + std::to_string(entry.audit_seq) + " names an audit entry the audit log does not have (it ends at seq " +
                std::to_string(audit_seq) + "): entries were removed from the audit log's tail";
    } else if (audit_seq != entry.audit_seq) {
      problem = "auditSeq " + std::to_string(entry.audit_seq) + " names an audit entry the audit log does not have";
    } else if (audit_hash != entry.audit_hash) {
      problem = "auditHash " + entry.audit_hash + " is not the hash of audit seq " + std::to_string(entry.audit_seq) +
                " (" + audit_hash + ")";
    }
    if (!problem.empty()) {
      out.ledger = ledger_verifier.report();
      break_at(out.ledger, entry, std::move(problem));
      if (options.ledger_anchor && entry.seq == options.ledger_anchor->seq) ledger_at_anchor.reset();
      break;
    }
  }
  if (out.ledger.ok) out.ledger = ledger_verifier.report();
  while (true) {
    auto advanced = advance_audit();
    if (!advanced) return Unexpected{advanced.error()};
    if (!*advanced) break;
  }
  out.audit = audit_verifier.report();
  if (options.audit_anchor) {
    out.audit_anchor_problem =
        anchor_problem("audit", *options.audit_anchor, audit_at_anchor, out.audit.last_seq, out.audit.ok);
  }
  if (options.ledger_anchor) {
    out.ledger_anchor_problem =
        anchor_problem("ledger", *options.ledger_anchor, ledger_at_anchor, out.ledger.last_seq, out.ledger.ok);
  }
  return out;
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
  out.audit.assign(audit.begin(), audit.end());
  std::int64_t audit_seq = head.audit_seq;
  std::string audit_prev = head.audit_hash;
  for (bank::AuditEntry& e : out.audit) {
    bank::chain_audit_entry(e, audit_seq, audit_prev);
    audit_seq = e.seq;
    audit_prev = e.hash;
  }
  // Each ledger entry names the audit head as of the end of this append.
  out.ledger.assign(ledger.begin(), ledger.end());
  std::int64_t seq = head.ledger_seq;
  std::string prev = head.ledger_hash;
  for (bank::LedgerEntry& e : out.ledger) {
    bank::chain_ledger_entry(e, seq, prev, audit_seq, audit_prev);
    seq = e.seq;
    prev = e.hash;
  }
  return out;
}

std::string backfill_chain(std::vector<bank::LedgerEntry>& page, std::string prev_hash) {
  for (bank::LedgerEntry& e : page) {
    bank::chain_ledger_entry(e, e.seq - 1, prev_hash, 0, "");
    prev_hash = e.hash;
  }
  return prev_hash;
}

std::string fenced_message(const std::string& location, std::int64_t mine, std::int64_t newest,
                           const std::string& holder) {
  return "store " + location + ": fenced, nothing appended: this producer holds writer epoch " + std::to_string(mine) +
         ", but epoch " + std::to_string(newest) + " (holder \"" + holder +
         "\") acquired the store since: another producer is folding this ledger; stop this one";
}

void unchain(std::vector<bank::LedgerEntry>& entries) {
  for (bank::LedgerEntry& e : entries) {
    e.prev_hash.clear();
    e.audit_seq = 0;
    e.audit_hash.clear();
    e.hash.clear();
  }
}

std::string read_only_version_message(const std::string& location, int found) {
  if (found > kSchemaVersion) return too_new_message(location, found);
  if (found == 0) return "store " + location + " has no gpubank schema (opened read-only: nothing was created)";
  return "store " + location + " has schema version " + std::to_string(found) + ", older than the " +
         std::to_string(kSchemaVersion) +
         " this gpubank reads (version 4 added the ledger hash chain); opened read-only, it is not migrated: let a "
         "gpubank that writes to it (the bank, `gpubank twin run --store`) migrate it first, or verify it with the "
         "gpubank that wrote it";
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
