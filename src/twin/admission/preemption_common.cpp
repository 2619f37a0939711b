// What classical and fair-sharing preemption share: the preemption policy and the candidate
// ordering. Follows pkg/scheduler/preemption/common (ordering.go, preemption_policy.go).
#include "twin/admission/core_impl.hpp"

namespace gpubank::twin::admission {

bool Core::uses_resources(WorkloadId id, const std::vector<int>& frs) const {
  // WorkloadUsesResources looks at the assigned flavors, whatever the amount.
  return std::any_of(wl(id).usage.begin(), wl(id).usage.end(), [&](const auto& p) {
    return std::find(frs.begin(), frs.end(), p.first) != frs.end();
  });
}

bool Core::satisfies(const Wl& preemptor, std::int32_t cand_priority, VirtualTime cand_creation,
                                    PreemptionPolicy policy) {
  const bool lower = preemptor.spec.priority > cand_priority;
  switch (policy) {
    case PreemptionPolicy::LowerPriority: return lower;
    case PreemptionPolicy::LowerOrNewerEqualPriority:
      return lower || (preemptor.spec.priority == cand_priority && preemptor.queued_at < cand_creation);
    case PreemptionPolicy::Any: return true;
    case PreemptionPolicy::Never: return false;
  }
  return false;
}

// common.CandidatesOrdering
bool Core::candidate_before(WorkloadId a, WorkloadId b, int preemptor_queue, VirtualTime now) const {
  // A pending workload's reservation time is now (GetQuotaReservedTime is unset).
  auto rank = [now](const Wl& w, WorkloadId id) {
    return CandidateRank{w.spec.priority, w.phase == WorkloadPhase::Pending ? whole_second(now) : w.reserved_at, w.uid_prefix,
                         w.uid_label, id};
  };
  const Wl& x = wl(a);
  const Wl& y = wl(b);
  return candidates_ordering(x.phase == WorkloadPhase::Evicted, x.queue == preemptor_queue, rank(x, a),
                             y.phase == WorkloadPhase::Evicted, y.queue == preemptor_queue, rank(y, b));
}

auto Core::candidate(WorkloadId w, int lca, Variant v, int preemptor_queue) const -> Candidate {
  const Wl& x = wl(w);
  return Candidate{w, lca, v, x.phase == WorkloadPhase::Evicted, x.queue == preemptor_queue,
                   x.spec.priority, x.reserved_at, x.uid_prefix, x.uid_label, x.queue, -1};
}

bool Core::candidate_key_before(const Candidate& x, const Candidate& y) {
  return candidates_ordering(x.evicted, x.own, x.rank(), y.evicted, y.own, y.rank());
}

bool Core::ranked_before(const Ranked& x, const Ranked& y) {
  if (x.c.evicted != y.c.evicted) return x.c.evicted;
  if (x.list != y.list) return x.list < y.list;
  return candidate_key_before(x.c, y.c);
}

}  // namespace gpubank::twin::admission
