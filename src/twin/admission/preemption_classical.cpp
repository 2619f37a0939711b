// Classical preemption: the candidate iterator, hierarchical reclaim and the greedy
// minimal-preemption search with fill-back. Follows pkg/scheduler/preemption/preemption.go
// and pkg/scheduler/preemption/classical (candidate_iterator.go,
// hierarchical_preemption.go).
#include "twin/admission/core_impl.hpp"

namespace gpubank::twin::admission {

bool Core::source_before(const Source& x, const Source& y) {
  if (x.list != y.list) return x.list < y.list;
  return candidate_key_before(x.current, y.current);
}

// Moves a source to its next candidate that classify() accepts; false when none is left.
bool Core::advance(Source& s, const Wl& preemptor, int queue, const std::vector<int>& frs) const {
  const auto& ranked = queues_[at(s.queue)].ranked;
  while (s.pos < ranked.size()) {
    const RankEntry& r = ranked[s.pos++];
    // Ranked by ascending priority: once the policy refuses a priority it refuses the rest.
    if ((s.policy == PreemptionPolicy::LowerPriority && r.priority >= preemptor.spec.priority) ||
        (s.policy == PreemptionPolicy::LowerOrNewerEqualPriority && r.priority > preemptor.spec.priority)) {
      s.pos = ranked.size();
      return false;
    }
    // classify(), from the ranked entry: an admitted candidate, not evicted.
    if (!uses_resources(r, frs)) continue;
    const Variant v = classify(preemptor, queue, s.queue, r.priority, r.creation, s.advantage);
    if (v == Variant::Never) continue;
    s.current = Candidate{r.id, s.lca, v, false, s.queue == queue, r.priority, r.reserved_at, r.uid_prefix,
                          r.uid_label, s.queue, amount_of(r, frs)};
    return true;
  }
  return false;
}

// NewCandidateIterator's order, produced lazily: the evicted candidates of all lists
// first (few, sorted outright), then a merge of the per-queue ranked walks by (list,
// CandidatesOrdering). The greedy search usually stops after a few candidates, so a
// preemptor costs a walk over its cohort's queues, not a sort of their workloads. Each
// attempt of the search restarts the walk; a queue whose candidates stopped being valid
// for the rest of an attempt can be dropped from it (drop_source).
class Core::CandidateWalk {
 public:
  CandidateWalk(const Core& core, const Wl& preemptor, int queue, const std::vector<int>& frs,
                std::vector<Ranked>& evicted, std::vector<Source>& sources, std::vector<Source>& work,
                std::vector<std::uint32_t>& heap)
      : core_(core), preemptor_(preemptor), queue_(queue), frs_(frs), evicted_(evicted), primed_(sources),
        work_(work), heap_(heap) {
    std::sort(evicted_.begin(), evicted_.end(), ranked_before);
    for (const auto& r : evicted_) counts_[at(r.list)] += 1;
    std::size_t kept = 0;
    for (auto& s : primed_) {
      if (core_.advance(s, preemptor_, queue_, frs_)) {
        counts_[at(s.list)] += 1;
        primed_[kept++] = s;
      }
    }
    primed_.resize(kept);
  }
  // Whether a list (0 hierarchy, 1 priority, 2 same queue) has any candidate.
  [[nodiscard]] bool any_in(int list) const { return counts_[at(list)] > 0; }

  void restart() {
    work_ = primed_;
    heap_.resize(work_.size());
    for (std::uint32_t i = 0; i < heap_.size(); ++i) heap_[i] = i;
    std::make_heap(heap_.begin(), heap_.end(), after());
    next_evicted_ = 0;
    pending_ = kNone;
  }
  // The next candidate, or nullptr at the end. Valid until the next call.
  const Candidate* next() {
    if (pending_ != kNone) {
      if (core_.advance(work_[pending_], preemptor_, queue_, frs_)) {
        heap_.push_back(pending_);
        std::push_heap(heap_.begin(), heap_.end(), after());
      }
      pending_ = kNone;
    }
    if (next_evicted_ < evicted_.size()) return &evicted_[next_evicted_++].c;
    if (heap_.empty()) return nullptr;
    std::pop_heap(heap_.begin(), heap_.end(), after());
    pending_ = heap_.back();
    heap_.pop_back();
    return &work_[pending_].current;
  }
  // The rest of the last candidate's queue is left out of this attempt (no-op after an
  // evicted candidate, which came from no walk).
  void drop_source() { pending_ = kNone; }

 private:
  static constexpr std::uint32_t kNone = ~std::uint32_t{0};
  struct After {
    const std::vector<Source>* work;
    bool operator()(std::uint32_t x, std::uint32_t y) const { return source_before((*work)[y], (*work)[x]); }
  };
  [[nodiscard]] After after() const { return After{&work_}; }
  const Core& core_;
  const Wl& preemptor_;
  int queue_;
  const std::vector<int>& frs_;
  std::vector<Ranked>& evicted_;
  std::size_t next_evicted_ = 0;
  std::vector<Source>& primed_;
  std::vector<Source>& work_;
  std::vector<std::uint32_t>& heap_;
  std::uint32_t pending_ = kNone;
  std::array<std::size_t, 3> counts_{};
};

// The reference mode's walk (CoreOptions::reference_search): NewCandidateIterator as
// upstream builds it. Every candidate of every source is collected and the whole list
// sorted by (evicted first, list, CandidatesOrdering); an invalid candidate is skipped
// alone (candidateIsValid), so nothing rests on CandidateWalk's argument that the rest of
// its queue is invalid too.
class Core::ReferenceWalk {
 public:
  ReferenceWalk(const Core& core, const Wl& preemptor, int queue, const std::vector<int>& frs,
                const std::vector<Ranked>& evicted, const std::vector<Source>& sources)
      : all_(evicted) {
    for (Source s : sources) {
      while (core.advance(s, preemptor, queue, frs)) all_.push_back(Ranked{s.list, s.current});
    }
    std::sort(all_.begin(), all_.end(), ranked_before);
    for (const auto& r : all_) counts_[at(r.list)] += 1;
  }
  [[nodiscard]] bool any_in(int list) const { return counts_[at(list)] > 0; }
  void restart() { next_ = 0; }
  const Candidate* next() { return next_ < all_.size() ? &all_[next_++].c : nullptr; }
  void drop_source() {}

