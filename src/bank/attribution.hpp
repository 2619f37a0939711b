// Who lends to whom: the bank's attribution of borrowed GPUs to lenders, one pool at a time.
//
// Kueue pools lendable quota in a cohort and never says whose idle guarantee a borrower
// runs on. The bank needs that answer (the ledger's borrow records, and a reclaim takes
// back what was lent by the group that reclaims), so it fixes a rule, applied after every
// change in the pool:
//
//  1. Each group's GPUs in use fill its guarantee first, oldest admission first (ties by
//     workload name); what a workload uses beyond the guarantee is borrowed. A workload
//     that straddles the guarantee borrows only its part above it.
//  2. A lender's lendable GPUs are min(guaranteed - used, lendingLimit) when it uses less
//     than its guarantee (lendingLimit unset: all of the unused guarantee), else 0.
//  3. Open records are kept while they stay valid, oldest first: a record keeps
//     min(its GPUs, what its workload still borrows, what its lender can still lend). A
//     record that cannot keep all of its GPUs is closed (reason WithinGuarantee when the
//     borrower needs less, Reattributed when the lender needs its GPUs back) and, if part
//     remains valid, reopened with that part, so that every record has a fixed GPU count
//     and GPU-hours are exact integrals.
//  4. What is still unattributed is drawn only from lenders whose onlyPreempt traits the
//     workload carries (any of them; a lender without onlyPreempt lends to anyone):
//     lenders that restrict traits before lenders open to anyone (they can lend to fewer
//     workloads); then the most lendable GPUs left; then the name. The rest (more borrowed
//     than the eligible lenders lend: a Cohort with quota of its own, limits changed under
//     running work, or a workload the bank's admission should have refused) is attributed
//     to "cohort:<pool>". A record whose lender no longer accepts the workload's traits
//     closes (Reattributed).
// Pure and deterministic: the same inputs give the same records in the same order.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace gpubank::bank {

struct PoolGroupQuota {
  std::string group;
  std::int64_t guaranteed = 0;
  std::optional<std::int64_t> lending_limit;  // unset: all of the unused guarantee
  std::vector<std::string> lend_only_to_traits;  // reclaimPolicy.onlyPreempt; empty: anyone
};

struct RunningWorkload {
  std::string name;   // "<namespace>/<name>", unique
  std::string group;
  std::int64_t gpus = 0;
  std::int64_t admitted_at = 0;  // any clock that orders admissions (the twin: a sequence)
  std::vector<std::string> traits;  // batch, checkpointable, training, development
};

// Rule 1's answer, which rules 2-4 read: each group's GPUs in use and what its running
// workloads borrow.
struct Borrowing {
  const RunningWorkload* workload = nullptr;
  std::int64_t gpus = 0;  // the part above its group's guarantee
};
struct PoolUsage {
  std::map<std::string, std::int64_t> used;  // GPUs in use, by group
  // In admission order (admitted_at, then name): every running workload that borrows, and
  // every running workload that holds an open record (gpus 0 when it borrows nothing now).
  // Others may be left out: a workload with an open record that is not here has stopped.
  // A caller that keeps each group's admission order can so build it from the groups above
  // their guarantee, newest first, without walking every running workload.
  std::vector<Borrowing> borrowing;
};

// Rule 1 over every running workload of the pool.
[[nodiscard]] PoolUsage pool_usage(const std::vector<PoolGroupQuota>& quotas, const std::vector<RunningWorkload>& running);

// An open borrow record as the tracker keeps it (the ledger's BorrowRecord adds its end).
struct Loan {
  std::string id;  // "<pool>/<sequence>", unique within a tracker
  std::string lender, borrower, workload;
  std::int64_t gpus = 0;
  std::int64_t start = 0;
};

struct BorrowChange {
  enum class Kind { Opened, Closed };
  Kind kind = Kind::Opened;
  Loan record;
  std::string close_reason;  // Closed only
};

// Whether a workload with `traits` may borrow from a lender whose onlyPreempt traits are
// `lend_only_to` (empty: anyone): it carries at least one of them.
[[nodiscard]] bool lends_to(const std::vector<std::string>& lend_only_to, const std::vector<std::string>& traits);

// The lender attributed when no group's guarantee covers a borrowed GPU.
[[nodiscard]] std::string cohort_lender(const std::string& pool);

class BorrowTracker {
 public:
  // Record ids are "<id_prefix><pool>/<n>", n = 1, 2, 3, ... in opening order. A producer
  // that appends to a shared store passes its writer epoch as the prefix ("3-"; see
  // store::Store::acquire_writer), so ids never repeat after a restart that starts
  // counting again or between two producers.
  explicit BorrowTracker(std::string pool, std::string id_prefix = {})
      : pool_(std::move(pool)), id_prefix_(std::move(id_prefix)) {}

  // Recomputes the attribution at `now` for the pool's current state and returns what
  // changed, closes before opens. `ended` names workloads that stopped since the last call
  // with the reason their records close with (Finished, Reclaimed, Preempted); a workload
  // that disappears without being named closes with "Ended".
  std::vector<BorrowChange> update(std::int64_t now, const std::vector<PoolGroupQuota>& quotas,
                                   const std::vector<RunningWorkload>& running,
                                   const std::map<std::string, std::string>& ended = {});
  // The same from rule 1's answer (pool_usage, or a caller's cheaper equivalent).
  std::vector<BorrowChange> update_from_usage(std::int64_t now, const std::vector<PoolGroupQuota>& quotas,
                                              const PoolUsage& usage,
                                              const std::map<std::string, std::string>& ended = {});

  // Closes the open records of a workload that stopped, with `reason`, before its usage
  // ends in the ledger (a record never outlives the usage it borrows for); closes in
  // opening order. The next update() then has nothing of it left to close.
  std::vector<BorrowChange> end_workload(const std::string& workload, const std::string& reason);

  // Adopts open records kept elsewhere (the ledger's, when a producer resumes from its
  // store), in opening order; the tracker must not have any yet. New records still take
  // this tracker's ids, so a resuming producer passes a new id prefix (its writer epoch).
  void resume(std::vector<Loan> open);

  [[nodiscard]] const std::vector<Loan>& open() const { return open_; }
  // GPUs currently lent by `lender` (borrowed from it by others).
  [[nodiscard]] std::int64_t lent_by(const std::string& lender) const;
  // Open records whose lender is `lender`, oldest first.
  [[nodiscard]] std::vector<Loan> lent_records(const std::string& lender) const;
  [[nodiscard]] const std::string& pool() const { return pool_; }

 private:
  std::string pool_;
  std::string id_prefix_;
  std::vector<Loan> open_;  // in opening order
  std::uint64_t next_ = 1;
};

}  // namespace gpubank::bank
