#include "policy/workload.hpp"

#include <algorithm>
#include <iterator>
#include <optional>
#include <vector>

#include "policy/priority.hpp"
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

// The type a workload-type label names; nullopt for a value that is not a type.
std::optional<WorkloadType> type_named_by(const doc::Node& label) {
  if (label.type != doc::NodeType::String) return std::nullopt;
  for (const auto& [value, name] : doc::EnumNames<WorkloadType>::values) {
    if (label.text == name) return value;
  }
  return std::nullopt;
}

// The workload's type: the first workload-type label found (top level first) that names one.
std::optional<WorkloadType> workload_type_of(const std::vector<LabelSite>& sites) {
  for (const auto& site : sites) {
    if (const doc::Node* v = site.labels->find(kLabelWorkloadType)) {
      if (auto type = type_named_by(*v)) return type;
    }
  }
  return std::nullopt;
}

// Whether the object names a priority class anywhere, whatever the value (an invalid one
// is priority.unknown's, not a missing one).
bool names_priority_class(const std::vector<LabelSite>& labels, const std::vector<PodSpecSite>& pods) {
  return std::any_of(labels.begin(), labels.end(),
                     [](const LabelSite& s) { return s.labels->find(kLabelKueuePriorityClass) != nullptr; }) ||
         std::any_of(pods.begin(), pods.end(),
                     [](const PodSpecSite& p) { return p.spec->find("priorityClassName") != nullptr; });
}