 private:
  std::vector<Ranked> all_;
  std::size_t next_ = 0;
  std::array<std::size_t, 3> counts_{};
};

bool Core::order_entry_before(const OrderEntry& x, const OrderEntry& y) { return x.rank() < y.rank(); }

// Whether a search under cohort `a` for `frs` should use the shared order: from the
// second search in the same state on (a lone search, such as a re-nomination after
// victims were taken, would only pay for the sort).
bool Core::share_order(int a, const std::vector<int>& frs) {
  if (candidate_orders_.size() != tree_.size()) candidate_orders_.assign(tree_.size(), CandidateOrder{});
  CandidateOrder& o = candidate_orders_[at(a)];
  if (o.epoch == epoch_ && o.frs == frs) return true;
  if (o.requests_epoch != epoch_) {
    o.requests_epoch = epoch_;
    o.requests = 0;
  }
  return ++o.requests >= 2;
}

// The order under cohort `a` in the current state, built if needed.
auto Core::candidate_order(int a, const std::vector<int>& frs) -> const CandidateOrder& {
  CandidateOrder& o = candidate_orders_[at(a)];
  if (o.epoch == epoch_ && o.frs == frs) return o;
  o.epoch = epoch_;
  o.frs = frs;
  o.entries.clear();
  o.evicted_queues.clear();
  o.queues.clear();
  o.cycle = cycle_;
  o.admissions = admissions_under(a);
  o.runs.clear();
  add_order_queues(o, a, a, -1, frs);
  // Each queue's part is its `ranked` list, in order already: merged pairwise, O(n log
  // queues) where a sort of the cohort's every admitted workload was O(n log n).
  std::vector<std::size_t>& starts = o.runs;
  starts.push_back(o.entries.size());
  const auto begin = o.entries.begin();
  using Diff = std::vector<OrderEntry>::difference_type;
  while (starts.size() > 2) {
    std::size_t kept = 0;
    for (std::size_t i = 0; i + 2 < starts.size(); i += 2) {
      std::inplace_merge(begin + static_cast<Diff>(starts[i]), begin + static_cast<Diff>(starts[i + 1]),
                         begin + static_cast<Diff>(starts[i + 2]), order_entry_before);
      starts[kept++] = starts[i];
    }
    if (starts.size() % 2 == 0) starts[kept++] = starts[starts.size() - 2];  // an odd run out
    starts[kept++] = starts.back();
    starts.resize(kept);
  }
#ifndef NDEBUG
  if (!std::is_sorted(o.entries.begin(), o.entries.end(), order_entry_before)) {
    throw std::logic_error("admission core: a queue's ranked list is out of order");
  }
#endif
  std::sort(o.queues.begin(), o.queues.end());
  return o;
}

// A search under a flat cohort (a root whose children are all queues) for one
// flavor-resource, in a state the cohort's order was not built in, may still walk that
// order if it was built earlier in the same cycle and nothing was admitted under the
// cohort since: within a cycle nothing else adds candidates. What it holds then differs
// from what collect_sources would give only by
//  - the cycle's victims chosen since, which the walk skips (victim_this_cycle), and
//  - queues no longer above nominal (victims and reservations move usage), which the
//    search leaves out (excluded_); a queue above nominal that the order lacks makes it
//    unusable.
// Re-nominations of heads whose targets overlapped another's are such searches.
auto Core::reusable_order(int a, const std::vector<int>& frs) -> const CandidateOrder* {
  if (frs.size() != 1 || !flat_cohort(a)) return nullptr;
  if (candidate_orders_.size() != tree_.size()) return nullptr;
  const CandidateOrder& o = candidate_orders_[at(a)];
  if (o.epoch == 0 || o.cycle != cycle_ || o.frs != frs || o.admissions != admissions_under(a)) return nullptr;
  if (excluded_.size() != queues_.size()) excluded_.assign(queues_.size(), 0);
  const std::uint64_t above = ++exclude_stamp_;
  for (int child : tree_.queues_above_nominal(a, frs.front())) {
    const int cq = node_queue_[at(child)];
    if (!queues_[at(cq)].spec.active) continue;  // never a source (add_order_queues)
    if (!std::binary_search(o.queues.begin(), o.queues.end(), cq)) return nullptr;
    excluded_[at(cq)] = above;
  }
  // Everything of the order not above nominal now is left out of this search.
  const std::uint64_t stamp = ++exclude_stamp_;
  for (int cq : o.queues) {
    if (excluded_[at(cq)] != above) excluded_[at(cq)] = stamp;
  }
  return &o;
}

// collect_sources without a preemptor: every queue it could give under `top`.
void Core::add_order_queues(CandidateOrder& o, int top, int current, int child_of_top, const std::vector<int>& frs) const {
  const auto& node = tree_.node(current);
  for (int child : node.child_cohorts) {
    if (within_nominal(child, frs)) continue;
    add_order_queues(o, top, child, current == top ? child : child_of_top, frs);
  }
  auto add = [&](int child) {
    const int cq = node_queue_[at(child)];
    const int via = current == top ? child : child_of_top;
    const Queue& q = queues_[at(cq)];
    if (!q.spec.active) return;  // left out of Kueue's snapshot (collect_sources)
    o.queues.push_back(cq);
    o.runs.push_back(o.entries.size());
    for (const RankEntry& r : q.ranked) {
      o.entries.push_back(OrderEntry{r.reserved_at, r.uid_prefix, r.uid_label, r.creation, r.priority, r.id, cq, via,
                                     uses_resources(r, frs), amount_of(r, frs)});
    }
    if (!q.evicted.empty()) o.evicted_queues.emplace_back(cq, via);
  };
  if (frs.size() == 1) {
    for (int child : tree_.queues_above_nominal(current, frs.front())) add(child);
  } else {
    for (int child : node.child_queues) {
      if (!within_nominal(child, frs)) add(child);
    }
  }
}

// CandidateWalk's order over shared levels: evicted candidates first, then the levels
// merged by (list, CandidatesOrdering), then the preemptor's own queue.
class Core::SharedWalk {
 public:
  SharedWalk(Core& core, const Wl& preemptor, int queue, const std::vector<int>& frs, std::vector<Ranked>& evicted,
             std::vector<Level>& levels, std::optional<Source> own)
      : core_(core), preemptor_(preemptor), queue_(queue), frs_(frs), evicted_(evicted), levels_(levels) {
    const auto& spec = core_.queues_[at(queue)].spec.preemption;
    cutoff_ = spec.reclaim_within_cohort;
    std::sort(evicted_.begin(), evicted_.end(), ranked_before);
    for (const auto& r : evicted_) counts_[at(r.list)] += 1;
    if (core_.dropped_.size() != core_.queues_.size()) core_.dropped_.assign(core_.queues_.size(), 0);
    if (core_.excluded_.size() != core_.queues_.size()) core_.excluded_.assign(core_.queues_.size(), 0);
    ++core_.drop_stamp_;
    for (auto& l : levels_) {
      l.pos = 0;
      if (settle(l)) counts_[at(l.list())] += 1;
      l.start = l.pos;
    }
    if (own && core_.advance(*own, preemptor_, queue_, frs_)) {
      counts_[2] += 1;
      own_primed_ = own;
    }
  }
  [[nodiscard]] bool any_in(int list) const { return counts_[at(list)] > 0; }
  [[nodiscard]] const Wl& preemptor() const { return preemptor_; }

