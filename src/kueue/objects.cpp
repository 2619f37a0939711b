#include "kueue/objects.hpp"

#include <algorithm>

namespace gpubank::kueue {

std::string_view kind_name(Kind kind) {
  switch (kind) {
    case Kind::ResourceFlavor: return "ResourceFlavor";
    case Kind::Cohort: return "Cohort";
    case Kind::ClusterQueue: return "ClusterQueue";
    case Kind::LocalQueue: return "LocalQueue";
    case Kind::WorkloadPriorityClass: return "WorkloadPriorityClass";
    case Kind::Workload: return "Workload";
    case Kind::Namespace: return "Namespace";
    case Kind::AdmissionCheck: return "AdmissionCheck";
  }
  return "?";
}

std::string resource_name(Kind kind) {
  if (kind == Kind::Namespace) return "namespaces";  // core/v1: no group
  std::string plural(kind_name(kind));
  std::transform(plural.begin(), plural.end(), plural.begin(),
                 [](char c) { return static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c); });
  plural += plural.ends_with("s") ? "es" : "s";
  return plural + "." + std::string(kGroup);
}

const Condition* Workload::condition(std::string_view type) const {
  for (const auto& c : conditions) {
    if (c.type == type) return &c;
  }
  return nullptr;
}

bool Workload::is_condition_true(std::string_view type) const {
  const Condition* c = condition(type);
  return c != nullptr && c->status == "True";
}

bool Workload::has_quota_reservation() const { return is_condition_true("QuotaReserved"); }

namespace {

template <class T>
const T* find_named(const std::vector<T>& objects, std::string_view name) {
  for (const auto& o : objects) {
    if (o.metadata.name == name) return &o;
  }
  return nullptr;
}

}  // namespace

const ResourceFlavor* ObjectSet::find_flavor(std::string_view name) const { return find_named(resource_flavors, name); }
const Cohort* ObjectSet::find_cohort(std::string_view name) const { return find_named(cohorts, name); }
const ClusterQueue* ObjectSet::find_cluster_queue(std::string_view name) const {
  return find_named(cluster_queues, name);
}
const WorkloadPriorityClass* ObjectSet::find_priority_class(std::string_view name) const {
  return find_named(priority_classes, name);
}

const AdmissionCheck* ObjectSet::find_admission_check(std::string_view name) const {
  for (const auto& c : admission_checks) {
    if (c.metadata.name == name) return &c;
  }
  return nullptr;
}

const Namespace* ObjectSet::find_namespace(std::string_view name) const {
  for (const auto& n : namespaces) {
    if (n.metadata.name == name) return &n;
  }
  return nullptr;
}

bool LabelSelector::matches(const std::map<std::string, std::string>& labels) const {
  for (const auto& [key, value] : match_labels) {
    const auto it = labels.find(key);
    if (it == labels.end() || it->second != value) return false;
  }
  for (const auto& r : match_expressions) {
    const auto it = labels.find(r.key);
    const bool has = it != labels.end();
    const bool listed = has && std::find(r.values.begin(), r.values.end(), it->second) != r.values.end();
    switch (r.op) {
      case LabelSelectorRequirement::Operator::In:
        if (!listed) return false;
        break;
      case LabelSelectorRequirement::Operator::NotIn:
        if (listed) return false;
        break;
      case LabelSelectorRequirement::Operator::Exists:
        if (!has) return false;
        break;
      case LabelSelectorRequirement::Operator::DoesNotExist:
        if (has) return false;
        break;
    }
  }
  return true;
}

const LocalQueue* ObjectSet::find_local_queue(std::string_view ns, std::string_view name) const {
  for (const auto& q : local_queues) {
    if (q.metadata.ns == ns && q.metadata.name == name) return &q;
  }
  return nullptr;
}

}  // namespace gpubank::kueue
