// Flavor assignment. Follows pkg/scheduler/flavorassigner/flavorassigner.go (and
// podset_reducer.go for partial admission).
#include "twin/admission/core_impl.hpp"

#include "core/fnv1a.hpp"
#include "twin/admission/node_match.hpp"
namespace gpubank::twin::admission {

// Pod set totals as the assigner sees them: requests times count, plus `pods` when the
// queue manages it.
PodSetTotals Core::pod_set_totals(const Queue& q, const PodSetSpec& ps) const {
  PodSetTotals t;
  auto& out = t.requests;
  for (const auto& [r, v] : ps.requests) out.emplace_back(r, request_times(v, ps.count));
  if (q.group_by_resource.contains("pods")) {
    auto it = std::find_if(out.begin(), out.end(), [](const auto& p) { return p.first == "pods"; });
    if (it != out.end()) {
      it->second = ps.count;
    } else {
      out.emplace_back("pods", ps.count);
      std::sort(out.begin(), out.end());
    }
  }
  for (const auto& [r, v] : out) {
    auto g = q.group_by_resource.find(r);
    t.groups.push_back(g == q.group_by_resource.end() ? -1 : g->second);
    t.rids.push_back(resource_id(r));
  }
  std::vector<std::pair<std::uint64_t, std::size_t>> keyed;
  // hashResourceName (pkg/resources/slice_requests.go) is 64-bit FNV-1a.
  for (std::size_t i = 0; i < out.size(); ++i) keyed.emplace_back(fnv1a64(out[i].first), i);
  std::sort(keyed.begin(), keyed.end(), [&](const auto& x, const auto& y) {
    return x.first != y.first ? x.first < y.first : out[x.second].first < out[y.second].first;
  });
  for (const auto& k : keyed) t.kueue_order.push_back(static_cast<std::uint32_t>(k.second));
  return t;
}

// workload.CanBePartiallyAdmitted: a pod set's spec count is above its minCount.
bool Core::can_be_partially_admitted(const WorkloadSpec& w) {
  return std::any_of(w.pod_sets.begin(), w.pod_sets.end(), [](const PodSetSpec& ps) {
    const std::int32_t spec = ps.spec_count >= 0 ? ps.spec_count : ps.count;
    return spec > ps.min_count.value_or(spec);
  });
}

// ScaledTo on the totals of `count` pods: each total is divided by the old count and
// multiplied (saturating) by the new one, as upstream does, so a total that the first
// multiplication clamped scales from the clamp.
void Core::scale_requests(const std::vector<std::pair<std::string, Amount>>& from, std::int32_t count,
                           std::int32_t new_count, std::vector<std::pair<std::string, Amount>>& to) {
  to.resize(from.size());
  for (std::size_t i = 0; i < from.size(); ++i) {
    to[i].first = from[i].first;
    to[i].second = count == 0 || count == new_count ? from[i].second : request_times(from[i].second / count, new_count);
  }
}

const std::vector<PodSetTotals>& Core::totals_of(Wl& w) const {
  if (w.totals.size() != w.spec.pod_sets.size()) {
    w.totals.clear();
    for (const auto& ps : w.spec.pod_sets) w.totals.push_back(pod_set_totals(queues_[at(w.queue)], ps));
  }
  return w.totals;
}

// Resource names interned for the flavor-resource table: fr_by_rid_[rid][flavor] is
// fr_of(flavor, name, false). Flavor-resources are all made while building, so the table
// stays exact.
int Core::resource_id(const std::string& name) const {
  auto [it, inserted] = rid_index_.try_emplace(name, static_cast<int>(fr_by_rid_.size()));
  if (inserted) {
    rid_names_.push_back(name);
    auto& row = fr_by_rid_.emplace_back(flavors_.size(), -1);
    for (std::size_t f = 0; f < flavors_.size(); ++f) row[f] = fr_of(static_cast<int>(f), name, false);
  }
  return it->second;
}

// classical.FindHeightOfLowestSubtreeThatFits
std::pair<int, bool> Core::lowest_subtree_that_fits(int n, int fr, Amount val) const {
  if (!tree_.borrowing_with(n, fr, val) || !tree_.has_parent(n)) return {0, tree_.has_parent(n)};
  Amount remaining = val - tree_.local_available(n, fr);
  for (int a = tree_.node(n).parent; a >= 0; a = tree_.node(a).parent) {
    if (!tree_.borrowing_with(a, fr, remaining)) return {heights_[at(a)], tree_.has_parent(a)};
    remaining -= tree_.local_available(a, fr);
  }
  return {heights_[at(tree_.root(n))], false};
}

bool Core::can_preempt_while_borrowing(const Queue& q) const {
  return q.spec.preemption.borrow_within_cohort != BorrowWithinCohortPolicy::Never ||
         (options_.fair_sharing && q.spec.preemption.reclaim_within_cohort != PreemptionPolicy::Never);
}

// FlavorAssigner.fitsResourceQuota
// Appends why the request does not fit (if it does not) to `reasons`.
std::pair<PMode, int> Core::fits_resource_quota(WorkloadId id, int queue, int fr, Amount assumed, Amount request,
                                          NoFitReason* no_fit, std::vector<std::string>& reasons) {
  const Queue& q = queues_[at(queue)];
  const int n = q.node;
  const std::string& flavor = flavors_[at(fr_flavor_[at(fr)])].name;
  const std::string& resource = fr_resource_[at(fr)];
  const Amount available = tree_.available(n, fr);
  const Amount max_capacity = tree_.potential_available(n, fr);
  const Amount val = assumed + request;
  if (val > max_capacity) {
    *no_fit = NoFitReason::ExceedsMaxQuota;
    std::string& why = reasons.emplace_back(spare_string());
    why.append("insufficient quota for ");
    why.append(resource).append(" in flavor ").append(flavor).append(", previously considered podsets requests (");
    why.append(format_amount(resource, assumed)).append(") + current podset request (");
    why.append(format_amount(resource, request)).append(") > maximum capacity (");
    why.append(format_amount(resource, max_capacity)).append(")");
    return {PMode::NoFit, 0};
  }
  const auto [borrow, may_reclaim_in_hierarchy] = lowest_subtree_that_fits(n, fr, val);
  if (val <= available) return {PMode::Fit, borrow};
  std::string& why = reasons.emplace_back(spare_string());
  why.append("insufficient unused quota for ");
  why.append(resource).append(" in flavor ").append(flavor).append(", ");
  why.append(format_amount(resource, val - available)).append(" more needed");
  if (tree_.nominal(n, fr) >= val || may_reclaim_in_hierarchy || can_preempt_while_borrowing(q)) {
    return simulate_preemption(id, queue, fr, val);
  }
  *no_fit = NoFitReason::WaitingForQuota;
  return {PMode::NoFit, borrow};
}

// PreemptionOracle.SimulatePreemption
std::pair<PMode, int> Core::simulate_preemption(WorkloadId id, int queue, int fr, Amount quantity) {
  scratch_frs_.assign(1, fr);
  scratch_usage_.assign(1, {fr, quantity});
  const auto& targets = get_targets(id, queue, scratch_frs_, scratch_usage_);
  const int n = queues_[at(queue)].node;
  if (targets.empty()) return {PMode::NoCandidates, lowest_subtree_that_fits(n, fr, quantity).first};
  const int parent = tree_.parent(n);
  if (parent < 0 || !tree_.has_parent(parent)) {
    // Under a root cohort (or none), lowest_subtree_that_fits reads no usage but the
    // queue's own (see there), and a queue's usage is the sum of its workloads': the
    // answer after the removals needs only the usage of the targets in this queue.
    Amount own = 0;
    bool in_queue = false;
    for (const auto& t : targets) {
      const Wl& v = wl(t.workload);
      if (v.queue != queue) continue;
      in_queue = true;
      own = usage_add(own, usage_of(v.usage, fr));
    }
    const bool borrows = parent >= 0 && quota_add(usage_sub(tree_.usage(n, fr), own), quantity) > tree_.subtree_quota(n, fr);
    return {in_queue ? PMode::Preempt : PMode::Reclaim, borrows ? heights_[at(parent)] : 0};
  }
  const UndoneChanges undone(*this);
  for (const auto& t : targets) remove_workload(t.workload);
  const int borrow = lowest_subtree_that_fits(n, fr, quantity).first;
  for (const auto& t : targets) add_workload(t.workload);
  for (const auto& t : targets) {
    if (wl(t.workload).queue == queue) return {PMode::Preempt, borrow};
  }
  return {PMode::Reclaim, borrow};
}

// isPreferred: is a better than b under the queue's fungibility preference.
bool Core::preferred(const Granular& a, const Granular& b, const FlavorFungibility& f) {
  if (a.p == PMode::NoFit) return false;
  if (b.p == PMode::NoFit) return true;
  const bool a_none = a.p == PMode::NoCandidates, b_none = b.p == PMode::NoCandidates;
  if (a_none != b_none) return !a_none;
  if (f.preference == FungibilityPreference::PreemptionOverBorrowing) {
    if (a.borrow != b.borrow) return a.borrow < b.borrow;
    return a.p > b.p;
  }
  if (a.p != b.p) return a.p > b.p;
  return a.borrow < b.borrow;
}

bool Core::should_try_next_flavor(const Granular& m, const FlavorFungibility& f) {
  if (m.p == PMode::NoFit || m.p == PMode::NoCandidates) return true;
  const bool preempt_mode = m.p == PMode::Preempt || m.p == PMode::Reclaim;
  if (preempt_mode && f.when_can_preempt == FungibilityPolicy::TryNextFlavor) return true;
  if (m.borrow != 0 && f.when_can_borrow == FungibilityPolicy::TryNextFlavor) return true;
  return false;
}

// Whether the flavor refuses the pod set. Why is appended to `reasons`; when the pod
// set's affinity could not be parsed, that is the error that ends the search
// (Status.err), and `error` is set. Out of line: the search loop stays small.
[[gnu::noinline]] bool Core::flavor_refuses(int flavor, const PodSetSpec& ps, std::vector<std::string>& reasons,
                                      bool& error) {
  const auto& f = flavors_[at(flavor)];
  if (const Taint* t = untolerated_taint(f, ps.tolerations)) {
    reasons.push_back("untolerated taint " + taint_text(*t) + " in flavor " + f.name);
    return true;
  }
  AffinityMatch affinity = match_node_affinity(ps, f.node_labels);
  if (!affinity.error.empty()) {
    reasons.push_back(std::move(affinity.error));
    error = true;
    return true;
  }
  if (!affinity.matches) reasons.push_back("flavor " + f.name + " doesn't match node affinity");
  return !affinity.matches;
}

// FlavorAssigner.assignFlavors without partial admission or TAS.
// An empty string that keeps the buffer of a reason given up earlier: pending heads
// are told why they wait in every cycle, mostly in strings of the same length.
std::string Core::spare_string() {
  if (spare_strings_.empty()) return {};
  std::string s = std::move(spare_strings_.back());
  spare_strings_.pop_back();
  s.clear();
  return s;
}

// Into `a`, whose containers are reused (entries live in a pool across cycles).
// counts: per pod set, the pods to assign for (partial admission); null: the spec's.
void Core::assign(WorkloadId id, Assignment& a, const std::vector<std::int32_t>* counts) {
  Wl& w = wl(id);
  const int queue = w.queue;
  const std::vector<PodSetTotals>* all_totals = &totals_of(w);
  if (counts != nullptr) {
    std::vector<PodSetTotals>& scaled = scratch_scaled_totals_;
    scaled.resize(all_totals->size());
    for (std::size_t p = 0; p < scaled.size(); ++p) {
      const PodSetTotals& from = (*all_totals)[p];
      scale_requests(from.requests, w.spec.pod_sets[p].count, (*counts)[p], scaled[p].requests);
      scaled[p].groups = from.groups;
      scaled[p].rids = from.rids;
      scaled[p].kueue_order = from.kueue_order;
    }
    all_totals = &scaled;
  }
  const auto& totals = *all_totals;
  a.borrowing = 0;
  a.usage.clear();
  a.forced.reset();
  a.pod_sets.resize(w.spec.pod_sets.size());
  std::size_t used = 0;
  for (std::size_t p = 0; p < w.spec.pod_sets.size(); ++p) {
    const auto& ps = w.spec.pod_sets[p];
    const PodSetTotals& t = totals[p];
    PodSetAssign& psa = a.pod_sets[used++];
    psa.name = &ps.name;
    psa.count = counts != nullptr ? scaled_count(ps.count, (*counts)[p]) : ps.count;
    psa.flavors.clear();
    for (auto& r : psa.reasons) spare_strings_.push_back(std::move(r));
    psa.reasons.clear();
    psa.failed = false;
    psa.error = false;
    psa.no_fit = NoFitReason::None;
    psa.attempted = false;
    std::vector<int>& done_groups = scratch_groups_;  // a pod set touches a few resource groups
    done_groups.clear();
    bool failed = false;
    // A group that fails replaces the reasons of the groups before it (assignFlavors sets
    // groupStatus to the failing search's status).
    const auto forget_reasons_before = [&](std::size_t end) {
      for (std::size_t r = 0; r < end; ++r) spare_strings_.push_back(std::move(psa.reasons[r]));
      psa.reasons.erase(psa.reasons.begin(), psa.reasons.begin() + static_cast<std::ptrdiff_t>(end));
    };
    for (const std::uint32_t i : t.kueue_order) {
      const auto& [resource, quantity] = t.requests[i];
      const int group = t.groups[i];
      if (group < 0) {
        // Zero requests for resources the queue lacks never count (#8079); with
        // IgnoreUndeclared none of them does (flavorassigner.IgnoreUndeclaredResources).
        if (quantity == 0 || (options_.quota_check_strategy && options_.ignore_undeclared_resources)) continue;
        forget_reasons_before(psa.reasons.size());
        psa.reasons.push_back("resource " + resource + " unavailable in ClusterQueue");
        failed = true;
        break;
      }
      if (std::find(done_groups.begin(), done_groups.end(), group) != done_groups.end()) continue;
      done_groups.push_back(group);
      FlavorAttempts attempts;
      const std::size_t reasons_before = psa.reasons.size();
      const auto& flavors =
          find_flavor(id, queue, group, ps, p, t.rids[i], t, a.usage, attempts, psa.reasons, psa.error);
      // Attempts count whether or not the group found a flavor (mergeFlavorAttemptsForResource).
      psa.no_fit = std::max(psa.no_fit, attempts.least);
      psa.attempted = psa.attempted || attempts.any;
      if (flavors.empty()) {
        forget_reasons_before(reasons_before);
        failed = true;
        break;
      }
      psa.flavors.insert(psa.flavors.end(), flavors.begin(), flavors.end());
    }
    if (failed) psa.flavors.clear();
    psa.failed = failed;
    std::sort(psa.flavors.begin(), psa.flavors.end(),
              [this](const ResourceAssign& x, const ResourceAssign& y) { return fr_resource_[at(x.fr)] < fr_resource_[at(y.fr)]; });
    for (const auto& f : psa.flavors) {
      a.borrowing = std::max(a.borrowing, f.borrow);
      Amount amount = 0;
      for (std::size_t i = 0; i < t.requests.size(); ++i) {
        if (t.rids[i] == f.rid) amount = t.requests[i].second;
      }
      add_to(a.usage, f.fr, amount);
    }
    if (failed) break;
  }
  a.pod_sets.resize(used);
  a.assigned = a.pod_sets_mode();
}

// NominationMapping: while an assignment is recomputed because its preemption targets
// overlap, each pod set's resources keep the flavors they were nominated with
// (shouldSkipBasedOnNominationMapping); pinned_ is the nominated assignment then.
bool Core::pinned(std::size_t pod_set, int rid, int flavor) const {
  if (pod_set >= pinned_->pod_sets.size()) return false;
  const auto& fl = pinned_->pod_sets[pod_set].flavors;
  return std::any_of(fl.begin(), fl.end(), [&](const ResourceAssign& f) { return f.rid == rid && f.flavor == flavor; });
}

// FlavorAssigner.findFlavorForPodSets for one resource group. Why flavors did not fit
// is appended to `reasons`, unless one fits. A flavor check that fails with an error
// ends the search with no flavors and `error` set, and `reasons` is then the error's
// text alone.
// The result lives in a scratch buffer until the next call.
// pod_set and rid: the pod set's index and the resource the group is searched for, which
// the nomination mapping is looked up with.
const std::vector<ResourceAssign>& Core::find_flavor(WorkloadId id, int queue, int group_index, const PodSetSpec& ps,
                                               std::size_t pod_set, int rid, const PodSetTotals& totals,
                                               const Usage& assumed, FlavorAttempts& attempts,
                                               std::vector<std::string>& reasons, bool& error) {
  const Queue& q = queues_[at(queue)];
  const Group& group = q.groups[at(group_index)];
  const std::size_t reasons_before = reasons.size();
  std::vector<ResourceAssign>& best = scratch_best_;
  std::vector<ResourceAssign>& assignments = scratch_assignments_;
  best.clear();
  Granular best_mode;
  // resolveNoFitReason: the least severe reason among this group's NoFit flavor attempts.
  std::optional<NoFitReason> least;
  auto attempt_failed = [&](NoFitReason r) { least = least ? std::min(*least, r) : r; };
  const auto report = [&] { attempts.least = least.value_or(NoFitReason::None); };
  for (int flavor : group.flavors) {
    if (pinned_ != nullptr && !pinned(pod_set, rid, flavor)) {  // skipped: no attempt
      std::string& why = reasons.emplace_back(spare_string());
      why.append("skipping flavor ").append(flavors_[at(flavor)].name);
      why.append(" as it is not found in the nomination mapping for resource ").append(rid_names_[at(rid)]);
      continue;
    }
    attempts.any = true;
    if (!unconstrained(flavor, ps) && flavor_refuses(flavor, ps, reasons, error)) {
      attempt_failed(NoFitReason::NoMatchingFlavor);
      if (error) {  // the error alone stands for this search
        std::swap(reasons[reasons_before], reasons.back());
        for (std::size_t i = reasons_before + 1; i < reasons.size(); ++i) spare_strings_.push_back(std::move(reasons[i]));
        reasons.resize(reasons_before + 1);
        best.clear();
        report();
        return best;
      }
      continue;
    }
    assignments.clear();
    NoFitReason flavor_no_fit = NoFitReason::None;
    Granular rep{PMode::Fit, 0};
    for (std::size_t i = 0; i < totals.requests.size(); ++i) {
      if (totals.groups[i] != group_index) continue;  // the group covers another resource
      const Amount val = totals.requests[i].second;
      const int fr = fr_by_rid_[at(totals.rids[i])][at(flavor)];
      if (fr < 0) {
        rep = Granular{};
        continue;
      }
      NoFitReason resource_no_fit = NoFitReason::None;
      auto [pmode, borrow] = fits_resource_quota(id, queue, fr, usage_of(assumed, fr), val, &resource_no_fit, reasons);
      if (pmode == PMode::NoFit) flavor_no_fit = std::max(flavor_no_fit, resource_no_fit);
      const Granular mode{pmode, borrow};
      if (preferred(rep, mode, q.spec.flavor_fungibility)) rep = mode;
      if (rep.p == PMode::NoFit) continue;
      assignments.push_back(ResourceAssign{totals.rids[i], flavor, fr, to_mode(pmode), borrow});
    }
    if (rep.p == PMode::NoFit) {
      attempt_failed(flavor_no_fit == NoFitReason::None ? NoFitReason::NoMatchingFlavor : flavor_no_fit);
    }
    if (!should_try_next_flavor(rep, q.spec.flavor_fungibility)) {
      std::swap(best, assignments);
      best_mode = rep;
      break;
    }
    if (preferred(rep, best_mode, q.spec.flavor_fungibility)) {
      std::swap(best, assignments);
      best_mode = rep;
    }
  }
  report();
  if (best_mode.p == PMode::Fit) {
    for (std::size_t i = reasons_before; i < reasons.size(); ++i) spare_strings_.push_back(std::move(reasons[i]));
    reasons.resize(reasons_before);
    return best;
  }
  if (best_mode.p == PMode::NoFit) best.clear();
  return best;
}

}  // namespace gpubank::twin::admission
