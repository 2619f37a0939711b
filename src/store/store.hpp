// The durable store of the resource bank: the ledger and the audit log, append-only, behind
// one interface with two backends.
//
//   SQLite      a file path. WAL mode, synchronous=FULL (every commit is fsync'd before
//               append() returns), busy timeout 30 s. One connection per Store, guarded by a
//               mutex; appends take the database's write lock with BEGIN IMMEDIATE, so
//               several processes on one file also append one after another.
//   PostgreSQL  a postgres://... or postgresql://... URL (libpq syntax, e.g.
//               postgresql://user@/db?host=/run/postgresql for a Unix socket). One
//               connection per Store, guarded by a mutex; every append transaction first
//               takes a transaction-scoped advisory lock (pg_advisory_xact_lock), so appends
//               from any number of processes (replicas) run one after another and each sees
//               the previous one's head.
//
// Inside that serialisation an append reads the head (last ledger seq and time, last audit
// seq and hash), assigns seqs head+1, head+2, ... and chains the audit entries onto the
// head's hash, inserts everything and commits: seqs are gapless and the chain unbroken
// however many writers there are, and a batch is all or nothing.
//
// Append-only: the code has no UPDATE or DELETE of ledger or audit rows, and the schema
// refuses them (SQLite: BEFORE UPDATE/DELETE triggers with RAISE(ABORT); PostgreSQL: a
// plpgsql trigger that raises on UPDATE, DELETE and TRUNCATE).
//
// Schema migrations are a versioned list per backend, recorded in schema_migrations and
// applied in one transaction at open (PostgreSQL: under an advisory lock, so replicas
// starting together migrate once). A store whose schema is newer than this binary knows is
// refused.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "bank/audit.hpp"
#include "bank/ledger.hpp"
#include "core/expected.hpp"

namespace gpubank::store {

// The schema version this binary creates and understands.
inline constexpr int kSchemaVersion = 4;
// At most this many entries (ledger + audit) per append.
inline constexpr std::size_t kMaxBatch = 100'000;

struct AppendResult {
  std::vector<bank::LedgerEntry> ledger;  // as stored: seqs and the ledger chain assigned
  std::vector<bank::AuditEntry> audit;    // as stored: seqs, prevHash and hash assigned
};

// The last entries of a store (zero and empty when there are none).
struct Head {
  std::int64_t ledger_seq = 0;
  std::int64_t ledger_time_ms = 0;
  std::int64_t audit_seq = 0;
  std::string audit_hash;
  std::string ledger_hash;
  friend bool operator==(const Head&, const Head&) = default;
};

struct OpenOptions {
  // Create the store when it does not exist (SQLite: the file). The read-only commands
  // pass false, so a mistyped path is an error rather than a new empty store.
  bool create = true;
  // Apply migrations only up to this version (tests of the migration path); 0 = all.
  int migrate_to = 0;
  // Never write: SQLite opens the file with mode=ro (a read-only file or directory is
  // fine, the file stays byte-identical); PostgreSQL runs every transaction read-only
  // (default_transaction_read_only). Nothing is migrated: a store whose schema is not
  // kSchemaVersion is refused, naming both versions. append() fails.
  bool read_only = false;
};

// Thread-safe: any number of threads may call any method of one Store.
class Store {
 public:
  virtual ~Store() = default;
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // A file path (SQLite) or a postgres:// / postgresql:// URL (PostgreSQL). Applies the
  // pending migrations.
  static Expected<std::unique_ptr<Store>> open(const std::string& location, const OpenOptions& options = {});

  // Validates every entry (validate_batch), then appends the ledger and the audit entries in
  // ONE transaction: all or nothing. Ledger times must not go back: the batch's times are
  // non-decreasing and not before the stored last entry's. Returns the entries as stored,
  // only after the commit is durable. The input's seq, prevHash and hash are ignored.
  virtual Expected<AppendResult> append(std::span<const bank::LedgerEntry> ledger,
                                        std::span<const bank::AuditEntry> audit) = 0;
  // Entries with seq > after_seq, in seq order, at most `limit`.
  virtual Expected<std::vector<bank::LedgerEntry>> ledger(std::int64_t after_seq, std::size_t limit) = 0;
  virtual Expected<std::vector<bank::AuditEntry>> audit(std::int64_t after_seq, std::size_t limit) = 0;
  // Every ledger entry naming the workload, in seq order.
  virtual Expected<std::vector<bank::LedgerEntry>> ledger_for_workload(const std::string& workload) = 0;
  virtual Expected<int> schema_version() = 0;
  virtual Expected<Head> head() = 0;