  void restart() {
    ++core_.drop_stamp_;
    for (auto& l : levels_) {
      l.pos = l.start;
      settle(l);  // the same candidate as at the start: nothing is dropped yet
    }
    own_ = own_primed_;
    next_evicted_ = 0;
    last_ = Last::None;
  }
  const Candidate* next() {
    if (last_ == Last::Level) {
      Level& l = levels_[last_level_];
      ++l.pos;
      settle(l);
    } else if (last_ == Last::Own) {
      if (!core_.advance(*own_, preemptor_, queue_, frs_)) own_.reset();
    }
    last_ = Last::None;
    if (next_evicted_ < evicted_.size()) return &evicted_[next_evicted_++].c;
    std::size_t best = levels_.size();
    for (std::size_t i = 0; i < levels_.size(); ++i) {
      const Level& l = levels_[i];
      if (l.pos == l.order->entries.size()) continue;
      if (best == levels_.size() || l.list() < levels_[best].list() ||
          (l.list() == levels_[best].list() && candidate_key_before(l.current, levels_[best].current))) {
        best = i;
      }
    }
    if (best < levels_.size()) {
      last_ = Last::Level;
      last_level_ = best;
      return &levels_[best].current;
    }
    if (own_) {
      last_ = Last::Own;
      return &own_->current;
    }
    return nullptr;
  }
  // The level an attempt walks first when it is all the walk has before the preemptor's
  // own queue: no evicted candidates, one level. Else nullptr.
  [[nodiscard]] const Level* lone_level() const {
    if (!evicted_.empty() || levels_.size() != 1) return nullptr;
    return &levels_.front();
  }
  // Whether no level gives the preemptor the advantage of hierarchical reclaim: its
  // candidates from other queues are then all ReclaimWithoutBorrowing where its queue
  // may not borrow while reclaiming (classify).
  [[nodiscard]] bool no_advantage() const {
    return std::none_of(levels_.begin(), levels_.end(), [](const Level& l) { return l.advantage; });
  }
  // Right after restart(): the levels are walked (or would give nothing), the own queue is next.
  void skip_levels() {
    for (auto& l : levels_) l.pos = l.order->entries.size();
    last_ = Last::None;
  }
  // The rest of the last candidate's queue is left out of this attempt.
  void drop_source() {
    if (last_ == Last::Level) {
      core_.dropped_[at(levels_[last_level_].current_queue)] = core_.drop_stamp_;
    } else if (last_ == Last::Own) {
      own_.reset();
      last_ = Last::None;
    }
  }

