// What `gpubank render` produces: Kubernetes objects (and Grafana dashboards) derived from
// a validated policy set, each traced back to the policies it came from. Renderers are
// pure functions of the policy set; the same set gives byte-identical objects.
#pragma once

#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/sha256.hpp"
#include "policy/types.hpp"

namespace gpubank::render {

using Json = nlohmann::ordered_json;

inline constexpr std::string_view kLabelManagedBy = "app.kubernetes.io/managed-by";
inline constexpr std::string_view kManagedBy = "gpubank";
// "GPUQuotaPolicy/ml-h100,PlatformGuardrails/platform": the policies an object came from.
inline constexpr std::string_view kAnnotationSource = "platform.gpubank.dev/source-policy";
// sha256 (hex) over one line per source policy, in that order: "<Kind>/<name> <sha256 of its
// canonical JSON encoding>\n". Any change to a source policy changes it.
inline constexpr std::string_view kAnnotationSourceHash = "platform.gpubank.dev/source-hash";

struct RenderedObject {
  // The whole object as it is applied: apiVersion, kind, metadata, spec... A Grafana
  // dashboard is the dashboard model itself (no apiVersion/kind).
  Json manifest;
  // Where the object is written under --out, relative: "<area>/<kind>-<name>.yaml" (or
  // ".json" for dashboards). Unique within one render; stable across runs.
  std::string path;
  // The policies it was derived from, as "Kind/name"; order is kept in the annotation.
  std::vector<const policy::PolicyObject*> sources;
};

// Adds the managed-by label and the source/hash annotations to a Kubernetes object's
// metadata (creating labels/annotations when absent); keys already present are kept.
// Dashboards (no "metadata") are left as they are. A Stamper encodes and hashes each
// source policy once, however many objects it feeds (the guardrails feed thousands).
class Stamper {
 public:
  void stamp(RenderedObject& object);

 private:
  const std::string& digest(const policy::PolicyObject& policy);
  std::unordered_map<const policy::PolicyObject*, std::string> digests_;
};
void stamp(RenderedObject& object);                    // one object: a Stamper of its own
void stamp_all(std::vector<RenderedObject>& objects);  // one Stamper for all

// The canonical text of a policy object whose sha256 goes into kAnnotationSourceHash: its
// encoding without status.conditions and status.observedGeneration (the controller's report).
[[nodiscard]] std::string canonical_text(const policy::PolicyObject& object);
// Lowercase hex sha256 of a text (moved to src/core; the name stays usable here).
using gpubank::sha256_hex;

// The resources of `flavor` in a rendered ClusterQueue's or Cohort's spec.resourceGroups
// (what the controller's time controls and reclaim hold adjust).
[[nodiscard]] std::vector<Json*> flavor_resources(Json& manifest, std::string_view flavor);
// metadata.labels[key], or "" when absent.
[[nodiscard]] std::string label_of(const Json& manifest, std::string_view key);

// Sorts by path; fails on a duplicate path by throwing std::logic_error (a renderer bug,
// not an input error).
void sort_and_check_unique(std::vector<RenderedObject>& objects);

}  // namespace gpubank::render