std::optional<MissingPriorityClass> missing_class(const PlatformGuardrailsSpec& guardrails, const Group* group,
                                                  std::optional<WorkloadType> type,
                                                  const std::vector<LabelSite>& labels,
                                                  const std::vector<PodSpecSite>& pods) {
  if (group == nullptr || !type || !is_protected_type(guardrails, *type) || names_priority_class(labels, pods)) {
    return std::nullopt;
  }
  return MissingPriorityClass{*type, group, default_priority_for(guardrails, *type, group->name)};
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

std::string label_path(const LabelSite& site, std::string_view key) {
  return site.path + "[" + std::string(key) + "]";
}

// The value of `key` in the old object's labels at the same place (same path), if any.
const doc::Node* old_label_at(const std::vector<LabelSite>& old_sites, const std::string& path, std::string_view key) {
  for (const auto& site : old_sites) {
    if (site.path == path) return site.labels->find(key);
  }
  return nullptr;
}

bool same_scalar(const doc::Node* a, const doc::Node* b) {
  return a != nullptr && b != nullptr && a->type == b->type && a->text == b->text;
}

// The resource names that count as GPUs: whole GPUs, and the MIG profiles of the pools
// (the device plugin's "mixed" strategy names them nvidia.com/mig-<profile>).
std::vector<std::string> gpu_resources(const PlatformGuardrailsSpec& g) {
  std::vector<std::string> out{"nvidia.com/gpu"};
  for (const auto& pool : g.pools) {
    if (pool.partition == "full") continue;
    std::string name = "nvidia.com/mig-" + pool.partition;
    if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(std::move(name));
  }
  return out;
}

bool is_zero_quantity(const doc::Node& q) {
  if (!q.is_scalar() || q.text.empty()) return false;
  return std::all_of(q.text.begin(), q.text.end(), [](char c) { return c == '0' || c == '.'; });
}

// The path of the first resources.requests or resources.limits (of a container, an init
// container or a component such as KServe's predictor.model) that asks for a GPU; empty
// when none does.
std::string first_gpu_request(const doc::Node& n, const std::string& path, int depth,
                              const std::vector<std::string>& gpus) {
  if (depth > 16) return {};
  if (n.type == doc::NodeType::Sequence) {
    for (std::size_t i = 0; i < n.items.size(); ++i) {
      std::string found = first_gpu_request(n.items[i], path + "[" + std::to_string(i) + "]", depth + 1, gpus);
      if (!found.empty()) return found;
    }
    return {};
  }
  if (n.type != doc::NodeType::Mapping) return {};
  if (const doc::Node* r = n.find("resources"); r != nullptr && r->type == doc::NodeType::Mapping) {
    for (const char* part : {"requests", "limits"}) {
      const doc::Node* list = r->find(part);
      if (list == nullptr || list->type != doc::NodeType::Mapping) continue;
      for (const auto& gpu : gpus) {
        const doc::Node* q = list->find(gpu);
        if (q != nullptr && !is_zero_quantity(*q)) {
          return (path.empty() ? "" : path + ".") + "resources." + part + "[" + gpu + "]";
        }
      }
    }
  }
  for (const auto& e : n.entries) {
    if (e.key == "metadata" || e.key == "status") continue;
    std::string found = first_gpu_request(e.value, path.empty() ? e.key : path + "." + e.key, depth + 1, gpus);
    if (!found.empty()) return found;
  }
  return {};
}

// The API group of an apiVersion ("apps/v1" -> "apps", "v1" -> "").
std::string_view api_group_of(std::string_view api_version) {
  const auto slash = api_version.find('/');
  return slash == std::string_view::npos ? std::string_view() : api_version.substr(0, slash);
}

std::string_view api_group_of(WorkloadRefKind kind) {
  switch (kind) {
    case WorkloadRefKind::InferenceService:
    case WorkloadRefKind::LLMInferenceService: return "serving.kserve.io";
    case WorkloadRefKind::Deployment: return "apps";
    case WorkloadRefKind::RayService: return "ray.io";
  }
  return {};
}

// The InferenceScalingPolicy of the group that targets this very object (kind, name,
// namespace), if any.
const PolicyObject* targeting_policy(const doc::Node& root, std::string_view ns, const Group& group,
                                     const PolicySet* policies) {
  if (policies == nullptr) return nullptr;
  const std::string_view group_name = api_group_of(root.string_at("apiVersion"));
  const std::string_view kind = root.string_at("kind");
  const doc::Node* meta = root.find("metadata");
  const std::string_view name = meta != nullptr ? meta->string_at("name") : std::string_view();
  if (name.empty()) return nullptr;
  for (const PolicyObject& p : policies->policies()) {
    if (p.kind != Kind::InferenceScalingPolicy) continue;
    const auto& s = p.as<InferenceScalingPolicySpec>();
    const WorkloadRef& ref = s.workload_ref;
    if (s.business_group == group.name && ref.namespace_ == ns && ref.name == name &&
        doc::enum_name(ref.kind) == kind && api_group_of(ref.kind) == group_name) {
      return &p;
    }
  }
  return nullptr;
}

// The labels Kueue reads the queue name from: the object's own, and for a CronJob those of
// the Jobs it creates (spec.jobTemplate.metadata.labels).
const doc::Node* queue_name_label(const doc::Node& root) {
  const doc::Node* labels = nullptr;
  if (root.string_at("kind") == "CronJob") {
    const doc::Node* spec = root.find("spec");
    const doc::Node* tmpl = spec != nullptr ? spec->find("jobTemplate") : nullptr;
    const doc::Node* meta = tmpl != nullptr ? tmpl->find("metadata") : nullptr;
    labels = meta != nullptr ? meta->find("labels") : nullptr;
  } else if (const doc::Node* meta = root.find("metadata")) {
    labels = meta->find("labels");
  }
  if (labels == nullptr || labels->type != doc::NodeType::Mapping) return nullptr;
  const doc::Node* q = labels->find(kLabelKueueQueueName);
  return q != nullptr && q->type == doc::NodeType::String && !q->text.empty() ? q : nullptr;
}

// The labels that grant something (docs/webhook.md, "Who may set which label"), for a
// writer that is not one of the guardrails' controllers.
void check_privileged_labels(const doc::Node& root, const WorkloadContext& ctx, const Group& group,
                             const std::vector<LabelSite>& sites, std::optional<WorkloadType> type,
                             const WorkloadReport& report) {
  std::vector<LabelSite> old_sites;
  std::vector<PodSpecSite> old_pods;
  if (ctx.old_root != nullptr) collect(*ctx.old_root, "", 0, old_sites, old_pods);
  const std::string who = ctx.requester != nullptr ? "\"" + ctx.requester->username + "\"" : std::string();

  // Removing an owner-id is changing it.
  if (ctx.requester != nullptr) {
    for (const auto& old_site : old_sites) {
      const doc::Node* before = old_site.labels->find(kLabelOwnerId);
      if (before == nullptr) continue;
      const auto now = std::find_if(sites.begin(), sites.end(), [&](const LabelSite& s) { return s.path == old_site.path; });
      if (now != sites.end() && now->labels->find(kLabelOwnerId) != nullptr) continue;
      report(rule::kLabelsOwnerIdNotRequester, label_path(old_site, kLabelOwnerId),
             "label " + std::string(kLabelOwnerId) + " was " + doc::preview(*before) +
                 " and may not be removed on update",
             now != sites.end() ? now->labels->pos : root.pos);
    }
  }

  for (const auto& site : sites) {
    auto unchanged = [&](std::string_view key, const doc::Node* v) {
      return same_scalar(v, old_label_at(old_sites, site.path, key));
    };
    if (const doc::Node* v = site.labels->find(kLabelOwnerId); v != nullptr && ctx.requester != nullptr) {
      const doc::Node* before = old_label_at(old_sites, site.path, kLabelOwnerId);
      if (before != nullptr && !same_scalar(v, before)) {
        report(rule::kLabelsOwnerIdNotRequester, label_path(site, kLabelOwnerId),
               "label " + std::string(kLabelOwnerId) + " was " + doc::preview(*before) +
                   " and may not be changed on update (to " + doc::preview(*v) + ")",
               v->pos);
      } else if (before == nullptr && !(v->type == doc::NodeType::String && v->text == ctx.requester->username)) {
        report(rule::kLabelsOwnerIdNotRequester, label_path(site, kLabelOwnerId),
               "label " + std::string(kLabelOwnerId) + " must be the id of the user who creates the workload, " +
                   who + ", not " + doc::preview(*v),
               v->pos);
      }
    }
    if (const doc::Node* v = site.labels->find(kLabelCapacityRole);
        v != nullptr && ctx.requester != nullptr && !unchanged(kLabelCapacityRole, v)) {
      report(rule::kLabelsCapacityRoleControllerOnly, label_path(site, kLabelCapacityRole),
             "label " + std::string(kLabelCapacityRole) + " is set by gpubank's controllers (the guardrails' " +
                 "controllers), not by " + who + "; it decides which replicas are exempt from reclaim",
             v->pos);
    }
    if (const doc::Node* v = site.labels->find(kLabelWorkloadType);
        v != nullptr && v->type == doc::NodeType::String && v->text == "inference" &&
        !unchanged(kLabelWorkloadType, v) && targeting_policy(root, ctx.ns, group, ctx.policies) == nullptr) {
      report(rule::kLabelsInferenceNotTargeted, label_path(site, kLabelWorkloadType),
             "workload type \"inference\" is for workloads an InferenceScalingPolicy of " + group.name +
                 " targets (by kind, name and namespace); no policy targets " + std::string(root.string_at("kind")) +
                 " \"" + std::string(root.find("metadata") != nullptr ? root.find("metadata")->string_at("name") : "") +
                 "\" in " + std::string(ctx.ns),
             v->pos);
    }
    if (const doc::Node* v = site.labels->find(kLabelCheckpointable); v != nullptr && !unchanged(kLabelCheckpointable, v)) {
      std::string why;
      if (!(v->type == doc::NodeType::String && v->text == "true")) {
        why = "its only value is \"true\", not " + doc::preview(*v);
      } else if (!type) {
        why = "the workload has no " + std::string(kLabelWorkloadType) + " label";
      } else if (is_protected_type(ctx.guardrails, *type)) {
        why = std::string(doc::enum_name(*type)) +
              " workloads are protected from preemption, so they cannot give back capacity they borrow as checkpointable";
      }
      if (!why.empty()) {
        report(rule::kLabelsCheckpointableNotAllowed, label_path(site, kLabelCheckpointable),
               "label " + std::string(kLabelCheckpointable) + " is not allowed here: " + why, v->pos);
      }
    }
  }

  // GPU workloads go through Kueue's quota.
  const std::string gpu = first_gpu_request(root, "", 0, gpu_resources(ctx.guardrails));
  if (!gpu.empty() && queue_name_label(root) == nullptr) {
    const bool cron = root.string_at("kind") == "CronJob";
    report(rule::kWorkloadMissingQueueName,
           std::string(cron ? "spec.jobTemplate.metadata.labels" : "metadata.labels") + "[" +
               std::string(kLabelKueueQueueName) + "]",
           "a workload that asks for GPUs (" + gpu + ") in " + group.name + "'s namespace " + std::string(ctx.ns) +
               " must name its Kueue LocalQueue in the label " + std::string(kLabelKueueQueueName) +
               (cron ? " of its jobTemplate" : "") + ", so that it is admitted within the group's quota",
           root.pos);
  }
}

}  // namespace

