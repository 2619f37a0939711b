// The store suite, run against SQLite and against a real PostgreSQL server started by the
// test (support/postgres_server.hpp).
#include "store/store.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>
#include <thread>

#include "store/backends.hpp"
#include "support/ledger_builder.hpp"

namespace gpubank::store {
namespace {

using testing::audit_entry;
using testing::LedgerBuilder;

template <class Backend>
class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto location = Backend::fresh_location();
    ASSERT_TRUE(location) << location.error();
    location_ = *location;
  }
  void TearDown() override { Backend::remove(location_); }

  std::unique_ptr<Store> open(const OpenOptions& options = {}) {
    auto s = Store::open(location_, options);
    EXPECT_TRUE(s) << s.error();
    return s ? std::move(*s) : nullptr;
  }

  std::string location_;
};

using Backends = ::testing::Types<testing::SqliteBackend, testing::PostgresBackend>;
TYPED_TEST_SUITE(StoreTest, Backends, testing::BackendNames);

// Three groups, a workload that borrows.
std::vector<bank::LedgerEntry> some_entries(std::int64_t t0 = 0) {
  LedgerBuilder l;
  l.quota(t0, "a", 10);
  l.quota(t0, "b", 2);
  l.start(t0 + 1000, "b", "team-b/train", 6);
  l.open(t0 + 1000, "rec-" + std::to_string(t0), "a", "b", "team-b/train", 4);
  for (auto& e : l.entries) e.seq = 0;  // the store assigns seqs
  return l.entries;
}

TYPED_TEST(StoreTest, OpensEmptyAtTheLatestSchemaVersion) {
  auto store = this->open();
  ASSERT_TRUE(store);
  auto version = store->schema_version();
  ASSERT_TRUE(version) << version.error();
  EXPECT_EQ(*version, kSchemaVersion);
  auto head = store->head();
  ASSERT_TRUE(head) << head.error();
  EXPECT_EQ(*head, Head{});
  auto ledger = store->ledger(0, 100);
  ASSERT_TRUE(ledger) << ledger.error();
  EXPECT_TRUE(ledger->empty());
  EXPECT_EQ(store->backend(), TypeParam::kName);
}

TYPED_TEST(StoreTest, AppendAssignsGaplessSeqsAndChainsTheAudit) {
  auto store = this->open();
  ASSERT_TRUE(store);
  const auto entries = some_entries();
  const std::vector<bank::AuditEntry> decisions{audit_entry(1000, "Workload/team-b/train"),
                                                audit_entry(1000, "Workload/team-b/train", "Borrowed")};
  auto first = store->append(entries, decisions);
  ASSERT_TRUE(first) << first.error();
  ASSERT_EQ(first->ledger.size(), 4u);
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(first->ledger[i].seq, static_cast<std::int64_t>(i) + 1);
    bank::LedgerEntry expected = entries[i];
    expected.seq = first->ledger[i].seq;
    // Chained after the previous entry, naming the audit head at the end of this append.
    expected.prev_hash = i == 0 ? "" : first->ledger[i - 1].hash;
    expected.audit_seq = 2;
    expected.audit_hash = first->audit[1].hash;
    expected.hash = bank::ledger_hash(expected);
    EXPECT_EQ(first->ledger[i], expected);
  }
  ASSERT_EQ(first->audit.size(), 2u);
  EXPECT_EQ(first->audit[0].seq, 1);
  EXPECT_EQ(first->audit[0].prev_hash, "");
  EXPECT_EQ(first->audit[1].prev_hash, first->audit[0].hash);
  EXPECT_EQ(first->audit[1].hash, bank::audit_hash(first->audit[1]));

  auto second = store->append(some_entries(5000), {{audit_entry(5000, "Workload/team-b/train2")}});
  ASSERT_TRUE(second) << second.error();
  EXPECT_EQ(second->ledger.front().seq, 5);
  EXPECT_EQ(second->ledger.front().audit_seq, 3);
  EXPECT_EQ(second->audit.front().seq, 3);
  EXPECT_EQ(second->audit.front().prev_hash, first->audit[1].hash);

  // What is read back is what append returned.
  auto ledger = store->ledger(0, 100);
  ASSERT_TRUE(ledger) << ledger.error();
  ASSERT_EQ(ledger->size(), 8u);
  EXPECT_EQ((*ledger)[0], first->ledger[0]);
  EXPECT_EQ((*ledger)[7], second->ledger[3]);
  auto audit = store->audit(0, 100);
  ASSERT_TRUE(audit) << audit.error();
  ASSERT_EQ(audit->size(), 3u);
  EXPECT_EQ((*audit)[2], second->audit[0]);
  auto head = store->head();
  ASSERT_TRUE(head);
  EXPECT_EQ(*head, (Head{8, 6000, 3, second->audit[0].hash, second->ledger[3].hash}));
  EXPECT_EQ(second->ledger.front().prev_hash, first->ledger.back().hash);
  auto report = verify_audit(*store);
  ASSERT_TRUE(report) << report.error();
  EXPECT_TRUE(report->ok) << report->problem;
  EXPECT_EQ(report->entries, 3);
}

