#include "bank/attribution.hpp"

#include <algorithm>
#include <set>
#include <stdexcept>
#include <tuple>

namespace gpubank::bank {

std::string cohort_lender(const std::string& pool) { return "cohort:" + pool; }

bool lends_to(const std::vector<std::string>& lend_only_to, const std::vector<std::string>& traits) {
  if (lend_only_to.empty()) return true;
  return std::any_of(lend_only_to.begin(), lend_only_to.end(),
                     [&](const std::string& t) { return std::find(traits.begin(), traits.end(), t) != traits.end(); });
}

PoolUsage pool_usage(const std::vector<PoolGroupQuota>& quotas, const std::vector<RunningWorkload>& running) {
  std::map<std::string, std::int64_t> guaranteed;
  for (const auto& q : quotas) guaranteed[q.group] = q.guaranteed;
  std::vector<const RunningWorkload*> order;
  order.reserve(running.size());
  for (const auto& w : running) order.push_back(&w);
  std::sort(order.begin(), order.end(), [](const RunningWorkload* a, const RunningWorkload* b) {
    if (a->admitted_at != b->admitted_at) return a->admitted_at < b->admitted_at;
    return a->name < b->name;
  });
  PoolUsage usage;
  usage.borrowing.reserve(order.size());
  for (const auto* w : order) {
    auto git = guaranteed.find(w->group);
    const std::int64_t g = git == guaranteed.end() ? 0 : git->second;
    std::int64_t& u = usage.used[w->group];
    const std::int64_t within = std::clamp<std::int64_t>(g - u, 0, w->gpus);
    u += w->gpus;
    usage.borrowing.push_back(Borrowing{w, w->gpus - within});
  }
  return usage;
}

std::vector<BorrowChange> BorrowTracker::update(std::int64_t now, const std::vector<PoolGroupQuota>& quotas,
                                                const std::vector<RunningWorkload>& running,
                                                const std::map<std::string, std::string>& ended) {
  return update_from_usage(now, quotas, pool_usage(quotas, running), ended);
}

std::vector<BorrowChange> BorrowTracker::update_from_usage(std::int64_t now, const std::vector<PoolGroupQuota>& quotas,
                                                           const PoolUsage& usage, const std::map<std::string, std::string>& ended) {
  std::map<std::string, const PoolGroupQuota*> quota_of;
  for (const auto& q : quotas) quota_of[q.group] = &q;
  std::map<std::string, std::int64_t> borrows;   // by workload
  std::map<std::string, const RunningWorkload*> by_name;
  for (const auto& b : usage.borrowing) {
    borrows[b.workload->name] = b.gpus;
    by_name[b.workload->name] = b.workload;
  }
  const auto used = [&usage](const std::string& group) {
    auto it = usage.used.find(group);
    return it == usage.used.end() ? std::int64_t{0} : it->second;
  };

  // Rule 2: what each group can lend.
  std::map<std::string, std::int64_t> lendable;
  for (const auto& q : quotas) {
    const std::int64_t unused = std::max<std::int64_t>(0, q.guaranteed - used(q.group));
    lendable[q.group] = q.lending_limit ? std::min(unused, *q.lending_limit) : unused;
  }
  const std::string cohort = cohort_lender(pool_);

  std::vector<BorrowChange> closed, opened;
  auto open_record = [&](const std::string& lender, const std::string& workload, std::int64_t gpus) {
    Loan r{id_prefix_ + pool_ + "/" + std::to_string(next_++), lender, by_name.at(workload)->group, workload, gpus, now};
    opened.push_back(BorrowChange{BorrowChange::Kind::Opened, r, {}});
    return r;
  };

  // Rule 3: keep what stays valid.
  std::vector<Loan> kept;
  for (auto& r : open_) {
    auto bit = borrows.find(r.workload);
    if (bit == borrows.end() || ended.contains(r.workload)) {
      auto eit = ended.find(r.workload);
      closed.push_back(BorrowChange{BorrowChange::Kind::Closed, r, eit == ended.end() ? "Ended" : eit->second});
      continue;
    }
    std::int64_t& need = bit->second;
    const bool from_cohort = r.lender == cohort;
    std::int64_t* can = nullptr;
    auto qit = quota_of.find(r.lender);
    // A lender whose onlyPreempt traits the workload does not carry (its policy changed)
    // lends it nothing more.
    if (!from_cohort && qit != quota_of.end() && lends_to(qit->second->lend_only_to_traits, by_name.at(r.workload)->traits)) {
      auto lit = lendable.find(r.lender);
      if (lit != lendable.end()) can = &lit->second;
    }
    const std::int64_t cap = from_cohort ? r.gpus : (can ? *can : 0);
    const std::int64_t keep = std::min({r.gpus, need, cap});
    const bool borrower_needs_less = need < r.gpus;
    need -= keep;
    if (can) *can -= keep;
    if (keep == r.gpus) {
      kept.push_back(r);
      continue;
    }
    // A borrower below its guarantee again returns what it no longer needs; otherwise the
    // lender took its GPUs back for its own use.
    closed.push_back(BorrowChange{BorrowChange::Kind::Closed, r, borrower_needs_less ? "WithinGuarantee" : "Reattributed"});
    if (keep > 0) kept.push_back(open_record(r.lender, r.workload, keep));
  }

  // Rule 4: attribute what is left.
  for (const auto& b : usage.borrowing) {
    const RunningWorkload* w = b.workload;
    std::int64_t& need = borrows[w->name];
    while (need > 0) {
      // Only lenders whose onlyPreempt traits the workload carries (reclaimPolicy.onlyPreempt:
      // the others never lend to it); first the ones that lend only to some traits (so
      // that lenders open to anyone stay free for workloads the others turn away); then
      // the most lendable GPUs; then the name (map order).
      const std::string* best = nullptr;
      std::tuple<bool, std::int64_t> best_key{};
      std::int64_t best_amount = 0;
      for (const auto& [group, amount] : lendable) {
        if (amount <= 0 || group == w->group) continue;
        const auto& only = quota_of.at(group)->lend_only_to_traits;
        if (!lends_to(only, w->traits)) continue;
        const std::tuple<bool, std::int64_t> key{!only.empty(), amount};
        if (best == nullptr || key > best_key) {
          best = &group;
          best_key = key;
          best_amount = amount;
        }
      }
      const std::string lender = best ? *best : cohort;
      const std::int64_t take = best ? std::min(need, best_amount) : need;
      if (best) lendable[*best] -= take;
      need -= take;
      kept.push_back(open_record(lender, w->name, take));
    }
  }
  open_ = std::move(kept);

  std::vector<BorrowChange> changes = std::move(closed);
  changes.insert(changes.end(), opened.begin(), opened.end());
  return changes;
}

std::vector<BorrowChange> BorrowTracker::end_workload(const std::string& workload, const std::string& reason) {
  std::vector<BorrowChange> closed;
  std::erase_if(open_, [&](const Loan& r) {
    if (r.workload != workload) return false;
    closed.push_back(BorrowChange{BorrowChange::Kind::Closed, r, reason});
    return true;
  });
  return closed;
}

void BorrowTracker::resume(std::vector<Loan> open) {
  if (!open_.empty()) throw std::logic_error("BorrowTracker::resume: records are open already");
  open_ = std::move(open);
}

std::int64_t BorrowTracker::lent_by(const std::string& lender) const {
  std::int64_t total = 0;
  for (const auto& r : open_) {
    if (r.lender == lender) total += r.gpus;
  }
  return total;
}

std::vector<Loan> BorrowTracker::lent_records(const std::string& lender) const {
  std::vector<Loan> out;
  for (const auto& r : open_) {
    if (r.lender == lender) out.push_back(r);
  }
  return out;
}

}  // namespace gpubank::bank
