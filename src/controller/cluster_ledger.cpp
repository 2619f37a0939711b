#include "controller/cluster_ledger.hpp"

#include <algorithm>
#include <tuple>

#include "policy/lease_approval.hpp"
#include "policy/schema.hpp"
#include "policy/types.hpp"

namespace gpubank::controller {
namespace {

std::string trait_name(policy::WorkloadTrait trait) {
  for (const auto& [value, name] : doc::EnumNames<policy::WorkloadTrait>::values) {
    if (value == trait) return std::string(name);
  }
  return {};
}

using UsageKey = std::tuple<std::string, std::string, std::string>;  // (pool, flavor, workload)

std::string end_reason(const ClusterWorkload* w) {
  if (w == nullptr) return "Deleted";
  if (w->finished) return "Finished";
  if (w->admitted) return "Changed";
  if (w->reclaimed_ms) return "Reclaimed";
  return "Evicted";
}

// A record's flavor is its borrower's usage's: the flavor a workload was admitted on.
bank::LedgerEntry borrow_entry(const bank::BorrowChange& change, const std::string& pool, const std::string& flavor,
                               std::int64_t time_ms) {
  const bool opened = change.kind == bank::BorrowChange::Kind::Opened;
  bank::LedgerEntry e;
  e.time_ms = time_ms;
  e.kind = opened ? bank::LedgerKind::BorrowOpened : bank::LedgerKind::BorrowClosed;
  e.pool = pool;
  e.flavor = flavor;
  e.business_group = change.record.borrower;
  e.lender = change.record.lender;
  e.workload = change.record.workload;
  e.record = change.record.id;
  e.gpus = change.record.gpus;
  if (!opened) e.reason = change.close_reason;
  return e;
}

}  // namespace

std::vector<GroupQuota> group_quotas(const policy::PolicySet& set, Timestamp now) {
  std::vector<GroupQuota> out;
  const policy::PlatformGuardrailsSpec* guardrails = set.guardrails_spec();
  if (guardrails == nullptr) return out;
  for (const policy::PolicyObject& o : set.policies()) {
    if (o.kind != policy::Kind::GPUQuotaPolicy) continue;
    const auto& q = o.as<policy::GPUQuotaPolicySpec>();
    if (guardrails->find_pool(q.resource_pool) == nullptr) continue;  // validation reports it
    GroupQuota g;
    g.pool = q.resource_pool;
    g.group = q.business_group;
    g.guaranteed = q.guaranteed;
    g.lending_limit = q.lending_limit ? *q.lending_limit : -1;
    g.borrowing_limit = std::max<std::int64_t>(0, q.effective_max_capacity() - q.guaranteed);
    g.grace_ms = guardrails->max_grace_period.milliseconds();
    if (q.reclaim_policy) {
      for (policy::WorkloadTrait t : q.reclaim_policy->only_preempt) g.lend_only_to.push_back(trait_name(t));
      if (q.reclaim_policy->grace_period) g.grace_ms = q.reclaim_policy->grace_period->milliseconds();
    }
    out.push_back(std::move(g));
  }
  for (const policy::PolicyObject& o : set.policies()) {
    if (o.kind != policy::Kind::CapacityLease) continue;
    const auto& lease = o.as<policy::CapacityLeaseSpec>();
    if (lease.type != policy::LeaseType::TemporaryQuota) continue;
    const auto window = policy::lease_window(o);
    if (!window || now < window->start) continue;
    for (GroupQuota& g : out) {
      if (g.group != lease.business_group || g.pool != lease.resource_pool) continue;
      if (now < window->end) {
        g.lease_extra += lease.extra_guaranteed.value_or(0);
        g.guaranteed += lease.extra_guaranteed.value_or(0);
      } else {
        g.lease_ended = true;
      }
    }
  }
  std::sort(out.begin(), out.end(), [](const GroupQuota& a, const GroupQuota& b) {
    return std::tie(a.pool, a.group) < std::tie(b.pool, b.group);
  });
  return out;
}

std::vector<bank::PoolGroupQuota> pool_group_quotas(const std::vector<GroupQuota>& quotas, const std::string& pool) {
  std::vector<bank::PoolGroupQuota> out;
  for (const GroupQuota& g : quotas) {
    if (g.pool != pool) continue;
    out.push_back({g.group, g.guaranteed, g.lending_limit >= 0 ? std::optional<std::int64_t>(g.lending_limit) : std::nullopt,
                   g.lend_only_to});
  }
  return out;
}

ClusterLedger ClusterLedger::resume(bank::LedgerBook book, std::string id_prefix) {
  ClusterLedger ledger;
  ledger.id_prefix_ = std::move(id_prefix);
  for (const bank::LedgerEntry& e : book.entries()) {
    if (e.kind == bank::LedgerKind::QuotaSet) ledger.quota_set_[{e.pool, e.business_group}] = e;
  }
  std::map<std::string, std::vector<bank::Loan>> open;
  for (const bank::BorrowRecord& r : book.open_records()) {
    open[r.pool].push_back(bank::Loan{r.id, r.lender, r.borrower, r.workload, r.gpus, r.start_ms});
  }
  for (auto& [pool, loans] : open) {
    bank::BorrowTracker tracker(pool, ledger.id_prefix_);
    tracker.resume(std::move(loans));
    ledger.trackers_.emplace(pool, std::move(tracker));
  }
  ledger.book_ = std::move(book);
  return ledger;
}

LedgerPass ClusterLedger::observe(const std::vector<GroupQuota>& quotas, const std::vector<ClusterWorkload>& workloads,
                                  std::int64_t now_ms) const {
  LedgerPass pass;
  pass.trackers = trackers_;
  const std::int64_t t = std::max(now_ms, book_.last_time_ms());
  auto emit = [&](bank::LedgerEntry e) {
    e.time_ms = t;
    pass.entries.push_back(std::move(e));
  };
  auto tracker = [&](const std::string& pool) -> bank::BorrowTracker& {
    return pass.trackers.try_emplace(pool, pool, id_prefix_).first->second;
  };

  // What holds quota now. A workload whose entries the ledger would refuse is left out
  // (and named), so one odd name cannot stop the ledger.
  std::map<std::string, const ClusterWorkload*> present;
  std::map<UsageKey, const ClusterWorkload*> holding;
  for (const ClusterWorkload& w : workloads) {
    present[w.key] = &w;
    if (!w.admitted || w.gpus <= 0) continue;
    bank::LedgerEntry probe;
    probe.kind = bank::LedgerKind::UsageStarted;
    probe.time_ms = t;
    probe.pool = w.pool;
    probe.flavor = w.flavor;
    probe.business_group = w.group;
    probe.workload = w.key;
    probe.gpus = w.gpus;
    if (auto problem = bank::validate_entry(probe)) {
      pass.skipped.push_back(w.key + ": " + *problem);
      continue;
    }
    holding[{w.pool, w.flavor, w.key}] = &w;
  }

  // 1. Usages that ended: their borrow records close first.
  std::map<UsageKey, bool> still_open;
  for (const bank::OpenUsage& u : book_.open_usages()) {
    const UsageKey key{u.pool, u.flavor, u.workload};
    const auto h = holding.find(key);
    if (h != holding.end() && h->second->group == u.business_group && h->second->gpus == u.gpus) {
      still_open[key] = true;
      continue;
    }
    const auto p = present.find(u.workload);
    const std::string reason = end_reason(p == present.end() ? nullptr : p->second);
    for (const bank::BorrowChange& c : tracker(u.pool).end_workload(u.workload, reason)) {
      emit(borrow_entry(c, u.pool, u.flavor, t));
    }
    bank::LedgerEntry e;
    e.kind = bank::LedgerKind::UsageEnded;
    e.pool = u.pool;
    e.flavor = u.flavor;
    e.business_group = u.business_group;
    e.workload = u.workload;
    e.gpus = u.gpus;
    e.reason = reason;
    emit(std::move(e));
  }

  // 2. Quotas that changed since the last QuotaSet of their key; keys no policy sets any
  // more keep no guarantee.
  std::map<std::pair<std::string, std::string>, bank::LedgerEntry> wanted;
  for (const GroupQuota& g : quotas) {
    bank::LedgerEntry e;
    e.kind = bank::LedgerKind::QuotaSet;
    e.pool = g.pool;
    e.flavor = g.pool;
    e.business_group = g.group;
    e.gpus = g.guaranteed;
    e.lending_limit = g.lending_limit;
    e.borrowing_limit = g.borrowing_limit;
    const auto last = quota_set_.find({g.pool, g.group});
    if (last == quota_set_.end() || last->second.gpus == g.guaranteed) {
      e.reason = "Policy";
    } else if (g.guaranteed > last->second.gpus && g.lease_extra > 0) {
      e.reason = "LeaseActivated";
    } else if (g.guaranteed < last->second.gpus && g.lease_ended) {
      e.reason = "LeaseExpired";
    } else {
      e.reason = "Policy";
    }
    wanted[{g.pool, g.group}] = std::move(e);
  }
  for (const auto& [key, last] : quota_set_) {
    if (wanted.contains(key)) continue;
    bank::LedgerEntry e = last;
    e.gpus = 0;
    e.lending_limit = -1;
    e.borrowing_limit = 0;
    e.reason = "Policy";
    wanted[key] = std::move(e);
  }
  for (auto& [key, e] : wanted) {
    const auto last = quota_set_.find(key);
    if (last != quota_set_.end() && last->second.gpus == e.gpus && last->second.lending_limit == e.lending_limit &&
        last->second.borrowing_limit == e.borrowing_limit && last->second.flavor == e.flavor) {
      continue;
    }
    e.seq = 0;
    e.prev_hash.clear();
    e.audit_seq = 0;
    e.audit_hash.clear();
    e.hash.clear();
    emit(std::move(e));
  }

  // 3. Usages that started (in key order).
  for (const auto& [key, w] : holding) {
    if (still_open.contains(key)) continue;
    bank::LedgerEntry e;
    e.kind = bank::LedgerKind::UsageStarted;
    e.pool = w->pool;
    e.flavor = w->flavor;
    e.business_group = w->group;
    e.workload = w->key;
    e.gpus = w->gpus;
    emit(std::move(e));
  }

  // 4. Who lends to whom now, per pool (pools in name order). A closing record keeps the
  // flavor it opened with; an opening one takes its workload's.
  std::map<std::string, std::vector<bank::RunningWorkload>> running;
  std::map<std::string, std::string> flavor_of;  // record id or workload -> flavor
  for (const bank::BorrowRecord& r : book_.open_records()) flavor_of[r.id] = r.flavor;
  for (const auto& [key, w] : holding) {
    running[w->pool].push_back({w->key, w->group, w->gpus, w->admitted_at_ms, w->traits});
    flavor_of[w->key] = w->flavor;
  }
  for (const auto& [pool, _] : pass.trackers) running.try_emplace(pool);
  for (const auto& [pool, pool_running] : running) {
    for (const bank::BorrowChange& c : tracker(pool).update(t, pool_group_quotas(quotas, pool), pool_running)) {
      const bool opened = c.kind == bank::BorrowChange::Kind::Opened;
      const auto flavor = flavor_of.find(opened ? c.record.workload : c.record.id);
      emit(borrow_entry(c, pool, flavor == flavor_of.end() ? pool : flavor->second, t));
    }
  }
  return pass;
}

Expected<bool> ClusterLedger::commit(LedgerPass pass, std::span<const bank::LedgerEntry> stored) {
  for (const bank::LedgerEntry& e : stored) {
    if (auto applied = book_.apply(e); !applied) return Unexpected{applied.error()};
    if (e.kind == bank::LedgerKind::QuotaSet) quota_set_[{e.pool, e.business_group}] = e;
  }
  trackers_ = std::move(pass.trackers);
  return true;
}

}  // namespace gpubank::controller
