// What the two backends share (internal to src/store).
#pragma once

#include <memory>
#include <string>

#include "store/store.hpp"

namespace gpubank::store::detail {

Expected<std::unique_ptr<Store>> open_sqlite(const std::string& path, const OpenOptions& options);
Expected<std::unique_ptr<Store>> open_postgres(const std::string& url, const OpenOptions& options);

// The entries as they will be stored after `head`: seqs assigned, audit entries chained.
// Fails when the batch's first ledger time is before the head's (the batch itself was
// checked by validate_batch).
Expected<AppendResult> sequence(const Head& head, std::span<const bank::LedgerEntry> ledger,
                                std::span<const bank::AuditEntry> audit);

// Migration 4's description (both backends): it adds the ledger's hash columns and chains
// the rows already stored, at migration time, with auditSeq 0 (no link to the audit log).
inline constexpr const char* kLedgerChainDescription =
    "ledger hash chain (rows stored before it are chained at migration time, with auditSeq 0)";

// Chains `page` (consecutive stored rows, seq order) after the previous row's hash, keeping
// each row's seq, with auditSeq 0: migration 4's backfill. Returns the last hash.
std::string backfill_chain(std::vector<bank::LedgerEntry>& page, std::string prev_hash);

// Clears the chain fields: what a store before migration 4 stores (tests of the migration
// path only; such a store is opened with migrate_to < 4).
void unchain(std::vector<bank::LedgerEntry>& entries);

// The message for an append of a Store whose writer epoch was superseded.
std::string fenced_message(const std::string& location, std::int64_t mine, std::int64_t newest,
                           const std::string& holder);

// The message for a store opened read-only whose schema is not this binary's.
std::string read_only_version_message(const std::string& location, int found);

// The version a migration list ends at, given the options (0 = all).
int target_version(int latest, const OpenOptions& options);

// The message for a store whose schema is newer than this binary's.
std::string too_new_message(const std::string& location, int found);

}  // namespace gpubank::store::detail
