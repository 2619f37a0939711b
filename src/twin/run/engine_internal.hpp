// The twin's run engine (engine.hpp's Simulation), internal to src/twin/run. One class,
// its work split by responsibility over engine*.cpp:
//   engine.cpp            the instant loop, records (ledger, audit, events), timers, admission cycles
//   engine_setup.cpp      policies and scenario into quotas, pools and workloads
//   engine_placement.cpp  placing admitted workloads on the cluster, waitForPodsReady
//   engine_controls.cpp   what controllers do between instants (submit, delete, reserve, GPU health)
//   engine_bank.cpp       the bank: attribution, borrowing refusals, graceful reclaim, leases
//   engine_views.cpp      positions, outcomes, queues and statistics read from the state
#pragma once

#include "twin/run/engine.hpp"

#include <algorithm>
#include <cstdio>
#include <deque>
#include <map>
#include <memory>
#include <queue>
#include <set>
#include <span>
#include <tuple>
#include "bank/attribution.hpp"
#include "bank/victims.hpp"
#include "document/node.hpp"
#include "kueue/admit.hpp"
#include "kueue/bridge.hpp"
#include "kueue/decode.hpp"
#include "policy/authorize.hpp"
#include "policy/cohort_quota.hpp"
#include "policy/priority.hpp"
#include "render/kueue.hpp"
#include "render/object.hpp"
#include "render/scheduling.hpp"
#include "twin/admission/core.hpp"
#include "twin/cluster/identity.hpp"

