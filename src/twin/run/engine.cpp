#include "twin/run/engine.hpp"

#include "twin/run/engine_internal.hpp"

namespace gpubank::twin::run::detail {

bool Engine::start() {
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

bool Engine::advance_to(VirtualTime t) {
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

bool Engine::only_samples_left() const {
  return timers_.size() == 1 && timers_.top().kind == Timer::Kind::Sample && pods_ready_deadlines_.empty();
}

std::optional<VirtualTime> Engine::next_time() const {
  std::optional<VirtualTime> next;
  if (!timers_.empty()) next = timers_.top().t;
  if (!pods_ready_deadlines_.empty()) {
    const VirtualTime deadline = pods_ready_deadlines_.begin()->first;
    next = std::min(next.value_or(deadline), deadline);
  }
  return next;
}

std::optional<VirtualTime> Engine::next_instant() const {
  const auto next = next_time();
  if (!next || !ok_ || only_samples_left()) return std::nullopt;
  if (options_.until && *next > *options_.until) return std::nullopt;
  return next;
}

RunResult Engine::finish() {
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

// ---- setup ------------------------------------------------------------------------------

void Engine::error(std::string_view rule, const std::string& path, std::string message) {
  result_.diagnostics.push_back(
      Diagnostic{Severity::Error, std::string(rule), {}, {}, {}, {}, path, std::move(message)});
}

// ---- records --------------------------------------------------------------------------------

bool Engine::flush() {
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

bool Engine::hand_over() {
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

void Engine::ledger(bank::LedgerEntry e) {
  e.seq = ++result_.ledger_count;
  result_.ledger.push_back(std::move(e));
}

void Engine::ledger_quota(const Quota& q, VirtualTime now, std::string reason) {
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

void Engine::ledger_usage(const Sim& s, bank::LedgerKind kind, VirtualTime now, std::string reason) {
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

void Engine::event(Event e, bool bank_decision) {
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

Event Engine::workload_event(const Sim& s, VirtualTime now, std::string kind, std::string reason, std::string message) {
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

Event Engine::lender_event(const std::string& group, const std::string& pool, const std::string& queue, VirtualTime now,
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

void Engine::schedule(VirtualTime t, Timer::Kind kind, int sim) {
  timers_.push(Timer{t, next_timer_++, kind, sim, sims_[at(sim)].version});
}

void Engine::set_state(Sim& s, State next) {
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
    if (q.holding_by_admission.erase({s.admission_seq, index}) != 1) {
      throw std::logic_error("twin run: " + s.key + " changed its admission while it held GPUs");
    }
  }
  if (s.state == State::Placing && placing_.erase({s.admission_seq, index}) == 1) {
    placing_by_shape_[at(s.placement_shape)].erase({s.admission_seq, index});
  }
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
    q.holding_by_admission.emplace(s.admission_seq, index);
  }
  pool.touch();
}

// ---- progress -------------------------------------------------------------------------------

std::int64_t Engine::progress(const Sim& s, VirtualTime now) const {
  if (s.frozen) return s.frozen_progress;
  if (s.state == State::Running) return s.base + (now - s.running_since);
  return s.base;
}

std::int64_t Engine::last_periodic(const Sim& s, std::int64_t p) const {
  if (!s.w->checkpointable || !s.w->checkpoint_interval) return s.base;
  const std::int64_t interval = s.w->checkpoint_interval->milliseconds();
  if (interval <= 0) return s.base;
  return s.base + (p - s.base) / interval * interval;
}

void Engine::schedule_finish(Sim& s, int index, VirtualTime now) {
  schedule(now + std::max<std::int64_t>(0, s.w->run_time.milliseconds() - s.base), Timer::Kind::Finish, index);
}

// ---- timers ---------------------------------------------------------------------------------

void Engine::handle(const Timer& timer, VirtualTime now) {
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

void Engine::submit(Sim& s, VirtualTime now) {
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

void Engine::finish(Sim& s, VirtualTime now) {
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

void Engine::end_in_core(const Sim& s, VirtualTime now) {
  core_->finish(s.id, now);
  if (auto forgotten = core_->forget(s.id); !forgotten) throw std::logic_error("twin run: " + forgotten.error());
}

void Engine::remove(Sim& s, VirtualTime now) {
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

void Engine::checkpoint_done(Sim& s, VirtualTime now) {
  if (s.reclaim < 0 && !s.approved_stop) return;
  // The lender's reclaim keeps the victim's timeline; an approved stop has none.
  VictimTimeline* v = s.reclaim >= 0 ? &result_.reclaims[at(s.reclaim)].victims[at(s.victim)] : nullptr;
  if (s.w->checkpoint_fails) {
    if (v != nullptr) v->checkpoint_failed = now;
    s.approved_checkpoint_failed = v == nullptr;
    ++result_.checkpoints_failed;
    Event e = workload_event(s, now, "CheckpointFailed", "CheckpointFailed",
                             "The checkpoint of " + s.key + " failed; it is stopped when the grace period ends");
    if (v != nullptr) e.related = {"BusinessGroup/" + result_.reclaims[at(s.reclaim)].lender};
    event(std::move(e));
    return;
  }
  if (v != nullptr) v->checkpoint_completed = now;
  ++result_.checkpoints_ok;
  s.checkpoint_saved = true;
  Event e = workload_event(s, now, "CheckpointCompleted", "CheckpointCompleted",
                           "Workload " + s.key + " saved a checkpoint at " + std::to_string(s.frozen_progress / 1000) +
                               " s of progress");
  e.numbers = {{"progressSeconds", s.frozen_progress / 1000}};
  event(std::move(e));
  stop_noticed(s, now, "checkpoint saved");
}

void Engine::grace_end(Sim& s, VirtualTime now) {
  if (s.reclaim < 0 && !s.approved_stop) return;
  const bool failed_already = s.reclaim >= 0
                                  ? result_.reclaims[at(s.reclaim)].victims[at(s.victim)].checkpoint_failed.has_value()
                                  : s.approved_checkpoint_failed;
  if (s.w->checkpointable && !s.checkpoint_saved && !failed_already) {
    if (s.reclaim >= 0) result_.reclaims[at(s.reclaim)].victims[at(s.victim)].checkpoint_failed = now;
    ++result_.checkpoints_failed;
    Event e = workload_event(s, now, "CheckpointFailed", "GracePeriodExpired",
                             "The checkpoint of " + s.key + " did not complete within the grace period");
    event(std::move(e));
  }
  stop_noticed(s, now, "grace period expired");
}

void Engine::stop_victim(Sim& s, VirtualTime now, const std::string& why) {
  ReclaimTimeline& r = result_.reclaims[at(s.reclaim)];
  VictimTimeline& v = r.victims[at(s.victim)];
  const std::int64_t p = progress(s, now);
  const std::int64_t kept = s.checkpoint_saved ? s.frozen_progress : last_periodic(s, p);
  const std::int64_t loss = (p - kept) * s.gpus;
  if (s.approved_stop) {  // a person approved its reclaim too: it is not requeued
    v.stopped = now;
    v.loss_gpu_ms = loss;
    s.reclaim = s.victim = -1;
    stop_approved_workload(s, now, why + "; GPUs lent by " + r.lender);
    return;
  }
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

void Engine::stop_approved_workload(Sim& s, VirtualTime now, const std::string& why) {
  const bool held = holds_gpus(s.state);
  const std::int64_t p = progress(s, now);
  const std::int64_t kept = s.checkpoint_saved ? s.frozen_progress : last_periodic(s, p);
  const std::int64_t loss = held ? (p - kept) * s.gpus : 0;
  const Quota& q = quotas_[at(s.quota)];
  const std::string message =
      held ? "Stopped on an approved low-utilisation reclaim (" + why + "): its " + std::to_string(s.gpus) +
                 " GPUs of pool " + q.pool_name + " are free; deactivated, not requeued, its work kept up to " +
                 std::to_string(kept / 1000) + " s of progress"
           : "Deactivated on an approved low-utilisation reclaim (" + why + "): it held no GPUs";
  if (s.submitted && s.state != State::Requeuing) {
    if (held) {
      auto evicted = core_->evict(s.id, "ApprovedLowUtilization", message, now);
      if (!evicted) throw std::logic_error("twin run: " + evicted.error());
      core_->release_evicted(s.id, now);
    }
    end_in_core(s, now);
  }
  s.base = kept;
  s.frozen = false;
  ++s.version;  // its Finish, CheckpointDone, GraceEnd and Resubmit timers no longer hold
  if (held) ++s.outcome.stops;
  s.outcome.loss_gpu_ms += loss;
  result_.recompute_loss_gpu_ms += loss;
  set_state(s, State::Finished);
  s.deactivated = true;
  if (held) {
    ledger_usage(s, bank::LedgerKind::UsageEnded, now, "Reclaimed");
    pools_[at(q.pool)].ended[s.key] = "Reclaimed";
  }
  Event e = workload_event(s, now, held ? "ReclaimVictimStopped" : "Deactivated", "ApprovedLowUtilization", message);
  e.numbers = {{"gpus", s.gpus}, {"resumeFromSeconds", kept / 1000}, {"recomputeLossGpuHours", gpu_hours(loss)}};
  event(std::move(e));
  core_changed_ = true;
}

// ---- cycles -----------------------------------------------------------------------------------

void Engine::cycles(VirtualTime now) {
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

void Engine::decision(const Decision& d, VirtualTime now) {
  const int index = sim_by_id_.at(d.workload);
  Sim& s = sims_[at(index)];
  switch (d.kind) {
    case Decision::Kind::Admitted: {
      if (refuse_borrowing(s, index, now)) break;
      s.admitted_at = now;
      s.admission_seq = ++admissions_;
      ++s.outcome.admissions;
      s.outcome.last_admitted = now;
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
      if (s.approved_stop) {  // a person approved its reclaim: it does not queue again
        end_in_core(s, now);
        set_state(s, State::Finished);
        s.deactivated = true;
      }
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

// ---- one instant ------------------------------------------------------------------------------

void Engine::settle(VirtualTime now) {
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

}  // namespace gpubank::twin::run::detail

namespace gpubank::twin::run {
namespace {

std::string rfc3339_ms(const Timestamp& start, VirtualTime t) {
  return format_rfc3339(start + std::chrono::milliseconds(t));
}

}  // namespace

class Simulation::Impl : public detail::Engine {
 public:
  using detail::Engine::Engine;
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
std::vector<CohortView> Simulation::cohorts() const { return impl_->cohorts(); }
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
                                   std::optional<VirtualTime> grace, const std::string& reason, const std::string& actor,
                                   int piece) {
  return impl_->reserve(business_group, pool, gpus, grace, reason, actor, piece);
}
Expected<bool> Simulation::cap_borrowing(const std::string& business_group, const std::string& pool,
                                         std::optional<std::int64_t> cap, const std::string& reason,
                                         const std::string& actor) {
  return impl_->cap_borrowing(business_group, pool, cap, reason, actor);
}
Expected<bool> Simulation::record(Event event, const std::string& actor) { return impl_->record_now(std::move(event), actor); }
Expected<bool> Simulation::change_policies(const policy::PolicySet& next, const std::string& reason,
                                           const std::string& actor) {
  return impl_->change_policies(next, reason, actor);
}
Expected<bool> Simulation::stop_approved(const std::string& key, const std::string& approval, const std::string& actor) {
  return impl_->stop_approved(key, approval, actor);
}

Expected<bool> Simulation::downgrade_approved(const std::string& key, const std::string& priority_class,
                                              const std::string& approval, const std::string& actor) {
  return impl_->downgrade_approved(key, priority_class, approval, actor);
}
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
      j["recomputeLossGpuHours"] = detail::gpu_hours(v.loss_gpu_ms);
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
    j["recomputeLossGpuHours"] = detail::gpu_hours(w.loss_gpu_ms);
    workloads.push_back(std::move(j));
  }
  out["workloads"] = std::move(workloads);
  out["recomputeLossGpuHours"] = detail::gpu_hours(r.recompute_loss_gpu_ms);
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
