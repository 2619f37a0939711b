// The CRDs of kueue.x-k8s.io/v1beta2 (../shared/crds/kueue) written out as reads: each
// field with its type, default, enum, pattern and limits, and each x-kubernetes-validations
// rule next to the fields it reads. Kueue's webhooks run afterwards (webhook.cpp).
#include "kueue/decode.hpp"

#include <algorithm>
#include <array>
#include <functional>
#include <set>
#include <tuple>

#include "document/loader.hpp"
#include "kueue/decode_parts.hpp"
#include "kueue/manager_config.hpp"
#include "kueue/reader.hpp"
#include "kueue/webhook.hpp"

namespace gpubank::kueue {

using detail::MapReader;
using detail::Reader;
using doc::Node;
using doc::NodeType;
using decode_parts::is_name_part;
using decode_parts::read_conditions;
using decode_parts::read_toleration;
using decode_parts::ReadToleration;
using decode_parts::read_workload;

namespace {

constexpr std::string_view kSubdomainMessage =
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start "
    "and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
constexpr std::string_view kLabelMessage =
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end "
    "with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')";


constexpr std::string_view kTaintEffectMessage =
    "supported taint effect values: 'NoSchedule', 'PreferNoSchedule', 'NoExecute'";

bool is_namespaced(Kind kind) { return kind == Kind::LocalQueue || kind == Kind::Workload; }

std::optional<Kind> kind_from_name(std::string_view name) {
  for (Kind k : {Kind::ResourceFlavor, Kind::Cohort, Kind::ClusterQueue, Kind::LocalQueue, Kind::WorkloadPriorityClass,
                 Kind::Workload, Kind::Namespace, Kind::AdmissionCheck}) {
    if (kind_name(k) == name) return k;
  }
  return std::nullopt;
}

// ---- metadata ------------------------------------------------------------------------

void read_metadata(MapReader& top, Kind kind, ObjectMeta& meta) {
  Reader& r = top.reader;
  const Node* node = top.get("metadata");
  if (node == nullptr) {
    r.required(top.node().pos, "metadata.name", "name or generateName is required");
    return;
  }
  MapReader m(r, *node, "metadata");
  if (!m.ok()) return;
  if (const Node* n = m.get("name")) {
    if (auto name = detail::read_string(r, n, "metadata.name")) {
      meta.name = *name;
      if (kind == Kind::Namespace) {  // ValidateNamespaceName: a DNS-1123 label
        if (name->size() > 63) {
          r.invalid(n->pos, "metadata.name", detail::go_quote(*name), "must be no more than 63 bytes");
        } else if (!detail::is_dns_label(*name)) {
          r.invalid(n->pos, "metadata.name", detail::go_quote(*name), kLabelMessage);
        }
      } else if (name->size() > 253) {
        r.invalid(n->pos, "metadata.name", detail::go_quote(*name), "must be no more than 253 bytes");
      } else if (!detail::is_subdomain(*name)) {
        r.invalid(n->pos, "metadata.name", detail::go_quote(*name), kSubdomainMessage);
      }
    }
  } else {
    r.required(node->pos, "metadata.name", "name or generateName is required");
  }
  if (const Node* n = m.get("namespace")) {
    if (auto ns = detail::read_string(r, n, "metadata.namespace"); ns && is_namespaced(kind)) {
      meta.ns = *ns;
      if (ns->size() > 63) {
        r.invalid(n->pos, "metadata.namespace", detail::go_quote(*ns), "must be no more than 63 bytes");
      } else if (!detail::is_dns_label(*ns)) {
        r.invalid(n->pos, "metadata.namespace", detail::go_quote(*ns), kLabelMessage);
      }
    }
  }
  if (is_namespaced(kind) && meta.ns.empty()) meta.ns = "default";  // kubectl's default namespace
  if (auto uid = detail::read_string(r, m.get("uid"), "metadata.uid")) meta.uid = *uid;
  if (auto labels = detail::read_string_map(r, m.get("labels"), "metadata.labels")) meta.labels = *labels;
  if (auto annotations = detail::read_string_map(r, m.get("annotations"), "metadata.annotations")) {
    meta.annotations = *annotations;
  }
  meta.creation_timestamp = detail::read_time(r, m.get("creationTimestamp"), "metadata.creationTimestamp");
  meta.generation = detail::read_int64(r, m.get("generation"), "metadata.generation");
  // Written by the API server: accepted as they are.
  m.accept({"resourceVersion", "managedFields", "finalizers", "ownerReferences", "generateName", "selfLink",
            "deletionTimestamp", "deletionGracePeriodSeconds"});
  m.finish();
}

// ---- shared parts --------------------------------------------------------------------

bool is_ascii_digit(char c) { return c >= '0' && c <= '9'; }
bool is_ascii_alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }

}  // namespace

bool decode_parts::is_name_part(std::string_view s) {
  if (s.empty() || !is_ascii_alnum(s.front()) || !is_ascii_alnum(s.back())) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return is_ascii_alnum(c) || c == '-' || c == '_' || c == '.'; });
}