 private:
  // Moves l.pos to its next candidate (from l.pos on), or to the end.
  bool settle(Level& l) {
    const auto& entries = l.order->entries;
    for (; l.pos < entries.size(); ++l.pos) {
      const OrderEntry& e = entries[l.pos];
      if (past_cutoff(cutoff_, e.priority, preemptor_.spec.priority)) {
        l.pos = entries.size();
        return false;
      }
      if (!e.uses || e.child == l.skip || core_.dropped_[at(e.queue)] == core_.drop_stamp_) continue;
      // A reused order (reusable_order): queues left out, victims chosen since it was built.
      if (core_.excluded_[at(e.queue)] == core_.exclude_stamp_ || core_.victim_this_cycle(e.w)) continue;
      const Variant v = core_.classify(preemptor_, queue_, e.queue, e.priority, e.creation, l.advantage);
      if (v == Variant::Never) continue;
      l.current = Candidate{e.w, l.lca, v, false, false, e.priority, e.reserved, e.uid_prefix, e.uid_label, e.queue, e.amount};
      l.current_queue = e.queue;
      return true;
    }
    return false;
  }
  enum class Last { None, Level, Own };
  Core& core_;
  const Wl& preemptor_;
  int queue_;
  const std::vector<int>& frs_;
  PreemptionPolicy cutoff_;
  std::vector<Ranked>& evicted_;
  std::size_t next_evicted_ = 0;
  std::vector<Level>& levels_;
  std::optional<Source> own_primed_, own_;
  Last last_ = Last::None;
  std::size_t last_level_ = 0;
  std::array<std::size_t, 3> counts_{};
};

// A shared order is sorted by ascending priority: once the preemptor's reclaim policy
// refuses a candidate's priority it refuses the rest of the order.
bool Core::past_cutoff(PreemptionPolicy reclaim, std::int32_t cand_priority, std::int32_t preemptor_priority) {
  return (reclaim == PreemptionPolicy::LowerPriority && cand_priority >= preemptor_priority) ||
         (reclaim == PreemptionPolicy::LowerOrNewerEqualPriority && cand_priority > preemptor_priority);
}

// classical.classifyPreemptionVariant
Variant Core::classify(const Wl& preemptor, int queue, WorkloadId cand, bool advantage,
                               const std::vector<int>& frs) const {
  if (!uses_resources(cand, frs)) return Variant::Never;
  const Wl& c = wl(cand);
  return classify(preemptor, queue, c.queue, c.spec.priority, c.queued_at, advantage);
}

// The same for a candidate known to use the resources, from its queue, priority and creation.
Variant Core::classify(const Wl& preemptor, int queue, int cand_queue, std::int32_t cand_priority,
                               VirtualTime cand_creation, bool advantage) const {
  const Queue& q = queues_[at(queue)];
  const auto policy = cand_queue == queue ? q.spec.preemption.within_cluster_queue : q.spec.preemption.reclaim_within_cohort;
  if (!satisfies(preemptor, cand_priority, cand_creation, policy)) return Variant::Never;
  if (cand_queue == queue) return Variant::WithinCQ;
  if (advantage) return Variant::Hierarchical;
  if (q.spec.preemption.borrow_within_cohort == BorrowWithinCohortPolicy::Never) return Variant::ReclaimWithoutBorrowing;
  // isAboveBorrowingThreshold
  const auto& threshold = q.spec.preemption.max_priority_threshold;
  if (cand_priority >= preemptor.spec.priority || (threshold && cand_priority > *threshold)) {
    return Variant::ReclaimWithoutBorrowing;
  }
  return Variant::ReclaimWhileBorrowing;
}

// QuantitiesFitInQuota
// What does not fit in n's local quota goes to `remaining`.
bool Core::fit_in_quota(int n, const Usage& requests, Usage& remaining) const {
  bool ok = true;
  remaining.clear();
  for (const auto& [fr, v] : requests) {
    if (tree_.subtree_quota(n, fr) < quota_add(tree_.usage(n, fr), v)) ok = false;
    remaining.emplace_back(fr, std::max<Amount>(0, quota_sub(v, tree_.local_available(n, fr))));
  }
  return ok;
}

// The queues (and their evicted candidates) under `current`, skipping the subtree the
// preemptor came from and subtrees within nominal quota.
void Core::collect_sources(const Wl& preemptor, int queue, int current, int subtree_root, int skip, bool advantage,
                     const std::vector<int>& frs, std::vector<Source>& sources, std::vector<Ranked>& evicted) const {
  const auto& node = tree_.node(current);
  for (int child : node.child_cohorts) {
    if (child == skip || within_nominal(child, frs)) continue;
    collect_sources(preemptor, queue, child, subtree_root, skip, advantage, frs, sources, evicted);
  }
  const PreemptionPolicy policy = queues_[at(queue)].spec.preemption.reclaim_within_cohort;
  auto add = [&](int child) {
    const int cq = node_queue_[at(child)];
    // An inactive ClusterQueue is left out of Kueue's snapshot (snapshot.go,
    // InactiveClusterQueueSets): its quota and usage still count in its Cohort, whose
    // resource node is copied from the cache, but its workloads are never candidates.
    if (cq == queue || !queues_[at(cq)].spec.active) return;
    const int list = advantage ? 0 : 1;
    sources.push_back(Source{cq, list, subtree_root, advantage, policy, 0, {}});
    add_evicted(preemptor, queue, cq, list, subtree_root, advantage, frs, evicted);
  };
  // The order of sources does not matter: the walk merges them by candidate order.
  if (frs.size() == 1) {
    for (int child : tree_.queues_above_nominal(current, frs.front())) add(child);
  } else {
    for (int child : node.child_queues) {
      if (!within_nominal(child, frs)) add(child);
    }
  }
}

void Core::add_evicted(const Wl& preemptor, int queue, int cq, int list, int lca, bool advantage, const std::vector<int>& frs,
                 std::vector<Ranked>& evicted) const {
  for (WorkloadId w : queues_[at(cq)].evicted) {
    if (victim_this_cycle(w)) continue;
    const Variant v = classify(preemptor, queue, w, advantage, frs);
    if (v != Variant::Never) evicted.push_back(Ranked{list, candidate(w, lca, v, queue)});
  }
}

// candidateIterator.candidateIsValid. An invalid candidate makes the rest of its queue's
// walk invalid for the same attempt of the greedy search, so the walk can drop it:
//  - ReclaimWithoutBorrowing while borrowing: the variant is the same for the whole queue
//    (borrowWithinCohort Never), or holds from some priority upwards (above the
//    preemptor's priority or maxPriorityThreshold), and the walk ascends in priority;
//  - the queue, or a cohort between it and the lca, is within nominal quota: within an
//    attempt usage only goes down, so it stays within nominal.
auto Core::candidate_validity(const Candidate& c, int queue, bool borrow, const std::vector<int>& frs) const -> Validity {
  if (c.queue == queue) return Validity::Valid;
  if (borrow && c.variant == Variant::ReclaimWithoutBorrowing) return Validity::RestInvalid;
  const int n = queues_[at(c.queue)].node;
  if (within_nominal(n, frs)) return Validity::RestInvalid;
  for (int a = tree_.node(n).parent; a >= 0; a = tree_.node(a).parent) {
    if (a == c.lca) break;
    if (within_nominal(a, frs)) return Validity::RestInvalid;
  }
  return Validity::Valid;
}

bool Core::workload_fits(int queue, const Usage& usage, bool allow_borrowing) const {
  const int n = queues_[at(queue)].node;
  for (const auto& [fr, v] : usage) {
    if (!allow_borrowing && tree_.borrowing_with(n, fr, v)) return false;
    if (v > tree_.available(n, fr)) return false;
  }
  return true;
}

// Targets are a pure function of the state and the request. Nomination asks twice with the
// same request for a single-resource workload (the flavor assigner's oracle, then
// GetTargets), so the last answer is kept until the state changes.
// The answer stays valid until the next call.
const std::vector<Target>& Core::get_targets(WorkloadId id, int queue, const std::vector<int>& frs, const Usage& usage) {
  static const std::vector<Target> kNone;
  if (frs.empty()) return kNone;
  const bool reference = options_.reference_search;
  if (!reference && !options_.fair_sharing && usage.size() == 1 &&
      no_candidate_can_exist(wl(id), queue, usage.front().first, usage.front().second)) {
    return kNone;
  }
  if (!reference && targets_cache_valid_ && targets_cache_epoch_ == epoch_ && targets_cache_id_ == id &&
      targets_cache_frs_ == frs && targets_cache_usage_ == usage) {
    return targets_cache_;
  }
  {
    const UndoneChanges undone(*this);  // both searches put back every workload they remove
    if (options_.fair_sharing) {
      targets_cache_ = fair_preemptions(id, queue, frs, usage);
    } else {
      classical_preemptions(id, queue, frs, usage, targets_cache_);
    }
  }
  targets_cache_valid_ = !reference;
  targets_cache_epoch_ = epoch_;
  targets_cache_id_ = id;
  targets_cache_frs_ = frs;
  targets_cache_usage_ = usage;
  return targets_cache_;
}

// Whether the policy can accept some candidate of `min_priority` or above.
bool Core::policy_may_take(PreemptionPolicy policy, std::int32_t min_priority, std::int32_t preemptor_priority) {
  switch (policy) {
    case PreemptionPolicy::Never: return false;
    case PreemptionPolicy::LowerPriority: return min_priority < preemptor_priority;
    case PreemptionPolicy::LowerOrNewerEqualPriority: return min_priority <= preemptor_priority;
    case PreemptionPolicy::Any: return true;
  }
  return true;
}

// A sound shortcut for classical_preemptions with one flavor-resource: true only when its
// walk can give no valid candidate, so the search would return no targets. In a busy
// cohort most heads that do not fit are such (a queue at nominal whose head has nothing of
// lower priority below it), and the search's set-up (levels, orders, walks, attempts)
// costs far more than these reads. It mirrors where candidates come from:
//  - the preemptor's own queue: its evicted workloads, and its ranked admitted workloads
//    (ascending priority, so the first decides whether withinClusterQueue accepts any);
//  - the cohorts above (reclaimWithinCohort): queues above nominal, and subtrees not within
//    nominal, under each ancestor but the subtree the preemptor came from; their evicted
//    workloads come from the same queues (collect_sources, add_order_queues).
// With no candidate in its own queue, the other queues' give nothing either when
// borrowWithinCohort is Never and no level gives the advantage of hierarchical reclaim
// (the request fits in no subtree below the cohorts searched): they are all
// ReclaimWithoutBorrowing (classify), invalid in the attempt that allows borrowing
// (candidate_validity, SharedWalk::skip_levels), and in the attempt that does not, the
// request keeps the queue borrowing, since only removals from the queue itself lower its
// usage. Everything else is answered "maybe", which only costs the full search.
bool Core::no_candidate_can_exist(const Wl& preemptor, int queue, int fr, Amount request) const {
  const Queue& q = queues_[at(queue)];
  const auto& policy = q.spec.preemption;
  if (policy.within_cluster_queue != PreemptionPolicy::Never) {
    if (!q.evicted.empty()) return false;
    if (!q.ranked.empty() && policy_may_take(policy.within_cluster_queue, q.ranked.front().priority, preemptor.spec.priority)) {
      return false;
    }
  }
  const int n = q.node;
  if (!tree_.has_parent(n) || policy.reclaim_within_cohort == PreemptionPolicy::Never) return true;
  if (policy.borrow_within_cohort == BorrowWithinCohortPolicy::Never) {
    // classical_preemptions' levels: level k has the advantage when the request fits
    // below it, in the queue or a cohort under level k.
    bool advantage = quota_add(tree_.usage(n, fr), request) <= tree_.subtree_quota(n, fr);
    Amount remaining = std::max<Amount>(0, quota_sub(request, tree_.local_available(n, fr)));
    for (int a = tree_.node(n).parent; !advantage && tree_.node(a).parent >= 0; a = tree_.node(a).parent) {
      advantage = quota_add(tree_.usage(a, fr), remaining) <= tree_.subtree_quota(a, fr);
      remaining = std::max<Amount>(0, quota_sub(remaining, tree_.local_available(a, fr)));
    }
    if (!advantage) return true;
  }
  int skip = n;
  for (int a = tree_.node(n).parent; a >= 0; skip = a, a = tree_.node(a).parent) {
    for (int child : tree_.node(a).child_cohorts) {
      if (child != skip && tree_.usage(child, fr) > tree_.subtree_quota(child, fr)) return false;
    }
    for (int child : tree_.queues_above_nominal(a, fr)) {
      if (child != n) return false;
    }
  }
  return true;
}

// Preemptor.classicalPreemptions
// The targets go to `out` (empty: none).
void Core::classical_preemptions(WorkloadId id, int queue, const std::vector<int>& frs, const Usage& usage,
                           std::vector<Target>& out) {
  const Wl& preemptor = wl(id);
  const Queue& q = queues_[at(queue)];
  const int n = q.node;
  std::vector<Ranked>& evicted = scratch_ranked_;
  evicted.clear();
  std::optional<Source> own;
  if (q.spec.preemption.within_cluster_queue != PreemptionPolicy::Never) {
    own = Source{queue, 2, -1, false, q.spec.preemption.within_cluster_queue, 0, {}};
    add_evicted(preemptor, queue, queue, 2, -1, false, frs, evicted);
  }
  // The cohorts above the queue, each with whether the preemptor has the advantage of
  // reclaiming there (hierarchical candidates) and the subtree it came from.
  std::vector<Level>& levels = scratch_levels_;
  levels.clear();
  if (tree_.has_parent(n) && q.spec.preemption.reclaim_within_cohort != PreemptionPolicy::Never) {
    Usage& remaining = scratch_remaining_;
    Usage& rest = scratch_rest_;
    bool advantage = fit_in_quota(n, usage, remaining);
    int previous = n;
    for (int a = tree_.node(n).parent; a >= 0; a = tree_.node(a).parent) {
      Level& l = levels.emplace_back();
      l.lca = a;
      l.skip = previous;
      l.advantage = advantage;
      const bool fits_here = fit_in_quota(a, remaining, rest);
      std::swap(remaining, rest);
      advantage = advantage || fits_here;
      previous = a;
    }
  }
  const bool reference = options_.reference_search;
  if (!reference && !levels.empty() && share_order(levels.front().lca, frs)) {
    ++exclude_stamp_;  // nothing left out
    for (auto& l : levels) {
      l.order = &candidate_order(l.lca, frs);
      for (const auto& [cq, child] : l.order->evicted_queues) {
        if (child != l.skip) add_evicted(preemptor, queue, cq, l.list(), l.lca, l.advantage, frs, evicted);
      }
    }
    SharedWalk walk(*this, preemptor, queue, frs, evicted, levels, own);
    search_with(walk, queue, frs, usage, out);
    return;
  }
  if (!reference && levels.size() == 1) {
    if (const CandidateOrder* o = reusable_order(levels.front().lca, frs)) {
      Level& l = levels.front();
      l.order = o;
      for (const auto& [cq, child] : o->evicted_queues) {
        if (child != l.skip && excluded_[at(cq)] != exclude_stamp_) {
          add_evicted(preemptor, queue, cq, l.list(), l.lca, l.advantage, frs, evicted);
        }
      }
      SharedWalk walk(*this, preemptor, queue, frs, evicted, levels, own);
      search_with(walk, queue, frs, usage, out);
      return;
    }
  }
  std::vector<Source>& sources = scratch_sources_;
  sources.clear();
  if (own) sources.push_back(*own);
  for (const auto& l : levels) {
    // At the first level the preemptor's own queue is left out by collect_sources itself.
    const int skip = l.skip == n ? -1 : l.skip;
    collect_sources(preemptor, queue, l.lca, l.lca, skip, l.advantage, frs, sources, evicted);
  }
  if (reference) {
    ReferenceWalk walk(*this, preemptor, queue, frs, evicted, sources);
    search_with(walk, queue, frs, usage, out);
    return;
  }
  CandidateWalk walk(*this, preemptor, queue, frs, evicted, sources, scratch_work_, scratch_heap_);
  search_with(walk, queue, frs, usage, out);
}

// The greedy search on the tree itself: removals and puts-back change it (quietly) and
// are undone before the search returns.
class Core::TreeSearch {
 public:
  TreeSearch(Core& core, int queue, const std::vector<int>& frs, const Usage& usage)
      : core_(core), queue_(queue), frs_(frs), usage_(usage) {}
  void start() {}
  [[nodiscard]] Validity validity(const Candidate& c, bool borrow) const {
    return core_.candidate_validity(c, queue_, borrow, frs_);
  }
  void remove(const Candidate& c) { core_.change_workload<false, true>(c.w); }
  [[nodiscard]] bool fits(bool borrow) const { return core_.workload_fits(queue_, usage_, borrow); }
  void fill_back(std::vector<Target>& targets, bool borrow) { core_.fill_back<true>(targets, queue_, usage_, borrow); }
  void undo(const std::vector<Target>& targets) {
    for (const auto& t : targets) core_.change_workload<true, true>(t.workload);
  }

