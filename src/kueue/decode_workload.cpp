// The Workload of kueue.x-k8s.io/v1beta2 (../shared/crds/kueue, workload_types.go) written
// out as reads: its pod sets and their pod templates (what admission reads), and the status
// Kueue's controllers write (conditions, admission). decode.cpp dispatches here.
#include <algorithm>
#include <set>

#include "kueue/decode.hpp"
#include "kueue/decode_parts.hpp"

namespace gpubank::kueue::decode_parts {

using detail::MapReader;
using detail::Reader;
using doc::Node;
using doc::NodeType;

namespace {

// Pod templates: only what admission reads is checked; the rest passes as written.
ResourceRequirements read_requirements(Reader& r, const Node& node, const std::string& path) {
  ResourceRequirements out;
  MapReader m(r, node, path, false);
  if (!m.ok()) return out;
  if (auto v = detail::read_quantity_map(r, m.get("requests"), m.child("requests"))) out.requests = *v;
  if (auto v = detail::read_quantity_map(r, m.get("limits"), m.child("limits"))) out.limits = *v;
  return out;
}

std::vector<Container> read_containers(Reader& r, const Node* node, const std::string& path) {
  std::vector<Container> out;
  const Node* list = detail::list_node(r, node, path, 0, -1);
  if (list == nullptr) return out;
  std::vector<std::string> names;
  for (std::size_t i = 0; i < list->items.size(); ++i) {
    MapReader c(r, list->items[i], detail::index(path, i), false);
    if (!c.ok()) continue;
    Container container;
    if (auto v = c.required_string("name")) container.name = *v;
    if (const Node* n = c.get("resources")) container.resources = read_requirements(r, *n, c.child("resources"));
    if (auto v = detail::read_string(r, c.get("restartPolicy"), c.child("restartPolicy"))) container.restart_policy = *v;
    names.push_back(container.name);
    out.push_back(std::move(container));
  }
  detail::check_unique_keys(r, *list, path, names, "name");
  return out;
}

// core/v1 NodeSelectorRequirements as the Workload CRD's schema checks them: key and
// operator required strings, values a list of strings. Nothing else: the API server does
// not run core validation inside a CRD, so Kueue meets whatever was written.
std::vector<NodeSelectorRequirement> read_node_selector_requirements(Reader& r, const Node* node,
                                                                     const std::string& path) {
  std::vector<NodeSelectorRequirement> out;
  const Node* list = detail::list_node(r, node, path, 0, -1);
  if (list == nullptr) return out;
  for (std::size_t i = 0; i < list->items.size(); ++i) {
    MapReader e(r, list->items[i], detail::index(path, i), false);
    if (!e.ok()) continue;
    NodeSelectorRequirement req;
    if (auto v = e.required_string("key")) req.key = *v;
    if (auto v = e.required_string("operator")) req.op = *v;
    req.values = detail::read_strings(r, e.get("values"), e.child("values"));
    out.push_back(std::move(req));
  }
  return out;
}

// affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution; the rest of the
// affinity (preferred terms, pod affinity) does not change admission and is not read.
std::vector<NodeSelectorTerm> read_required_node_affinity(Reader& r, const Node* affinity, const std::string& path) {
  std::vector<NodeSelectorTerm> out;
  if (affinity == nullptr) return out;
  MapReader a(r, *affinity, path, false);
  const Node* node_affinity = a.ok() ? a.get("nodeAffinity") : nullptr;
  if (node_affinity == nullptr) return out;
  MapReader na(r, *node_affinity, a.child("nodeAffinity"), false);
  const Node* required = na.ok() ? na.get("requiredDuringSchedulingIgnoredDuringExecution") : nullptr;
  if (required == nullptr) return out;
  MapReader req(r, *required, na.child("requiredDuringSchedulingIgnoredDuringExecution"), false);
  if (!req.ok()) return out;
  const Node* terms = req.get("nodeSelectorTerms");
  if (terms == nullptr) {
    req.missing("nodeSelectorTerms");
    return out;
  }
  const std::string terms_path = req.child("nodeSelectorTerms");
  const Node* list = detail::list_node(r, terms, terms_path, 0, -1);
  if (list == nullptr) return out;
  for (std::size_t i = 0; i < list->items.size(); ++i) {
    MapReader t(r, list->items[i], detail::index(terms_path, i), false);
    if (!t.ok()) continue;
    NodeSelectorTerm term;
    term.match_expressions = read_node_selector_requirements(r, t.get("matchExpressions"), t.child("matchExpressions"));
    read_node_selector_requirements(r, t.get("matchFields"), t.child("matchFields"));
    out.push_back(std::move(term));
  }
  return out;
}

PodSpec read_pod_spec(Reader& r, const Node& node, const std::string& path) {
  PodSpec spec;
  MapReader s(r, node, path, false);
  if (!s.ok()) return spec;
  if (const Node* n = s.get("containers")) {
    spec.containers = read_containers(r, n, s.child("containers"));
  } else {
    s.missing("containers");
  }
  spec.init_containers = read_containers(r, s.get("initContainers"), s.child("initContainers"));
  if (auto v = detail::read_quantity_map(r, s.get("overhead"), s.child("overhead"))) spec.overhead = *v;
  if (const Node* n = s.get("resources")) spec.resources = read_requirements(r, *n, s.child("resources"));
  if (auto v = detail::read_string_map(r, s.get("nodeSelector"), s.child("nodeSelector"))) spec.node_selector = *v;
  spec.required_node_affinity = read_required_node_affinity(r, s.get("affinity"), s.child("affinity"));
  if (const Node* list = detail::list_node(r, s.get("tolerations"), s.child("tolerations"), 0, -1)) {
    for (std::size_t i = 0; i < list->items.size(); ++i) {
      if (auto t = read_toleration(r, list->items[i], detail::index(s.child("tolerations"), i), false)) {
        spec.tolerations.push_back(t->value);
      }
    }
  }
  if (auto v = detail::read_string(r, s.get("priorityClassName"), s.child("priorityClassName"))) {
    spec.priority_class_name = *v;
  }
  return spec;
}

bool is_condition_reason(std::string_view s) {
  // ^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$
  const auto alpha = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); };
  const auto alnum_ = [&](char c) { return alpha(c) || (c >= '0' && c <= '9') || c == '_'; };
  if (s.empty() || !alpha(s.front()) || (s.size() > 1 && !alnum_(s.back()))) return false;
  return std::all_of(s.begin(), s.end(), [&](char c) { return alnum_(c) || c == ',' || c == ':'; });
}