namespace gpubank::twin::run::detail {

inline constexpr std::string_view kRuleScenario = "scenario.reference";
inline constexpr std::string_view kRulePolicies = "scenario.policies";
inline constexpr std::string_view kReclaimReason = "GracefulReclaim";  // the twin's own Preempted reason
inline constexpr int kMaxSettleRounds = 10'000;
inline constexpr std::int64_t kRequeueBackoffMs = 60'000;
inline constexpr std::int64_t kRequeueBackoffMaxMs = 3'600'000;
inline constexpr int kMaxCyclesPerRound = 100'000;

inline std::size_t at(int i) { return static_cast<std::size_t>(i); }

inline std::string type_name(policy::WorkloadType t) {
  switch (t) {
    case policy::WorkloadType::Training: return "training";
    case policy::WorkloadType::Inference: return "inference";
    case policy::WorkloadType::Batch: return "batch";
    case policy::WorkloadType::Notebook: return "notebook";
  }
  return "training";
}

inline std::string trait_name(policy::WorkloadTrait t) {
  switch (t) {
    case policy::WorkloadTrait::Batch: return "batch";
    case policy::WorkloadTrait::Checkpointable: return "checkpointable";
    case policy::WorkloadTrait::Training: return "training";
    case policy::WorkloadTrait::Development: return "development";
  }
  return "batch";
}

inline double gpu_hours(std::int64_t gpu_ms) { return static_cast<double>(gpu_ms) / 3'600'000.0; }

struct Quota {
  const policy::GPUQuotaPolicySpec* spec = nullptr;
  std::string group, pool_name, cq;
  int pool = -1;
  bool graceful = false;
  std::int64_t grace_ms = 0;
  std::int64_t guaranteed = 0;
  std::optional<Amount> borrowing_limit, lending_limit;  // as rendered
  std::vector<std::string> lend_only_to;
  std::optional<ResourceQuota> applied;  // what the core has now
  int active_reclaim = -1;  // index into the result's reclaims while one is in progress
  // Set from outside (a tidal controller, Simulation::reserve / cap_borrowing): GPUs of the
  // guarantee the group must have free or in use by itself (planned demand, reclaimed like
  // a pending workload's), with the grace its notices get; and a cap on its borrowing
  // below the rendered borrowingLimit (what a controller would write to the ClusterQueue).
  std::int64_t reserved = 0;
  // The reservation's replica shape: GPUs one replica needs on one node (a TP=4 replica:
  // 4). Above 1, the part not in use must be free as whole pieces on nodes, and a reclaim
  // takes back borrowers where that makes pieces (Engine::shape_victims).
  int reserve_piece = 1;
  std::optional<std::int64_t> reserve_grace_ms;
  std::string reserve_reason;
  std::optional<std::int64_t> borrow_cap;
  // Indexes by state (sim indexes, ascending: the order the run has always visited them in).
  std::set<int> pending;
  std::int64_t used = 0;  // GPUs held (Placing, Starting or Running)
  // The sims holding them, in admission order (admission_seq, index): the attribution's
  // rule 1 reads the newest ones only (Engine::attribution_usage).
  std::set<std::pair<std::int64_t, int>> holding_by_admission;
  // The summary's figures (GroupStats).
  std::int64_t used_gpu_ms = 0;
  VirtualTime used_since = 0;
  std::int64_t borrowed_gpu_ms = 0, lent_gpu_ms = 0, reclaims = 0, workloads = 0, admitted = 0;
  std::vector<std::int64_t> waits_ms;
};

struct Pool {
  const policy::Pool* pool = nullptr;
  std::string flavor, resource;
  std::vector<int> quotas;
  std::unique_ptr<bank::BorrowTracker> tracker;
  std::map<std::string, std::string> ended;  // since the last attribution
  std::set<int> holding;  // sims holding GPUs of the pool (Starting or Running)
  // The nominalQuota of the pool's Cohort (named after the pool) in the core: what no
  // guarantee in force holds (policy/cohort_quota.hpp), moved as leases start and end.
  Amount cohort_quota = 0;
  std::int64_t guaranteed = 0;  // Σ guaranteed of its GPUQuotaPolicies, leases not included
  // Something attribution or reclaim read changed since they last ran on this pool
  // (a workload's state, a quota, a lease, a reclaim): pools are separate cohorts, so an
  // unchanged pool gives the same answer again and is skipped.
  bool attribution_dirty = true, reclaim_dirty = true;
  void touch() { attribution_dirty = reclaim_dirty = true; }
};

// Requeuing: a reclaim victim, or a workload whose borrowing the bank refused, waiting out
// its requeue backoff before it queues again.
// Placing: admitted (quota reserved), its pods not yet on nodes (with a cluster only).
enum class State { Waiting, Pending, Starting, Running, Finished, Requeuing, Placing };

inline std::string_view state_name(State s) {
  switch (s) {
    case State::Waiting: return "Waiting";
    case State::Pending: return "Pending";
    case State::Starting: return "Starting";
    case State::Running: return "Running";
    case State::Finished: return "Finished";
    case State::Requeuing: return "Requeuing";
    case State::Placing: return "Placing";
  }
  return "Waiting";
}

struct Sim {
  const ScenarioWorkload* w = nullptr;
  std::string ns, key;  // key: namespace/name
  int quota = -1;
  WorkloadId id = 0;
  bool submitted = false;
  State state = State::Waiting;
  std::int64_t gpus = 0;
  std::int32_t priority = 0;
  bool preemptible = true;  // its priority class's
  bool protected_ = false;
  VirtualTime admitted_at = -1, running_since = -1;
  std::int64_t admission_seq = 0;  // orders admissions, also within one instant
  std::int64_t base = 0;  // progress when the current run started (= restored checkpoint)
  bool frozen = false;    // saving a checkpoint on notice: progress stopped
  std::int64_t frozen_progress = 0;
  bool checkpoint_saved = false;  // the notice's checkpoint succeeded
  std::uint64_t version = 0;
  int reclaim = -1, victim = -1;  // index into reclaims and its victims while under notice
  int refusals = 0;               // admissions the bank refused (onlyPreempt), for the backoff
  bool unschedulable_said = false;  // the Unschedulable event of this admission was written
  int placement_shape = -1;  // Engine::placement_shape_of, once asked
  // waitForPodsReady (pods_ready.hpp): when its pods must be ready by (while Placing or
  // Starting), requeueState.count, the queue-order time of its next submission (the
  // eviction's or its creation's), and whether it was deactivated.
  std::optional<VirtualTime> pods_ready_deadline;
  std::int32_t pods_ready_requeues = 0;
  std::optional<VirtualTime> queue_since;
  VirtualTime created_at = -1;
  bool deactivated = false;
  // An approved low-utilisation reclaim (Simulation::stop_approved): stopped after its
  // checkpoint or grace and deactivated, never requeued.
  bool approved_stop = false;
  bool approved_checkpoint_failed = false;
  std::string pending_reason;
  bool deleted = false;
  WorkloadOutcome outcome;
};

// The reclaimPolicy.onlyPreempt traits a workload carries.
inline std::vector<std::string> traits_of(const Sim& s) {
  std::vector<std::string> traits;
  if (s.w->workload_type == policy::WorkloadType::Batch) traits.emplace_back("batch");
  if (s.w->checkpointable) traits.emplace_back("checkpointable");
  if (s.w->workload_type == policy::WorkloadType::Training) traits.emplace_back("training");
  if (s.w->workload_type == policy::WorkloadType::Notebook) traits.emplace_back("development");
  return traits;
}

struct Timer {
  enum class Kind { Arrive, Started, Finish, CheckpointDone, GraceEnd, Delete, LeaseRequest, LeaseDecide, LeaseActivate, LeaseExpire, Resubmit, Sample, GpuFault, GpuRecover };
  VirtualTime t = 0;
  std::uint64_t seq = 0;
  Kind kind = Kind::Arrive;
  int sim = -1;
  std::uint64_t version = 0;
  bool operator>(const Timer& o) const { return std::tie(t, seq) > std::tie(o.t, o.seq); }
};

class Engine {
 public:
  Engine(const policy::PolicySet& policies, const Scenario& scenario, const RunOptions& options)
      : policies_(policies), scenario_(scenario), options_(options) {}

