// What holds at a given time, applied to the render: the policy reconciler renders the
// set (which has no clock, as `gpubank render`), then adjusts the objects to `now` before
// applying them, with the same rules the twin follows:
//
//   - an approved TemporaryQuota CapacityLease in force (start, or its approval when it
//     names none, <= now < end) raises its group's ClusterQueue nominalQuota on its pool
//     by extraGuaranteed, and the pool's Cohort holds that much less
//     (policy::cohort_nominal_quota); when it ends both go back;
//   - a TidalPolicy's trainingBorrowLimit in force (tidal::TidalController::state_at)
//     caps the borrowingLimit of its targets' training groups on its pool.
//
// A lease or window boundary is a time the controller must run a pass at: next_change.
// Not done here (runtime state, not time): the tidal admission hold, which freezes the
// training groups' borrowing at what they borrow when a window approaches.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "bank/ledger.hpp"
#include "core/timestamp.hpp"
#include "policy/policy_set.hpp"
#include "render/object.hpp"

namespace gpubank::controller {

struct TimeControls {
  std::vector<std::string> active_leases;  // "CapacityLease/<name>" in force at `now`
  std::optional<Timestamp> next_change;    // the next lease start or end, or tidal boundary
  std::vector<std::string> adjustments;    // one line per object changed, for the log
};

// Pure. Objects the set renders are changed in place; nothing else is touched.
// `ledger`: the cluster's ledger (cluster_ledger.hpp), for what depends on recorded
// positions (the tidal admission hold); nullptr when there is none (no --store).
[[nodiscard]] TimeControls adjust_for_time(std::vector<render::RenderedObject>& objects, const policy::PolicySet& set,
                                           Timestamp now, const bank::LedgerBook* ledger = nullptr);

}  // namespace gpubank::controller
