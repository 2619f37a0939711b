// The admission core's construction and the events its drivers feed it (AdmissionCore): a
// workload submitted, restored, finished, evicted or forgotten, quotas and priorities
// changed. In Kueue these come through the controllers into pkg/cache/scheduler (cache.go)
// and pkg/cache/queue (manager.go). See core.hpp for the model, core_impl.hpp for the files
// of the other parts, kueue-semantics.md for the formulas.
#include "twin/admission/core.hpp"

#include "twin/admission/core_impl.hpp"

namespace gpubank::twin::admission {

std::optional<std::string> Core::build(std::vector<CohortSpec> cohorts, std::vector<ClusterQueueSpec> queues) {
  // Flavor-resource indices from every quota in the tree, in first-seen order.
  auto collect = [&](const std::vector<ResourceGroup>& groups, const std::string& owner) -> std::optional<std::string> {
    for (const auto& g : groups) {
      for (const auto& fq : g.flavors) {
        if (!flavor_index_.contains(fq.flavor)) {
          // Kueue keeps such a queue inactive; the twin refuses the input instead.
          return owner + ": flavor \"" + fq.flavor + "\" is not a known ResourceFlavor";
        }
        for (const auto& rq : fq.resources) fr_of(flavor_index_.at(fq.flavor), rq.resource, true);
      }
    }
    return std::nullopt;
  };
  for (const auto& c : cohorts) {
    if (auto e = collect(c.resource_groups, "Cohort " + c.name)) return e;
  }
  for (const auto& q : queues) {
    if (auto e = collect(q.resource_groups, "ClusterQueue " + q.name)) return e;
  }
  const std::size_t frs = fr_flavor_.size();
  std::vector<QuotaNode> nodes;
  auto fill_quota = [&](QuotaNode& n, const std::vector<ResourceGroup>& groups) {
    n.nominal.assign(frs, 0);
    n.borrowing_limit.assign(frs, kNoLimit);
    n.lending_limit.assign(frs, kNoLimit);
    for (const auto& g : groups) {
      for (const auto& fq : g.flavors) {
        for (const auto& rq : fq.resources) {
          const int fr = fr_of(flavor_index_.at(fq.flavor), rq.resource, false);
          n.nominal[at(fr)] = rq.nominal;
          if (rq.borrowing_limit) n.borrowing_limit[at(fr)] = *rq.borrowing_limit;
          if (rq.lending_limit) n.lending_limit[at(fr)] = *rq.lending_limit;
        }
      }
    }
  };
  // Cohorts: declared ones, then implicit ones named by a parentName or a cohort field.
  for (const auto& c : cohorts) {
    if (cohort_index_.contains(c.name)) return "Cohort " + c.name + ": declared twice";
    QuotaNode n;
    n.name = c.name;
    n.fair_weight = c.fair_weight;
    fill_quota(n, c.resource_groups);
    auto& covered = cohort_covered_[static_cast<int>(nodes.size())];
    for (const auto& g : c.resource_groups) {
      for (const auto& fq : g.flavors) {
        for (const auto& rq : fq.resources) covered.push_back(fr_of(flavor_index_.at(fq.flavor), rq.resource, false));
      }
    }
    cohort_index_.emplace(c.name, static_cast<int>(nodes.size()));
    nodes.push_back(std::move(n));
  }
  auto ensure_cohort = [&](const std::string& name) {
    auto it = cohort_index_.find(name);
    if (it != cohort_index_.end()) return it->second;
    QuotaNode n;
    n.name = name;
    fill_quota(n, {});
    const int idx = static_cast<int>(nodes.size());
    cohort_index_.emplace(name, idx);
    nodes.push_back(std::move(n));
    return idx;
  };
  for (const auto& c : cohorts) {
    if (c.parent.empty()) continue;
    const int parent = ensure_cohort(c.parent);
    nodes[at(cohort_index_.at(c.name))].parent = parent;
  }
  for (auto& q : queues) {
    if (queue_index_.contains(q.name)) return "ClusterQueue " + q.name + ": declared twice";
    QuotaNode n;
    n.name = q.name;
    n.is_queue = true;
    n.fair_weight = q.fair_weight;
    fill_quota(n, q.resource_groups);
    if (!q.cohort.empty()) n.parent = ensure_cohort(q.cohort);
    Queue queue;
    queue.node = static_cast<int>(nodes.size());
    for (const auto& g : q.resource_groups) {
      Group group{g.covered_resources, {}};
      for (const auto& fq : g.flavors) group.flavors.push_back(flavor_index_.at(fq.flavor));
      for (const auto& r : g.covered_resources) {
        queue.group_by_resource.emplace(r, static_cast<int>(queue.groups.size()));
      }
      queue.groups.push_back(std::move(group));
    }
    queue.spec = std::move(q);
    queue.reserved_message = "Quota reserved in ClusterQueue " + queue.spec.name;
    queue_index_.emplace(queue.spec.name, static_cast<int>(queues_.size()));
    queues_.push_back(std::move(queue));
    nodes.push_back(std::move(n));
  }
  node_queue_.assign(nodes.size(), -1);
  for (std::size_t qi = 0; qi < queues_.size(); ++qi) node_queue_[at(queues_[qi].node)] = static_cast<int>(qi);
  // Cycles in the cohort tree (hierarchy.HasCycle upstream). Kueue's cache keeps such a
  // tree but its snapshot leaves out every Cohort whose chain of parents runs into a cycle
  // and every ClusterQueue under one (skipInactiveCQReason: inactiveCQReasonHasCycle); the
  // rest of the cluster is scheduled as usual. So those nodes are detached here, each a
  // root of its own, and those ClusterQueues are inactive: their heads wait with
  // "ClusterQueue X is inactive".
  std::vector<int> state(nodes.size(), 0);  // 0 unseen, 1 on the current path, 2 no cycle, 3 has a cycle
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    std::vector<int> path;
    int n = static_cast<int>(i);
    while (n >= 0 && state[at(n)] == 0) {
      state[at(n)] = 1;
      path.push_back(n);
      n = nodes[at(n)].parent;
    }
    const bool cycle = n >= 0 && (state[at(n)] == 1 || state[at(n)] == 3);
    for (int p : path) state[at(p)] = cycle ? 3 : 2;
  }
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (state[i] != 3) continue;
    nodes[i].parent = -1;
    if (nodes[i].is_queue) queues_[at(node_queue_[i])].spec.active = false;
  }
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const int parent = nodes[i].parent;
    if (parent < 0) continue;
    (nodes[i].is_queue ? nodes[at(parent)].child_queues : nodes[at(parent)].child_cohorts).push_back(static_cast<int>(i));
  }
  heights_.assign(nodes.size(), 0);
  tree_ = QuotaTree(std::move(nodes), frs);
  for (std::size_t i = 0; i < tree_.size(); ++i) {
    if (!tree_.node(static_cast<int>(i)).is_queue) heights_[i] = height(static_cast<int>(i));
  }
  for (auto& queue : queues_) {
    std::vector<const std::string*> names;
    for (int n = queue.node; n >= 0; n = tree_.node(n).parent) names.push_back(&tree_.node(n).name);
    for (auto it = names.rbegin(); it != names.rend(); ++it) queue.path.append("/").append(**it);
  }
  return std::nullopt;
}