  bool start();
  bool advance_to(VirtualTime t);
  [[nodiscard]] VirtualTime now() const { return now_; }
  // A fragmentation sample alone does not keep the run going.
  [[nodiscard]] bool only_samples_left() const;
  // The earliest timer or PodsReady deadline.
  [[nodiscard]] std::optional<VirtualTime> next_time() const;
  [[nodiscard]] std::optional<VirtualTime> next_instant() const;
  [[nodiscard]] const RunResult& result() const { return result_; }

  RunResult finish();

 private:
  // ---- setup ------------------------------------------------------------------------------

  void error(std::string_view rule, const std::string& path, std::string message);
  bool setup();

  // A workload of the scenario (or submitted later) checked against the policies: its
  // group, quota, namespace and priority class. Nothing (and the errors) when it is wrong.
  std::optional<Sim> make_sim(const ScenarioWorkload& w, const std::string& path, Diagnostics& diagnostics);

  // ---- records --------------------------------------------------------------------------------

  // Hands the instant's new entries to the shell, then its events: an event reports only
  // what is committed (on_instant returned), so a consumer of the stream never sees a
  // decision that a crash or a failed append loses. False (with the error recorded) stops
  // the run, and that instant's events are not emitted.
  bool flush();
  bool hand_over();
  void ledger(bank::LedgerEntry e);
  void ledger_quota(const Quota& q, VirtualTime now, std::string reason);
  void ledger_usage(const Sim& s, bank::LedgerKind kind, VirtualTime now, std::string reason);
  void event(Event e, bool bank_decision = true);
  Event workload_event(const Sim& s, VirtualTime now, std::string kind, std::string reason, std::string message);

  // An event about a lender's reclaim, on the lender's group.
  Event lender_event(const std::string& group, const std::string& pool, const std::string& queue, VirtualTime now,
                     std::string kind, std::string reason, std::string message);

  void schedule(VirtualTime t, Timer::Kind kind, int sim);

  // Holding quota: what attribution, reclaim and the positions count as used.
  static bool holds_gpus(State st) { return st == State::Placing || st == State::Starting || st == State::Running; }

  // Every state change goes through here: it keeps the per-queue and per-pool indexes that
  // attribution and reclaim read, and marks the pool for them.
  void set_state(Sim& s, State next);
  void touch_pool_of(const Sim& s) { pools_[at(quotas_[at(s.quota)].pool)].touch(); }

  // ---- progress -------------------------------------------------------------------------------

  [[nodiscard]] std::int64_t progress(const Sim& s, VirtualTime now) const;
  // The last periodic checkpoint: every checkpointInterval of progress since the run began.
  [[nodiscard]] std::int64_t last_periodic(const Sim& s, std::int64_t p) const;
  void schedule_finish(Sim& s, int index, VirtualTime now);

  // ---- timers ---------------------------------------------------------------------------------

  void handle(const Timer& timer, VirtualTime now);
  void submit(Sim& s, VirtualTime now);
  void finish(Sim& s, VirtualTime now);

  // The core's workload is done with: finished, and forgotten, since the engine keeps its
  // own record of every workload and never reads the core's statuses. A long run would
  // otherwise keep every workload it ever submitted in the core.
  void end_in_core(const Sim& s, VirtualTime now);

  // The workload is deleted (its owner cancelled it): pending ones leave the queue, running
  // ones release their GPUs.
  void remove(Sim& s, VirtualTime now);
  void checkpoint_done(Sim& s, VirtualTime now);
  void grace_end(Sim& s, VirtualTime now);

