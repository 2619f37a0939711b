// Validating Kubernetes objects against OpenAPI v3 schemas the way the API server does
// before it stores them: the structural schemas of CustomResourceDefinitions (loaded from
// files) and built-in schemas for the core kinds gpubank renders (scheduling.k8s.io/v1
// PriorityClass, v1 ConfigMap).
//
//   schema::SchemaSet set;                                  // the built-in kinds
//   set.load("../shared/crds", diagnostics);                // every served CRD version
//   schema::Result r = set.validate(object);                // object: nlohmann::ordered_json
//   for (const auto& v : r.violations) ... v.path, v.rule, v.message
//   r.not_checked                                           // CEL rules it did not evaluate
//
// Checked: the OpenAPI subset of structural schemas (type, required, enum, pattern,
// minimum/maximum with exclusive bounds, multipleOf, min/maxLength in code points,
// min/maxItems, min/maxProperties, items, properties, additionalProperties, nullable,
// formats int32/float/date-time/date/byte, allOf/anyOf/oneOf/not), the
// x-kubernetes extensions (int-or-string, preserve-unknown-fields, embedded-resource,
// list-type set/map with list-map-keys), unknown fields as strict field validation
// rejects them, and metadata as ObjectMeta (name, namespace, labels, annotations). Not
// evaluated, and listed in Result::not_checked instead: x-kubernetes-validations (CEL),
// the string formats the API server checks and this does not (uri, email, ...), and
// patterns std::regex cannot run. docs/schema-validation.md has the details.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/diagnostic.hpp"

namespace gpubank::schema {

using Json = nlohmann::ordered_json;

// Rule ids of loading errors (as Diagnostic::rule).
inline constexpr std::string_view kRuleNotCrd = "crd.not-a-crd";
inline constexpr std::string_view kRuleNoSchema = "crd.no-schema";
inline constexpr std::string_view kRuleDuplicateCrd = "crd.duplicate";

// One way an object breaks its schema. `path` is the field path from the object's root,
// "spec.resourceGroups[0].flavors[1].name", map entries as "metadata.labels[team]", the
// root itself as "". `rule` is the keyword or check that failed ("required", "type",
// "enum", "unknown-field", ...); `message` is the API server's field error body
// ("Required value", "Unsupported value: \"X\": supported values: \"A\", \"B\"").
struct Violation {
  std::string path;
  std::string rule;
  std::string message;
  friend bool operator==(const Violation&, const Violation&) = default;
};

// A check the API server would run on a value of this object that this validator did not:
// `what` is "x-kubernetes-validations", "format" or "pattern"; `rule` the CEL expression,
// format name or pattern; `reason` why it was not checked.
struct NotChecked {
  std::string path;
  std::string what;
  std::string rule;
  std::string reason;
};

struct Result {
  std::vector<Violation> violations;
  std::vector<NotChecked> not_checked;
  [[nodiscard]] bool ok() const { return violations.empty(); }
  // How many x-kubernetes-validations rules applied to the object and were not evaluated.
  [[nodiscard]] std::size_t cel_rules_not_checked() const;
};

// Bounds on hostile input. An object over them gets one violation (rule "too-large" or
// "too-deep") and is not validated further.
struct Limits {
  std::size_t max_bytes = std::size_t{3} << 20;  // the API server's request body limit (3 MiB)
  std::size_t max_depth = 100;                  // nested objects and lists
};

// Facts about one kind a SchemaSet knows.
struct KindInfo {
  std::string api_version;  // "kueue.x-k8s.io/v1beta2", "v1"
  std::string kind;
  std::string source;  // the CRD's file, or "built-in"
  bool namespaced = false;
  std::size_t cel_rules = 0;  // x-kubernetes-validations rules in its schema
};

class SchemaSet {
 public:
  // A set with the built-in kinds only.
  explicit SchemaSet(Limits limits = {});
  ~SchemaSet();
  SchemaSet(SchemaSet&&) noexcept;
  SchemaSet& operator=(SchemaSet&&) noexcept;

  // Loads every CustomResourceDefinition in a file or directory (recursively: .yaml, .yml,
  // .json; YAML streams). Each served version's openAPIV3Schema is compiled once. A
  // document that is not an apiextensions.k8s.io/v1 CRD, a served version without a
  // schema, a schema apiextensions.k8s.io/v1 would refuse (forbidden or unknown keywords,
  // missing types, invalid patterns) and a kind loaded twice are errors with file, line
  // and column; the rest of the files still load. Returns the number of kinds added.
  std::size_t load(const std::string& path, Diagnostics& diagnostics);
  // Adds one CRD given as JSON (e.g. generated ones); `source` names it in errors.
  std::size_t add_crd(const Json& crd, const std::string& source, Diagnostics& diagnostics);

  [[nodiscard]] bool contains(std::string_view api_version, std::string_view kind) const;
  // Every kind, sorted by apiVersion and kind.
  [[nodiscard]] std::vector<KindInfo> kinds() const;

  // Validates one object (apiVersion, kind, metadata, ...). Deterministic: violations come
  // in the order of the object's fields. An apiVersion/kind without a schema is a
  // violation ("unknown-kind").
  [[nodiscard]] Result validate(const Json& object) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpubank::schema