namespace {

// A metav1.LabelSelector, with the ClusterQueue webhook's ValidateLabelSelector.
std::optional<LabelSelector> read_label_selector(Reader& r, const Node& node, const std::string& path) {
  MapReader m(r, node, path);
  if (!m.ok()) return std::nullopt;
  const std::size_t errors_before = r.errors();
  LabelSelector out;
  const std::string labels_path = m.child("matchLabels");
  if (const Node* labels = m.get("matchLabels")) {
    if (auto v = detail::read_string_map(r, labels, labels_path)) {
      out.match_labels = *v;
      for (const auto& [key, value] : out.match_labels) {
        for (const auto& msg : detail::label_key_errors(key)) r.invalid(labels->pos, labels_path, detail::go_quote(key), msg);
        for (const auto& msg : detail::label_value_errors(value)) {
          r.invalid(labels->pos, labels_path, detail::go_quote(value), msg);
        }
      }
    }
  }
  const std::string expressions_path = m.child("matchExpressions");
  if (const Node* list = detail::list_node(r, m.get("matchExpressions"), expressions_path, 0, -1)) {
    for (std::size_t i = 0; i < list->items.size(); ++i) {
      const std::string ipath = detail::index(expressions_path, i);
      MapReader e(r, list->items[i], ipath);
      if (!e.ok()) continue;
      LabelSelectorRequirement req;
      const Node* key = e.get("key");
      if (key == nullptr) e.missing("key");
      if (auto k = detail::read_string(r, key, e.child("key"))) req.key = *k;
      const Node* op = e.get("operator");
      if (op == nullptr) e.missing("operator");
      const auto op_text = detail::read_string(r, op, e.child("operator"));
      const Node* values = e.get("values");
      if (values != nullptr) {
        if (const Node* v = detail::list_node(r, values, e.child("values"), 0, -1)) {
          for (std::size_t j = 0; j < v->items.size(); ++j) {
            if (auto s = detail::read_string(r, &v->items[j], detail::index(e.child("values"), j))) {
              req.values.push_back(*s);
            }
          }
        }
      }
      e.finish();
      if (op_text) {
        const SourcePos at = op->pos;
        if (*op_text == "In" || *op_text == "NotIn") {
          req.op = *op_text == "In" ? LabelSelectorRequirement::Operator::In : LabelSelectorRequirement::Operator::NotIn;
          if (req.values.empty()) {
            r.required(values != nullptr ? values->pos : list->items[i].pos, e.child("values"),
                       "must be specified when `operator` is 'In' or 'NotIn'");
          }
        } else if (*op_text == "Exists" || *op_text == "DoesNotExist") {
          req.op = *op_text == "Exists" ? LabelSelectorRequirement::Operator::Exists
                                        : LabelSelectorRequirement::Operator::DoesNotExist;
          if (!req.values.empty()) {
            r.report(doc::kRuleInvalidFormat, values->pos, e.child("values"),
                     "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'");
          }
        } else {
          r.invalid(at, e.child("operator"), detail::go_quote(*op_text), "not a valid selector operator");
        }
      }
      if (key != nullptr) {
        for (const auto& msg : detail::label_key_errors(req.key)) {
          r.invalid(key->pos, e.child("key"), detail::go_quote(req.key), msg);
        }
      }
      for (std::size_t j = 0; j < req.values.size(); ++j) {
        for (const auto& msg : detail::label_value_errors(req.values[j])) {
          r.invalid(values->items[j].pos, detail::index(e.child("values"), j), detail::go_quote(req.values[j]), msg);
        }
      }
      out.match_expressions.push_back(std::move(req));
    }
  }
  m.finish();
  if (r.errors() > errors_before) return std::nullopt;
  return out;
}

std::optional<Quantity> read_fair_sharing(Reader& r, const Node* node, const std::string& path) {
  if (node == nullptr) return std::nullopt;
  MapReader f(r, *node, path);
  auto weight = detail::read_quantity(r, f.get("weight"), f.child("weight"));
  f.finish();
  return weight;
}

StopPolicy stop_policy(const std::string& s) {
  if (s == "Hold") return StopPolicy::Hold;
  if (s == "HoldAndDrain") return StopPolicy::HoldAndDrain;
  return StopPolicy::None;
}

std::vector<ResourceGroup> read_resource_groups(Reader& r, const Node* node, const std::string& path) {
  std::vector<ResourceGroup> out;
  const Node* list = detail::list_node(r, node, path, 0, 16);
  if (list == nullptr) return out;
  for (std::size_t i = 0; i < list->items.size(); ++i) {
    const std::string gpath = detail::index(path, i);
    MapReader g(r, list->items[i], gpath);
    if (!g.ok()) continue;
    ResourceGroup group;
    if (const Node* covered = g.get("coveredResources")) {
      if (const Node* items = detail::list_node(r, covered, g.child("coveredResources"), 1, 64)) {
        for (std::size_t j = 0; j < items->items.size(); ++j) {
          if (auto name = detail::read_string(r, &items->items[j], detail::index(g.child("coveredResources"), j))) {
            group.covered_resources.push_back(*name);
          }
        }
      }
    } else {
      g.missing("coveredResources");
    }
    bool sizes_known = true;
    if (const Node* flavors = g.get("flavors")) {
      const std::string fpath = g.child("flavors");
      if (const Node* items = detail::list_node(r, flavors, fpath, 1, 64)) {
        std::vector<std::string> names;
        for (std::size_t j = 0; j < items->items.size(); ++j) {
          const std::string ipath = detail::index(fpath, j);
          MapReader f(r, items->items[j], ipath);
          FlavorQuotas fq;
          if (!f.ok()) {
            sizes_known = false;
            names.emplace_back();
            continue;
          }
          if (const Node* n = f.get("name")) {
            if (auto name = detail::read_reference(r, n, f.child("name"))) fq.name = *name;
          } else {
            f.missing("name");
          }
          names.push_back(fq.name);
          if (const Node* resources = f.get("resources")) {
            const std::string rpath = f.child("resources");
            if (const Node* ritems = detail::list_node(r, resources, rpath, 1, 64)) {
              std::vector<std::string> rnames;
              for (std::size_t k = 0; k < ritems->items.size(); ++k) {
                MapReader q(r, ritems->items[k], detail::index(rpath, k));
                ResourceQuota quota;
                if (auto name = q.required_string("name")) quota.name = *name;
                if (const Node* n = q.get("nominalQuota")) {
                  if (auto v = detail::read_quantity(r, n, q.child("nominalQuota"))) quota.nominal_quota = *v;
                } else if (q.ok()) {
                  q.missing("nominalQuota");
                }
                quota.borrowing_limit = detail::read_quantity(r, q.get("borrowingLimit"), q.child("borrowingLimit"));
                quota.lending_limit = detail::read_quantity(r, q.get("lendingLimit"), q.child("lendingLimit"));
                q.finish();
                rnames.push_back(quota.name);
                fq.resources.push_back(std::move(quota));
              }
              detail::check_unique_keys(r, *ritems, rpath, rnames, "name");
            } else {
              sizes_known = false;
            }
          } else {
            f.missing("resources");
            sizes_known = false;
          }
          f.finish();
          group.flavors.push_back(std::move(fq));
        }
        detail::check_unique_keys(r, *items, fpath, names, "name");
      } else {
        sizes_known = false;
      }
    } else {
      g.missing("flavors");
      sizes_known = false;
    }
    g.finish();
    // x-kubernetes-validations on a resource group.
    const Node* covered = g.node().find("coveredResources");
    if (sizes_known && covered != nullptr && covered->type == NodeType::Sequence) {
      const bool same = std::all_of(group.flavors.begin(), group.flavors.end(), [&](const FlavorQuotas& f) {
        return f.resources.size() == covered->items.size();
      });
      if (!same) r.rule_failed(list->items[i], gpath, "flavors must have the same number of resources as the coveredResources");
    }
    out.push_back(std::move(group));
  }
  return out;
}

}  // namespace

