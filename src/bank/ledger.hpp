// The resource bank's ledger: the entries it appends (quota set, usage started and ended,
// borrow records opened and closed) and the LedgerBook, a pure fold of those entries into
// positions per pool and business group, borrow records, GPU-hours per lender/borrower
// pair and per-workload trails, at any time the ledger covers.
//
// Pure: no I/O, no clocks. The store (src/store) persists entries and assigns their seqs;
// the bank (the producer) decides what they say.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/expected.hpp"

namespace gpubank::bank {

enum class LedgerKind { QuotaSet, UsageStarted, UsageEnded, BorrowOpened, BorrowClosed };

[[nodiscard]] std::string_view kind_name(LedgerKind kind);
[[nodiscard]] std::optional<LedgerKind> parse_kind(std::string_view name);

struct LedgerEntry {
  std::int64_t seq = 0;        // assigned by the store on append: 1, 2, 3, ... gapless
  std::int64_t time_ms = 0;    // virtual ms since the run's start (twin) or Unix ms (cluster)
  LedgerKind kind{};
  std::string pool;            // policy pool name, e.g. "h100-train"
  std::string flavor;          // Kueue ResourceFlavor name
  std::string business_group;  // QuotaSet/Usage*: the group; Borrow*: the borrower
  std::string lender;          // Borrow*: the lending group
  std::string workload;        // Usage*/Borrow*: "<namespace>/<name>"
  std::string record;          // Borrow*: the borrow record id (unique per record)
  std::int64_t gpus = 0;       // QuotaSet: guaranteed; Usage*/Borrow*: GPUs of this entry
  std::int64_t lending_limit = -1;    // QuotaSet only; -1 = unset (all unused guarantee lendable)
  std::int64_t borrowing_limit = -1;  // QuotaSet only; -1 = unset (no cap)
  std::string reason;  // QuotaSet: Policy|LeaseActivated|LeaseExpired; UsageEnded/BorrowClosed: why
  // The ledger's hash chain, assigned by the store like seq (see bank/audit.hpp,
  // canonical_ledger_text): the hash of the previous entry ("" before the first), the audit
  // head (seq and hash) as of the end of the append that stored this entry, and this
  // entry's hash. Empty / 0 on entries not stored yet.
  std::string prev_hash;
  std::int64_t audit_seq = 0;
  std::string audit_hash;
  std::string hash;

