// The PostgreSQL backend (libpqxx 6.4): one connection per Store, appends serialised across
// processes by a transaction-scoped advisory lock. See store.hpp.
#include <pqxx/pqxx>

#include <algorithm>
#include <limits>
#include <mutex>

#include "store/backends.hpp"

namespace gpubank::store::detail {
namespace {

// Advisory lock keys (per database): one for migrations, one for appends.
constexpr std::int64_t kMigrationLock = 0x67707562616e6b01;  // "gpubank" 01
constexpr std::int64_t kAppendLock = 0x67707562616e6b02;     // "gpubank" 02

// Rows per INSERT statement.
constexpr std::size_t kRowsPerInsert = 500;

struct Migration {
  int version;
  const char* description;
  std::vector<const char*> statements;
};

// Append new versions at the end; never edit one that has shipped. The versions match the
// SQLite backend's.
const std::vector<Migration>& postgres_migrations() {
  static const std::vector<Migration> migrations{
      {1,
       "ledger and audit tables",
       {R"sql(CREATE TABLE ledger (
              seq BIGINT PRIMARY KEY,
              time_ms BIGINT NOT NULL,
              kind TEXT NOT NULL,
              pool TEXT NOT NULL,
              flavor TEXT NOT NULL,
              business_group TEXT NOT NULL,
              lender TEXT NOT NULL,
              workload TEXT NOT NULL,
              record TEXT NOT NULL,
              gpus BIGINT NOT NULL,
              lending_limit BIGINT NOT NULL,
              borrowing_limit BIGINT NOT NULL,
              reason TEXT NOT NULL))sql",
        R"sql(CREATE TABLE audit (
              seq BIGINT PRIMARY KEY,
              time_ms BIGINT NOT NULL,
              actor TEXT NOT NULL,
              action TEXT NOT NULL,
              object TEXT NOT NULL,
              policy_version TEXT NOT NULL,
              decision TEXT NOT NULL,
              reason TEXT NOT NULL,
              numbers TEXT NOT NULL,
              prev_hash TEXT NOT NULL,
              hash TEXT NOT NULL))sql"}},
      {2,
       "append-only: UPDATE, DELETE and TRUNCATE of ledger and audit rows are refused",
       {R"sql(CREATE FUNCTION gpubank_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
              BEGIN
                RAISE EXCEPTION 'gpubank: table % is append-only: % refused', TG_TABLE_NAME, TG_OP
                  USING ERRCODE = 'insufficient_privilege';
              END $$)sql",
        "CREATE TRIGGER ledger_append_only BEFORE UPDATE OR DELETE ON ledger "
        "FOR EACH ROW EXECUTE FUNCTION gpubank_append_only()",
        "CREATE TRIGGER ledger_no_truncate BEFORE TRUNCATE ON ledger "
        "FOR EACH STATEMENT EXECUTE FUNCTION gpubank_append_only()",
        "CREATE TRIGGER audit_append_only BEFORE UPDATE OR DELETE ON audit "
        "FOR EACH ROW EXECUTE FUNCTION gpubank_append_only()",
        "CREATE TRIGGER audit_no_truncate BEFORE TRUNCATE ON audit "
        "FOR EACH STATEMENT EXECUTE FUNCTION gpubank_append_only()"}},
      {3, "ledger index by workload (per-workload trails)", {"CREATE INDEX ledger_by_workload ON ledger (workload, seq)"}},
      {4,
       kLedgerChainDescription,
       {"ALTER TABLE ledger ADD COLUMN prev_hash TEXT NOT NULL DEFAULT '', ADD COLUMN audit_seq BIGINT NOT NULL DEFAULT 0, "
        "ADD COLUMN audit_hash TEXT NOT NULL DEFAULT '', ADD COLUMN hash TEXT NOT NULL DEFAULT ''",
        "CREATE TABLE writers (epoch BIGINT PRIMARY KEY, holder TEXT NOT NULL, acquired_at TIMESTAMPTZ NOT NULL DEFAULT now())"}},
  };
  return migrations;
}

constexpr const char* kLedgerColumns =
    "seq, time_ms, kind, pool, flavor, business_group, lender, workload, record, gpus, lending_limit, "
    "borrowing_limit, reason, prev_hash, audit_seq, audit_hash, hash";
// Before migration 4 (a store opened with migrate_to < 4, in tests of the migration path).
constexpr const char* kLedgerColumnsUnchained =
    "seq, time_ms, kind, pool, flavor, business_group, lender, workload, record, gpus, lending_limit, "
    "borrowing_limit, reason";
