// `gpubank twin run`: a timed scenario on the admission core plus the bank, in virtual time.
//
// The policies are rendered to Kueue objects exactly as `gpubank render` does and loaded
// into the twin's admission core. Workloads arrive, are admitted by Kueue's semantics,
// start (after startupTime), run, checkpoint periodically and finish. After every instant
// at which something happened the bank:
//   - attributes borrowed GPUs to lenders (bank/attribution.hpp) and writes the ledger;
//   - runs graceful reclaim for the ClusterQueues of policies with a reclaimPolicy (an
//     opt-in departure from Kueue: the core does not reclaim for them, the bank does):
//       1. lender demand: a pending workload of the lender that would fit within its
//          guarantee but cannot be admitted; from then on no queue of the pool may start
//          new borrowing (their borrowingLimit is held at 0, what a controller would write
//          to the ClusterQueues) until the reclaims of the pool are over;
//       2. victims among the workloads running on GPUs this lender lent, in the order of
//          bank/victims.hpp, never protected workload types;
//       3. a notice per victim starts the grace period; checkpointable victims are asked to
//          checkpoint (their progress stops while they save), which takes
//          checkpointDuration and may fail (checkpointFails);
//       4. on checkpoint success, or at the end of the grace period, the victim is stopped
//          and its GPUs released; the lender's workload is admitted by the next cycle;
//       5. the victim is requeued and resumes from its last checkpoint (the one taken on
//          notice, else its last periodic one); the work since is recomputation loss.
//     A reclaim is cancelled when the lender's demand goes away during grace (the victims
//     keep running); a victim that finishes during grace simply finishes.
// Kueue's own preemption (queues without a reclaimPolicy) evicts at once: the victim is
// requeued and loses the work since its last periodic checkpoint.
//
// Every decision is an event (../shared/spec/events.md) and an audit entry; usage and
// borrowing are ledger entries. The run is a pure function of its inputs.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bank/audit.hpp"
#include "bank/ledger.hpp"
#include "core/diagnostic.hpp"
#include "core/expected.hpp"
#include "core/timestamp.hpp"
#include "policy/policy_set.hpp"
#include "twin/admission/model.hpp"
#include "twin/cluster/cluster.hpp"
#include "twin/run/pods_ready.hpp"
#include "twin/run/scenario.hpp"

