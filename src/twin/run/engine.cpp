#include "twin/run/engine.hpp"

#include <algorithm>
#include <cstdio>
#include <deque>
#include <map>
#include <memory>
#include <queue>
#include <set>
#include <tuple>

#include "bank/attribution.hpp"
#include "bank/victims.hpp"
#include "document/node.hpp"
#include "kueue/bridge.hpp"
#include "kueue/decode.hpp"
#include "policy/authorize.hpp"
#include "policy/priority.hpp"
#include "render/kueue.hpp"
#include "render/object.hpp"
#include "render/scheduling.hpp"
#include "twin/admission/core.hpp"
#include "twin/cluster/identity.hpp"

namespace gpubank::twin::run {
namespace {

constexpr std::string_view kRuleScenario = "scenario.reference";
constexpr std::string_view kRulePolicies = "scenario.policies";
constexpr std::string_view kReclaimReason = "GracefulReclaim";  // the twin's own Preempted reason
constexpr int kMaxSettleRounds = 10'000;
constexpr std::int64_t kRequeueBackoffMs = 60'000;
constexpr std::int64_t kRequeueBackoffMaxMs = 3'600'000;
constexpr int kMaxCyclesPerRound = 100'000;

std::size_t at(int i) { return static_cast<std::size_t>(i); }

std::string type_name(policy::WorkloadType t) {
  switch (t) {
    case policy::WorkloadType::Training: return "training";
    case policy::WorkloadType::Inference: return "inference";
    case policy::WorkloadType::Batch: return "batch";
    case policy::WorkloadType::Notebook: return "notebook";
  }
  return "training";
}

std::string trait_name(policy::WorkloadTrait t) {
  switch (t) {
    case policy::WorkloadTrait::Batch: return "batch";
    case policy::WorkloadTrait::Checkpointable: return "checkpointable";
    case policy::WorkloadTrait::Training: return "training";
    case policy::WorkloadTrait::Development: return "development";
  }
  return "batch";
}

double gpu_hours(std::int64_t gpu_ms) { return static_cast<double>(gpu_ms) / 3'600'000.0; }

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
  std::optional<std::int64_t> reserve_grace_ms;
  std::string reserve_reason;
  std::optional<std::int64_t> borrow_cap;
  // Indexes by state (sim indexes, ascending: the order the run has always visited them in).
  std::set<int> pending;
  std::int64_t used = 0;  // GPUs held (Placing, Starting or Running)
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

std::string_view state_name(State s) {
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
  // waitForPodsReady (pods_ready.hpp): when its pods must be ready by (while Placing or
  // Starting), requeueState.count, the queue-order time of its next submission (the
  // eviction's or its creation's), and whether it was deactivated.
  std::optional<VirtualTime> pods_ready_deadline;
  std::int32_t pods_ready_requeues = 0;
  std::optional<VirtualTime> queue_since;
  VirtualTime created_at = -1;
  bool deactivated = false;
  std::string pending_reason;
  bool deleted = false;
  WorkloadOutcome outcome;
};

// The reclaimPolicy.onlyPreempt traits a workload carries.
std::vector<std::string> traits_of(const Sim& s) {
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

  bool start() {
    if (started_) throw std::logic_error("twin run: started twice");
    started_ = true;
    if (!setup()) return false;
    for (std::size_t i = 0; i < sims_.size(); ++i) {
      schedule(sims_[i].w->arrival_time.milliseconds(), Timer::Kind::Arrive, static_cast<int>(i));
      if (sims_[i].w->delete_time) schedule(sims_[i].w->delete_time->milliseconds(), Timer::Kind::Delete, static_cast<int>(i));
    }
    for (std::size_t i = 0; i < leases_.size(); ++i) {
      schedule_lease(leases_[i].decision->requested_at.milliseconds(), Timer::Kind::LeaseRequest, static_cast<int>(i));
      schedule_lease(leases_[i].decision->decided_at.milliseconds(), Timer::Kind::LeaseDecide, static_cast<int>(i));
    }
    for (std::size_t i = 0; i < scenario_.gpu_faults.size(); ++i) {
      const auto& f = scenario_.gpu_faults[i];
      timers_.push(Timer{f.at.milliseconds(), next_timer_++, Timer::Kind::GpuFault, static_cast<int>(i), 0});
      if (f.recover_at) timers_.push(Timer{f.recover_at->milliseconds(), next_timer_++, Timer::Kind::GpuRecover, static_cast<int>(i), 0});
    }
    if (cluster_ && options_.fragmentation_sample_ms > 0) {
      timers_.push(Timer{options_.fragmentation_sample_ms, next_timer_++, Timer::Kind::Sample, -1, 0});
    }
    now_ = 0;
    settle(now_);
    ok_ = flush();
    return ok_;
  }

  bool advance_to(VirtualTime t) {
    if (!started_ || !ok_) return false;
    if (options_.until) t = std::min(t, *options_.until);
    for (auto next = next_time(); next && *next <= t; next = next_time()) {
      if (only_samples_left()) break;
      now_ = *next;
      while (!timers_.empty() && timers_.top().t == now_) {
        const Timer timer = timers_.top();
        timers_.pop();
        handle(timer, now_);
      }
      // PodsReady deadlines fall due after the instant's timers (a workload placed or
      // started at this instant is ready in time).
      while (!pods_ready_deadlines_.empty() && pods_ready_deadlines_.begin()->first == now_) {
        const int index = pods_ready_deadlines_.begin()->second;
        pods_ready_timeout(sims_[at(index)], index, now_);
      }
      settle(now_);
      if (!flush()) return ok_ = false;
    }
    now_ = std::max(now_, t);
    return true;
  }

  [[nodiscard]] VirtualTime now() const { return now_; }
  // A fragmentation sample alone does not keep the run going.
  [[nodiscard]] bool only_samples_left() const {
    return timers_.size() == 1 && timers_.top().kind == Timer::Kind::Sample && pods_ready_deadlines_.empty();
  }
  // The earliest timer or PodsReady deadline.
  [[nodiscard]] std::optional<VirtualTime> next_time() const {
    std::optional<VirtualTime> next;
    if (!timers_.empty()) next = timers_.top().t;
    if (!pods_ready_deadlines_.empty()) {
      const VirtualTime deadline = pods_ready_deadlines_.begin()->first;
      next = std::min(next.value_or(deadline), deadline);
    }
    return next;
  }

  [[nodiscard]] std::optional<VirtualTime> next_instant() const {
    const auto next = next_time();
    if (!next || !ok_ || only_samples_left()) return std::nullopt;
    if (options_.until && *next > *options_.until) return std::nullopt;
    return next;
  }
  [[nodiscard]] const RunResult& result() const { return result_; }

  RunResult finish() {
    if (ok_ && started_) {
      while (const auto next = next_instant()) {
        if (!advance_to(*next)) break;
      }
    }
    if (ok_ && started_) {
      result_.end = options_.until ? std::max(now_, *options_.until) : now_;
      result_.workloads = workloads();
      result_.positions = positions();
      result_.groups = group_stats(result_.end);
      if (cluster_) {
        now_ = result_.end;
        allocation_changes(0);
        result_.cluster.units = static_cast<std::int64_t>(cluster_->unit_count());
      }
    }
    return std::move(result_);
  }

 private:
  // ---- setup ------------------------------------------------------------------------------

  void error(std::string_view rule, const std::string& path, std::string message) {
    result_.diagnostics.push_back(
        Diagnostic{Severity::Error, std::string(rule), {}, {}, {}, {}, path, std::move(message)});
  }

  bool setup() {
    result_.start = scenario_.start.value_or(Timestamp{});
    guardrails_ = policies_.guardrails_spec();
    if (guardrails_ == nullptr) {
      error(kRulePolicies, "", "the policies hold no PlatformGuardrails: pools and groups are unknown");
      return false;
    }
    std::string canonical;
    for (const auto& p : policies_.policies()) canonical += render::canonical_text(p) + "\n";
    result_.policy_version = render::sha256_hex(canonical);

    // The Kueue objects `gpubank render` writes, read back the way `twin admit` reads them.
    kueue::ObjectSet objects;
    for (const auto& o : render::render_kueue(policies_)) {
      const doc::Node node = doc::from_json(nlohmann::json::parse(o.manifest.dump()));
      kueue::decode_object(node, kueue::Source{o.path, 0, -1, {}, {}}, objects, result_.diagnostics);
    }
    if (has_errors(result_.diagnostics)) return false;
    kueue::CoreInputs inputs = kueue::core_inputs(objects);

    for (const auto& p : policies_.policies()) {
      if (p.kind != policy::Kind::GPUQuotaPolicy) continue;
      const auto& q = p.as<policy::GPUQuotaPolicySpec>();
      const policy::Pool* pool = guardrails_->find_pool(q.resource_pool);
      if (pool == nullptr) continue;  // policy validation reports it
      Quota quota;
      quota.spec = &q;
      quota.group = q.business_group;
      quota.pool_name = q.resource_pool;
      quota.cq = render::queue_name(q);
      quota.guaranteed = q.guaranteed;
      quota.graceful = q.reclaim_policy && q.reclaim_policy->grace_period.has_value();
      if (quota.graceful) quota.grace_ms = q.reclaim_policy->grace_period->milliseconds();
      if (q.reclaim_policy) {
        for (auto t : q.reclaim_policy->only_preempt) quota.lend_only_to.push_back(trait_name(t));
      }
      auto pit = pool_index_.find(pool->name);
      if (pit == pool_index_.end()) {
        Pool pl;
        pl.pool = pool;
        pl.flavor = pool->name;
        pl.resource = render::gpu_resource(*pool);
        pl.tracker = std::make_unique<bank::BorrowTracker>(pool->name, options_.record_prefix);
        pit = pool_index_.emplace(pool->name, static_cast<int>(pools_.size())).first;
        pools_.push_back(std::move(pl));
      }
      quota.pool = pit->second;
      for (auto& cq : inputs.queues) {
        if (cq.name != quota.cq) continue;
        for (const auto& g : cq.resource_groups) {
          for (const auto& f : g.flavors) {
            for (const auto& r : f.resources) {
              if (f.flavor == pools_[at(quota.pool)].flavor && r.resource == pools_[at(quota.pool)].resource) {
                quota.borrowing_limit = r.borrowing_limit;
                quota.lending_limit = r.lending_limit;
              }
            }
          }
        }
        // The bank reclaims for this queue, gracefully; Kueue must not do it at once.
        if (quota.graceful) {
          cq.preemption.reclaim_within_cohort = PreemptionPolicy::Never;
          cq.preemption.borrow_within_cohort = BorrowWithinCohortPolicy::Never;
        }
      }
      quota_index_[{quota.group, quota.pool_name}] = static_cast<int>(quotas_.size());
      pools_[at(quota.pool)].quotas.push_back(static_cast<int>(quotas_.size()));
      quotas_.push_back(std::move(quota));
    }

    if (options_.inventory) {
      try {
        cluster_ = std::make_unique<cluster::Cluster>(*options_.inventory);
      } catch (const std::invalid_argument& e) {
        error(kRulePolicies, "", std::string("the inventory does not load: ") + e.what());
        return false;
      }
    }

    CoreOptions core_options;
    auto core = AdmissionCore::create(core_options, std::move(inputs.flavors), std::move(inputs.cohorts),
                                      std::move(inputs.queues));
    if (!core) {
      error(kRulePolicies, "", "the rendered Kueue objects do not load: " + core.error());
      return false;
    }
    core_ = std::move(core.value());

    // Workloads.
    sims_.reserve(scenario_.workloads.size());
    for (std::size_t i = 0; i < scenario_.workloads.size(); ++i) {
      auto s = make_sim(scenario_.workloads[i], "workloads[" + std::to_string(i) + "]", result_.diagnostics);
      if (s) sims_.push_back(std::move(*s));
    }
    for (std::size_t i = 0; i < scenario_.leases.size(); ++i) {
      const ScenarioLease& d = scenario_.leases[i];
      const std::string path = "leases[" + std::to_string(i) + "]";
      const policy::PolicyObject* object = policies_.find(policy::Kind::CapacityLease, d.name);
      if (object == nullptr) {
        error(kRuleScenario, path + ".name", "no CapacityLease named \"" + d.name + "\" among the policies");
        continue;
      }
      Lease l;
      l.object = object;
      l.spec = &object->as<policy::CapacityLeaseSpec>();
      l.decision = &d;
      auto qit = quota_index_.find({l.spec->business_group, l.spec->resource_pool});
      if (qit == quota_index_.end()) {
        error(kRuleScenario, path + ".name",
              "CapacityLease " + d.name + " is for business group " + l.spec->business_group + " in pool " +
                  l.spec->resource_pool + ", where no GPUQuotaPolicy gives it quota");
        continue;
      }
      if (!l.spec->end) {
        error(kRuleScenario, path + ".name", "CapacityLease " + d.name + " has no end");
        continue;
      }
      l.quota = qit->second;
      auto to_virtual = [&](Timestamp t) {
        return std::max<VirtualTime>(0, std::chrono::duration_cast<std::chrono::milliseconds>(t - result_.start).count());
      };
      l.start = l.spec->start ? to_virtual(*l.spec->start) : d.decided_at.milliseconds();
      l.end = to_virtual(*l.spec->end);
      leases_.push_back(l);
    }
    for (std::size_t i = 0; i < scenario_.gpu_faults.size(); ++i) {
      const auto& f = scenario_.gpu_faults[i];
      const std::string path = "gpuFaults[" + std::to_string(i) + "]";
      if (!cluster_) {
        error(kRuleScenario, path, "GPU faults need a cluster: run with an inventory");
        continue;
      }
      const auto node = cluster_->find_node(f.node);
      if (!node) {
        error(kRuleScenario, path + ".node", "no node \"" + f.node + "\" in the inventory");
      } else if (f.gpu >= cluster_->node(*node).gpus) {
        error(kRuleScenario, path + ".gpu",
              "node " + f.node + " has " + std::to_string(cluster_->node(*node).gpus) + " GPUs, no GPU " + std::to_string(f.gpu));
      }
    }
    if (has_errors(result_.diagnostics)) return false;
    for (std::size_t i = 0; i < sims_.size(); ++i) sim_index_.emplace(sims_[i].key, static_cast<int>(i));

    for (const auto& q : quotas_) ledger_quota(q, 0, "Policy");
    return true;
  }

  // A workload of the scenario (or submitted later) checked against the policies: its
  // group, quota, namespace and priority class. Nothing (and the errors) when it is wrong.
  std::optional<Sim> make_sim(const ScenarioWorkload& w, const std::string& path, Diagnostics& diagnostics) {
    auto fail = [&](const std::string& field, std::string message) {
      diagnostics.push_back(Diagnostic{Severity::Error, std::string(kRuleScenario), {}, {}, {}, {}, path + field, std::move(message)});
      return std::nullopt;
    };
    Sim s;
    s.w = &w;
    const policy::Group* group = guardrails_->find_group(w.business_group);
    if (group == nullptr) return fail(".businessGroup", "business group \"" + w.business_group + "\" is not in the guardrails");
    auto qit = quota_index_.find({w.business_group, w.resource_pool});
    if (qit == quota_index_.end()) {
      return fail(".resourcePool", "no GPUQuotaPolicy gives business group " + w.business_group + " quota in pool \"" +
                                       w.resource_pool + "\"");
    }
    s.quota = qit->second;
    s.ns = w.namespace_.empty() ? group->effective_namespaces().front() : w.namespace_;
    const auto namespaces = group->effective_namespaces();
    if (std::find(namespaces.begin(), namespaces.end(), s.ns) == namespaces.end()) {
      return fail(".namespace", "namespace " + s.ns + " does not belong to business group " + w.business_group);
    }
    const auto& prot = guardrails_->protected_workload_types;
    s.protected_ = std::find(prot.begin(), prot.end(), w.workload_type) != prot.end();
    if (w.priority_class.empty() && s.protected_) {
      // Without a class Kueue would give it priority 0, below every batch job of its queue.
      const policy::PriorityRule* rule = policy::default_priority_for(*guardrails_, w.workload_type, w.business_group);
      if (rule == nullptr) {
        return fail(".priorityClass", type_name(w.workload_type) +
                                          " workloads are protected and need a priority class, but the guardrails have "
                                          "none for that type and business group " + w.business_group);
      }
      s.priority = rule->value;
      s.preemptible = rule->preemptible;
    }
    if (!w.priority_class.empty()) {
      const policy::PriorityRule* rule = guardrails_->find_priority(w.priority_class);
      if (rule == nullptr) return fail(".priorityClass", "priority class \"" + w.priority_class + "\" is not in the guardrails");
      const auto& types = rule->workload_types;
      if (!types.empty() && std::find(types.begin(), types.end(), w.workload_type) == types.end()) {
        return fail(".priorityClass",
                    "priority class " + w.priority_class + " is not allowed for workload type " + type_name(w.workload_type));
      }
      if (!rule->groups.empty() && std::find(rule->groups.begin(), rule->groups.end(), w.business_group) == rule->groups.end()) {
        return fail(".priorityClass",
                    "priority class " + w.priority_class + " is not allowed for business group " + w.business_group);
      }
      s.priority = rule->value;
      s.preemptible = rule->preemptible;
    }
    s.key = s.ns + "/" + w.name;
    s.gpus = w.total_gpus();
    s.outcome.workload = s.key;
    s.outcome.business_group = w.business_group;
    s.outcome.pool = w.resource_pool;
    s.outcome.gpus = s.gpus;
    return s;
  }

  // ---- records --------------------------------------------------------------------------------

  // Hands the instant's new entries to the shell, then its events: an event reports only
  // what is committed (on_instant returned), so a consumer of the stream never sees a
  // decision that a crash or a failed append loses. False (with the error recorded) stops
  // the run, and that instant's events are not emitted.
  bool flush() {
    const bool handed = hand_over();
    if (handed && options_.on_event) {
      for (std::size_t i = flushed_events_; i < result_.events.size(); ++i) options_.on_event(result_.events[i]);
      flushed_events_ = result_.events.size();
    }
    if (!options_.retain) {  // handed over: nothing of this instant stays behind
      result_.events.clear();
      result_.ledger.clear();
      result_.audit.clear();
      flushed_events_ = flushed_ledger_ = flushed_audit_ = 0;
    }
    return handed;
  }

  bool hand_over() {
    if (!options_.on_instant) return true;
    const std::span<const bank::LedgerEntry> ledger(result_.ledger.data() + flushed_ledger_,
                                                    result_.ledger.size() - flushed_ledger_);
    const std::span<const bank::AuditEntry> audit(result_.audit.data() + flushed_audit_,
                                                  result_.audit.size() - flushed_audit_);
    if (ledger.empty() && audit.empty()) return true;
    auto done = options_.on_instant(ledger, audit);
    if (!done) {
      error("scenario.persist", "", "the run stopped: its entries could not be persisted: " + done.error());
      return false;
    }
    flushed_ledger_ = result_.ledger.size();
    flushed_audit_ = result_.audit.size();
    return true;
  }

  void ledger(bank::LedgerEntry e) {
    e.seq = ++result_.ledger_count;
    result_.ledger.push_back(std::move(e));
  }

  void ledger_quota(const Quota& q, VirtualTime now, std::string reason) {
    bank::LedgerEntry e;
    e.time_ms = now;
    e.kind = bank::LedgerKind::QuotaSet;
    e.pool = q.pool_name;
    e.flavor = pools_[at(q.pool)].flavor;
    e.business_group = q.group;
    e.gpus = q.guaranteed;
    e.lending_limit = q.lending_limit.value_or(-1);
    e.borrowing_limit = q.borrowing_limit.value_or(-1);
    e.reason = std::move(reason);
    ledger(std::move(e));
  }

  void ledger_usage(const Sim& s, bank::LedgerKind kind, VirtualTime now, std::string reason) {
    const Quota& q = quotas_[at(s.quota)];
    if (kind == bank::LedgerKind::UsageEnded) {
      // Its borrow records close first: a record never outlives the usage it is part of
      // (ledger.usage-ended-with-open-records).
      Pool& pool = pools_[at(q.pool)];
      for (const auto& c : pool.tracker->end_workload(s.key, reason)) borrow_change(pool, c, now);
    }
    bank::LedgerEntry e;
    e.time_ms = now;
    e.kind = kind;
    e.pool = q.pool_name;
    e.flavor = pools_[at(q.pool)].flavor;
    e.business_group = q.group;
    e.workload = s.key;
    e.gpus = s.gpus;
    e.reason = std::move(reason);
    ledger(std::move(e));
  }

  void event(Event e, bool bank_decision = true) {
    if (e.kind != "Pending") {
      bank::AuditEntry a;
      a.seq = ++result_.audit_count;
      a.time_ms = e.t;
      a.actor = !actor_.empty() ? actor_ : bank_decision ? options_.actor : "kueue-twin";
      a.action = e.kind;
      a.object = e.object;
      a.policy_version = result_.policy_version;
      a.decision = e.reason;
      a.reason = e.message;
      a.numbers = e.numbers.dump();
      result_.audit.push_back(std::move(a));
    }
    ++result_.event_count;
    result_.events.push_back(std::move(e));
  }

  Event workload_event(const Sim& s, VirtualTime now, std::string kind, std::string reason, std::string message) {
    const Quota& q = quotas_[at(s.quota)];
    Event e;
    e.t = now;
    e.kind = std::move(kind);
    e.object = "Workload/" + s.key;
    e.business_group = q.group;
    e.pool = q.pool_name;
    e.queue = q.cq;
    e.reason = std::move(reason);
    e.message = std::move(message);
    return e;
  }

  // An event about a lender's reclaim, on the lender's group.
  Event lender_event(const std::string& group, const std::string& pool, const std::string& queue, VirtualTime now,
                     std::string kind, std::string reason, std::string message) {
    Event e;
    e.t = now;
    e.kind = std::move(kind);
    e.object = "BusinessGroup/" + group;
    e.business_group = group;
    e.pool = pool;
    e.queue = queue;
    e.reason = std::move(reason);
    e.message = std::move(message);
    return e;
  }

  void schedule(VirtualTime t, Timer::Kind kind, int sim) {
    timers_.push(Timer{t, next_timer_++, kind, sim, sims_[at(sim)].version});
  }

  // Holding quota: what attribution, reclaim and the positions count as used.
  static bool holds_gpus(State st) { return st == State::Placing || st == State::Starting || st == State::Running; }

  // Every state change goes through here: it keeps the per-queue and per-pool indexes that
  // attribution and reclaim read, and marks the pool for them.
  void set_state(Sim& s, State next) {
    const int index = static_cast<int>(&s - sims_.data());
    Quota& q = quotas_[at(s.quota)];
    Pool& pool = pools_[at(q.pool)];
    if (s.state == State::Pending) {
      q.pending.erase(index);
      --pending_count_;
    }
    q.used_gpu_ms += q.used * (now_ - q.used_since);
    q.used_since = now_;
    if (holds_gpus(s.state)) {
      pool.holding.erase(index);
      q.used -= s.gpus;
    }
    if (s.state == State::Placing) placing_.erase({s.admission_seq, index});
    if (next != State::Placing && next != State::Starting) disarm_pods_ready(s, index);  // ready, or gone
    if (holds_gpus(s.state) && !holds_gpus(next) && cluster_ && cluster_->placement_of(s.key) != nullptr) {
      allocation_changes(-placed_milli(s));
      if (auto released = cluster_->release(s.key); !released) throw std::logic_error("twin run: " + released.error());
      cluster_freed_ = true;
    }
    s.state = next;
    if (next == State::Pending) {
      q.pending.insert(index);
      ++pending_count_;
    }
    if (holds_gpus(next)) {
      pool.holding.insert(index);
      q.used += s.gpus;
    }
    pool.touch();
  }
  void touch_pool_of(const Sim& s) { pools_[at(quotas_[at(s.quota)].pool)].touch(); }

  // ---- progress -------------------------------------------------------------------------------

  [[nodiscard]] std::int64_t progress(const Sim& s, VirtualTime now) const {
    if (s.frozen) return s.frozen_progress;
    if (s.state == State::Running) return s.base + (now - s.running_since);
    return s.base;
  }
  // The last periodic checkpoint: every checkpointInterval of progress since the run began.
  [[nodiscard]] std::int64_t last_periodic(const Sim& s, std::int64_t p) const {
    if (!s.w->checkpointable || !s.w->checkpoint_interval) return s.base;
    const std::int64_t interval = s.w->checkpoint_interval->milliseconds();
    if (interval <= 0) return s.base;
    return s.base + (p - s.base) / interval * interval;
  }
  void schedule_finish(Sim& s, int index, VirtualTime now) {
    schedule(now + std::max<std::int64_t>(0, s.w->run_time.milliseconds() - s.base), Timer::Kind::Finish, index);
  }

  // ---- timers ---------------------------------------------------------------------------------

  void handle(const Timer& timer, VirtualTime now) {
    switch (timer.kind) {
      case Timer::Kind::LeaseRequest: return lease_requested(timer.sim, now);
      case Timer::Kind::LeaseDecide: return lease_decided(timer.sim, now);
      case Timer::Kind::LeaseActivate: return lease_change(timer.sim, now, true);
      case Timer::Kind::LeaseExpire: return lease_change(timer.sim, now, false);
      case Timer::Kind::GpuFault:
      case Timer::Kind::GpuRecover: {
        const ScenarioGpuFault& f = scenario_.gpu_faults[at(timer.sim)];
        const bool recover = timer.kind == Timer::Kind::GpuRecover;
        auto done = gpu_health(cluster::gpu_uuid(f.node, f.gpu), recover, f.effective_xid(), now, "scenario",
                               recover ? 0 : f.ecc_double_bit);
        if (!done) throw std::logic_error("twin run: " + done.error());  // setup checked the GPU exists
        return;
      }
      case Timer::Kind::Sample:
        sample_fragmentation();
        // The next sample only while something else is still to happen.
        if (!timers_.empty()) timers_.push(Timer{now + options_.fragmentation_sample_ms, next_timer_++, Timer::Kind::Sample, -1, 0});
        return;
      default: break;
    }
    Sim& s = sims_[at(timer.sim)];
    if (timer.kind == Timer::Kind::Arrive) {
      if (s.state == State::Waiting) submit(s, now);
      return;
    }
    if (timer.kind == Timer::Kind::Delete) {
      remove(s, now);
      return;
    }
    if (timer.version != s.version) return;  // overtaken by a later change
    switch (timer.kind) {
      default: break;
      case Timer::Kind::Started:
        if (s.state != State::Starting) return;
        set_state(s, State::Running);
        s.running_since = now;
        schedule_finish(s, timer.sim, now);
        break;
      case Timer::Kind::Finish: finish(s, now); break;
      case Timer::Kind::CheckpointDone: checkpoint_done(s, now); break;
      case Timer::Kind::Resubmit:
        if (s.state == State::Requeuing) submit(s, now);
        break;
      case Timer::Kind::GraceEnd: grace_end(s, now); break;
    }
  }

  void submit(Sim& s, VirtualTime now) {
    const Quota& q = quotas_[at(s.quota)];
    const Pool& pool = pools_[at(q.pool)];
    WorkloadSpec spec;
    spec.ns = s.ns;
    spec.name = s.w->name;
    char uid[32];
    std::snprintf(uid, sizeof uid, "twin-%08zu", static_cast<std::size_t>(&s - sims_.data()));
    spec.uid = uid;
    spec.cluster_queue = q.cq;
    spec.priority = s.priority;
    if (s.created_at < 0) s.created_at = now;
    // After a PodsReady timeout Kueue orders it by the eviction (or its creation), not by
    // when its backoff ended.
    spec.creation = s.queue_since.value_or(now);
    s.queue_since.reset();
    PodSetSpec ps;
    ps.name = "main";
    ps.count = static_cast<std::int32_t>(s.w->pods);
    ps.requests = {{pool.resource, s.w->gpus}};
    spec.pod_sets.push_back(std::move(ps));
    s.id = core_->submit(std::move(spec), now);
    if (!s.submitted) ++quotas_[at(s.quota)].workloads;
    s.submitted = true;
    sim_by_id_[s.id] = static_cast<int>(&s - sims_.data());
    set_state(s, State::Pending);
  }

  void finish(Sim& s, VirtualTime now) {
    if (s.state != State::Running) return;
    set_state(s, State::Finished);
    ++s.version;
    s.outcome.finished = now;
    end_in_core(s, now);
    ledger_usage(s, bank::LedgerKind::UsageEnded, now, "Finished");
    pools_[at(quotas_[at(s.quota)].pool)].ended[s.key] = "Finished";
    Event e = workload_event(s, now, "Finished", "Succeeded", "Workload " + s.key + " finished after " +
                                                                   std::to_string(s.w->run_time.milliseconds() / 1000) +
                                                                   " s of work");
    e.numbers = {{"gpus", s.gpus}};
    event(std::move(e), false);
    if (s.reclaim >= 0) {
      auto& v = result_.reclaims[at(s.reclaim)].victims[at(s.victim)];
      v.finished = now;
      s.reclaim = s.victim = -1;
    }
  }

  // The core's workload is done with: finished, and forgotten, since the engine keeps its
  // own record of every workload and never reads the core's statuses. A long run would
  // otherwise keep every workload it ever submitted in the core.
  void end_in_core(const Sim& s, VirtualTime now) {
    core_->finish(s.id, now);
    if (auto forgotten = core_->forget(s.id); !forgotten) throw std::logic_error("twin run: " + forgotten.error());
  }

  // The workload is deleted (its owner cancelled it): pending ones leave the queue, running
  // ones release their GPUs.
  void remove(Sim& s, VirtualTime now) {
    if (s.state == State::Finished) return;
    const bool held = holds_gpus(s.state);
    if (s.submitted && s.state != State::Requeuing) end_in_core(s, now);
    set_state(s, State::Finished);
    s.deleted = true;
    ++s.version;
    if (held) {
      ledger_usage(s, bank::LedgerKind::UsageEnded, now, "Deleted");
      pools_[at(quotas_[at(s.quota)].pool)].ended[s.key] = "Deleted";
    }
    if (s.reclaim >= 0) {
      result_.reclaims[at(s.reclaim)].victims[at(s.victim)].finished = now;
      s.reclaim = s.victim = -1;
    }
    event(workload_event(s, now, "Deleted", "Deleted",
                         "Workload " + s.key + " was deleted while " + std::string(held ? "running" : "pending")),
          false);
  }

  void checkpoint_done(Sim& s, VirtualTime now) {
    if (s.reclaim < 0) return;
    auto& v = result_.reclaims[at(s.reclaim)].victims[at(s.victim)];
    if (s.w->checkpoint_fails) {
      v.checkpoint_failed = now;
      ++result_.checkpoints_failed;
      Event e = workload_event(s, now, "CheckpointFailed", "CheckpointFailed",
                               "The checkpoint of " + s.key + " failed; it is stopped when the grace period ends");
      e.related = {"BusinessGroup/" + result_.reclaims[at(s.reclaim)].lender};
      event(std::move(e));
      return;
    }
    v.checkpoint_completed = now;
    ++result_.checkpoints_ok;
    s.checkpoint_saved = true;
    Event e = workload_event(s, now, "CheckpointCompleted", "CheckpointCompleted",
                             "Workload " + s.key + " saved a checkpoint at " + std::to_string(s.frozen_progress / 1000) +
                                 " s of progress");
    e.numbers = {{"progressSeconds", s.frozen_progress / 1000}};
    event(std::move(e));
    stop_victim(s, now, "checkpoint saved");
  }

  void grace_end(Sim& s, VirtualTime now) {
    if (s.reclaim < 0) return;
    auto& v = result_.reclaims[at(s.reclaim)].victims[at(s.victim)];
    if (s.w->checkpointable && !v.checkpoint_completed && !v.checkpoint_failed) {
      v.checkpoint_failed = now;
      ++result_.checkpoints_failed;
      Event e = workload_event(s, now, "CheckpointFailed", "GracePeriodExpired",
                               "The checkpoint of " + s.key + " did not complete within the grace period");
      event(std::move(e));
    }
    stop_victim(s, now, "grace period expired");
  }

  // Stops a reclaim victim: evicted and released at once, then requeued after a backoff.
  // The backoff is Kueue's requeuingStrategy for evicted workloads (60 s doubling per
  // eviction, at most an hour, without the jitter): without it a victim requeued at once
  // can take the capacity back by borrowing from another lender, whose reclaim stops it
  // again, and two lenders would take turns forever within one instant.
  void stop_victim(Sim& s, VirtualTime now, const std::string& why) {
    ReclaimTimeline& r = result_.reclaims[at(s.reclaim)];
    VictimTimeline& v = r.victims[at(s.victim)];
    const std::int64_t p = progress(s, now);
    const std::int64_t kept = s.checkpoint_saved ? s.frozen_progress : last_periodic(s, p);
    const std::int64_t loss = (p - kept) * s.gpus;
    const std::int64_t backoff = std::min<std::int64_t>(kRequeueBackoffMs << std::min(s.outcome.stops, 6), kRequeueBackoffMaxMs);
    const std::string message = "Stopped to return " + std::to_string(s.gpus) + " GPUs lent by " + r.lender + " in pool " +
                                r.pool + " (" + why + "); resumes from " + std::to_string(kept / 1000) +
                                " s of progress, requeued in " + std::to_string(backoff / 1000) + " s";
    auto evicted = core_->evict(s.id, std::string(kReclaimReason), message, now);
    if (!evicted) throw std::logic_error("twin run: " + evicted.error());
    core_->release_evicted(s.id, now);
    end_in_core(s, now);  // out of the queue until the backoff ends (then submitted anew)
    v.stopped = now;
    v.loss_gpu_ms = loss;
    requeue(s, now, kept, loss);
    set_state(s, State::Requeuing);
    schedule(now + backoff, Timer::Kind::Resubmit, static_cast<int>(&s - sims_.data()));
    ledger_usage(s, bank::LedgerKind::UsageEnded, now, "Reclaimed");
    pools_[at(quotas_[at(s.quota)].pool)].ended[s.key] = "Reclaimed";
    Event e = workload_event(s, now, "ReclaimVictimStopped", std::string(kReclaimReason), message);
    e.numbers = {{"gpus", s.gpus}, {"resumeFromSeconds", kept / 1000}, {"recomputeLossGpuHours", gpu_hours(loss)},
                 {"requeueBackoffSeconds", backoff / 1000}};
    e.related = {"BusinessGroup/" + r.lender};
    event(std::move(e));
    s.reclaim = s.victim = -1;
    core_changed_ = true;
  }

  // ---- waitForPodsReady (pods_ready.hpp) ------------------------------------------------------

  // Admitted (or back to Placing after its pods failed: `recovery`): its pods must be ready
  // within the timeout, else Kueue evicts it.
  void arm_pods_ready(Sim& s, int index, VirtualTime now, bool recovery) {
    disarm_pods_ready(s, index);
    if (!cluster_ || !options_.wait_for_pods_ready) return;
    const WaitForPodsReady& config = *options_.wait_for_pods_ready;
    const std::int64_t timeout = recovery ? config.recovery_ms() : config.timeout_ms;
    if (timeout <= 0) return;
    s.pods_ready_deadline = now + timeout;
    pods_ready_deadlines_.insert({now + timeout, index});
  }
  void disarm_pods_ready(Sim& s, int index) {
    if (!s.pods_ready_deadline) return;
    pods_ready_deadlines_.erase({*s.pods_ready_deadline, index});
    s.pods_ready_deadline.reset();
  }

  // The deadline passed with its pods not all ready (Placing or Starting): evicted with
  // reason PodsReadyTimeout, its quota released, and requeued after Kueue's backoff, or
  // deactivated once it was requeued backoffLimitCount times.
  void pods_ready_timeout(Sim& s, int index, VirtualTime now) {
    disarm_pods_ready(s, index);
    const WaitForPodsReady& config = *options_.wait_for_pods_ready;
    const PodsReadyEviction d = on_pods_ready_timeout(config, s.pods_ready_requeues);
    const bool placed = s.state == State::Starting;
    const std::string message =
        "Exceeded the PodsReady timeout " + s.key + ": its pods were " + (placed ? "placed but not ready" : "not placed") +
        " in time; " +
        (d.deactivate ? "deactivated (RequeuingLimitExceeded): it was requeued " + std::to_string(d.requeue_count) +
                            " times, the backoffLimitCount, and releases its " + std::to_string(s.gpus) + " GPUs of quota"
                      : "it releases its " + std::to_string(s.gpus) + " GPUs of quota and queues again in " +
                            std::to_string(d.backoff_ms / 1000) + " s (requeue " + std::to_string(d.requeue_count) + ")");
    auto evicted = core_->evict(s.id, "PodsReadyTimeout", message, now);
    if (!evicted) throw std::logic_error("twin run: " + evicted.error());
    core_->release_evicted(s.id, now);
    end_in_core(s, now);
    requeue(s, now, s.base, 0);  // nothing ran since its last start: no work is lost
    s.pods_ready_requeues = d.requeue_count;
    ledger_usage(s, bank::LedgerKind::UsageEnded, now, "PodsReadyTimeout");
    pools_[at(quotas_[at(s.quota)].pool)].ended[s.key] = "PodsReadyTimeout";
    Event e = workload_event(s, now, d.deactivate ? "Deactivated" : "Evicted",
                             d.deactivate ? "RequeuingLimitExceeded" : "PodsReadyTimeout", message);
    e.numbers = {{"gpus", s.gpus}, {"requeueCount", d.requeue_count}, {"requeueBackoffSeconds", d.backoff_ms / 1000}};
    if (d.deactivate) {
      set_state(s, State::Finished);
      s.deactivated = true;
    } else {
      set_state(s, State::Requeuing);
      s.queue_since = config.timestamp == WaitForPodsReady::RequeueTimestamp::Creation ? s.created_at : now;
      schedule(now + d.backoff_ms, Timer::Kind::Resubmit, index);
    }
    event(std::move(e), false);  // Kueue's decision, not the bank's
    core_changed_ = true;
  }

  void requeue(Sim& s, VirtualTime, std::int64_t kept, std::int64_t loss) {
    set_state(s, State::Pending);
    s.base = kept;
    s.frozen = false;
    s.checkpoint_saved = false;
    ++s.version;
    ++s.outcome.stops;
    s.outcome.loss_gpu_ms += loss;
    s.pending_reason.clear();
    result_.recompute_loss_gpu_ms += loss;
  }

  // ---- cycles -----------------------------------------------------------------------------------

  Sim& sim_of(WorkloadId id) { return sims_[at(sim_by_id_.at(id))]; }

  void cycles(VirtualTime now) {
    // As `twin admit` does: until no head is active, or cycles stop changing anything (a
    // quiet cycle can still rotate a BestEffortFIFO queue, so quiet must outlast the queues).
    std::int64_t quiet = 0;
    for (int guard = 0; core_->has_active_heads(); ++guard) {
      if (guard >= kMaxCyclesPerRound) throw std::logic_error("twin run: admission did not settle");
      if (quiet > 0) {
        if (quiet > pending_count_) break;
      }
      const CycleResult& r = cycle_result_;
      core_->run_cycle(now, cycle_result_);
      for (const auto& d : r.decisions) decision(d, now);
      quiet = r.decisions.empty() && r.evicted.empty() ? quiet + 1 : 0;
    }
  }

  void decision(const Decision& d, VirtualTime now) {
    const int index = sim_by_id_.at(d.workload);
    Sim& s = sims_[at(index)];
    switch (d.kind) {
      case Decision::Kind::Admitted: {
        if (refuse_borrowing(s, index, now)) break;
        s.admitted_at = now;
        s.admission_seq = ++admissions_;
        ++s.outcome.admissions;
        if (!s.outcome.first_admitted) {
          s.outcome.first_admitted = now;
          Quota& wq = quotas_[at(s.quota)];
          ++wq.admitted;
          wq.waits_ms.push_back(now - s.w->arrival_time.milliseconds());
        }
        s.pending_reason.clear();
        ++s.version;
        const Quota& q = quotas_[at(s.quota)];
        const auto figures = core_->figures(q.cq, pools_[at(q.pool)].flavor, pools_[at(q.pool)].resource);
        Event e = workload_event(s, now, "Admitted", "Admitted", d.message);
        e.numbers = {{"gpus", s.gpus}, {"guaranteed", q.guaranteed}, {"usedAfter", figures ? figures->usage : 0}};
        event(std::move(e), false);
        ledger_usage(s, bank::LedgerKind::UsageStarted, now, "Admitted");
        if (s.outcome.stops > 0) {
          Event r = workload_event(s, now, "Resumed", "Resumed",
                                   s.base > 0 ? "Workload " + s.key + " resumes from its checkpoint at " +
                                                    std::to_string(s.base / 1000) + " s of progress"
                                              : "Workload " + s.key + " starts over: it had no checkpoint");
          r.numbers = {{"resumeFromSeconds", s.base / 1000}};
          event(std::move(r));
        }
        set_state(s, State::Placing);
        s.unschedulable_said = false;
        arm_pods_ready(s, index, now, false);
        try_place(s, index, now);
        break;
      }
      case Decision::Kind::Pending:
      case Decision::Kind::PreemptionIssued: {
        const std::string reason = d.kind == Decision::Kind::PreemptionIssued ? "WaitingForPreemptedWorkloads" : d.reason;
        if (s.pending_reason == reason) break;
        s.pending_reason = reason;
        Event e = workload_event(s, now, "Pending", reason, d.message);
        event(std::move(e), false);
        break;
      }
      case Decision::Kind::Preempted: {
        // Kueue's own preemption: the pods are gone at once and the victim is requeued.
        const std::int64_t p = progress(s, now);
        const std::int64_t kept = last_periodic(s, p);
        const std::int64_t loss = (p - kept) * s.gpus;
        if (s.reclaim >= 0) {
          auto& v = result_.reclaims[at(s.reclaim)].victims[at(s.victim)];
          v.stopped = now;
          v.loss_gpu_ms = loss;
          s.reclaim = s.victim = -1;
        }
        core_->release_evicted(s.id, now);
        requeue(s, now, kept, loss);
        ledger_usage(s, bank::LedgerKind::UsageEnded, now, "Preempted");
        pools_[at(quotas_[at(s.quota)].pool)].ended[s.key] = "Preempted";
        Event e = workload_event(s, now, "Preempted", d.reason, d.message);
        e.numbers = {{"gpus", s.gpus}, {"recomputeLossGpuHours", gpu_hours(loss)}};
        for (WorkloadId r : d.related) e.related.push_back("Workload/" + sim_of(r).key);
        event(std::move(e), false);
        break;
      }
    }
  }

  // ---- placement ----------------------------------------------------------------------------

  // The pods go onto nodes: always without a cluster; with one, when the whole shape fits.
  bool try_place(Sim& s, int index, VirtualTime now) {
    if (cluster_) {
      const cluster::PlacementRequest request = placement_request(s);
      const auto placement = cluster_->find(request);
      if (!placement) {
        placing_.insert({s.admission_seq, index});
        if (!s.unschedulable_said) {
          s.unschedulable_said = true;
          const cluster::Explanation why = cluster_->explain(request);
          const std::string reason = why.nodes_matching == 0                       ? "NoMatchingNodes"
                                     : why.free_units >= s.w->pods * s.w->gpus ? "FragmentedCapacity"
                                                                                   : "InsufficientGPUs";
          Event e = workload_event(s, now, "Unschedulable", reason,
                                   "Workload " + s.key + " holds its quota but its pods do not fit: " + why.message);
          e.numbers = {{"gpus", s.gpus},         {"nodesMatching", why.nodes_matching},
                       {"freeGpus", why.free_units}, {"mostFreeOnOneNode", why.most_free_on_one_node},
                       {"podsThatFit", why.pods_that_fit}};
          event(std::move(e), false);
        }
        return false;
      }
      if (auto bound = cluster_->bind(s.key, *placement); !bound) throw std::logic_error("twin run: " + bound.error());
      allocation_changes(placed_milli(s));
      Event e = workload_event(s, now, "Placed", "Scheduled",
                               "Workload " + s.key + ": " + std::to_string(s.w->pods) + " pod(s) of " +
                                   std::to_string(s.w->gpus) + " GPU(s) on " + placement_nodes(*placement));
      e.numbers = {{"gpus", s.gpus}, {"nodes", static_cast<std::int64_t>(placement->pods.size())}};
      event(std::move(e), false);
    }
    if (s.w->startup_time.milliseconds() > 0) {
      set_state(s, State::Starting);
      schedule(now + s.w->startup_time.milliseconds(), Timer::Kind::Started, index);
    } else {
      set_state(s, State::Running);
      s.running_since = now;
      schedule_finish(s, index, now);
    }
    return true;
  }

  // Thousandths of a unit the workload holds once placed.
  static std::int64_t placed_milli(const Sim& s) {
    return s.w->pods * (s.w->gpu_milli > 0 ? s.w->gpu_milli : s.w->gpus * cluster::kMilliPerGpu);
  }
  void allocation_changes(std::int64_t delta_milli) {
    result_.cluster.allocated_milli_ms += allocated_milli_ * (now_ - allocated_since_);
    allocated_since_ = now_;
    allocated_milli_ += delta_milli;
  }

  // Free units against the shapes waiting now (pending in a queue or admitted and not
  // placed), one request per distinct shape.
  void sample_fragmentation() {
    std::map<std::tuple<int, std::int64_t, std::int64_t, std::int64_t, std::vector<std::string>>, cluster::PlacementRequest> shapes;
    auto add = [&](int index) {
      const Sim& s = sims_[at(index)];
      const auto key = std::make_tuple(quotas_[at(s.quota)].pool, s.w->pods, s.w->gpus, s.w->gpu_milli, s.w->gpu_models);
      if (!shapes.contains(key)) shapes.emplace(key, placement_request(s));
    };
    for (const auto& q : quotas_) {
      for (int i : q.pending) add(i);
    }
    for (const auto& [seq, i] : placing_) add(i);
    std::vector<cluster::PlacementRequest> requests;
    requests.reserve(shapes.size());
    for (auto& [key, r] : shapes) requests.push_back(std::move(r));
    const auto report = cluster_->fragmentation(requests);
    ++result_.cluster.samples;
    result_.cluster.stranded_unit_samples += report.total.stranded;
    result_.cluster.free_unit_samples += report.total.free;
  }

  std::string placement_nodes(const cluster::Placement& p) const {
    std::string out;
    for (const auto& pod : p.pods) {
      const std::string& name = cluster_->node(pod.node).name;
      if (out.find(name) == std::string::npos) out += (out.empty() ? "" : ", ") + name;
    }
    return out;
  }

  cluster::PlacementRequest placement_request(const Sim& s) const {
    const Quota& q = quotas_[at(s.quota)];
    const policy::Pool* pool = pools_[at(q.pool)].pool;
    cluster::PlacementRequest r;
    r.workload = s.key;
    r.pods = static_cast<int>(s.w->pods);
    r.gpus_per_pod = static_cast<int>(s.w->gpus);
    r.gpu_milli = static_cast<int>(s.w->gpu_milli);
    r.node_selector = pool->node_labels;
    // What Kueue injects from the pool's ResourceFlavor (nodeLabels, tolerations).
    for (const auto& t : pool->taints) {
      cluster::Toleration tol;
      tol.key = t.key;
      tol.value = t.value;
      tol.op = cluster::TolerationOperator::Equal;
      tol.effect = static_cast<cluster::TaintEffect>(static_cast<int>(t.effect));
      r.tolerations.push_back(std::move(tol));
    }
    r.gpu_models = s.w->gpu_models;
    return r;
  }

  // A GPU reports an XID error (or recovers). The workloads on it lose their pods: as a Job
  // controller would, they get new pods, so they keep their quota (Kueue does not
  // re-admit), go back to Placing and restart from their last checkpoint. A reclaim victim
  // under notice is simply stopped.
  Expected<bool> gpu_health(const std::string& uuid, bool healthy, int xid, VirtualTime now, const std::string& actor,
                            std::int64_t ecc_double_bit = 0) {
    if (!cluster_) return Unexpected{std::string("no cluster: the run has no inventory")};
    const auto gpu = cluster_->find_gpu(uuid);
    if (!gpu) return Unexpected{"no GPU " + uuid};
    if (ecc_double_bit > 0) {
      if (auto counted = cluster_->add_ecc_errors(uuid, ecc_double_bit); !counted) return counted;
    }
    const bool was_healthy = cluster_->gpu(*gpu).healthy;
    auto affected = cluster_->set_gpu_health(uuid, healthy, healthy ? 0 : xid);
    if (!affected) return Unexpected{affected.error()};
    if (was_healthy == healthy && healthy) return true;
    const cluster::NodeSpec& node = cluster_->node(cluster_->gpu(*gpu).node);
    Event g;
    g.t = now;
    g.kind = healthy ? "GpuHealthy" : "GpuUnhealthy";
    g.object = "GPU/" + uuid;
    g.pool = std::string(node.pool());
    g.reason = healthy ? "Recovered" : "XidError";
    g.message = healthy ? "GPU " + std::to_string(cluster_->gpu(*gpu).index) + " of " + node.name + " is healthy again"
                        : "GPU " + std::to_string(cluster_->gpu(*gpu).index) + " of " + node.name + " reported XID " +
                              std::to_string(xid) + "; " + std::to_string(affected->size()) + " workload(s) on it lose their pods";
    g.numbers = {{"xid", healthy ? 0 : xid}, {"eccDoubleBit", ecc_double_bit},
                 {"workloads", static_cast<std::int64_t>(affected->size())}};
    for (const auto& key : *affected) g.related.push_back("Workload/" + key);
    actor_ = actor;
    event(std::move(g));
    actor_.clear();
    if (healthy) {
      cluster_freed_ = true;
      return true;
    }
    for (const auto& key : *affected) {
      const auto it = sim_index_.find(key);
      if (it == sim_index_.end()) continue;
      Sim& s = sims_[at(it->second)];
      if (!holds_gpus(s.state)) continue;
      if (s.reclaim >= 0) {
        stop_victim(s, now, "its GPU failed");
        continue;
      }
      const std::int64_t p = progress(s, now);
      const std::int64_t kept = last_periodic(s, p);
      const std::int64_t loss = (p - kept) * s.gpus;
      if (cluster_->placement_of(s.key) != nullptr) {
        allocation_changes(-placed_milli(s));
        if (auto released = cluster_->release(s.key); !released) throw std::logic_error("twin run: " + released.error());
        cluster_freed_ = true;
      }
      s.base = kept;
      s.frozen = false;
      ++s.version;  // its Started / Finish timers no longer hold
      ++s.outcome.stops;
      s.outcome.loss_gpu_ms += loss;
      result_.recompute_loss_gpu_ms += loss;
      Event e = workload_event(s, now, "Failed", "GpuXidError",
                               "The pods of " + s.key + " failed with XID " + std::to_string(xid) + " on " + node.name +
                                   ": new pods restart from " + std::to_string(kept / 1000) +
                                   " s of progress once the shape fits on healthy GPUs");
      e.numbers = {{"gpus", s.gpus}, {"xid", xid}, {"recomputeLossGpuHours", gpu_hours(loss)}};
      e.related = {"GPU/" + uuid};
      event(std::move(e), false);
      set_state(s, State::Placing);
      s.unschedulable_said = false;
      arm_pods_ready(s, it->second, now, true);
      try_place(s, it->second, now);
    }
    return true;
  }

 public:
  // The same, from outside between instants (`gpubank up`'s API): applied at now(), then
  // the instant settles as any other.
  Expected<bool> set_gpu_health(const std::string& uuid, bool healthy, int xid, const std::string& actor,
                                std::int64_t ecc_double_bit = 0) {
    if (!started_ || !ok_) return Unexpected{std::string("the run is not going")};
    auto done = gpu_health(uuid, healthy, xid, now_, actor, ecc_double_bit);
    if (!done) return done;
    settle(now_);
    if (!flush()) return Unexpected{std::string("the run stopped: its entries could not be persisted")};
    return true;
  }

 
  // A workload that arrives now (a controller creates it: an inference replica). Checked
  // as a scenario's workloads are; its name must be new. Returns its key.
  Expected<std::string> submit_now(ScenarioWorkload w, const std::string& actor) {
    if (!started_ || !ok_) return Unexpected{std::string("the run is not going")};
    added_.push_back(std::move(w));
    ScenarioWorkload& stored = added_.back();
    stored.arrival_time = Duration(std::chrono::milliseconds(now_));
    Diagnostics problems;
    auto sim = make_sim(stored, "workload", problems);
    if (!sim) {
      added_.pop_back();
      return Unexpected{problems.front().path + ": " + problems.front().message};
    }
    if (sim_index_.contains(sim->key)) {
      added_.pop_back();
      return Unexpected{"workload " + sim->key + " exists already"};
    }
    const int index = static_cast<int>(sims_.size());
    sim_index_.emplace(sim->key, index);
    sims_.push_back(std::move(*sim));
    const std::string key = sims_.back().key;
    actor_ = actor;
    submit(sims_.back(), now_);
    actor_.clear();
    if (stored.delete_time) schedule(std::max(now_, stored.delete_time->milliseconds()), Timer::Kind::Delete, index);
    if (auto settled = settle_now(); !settled) return Unexpected{settled.error()};
    return key;
  }

  // Deletes a workload now, as its owner (or a controller scaling in) would.
  Expected<bool> delete_now(const std::string& key, const std::string& actor) {
    if (!started_ || !ok_) return Unexpected{std::string("the run is not going")};
    const auto it = sim_index_.find(key);
    if (it == sim_index_.end()) return Unexpected{"no workload " + key};
    Sim& s = sims_[at(it->second)];
    if (s.state == State::Finished) return false;
    actor_ = actor;
    if (s.state == State::Waiting) {  // not arrived yet: it never will
      s.state = State::Finished;
      s.deleted = true;
      ++s.version;
    } else {
      remove(s, now_);
    }
    actor_.clear();
    if (auto settled = settle_now(); !settled) return Unexpected{settled.error()};
    return true;
  }

  // Planned demand of a lender (see Quota::reserved); 0 withdraws it. The reclaims it
  // starts give their victims `grace` (unset: the quota's reclaimPolicy grace).
  Expected<bool> reserve(const std::string& group, const std::string& pool, std::int64_t gpus,
                         std::optional<std::int64_t> grace_ms, const std::string& reason, const std::string& actor) {
    if (!started_ || !ok_) return Unexpected{std::string("the run is not going")};
    const auto it = quota_index_.find({group, pool});
    if (it == quota_index_.end()) return Unexpected{"no GPUQuotaPolicy gives " + group + " quota in " + pool};
    if (gpus < 0) return Unexpected{std::string("a reservation is at least 0 GPUs")};
    Quota& q = quotas_[at(it->second)];
    if (q.reserved == gpus && q.reserve_grace_ms == grace_ms) return false;
    const std::int64_t before = q.reserved;
    q.reserved = gpus;
    q.reserve_grace_ms = grace_ms;
    q.reserve_reason = reason;
    pools_[at(q.pool)].touch();
    Event e = lender_event(group, pool, q.cq, now_, "CapacityReserved", gpus > 0 ? "Reserved" : "Released",
                           group + " reserves " + std::to_string(gpus) + " of its " + std::to_string(q.guaranteed) +
                               " guaranteed GPUs in " + pool + " (was " + std::to_string(before) + "): " + reason);
    e.numbers = {{"reserved", gpus}, {"before", before}, {"guaranteed", q.guaranteed}, {"used", q.used}};
    if (grace_ms) e.numbers["graceSeconds"] = *grace_ms / 1000;
    actor_ = actor;
    event(std::move(e));
    actor_.clear();
    sync_quotas();
    if (auto settled = settle_now(); !settled) return Unexpected{settled.error()};
    return true;
  }

  // Caps a group's borrowing in a pool below its rendered borrowingLimit (unset: lifts the
  // cap). Like a lowered ClusterQueue borrowingLimit in Kueue it stops new borrowing above
  // the cap and evicts nobody.
  Expected<bool> cap_borrowing(const std::string& group, const std::string& pool, std::optional<std::int64_t> cap,
                               const std::string& reason, const std::string& actor) {
    if (!started_ || !ok_) return Unexpected{std::string("the run is not going")};
    const auto it = quota_index_.find({group, pool});
    if (it == quota_index_.end()) return Unexpected{"no GPUQuotaPolicy gives " + group + " quota in " + pool};
    if (cap && *cap < 0) return Unexpected{std::string("a borrowing cap is at least 0 GPUs")};
    Quota& q = quotas_[at(it->second)];
    if (q.borrow_cap == cap) return false;
    q.borrow_cap = cap;
    const std::int64_t borrowed = std::max<std::int64_t>(0, q.used - q.guaranteed);
    Event e = lender_event(group, pool, q.cq, now_, "BorrowingCapped", cap ? "Capped" : "Uncapped",
                           cap ? group + " may borrow at most " + std::to_string(*cap) + " GPUs in " + pool + " (borrows " +
                                     std::to_string(borrowed) + " now): " + reason
                               : group + "'s borrowing in " + pool + " is back to its quota's limit: " + reason);
    e.numbers = {{"borrowed", borrowed}};
    if (cap) e.numbers["cap"] = *cap;
    if (q.borrowing_limit) e.numbers["borrowingLimit"] = *q.borrowing_limit;
    actor_ = actor;
    event(std::move(e));
    actor_.clear();
    sync_quotas();
    if (auto settled = settle_now(); !settled) return Unexpected{settled.error()};
    return true;
  }

  // A controller's own decision, logged (and audited with `actor`) now, in order with the
  // run's events.
  Expected<bool> record_now(Event e, const std::string& actor) {
    if (!started_ || !ok_) return Unexpected{std::string("the run is not going")};
    e.t = now_;
    actor_ = actor;
    event(std::move(e));
    actor_.clear();
    if (!flush()) return Unexpected{std::string("the run stopped: its entries could not be persisted")};
    return true;
  }

 private:
  Expected<bool> settle_now() {
    settle(now_);
    if (!flush()) return Unexpected{std::string("the run stopped: its entries could not be persisted")};
    return true;
  }

  // GPUs came free: the waiting workloads try again, in admission order.
  void place_waiting(VirtualTime now) {
    if (!cluster_freed_ || placing_.empty()) {
      cluster_freed_ = false;
      return;
    }
    cluster_freed_ = false;
    const auto waiting = std::vector<std::pair<std::int64_t, int>>(placing_.begin(), placing_.end());
    for (const auto& [seq, index] : waiting) {
      Sim& s = sims_[at(index)];
      if (s.state != State::Placing) continue;
      placing_.erase({seq, index});
      try_place(s, index, now);
    }
  }

  // ---- attribution ------------------------------------------------------------------------------

  void attribute(VirtualTime now) {
    for (auto& pool : pools_) {
      if (!pool.attribution_dirty) continue;
      pool.attribution_dirty = false;
      // Borrow records exist only for usage above a guarantee: with nobody above theirs and
      // no record open, there is nothing to attribute (and no O(running) walk per instant).
      bool above = false;
      for (int qi : pool.quotas) above = above || quotas_[at(qi)].used > quotas_[at(qi)].guaranteed;
      if (!above && pool.tracker->open().empty()) {
        pool.ended.clear();
        continue;
      }
      const auto changes = pool.tracker->update(now, attribution_quotas(pool), attribution_running(pool), pool.ended);
      pool.ended.clear();
      if (!changes.empty()) pool.reclaim_dirty = true;
      for (const auto& c : changes) borrow_change(pool, c, now);
    }
  }

  [[nodiscard]] std::vector<bank::PoolGroupQuota> attribution_quotas(const Pool& pool) const {
    std::vector<bank::PoolGroupQuota> quotas;
    for (int qi : pool.quotas) {
      const Quota& q = quotas_[at(qi)];
      quotas.push_back(bank::PoolGroupQuota{q.group, q.guaranteed, q.lending_limit, q.lend_only_to});
    }
    return quotas;
  }

  [[nodiscard]] std::vector<bank::RunningWorkload> attribution_running(const Pool& pool) const {
    std::vector<bank::RunningWorkload> running;
    for (int i : pool.holding) {
      const Sim& s = sims_[at(i)];
      running.push_back(bank::RunningWorkload{s.key, s.w->business_group, s.gpus, s.admission_seq, traits_of(s)});
    }
    return running;
  }

  // The bank's admission check for reclaimPolicy.onlyPreempt (docs/bank.md): what a
  // workload Kueue admitted uses above its group's guarantee must be lent by groups whose
  // traits it carries. Kueue pools lendable quota, so it may have admitted the workload on
  // the idle guarantee of a lender that turns it away; then the attribution finds it no
  // lender (it would run on `cohort:<pool>`) although that lender has idle GPUs. Such an
  // admission is refused as Kueue does on an AdmissionCheck's Retry: the quota is released
  // and the workload queues again after a backoff. True when refused.
  bool refuse_borrowing(Sim& s, int index, VirtualTime now) {
    const Quota& q = quotas_[at(s.quota)];
    if (q.used + s.gpus <= q.guaranteed) return false;  // within its guarantee: borrows nothing
    Pool& pool = pools_[at(q.pool)];
    const std::vector<std::string> traits = traits_of(s);
    std::vector<const Quota*> turning_away;
    for (int qi : pool.quotas) {
      const Quota& l = quotas_[at(qi)];
      if (l.group != q.group && !bank::lends_to(l.lend_only_to, traits)) turning_away.push_back(&l);
    }
    if (turning_away.empty()) return false;
    bank::BorrowTracker trial = *pool.tracker;
    std::vector<bank::RunningWorkload> running = attribution_running(pool);
    running.push_back(bank::RunningWorkload{s.key, s.w->business_group, s.gpus, admissions_ + 1, traits});
    trial.update(now, attribution_quotas(pool), running, pool.ended);
    const std::string cohort = bank::cohort_lender(q.pool_name);
    std::int64_t unlent = 0;
    for (const auto& r : trial.open()) unlent += r.workload == s.key && r.lender == cohort ? r.gpus : 0;
    if (unlent == 0) return false;
    std::string idle_lenders;
    for (const Quota* l : turning_away) {
      std::int64_t lendable = std::max<std::int64_t>(0, l->guaranteed - l->used);
      if (l->lending_limit) lendable = std::min(lendable, *l->lending_limit);
      if (lendable - trial.lent_by(l->group) > 0) idle_lenders += (idle_lenders.empty() ? "" : ", ") + l->group;
    }
    if (idle_lenders.empty()) return false;  // over-committed for another reason: not the traits
    const std::int64_t backoff = std::min<std::int64_t>(kRequeueBackoffMs << std::min(s.refusals, 6), kRequeueBackoffMaxMs);
    ++s.refusals;
    const std::string message = s.key + " would borrow " + std::to_string(unlent) + " GPUs in " + q.pool_name +
                                " that only " + idle_lenders + " could lend, and they lend only to work with their " +
                                "reclaimPolicy.onlyPreempt traits; requeued in " + std::to_string(backoff / 1000) + " s";
    auto evicted = core_->evict(s.id, "AdmissionCheck", message, now);
    if (!evicted) throw std::logic_error("twin run: " + evicted.error());
    core_->release_evicted(s.id, now);
    end_in_core(s, now);
    ++s.version;
    s.pending_reason.clear();
    set_state(s, State::Requeuing);
    schedule(now + backoff, Timer::Kind::Resubmit, index);
    Event e = workload_event(s, now, "BorrowRefused", "OnlyPreempt", message);
    e.numbers = {{"gpus", s.gpus}, {"unlent", unlent}, {"requeueBackoffSeconds", backoff / 1000}};
    for (const Quota* l : turning_away) e.related.push_back("BusinessGroup/" + l->group);
    event(std::move(e));
    core_changed_ = true;
    return true;
  }

  // A borrow record opened or closed: its ledger entry, its event, the pair's GPU time.
  void borrow_change(Pool& pool, const bank::BorrowChange& c, VirtualTime now) {
    const bool opened = c.kind == bank::BorrowChange::Kind::Opened;
    if (!opened) loan_closed(pool, c.record, now);
    bank::LedgerEntry e;
    e.time_ms = now;
    e.kind = opened ? bank::LedgerKind::BorrowOpened : bank::LedgerKind::BorrowClosed;
    e.pool = pool.pool->name;
    e.flavor = pool.flavor;
    e.business_group = c.record.borrower;
    e.lender = c.record.lender;
    e.workload = c.record.workload;
    e.record = c.record.id;
    e.gpus = c.record.gpus;
    e.reason = opened ? "" : c.close_reason;
    ledger(std::move(e));
    Event ev;
    ev.t = now;
    ev.kind = opened ? "BorrowStarted" : "BorrowEnded";
    ev.object = "Workload/" + c.record.workload;
    ev.business_group = c.record.borrower;
    ev.pool = pool.pool->name;
    ev.reason = opened ? "Borrowing" : c.close_reason;
    ev.message = opened ? c.record.workload + " borrows " + std::to_string(c.record.gpus) + " GPUs of " +
                              c.record.lender + "'s unused guarantee in " + pool.pool->name
                        : c.record.workload + " no longer borrows " + std::to_string(c.record.gpus) +
                              " GPUs from " + c.record.lender + " (" + c.close_reason + ")";
    ev.numbers = {{"gpus", c.record.gpus}, {"record", c.record.id}};
    if (!opened) ev.numbers["gpuHours"] = gpu_hours((now - c.record.start) * c.record.gpus);
    ev.related = {"BusinessGroup/" + c.record.lender};
    event(std::move(ev));
  }

  void loan_closed(const Pool& pool, const bank::Loan& record, VirtualTime now) {
    const std::int64_t gpu_ms = record.gpus * (now - record.start);
    for (int qi : pool.quotas) {
      Quota& q = quotas_[at(qi)];
      if (q.group == record.borrower) q.borrowed_gpu_ms += gpu_ms;
      if (q.group == record.lender) q.lent_gpu_ms += gpu_ms;
    }
  }

  // ---- reclaim ----------------------------------------------------------------------------------

  [[nodiscard]] std::int64_t used_by(int quota) const { return quotas_[at(quota)].used; }

  void reclaim(VirtualTime now) {
    std::vector<char> changed(pools_.size(), 0);
    for (std::size_t p = 0; p < pools_.size(); ++p) {
      changed[p] = pools_[p].reclaim_dirty ? 1 : 0;
      pools_[p].reclaim_dirty = false;
    }
    for (std::size_t qi = 0; qi < quotas_.size(); ++qi) {
      Quota& q = quotas_[qi];
      if ((!q.graceful && q.reserved == 0) || !changed[at(q.pool)]) continue;
      Pool& pool = pools_[at(q.pool)];
      const std::int64_t used = q.used;
      // Lender demand: pending workloads that fit within the guarantee, in queue order.
      std::vector<const Sim*> pending;
      for (int i : q.pending) pending.push_back(&sims_[at(i)]);
      std::sort(pending.begin(), pending.end(), [](const Sim* a, const Sim* b) {
        if (a->priority != b->priority) return a->priority > b->priority;
        return a->id < b->id;
      });
      std::int64_t demand = 0;
      for (const Sim* s : pending) {
        if (used + demand >= q.guaranteed) break;  // nothing more fits
        if (used + demand + s->gpus <= q.guaranteed) demand += s->gpus;
      }
      // A reservation is demand too: the part of it not yet in use by the group.
      const std::int64_t reserve_demand = std::max<std::int64_t>(0, std::min(q.reserved, q.guaranteed) - used);
      const bool reserving = reserve_demand > demand;
      demand = std::max(demand, reserve_demand);
      const auto figures = core_->figures(q.cq, pool.flavor, pool.resource);
      const std::int64_t available = figures ? figures->available : 0;
      int active = q.active_reclaim;
      if (demand == 0 || demand <= available) {
        blocked_.erase(qi);
        if (active >= 0) end_reclaim(active, now, demand == 0 ? "the lender no longer waits for capacity within its guarantee"
                                                              : "the lender's demand fits in what is free");
        continue;
      }
      std::int64_t in_flight = 0;
      if (active >= 0) {
        for (const auto& v : result_.reclaims[at(active)].victims) {
          if (!v.stopped && !v.finished && !v.released) in_flight += v.gpus;
        }
      }
      const std::int64_t need = demand - available - in_flight;
      if (need <= 0) continue;
      std::vector<bank::VictimCandidate> candidates;
      // Never taken: protected types, Protection leases, non-preemptible classes, and on
      // what this lender lent, work without its onlyPreempt traits (attribution never lends
      // it such work; what nobody guarantees is taken back whatever its traits).
      std::vector<std::string> shielded;
      const std::vector<std::string> any_trait;
      std::set<std::string> seen;
      // What this lender lent, then what nobody's guarantee covers (usage left above the
      // guarantees when a TemporaryQuota lease expired).
      auto records = pool.tracker->lent_records(q.group);
      for (const auto& r : pool.tracker->lent_records(bank::cohort_lender(q.pool_name))) records.push_back(r);
      for (const auto& record : records) {
        if (!seen.insert(record.workload).second) continue;
        const int si = sim_index_.at(record.workload);
        const Sim& s = sims_[at(si)];
        // Admitted and not on nodes yet (Placing) holds the lent quota as much as running
        // work does: a NotRunning victim, the first to go.
        if (s.reclaim >= 0 || !holds_gpus(s.state)) continue;
        bank::VictimFacts facts;
        facts.running = s.state == State::Running;
        facts.checkpointable = s.w->checkpointable;
        facts.development = s.w->workload_type == policy::WorkloadType::Notebook;
        facts.expected_runtime = s.w->run_time.milliseconds();
        bank::VictimCandidate c;
        c.workload = s.key;
        c.gpus = s.gpus;
        c.klass = bank::classify(facts);
        c.priority = s.priority;
        c.checkpoint_age = s.state == State::Running ? progress(s, now) - last_periodic(s, progress(s, now)) : 0;
        c.admitted_at = s.admission_seq;
        c.protected_ = s.protected_ || lease_protects(s);
        c.preemptible = s.preemptible;
        c.traits = traits_of(s);
        if (!bank::eligible_victim(c, record.lender == q.group ? q.lend_only_to : any_trait)) {
          shielded.push_back(c.workload);
          continue;
        }
        candidates.push_back(std::move(c));
      }
      const bank::VictimChoice choice = bank::choose_victims(std::move(candidates), need);
      if (choice.victims.empty()) {
        // Said once per demand: the lender waits and nothing may be taken back for it.
        if (active < 0 && blocked_[qi] != demand) {
          blocked_[qi] = demand;
          std::string who;
          for (const auto& w : shielded) who += (who.empty() ? "" : ", ") + w;
          Event e = lender_event(
              q.group, q.pool_name, q.cq, now, "ReclaimBlocked", shielded.empty() ? "NothingLent" : "BorrowersProtected",
              q.group + " needs " + std::to_string(need) + " more GPUs within its guarantee in " + q.pool_name +
                  (shielded.empty() ? (pool.tracker->lent_by(q.group) == 0
                                           ? "; none of its GPUs are lent out: they are in use by itself or over-committed"
                                           : "; the " + std::to_string(pool.tracker->lent_by(q.group)) +
                                                 " GPUs it lent are already being returned")
                                    : "; what it lent runs protected work (" + who +
                                          "): it waits until that ends or its protection expires"));
          e.numbers = {{"demand", demand}, {"available", available}, {"need", need},
                       {"lent", pool.tracker->lent_by(q.group)}};
          for (const auto& w : shielded) e.related.push_back("Workload/" + w);
          event(std::move(e));
        }
        continue;
      }
      blocked_.erase(qi);
      if (active < 0) {
        ReclaimTimeline r;
        r.id = "reclaim-" + std::to_string(result_.reclaims.size() + 1);
        r.lender = q.group;
        r.pool = q.pool_name;
        r.demand = demand;
        r.started = now;
        r.result = "InProgress";
        result_.reclaims.push_back(std::move(r));
        active = static_cast<int>(result_.reclaims.size()) - 1;
        q.active_reclaim = active;
        ++q.reclaims;
        pool.touch();
        Event e = lender_event(q.group, q.pool_name, q.cq, now, "ReclaimStarted", reserving ? "Reservation" : "LenderDemand",
                               q.group + " needs " + std::to_string(demand) + " GPUs within its guarantee of " +
                                   std::to_string(q.guaranteed) + " in " + q.pool_name + "; " + std::to_string(available) +
                                   " are free and " + std::to_string(pool.tracker->lent_by(q.group)) +
                                   " are lent out: reclaiming, no new borrowing in the pool until it is over" +
                                   (reserving ? " (reserved: " + q.reserve_reason + ")" : ""));
        e.numbers = {{"demand", demand}, {"available", available}, {"lent", pool.tracker->lent_by(q.group)},
                     {"guaranteed", q.guaranteed}, {"used", used}, {"reclaiming", choice.gpus},
                     {"shortfall", std::max<std::int64_t>(0, need - choice.gpus)}};
        e.related = {"ReclaimTimeline/" + result_.reclaims[at(active)].id};
        event(std::move(e));
      } else {
        result_.reclaims[at(active)].demand = std::max(result_.reclaims[at(active)].demand, demand);
      }
      for (const auto& v : choice.victims) notice(active, sim_index_.at(v.workload), v, now);
    }
    sync_quotas();
  }

  void notice(int reclaim_index, int index, const bank::VictimCandidate& candidate, VirtualTime now) {
    Sim& s = sims_[at(index)];
    ReclaimTimeline& r = result_.reclaims[at(reclaim_index)];
    const Quota& lender = quotas_[at(quota_index_.at({r.lender, r.pool}))];
    // A reservation's grace (the tidal policy's) applies while the lender reserves.
    const std::int64_t grace_ms = lender.reserved > 0 && lender.reserve_grace_ms ? *lender.reserve_grace_ms : lender.grace_ms;
    VictimTimeline v;
    v.workload = s.key;
    v.gpus = s.gpus;
    v.victim_class = std::string(bank::victim_class_name(candidate.klass));
    v.notice = now;
    r.victims.push_back(v);
    s.reclaim = reclaim_index;
    s.victim = static_cast<int>(r.victims.size()) - 1;
    touch_pool_of(s);
    Event e = workload_event(s, now, "ReclaimNoticeSent", "ReclaimNotice",
                             "Workload " + s.key + " runs on " + std::to_string(s.gpus) + " GPUs lent by " + r.lender +
                                 ", who needs them back: " + std::to_string(grace_ms / 1000) +
                                 " s of grace (class " + v.victim_class + ")");
    e.numbers = {{"gpus", s.gpus}, {"graceSeconds", grace_ms / 1000}};
    e.related = {"BusinessGroup/" + r.lender};
    event(std::move(e));
    if (s.state == State::Starting || s.state == State::Placing || grace_ms == 0) {
      stop_victim(s, now, s.state == State::Placing    ? "its pods were not placed yet"
                          : s.state == State::Starting ? "not running yet"
                                                       : "no grace period");
      return;
    }
    if (s.w->checkpointable) {
      s.frozen_progress = progress(s, now);
      s.frozen = true;
      ++s.version;  // its Finish no longer holds: progress stopped while it saves
      r.victims.back().checkpoint_requested = now;
      Event c = workload_event(s, now, "CheckpointRequested", "ReclaimNotice",
                               "Workload " + s.key + " is asked to checkpoint within " +
                                   std::to_string(grace_ms / 1000) + " s");
      c.numbers = {{"progressSeconds", s.frozen_progress / 1000},
                   {"checkpointDurationSeconds", s.w->checkpoint_duration.milliseconds() / 1000}};
      event(std::move(c));
      const VirtualTime done = now + s.w->checkpoint_duration.milliseconds();
      if (done < now + grace_ms) schedule(done, Timer::Kind::CheckpointDone, index);
    }
    schedule(now + grace_ms, Timer::Kind::GraceEnd, index);
  }

  void end_reclaim(int index, VirtualTime now, const std::string& why) {
    ReclaimTimeline& r = result_.reclaims[at(index)];
    bool any_stopped = false;  // or finished: either way GPUs came back
    for (auto& v : r.victims) {
      if (v.stopped || v.finished) any_stopped = true;
      if (v.stopped || v.finished || v.released) continue;
      v.released = now;
      Sim& s = sims_[at(sim_index_.at(v.workload))];
      if (s.frozen) {  // back to work from where it paused
        s.base = s.frozen_progress;
        s.frozen = false;
        s.running_since = now;
        ++s.version;
        schedule_finish(s, sim_index_.at(v.workload), now);
      }
      s.reclaim = s.victim = -1;
      touch_pool_of(s);
      Event e = workload_event(s, now, "ReclaimNoticeWithdrawn", "NoLongerNeeded",
                               "Workload " + s.key + " keeps running: " + why);
      e.related = {"BusinessGroup/" + r.lender};
      event(std::move(e));
    }
    r.ended = now;
    r.result = any_stopped ? "Completed" : "Cancelled";
    Quota& lender = quotas_[at(quota_index_.at({r.lender, r.pool}))];
    lender.active_reclaim = -1;
    pools_[at(lender.pool)].touch();
    Event e = lender_event(r.lender, r.pool, lender.cq, now, any_stopped ? "ReclaimCompleted" : "ReclaimCancelled",
                           any_stopped ? "CapacityReturned" : "DemandGone",
                           "Reclaim " + r.id + " for " + r.lender + " in " + r.pool + " is over after " +
                               std::to_string((now - r.started) / 1000) + " s: " + why);
    std::int64_t stopped = 0;
    for (const auto& v : r.victims) stopped += v.stopped ? v.gpus : 0;
    e.numbers = {{"durationSeconds", (now - r.started) / 1000}, {"gpusStopped", stopped},
                 {"victims", static_cast<std::int64_t>(r.victims.size())}};
    e.related = {"ReclaimTimeline/" + r.id};
    event(std::move(e));
  }

  // Pushes each queue's quota to the core when it changed: guarantees move with
  // TemporaryQuota leases, and while a pool has a reclaim in progress no queue but the
  // reclaiming lenders' may start new borrowing (borrowingLimit held at 0; running work
  // is not evicted by it, exactly as a lowered ClusterQueue limit in Kueue).
  void sync_quotas() {
    for (auto& pool : pools_) {
      std::set<std::string> reclaiming;
      for (int qi : pool.quotas) {
        if (quotas_[at(qi)].active_reclaim >= 0) reclaiming.insert(quotas_[at(qi)].group);
      }
      for (int qi : pool.quotas) {
        Quota& q = quotas_[at(qi)];
        ResourceQuota rq;
        rq.resource = pool.resource;
        rq.nominal = q.guaranteed;
        rq.lending_limit = q.lending_limit;
        rq.borrowing_limit = q.borrowing_limit;
        if (q.borrow_cap) rq.borrowing_limit = std::min(rq.borrowing_limit.value_or(*q.borrow_cap), *q.borrow_cap);
        if (!reclaiming.empty() && !reclaiming.contains(q.group)) rq.borrowing_limit = 0;
        // A reservation is not lent out (a controller lowers the lender's lendingLimit), or
        // what a reclaim freed would be borrowed again at once.
        if (q.reserved > 0) {
          const Amount lendable = std::max<Amount>(0, q.guaranteed - std::min(q.reserved, q.guaranteed));
          rq.lending_limit = std::min(rq.lending_limit.value_or(lendable), lendable);
        }
        if (q.applied && q.applied->nominal == rq.nominal && q.applied->borrowing_limit == rq.borrowing_limit &&
            q.applied->lending_limit == rq.lending_limit) {
          continue;
        }
        if (!q.applied && rq.nominal == q.spec->guaranteed && rq.borrowing_limit == q.borrowing_limit &&
            rq.lending_limit == q.lending_limit) {
          q.applied = rq;  // what the rendered ClusterQueue already says
          continue;
        }
        auto set = core_->set_quota(q.cq, pool.flavor, rq);
        if (!set) throw std::logic_error("twin run: " + set.error());
        q.applied = rq;
        core_changed_ = true;
        pool.touch();
      }
    }
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

  Event lease_event(const Lease& l, VirtualTime now, std::string kind, std::string reason, std::string message) {
    Event e;
    e.t = now;
    e.kind = std::move(kind);
    e.object = "CapacityLease/" + l.object->name();
    e.business_group = l.spec->business_group;
    e.pool = l.spec->resource_pool;
    e.queue = quotas_[at(l.quota)].cq;
    e.reason = std::move(reason);
    e.message = std::move(message);
    return e;
  }

  void lease_requested(int index, VirtualTime now) {
    const Lease& l = leases_[at(index)];
    Event e = lease_event(l, now, "LeaseRequested", l.spec->type == policy::LeaseType::Protection ? "Protection" : "TemporaryQuota",
                          l.decision->requested_by.username + " requests " + l.object->name() + ": " + l.spec->reason);
    e.numbers = {{"startMs", l.start}, {"endMs", l.end}};
    if (l.spec->extra_guaranteed) e.numbers["extraGuaranteed"] = *l.spec->extra_guaranteed;
    actor_ = "user:" + l.decision->requested_by.username;
    event(std::move(e));
    actor_.clear();
  }

  void lease_decided(int index, VirtualTime now) {
    Lease& l = leases_[at(index)];
    const auto& d = *l.decision;
    actor_ = "user:" + d.decided_by.username;
    auto reject = [&](std::string reason, std::string message, Json numbers = Json::object()) {
      Event e = lease_event(l, now, "LeaseRejected", std::move(reason), std::move(message));
      e.numbers = std::move(numbers);
      event(std::move(e));
      actor_.clear();
    };
    if (d.decision == LeaseDecision::Rejected) {
      return reject("RejectedByAdministrator", d.decided_by.username + " rejected " + l.object->name() +
                                                   (d.reason.empty() ? std::string() : ": " + d.reason));
    }
    if (!policy::is_platform_admin(policy::UserInfo{d.decided_by.username, d.decided_by.groups}, *guardrails_)) {
      return reject("NotAPlatformAdministrator",
                    d.decided_by.username + " is not a platform administrator; only they approve leases");
    }
    if (l.end <= now) return reject("AlreadyOver", l.object->name() + " ends before it could be approved");
    const std::int64_t max_ms = guardrails_->max_lease_duration.milliseconds();
    if (l.end - l.start > max_ms) {
      return reject("TooLong", l.object->name() + " lasts longer than the guardrails' maxLeaseDuration",
                    {{"durationMs", l.end - l.start}, {"maxMs", max_ms}});
    }
    if (l.spec->type == policy::LeaseType::TemporaryQuota) {
      const std::int64_t extra = l.spec->extra_guaranteed.value_or(0);
      const Quota& q = quotas_[at(l.quota)];
      const Pool& pool = pools_[at(q.pool)];
      std::int64_t guaranteed = 0;
      for (int qi : pool.quotas) guaranteed += quotas_[at(qi)].spec->guaranteed;
      for (const auto& other : leases_) {
        if (&other == &l || !other.approved || other.spec->type != policy::LeaseType::TemporaryQuota) continue;
        if (quotas_[at(other.quota)].pool != q.pool || other.end <= l.start || other.start >= l.end) continue;
        guaranteed += other.spec->extra_guaranteed.value_or(0);
      }
      const std::int64_t capacity = pool.pool->capacity;
      if (extra <= 0 || guaranteed + extra > capacity) {
        return reject("ExceedsPoolCapacity",
                      "guarantees in " + pool.pool->name + " would be " + std::to_string(guaranteed + extra) + " GPUs of " +
                          std::to_string(capacity) + " with " + l.object->name(),
                      {{"guaranteed", guaranteed}, {"extra", extra}, {"capacity", capacity}});
      }
    }
    l.approved = true;
    Event e = lease_event(l, now, "LeaseApproved", "Approved",
                          d.decided_by.username + " approved " + l.object->name() +
                              (d.reason.empty() ? std::string() : ": " + d.reason));
    e.numbers = {{"startMs", std::max(now, l.start)}, {"endMs", l.end}};
    event(std::move(e));
    actor_.clear();
    schedule_lease(std::max(now, l.start), Timer::Kind::LeaseActivate, index);
    schedule_lease(l.end, Timer::Kind::LeaseExpire, index);
  }

  void lease_change(int index, VirtualTime now, bool activate) {
    Lease& l = leases_[at(index)];
    if (l.active == activate) return;
    l.active = activate;
    Quota& q = quotas_[at(l.quota)];
    pools_[at(q.pool)].touch();
    const bool temporary = l.spec->type == policy::LeaseType::TemporaryQuota;
    if (temporary) {
      const std::int64_t extra = l.spec->extra_guaranteed.value_or(0);
      q.guaranteed += activate ? extra : -extra;
      ledger_quota(q, now, activate ? "LeaseActivated" : "LeaseExpired");
    }
    Event e = lease_event(l, now, activate ? "LeaseActivated" : "LeaseExpired", temporary ? "TemporaryQuota" : "Protection",
                          temporary ? q.group + "'s guarantee in " + q.pool_name + " is now " + std::to_string(q.guaranteed) +
                                          " GPUs"
                                    : std::string(activate ? "Workloads it selects are protected from reclaim"
                                                           : "Workloads it selected may be reclaimed again"));
    e.numbers = {{"guaranteed", q.guaranteed}};
    event(std::move(e));
    sync_quotas();
  }

  void schedule_lease(VirtualTime t, Timer::Kind kind, int lease) { timers_.push(Timer{t, next_timer_++, kind, lease, 0}); }

  [[nodiscard]] bool lease_protects(const Sim& s) const {
    for (const auto& l : leases_) {
      if (!l.active || l.spec->type != policy::LeaseType::Protection) continue;
      if (l.spec->business_group != s.w->business_group || l.spec->resource_pool != s.w->resource_pool) continue;
      bool all = true;
      if (l.spec->selector) {
        for (const auto& [k, v] : l.spec->selector->match_labels) {
          auto it = s.w->labels.find(k);
          if (it == s.w->labels.end() || it->second != v) all = false;
        }
      }
      if (all) return true;
    }
    return false;
  }

  // ---- one instant ------------------------------------------------------------------------------

  void settle(VirtualTime now) {
    for (int round = 0; round < kMaxSettleRounds; ++round) {
      core_changed_ = false;
      cycles(now);
      place_waiting(now);
      attribute(now);
      reclaim(now);
      if (!core_changed_ && !core_->has_active_heads()) return;
    }
    throw std::logic_error("twin run: the bank and the admission core did not settle at t=" + std::to_string(now));
  }

 public:
  [[nodiscard]] std::vector<const ScenarioWorkload*> workload_specs() const {
    std::vector<const ScenarioWorkload*> out;
    out.reserve(sims_.size());
    for (const auto& s : sims_) out.push_back(s.w);
    return out;
  }
  [[nodiscard]] std::vector<WorkloadOutcome> workloads() const {
    std::vector<WorkloadOutcome> out;
    out.reserve(sims_.size());
    for (const auto& s : sims_) {
      out.push_back(s.outcome);
      out.back().state = s.deleted                                     ? "Deleted"
                         : s.deactivated                               ? "Deactivated"
                         : s.frozen && s.state == State::Running       ? "Checkpointing"
                                                                       : std::string(state_name(s.state));
    }
    return out;
  }

 private:
  [[nodiscard]] std::vector<Position> positions() const {
    std::vector<Position> out;
    for (const auto& pool : pools_) {
      for (int qi : pool.quotas) {
        const Quota& q = quotas_[at(qi)];
        Position p;
        p.pool = q.pool_name;
        p.business_group = q.group;
        p.guaranteed = q.guaranteed;
        p.used = used_by(qi);
        for (const auto& r : pool.tracker->open()) {
          if (r.borrower == q.group) p.borrowed += r.gpus;
        }
        p.lent = pool.tracker->lent_by(q.group);
        p.lending_floor = q.lending_limit ? std::max<std::int64_t>(0, q.guaranteed - *q.lending_limit) : 0;
        const auto figures = core_->figures(q.cq, pool.flavor, pool.resource);
        const std::int64_t own_free = std::max<std::int64_t>(0, q.guaranteed - p.used);
        p.borrowable = figures ? std::max<std::int64_t>(0, figures->available - own_free) : 0;
        out.push_back(p);
      }
    }
    return out;
  }

 public:
  [[nodiscard]] std::vector<Position> positions_now() const { return positions(); }

  [[nodiscard]] RunResult stats() const {
    RunResult r;
    r.start = result_.start;
    r.end = now_;
    r.policy_version = result_.policy_version;
    r.event_count = result_.event_count;
    r.ledger_count = result_.ledger_count;
    r.audit_count = result_.audit_count;
    r.recompute_loss_gpu_ms = result_.recompute_loss_gpu_ms;
    r.groups = group_stats(now_);
    r.cluster = result_.cluster;
    if (cluster_) {
      r.cluster.allocated_milli_ms += allocated_milli_ * (now_ - allocated_since_);
      r.cluster.units = static_cast<std::int64_t>(cluster_->unit_count());
    }
    return r;
  }

  // The per-queue figures up to `end` (open holdings and loans counted until then).
  [[nodiscard]] std::vector<GroupStats> group_stats(VirtualTime end) const {
    std::vector<GroupStats> out;
    for (const auto& q : quotas_) {
      GroupStats g;
      g.business_group = q.group;
      g.pool = q.pool_name;
      g.used_gpu_ms = q.used_gpu_ms + q.used * (end - q.used_since);
      g.borrowed_gpu_ms = q.borrowed_gpu_ms;
      g.lent_gpu_ms = q.lent_gpu_ms;
      for (const auto& r : pools_[at(q.pool)].tracker->open()) {
        if (r.borrower == q.group) g.borrowed_gpu_ms += r.gpus * (end - r.start);
        if (r.lender == q.group) g.lent_gpu_ms += r.gpus * (end - r.start);
      }
      g.workloads = q.workloads;
      g.admitted = q.admitted;
      g.waits_ms = q.waits_ms;
      g.reclaims = q.reclaims;
      out.push_back(std::move(g));
    }
    for (const auto& s : sims_) {
      if (s.quota < 0) continue;
      out[at(s.quota)].stops += s.outcome.stops;
      out[at(s.quota)].loss_gpu_ms += s.outcome.loss_gpu_ms;
    }
    return out;
  }

  [[nodiscard]] std::vector<QueueView> queues() const {
    std::vector<QueueView> out;
    for (std::size_t qi = 0; qi < quotas_.size(); ++qi) {
      const Quota& q = quotas_[qi];
      const Pool& pool = pools_[at(q.pool)];
      QueueView v;
      v.cluster_queue = q.cq;
      v.business_group = q.group;
      v.pool = q.pool_name;
      v.flavor = pool.flavor;
      v.resource = pool.resource;
      v.nominal = q.guaranteed;
      const auto& applied = q.applied;
      const auto borrowing = applied ? applied->borrowing_limit : q.borrowing_limit;
      const auto lending = applied ? applied->lending_limit : q.lending_limit;
      if (borrowing) v.borrowing_limit = *borrowing;
      if (lending) v.lending_limit = *lending;
      v.used = q.used;
      v.pending = static_cast<std::int64_t>(q.pending.size());
      for (int i : pool.holding) v.admitted += sims_[at(i)].quota == static_cast<int>(qi) ? 1 : 0;
      out.push_back(std::move(v));
    }
    return out;
  }

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
  bool cluster_freed_ = false;
  std::int64_t allocated_milli_ = 0;
  VirtualTime allocated_since_ = 0;

 public:
  [[nodiscard]] const cluster::Cluster* cluster() const { return cluster_.get(); }
};

std::string rfc3339_ms(const Timestamp& start, VirtualTime t) {
  return format_rfc3339(start + std::chrono::milliseconds(t));
}

}  // namespace

class Simulation::Impl : public Engine {
 public:
  using Engine::Engine;
};

Simulation::Simulation(const policy::PolicySet& policies, const Scenario& scenario, RunOptions options)
    : impl_(std::make_unique<Impl>(policies, scenario, std::move(options))) {}
Simulation::~Simulation() = default;
Simulation::Simulation(Simulation&&) noexcept = default;
Simulation& Simulation::operator=(Simulation&&) noexcept = default;
bool Simulation::start() { return impl_->start(); }
bool Simulation::advance_to(VirtualTime t) { return impl_->advance_to(t); }
VirtualTime Simulation::now() const { return impl_->now(); }
std::optional<VirtualTime> Simulation::next_instant() const { return impl_->next_instant(); }
const RunResult& Simulation::result() const { return impl_->result(); }
std::vector<Position> Simulation::positions() const { return impl_->positions_now(); }
std::vector<WorkloadOutcome> Simulation::workloads() const { return impl_->workloads(); }
std::vector<const ScenarioWorkload*> Simulation::workload_specs() const { return impl_->workload_specs(); }
std::vector<QueueView> Simulation::queues() const { return impl_->queues(); }
const cluster::Cluster* Simulation::cluster() const { return impl_->cluster(); }
Expected<bool> Simulation::set_gpu_health(const std::string& uuid, bool healthy, int xid, const std::string& actor,
                                          std::int64_t ecc_double_bit) {
  return impl_->set_gpu_health(uuid, healthy, xid, actor, ecc_double_bit);
}
Expected<std::string> Simulation::submit(ScenarioWorkload workload, const std::string& actor) {
  return impl_->submit_now(std::move(workload), actor);
}
Expected<bool> Simulation::remove(const std::string& key, const std::string& actor) { return impl_->delete_now(key, actor); }
Expected<bool> Simulation::reserve(const std::string& business_group, const std::string& pool, std::int64_t gpus,
                                   std::optional<VirtualTime> grace, const std::string& reason, const std::string& actor) {
  return impl_->reserve(business_group, pool, gpus, grace, reason, actor);
}
Expected<bool> Simulation::cap_borrowing(const std::string& business_group, const std::string& pool,
                                         std::optional<std::int64_t> cap, const std::string& reason,
                                         const std::string& actor) {
  return impl_->cap_borrowing(business_group, pool, cap, reason, actor);
}
Expected<bool> Simulation::record(Event event, const std::string& actor) { return impl_->record_now(std::move(event), actor); }
RunResult Simulation::finish() { return impl_->finish(); }
RunResult Simulation::stats() const { return impl_->stats(); }

RunResult run_scenario(const policy::PolicySet& policies, const Scenario& scenario, const RunOptions& options) {
  Simulation sim(policies, scenario, options);
  sim.start();
  return sim.finish();
}

Json event_json(const Event& e, const Timestamp& start) {
  Json j = Json::object();
  j["t"] = e.t;
  j["time"] = rfc3339_ms(start, e.t);
  j["kind"] = e.kind;
  j["object"] = e.object;
  if (!e.business_group.empty()) j["businessGroup"] = e.business_group;
  if (!e.pool.empty()) j["pool"] = e.pool;
  if (!e.queue.empty()) j["queue"] = e.queue;
  j["reason"] = e.reason;
  j["message"] = e.message;
  j["numbers"] = e.numbers;
  if (!e.related.empty()) j["related"] = e.related;
  return j;
}

Json result_json(const RunResult& r) {
  Json out = Json::object();
  out["start"] = format_rfc3339(r.start);
  out["end"] = r.end;
  out["policyVersion"] = r.policy_version;
  Json positions = Json::array();
  for (const auto& p : r.positions) {
    positions.push_back({{"pool", p.pool}, {"businessGroup", p.business_group}, {"guaranteed", p.guaranteed},
                         {"used", p.used}, {"borrowed", p.borrowed}, {"lent", p.lent}, {"borrowable", p.borrowable},
                         {"lendingFloor", p.lending_floor}});
  }
  out["positions"] = std::move(positions);
  Json reclaims = Json::array();
  for (const auto& rc : r.reclaims) {
    Json victims = Json::array();
    for (const auto& v : rc.victims) {
      Json j = {{"workload", v.workload}, {"gpus", v.gpus}, {"class", v.victim_class}, {"notice", v.notice}};
      if (v.checkpoint_requested) j["checkpointRequested"] = *v.checkpoint_requested;
      if (v.checkpoint_completed) j["checkpointCompleted"] = *v.checkpoint_completed;
      if (v.checkpoint_failed) j["checkpointFailed"] = *v.checkpoint_failed;
      if (v.stopped) j["stopped"] = *v.stopped;
      if (v.finished) j["finished"] = *v.finished;
      if (v.released) j["released"] = *v.released;
      j["recomputeLossGpuHours"] = gpu_hours(v.loss_gpu_ms);
      victims.push_back(std::move(j));
    }
    Json j = {{"id", rc.id}, {"lender", rc.lender}, {"pool", rc.pool}, {"demand", rc.demand}, {"started", rc.started}};
    if (rc.ended) j["ended"] = *rc.ended;
    j["result"] = rc.result;
    j["victims"] = std::move(victims);
    reclaims.push_back(std::move(j));
  }
  out["reclaims"] = std::move(reclaims);
  Json workloads = Json::array();
  for (const auto& w : r.workloads) {
    Json j = {{"workload", w.workload}, {"businessGroup", w.business_group}, {"pool", w.pool},
              {"gpus", w.gpus},         {"state", w.state},                  {"admissions", w.admissions},
              {"stops", w.stops}};
    if (w.first_admitted) j["firstAdmitted"] = *w.first_admitted;
    if (w.finished) j["finished"] = *w.finished;
    j["recomputeLossGpuHours"] = gpu_hours(w.loss_gpu_ms);
    workloads.push_back(std::move(j));
  }
  out["workloads"] = std::move(workloads);
  out["recomputeLossGpuHours"] = gpu_hours(r.recompute_loss_gpu_ms);
  out["checkpoints"] = {{"completed", r.checkpoints_ok}, {"failed", r.checkpoints_failed}};
  Json ledger = Json::array();
  static constexpr std::array<std::string_view, 5> kinds{"QuotaSet", "UsageStarted", "UsageEnded", "BorrowOpened",
                                                         "BorrowClosed"};
  for (const auto& e : r.ledger) {
    Json j = {{"seq", e.seq}, {"t", e.time_ms}, {"kind", kinds[static_cast<std::size_t>(e.kind)]}, {"pool", e.pool},
              {"businessGroup", e.business_group}};
    if (!e.lender.empty()) j["lender"] = e.lender;
    if (!e.workload.empty()) j["workload"] = e.workload;
    if (!e.record.empty()) j["record"] = e.record;
    j["gpus"] = e.gpus;
    if (!e.reason.empty()) j["reason"] = e.reason;
    ledger.push_back(std::move(j));
  }
  out["ledger"] = std::move(ledger);
  return out;
}

}  // namespace gpubank::twin::run
