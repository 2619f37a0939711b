#include "twin/live/resume.hpp"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "render/object.hpp"

namespace gpubank::twin::live {

namespace {

// Values as JSON writes them (strings quoted and escaped), so a message shows "" and
// control characters plainly.
std::string shown(const std::string& v) { return nlohmann::json(v).dump(); }
std::string shown(std::int64_t v) { return std::to_string(v); }

// Collects the first differing field of a list of (name, stored, replayed).
class FirstDifference {
 public:
  template <class T>
  FirstDifference& field(const char* name, const T& stored, const T& replayed) {
    if (found_.empty() && stored != replayed) {
      found_ = std::string(name) + ": stored " + shown(stored) + ", replayed " + shown(replayed);
    }
    return *this;
  }
  [[nodiscard]] std::string str() const { return found_; }

 private:
  std::string found_;
};

}  // namespace

// The engine's own formula (twin/run/engine.cpp, setup()); tests/twin/live checks they agree.
std::string policy_version(const policy::PolicySet& policies) {
  std::string canonical;
  for (const auto& p : policies.policies()) canonical += render::canonical_text(p) + "\n";
  return render::sha256_hex(canonical);
}

std::string ledger_difference(const bank::LedgerEntry& s, const bank::LedgerEntry& r) {
  return FirstDifference()
      .field("timeMs", s.time_ms, r.time_ms)
      .field("kind", std::string(bank::kind_name(s.kind)), std::string(bank::kind_name(r.kind)))
      .field("pool", s.pool, r.pool)
      .field("flavor", s.flavor, r.flavor)
      .field("businessGroup", s.business_group, r.business_group)
      .field("lender", s.lender, r.lender)
      .field("workload", s.workload, r.workload)
      .field("record", s.record, r.record)
      .field("gpus", s.gpus, r.gpus)
      .field("lendingLimit", s.lending_limit, r.lending_limit)
      .field("borrowingLimit", s.borrowing_limit, r.borrowing_limit)
      .field("reason", s.reason, r.reason)
      .str();
}

std::string audit_difference(const bank::AuditEntry& s, const bank::AuditEntry& r) {
  return FirstDifference()
      .field("timeMs", s.time_ms, r.time_ms)
      .field("actor", s.actor, r.actor)
      .field("action", s.action, r.action)
      .field("object", s.object, r.object)
      .field("policyVersion", s.policy_version, r.policy_version)
      .field("decision", s.decision, r.decision)
      .field("reason", s.reason, r.reason)
      .field("numbers", s.numbers, r.numbers)
      .str();
}

Expected<std::unique_ptr<ReplayWriter>> ReplayWriter::open(store::Store& store, std::size_t page) {
  auto head = store.head();
  if (!head) return Unexpected{head.error()};
  std::unique_ptr<ReplayWriter> w(new ReplayWriter(store, std::max<std::size_t>(page, 1)));
  w->stored_ledger_ = head->ledger_seq;
  w->stored_audit_ = head->audit_seq;
  return w;
}

template <class Entry, class Read>
Expected<const Entry*> ReplayWriter::stored_entry(Page<Entry>& page, std::int64_t seq, Read read, const char* log,
                                                  std::int64_t head) {
  const bool in_page = seq >= page.first && seq < page.first + static_cast<std::int64_t>(page.entries.size());
  if (!in_page) {
    auto entries = read(seq - 1, page_);
    if (!entries) return Unexpected{entries.error()};
    page.entries = std::move(*entries);
    page.first = seq;
    if (page.entries.empty() || page.entries.front().seq != seq) {
      return Unexpected{std::string("the store's ") + log + " has no entry " + std::to_string(seq) + " below its head " +
                        std::to_string(head)};
    }
  }
  return &page.entries[static_cast<std::size_t>(seq - page.first)];
}

Expected<bool> ReplayWriter::operator()(std::span<const bank::LedgerEntry> ledger,
                                        std::span<const bank::AuditEntry> audit) {
  if (!mismatch_.empty()) return Unexpected{mismatch_};
  // The regenerated entries the store already holds: they must be the stored ones.
  std::size_t held_l = 0;
  for (; held_l < ledger.size() && replayed_ledger_ + static_cast<std::int64_t>(held_l) < stored_ledger_; ++held_l) {
    const std::int64_t seq = replayed_ledger_ + static_cast<std::int64_t>(held_l) + 1;
    auto stored = stored_entry(ledger_page_, seq, [&](std::int64_t after, std::size_t n) { return store_.ledger(after, n); },
                               "ledger", stored_ledger_);
    if (!stored) return Unexpected{stored.error()};
    if (auto d = ledger_difference(**stored, ledger[held_l]); !d.empty()) {
      mismatch_ = "the store's ledger entry " + std::to_string(seq) + " differs from this run's: " + d;
      return Unexpected{mismatch_};
    }
  }
  std::size_t held_a = 0;
  for (; held_a < audit.size() && replayed_audit_ + static_cast<std::int64_t>(held_a) < stored_audit_; ++held_a) {
    const std::int64_t seq = replayed_audit_ + static_cast<std::int64_t>(held_a) + 1;
    auto stored = stored_entry(audit_page_, seq, [&](std::int64_t after, std::size_t n) { return store_.audit(after, n); },
                               "audit log", stored_audit_);
    if (!stored) return Unexpected{stored.error()};
    if (auto d = audit_difference(**stored, audit[held_a]); !d.empty()) {
      mismatch_ = "the store's audit entry " + std::to_string(seq) + " differs from this run's: " + d;
      return Unexpected{mismatch_};
    }
  }
  // The rest is new: appended as a first start appends it, before the run goes on. A
  // store is written an instant at a time (both logs in one transaction), so its head is
  // reached in both logs at the same instant: new entries in one log while the other still
  // has stored entries to come mean the store was not written by this run.
  const auto new_l = ledger.subspan(held_l);
  const auto new_a = audit.subspan(held_a);
  const std::int64_t next_l = replayed_ledger_ + static_cast<std::int64_t>(held_l);
  const std::int64_t next_a = replayed_audit_ + static_cast<std::int64_t>(held_a);
  if (!new_l.empty() && next_a < stored_audit_) {
    mismatch_ = "the store's audit entry " + std::to_string(next_a + 1) + " is not made by this run by the instant of " +
                "its ledger entry " + std::to_string(next_l + 1) + " (timeMs " + std::to_string(new_l.front().time_ms) +
                "), which the store does not hold";
    return Unexpected{mismatch_};
  }
  if (!new_a.empty() && next_l < stored_ledger_) {
    mismatch_ = "the store's ledger entry " + std::to_string(next_l + 1) + " is not made by this run by the instant of " +
                "its audit entry " + std::to_string(next_a + 1) + " (timeMs " + std::to_string(new_a.front().time_ms) +
                "), which the store does not hold";
    return Unexpected{mismatch_};
  }
  if (!new_l.empty() || !new_a.empty()) {
    auto appended = store::append_in_batches(store_, new_l, new_a);
    if (!appended) return appended;
  }
  replayed_ledger_ += static_cast<std::int64_t>(ledger.size());
  replayed_audit_ += static_cast<std::int64_t>(audit.size());
  // Past the head: the pages of stored entries are not needed any more.
  if (caught_up() && (!ledger_page_.entries.empty() || !audit_page_.entries.empty())) {
    ledger_page_ = {};
    audit_page_ = {};
  }
  return true;
}

}  // namespace gpubank::twin::live