namespace gpubank::twin::run {

using Json = nlohmann::ordered_json;

struct Event;

struct RunOptions {
  std::optional<VirtualTime> until;  // stop at this virtual time; unset: when nothing is left to happen
  // The actor written into audit entries for the bank's own decisions.
  std::string actor = "gpubank-bank";
  // Prefix of the borrow record ids ("<prefix><pool>/<n>"): the producer's writer epoch,
  // "<epoch>-", when the entries go to a shared store (store::Store::acquire_writer), so
  // they stay unique across producers and restarts. Empty: "<pool>/<n>".
  std::string record_prefix;
  // Called after every instant with the ledger and audit entries it added, in order (the
  // shell persists them, e.g. to a store, before the run goes on). An error stops the run
  // with that error in the result's diagnostics.
  std::function<Expected<bool>(std::span<const bank::LedgerEntry>, std::span<const bank::AuditEntry>)> on_instant;
  // A cluster to place admitted workloads on (pods onto nodes and GPUs, as kube-scheduler
  // would; twin/cluster/cluster.hpp). Unset: admission alone decides, every admitted
  // workload starts at once. Set: an admitted workload keeps its quota and waits in state
  // Placing until its whole shape fits (events Placed / Unschedulable).
  std::shared_ptr<const cluster::Inventory> inventory;
  // Keep the events, ledger and audit entries in the result (tests, `gpubank up`, small
  // runs). False: they are handed to on_event / on_instant after each instant and dropped,
  // so a trace of half a million workloads runs in bounded memory; the summary statistics
  // (RunResult::groups, cluster) are kept either way.
  bool retain = true;
  // Called with each event, in order, after its instant's entries were handed to
  // on_instant and it returned: events report only what is committed. An instant whose
  // entries could not be persisted emits none of its events.
  std::function<void(const Event&)> on_event;
  // With a cluster: Kueue's waitForPodsReady (pods_ready.hpp). An admitted workload whose
  // pods are not all placed and started within the timeout is evicted (event Evicted,
  // reason PodsReadyTimeout), gives its quota back and queues again after the backoff, or
  // is deactivated after backoffLimitCount requeues (event Deactivated, state Deactivated).
  // rendered_wait_for_pods_ready(policies) is what `gpubank render` writes into Kueue's manager
  // Configuration (render/kueue.hpp); the embedded platform (twin/live) always runs it.
  // Unset (the default of scenario runs): Kueue as installed, without it, where a workload
  // holds its quota in Placing for as long as its shape does not fit.
  std::optional<WaitForPodsReady> wait_for_pods_ready;
  // With a cluster: how often the fragmentation of free GPUs against the shapes waiting
  // (pending or placing) is sampled for the summary (0: never).
  VirtualTime fragmentation_sample_ms = 3'600'000;
};

// One event of the log, fields as in events.md.
struct Event {
  VirtualTime t = 0;
  std::string kind;
  std::string object;
  std::string business_group, pool, queue;
  std::string reason;
  std::string message;
  Json numbers = Json::object();
  std::vector<std::string> related;
};

struct VictimTimeline {
  std::string workload;
  std::int64_t gpus = 0;
  std::string victim_class;
  VirtualTime notice = 0;
  std::optional<VirtualTime> checkpoint_requested, checkpoint_completed, checkpoint_failed;
  std::optional<VirtualTime> stopped, finished, released;  // released: notice withdrawn
  std::int64_t loss_gpu_ms = 0;
};

struct ReclaimTimeline {
  std::string id;
  std::string lender, pool;
  std::int64_t demand = 0;  // GPUs the lender needed when the reclaim started (or grew)
  VirtualTime started = 0;
  std::optional<VirtualTime> ended;
  std::string result;  // Completed, Cancelled, InProgress
  std::vector<VictimTimeline> victims;
};

struct Position {
  std::string pool, business_group;
  std::int64_t guaranteed = 0, used = 0, borrowed = 0, lent = 0, borrowable = 0, lending_floor = 0;
};

struct WorkloadOutcome {
  std::string workload;  // namespace/name
  std::string business_group, pool, state;  // state: Waiting, Pending, Placing, Starting, Running,
                                            // Checkpointing, Requeuing, Finished, Deleted, Deactivated
  std::int64_t gpus = 0;
  std::optional<VirtualTime> first_admitted, finished;
  std::optional<VirtualTime> last_admitted;  // a re-admission starts new pods
  int admissions = 0, stops = 0;
  std::int64_t loss_gpu_ms = 0;
};

// A ClusterQueue of the run now (one per GPUQuotaPolicy).
struct QueueView {
  std::string cluster_queue, business_group, pool, flavor, resource;
  std::int64_t nominal = 0;  // the guarantee in force (leases included)
  std::optional<std::int64_t> borrowing_limit, lending_limit;  // as applied now
  std::int64_t used = 0;                     // GPUs of admitted workloads
  std::int64_t pending = 0, admitted = 0;    // workloads
};

// A pool's Cohort now, as the core holds it (one per pool with a GPUQuotaPolicy; the
// Cohort is named after the pool).
struct CohortView {
  std::string cohort, pool, flavor, resource;
  std::int64_t nominal = 0;        // its own nominalQuota: what no guarantee in force holds
  std::int64_t subtree_quota = 0;  // its own plus what its ClusterQueues lend (Kueue's subtreeQuota)
};

// What a business group got in a pool over the run (the summary of `twin run`).
struct GroupStats {
  std::string business_group, pool;
  std::int64_t used_gpu_ms = 0;      // GPUs held (admitted) x time
  std::int64_t borrowed_gpu_ms = 0;  // as borrower, from the borrow records
  std::int64_t lent_gpu_ms = 0;      // as lender
  std::int64_t workloads = 0, admitted = 0;  // arrived; admitted at least once
  std::vector<std::int64_t> waits_ms;        // arrival to first admission, in admission order
  std::int64_t reclaims = 0;         // reclaims it started as lender
  std::int64_t stops = 0;            // times its workloads were stopped (reclaim or preemption)
  std::int64_t loss_gpu_ms = 0;      // recompute loss of its workloads
};

// The cluster over the run (with RunOptions::inventory).
struct ClusterStats {
  std::int64_t units = 0;                 // schedulable GPUs (MIG slices)
  std::int64_t allocated_milli_ms = 0;    // thousandths of a unit held x time (shared fractions count)
  std::int64_t samples = 0;               // fragmentation samples
  std::int64_t stranded_unit_samples = 0; // sum over samples of free units no waiting shape can use
  std::int64_t free_unit_samples = 0;     // sum over samples of free units
};

struct RunResult {
  Timestamp start{};
  VirtualTime end = 0;
  std::string policy_version;  // sha256 over the canonical policies
  std::vector<Event> events;
  std::vector<bank::LedgerEntry> ledger;  // seq 1.. in order
  std::vector<bank::AuditEntry> audit;    // seq set; hashes are the store's to chain
  std::vector<ReclaimTimeline> reclaims;
  std::vector<Position> positions;  // at `end`
  std::vector<WorkloadOutcome> workloads;
  std::int64_t recompute_loss_gpu_ms = 0;
  std::int64_t checkpoints_ok = 0, checkpoints_failed = 0;
  std::int64_t event_count = 0, ledger_count = 0, audit_count = 0;  // also when not retained
  std::vector<GroupStats> groups;  // per GPUQuotaPolicy, at `end`
  ClusterStats cluster;
  Diagnostics diagnostics;  // errors: nothing ran
  [[nodiscard]] bool ok() const { return !has_errors(diagnostics); }
};

// The run one instant at a time, for a shell that owns the clock (`gpubank up`).
// Instants are handled in order; reading between them sees a settled state.
class Simulation {
 public:
  // The policies and the scenario must outlive the simulation.
  Simulation(const policy::PolicySet& policies, const Scenario& scenario, RunOptions options = {});
  ~Simulation();
  Simulation(Simulation&&) noexcept;
  Simulation& operator=(Simulation&&) noexcept;
  Simulation(const Simulation&) = delete;
  Simulation& operator=(const Simulation&) = delete;