 private:
  Core& core_;
  int queue_;
  const std::vector<int>& frs_;
  const Usage& usage_;
};

// QuotaTree::change_usage<false> for a queue under the root: takes `v` off the queue's
// usage `u`; returns what that takes off the root's (the part the root stored).
Amount Core::take_from(Amount& u, Amount local_quota, Amount v) {
  const Amount stored_in_parent = quota_sub(u, local_quota);
  u = usage_sub(u, v);
  return stored_in_parent > 0 ? std::min(v, stored_in_parent) : 0;
}

// The same search where the preemptor's queue and every candidate's queue are children of
// one root cohort and the request is one flavor-resource (a flat cohort, the common
// shape): QuotaTree's formulas (change_usage, available, borrowing_with) restricted to two
// levels and one flavor-resource, on copies of the cells the search touches. The tree is
// neither changed nor restored, and a candidate from the shared order brings its queue
// and amount along, so its record is not read either. The seeded-run hashes pin it to the
// tree's answers (mutations of these formulas fail them).
class Core::FlatSearch {
 public:
  FlatSearch(Core& core, int queue, int fr, Amount request)
      : core_(core), tree_(core.tree_), queue_(queue), node_(core.queues_[at(queue)].node), fr_(fr),
        root_(core.tree_.parent(node_)), request_(request), root_quota_(core.tree_.subtree_quota(root_, fr)),
        removed_(core.scratch_removed_), applied_sum_(core.scratch_applied_sum_) {
    if (core_.flat_stamp_.size() != tree_.size()) {
      core_.flat_stamp_.assign(tree_.size(), 0);
      core_.flat_usage_.assign(tree_.size(), 0);
    }
  }
  // Every attempt starts from the tree as it is.
  void start() {
    stamp_ = ++core_.flat_stamp_counter_;
    root_usage_ = tree_.usage(root_, fr_);
    removed_.clear();
    applied_ = 0;
    applied_whole_ = false;
    own_changed();
  }
  [[nodiscard]] Validity validity(const Candidate& c, bool borrow) {
    // candidate_validity: the cohort between the queue and the lca is the lca itself.
    if (c.queue == queue_) return Validity::Valid;
    if (borrow && c.variant == Variant::ReclaimWithoutBorrowing) return Validity::RestInvalid;
    const int n = core_.queues_[at(c.queue)].node;
    return usage(n) <= tree_.subtree_quota(n, fr_) ? Validity::RestInvalid : Validity::Valid;
  }
  void remove(const Candidate& c) {
    const int n = core_.queues_[at(c.queue)].node;
    const Amount v = c.amount >= 0 ? c.amount : usage_of(core_.wl(c.w).usage, fr_);
    removed_.emplace_back(n, v);
    take(n, v);
  }
  // workload_fits: not borrowing_with, and request <= QuotaTree::available for a queue
  // whose parent is the root, with what depends on the queue's own usage worked out
  // when that usage changes (own_changed), since fill-back mostly changes the root's.
  [[nodiscard]] bool fits(bool borrow) const {
    if (!borrow && borrowing_) return false;
    Amount from_parent = quota_sub(root_quota_, root_usage_);
    if (capped_) from_parent = std::min(from_parent, cap_);
    return request_ <= quota_add(local_, from_parent);
  }
  // Core::fill_back, with the removals kept in step with the targets.
  void fill_back(std::vector<Target>& targets, bool borrow) {
    for (int i = static_cast<int>(targets.size()) - 2; i >= 0; --i) {
      if (i < static_cast<int>(applied_) && applied_whole_) {
        fill_back_applied(targets, i, borrow);
        return;
      }
      const auto [n, v] = removed_[at(i)];
      give(n, v);
      if (fits(borrow)) {
        put_back(targets, i);
      } else {
        take(n, v);
      }
    }
  }
  void undo(const std::vector<Target>&) {}
  // Whether the request would make the preemptor's queue borrow: only removals from its
  // own queue change that.
  [[nodiscard]] bool borrowing() const { return borrowing_; }
  // Right after start(): the removals of `run` but its own queue's, as the walk of the
  // level would have made them one by one.
  void apply(const RemovalRun& run, std::vector<Target>& targets) {
    Amount root_drop = run.root_drop;
    for (const auto& r : run.queues) {
      if (r.queue == queue_) {
        root_drop = usage_sub(root_drop, r.root_drop);
        continue;
      }
      core_.flat_stamp_[at(r.node)] = stamp_;
      core_.flat_usage_[at(r.node)] = r.usage;
    }
    root_usage_ = usage_sub(root_usage_, root_drop);
    applied_whole_ = !run.lending;
    applied_sum_.assign(1, 0);
    for (const auto& x : run.removals) {
      if (x.queue == queue_) continue;
      removed_.emplace_back(x.node, x.amount);
      targets.push_back(Target{x.w, x.reason});
      applied_sum_.push_back(usage_add(applied_sum_.back(), x.amount));
    }
    applied_ = targets.size();
  }

