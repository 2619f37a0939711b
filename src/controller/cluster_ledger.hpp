// The bank's ledger in a cluster (`gpubank controller --store`): the entries the twin
// records (bank/ledger.hpp), built from what the cluster says instead of a simulation.
//
//   QuotaSet      per (pool, group), from the policy set at the pass's time: the guarantee
//                 plus the TemporaryQuota leases in force (what the ClusterQueue's
//                 nominalQuota is set to), the policy's lendingLimit and the rendered
//                 borrowingLimit. Written when one of them differs from the last QuotaSet
//                 stored for the key. Reason LeaseActivated (the guarantee rose while a
//                 lease is in force), LeaseExpired (it fell and a lease of the key ended),
//                 else Policy. A GPUQuotaPolicy that is gone leaves guarantee 0, no
//                 lending limit, borrowing limit 0.
//   UsageStarted  a Kueue Workload of a gpubank ClusterQueue that holds quota
//                 (QuotaReserved, not Finished) for a non-zero GPU count.
//   UsageEnded    an open usage whose Workload no longer holds it: Finished; Reclaimed
//                 (stopped by gpubank's graceful reclaim); Evicted (Kueue took the quota
//                 back: preemption, deactivation by someone else, a pods-ready timeout);
//                 Deleted (gone from the cluster); Changed (its group or GPU count changed:
//                 it ends and starts again).
//   Borrow*       bank::BorrowTracker's attribution after those changes, as in the twin,
//                 admissions ordered by QuotaReserved's lastTransitionTime.
//
// Every entry of a pass carries the pass's time (Unix ms; never before the last stored
// entry): the controller dates a change when it observes it, so an entry is late by at
// most the debounce, or by the time no leader ran.
//
// The state is the store: resume() folds the stored ledger, so a new leader or a restarted
// controller continues where the last producer stopped (the records it opens carry its
// writer epoch in their ids). observe() computes a pass's entries without changing the
// state; commit() adopts them once the store accepted them, so a failed append changes
// nothing and the next pass computes them again. Pure: no clocks, no I/O.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "bank/attribution.hpp"
#include "bank/ledger.hpp"
#include "controller/reclaim.hpp"
#include "core/expected.hpp"
#include "core/timestamp.hpp"
#include "policy/policy_set.hpp"

namespace gpubank::controller {

// One group's quota on one pool as the bank counts it at a time.
struct GroupQuota {
  std::string pool;
  std::string group;
  std::int64_t guaranteed = 0;       // the policy's guarantee + TemporaryQuota leases in force
  std::int64_t lease_extra = 0;      // of which from leases
  bool lease_ended = false;          // an approved TemporaryQuota lease of (pool, group) ended by then
  std::int64_t lending_limit = -1;   // -1: unset (all of the unused guarantee)
  std::int64_t borrowing_limit = 0;  // as rendered: maxCapacity - guarantee
  std::vector<std::string> lend_only_to;  // reclaimPolicy.onlyPreempt traits
  std::int64_t grace_ms = 0;              // reclaimPolicy.gracePeriod, else the guardrails' maxGracePeriod
};

// Every GPUQuotaPolicy of a pool the guardrails declare, sorted by (pool, group).
[[nodiscard]] std::vector<GroupQuota> group_quotas(const policy::PolicySet& set, Timestamp now);

// The attribution's view of a pool's quotas.
[[nodiscard]] std::vector<bank::PoolGroupQuota> pool_group_quotas(const std::vector<GroupQuota>& quotas,
                                                                  const std::string& pool);

struct LedgerPass {
  std::vector<bank::LedgerEntry> entries;  // to append, in order (seq and chain unset)
  // Workloads left out because an entry about them would break a rule of validate_entry
  // (a name too long for the ledger): "<workload>: <problem>".
  std::vector<std::string> skipped;
  // The attribution after the pass, per pool: commit() adopts it.
  std::map<std::string, bank::BorrowTracker> trackers;
};

class ClusterLedger {
 public:
  // From the stored ledger (store::load_book). `id_prefix`: "<writer epoch>-".
  [[nodiscard]] static ClusterLedger resume(bank::LedgerBook book, std::string id_prefix);

  // The entries that bring the ledger to the cluster's state at `now_ms`.
  [[nodiscard]] LedgerPass observe(const std::vector<GroupQuota>& quotas, const std::vector<ClusterWorkload>& workloads,
                                   std::int64_t now_ms) const;
  // Folds the entries as the store returned them (seqs and chain assigned) and adopts the
  // pass's attribution. Fails, changing nothing after the failing entry, when the book
  // refuses one: then resume from the store again.
  Expected<bool> commit(LedgerPass pass, std::span<const bank::LedgerEntry> stored);

  [[nodiscard]] const bank::LedgerBook& book() const { return book_; }

 private:
  ClusterLedger() = default;

  bank::LedgerBook book_;
  std::string id_prefix_;
  std::map<std::string, bank::BorrowTracker> trackers_;  // per pool, as committed
  std::map<std::pair<std::string, std::string>, bank::LedgerEntry> quota_set_;  // last QuotaSet per (pool, group)
};

}  // namespace gpubank::controller
