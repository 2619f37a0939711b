// The embedded platform behind `gpubank up`: the policies, a seeded day of work, the
// twin's run of it and the inference services on its replicas (serving.hpp), advanced by
// whoever owns the clock, with read-only views for the REST API and the metrics. Pure and
// single-threaded (the HTTP shell serialises access); its one file is the optional LLM
// trace that create() reads.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include <nlohmann/json.hpp>

#include "core/expected.hpp"
#include "policy/policy_set.hpp"
#include "twin/live/day.hpp"
#include "twin/live/elastic.hpp"
#include "twin/live/governance.hpp"
#include "twin/live/gpu_history.hpp"
#include "twin/live/position_history.hpp"
#include "twin/live/service_history.hpp"
#include "twin/live/interventions.hpp"
#include "twin/live/node_agents.hpp"
#include "twin/live/queue_metrics.hpp"
#include "twin/live/serving.hpp"
#include "twin/run/engine.hpp"
#include "twin/telemetry/profile.hpp"

namespace gpubank::metrics {
class Registry;
}  // namespace gpubank::metrics

namespace gpubank::twin::live {

using Json = nlohmann::ordered_json;

// Paging over an append-only log: entries with seq > after, at most limit.
struct Page {
  std::int64_t after = 0;
  std::int64_t limit = 100;
};

struct EventFilter {
  std::string kind, business_group, pool, object;
  Page page;
};

struct WorkloadFilter {
  std::string business_group, pool, state;
};

class Platform {
 public:
  // Builds the day from `day` and starts the run (virtual time 0 settled); reads
  // day.llm_trace when set. options.on_instant persists each instant's ledger and audit
  // entries (a store); nothing of an instant is shown or emitted before it returned:
  // when it fails, the run stops and everything from that instant on stays unseen (the
  // views, the timeline, the services and Kueue's counters end at the last commit, and
  // metrics_text() refuses).
  static Expected<std::unique_ptr<Platform>> create(policy::PolicySet policies, const DayOptions& day,
                                                    run::RunOptions options = {});
  Platform(const Platform&) = delete;
  Platform& operator=(const Platform&) = delete;

  // Handles everything up to `t` (clamped to the day's end): the run, then the services
  // (to each replica change, then to `t`). False: the run or a service stopped on an error
  // (see error()).
  bool advance_to(VirtualTime t);
  [[nodiscard]] VirtualTime now() const { return simulation_.now(); }
  [[nodiscard]] VirtualTime end() const { return end_; }
  [[nodiscard]] Timestamp start() const { return day_.start; }
  [[nodiscard]] const DayOptions& day() const { return day_; }
  // The policies in force: those the run started with, with the policy changes applied
  // since (apply_policy_change).
  [[nodiscard]] const policy::PolicySet& policies() const { return in_force_ ? *in_force_ : policies_; }
  [[nodiscard]] const run::Scenario& scenario() const { return scenario_; }
  // The run's result as the engine holds it, including an instant whose entries could not
  // be persisted: for what the platform emits, use events(), ledger() and audit().
  [[nodiscard]] const run::RunResult& result() const { return simulation_.result(); }
  // What the run made whose instant was persisted (on_instant returned): all of it, unless
  // persisting failed.
  [[nodiscard]] std::span<const run::Event> events() const;
  [[nodiscard]] std::span<const bank::LedgerEntry> ledger() const;
  [[nodiscard]] std::span<const bank::AuditEntry> audit() const;
  [[nodiscard]] std::string error() const;

