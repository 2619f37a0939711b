// The twin's admission core: Kueue's quota tree, scheduling cycle and preemption as one
// pure state machine. Nothing here reads files, clocks or sockets: time is passed in, and
// the same calls give the same decisions byte for byte.
//
// Reference: Kueue main at ff69552 (2026-08), default feature gates (pkg/scheduler,
// pkg/cache/scheduler, pkg/scheduler/preemption, pkg/scheduler/flavorassigner,
// pkg/cache/queue). The formulas are written out in ../shared/spec/kueue-semantics.md.
//
// Life of a workload:  submit -> Pending -> (run_cycle) Admitted -> finish
//                                        \-> Admitted -> (preempted) Evicted -> release_evicted
//                                            -> Pending again (requeued, like Kueue does)
// A victim keeps its quota while Evicted: in Kueue the preemptor waits until the victim's
// pods are gone. Drivers call release_evicted when that happens (the `twin admit` command
// right after the cycle; the bank later, after a grace period).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/expected.hpp"
#include "twin/admission/model.hpp"

namespace gpubank::twin {

using WorkloadId = std::uint32_t;

enum class WorkloadPhase { Pending, Admitted, Evicted, Finished };

// A status condition as Kueue writes it on a Workload.
struct Condition {
  std::string type;    // QuotaReserved, Admitted, Evicted, Preempted, Requeued
  bool status = false;
  std::string reason;
  std::string message;
  VirtualTime last_transition = 0;
};

struct WorkloadStatus {
  WorkloadPhase phase = WorkloadPhase::Pending;
  std::optional<Admission> admission;  // set while Admitted or Evicted
  std::vector<Condition> conditions;   // in the order Kueue first sets them
  VirtualTime admitted_at = -1;        // last admission, -1 if never
};

// One decision of a cycle, in the order taken. Feeds the event log.
struct Decision {
  enum class Kind {
    Admitted,          // quota reserved (and, without admission checks, admitted)
    Pending,           // stays pending: reason + message say why
    PreemptionIssued,  // a head chose victims; `related` lists them
    Preempted,         // a victim was evicted; `related` holds the preemptor
  };
  Kind kind = Kind::Pending;
  WorkloadId workload = 0;
  std::string cluster_queue;
  std::string reason;   // Kueue's condition reason (Pending, QuotaReserved, InClusterQueue, ...)
  std::string message;  // Kueue's message
  std::vector<WorkloadId> related;
};

struct CycleResult {
  std::uint64_t cycle = 0;
  VirtualTime time = 0;
  std::size_t heads = 0;  // heads nominated this cycle
  std::vector<Decision> decisions;
  std::vector<WorkloadId> evicted;  // victims chosen this cycle
};

struct FlavorResourceAmount {
  std::string flavor, resource;
  Amount total = 0;     // usage (incl. borrowed)
  Amount borrowed = 0;  // above nominal
};

struct ClusterQueueStatus {
  std::string name;
  std::vector<FlavorResourceAmount> flavors_reservation;  // quota held by reserving workloads
  std::vector<FlavorResourceAmount> flavors_usage;        // by admitted workloads
  std::int64_t pending_workloads = 0;
  std::int64_t reserving_workloads = 0;
  std::int64_t admitted_workloads = 0;
  std::optional<std::int64_t> weighted_share;  // set when fair sharing is on; INT64_MAX = infinite
  std::string dominant_resource;
};

// Cohort-tree figures for one node and (flavor, resource): for inspection and properties.
struct QuotaFigures {
  Amount subtree_quota = 0, usage = 0, available = 0, potential_available = 0;
  Amount nominal = 0;  // the node's own nominalQuota
};

class AdmissionCore {
 public:
  // Builds the quota tree. Errors name the object: unknown flavors, duplicate names,
  // cycles in the cohort tree (reported once with the cycle's members), quota entries
  // outside the resource group's covered resources.
  static Expected<std::unique_ptr<AdmissionCore>> create(const CoreOptions& options,
                                                         std::vector<ResourceFlavorSpec> flavors,
                                                         std::vector<CohortSpec> cohorts,
                                                         std::vector<ClusterQueueSpec> queues);
  virtual ~AdmissionCore() = default;

  // A new pending workload. Its cluster_queue must exist, else it stays pending with
  // Kueue's "ClusterQueue <name> not found" message.
  virtual WorkloadId submit(WorkloadSpec spec, VirtualTime now) = 0;
  // A workload that already holds quota (status.admission + QuotaReserved=True).
  // Fails if the admission names an unknown queue or flavor.
  virtual Expected<WorkloadId> restore_admitted(WorkloadSpec spec, Admission admission,
                                                VirtualTime admitted_at) = 0;
  // An admitted workload finished (or was deleted): its quota is released and pending
  // workloads in its cohort tree become eligible again.
  virtual void finish(WorkloadId id, VirtualTime now) = 0;
  // An evicted victim's pods are gone: release its quota and requeue it as pending.
  virtual void release_evicted(WorkloadId id, VirtualTime now) = 0;
  // Drops a finished workload: the core keeps nothing of it, and every later call with its
  // id throws std::out_of_range (ids are not reused). A caller forgets a workload once it
  // has read its final status, as Kueue's cache drops finished workloads; without this a
  // long run keeps every workload it ever saw. Fails for an unknown or already forgotten
  // id and for a workload that has not finished.
  virtual Expected<bool> forget(WorkloadId id) = 0;