constexpr const char* kAuditColumns =
    "seq, time_ms, actor, action, object, policy_version, decision, reason, numbers, prev_hash, hash";

// The URL without its password (user:password@ or a password= parameter), for messages.
std::string redact(const std::string& url) {
  std::string out = url;
  const auto scheme = out.find("://");
  if (scheme != std::string::npos) {
    const auto at = out.find('@', scheme + 3);
    const auto slash = out.find('/', scheme + 3);
    const auto colon = out.find(':', scheme + 3);
    if (at != std::string::npos && (slash == std::string::npos || at < slash) && colon != std::string::npos &&
        colon < at) {
      out = out.substr(0, colon + 1) + "***" + out.substr(at);
    }
  }
  for (std::size_t pos = out.find("password="); pos != std::string::npos; pos = out.find("password=", pos + 1)) {
    if (pos > 0 && out[pos - 1] != '?' && out[pos - 1] != '&') continue;
    const std::size_t value = pos + 9;
    const std::size_t end = out.find('&', value);
    out = out.substr(0, value) + "***" + (end == std::string::npos ? std::string() : out.substr(end));
  }
  return out;
}

std::string text(const pqxx::field& f) { return f.is_null() ? std::string() : std::string(f.c_str(), f.size()); }

class PostgresStore final : public Store {
 public:
  PostgresStore(const std::string& url, std::unique_ptr<pqxx::connection> conn, bool read_only)
      : Store(redact(url)), conn_(std::move(conn)), read_only_(read_only) {}

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
  [[nodiscard]] std::string_view backend() const override { return "postgresql"; }

 private:
  std::string error(const std::string& what, const std::exception& e) const {
    std::string message = e.what();
    while (!message.empty() && (message.back() == '\n' || message.back() == ' ')) message.pop_back();
    return "postgresql store " + location() + ": " + what + ": " + message;
  }
  Head read_head(pqxx::transaction_base& tx) const;
  [[nodiscard]] std::string ledger_columns() const { return chained_ ? kLedgerColumns : kLedgerColumnsUnchained; }
  static int read_version(pqxx::transaction_base& tx);
  Expected<std::vector<bank::LedgerEntry>> to_ledger(const pqxx::result& rows) const;
  static std::vector<bank::AuditEntry> to_audit(const pqxx::result& rows);
  Expected<bool> backfill_ledger_chain(pqxx::work& tx) const;

  std::mutex mu_;
  std::unique_ptr<pqxx::connection> conn_;
  bool read_only_;
  bool chained_ = true;  // the schema has the ledger's chain columns (version >= 4)
  std::int64_t epoch_ = 0;  // the writer epoch this Store acquired; 0: unfenced
};

int PostgresStore::read_version(pqxx::transaction_base& tx) {
  const pqxx::result exists = tx.exec("SELECT to_regclass('schema_migrations') IS NOT NULL");
  if (!exists[0][0].as<bool>()) return 0;
  return tx.exec("SELECT coalesce(max(version), 0) FROM schema_migrations")[0][0].as<int>();
}

Head PostgresStore::read_head(pqxx::transaction_base& tx) const {
  const pqxx::result r = tx.exec(
      "SELECT (SELECT seq FROM ledger ORDER BY seq DESC LIMIT 1), (SELECT time_ms FROM ledger ORDER BY seq DESC LIMIT 1), "
      "(SELECT seq FROM audit ORDER BY seq DESC LIMIT 1), (SELECT hash FROM audit ORDER BY seq DESC LIMIT 1), " +
      std::string(chained_ ? "(SELECT hash FROM ledger ORDER BY seq DESC LIMIT 1)" : "''"));
  Head h;
  h.ledger_seq = r[0][0].is_null() ? 0 : r[0][0].as<std::int64_t>();
  h.ledger_time_ms = r[0][1].is_null() ? 0 : r[0][1].as<std::int64_t>();
  h.audit_seq = r[0][2].is_null() ? 0 : r[0][2].as<std::int64_t>();
  h.audit_hash = text(r[0][3]);
  h.ledger_hash = text(r[0][4]);
  return h;
}