bool is_condition_type(std::string_view s) {
  // ^([subdomain]/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$
  if (const auto slash = s.find('/'); slash != std::string_view::npos) {
    if (!detail::is_subdomain(s.substr(0, slash))) return false;
    s = s.substr(slash + 1);
  }
  return is_name_part(s);
}

}  // namespace

std::vector<Condition> read_conditions(Reader& r, const Node* node, const std::string& path) {
  std::vector<Condition> out;
  const Node* list = detail::list_node(r, node, path, 0, 16);
  if (list == nullptr) return out;
  std::vector<std::string> types;
  for (std::size_t i = 0; i < list->items.size(); ++i) {
    MapReader c(r, list->items[i], detail::index(path, i));
    if (!c.ok()) continue;
    Condition cond;
    if (const Node* n = c.get("type")) {
      if (auto v = detail::read_bounded_string(r, n, c.child("type"), 0, 316)) {
        cond.type = *v;
        if (!is_condition_type(*v)) {
          r.invalid(n->pos, c.child("type"), detail::go_quote(*v),
                    c.child("type") +
                        " in body should match '^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$'");
        }
      }
    } else {
      c.missing("type");
    }
    if (const Node* n = c.get("status")) {
      if (auto v = detail::read_enum(r, n, c.child("status"), {"True", "False", "Unknown"})) cond.status = *v;
    } else {
      c.missing("status");
    }
    if (const Node* n = c.get("observedGeneration")) {
      if (auto v = detail::read_int64(r, n, c.child("observedGeneration"));
          v && detail::check_minimum(r, *n, c.child("observedGeneration"), *v, 0)) {
        cond.observed_generation = *v;
      }
    }
    if (const Node* n = c.get("lastTransitionTime")) {
      if (auto v = detail::read_time(r, n, c.child("lastTransitionTime"))) cond.last_transition_time = *v;
    } else {
      c.missing("lastTransitionTime");
    }
    if (const Node* n = c.get("reason")) {
      if (auto v = detail::read_bounded_string(r, n, c.child("reason"), 1, 1024)) {
        cond.reason = *v;
        if (!is_condition_reason(*v)) {
          r.invalid(n->pos, c.child("reason"), detail::go_quote(*v),
                    c.child("reason") + " in body should match '^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$'");
        }
      }
    } else {
      c.missing("reason");
    }
    if (const Node* n = c.get("message")) {
      if (auto v = detail::read_bounded_string(r, n, c.child("message"), 0, 32768)) cond.message = *v;
    } else if (c.node().find("message") == nullptr) {
      c.missing("message");
    }
    c.finish();
    types.push_back(cond.type);
    out.push_back(std::move(cond));
  }
  detail::check_unique_keys(r, *list, path, types, "type");
  return out;
}