std::optional<decode_parts::ReadToleration> decode_parts::read_toleration(Reader& r, const Node& node,
                                                                         const std::string& path, bool strict) {
  MapReader t(r, node, path, strict);
  if (!t.ok()) return std::nullopt;
  ReadToleration out;
  if (auto v = detail::read_string(r, t.get("key"), t.child("key"))) {
    out.value.key = *v;
    out.has_key = true;
  }
  if (auto v = detail::read_string(r, t.get("operator"), t.child("operator"))) {
    out.value.op = *v;
    out.has_operator = true;
  }
  if (auto v = detail::read_string(r, t.get("value"), t.child("value"))) {
    out.value.value = *v;
    out.has_value = true;
  }
  if (auto v = detail::read_string(r, t.get("effect"), t.child("effect"))) {
    out.value.effect = *v;
    out.has_effect = true;
  }
  out.value.toleration_seconds = detail::read_int64(r, t.get("tolerationSeconds"), t.child("tolerationSeconds"));
  t.finish();
  return out;
}

namespace {

bool is_taint_effect(std::string_view e) { return e == "NoSchedule" || e == "PreferNoSchedule" || e == "NoExecute"; }

// ---- kinds ---------------------------------------------------------------------------

void read_resource_flavor(MapReader& top, ResourceFlavor& rf) {
  Reader& r = top.reader;
  top.accept({"status"});
  const Node* spec = top.get("spec");
  if (spec == nullptr) return;
  MapReader s(r, *spec, "spec");
  if (!s.ok()) return;
  const Node* labels = s.get("nodeLabels");
  if (labels != nullptr && detail::check_max_properties(r, *labels, "spec.nodeLabels", 8)) {
    if (auto v = detail::read_string_map(r, labels, "spec.nodeLabels")) rf.node_labels = *v;
  }
  if (const Node* taints = detail::list_node(r, s.get("nodeTaints"), "spec.nodeTaints", 0, 8)) {
    bool effects_ok = true;
    for (std::size_t i = 0; i < taints->items.size(); ++i) {
      MapReader t(r, taints->items[i], detail::index("spec.nodeTaints", i));
      if (!t.ok()) continue;
      Taint taint;
      if (auto v = t.required_string("key")) taint.key = *v;
      if (auto v = detail::read_string(r, t.get("value"), t.child("value"))) taint.value = *v;
      if (const Node* n = t.get("effect")) {
        if (auto v = detail::read_string(r, n, t.child("effect"))) {
          taint.effect = *v;
          effects_ok = effects_ok && is_taint_effect(*v);
        }
      } else {
        t.missing("effect");
      }
      taint.time_added = detail::read_time(r, t.get("timeAdded"), t.child("timeAdded"));
      t.finish();
      rf.node_taints.push_back(std::move(taint));
    }
    if (!effects_ok) r.rule_failed(*taints, "spec.nodeTaints", kTaintEffectMessage);
  }
  if (const Node* tolerations = detail::list_node(r, s.get("tolerations"), "spec.tolerations", 0, 8)) {
    std::vector<ReadToleration> read;
    for (std::size_t i = 0; i < tolerations->items.size(); ++i) {
      if (auto t = read_toleration(r, tolerations->items[i], detail::index("spec.tolerations", i), true)) {
        read.push_back(*t);
        rf.tolerations.push_back(t->value);
      }
    }
    const auto all = [&](const std::function<bool(const ReadToleration&)>& rule) {
      return std::all_of(read.begin(), read.end(), rule);
    };
    const std::array<std::pair<std::function<bool(const ReadToleration&)>, std::string_view>, 5> rules{{
        {[](const ReadToleration& x) { return x.has_key || x.value.op == "Exists"; },
         "operator must be Exists when 'key' is empty, which means 'match all values and all keys'"},
        {[](const ReadToleration& x) { return !x.value.toleration_seconds || x.value.effect == "NoExecute"; },
         "effect must be 'NoExecute' when 'tolerationSeconds' is set"},
        {[](const ReadToleration& x) { return !x.has_operator || x.value.op == "Equal" || x.value.op == "Exists"; },
         "supported toleration values: 'Equal'(default), 'Exists'"},
        {[](const ReadToleration& x) { return !(x.has_operator && x.value.op == "Exists") || !x.has_value; },
         "a value must be empty when 'operator' is 'Exists'"},
        {[](const ReadToleration& x) { return !x.has_effect || is_taint_effect(x.value.effect); }, kTaintEffectMessage},
    }};
    for (const auto& [rule, message] : rules) {
      if (!all(rule)) r.rule_failed(*tolerations, "spec.tolerations", message);
    }
  }
  if (const Node* n = s.get("topologyName")) {
    if (auto v = detail::read_reference(r, n, "spec.topologyName")) rf.topology_name = *v;
  }
  s.finish();
  if (!rf.topology_name.empty() && rf.node_labels.empty()) {
    r.rule_failed(*spec, "spec", "at least one nodeLabel is required when topology is set");
  }
}

void read_cohort(MapReader& top, Cohort& cohort) {
  Reader& r = top.reader;
  top.accept({"status"});
  const Node* spec = top.get("spec");
  if (spec == nullptr) return;
  MapReader s(r, *spec, "spec");
  if (!s.ok()) return;
  if (auto v = detail::read_reference(r, s.get("parentName"), "spec.parentName")) cohort.parent_name = *v;
  cohort.resource_groups = read_resource_groups(r, s.get("resourceGroups"), "spec.resourceGroups");
  cohort.fair_weight = read_fair_sharing(r, s.get("fairSharing"), "spec.fairSharing");
  s.finish();
}

twin::PreemptionPolicy preemption_policy(const std::string& s) {
  if (s == "LowerPriority") return twin::PreemptionPolicy::LowerPriority;
  if (s == "LowerOrNewerEqualPriority") return twin::PreemptionPolicy::LowerOrNewerEqualPriority;
  if (s == "Any") return twin::PreemptionPolicy::Any;
  return twin::PreemptionPolicy::Never;
}

twin::FungibilityPolicy fungibility(const std::string& s) {
  return s == "TryNextFlavor" ? twin::FungibilityPolicy::TryNextFlavor : twin::FungibilityPolicy::MayStopSearch;
}

void read_cluster_queue(MapReader& top, ClusterQueue& cq) {
  Reader& r = top.reader;
  top.accept({"status"});
  const Node* spec = top.get("spec");
  if (spec == nullptr) return;
  MapReader s(r, *spec, "spec");
  if (!s.ok()) return;
  if (auto v = detail::read_reference(r, s.get("cohortName"), "spec.cohortName")) cq.cohort_name = *v;
  const Node* groups = s.get("resourceGroups");
  cq.resource_groups = read_resource_groups(r, groups, "spec.resourceGroups");
  if (auto v = detail::read_enum(r, s.get("queueingStrategy"), "spec.queueingStrategy", {"StrictFIFO", "BestEffortFIFO"})) {
    cq.queueing_strategy = *v == "StrictFIFO" ? twin::QueueingStrategy::StrictFIFO : twin::QueueingStrategy::BestEffortFIFO;
  }
  if (const Node* p = s.get("preemption")) {
    MapReader pm(r, *p, "spec.preemption");
    if (auto v = detail::read_enum(r, pm.get("reclaimWithinCohort"), pm.child("reclaimWithinCohort"),
                                   {"Never", "LowerPriority", "Any"})) {
      cq.preemption.reclaim_within_cohort = preemption_policy(*v);
    }
    if (const Node* b = pm.get("borrowWithinCohort")) {
      MapReader bm(r, *b, pm.child("borrowWithinCohort"));
      if (auto v = detail::read_enum(r, bm.get("policy"), bm.child("policy"), {"Never", "LowerPriority"})) {
        cq.preemption.borrow_within_cohort =
            *v == "LowerPriority" ? twin::BorrowWithinCohortPolicy::LowerPriority : twin::BorrowWithinCohortPolicy::Never;
      }
      cq.preemption.max_priority_threshold =
          detail::read_int32(r, bm.get("maxPriorityThreshold"), bm.child("maxPriorityThreshold"));
      bm.finish();
    }
    if (auto v = detail::read_enum(r, pm.get("withinClusterQueue"), pm.child("withinClusterQueue"),
                                   {"Never", "LowerPriority", "LowerOrNewerEqualPriority"})) {
      cq.preemption.within_cluster_queue = preemption_policy(*v);
    }
    pm.finish();
    if (pm.ok() && cq.preemption.reclaim_within_cohort == twin::PreemptionPolicy::Never &&
        cq.preemption.borrow_within_cohort != twin::BorrowWithinCohortPolicy::Never) {
      r.rule_failed(*p, "spec.preemption", "reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never");
    }
  }
  if (const Node* f = s.get("flavorFungibility")) {
    MapReader fm(r, *f, "spec.flavorFungibility");
    if (auto v = detail::read_enum(r, fm.get("whenCanBorrow"), fm.child("whenCanBorrow"), {"MayStopSearch", "TryNextFlavor"})) {
      cq.flavor_fungibility.when_can_borrow = fungibility(*v);
    }
    if (auto v = detail::read_enum(r, fm.get("whenCanPreempt"), fm.child("whenCanPreempt"),
                                   {"MayStopSearch", "TryNextFlavor"})) {
      cq.flavor_fungibility.when_can_preempt = fungibility(*v);
    }
    if (auto v = detail::read_enum(r, fm.get("preference"), fm.child("preference"),
                                   {"BorrowingOverPreemption", "PreemptionOverBorrowing"})) {
      cq.flavor_fungibility.preference = *v == "BorrowingOverPreemption" ? twin::FungibilityPreference::BorrowingOverPreemption
                                                                          : twin::FungibilityPreference::PreemptionOverBorrowing;
    }
    fm.finish();
    const auto& ff = cq.flavor_fungibility;
    if (ff.preference != twin::FungibilityPreference::Unset &&
        (ff.when_can_borrow != twin::FungibilityPolicy::TryNextFlavor ||
         ff.when_can_preempt != twin::FungibilityPolicy::TryNextFlavor)) {
      r.rule_failed(*f, "spec.flavorFungibility",
                    "preference can only be set when both whenCanBorrow and whenCanPreempt are TryNextFlavor");
    }
  }
  cq.fair_weight = read_fair_sharing(r, s.get("fairSharing"), "spec.fairSharing");
  if (auto v = detail::read_enum(r, s.get("stopPolicy"), "spec.stopPolicy", {"None", "Hold", "HoldAndDrain"})) {
    cq.stop_policy = stop_policy(*v);
  }
  if (const Node* n = s.get("namespaceSelector")) {
    cq.namespace_selector = read_label_selector(r, *n, "spec.namespaceSelector");
  }
  if (const Node* n = s.get("admissionChecksStrategy")) {
    MapReader st(r, *n, "spec.admissionChecksStrategy");
    if (st.ok()) {
      const std::string lpath = st.child("admissionChecks");
      if (const Node* list = st.get("admissionChecks")) {
        if (const Node* items = detail::list_node(r, list, lpath, 1, 64)) {
          std::vector<std::string> names;
          for (std::size_t i = 0; i < items->items.size(); ++i) {
            MapReader c(r, items->items[i], detail::index(lpath, i));
            std::pair<std::string, std::vector<std::string>> rule;
            if (c.ok()) {
              if (const Node* name = c.get("name")) {
                if (auto v = detail::read_bounded_string(r, name, c.child("name"), 1, 316)) rule.first = *v;
              } else {
                c.missing("name");
              }
              const std::string fpath = c.child("onFlavors");
              if (const Node* flavors = detail::list_node(r, c.get("onFlavors"), fpath, 0, 64)) {
                for (std::size_t j = 0; j < flavors->items.size(); ++j) {
                  if (auto f = detail::read_reference(r, &flavors->items[j], detail::index(fpath, j))) {
                    if (std::find(rule.second.begin(), rule.second.end(), *f) != rule.second.end()) {
                      r.report(doc::kRuleInvalidFormat, flavors->items[j].pos, detail::index(fpath, j),
                               "Duplicate value: " + detail::go_quote(*f));
                    }
                    rule.second.push_back(*f);
                  }
                }
              }
              c.finish();
            }
            names.push_back(rule.first);
            cq.admission_checks.push_back(std::move(rule));
          }
          detail::check_unique_keys(r, *items, lpath, names, "name");
        }
      } else {
        st.missing("admissionChecks");
      }
      st.finish();
    }
  }
  // Admission scope (admission fair sharing per LocalQueue) and concurrent admission are
  // not modelled: accepted, with a warning naming each one present.
  s.accept_not_modelled({"admissionScope", "concurrentAdmissionPolicy"}, kRuleFieldNotModelled,
                        "Kueue would change how this ClusterQueue's workloads are ordered or admitted");
  s.finish();
  if (cq.cohort_name.empty() && groups != nullptr) {
    const bool any_borrowing_limit = std::any_of(cq.resource_groups.begin(), cq.resource_groups.end(), [](const auto& g) {
      return std::any_of(g.flavors.begin(), g.flavors.end(), [](const auto& f) {
        return std::any_of(f.resources.begin(), f.resources.end(), [](const auto& q) { return q.borrowing_limit.has_value(); });
      });
    });
    if (any_borrowing_limit) r.rule_failed(*spec, "spec", "borrowingLimit must be nil when cohort is empty");
  }
}

void read_local_queue(MapReader& top, LocalQueue& lq) {
  Reader& r = top.reader;
  top.accept({"status"});
  const Node* spec = top.get("spec");
  if (spec == nullptr) return;
  MapReader s(r, *spec, "spec");
  if (!s.ok()) return;
  if (auto v = detail::read_reference(r, s.get("clusterQueue"), "spec.clusterQueue")) lq.cluster_queue = *v;
  if (auto v = detail::read_enum(r, s.get("stopPolicy"), "spec.stopPolicy", {"None", "Hold", "HoldAndDrain"})) {
    lq.stop_policy = stop_policy(*v);
  }
  lq.fair_weight = read_fair_sharing(r, s.get("fairSharing"), "spec.fairSharing");
  s.finish();
}

void read_priority_class(MapReader& top, WorkloadPriorityClass& wpc) {
  Reader& r = top.reader;
  if (const Node* n = top.get("value")) {
    if (auto v = detail::read_int32(r, n, "value")) wpc.value = *v;
  } else {
    top.missing("value");
  }
  if (auto v = detail::read_bounded_string(r, top.get("description"), "description", 0, 2048)) wpc.description = *v;
}

// AdmissionCheck: spec.controllerName and parameters as the CRD checks them; status tells
// whether the check's controller marked it Active.
void read_admission_check(MapReader& top, AdmissionCheck& ac) {
  Reader& r = top.reader;
  if (const Node* spec = top.get("spec")) {
    MapReader s(r, *spec, "spec");
    if (s.ok()) {
      if (const Node* n = s.get("controllerName")) {
        if (auto v = detail::read_bounded_string(r, n, "spec.controllerName", 1, 253)) ac.controller_name = *v;
      } else {
        s.missing("controllerName");
      }
      if (const Node* n = s.get("parameters")) {
        MapReader p(r, *n, "spec.parameters");
        if (p.ok()) {
          if (const Node* g = p.get("apiGroup")) {
            (void)detail::read_reference(r, g, p.child("apiGroup"));
          } else {
            p.missing("apiGroup");
          }
          if (const Node* k = p.get("kind")) {
            if (auto v = detail::read_bounded_string(r, k, p.child("kind"), 1, 63)) {
              const bool ok = !is_ascii_digit(v->front()) && is_ascii_alnum(v->front()) && is_ascii_alnum(v->back()) &&
                              std::all_of(v->begin(), v->end(), [](char c) { return is_ascii_alnum(c) || c == '-'; });
              if (!ok) {
                r.invalid(k->pos, p.child("kind"), detail::go_quote(*v),
                          p.child("kind") + " in body should match '^(?i)[a-z]([-a-z0-9]*[a-z0-9])?$'");
              }
            }
          } else {
            p.missing("kind");
          }
          if (const Node* nm = p.get("name")) {
            if (auto v = detail::read_bounded_string(r, nm, p.child("name"), 1, 63); v && !detail::is_dns_label(*v)) {
              r.invalid(nm->pos, p.child("name"), detail::go_quote(*v),
                        p.child("name") + " in body should match '" + std::string(detail::kLabelPattern) + "'");
            }
          } else {
            p.missing("name");
          }
          p.finish();
        }
      }
      s.finish();
    }
  } else {
    top.missing("spec");
  }
  if (const Node* status = top.get("status")) {
    MapReader st(r, *status, "status");
    if (st.ok()) {
      for (const auto& c : read_conditions(r, st.get("conditions"), "status.conditions")) {
        if (c.type == "Active") ac.active = c.status == "True";
      }
      st.finish();
    }
  }
}

// core/v1 Namespace: its labels are what ClusterQueue.spec.namespaceSelector reads; spec
// (finalizers) and status (phase, conditions) are written by the API server.
void read_namespace(MapReader& top, Namespace&) { top.accept({"spec", "status"}); }


template <class T>
bool add_object(MapReader& top, Kind kind, Source source, doc::DecodeContext& ctx, const doc::SourceMap& positions,
                std::vector<T>& out, void (*read)(MapReader&, T&), void (*webhook)(Reader&, const doc::SourceMap&, const T&)) {
  T value;
  Reader& r = top.reader;
  read_metadata(top, kind, value.metadata);
  read(top, value);
  top.finish();
  if (ctx.error_count() > 0) return false;
  if (webhook != nullptr) {
    webhook(r, positions, value);
    if (ctx.error_count() > 0) return false;
  }
  value.source = std::move(source);
  out.push_back(std::move(value));
  return true;
}

std::string message_name(const Node& root, Kind kind) {
  const Node* meta = root.find("metadata");
  if (meta == nullptr) return {};
  std::string name(meta->string_at("name"));
  if (is_namespaced(kind) && !name.empty()) {
    std::string ns(meta->string_at("namespace"));
    name = (ns.empty() ? "default" : ns) + "/" + name;
  }
  return name;
}

}  // namespace

