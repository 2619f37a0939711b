// The scheduling cycle: nomination, entry order (classical or the fair-sharing tournament),
// processing with the cycle's victims, admission. Follows pkg/scheduler/scheduler.go.
#include "twin/admission/core_impl.hpp"

namespace gpubank::twin::admission {

// Scheduler.getInitialAssignments: the full assignment when it fits or finds targets to
// preempt, else (PartialAdmission) the most pods that do, else the full one without targets.
void Core::nominate(Entry& e) {
  assign(e.w, e.a);
  e.targets.clear();
  if (e.a.mode() == Mode::Preempt) e.targets = targets_of(e.w, e.queue, e.a);
  if (e.a.mode() != Mode::Fit && e.targets.empty() && options_.partial_admission && wl(e.w).partial) reduce(e);
  e.a.message(e.message);
}

// The preemption targets for an assignment in Preempt mode (GetTargets): over the
// flavor-resources it would preempt in. The result lives in the targets cache.
const std::vector<Target>& Core::targets_of(WorkloadId id, int queue, const Assignment& a) {
  std::vector<int>& frs = scratch_nominate_frs_;
  frs.clear();
  for (const auto& ps : a.pod_sets) {
    for (const auto& f : ps.flavors) {
      if (f.mode == Mode::Preempt) frs.push_back(f.fr);
    }
  }
  std::sort(frs.begin(), frs.end());
  frs.erase(std::unique(frs.begin(), frs.end()), frs.end());
  return get_targets(id, queue, frs, a.usage);
}

// PodSetReducer.Search with getInitialAssignments' test: sort.Search over the indices
// [0, totalDelta] for the first whose counts fit, or preempt with targets; index i gives
// each pod set full - delta * i / totalDelta pods (full: the spec's count, delta: full -
// minCount). The probes are upstream's, in its order, and a test that is not monotone
// is taken as it answers. Found: the entry takes that assignment and its targets.
void Core::reduce(Entry& e) {
  const Wl& w = wl(e.w);
  const std::size_t n = w.spec.pod_sets.size();
  std::vector<std::int32_t>& full = scratch_full_counts_;
  std::vector<std::int32_t>& delta = scratch_count_deltas_;
  std::vector<std::int32_t>& counts = scratch_counts_;
  full.resize(n);
  delta.resize(n);
  counts.resize(n);
  std::int64_t total = 0;
  for (std::size_t p = 0; p < n; ++p) {
    const PodSetSpec& ps = w.spec.pod_sets[p];
    full[p] = ps.spec_count >= 0 ? ps.spec_count : ps.count;
    delta[p] = full[p] - ps.min_count.value_or(full[p]);
    total += delta[p];
  }
  if (total <= 0) return;
  Assignment& trial = scratch_trial_assignment_;
  Assignment& found = scratch_found_assignment_;
  std::vector<Target>& found_targets = scratch_found_targets_;
  std::int64_t last_good = 0;
  bool any = false;
  std::int64_t lo = 0, hi = total + 1;
  while (lo < hi) {
    const std::int64_t h = lo + (hi - lo) / 2;
    for (std::size_t p = 0; p < n; ++p) counts[p] = full[p] - static_cast<std::int32_t>(delta[p] * h / total);
    assign(e.w, trial, &counts);
    bool fits = trial.mode() == Mode::Fit;
    if (!fits && trial.mode() == Mode::Preempt) {
      const auto& targets = targets_of(e.w, e.queue, trial);
      fits = !targets.empty();
      if (fits) found_targets.assign(targets.begin(), targets.end());
    } else if (fits) {
      found_targets.clear();
    }
    if (fits) {
      last_good = h;
      any = true;
      std::swap(found, trial);
      hi = h;
    } else {
      lo = h + 1;
    }
  }
  if (!any || lo != last_good) return;
  std::swap(e.a, found);
  e.targets.assign(found_targets.begin(), found_targets.end());
}

// The victims chosen so far in a cycle. What fits in a queue depends only on usage under
// its root cohort, so the victims' usage is also summed per queue under each root:
// simulating their removal for an entry touches its own tree once per queue that lost a
// victim, not once per victim of the cycle. (The tree is a function of the queues'
// usage, see QuotaTree::add_usage_quietly, so removing a sum is removing its parts.)
//
// Kept out (classical cycles): the victims' usage is taken out of the tree as they are
// chosen and put back at the end of the processing, instead of for every entry. What
// processing reads then wants them out (fits(), a recomputed assignment), except the
// reservation for a preemptor without targets, which adds the victims of its own queue
// back (usage_in). Fair sharing compares shares that include them, so it keeps them in.
class Core::Victims {
 public:
  Victims(Core& core, bool kept_out) : core_(core), kept_out_(kept_out) {}
  Victims(const Victims&) = delete;
  Victims& operator=(const Victims&) = delete;
  ~Victims() { put_back(); }
  [[nodiscard]] bool kept_out() const { return kept_out_; }
  [[nodiscard]] bool contains(WorkloadId w) const { return core_.victim_this_cycle(w); }
  void insert(WorkloadId w) {
    if (core_.victim_this_cycle(w)) return;
    const Wl& x = core_.wl(w);
    auto& bits = core_.victim_bits_;
    if (w / 64 >= bits.size()) bits.resize(w / 64 + 1, 0);
    bits[w / 64] |= std::uint64_t{1} << (w % 64);
    core_.victim_ids_.push_back(w);
    if (kept_out_) core_.remove_workload(w);
    const int root = core_.tree_.root(core_.queues_[at(x.queue)].node);
    if (by_root_.empty()) {
      by_root_.resize(core_.tree_.size());
      slot_.assign(core_.queues_.size(), -1);
    }
    auto& queues = by_root_[at(root)];
    int& slot = slot_[at(x.queue)];
    if (slot < 0) {
      slot = static_cast<int>(queues.size());
      queues.emplace_back(x.queue, Usage{});
    }
    for (const auto& [fr, v] : x.usage) add_to(queues[at(slot)].second, fr, v);
  }
  // The victims' usage under the root cohort of a queue, per queue.
  [[nodiscard]] const std::vector<std::pair<int, Usage>>& under(int queue) const {
    static const std::vector<std::pair<int, Usage>> kNone;
    if (by_root_.empty()) return kNone;
    return by_root_[at(core_.tree_.root(core_.queues_[at(queue)].node))];
  }
  // What a check that wants the victims gone must still take out of the tree: nothing
  // when they are kept out already.
  [[nodiscard]] const std::vector<std::pair<int, Usage>>& in_tree_under(int queue) const {
    static const std::vector<std::pair<int, Usage>> kNone;
    return kept_out_ ? kNone : under(queue);
  }
  // The victims' usage of fr in one queue.
  [[nodiscard]] Amount usage_in(int queue, int fr) const {
    if (slot_.empty() || slot_[at(queue)] < 0) return 0;
    return usage_of(under(queue)[at(slot_[at(queue)])].second, fr);
  }
  // The end of processing: the tree holds the victims again (they keep their quota until
  // released).
  void put_back() {
    if (!kept_out_) return;
    kept_out_ = false;
    for (const auto& queues : by_root_) {
      for (const auto& [queue, usage] : queues) core_.add_usage(queue, usage);
    }
  }

