// A structural OpenAPI v3 schema compiled once into a tree of plain structs: keywords are
// parsed into typed fields, patterns into regexes and properties into a sorted vector, so
// validating an object never looks at the schema's JSON again. Internal to src/schema.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/diagnostic.hpp"
#include "document/node.hpp"
#include "schema/pattern.hpp"

namespace gpubank::schema::detail {

using Json = nlohmann::ordered_json;

enum class Type : std::uint8_t { Unset, Object, Array, String, Integer, Number, Boolean };

// The formats checked. Other: a format the API server checks and this validator does not
// (reported as not checked). None: no format, one that needs no check (int64 and double
// hold every value of their type), or one the API server ignores (unknown, password).
enum class Format : std::uint8_t { None, Int32, Float, DateTime, Date, Byte, Other };

enum class ListType : std::uint8_t { Atomic, Set, Map };

// One x-kubernetes-validations entry. `transition` rules read oldSelf and run on updates only.
struct CelRule {
  std::string rule;
  std::string message;
  bool transition = false;
};

struct Schema;

struct Property {
  std::string name;
  std::unique_ptr<Schema> schema;
};

struct Schema {
  Type type = Type::Unset;
  Format format = Format::None;
  std::string format_name;  // as written, for messages
  bool nullable = false;
  bool int_or_string = false;
  bool preserve_unknown_fields = false;
  bool embedded_resource = false;
  bool additional_allowed = false;    // additionalProperties: true
  bool additional_forbidden = false;  // additionalProperties: false
  bool exclusive_minimum = false;
  bool exclusive_maximum = false;
  ListType list_type = ListType::Atomic;

  std::optional<double> minimum, maximum, multiple_of;
  std::optional<std::int64_t> min_length, max_length, min_items, max_items, min_properties, max_properties;
  std::optional<Pattern> pattern;
  std::vector<Json> enumeration;
  std::optional<Json> default_value;
  std::vector<std::string> required;
  std::vector<Property> properties;  // sorted by name
  std::unique_ptr<Schema> additional;  // additionalProperties as a schema
  std::unique_ptr<Schema> items;
  std::vector<Schema> all_of, any_of, one_of;
  std::unique_ptr<Schema> not_schema;
  std::vector<std::string> list_map_keys;
  std::vector<CelRule> validations;

  // The schema of a declared property, or nullptr.
  [[nodiscard]] const Schema* property(std::string_view name) const;
  // The schema a value under `key` of an object follows: a property, else
  // additionalProperties; nullptr when neither.
  [[nodiscard]] const Schema* field(std::string_view key) const;
};

// Where a compile error is reported.
struct CompileContext {
  std::string file;
  std::string kind;  // of the document holding the schema, e.g. "CustomResourceDefinition"
  std::string name;  // its metadata.name
  Diagnostics* diagnostics;
};

// Rule ids of compile errors.
inline constexpr std::string_view kRuleUnsupportedKeyword = "crd.unsupported-keyword";
inline constexpr std::string_view kRuleInvalidSchema = "crd.invalid-schema";
inline constexpr std::string_view kRuleNotStructural = "crd.not-structural";

// Compiles an openAPIV3Schema node. `path` is the node's path inside its document, for
// messages ("spec.versions[1].schema.openAPIV3Schema"). Errors go to the context's
// diagnostics; the returned schema is usable even then (bad keywords are left out).
Schema compile(const doc::Node& node, const std::string& path, const CompileContext& context);

// The number of x-kubernetes-validations rules in a compiled tree.
std::size_t count_cel_rules(const Schema& schema);

}  // namespace gpubank::schema::detail
