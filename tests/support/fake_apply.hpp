// The fake API server's server-side apply and managed-fields bookkeeping, on JSON objects
// (no I/O, no locking: fake_apiserver.cpp calls it under its lock).
//
// Ownership is tracked per LEAF PATH: a scalar, a list or an empty object, reached through
// object keys from the root ("spec.reclaimPolicy.gracePeriod"). metadata.managedFields
// holds one entry per (manager, operation, subresource), in the real FieldsV1 form
// ({"f:spec": {"f:guaranteed": {}}}) so kubectl shows and parses it.
//
//   - apply: the manager's applied configuration owns exactly the leaves it names. A leaf
//     another entry owns with a different value is a conflict (409) unless force, which
//     moves the leaf to the applier; the same value is shared. Leaves the manager applied
//     before and omits now are removed from the object unless someone else owns them.
//   - update (POST, PUT, merge patch): the manager takes the leaves whose value changed
//     (removed from other entries); leaves that disappeared are removed from every entry.
//
// Simplified compared to the real structured-merge-diff: every list is ATOMIC (the real
// server merges lists by x-kubernetes-list-type: map lists by their keys, set lists by
// value; here a list is one leaf, replaced whole); no x-kubernetes-map-type: atomic or
// granular distinction (every object is granular); no schema (any field is accepted, no
// defaulting, no pruning of unknown fields); no "k:"/"v:"/"i:" path elements and no "."
// markers in FieldsV1; a leaf whose parent another manager owns as a leaf (a list vs. a
// key inside it) conflicts like an equal path. metadata: only labels and annotations are
// owned (as on the real server: name and namespace identify the object).
#pragma once

#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

namespace gpubank::testing::ssa {

using Json = nlohmann::json;
using Path = std::vector<std::string>;

// ".spec.reclaimPolicy.gracePeriod", as the real server names fields in conflicts.
std::string path_text(const Path& path);

// The leaf paths of `value` under `prefix` (an empty object is a leaf; so is a list).
std::set<Path> leaves(const Json& value, const Path& prefix = {});

// The part of an object one scope owns: for "" (the main resource) everything but status
// and server-set metadata (labels and annotations stay); for "status", only status.
Json scoped(const Json& object, const std::string& subresource);

// FieldsV1 <-> leaf paths.
Json fields_v1(const std::set<Path>& paths);
std::set<Path> paths_of(const Json& fields_v1);

struct Conflict {
  std::string manager;
  std::string api_version;  // of the manager's entry
  Path path;
};

struct Outcome {
  Json object;                      // the new object (unchanged when conflicts stop it)
  std::vector<Conflict> conflicts;  // non-empty: 409, nothing written
};

struct Actor {
  std::string manager;
  std::string subresource;  // "" or "status"
  std::string api_version;  // recorded in the managedFields entry
  std::string time;         // RFC 3339, recorded in the managedFields entry when it changes
};

// Server-side apply of `config` to `live` (null: absent, apply creates).
Outcome apply(const Json& live, const Json& config, const Actor& actor, bool force);
// After an update from `old` (null: a create) to `updated`, the managedFields bookkeeping.
Json record_update(const Json& old, Json updated, const Actor& actor);
// RFC 7386 JSON merge patch.
Json merge_patch(Json target, const Json& patch);

// The 409 Status body for `conflicts`, worded as the real server words it.
Json conflict_status(const std::vector<Conflict>& conflicts, const std::string& group, const std::string& kind,
                     const std::string& name);

}  // namespace gpubank::testing::ssa
