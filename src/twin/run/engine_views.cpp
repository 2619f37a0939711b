// What the engine's state reads as: positions, workload outcomes, queues and statistics
// (engine_internal.hpp).
#include "twin/run/engine_internal.hpp"

namespace gpubank::twin::run::detail {

std::vector<const ScenarioWorkload*> Engine::workload_specs() const {
  std::vector<const ScenarioWorkload*> out;
  out.reserve(sims_.size());
  for (const auto& s : sims_) out.push_back(s.w);
  return out;
}

std::vector<WorkloadOutcome> Engine::workloads() const {
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

std::vector<Position> Engine::positions() const {
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

RunResult Engine::stats() const {
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

std::vector<GroupStats> Engine::group_stats(VirtualTime end) const {
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

std::vector<QueueView> Engine::queues() const {
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

std::vector<CohortView> Engine::cohorts() const {
  std::vector<CohortView> out;
  for (const auto& pool : pools_) {
    CohortView v;
    v.cohort = pool.pool->name;
    v.pool = pool.pool->name;
    v.flavor = pool.flavor;
    v.resource = pool.resource;
    // The core's figures, not the engine's own note of what it set: what admission runs on.
    if (const auto figures = core_->figures(v.cohort, pool.flavor, pool.resource)) {
      v.nominal = figures->nominal;
      v.subtree_quota = figures->subtree_quota;
    }
    out.push_back(std::move(v));
  }
  std::sort(out.begin(), out.end(), [](const CohortView& a, const CohortView& b) { return a.pool < b.pool; });
  return out;
}

}  // namespace gpubank::twin::run::detail