TYPED_TEST(StoreTest, ReopeningKeepsEverything) {
  AppendResult appended;
  {
    auto store = this->open();
    ASSERT_TRUE(store);
    auto r = store->append(some_entries(), {{audit_entry(0, "Workload/ns/a")}});
    ASSERT_TRUE(r) << r.error();
    appended = *r;
  }
  auto store = this->open();
  ASSERT_TRUE(store);
  auto ledger = store->ledger(0, 100);
  ASSERT_TRUE(ledger);
  EXPECT_EQ(*ledger, appended.ledger);
  auto audit = store->audit(0, 100);
  ASSERT_TRUE(audit);
  EXPECT_EQ(*audit, appended.audit);
  // And appending continues where it stopped.
  auto next = store->append({}, {{audit_entry(0, "Workload/ns/b")}});
  ASSERT_TRUE(next) << next.error();
  EXPECT_EQ(next->audit[0].seq, 2);
  EXPECT_EQ(next->audit[0].prev_hash, appended.audit[0].hash);
}

TYPED_TEST(StoreTest, ABadBatchIsRejectedWholeNamingTheEntryAndTheField) {
  auto store = this->open();
  ASSERT_TRUE(store);
  auto entries = some_entries();
  entries[2].gpus = -3;
  auto r = store->append(entries, {{audit_entry(0, "Workload/ns/a")}});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error(), "invalid batch, nothing appended: ledger[2].gpus: must not be negative (is -3)");

  auto bad_audit = audit_entry(0, "Workload/ns/a");
  bad_audit.numbers = "not json";
  r = store->append(some_entries(), {{audit_entry(0, "Workload/ns/a"), bad_audit}});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error(),
            "invalid batch, nothing appended: audit[1].numbers: must be the text of a JSON object (\"{}\" when there are "
            "none)");

  entries = some_entries();
  entries[3].time_ms = 500;  // before entries[2]
  r = store->append(entries, {});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error(),
            "invalid batch, nothing appended: ledger[3].timeMs: 500 is before the previous entry's 1000 (times must "
            "not go back)");

  auto head = store->head();
  ASSERT_TRUE(head);
  EXPECT_EQ(*head, Head{});  // nothing of any of them was stored
}