bool is_controller(const UserInfo& user, const PlatformGuardrailsSpec& guardrails) {
  if (guardrails.controllers.empty()) {
    return std::any_of(std::begin(kDefaultControllers), std::end(kDefaultControllers),
                       [&](std::string_view s) { return matches(Subject(s), user); });
  }
  return std::any_of(guardrails.controllers.begin(), guardrails.controllers.end(),
                     [&](const Subject& s) { return matches(s, user); });
}

std::optional<MissingPriorityClass> missing_priority_class(const doc::Node& root, std::string_view ns,
                                                          const PlatformGuardrailsSpec& guardrails) {
  std::vector<LabelSite> labels;
  std::vector<PodSpecSite> pods;
  collect(root, "", 0, labels, pods);
  return missing_class(guardrails, guardrails.group_of_namespace(ns), workload_type_of(labels), labels, pods);
}

std::string missing_priority_message(const MissingPriorityClass& missing) {
  const std::string type(doc::enum_name(missing.type));
  std::string message = type + " workloads are protected (the guardrails' protectedWorkloadTypes) and need a priority "
                        "class, so that Kueue does not run them at priority 0 below the batch jobs of their queue; "
                        "this one names none (no label " + std::string(kLabelKueuePriorityClass) +
                        ", no priorityClassName). ";
  if (missing.default_class != nullptr) {
    message += "Its default is \"" + missing.default_class->name + "\", which gpubank's mutating webhook (POST /mutate) "
               "writes into that label: install it, or set the label yourself";
  } else {
    message += "The guardrails have no default for it: no priority class names " + type +
               " in its workloadTypes and allows business group " + missing.group->name +
               "; add one to spec.priorities";
  }
  return message;
}

