#include "policy/workload.hpp"

#include <algorithm>
#include <vector>

#include "policy/rules.hpp"
#include "policy/schema.hpp"

namespace gpubank::policy {
namespace {

struct LabelSite {
  const doc::Node* labels;  // a mapping
  std::string path;         // "metadata.labels", "spec.template.metadata.labels"
};

struct PodSpecSite {
  const doc::Node* spec;
  std::string path;
};

// Every metadata.labels and every pod spec in the object, however deeply templated.
void collect(const doc::Node& n, const std::string& path, int depth, std::vector<LabelSite>& labels,
             std::vector<PodSpecSite>& pods) {
  if (depth > 12) return;
  if (n.type == doc::NodeType::Sequence) {
    for (std::size_t i = 0; i < n.items.size(); ++i) {
      collect(n.items[i], path + "[" + std::to_string(i) + "]", depth + 1, labels, pods);
    }
    return;
  }
  if (n.type != doc::NodeType::Mapping) return;
  // Pod specs, and component specs that carry pod fields without containers (a KServe
  // predictor with a model format has priorityClassName but no containers).
  const doc::Node* c = n.find("containers");
  if ((c != nullptr && c->type == doc::NodeType::Sequence) || n.find("priorityClassName") != nullptr) {
    pods.push_back({&n, path});
  }
  for (const auto& e : n.entries) {
    const std::string child = path.empty() ? e.key : path + "." + e.key;
    if (e.key == "metadata" && e.value.type == doc::NodeType::Mapping) {
      if (const doc::Node* l = e.value.find("labels"); l != nullptr && l->type == doc::NodeType::Mapping) {
        labels.push_back({l, child + ".labels"});
      }
      continue;
    }
    collect(e.value, child, depth + 1, labels, pods);
  }
}

const doc::Node* old_label(const doc::Node* old_root, std::string_view key) {
  if (old_root == nullptr) return nullptr;
  const doc::Node* meta = old_root->find("metadata");
  const doc::Node* labels = meta != nullptr ? meta->find("labels") : nullptr;
  return labels != nullptr ? labels->find(key) : nullptr;
}

std::string list_priorities(const PlatformGuardrailsSpec& g, const Group* group, std::optional<WorkloadType> type) {
  std::string out;
  for (const auto& p : g.priorities) {
    const bool group_ok = p.groups.empty() || (group != nullptr && std::find(p.groups.begin(), p.groups.end(),
                                                                              group->name) != p.groups.end());
    const bool type_ok = p.workload_types.empty() ||
                         (type && std::find(p.workload_types.begin(), p.workload_types.end(), *type) !=
                                      p.workload_types.end());
    if (!group_ok || !type_ok) continue;
    if (!out.empty()) out += ", ";
    out += p.name;
  }
  return out.empty() ? "none" : out;
}

}  // namespace

void check_workload(const doc::Node& root, std::string_view ns, const PlatformGuardrailsSpec& guardrails,
                    const doc::Node* old_root, const WorkloadReport& report) {
  std::vector<LabelSite> label_sites;
  std::vector<PodSpecSite> pods;
  collect(root, "", 0, label_sites, pods);
  const Group* group = guardrails.group_of_namespace(ns);

  // The workload type: the first workload-type label found (top level first).
  std::optional<WorkloadType> type;
  for (const auto& site : label_sites) {
    const doc::Node* v = site.labels->find(kLabelWorkloadType);
    if (v == nullptr) continue;
    const std::string path = site.path + "[" + std::string(kLabelWorkloadType) + "]";
    bool known = false;
    for (const auto& [value, name] : doc::EnumNames<WorkloadType>::values) {
      if (v->type == doc::NodeType::String && v->text == name) {
        known = true;
        if (!type) type = value;
      }
    }
    if (!known) {
      report(rule::kLabelsInvalidWorkloadType, path,
             "workload type " + doc::preview(*v) + " is not one of \"training\", \"inference\", \"batch\" or \"notebook\"",
             v->pos);
    }
  }

  // Reserved labels.
  const std::pair<std::string_view, std::string> reserved[] = {
      {kLabelBusinessGroup, group != nullptr ? group->name : std::string()},
      {kLabelCostCenter, group != nullptr ? group->cost_center : std::string()},
  };
  for (const auto& site : label_sites) {
    for (const auto& [key, expected] : reserved) {
      const doc::Node* v = site.labels->find(key);
      if (v == nullptr) continue;
      const bool is_expected = group != nullptr && v->type == doc::NodeType::String && v->text == expected;
      const doc::Node* before = site.path == "metadata.labels" ? old_label(old_root, key) : nullptr;
      const bool unchanged = before != nullptr && before->type == v->type && before->text == v->text;
      if (is_expected || unchanged) continue;
      const std::string path = site.path + "[" + std::string(key) + "]";
      std::string message = "label " + std::string(key) + " is written by admission, not by users";
      if (group != nullptr) {
        message += ": namespace " + std::string(ns) + " belongs to " + group->name + ", so it would be \"" +
                   expected + "\", not " + doc::preview(*v);
      } else {
        message += ": namespace " + std::string(ns) + " belongs to no business group";
      }
      report(rule::kLabelsReserved, path, message, v->pos);
    }
  }

  if (group == nullptr) return;  // priorities are a group's; other namespaces are not ours

  // Priority classes.
  struct Use {
    std::string name;
    std::string path;
    SourcePos pos;
  };
  std::vector<Use> uses;
  for (const auto& site : label_sites) {
    if (const doc::Node* v = site.labels->find(kLabelKueuePriorityClass); v != nullptr && v->type == doc::NodeType::String) {
      uses.push_back({v->text, site.path + "[" + std::string(kLabelKueuePriorityClass) + "]", v->pos});
    }
  }
  for (const auto& pod : pods) {
    if (const doc::Node* v = pod.spec->find("priorityClassName"); v != nullptr && v->type == doc::NodeType::String) {
      uses.push_back({v->text, pod.path.empty() ? "priorityClassName" : pod.path + ".priorityClassName", v->pos});
    }
  }
  for (const auto& use : uses) {
    const PriorityRule* p = guardrails.find_priority(use.name);
    if (p == nullptr) {
      report(rule::kPriorityUnknown, use.path,
             "priority class \"" + use.name + "\" is not allowed by the platform guardrails; " + group->name +
                 " may use: " + list_priorities(guardrails, group, type),
             use.pos);
      continue;
    }
    if (!p->groups.empty() && std::find(p->groups.begin(), p->groups.end(), group->name) == p->groups.end()) {
      report(rule::kPriorityForbidden, use.path,
             "priority class \"" + use.name + "\" is not allowed for business group " + group->name + "; it may use: " +
                 list_priorities(guardrails, group, type),
             use.pos);
      continue;
    }
    if (!p->workload_types.empty()) {
      if (!type) {
        report(rule::kPriorityForbidden, use.path,
               "priority class \"" + use.name + "\" is reserved for some workload types, and this workload has no " +
                   std::string(kLabelWorkloadType) + " label",
               use.pos);
      } else if (std::find(p->workload_types.begin(), p->workload_types.end(), *type) == p->workload_types.end()) {
        report(rule::kPriorityForbidden, use.path,
               "priority class \"" + use.name + "\" is not allowed for " + std::string(doc::enum_name(*type)) +
                   " workloads; allowed here: " + list_priorities(guardrails, group, type),
               use.pos);
      }
    }
  }
}

}  // namespace gpubank::policy