 private:
  Core& core_;
  bool kept_out_;
  std::vector<std::vector<std::pair<int, Usage>>> by_root_;  // by root node, sized on the first victim
  std::vector<int> slot_;                                     // by queue: its index in by_root_
};

// fits() in scheduler.go: with the victims of this cycle and the entry's own removed.
// Quietly: everything is put back, and fits() reads usage only.
bool Core::fits_after(const Entry& e, const Victims& victims, const std::vector<Target>& targets) {
  const auto& under = victims.in_tree_under(e.queue);
  for (const auto& [queue, usage] : under) change_usage<false, true>(queue, usage);
  for (const auto& t : targets) {
    if (!victims.contains(t.workload)) change_workload<false, true>(t.workload);
  }
  const bool ok = fits(e.queue, e.a.usage);
  for (const auto& t : targets) {
    if (!victims.contains(t.workload)) change_workload<true, true>(t.workload);
  }
  for (const auto& [queue, usage] : under) change_usage<true, true>(queue, usage);
  return ok;
}

// quotaResourcesToReserve
Usage Core::reserve_for(const Entry& e, const Victims& victims) const {
  const int n = queues_[at(e.queue)].node;
  Usage out;
  for (const auto& [fr, v] : e.a.usage) {
    QuotaCell x = tree_.cell(n, fr);
    if (victims.kept_out()) x.usage = usage_add(x.usage, victims.usage_in(e.queue, fr));
    Amount r;
    if (e.a.borrowing > 0) {
      // Upstream can compute a negative amount here when usage is above nominal +
      // borrowingLimit (the limit was lowered under running work). Its snapshot is rebuilt
      // every cycle and a negative addUsage never reaches the parent, so nobody else sees
      // it; the twin's tree persists across cycles, where add and remove of a negative
      // amount would not cancel out. Zero has the same effect on every other queue.
      r = x.borrowing_limit == kNoLimit
              ? v
              : std::max<Amount>(0, std::min(v, quota_sub(quota_add(x.nominal, x.borrowing_limit), x.usage)));
    } else {
      r = std::max<Amount>(0, std::min(v, quota_sub(x.nominal, x.usage)));
    }
    out.emplace_back(fr, r);
  }
  return out;
}

const std::string* Core::preemption_reason(std::string_view reason) {
  for (const std::string* r : r_preemption_) {
    if (*r == reason) return r;
  }
  return intern(reason);
}

void Core::admit(Entry& e, VirtualTime now, CycleResult& out) {
  Wl& w = wl(e.w);
  Queue& q = queues_[at(e.queue)];
  w.admitted.clear();
  for (std::size_t p = 0; p < e.a.pod_sets.size(); ++p) {
    for (const auto& f : e.a.pod_sets[p].flavors) w.admitted.push_back(AdmittedFlavor{static_cast<std::uint32_t>(p), f.fr});
  }
  w.has_admission = true;
  w.restored.reset();
  w.admitted_counts.clear();
  if (w.partial) {
    bool reduced = false;
    for (std::size_t p = 0; p < e.a.pod_sets.size(); ++p) reduced |= e.a.pod_sets[p].count != w.spec.pod_sets[p].count;
    if (reduced) {
      for (const auto& ps : e.a.pod_sets) w.admitted_counts.push_back(ps.count);
    }
  }
  w.usage.assign(e.a.usage.begin(), e.a.usage.end());  // the pooled entry keeps its buffer
  w.phase = WorkloadPhase::Admitted;
  w.admitted_at = now;
  w.reserved_at = whole_second(now);
  set_condition(w, CondType::QuotaReserved, true, r_quota_reserved_, MessageKind::QuotaReservedIn, {}, now);
  reset_eviction_conditions(w, r_quota_reserved_, now);
  set_condition(w, CondType::Admitted, true, r_admitted_, MessageKind::WorkloadAdmitted, {}, now);
  if (q.sticky && *q.sticky == e.w) q.sticky.reset();
  pending_erase(q, w, e.pending_at);
  hold(e.w);
  e.status = Entry::Status::Assumed;
  next_decision(out, Decision::Kind::Admitted, e.w, q.spec.name, *r_quota_reserved_, q.reserved_message);
}

void Core::process(Entry& e, Victims& preempted, std::vector<std::pair<int, Usage>>& reserved, CycleResult& out,
                   VirtualTime now) {
  auto any_preempted = [&](const std::vector<Target>& targets) {
    return std::any_of(targets.begin(), targets.end(), [&](const Target& t) { return preempted.contains(t.workload); });
  };
  // updateAssignmentIfNeeded (RecomputeAssignmentUponPreemptionTargetsOverlap, on by
  // default since 0.20): overlapping targets -> recompute with the other victims gone, as
  // usage and as candidates (victim_this_cycle).
  bool ok = fits_after(e, preempted, e.targets);
  if (any_preempted(e.targets)) {
    // The others cannot change this queue's assignment.
    const auto& under = preempted.in_tree_under(e.queue);
    {
      const UndoneChanges undone(*this);
      for (const auto& [queue, usage] : under) remove_usage(queue, usage);
      const Assignment nominated = e.a;
      pinned_ = &nominated;
      nominate(e);
      pinned_ = nullptr;
      for (const auto& [queue, usage] : under) add_usage(queue, usage);
    }
    if (e.a.mode() == Mode::Fit) e.a.forced = Mode::DeferredFit;
    ok = fits_after(e, preempted, e.targets);
  }
  const Mode mode = e.a.mode();
  if (mode == Mode::NoFit) {
    e.requeue = Requeue::NoFit;
    e.granular_reason = no_fit_reason(e.a.no_fit_reason());
    return;
  }
  if (mode == Mode::Preempt && e.targets.empty()) {
    e.requeue = Requeue::NoCandidates;
    e.granular_reason = r_waiting_for_quota_;
    // reserveCapacityForUnreclaimablePreempt: unless the queue can always reclaim.
    if (queues_[at(e.queue)].spec.preemption.reclaim_within_cohort != PreemptionPolicy::Any) {
      Usage r = reserve_for(e, preempted);
      add_usage(e.queue, r);
      reserved.emplace_back(e.queue, std::move(r));
    }
    return;
  }
  if (mode == Mode::DeferredFit) {
    e.message = "Workload has overlapping preemption targets with another workload, but will fit after these preemptions complete";
    e.granular_reason = r_waiting_for_preempted_;
    e.requeue = Requeue::PendingPreemption;
    add_usage(e.queue, e.a.usage);
    reserved.emplace_back(e.queue, e.a.usage);
    return;
  }
  if (any_preempted(e.targets)) {
    e.status = Entry::Status::Skipped;
    e.message = "Workload has overlapping preemption targets with another workload";
    e.granular_reason = r_waiting_for_quota_;
    return;
  }
  if (!ok) {
    e.status = Entry::Status::Skipped;
    e.message = "Workload no longer fits after processing another workload";
    e.granular_reason = r_waiting_for_quota_;
    return;
  }
  for (const auto& t : e.targets) preempted.insert(t.workload);
  if (mode == Mode::Preempt) {
    add_usage(e.queue, e.a.usage);
    reserved.emplace_back(e.queue, e.a.usage);
    // Preemptor.IssuePreemptions
    const Wl& preemptor = wl(e.w);
    std::string& message = message_buffer_;
    message.assign("Preempted to accommodate a workload (UID: ")
        .append(preemptor.spec.uid.empty() ? "UNKNOWN" : preemptor.spec.uid)
        .append(", JobUID: ")
        .append(preemptor.spec.job_uid.empty() ? "UNKNOWN" : preemptor.spec.job_uid)
        .append(") due to ");
    const std::size_t preemptor_part = message.size();  // the same for every victim
    std::vector<WorkloadId>& victims = victims_buffer_;
    victims.clear();
    // The victims' records arrived during the search; their conditions, written below, not.
    for (std::size_t i = 0; i < std::min<std::size_t>(2, e.targets.size()); ++i) {
      prefetch(wl(e.targets[i].workload).conditions.data());
    }
    for (std::size_t i = 0; i < e.targets.size(); ++i) {
      if (i + 2 < e.targets.size()) prefetch(wl(e.targets[i + 2].workload).conditions.data());
      const Target& t = e.targets[i];
      Wl& v = wl(t.workload);
      victims.push_back(t.workload);
      if (v.phase == WorkloadPhase::Evicted) continue;  // preemption ongoing
      message.resize(preemptor_part);
      message.append(human_reason(t.reason))
          .append("; preemptor path: ")
          .append(queues_[at(e.queue)].path)
          .append("; preemptee path: ")
          .append(queues_[at(v.queue)].path);
      set_eviction_conditions(v, preemption_reason(t.reason), message, now);
      mark_evicted(t.workload);
      changed();  // candidate order puts evicted workloads first
      out.evicted.push_back(t.workload);
      next_decision(out, Decision::Kind::Preempted, t.workload, queues_[at(v.queue)].spec.name, t.reason, message)
          .related.push_back(e.w);
    }
    e.message.append(". Pending the preemption of ").append(std::to_string(e.targets.size())).append(" workload(s)");
    e.granular_reason = r_waiting_for_preempted_;
    e.requeue = Requeue::PendingPreemption;
    e.status = Entry::Status::Nominated;
    next_decision(out, Decision::Kind::PreemptionIssued, e.w, queues_[at(e.queue)].spec.name, *r_pending_, e.message)
        .related.assign(victims.begin(), victims.end());
    return;
  }
  admit(e, now, out);
}

// classicalIterator's order; sorts positions, not the (large) entries.
std::vector<std::size_t> Core::order_classical(std::span<const Entry> entries) const {
  // The keys are copied out first, as unsigned words compared in turn: the sort then
  // touches no workload. `order` holds borrowing (>= 0) above the priority, inverted so
  // that a higher priority sorts first; `creation` has its sign bit flipped so that the
  // unsigned order is the signed one.
  struct Key {
    std::uint64_t order;
    std::uint64_t creation;
    std::uint64_t uid;
    WorkloadId w;
    std::uint32_t index;
  };
  std::vector<Key> keys;
  keys.reserve(entries.size());
  for (std::size_t i = 0; i < entries.size(); ++i) {
    if (i + 4 < entries.size()) prefetch(wl(entries[i + 4].w).uid_label);
    const Wl& x = wl(entries[i].w);
    const auto borrowing = static_cast<std::uint64_t>(static_cast<std::uint32_t>(entries[i].a.borrowing));
    const std::uint32_t priority = static_cast<std::uint32_t>(x.spec.priority) ^ 0x80000000U;
    keys.push_back(Key{(borrowing << 32) | static_cast<std::uint32_t>(~priority),
                       static_cast<std::uint64_t>(x.queued_at) ^ (std::uint64_t{1} << 63), *x.uid_label, entries[i].w,
                       static_cast<std::uint32_t>(i)});
  }
  std::sort(keys.begin(), keys.end(), [](const Key& a, const Key& b) {
    if (a.order != b.order) return a.order < b.order;
    if (a.creation != b.creation) return a.creation < b.creation;
    if (a.uid != b.uid) return a.uid < b.uid;
    return a.w < b.w;
  });
  std::vector<std::size_t> order;
  order.reserve(keys.size());
  for (const Key& k : keys) order.push_back(k.index);
  return order;
}

// fairSharingIterator: repeatedly run a tournament in the root cohort of the first
// remaining entry (upstream picks an arbitrary one; the twin picks the lowest queue index).
std::vector<std::size_t> Core::order_fair(std::span<Entry> entries, Victims& preempted,
                                          std::vector<std::pair<int, Usage>>& reserved, CycleResult& out,
                                          VirtualTime now) {
  std::vector<std::size_t> order;
  std::map<int, std::size_t> by_queue;  // queue -> entry
  for (std::size_t i = 0; i < entries.size(); ++i) by_queue.emplace(entries[i].queue, i);
  // computeDRS: per entry, its share at each ancestor cohort with its usage added. Upstream
  // recomputes every remaining entry's after each pick; the values depend only on the usage
  // of the nodes on the entry's path below the root, so they are kept while those nodes'
  // usage versions are unchanged (the pick's admission or preemptions change few of them).
  struct Shares {
    std::vector<std::pair<int, std::uint64_t>> path_versions;  // the queue up to the root's child
    // Per ancestor cohort: the DRS of the node below it on the path, and whether that node
    // borrows a flavor-resource the entry asks for (upstream checks the DRS's borrowed
    // resources against the workload's usage; the answer is fixed with the DRS).
    struct AtCohort {
      int cohort;
      Drs drs;
      bool borrows_what_entry_uses;
    };
    std::vector<AtCohort> at_cohort;
    [[nodiscard]] bool current(const QuotaTree& tree) const {
      return !path_versions.empty() && std::all_of(path_versions.begin(), path_versions.end(), [&](const auto& nv) {
               return tree.version(nv.first) == nv.second;
             });
    }
  };
  std::vector<Shares> shares(entries.size());
  std::vector<std::vector<std::size_t>> by_root(tree_.size());  // root cohort -> its entries
  for (std::size_t i = 0; i < entries.size(); ++i) by_root[at(tree_.root(queues_[at(entries[i].queue)].node))].push_back(i);
  std::vector<char> ordered(entries.size(), 0);
  while (!by_queue.empty()) {
    const int first = by_queue.begin()->first;
    const int n = queues_[at(first)].node;
    std::size_t chosen;
    if (!tree_.has_parent(n)) {
      chosen = by_queue.begin()->second;
    } else {
      const int root = tree_.root(n);
      for (const std::size_t idx : by_root[at(root)]) {
        if (ordered[idx] != 0) continue;
        const int qi = entries[idx].queue;
        const int qn = queues_[at(qi)].node;
        Shares& s = shares[idx];
        if (s.current(tree_)) continue;
        s.at_cohort.clear();
        s.path_versions.clear();
        const Usage& usage = entries[idx].a.usage;
        add_usage(qi, usage);
        auto borrows_what_entry_uses = [&](int x) {
          return std::any_of(usage.begin(), usage.end(), [&](const auto& fv) {
            return fv.second > 0 && quota_sub(tree_.usage(x, fv.first), tree_.subtree_quota(x, fv.first)) > 0;
          });
        };
        int below = qn;
        Drs d = drs(qn);
        for (int a = tree_.node(qn).parent; a >= 0; a = tree_.node(a).parent) {
          s.at_cohort.push_back(Shares::AtCohort{a, d, borrows_what_entry_uses(below)});
          if (tree_.has_parent(a)) {
            below = a;
            d = drs(a);
          }
        }
        remove_usage(qi, entries[idx].a.usage);
        for (int x = qn; tree_.has_parent(x); x = tree_.node(x).parent) s.path_versions.emplace_back(x, tree_.version(x));
      }
      auto value = [&](std::size_t entry, int cohort) -> const Shares::AtCohort& {
        for (const auto& v : shares[entry].at_cohort) {
          if (v.cohort == cohort) return v;
        }
        throw std::logic_error("admission core: no fair-sharing value of an entry at its cohort");
      };
      auto less = [&](std::size_t a, std::size_t b, int cohort) {
        const auto& va = value(a, cohort);
        const auto& vb = value(b, cohort);
        if (va.borrows_what_entry_uses != vb.borrows_what_entry_uses) return !va.borrows_what_entry_uses;
        if (const int c = compare_drs(va.drs, vb.drs); c != 0) return c < 0;
        const Wl& x = wl(entries[a].w);
        const Wl& y = wl(entries[b].w);
        if (x.spec.priority != y.spec.priority) return x.spec.priority > y.spec.priority;
        if (x.queued_at != y.queued_at) return x.queued_at < y.queued_at;
        return *wl(entries[a].w).uid_label < *wl(entries[b].w).uid_label;
      };
      std::function<std::optional<std::size_t>(int)> tournament = [&](int cohort) -> std::optional<std::size_t> {
        std::vector<std::size_t> cands;
        for (int c : tree_.node(cohort).child_cohorts) {
          if (auto w = tournament(c)) cands.push_back(*w);
        }
        for (int c : tree_.node(cohort).child_queues) {
          auto it = by_queue.find(node_queue_[at(c)]);
          if (it != by_queue.end()) cands.push_back(it->second);
        }
        if (cands.empty()) return std::nullopt;
        std::size_t best = cands.front();
        for (std::size_t i = 1; i < cands.size(); ++i) {
          if (less(cands[i], best, cohort)) best = cands[i];
        }
        return best;
      };
      chosen = *tournament(root);
    }
    by_queue.erase(entries[chosen].queue);
    ordered[chosen] = 1;
    order.push_back(chosen);
    process(entries[chosen], preempted, reserved, out, now);
  }
  return order;
}

void Core::do_run_cycle(VirtualTime now, CycleResult& out) {
  now_ = now;
  changed();
  out.cycle = ++cycle_;
  for (const WorkloadId v : victim_ids_) victim_bits_[v / 64] = 0;  // the last cycle's victims
  victim_ids_.clear();
  out.time = now;
  out.evicted.clear();
  decisions_used_ = 0;
  // 1. One head per ClusterQueue.
  // Active heads take entries from the pool; every field is reset here or by nominate().
  std::size_t live = 0;
  std::vector<Entry> inactive;
  for (std::size_t qi = 0; qi < queues_.size(); ++qi) {
    Queue& q = queues_[qi];
    // The first pending node two queues ahead, its workload one queue ahead (the node has
    // arrived by then): find_head_at reads both.
    if (qi + 3 < queues_.size() && !queues_[qi + 3].pending.empty()) prefetch(&*queues_[qi + 3].pending.begin());
    if (qi + 2 < queues_.size() && !queues_[qi + 2].pending.empty()) {
      prefetch(&workloads_[queues_[qi + 2].pending.begin()->id]);
    }
    if (qi + 1 < queues_.size() && !queues_[qi + 1].pending.empty()) {
      prefetch(&wl(queues_[qi + 1].pending.begin()->id).inadmissible_generation);
    }
    // Kueue pops the head and pushes it back at the end of the cycle unless admitted. The
    // twin leaves it in place: requeueing with the same key would put it back where it
    // was, and push_active/push_inadmissible move it if its key changed (stickiness).
    const auto head = find_head_at(q);
    if (head == q.pending.end()) continue;
    const WorkloadId id = head->id;
    const Wl& h = wl(id);
    auto refuse = [&](std::string message, const std::string* reason) {
      Entry& e = inactive.emplace_back();
      e.w = id;
      e.queue = static_cast<int>(qi);
      e.message = std::move(message);
      e.granular_reason = reason;
      if (h.spec.refusal_kind == WorkloadSpec::Refusal::NamespaceMismatch) e.requeue = Requeue::NamespaceMismatch;
    };
    // scheduler.go's head loop, in its order: failed admission checks, an inactive queue,
    // then ValidateAdmissibility.
    if (h.refusal != nullptr && h.spec.refusal_kind == WorkloadSpec::Refusal::FailedAdmissionChecks) {
      refuse(h.spec.refusal_message, h.refusal);
      continue;
    }
    if (!q.spec.active) {
      Entry& e = inactive.emplace_back();
      e.w = id;
      e.queue = static_cast<int>(qi);
      e.message = "ClusterQueue " + q.spec.name + " is inactive";
      e.granular_reason = r_suspended_;
      continue;
    }
    if (h.refusal != nullptr) {
      // Refused before nomination (ValidateAdmissibility): requeued like the inactive
      // queue's heads, so StrictFIFO keeps it at the front (unless its namespace does not
      // match) and BestEffortFIFO sets it aside.
      refuse(h.spec.refusal_message, h.refusal);
      continue;
    }
    if (live == entry_pool_.size()) entry_pool_.emplace_back();
    Entry& e = entry_pool_[live++];
    e.w = id;
    e.queue = static_cast<int>(qi);
    e.pending_at = head;
    e.targets.clear();
    e.status = Entry::Status::NotNominated;
    e.requeue = Requeue::Generic;
    e.message.clear();
    e.granular_reason = nullptr;
  }
  const std::span<Entry> entries(entry_pool_.data(), live);
  out.heads = entries.size() + inactive.size();
  out.decisions.reserve(out.heads);
  // 2-3. Nominate against the state at the start of the cycle.
  for (std::size_t i = 0; i < entries.size(); ++i) {
    if (i + 4 < entries.size()) prefetch(&workloads_[entries[i + 4].w]);
    if (i + 2 < entries.size()) prefetch_record(entries[i + 2].w);
    if (i + 1 < entries.size()) prefetch_for_assign(entries[i + 1].w);
    nominate(entries[i]);
  }
  // 4-5. Order and process.
  Victims preempted(*this, !options_.fair_sharing);
  std::vector<std::pair<int, Usage>> reserved;
  if (options_.fair_sharing) {
    order_fair(entries, preempted, reserved, out, now);
  } else {
    const auto order = order_classical(entries);
    for (std::size_t k = 0; k < order.size(); ++k) {
      if (k + 4 < order.size()) prefetch(&workloads_[entries[order[k + 4]].w]);
      if (k + 2 < order.size()) prefetch_record(entries[order[k + 2]].w);
      if (k + 1 < order.size()) prefetch_for_admit(entries[order[k + 1]].w);
      process(entries[order[k]], preempted, reserved, out, now);
    }
  }
  preempted.put_back();
  // Capacity held for preemptors only lives within the cycle's snapshot.
  for (auto it = reserved.rbegin(); it != reserved.rend(); ++it) remove_usage(it->first, it->second);
  // 6. Requeue what was not admitted (ClusterQueue.RequeueIfNotPresent).
  auto requeue = [&](Entry& e) {
    if (e.status == Entry::Status::Assumed) return;
    Queue& q = queues_[at(e.queue)];
    Requeue reason = e.requeue;
    if (e.status != Entry::Status::NotNominated && reason == Requeue::Generic) reason = Requeue::FailedAfterNomination;
    const bool immediate = q.spec.queueing_strategy == QueueingStrategy::StrictFIFO
                               ? reason != Requeue::NamespaceMismatch
                               : reason == Requeue::FailedAfterNomination || reason == Requeue::PendingPreemption;
    // requeueIfNotPresent: a pending preemption makes the workload its queue's preemptor,
    // sticky at the head under BestEffortFIFO. It stays the preemptor when it is requeued
    // for another reason, until it is admitted or deleted (ClusterQueue.delete) or another
    // workload of the queue takes its place.
    if (reason == Requeue::PendingPreemption && q.spec.queueing_strategy == QueueingStrategy::BestEffortFIFO) {
      make_sticky(q, e.w);
    }
    if (immediate || !q.spec.active) {
      if (q.spec.active) {
        push_active(e.w);
      } else {
        push_inadmissible(e.w);
      }
    } else {
      push_inadmissible(e.w);
      // SchedulingEquivalenceHashing: the same shape cannot fit either; its class waits
      // too. Applied lazily: members of the class are moved when they reach the head.
      if (options_.scheduling_equivalence_hashing && q.spec.queueing_strategy == QueueingStrategy::BestEffortFIFO &&
          (reason == Requeue::NoFit || reason == Requeue::NoCandidates)) {
        bulk_move(q, wl(e.w).shape);
      }
    }
    const std::string* condition_reason =
        options_.unadmitted_workloads_observability && e.granular_reason != nullptr ? e.granular_reason : r_pending_;
    set_pending(e.w, condition_reason, e.message, now, &out);
  };
  for (std::size_t i = 0; i < entries.size(); ++i) {
    if (i + 2 < entries.size() && entries[i + 2].status != Entry::Status::Assumed) {
      const Wl& n = wl(entries[i + 2].w);
      prefetch(&n.in_pending);
      prefetch(n.conditions.data());
    }
    if (i + 1 < entries.size() && entries[i + 1].status != Entry::Status::Assumed) {
      // The pending message that set_pending compares with.
      for (const auto& c : wl(entries[i + 1].w).conditions) {
        if (c.type == CondType::QuotaReserved) prefetch(c.text.data());
      }
    }
    requeue(entries[i]);
  }
  for (auto& e : inactive) requeue(e);
  out.decisions.resize(decisions_used_);
}

}  // namespace gpubank::twin::admission
