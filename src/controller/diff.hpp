// What `gpubank controller --dry-run` prints: for each object the reconciler would change,
// a unified diff of the live object against what it would apply, as YAML.
//
// The live side is the live object cut down to the fields the apply configuration names
// (projection): server-side apply changes only those, so fields the server defaulted or
// other managers own are not differences. Lists are compared whole, as the objects gpubank
// applies use atomic lists.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace gpubank::controller {

// `live` restricted to the paths present in `applied` (metadata: name, namespace, labels
// and annotations only). A path missing from `live` is missing from the result.
[[nodiscard]] nlohmann::json project(const nlohmann::json& live, const nlohmann::json& applied);

// A unified diff (3 lines of context, "@@ -a,b +c,d @@" hunks) from `before` to `after`,
// with `---`/`+++` headers naming them; empty when the texts are equal. Lines are compared
// with a longest-common-subsequence table, so both texts together are capped at
// `max_lines`; above it the diff removes every old line and adds every new one.
[[nodiscard]] std::string unified_diff(std::string_view before, std::string_view after, std::string_view before_name,
                                       std::string_view after_name, std::size_t max_lines = 20000);

// The YAML gpubank prints an object as (fields in the order given; keys of the projection
// follow the apply configuration's order).
[[nodiscard]] std::string to_yaml_text(const nlohmann::json& object);

}  // namespace gpubank::controller