TYPED_TEST(StoreTest, LedgerTimeMustNotGoBackAcrossAppends) {
  auto store = this->open();
  ASSERT_TRUE(store);
  ASSERT_TRUE(store->append(some_entries(10'000), {}));
  auto r = store->append(some_entries(0), {});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error(),
            "invalid batch, nothing appended: ledger[0].timeMs: 0 is before the last stored entry's (seq 4 at 11000): "
            "ledger times must not go back");
  EXPECT_EQ(store->head()->ledger_seq, 4);
  EXPECT_TRUE(store->append(some_entries(11'000), {}));  // equal times are fine
}

TYPED_TEST(StoreTest, TextIsStoredExactly) {
  auto store = this->open();
  ASSERT_TRUE(store);
  auto entries = some_entries();
  entries[2].reason = "it's \"quoted\", back\\slashed,\nmulti-line, 100% _wild_; DROP TABLE ledger; -- \xc3\xa9\xe2\x82\xac";
  entries[2].kind = bank::LedgerKind::UsageStarted;
  auto decision = audit_entry(0, "Workload/ns/'; DELETE FROM audit; --");
  decision.reason = "tab\there, newline\nthere, emoji \xf0\x9f\x9a\x80";
  decision.numbers = "{ \"b\" : 2,\n  \"a\" : [1, 2.5e3] }";
  auto r = store->append(entries, {{decision}});
  ASSERT_TRUE(r) << r.error();
  auto ledger = store->ledger(2, 1);
  ASSERT_TRUE(ledger);
  ASSERT_EQ(ledger->size(), 1u);
  EXPECT_EQ((*ledger)[0].reason, entries[2].reason);
  auto audit = store->audit(0, 10);
  ASSERT_TRUE(audit);
  ASSERT_EQ(audit->size(), 1u);
  EXPECT_EQ((*audit)[0].object, decision.object);
  EXPECT_EQ((*audit)[0].reason, decision.reason);
  EXPECT_EQ((*audit)[0].numbers, decision.numbers);
  EXPECT_TRUE(verify_audit(*store)->ok);
}

TYPED_TEST(StoreTest, ReadsInPagesAndByWorkload) {
  auto store = this->open();
  ASSERT_TRUE(store);
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(store->append(some_entries(i * 10'000), {}));
  auto page = store->ledger(0, 7);
  ASSERT_TRUE(page);
  ASSERT_EQ(page->size(), 7u);
  EXPECT_EQ(page->back().seq, 7);
  page = store->ledger(17, 7);
  ASSERT_TRUE(page);
  ASSERT_EQ(page->size(), 3u);
  EXPECT_EQ(page->front().seq, 18);
  auto trail = store->ledger_for_workload("team-b/train");
  ASSERT_TRUE(trail) << trail.error();
  ASSERT_EQ(trail->size(), 10u);  // UsageStarted and BorrowOpened of each append
  EXPECT_EQ(trail->front().seq, 3);
  EXPECT_EQ(trail->back().seq, 20);

  // load_book folds the whole ledger, page by page.
  auto book = load_book(*store, 3);
  ASSERT_FALSE(book);  // each append starts team-b/train again while it still runs
  EXPECT_NE(book.error().find("seq 7: UsageStarted for workload team-b/train"), std::string::npos) << book.error();
}

TYPED_TEST(StoreTest, LoadBookFoldsTheStoredLedger) {
  auto store = this->open();
  ASSERT_TRUE(store);
  LedgerBuilder l;
  l.quota(0, "a", 10);
  l.quota(0, "b", 2);
  l.start(1000, "b", "ns/w", 6);
  l.open(1000, "r1", "a", "b", "ns/w", 4);
  l.close(3'601'000, "r1", "a", "b", "ns/w", 4);
  l.end(3'601'000, "b", "ns/w", 6);
  // One entry per append, and then in a batch.
  for (std::size_t i = 0; i < 3; ++i) ASSERT_TRUE(store->append({&l.entries[i], 1}, {}));
  ASSERT_TRUE(store->append({l.entries.data() + 3, 3}, {}));
  auto book = load_book(*store, 2);
  ASSERT_TRUE(book) << book.error();
  EXPECT_EQ(book->size(), 6u);
  const auto totals = book->pair_totals(0, 10'000'000);
  ASSERT_EQ(totals.size(), 1u);
  EXPECT_EQ(totals[0].gpu_hours(), 4.0);
  EXPECT_EQ(book->positions(2000)[1].borrowed, 4);
}

TYPED_TEST(StoreTest, ConcurrentWritersKeepSeqsGaplessAndTheChainUnbroken) {
  // Two Store objects (two connections: like two processes or replicas), three threads on
  // each, every thread appending single entries and batches.
  auto one = this->open();
  auto two = this->open();
  ASSERT_TRUE(one && two);
  constexpr int kThreads = 6;
  constexpr int kAppends = 15;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    Store& store = t % 2 == 0 ? *one : *two;
    threads.emplace_back([&store, t] {
      for (int i = 0; i < kAppends; ++i) {
        LedgerBuilder l;
        const std::string group = "g" + std::to_string(t);
        for (int k = 0; k <= i % 3; ++k) l.quota(0, group, i * 10 + k);
        std::vector<bank::AuditEntry> audit;
        for (int k = 0; k <= (i + 1) % 2; ++k) {
          audit.push_back(audit_entry(0, "Decision/" + group + "/" + std::to_string(i) + "/" + std::to_string(k)));
        }
        auto r = store.append(l.entries, audit);
        ASSERT_TRUE(r) << r.error();
      }
    });
  }
  for (auto& th : threads) th.join();
  auto ledger = one->ledger(0, 100'000);
  ASSERT_TRUE(ledger);
  std::map<std::string, std::int64_t> last_gpus;
  for (std::size_t i = 0; i < ledger->size(); ++i) {
    const auto& e = (*ledger)[i];
    ASSERT_EQ(e.seq, static_cast<std::int64_t>(i) + 1);
    // Each thread's entries are stored in the order it appended them.
    auto [it, fresh] = last_gpus.emplace(e.business_group, e.gpus);
    if (!fresh) {
      EXPECT_GT(e.gpus, it->second);
      it->second = e.gpus;
    }
  }
  EXPECT_EQ(ledger->size(), static_cast<std::size_t>(kThreads * 30));  // 1, 2, 3, 1, 2, 3, ... entries per append
  auto audit = one->audit(0, 100'000);
  ASSERT_TRUE(audit);
  std::set<std::string> objects;
  for (const auto& e : *audit) EXPECT_TRUE(objects.insert(e.object).second) << "duplicate " << e.object;
  EXPECT_EQ(audit->size(), static_cast<std::size_t>(kThreads * (8 * 2 + 7)));  // i even: 2, odd: 1
  auto report = verify_audit(*two);
  ASSERT_TRUE(report);
  EXPECT_TRUE(report->ok) << report->problem;
  EXPECT_EQ(report->entries, static_cast<std::int64_t>(audit->size()));
}

TYPED_TEST(StoreTest, TheDatabaseRefusesUpdateAndDelete) {
  auto store = this->open();
  ASSERT_TRUE(store);
  ASSERT_TRUE(store->append(some_entries(), {{audit_entry(0, "Workload/ns/a"), audit_entry(0, "Workload/ns/b")}}));
  for (const std::string sql : {"UPDATE ledger SET gpus = 99 WHERE seq = 1", "DELETE FROM ledger WHERE seq = 4",
                                "UPDATE audit SET reason = 'nothing to see' WHERE seq = 1", "DELETE FROM audit"}) {
    auto r = TypeParam::exec_raw(this->location_, sql);
    ASSERT_FALSE(r) << sql;
    EXPECT_NE(r.error().find("append-only"), std::string::npos) << r.error();
  }
  auto ledger = store->ledger(0, 100);
  ASSERT_TRUE(ledger);
  EXPECT_EQ(ledger->size(), 4u);
  EXPECT_EQ((*ledger)[0].gpus, 10);
  auto audit = store->audit(0, 100);
  ASSERT_TRUE(audit);
  EXPECT_EQ(audit->size(), 2u);
  EXPECT_TRUE(verify_audit(*store)->ok);
}

TYPED_TEST(StoreTest, VerifyFindsARowChangedUnderneath) {
  auto store = this->open();
  ASSERT_TRUE(store);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(store->append({}, {{audit_entry(i, "Workload/ns/w" + std::to_string(i))}}));
  ASSERT_TRUE(TypeParam::exec_raw(this->location_, TypeParam::drop_audit_triggers()));
  auto changed = TypeParam::exec_raw(this->location_, "UPDATE audit SET decision = 'Rejected' WHERE seq = 3");
  ASSERT_TRUE(changed) << changed.error();
  auto report = verify_audit(*store);
  ASSERT_TRUE(report) << report.error();
  EXPECT_FALSE(report->ok);
  EXPECT_EQ(report->broken_seq, 3);
  EXPECT_EQ(report->entries, 2);
  EXPECT_NE(report->problem.find("hash mismatch"), std::string::npos) << report->problem;
}

TYPED_TEST(StoreTest, VerifyFindsARowDeletedUnderneath) {
  auto store = this->open();
  ASSERT_TRUE(store);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(store->append({}, {{audit_entry(i, "Workload/ns/w" + std::to_string(i))}}));
  ASSERT_TRUE(TypeParam::exec_raw(this->location_, TypeParam::drop_audit_triggers()));
  ASSERT_TRUE(TypeParam::exec_raw(this->location_, "DELETE FROM audit WHERE seq = 2"));
  auto report = verify_audit(*store);
  ASSERT_TRUE(report);
  EXPECT_FALSE(report->ok);
  EXPECT_EQ(report->broken_seq, 2);
  EXPECT_EQ(report->problem, "gap in seq: expected 2, found 3 (an entry was removed or moved)");
}

TYPED_TEST(StoreTest, MigratesAnOlderStore) {
  {
    auto old = this->open(OpenOptions{.create = true, .migrate_to = 1});
    ASSERT_TRUE(old);
    EXPECT_EQ(*old->schema_version(), 1);
    ASSERT_TRUE(old->append(some_entries(), {}));
  }
  // Version 1 had no triggers yet.
  ASSERT_TRUE(TypeParam::exec_raw(this->location_, "UPDATE ledger SET reason = 'Policy' WHERE seq = 1"));
  auto store = this->open();
  ASSERT_TRUE(store);
  EXPECT_EQ(*store->schema_version(), kSchemaVersion);
  EXPECT_FALSE(TypeParam::exec_raw(this->location_, "UPDATE ledger SET reason = 'Policy' WHERE seq = 1"));
  EXPECT_EQ(store->ledger(0, 10)->size(), 4u);
  // Reopening an up-to-date store changes nothing.
  auto again = this->open();
  ASSERT_TRUE(again);
  EXPECT_EQ(*again->schema_version(), kSchemaVersion);
}

TYPED_TEST(StoreTest, RefusesAStoreWithANewerSchema) {
  { ASSERT_TRUE(this->open()); }
  ASSERT_TRUE(TypeParam::exec_raw(this->location_, TypeParam::record_future_schema(kSchemaVersion + 7)));
  auto store = Store::open(this->location_);
  ASSERT_FALSE(store);
  EXPECT_NE(store.error().find("has schema version 11, newer than the 4 this gpubank knows"), std::string::npos)
      << store.error();
}

TYPED_TEST(StoreTest, AMissingStoreIsAnErrorWhenNotCreating) {
  auto store = Store::open(TypeParam::missing_location(), OpenOptions{.create = false});
  ASSERT_FALSE(store);
  EXPECT_FALSE(store.error().empty());
}

TYPED_TEST(StoreTest, AnEmptyAppendStoresNothing) {
  auto store = this->open();
  ASSERT_TRUE(store);
  auto r = store->append({}, {});
  ASSERT_TRUE(r) << r.error();
  EXPECT_TRUE(r->ledger.empty());
  EXPECT_EQ(*store->head(), Head{});
}

// ---- backend-specific --------------------------------------------------------------------

TEST(SqliteStore, UsesWalAndFullSync) {
  auto location = testing::SqliteBackend::fresh_location();
  ASSERT_TRUE(location);
  struct Remove {
    std::string path;
    ~Remove() { testing::SqliteBackend::remove(path); }
  } remove{*location};
  auto store = Store::open(*location);
  ASSERT_TRUE(store) << store.error();
  // journal_mode=WAL is persistent: a fresh connection sees it.
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2(location->c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &stmt, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(stmt), SQLITE_ROW);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0)), "wal");
  sqlite3_finalize(stmt);
  sqlite3_close(db);
}

TEST(SqliteStore, RefusesAFileThatIsNotADatabase) {
  auto location = testing::SqliteBackend::fresh_location();
  ASSERT_TRUE(location);
  struct Remove {
    std::string path;
    ~Remove() { testing::SqliteBackend::remove(path); }
  } remove{*location};
  { std::ofstream(*location) << "just some text, long enough to be read as a header by sqlite............\n"; }
  auto store = Store::open(*location);
  ASSERT_FALSE(store);
  EXPECT_NE(store.error().find("not a database"), std::string::npos) << store.error();
}

TEST(Store, LocationsChooseTheBackend) {
  EXPECT_TRUE(is_postgres_url("postgres://u@h/db"));
  EXPECT_TRUE(is_postgres_url("postgresql:///db?host=/tmp"));
  EXPECT_FALSE(is_postgres_url("/var/lib/gpubank/bank.db"));
  EXPECT_FALSE(is_postgres_url("postgres.db"));
  EXPECT_FALSE(Store::open(""));
}

TEST(PostgresStore, ConnectionErrorsDoNotShowThePassword) {
  auto store = Store::open("postgresql://gpubank:s3cret@/db?host=/nonexistent-gpubank-dir&port=5432");
  ASSERT_FALSE(store);
  EXPECT_EQ(store.error().find("s3cret"), std::string::npos) << store.error();
  EXPECT_NE(store.error().find("postgresql://gpubank:***@/db"), std::string::npos) << store.error();
  store = Store::open("postgresql:///db?host=/nonexistent-gpubank-dir&password=s3cret&port=5432");
  ASSERT_FALSE(store);
  EXPECT_EQ(store.error().find("s3cret"), std::string::npos) << store.error();
  EXPECT_NE(store.error().find("password=***&port=5432"), std::string::npos) << store.error();
}

}  // namespace
}  // namespace gpubank::store