Expected<bool> PostgresStore::init(const OpenOptions& options) {
  const auto& migrations = postgres_migrations();
  const int target = target_version(migrations.back().version, options);
  try {
    // No NOTICEs on stderr. (libpqxx restores variables set this way when it reconnects.)
    conn_->set_variable("client_min_messages", "warning");
    if (read_only_) {
      // Every transaction of this connection is read-only: the server refuses any write.
      conn_->set_variable("default_transaction_read_only", "on");
      pqxx::read_transaction tx(*conn_);
      const int current = read_version(tx);
      if (current != kSchemaVersion) return Unexpected{read_only_version_message(location(), current)};
      return true;
    }
    pqxx::work tx(*conn_);
    // Replicas starting together: one migrates, the others wait and then find it done.
    tx.exec("SELECT pg_advisory_xact_lock(" + std::to_string(kMigrationLock) + ")");
    int current = read_version(tx);
    if (current > kSchemaVersion) return Unexpected{too_new_message(location(), current)};
    chained_ = std::max(current, target) >= 4;
    if (current >= target) return true;  // the transaction ends without changes
    tx.exec(
        "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, description TEXT NOT NULL, "
        "applied_at TIMESTAMPTZ NOT NULL DEFAULT now())");
    for (const Migration& m : migrations) {
      if (m.version <= current || m.version > target) continue;
      for (const char* sql : m.statements) tx.exec(sql);
      if (m.version == 4) {
        if (auto ok = backfill_ledger_chain(tx); !ok) return ok;
      }
      tx.exec_params("INSERT INTO schema_migrations (version, description) VALUES ($1, $2)", m.version,
                     std::string(m.description));
    }
    tx.commit();
  } catch (const std::exception& e) {
    return Unexpected{error("schema migration", e)};
  }
  return true;
}

// Migration 4: chains the rows stored before the ledger had a chain. The append-only
// trigger is disabled for these UPDATEs only, inside the migration's transaction.
Expected<bool> PostgresStore::backfill_ledger_chain(pqxx::work& tx) const {
  tx.exec("ALTER TABLE ledger DISABLE TRIGGER ledger_append_only");
  std::string prev;
  std::int64_t after = 0;
  while (true) {
    auto page = to_ledger(tx.exec_params(std::string("SELECT ") + kLedgerColumns +
                                             " FROM ledger WHERE seq > $1 ORDER BY seq LIMIT 10000",
                                         after));
    if (!page) return Unexpected{page.error()};
    if (page->empty()) break;
    prev = backfill_chain(*page, prev);
    for (const bank::LedgerEntry& e : *page) {
      tx.exec_params("UPDATE ledger SET prev_hash = $1, hash = $2 WHERE seq = $3", e.prev_hash, e.hash, e.seq);
    }
    after = page->back().seq;
  }
  tx.exec("ALTER TABLE ledger ENABLE TRIGGER ledger_append_only");
  return true;
}

