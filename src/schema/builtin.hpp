// What SchemaSet knows without a CRD: the schemas of the core kinds gpubank renders and of
// ObjectMeta, written from the Kubernetes API reference as OpenAPI schema text, the value
// rules of those kinds that no schema states, and the kinds whose names have a stricter
// syntax than a DNS-1123 subdomain. Internal to src/schema.
#pragma once

#include <span>
#include <string_view>
#include <vector>

#include "schema/object_meta.hpp"
#include "schema/schema_set.hpp"

namespace gpubank::schema::detail {

struct BuiltinKind {
  std::string_view api_version;
  std::string_view kind;
  bool namespaced;
  std::string_view schema;  // openAPIV3Schema as YAML
  // The kind's own validation (the API server's ValidatePriorityClass, ValidateConfigMap):
  // rules on values that the schema cannot state.
  void (*check)(const Json& object, std::vector<Violation>& out);
};

std::span<const BuiltinKind> builtin_kinds();

// metav1.ObjectMeta as an OpenAPI schema (YAML).
std::string_view object_meta_schema();

// The metadata rules of a kind: a DNS-1123 subdomain name unless the kind is known to need
// more (see builtin.cpp for which and why).
MetaRules meta_rules(std::string_view group, std::string_view kind, bool namespaced);

}  // namespace gpubank::schema::detail
