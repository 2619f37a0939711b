// The SQLite backend: one file, WAL mode, synchronous=FULL. See store.hpp.
#include <sqlite3.h>
#include <sys/stat.h>

#include <chrono>
#include <limits>
#include <mutex>
#include <utility>

#include "store/backends.hpp"

namespace gpubank::store::detail {
namespace {

constexpr const char* kLedgerColumns =
    "seq, time_ms, kind, pool, flavor, business_group, lender, workload, record, gpus, lending_limit, "
    "borrowing_limit, reason, prev_hash, audit_seq, audit_hash, hash";
// Before migration 4 (a store opened with migrate_to < 4, in tests of the migration path).
constexpr const char* kLedgerColumnsUnchained =
    "seq, time_ms, kind, pool, flavor, business_group, lender, workload, record, gpus, lending_limit, "
    "borrowing_limit, reason";
constexpr const char* kLedgerNoUpdateTrigger =
    "CREATE TRIGGER ledger_no_update BEFORE UPDATE ON ledger "
    "BEGIN SELECT RAISE(ABORT, 'gpubank: the ledger is append-only: UPDATE refused'); END";
constexpr const char* kAuditColumns =
    "seq, time_ms, actor, action, object, policy_version, decision, reason, numbers, prev_hash, hash";

struct Migration {
  int version;
  const char* description;
  std::vector<const char*> statements;
};

// Append new versions at the end; never edit one that has shipped.
const std::vector<Migration>& sqlite_migrations() {
  static const std::vector<Migration> migrations{
      {1,
       "ledger and audit tables",
       {R"sql(CREATE TABLE ledger (
              seq INTEGER PRIMARY KEY,
              time_ms INTEGER NOT NULL,
              kind TEXT NOT NULL,
              pool TEXT NOT NULL,
              flavor TEXT NOT NULL,
              business_group TEXT NOT NULL,
              lender TEXT NOT NULL,
              workload TEXT NOT NULL,
              record TEXT NOT NULL,
              gpus INTEGER NOT NULL,
              lending_limit INTEGER NOT NULL,
              borrowing_limit INTEGER NOT NULL,
              reason TEXT NOT NULL) STRICT)sql",
        R"sql(CREATE TABLE audit (
              seq INTEGER PRIMARY KEY,
              time_ms INTEGER NOT NULL,
              actor TEXT NOT NULL,
              action TEXT NOT NULL,
              object TEXT NOT NULL,
              policy_version TEXT NOT NULL,
              decision TEXT NOT NULL,
              reason TEXT NOT NULL,
              numbers TEXT NOT NULL,
              prev_hash TEXT NOT NULL,
              hash TEXT NOT NULL) STRICT)sql"}},
      {2,
       "append-only: UPDATE and DELETE of ledger and audit rows are refused",
       {kLedgerNoUpdateTrigger,
        "CREATE TRIGGER ledger_no_delete BEFORE DELETE ON ledger "
        "BEGIN SELECT RAISE(ABORT, 'gpubank: the ledger is append-only: DELETE refused'); END",
        "CREATE TRIGGER audit_no_update BEFORE UPDATE ON audit "
        "BEGIN SELECT RAISE(ABORT, 'gpubank: the audit log is append-only: UPDATE refused'); END",
        "CREATE TRIGGER audit_no_delete BEFORE DELETE ON audit "
        "BEGIN SELECT RAISE(ABORT, 'gpubank: the audit log is append-only: DELETE refused'); END"}},
      {3, "ledger index by workload (per-workload trails)", {"CREATE INDEX ledger_by_workload ON ledger (workload, seq)"}},
      {4,
       kLedgerChainDescription,
       {"ALTER TABLE ledger ADD COLUMN prev_hash TEXT NOT NULL DEFAULT ''",
        "ALTER TABLE ledger ADD COLUMN audit_seq INTEGER NOT NULL DEFAULT 0",
        "ALTER TABLE ledger ADD COLUMN audit_hash TEXT NOT NULL DEFAULT ''",
        "ALTER TABLE ledger ADD COLUMN hash TEXT NOT NULL DEFAULT ''",
        "CREATE TABLE writers (epoch INTEGER PRIMARY KEY, holder TEXT NOT NULL, acquired_at_ms INTEGER NOT NULL) STRICT"}},
  };
  return migrations;
}


