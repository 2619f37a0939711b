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
  }
  return "?";
}

std::string resource_name(Kind kind) {
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

const LocalQueue* ObjectSet::find_local_queue(std::string_view ns, std::string_view name) const {
  for (const auto& q : local_queues) {
    if (q.metadata.ns == ns && q.metadata.name == name) return &q;
  }
  return nullptr;
}

}  // namespace gpubank::kueue
