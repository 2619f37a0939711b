#include "kueue/bridge.hpp"

#include <algorithm>
#include <chrono>
#include <limits>
#include <set>

#include "kueue/amounts.hpp"
#include "kueue/reader.hpp"
#include "kueue/requests.hpp"
#include "kueue/webhook.hpp"
#include "twin/admission/node_match.hpp"

namespace gpubank::kueue {
namespace {

template <class T>
void earliest_of(const std::vector<T>& objects, std::optional<Timestamp>& earliest) {
  for (const auto& o : objects) {
    const auto& t = o.metadata.creation_timestamp;
    if (t && (!earliest || *t < *earliest)) earliest = *t;
  }
}

double weight_of(const std::optional<Quantity>& weight) {
  if (!weight) return 1.0;
  return static_cast<double>(weight->milli_value()) / 1000.0;
}

std::string object_name(const ObjectMeta& m) { return m.ns.empty() ? m.name : m.ns + "/" + m.name; }

Diagnostic priority_warning(const Workload& wl, const std::string& path, const std::string& name) {
  return Diagnostic{Severity::Warning,
                    std::string(kRulePriorityClassNotFound),
                    wl.source.file,
                    wl.source.pos,
                    "Workload",
                    object_name(wl.metadata),
                    path,
                    "WorkloadPriorityClass \"" + name + "\" not found; the priority is spec.priority (" +
                        std::to_string(wl.priority.value_or(0)) + ")"};
}

std::vector<std::string> missing_flavors(const std::vector<ResourceGroup>& groups, const ObjectSet& set) {
  std::vector<std::string> out;
  for (const auto& g : groups) {
    for (const auto& f : g.flavors) {
      if (set.find_flavor(f.name) == nullptr && std::find(out.begin(), out.end(), f.name) == out.end()) {
        out.push_back(f.name);
      }
    }
  }
  return out;
}

twin::TaintEffect effect_of(const std::string& e) {
  if (e == "PreferNoSchedule") return twin::TaintEffect::PreferNoSchedule;
  if (e == "NoExecute") return twin::TaintEffect::NoExecute;
  return twin::TaintEffect::NoSchedule;
}

}  // namespace

// Timestamps span 1677..2262 in int64 nanoseconds, so the difference of two (a condition's
// lastTransitionTime of 1726 against a creation in 2026) does not fit: the arithmetic is done
// in 128 bits and the way back saturates at the ends of what a Timestamp holds.
__extension__ using Wide = __int128;

twin::VirtualTime Timeline::to_virtual(Timestamp t) const {
  const Wide ns = static_cast<Wide>(t.time_since_epoch().count()) - start.time_since_epoch().count();
  Wide ms = ns / 1'000'000;
  if (ns % 1'000'000 < 0) --ms;  // floor, as milliseconds before start round down
  return static_cast<twin::VirtualTime>(ms);  // |ms| < 2^64 / 1e6: always fits
}

Timestamp Timeline::to_time(twin::VirtualTime t) const {
  using Rep = Timestamp::rep;
  const Wide ns = static_cast<Wide>(start.time_since_epoch().count()) + static_cast<Wide>(t) * 1'000'000;
  const Wide clamped = std::clamp<Wide>(ns, std::numeric_limits<Rep>::min(), std::numeric_limits<Rep>::max());
  return Timestamp{Timestamp::duration{static_cast<Rep>(clamped)}};
}

std::string Timeline::format(twin::VirtualTime t) const {
  return format_rfc3339(std::chrono::floor<std::chrono::seconds>(to_time(t)));
}

Timeline make_timeline(const ObjectSet& set) {
  std::optional<Timestamp> earliest;
  earliest_of(set.resource_flavors, earliest);
  earliest_of(set.cohorts, earliest);
  earliest_of(set.cluster_queues, earliest);
  earliest_of(set.local_queues, earliest);
  earliest_of(set.priority_classes, earliest);
  earliest_of(set.workloads, earliest);
  return Timeline{earliest.value_or(Timestamp{})};
}

PriorityResolution resolve_priority(const Workload& wl, const ObjectSet& set) {
  PriorityResolution out;
  const auto from_spec = [&] {
    out.value = wl.priority.value_or(0);
    out.source = wl.priority ? "spec.priority" : "default";
  };
  if (wl.priority_class_ref) {
    const PriorityClassRef& ref = *wl.priority_class_ref;
    if (ref.group == kGroup && ref.kind == "WorkloadPriorityClass") {
      if (const auto* wpc = set.find_priority_class(ref.name)) {
        out.value = wpc->value;
        out.source = "WorkloadPriorityClass " + ref.name;
        return out;
      }
      out.warning = priority_warning(wl, "spec.priorityClassRef.name", ref.name);
    }
    from_spec();
    return out;
  }
  from_spec();
  if (const auto it = wl.metadata.labels.find(std::string(kLabelPriorityClass));
      it != wl.metadata.labels.end() && !it->second.empty()) {
    const auto* wpc = set.find_priority_class(it->second);
    std::string message = "Kueue's scheduler reads spec.priority, not this label (a job integration turns the label into "
                          "spec.priorityClassRef and spec.priority when it creates the Workload); the priority is " +
                          std::string(wl.priority ? "spec.priority (" : "the default (") + std::to_string(out.value) +
                          ")";
    message += wpc != nullptr ? ", not WorkloadPriorityClass " + it->second + "'s " + std::to_string(wpc->value)
                              : "; WorkloadPriorityClass \"" + it->second + "\" is not among the inputs either";
    out.warning = Diagnostic{Severity::Warning, std::string(kRulePriorityLabelNotRead), wl.source.file, wl.source.pos,
                             "Workload", object_name(wl.metadata),
                             "metadata.labels[" + std::string(kLabelPriorityClass) + "]", std::move(message)};
  }
  return out;
}

QueueActivity queue_activity(const ClusterQueue& cq, const ObjectSet& set) {
  std::vector<std::string> reasons, messages;
  if (cq.stop_policy != StopPolicy::None) {
    reasons.emplace_back("Stopped");
    messages.emplace_back("is stopped");
  }
  if (const auto missing = missing_flavors(cq.resource_groups, set); !missing.empty()) {
    std::string names;
    for (const auto& m : missing) names += (names.empty() ? "" : ",") + m;
    reasons.emplace_back("FlavorNotFound");
    messages.push_back("references missing ResourceFlavor(s): " + names);
  }
  // updateWithAdmissionChecks: a check that does not exist, or that its controller has not
  // marked Active, keeps the queue from admitting (names sorted, as upstream sorts them).
  std::vector<std::string> missing_checks, inactive_checks;
  for (const auto& [name, flavors] : cq.admission_checks) {
    const AdmissionCheck* ac = set.find_admission_check(name);
    if (ac == nullptr) {
      missing_checks.push_back(name);
    } else if (!ac->active) {
      inactive_checks.push_back(name);
    }
  }
  auto joined = [](std::vector<std::string> names) {
    std::sort(names.begin(), names.end());
    std::string out;
    for (const auto& n : names) out += (out.empty() ? "" : ",") + n;
    return out;
  };
  if (!missing_checks.empty()) {
    reasons.emplace_back("AdmissionCheckNotFound");
    messages.push_back("references missing AdmissionCheck(s): " + joined(missing_checks));
  }
  if (!inactive_checks.empty()) {
    reasons.emplace_back("AdmissionCheckInactive");
    messages.push_back("references inactive AdmissionCheck(s): " + joined(inactive_checks));
  }
  QueueActivity out;
  if (reasons.empty()) return out;
  out.active = false;
  out.reason = reasons.front();
  out.message = "Can't admit new workloads: ";
  for (std::size_t i = 0; i < messages.size(); ++i) out.message += (i > 0 ? ", " : "") + messages[i];
  out.message += ".";
  return out;
}

twin::Toleration to_core(const Toleration& t) {
  twin::Toleration out;
  out.key = t.key;
  if (t.op.empty() || t.op == "Equal") {
    out.op = twin::TolerationOperator::Equal;
  } else if (t.op == "Exists") {
    out.op = twin::TolerationOperator::Exists;
  } else if (t.op == "Lt") {
    out.op = twin::TolerationOperator::Lt;
  } else if (t.op == "Gt") {
    out.op = twin::TolerationOperator::Gt;
  } else {
    out.op = twin::TolerationOperator::Unsupported;
  }
  out.value = t.value;
  if (!t.effect.empty()) out.effect = effect_of(t.effect);
  return out;
}

twin::NodeSelectorRequirement to_core(const NodeSelectorRequirement& written) {
  using Op = twin::NodeSelectorOperator;
  twin::NodeSelectorRequirement out;
  out.key = written.key;
  out.values = written.values;
  const auto invalid = [&](const std::string& path, const std::string& value, std::string_view detail) {
    out.errors.push_back(path + ": Invalid value: " + value + ": " + std::string(detail));
  };
  static const std::map<std::string, Op, std::less<>> kOperators{
      {"In", Op::In}, {"NotIn", Op::NotIn}, {"Exists", Op::Exists}, {"DoesNotExist", Op::DoesNotExist},
      {"Gt", Op::Gt}, {"Lt", Op::Lt}};
  const auto op = kOperators.find(written.op);
  if (op == kOperators.end()) {
    // nodeSelectorRequirementsAsSelector, before labels.NewRequirement is called.
    out.errors.push_back(".operator: Unsupported value: " + detail::go_json(written.op) +
                         ": supported values: \"In\", \"NotIn\", \"Exists\", \"DoesNotExist\", \"Gt\", \"Lt\"");
    return out;
  }
  out.op = op->second;
  // labels.NewRequirement, in its order: the key, the values for the operator, each value.
  // validateLabelKey / validateLabelValue: one error with the messages joined by "; ".
  const auto joined = [](const std::vector<std::string>& errors) {
    std::string text;
    for (const auto& e : errors) text += (text.empty() ? "" : "; ") + e;
    return text;
  };
  if (const auto errors = detail::label_key_errors(written.key); !errors.empty()) {
    invalid(".key", detail::go_quote(written.key), joined(errors));
  }
  const auto& values = written.values;
  switch (out.op) {
    case Op::In:
    case Op::NotIn:
      if (values.empty()) invalid(".values", detail::go_json(values), "for 'in', 'notin' operators, values set can't be empty");
      break;
    case Op::Exists:
    case Op::DoesNotExist:
      if (!values.empty()) invalid(".values", detail::go_json(values), "values set must be empty for exists and does not exist");
      break;
    case Op::Gt:
    case Op::Lt:
      if (values.size() != 1) {
        invalid(".values", detail::go_json(values), "for 'Gt', 'Lt' operators, exactly one value is required");
      }
      for (std::size_t i = 0; i < values.size(); ++i) {
        const auto bound = twin::parse_int_base10(values[i]);
        if (!bound) {
          invalid(".values[" + std::to_string(i) + "]", detail::go_quote(values[i]),
                  "for 'Gt', 'Lt' operators, the value must be an integer");
        } else if (i == 0) {
          out.bound = *bound;
        }
      }
      break;
  }
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (const auto errors = detail::label_value_errors(values[i]); !errors.empty()) {
      invalid(".values[" + std::to_string(i) + "][" + written.key + "]", detail::go_quote(values[i]), joined(errors));
    }
  }
  return out;
}

