// What the controller's portal shows of a cluster (api/cluster_server.hpp), in the shapes
// `gpubank up`'s API answers (twin/live/platform.hpp), so the portal's pages read both:
//
//   pools      the guardrails' pools: capacity, model, partition, role, and from the
//              ledger's positions the guarantees and the GPUs in use
//   groups     the guardrails' groups with each pool position (guaranteed, used, borrowed,
//              lent, borrowable, lending floor): the bank's ledger, as the controller
//              writes it from Kueue's Workloads (cluster_ledger.hpp)
//   queues     the ClusterQueues gpubank renders: quota (nominal, borrowing and lending
//              limits of the GPU resource) from spec, use and workload counts from status
//   workloads  Kueue's Workloads of those queues: state, GPUs, group, pool, priority
//   reclaims   graceful reclaims as the controller recorded their steps in the store's
//              audit log (reclaim.hpp): one per notice to a victim, with its lender, pool,
//              GPUs, deadline, the stop (and recompute loss) or the withdrawal that ended
//              it (the job's checkpoint completion is not shown: the notice's reason and
//              the stop's are)
//
// Pure functions of the snapshot; no I/O.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bank/audit.hpp"
#include "bank/ledger.hpp"
#include "controller/reclaim.hpp"
#include "policy/policy_set.hpp"
#include "twin/preview/recorded_work.hpp"

namespace gpubank::controller {

// One consistent read of the controller's informers (Controller::snapshot).
struct ClusterSnapshot {
  policy::PolicySet policies;
  bool kueue = false;  // Kueue's kinds are watched (the Kueue backend, Kueue installed)
  std::vector<ClusterWorkload> workloads;
  std::vector<nlohmann::json> cluster_queues;
};

using ViewJson = nlohmann::ordered_json;

[[nodiscard]] ViewJson pools_view(const policy::PolicySet& policies, const std::vector<bank::Position>& positions);
[[nodiscard]] ViewJson groups_view(const policy::PolicySet& policies, const std::vector<bank::Position>& positions);
[[nodiscard]] ViewJson queues_view(const std::vector<nlohmann::json>& cluster_queues);

// The state of a Workload as the twin names it: Running (holds quota), Pending, Finished or
// Deactivated (spec.active false).
[[nodiscard]] std::string workload_state(const ClusterWorkload& w);
struct WorkloadQuery {
  std::string business_group, pool, state;  // empty: any
};
[[nodiscard]] ViewJson workloads_view(const std::vector<ClusterWorkload>& workloads, const WorkloadQuery& query);
[[nodiscard]] ViewJson workload_view(const ClusterWorkload& w);

// A Workload as the impact preview replays it (twin/preview/recorded_work.hpp): started at
// `started_ms` (0: it never held quota), finished at its Finished time when it finished.
[[nodiscard]] twin::preview::WorkloadRecord work_record(const ClusterWorkload& w, std::int64_t started_ms);

// Whether an audit entry is a step of a graceful reclaim (what reclaims_view reads).
[[nodiscard]] bool is_reclaim_step(const bank::AuditEntry& e);
// The newest `limit` reclaims, newest first, from the reclaim steps in seq order.
[[nodiscard]] ViewJson reclaims_view(const std::vector<bank::AuditEntry>& steps,
                                     const std::vector<ClusterWorkload>& workloads, std::size_t limit);

}  // namespace gpubank::controller