  // Loads policies and scenario and settles virtual time 0. False: nothing runs; the
  // errors are in result().diagnostics.
  bool start();
  // Handles every instant up to and including `t` (never past options.until); the clock
  // then reads `t`. False: the run stopped on an error (in result().diagnostics).
  bool advance_to(VirtualTime t);
  [[nodiscard]] VirtualTime now() const;
  // The next instant at which something happens; nullopt when nothing is left.
  [[nodiscard]] std::optional<VirtualTime> next_instant() const;
  // What happened so far: events, ledger, audit entries, reclaims.
  [[nodiscard]] const RunResult& result() const;
  [[nodiscard]] std::vector<Position> positions() const;
  [[nodiscard]] std::vector<WorkloadOutcome> workloads() const;
  // What each of workloads() was submitted as, in the same order: the scenario's, then
  // those submitted while running (submit()).
  [[nodiscard]] std::vector<const ScenarioWorkload*> workload_specs() const;
  [[nodiscard]] std::vector<QueueView> queues() const;
  [[nodiscard]] std::vector<CohortView> cohorts() const;
  // The cluster with the placements now; nullptr without RunOptions::inventory.
  [[nodiscard]] const cluster::Cluster* cluster() const;
  // Marks a GPU (GPU-... or MIG-... uuid) unhealthy with an XID error (and double-bit ECC
  // errors counted on it, XID 48's cause), or healthy again,
  // now, as a scenario's gpuFaults entry would; `actor` goes into the audit entry. Errors:
  // no inventory, an unknown uuid, a run that stopped.
  Expected<bool> set_gpu_health(const std::string& uuid, bool healthy, int xid, const std::string& actor,
                                std::int64_t ecc_double_bit = 0);
  // Controllers acting between instants (the inference autoscaler, the tidal controller),
  // each applied at now() and settled as any other instant; `actor` goes into the audit
  // entries. Errors: a run that is not going, unknown names, bad numbers.
  //
  // A workload that arrives now (checked like a scenario's; its name must be new).
  // Returns its key, namespace/name.
  Expected<std::string> submit(ScenarioWorkload workload, const std::string& actor);
  // Deletes a workload now (false: it had already ended).
  Expected<bool> remove(const std::string& key, const std::string& actor);
  // A person approved the reclaim of a low-utilisation workload (governance/
  // reclaim_approval.hpp), as the controller carries it out on a cluster: a notice
  // (ReclaimNoticeSent, reason ReclaimApproved) with its group's reclaimPolicy grace (else
  // the guardrails' maxGracePeriod), a checkpoint request when it is checkpointable, then
  // on the checkpoint or at the grace's end it is stopped (ReclaimVictimStopped, reason
  // ApprovedLowUtilization), its GPUs released and the workload deactivated: never requeued.
  // Pending or requeuing work is deactivated at once. `approval` is the decision in words;
  // the notice is audited with `actor` (the decider). False: it had ended. Errors: an unknown
  // workload, one already being stopped on approval, a run that is not going.
  Expected<bool> stop_approved(const std::string& key, const std::string& approval, const std::string& actor);
  // A person approved a downgrade instead (governance/reclaim_approval.hpp), as the
  // controller carries it out on a cluster: the admitted workload's Workload gets
  // `priority_class`'s value as spec.priority (mutable in Kueue) and keeps running,
  // preemptible from now on by work above it (event WorkloadDowngraded, reason
  // DowngradeApproved, audited with `actor`). False: it had ended or holds no quota (nothing
  // to downgrade), or its priority is not above the class's (event DowngradeSkipped, what the
  // controller logs and skips). Errors: an unknown workload or priority
  // class, a class that is not preemptible, a run that is not going.
  Expected<bool> downgrade_approved(const std::string& key, const std::string& priority_class,
                                    const std::string& approval, const std::string& actor);
  // An approved policy change, in force from now (the portal's self-service changes):
  // `next` is the whole set. What changes in place is what a controller changes in a
  // ClusterQueue and its Cohort: each GPUQuotaPolicy's guarantee, borrowing and lending
  // limits (as `gpubank render` derives them), reclaimPolicy grace and onlyPreempt. Nobody is
  // evicted by a lower limit or guarantee (as in Kueue); the bank reclaims lent GPUs for
  // demand within a higher guarantee. Each changed quota: event QuotaChanged (audited with
  // `actor`) and a QuotaSet ledger entry; later audit entries carry the new set's version.
  // Errors, changing nothing: anything else that differs (the guardrails, other kinds, a
  // GPUQuotaPolicy added or removed, a reclaimPolicy added or removed: those change what the
  // run was built from and apply at the next start), a set that does not render.
  Expected<bool> change_policies(const policy::PolicySet& next, const std::string& reason, const std::string& actor);
  // Planned demand: `gpus` of the group's guarantee in the pool must be free or in its own
  // use (0 withdraws). What is lent beyond that is reclaimed gracefully, like a pending
  // workload's demand, with `grace` for the notices (unset: the quota's reclaimPolicy
  // grace). Event CapacityReserved; reclaims it starts have reason Reservation.
  // `piece`: the GPUs one replica of the reservation needs on one node (a TP=4 replica: 4);
  // above 1 (with a cluster) the GPUs not in use must be free as whole pieces on nodes, so
  // the reclaim takes back borrowers where that makes pieces, not wherever GPUs add up.
  Expected<bool> reserve(const std::string& business_group, const std::string& pool, std::int64_t gpus,
                         std::optional<VirtualTime> grace, const std::string& reason, const std::string& actor,
                         int piece = 1);
  // Caps the group's borrowing in the pool below its rendered borrowingLimit (nullopt
  // lifts the cap): new borrowing above it stops, nobody is evicted (event BorrowingCapped).
  Expected<bool> cap_borrowing(const std::string& business_group, const std::string& pool,
                               std::optional<std::int64_t> cap, const std::string& reason, const std::string& actor);
  // A controller's own decision (ScaleUpRequested, TidalWindowStarted, ...) logged now,
  // in order with the run's events, and audited with `actor`. Its `t` is set to now().
  Expected<bool> record(Event event, const std::string& actor);
  // The summary's figures so far (groups and cluster up to now; no events or lists).
  [[nodiscard]] RunResult stats() const;
  // Runs what is left (up to options.until) and hands over the result.
  RunResult finish();

  class Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

[[nodiscard]] RunResult run_scenario(const policy::PolicySet& policies, const Scenario& scenario,
                                     const RunOptions& options = {});

// JSON forms (camelCase, times in virtual ms and RFC 3339).
[[nodiscard]] Json event_json(const Event& e, const Timestamp& start);
[[nodiscard]] Json result_json(const RunResult& r);

}  // namespace gpubank::twin::run
