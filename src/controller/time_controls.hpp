// What holds at a given time, applied to the render: the policy reconciler renders the
// set (which has no clock, as `gpubank render`), then adjusts the objects to `now` before
// applying them, with the same rules the twin follows:
//
//   - an approved TemporaryQuota CapacityLease in force (start, or its approval when it
//     names none, <= now < end) raises its group's ClusterQueue nominalQuota on its pool
//     by extraGuaranteed, and the pool's Cohort holds that much less
//     (policy::cohort_nominal_quota); when it ends both go back;
//   - a TidalPolicy's trainingBorrowLimit in force (tidal::TidalController::state_at)
//     caps the borrowingLimit of its targets' training groups on its pool;
//   - the tidal floor in force (TidalState::floors, the largest over the TidalPolicies
//     targeting a policy, within [rendered minReplicaCount, maxReplicaCount]) becomes the
//     KEDA ScaledObject's minReplicaCount. The rendered cron triggers stay: they keep the
//     floor while the controller is down, and the HPA takes the largest proposal, so both
//     agree; the controller's value is the exact one across DST, where the cron start
//     (wall clock) cannot move but the prewarm counts back in absolute time;
//   - while a TidalPolicy's admission hold is on (a window that needs capacity, from its
//     approaching to its start), its training groups' borrowingLimit on its pool is also
//     capped at what each borrowed when the hold began (the ledger's positions at that
//     instant; 0 without a position), as the twin does. Ledger and time fix the value, so
//     a restarted controller or a new leader computes the same cap. Without a ledger the
//     hold is not applied and an adjustments line says so.
//
// A lease or window boundary (floor changes, hold start and end included) is a time the
// controller must run a pass at: next_change.
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
// positions (the tidal admission hold), in Unix ms; nullptr when there is none (no --store).
[[nodiscard]] TimeControls adjust_for_time(std::vector<render::RenderedObject>& objects, const policy::PolicySet& set,
                                           Timestamp now, const bank::LedgerBook* ledger = nullptr);

}  // namespace gpubank::controller