WorkloadId Core::submit(WorkloadSpec spec, VirtualTime now) {
  const auto id = static_cast<WorkloadId>(workloads_.size());
  Wl w;
  w.spec = std::move(spec);
  w.queued_at = whole_second(w.spec.creation);
  w.shape = shape_id(w.spec);
  w.partial = can_be_partially_admitted(w.spec);
  if (!w.spec.refusal_message.empty()) w.refusal = intern(w.spec.refusal_reason);
  auto it = queue_index_.find(w.spec.cluster_queue);
  w.uid_label = uid_order_.insert(w.spec.uid);
  w.uid_prefix = uid_prefix(w.spec.uid);
  workloads_.push_back(std::make_unique<Wl>(std::move(w)));
  Wl& x = *workloads_.back();
  // Storage for the usual lifetime (conditions, one admission's flavors and usage) is
  // taken now rather than during a cycle, and the conditions' lines are written once: a
  // cycle that admits a thousand new workloads otherwise pays for first touches of fresh
  // memory (page faults) inside the cycle.
  x.conditions.resize(4);
  x.conditions.clear();
  x.admitted.reserve(2);
  x.usage.reserve(2);
  if (it == queue_index_.end()) {
    set_pending(id, options_.unadmitted_workloads_observability ? r_misconfigured_ : r_inadmissible_,
                "ClusterQueue " + x.spec.cluster_queue + " doesn't exist", now, nullptr);
    return id;
  }
  x.queue = it->second;
  // As Kueue's workload.NewInfo computes TotalRequests when a workload enters the queue
  // manager, not in the scheduling cycle.
  totals_of(x);
  push_active(id, true);
  return id;
}

