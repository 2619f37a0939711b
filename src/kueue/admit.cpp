#include "kueue/admit.hpp"

#include <algorithm>
#include <iterator>
#include <limits>
#include <numeric>
#include <set>
#include <utility>

#include "kueue/amounts.hpp"
#include "kueue/decode.hpp"

namespace gpubank::kueue {
namespace {

std::string workload_object(const ObjectMeta& m) { return "Workload/" + m.ns + "/" + m.name; }

doc::Json admission_json(const twin::Admission& a) {
  doc::Json out = doc::Json::object();
  out["clusterQueue"] = a.cluster_queue;
  doc::Json assignments = doc::Json::array();
  for (const auto& ps : a.pod_sets) {
    doc::Json p = doc::Json::object();
    p["name"] = ps.name;
    // Both omitempty: a pod set that counts nothing the queue checks has neither.
    doc::Json flavors = doc::Json::object();
    for (const auto& [res, flavor] : ps.flavors) flavors[res] = flavor;
    if (!flavors.empty()) p["flavors"] = std::move(flavors);
    doc::Json usage = doc::Json::object();
    for (const auto& [res, amount] : ps.resource_usage) usage[res] = format_amount(res, amount);
    if (!usage.empty()) p["resourceUsage"] = std::move(usage);
    p["count"] = ps.count;
    assignments.push_back(std::move(p));
  }
  out["podSetAssignments"] = std::move(assignments);
  return out;
}

// status.flavorsReservation / flavorsUsage as Kueue's Cache.getUsage writes them: every
// flavor of the queue in spec order, its resources sorted by name, `borrowed` 0 for a
// queue outside any cohort.
doc::Json usage_json(const ClusterQueue& cq, const std::vector<twin::FlavorResourceAmount>& amounts) {
  doc::Json out = doc::Json::array();
  for (const auto& g : cq.resource_groups) {
    for (const auto& f : g.flavors) {
      std::vector<std::string> resources = g.covered_resources;
      std::sort(resources.begin(), resources.end());
      doc::Json list = doc::Json::array();
      for (const auto& res : resources) {
        twin::Amount total = 0, borrowed = 0;
        for (const auto& a : amounts) {
          if (a.flavor == f.name && a.resource == res) {
            total = a.total;
            borrowed = a.borrowed;
          }
        }
        if (cq.cohort_name.empty() || borrowed < 0) borrowed = 0;
        doc::Json r = doc::Json::object();
        r["name"] = res;
        r["total"] = format_amount(res, total);
        r["borrowed"] = format_amount(res, borrowed);
        list.push_back(std::move(r));
      }
      doc::Json flavor = doc::Json::object();
      flavor["name"] = f.name;
      flavor["resources"] = std::move(list);
      out.push_back(std::move(flavor));
    }
  }
  return out;
}

doc::Json& status_of(doc::Json& object) {
  doc::Json& status = object["status"];
  if (!status.is_object()) status = doc::Json::object();
  return status;
}

std::set<std::string> queue_flavors(const ClusterQueue& cq) {
  std::set<std::string> out;
  for (const auto& g : cq.resource_groups) {
    for (const auto& f : g.flavors) out.insert(f.name);
  }
  return out;
}

// workload.AdmissionChecksForWorkload, sorted by name. A check's flavors are its onFlavors,
// or every flavor of the queue when it lists none (admissioncheck.NewAdmissionChecks).
// With an admission: the checks whose flavors meet the admission's; without one: the
// checks that run on every flavor of the queue.
std::vector<std::string> checks_for(const ClusterQueue& cq, const twin::Admission* admission) {
  const std::set<std::string> all = queue_flavors(cq);
  std::set<std::string> assigned;
  if (admission != nullptr) {
    for (const auto& ps : admission->pod_sets) {
      for (const auto& [resource, flavor] : ps.flavors) assigned.insert(flavor);
    }
  }
  std::vector<std::string> out;
  for (const auto& [name, on] : cq.admission_checks) {
    const std::set<std::string> flavors = on.empty() ? all : std::set<std::string>(on.begin(), on.end());
    const bool applies = admission != nullptr
                             ? std::any_of(flavors.begin(), flavors.end(), [&](const auto& f) { return assigned.contains(f); })
                             : std::includes(flavors.begin(), flavors.end(), all.begin(), all.end());
    if (applies) out.push_back(name);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// syncAdmissionCheckConditions: the Workload's status.admissionChecks for `names`, keeping
// the states it already has, Pending for the others (as of `time`), sorted by name.
doc::Json synced_checks(const doc::Json& current, const std::vector<std::string>& names, const std::string& time) {
  doc::Json out = doc::Json::array();
  for (const auto& name : names) {
    const doc::Json* found = nullptr;
    if (current.is_array()) {
      for (const auto& c : current) {
        if (c.is_object() && c.value("name", "") == name) found = &c;
      }
    }
    if (found != nullptr) {
      out.push_back(*found);
      continue;
    }
    doc::Json c = doc::Json::object();
    c["name"] = name;
    c["state"] = "Pending";
    c["message"] = "";
    c["lastTransitionTime"] = time;
    out.push_back(std::move(c));
  }
  return out;
}

bool all_ready(const doc::Json& checks) {
  return std::all_of(checks.begin(), checks.end(), [](const doc::Json& c) { return c.value("state", "") == "Ready"; });
}

// The Workload's status.admissionChecks as the input has them.
doc::Json input_checks(const Workload& wl) {
  const doc::Node* status = wl.source.raw.find("status");
  const doc::Node* checks = status != nullptr ? status->find("admissionChecks") : nullptr;
  return checks != nullptr ? doc::to_ordered_json(*checks) : doc::Json::array();
}

}  // namespace

void set_condition(doc::Json& conditions, const std::string& type, bool status, const std::string& reason,
                   const std::string& message, const std::string& time, std::optional<std::int64_t> generation) {
  if (!conditions.is_array()) conditions = doc::Json::array();
  const std::string status_text = status ? "True" : "False";
  for (auto& c : conditions) {
    if (!c.is_object() || c.value("type", "") != type) continue;
    if (c.value("status", "") != status_text) {
      c["status"] = status_text;
      c["lastTransitionTime"] = time;
    }
    c["reason"] = reason;
    c["message"] = message;
    if (generation) c["observedGeneration"] = *generation;
    return;
  }
  doc::Json c = doc::Json::object();
  c["type"] = type;
  c["status"] = status_text;
  if (generation) c["observedGeneration"] = *generation;
  c["lastTransitionTime"] = time;
  c["reason"] = reason;
  c["message"] = message;
  conditions.push_back(std::move(c));
}

std::string to_json_line(const Event& event, const Timeline& timeline) {
  doc::Json out = doc::Json::object();
  out["t"] = event.t;
  out["time"] = format_rfc3339(timeline.to_time(event.t));
  out["kind"] = event.kind;
  out["object"] = event.object;
  if (!event.queue.empty()) out["queue"] = event.queue;
  if (!event.reason.empty()) out["reason"] = event.reason;
  if (!event.message.empty()) out["message"] = event.message;
  if (!event.related.empty()) out["related"] = event.related;
  return out.dump();
}

AdmissionRun::AdmissionRun(const ObjectSet& set, Diagnostics& diagnostics)
    : set_(set), timeline_(make_timeline(set)), entries_(plan_workloads(set, timeline_, diagnostics)),
      ids_(set.workloads.size()) {
  for (const auto& e : entries_) {
    t0_ = std::max(t0_, e.creation);
    if (e.route == Route::Restore) t0_ = std::max(t0_, e.admitted_at);
  }
}

twin::CoreOptions AdmissionRun::core_options(bool fair_sharing) {
  twin::CoreOptions options;
  options.fair_sharing = fair_sharing;
  return options;
}

namespace {

// The Kueue feature gates that change admission, as the core's options.
constexpr std::pair<std::string_view, bool twin::CoreOptions::*> kGates[] = {
    {"PartialAdmission", &twin::CoreOptions::partial_admission},
    {"SchedulingEquivalenceHashing", &twin::CoreOptions::scheduling_equivalence_hashing},
    {"UnadmittedWorkloadsObservability", &twin::CoreOptions::unadmitted_workloads_observability},
    {"QuotaCheckStrategy", &twin::CoreOptions::quota_check_strategy},
};

// Sets a gate the twin models; false for any other name.
bool set_gate(twin::CoreOptions& options, std::string_view name, bool enabled) {
  const auto* gate = std::find_if(std::begin(kGates), std::end(kGates), [&](const auto& g) { return g.first == name; });
  if (gate == std::end(kGates)) return false;
  options.*(gate->second) = enabled;
  return true;
}

std::string modelled_gates() {
  std::string known;
  for (const auto& g : kGates) known += (known.empty() ? "" : ", ") + std::string(g.first);
  return known;
}

}  // namespace

Expected<twin::CoreOptions> AdmissionRun::core_options(const ObjectSet& set, bool fair_sharing,
                                                       std::string_view feature_gates, Diagnostics& diagnostics) {
  const ManagerConfiguration* config = set.configuration();
  if (config == nullptr) return core_options(fair_sharing, feature_gates);
  if (config->feature_gates && !feature_gates.empty()) {
    // LoadAndValidateFeatureGates
    const doc::Node* gates = config->source.raw.find("featureGates");
    return Unexpected{"--feature-gates: feature gates for CLI and configuration cannot both specified (featureGates at " +
                      config->source.file + ":" + std::to_string(gates->pos.line) + ")"};
  }
  auto options = core_options(fair_sharing || config->fair_sharing.has_value(), feature_gates);
  if (!options) return options;
  if (config->fair_sharing) options->fair_sharing_strategies = *config->fair_sharing;
  options->ignore_undeclared_resources = config->ignore_undeclared;
  if (config->feature_gates) {
    std::string ignored;
    for (const auto& [name, enabled] : *config->feature_gates) {
      if (!set_gate(*options, name, enabled)) ignored += (ignored.empty() ? "" : ", ") + name;
    }
    if (!ignored.empty()) {
      diagnostics.push_back(Diagnostic{Severity::Warning, std::string(kRuleConfigNotModelled), config->source.file,
                                       config->source.raw.find("featureGates")->pos, "Configuration",
                                       config->config_map, "featureGates",
                                       "not modelled: " + ignored + " (the twin models " + modelled_gates() + ")"});
    }
  }
  return options;
}

Expected<twin::CoreOptions> AdmissionRun::core_options(bool fair_sharing, std::string_view feature_gates) {
  twin::CoreOptions options = core_options(fair_sharing);
  constexpr std::size_t kMaxLength = 4096;
  if (feature_gates.size() > kMaxLength) {
    return Unexpected{"--feature-gates: " + std::to_string(feature_gates.size()) + " bytes, at most " +
                      std::to_string(kMaxLength) + " allowed"};
  }
  auto trim = [](std::string_view v) {
    while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
    while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
    return v;
  };
  std::size_t start = 0;
  while (start <= feature_gates.size()) {
    const std::size_t comma = std::min(feature_gates.find(',', start), feature_gates.size());
    const std::string_view pair = trim(feature_gates.substr(start, comma - start));
    start = comma + 1;
    if (pair.empty()) continue;  // "A=true," as the manager's flag parsing allows
    const std::size_t eq = pair.find('=');
    if (eq == std::string_view::npos) {
      return Unexpected{"--feature-gates: missing bool value for " + std::string(pair) + " (want Name=true or Name=false)"};
    }
    const std::string_view name = trim(pair.substr(0, eq));
    const std::string_view value = trim(pair.substr(eq + 1));
    bool enabled = false;
    if (value == "true" || value == "True" || value == "TRUE" || value == "t" || value == "T" || value == "1") {
      enabled = true;
    } else if (value == "false" || value == "False" || value == "FALSE" || value == "f" || value == "F" || value == "0") {
      enabled = false;
    } else {
      return Unexpected{"--feature-gates: invalid value of " + std::string(name) + "=" + std::string(value) +
                        ": want a boolean (true or false)"};
    }
    if (!set_gate(options, name, enabled)) {
      return Unexpected{"--feature-gates: unrecognized feature gate: " + std::string(name) + " (the twin models " +
                        modelled_gates() + ")"};
    }
  }
  return options;
}

std::uint64_t AdmissionRun::max_cycles() const { return 1000 + 10 * static_cast<std::uint64_t>(set_.workloads.size()); }

void AdmissionRun::load(twin::AdmissionCore& core, Diagnostics& diagnostics) {
  for (std::size_t i = 0; i < entries_.size(); ++i) {
    WorkloadEntry& e = entries_[i];
    if (e.route != Route::Restore) continue;
    auto id = core.restore_admitted(e.spec, e.admission, e.admitted_at);
    if (!id) {
      const Workload& wl = set_.workloads[i];
      diagnostics.push_back(Diagnostic{Severity::Warning, std::string(kRuleRestoreFailed), wl.source.file,
                                       wl.source.pos, "Workload", wl.metadata.ns + "/" + wl.metadata.name,
                                       "status.admission", id.error() + "; the Workload is left as it is"});
      e.route = Route::Untouched;
      continue;
    }
    ids_[i] = *id;
    index_of_[*id] = i;
    if (!e.drain_reason.empty()) {
      // Drained: evicted, and its quota released as soon as its pods are gone (at once here).
      if (const auto evicted = core.evict_stopped(*id, e.drain_reason, e.drain_message, t0_); evicted) {
        core.release_evicted(*id, t0_);
      }
    }
  }
  std::vector<std::size_t> order(entries_.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return entries_[a].spec.creation < entries_[b].spec.creation; });
  for (const std::size_t i : order) {
    const WorkloadEntry& e = entries_[i];
    if (e.route == Route::Submit) {
      const twin::WorkloadId id = core.submit(e.spec, e.spec.creation);
      ids_[i] = id;
      index_of_[id] = i;
    }
  }
  for (std::size_t i = 0; i < entries_.size(); ++i) {
    const WorkloadEntry& e = entries_[i];
    if (e.route != Route::Blocked) continue;
    events_.push_back(Event{t0_, "Pending", workload_object(set_.workloads[i].metadata), e.cluster_queue, e.reason,
                            e.message, {}});
  }
}

std::string AdmissionRun::object_of(twin::WorkloadId id) const {
  const auto it = index_of_.find(id);
  if (it == index_of_.end()) return "Workload/?/" + std::to_string(id);
  return workload_object(set_.workloads[it->second].metadata);
}

void AdmissionRun::record(const twin::CycleResult& result, const twin::AdmissionCore& core) {
  for (const auto& d : result.decisions) {
    Event e{result.time, {}, object_of(d.workload), d.cluster_queue, d.reason, d.message, {}};
    for (const auto id : d.related) e.related.push_back(object_of(id));
    switch (d.kind) {
      case twin::Decision::Kind::Admitted: {
        // As the scheduler's events: QuotaReserved, and Admitted only once every admission
        // check is Ready (recordWorkloadAdmissionEvents). The twin runs no check
        // controller, so a reservation that waits for checks stays QuotaReserved.
        e.kind = "Admitted";
        const auto it = index_of_.find(d.workload);
        const ClusterQueue* cq = set_.find_cluster_queue(d.cluster_queue);
        if (it != index_of_.end() && cq != nullptr && !cq->admission_checks.empty()) {
          const std::vector<std::string> unready = unready_checks(it->second, core.status(d.workload));
          if (!unready.empty()) {
            e.kind = "QuotaReserved";
            e.message += "; not admitted until admission check" + std::string(unready.size() > 1 ? "s " : " ");
            for (std::size_t k = 0; k < unready.size(); ++k) e.message += (k > 0 ? ", " : "") + unready[k];
            e.message += unready.size() > 1 ? " are Ready" : " is Ready";
          }
        }
        last_pending_.erase(d.workload);
        break;
      }
      case twin::Decision::Kind::Pending: {
        auto [it, inserted] = last_pending_.emplace(d.workload, d.reason);
        if (!inserted && it->second == d.reason) continue;  // Pending: first time and on a new reason only
        it->second = d.reason;
        e.kind = "Pending";
        break;
      }
      case twin::Decision::Kind::PreemptionIssued:
        // The preemptor stays pending until its victims are gone; `related` names them.
        e.kind = "Pending";
        last_pending_[d.workload] = d.reason;
        break;
      case twin::Decision::Kind::Preempted:
        e.kind = "Preempted";
        last_pending_.erase(d.workload);
        break;
    }
    events_.push_back(std::move(e));
  }
}

Expected<std::uint64_t> AdmissionRun::run(twin::AdmissionCore& core, const RunOptions& options) {
  const std::uint64_t cap = options.cycles.value_or(max_cycles());
  // Until stable: no ClusterQueue has an active head, or cycles stopped changing anything.
  // A quiet cycle (no admission, preemption or new pending message) can still rotate a
  // BestEffortFIFO queue to its next head, so quiet must last longer than any queue is long.
  std::uint64_t quiet = 0;
  for (std::uint64_t k = 0;; ++k) {
    if (!options.cycles && !core.has_active_heads()) return k;
    if (!options.cycles && quiet > 0) {
      std::uint64_t pending = 0;
      for (const auto& name : core.cluster_queue_names()) {
        pending += static_cast<std::uint64_t>(core.cluster_queue_status(name).pending_workloads);
      }
      if (quiet > pending) return k;
    }
    if (k >= cap) {
      if (options.cycles) return k;
      return Unexpected{"admission did not settle within " + std::to_string(cap) +
                        " cycles (the cap is 1000 plus 10 per Workload); run a fixed number with --cycles"};
    }
    const twin::VirtualTime now = t0_ + static_cast<twin::VirtualTime>(k);
    const twin::CycleResult result = core.run_cycle(now);
    record(result, core);
    quiet = result.decisions.empty() && result.evicted.empty() ? quiet + 1 : 0;
    for (const auto id : result.evicted) core.release_evicted(id, now);
  }
}

doc::Json AdmissionRun::encode_workload(std::size_t index, const twin::AdmissionCore& core) const {
  const Workload& wl = set_.workloads[index];
  const WorkloadEntry& e = entries_[index];
  doc::Json out = doc::to_ordered_json(wl.source.raw);
  if (e.route == Route::Untouched) return out;
  if ((e.route == Route::Submit || e.route == Route::Restore) && !ids_[index]) return out;
  doc::Json& status = status_of(out);
  doc::Json conditions = status.contains("conditions") ? status["conditions"] : doc::Json::array();
  const auto generation = wl.metadata.generation;
  if (e.route == Route::Blocked) {
    set_condition(conditions, "QuotaReserved", false, e.reason, e.message, timeline_.format(t0_), generation);
    status["conditions"] = std::move(conditions);
    if (e.drop_admission) status.erase("admission");
    return out;
  }
  const twin::WorkloadStatus st = core.status(*ids_[index]);
  for (const auto& c : st.conditions) {
    set_condition(conditions, c.type, c.status, c.reason, c.message, timeline_.format(c.last_transition), generation);
  }
  // Admission checks: the workload controller lists the queue's checks on the Workload, and
  // SyncAdmittedCondition keeps a reservation from being Admitted until all are Ready.
  const std::string& queue = st.admission ? st.admission->cluster_queue : e.spec.cluster_queue;
  if (const ClusterQueue* cq = set_.find_cluster_queue(queue); cq != nullptr && !cq->admission_checks.empty()) {
    const bool reserved = st.phase == twin::WorkloadPhase::Admitted;
    const std::string since = reserved ? timeline_.format(st.admitted_at) : timeline_.format(t0_);
    const doc::Json checks =
        synced_checks(input_checks(wl), checks_for(*cq, reserved ? &*st.admission : nullptr), since);
    if (reserved && !all_ready(checks)) {
      if (unadmitted_workloads_observability_) {
        set_condition(conditions, "Admitted", false, "UnsatisfiedAdmissionChecks", "The workload has not all checks ready",
                      since, generation);
      } else {  // never admitted, so SyncAdmittedCondition writes no Admitted condition
        conditions.erase(std::remove_if(conditions.begin(), conditions.end(),
                                        [](const doc::Json& c) { return c.value("type", "") == "Admitted"; }),
                         conditions.end());
      }
    }
    if (checks.empty()) {
      status.erase("admissionChecks");
    } else {
      status["admissionChecks"] = checks;
    }
  }
  if (!conditions.empty()) status["conditions"] = std::move(conditions);
  if (st.admission) {
    status["admission"] = admission_json(*st.admission);
  } else {
    status.erase("admission");
  }
  return out;
}

std::vector<std::string> AdmissionRun::unready_checks(std::size_t index, const twin::WorkloadStatus& st) const {
  std::vector<std::string> out;
  if (st.phase != twin::WorkloadPhase::Admitted || !st.admission) return out;
  const ClusterQueue* cq = set_.find_cluster_queue(st.admission->cluster_queue);
  if (cq == nullptr || cq->admission_checks.empty()) return out;
  for (const auto& c : synced_checks(input_checks(set_.workloads[index]), checks_for(*cq, &*st.admission), {})) {
    if (c.value("state", "") != "Ready") out.push_back(c.value("name", ""));
  }
  return out;
}

bool AdmissionRun::awaits_checks(std::size_t index, const twin::WorkloadStatus& st) const {
  return !unready_checks(index, st).empty();
}

doc::Json AdmissionRun::encode_cluster_queue(std::size_t index, const twin::AdmissionCore& core) const {
  const ClusterQueue& cq = set_.cluster_queues[index];
  doc::Json out = doc::to_ordered_json(cq.source.raw);
  doc::Json& status = status_of(out);
  doc::Json conditions = status.contains("conditions") ? status["conditions"] : doc::Json::array();
  const QueueActivity activity = queue_activity(cq, set_);
  set_condition(conditions, "Active", activity.active, activity.reason, activity.message, timeline_.format(0),
                cq.metadata.generation);
  twin::ClusterQueueStatus cs = core.cluster_queue_status(cq.metadata.name);
  // A reservation whose admission checks are not all Ready is not admitted: Kueue counts
  // it in reservingWorkloads and flavorsReservation only.
  if (!cq.admission_checks.empty()) {
    for (std::size_t i = 0; i < set_.workloads.size(); ++i) {
      if (!ids_[i]) continue;
      const twin::WorkloadStatus st = core.status(*ids_[i]);
      if (!awaits_checks(i, st) || st.admission->cluster_queue != cq.metadata.name) continue;
      --cs.admitted_workloads;
      for (const auto& ps : st.admission->pod_sets) {
        for (const auto& [resource, amount] : ps.resource_usage) {
          for (const auto& [r, flavor] : ps.flavors) {
            if (r != resource) continue;
            for (auto& u : cs.flavors_usage) {
              if (u.flavor != flavor || u.resource != resource) continue;
              // borrowed = max(0, total - nominal): a positive one gives the nominal back.
              const twin::Amount nominal = u.borrowed > 0 ? u.total - u.borrowed : std::numeric_limits<twin::Amount>::max();
              u.total -= amount;
              u.borrowed = nominal == std::numeric_limits<twin::Amount>::max() ? 0 : std::max<twin::Amount>(0, u.total - nominal);
            }
          }
        }
      }
    }
  }
  std::int64_t blocked = 0;
  for (const auto& e : entries_) {
    if (e.route == Route::Blocked && e.cluster_queue == cq.metadata.name) ++blocked;
  }
  status["conditions"] = std::move(conditions);
  status["flavorsReservation"] = usage_json(cq, cs.flavors_reservation);
  status["flavorsUsage"] = usage_json(cq, cs.flavors_usage);
  status["pendingWorkloads"] = cs.pending_workloads + blocked;
  status["reservingWorkloads"] = cs.reserving_workloads;
  status["admittedWorkloads"] = cs.admitted_workloads;
  if (cs.weighted_share) {
    status["fairSharing"] = doc::Json{{"weightedShare", *cs.weighted_share}};
  } else {
    status.erase("fairSharing");
  }
  return out;
}

doc::Json AdmissionRun::encode(const twin::AdmissionCore& core) const {
  doc::Json items = doc::Json::array();
  for (std::size_t i = 0; i < set_.workloads.size(); ++i) items.push_back(encode_workload(i, core));
  for (std::size_t i = 0; i < set_.cluster_queues.size(); ++i) items.push_back(encode_cluster_queue(i, core));
  doc::Json out = doc::Json::object();
  out["apiVersion"] = "v1";
  out["kind"] = "List";
  out["items"] = std::move(items);
  return out;
}

}  // namespace gpubank::kueue