Expected<AppendResult> PostgresStore::append(std::span<const bank::LedgerEntry> ledger,
                                             std::span<const bank::AuditEntry> audit) {
  if (auto problem = validate_batch(ledger, audit)) return Unexpected{"invalid batch, nothing appended: " + *problem};
  if (ledger.empty() && audit.empty()) return AppendResult{};
  if (read_only_) return Unexpected{"postgresql store " + location() + ": opened read-only, nothing appended"};
  std::lock_guard lock(mu_);
  try {
    pqxx::work tx(*conn_);
    // Every writer, in any process, queues here; the lock is released by commit or abort.
    tx.exec("SELECT pg_advisory_xact_lock(" + std::to_string(kAppendLock) + ")");
    if (epoch_ > 0) {
      const pqxx::result w = tx.exec("SELECT epoch, holder FROM writers ORDER BY epoch DESC LIMIT 1");
      const std::int64_t newest = w.empty() ? 0 : w[0][0].as<std::int64_t>();
      if (newest != epoch_) return Unexpected{fenced_message(location(), epoch_, newest, w.empty() ? "" : text(w[0][1]))};
    }
    auto out = sequence(read_head(tx), ledger, audit);
    if (!out) return out;  // the transaction aborts on destruction
    if (!chained_) unchain(out->ledger);
    for (std::size_t begin = 0; begin < out->ledger.size(); begin += kRowsPerInsert) {
      std::string sql = "INSERT INTO ledger (" + ledger_columns() + ") VALUES ";
      const std::size_t end = std::min(out->ledger.size(), begin + kRowsPerInsert);
      for (std::size_t i = begin; i < end; ++i) {
        const bank::LedgerEntry& e = out->ledger[i];
        if (i > begin) sql += ',';
        sql += '(' + std::to_string(e.seq) + ',' + std::to_string(e.time_ms) + ',' +
               tx.quote(std::string(bank::kind_name(e.kind))) + ',' + tx.quote(e.pool) + ',' + tx.quote(e.flavor) + ',' +
               tx.quote(e.business_group) + ',' + tx.quote(e.lender) + ',' + tx.quote(e.workload) + ',' +
               tx.quote(e.record) + ',' + std::to_string(e.gpus) + ',' + std::to_string(e.lending_limit) + ',' +
               std::to_string(e.borrowing_limit) + ',' + tx.quote(e.reason);
        if (chained_) {
          sql += ',' + tx.quote(e.prev_hash) + ',' + std::to_string(e.audit_seq) + ',' + tx.quote(e.audit_hash) + ',' +
                 tx.quote(e.hash);
        }
        sql += ')';
      }
      tx.exec(sql);
    }
    for (std::size_t begin = 0; begin < out->audit.size(); begin += kRowsPerInsert) {
      std::string sql = std::string("INSERT INTO audit (") + kAuditColumns + ") VALUES ";
      const std::size_t end = std::min(out->audit.size(), begin + kRowsPerInsert);
      for (std::size_t i = begin; i < end; ++i) {
        const bank::AuditEntry& e = out->audit[i];
        if (i > begin) sql += ',';
        sql += '(' + std::to_string(e.seq) + ',' + std::to_string(e.time_ms) + ',' + tx.quote(e.actor) + ',' +
               tx.quote(e.action) + ',' + tx.quote(e.object) + ',' + tx.quote(e.policy_version) + ',' +
               tx.quote(e.decision) + ',' + tx.quote(e.reason) + ',' + tx.quote(e.numbers) + ',' +
               tx.quote(e.prev_hash) + ',' + tx.quote(e.hash) + ')';
      }
      tx.exec(sql);
    }
    tx.commit();
    return out;
  } catch (const pqxx::in_doubt_error& e) {
    return Unexpected{error("append: the connection broke during COMMIT, so whether the batch was stored is unknown "
                            "(read the head before appending it again)",
                            e)};
  } catch (const std::exception& e) {
    return Unexpected{error("append", e)};
  }
}

Expected<std::int64_t> PostgresStore::first_writer_epoch() {
  if (!chained_) return Unexpected{"postgresql store " + location() + ": writer epochs need schema version 4"};
  std::lock_guard lock(mu_);
  try {
    pqxx::read_transaction tx(*conn_);
    return tx.exec("SELECT coalesce(min(epoch), 0) FROM writers")[0][0].as<std::int64_t>();
  } catch (const std::exception& e) {
    return Unexpected{error("read the writer epochs", e)};
  }
}

Expected<std::int64_t> PostgresStore::acquire_writer(const std::string& holder) {
  if (read_only_) return Unexpected{"postgresql store " + location() + ": opened read-only, cannot acquire the writer"};
  if (!chained_) return Unexpected{"postgresql store " + location() + ": writer epochs need schema version 4"};
  std::lock_guard lock(mu_);
  try {
    pqxx::work tx(*conn_);
    // The append lock: an acquire and an append of the fenced writer never interleave.
    tx.exec("SELECT pg_advisory_xact_lock(" + std::to_string(kAppendLock) + ")");
    const std::int64_t epoch = tx.exec("SELECT coalesce(max(epoch), 0) + 1 FROM writers")[0][0].as<std::int64_t>();
    tx.exec_params("INSERT INTO writers (epoch, holder) VALUES ($1, $2)", epoch, holder);
    tx.commit();
    epoch_ = epoch;
    return epoch;
  } catch (const std::exception& e) {
    return Unexpected{error("acquire the writer", e)};
  }
}

Expected<std::vector<bank::LedgerEntry>> PostgresStore::to_ledger(const pqxx::result& rows) const {
  std::vector<bank::LedgerEntry> out;
  out.reserve(rows.size());
  for (const auto& row : rows) {
    bank::LedgerEntry e;
    e.seq = row[0].as<std::int64_t>();
    e.time_ms = row[1].as<std::int64_t>();
    const std::string kind = text(row[2]);
    const auto parsed = bank::parse_kind(kind);
    if (!parsed) {
      return Unexpected{"postgresql store " + location() + ": ledger seq " + std::to_string(e.seq) +
                        " has an unknown kind \"" + kind + "\""};
    }
    e.kind = *parsed;
    e.pool = text(row[3]);
    e.flavor = text(row[4]);
    e.business_group = text(row[5]);
    e.lender = text(row[6]);
    e.workload = text(row[7]);
    e.record = text(row[8]);
    e.gpus = row[9].as<std::int64_t>();
    e.lending_limit = row[10].as<std::int64_t>();
    e.borrowing_limit = row[11].as<std::int64_t>();
    e.reason = text(row[12]);
    if (row.size() > 16) {
      e.prev_hash = text(row[13]);
      e.audit_seq = row[14].as<std::int64_t>();
      e.audit_hash = text(row[15]);
      e.hash = text(row[16]);
    }
    out.push_back(std::move(e));
  }
  return out;
}

