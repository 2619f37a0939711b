// ObjectMeta's value rules, which no OpenAPI schema states: the syntax of names,
// namespaces, label keys and values, annotation keys and the annotations' total size
// (k8s.io/apimachinery's ValidateObjectMeta and the name checks in util/validation).
// The shape of metadata (which fields, their types) is the built-in ObjectMeta schema.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "schema/schema_set.hpp"

namespace gpubank::schema::detail {

// Each returns what is wrong with the text, or nullopt when it is valid.
std::optional<std::string> check_dns1123_subdomain(std::string_view s);  // <= 253, [a-z0-9]([-a-z0-9]*[a-z0-9])?(\.…)*
std::optional<std::string> check_dns1123_label(std::string_view s);      // <= 63, [a-z0-9]([-a-z0-9]*[a-z0-9])?
std::optional<std::string> check_dns1035_label(std::string_view s);      // <= 63, [a-z]([-a-z0-9]*[a-z0-9])?
std::optional<std::string> check_qualified_name(std::string_view s);     // [prefix/]name, label keys
std::optional<std::string> check_label_value(std::string_view s);        // <= 63, may be empty
std::optional<std::string> check_path_segment_name(std::string_view s);  // not . or .., no / or %

// Which syntax metadata.name follows.
enum class NameRule {
  Subdomain,     // custom resources, PriorityClass, ConfigMap
  Dns1035Label,  // names that must start with a letter (KServe InferenceService)
  PathSegment,   // objects embedded in others (x-kubernetes-embedded-resource)
};

struct MetaRules {
  NameRule name = NameRule::Subdomain;
  std::size_t max_name_length = 0;  // a stricter limit than the rule's own, 0 for none
  std::string name_reason;     // why a stricter rule applies, appended to its message
  bool name_required = true;   // name or generateName (not for embedded objects)
  bool namespaced = false;     // cluster-scoped objects lose their namespace on the server
};

inline constexpr std::size_t kMaxAnnotationsBytes = 256 * 1024;  // TotalAnnotationSizeLimitB

// Checks the values of a metadata object at `path` ("metadata"); its shape is checked
// separately against the ObjectMeta schema. Non-string values are skipped here.
void check_object_meta(const nlohmann::ordered_json& meta, const std::string& path, const MetaRules& rules,
                       std::vector<Violation>& out);

}  // namespace gpubank::schema::detail