twin::ResourceGroup to_core(const ResourceGroup& group) {
  twin::ResourceGroup out;
  out.covered_resources = group.covered_resources;
  for (const auto& f : group.flavors) {
    twin::FlavorQuotas fq;
    fq.flavor = f.name;
    for (const auto& q : f.resources) {
      twin::ResourceQuota rq;
      rq.resource = q.name;
      rq.nominal = quota_amount(q.name, q.nominal_quota);
      if (q.borrowing_limit) rq.borrowing_limit = quota_amount(q.name, *q.borrowing_limit);
      if (q.lending_limit) rq.lending_limit = quota_amount(q.name, *q.lending_limit);
      fq.resources.push_back(rq);
    }
    out.flavors.push_back(std::move(fq));
  }
  return out;
}

CoreInputs core_inputs(const ObjectSet& set) {
  CoreInputs in;
  for (const auto& rf : set.resource_flavors) {
    twin::ResourceFlavorSpec spec;
    spec.name = rf.metadata.name;
    spec.node_labels = rf.node_labels;
    for (const auto& t : rf.node_taints) {
      spec.node_taints.push_back(twin::Taint{t.key, t.value, effect_of(t.effect), t.time_added});
    }
    for (const auto& t : rf.tolerations) spec.tolerations.push_back(to_core(t));
    in.flavors.push_back(std::move(spec));
  }
  std::vector<std::string> placeholders;
  const auto note_missing = [&](const std::vector<ResourceGroup>& groups) {
    for (const auto& name : missing_flavors(groups, set)) {
      if (std::find(placeholders.begin(), placeholders.end(), name) == placeholders.end()) placeholders.push_back(name);
    }
  };
  for (const auto& c : set.cohorts) {
    twin::CohortSpec spec;
    spec.name = c.metadata.name;
    spec.parent = c.parent_name;
    for (const auto& g : c.resource_groups) spec.resource_groups.push_back(to_core(g));
    spec.fair_weight = weight_of(c.fair_weight);
    note_missing(c.resource_groups);
    in.cohorts.push_back(std::move(spec));
  }
  for (const auto& cq : set.cluster_queues) {
    twin::ClusterQueueSpec spec;
    spec.name = cq.metadata.name;
    spec.cohort = cq.cohort_name;
    for (const auto& g : cq.resource_groups) spec.resource_groups.push_back(to_core(g));
    spec.queueing_strategy = cq.queueing_strategy;
    spec.preemption = cq.preemption;
    spec.flavor_fungibility = cq.flavor_fungibility;
    spec.fair_weight = weight_of(cq.fair_weight);
    spec.active = queue_activity(cq, set).active;
    note_missing(cq.resource_groups);
    in.queues.push_back(std::move(spec));
  }
  for (const auto& name : placeholders) {
    twin::ResourceFlavorSpec spec;
    spec.name = name;
    in.flavors.push_back(std::move(spec));
  }
  return in;
}