  // Makes this Store the ledger's one producer: inserts a row into the writers table (under
  // the append lock) and returns its epoch, 1, 2, 3, ... unique for the store's lifetime,
  // across restarts and processes. From then on every append of this Store first checks,
  // inside its transaction and under the append lock, that its epoch is still the newest,
  // and fails naming both epochs, appending nothing, once another Store acquired a newer
  // one ("fenced"). A producer folds the ledger in memory and assumes nobody else appends
  // ledger entries; the fence turns a second producer into an error instead of a silent
  // double count. The epoch also makes the producer's ids unique: borrow record ids
  // "<epoch>-<n>" never repeat after a restart or between two producers.
  // Stores that never call it (tools, tests, several writer processes of one producer)
  // append unfenced, serialised as always. Needs schema 4; fails on a read-only Store.
  virtual Expected<std::int64_t> acquire_writer(const std::string& holder) = 0;
  // The epoch of the store's first producer, 0 when none acquired it yet. A producer that
  // re-runs one deterministic run on its own store (`gpubank up --data-dir`, which replays
  // from the start after a restart) prefixes its record ids with this one, so every start
  // regenerates the ids already stored whichever epoch it holds itself.
  virtual Expected<std::int64_t> first_writer_epoch() = 0;

  [[nodiscard]] virtual std::string_view backend() const = 0;  // "sqlite" or "postgresql"
  [[nodiscard]] const std::string& location() const { return location_; }

 protected:
  explicit Store(std::string location) : location_(std::move(location)) {}

 private:
  std::string location_;
};

// True for locations the PostgreSQL backend takes.
[[nodiscard]] bool is_postgres_url(std::string_view location);

// Checks a batch before anything is written: every entry with bank::validate_entry /
// bank::validate_audit_entry, the batch size, and ledger times non-decreasing within the
// batch. Returns "ledger[<i>].<field>: <rule>" / "audit[<i>].<field>: <rule>", or nullopt.
[[nodiscard]] std::optional<std::string> validate_batch(std::span<const bank::LedgerEntry> ledger,
                                                        std::span<const bank::AuditEntry> audit);

// Appends any number of entries as consecutive batches of at most kMaxBatch (each one
// transaction, in order): what a run hands over after an instant can exceed one batch.
// Stops at the first failed batch; the batches before it stay committed.
Expected<bool> append_in_batches(Store& store, std::span<const bank::LedgerEntry> ledger,
                                 std::span<const bank::AuditEntry> audit);

// Reads the audit entries after `after_seq` in seq order, a page at a time, and hands each
// to `visit`; after_seq advances past each entry visit accepts. A visit that returns an
// error stops the read with "audit entry <seq>: <error>", leaving after_seq before that
// entry, so the next read meets it again (a bad entry is never skipped silently).
Expected<bool> read_audit_after(Store& store, std::int64_t& after_seq,
                                const std::function<std::optional<std::string>(const bank::AuditEntry&)>& visit);

// Reads the whole ledger (in pages) into a LedgerBook; fails on a gap in seqs or an entry the
// book refuses.
Expected<bank::LedgerBook> load_book(Store& store, std::size_t page = 10'000);
// Verifies the whole audit chain (in pages). An error only when the store cannot be read.
Expected<bank::ChainReport> verify_audit(Store& store, std::size_t page = 10'000);

// What verify_store checks beyond the chains themselves: anchors kept outside the store
// (`gpubank audit head` prints them). A chain that lacks the anchor's seq was truncated
// below it; one whose entry at that seq has another hash was rewritten.
struct VerifyOptions {
  std::optional<bank::Anchor> audit_anchor;
  std::optional<bank::Anchor> ledger_anchor;
};

struct StoreReport {
  bank::ChainReport audit;
  bank::ChainReport ledger;            // includes the cross-link: auditSeq/auditHash name a real audit entry
  std::string audit_anchor_problem;    // empty when no anchor was given or it matched
  std::string ledger_anchor_problem;
  [[nodiscard]] bool ok() const {
    return audit.ok && ledger.ok && audit_anchor_problem.empty() && ledger_anchor_problem.empty();
  }
};

// Verifies both chains in one pass over each (in pages): the audit chain as verify_audit,
// the ledger chain with bank::LedgerChainVerifier, every ledger entry's auditSeq/auditHash
// against the audit entry it names (an audit log cut below it, or a different hash there,
// breaks the ledger at that entry), and the anchors. An error only when the store cannot be
// read.
Expected<StoreReport> verify_store(Store& store, const VerifyOptions& options = {}, std::size_t page = 10'000);

}  // namespace gpubank::store
