#include "bank/ledger.hpp"

#include <gtest/gtest.h>

#include "support/ledger_builder.hpp"

namespace gpubank::bank {
namespace {

using testing::LedgerBuilder;

constexpr std::int64_t kMinute = 60'000;
constexpr std::int64_t kHour = 60 * kMinute;

const Position* find(const std::vector<Position>& positions, const std::string& group, const std::string& pool = "p") {
  for (const auto& p : positions) {
    if (p.pool == pool && p.business_group == group) return &p;
  }
  return nullptr;
}

LedgerBook fold(const std::vector<LedgerEntry>& entries) {
  LedgerBook book;
  auto ok = book.apply_all(entries);
  EXPECT_TRUE(ok) << ok.error();
  return book;
}

// Pool p: a (guarantee 10, no limits), b (guarantee 6, lending limit 4, borrowing limit 5),
// c (guarantee 4, borrowing limit 2). a runs 3 GPUs from t=1000; b runs 8 from t=2000, 2 of
// them borrowed from a.
LedgerBuilder three_groups() {
  LedgerBuilder l;
  l.quota(0, "a", 10);
  l.quota(0, "b", 6, 4, 5);
  l.quota(0, "c", 4, -1, 2);
  l.start(1000, "a", "team-a/a1", 3);
  l.start(2000, "b", "team-b/b1", 8);
  l.open(2000, "r1", "a", "b", "team-b/b1", 2);
  return l;
}

TEST(LedgerBook, PositionsFollowTheFormula) {
  const LedgerBook book = fold(three_groups().entries);
  const auto now = book.positions();
  ASSERT_EQ(now.size(), 3u);
  // a: unused 10-3=7, less 2 lent: offers 5. b: over its guarantee: offers 0. c: offers 4.
  const Position* a = find(now, "a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(*a, (Position{"p", "a", 10, -1, -1, 3, 0, 2, 0, 4}));  // borrowable: b 0 + c 4
  const Position* b = find(now, "b");
  ASSERT_NE(b, nullptr);
  // lending floor 6-4 = 2; borrowable min(5-2, a 5 + c 4) = 3.
  EXPECT_EQ(*b, (Position{"p", "b", 6, 4, 5, 8, 2, 0, 2, 3}));
  const Position* c = find(now, "c");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(*c, (Position{"p", "c", 4, -1, 2, 0, 0, 0, 0, 2}));  // min(2-0, 5+0)
  // Sorted by (pool, group).
  EXPECT_EQ(now[0].business_group, "a");
  EXPECT_EQ(now[2].business_group, "c");
}

TEST(LedgerBook, PositionsAtAPastTime) {
  const LedgerBook book = fold(three_groups().entries);
  EXPECT_TRUE(book.positions(-1).empty());
  const auto at0 = book.positions(0);
  ASSERT_EQ(at0.size(), 3u);
  EXPECT_EQ(find(at0, "a")->used, 0);
  EXPECT_EQ(find(at0, "a")->borrowable, 8);  // b offers min(6, 4) = 4, c offers 4
  const auto at1999 = book.positions(1999);
  const Position* a = find(at1999, "a");
  EXPECT_EQ(a->used, 3);
  EXPECT_EQ(a->lent, 0);
  const Position* b = find(at1999, "b");
  EXPECT_EQ(b->used, 0);
  EXPECT_EQ(b->borrowable, 5);  // min(5, a 7 + c 4)
  // Later than the last entry: the same as positions().
  EXPECT_EQ(book.positions(1'000'000), book.positions());
}

TEST(LedgerBook, LendingFloorIsNeverNegative) {
  LedgerBuilder l;
  l.quota(0, "a", 4, 10);  // lending limit above the guarantee
  const LedgerBook book = fold(l.entries);
  EXPECT_EQ(book.positions()[0].lending_floor, 0);
}

TEST(LedgerBook, QuotaChangesOverTime) {
  LedgerBuilder l;
  l.quota(0, "a", 4);
  l.quota(0, "b", 2);
  l.quota(5 * kHour, "a", 12, -1, -1, "LeaseActivated");
  l.quota(9 * kHour, "a", 4, -1, -1, "LeaseExpired");
  const LedgerBook book = fold(l.entries);
  EXPECT_EQ(find(book.positions(5 * kHour - 1), "a")->guaranteed, 4);
  EXPECT_EQ(find(book.positions(5 * kHour), "a")->guaranteed, 12);
  EXPECT_EQ(find(book.positions(5 * kHour), "b")->borrowable, 12);
  EXPECT_EQ(find(book.positions(9 * kHour), "a")->guaranteed, 4);
}

TEST(LedgerBook, PoolsAreSeparate) {
  LedgerBuilder l;
  l.quota(0, "a", 8);
  l.pool = "q";
  l.quota(0, "b", 2);
  const LedgerBook book = fold(l.entries);
  const auto now = book.positions();
  ASSERT_EQ(now.size(), 2u);
  EXPECT_EQ(find(now, "a", "p")->borrowable, 0);  // nobody else in p
  EXPECT_EQ(find(now, "b", "q")->borrowable, 0);
}

// b borrows from a (2 GPUs) and from c (3 GPUs, 90 minutes); later the record with c is
// re-attributed to a for its last 30 minutes.
LedgerBuilder two_lenders() {
  LedgerBuilder l;
  l.quota(0, "a", 10);
  l.quota(0, "b", 2);
  l.quota(0, "c", 8);
  l.start(0, "b", "team-b/big", 7);
  l.open(0, "r-a", "a", "b", "team-b/big", 2);
  l.open(0, "r-c", "c", "b", "team-b/big", 3);
  l.close(60 * kMinute, "r-c", "c", "b", "team-b/big", 3, "Reattributed");
  l.open(60 * kMinute, "r-c2", "a", "b", "team-b/big", 3);
  l.close(90 * kMinute, "r-c2", "a", "b", "team-b/big", 3, "Finished");
  l.close(90 * kMinute, "r-a", "a", "b", "team-b/big", 2, "Finished");
  l.end(90 * kMinute, "b", "team-b/big", 7);
  return l;
}

TEST(LedgerBook, PairTotalsAreExactIntegrals) {
  LedgerBuilder l;
  l.quota(0, "a", 8);
  l.quota(0, "b", 0);
  l.open(0, "r", "a", "b", "ns/w", 3);
  l.close(90 * kMinute, "r", "a", "b", "ns/w", 3);
  const LedgerBook book = fold(l.entries);
  const auto totals = book.pair_totals(0, 1000 * kHour);
  ASSERT_EQ(totals.size(), 1u);
  EXPECT_EQ(totals[0].gpu_ms, 3 * 90 * kMinute);
  EXPECT_EQ(totals[0].gpu_hours(), 4.5);  // 3 GPUs for 90 minutes
  EXPECT_EQ(totals[0].records, 1);
}

TEST(LedgerBook, BorrowerWithTwoLendersAndReattribution) {
  const LedgerBook book = fold(two_lenders().entries);
  const auto totals = book.pair_totals(0, 2 * kHour);
  ASSERT_EQ(totals.size(), 2u);
  // (a, b): 2 GPUs x 90 min + 3 GPUs x 30 min = 180 + 90 GPU-minutes = 4.5 GPU-hours.
  EXPECT_EQ(totals[0].lender, "a");
  EXPECT_EQ(totals[0].borrower, "b");
  EXPECT_EQ(totals[0].gpu_ms, (2 * 90 + 3 * 30) * kMinute);
  EXPECT_EQ(totals[0].gpu_hours(), 4.5);
  EXPECT_EQ(totals[0].records, 2);
  // (c, b): 3 GPUs x 60 min = 3 GPU-hours, until the re-attribution.
  EXPECT_EQ(totals[1].lender, "c");
  EXPECT_EQ(totals[1].gpu_hours(), 3.0);
  EXPECT_EQ(totals[1].records, 1);

  // During the first hour b borrows 5 (2 from a, 3 from c); after it, 5 (all from a).
  const auto before = book.positions(30 * kMinute);
  EXPECT_EQ(find(before, "b")->borrowed, 5);
  EXPECT_EQ(find(before, "a")->lent, 2);
  EXPECT_EQ(find(before, "c")->lent, 3);
  const auto after = book.positions(60 * kMinute);
  EXPECT_EQ(find(after, "b")->borrowed, 5);
  EXPECT_EQ(find(after, "a")->lent, 5);
  EXPECT_EQ(find(after, "c")->lent, 0);
  const auto done = book.positions();
  EXPECT_EQ(find(done, "b")->borrowed, 0);
  EXPECT_EQ(find(done, "b")->used, 0);
  EXPECT_EQ(find(done, "a")->lent, 0);
}

TEST(LedgerBook, RecordsAndTotalsClipToTheRange) {
  const LedgerBook book = fold(two_lenders().entries);
  // [30 min, 75 min): r-a spans both edges, r-c ends inside, r-c2 starts inside.
  const auto records = book.records(30 * kMinute, 75 * kMinute);
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[0].id, "r-a");
  EXPECT_EQ(records[0].start_ms, 0);
  EXPECT_EQ(records[0].end_ms, 90 * kMinute);
  EXPECT_EQ(records[0].close_reason, "Finished");
  EXPECT_EQ(records[1].id, "r-c");
  EXPECT_EQ(records[1].close_reason, "Reattributed");
  EXPECT_EQ(records[2].id, "r-c2");
  const auto totals = book.pair_totals(30 * kMinute, 75 * kMinute);
  ASSERT_EQ(totals.size(), 2u);
  EXPECT_EQ(totals[0].gpu_ms, (2 * 45 + 3 * 15) * kMinute);  // r-a 45 min, r-c2 15 min
  EXPECT_EQ(totals[1].gpu_ms, 3 * 30 * kMinute);             // r-c 30 min
  // Half-open: a record that ends at `from` or starts at `to` is outside.
  const auto edge = book.records(60 * kMinute, 90 * kMinute);
  ASSERT_EQ(edge.size(), 2u);
  EXPECT_EQ(edge[0].id, "r-a");
  EXPECT_EQ(edge[1].id, "r-c2");
  EXPECT_TRUE(book.records(90 * kMinute, 100 * kMinute).empty());
  EXPECT_TRUE(book.records(10, 10).empty());
  EXPECT_TRUE(book.pair_totals(90 * kMinute, 100 * kMinute).empty());
}

TEST(LedgerBook, OpenRecordsRunToTheLastEntry) {
  LedgerBuilder l;
  l.quota(0, "a", 8);
  l.open(kHour, "r", "a", "b", "ns/w", 2);
  l.quota(3 * kHour, "a", 8);  // the ledger knows up to 3 h
  const LedgerBook book = fold(l.entries);
  const auto records = book.records(0, 100 * kHour);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_FALSE(records[0].end_ms.has_value());
  EXPECT_EQ(to_json(records[0])["endMs"], nullptr);
  const auto totals = book.pair_totals(0, 100 * kHour);
  ASSERT_EQ(totals.size(), 1u);
  EXPECT_EQ(totals[0].gpu_ms, 2 * 2 * kHour);
  EXPECT_EQ(book.pair_totals(0, 2 * kHour)[0].gpu_ms, 2 * kHour);
}

TEST(LedgerBook, ZeroLengthRecordsAreListedWithinTheRange) {
  LedgerBuilder l;
  l.quota(0, "a", 8);
  l.open(kHour, "r", "a", "b", "ns/w", 2);
  l.close(kHour, "r", "a", "b", "ns/w", 2, "WithinGuarantee");
  const LedgerBook book = fold(l.entries);
  EXPECT_EQ(book.records(kHour, kHour + 1).size(), 1u);
  EXPECT_TRUE(book.records(0, kHour).empty());
  EXPECT_EQ(book.pair_totals(0, 2 * kHour)[0].gpu_ms, 0);
}

TEST(LedgerBook, TrailListsAWorkloadsEntriesInOrder) {
  const LedgerBook book = fold(two_lenders().entries);
  const auto trail = book.trail("team-b/big");
  ASSERT_EQ(trail.size(), 8u);
  EXPECT_EQ(trail.front().kind, LedgerKind::UsageStarted);
  EXPECT_EQ(trail.back().kind, LedgerKind::UsageEnded);
  for (std::size_t i = 1; i < trail.size(); ++i) EXPECT_LT(trail[i - 1].seq, trail[i].seq);
  EXPECT_TRUE(book.trail("team-b/other").empty());
}

// ---- errors: each names the seq and the rule, and leaves the book unchanged ------------

std::string error_of(LedgerBook& book, const LedgerEntry& e) {
  const std::size_t before = book.size();
  auto r = book.apply(e);
  EXPECT_EQ(book.size(), before);
  return r ? std::string("(accepted)") : r.error();
}

TEST(LedgerBook, RefusesTimeGoingBack) {
  LedgerBuilder l;
  l.quota(5000, "a", 4);
  l.quota(4999, "a", 5);
  LedgerBook book = fold({l.entries[0]});
  EXPECT_EQ(error_of(book, l.entries[1]),
            "seq 2: timeMs 4999 is before the previous entry's (seq 1 at 5000) [ledger.time-order]");
}

TEST(LedgerBook, RefusesSeqsThatDoNotIncrease) {
  LedgerBuilder l;
  l.quota(0, "a", 4);
  l.quota(0, "b", 4).seq = 1;
  LedgerBook book = fold({l.entries[0]});
  EXPECT_EQ(error_of(book, l.entries[1]), "seq 1: not after the previous entry's seq 1 [ledger.seq-order]");
  LedgerEntry zero = l.entries[0];
  zero.seq = 0;
  LedgerBook empty;
  EXPECT_EQ(error_of(empty, zero), "seq 0: seq must be 1 or more [ledger.seq-order]");
}

TEST(LedgerBook, RefusesClosingWhatIsNotOpen) {
  LedgerBuilder l;
  l.end(0, "a", "ns/w", 2);
  LedgerBook book;
  EXPECT_EQ(error_of(book, l.entries[0]),
            "seq 1: UsageEnded for workload ns/w on pool p flavor h100 without a UsageStarted [ledger.not-open]");
  LedgerBuilder r;
  r.close(0, "r9", "a", "b", "ns/w", 2);
  EXPECT_EQ(error_of(book, r.entries[0]), "seq 1: BorrowClosed for record \"r9\" without a BorrowOpened [ledger.not-open]");
  LedgerBuilder twice;
  twice.quota(0, "a", 8);
  twice.open(0, "r", "a", "b", "ns/w", 2);
  twice.close(1, "r", "a", "b", "ns/w", 2);
  twice.close(2, "r", "a", "b", "ns/w", 2);
  LedgerBook closed = fold({twice.entries[0], twice.entries[1], twice.entries[2]});
  EXPECT_EQ(error_of(closed, twice.entries[3]),
            "seq 4: BorrowClosed for record \"r\", already closed at seq 3 [ledger.not-open]");
}

TEST(LedgerBook, RefusesLendingBeyondWhatTheLenderCanLend) {
  // a guarantees 10 with a lending limit of 6 and uses 3: it may lend min(6, 10 - 3) = 6.
  LedgerBuilder l;
  l.quota(0, "a", 10, 6);
  l.quota(0, "b", 0);
  l.start(1, "a", "team-a/a1", 3);
  l.start(2, "b", "team-b/b1", 4);
  l.open(2, "r1", "a", "b", "team-b/b1", 4);
  l.start(3, "b", "team-b/b2", 3);
  l.open(3, "r2", "a", "b", "team-b/b2", 3);  // 4 + 3 = 7 > 6
  LedgerBook book = fold({l.entries.begin(), l.entries.end() - 1});
  EXPECT_EQ(error_of(book, l.entries.back()),
            "seq 7: BorrowOpened for record \"r2\": lender a would lend 7 GPUs in p, more than min(lendingLimit 6, "
            "guaranteed 10 - used 3) = 6 [ledger.over-lent]");
  EXPECT_EQ(book.size(), 6u);  // refused: nothing applied
  // Its own use counts at the time of lending: a uses 5 more, so only 2 are left to lend.
  LedgerBuilder used;
  used.quota(0, "a", 10);
  used.start(1, "a", "team-a/a1", 8);
  used.start(2, "b", "team-b/b1", 3);
  used.open(2, "r1", "a", "b", "team-b/b1", 3);
  LedgerBook by_use = fold({used.entries.begin(), used.entries.end() - 1});
  EXPECT_EQ(error_of(by_use, used.entries.back()),
            "seq 4: BorrowOpened for record \"r1\": lender a would lend 3 GPUs in p, more than min(lendingLimit unset, "
            "guaranteed 10 - used 8) = 2 [ledger.over-lent]");
  // A lender the ledger has no quota for guarantees nothing; what no group guarantees
  // ("cohort:<pool>") is not held to a guarantee.
  LedgerBuilder nobody;
  nobody.start(0, "b", "team-b/b1", 2);
  nobody.open(0, "r1", "x", "b", "team-b/b1", 1);
  nobody.open(0, "r2", "cohort:p", "b", "team-b/b1", 1);
  LedgerBook none = fold({nobody.entries[0]});
  EXPECT_EQ(error_of(none, nobody.entries[1]),
            "seq 2: BorrowOpened for record \"r1\": lender x would lend 1 GPUs in p, more than min(lendingLimit unset, "
            "guaranteed 0 - used 0) = 0 [ledger.over-lent]");
  EXPECT_TRUE(none.apply(nobody.entries[2]));
  // Lending exactly up to the limit, and again after a record closed, is fine.
  LedgerBuilder ok;
  ok.quota(0, "a", 10, 6);
  ok.start(1, "b", "team-b/b1", 6);
  ok.open(1, "r1", "a", "b", "team-b/b1", 6);
  ok.close(2, "r1", "a", "b", "team-b/b1", 6);
  ok.open(2, "r2", "a", "b", "team-b/b1", 6);
  fold(ok.entries);
}

TEST(LedgerBook, RefusesEndingAUsageWhoseRecordsAreOpen) {
  LedgerBuilder l;
  l.quota(0, "a", 10);
  l.start(1, "b", "team-b/b1", 4);
  l.open(1, "r1", "a", "b", "team-b/b1", 2);
  l.end(2, "b", "team-b/b1", 4);
  LedgerBook book = fold({l.entries.begin(), l.entries.end() - 1});
  EXPECT_EQ(error_of(book, l.entries.back()),
            "seq 4: UsageEnded for workload team-b/b1 on pool p flavor h100 while its borrow record \"r1\" is open: the "
            "record closes first [ledger.usage-ended-with-open-records]");
  // Closed first, the usage may end; another workload's open record does not matter.
  LedgerBuilder ok;
  ok.quota(0, "a", 10);
  ok.start(1, "b", "team-b/b1", 4);
  ok.open(1, "r1", "a", "b", "team-b/b1", 2);
  ok.start(1, "b", "team-b/b2", 2);
  ok.open(1, "r2", "a", "b", "team-b/b2", 2);
  ok.close(2, "r1", "a", "b", "team-b/b1", 2);
  ok.end(2, "b", "team-b/b1", 4);
  fold(ok.entries);
}

TEST(LedgerBook, RefusesDuplicateOpens) {
  LedgerBuilder l;
  l.start(0, "a", "ns/w", 2);
  l.start(1, "a", "ns/w", 2);
  LedgerBook book = fold({l.entries[0]});
  EXPECT_EQ(error_of(book, l.entries[1]),
            "seq 2: UsageStarted for workload ns/w on pool p flavor h100, already in use since seq 1 "
            "[ledger.duplicate-open]");
  LedgerBuilder r;
  r.quota(0, "a", 8);
  r.open(0, "r", "a", "b", "ns/w", 2);
  r.close(1, "r", "a", "b", "ns/w", 2);
  r.open(2, "r", "a", "b", "ns/w", 2);  // a record id is never reused
  LedgerBook records = fold({r.entries[0], r.entries[1], r.entries[2]});
  EXPECT_EQ(error_of(records, r.entries[3]),
            "seq 4: BorrowOpened for record \"r\", already opened at seq 2 [ledger.duplicate-open]");
}

TEST(LedgerBook, RefusesClosingEntriesThatDisagreeWithTheOpening) {
  LedgerBuilder l;
  l.start(0, "a", "ns/w", 2);
  l.end(1, "a", "ns/w", 3);
  LedgerBook book = fold({l.entries[0]});
  EXPECT_EQ(error_of(book, l.entries[1]),
            "seq 2: UsageEnded for workload ns/w on pool p flavor h100 says group a with 3 GPUs, but seq 1 started it "
            "for group a with 2 GPUs [ledger.close-mismatch]");
  LedgerBuilder r;
  r.quota(0, "a", 8);
  r.open(0, "r", "a", "b", "ns/w", 2);
  r.close(1, "r", "c", "b", "ns/w", 2);
  LedgerBook records = fold({r.entries[0], r.entries[1]});
  EXPECT_EQ(error_of(records, r.entries[2]),
            "seq 3: BorrowClosed for record \"r\": lender \"c\" differs from \"a\" at seq 2 [ledger.close-mismatch]");
}

TEST(LedgerBook, RefusesNegativeGpusAndInvalidEntries) {
  LedgerBuilder l;
  l.start(0, "a", "ns/w", -1);
  LedgerBook book;
  EXPECT_EQ(error_of(book, l.entries[0]), "seq 1: gpus: must not be negative (is -1) [ledger.invalid]");
  LedgerBuilder m;
  m.open(0, "r", "a", "a", "ns/w", 1);
  EXPECT_EQ(error_of(book, m.entries[0]),
            "seq 1: lender: must differ from the borrower (businessGroup \"a\") [ledger.invalid]");
}

TEST(LedgerBook, ApplyAllStopsAtTheFirstError) {
  LedgerBuilder l;
  l.quota(0, "a", 4);
  l.end(1, "a", "ns/w", 2);
  l.quota(2, "b", 4);
  LedgerBook book;
  auto r = book.apply_all(l.entries);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().find("seq 2:"), std::string::npos);
  EXPECT_EQ(book.size(), 1u);
}

// ---- validation ------------------------------------------------------------------------

TEST(ValidateEntry, RequiresTheFieldsOfEachKind) {
  LedgerBuilder l;
  LedgerEntry quota = l.quota(0, "a", 4);
  EXPECT_EQ(validate_entry(quota), std::nullopt);
  quota.reason = "Whim";
  EXPECT_EQ(validate_entry(quota),
            "reason: must be Policy, LeaseActivated or LeaseExpired for QuotaSet (is \"Whim\")");
  quota.reason = "Policy";
  quota.workload = "ns/w";
  EXPECT_EQ(validate_entry(quota), "workload: must be empty for QuotaSet");

  LedgerEntry start = l.start(0, "a", "ns/w", 2);
  EXPECT_EQ(validate_entry(start), std::nullopt);
  start.flavor.clear();
  EXPECT_EQ(validate_entry(start), "flavor: required");
  start.flavor = "h100";
  start.workload = "no-namespace";
  EXPECT_EQ(validate_entry(start), "workload: must be <namespace>/<name> (is \"no-namespace\")");
  start.workload = "ns/w";
  start.lending_limit = 3;
  EXPECT_EQ(validate_entry(start), "lendingLimit: only QuotaSet sets it (must be -1)");

  LedgerEntry end = l.end(0, "a", "ns/w", 2, "");
  EXPECT_EQ(validate_entry(end), "reason: required");

  LedgerEntry open = l.open(0, "r", "a", "b", "ns/w", 2);
  EXPECT_EQ(validate_entry(open), std::nullopt);
  open.record.clear();
  EXPECT_EQ(validate_entry(open), "record: required");

  LedgerEntry close = l.close(0, "r", "a", "b", "ns/w", 2, "");
  EXPECT_EQ(validate_entry(close), "reason: required");
}

TEST(ValidateEntry, ChecksRangesLengthsAndText) {
  LedgerBuilder l;
  LedgerEntry e = l.start(0, "a", "ns/w", kMaxGpus + 1);
  EXPECT_EQ(validate_entry(e), "gpus: must be at most 1000000 (is 1000001)");
  e.gpus = 1;
  e.time_ms = -5;
  EXPECT_EQ(validate_entry(e), "timeMs: must be between 0 and 9007199254740991 (is -5)");
  e.time_ms = 0;
  e.pool = std::string(254, 'x');
  EXPECT_EQ(validate_entry(e), "pool: longer than 253 bytes (254)");
  e.pool = std::string("p\0q", 3);
  EXPECT_EQ(validate_entry(e), "pool: must not contain NUL");
  e.pool = "p\xff";
  EXPECT_EQ(validate_entry(e), "pool: must be valid UTF-8 (bad byte at 1)");
  e.pool = "p\xc0\xaf";  // overlong '/'
  EXPECT_EQ(validate_entry(e), "pool: must be valid UTF-8 (invalid sequence at 1)");
  e.pool = "p\n";
  EXPECT_EQ(validate_entry(e), "pool: must not contain control characters (byte 10 at 1)");
  e.pool = "pool-\xc3\xa9";  // é
  EXPECT_EQ(validate_entry(e), std::nullopt);
  e.reason = "line one\nline two";  // reasons may span lines
  EXPECT_EQ(validate_entry(e), std::nullopt);
}

// ---- JSON ----------------------------------------------------------------------------------

TEST(LedgerJson, RoundTripsEveryField) {
  LedgerBuilder l;
  LedgerEntry e = l.close(1234, "rec-1", "a", "b", "ns/w", 5, "Reclaimed");
  e.seq = 77;
  const auto json = to_json(e);
  EXPECT_EQ(json.dump(),
            R"({"seq":77,"timeMs":1234,"kind":"BorrowClosed","pool":"p","flavor":"h100","businessGroup":"b",)"
            R"("lender":"a","workload":"ns/w","record":"rec-1","gpus":5,"lendingLimit":-1,"borrowingLimit":-1,)"
            R"("reason":"Reclaimed"})");
  auto back = ledger_entry_from_json(nlohmann::json::parse(json.dump()));
  ASSERT_TRUE(back) << back.error();
  EXPECT_EQ(*back, e);
}

TEST(LedgerJson, RefusesUnknownFieldsWrongTypesAndUnknownKinds) {
  EXPECT_EQ(ledger_entry_from_json(nlohmann::json::parse(R"({"kind":"QuotaSet","gpu":4})")).error(),
            "ledger entry: unknown field \"gpu\"");
  EXPECT_EQ(ledger_entry_from_json(nlohmann::json::parse(R"({"kind":"QuotaSet","gpus":4.5})")).error(),
            "ledger entry: field \"gpus\": must be an integer");
  EXPECT_EQ(ledger_entry_from_json(nlohmann::json::parse(R"({"kind":"QuotaSet","pool":1})")).error(),
            "ledger entry: field \"pool\": must be a string");
  EXPECT_EQ(ledger_entry_from_json(nlohmann::json::parse(R"({"kind":"Borrowed"})")).error(),
            "ledger entry: field \"kind\": unknown kind \"Borrowed\" (QuotaSet, UsageStarted, UsageEnded, BorrowOpened, "
            "BorrowClosed)");
  EXPECT_EQ(ledger_entry_from_json(nlohmann::json::parse(R"({"pool":"p"})")).error(),
            "ledger entry: field \"kind\" is required");
  EXPECT_EQ(ledger_entry_from_json(nlohmann::json::parse(R"({"kind":"QuotaSet","seq":18446744073709551615})")).error(),
            "ledger entry: field \"seq\": integer out of range");
  EXPECT_EQ(ledger_entry_from_json(nlohmann::json::parse("[1]")).error(), "ledger entry: must be a JSON object");
}

TEST(LedgerJson, PositionsRecordsAndTotalsAreByteIdenticalAcrossRuns) {
  const auto render = [] {
    const LedgerBook book = fold(two_lenders().entries);
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (const auto& p : book.positions(30 * kMinute)) out.push_back(to_json(p));
    for (const auto& r : book.records(0, 2 * kHour)) out.push_back(to_json(r));
    for (const auto& t : book.pair_totals(0, 2 * kHour)) out.push_back(to_json(t));
    return out.dump();
  };
  const std::string first = render();
  EXPECT_EQ(first, render());
  EXPECT_NE(first.find(R"({"lender":"a","borrower":"b","pool":"p","gpuMs":16200000,"gpuHours":4.5,"records":2})"),
            std::string::npos)
      << first;
}

}  // namespace
}  // namespace gpubank::bank
