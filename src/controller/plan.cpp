#include "controller/plan.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "render/kueue.hpp"

namespace gpubank::controller {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string string_at(const nlohmann::json& object, const char* field) {
  const auto it = object.find(field);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

bool has_managed_by_label(const nlohmann::json& live) {
  const auto m = live.find("metadata");
  if (m == live.end() || !m->is_object()) return false;
  const auto labels = m->find("labels");
  if (labels == m->end() || !labels->is_object()) return false;
  const auto v = labels->find(std::string(render::kLabelManagedBy));
  return v != labels->end() && v->is_string() && v->get<std::string>() == render::kManagedBy;
}

bool is_kueue_manager_config(const ObjectKey& key) {
  return key.group.empty() && key.kind == "ConfigMap" && key.namespace_name == render::kKueueNamespace &&
         key.name == render::kKueueManagerConfigMap;
}

}  // namespace

std::string group_of(std::string_view api_version) {
  const std::size_t slash = api_version.find('/');
  return slash == std::string_view::npos ? std::string() : std::string(api_version.substr(0, slash));
}

ObjectKey key_of(const nlohmann::json& object) {
  ObjectKey key;
  key.group = group_of(string_at(object, "apiVersion"));
  key.kind = string_at(object, "kind");
  if (const auto m = object.find("metadata"); m != object.end() && m->is_object()) {
    key.namespace_name = string_at(*m, "namespace");
    key.name = string_at(*m, "name");
  }
  return key;
}

std::string ObjectKey::to_string() const {
  std::string out = lower(kind);
  if (!group.empty()) out += "." + group;
  if (!namespace_name.empty()) out += "/" + namespace_name;
  return out + "/" + name;
}

const std::vector<ManagedKind>& managed_kinds() {
  static const std::vector<ManagedKind> kinds{
      {"kueue.x-k8s.io/v1beta2", "ClusterQueue"},
      {"kueue.x-k8s.io/v1beta2", "Cohort"},
      {"kueue.x-k8s.io/v1beta2", "LocalQueue"},
      {"kueue.x-k8s.io/v1beta2", "ResourceFlavor"},
      {"kueue.x-k8s.io/v1beta2", "WorkloadPriorityClass"},
      {"scheduling.volcano.sh/v1beta1", "Queue"},
      {"scheduling.volcano.sh/v1beta1", "PodGroup"},
      {"scheduling.k8s.io/v1", "PriorityClass"},
      {"keda.sh/v1alpha1", "ScaledObject"},
      {"monitoring.coreos.com/v1", "PrometheusRule"},
      {"v1", "ConfigMap"},
      {"serving.kserve.io/v1beta1", "InferenceService", true},
  };
  return kinds;
}

bool is_annotated_only(std::string_view group, std::string_view kind) {
  for (const ManagedKind& k : managed_kinds()) {
    if (k.annotated_only && k.kind == kind && group_of(k.api_version) == group) return true;
  }
  return false;
}

bool applied_by(const nlohmann::json& live, std::string_view field_manager) {
  const auto m = live.find("metadata");
  if (m == live.end() || !m->is_object()) return false;
  const auto fields = m->find("managedFields");
  if (fields == m->end() || !fields->is_array()) return false;
  return std::any_of(fields->begin(), fields->end(), [&](const nlohmann::json& entry) {
    return entry.is_object() && string_at(entry, "manager") == field_manager && string_at(entry, "operation") == "Apply";
  });
}

Plan make_plan(const std::vector<render::RenderedObject>& desired, const std::vector<nlohmann::json>& live,
               const PlanOptions& options) {
  Plan plan;
  std::set<ObjectKey> wanted;
  for (const render::RenderedObject& object : desired) {
    if (!object.manifest.contains("apiVersion") || !object.manifest.contains("kind")) {
      plan.skipped.push_back({object.path, "a Grafana dashboard model, not a Kubernetes object (its ConfigMap is applied)"});
      continue;
    }
    nlohmann::json manifest = nlohmann::json::parse(object.manifest.dump());
    const ObjectKey key = key_of(manifest);
    if (is_kueue_manager_config(key) && !options.manage_kueue_config) {
      plan.skipped.push_back({object.path,
                              "Kueue's manager configuration replaces the installed one and Kueue reads it only at start: "
                              "applied only with --manage-kueue-config"});
      continue;
    }
    wanted.insert(key);
    PlannedApply a;
    a.object = std::move(manifest);
    a.path = object.path;
    for (const policy::PolicyObject* source : object.sources) a.sources.push_back(source->ref());
    plan.apply.push_back(std::move(a));
  }

  std::map<ObjectKey, const nlohmann::json*> stale;
  for (const nlohmann::json& object : live) {
    const ObjectKey key = key_of(object);
    if (wanted.contains(key) || !has_managed_by_label(object) || !applied_by(object, options.field_manager)) continue;
    // Never delete Kueue's configuration: without it Kueue does not start.
    if (is_kueue_manager_config(key)) continue;
    stale.emplace(key, &object);
  }
  for (const auto& [key, object] : stale) {
    if (is_annotated_only(key.group, key.kind)) {
      nlohmann::json empty{{"apiVersion", (*object)["apiVersion"]}, {"kind", key.kind}, {"metadata", {{"name", key.name}}}};
      if (!key.namespace_name.empty()) empty["metadata"]["namespace"] = key.namespace_name;
      plan.release.push_back(std::move(empty));
    } else {
      plan.prune.push_back(*object);
    }
  }
  return plan;
}

}  // namespace gpubank::controller