std::vector<bank::AuditEntry> PostgresStore::to_audit(const pqxx::result& rows) {
  std::vector<bank::AuditEntry> out;
  out.reserve(rows.size());
  for (const auto& row : rows) {
    bank::AuditEntry e;
    e.seq = row[0].as<std::int64_t>();
    e.time_ms = row[1].as<std::int64_t>();
    e.actor = text(row[2]);
    e.action = text(row[3]);
    e.object = text(row[4]);
    e.policy_version = text(row[5]);
    e.decision = text(row[6]);
    e.reason = text(row[7]);
    e.numbers = text(row[8]);
    e.prev_hash = text(row[9]);
    e.hash = text(row[10]);
    out.push_back(std::move(e));
  }
  return out;
}

std::int64_t clamp_limit(std::size_t limit) {
  return limit > static_cast<std::size_t>(std::numeric_limits<std::int64_t>::max())
             ? std::numeric_limits<std::int64_t>::max()
             : static_cast<std::int64_t>(limit);
}

Expected<std::vector<bank::LedgerEntry>> PostgresStore::ledger(std::int64_t after_seq, std::size_t limit) {
  std::lock_guard lock(mu_);
  try {
    pqxx::read_transaction tx(*conn_);
    return to_ledger(tx.exec_params("SELECT " + ledger_columns() + " FROM ledger WHERE seq > $1 ORDER BY seq LIMIT $2",
                                    after_seq, clamp_limit(limit)));
  } catch (const std::exception& e) {
    return Unexpected{error("read the ledger", e)};
  }
}

Expected<std::vector<bank::AuditEntry>> PostgresStore::audit(std::int64_t after_seq, std::size_t limit) {
  std::lock_guard lock(mu_);
  try {
    pqxx::read_transaction tx(*conn_);
    return to_audit(tx.exec_params(std::string("SELECT ") + kAuditColumns +
                                       " FROM audit WHERE seq > $1 ORDER BY seq LIMIT $2",
                                   after_seq, clamp_limit(limit)));
  } catch (const std::exception& e) {
    return Unexpected{error("read the audit log", e)};
  }
}

Expected<std::vector<bank::LedgerEntry>> PostgresStore::ledger_for_workload(const std::string& workload) {
  std::lock_guard lock(mu_);
  try {
    pqxx::read_transaction tx(*conn_);
    return to_ledger(tx.exec_params("SELECT " + ledger_columns() + " FROM ledger WHERE workload = $1 ORDER BY seq",
                                    workload));
  } catch (const std::exception& e) {
    return Unexpected{error("read the ledger", e)};
  }
}

Expected<int> PostgresStore::schema_version() {
  std::lock_guard lock(mu_);
  try {
    pqxx::read_transaction tx(*conn_);
    return read_version(tx);
  } catch (const std::exception& e) {
    return Unexpected{error("read the schema version", e)};
  }
}

Expected<Head> PostgresStore::head() {
  std::lock_guard lock(mu_);
  try {
    pqxx::read_transaction tx(*conn_);
    return read_head(tx);
  } catch (const std::exception& e) {
    return Unexpected{error("read the head", e)};
  }
}

}  // namespace

Expected<std::unique_ptr<Store>> open_postgres(const std::string& url, const OpenOptions& options) {
  std::unique_ptr<pqxx::connection> conn;
  try {
    conn = std::make_unique<pqxx::connection>(url);
  } catch (const std::exception& e) {
    std::string message = e.what();
    while (!message.empty() && (message.back() == '\n' || message.back() == ' ')) message.pop_back();
    return Unexpected{"postgresql store " + redact(url) + ": cannot connect: " + message};
  }
  auto store = std::make_unique<PostgresStore>(url, std::move(conn), options.read_only);
  if (auto ok = store->init(options); !ok) return Unexpected{ok.error()};
  return std::unique_ptr<Store>(std::move(store));
}

}  // namespace gpubank::store::detail