  // Stops a reclaim victim: evicted and released at once, then requeued after a backoff.
  // The backoff is Kueue's requeuingStrategy for evicted workloads (60 s doubling per
  // eviction, at most an hour, without the jitter): without it a victim requeued at once
  // can take the capacity back by borrowing from another lender, whose reclaim stops it
  // again, and two lenders would take turns forever within one instant.
  void stop_victim(Sim& s, VirtualTime now, const std::string& why);
  // Stops a workload whose reclaim a person approved (stop_approved): evicted, its GPUs
  // released and deactivated (never requeued), as the controller sets spec.active=false.
  void stop_approved_workload(Sim& s, VirtualTime now, const std::string& why);
  // Either of the two, for a workload under notice.
  void stop_noticed(Sim& s, VirtualTime now, const std::string& why) {
    if (s.reclaim >= 0) {
      stop_victim(s, now, why);
    } else {
      stop_approved_workload(s, now, why);
    }
  }

  // ---- waitForPodsReady (pods_ready.hpp) ------------------------------------------------------

  // Admitted (or back to Placing after its pods failed: `recovery`): its pods must be ready
  // within the timeout, else Kueue evicts it.
  void arm_pods_ready(Sim& s, int index, VirtualTime now, bool recovery);
  void disarm_pods_ready(Sim& s, int index);

  // The deadline passed with its pods not all ready (Placing or Starting): evicted with
  // reason PodsReadyTimeout, its quota released, and requeued after Kueue's backoff, or
  // deactivated once it was requeued backoffLimitCount times.
  void pods_ready_timeout(Sim& s, int index, VirtualTime now);
  void requeue(Sim& s, VirtualTime, std::int64_t kept, std::int64_t loss);

  // ---- cycles -----------------------------------------------------------------------------------

  Sim& sim_of(WorkloadId id) { return sims_[at(sim_by_id_.at(id))]; }

  void cycles(VirtualTime now);
  void decision(const Decision& d, VirtualTime now);

  // ---- placement ----------------------------------------------------------------------------

  // The pods go onto nodes: always without a cluster; with one, when the whole shape fits.
  bool try_place(Sim& s, int index, VirtualTime now);

  // Thousandths of a unit the workload holds once placed.
  static std::int64_t placed_milli(const Sim& s);
  void allocation_changes(std::int64_t delta_milli);

  // Free units against the shapes waiting now (pending in a queue or admitted and not
  // placed), one request per distinct shape.
  void sample_fragmentation();
  std::string placement_nodes(const cluster::Placement& p) const;
  cluster::PlacementRequest placement_request(const Sim& s) const;

  // A GPU reports an XID error (or recovers). The workloads on it lose their pods: as a Job
  // controller would, they get new pods, so they keep their quota (Kueue does not
  // re-admit), go back to Placing and restart from their last checkpoint. A reclaim victim
  // under notice is simply stopped.
  Expected<bool> gpu_health(const std::string& uuid, bool healthy, int xid, VirtualTime now, const std::string& actor,
                            std::int64_t ecc_double_bit = 0);

 public:
  // The same, from outside between instants (`gpubank up`'s API): applied at now(), then
  // the instant settles as any other.
  Expected<bool> set_gpu_health(const std::string& uuid, bool healthy, int xid, const std::string& actor,
                                std::int64_t ecc_double_bit = 0);

 
  // A workload that arrives now (a controller creates it: an inference replica). Checked
  // as a scenario's workloads are; its name must be new. Returns its key.
  Expected<std::string> submit_now(ScenarioWorkload w, const std::string& actor);

  // Deletes a workload now, as its owner (or a controller scaling in) would.
  Expected<bool> delete_now(const std::string& key, const std::string& actor);

  // An approved low-utilisation reclaim (Simulation::stop_approved).
  Expected<bool> stop_approved(const std::string& key, const std::string& approval, const std::string& actor);

  // An approved downgrade of a low-utilisation workload (Simulation::downgrade_approved).
  Expected<bool> downgrade_approved(const std::string& key, const std::string& priority_class,
                                    const std::string& approval, const std::string& actor);

  // A changed policy set in force now (Simulation::change_policies).
  Expected<bool> change_policies(const policy::PolicySet& next, const std::string& reason, const std::string& actor);

  // Planned demand of a lender (see Quota::reserved); 0 withdraws it. The reclaims it
  // starts give their victims `grace` (unset: the quota's reclaimPolicy grace).
  Expected<bool> reserve(const std::string& group, const std::string& pool, std::int64_t gpus,
                         std::optional<std::int64_t> grace_ms, const std::string& reason, const std::string& actor,
                         int piece = 1);