twin::WorkloadSpec workload_spec(const Workload& wl, const ObjectSet& set, twin::VirtualTime creation,
                                 Diagnostics& diagnostics) {
  twin::WorkloadSpec spec;
  spec.ns = wl.metadata.ns;
  spec.name = wl.metadata.name;
  spec.uid = wl.metadata.uid;
  if (const auto it = wl.metadata.labels.find(std::string(kLabelJobUid)); it != wl.metadata.labels.end()) {
    spec.job_uid = it->second;
  }
  PriorityResolution priority = resolve_priority(wl, set);
  if (priority.warning) diagnostics.push_back(std::move(*priority.warning));
  spec.priority = priority.value;
  spec.creation = creation;
  for (const auto& ps : wl.pod_sets) {
    twin::PodSetSpec p;
    p.name = ps.name;
    p.count = count_after_reclaim(wl, ps);
    p.spec_count = ps.count;
    p.min_count = ps.min_count;
    p.requests = pod_amounts(ps.spec, set.configuration());
    p.node_selector = ps.spec.node_selector;
    for (const auto& term : ps.spec.required_node_affinity) {
      twin::NodeSelectorTerm& core_term = p.required_node_affinity.emplace_back();
      for (const auto& r : term.match_expressions) core_term.match_expressions.push_back(to_core(r));
    }
    for (const auto& t : ps.spec.tolerations) p.tolerations.push_back(to_core(t));
    spec.pod_sets.push_back(std::move(p));
  }
  return spec;
}