std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// A prepared statement, reset and unbound when a use ends.
class Statement {
 public:
  Statement() = default;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  ~Statement() { sqlite3_finalize(stmt_); }

  bool prepare(sqlite3* db, const std::string& sql) {
    sqlite3_finalize(stmt_);
    stmt_ = nullptr;
    return sqlite3_prepare_v3(db, sql.c_str(), -1, SQLITE_PREPARE_PERSISTENT, &stmt_, nullptr) == SQLITE_OK;
  }
  [[nodiscard]] sqlite3_stmt* get() const { return stmt_; }

 private:
  sqlite3_stmt* stmt_ = nullptr;
};

class Use {
 public:
  explicit Use(sqlite3_stmt* stmt) : stmt_(stmt) {}
  Use(const Use&) = delete;
  Use& operator=(const Use&) = delete;
  ~Use() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }
  void bind(int i, std::int64_t v) { sqlite3_bind_int64(stmt_, i, v); }
  void bind(int i, const std::string& v) {
    sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_STATIC);
  }
  int step() { return sqlite3_step(stmt_); }
  [[nodiscard]] std::int64_t integer(int col) const { return sqlite3_column_int64(stmt_, col); }
  [[nodiscard]] bool is_null(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }
  [[nodiscard]] std::string text(int col) const {
    const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, col));
    return p == nullptr ? std::string() : std::string(p, static_cast<std::size_t>(sqlite3_column_bytes(stmt_, col)));
  }

 private:
  sqlite3_stmt* stmt_;
};

class SqliteStore final : public Store {
 public:
  SqliteStore(std::string path, sqlite3* db, bool read_only) : Store(std::move(path)), db_(db), read_only_(read_only) {}
  ~SqliteStore() override {
    // Statements first: sqlite3_close refuses a connection with live statements.
    statements_.clear();
    sqlite3_close(db_);
  }

  Expected<bool> init(const OpenOptions& options);

  Expected<AppendResult> append(std::span<const bank::LedgerEntry> ledger,
                                std::span<const bank::AuditEntry> audit) override;
  Expected<std::vector<bank::LedgerEntry>> ledger(std::int64_t after_seq, std::size_t limit) override;
  Expected<std::vector<bank::AuditEntry>> audit(std::int64_t after_seq, std::size_t limit) override;
  Expected<std::vector<bank::LedgerEntry>> ledger_for_workload(const std::string& workload) override;
  Expected<int> schema_version() override;
  Expected<Head> head() override;
  Expected<std::int64_t> acquire_writer(const std::string& holder) override;
  Expected<std::int64_t> first_writer_epoch() override;
  [[nodiscard]] std::string_view backend() const override { return "sqlite"; }

