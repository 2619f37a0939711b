// Walking one object along a compiled schema. Internal to src/schema: SchemaSet finds the
// kind's schema and calls resource(); everything else is recursion over the value, bounded
// by the schema's depth (values below untyped, preserve-unknown-fields nodes are not walked).
#pragma once

#include <string>
#include <vector>

#include "schema/compiled.hpp"
#include "schema/object_meta.hpp"
#include "schema/schema_set.hpp"

namespace gpubank::schema::detail {

class Validator {
 public:
  // `object_meta`: the built-in ObjectMeta schema every resource's metadata follows.
  Validator(const Schema& object_meta, Result& result);

  // A whole object (the root of a kind): its schema plus apiVersion, kind and metadata
  // with the kind's metadata rules.
  void resource(const Schema& schema, const Json& object, const MetaRules& meta);

 private:
  class Segment;

  // `structural`: the schema is a property/items/additionalProperties node, where unknown
  // fields, list types and CEL rules apply; false inside allOf/anyOf/oneOf/not, which only
  // constrain values.
  void value(const Schema& s, const Json& v, bool structural);
  bool type(const Schema& s, const Json& v);
  void format(const Schema& s, const Json& v);
  void number(const Schema& s, const Json& v);
  void string(const Schema& s, const std::string& v);
  void array(const Schema& s, const Json& v, bool structural);
  void list_type(const Schema& s, const Json& v);
  void object(const Schema& s, const Json& v, bool structural, const MetaRules* meta);
  void resource_fields(const Schema& s, const Json& v, const MetaRules& meta, bool root);
  void junctors(const Schema& s, const Json& v);
  // Lists the node's x-kubernetes-validations as not checked.
  void cel(const Schema& s);
  std::vector<Violation> branch(const Schema& s, const Json& v);

  void add(std::string_view rule, std::string message);
  void not_checked(std::string what, std::string rule, std::string reason);

  const Schema& object_meta_;
  Result& result_;
  std::vector<Violation>* out_;
  std::string path_;
};

// A short rendering of a value for messages: strings quoted (and cut after 64 bytes),
// numbers and booleans as JSON, "object"/"array" for the rest.
std::string preview(const Json& v);
// The JSON type name the API server uses for a value: "string", "integer", ...
std::string_view json_type(const Json& v);

}  // namespace gpubank::schema::detail