twin::Admission admission_of(const Workload& wl) {
  twin::Admission out;
  if (!wl.admission) return out;
  out.cluster_queue = wl.admission->cluster_queue;
  for (const auto& psa : wl.admission->pod_set_assignments) {
    twin::PodSetAssignment a;
    a.name = psa.name;
    for (const auto& [res, flavor] : psa.flavors) a.flavors.emplace_back(res, flavor);
    const PodSet* ps = nullptr;
    for (const auto& p : wl.pod_sets) {
      if (p.name == psa.name) ps = &p;
    }
    a.count = psa.count.value_or(ps != nullptr ? ps->count : 0);
    const std::int32_t after = ps != nullptr ? count_after_reclaim(wl, *ps) : a.count;
    for (const auto& [res, q] : psa.resource_usage) {
      twin::Amount v = resource_value(res, q);
      if (after < a.count && a.count > 0) v = v / a.count * after;
      a.resource_usage.emplace_back(res, v);
    }
    if (after < a.count) a.count = after;
    out.pod_sets.push_back(std::move(a));
  }
  return out;
}

namespace {

// Every namespace carries kubernetes.io/metadata.name (the API server sets it), which
// selectors often match on.
constexpr std::string_view kLabelNamespaceName = "kubernetes.io/metadata.name";

// Whether a selector reads no label but kubernetes.io/metadata.name, which every namespace
// has: it can be evaluated from the Workload's namespace alone.
bool reads_only_the_name_label(const LabelSelector& s) {
  return std::all_of(s.match_labels.begin(), s.match_labels.end(),
                     [](const auto& l) { return l.first == kLabelNamespaceName; }) &&
         std::all_of(s.match_expressions.begin(), s.match_expressions.end(),
                     [](const auto& r) { return r.key == kLabelNamespaceName; });
}

// The namespace part of workload.ValidateAdmissibility: the Workload's namespace must exist
// and match the ClusterQueue's namespaceSelector (unset: it matches nothing). Without any
// Namespace in the input, namespaces are taken to exist with no label but their name's,
// and a selector that reads other labels is not evaluated (namespace_selector_warnings
// says so).
// A check of the Workload's status.admissionChecks in state Retry or Rejected.
bool has_failed_admission_checks(const Workload& wl) {
  const doc::Node* status = wl.source.raw.find("status");
  const doc::Node* checks = status != nullptr ? status->find("admissionChecks") : nullptr;
  if (checks == nullptr || checks->type != doc::NodeType::Sequence) return false;
  return std::any_of(checks->items.begin(), checks->items.end(), [](const doc::Node& c) {
    const std::string_view state = c.string_at("state");
    return state == "Retry" || state == "Rejected";
  });
}

const std::string kMismatch = "workload namespace doesn't match ClusterQueue selector";  // ErrNamespaceMismatch

std::optional<std::string> namespace_error(const Workload& wl, const ClusterQueue& cq, const ObjectSet& set) {
  const Namespace* ns = set.find_namespace(wl.metadata.ns);
  if (ns == nullptr && !set.namespaces.empty()) {
    return "workload namespace " + detail::go_quote(wl.metadata.ns) + " does not exist: namespaces " +
           detail::go_quote(wl.metadata.ns) + " not found";
  }
  if (!cq.namespace_selector) return kMismatch;
  std::map<std::string, std::string> labels;
  if (ns != nullptr) {
    labels = ns->metadata.labels;
  } else if (!reads_only_the_name_label(*cq.namespace_selector)) {
    return std::nullopt;
  }
  labels[std::string(kLabelNamespaceName)] = wl.metadata.ns;
  if (!cq.namespace_selector->matches(labels)) return kMismatch;
  return std::nullopt;
}

void namespace_selector_warnings(const ObjectSet& set, Diagnostics& diagnostics) {
  if (!set.namespaces.empty()) return;
  for (const auto& cq : set.cluster_queues) {
    const auto& sel = cq.namespace_selector;
    if (!sel || reads_only_the_name_label(*sel)) continue;
    diagnostics.push_back(Diagnostic{Severity::Warning, std::string(kRuleSelectorNotEvaluated), cq.source.file,
                                     cq.source.pos, "ClusterQueue", cq.metadata.name, "spec.namespaceSelector",
                                     "not evaluated: the input has no Namespace objects, so every namespace is taken "
                                     "to match; add them (kubectl get namespaces -o yaml) to see which Workloads "
                                     "Kueue would refuse"});
  }
}

}  // namespace