  // REST views (camelCase JSON).
  [[nodiscard]] Json clock_json() const;
  [[nodiscard]] Json pools_json() const;
  [[nodiscard]] Json groups_json() const;
  [[nodiscard]] Json queues_json() const;
  [[nodiscard]] Json workloads_json(const WorkloadFilter& filter) const;
  // nullopt: no such workload ("namespace/name").
  [[nodiscard]] std::optional<Json> workload_json(const std::string& key) const;
  [[nodiscard]] Json events_json(const EventFilter& filter) const;
  [[nodiscard]] Json ledger_json(const Page& page) const;
  [[nodiscard]] Json audit_json(const Page& page) const;
  // The reclaims so far, newest first, at most `limit`: the lender, the pool, the GPUs it
  // needed, when it started and ended, its result, and each victim's notice, checkpoint
  // (requested, completed or failed), stop, release and recompute loss; each victim with
  // its business group. For /api/v1/reclaims.
  [[nodiscard]] Json reclaims_json(std::size_t limit) const;
  // The cluster's GPUs (MIG slices listed under their GPU) with the workloads on them;
  // empty without an inventory. gpu_json: nullopt for an unknown uuid.
  [[nodiscard]] Json gpus_json(const std::string& pool) const;
  [[nodiscard]] std::optional<Json> gpu_json(const std::string& uuid) const;
  // The GPU's minutes in [from_ms, to_ms] (Unix ms) with its markers (gpu_history.hpp);
  // nullopt for an unknown uuid; no samples without governance (it records the minutes).
  [[nodiscard]] std::optional<Json> gpu_history_json(const std::string& uuid, std::int64_t from_ms,
                                                     std::int64_t to_ms) const;
  // A workload's minutes on its devices and its markers (GpuHistory::workload_json); nullopt
  // for an unknown workload.
  [[nodiscard]] std::optional<Json> workload_history_json(const std::string& key, std::int64_t from_ms,
                                                          std::int64_t to_ms) const;
  // The newest minute the GPU history holds (Unix ms), 0 before any.
  [[nodiscard]] std::int64_t gpu_history_last_ms() const { return gpu_history_.last_ms(); }
  // A business group's position per pool per minute in [from_ms, to_ms] (Unix ms) with the
  // events that moved it (twin/live/position_history.hpp); nullopt for a group the
  // guardrails do not name.
  [[nodiscard]] std::optional<Json> group_history_json(const std::string& group, std::int64_t from_ms,
                                                       std::int64_t to_ms) const;
  // A pool's devices and holdings per minute (PositionHistory::pool_json); nullopt for a pool
  // the guardrails do not name.
  [[nodiscard]] std::optional<Json> pool_history_json(const std::string& pool, std::int64_t from_ms,
                                                      std::int64_t to_ms) const;
  // An inference service's replicas, TTFT p95 and tokens per minute with its scale, replica,
  // tidal and policy events (ServiceHistory); `policy` is its InferenceScalingPolicy's name;
  // nullopt for a policy the set does not hold.
  [[nodiscard]] std::optional<Json> service_history_json(const std::string& policy, std::int64_t from_ms,
                                                         std::int64_t to_ms) const;
  // The inference services: per InferenceScalingPolicy its model, peak, request counts,
  // TTFT p95 over the last 5 minutes (null before any first token) and its live replicas
  // (state, running and waiting requests, KV cache use, load). For /api/v1/services.
  [[nodiscard]] Json services_json() const;
  // What an LLM gateway needs about a service's capacity (serving/gateway_capacity.hpp):
  // queue, replicas by phase, headroom before the SLO breaks, whether a scale-out can
  // happen now and when it would serve, borrowable GPUs. For
  // /api/v1/services/<policy>/capacity; nullopt for a policy that is not served. The same
  // numbers are gpubank_service_* series in metrics_text().
  [[nodiscard]] std::optional<Json> service_capacity_json(const std::string& policy) const;
  // The run's summary so far (twin/run/summary.hpp): per group and for the cluster.
  [[nodiscard]] Json summary_json() const;
  // The run's figures so far (groups' GPU-hours, cluster): run::Simulation::stats().
  [[nodiscard]] run::RunResult stats() const;
  // ---- interventions (interventions.hpp): what the API does to the run -----------------------
  // Each is journalled (set_journal) before it is applied at now(); a journal error applies
  // nothing. Errors: the journal's, or the run's refusal (an unknown GPU or policy, ...).
  //
  // Where live interventions are journalled (unset: nowhere, as in tests and previews).
  using Journal = std::function<Expected<bool>(Intervention&)>;
  void set_journal(Journal journal) { journal_ = std::move(journal); }
  // Interventions an earlier start journalled: each is applied when advance_to reaches its
  // virtual time, before the run goes past it (in (t, seq) order). Call before advancing.
  void schedule(std::vector<Intervention> recorded);
  // Scheduled interventions the run has not reached yet, and those it applied that the run
  // refused (as it refused them the first time: they changed nothing).
  [[nodiscard]] std::size_t scheduled_left() const { return scheduled_.size() - next_scheduled_; }
  [[nodiscard]] std::size_t scheduled_refused() const { return scheduled_refused_; }
  Expected<bool> intervene(InterventionAction action, const std::string& actor);
  // Fault injection (POST /api/v1/gpus/<uuid>/health): the GPU reports an XID error, or is
  // healthy again, now; audited with `actor`.
  Expected<bool> set_gpu_health(const std::string& uuid, bool healthy, int xid, const std::string& actor,
                                std::int64_t ecc_double_bit = 0);
  // A decision on a low-utilisation ReclaimCandidate (POST /api/v1/governance/alerts/<uid>/
  // decision; the caller checked the decider's authority): audited with `actor` (event
  // ReclaimApproved, DowngradeApproved or ReclaimRejected); an approved reclaim is stopped
  // after its checkpoint or grace and deactivated (run::Simulation::stop_approved); an
  // approved downgrade (`downgrade_to`) keeps running at that class's priority
  // (run::Simulation::downgrade_approved). Errors: no governance, no open candidate, decided
  // already, a class refused, a workload that holds no device.
  Expected<bool> decide_reclaim(const std::string& workload_uid, bool approve, const std::string& reason,
                                const std::string& actor, const std::string& downgrade_to = {});
  // A self-service policy change in force (a proposal applied at once or approved): the
  // document upserted into policies(), validated, and changed in the run in place
  // (run::Simulation::change_policies: GPUQuotaPolicies' quotas; anything else is refused
  // with the reason and applies at the next start). Audited with `actor`.
  Expected<bool> apply_policy_change(const std::string& proposal_id, const std::string& document,
                                     const std::string& actor);
  // The proposals whose change the run has applied (journalled or live), in order.
  [[nodiscard]] const std::vector<std::string>& applied_proposals() const { return applied_proposals_; }
  [[nodiscard]] const Serving& serving() const { return *serving_; }
  // The low-utilisation alerts and the FinOps reports in virtual time (governance.hpp);
  // nullptr unless DayOptions::governance.
  [[nodiscard]] const TwinGovernance* governance() const { return governance_.get(); }
  // Unix ms of virtual time t.
  [[nodiscard]] std::int64_t unix_ms(VirtualTime t) const;
  [[nodiscard]] const ElasticControl& control() const { return *control_; }
  // `gpubank tidal freeze|unfreeze <policy>`: pins (or releases) the replicas of the
  // TidalPolicy's services now; audited with `actor`.
  Expected<bool> freeze_tidal(const std::string& policy, bool freeze, const std::string& actor,
                              const std::string& reason);
  // Fault injection (POST /api/v1/services/<policy>/faults): the next `count` replicas to
  // finish loading fail to load their model; audited with `actor`.
  Expected<bool> fail_model_loads(const std::string& policy, int count, const std::string& actor);