 private:
  std::string error(const std::string& what) const {
    return "sqlite store " + location() + ": " + what + ": " + sqlite3_errmsg(db_);
  }
  Expected<bool> exec(const std::string& sql, const std::string& what) {
    char* message = nullptr;
    if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &message) != SQLITE_OK) {
      std::string text = "sqlite store " + location() + ": " + what + ": " + (message != nullptr ? message : "?");
      sqlite3_free(message);
      return Unexpected{text};
    }
    return true;
  }
  void rollback() { sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr); }
  Expected<int> read_version();  // 0 without a schema_migrations table
  Expected<std::int64_t> count_tables();  // every object in sqlite_master
  Expected<Head> read_head();
  Expected<bool> prepare_statements();
  Expected<bool> backfill_ledger_chain();
  // The newest writer epoch and its holder (0 and "" when none).
  Expected<std::pair<std::int64_t, std::string>> newest_writer();
  Expected<std::vector<bank::LedgerEntry>> read_ledger(Use& use);
  Expected<std::vector<bank::AuditEntry>> read_audit(Use& use);

  [[nodiscard]] std::string ledger_columns() const { return chained_ ? kLedgerColumns : kLedgerColumnsUnchained; }

  sqlite3* db_;
  bool read_only_;
  bool chained_ = true;  // the schema has the ledger's chain columns (version >= 4)
  std::int64_t epoch_ = 0;  // the writer epoch this Store acquired; 0: unfenced
  // Opened read-only on a file with no tables at all: a writer was killed before its first
  // migration committed (or created the file and stopped). Nothing was ever committed, so
  // it reads as an empty store at schema 0 instead of an error.
  bool empty_ = false;
  std::mutex mu_;
  std::vector<std::unique_ptr<Statement>> statements_;
  Statement* insert_ledger_ = nullptr;
  Statement* insert_audit_ = nullptr;
  Statement* select_ledger_ = nullptr;
  Statement* select_audit_ = nullptr;
  Statement* select_workload_ = nullptr;
  Statement* select_head_ = nullptr;
};

Expected<std::int64_t> SqliteStore::count_tables() {
  Statement count;
  if (!count.prepare(db_, "SELECT count(*) FROM sqlite_master")) return Unexpected{error("read the schema")};
  Use use(count.get());
  if (use.step() != SQLITE_ROW) return Unexpected{error("read the schema")};
  return use.integer(0);
}