namespace {

std::optional<Admission> read_admission(Reader& r, const Node* node, const std::string& path) {
  if (node == nullptr) return std::nullopt;
  MapReader a(r, *node, path);
  if (!a.ok()) return std::nullopt;
  Admission admission;
  if (auto v = detail::read_reference(r, a.get("clusterQueue"), a.child("clusterQueue"))) admission.cluster_queue = *v;
  const std::string ppath = a.child("podSetAssignments");
  if (const Node* list = detail::list_node(r, a.get("podSetAssignments"), ppath, 0, 18)) {
    std::vector<std::string> names;
    for (std::size_t i = 0; i < list->items.size(); ++i) {
      MapReader p(r, list->items[i], detail::index(ppath, i));
      PodSetAssignment psa;
      if (const Node* n = p.get("name")) {
        if (auto v = detail::read_bounded_string(r, n, p.child("name"), 0, 63)) {
          psa.name = *v;
          if (!detail::is_dns_label(*v)) {
            r.invalid(n->pos, p.child("name"), detail::go_quote(*v),
                      p.child("name") + " in body should match '" + std::string(detail::kLabelPattern) + "'");
          }
        }
      }
      if (const Node* flavors = p.get("flavors")) {
        if (auto v = detail::read_string_map(r, flavors, p.child("flavors"))) {
          for (const auto& [res, flavor] : *v) {
            const std::string fpath = detail::map_key(p.child("flavors"), res);
            if (flavor.size() > 253 || !detail::is_subdomain(flavor)) {
              detail::read_reference(r, flavors->find(res), fpath);  // reports
            }
          }
          psa.flavors = *v;
        }
      }
      if (auto v = detail::read_quantity_map(r, p.get("resourceUsage"), p.child("resourceUsage"))) psa.resource_usage = *v;
      if (const Node* n = p.get("count")) {
        if (auto v = detail::read_int32(r, n, p.child("count")); v && detail::check_minimum(r, *n, p.child("count"), *v, 0)) {
          psa.count = *v;
        }
      }
      p.accept({"topologyAssignment", "delayedTopologyRequest"});  // topology-aware scheduling: not modelled
      p.finish();
      names.push_back(psa.name);
      admission.pod_set_assignments.push_back(std::move(psa));
    }
    detail::check_unique_keys(r, *list, ppath, names, "name");
  }
  a.finish();
  return admission;
}

}  // namespace