Expected<WorkloadId> Core::restore_admitted(WorkloadSpec spec, Admission admission, VirtualTime admitted_at) {
  auto it = queue_index_.find(admission.cluster_queue);
  if (it == queue_index_.end()) {
    return Unexpected{"admitted to ClusterQueue \"" + admission.cluster_queue + "\", which does not exist"};
  }
  Usage usage;
  for (const auto& ps : admission.pod_sets) {
    for (const auto& [resource, amount] : ps.resource_usage) {
      std::string flavor;
      for (const auto& [r, f] : ps.flavors) {
        if (r == resource) flavor = f;
      }
      if (flavor.empty()) continue;  // not quota-managed
      auto fit = flavor_index_.find(flavor);
      if (fit == flavor_index_.end()) {
        return Unexpected{"pod set " + ps.name + " is assigned flavor \"" + flavor + "\", which does not exist"};
      }
      const int fr = fr_of(fit->second, resource, false);
      if (fr < 0) {
        return Unexpected{"pod set " + ps.name + ": ClusterQueue " + admission.cluster_queue + " has no quota for " +
                          resource + " in flavor " + flavor};
      }
      add_to(usage, fr, amount);
    }
  }
  const auto id = static_cast<WorkloadId>(workloads_.size());
  Wl w;
  w.spec = std::move(spec);
  w.queued_at = whole_second(w.spec.creation);
  w.shape = shape_id(w.spec);
  w.queue = it->second;
  w.usage = std::move(usage);
  w.phase = WorkloadPhase::Admitted;
  w.has_admission = true;
  w.restored = std::make_unique<Admission>(std::move(admission));
  w.admitted_at = admitted_at;
  w.reserved_at = whole_second(admitted_at);
  // The queue is the one named by the admission, so its message is this one's.
  set_condition(w, CondType::QuotaReserved, true, r_quota_reserved_, MessageKind::QuotaReservedIn, {}, admitted_at);
  set_condition(w, CondType::Admitted, true, r_admitted_, MessageKind::WorkloadAdmitted, {}, admitted_at);
  w.uid_label = uid_order_.insert(w.spec.uid);
  w.uid_prefix = uid_prefix(w.spec.uid);
  workloads_.push_back(std::make_unique<Wl>(std::move(w)));
  hold(id);
  return id;
}

void Core::finish(WorkloadId id, VirtualTime now) {
  Wl& w = wl_checked(id);
  if (w.phase == WorkloadPhase::Finished) return;
  const bool held = w.phase == WorkloadPhase::Admitted || w.phase == WorkloadPhase::Evicted;
  if (held) {
    release(id);
  } else {
    unqueue(id);
  }
  w.phase = WorkloadPhase::Finished;
  set_condition(w, CondType::Finished, true, r_succeeded_, MessageKind::JobFinished, {}, now);
  if (held) requeue_inadmissible(w.queue);
}

Expected<bool> Core::forget(WorkloadId id) {
  if (id >= workloads_.size()) return Unexpected{"workload " + std::to_string(id) + " does not exist"};
  if (!workloads_[id]) return Unexpected{"workload " + std::to_string(id) + " was forgotten already"};
  Wl& w = *workloads_[id];
  if (w.phase != WorkloadPhase::Finished) {
    return Unexpected{"workload " + w.spec.ns + "/" + w.spec.name + " is " + phase_name(w.phase) +
                      ": only a finished workload can be forgotten"};
  }
  // A finished workload is in no queue, list or cache of the core (finish() took it out
  // of them). Its queue's head search may still start from its key: that hint is dropped,
  // since the key's UID label may go with it.
  if (w.queue >= 0) {
    Queue& q = queues_[at(w.queue)];
    if (q.scan_from && q.scan_from->id == id) {
      q.scan_from.reset();
      q.scan_generation = 0;  // never a generation: the next search starts at the front
    }
  }
  uid_order_.release(w.spec.uid);
  workloads_[id].reset();
  return true;
}