bool decode_object(const Node& root, Source source, ObjectSet& out, Diagnostics& diagnostics) {
  if (root.type != NodeType::Mapping) {
    doc::DecodeContext ctx(source.file, {}, {}, diagnostics);
    Reader r(ctx);
    r.type_error(root, "<root>", "object");
    return false;
  }
  const std::string kind_text(root.string_at("kind"));
  const std::string api_version(root.string_at("apiVersion"));
  const auto kind = kind_from_name(kind_text);
  if (!kind) {
    if (auto read = detail::decode_manager_configuration(root, source, out, diagnostics)) return *read;
    doc::DecodeContext ctx(source.file, kind_text, {}, diagnostics);
    if (kind_text.empty()) {
      ctx.report(doc::kRuleRequired, root.pos, "kind", "Required value: every object needs a kind");
    } else {
      ctx.report(kRuleIgnoredKind, root.pos, {},
                 "ignored: " + (api_version.empty() ? std::string() : api_version + " ") + kind_text +
                     " is not an object admission reads",
                 Severity::Warning);
    }
    return false;
  }
  doc::SourceMap positions;
  doc::DecodeContext ctx(source.file, kind_text, message_name(root, *kind), diagnostics, &positions);
  const std::string_view want_version = *kind == Kind::Namespace ? std::string_view("v1") : kApiVersion;
  if (api_version != want_version) {
    const Node* at = root.find("apiVersion");
    if (at == nullptr || at->type == NodeType::Null) {
      ctx.report(doc::kRuleRequired, root.pos, "apiVersion", "Required value");
    } else {
      ctx.report(kRuleApiVersion, at->pos, "apiVersion",
                 "unsupported apiVersion " + detail::go_quote(api_version) + " for " + kind_text + ": the twin reads " +
                     std::string(want_version));
    }
    return false;
  }
  Reader r(ctx);
  MapReader top(r, root, "");
  top.accept({"apiVersion", "kind"});
  source.pos = root.pos;
  source.raw = root;
  // The object's findings in document order (the reads above follow the schema's order).
  const detail::InFileOrder in_file_order(diagnostics);
  switch (*kind) {
    case Kind::ResourceFlavor:
      return add_object<ResourceFlavor>(top, *kind, std::move(source), ctx, positions, out.resource_flavors,
                                        &read_resource_flavor, &detail::webhook_resource_flavor);
    case Kind::Cohort:
      return add_object<Cohort>(top, *kind, std::move(source), ctx, positions, out.cohorts, &read_cohort,
                                &detail::webhook_cohort);
    case Kind::ClusterQueue:
      return add_object<ClusterQueue>(top, *kind, std::move(source), ctx, positions, out.cluster_queues,
                                      &read_cluster_queue, &detail::webhook_cluster_queue);
    case Kind::LocalQueue:
      return add_object<LocalQueue>(top, *kind, std::move(source), ctx, positions, out.local_queues, &read_local_queue,
                                    nullptr);
    case Kind::WorkloadPriorityClass:
      return add_object<WorkloadPriorityClass>(top, *kind, std::move(source), ctx, positions, out.priority_classes,
                                               &read_priority_class, nullptr);
    case Kind::Workload:
      return add_object<Workload>(top, *kind, std::move(source), ctx, positions, out.workloads, &read_workload,
                                  &detail::webhook_workload);
    case Kind::Namespace:
      return add_object<Namespace>(top, *kind, std::move(source), ctx, positions, out.namespaces, &read_namespace,
                                   nullptr);
    case Kind::AdmissionCheck:
      return add_object<AdmissionCheck>(top, *kind, std::move(source), ctx, positions, out.admission_checks,
                                        &read_admission_check, nullptr);
  }
  return false;
}

