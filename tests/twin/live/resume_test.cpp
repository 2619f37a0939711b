// ReplayWriter (twin/live/resume.hpp): a restart's replay is checked against the store of
// `gpubank up --data-dir` entry by entry on the content fields, and only what lies beyond
// the stored head is appended. On a real SQLite store in a temporary directory.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "policy/policy_set.hpp"
#include "store/store.hpp"
#include "support/paths.hpp"
#include "twin/cluster/inventory.hpp"
#include "twin/live/platform.hpp"
#include "twin/live/resume.hpp"

namespace gpubank::twin::live {
namespace {

namespace fs = std::filesystem;

bank::LedgerEntry usage(std::int64_t t, const std::string& workload, std::int64_t gpus) {
  bank::LedgerEntry e;
  e.time_ms = t;
  e.kind = bank::LedgerKind::UsageStarted;
  e.pool = "h100-train";
  e.flavor = "h100";
  e.business_group = "search";
  e.workload = workload;
  e.gpus = gpus;
  return e;
}

bank::AuditEntry audited(std::int64_t t, const std::string& object) {
  bank::AuditEntry a;
  a.time_ms = t;
  a.actor = "gpubank-bank";
  a.action = "Admitted";
  a.object = object;
  a.decision = "Admitted";
  a.reason = "within the guarantee";
  a.numbers = R"({"gpus":8})";
  return a;
}

class ReplayWriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "gpubank-resume-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::unique_ptr<store::Store> open() {
    auto s = store::Store::open((dir_ / "gpubank.db").string());
    EXPECT_TRUE(s) << (s ? "" : s.error());
    return s ? std::move(*s) : nullptr;
  }
  static std::unique_ptr<ReplayWriter> writer(store::Store& s, std::size_t page = 10'000) {
    auto w = ReplayWriter::open(s, page);
    EXPECT_TRUE(w) << (w ? "" : w.error());
    return w ? std::move(*w) : nullptr;
  }