  // A ClusterQueue's quota for one flavor and resource changed, as when the ClusterQueue
  // object is updated (the bank lowers borrowing limits while it reclaims, a TemporaryQuota
  // lease raises a guarantee). Admitted workloads keep their quota even when it is now
  // above the limits (Kueue does not evict on quota changes); pending workloads of the
  // cohort tree are requeued. Fails for an unknown queue, flavor or resource, or a quota
  // the queue's resource groups do not cover.
  virtual Expected<bool> set_quota(const std::string& cluster_queue, const std::string& flavor,
                                   const ResourceQuota& quota) = 0;
  // The same for a declared Cohort's own quota (the Cohort object is updated: a pool's
  // Cohort holds what no guarantee does, and a TemporaryQuota lease moves GPUs from it to a
  // ClusterQueue). Fails for an unknown or implicit Cohort, a flavor or resource its
  // resource groups do not cover, negative amounts, and limits on a root Cohort (Kueue's
  // webhook allows borrowingLimit and lendingLimit only under a parent).
  virtual Expected<bool> set_cohort_quota(const std::string& cohort, const std::string& flavor,
                                          const ResourceQuota& quota) = 0;
  // Evicts an admitted workload outside a scheduling cycle: the twin's graceful reclaim
  // (an opt-in departure from Kueue) stops a victim after its grace period. Sets
  // Evicted=True and Preempted=True with `reason` and `message`; the workload keeps its
  // quota until release_evicted. Fails when the workload is not Admitted.
  virtual Expected<bool> evict(WorkloadId id, const std::string& reason, const std::string& message,
                               VirtualTime now) = 0;
  // Evicts an admitted workload because its queue stopped with stopPolicy HoldAndDrain, as
  // Kueue's workload controller does (workloadevict.Evict with reason ClusterQueueStopped or
  // LocalQueueStopped): Evicted=True with `reason` and `message`, and no Preempted
  // condition. The workload keeps its quota until release_evicted. Fails when the workload
  // is not Admitted.
  virtual Expected<bool> evict_stopped(WorkloadId id, const std::string& reason, const std::string& message,
                                       VirtualTime now) = 0;

  // An admitted workload's spec.priority changed (Kueue's Workload keeps it mutable: the
  // twin's approved downgrade of a low-utilisation workload). It keeps its quota; from now on
  // preemption ranks it at the new priority, and the cohort tree's inadmissible workloads
  // are requeued (as Kueue's workload controller does on a priority change). Returns false
  // when the priority is already that. Fails for an unknown or forgotten id and for a workload that is not Admitted (a
  // pending one would need its queue order re-keyed; nothing in the twin asks for that).
  virtual Expected<bool> set_priority(WorkloadId id, std::int32_t priority) = 0;

  // One scheduling cycle at virtual time `now`, written into `out` (what it held is
  // replaced). A caller that runs many cycles passes the same result every time: its
  // buffers are reused, so a cycle does not allocate fresh memory for its decisions.
  void run_cycle(VirtualTime now, CycleResult& out) { do_run_cycle(now, out); }
  // The same into a new result.
  CycleResult run_cycle(VirtualTime now) {
    CycleResult out;
    do_run_cycle(now, out);
    return out;
  }
  // True when a cycle could change something: some ClusterQueue has an active head.
  [[nodiscard]] virtual bool has_active_heads() const = 0;

  // Workload ids handed out so far (0 .. count-1), forgotten ones included.
  [[nodiscard]] virtual std::size_t workload_count() const = 0;
  [[nodiscard]] virtual const WorkloadSpec& spec(WorkloadId id) const = 0;
  // The status as Kueue writes it, built by this call: the core keeps statuses in a compact
  // form, since a cycle writes many more of them than anyone reads.
  [[nodiscard]] virtual WorkloadStatus status(WorkloadId id) const = 0;
  // The phase alone, without building the status.
  [[nodiscard]] virtual WorkloadPhase phase(WorkloadId id) const = 0;
  [[nodiscard]] virtual std::vector<std::string> cluster_queue_names() const = 0;
  [[nodiscard]] virtual std::vector<std::string> cohort_names() const = 0;
  [[nodiscard]] virtual ClusterQueueStatus cluster_queue_status(const std::string& name) const = 0;
  // Figures of a ClusterQueue or Cohort (by name) on one flavor/resource; nullopt if unknown.
  [[nodiscard]] virtual std::optional<QuotaFigures> figures(const std::string& node,
                                                            const std::string& flavor,
                                                            const std::string& resource) const = 0;

 protected:
  // run_cycle's implementation: `out` may hold an earlier cycle's result, to be replaced.
  virtual void do_run_cycle(VirtualTime now, CycleResult& out) = 0;
};

}  // namespace gpubank::twin