void Core::release_evicted(WorkloadId id, VirtualTime now) {
  Wl& w = wl_checked(id);
  if (w.phase != WorkloadPhase::Evicted) return;
  release(id);
  std::string message;
  for (const auto& c : w.conditions) {
    if (c.type == CondType::Evicted) message = render_message(w, c);
  }
  // workload.UnsetQuotaReservationWithCondition + SyncAdmittedCondition, then requeue.
  set_condition(w, CondType::QuotaReserved, false, r_preempted_, MessageKind::Text, message, now);
  set_condition(w, CondType::Admitted, false, r_no_reservation_, MessageKind::NoReservation, {}, now);
  set_condition(w, CondType::Requeued, true, r_preempted_, MessageKind::Text, message, now);
  w.has_admission = false;
  w.admitted.clear();
  w.restored.reset();
  w.phase = WorkloadPhase::Pending;
  push_active(id, true);
  requeue_inadmissible(w.queue);
}

Expected<bool> Core::set_quota(const std::string& cluster_queue, const std::string& flavor,
                         const ResourceQuota& quota) {
  auto qit = queue_index_.find(cluster_queue);
  if (qit == queue_index_.end()) return Unexpected{"ClusterQueue \"" + cluster_queue + "\" does not exist"};
  auto fit = flavor_index_.find(flavor);
  if (fit == flavor_index_.end()) return Unexpected{"ResourceFlavor \"" + flavor + "\" does not exist"};
  Queue& q = queues_[at(qit->second)];
  bool covered = false;
  for (auto& g : q.spec.resource_groups) {
    for (auto& fq : g.flavors) {
      if (fq.flavor != flavor) continue;
      for (auto& rq : fq.resources) {
        if (rq.resource != quota.resource) continue;
        rq = quota;
        covered = true;
      }
    }
  }
  const int fr = covered ? fr_of(fit->second, quota.resource, false) : -1;
  if (fr < 0) {
    return Unexpected{"ClusterQueue " + cluster_queue + " has no quota for " + quota.resource + " in flavor " + flavor};
  }
  if (quota.nominal < 0 || (quota.borrowing_limit && *quota.borrowing_limit < 0) ||
      (quota.lending_limit && (*quota.lending_limit < 0 || *quota.lending_limit > quota.nominal))) {
    return Unexpected{"ClusterQueue " + cluster_queue + ": quotas must be >= 0 and lendingLimit <= nominalQuota"};
  }
  tree_.set_quota(q.node, fr, quota.nominal, quota.borrowing_limit.value_or(kNoLimit),
                  quota.lending_limit.value_or(kNoLimit));
  changed();
  requeue_inadmissible(qit->second);
  return true;
}

Expected<bool> Core::set_cohort_quota(const std::string& cohort, const std::string& flavor,
                                const ResourceQuota& quota) {
  auto cit = cohort_index_.find(cohort);
  if (cit == cohort_index_.end()) return Unexpected{"Cohort \"" + cohort + "\" does not exist"};
  auto fit = flavor_index_.find(flavor);
  if (fit == flavor_index_.end()) return Unexpected{"ResourceFlavor \"" + flavor + "\" does not exist"};
  const int n = cit->second;
  const int fr = fr_of(fit->second, quota.resource, false);
  const auto covered = cohort_covered_.find(n);
  if (fr < 0 || covered == cohort_covered_.end() ||
      std::find(covered->second.begin(), covered->second.end(), fr) == covered->second.end()) {
    return Unexpected{"Cohort " + cohort + " has no quota for " + quota.resource + " in flavor " + flavor};
  }
  if (quota.nominal < 0 || (quota.borrowing_limit && *quota.borrowing_limit < 0) ||
      (quota.lending_limit && *quota.lending_limit < 0)) {
    return Unexpected{"Cohort " + cohort + ": quotas must be >= 0"};
  }
  if (!tree_.has_parent(n) && (quota.borrowing_limit || quota.lending_limit)) {
    return Unexpected{"Cohort " + cohort + ": borrowingLimit and lendingLimit need a parent Cohort"};
  }
  tree_.set_quota(n, fr, quota.nominal, quota.borrowing_limit.value_or(kNoLimit), quota.lending_limit.value_or(kNoLimit));
  changed();
  requeue_tree(n);
  return true;
}