  // Three instants of a run: (ledger, audit) each.
  std::vector<bank::LedgerEntry> l0{usage(0, "ns/a", 8), usage(0, "ns/b", 4)};
  std::vector<bank::AuditEntry> a0{audited(0, "Workload/ns/a")};
  std::vector<bank::LedgerEntry> l1{usage(60'000, "ns/c", 2)};
  std::vector<bank::AuditEntry> a1{audited(60'000, "Workload/ns/c"), audited(60'000, "Workload/ns/d")};
  std::vector<bank::LedgerEntry> l2{usage(120'000, "ns/e", 1)};
  std::vector<bank::AuditEntry> a2{audited(120'000, "Workload/ns/e")};
  fs::path dir_;
};

TEST_F(ReplayWriterTest, AFreshStoreGetsEverythingAndARestartAppendsOnlyWhatIsNew) {
  {
    auto s = open();
    auto w = writer(*s);
    EXPECT_TRUE(w->caught_up());
    ASSERT_TRUE((*w)(l0, a0));
    ASSERT_TRUE((*w)(l1, a1));
  }
  auto s = open();
  auto w = writer(*s, 2);  // pages of 2: the check reads the stored entries page by page
  EXPECT_EQ(w->stored_ledger(), 3);
  EXPECT_EQ(w->stored_audit(), 3);
  EXPECT_FALSE(w->caught_up());
  ASSERT_TRUE((*w)(l0, a0));
  EXPECT_FALSE(w->caught_up());
  ASSERT_TRUE((*w)(l1, a1));
  EXPECT_TRUE(w->caught_up());
  auto head = s->head();
  ASSERT_TRUE(head);
  EXPECT_EQ(head->ledger_seq, 3);  // nothing appended twice
  EXPECT_EQ(head->audit_seq, 3);
  ASSERT_TRUE((*w)(l2, a2));
  head = s->head();
  EXPECT_EQ(head->ledger_seq, 4);
  EXPECT_EQ(head->audit_seq, 4);
  auto stored = s->ledger(3, 10);
  ASSERT_TRUE(stored);
  ASSERT_EQ(stored->size(), 1U);
  EXPECT_EQ((*stored)[0].workload, "ns/e");
  auto verified = store::verify_audit(*s);
  ASSERT_TRUE(verified);
  EXPECT_TRUE(verified->ok);
}

TEST_F(ReplayWriterTest, AHeadInsideAnInstantIsCompletedFromTheReplay) {
  {
    auto s = open();
    ASSERT_TRUE(s->append(std::span(l0).first(1), {}));  // as if killed between two batches
  }
  auto s = open();
  auto w = writer(*s);
  ASSERT_TRUE((*w)(l0, a0));
  EXPECT_TRUE(w->caught_up());
  auto stored = s->ledger(0, 10);
  ASSERT_TRUE(stored);
  ASSERT_EQ(stored->size(), 2U);
  EXPECT_EQ((*stored)[1].workload, "ns/b");
  auto audit = s->audit(0, 10);
  ASSERT_TRUE(audit);
  EXPECT_EQ(audit->size(), 1U);
}

TEST_F(ReplayWriterTest, AnotherRunIsRefusedAtItsFirstDifferingSeqAndNothingIsAppended) {
  {
    auto s = open();
    auto w = writer(*s);
    ASSERT_TRUE((*w)(l0, a0));
    ASSERT_TRUE((*w)(l1, a1));
  }
  auto s = open();
  auto w = writer(*s);
  ASSERT_TRUE((*w)(l0, a0));
  auto other = l1;
  other[0].gpus = 3;
  auto done = (*w)(other, a1);
  ASSERT_FALSE(done);
  EXPECT_EQ(done.error(), "the store's ledger entry 3 differs from this run's: gpus: stored 2, replayed 3");
  EXPECT_EQ(w->mismatch(), done.error());
  EXPECT_FALSE((*w)(l2, a2));  // stopped for good
  auto head = s->head();
  ASSERT_TRUE(head);
  EXPECT_EQ(head->ledger_seq, 3);
  EXPECT_EQ(head->audit_seq, 3);

  auto w2 = writer(*s);
  auto other_audit = a0;
  other_audit[0].numbers = R"({"gpus":4})";
  done = (*w2)(l0, other_audit);
  ASSERT_FALSE(done);
  EXPECT_EQ(done.error(),
            R"(the store's audit entry 1 differs from this run's: numbers: stored "{\"gpus\":8}", replayed "{\"gpus\":4}")");
}

TEST_F(ReplayWriterTest, NewEntriesInOneLogWhileTheOtherHasStoredEntriesToComeAreAnotherRun) {
  {
    auto s = open();
    auto w = writer(*s);
    ASSERT_TRUE((*w)(l0, a0));
    ASSERT_TRUE((*w)(l1, a1));
  }
  auto s = open();
  auto w = writer(*s);
  ASSERT_TRUE((*w)(l0, a0));
  // This run makes its 3rd ledger entry and then a 4th before its 2nd audit entry.
  auto done = (*w)(std::vector{l1[0], l2[0]}, {});
  ASSERT_FALSE(done);
  EXPECT_EQ(done.error(),
            "the store's audit entry 2 is not made by this run by the instant of its ledger entry 4 (timeMs 120000), "
            "which the store does not hold");
  auto head = s->head();
  ASSERT_TRUE(head);
  EXPECT_EQ(head->ledger_seq, 3);
}

TEST(ReplayDifference, NamesTheFirstContentFieldAndIgnoresWhatTheStoreAssigns) {
  bank::LedgerEntry a = usage(5, "ns/a", 8);
  bank::LedgerEntry b = a;
  b.seq = 42;  // the store's
  EXPECT_EQ(ledger_difference(a, b), "");
  b.kind = bank::LedgerKind::UsageEnded;
  b.reason = "Finished";
  EXPECT_EQ(ledger_difference(a, b), R"(kind: stored "UsageStarted", replayed "UsageEnded")");
  b = a;
  b.record = "borrow-7";
  EXPECT_EQ(ledger_difference(a, b), R"(record: stored "", replayed "borrow-7")");
  bank::AuditEntry x = audited(5, "Workload/ns/a");
  bank::AuditEntry y = x;
  y.seq = 9;
  y.prev_hash = "00";
  y.hash = "ff";
  EXPECT_EQ(audit_difference(x, y), "");
  y.time_ms = 6;
  EXPECT_EQ(audit_difference(x, y), "timeMs: stored 5, replayed 6");
}

// up_command refuses other policies before the run starts with the version this computes:
// it must be the engine's.
TEST(ReplayPolicyVersion, IsTheRunsOwn) {
  const auto policies = policy::load_policy_set({testing::source_dir() + "/examples/policies"});
  DayOptions day;
  day.hours = 1;
  day.serving_load = 0.05;
  auto p = Platform::create(policies, day);
  ASSERT_TRUE(p) << p.error();
  EXPECT_EQ(policy_version(policies), (*p)->result().policy_version);
  EXPECT_EQ(policy_version(policies).size(), 64U);
}

}  // namespace
}  // namespace gpubank::twin::live