  // Prometheus text exposition of everything the platform exports now: the bank's
  // series, dcgm-exporter's per device as each node's gpubank exporter attributes it
  // (node_agents.hpp: its samples with mapping_status and the pods' attribution, with
  // gpubank_gpu_info / gpubank_gpu_allocation_info),
  // Kueue's ClusterQueue families (queue_metrics.hpp) and vLLM's per replica.
  // Not const: the energy counters carry their integral across changes of a device's work.
  [[nodiscard]] Expected<std::string> metrics_text();

 private:
  Platform(policy::PolicySet policies, DayOptions day, run::Scenario scenario, run::RunOptions options);
  // advance_to without the scheduled interventions: to each controller step and governance
  // minute up to `t`, then to `t`.
  bool advance_plain(VirtualTime t);
  // The virtual time of the next minute governance records (nullopt without governance).
  [[nodiscard]] std::optional<VirtualTime> governance_minute_due();
  // One intervention at now(), already journalled.
  Expected<bool> apply(const Intervention& i);
  Expected<bool> apply_gpu_health(const GpuHealthChange& a, const std::string& actor);
  Expected<bool> apply_tidal_freeze(const TidalFreeze& a, const std::string& actor);
  Expected<bool> apply_model_load_faults(const ModelLoadFaults& a, const std::string& actor);
  Expected<bool> apply_reclaim_decision(const ReclaimDecisionRequest& a, const std::string& actor);
  Expected<bool> apply_change(const PolicyChange& a, const std::string& actor);
  // Shows the services and the Kueue counters the run's new events, services to now().
  bool follow_run();
  // Records every whole minute up to now() that governance has not seen, with the state now.
  void observe_governance();
  // The inference workloads' tokens and TTFT p95 at minute t_ms from their replicas'
  // counters (labels: each replica's workload labels); keeps serving_history_.
  std::vector<ServingMinute> serving_minutes(const std::vector<Serving::ReplicaCounters>& counters,
                                             const std::map<std::string, std::array<std::string, 4>>& labels,
                                             std::int64_t t_ms);
  // The serving controllers' step at now(), then the services follow what it did.
  bool control_step();
  Expected<bool> export_capacity(metrics::Registry& registry) const;

