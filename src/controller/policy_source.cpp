#include "controller/policy_source.hpp"

#include <algorithm>
#include <optional>
#include <tuple>

#include "document/node.hpp"
#include "policy/types.hpp"

namespace gpubank::controller {
namespace {

// Kinds in API order; an unknown kind sorts last (it is reported, not decoded).
int kind_rank(std::string_view kind) {
  const std::optional<policy::Kind> k = policy::kind_from_name(kind);
  return k ? static_cast<int>(*k) : 1000;
}

// What a policy decoder reads: the server's bookkeeping (managedFields, uid, ...) is not
// part of a policy, and reading it would only cost time.
nlohmann::json policy_view(const nlohmann::json& object) {
  nlohmann::json view = nlohmann::json::object();
  for (const char* field : {"apiVersion", "kind", "spec", "status"}) {
    if (object.contains(field)) view[field] = object[field];
  }
  nlohmann::json meta = nlohmann::json::object();
  if (const auto m = object.find("metadata"); m != object.end() && m->is_object()) {
    for (const char* field : {"name", "labels", "annotations"}) {
      if (m->contains(field)) meta[field] = (*m)[field];
    }
  }
  view["metadata"] = std::move(meta);
  return view;
}

}  // namespace

ClusterPolicies read_cluster_policies(const std::vector<nlohmann::json>& objects) {
  ClusterPolicies out;
  for (const nlohmann::json& object : objects) {
    if (!object.is_object() || object.value("apiVersion", "") != kPolicyApiVersion) continue;
    PolicyResource r;
    r.kind = object.value("kind", "");
    if (const auto m = object.find("metadata"); m != object.end() && m->is_object()) {
      if (const auto n = m->find("name"); n != m->end() && n->is_string()) r.name = n->get<std::string>();
      if (const auto g = m->find("generation"); g != m->end() && g->is_number_integer()) r.generation = g->get<std::int64_t>();
    }
    r.object = object;
    out.resources.push_back(std::move(r));
  }
  std::sort(out.resources.begin(), out.resources.end(), [](const PolicyResource& a, const PolicyResource& b) {
    return std::tuple(kind_rank(a.kind), a.kind, a.name) < std::tuple(kind_rank(b.kind), b.kind, b.name);
  });
  for (const PolicyResource& r : out.resources) {
    // The file name is empty: findings name the object by kind and name instead, as the
    // webhook's do for objects that came over the API.
    out.set.add(doc::from_json(policy_view(r.object)), "", 0);
  }
  return out;
}

bool is_about(const Diagnostic& diagnostic, const PolicyResource& resource) {
  return diagnostic.kind == resource.kind && diagnostic.name == resource.name;
}

}  // namespace gpubank::controller