void read_workload(MapReader& top, Workload& wl) {
  Reader& r = top.reader;
  if (const Node* spec = top.get("spec")) {
    MapReader s(r, *spec, "spec");
    if (s.ok()) {
      if (auto v = detail::read_reference(r, s.get("queueName"), "spec.queueName")) wl.queue_name = *v;
      const std::string ppath = "spec.podSets";
      if (const Node* list = detail::list_node(r, s.get("podSets"), ppath, 1, 18)) {
        std::vector<std::string> names;
        for (std::size_t i = 0; i < list->items.size(); ++i) {
          const std::string ipath = detail::index(ppath, i);
          MapReader p(r, list->items[i], ipath);
          if (!p.ok()) {
            names.emplace_back();
            continue;
          }
          PodSet ps;
          if (const Node* n = p.get("name")) {
            if (auto v = detail::read_bounded_string(r, n, p.child("name"), 0, 63)) {
              ps.name = *v;
              if (!detail::is_dns_label(*v)) {
                r.invalid(n->pos, p.child("name"), detail::go_quote(*v),
                          p.child("name") + " in body should match '" + std::string(detail::kLabelPattern) + "'");
              }
            }
          }
          if (const Node* n = p.get("count")) {
            if (auto v = detail::read_int32(r, n, p.child("count")); v && detail::check_minimum(r, *n, p.child("count"), *v, 0)) {
              ps.count = *v;
            }
          }
          if (const Node* n = p.get("minCount")) {
            if (auto v = detail::read_int32(r, n, p.child("minCount"));
                v && detail::check_minimum(r, *n, p.child("minCount"), *v, 1)) {
              ps.min_count = *v;
            }
          }
          if (const Node* t = p.get("template")) {
            MapReader tm(r, *t, p.child("template"), false);
            if (tm.ok()) {
              if (const Node* md = tm.get("metadata")) {
                MapReader m(r, *md, tm.child("metadata"), false);
                if (m.ok()) {
                  if (auto v = detail::read_string_map(r, m.get("labels"), m.child("labels"))) ps.template_labels = *v;
                  if (auto v = detail::read_string_map(r, m.get("annotations"), m.child("annotations"))) {
                    ps.template_annotations = *v;
                  }
                }
              }
              if (const Node* ts = tm.get("spec")) ps.spec = read_pod_spec(r, *ts, tm.child("spec"));
            }
          } else {
            p.missing("template");
          }
          p.accept_not_modelled({"topologyRequest"}, kRuleFieldNotModelled,
                                "Kueue would place this pod set by topology-aware scheduling (TAS)");
          p.finish();
          if (ps.min_count && *ps.min_count > ps.count) {
            r.rule_failed(list->items[i], ipath, "minCount should be positive and less or equal to count");
          }
          names.push_back(ps.name);
          wl.pod_sets.push_back(std::move(ps));
        }
        detail::check_unique_keys(r, *list, ppath, names, "name");
      }
      if (const Node* n = s.get("priority")) wl.priority = detail::read_int32(r, n, "spec.priority");
      if (const Node* n = s.get("priorityClassRef")) {
        MapReader pc(r, *n, "spec.priorityClassRef");
        if (pc.ok()) {
          PriorityClassRef ref;
          bool complete = true;
          if (const Node* g = pc.get("group")) {
            if (auto v = detail::read_enum(r, g, pc.child("group"), {"kueue.x-k8s.io", "scheduling.k8s.io"})) ref.group = *v;
          } else {
            pc.missing("group");
            complete = false;
          }
          if (const Node* k = pc.get("kind")) {
            if (auto v = detail::read_enum(r, k, pc.child("kind"), {"WorkloadPriorityClass", "PriorityClass"})) ref.kind = *v;
          } else {
            pc.missing("kind");
            complete = false;
          }
          if (const Node* nm = pc.get("name")) {
            if (auto v = detail::read_bounded_string(r, nm, pc.child("name"), 1, 253)) {
              ref.name = *v;
              if (!detail::is_subdomain(*v)) detail::read_reference(r, nm, pc.child("name"));  // reports the pattern
            }
          } else {
            pc.missing("name");
            complete = false;
          }
          pc.finish();
          if (complete && ref.group == "scheduling.k8s.io" && ref.kind != "PriorityClass") {
            r.rule_failed(*n, "spec.priorityClassRef", "only the PriorityClass kind is allowed for the scheduling.k8s.io group");
          }
          if (complete && ref.group == "kueue.x-k8s.io" && ref.kind != "WorkloadPriorityClass") {
            r.rule_failed(*n, "spec.priorityClassRef",
                          "only the WorkloadPriorityClass kind is allowed for the kueue.x-k8s.io group");
          }
          wl.priority_class_ref = ref;
        }
      }
      if (auto v = detail::read_bool(r, s.get("active"), "spec.active")) wl.active = *v;
      if (const Node* n = s.get("maximumExecutionTimeSeconds")) {
        if (auto v = detail::read_int32(r, n, "spec.maximumExecutionTimeSeconds")) {
          detail::check_minimum(r, *n, "spec.maximumExecutionTimeSeconds", *v, 1);
        }
      }
      s.accept({"preemptionGates"});  // MultiKueue orchestration: not modelled
      s.finish();
      if (spec->find("priorityClassRef") != nullptr && spec->find("priorityClassRef")->type != NodeType::Null &&
          (spec->find("priority") == nullptr || spec->find("priority")->type == NodeType::Null)) {
        r.rule_failed(*spec, "spec", "priority should not be nil when priorityClassRef is set");
      }
    }
  }
  if (const Node* status = top.get("status")) {
    MapReader st(r, *status, "status");
    if (st.ok()) {
      wl.admission = read_admission(r, st.get("admission"), "status.admission");
      wl.conditions = read_conditions(r, st.get("conditions"), "status.conditions");
      const std::string rpath = "status.reclaimablePods";
      if (const Node* list = detail::list_node(r, st.get("reclaimablePods"), rpath, 0, 18)) {
        std::vector<std::string> names;
        for (std::size_t i = 0; i < list->items.size(); ++i) {
          MapReader p(r, list->items[i], detail::index(rpath, i));
          ReclaimablePod rp;
          if (auto v = p.required_string("name")) rp.name = *v;
          if (const Node* n = p.get("count")) {
            if (auto v = detail::read_int32(r, n, p.child("count")); v && detail::check_minimum(r, *n, p.child("count"), *v, 0)) {
              rp.count = *v;
            }
          } else if (p.ok()) {
            p.missing("count");
          }
          p.finish();
          names.push_back(rp.name);
          wl.reclaimable_pods.push_back(rp);
        }
        detail::check_unique_keys(r, *list, rpath, names, "name");
      }
      // Written by Kueue's other controllers; the twin keeps them as they are.
      st.accept({"accumulatedPastExecutionTimeSeconds", "admissionChecks", "clusterName", "nominatedClusterNames",
                 "preemptionGates", "requeueState", "resourceRequests", "schedulingStats", "unhealthyNodes"});
      st.finish();
    }
  }
  if (wl.has_quota_reservation() && wl.admission && wl.pod_sets.size() != wl.admission->pod_set_assignments.size()) {
    r.rule_failed(top.node(), "", "podSetAssignments must have the same number of podSets as the spec");
  }
}

}  // namespace gpubank::kueue::decode_parts
