#include "bank/ledger.hpp"

#include <algorithm>
#include <limits>

#include "bank/text_check.hpp"
#include "core/quote.hpp"

namespace gpubank::bank {

namespace detail {

std::optional<std::string> check_text(std::string_view text, bool allow_line_breaks) {
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const std::size_t n = text.size();
  for (std::size_t i = 0; i < n;) {
    const unsigned char c = p[i];
    if (c < 0x80) {
      if (c == 0) return "must not contain NUL";
      if (c < 0x20 || c == 0x7f) {
        if (!(allow_line_breaks && (c == '\t' || c == '\n' || c == '\r'))) {
          return "must not contain control characters (byte " + std::to_string(c) + " at " + std::to_string(i) + ")";
        }
      }
      ++i;
      continue;
    }
    std::size_t len = 0;
    std::uint32_t cp = 0;
    if ((c & 0xE0) == 0xC0) {
      len = 2;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4;
      cp = c & 0x07;
    } else {
      return "must be valid UTF-8 (bad byte at " + std::to_string(i) + ")";
    }
    if (i + len > n) return "must be valid UTF-8 (truncated sequence at " + std::to_string(i) + ")";
    for (std::size_t k = 1; k < len; ++k) {
      if ((p[i + k] & 0xC0) != 0x80) return "must be valid UTF-8 (bad continuation at " + std::to_string(i + k) + ")";
      cp = (cp << 6) | (p[i + k] & 0x3F);
    }
    const bool overlong = (len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000);
    if (overlong || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
      return "must be valid UTF-8 (invalid sequence at " + std::to_string(i) + ")";
    }
    if (cp >= 0x80 && cp < 0xA0) return "must not contain control characters (C1 at " + std::to_string(i) + ")";
    i += len;
  }
  return std::nullopt;
}

std::optional<std::string> check_field(std::string_view field, std::string_view value, bool required,
                                       std::size_t max_length, bool allow_line_breaks) {
  if (required && value.empty()) return std::string(field) + ": required";
  if (value.size() > max_length) {
    return std::string(field) + ": longer than " + std::to_string(max_length) + " bytes (" +
           std::to_string(value.size()) + ")";
  }
  if (auto problem = check_text(value, allow_line_breaks)) return std::string(field) + ": " + *problem;
  return std::nullopt;
}

}  // namespace detail

namespace {

using Json = nlohmann::ordered_json;
__extension__ typedef __int128 Int128;

constexpr std::string_view kKindNames[] = {"QuotaSet", "UsageStarted", "UsageEnded", "BorrowOpened", "BorrowClosed"};

std::optional<std::string> must_be_empty(std::string_view field, std::string_view value, LedgerKind kind) {
  if (value.empty()) return std::nullopt;
  return std::string(field) + ": must be empty for " + std::string(kind_name(kind));
}

std::string seq_prefix(const LedgerEntry& e) { return "seq " + std::to_string(e.seq) + ": "; }

std::string where(const LedgerEntry& e) {
  return "workload " + e.workload + " on pool " + e.pool + " flavor " + e.flavor;
}

}  // namespace

std::string_view kind_name(LedgerKind kind) {
  const auto i = static_cast<std::size_t>(kind);
  return i < std::size(kKindNames) ? kKindNames[i] : std::string_view("?");
}

std::optional<LedgerKind> parse_kind(std::string_view name) {
  for (std::size_t i = 0; i < std::size(kKindNames); ++i) {
    if (kKindNames[i] == name) return static_cast<LedgerKind>(i);
  }
  return std::nullopt;
}

std::optional<std::string> validate_entry(const LedgerEntry& e) {
  using detail::check_field;
  if (static_cast<std::size_t>(e.kind) >= std::size(kKindNames)) return "kind: unknown kind";
  if (e.time_ms < 0 || e.time_ms > kMaxTimeMs) {
    return "timeMs: must be between 0 and " + std::to_string(kMaxTimeMs) + " (is " + std::to_string(e.time_ms) + ")";
  }
  if (e.gpus < 0) return "gpus: must not be negative (is " + std::to_string(e.gpus) + ")";
  if (e.gpus > kMaxGpus) return "gpus: must be at most " + std::to_string(kMaxGpus) + " (is " + std::to_string(e.gpus) + ")";
  const bool quota = e.kind == LedgerKind::QuotaSet;
  const bool usage = e.kind == LedgerKind::UsageStarted || e.kind == LedgerKind::UsageEnded;
  const bool borrow = e.kind == LedgerKind::BorrowOpened || e.kind == LedgerKind::BorrowClosed;
  const bool closing = e.kind == LedgerKind::UsageEnded || e.kind == LedgerKind::BorrowClosed;
  if (auto p = check_field("pool", e.pool, true, kMaxNameLength)) return p;
  if (auto p = check_field("flavor", e.flavor, !quota, kMaxNameLength)) return p;
  if (auto p = check_field("businessGroup", e.business_group, true, kMaxNameLength)) return p;
  if (borrow) {
    if (auto p = check_field("lender", e.lender, true, kMaxNameLength)) return p;
    if (e.lender == e.business_group) return "lender: must differ from the borrower (businessGroup " + quote(e.lender) + ")";
  } else if (auto p = must_be_empty("lender", e.lender, e.kind)) {
    return p;
  }
  if (usage || borrow) {
    if (auto p = check_field("workload", e.workload, true, kMaxWorkloadLength)) return p;
    const auto slash = e.workload.find('/');
    if (slash == std::string::npos || slash == 0 || slash + 1 == e.workload.size() ||
        e.workload.find('/', slash + 1) != std::string::npos) {
      return "workload: must be <namespace>/<name> (is " + quote(e.workload) + ")";
    }
  } else if (auto p = must_be_empty("workload", e.workload, e.kind)) {
    return p;
  }
  if (borrow) {
    if (auto p = check_field("record", e.record, true, kMaxRecordLength)) return p;
  } else if (auto p = must_be_empty("record", e.record, e.kind)) {
    return p;
  }
  if (quota) {
    if (e.lending_limit < -1) return "lendingLimit: must be -1 (unset) or >= 0 (is " + std::to_string(e.lending_limit) + ")";
    if (e.borrowing_limit < -1) {
      return "borrowingLimit: must be -1 (unset) or >= 0 (is " + std::to_string(e.borrowing_limit) + ")";
    }
    if (e.lending_limit > kMaxGpus) return "lendingLimit: must be at most " + std::to_string(kMaxGpus);
    if (e.borrowing_limit > kMaxGpus) return "borrowingLimit: must be at most " + std::to_string(kMaxGpus);
    if (std::find(std::begin(kQuotaReasons), std::end(kQuotaReasons), e.reason) == std::end(kQuotaReasons)) {
      return "reason: must be Policy, LeaseActivated or LeaseExpired for QuotaSet (is " + quote(e.reason) + ")";
    }
  } else {
    if (e.lending_limit != -1) return "lendingLimit: only QuotaSet sets it (must be -1)";
    if (e.borrowing_limit != -1) return "borrowingLimit: only QuotaSet sets it (must be -1)";
    if (auto p = check_field("reason", e.reason, closing, kMaxReasonLength, true)) return p;
  }
  return std::nullopt;
}

// ---- JSON --------------------------------------------------------------------------------

Json to_json(const LedgerEntry& e) {
  Json out{{"seq", e.seq},
            {"timeMs", e.time_ms},
            {"kind", kind_name(e.kind)},
            {"pool", e.pool},
            {"flavor", e.flavor},
            {"businessGroup", e.business_group},
            {"lender", e.lender},
            {"workload", e.workload},
            {"record", e.record},
            {"gpus", e.gpus},
            {"lendingLimit", e.lending_limit},
            {"borrowingLimit", e.borrowing_limit},
            {"reason", e.reason}};
  if (!e.hash.empty() || !e.prev_hash.empty() || e.audit_seq != 0 || !e.audit_hash.empty()) {
    out["prevHash"] = e.prev_hash;
    out["auditSeq"] = e.audit_seq;
    out["auditHash"] = e.audit_hash;
    out["hash"] = e.hash;
  }
  return out;
}

namespace {

Expected<std::int64_t> int_field(const nlohmann::json& v, std::string_view name) {
  if (v.is_number_integer() && !v.is_number_unsigned()) return v.get<std::int64_t>();
  if (v.is_number_unsigned()) {
    const auto u = v.get<std::uint64_t>();
    if (u <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) return static_cast<std::int64_t>(u);
    return Unexpected{"field " + quote(name) + ": integer out of range"};
  }
  return Unexpected{"field " + quote(name) + ": must be an integer"};
}

Expected<std::string> string_field(const nlohmann::json& v, std::string_view name) {
  if (v.is_string()) return v.get<std::string>();
  return Unexpected{"field " + quote(name) + ": must be a string"};
}

}  // namespace

Expected<LedgerEntry> ledger_entry_from_json(const nlohmann::json& json) {
  if (!json.is_object()) return Unexpected{"ledger entry: must be a JSON object"};
  LedgerEntry e;
  bool have_kind = false;
  for (const auto& [key, value] : json.items()) {
    std::int64_t* number = nullptr;
    std::string* text = nullptr;
    if (key == "seq") number = &e.seq;
    else if (key == "timeMs") number = &e.time_ms;
    else if (key == "gpus") number = &e.gpus;
    else if (key == "lendingLimit") number = &e.lending_limit;
    else if (key == "borrowingLimit") number = &e.borrowing_limit;
    else if (key == "pool") text = &e.pool;
    else if (key == "flavor") text = &e.flavor;
    else if (key == "businessGroup") text = &e.business_group;
    else if (key == "lender") text = &e.lender;
    else if (key == "workload") text = &e.workload;
    else if (key == "record") text = &e.record;
    else if (key == "reason") text = &e.reason;
    else if (key == "prevHash") text = &e.prev_hash;
    else if (key == "auditSeq") number = &e.audit_seq;
    else if (key == "auditHash") text = &e.audit_hash;
    else if (key == "hash") text = &e.hash;
    if (number != nullptr) {
      auto v = int_field(value, key);
      if (!v) return Unexpected{"ledger entry: " + v.error()};
      *number = *v;
    } else if (text != nullptr) {
      auto v = string_field(value, key);
      if (!v) return Unexpected{"ledger entry: " + v.error()};
      *text = std::move(*v);
    } else if (key == "kind") {
      auto v = string_field(value, key);
      if (!v) return Unexpected{"ledger entry: " + v.error()};
      auto kind = parse_kind(*v);
      if (!kind) {
        return Unexpected{"ledger entry: field \"kind\": unknown kind " + quote(*v) +
                          " (QuotaSet, UsageStarted, UsageEnded, BorrowOpened, BorrowClosed)"};
      }
      e.kind = *kind;
      have_kind = true;
    } else {
      return Unexpected{"ledger entry: unknown field " + quote(key)};
    }
  }
  if (!have_kind) return Unexpected{"ledger entry: field \"kind\" is required"};
  return e;
}

Json to_json(const Position& p) {
  return Json{{"pool", p.pool},
              {"businessGroup", p.business_group},
              {"guaranteed", p.guaranteed},
              {"lendingLimit", p.lending_limit},
              {"borrowingLimit", p.borrowing_limit},
              {"used", p.used},
              {"borrowed", p.borrowed},
              {"lent", p.lent},
              {"lendingFloor", p.lending_floor},
              {"borrowable", p.borrowable}};
}

Json to_json(const BorrowRecord& r) {
  return Json{{"id", r.id},
              {"lender", r.lender},
              {"borrower", r.borrower},
              {"pool", r.pool},
              {"flavor", r.flavor},
              {"gpus", r.gpus},
              {"workload", r.workload},
              {"startMs", r.start_ms},
              {"endMs", r.end_ms ? Json(*r.end_ms) : Json(nullptr)},
              {"closeReason", r.close_reason},
              {"openedSeq", r.opened_seq},
              {"closedSeq", r.closed_seq}};
}

Json to_json(const PairTotal& t) {
  return Json{{"lender", t.lender},     {"borrower", t.borrower},     {"pool", t.pool},
              {"gpuMs", t.gpu_ms},      {"gpuHours", t.gpu_hours()}, {"records", t.records}};
}

// ---- the book ----------------------------------------------------------------------------

std::optional<std::string> LedgerBook::check(const LedgerEntry& e) const {
  if (e.seq < 1) return seq_prefix(e) + "seq must be 1 or more [ledger.seq-order]";
  if (!entries_.empty()) {
    const LedgerEntry& last = entries_.back();
    if (e.seq <= last.seq) {
      return seq_prefix(e) + "not after the previous entry's seq " + std::to_string(last.seq) + " [ledger.seq-order]";
    }
    if (e.time_ms < last.time_ms) {
      return seq_prefix(e) + "timeMs " + std::to_string(e.time_ms) + " is before the previous entry's (seq " +
             std::to_string(last.seq) + " at " + std::to_string(last.time_ms) + ") [ledger.time-order]";
    }
  }
  if (auto problem = validate_entry(e)) return seq_prefix(e) + *problem + " [ledger.invalid]";
  const std::string kind(kind_name(e.kind));
  switch (e.kind) {
    case LedgerKind::QuotaSet:
      break;
    case LedgerKind::UsageStarted: {
      const auto it = open_usage_.find({e.pool, e.flavor, e.workload});
      if (it != open_usage_.end()) {
        return seq_prefix(e) + kind + " for " + where(e) + ", already in use since seq " + std::to_string(it->second.seq) +
               " [ledger.duplicate-open]";
      }
      break;
    }
    case LedgerKind::UsageEnded: {
      const auto it = open_usage_.find({e.pool, e.flavor, e.workload});
      if (it == open_usage_.end()) {
        return seq_prefix(e) + kind + " for " + where(e) + " without a UsageStarted [ledger.not-open]";
      }
      const Holding& u = it->second;
      if (u.business_group != e.business_group || u.gpus != e.gpus) {
        return seq_prefix(e) + kind + " for " + where(e) + " says group " + e.business_group + " with " +
               std::to_string(e.gpus) + " GPUs, but seq " + std::to_string(u.seq) + " started it for group " +
               u.business_group + " with " + std::to_string(u.gpus) + " GPUs [ledger.close-mismatch]";
      }
      if (auto open = open_record_of(e)) {
        return seq_prefix(e) + kind + " for " + where(e) + " while its borrow record " + quote(*open) +
               " is open: the record closes first [ledger.usage-ended-with-open-records]";
      }
      break;
    }
    case LedgerKind::BorrowOpened: {
      const auto it = record_index_.find(e.record);
      if (it != record_index_.end()) {
        return seq_prefix(e) + kind + " for record " + quote(e.record) + ", already opened at seq " +
               std::to_string(records_[it->second].opened_seq) + " [ledger.duplicate-open]";
      }
      if (auto problem = over_lent(e)) return seq_prefix(e) + kind + " for record " + quote(e.record) + ": " + *problem;
      break;
    }
    case LedgerKind::BorrowClosed: {
      const auto it = record_index_.find(e.record);
      if (it == record_index_.end()) {
        return seq_prefix(e) + kind + " for record " + quote(e.record) + " without a BorrowOpened [ledger.not-open]";
      }
      const BorrowRecord& r = records_[it->second];
      if (r.end_ms) {
        return seq_prefix(e) + kind + " for record " + quote(e.record) + ", already closed at seq " +
               std::to_string(r.closed_seq) + " [ledger.not-open]";
      }
      const auto differs = [&](const char* field, const std::string& opened, const std::string& closing) {
        return seq_prefix(e) + kind + " for record " + quote(e.record) + ": " + field + " " + quote(closing) +
               " differs from " + quote(opened) + " at seq " + std::to_string(r.opened_seq) + " [ledger.close-mismatch]";
      };
      if (r.lender != e.lender) return differs("lender", r.lender, e.lender);
      if (r.borrower != e.business_group) return differs("businessGroup", r.borrower, e.business_group);
      if (r.pool != e.pool) return differs("pool", r.pool, e.pool);
      if (r.flavor != e.flavor) return differs("flavor", r.flavor, e.flavor);
      if (r.workload != e.workload) return differs("workload", r.workload, e.workload);
      if (r.gpus != e.gpus) return differs("gpus", std::to_string(r.gpus), std::to_string(e.gpus));
      break;
    }
  }
  return std::nullopt;
}

std::optional<std::string> LedgerBook::open_record_of(const LedgerEntry& e) const {
  const auto it = by_workload_.find(e.workload);
  if (it == by_workload_.end()) return std::nullopt;
  for (const std::size_t index : it->second) {
    const LedgerEntry& opened = entries_[index];
    if (opened.kind != LedgerKind::BorrowOpened || opened.pool != e.pool || opened.flavor != e.flavor) continue;
    const BorrowRecord& r = records_[record_index_.find(opened.record)->second];
    if (!r.end_ms) return r.id;
  }
  return std::nullopt;
}

std::optional<std::string> LedgerBook::over_lent(const LedgerEntry& e) const {
  // What no group guarantees (quota lowered under running work) has no lender to hold to.
  if (e.lender == "cohort:" + e.pool) return std::nullopt;
  Step lender;  // a group the ledger has no QuotaSet for guarantees nothing
  const auto it = history_.find(Key{e.pool, e.lender});
  if (it != history_.end()) lender = it->second.back();
  std::int64_t lendable = std::max<std::int64_t>(0, lender.guaranteed - lender.used);
  if (lender.lending_limit >= 0) lendable = std::min(lendable, lender.lending_limit);
  if (lender.lent + e.gpus <= lendable) return std::nullopt;
  return "lender " + e.lender + " would lend " + std::to_string(lender.lent + e.gpus) + " GPUs in " + e.pool +
         ", more than min(lendingLimit " + (lender.lending_limit >= 0 ? std::to_string(lender.lending_limit) : "unset") +
         ", guaranteed " + std::to_string(lender.guaranteed) + " - used " + std::to_string(lender.used) + ") = " +
         std::to_string(lendable) + " [ledger.over-lent]";
}

LedgerBook::Step& LedgerBook::step_for(const Key& key, std::int64_t time_ms) {
  std::vector<Step>& steps = history_[key];
  if (steps.empty()) {
    steps.push_back(Step{.time_ms = time_ms});
  } else if (steps.back().time_ms != time_ms) {
    Step next = steps.back();
    next.time_ms = time_ms;
    steps.push_back(next);
  }
  return steps.back();
}

Expected<bool> LedgerBook::apply(const LedgerEntry& e) {
  if (auto problem = check(e)) return Unexpected{*problem};
  const std::size_t index = entries_.size();
  entries_.push_back(e);
  if (!e.workload.empty()) by_workload_[e.workload].push_back(index);
  switch (e.kind) {
    case LedgerKind::QuotaSet: {
      Step& s = step_for({e.pool, e.business_group}, e.time_ms);
      s.guaranteed = e.gpus;
      s.lending_limit = e.lending_limit;
      s.borrowing_limit = e.borrowing_limit;
      break;
    }
    case LedgerKind::UsageStarted:
      step_for({e.pool, e.business_group}, e.time_ms).used += e.gpus;
      open_usage_.emplace(std::make_tuple(e.pool, e.flavor, e.workload), Holding{e.business_group, e.gpus, e.seq});
      break;
    case LedgerKind::UsageEnded:
      step_for({e.pool, e.business_group}, e.time_ms).used -= e.gpus;
      open_usage_.erase(std::make_tuple(e.pool, e.flavor, e.workload));
      break;
    case LedgerKind::BorrowOpened:
      step_for({e.pool, e.business_group}, e.time_ms).borrowed += e.gpus;
      step_for({e.pool, e.lender}, e.time_ms).lent += e.gpus;
      record_index_.emplace(e.record, records_.size());
      records_.push_back(BorrowRecord{.id = e.record,
                                      .lender = e.lender,
                                      .borrower = e.business_group,
                                      .pool = e.pool,
                                      .flavor = e.flavor,
                                      .gpus = e.gpus,
                                      .workload = e.workload,
                                      .start_ms = e.time_ms,
                                      .end_ms = std::nullopt,
                                      .close_reason = {},
                                      .opened_seq = e.seq,
                                      .closed_seq = 0});
      break;
    case LedgerKind::BorrowClosed: {
      step_for({e.pool, e.business_group}, e.time_ms).borrowed -= e.gpus;
      step_for({e.pool, e.lender}, e.time_ms).lent -= e.gpus;
      BorrowRecord& r = records_[record_index_.find(e.record)->second];
      r.end_ms = e.time_ms;
      r.close_reason = e.reason;
      r.closed_seq = e.seq;
      break;
    }
  }
  return true;
}

Expected<bool> LedgerBook::apply_all(std::span<const LedgerEntry> entries) {
  for (const LedgerEntry& e : entries) {
    auto applied = apply(e);
    if (!applied) return applied;
  }
  return true;
}

std::vector<Position> LedgerBook::positions(std::int64_t at_ms) const {
  struct Current {
    const Key* key;
    const Step* step;
    std::int64_t lendable_now;  // this group's contribution to the others' supply
  };
  std::vector<Current> current;
  current.reserve(history_.size());
  for (const auto& [key, steps] : history_) {
    const auto it = std::upper_bound(steps.begin(), steps.end(), at_ms,
                                     [](std::int64_t t, const Step& s) { return t < s.time_ms; });
    if (it == steps.begin()) continue;
    const Step& s = *std::prev(it);
    const std::int64_t lendable = s.lending_limit < 0 ? s.guaranteed : s.lending_limit;
    const std::int64_t offer = std::max<std::int64_t>(0, std::min(s.guaranteed - s.used, lendable) - s.lent);
    current.push_back({&key, &s, offer});
  }
  std::vector<Position> out;
  out.reserve(current.size());
  // history_ is ordered by (pool, group): each pool's keys are contiguous.
  for (std::size_t begin = 0; begin < current.size();) {
    std::size_t end = begin;
    std::int64_t supply = 0;
    while (end < current.size() && current[end].key->first == current[begin].key->first) {
      supply += current[end].lendable_now;
      ++end;
    }
    for (std::size_t i = begin; i < end; ++i) {
      const Step& s = *current[i].step;
      Position p;
      p.pool = current[i].key->first;
      p.business_group = current[i].key->second;
      p.guaranteed = s.guaranteed;
      p.lending_limit = s.lending_limit;
      p.borrowing_limit = s.borrowing_limit;
      p.used = s.used;
      p.borrowed = s.borrowed;
      p.lent = s.lent;
      p.lending_floor = s.lending_limit < 0 ? 0 : std::max<std::int64_t>(0, s.guaranteed - s.lending_limit);
      const std::int64_t others = supply - current[i].lendable_now;
      const std::int64_t cap = s.borrowing_limit < 0 ? std::numeric_limits<std::int64_t>::max()
                                                     : s.borrowing_limit - s.borrowed;
      p.borrowable = std::max<std::int64_t>(0, std::min(cap, others));
      out.push_back(std::move(p));
    }
    begin = end;
  }
  return out;
}

std::vector<Position> LedgerBook::positions() const {
  return positions(entries_.empty() ? std::int64_t{0} : entries_.back().time_ms);
}

namespace {

bool overlaps(const BorrowRecord& r, std::int64_t from, std::int64_t to) {
  if (r.start_ms >= to) return false;
  if (!r.end_ms) return true;
  if (*r.end_ms > from) return true;
  return *r.end_ms == r.start_ms && r.start_ms >= from;  // zero-length, inside the range
}

}  // namespace

std::vector<BorrowRecord> LedgerBook::records(std::int64_t from_ms, std::int64_t to_ms) const {
  std::vector<BorrowRecord> out;
  if (from_ms >= to_ms) return out;
  // records_ is in opening order, so start times never decrease.
  const auto end = std::partition_point(records_.begin(), records_.end(),
                                        [&](const BorrowRecord& r) { return r.start_ms < to_ms; });
  for (auto it = records_.begin(); it != end; ++it) {
    if (overlaps(*it, from_ms, to_ms)) out.push_back(*it);
  }
  return out;
}

std::vector<PairTotal> LedgerBook::pair_totals(std::int64_t from_ms, std::int64_t to_ms) const {
  struct Sum {
    Int128 gpu_ms = 0;
    std::int64_t records = 0;
  };
  std::map<std::tuple<std::string, std::string, std::string>, Sum> sums;
  if (from_ms < to_ms) {
    const std::int64_t known = last_time_ms();
    const auto end = std::partition_point(records_.begin(), records_.end(),
                                          [&](const BorrowRecord& r) { return r.start_ms < to_ms; });
    for (auto it = records_.begin(); it != end; ++it) {
      const BorrowRecord& r = *it;
      if (!overlaps(r, from_ms, to_ms)) continue;
      Sum& sum = sums[{r.lender, r.borrower, r.pool}];
      ++sum.records;
      const std::int64_t a = std::max(r.start_ms, from_ms);
      const std::int64_t b = std::min(r.end_ms.value_or(known), to_ms);
      if (b > a) sum.gpu_ms += static_cast<Int128>(r.gpus) * static_cast<Int128>(b - a);
    }
  }
  std::vector<PairTotal> out;
  out.reserve(sums.size());
  constexpr Int128 kMax = std::numeric_limits<std::int64_t>::max();
  for (const auto& [key, sum] : sums) {
    out.push_back(PairTotal{.lender = std::get<0>(key),
                            .borrower = std::get<1>(key),
                            .pool = std::get<2>(key),
                            .gpu_ms = static_cast<std::int64_t>(std::min(sum.gpu_ms, kMax)),
                            .records = sum.records});
  }
  return out;
}

std::vector<OpenUsage> LedgerBook::open_usages() const {
  std::vector<OpenUsage> out;
  out.reserve(open_usage_.size());
  for (const auto& [key, h] : open_usage_) {
    out.push_back(OpenUsage{std::get<0>(key), std::get<1>(key), std::get<2>(key), h.business_group, h.gpus, h.seq});
  }
  return out;
}

std::vector<BorrowRecord> LedgerBook::open_records() const {
  std::vector<BorrowRecord> out;
  for (const BorrowRecord& r : records_) {
    if (!r.end_ms) out.push_back(r);
  }
  return out;
}

std::vector<LedgerEntry> LedgerBook::trail(std::string_view workload) const {
  std::vector<LedgerEntry> out;
  const auto it = by_workload_.find(workload);
  if (it == by_workload_.end()) return out;
  out.reserve(it->second.size());
  for (const std::size_t i : it->second) out.push_back(entries_[i]);
  return out;
}

}  // namespace gpubank::bank