Expected<bool> Core::evict(WorkloadId id, const std::string& reason, const std::string& message, VirtualTime now) {
  if (id >= workloads_.size()) return Unexpected{"no workload with id " + std::to_string(id)};
  if (!workloads_[id]) return Unexpected{"workload " + std::to_string(id) + " was forgotten"};
  Wl& w = wl(id);
  if (w.phase != WorkloadPhase::Admitted) return Unexpected{"workload " + w.spec.ns + "/" + w.spec.name + " is not admitted"};
  set_eviction_conditions(w, intern(reason), message, now);
  mark_evicted(id);
  changed();
  return true;
}

Expected<bool> Core::evict_stopped(WorkloadId id, const std::string& reason, const std::string& message,
                                   VirtualTime now) {
  if (id >= workloads_.size()) return Unexpected{"no workload with id " + std::to_string(id)};
  if (!workloads_[id]) return Unexpected{"workload " + std::to_string(id) + " was forgotten"};
  Wl& w = wl(id);
  if (w.phase != WorkloadPhase::Admitted) return Unexpected{"workload " + w.spec.ns + "/" + w.spec.name + " is not admitted"};
  set_condition(w, CondType::Evicted, true, intern(reason), MessageKind::Text, message, now);
  mark_evicted(id);
  changed();
  return true;
}

Expected<bool> Core::set_priority(WorkloadId id, std::int32_t priority) {
  if (id >= workloads_.size()) return Unexpected{"no workload with id " + std::to_string(id)};
  if (!workloads_[id]) return Unexpected{"workload " + std::to_string(id) + " was forgotten"};
  Wl& w = wl(id);
  if (w.phase != WorkloadPhase::Admitted) return Unexpected{"workload " + w.spec.ns + "/" + w.spec.name + " is not admitted"};
  if (w.spec.priority == priority) return false;
  // Its place in the queue's candidate ranking moves; every memo keyed by the state's id
  // (targets, shared orders, removal runs) is rebuilt under the new one. Kueue's workload
  // controller requeues the cohort tree's inadmissible workloads when an admitted
  // workload's priority changes (workload.PriorityChanged in its Update handler): one may
  // now preempt it.
  Queue& q = queues_[at(w.queue)];
  unrank(q, id);
  w.spec.priority = priority;
  rank(q, id);
  changed();
  requeue_inadmissible(w.queue);
  return true;
}

bool Core::has_active_heads() const {
  return std::any_of(queues_.begin(), queues_.end(), [this](const Queue& q) { return has_head(q); });
}

std::vector<std::string> Core::cluster_queue_names() const {
  std::vector<std::string> out;
  for (const auto& q : queues_) out.push_back(q.spec.name);
  return out;
}

std::vector<std::string> Core::cohort_names() const {
  std::vector<std::pair<int, std::string>> byIndex;
  for (const auto& [name, idx] : cohort_index_) byIndex.emplace_back(idx, name);
  std::sort(byIndex.begin(), byIndex.end());
  std::vector<std::string> out;
  for (auto& p : byIndex) out.push_back(std::move(p.second));
  return out;
}

std::optional<QuotaFigures> Core::figures(const std::string& node, const std::string& flavor,
                                                  const std::string& resource) const {
  int n = -1;
  if (auto q = queue_index_.find(node); q != queue_index_.end()) n = queues_[at(q->second)].node;
  if (auto c = cohort_index_.find(node); c != cohort_index_.end()) n = c->second;
  auto f = flavor_index_.find(flavor);
  if (n < 0 || f == flavor_index_.end()) return std::nullopt;
  const int fr = fr_of(f->second, resource, false);
  if (fr < 0) return std::nullopt;
  return QuotaFigures{tree_.subtree_quota(n, fr), tree_.usage(n, fr), tree_.available(n, fr),
                      tree_.potential_available(n, fr), tree_.nominal(n, fr)};
}

}  // namespace gpubank::twin::admission

namespace gpubank::twin {

Expected<std::unique_ptr<AdmissionCore>> AdmissionCore::create(const CoreOptions& options,
                                                               std::vector<ResourceFlavorSpec> flavors,
                                                               std::vector<CohortSpec> cohorts,
                                                               std::vector<ClusterQueueSpec> queues) {
  auto core = std::make_unique<admission::Core>(options, std::move(flavors));
  if (auto error = core->build(std::move(cohorts), std::move(queues))) return Unexpected{*error};
  return std::unique_ptr<AdmissionCore>(std::move(core));
}

}  // namespace gpubank::twin
