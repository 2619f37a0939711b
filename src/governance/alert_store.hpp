// The alert record: every lifecycle transition (alerts.hpp) is an entry of the store's
// append-only, hash-chained audit log (store/store.hpp), actor "gpubank-scan", action
// "LowUtilization<action>", object "<workloadKind>/<namespace>/<workload>", decision the new
// state, numbers the alert as JSON. A scan's transitions go in one transaction, so a crash
// leaves all or none of them; the open alerts are the fold of the record, so a restarted
// scanner continues where the last commit left it and never notifies twice. A person's
// reclaim decision (reclaim_approval.hpp) is an entry of the same kind whose actor is that
// person, action "LowUtilizationReclaimApproved" or "...Rejected".
//
// The same log holds the bank's checkpoint notices (`gpubank controller`'s
// ReclaimNoticeSent / ReclaimVictimStopped with CheckpointCompleted), which give the
// checkpoint grace.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/expected.hpp"
#include "governance/alerts.hpp"
#include "store/store.hpp"

namespace gpubank::governance {

inline constexpr std::string_view kScanActor = "gpubank-scan";
inline constexpr std::string_view kActionPrefix = "LowUtilization";

// The record folded: read incrementally (refresh() reads only entries after last_seq).
struct AlertBook {
  std::map<std::string, Alert, std::less<>> open;             // by workload_uid
  std::map<std::string, std::int64_t, std::less<>> last_ids;  // highest alert id per workload
  std::map<std::string, std::int64_t, std::less<>> reopened;  // alerts opened per workload
  // Kueue Workload "<namespace>/<name>" -> the time of its last checkpoint notice or completion.
  std::map<std::string, std::int64_t, std::less<>> checkpoints;
  std::int64_t last_seq = 0;
  std::int64_t transitions = 0;  // scanner entries read
};

// Reads the audit entries after book.last_seq into the book. Fails on an entry of the scanner
// whose numbers are not an alert (naming its seq): the record was not written by this code.
Expected<bool> refresh(store::Store& store, AlertBook& book);

// The audit entry of a transition at `now_ms`.
[[nodiscard]] bank::AuditEntry audit_entry(const Transition& t, std::int64_t now_ms);

// Appends the transitions in one transaction and folds them into the book.
Expected<bool> record(store::Store& store, AlertBook& book, std::span<const Transition> transitions,
                      std::int64_t now_ms);

// The last checkpoint of a workload from the Kueue Workloads' notices: Kueue names a job's
// Workload "<kind, lower case>-<name>-<five hex digits>" in the job's namespace.
[[nodiscard]] std::optional<std::int64_t> last_checkpoint(const AlertBook& book, const WorkloadFacts& w);

}  // namespace gpubank::governance