  // Caps a group's borrowing in a pool below its rendered borrowingLimit (unset: lifts the
  // cap). Like a lowered ClusterQueue borrowingLimit in Kueue it stops new borrowing above
  // the cap and evicts nobody.
  Expected<bool> cap_borrowing(const std::string& group, const std::string& pool, std::optional<std::int64_t> cap,
                               const std::string& reason, const std::string& actor);

  // A controller's own decision, logged (and audited with `actor`) now, in order with the
  // run's events.
  Expected<bool> record_now(Event e, const std::string& actor);

 private:
  Expected<bool> settle_now();
  // A controller's change to a quota (reserve, cap_borrowing): its event, audited with
  // `actor`, then the quotas in step and the instant settled.
  Expected<bool> announce_and_settle(Event e, const std::string& actor);

  // GPUs came free: the waiting workloads try again, in admission order.
  void place_waiting(VirtualTime now);

  // ---- attribution ------------------------------------------------------------------------------

  void attribute(VirtualTime now);
  [[nodiscard]] std::vector<bank::PoolGroupQuota> attribution_quotas(const Pool& pool) const;
  // Rule 1 of the attribution (bank/attribution.hpp) for the pool: each group's use and,
  // from the groups above their guarantee, the newest admissions that borrow, plus the
  // workloads holding open records. O(borrowers), not O(running): a pool that backs up
  // attributes at every instant. `storage` keeps the workloads the answer points to.
  [[nodiscard]] bank::PoolUsage attribution_usage(const Pool& pool, std::vector<bank::RunningWorkload>& storage) const;

  // The bank's admission check for reclaimPolicy.onlyPreempt (docs/bank.md): what a
  // workload Kueue admitted uses above its group's guarantee must be lent by groups whose
  // traits it carries. Kueue pools lendable quota, so it may have admitted the workload on
  // the idle guarantee of a lender that turns it away; then the attribution finds it no
  // lender (it would run on `cohort:<pool>`) although that lender has idle GPUs. Such an
  // admission is refused as Kueue does on an AdmissionCheck's Retry: the quota is released
  // and the workload queues again after a backoff. True when refused.
  bool refuse_borrowing(Sim& s, int index, VirtualTime now);

  // A borrow record opened or closed: its ledger entry, its event, the pair's GPU time.
  void borrow_change(Pool& pool, const bank::BorrowChange& c, VirtualTime now);
  void loan_closed(const Pool& pool, const bank::Loan& record, VirtualTime now);

  // ---- reclaim ----------------------------------------------------------------------------------

  [[nodiscard]] std::int64_t used_by(int quota) const { return quotas_[at(quota)].used; }

  void reclaim(VirtualTime now);
  // A reservation in pieces (Quota::reserve_piece): how many pieces of the part not in use
  // cannot be had on the pool's free GPUs (those of victims already under notice counted
  // free); 0 without a cluster or for loose GPUs.
  int pieces_short(const Quota& q, int active) const;
  // GPUs per node that the victims of reclaim `active` (-1: none) still under notice hold.
  std::map<cluster::NodeId, int> freed_by_notices(int active) const;
  // The victims that make those pieces, node by node where the fewest GPUs must be taken
  // back (serving::check_shape's rule 3, each node's victims in the bank's order); nullopt
  // when no choice of these candidates makes them.
  std::optional<bank::VictimChoice> shape_victims(const Quota& q, int active, int pieces,
                                                  const std::vector<bank::VictimCandidate>& candidates) const;
  void notice(int reclaim_index, int index, const bank::VictimCandidate& candidate, VirtualTime now);
  void end_reclaim(int index, VirtualTime now, const std::string& why);

  // Pushes each queue's quota to the core when it changed: guarantees move with
  // TemporaryQuota leases, and while a pool has a reclaim in progress no queue but the
  // reclaiming lenders' may start new borrowing (borrowingLimit held at 0; running work
  // is not evicted by it, exactly as a lowered ClusterQueue limit in Kueue). Then each
  // pool's Cohort quota, which a lease's extra guarantee comes out of.
  void sync_quotas();
  // The specs of the leases in force now.
  [[nodiscard]] std::vector<const policy::CapacityLeaseSpec*> active_leases() const;
  // policy::cohort_nominal_quota of the pool with `active` leases, from the sum kept at setup
  // (sync_quotas runs at every instant; the policies do not change during a run).
  [[nodiscard]] static Amount cohort_quota_with(const Pool& pool, std::span<const policy::CapacityLeaseSpec* const> active) {
    return policy::unguaranteed_gpus(pool.pool->capacity, pool.guaranteed,
                                     policy::lease_extras_on_pool(active, pool.pool->name));
  }