  friend bool operator==(const LedgerEntry&, const LedgerEntry&) = default;
};

// Limits every entry must respect (checked by validate_entry, by the store before it
// persists anything and by the LedgerBook's fold).
inline constexpr std::int64_t kMaxGpus = 1'000'000;
inline constexpr std::int64_t kMaxTimeMs = (std::int64_t{1} << 53) - 1;  // exact in a JSON double
inline constexpr std::size_t kMaxNameLength = 253;                       // pool, flavor, groups
inline constexpr std::size_t kMaxWorkloadLength = 317;                   // 63 + "/" + 253
inline constexpr std::size_t kMaxRecordLength = 256;
inline constexpr std::size_t kMaxReasonLength = 4096;

// QuotaSet reasons.
inline constexpr std::string_view kQuotaReasons[] = {"Policy", "LeaseActivated", "LeaseExpired"};

// Checks one entry on its own (seq is not looked at: the store assigns it). Per kind:
//   QuotaSet      pool, businessGroup, reason (one of kQuotaReasons); gpus = guaranteed;
//                 lendingLimit, borrowingLimit >= -1; flavor may be empty; no lender,
//                 workload or record.
//   UsageStarted  pool, flavor, businessGroup, workload; no lender or record.
//   UsageEnded    as UsageStarted, plus reason.
//   BorrowOpened  pool, flavor, businessGroup (the borrower), lender (another group),
//                 workload, record.
//   BorrowClosed  as BorrowOpened, plus reason (the close reason).
// Always: 0 <= timeMs <= kMaxTimeMs, 0 <= gpus <= kMaxGpus, limits -1 except on QuotaSet,
// every text valid UTF-8 without control characters (reason may hold tabs and newlines)
// and within its length limit. Returns the first problem as "<field>: <rule>", or nullopt.
[[nodiscard]] std::optional<std::string> validate_entry(const LedgerEntry& entry);

// JSON with camelCase fields: seq, timeMs, kind, pool, flavor, businessGroup, lender,
// workload, record, gpus, lendingLimit, borrowingLimit, reason, and for an entry the store
// has chained prevHash, auditSeq, auditHash, hash. Encoding writes every field
// (the four chain fields only when one of them is set, so unstored entries encode as before);
// decoding requires kind, accepts missing fields as their defaults and refuses unknown
// fields and wrong types (it does not run validate_entry).
[[nodiscard]] nlohmann::ordered_json to_json(const LedgerEntry& entry);
[[nodiscard]] Expected<LedgerEntry> ledger_entry_from_json(const nlohmann::json& json);

// Position of one business group in one pool at a time.
//
//   used        = Σ GPUs of the group's open usages (UsageStarted not yet UsageEnded)
//   borrowed    = Σ GPUs of open borrow records with the group as borrower
//   lent        = Σ GPUs of open borrow records with the group as lender
//   lendingFloor = max(0, guaranteed - lendingLimit) with a lending limit, else 0: the part
//                 of the guarantee that is never lent
//   borrowable  = max(0, min(cap, supply)) where
//                 cap    = borrowingLimit - borrowed, or unlimited when borrowingLimit = -1
//                 supply = Σ over the other groups j of the pool of
//                          max(0, min(guaranteed_j - used_j, lendable_j) - lent_j),
//                          lendable_j = lendingLimit_j, or guaranteed_j when unset
//                 i.e. what the others could still lend now: their unused guarantee, capped
//                 by their lending limit, less what they already lend.
struct Position {
  std::string pool;
  std::string business_group;
  std::int64_t guaranteed = 0;
  std::int64_t lending_limit = -1;
  std::int64_t borrowing_limit = -1;
  std::int64_t used = 0;
  std::int64_t borrowed = 0;
  std::int64_t lent = 0;
  std::int64_t lending_floor = 0;
  std::int64_t borrowable = 0;
  friend bool operator==(const Position&, const Position&) = default;
};

// One borrow record: opened by BorrowOpened, closed by BorrowClosed.
struct BorrowRecord {
  std::string id;
  std::string lender;
  std::string borrower;
  std::string pool;
  std::string flavor;
  std::int64_t gpus = 0;
  std::string workload;
  std::int64_t start_ms = 0;
  std::optional<std::int64_t> end_ms;  // nullopt while open
  std::string close_reason;            // empty while open
  std::int64_t opened_seq = 0;
  std::int64_t closed_seq = 0;  // 0 while open
  friend bool operator==(const BorrowRecord&, const BorrowRecord&) = default;
};

// GPU time borrowed by `borrower` from `lender` in a pool over a range: the exact integral
// of the records, in GPU·ms; gpu_hours() converts at the edge.
struct PairTotal {
  std::string lender;
  std::string borrower;
  std::string pool;
  std::int64_t gpu_ms = 0;  // saturates at INT64_MAX (2.5 billion GPU-hours)
  std::int64_t records = 0;  // records that contributed (overlap the range)
  [[nodiscard]] double gpu_hours() const { return static_cast<double>(gpu_ms) / 3'600'000.0; }
  friend bool operator==(const PairTotal&, const PairTotal&) = default;
};

// A usage not ended yet (UsageStarted without its UsageEnded).
struct OpenUsage {
  std::string pool;
  std::string flavor;
  std::string workload;
  std::string business_group;
  std::int64_t gpus = 0;
  std::int64_t seq = 0;  // of its UsageStarted
  friend bool operator==(const OpenUsage&, const OpenUsage&) = default;
};

// Folds ledger entries in seq order and answers queries about any time up to the last
// entry. Output is deterministic: positions sorted by (pool, group), records by opening
// seq, pair totals by (lender, borrower, pool).
//
// apply() rejects, leaving the book unchanged, and names the seq and the rule:
//   [ledger.seq-order]      seq not above the previous one (or below 1)
//   [ledger.time-order]     timeMs before the previous entry's
//   [ledger.invalid]        validate_entry failed
//   [ledger.duplicate-open] UsageStarted for a (pool, flavor, workload) already in use, or
//                           BorrowOpened with a record id seen before
//   [ledger.not-open]       UsageEnded / BorrowClosed without its opening
//   [ledger.close-mismatch] a closing entry whose group, GPUs (or lender, pool, flavor,
//                           workload for a record) differ from its opening
//   [ledger.over-lent]      BorrowOpened that would make its lender lend more than
//                           min(lendingLimit, guaranteed - used) at that moment (lender
//                           "cohort:<pool>", what no group guarantees, excepted)
//   [ledger.usage-ended-with-open-records] UsageEnded while a borrow record of the same
//                           (pool, flavor, workload) is still open: records close first
class LedgerBook {
 public:
  Expected<bool> apply(const LedgerEntry& entry);
  // Applies in order; stops at the first error (the entries before it stay applied).
  Expected<bool> apply_all(std::span<const LedgerEntry> entries);

