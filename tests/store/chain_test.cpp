// The ledger's hash chain, its links into the audit chain, anchors, migration 4 and
// read-only opening: against SQLite and PostgreSQL, edited underneath gpubank the way
// someone with access to the database would.
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "core/sha256.hpp"
#include "store/backends.hpp"
#include "store/store.hpp"
#include "support/ledger_builder.hpp"

namespace gpubank::store {
namespace {

using testing::audit_entry;
using testing::LedgerBuilder;

template <class Backend>
class ChainTest : public ::testing::Test {
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
  void exec(const std::string& sql) {
    auto r = Backend::exec_raw(location_, sql);
    ASSERT_TRUE(r) << sql << ": " << r.error();
  }

  std::string location_;
};

using Backends = ::testing::Types<testing::SqliteBackend, testing::PostgresBackend>;
TYPED_TEST_SUITE(ChainTest, Backends, testing::BackendNames);

// Appends batches first, first + 1, ... (`batches` of them) of 4 ledger entries and 1 audit
// entry each.
void fill(Store& store, int batches, int first = 0) {
  for (int b = first; b < first + batches; ++b) {
    LedgerBuilder l;
    const std::int64_t t = b * 10'000;
    l.quota(t, "a", 10);
    l.quota(t, "b", 2);
    l.start(t + 1000, "b", "team-b/w" + std::to_string(b), 6);
    l.open(t + 1000, "rec-" + std::to_string(b), "a", "b", "team-b/w" + std::to_string(b), 4);
    for (auto& e : l.entries) e.seq = 0;
    auto r = store.append(l.entries, {{audit_entry(t, "Workload/team-b/w" + std::to_string(b))}});
    ASSERT_TRUE(r) << r.error();
  }
}

StoreReport verify(Store& store, const VerifyOptions& options = {}) {
  auto report = verify_store(store, options, 3);  // small pages: the walk crosses page ends
  EXPECT_TRUE(report) << report.error();
  return report ? *report : StoreReport{};
}

std::string quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

TYPED_TEST(ChainTest, AnIntactStoreVerifiesAndTheLedgerNamesTheAuditHead) {
  auto store = this->open();
  ASSERT_TRUE(store);
  fill(*store, 3);
  const StoreReport report = verify(*store);
  EXPECT_TRUE(report.ok()) << report.audit.problem << report.ledger.problem;
  EXPECT_EQ(report.ledger.entries, 12);
  EXPECT_EQ(report.audit.entries, 3);
  auto head = store->head();
  ASSERT_TRUE(head);
  EXPECT_EQ(report.ledger.head, head->ledger_hash);
  EXPECT_EQ(report.audit.head, head->audit_hash);
  auto ledger = store->ledger(8, 1);
  ASSERT_TRUE(ledger);
  EXPECT_EQ((*ledger)[0].audit_seq, 3);  // seq 9 came with audit seq 3
  EXPECT_EQ((*ledger)[0].hash, bank::ledger_hash((*ledger)[0]));
}

TYPED_TEST(ChainTest, VerifyFindsALedgerRowChangedWithTheTriggersDropped) {
  auto store = this->open();
  ASSERT_TRUE(store);
  fill(*store, 3);
  this->exec(TypeParam::drop_ledger_triggers());
  this->exec("UPDATE ledger SET gpus = 99 WHERE seq = 6");
  const StoreReport report = verify(*store);
  EXPECT_FALSE(report.ok());
  EXPECT_TRUE(report.audit.ok);
  EXPECT_FALSE(report.ledger.ok);
  EXPECT_EQ(report.ledger.broken_seq, 6);
  EXPECT_EQ(report.ledger.entries, 5);
  EXPECT_NE(report.ledger.problem.find("hash mismatch"), std::string::npos) << report.ledger.problem;
}

TYPED_TEST(ChainTest, VerifyFindsBothTailsCut) {
  auto store = this->open();
  ASSERT_TRUE(store);
  fill(*store, 3);
  this->exec(TypeParam::drop_ledger_triggers());
  this->exec(TypeParam::drop_audit_triggers());
  // The last two rows of each table: ledger 11 and 12, audit 2 and 3.
  this->exec("DELETE FROM ledger WHERE seq > 10");
  this->exec("DELETE FROM audit WHERE seq > 1");
  const StoreReport report = verify(*store);
  EXPECT_FALSE(report.ok());
  EXPECT_TRUE(report.audit.ok);  // a chain alone cannot tell its tail is gone...
  EXPECT_FALSE(report.ledger.ok);  // ...but the ledger names audit entries that are
  EXPECT_EQ(report.ledger.broken_seq, 5);
  EXPECT_EQ(report.ledger.problem,
            "auditSeq 2 names an audit entry the audit log does not have (it ends at seq 1): entries were removed "
            "from the audit log's tail");
}

TYPED_TEST(ChainTest, AnAnchorCatchesATailCutAtABatchBoundary) {
  auto store = this->open();
  ASSERT_TRUE(store);
  fill(*store, 3);
  auto head = store->head();
  ASSERT_TRUE(head);
  const VerifyOptions anchors{bank::Anchor{head->audit_seq, head->audit_hash},
                              bank::Anchor{head->ledger_seq, head->ledger_hash}};
  EXPECT_TRUE(verify(*store, anchors).ok());
  // The whole last append, in both tables: the chains that remain are consistent.
  this->exec(TypeParam::drop_ledger_triggers());
  this->exec(TypeParam::drop_audit_triggers());
  this->exec("DELETE FROM ledger WHERE seq > 8");
  this->exec("DELETE FROM audit WHERE seq > 2");
  const StoreReport cut = verify(*store);
  EXPECT_TRUE(cut.ok()) << cut.ledger.problem;
  const StoreReport anchored = verify(*store, anchors);
  EXPECT_FALSE(anchored.ok());
  EXPECT_EQ(anchored.audit_anchor_problem, "audit anchor 3:" + head->audit_hash +
                                               ": the audit chain has no seq 3 (it ends at seq 2): entries were "
                                               "removed from its tail");
  EXPECT_EQ(anchored.ledger_anchor_problem, "ledger anchor 12:" + head->ledger_hash +
                                                ": the ledger chain has no seq 12 (it ends at seq 8): entries were "
                                                "removed from its tail");
}

TYPED_TEST(ChainTest, AnAnchorCatchesAConsistentRewriteOfBothChains) {
  auto store = this->open();
  ASSERT_TRUE(store);
  fill(*store, 3);
  auto head = store->head();
  ASSERT_TRUE(head);
  // An attacker changes audit seq 1 and ledger seq 2, then recomputes every hash after them.
  auto audit = store->audit(0, 100);
  auto ledger = store->ledger(0, 100);
  ASSERT_TRUE(audit && ledger);
  std::map<std::int64_t, std::string> new_audit_hash;
  std::string prev;
  (*audit)[0].decision = "Rejected";
  for (auto& e : *audit) {
    bank::chain_audit_entry(e, e.seq - 1, prev);
    prev = new_audit_hash[e.seq] = e.hash;
  }
  (*ledger)[1].gpus = 1;
  prev.clear();
  for (auto& e : *ledger) {
    bank::chain_ledger_entry(e, e.seq - 1, prev, e.audit_seq, new_audit_hash[e.audit_seq]);
    prev = e.hash;
  }
  this->exec(TypeParam::drop_ledger_triggers());
  this->exec(TypeParam::drop_audit_triggers());
  for (const auto& e : *audit) {
    this->exec("UPDATE audit SET decision = " + quoted(e.decision) + ", prev_hash = " + quoted(e.prev_hash) +
               ", hash = " + quoted(e.hash) + " WHERE seq = " + std::to_string(e.seq));
  }
  for (const auto& e : *ledger) {
    this->exec("UPDATE ledger SET gpus = " + std::to_string(e.gpus) + ", prev_hash = " + quoted(e.prev_hash) +
               ", audit_hash = " + quoted(e.audit_hash) + ", hash = " + quoted(e.hash) +
               " WHERE seq = " + std::to_string(e.seq));
  }
  const StoreReport rewritten = verify(*store);
  EXPECT_TRUE(rewritten.ok()) << rewritten.audit.problem << rewritten.ledger.problem;  // undetectable alone
  const StoreReport anchored = verify(*store, VerifyOptions{bank::Anchor{head->audit_seq, head->audit_hash},
                                                            bank::Anchor{head->ledger_seq, head->ledger_hash}});
  EXPECT_FALSE(anchored.ok());
  EXPECT_NE(anchored.audit_anchor_problem.find("audit anchor 3:" + head->audit_hash + ": seq 3 has hash "),
            std::string::npos)
      << anchored.audit_anchor_problem;
  EXPECT_NE(anchored.audit_anchor_problem.find("the chain was rewritten"), std::string::npos);
  EXPECT_NE(anchored.ledger_anchor_problem.find("the chain was rewritten"), std::string::npos);
}

TYPED_TEST(ChainTest, MigrationFourChainsTheRowsAlreadyStored) {
  {
    auto old = this->open(OpenOptions{.create = true, .migrate_to = 3});
    ASSERT_TRUE(old);
    fill(*old, 2);
  }
  {
    // Read-only: refused with both versions named, and not migrated.
    auto refused = Store::open(this->location_, OpenOptions{.create = false, .read_only = true});
    ASSERT_FALSE(refused);
    EXPECT_NE(refused.error().find("has schema version 3, older than the 4 this gpubank reads"), std::string::npos)
        << refused.error();
    auto still = this->open(OpenOptions{.create = false, .migrate_to = 3});
    ASSERT_TRUE(still);
    EXPECT_EQ(*still->schema_version(), 3);
  }
  auto store = this->open();
  ASSERT_TRUE(store);
  EXPECT_EQ(*store->schema_version(), 4);
  auto ledger = store->ledger(0, 100);
  ASSERT_TRUE(ledger);
  ASSERT_EQ(ledger->size(), 8u);
  for (std::size_t i = 0; i < ledger->size(); ++i) {
    const auto& e = (*ledger)[i];
    EXPECT_EQ(e.audit_seq, 0);  // stored before the link existed
    EXPECT_EQ(e.prev_hash, i == 0 ? "" : (*ledger)[i - 1].hash);
    EXPECT_EQ(e.hash, bank::ledger_hash(e));
  }
  fill(*store, 1, 2);  // continues the chain, linked from now on
  auto next = store->ledger(8, 1);
  ASSERT_TRUE(next);
  ASSERT_EQ(next->size(), 1u);
  EXPECT_EQ((*next)[0].prev_hash, ledger->back().hash);
  EXPECT_EQ((*next)[0].audit_seq, 3);
  EXPECT_TRUE(verify(*store).ok());
  // The append-only trigger is back after the backfill.
  EXPECT_FALSE(TypeParam::exec_raw(this->location_, "UPDATE ledger SET gpus = 1 WHERE seq = 1"));
}

TYPED_TEST(ChainTest, AReadOnlyStoreVerifiesButNeverAppends) {
  {
    auto store = this->open();
    ASSERT_TRUE(store);
    fill(*store, 2);
  }
  auto store = this->open(OpenOptions{.create = false, .read_only = true});
  ASSERT_TRUE(store);
  EXPECT_TRUE(verify(*store).ok());
  LedgerBuilder l;
  l.quota(100'000, "a", 1);
  auto r = store->append(l.entries, {});
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().find("opened read-only, nothing appended"), std::string::npos) << r.error();
  EXPECT_EQ(store->head()->ledger_seq, 8);
}

TYPED_TEST(ChainTest, ASecondProducerFencesTheFirst) {
  auto first = this->open();
  auto second = this->open();
  auto tool = this->open();
  ASSERT_TRUE(first && second && tool);
  EXPECT_EQ(*tool->first_writer_epoch(), 0);  // nobody acquired it yet
  auto epoch = first->acquire_writer("bank-a");
  ASSERT_TRUE(epoch) << epoch.error();
  EXPECT_EQ(*epoch, 1);
  fill(*first, 1);
  auto taken = second->acquire_writer("bank-b");
  ASSERT_TRUE(taken) << taken.error();
  EXPECT_EQ(*taken, 2);
  LedgerBuilder l;
  l.quota(20'000, "a", 10);
  auto refused = first->append(l.entries, {});
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error(), "store " + first->location() +
                                 ": fenced, nothing appended: this producer holds writer epoch 1, but epoch 2 (holder "
                                 "\"bank-b\") acquired the store since: another producer is folding this ledger; stop "
                                 "this one");
  EXPECT_EQ(first->head()->ledger_seq, 4);
  fill(*second, 1, 1);  // the newest producer appends
  fill(*tool, 1, 2);    // a Store that never acquired appends unfenced
  // Epochs stay unique across reopening.
  first.reset();
  auto reopened = this->open();
  ASSERT_TRUE(reopened);
  EXPECT_EQ(*reopened->acquire_writer("bank-a"), 3);
  EXPECT_FALSE(second->append(l.entries, {}));
  auto read_only = this->open(OpenOptions{.create = false, .read_only = true});
  ASSERT_TRUE(read_only);
  EXPECT_FALSE(read_only->acquire_writer("x"));
  // The first producer's epoch stays the first, whoever holds the store now.
  EXPECT_EQ(*read_only->first_writer_epoch(), 1);
  EXPECT_EQ(*reopened->first_writer_epoch(), 1);
}

// ---- SQLite: the file itself ---------------------------------------------------------

std::string file_sha256(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  return sha256_hex(bytes.str());
}

TEST(SqliteChain, VerifyLeavesTheFileByteIdenticalAndWorksOnAReadOnlyFileAndDirectory) {
  auto location = testing::SqliteBackend::fresh_location();
  ASSERT_TRUE(location);
  const std::string dir = std::filesystem::path(*location).parent_path();
  struct Cleanup {
    std::string dir, path;
    ~Cleanup() {
      ::chmod(dir.c_str(), 0755);
      ::chmod(path.c_str(), 0644);
      testing::SqliteBackend::remove(path);
    }
  } cleanup{dir, *location};
  {
    auto store = Store::open(*location);
    ASSERT_TRUE(store) << store.error();
    fill(**store, 3);
  }  // the last connection checkpoints the WAL into the file
  ASSERT_EQ(::chmod(location->c_str(), 0444), 0);
  ASSERT_EQ(::chmod(dir.c_str(), 0555), 0);
  const std::string before = file_sha256(*location);
  for (int i = 0; i < 2; ++i) {
    auto store = Store::open(*location, OpenOptions{.create = false, .read_only = true});
    ASSERT_TRUE(store) << store.error();
    const StoreReport report = verify(**store);
    EXPECT_TRUE(report.ok()) << report.audit.problem << report.ledger.problem;
    EXPECT_EQ(report.ledger.entries, 12);
  }
  EXPECT_EQ(file_sha256(*location), before);
}

// A writer killed before its first migration committed leaves an SQLite file with no
// tables (or an empty one): nothing was ever committed, so the read-only verify reports
// an intact, empty store and creates nothing. A file of some other schema is still refused.
TEST(SqliteChain, AReadOnlyOpenOfAFileWithoutTablesIsAnEmptyStore) {
  auto location = testing::SqliteBackend::fresh_location();
  ASSERT_TRUE(location);
  struct Cleanup {
    std::string path;
    ~Cleanup() { testing::SqliteBackend::remove(path); }
  } cleanup{*location};
  { std::ofstream touch(*location); }  // a zero-length file, as a kill right after creating it leaves
  for (int i = 0; i < 2; ++i) {
    auto store = Store::open(*location, OpenOptions{.create = false, .read_only = true});
    ASSERT_TRUE(store) << store.error();
    EXPECT_EQ(*(*store)->head(), Head{});
    EXPECT_EQ(*(*store)->schema_version(), 0);
    EXPECT_TRUE((*store)->ledger(0, 10)->empty());
    EXPECT_TRUE((*store)->audit(0, 10)->empty());
    EXPECT_TRUE((*store)->ledger_for_workload("a/b")->empty());
    const StoreReport report = verify(**store);
    EXPECT_TRUE(report.ok()) << report.audit.problem << report.ledger.problem;
    EXPECT_EQ(report.ledger.entries, 0);
    const std::vector<bank::AuditEntry> one{audit_entry(0, "Workload/team-b/w")};
    EXPECT_FALSE((*store)->append({}, one));  // still read-only
  }
  EXPECT_EQ(std::filesystem::file_size(*location), 0u) << "the read-only open created something";

  ASSERT_TRUE(testing::SqliteBackend::exec_raw(*location, "CREATE TABLE other_app (x INTEGER)"));
  auto foreign = Store::open(*location, OpenOptions{.create = false, .read_only = true});
  ASSERT_FALSE(foreign);
  EXPECT_NE(foreign.error().find("has no gpubank schema"), std::string::npos) << foreign.error();
}

// A writer killed while it created the file (before the first migration committed) can
// leave a hot rollback journal, which only a writer may roll back: a read-only connection
// fails with "attempt to write a readonly database". The read-only open rolls it back first
// (restoring what was committed: nothing) and reads an intact, empty store. Reproduced with
// a child that dies in the middle of a large transaction whose pages spilled to the file.
TEST(SqliteChain, AReadOnlyOpenRollsBackTheJournalOfAWriterKilledMidTransaction) {
  auto location = testing::SqliteBackend::fresh_location();
  ASSERT_TRUE(location);
  struct Cleanup {
    std::string path;
    ~Cleanup() { testing::SqliteBackend::remove(path); }
  } cleanup{*location};
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    sqlite3* db = nullptr;
    if (sqlite3_open_v2(location->c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) != SQLITE_OK) _exit(2);
    if (sqlite3_exec(db, "PRAGMA cache_size=10; BEGIN; CREATE TABLE schema_migrations (version INTEGER);", nullptr,
                     nullptr, nullptr) != SQLITE_OK) {
      _exit(3);
    }
    for (int i = 0; i < 5000; ++i) {
      if (sqlite3_exec(db, "INSERT INTO schema_migrations VALUES (randomblob(200))", nullptr, nullptr, nullptr) != SQLITE_OK) {
        _exit(4);
      }
    }
    _exit(0);  // killed: no COMMIT, no close
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  ASSERT_TRUE(std::filesystem::exists(*location + "-journal")) << "the child left no hot journal";
  auto store = Store::open(*location, OpenOptions{.create = false, .read_only = true});
  ASSERT_TRUE(store) << store.error();
  const StoreReport report = verify(**store);
  EXPECT_TRUE(report.ok()) << report.audit.problem << report.ledger.problem;
  EXPECT_EQ(report.ledger.entries, 0);
  EXPECT_EQ(*(*store)->head(), Head{});
}

}  // namespace
}  // namespace gpubank::store