void decode_document(const doc::Document& document, ObjectSet& out, Diagnostics& diagnostics) {
  const Node& root = document.root;
  const std::string_view kind = root.string_at("kind");
  const Node* items = root.find("items");
  // kubectl's `kind: List` and the API's <Kind>List.
  if (root.type == NodeType::Mapping && kind.size() >= 4 && kind.substr(kind.size() - 4) == "List" &&
      (items != nullptr || kind == "List")) {
    if (items == nullptr || items->type == NodeType::Null) return;
    doc::DecodeContext ctx(document.file, std::string(kind), {}, diagnostics);
    Reader r(ctx);
    if (items->type != NodeType::Sequence) {
      r.type_error(*items, "items", "array");
      return;
    }
    for (std::size_t i = 0; i < items->items.size(); ++i) {
      Source source;
      source.file = document.file;
      source.document = document.index;
      source.item = static_cast<int>(i);
      decode_object(items->items[i], std::move(source), out, diagnostics);
    }
    return;
  }
  Source source;
  source.file = document.file;
  source.document = document.index;
  decode_object(root, std::move(source), out, diagnostics);
}

namespace {

template <class T>
void check_unique_names(const std::vector<T>& objects, Kind kind, Diagnostics& diagnostics) {
  std::map<std::pair<std::string, std::string>, const T*> seen;
  for (const auto& o : objects) {
    const auto key = std::make_pair(o.metadata.ns, o.metadata.name);
    auto [it, inserted] = seen.emplace(key, &o);
    if (inserted) continue;
    const Source& first = it->second->source;
    const std::string name = o.metadata.ns.empty() ? o.metadata.name : o.metadata.ns + "/" + o.metadata.name;
    diagnostics.push_back(Diagnostic{Severity::Error, std::string(kRuleAlreadyExists), o.source.file, o.source.pos,
                                     std::string(kind_name(kind)), name, "metadata.name",
                                     resource_name(kind) + " " + detail::go_quote(o.metadata.name) +
                                         " already exists (first defined at " + first.file + ":" +
                                         std::to_string(first.pos.line) + ")"});
  }
}

}  // namespace