Expected<int> SqliteStore::read_version() {
  Statement exists;
  if (!exists.prepare(db_, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'")) {
    return Unexpected{error("read the schema version")};
  }
  {
    Use use(exists.get());
    if (use.step() != SQLITE_ROW) return Unexpected{error("read the schema version")};
    if (use.integer(0) == 0) return 0;
  }
  Statement version;
  if (!version.prepare(db_, "SELECT coalesce(max(version), 0) FROM schema_migrations")) {
    return Unexpected{error("read the schema version")};
  }
  Use use(version.get());
  if (use.step() != SQLITE_ROW) return Unexpected{error("read the schema version")};
  return static_cast<int>(use.integer(0));
}

Expected<bool> SqliteStore::init(const OpenOptions& options) {
  sqlite3_busy_timeout(db_, 30'000);
  sqlite3_extended_result_codes(db_, 1);
  if (read_only_) {
    // The journal mode is the file's (WAL); a read-only connection sets nothing.
    auto current = read_version();
    if (!current) return Unexpected{current.error()};
    if (*current == 0) {
      auto tables = count_tables();
      if (!tables) return Unexpected{tables.error()};
      if (*tables == 0) {
        empty_ = true;
        return true;
      }
    }
    if (*current != kSchemaVersion) return Unexpected{read_only_version_message(location(), *current)};
    return prepare_statements();
  }
  // WAL: readers never block the writer; FULL: the WAL is fsync'd at every commit.
  {
    Statement mode;
    if (!mode.prepare(db_, "PRAGMA journal_mode=WAL")) return Unexpected{error("set WAL mode")};
    Use use(mode.get());
    if (use.step() != SQLITE_ROW || use.text(0) != "wal") {
      return Unexpected{"sqlite store " + location() + ": cannot switch to WAL mode (journal mode " + use.text(0) + ")"};
    }
  }
  if (auto ok = exec("PRAGMA synchronous=FULL", "set synchronous=FULL"); !ok) return ok;

  const auto& migrations = sqlite_migrations();
  const int target = target_version(migrations.back().version, options);
  auto current = read_version();
  if (!current) return Unexpected{current.error()};
  if (*current > kSchemaVersion) return Unexpected{too_new_message(location(), *current)};
  if (*current < target) {
    // Another process may be migrating too: BEGIN IMMEDIATE waits for it, then re-read.
    if (auto ok = exec("BEGIN IMMEDIATE", "begin the migration"); !ok) return ok;
    auto ok = exec("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, "
                   "description TEXT NOT NULL, applied_at_ms INTEGER NOT NULL) STRICT",
                   "create schema_migrations");
    if (ok) current = read_version();
    if (ok && !current) ok = Unexpected{current.error()};
    if (ok && *current > kSchemaVersion) ok = Unexpected{too_new_message(location(), *current)};
    for (const Migration& m : migrations) {
      if (!ok) break;
      if (m.version <= *current || m.version > target) continue;
      for (const char* sql : m.statements) {
        ok = exec(sql, "migration " + std::to_string(m.version) + " (" + m.description + ")");
        if (!ok) break;
      }
      if (ok && m.version == 4) ok = backfill_ledger_chain();
      if (!ok) break;
      Statement record;
      if (!record.prepare(db_, "INSERT INTO schema_migrations (version, description, applied_at_ms) VALUES (?1, ?2, ?3)")) {
        ok = Unexpected{error("record migration " + std::to_string(m.version))};
        break;
      }
      Use use(record.get());
      use.bind(1, std::int64_t{m.version});
      const std::string description = m.description;
      use.bind(2, description);
      use.bind(3, now_ms());
      if (use.step() != SQLITE_DONE) ok = Unexpected{error("record migration " + std::to_string(m.version))};
    }
    if (ok) ok = exec("COMMIT", "commit the migration");
    if (!ok) {
      rollback();
      return ok;
    }
  }
  current = read_version();
  if (!current) return Unexpected{current.error()};
  chained_ = *current >= 4;
  return prepare_statements();
}

// Migration 4: chains the rows stored before the ledger had a chain. The append-only
// trigger is lifted for these UPDATEs only, inside the migration's transaction.
Expected<bool> SqliteStore::backfill_ledger_chain() {
  if (auto ok = exec("DROP TRIGGER IF EXISTS ledger_no_update", "migration 4: lift the update trigger"); !ok) return ok;
  Statement select;
  Statement update;
  if (!select.prepare(db_, std::string("SELECT ") + kLedgerColumns + " FROM ledger WHERE seq > ?1 ORDER BY seq LIMIT 10000") ||
      !update.prepare(db_, "UPDATE ledger SET prev_hash = ?1, hash = ?2 WHERE seq = ?3")) {
    return Unexpected{error("migration 4: prepare the backfill")};
  }
  std::string prev;
  std::int64_t after = 0;
  while (true) {
    std::vector<bank::LedgerEntry> page;
    {
      Use use(select.get());
      use.bind(1, after);
      auto read = read_ledger(use);
      if (!read) return Unexpected{read.error()};
      page = std::move(*read);
    }
    if (page.empty()) break;
    prev = backfill_chain(page, prev);
    for (const bank::LedgerEntry& e : page) {
      Use use(update.get());
      use.bind(1, e.prev_hash);
      use.bind(2, e.hash);
      use.bind(3, e.seq);
      if (use.step() != SQLITE_DONE) return Unexpected{error("migration 4: chain ledger seq " + std::to_string(e.seq))};
    }
    after = page.back().seq;
  }
  return exec(kLedgerNoUpdateTrigger, "migration 4: restore the update trigger");
}

Expected<std::pair<std::int64_t, std::string>> SqliteStore::newest_writer() {
  Statement select;
  if (!select.prepare(db_, "SELECT epoch, holder FROM writers ORDER BY epoch DESC LIMIT 1")) {
    return Unexpected{error("read the writer epoch")};
  }
  Use use(select.get());
  const int rc = use.step();
  if (rc == SQLITE_DONE) return std::pair<std::int64_t, std::string>{0, ""};
  if (rc != SQLITE_ROW) return Unexpected{error("read the writer epoch")};
  return std::pair<std::int64_t, std::string>{use.integer(0), use.text(1)};
}

Expected<std::int64_t> SqliteStore::first_writer_epoch() {
  std::lock_guard lock(mu_);
  if (empty_) return 0;
  if (!chained_) return Unexpected{"sqlite store " + location() + ": writer epochs need schema version 4"};
  Statement select;
  if (!select.prepare(db_, "SELECT coalesce(min(epoch), 0) FROM writers")) return Unexpected{error("read the writer epochs")};
  Use use(select.get());
  if (use.step() != SQLITE_ROW) return Unexpected{error("read the writer epochs")};
  return use.integer(0);
}

Expected<std::int64_t> SqliteStore::acquire_writer(const std::string& holder) {
  if (read_only_) return Unexpected{"sqlite store " + location() + ": opened read-only, cannot acquire the writer"};
  if (!chained_) return Unexpected{"sqlite store " + location() + ": writer epochs need schema version 4"};
  std::lock_guard lock(mu_);
  // The append lock: an acquire and an append of the fenced writer never interleave.
  if (auto ok = exec("BEGIN IMMEDIATE", "begin acquiring the writer"); !ok) return Unexpected{ok.error()};
  auto epoch = [&]() -> Expected<std::int64_t> {
    auto newest = newest_writer();
    if (!newest) return Unexpected{newest.error()};
    Statement insert;
    if (!insert.prepare(db_, "INSERT INTO writers (epoch, holder, acquired_at_ms) VALUES (?1, ?2, ?3)")) {
      return Unexpected{error("acquire the writer")};
    }
    Use use(insert.get());
    use.bind(1, newest->first + 1);
    use.bind(2, holder);
    use.bind(3, now_ms());
    if (use.step() != SQLITE_DONE) return Unexpected{error("acquire the writer")};
    return newest->first + 1;
  }();
  if (!epoch) {
    rollback();
    return epoch;
  }
  if (auto ok = exec("COMMIT", "commit acquiring the writer"); !ok) {
    rollback();
    return Unexpected{ok.error()};
  }
  epoch_ = *epoch;
  return epoch;
}

Expected<bool> SqliteStore::prepare_statements() {
  const auto make = [&](const std::string& sql) -> Statement* {
    auto s = std::make_unique<Statement>();
    if (!s->prepare(db_, sql)) return nullptr;
    statements_.push_back(std::move(s));
    return statements_.back().get();
  };
  insert_ledger_ = make("INSERT INTO ledger (" + ledger_columns() + ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13" +
                        (chained_ ? ", ?14, ?15, ?16, ?17)" : ")"));
  insert_audit_ = make(std::string("INSERT INTO audit (") + kAuditColumns +
                       ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)");
  select_ledger_ = make("SELECT " + ledger_columns() + " FROM ledger WHERE seq > ?1 ORDER BY seq LIMIT ?2");
  select_audit_ = make(std::string("SELECT ") + kAuditColumns + " FROM audit WHERE seq > ?1 ORDER BY seq LIMIT ?2");
  select_workload_ = make("SELECT " + ledger_columns() + " FROM ledger WHERE workload = ?1 ORDER BY seq");
  select_head_ = make(
      "SELECT (SELECT seq FROM ledger ORDER BY seq DESC LIMIT 1), (SELECT time_ms FROM ledger ORDER BY seq DESC LIMIT 1), "
      "(SELECT seq FROM audit ORDER BY seq DESC LIMIT 1), (SELECT hash FROM audit ORDER BY seq DESC LIMIT 1), " +
      std::string(chained_ ? "(SELECT hash FROM ledger ORDER BY seq DESC LIMIT 1)" : "''"));
  if (insert_ledger_ == nullptr || insert_audit_ == nullptr || select_ledger_ == nullptr || select_audit_ == nullptr || select_workload_ == nullptr ||
      select_head_ == nullptr) {
    return Unexpected{error("prepare statements")};
  }
  return true;
}

Expected<Head> SqliteStore::read_head() {
  Use use(select_head_->get());
  if (use.step() != SQLITE_ROW) return Unexpected{error("read the head")};
  Head h;
  h.ledger_seq = use.is_null(0) ? 0 : use.integer(0);
  h.ledger_time_ms = use.is_null(1) ? 0 : use.integer(1);
  h.audit_seq = use.is_null(2) ? 0 : use.integer(2);
  h.audit_hash = use.is_null(3) ? std::string() : use.text(3);
  h.ledger_hash = use.is_null(4) ? std::string() : use.text(4);
  return h;
}

Expected<AppendResult> SqliteStore::append(std::span<const bank::LedgerEntry> ledger,
                                           std::span<const bank::AuditEntry> audit) {
  if (auto problem = validate_batch(ledger, audit)) return Unexpected{"invalid batch, nothing appended: " + *problem};
  if (ledger.empty() && audit.empty()) return AppendResult{};
  if (read_only_) return Unexpected{"sqlite store " + location() + ": opened read-only, nothing appended"};
  std::lock_guard lock(mu_);
  // BEGIN IMMEDIATE takes the file's write lock now (waiting up to the busy timeout for
  // another process), so the head read below is still the head at commit.
  if (auto ok = exec("BEGIN IMMEDIATE", "begin the append"); !ok) return Unexpected{ok.error()};
  auto result = [&]() -> Expected<AppendResult> {
    if (epoch_ > 0) {
      auto newest = newest_writer();
      if (!newest) return Unexpected{newest.error()};
      if (newest->first != epoch_) return Unexpected{fenced_message(location(), epoch_, newest->first, newest->second)};
    }
    auto h = read_head();
    if (!h) return Unexpected{h.error()};
    auto out = sequence(*h, ledger, audit);
    if (!out) return out;
    if (!chained_) unchain(out->ledger);
    for (const bank::LedgerEntry& e : out->ledger) {
      Use use(insert_ledger_->get());
      use.bind(1, e.seq);
      use.bind(2, e.time_ms);
      const std::string kind(bank::kind_name(e.kind));
      use.bind(3, kind);
      use.bind(4, e.pool);
      use.bind(5, e.flavor);
      use.bind(6, e.business_group);
      use.bind(7, e.lender);
      use.bind(8, e.workload);
      use.bind(9, e.record);
      use.bind(10, e.gpus);
      use.bind(11, e.lending_limit);
      use.bind(12, e.borrowing_limit);
      use.bind(13, e.reason);
      if (chained_) {
        use.bind(14, e.prev_hash);
        use.bind(15, e.audit_seq);
        use.bind(16, e.audit_hash);
        use.bind(17, e.hash);
      }
      if (use.step() != SQLITE_DONE) return Unexpected{error("append ledger seq " + std::to_string(e.seq))};
    }
    for (const bank::AuditEntry& e : out->audit) {
      Use use(insert_audit_->get());
      use.bind(1, e.seq);
      use.bind(2, e.time_ms);
      use.bind(3, e.actor);
      use.bind(4, e.action);
      use.bind(5, e.object);
      use.bind(6, e.policy_version);
      use.bind(7, e.decision);
      use.bind(8, e.reason);
      use.bind(9, e.numbers);
      use.bind(10, e.prev_hash);
      use.bind(11, e.hash);
      if (use.step() != SQLITE_DONE) return Unexpected{error("append audit seq " + std::to_string(e.seq))};
    }
    return out;
  }();
  if (!result) {
    rollback();
    return result;
  }
  if (auto ok = exec("COMMIT", "commit the append"); !ok) {
    rollback();
    return Unexpected{ok.error()};
  }
  return result;
}

Expected<std::vector<bank::LedgerEntry>> SqliteStore::read_ledger(Use& use) {
  std::vector<bank::LedgerEntry> out;
  int rc = 0;
  while ((rc = use.step()) == SQLITE_ROW) {
    bank::LedgerEntry e;
    e.seq = use.integer(0);
    e.time_ms = use.integer(1);
    const std::string kind = use.text(2);
    const auto parsed = bank::parse_kind(kind);
    if (!parsed) {
      return Unexpected{"sqlite store " + location() + ": ledger seq " + std::to_string(e.seq) + " has an unknown kind \"" +
                        kind + "\""};
    }
    e.kind = *parsed;
    e.pool = use.text(3);
    e.flavor = use.text(4);
    e.business_group = use.text(5);
    e.lender = use.text(6);
    e.workload = use.text(7);
    e.record = use.text(8);
    e.gpus = use.integer(9);
    e.lending_limit = use.integer(10);
    e.borrowing_limit = use.integer(11);
    e.reason = use.text(12);
    if (chained_) {
      e.prev_hash = use.text(13);
      e.audit_seq = use.integer(14);
      e.audit_hash = use.text(15);
      e.hash = use.text(16);
    }
    out.push_back(std::move(e));
  }
  if (rc != SQLITE_DONE) return Unexpected{error("read the ledger")};
  return out;
}

Expected<std::vector<bank::AuditEntry>> SqliteStore::read_audit(Use& use) {
  std::vector<bank::AuditEntry> out;
  int rc = 0;
  while ((rc = use.step()) == SQLITE_ROW) {
    bank::AuditEntry e;
    e.seq = use.integer(0);
    e.time_ms = use.integer(1);
    e.actor = use.text(2);
    e.action = use.text(3);
    e.object = use.text(4);
    e.policy_version = use.text(5);
    e.decision = use.text(6);
    e.reason = use.text(7);
    e.numbers = use.text(8);
    e.prev_hash = use.text(9);
    e.hash = use.text(10);
    out.push_back(std::move(e));
  }
  if (rc != SQLITE_DONE) return Unexpected{error("read the audit log")};
  return out;
}

std::int64_t clamp_limit(std::size_t limit) {
  return limit > static_cast<std::size_t>(std::numeric_limits<std::int64_t>::max())
             ? std::numeric_limits<std::int64_t>::max()
             : static_cast<std::int64_t>(limit);
}

Expected<std::vector<bank::LedgerEntry>> SqliteStore::ledger(std::int64_t after_seq, std::size_t limit) {
  std::lock_guard lock(mu_);
  if (empty_) return std::vector<bank::LedgerEntry>{};
  Use use(select_ledger_->get());
  use.bind(1, after_seq);
  use.bind(2, clamp_limit(limit));
  return read_ledger(use);
}

Expected<std::vector<bank::AuditEntry>> SqliteStore::audit(std::int64_t after_seq, std::size_t limit) {
  std::lock_guard lock(mu_);
  if (empty_) return std::vector<bank::AuditEntry>{};
  Use use(select_audit_->get());
  use.bind(1, after_seq);
  use.bind(2, clamp_limit(limit));
  return read_audit(use);
}

Expected<std::vector<bank::LedgerEntry>> SqliteStore::ledger_for_workload(const std::string& workload) {
  std::lock_guard lock(mu_);
  if (empty_) return std::vector<bank::LedgerEntry>{};
  Use use(select_workload_->get());
  use.bind(1, workload);
  return read_ledger(use);
}

Expected<int> SqliteStore::schema_version() {
  std::lock_guard lock(mu_);
  return read_version();
}

Expected<Head> SqliteStore::head() {
  std::lock_guard lock(mu_);
  if (empty_) return Head{};
  return read_head();
}

}  // namespace

namespace {

// A writer killed in the middle of a transaction can leave what only a writer may clean up,
// and a read-only connection then fails with "attempt to write a readonly database":
//   - a hot rollback journal (SQLITE_READONLY_ROLLBACK): a kill while the file was being
//     created and switched to WAL, before the first migration committed. Rolling it back
//     restores the last committed state, which is what the reader must see;
//   - a wal-index (-shm) to rebuild from the WAL (SQLITE_READONLY_RECOVERY).
// A read-write connection that reads once (which runs the rollback or the recovery) and
// closes without checkpointing does exactly that and nothing else. Returns whether it was
// needed.
Expected<bool> recover_wal_index_if_needed(const std::string& path) {
  sqlite3* probe = nullptr;
  const auto close = [](sqlite3* db) { sqlite3_close(db); };
  if (sqlite3_open_v2(path.c_str(), &probe, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nullptr) != SQLITE_OK) {
    close(probe);
    return false;  // the real open reports it
  }
  sqlite3_extended_result_codes(probe, 1);
  const int rc = sqlite3_exec(probe, "SELECT count(*) FROM sqlite_master", nullptr, nullptr, nullptr);
  const int extended = sqlite3_extended_errcode(probe);
  close(probe);
  if (rc == SQLITE_OK || (extended != SQLITE_READONLY_RECOVERY && extended != SQLITE_READONLY_ROLLBACK)) return false;
  sqlite3* writer = nullptr;
  if (sqlite3_open_v2(path.c_str(), &writer, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nullptr) != SQLITE_OK) {
    std::string message = "sqlite store " + path + ": a writer stopped mid-transaction and left a journal to roll back or a WAL to recover, " +
                          "and it cannot be opened for that (" + (writer != nullptr ? sqlite3_errmsg(writer) : "out of memory") +
                          "): open it once with a writer (the bank, gpubank up) or make the file and its directory writable";
    close(writer);
    return Unexpected{message};
  }
  sqlite3_busy_timeout(writer, 30'000);
  sqlite3_db_config(writer, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, nullptr);
  const int read = sqlite3_exec(writer, "SELECT count(*) FROM sqlite_master", nullptr, nullptr, nullptr);
  std::string problem = read == SQLITE_OK ? std::string() : sqlite3_errmsg(writer);
  close(writer);
  if (!problem.empty()) return Unexpected{"sqlite store " + path + ": rolling back or recovering a killed writer's transaction: " + problem};
  return true;
}

}  // namespace

Expected<std::unique_ptr<Store>> open_sqlite(const std::string& path, const OpenOptions& options) {
  struct stat st {};
  const bool exists = ::stat(path.c_str(), &st) == 0;
  if (!exists && !options.create) return Unexpected{"sqlite store " + path + ": no such file"};
  if (exists && !S_ISREG(st.st_mode)) return Unexpected{"sqlite store " + path + ": not a regular file"};
  if (!exists && options.read_only) return Unexpected{"sqlite store " + path + ": no such file"};
  if (options.read_only) {
    if (auto recovered = recover_wal_index_if_needed(path); !recovered) return Unexpected{recovered.error()};
  }
  sqlite3* db = nullptr;
  // SQLITE_OPEN_READONLY is mode=ro: no write to the file, whatever its permissions.
  const int flags = (options.read_only ? SQLITE_OPEN_READONLY
                                       : SQLITE_OPEN_READWRITE | (options.create ? SQLITE_OPEN_CREATE : 0)) |
                    SQLITE_OPEN_NOMUTEX;
  if (sqlite3_open_v2(path.c_str(), &db, flags, nullptr) != SQLITE_OK) {
    std::string message = "sqlite store " + path + ": cannot open: " + (db != nullptr ? sqlite3_errmsg(db) : "out of memory");
    sqlite3_close(db);
    return Unexpected{message};
  }
  auto store = std::make_unique<SqliteStore>(path, db, options.read_only);
  if (auto ok = store->init(options); !ok) return Unexpected{ok.error()};
  return std::unique_ptr<Store>(std::move(store));
}

}  // namespace gpubank::store::detail
