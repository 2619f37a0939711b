// Workload conditions and messages as Kueue writes them, and ClusterQueue status. Follows
// pkg/workload/conditions (apimeta.SetStatusCondition), pkg/scheduler/scheduler.go's
// messages and pkg/controller/core/clusterqueue_controller.go.
#include "twin/admission/core_impl.hpp"

namespace gpubank::twin::admission {

// The condition reason of a NoFit, interned; nullptr for None.
const std::string* Core::no_fit_reason(NoFitReason r) const {
  switch (r) {
    case NoFitReason::WaitingForQuota: return r_waiting_for_quota_;
    case NoFitReason::ExceedsMaxQuota: return r_exceeds_max_quota_;
    case NoFitReason::NoMatchingFlavor: return r_no_matching_flavor_;
    case NoFitReason::None: break;
  }
  return nullptr;
}

// Reasons are kept once each; a condition points at its reason. The set only grows by
// the reasons callers of evict() pass, which are a handful.
const std::string* Core::intern(std::string_view reason) {
  auto it = reasons_.find(reason);
  if (it == reasons_.end()) it = reasons_.emplace(reason).first;
  return &*it;
}

// apimeta.SetStatusCondition: the transition time moves only when the status flips.
// A Text message is copied only when it changed: most pending heads are told the same
// thing every cycle. Returns whether the condition now says something else than a Text
// message it already had (new, another kind, or another text).
bool Core::set_condition(Wl& w, CondType type, bool status, const std::string* reason, MessageKind kind,
                          std::string_view text, VirtualTime now) {
  StoredCondition* c = nullptr;
  bool created = false;
  for (auto& x : w.conditions) {
    if (x.type == type) {
      c = &x;
      break;
    }
  }
  if (c == nullptr) {
    // Room for the usual lifetime (QuotaReserved, Admitted, Finished or Evicted) at once.
    if (w.conditions.empty()) w.conditions.reserve(4);
    c = &w.conditions.emplace_back();
    c->type = type;
    c->status = status;
    c->last_transition = now;
    created = true;
  }
  bool changed = created || c->kind != MessageKind::Text || kind != MessageKind::Text;
  if (c->status != status) c->last_transition = now;
  c->status = status;
  c->reason = reason;
  c->previously = false;
  c->kind = kind;
  if (kind != MessageKind::Text) {
    if (!c->text.empty()) std::string().swap(c->text);  // an admitted workload keeps no pending message
  } else if (c->text != text) {
    c->text = text;
    changed = true;
  }
  return changed;
}

// Evicted=True and Preempted=True with one message, as Kueue's preemption and the twin's
// graceful reclaim write them. The Preempted condition renders the Evicted one's text:
// the two are only ever written together, here and by reset_eviction_conditions.
void Core::set_eviction_conditions(Wl& w, const std::string* preempted_reason, std::string_view message,
                             VirtualTime now) const {
  set_condition(w, CondType::Evicted, true, r_preempted_, MessageKind::Text, message, now);
  set_condition(w, CondType::Preempted, true, preempted_reason, MessageKind::AsEvicted, {}, now);
}

// Active Evicted and Preempted conditions become False with "Previously: " + their
// message, as a new admission does. An active condition was last written by
// set_condition, which clears `previously`, so the prefix is never doubled.
void Core::reset_eviction_conditions(Wl& w, const std::string* reason, VirtualTime now) {
  for (auto& c : w.conditions) {
    if ((c.type != CondType::Evicted && c.type != CondType::Preempted) || !c.status) continue;
    c.status = false;
    c.last_transition = now;
    c.reason = reason;
    c.previously = true;
  }
}

std::string Core::render_message(const Wl& w, const StoredCondition& c) const {
  std::string m = c.previously ? "Previously: " : "";
  switch (c.kind) {
    case MessageKind::Text: m += c.text; break;
    case MessageKind::QuotaReservedIn: m += queues_[at(w.queue)].reserved_message; break;
    case MessageKind::WorkloadAdmitted: m += "The workload is admitted"; break;
    case MessageKind::NoReservation: m += "The workload has no reservation"; break;
    case MessageKind::JobFinished: m += "Job finished successfully"; break;
    case MessageKind::AsEvicted:
      for (const auto& e : w.conditions) {
        if (e.type == CondType::Evicted) m += e.text;
      }
      break;
  }
  return m;
}

Admission Core::render_admission(const Wl& w) const {
  if (w.restored) return *w.restored;
  const Queue& q = queues_[at(w.queue)];
  Admission a;
  a.cluster_queue = q.spec.name;
  a.pod_sets.reserve(w.spec.pod_sets.size());
  for (std::size_t p = 0; p < w.spec.pod_sets.size(); ++p) {
    PodSetAssignment& psa = a.pod_sets.emplace_back();
    psa.name = w.spec.pod_sets[p].name;
    psa.count = w.spec.pod_sets[p].count;
    for (const AdmittedFlavor& f : w.admitted) {
      if (f.pod_set == p) psa.flavors.emplace_back(fr_resource_[at(f.fr)], flavors_[at(fr_flavor_[at(f.fr)])].name);
    }
    psa.resource_usage = w.totals.at(p).requests;
    if (p < w.admitted_counts.size()) {
      psa.count = w.admitted_counts[p];
      scale_requests(w.totals.at(p).requests, w.spec.pod_sets[p].count, w.admitted_counts[p], psa.resource_usage);
    }
    // PodSetAssignment.toAPI lists only the resources that got a flavor: not a zero
    // request for a resource the queue lacks, nor (IgnoreUndeclared) any such request.
    std::erase_if(psa.resource_usage, [&](const auto& r) {
      return std::none_of(psa.flavors.begin(), psa.flavors.end(), [&](const auto& f) { return f.first == r.first; });
    });
  }
  return a;
}

WorkloadStatus Core::render_status(const Wl& w) const {
  WorkloadStatus s;
  s.phase = w.phase;
  s.admitted_at = w.admitted_at;
  if (w.has_admission) s.admission = render_admission(w);
  s.conditions.reserve(w.conditions.size());
  for (const auto& c : w.conditions) {
    s.conditions.push_back(Condition{cond_type_name(c.type), c.status, *c.reason, render_message(w, c), c.last_transition});
  }
  return s;
}

// Returns true when the pending message changed (a Pending decision is due). The
// QuotaReserved condition's text is the last pending message: a pending workload's
// condition is a Text one, set here or by release_evicted.
bool Core::set_pending(WorkloadId id, const std::string* reason, const std::string& message, VirtualTime now,
                 CycleResult* out) {
  Wl& w = wl(id);
  const bool changed = set_condition(w, CondType::QuotaReserved, false, reason, MessageKind::Text, message, now);
  // SyncAdmittedCondition: with UnadmittedWorkloadsObservability a pending Workload
  // says explicitly that it has no reservation.
  if (options_.unadmitted_workloads_observability) {
    set_condition(w, CondType::Admitted, false, r_no_reservation_, MessageKind::NoReservation, {}, now);
  }
  if (!changed) return false;
  if (out != nullptr) {
    next_decision(*out, Decision::Kind::Pending, id,
                  w.queue >= 0 ? queues_[at(w.queue)].spec.name : w.spec.cluster_queue, *reason, message);
  }
  return true;
}

// The cycle's next decision in `out`. A slot left there by an earlier cycle is
// overwritten, so its strings keep their buffers; do_run_cycle trims `out` at its end.
Decision& Core::next_decision(CycleResult& out, Decision::Kind kind, WorkloadId id, const std::string& cluster_queue,
                        std::string_view reason, std::string_view message) {
  Decision& d = decisions_used_ < out.decisions.size() ? out.decisions[decisions_used_] : out.decisions.emplace_back();
  ++decisions_used_;
  // The next slot's message buffer, which the next decision writes.
  if (decisions_used_ < out.decisions.size()) prefetch(out.decisions[decisions_used_].message.data());
  d.kind = kind;
  d.workload = id;
  d.cluster_queue.assign(cluster_queue);
  d.reason.assign(reason);
  d.message.assign(message);
  d.related.clear();
  return d;
}

ClusterQueueStatus Core::cluster_queue_status(const std::string& name) const {
  ClusterQueueStatus s;
  s.name = name;
  auto it = queue_index_.find(name);
  if (it == queue_index_.end()) return s;
  const Queue& q = queues_[at(it->second)];
  const int n = q.node;
  s.pending_workloads = static_cast<std::int64_t>(q.pending.size());
  std::vector<Amount> admitted_usage(tree_.fr_count(), 0);
  for (WorkloadId w : q.holding) {
    ++s.reserving_workloads;
    if (wl(w).phase == WorkloadPhase::Admitted) {
      ++s.admitted_workloads;
    }
    for (const auto& [fr, v] : wl(w).usage) admitted_usage[at(fr)] += v;
  }
  for (const auto& g : q.groups) {
    for (int flavor : g.flavors) {
      for (const auto& resource : g.resources) {
        const int fr = fr_of(flavor, resource, false);
        if (fr < 0) continue;
        const Amount nominal = tree_.nominal(n, fr);
        const Amount used = tree_.usage(n, fr);
        s.flavors_reservation.push_back(
            FlavorResourceAmount{flavors_[at(flavor)].name, resource, used, std::max<Amount>(0, used - nominal)});
        const Amount adm = admitted_usage[at(fr)];
        s.flavors_usage.push_back(
            FlavorResourceAmount{flavors_[at(flavor)].name, resource, adm, std::max<Amount>(0, adm - nominal)});
      }
    }
  }
  if (options_.fair_sharing) {
    const Drs d = drs(n);
    s.weighted_share = d.rounded();
    if (d.dominant >= 0) s.dominant_resource = resource_names_[at(d.dominant)];
  }
  return s;
}

}  // namespace gpubank::twin::admission
