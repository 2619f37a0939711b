// What the policy reconciler changes in the cluster: the render's objects against the
// objects gpubank applied before. Pure: rendered and live objects in, a plan out.
//
//   - apply: every rendered Kubernetes object, with server-side apply (idempotent: an
//     unchanged object keeps its resourceVersion). Grafana dashboard models are not
//     Kubernetes objects and are skipped (their ConfigMaps carry them); so is Kueue's
//     manager ConfigMap unless the operator lets gpubank manage Kueue's configuration (it
//     replaces the installed one, and Kueue reads it only at start).
//   - prune: objects gpubank created and the render no longer produces. "Created by
//     gpubank" means the managed-by label AND a server-side apply entry of gpubank's field
//     manager in managedFields: a label alone can be copied (the kustomize base, a user's
//     copy of `gpubank render` output applied with kubectl), an apply entry cannot.
//   - release: objects gpubank only annotates (KServe InferenceServices belong to their
//     users) are never deleted; an apply configuration with no fields gives up gpubank's
//     annotations and label instead.
#pragma once

#include <compare>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "render/object.hpp"

namespace gpubank::controller {

// An object's identity across API versions: group, kind, namespace, name.
struct ObjectKey {
  std::string group;  // "" for the core group
  std::string kind;
  std::string namespace_name;  // "" for a cluster-scoped object
  std::string name;

  auto operator<=>(const ObjectKey&) const = default;
  // kubectl's spelling: "clusterqueue.kueue.x-k8s.io/team-a" or "configmap/gpubank-system/x".
  [[nodiscard]] std::string to_string() const;
};
[[nodiscard]] ObjectKey key_of(const nlohmann::json& object);
[[nodiscard]] std::string group_of(std::string_view api_version);

// A kind the renderers produce, with the version the controller lists it at.
struct ManagedKind {
  std::string api_version;
  std::string kind;
  bool annotated_only = false;  // gpubank owns some fields of the users' objects, not the objects
};
// Every kind any renderer of either backend can produce: listed for pruning even when
// the current render has none of it left.
[[nodiscard]] const std::vector<ManagedKind>& managed_kinds();
[[nodiscard]] bool is_annotated_only(std::string_view group, std::string_view kind);

struct PlannedApply {
  nlohmann::json object;             // the apply configuration
  std::string path;                  // the render's path ("kueue/clusterqueue-a-h100.yaml")
  std::vector<std::string> sources;  // "GPUQuotaPolicy/a", ...
};

struct Skipped {
  std::string path;
  std::string why;
};

struct Plan {
  std::vector<PlannedApply> apply;       // in render order (by path)
  std::vector<nlohmann::json> prune;     // live objects to delete, by key
  std::vector<nlohmann::json> release;   // apply configurations without fields, by key
  std::vector<Skipped> skipped;
};

struct PlanOptions {
  std::string field_manager = "gpubank";
  bool manage_kueue_config = false;
};

// Whether `live` carries an Apply entry of `field_manager` in metadata.managedFields.
[[nodiscard]] bool applied_by(const nlohmann::json& live, std::string_view field_manager);

// `live`: the cluster's objects of the managed kinds (any, labelled or not: only those
// gpubank applied are pruned or released).
[[nodiscard]] Plan make_plan(const std::vector<render::RenderedObject>& desired, const std::vector<nlohmann::json>& live,
                             const PlanOptions& options);

}  // namespace gpubank::controller