std::vector<WorkloadEntry> plan_workloads(const ObjectSet& set, const Timeline& timeline, Diagnostics& diagnostics) {
  namespace_selector_warnings(set, diagnostics);
  std::vector<WorkloadEntry> out(set.workloads.size());
  // Creation times: stamped ones as they are, the others after the latest, in input order.
  std::vector<twin::VirtualTime> creation(set.workloads.size(), 0);
  twin::VirtualTime latest = 0;
  for (const auto& wl : set.workloads) {
    if (wl.metadata.creation_timestamp) latest = std::max(latest, timeline.to_virtual(*wl.metadata.creation_timestamp));
  }
  for (std::size_t i = 0; i < set.workloads.size(); ++i) {
    const auto& t = set.workloads[i].metadata.creation_timestamp;
    creation[i] = t ? timeline.to_virtual(*t) : ++latest;
  }

  for (std::size_t i = 0; i < set.workloads.size(); ++i) {
    const Workload& wl = set.workloads[i];
    WorkloadEntry& e = out[i];
    e.creation = creation[i];
    const auto block = [&](std::string reason, std::string message, std::string cq = {}) {
      e.route = Route::Blocked;
      e.reason = std::move(reason);
      e.message = std::move(message);
      e.cluster_queue = std::move(cq);
    };
    if (wl.is_condition_true("Finished")) continue;
    if (wl.has_quota_reservation() && wl.admission) {
      if (set.find_cluster_queue(wl.admission->cluster_queue) == nullptr) {
        if (wl.is_condition_true("Admitted")) continue;
        block("Misconfigured", "ClusterQueue " + wl.admission->cluster_queue + " is terminating or missing");
        e.drop_admission = true;
        continue;
      }
      e.route = Route::Restore;
      if (set.find_cluster_queue(wl.admission->cluster_queue)->stop_policy == StopPolicy::HoldAndDrain &&
          wl.is_condition_true("Admitted")) {
        e.drain_reason = "ClusterQueueStopped";
        e.drain_message = "The ClusterQueue is stopped";
      }
      e.spec = workload_spec(wl, set, creation[i], diagnostics);
      e.spec.cluster_queue = wl.admission->cluster_queue;
      e.admission = admission_of(wl);
      const Condition* reserved = wl.condition("QuotaReserved");
      e.admitted_at = timeline.to_virtual(reserved->last_transition_time);
      continue;
    }
    if (!wl.active) {
      if (!wl.has_quota_reservation()) block("Deactivated", "The workload is deactivated");
      continue;
    }
    const LocalQueue* lq = set.find_local_queue(wl.metadata.ns, wl.queue_name);
    if (lq == nullptr) {
      block("Misconfigured", "LocalQueue " + wl.queue_name + " doesn't exist");
      continue;
    }
    if (lq->stop_policy != StopPolicy::None) {
      block("Suspended", "LocalQueue " + wl.queue_name + " is inactive");
      continue;
    }
    const ClusterQueue* cq = set.find_cluster_queue(lq->cluster_queue);
    if (cq == nullptr) {
      block("Misconfigured", "ClusterQueue " + lq->cluster_queue + " doesn't exist");
      continue;
    }
    e.route = Route::Submit;
    e.spec = workload_spec(wl, set, creation[i], diagnostics);
    e.spec.cluster_queue = cq->metadata.name;
    // The scheduler's own refusal (ValidateAdmissibility, after the inactive-queue check):
    // the Workload still queues, and its refusal is the core's to apply at each turn.
    if (has_failed_admission_checks(wl)) {
      // workload.HasRetryChecks or HasRejectedChecks: refused before anything else.
      e.spec.refusal_reason = "PendingEvaluation";
      e.spec.refusal_message = "The workload has failed admission checks";
      e.spec.refusal_kind = twin::WorkloadSpec::Refusal::FailedAdmissionChecks;
    } else if (queue_activity(*cq, set).active) {
      auto error = namespace_error(wl, *cq, set);
      if (error && *error == kMismatch) e.spec.refusal_kind = twin::WorkloadSpec::Refusal::NamespaceMismatch;
      if (!error) error = resources_validation_error(wl);
      if (error) {
        e.spec.refusal_reason = "Misconfigured";
        e.spec.refusal_message = *error;
      }
    }
  }
  return out;
}

}  // namespace gpubank::kueue
