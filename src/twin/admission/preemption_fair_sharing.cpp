// Fair-sharing preemption and DRS. Follows pkg/cache/scheduler/fair_sharing.go and
// pkg/scheduler/preemption/fairsharing (ordering.go, strategy.go).
#include "twin/admission/core_impl.hpp"

namespace gpubank::twin::admission {

// A node's DRS depends on its cells only, and every change of a cell (usage or quota)
// bumps the node's version: so it is cached per version (not in reference mode).
const Drs& Core::drs(int n) const {
  if (drs_cache_.size() != tree_.size()) drs_cache_.assign(tree_.size(), {0, Drs{}});
  auto& [version, cached] = drs_cache_[at(n)];
  if (version != tree_.version(n) || options_.reference_search) {
    cached = compute_drs(n);
    version = tree_.version(n);
  }
  return cached;
}

Drs Core::compute_drs(int n) const {
  const auto& x = tree_.node(n);
  Drs d;
  d.weight = x.fair_weight;
  if (x.parent < 0) return d;
  bool any_borrowed = false;
  const std::size_t resources = resource_names_.size();
  std::vector<Amount>& borrowed = drs_borrowed_;  // scratch: DRS is recomputed very often
  borrowed.assign(resources, 0);
  for (std::size_t fr = 0; fr < tree_.fr_count(); ++fr) {
    const QuotaCell& c = tree_.cell(n, static_cast<int>(fr));
    const Amount b = quota_sub(c.usage, c.subtree_quota);
    if (b > 0) {
      borrowed[at(fr_resource_index_[fr])] = quota_add(borrowed[at(fr_resource_index_[fr])], b);
      any_borrowed = true;
    }
  }
  if (!any_borrowed) return d;
  d.borrowing = true;
  std::vector<Amount>& lendable = drs_lendable_;
  lendable.assign(resources, 0);
  for (std::size_t fr = 0; fr < tree_.fr_count(); ++fr) {
    if (borrowed[at(fr_resource_index_[fr])] > 0) {
      lendable[at(fr_resource_index_[fr])] =
          quota_add(lendable[at(fr_resource_index_[fr])], tree_.potential_available(x.parent, static_cast<int>(fr)));
    }
  }
  for (std::size_t r = 0; r < resources; ++r) {
    if (borrowed[r] <= 0 || lendable[r] <= 0) continue;
    const double ratio = static_cast<double>(borrowed[r]) * 1000.0 / static_cast<double>(lendable[r]);
    if (ratio > d.ratio ||
        (ratio == d.ratio && (d.dominant < 0 || resource_names_[r] < resource_names_[at(d.dominant)]))) {
      d.ratio = ratio;
      d.dominant = static_cast<int>(r);
    }
  }
  return d;
}

std::vector<int> Core::ancestors(int n) const {
  std::vector<int> out;
  for (int a = tree_.node(n).parent; a >= 0; a = tree_.node(a).parent) out.push_back(a);
  return out;
}

// The child of `lca` on the path from node n (getAlmostLCA).
int Core::almost_lca(int n, int lca) const {
  int child = n;
  for (int a = tree_.node(n).parent; a >= 0; a = tree_.node(a).parent) {
    if (a == lca) return child;
    child = a;
  }
  return child;
}

std::vector<Target> Core::fair_preemptions(WorkloadId id, int queue, const std::vector<int>& frs, const Usage& usage) {
  const Wl& preemptor = wl(id);
  const Queue& q = queues_[at(queue)];
  const int pn = q.node;
  // findCandidates
  std::vector<WorkloadId> candidates;
  auto uses = [&](WorkloadId w) { return uses_resources(w, frs); };
  if (q.spec.preemption.within_cluster_queue != PreemptionPolicy::Never) {
    for (WorkloadId w : q.holding) {
      if (victim_this_cycle(w)) continue;
      if (satisfies(preemptor, wl(w), q.spec.preemption.within_cluster_queue) && uses(w)) candidates.push_back(w);
    }
  }
  if (tree_.has_parent(pn) && q.spec.preemption.reclaim_within_cohort != PreemptionPolicy::Never) {
    std::vector<int> stack{tree_.root(pn)};
    std::vector<int> subtree_queues;
    while (!stack.empty()) {
      const int x = stack.back();
      stack.pop_back();
      const auto& node = tree_.node(x);
      if (node.is_queue) {
        subtree_queues.push_back(node_queue_[at(x)]);
        continue;
      }
      for (auto it = node.child_queues.rbegin(); it != node.child_queues.rend(); ++it) stack.push_back(*it);
      for (auto it = node.child_cohorts.rbegin(); it != node.child_cohorts.rend(); ++it) stack.push_back(*it);
    }
    std::sort(subtree_queues.begin(), subtree_queues.end());
    for (int other : subtree_queues) {
      if (other == queue || !queues_[at(other)].spec.active) continue;  // inactive: not in the snapshot
      const int on = queues_[at(other)].node;
      const bool borrowing = std::any_of(frs.begin(), frs.end(), [&](int fr) { return tree_.borrowing_with(on, fr, 0); });
      if (!borrowing) continue;
      for (WorkloadId w : queues_[at(other)].holding) {
        if (victim_this_cycle(w)) continue;
        if (satisfies(preemptor, wl(w), q.spec.preemption.reclaim_within_cohort) && uses(w)) candidates.push_back(w);
      }
    }
  }
  if (candidates.empty()) return {};
  const VirtualTime now = now_;
  std::sort(candidates.begin(), candidates.end(),
            [&](WorkloadId a, WorkloadId b) { return candidate_before(a, b, queue, now); });

  add_usage(queue, usage);  // shares include the incoming workload
  const std::vector<int> preemptor_ancestors = ancestors(pn);
  auto fits_fs = [&] {
    remove_usage(queue, usage);
    const bool ok = workload_fits(queue, usage, true);
    add_usage(queue, usage);
    return ok;
  };

  // TargetClusterQueueOrdering over per-queue candidate lists.
  // Per queue: its candidates in order, and how many were taken.
  std::vector<std::vector<WorkloadId>>& per_queue = fs_lists_;
  std::vector<std::size_t>& taken = fs_taken_;
  per_queue.resize(queues_.size());
  for (auto& list : per_queue) list.clear();  // the buffers outlive a call
  taken.assign(queues_.size(), 0);
  std::vector<int> used_queues;
  auto make_lists = [&](const std::vector<WorkloadId>& cands) {
    for (int used : used_queues) {
      per_queue[at(used)].clear();
      taken[at(used)] = 0;
    }
    used_queues.clear();
    for (WorkloadId w : cands) {
      auto& list = per_queue[at(wl(w).queue)];
      if (list.empty()) used_queues.push_back(wl(w).queue);
      list.push_back(w);
    }
  };
  auto has_work = [&](int qi) { return taken[at(qi)] < per_queue[at(qi)].size(); };
  auto front = [&](int qi) { return per_queue[at(qi)][taken[at(qi)]]; };
  auto pop = [&](int qi) { return per_queue[at(qi)][taken[at(qi)]++]; };
  std::vector<char>& pruned_queue_flags = fs_pruned_queues_;
  std::vector<char>& pruned_cohort_flags = fs_pruned_cohorts_;
  pruned_queue_flags.assign(queues_.size(), 0);
  pruned_cohort_flags.assign(tree_.size(), 0);
  struct Flags {
    std::vector<char>& f;
    [[nodiscard]] bool contains(int i) const { return f[static_cast<std::size_t>(i)] != 0; }
    void insert(int i) { f[static_cast<std::size_t>(i)] = 1; }
    void clear() { std::fill(f.begin(), f.end(), 0); }
  } pruned_queues{pruned_queue_flags}, pruned_cohorts{pruned_cohort_flags};
  auto on_path = [&](int cohort) {
    return std::find(preemptor_ancestors.begin(), preemptor_ancestors.end(), cohort) != preemptor_ancestors.end();
  };
  // The queue choice at a cohort is the maximum of a strict order (the larger DRS, then
  // the earlier front candidate), and between two choices only the queue chosen last
  // changes (its usage and its front): so each cohort keeps its eligible child queues in a
  // heap, and the last choice is re-placed before the next, instead of a scan of every
  // child queue per target. Pruning is permanent within a strategy run, as upstream.
  auto eligible = [&](int child) {
    const int qi = node_queue_[at(child)];
    if (pruned_queues.contains(qi)) return false;
    const Drs& d = drs(child);
    if ((!d.borrowing && qi != queue) || !has_work(qi)) {
      pruned_queues.insert(qi);
      return false;
    }
    return true;
  };
  auto ranks_below = [&](int a, int b) {  // heap order: a ranks below b
    const int c = compare_drs(drs(a), drs(b));
    if (c != 0) return c < 0;
    return candidate_before(front(node_queue_[at(b)]), front(node_queue_[at(a)]), queue, now);
  };
  std::vector<std::vector<int>>& heaps = fs_heaps_;  // per cohort node: child queue nodes
  std::vector<char>& heap_built = fs_heap_built_;
  heaps.resize(tree_.size());
  heap_built.assign(tree_.size(), 0);
  int last_choice = -1;  // the queue node chosen last, still at the top of its cohort's heap
  auto reset_heaps = [&] {
    std::fill(heap_built.begin(), heap_built.end(), 0);
    last_choice = -1;
  };
  auto replace_last_choice = [&] {
    if (last_choice < 0 || options_.reference_search) return;
    const int cohort = tree_.node(last_choice).parent;
    auto& heap = heaps[at(cohort)];
    if (heap_built[at(cohort)] != 0) {
      if (!heap.empty() && heap.front() == last_choice) {
        std::pop_heap(heap.begin(), heap.end(), ranks_below);
        heap.pop_back();
        if (eligible(last_choice)) {
          heap.push_back(last_choice);
          std::push_heap(heap.begin(), heap.end(), ranks_below);
        }
      } else {
        heap_built[at(cohort)] = 0;  // not where it was left: rebuild rather than trust it
      }
    }
    last_choice = -1;
  };
  // Reference mode: the best child queue by a scan of the cohort's children, as upstream.
  auto best_child_queue = [&](int cohort) {
    int best = -1;
    for (int child : tree_.node(cohort).child_queues) {
      if (eligible(child) && (best < 0 || ranks_below(best, child))) best = child;
    }
    return best;
  };
  std::function<int(int)> next_target = [&](int cohort) -> int {
    auto& heap = heaps[at(cohort)];
    if (options_.reference_search) {
      heap.clear();
      if (const int best = best_child_queue(cohort); best >= 0) heap.push_back(best);
    } else if (heap_built[at(cohort)] == 0) {
      heap.clear();
      // Only a queue with candidates can be eligible, and lists do not grow within a
      // strategy run: the queues of this cohort among those with candidates, not every
      // child. The heap's top is the maximum of a strict order, whatever the build order.
      for (int qi : used_queues) {
        const int child = queues_[at(qi)].node;
        if (tree_.node(child).parent == cohort && eligible(child)) heap.push_back(child);
      }
      std::make_heap(heap.begin(), heap.end(), ranks_below);
      heap_built[at(cohort)] = 1;
    }
    const int best_node = heap.empty() ? -1 : heap.front();
    const int best_q = best_node < 0 ? -1 : node_queue_[at(best_node)];
    const Drs& best_q_drs = best_node < 0 ? kNegativeDrs : drs(best_node);
    int best_c = -1;
    Drs best_c_drs = Drs::negative();
    for (int child : tree_.node(cohort).child_cohorts) {
      if (pruned_cohorts.contains(child)) continue;
      const Drs& d = drs(child);
      if (!d.borrowing && !on_path(child)) {
        pruned_cohorts.insert(child);
      } else if (compare_drs(d, best_c_drs) >= 0) {
        best_c_drs = d;
        best_c = child;
      }
    }
    if (best_c < 0 && best_q < 0) {
      pruned_cohorts.insert(cohort);
      return -1;
    }
    if (best_c >= 0 && compare_drs(best_c_drs, best_q_drs) >= 0) return next_target(best_c);
    last_choice = best_node;
    return best_q;
  };
  // Yields the next target queue, or -1 when exhausted.
  const int root = tree_.has_parent(pn) ? tree_.root(pn) : -1;
  auto next_queue = [&]() -> int {
    if (root < 0) return (!pruned_queues.contains(queue) && has_work(queue)) ? queue : -1;
    replace_last_choice();
    while (!pruned_cohorts.contains(root)) {
      const int t = next_target(root);
      if (t >= 0) return t;
    }
    return -1;
  };
  auto lca_of = [&](int target_queue) {
    for (int a = tree_.node(queues_[at(target_queue)].node).parent; a >= 0; a = tree_.node(a).parent) {
      if (on_path(a)) return a;
    }
    return -1;
  };
  auto shares = [&](int target_queue) {
    const int lca = lca_of(target_queue);
    return std::make_pair(drs(almost_lca(pn, lca)), drs(almost_lca(queues_[at(target_queue)].node, lca)));
  };
  auto strategy_passes = [&](FairSharingStrategy s, const Drs& preemptor_new, const Drs& target_old,
                             const Drs& target_new) {
    return s == FairSharingStrategy::LessThanOrEqualToFinalShare ? compare_drs(preemptor_new, target_new) <= 0
                                                                 : compare_drs(preemptor_new, target_old) < 0;
  };
  const auto& strategies = options_.fair_sharing_strategies;
  const bool within_nominal_now = std::none_of(frs.begin(), frs.end(), [&](int fr) { return tree_.borrowing_with(pn, fr, 0); });

  std::vector<Target> targets;
  std::vector<WorkloadId> retry;
  bool fits_now = false;
  make_lists(candidates);
  // runFirstFsStrategy
  for (int t = next_queue(); t >= 0 && !fits_now; t = next_queue()) {
    if (t == queue) {
      const WorkloadId w = pop(t);
      remove_workload(w);
      targets.push_back(Target{w, "InClusterQueue"});
      if (fits_fs()) fits_now = true;
      continue;
    }
    if (within_nominal_now) {
      const WorkloadId w = pop(t);
      remove_workload(w);
      targets.push_back(Target{w, "InCohortReclamation"});
      if (fits_fs()) fits_now = true;
      continue;
    }
    const auto [preemptor_new, target_old] = shares(t);
    if (preemptor_new.weighted() == std::numeric_limits<double>::infinity() &&
        target_old.weighted() != std::numeric_limits<double>::infinity()) {
      while (has_work(t)) retry.push_back(pop(t));
      continue;
    }
    while (has_work(t)) {
      const WorkloadId w = pop(t);
      remove_workload(w);
      const Drs target_new = shares(t).second;
      add_workload(w);
      if (strategy_passes(strategies.front(), preemptor_new, target_old, target_new)) {
        remove_workload(w);
        targets.push_back(Target{w, "InCohortFairSharing"});
        if (fits_fs()) fits_now = true;
        break;
      }
      retry.push_back(w);
    }
  }
  // runSecondFsStrategy (rule S2-b)
  if (!fits_now && strategies.size() > 1) {
    make_lists(retry);
    pruned_queues.clear();
    pruned_cohorts.clear();
    reset_heaps();
    for (int t = next_queue(); t >= 0 && !fits_now; t = next_queue()) {
      const auto [preemptor_new, target_old] = shares(t);
      const WorkloadId w = pop(t);
      if (compare_drs(preemptor_new, target_old) < 0) {
        remove_workload(w);
        targets.push_back(Target{w, "InCohortFairSharing"});
        if (fits_fs()) fits_now = true;
      }
      pruned_queues.insert(t);
    }
  }
  remove_usage(queue, usage);
  if (!fits_now) {
    for (const auto& t : targets) add_workload(t.workload);
    return {};
  }
  fill_back<false>(targets, queue, usage, true);
  for (const auto& t : targets) add_workload(t.workload);
  return targets;
}

}  // namespace gpubank::twin::admission