  // ---- leases -------------------------------------------------------------------------------

  struct Lease {
    const policy::PolicyObject* object = nullptr;
    const policy::CapacityLeaseSpec* spec = nullptr;
    const ScenarioLease* decision = nullptr;
    int quota = -1;
    VirtualTime start = 0, end = 0;
    bool approved = false, active = false;
  };

  Event lease_event(const Lease& l, VirtualTime now, std::string kind, std::string reason, std::string message);
  void lease_requested(int index, VirtualTime now);
  void lease_decided(int index, VirtualTime now);
  void lease_change(int index, VirtualTime now, bool activate);
  void schedule_lease(VirtualTime t, Timer::Kind kind, int lease) { timers_.push(Timer{t, next_timer_++, kind, lease, 0}); }

  [[nodiscard]] bool lease_protects(const Sim& s) const;

  // ---- one instant ------------------------------------------------------------------------------

  void settle(VirtualTime now);

 public:
  [[nodiscard]] std::vector<const ScenarioWorkload*> workload_specs() const;
  [[nodiscard]] std::vector<WorkloadOutcome> workloads() const;

 private:
  [[nodiscard]] std::vector<Position> positions() const;

 public:
  [[nodiscard]] std::vector<Position> positions_now() const { return positions(); }

  [[nodiscard]] RunResult stats() const;

  // The per-queue figures up to `end` (open holdings and loans counted until then).
  [[nodiscard]] std::vector<GroupStats> group_stats(VirtualTime end) const;
  [[nodiscard]] std::vector<QueueView> queues() const;
  [[nodiscard]] std::vector<CohortView> cohorts() const;

 private:

  const policy::PolicySet& policies_;
  const Scenario& scenario_;
  RunOptions options_;
  RunResult result_;
  const policy::PlatformGuardrailsSpec* guardrails_ = nullptr;
  std::unique_ptr<AdmissionCore> core_;
  CycleResult cycle_result_;  // every cycle's, its buffers reused
  std::vector<Quota> quotas_;
  std::map<std::pair<std::string, std::string>, int> quota_index_;
  std::vector<Pool> pools_;
  std::map<std::string, int> pool_index_;
  std::vector<Sim> sims_;
  std::deque<ScenarioWorkload> added_;  // submitted while running (stable addresses for Sim::w)
  // The policy sets changed in place while running (change_policies), oldest first: Quota::spec
  // points into the last (stable addresses); everything else still reads policies_.
  std::deque<policy::PolicySet> changed_sets_;
  std::map<WorkloadId, int> sim_by_id_;
  std::map<std::string, int> sim_index_;
  std::int64_t pending_count_ = 0;
  std::map<std::size_t, std::int64_t> blocked_;  // quota -> demand a ReclaimBlocked was said for
  std::priority_queue<Timer, std::vector<Timer>, std::greater<>> timers_;
  std::uint64_t next_timer_ = 0;
  std::int64_t admissions_ = 0;
  std::size_t flushed_ledger_ = 0, flushed_audit_ = 0, flushed_events_ = 0;
  std::vector<Lease> leases_;
  std::string actor_;  // who decides, when not the bank (lease requests and decisions)
  bool core_changed_ = false;
  VirtualTime now_ = 0;
  bool started_ = false, ok_ = true;
  std::unique_ptr<cluster::Cluster> cluster_;
  std::set<std::pair<VirtualTime, int>> pods_ready_deadlines_;  // (deadline, sim): pods_ready.hpp
  std::set<std::pair<std::int64_t, int>> placing_;  // (admission seq, sim): admitted, not placed
  // The same by placement shape: what cluster::Cluster::find reads of a request besides
  // the workload's name (its pool's node labels and taints, pods, GPUs, fraction, models).
  using PlacementShape = std::tuple<int, std::int64_t, std::int64_t, std::int64_t, std::vector<std::string>>;
  std::map<PlacementShape, int> placement_shapes_;
  std::vector<std::set<std::pair<std::int64_t, int>>> placing_by_shape_;
  int placement_shape_of(Sim& s);
  bool cluster_freed_ = false;
  std::int64_t allocated_milli_ = 0;
  VirtualTime allocated_since_ = 0;

 public:
  [[nodiscard]] const cluster::Cluster* cluster() const { return cluster_.get(); }
};

}  // namespace gpubank::twin::run::detail
