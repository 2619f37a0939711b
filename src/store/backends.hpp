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

// The version a migration list ends at, given the options (0 = all).
int target_version(int latest, const OpenOptions& options);

// The message for a store whose schema is newer than this binary's.
std::string too_new_message(const std::string& location, int found);

}  // namespace gpubank::store::detail