void check_workload(const doc::Node& root, const WorkloadContext& context, const WorkloadReport& report) {
  const std::string_view ns = context.ns;
  const PlatformGuardrailsSpec& guardrails = context.guardrails;
  const doc::Node* old_root = context.old_root;
  std::vector<LabelSite> label_sites;
  std::vector<PodSpecSite> pods;
  collect(root, "", 0, label_sites, pods);
  const Group* group = guardrails.group_of_namespace(ns);

  // The workload type: the first workload-type label found (top level first).
  const std::optional<WorkloadType> type = workload_type_of(label_sites);
  for (const auto& site : label_sites) {
    const doc::Node* v = site.labels->find(kLabelWorkloadType);
    if (v == nullptr || type_named_by(*v)) continue;
    report(rule::kLabelsInvalidWorkloadType, site.path + "[" + std::string(kLabelWorkloadType) + "]",
           "workload type " + doc::preview(*v) + " is not one of \"training\", \"inference\", \"batch\" or \"notebook\"",
           v->pos);
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

  // What a controller writes was copied from an object the webhook checked when its user
  // wrote it (a Job's pods, a Deployment's ReplicaSets), or is the controller's own.
  if (context.requester == nullptr || !is_controller(*context.requester, guardrails)) {
    check_privileged_labels(root, context, *group, label_sites, type, report);
  }

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

  // A protected workload without a class. Mutating webhooks run first, so with POST /mutate
  // installed this only fires when the guardrails have no default. Not for controllers:
  // the pods of a Job take their priority from the Job's Kueue Workload, and what a
  // controller copies was checked when its user wrote it. Not for files: no writer, and
  // in the cluster the mutating webhook fills the class in.
  const bool by_user = context.requester != nullptr && !is_controller(*context.requester, guardrails);
  if (by_user) {
    if (const auto missing = missing_class(guardrails, group, type, label_sites, pods)) {
      const doc::Node* meta = root.find("metadata");
      const doc::Node* labels = meta != nullptr ? meta->find("labels") : nullptr;
      report(rule::kPriorityProtectedNeedsClass, std::string(kPriorityClassLabelPath), missing_priority_message(*missing),
             labels != nullptr ? labels->pos : (meta != nullptr ? meta->pos : root.pos));
    }
  }
}

}  // namespace gpubank::policy