  policy::PolicySet policies_;
  DayOptions day_;
  run::Scenario scenario_;
  run::Simulation simulation_;
  VirtualTime end_ = 0;
  std::unique_ptr<Serving> serving_;
  std::unique_ptr<ElasticControl> control_;
  std::unique_ptr<QueueMetrics> queue_metrics_;
  std::string serving_error_;
  // Persisting an instant failed: the run stopped, and the committed_* counts are the
  // entries of the instants before it.
  bool persist_failed_ = false;
  std::string persist_error_;
  std::size_t committed_events_ = 0, committed_ledger_ = 0, committed_audit_ = 0;
  // The events the engine has handed over (RunOptions::on_event, once their instant's
  // entries are persisted).
  std::size_t handed_events_ = 0;
  // Per device (unit): the activity it had at the last scrape and its energy base.
  struct DeviceEnergy {
    std::string signature;           // profile and workload
    std::int64_t profile_since_ms = 0;  // when they began (the profile's phases count from it)
    telemetry::ActivityInput input;  // at the last scrape
    std::int64_t since_ms = 0;
    double mj = 0;       // the counter at since_ms
    double last_mj = 0;  // the counter last exposed
  };
  std::vector<DeviceEnergy> energy_;
  // metasync and the nodes' exporters, run on the twin's pods at each scrape.
  NodeAgents agents_;
  Journal journal_;
  std::optional<policy::PolicySet> in_force_;  // once a change was applied
  std::vector<std::string> applied_proposals_;
  std::vector<Intervention> scheduled_;
  std::size_t next_scheduled_ = 0, scheduled_refused_ = 0;
  std::unique_ptr<TwinGovernance> governance_;
  GpuHistory gpu_history_;
  PositionHistory position_history_;
  ServiceHistory service_history_;
  std::optional<std::int64_t> governance_next_ms_;  // the next Unix minute to record
  // Per device (unit): the activity's signature and since when (its phases count from then).
  std::vector<std::pair<std::string, std::int64_t>> governance_since_;
  std::size_t governance_events_ = 0;  // events read for the checkpoints
  std::size_t governance_ledger_ = 0;  // ledger entries read for the open loans
  std::size_t governance_admissions_ = 0;  // Kueue admissions counted (queue wait)
  std::map<std::pair<std::string, std::string>, std::int64_t> governance_loss_ms_;  // (group, pool): counted so far
  std::map<std::string, LoanMinute, std::less<>> open_loans_;  // by borrow record
  std::map<std::string, std::int64_t, std::less<>> last_checkpoint_ms_;  // "<namespace>/<workload>"
  std::map<std::string, attribution::PodMeta, std::less<>> pod_meta_;   // by pod UID, as metasync read them
  // Per replica workload, its vLLM counters at the recorded minutes of the last two (what a
  // two-minute rate reads).
  std::map<std::string, std::deque<std::pair<std::int64_t, Serving::ReplicaCounters>>> serving_history_;
};

}  // namespace gpubank::twin::live