 private:
  // What fill_back does with targets [0, i] when they are all the applied run's and each
  // gives the root its whole amount back (give() with no local quota): put target k back
  // when the preemptor still fits with the root's usage up by its amount. fits() only
  // gets harder as that usage grows, so the targets from i down that go back one after
  // another are the longest stretch whose sum fits, found by bisection on the prefix
  // sums; the target below it stays removed. The moves are fill_back's own.
  void fill_back_applied(std::vector<Target>& targets, int i, bool borrow) {
    while (i >= 0) {
      const Amount top = applied_sum_[at(i + 1)];
      int lo = 0, hi = i + 1;  // the first target of the stretch is in [lo, hi]; hi: none
      while (lo < hi) {
        const int mid = lo + (hi - lo) / 2;
        if (fits_with_root(usage_sub(top, applied_sum_[at(mid)]), borrow)) {
          hi = mid;
        } else {
          lo = mid + 1;
        }
      }
      root_usage_ = usage_add(root_usage_, usage_sub(top, applied_sum_[at(lo)]));
      for (; i >= lo; --i) put_back(targets, i);
      --i;  // target lo - 1 does not fit: it stays removed
    }
  }
  [[nodiscard]] bool fits_with_root(Amount more, bool borrow) {
    const Amount before = root_usage_;
    root_usage_ = usage_add(root_usage_, more);
    const bool ok = fits(borrow);
    root_usage_ = before;
    return ok;
  }
  void put_back(std::vector<Target>& targets, int i) {
    targets[at(i)] = targets.back();
    targets.pop_back();
    removed_[at(i)] = removed_.back();
    removed_.pop_back();
  }
  Amount& usage(int n) {
    if (core_.flat_stamp_[at(n)] != stamp_) {
      core_.flat_stamp_[at(n)] = stamp_;
      core_.flat_usage_[at(n)] = tree_.usage(n, fr_);
    }
    return core_.flat_usage_[at(n)];
  }
  // QuotaTree::change_usage<false>: what the queue stored in the root goes down with it.
  void take(int n, Amount v) {
    root_usage_ = usage_sub(root_usage_, take_from(usage(n), tree_.local_quota(n, fr_), v));
    if (n == node_) own_changed();
  }
  // QuotaTree::change_usage<true>: what the queue's local quota does not hold goes to the root.
  void give(int n, Amount v) {
    Amount& u = usage(n);
    const Amount local = std::max<Amount>(0, quota_sub(tree_.local_quota(n, fr_), u));
    u = usage_add(u, v);
    if (v > local) root_usage_ = usage_add(root_usage_, quota_sub(v, local));
    if (n == node_) own_changed();
  }
  // The parts of fits() that depend on the preemptor's queue's usage only.
  void own_changed() {
    const QuotaCell& x = tree_.cell(node_, fr_);
    const Amount u = usage(node_);
    borrowing_ = quota_add(u, request_) > x.subtree_quota;
    local_ = std::max<Amount>(0, quota_sub(x.local_quota, u));
    capped_ = x.borrowing_limit != kNoLimit;
    if (capped_) {
      const Amount stored_in_parent = quota_sub(x.subtree_quota, x.local_quota);
      const Amount used_in_parent = std::max<Amount>(0, quota_sub(u, x.local_quota));
      cap_ = quota_add(quota_sub(stored_in_parent, used_in_parent), x.borrowing_limit);
    }
  }
  Core& core_;
  const QuotaTree& tree_;
  int queue_, node_, fr_, root_;
  Amount request_, root_quota_;
  std::vector<std::pair<int, Amount>>& removed_;  // per target: its queue's node and amount
  std::uint64_t stamp_ = 0;
  Amount root_usage_ = 0;
  std::size_t applied_ = 0;  // targets [0, applied_) are the applied run's (apply)
  // Whether each of them gives the root its whole amount back (no lending limit in the
  // run, so no queue holds any of it in its local quota), and the sum of the amounts of
  // targets [0, k) at k.
  bool applied_whole_ = false;
  std::vector<Amount>& applied_sum_;
  // own_changed()
  bool borrowing_ = false, capped_ = false;
  Amount local_ = 0, cap_ = 0;
};

// Whether FlatSearch applies: one flavor-resource, and the queue's cohort is a root whose
// children are all queues (every candidate of the search then sits in a child queue).
bool Core::flat_search(int queue, const std::vector<int>& frs, const Usage& usage) const {
  if (frs.size() != 1 || usage.size() != 1 || usage.front().first != frs.front()) return false;
  const int n = queues_[at(queue)].node;
  return tree_.has_parent(n) && flat_cohort(tree_.parent(n));
}

auto Core::removal_run(const Wl& preemptor, int queue, const Level& l, int fr) -> const RemovalRun& {
  const auto& p = queues_[at(queue)].spec.preemption;
  const VirtualTime creation = run_creation(preemptor, p);
  const std::uint64_t exclusion = l.order->epoch == epoch_ ? 0 : exclude_stamp_;
  for (const RemovalRun& r : removal_runs_) {
    if (r.epoch == epoch_ && r.victims == victim_ids_.size() && r.exclusion == exclusion &&
        r.lca == l.lca && r.fr == fr &&
        r.priority == preemptor.spec.priority && r.creation == creation && r.reclaim == p.reclaim_within_cohort &&
        r.borrow == p.borrow_within_cohort && r.threshold == p.max_priority_threshold && r.advantage == l.advantage) {
      return r;
    }
  }
  // Runs of another state are of no use again; their buffers are.
  std::size_t used = 0;
  for (std::size_t i = 0; i < removal_runs_.size(); ++i) {
    const RemovalRun& r = removal_runs_[i];
    if (r.epoch == epoch_ && r.victims == victim_ids_.size()) std::swap(removal_runs_[used++], removal_runs_[i]);
  }
  if (used == removal_runs_.size()) removal_runs_.emplace_back();
  RemovalRun& r = removal_runs_[used];
  r.epoch = epoch_;
  r.victims = victim_ids_.size();
  r.exclusion = exclusion;
  r.lca = l.lca;
  r.fr = fr;
  r.priority = preemptor.spec.priority;
  r.creation = creation;
  r.reclaim = p.reclaim_within_cohort;
  r.borrow = p.borrow_within_cohort;
  r.threshold = p.max_priority_threshold;
  r.advantage = l.advantage;
  r.removals.clear();
  r.queues.clear();
  r.root_drop = 0;
  r.lending = false;
  if (run_slot_.size() != queues_.size()) run_slot_.assign(queues_.size(), {0, 0});
  const std::uint64_t stamp = ++run_stamp_;
  constexpr int kOtherQueue = -2;  // classify as a candidate from another queue than the preemptor's
  for (const OrderEntry& e : l.order->entries) {
    // SharedWalk::settle, for every queue of the level.
    if (past_cutoff(r.reclaim, e.priority, r.priority)) break;
    if (!e.uses || victim_this_cycle(e.w)) continue;
    // As settle leaves a reused order's excluded queues out (they are within nominal, so
    // validity would drop them at their first candidate anyway).
    if (exclusion != 0 && excluded_[at(e.queue)] == exclusion) continue;
    auto& [slot_stamp, slot] = run_slot_[at(e.queue)];
    if (slot_stamp != stamp) {
      slot_stamp = stamp;
      slot = r.queues.size();
      const int n = queues_[at(e.queue)].node;
      r.queues.push_back(RemovalRun::QueueRun{e.queue, n, tree_.usage(n, fr), 0, false});
      if (tree_.local_quota(n, fr) > 0) r.lending = true;
    }
    RemovalRun::QueueRun& q = r.queues[slot];
    if (q.dropped) continue;
    const Variant v = classify(preemptor, queue, kOtherQueue, e.priority, e.creation, l.advantage);
    if (v == Variant::Never) continue;
    // FlatSearch::validity without borrowing, then FlatSearch::take.
    if (q.usage <= tree_.subtree_quota(q.node, fr)) {
      q.dropped = true;
      continue;
    }
    const Amount amount = e.amount >= 0 ? e.amount : usage_of(wl(e.w).usage, fr);
    const Amount drop = take_from(q.usage, tree_.local_quota(q.node, fr), amount);
    q.root_drop = usage_add(q.root_drop, drop);
    r.root_drop = usage_add(r.root_drop, drop);
    r.removals.push_back(RemovalRun::Removal{e.w, e.queue, q.node, amount, variant_reason(v)});
  }
  return r;
}

template <class Walk>
void Core::search_with(Walk& walk, int queue, const std::vector<int>& frs, const Usage& usage, std::vector<Target>& out) {
  if (!options_.reference_search && flat_search(queue, frs, usage)) {
    FlatSearch search(*this, queue, frs.front(), usage.front().second);
    minimal_preemptions(walk, search, queue, frs, out);
  } else {
    TreeSearch search(*this, queue, frs, usage);
    minimal_preemptions(walk, search, queue, frs, out);
  }
}

// The attempts of classicalPreemptions over a walk of the candidates (minimalPreemptions).
template <class Walk, class Search>
void Core::minimal_preemptions(Walk& all, Search& search, int queue, const std::vector<int>& frs, std::vector<Target>& out) {
  out.clear();
  const int n = queues_[at(queue)].node;
  const Queue& q = queues_[at(queue)];
  const bool has_hierarchy = all.any_in(0);
  const bool has_priority = all.any_in(1);
  const bool no_other = !has_hierarchy && !has_priority;
  const bool borrow_forbidden = q.spec.preemption.borrow_within_cohort == BorrowWithinCohortPolicy::Never;
  auto under_nominal = [&] {
    return std::all_of(frs.begin(), frs.end(), [&](int fr) { return tree_.nominal(n, fr) > tree_.usage(n, fr); });
  };
  std::array<bool, 2> attempts{true, false};
  std::size_t attempt_count = 2;
  if (no_other || (borrow_forbidden && !under_nominal())) {
    attempt_count = 1;
  } else if (borrow_forbidden && !has_hierarchy) {
    attempts = {false, true};
  }
  std::vector<Target>& targets = scratch_targets_;
  for (std::size_t k = 0; k < attempt_count; ++k) {
    const bool borrow = attempts[k];
    targets.clear();
    all.restart();
    search.start();
    if constexpr (std::is_same_v<Walk, SharedWalk>) {
      if (borrow && borrow_forbidden && all.no_advantage()) {
        // Every candidate of the levels is invalid in this attempt (candidate_validity:
        // ReclaimWithoutBorrowing while borrowing) and only drops its queue.
        all.skip_levels();
      } else if constexpr (std::is_same_v<Search, FlatSearch>) {
        if (!borrow && search.borrowing()) {
          if (const Level* l = all.lone_level()) {
            search.apply(removal_run(all.preemptor(), queue, *l, frs.front()), targets);
            all.skip_levels();
          }
        }
      }
    }
    // Every removal is undone before returning, and nothing the quiet changes skip
    // (versions, queues above nominal) is read in between.
    while (const Candidate* next = all.next()) {
      const Candidate& c = *next;
      if (search.validity(c, borrow) == Validity::RestInvalid) {
        all.drop_source();
        continue;
      }
      search.remove(c);
      targets.push_back(Target{c.w, variant_reason(c.variant)});
      if (search.fits(borrow)) {
        search.fill_back(targets, borrow);
        search.undo(targets);
        out.assign(targets.begin(), targets.end());
        return;
      }
    }
    search.undo(targets);
  }
}

}  // namespace gpubank::twin::admission