  // Positions at a time: after every entry with timeMs <= at_ms, for every (pool, group)
  // that some such entry names (as group, borrower or lender). O(keys · log entries).
  [[nodiscard]] std::vector<Position> positions(std::int64_t at_ms) const;
  // Positions after the last entry.
  [[nodiscard]] std::vector<Position> positions() const;

  // Records overlapping [from_ms, to_ms): start < to and (open or end > from); a
  // zero-length record counts when from <= start < to.
  [[nodiscard]] std::vector<BorrowRecord> records(std::int64_t from_ms, std::int64_t to_ms) const;
  // Per (lender, borrower, pool): Σ gpus · |[start, end) ∩ [from, to)| over the records. An
  // open record runs up to the last entry's time (what the ledger knows), not beyond.
  [[nodiscard]] std::vector<PairTotal> pair_totals(std::int64_t from_ms, std::int64_t to_ms) const;
  // Every entry naming the workload, in seq order.
  [[nodiscard]] std::vector<LedgerEntry> trail(std::string_view workload) const;
  // Usages open after the last entry, by (pool, flavor, workload).
  [[nodiscard]] std::vector<OpenUsage> open_usages() const;
  // Borrow records open after the last entry, in opening order.
  [[nodiscard]] std::vector<BorrowRecord> open_records() const;

  [[nodiscard]] std::size_t size() const { return entries_.size(); }
  [[nodiscard]] std::int64_t last_seq() const { return entries_.empty() ? 0 : entries_.back().seq; }
  [[nodiscard]] std::int64_t last_time_ms() const { return entries_.empty() ? 0 : entries_.back().time_ms; }
  [[nodiscard]] const std::vector<LedgerEntry>& entries() const { return entries_; }

 private:
  using Key = std::pair<std::string, std::string>;  // (pool, group)
  // A key's figures from one time on (a step of its history).
  struct Step {
    std::int64_t time_ms = 0;
    std::int64_t guaranteed = 0;
    std::int64_t lending_limit = -1;
    std::int64_t borrowing_limit = -1;
    std::int64_t used = 0;
    std::int64_t borrowed = 0;
    std::int64_t lent = 0;
  };
  struct Holding {
    std::string business_group;
    std::int64_t gpus = 0;
    std::int64_t seq = 0;
  };

  Step& step_for(const Key& key, std::int64_t time_ms);
  [[nodiscard]] std::optional<std::string> check(const LedgerEntry& e) const;
  // The id of an open borrow record of e's (pool, flavor, workload), if any.
  [[nodiscard]] std::optional<std::string> open_record_of(const LedgerEntry& e) const;
  // Why opening e's record would lend more than its lender may, if it would.
  [[nodiscard]] std::optional<std::string> over_lent(const LedgerEntry& e) const;

  std::vector<LedgerEntry> entries_;
  std::map<Key, std::vector<Step>> history_;  // per key, steps in time order (one per time)
  std::map<std::tuple<std::string, std::string, std::string>, Holding> open_usage_;  // (pool, flavor, workload)
  std::vector<BorrowRecord> records_;                                                  // in opening order
  std::map<std::string, std::size_t, std::less<>> record_index_;                       // id -> records_
  std::map<std::string, std::vector<std::size_t>, std::less<>> by_workload_;          // -> entries_
};

[[nodiscard]] nlohmann::ordered_json to_json(const Position& position);
[[nodiscard]] nlohmann::ordered_json to_json(const BorrowRecord& record);
[[nodiscard]] nlohmann::ordered_json to_json(const PairTotal& total);

}  // namespace gpubank::bank