void check_object_set(const ObjectSet& set, Diagnostics& diagnostics) {
  check_unique_names(set.resource_flavors, Kind::ResourceFlavor, diagnostics);
  check_unique_names(set.cohorts, Kind::Cohort, diagnostics);
  check_unique_names(set.cluster_queues, Kind::ClusterQueue, diagnostics);
  check_unique_names(set.local_queues, Kind::LocalQueue, diagnostics);
  check_unique_names(set.priority_classes, Kind::WorkloadPriorityClass, diagnostics);
  check_unique_names(set.workloads, Kind::Workload, diagnostics);
  check_unique_names(set.namespaces, Kind::Namespace, diagnostics);
  check_unique_names(set.admission_checks, Kind::AdmissionCheck, diagnostics);
  // One manager runs with one Configuration.
  for (std::size_t i = 1; i < set.configurations.size(); ++i) {
    const auto& c = set.configurations[i];
    const Source& first = set.configurations.front().source;
    diagnostics.push_back(Diagnostic{Severity::Error, std::string(kRuleConfigTwice), c.source.file, c.source.pos,
                                     "Configuration", c.config_map, {},
                                     "a second Kueue manager Configuration (the first is at " + first.file + ":" +
                                         std::to_string(first.pos.line) + "): Kueue runs with one"});
  }

  // Cohort cycles: walk up from every cohort; a walk that comes back to a cohort already
  // on its path found a cycle. Each cycle is reported once, at its first member in input
  // order.
  std::set<std::string> reported;
  for (const auto& c : set.cohorts) {
    std::vector<std::string> path{c.metadata.name};
    const Cohort* at = &c;
    while (at != nullptr && !at->parent_name.empty()) {
      const auto again = std::find(path.begin(), path.end(), at->parent_name);
      if (again != path.end()) {
        std::vector<std::string> cycle(again, path.end());
        if (cycle.front() != c.metadata.name || reported.contains(c.metadata.name)) break;
        std::string text;
        for (const auto& name : cycle) text += name + " -> ";
        text += cycle.front();
        for (const auto& name : cycle) reported.insert(name);
        const SourcePos pos = [&] {
          const Node* spec = c.source.raw.find("spec");
          const Node* parent = spec != nullptr ? spec->find("parentName") : nullptr;
          return parent != nullptr ? parent->pos : c.source.pos;
        }();
        diagnostics.push_back(Diagnostic{Severity::Warning, std::string(kRuleCohortCycle), c.source.file, pos,
                                         "Cohort", c.metadata.name, "spec.parentName",
                                         "cohort cycle " + text +
                                             ": Kueue's scheduler leaves out every Cohort that leads into the cycle "
                                             "and every ClusterQueue under one (their Workloads wait: \"ClusterQueue "
                                             "<name> is inactive\"); the rest is scheduled"});
        break;
      }
      path.push_back(at->parent_name);
      at = set.find_cohort(at->parent_name);
    }
  }
}

ObjectSet decode_documents(const std::vector<doc::Document>& documents, Diagnostics& diagnostics) {
  ObjectSet set;
  for (const auto& d : documents) decode_document(d, set, diagnostics);
  check_object_set(set, diagnostics);
  return set;
}

ObjectSet load_objects(const std::vector<std::string>& paths, Diagnostics& diagnostics) {
  std::vector<doc::Document> documents;
  doc::load_paths(paths, documents, diagnostics);
  return decode_documents(documents, diagnostics);
}

}  // namespace gpubank::kueue
