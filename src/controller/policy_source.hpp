// The policy set as the cluster holds it: the six platform.gpubank.dev kinds, listed by
// the controller's informers, decoded into the same PolicySet that `gpubank render` reads
// from files. Pure: objects in, set out.
//
// The set is built in a fixed order (kind in API order, then name), so the same cluster
// state gives the same set, the same render and the same status whatever order the
// informers delivered the objects in.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/diagnostic.hpp"
#include "policy/policy_set.hpp"

namespace gpubank::controller {

inline constexpr std::string_view kPolicyApiVersion = "platform.gpubank.dev/v1alpha1";

// One gpubank custom resource as listed.
struct PolicyResource {
  std::string kind;  // "GPUQuotaPolicy"
  std::string name;
  std::int64_t generation = 0;  // metadata.generation (0 when the server sent none)
  nlohmann::json object;        // the whole object, status included

  // "GPUQuotaPolicy/search-team-h100", as Diagnostic and RenderedObject sources name it.
  [[nodiscard]] std::string key() const { return kind + "/" + name; }
};

struct ClusterPolicies {
  policy::PolicySet set;                  // every resource that decoded, in the fixed order
  std::vector<PolicyResource> resources;  // every gpubank resource seen, in the same order
};

// Decodes `objects` (any order; objects of other groups are ignored). Reading findings
// (a field of the wrong type, an unknown field) are in set.diagnostics() with the
// object's kind and name, so they can be reported on that object's status.
[[nodiscard]] ClusterPolicies read_cluster_policies(const std::vector<nlohmann::json>& objects);

// Whether a diagnostic is about `resource` (by kind and name), or about the set as a whole
// (no kind: a file-level or cross-object finding without one owner).
[[nodiscard]] bool is_about(const Diagnostic& diagnostic, const PolicyResource& resource);

}  // namespace gpubank::controller
