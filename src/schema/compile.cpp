// Compiling openAPIV3Schema nodes. What is accepted is apiextensions.k8s.io/v1's
// JSONSchemaProps: keywords it forbids ($ref, definitions, patternProperties, ...) and
// keywords it does not know are errors, as the API server refuses such a CRD.
#include <algorithm>
#include <cmath>

#include "schema/compiled.hpp"

namespace gpubank::schema::detail {
namespace {

using doc::Node;
using doc::NodeType;

// Formats the API server checks (kube-openapi's strfmt registry) that are not checked here.
constexpr std::string_view kOtherCheckedFormats[] = {
    "bsonobjectid", "uri",   "email",  "hostname",   "ipv4",    "ipv6",     "cidr",
    "mac",          "uuid",  "uuid3",  "uuid4",      "uuid5",   "isbn",     "isbn10",
    "isbn13",       "creditcard",      "ssn",        "hexcolor", "rgbcolor", "duration"};

// strfmt's name normalisation: case and '-'/'_' do not matter ("date-time" is "datetime").
std::string normalise_format(std::string_view name) {
  std::string out;
  for (const char c : name) {
    if (c == '-' || c == '_') continue;
    out += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  }
  return out;
}

Format format_of(std::string_view name) {
  const std::string n = normalise_format(name);
  if (n == "int32") return Format::Int32;
  if (n == "float") return Format::Float;
  if (n == "datetime") return Format::DateTime;
  if (n == "date") return Format::Date;
  if (n == "byte") return Format::Byte;
  for (const auto other : kOtherCheckedFormats) {
    if (n == other) return Format::Other;
  }
  return Format::None;  // int64, double, password and unknown formats: nothing to check
}

std::optional<Type> type_of(std::string_view name) {
  if (name == "object") return Type::Object;
  if (name == "array") return Type::Array;
  if (name == "string") return Type::String;
  if (name == "integer") return Type::Integer;
  if (name == "number") return Type::Number;
  if (name == "boolean") return Type::Boolean;
  return std::nullopt;
}

class Compiler {
 public:
  explicit Compiler(const CompileContext& context) : ctx_(context) {}

  // `structural`: the node is a property, additionalProperties, items or the root, where
  // a structural schema needs a type; false inside allOf/anyOf/oneOf/not.
  Schema compile(const Node& node, const std::string& path, bool structural) {
    Schema s;
    if (node.type != NodeType::Mapping) {
      error(kRuleInvalidSchema, node.pos, path, "a schema must be an object, not " + std::string(doc::describe(node.type)));
      return s;
    }
    for (std::size_t i = 0; i < node.entries.size(); ++i) {
      const auto& e = node.entries[i];
      const std::string child = path + "." + e.key;
      const bool duplicate = std::any_of(node.entries.begin(), node.entries.begin() + static_cast<std::ptrdiff_t>(i),
                                         [&](const doc::Entry& other) { return other.key == e.key; });
      if (duplicate) {
        error(kRuleInvalidSchema, e.key_pos, child, "duplicate keyword");
        continue;
      }
      keyword(s, e, child, structural);
    }
    finish(s, node, path, structural);
    return s;
  }

 private:
  void error(std::string_view rule, SourcePos pos, const std::string& path, std::string message) {
    if (ctx_.diagnostics == nullptr) return;
    Diagnostic d;
    d.rule = rule;
    d.file = ctx_.file;
    d.pos = pos;
    d.kind = ctx_.kind;
    d.name = ctx_.name;
    d.path = path;
    d.message = std::move(message);
    ctx_.diagnostics->push_back(std::move(d));
  }

  bool expect(const Node& n, NodeType type, const std::string& path) {
    if (n.type == type || (type == NodeType::Float && n.type == NodeType::Int)) return true;
    error(kRuleInvalidSchema, n.pos, path,
          "must be " + std::string(doc::describe(type == NodeType::Float ? NodeType::Float : type)) + ", not " +
              doc::describe(n.type));
    return false;
  }

  std::optional<std::int64_t> count(const Node& n, const std::string& path) {
    if (!expect(n, NodeType::Int, path)) return std::nullopt;
    if (!n.integer_fits || n.integer < 0) {
      error(kRuleInvalidSchema, n.pos, path, "must be a non-negative integer");
      return std::nullopt;
    }
    return n.integer;
  }

  std::optional<double> number(const Node& n, const std::string& path) {
    if (!expect(n, NodeType::Float, path)) return std::nullopt;
    return n.number;
  }

  bool flag(const Node& n, const std::string& path) { return expect(n, NodeType::Bool, path) && n.boolean; }

  std::vector<std::string> strings(const Node& n, const std::string& path) {
    std::vector<std::string> out;
    if (!expect(n, NodeType::Sequence, path)) return out;
    for (std::size_t i = 0; i < n.items.size(); ++i) {
      if (expect(n.items[i], NodeType::String, path + "[" + std::to_string(i) + "]")) out.push_back(n.items[i].text);
    }
    return out;
  }

  std::vector<Schema> list(const Node& n, const std::string& path) {
    std::vector<Schema> out;
    if (!expect(n, NodeType::Sequence, path)) return out;
    for (std::size_t i = 0; i < n.items.size(); ++i) {
      out.push_back(compile(n.items[i], path + "[" + std::to_string(i) + "]", false));
    }
    return out;
  }

  void keyword(Schema& s, const doc::Entry& e, const std::string& path, bool structural) {
    const std::string& k = e.key;
    const Node& v = e.value;
    if (k == "type") {
      if (!expect(v, NodeType::String, path)) return;
      if (auto t = type_of(v.text)) {
        s.type = *t;
      } else {
        error(kRuleInvalidSchema, v.pos, path,
              "unknown type \"" + v.text + "\" (object, array, string, integer, number or boolean)");
      }
    } else if (k == "format") {
      if (!expect(v, NodeType::String, path)) return;
      s.format_name = v.text;
      s.format = format_of(v.text);
    } else if (k == "description" || k == "title") {
      expect(v, NodeType::String, path);
    } else if (k == "example" || k == "externalDocs") {
      // documentation only
    } else if (k == "default") {
      s.default_value = doc::to_ordered_json(v);
    } else if (k == "maximum") {
      s.maximum = number(v, path);
    } else if (k == "minimum") {
      s.minimum = number(v, path);
    } else if (k == "multipleOf") {
      s.multiple_of = number(v, path);
      if (s.multiple_of && !(*s.multiple_of > 0)) {
        error(kRuleInvalidSchema, v.pos, path, "must be greater than 0");
        s.multiple_of.reset();
      }
    } else if (k == "exclusiveMaximum") {
      s.exclusive_maximum = flag(v, path);
    } else if (k == "exclusiveMinimum") {
      s.exclusive_minimum = flag(v, path);
    } else if (k == "maxLength") {
      s.max_length = count(v, path);
    } else if (k == "minLength") {
      s.min_length = count(v, path);
    } else if (k == "maxItems") {
      s.max_items = count(v, path);
    } else if (k == "minItems") {
      s.min_items = count(v, path);
    } else if (k == "maxProperties") {
      s.max_properties = count(v, path);
    } else if (k == "minProperties") {
      s.min_properties = count(v, path);
    } else if (k == "pattern") {
      if (!expect(v, NodeType::String, path)) return;
      Pattern p = Pattern::compile(v.text);
      if (p.status() == Pattern::Status::Invalid) {
        error(kRuleInvalidSchema, v.pos, path, "not a valid RE2 regular expression: " + p.problem());
        return;
      }
      s.pattern = std::move(p);
    } else if (k == "uniqueItems") {
      if (flag(v, path)) {
        error(kRuleUnsupportedKeyword, v.pos, path,
              "uniqueItems: true is forbidden in apiextensions.k8s.io/v1 (use x-kubernetes-list-type: set)");
      }
    } else if (k == "enum") {
      if (!expect(v, NodeType::Sequence, path)) return;
      for (const auto& item : v.items) s.enumeration.push_back(doc::to_ordered_json(item));
    } else if (k == "required") {
      s.required = strings(v, path);
    } else if (k == "items") {
      if (v.type == NodeType::Sequence) {
        error(kRuleUnsupportedKeyword, v.pos, path, "items must be one schema (lists of schemas are forbidden)");
        return;
      }
      s.items = std::make_unique<Schema>(compile(v, path, true));
    } else if (k == "allOf") {
      s.all_of = list(v, path);
    } else if (k == "anyOf") {
      s.any_of = list(v, path);
    } else if (k == "oneOf") {
      s.one_of = list(v, path);
    } else if (k == "not") {
      s.not_schema = std::make_unique<Schema>(compile(v, path, false));
    } else if (k == "properties") {
      if (!expect(v, NodeType::Mapping, path)) return;
      for (const auto& p : v.entries) {
        s.properties.push_back({p.key, std::make_unique<Schema>(compile(p.value, path + "." + p.key, structural))});
      }
    } else if (k == "additionalProperties") {
      if (v.type == NodeType::Bool) {
        (v.boolean ? s.additional_allowed : s.additional_forbidden) = true;
      } else {
        s.additional = std::make_unique<Schema>(compile(v, path, structural));
      }
    } else if (k == "nullable") {
      s.nullable = flag(v, path);
    } else if (k == "x-kubernetes-preserve-unknown-fields") {
      s.preserve_unknown_fields = flag(v, path);
    } else if (k == "x-kubernetes-embedded-resource") {
      s.embedded_resource = flag(v, path);
    } else if (k == "x-kubernetes-int-or-string") {
      s.int_or_string = flag(v, path);
    } else if (k == "x-kubernetes-list-type") {
      if (!expect(v, NodeType::String, path)) return;
      if (v.text == "set") {
        s.list_type = ListType::Set;
      } else if (v.text == "map") {
        s.list_type = ListType::Map;
      } else if (v.text != "atomic") {
        error(kRuleInvalidSchema, v.pos, path, "must be atomic, set or map, not \"" + v.text + "\"");
      }
    } else if (k == "x-kubernetes-list-map-keys") {
      s.list_map_keys = strings(v, path);
    } else if (k == "x-kubernetes-map-type") {
      expect(v, NodeType::String, path);  // granular or atomic: how server-side apply merges
    } else if (k == "x-kubernetes-validations") {
      validations(s, v, path);
    } else if (k == "$ref" || k == "$schema" || k == "id" || k == "definitions" || k == "dependencies" ||
               k == "additionalItems" || k == "patternProperties") {
      error(kRuleUnsupportedKeyword, e.key_pos, path, k + " is forbidden in apiextensions.k8s.io/v1 schemas");
    } else {
      error(kRuleUnsupportedKeyword, e.key_pos, path, "unknown keyword " + k);
    }
  }

  void validations(Schema& s, const Node& v, const std::string& path) {
    if (!expect(v, NodeType::Sequence, path)) return;
    for (std::size_t i = 0; i < v.items.size(); ++i) {
      const Node& item = v.items[i];
      const std::string at = path + "[" + std::to_string(i) + "]";
      if (!expect(item, NodeType::Mapping, at)) continue;
      const Node* rule = item.find("rule");
      if (rule == nullptr || rule->type != NodeType::String) {
        error(kRuleInvalidSchema, item.pos, at + ".rule", "every validation needs a rule (a CEL expression)");
        continue;
      }
      // A transition rule compares with the object before an update (oldSelf).
      s.validations.push_back({rule->text, std::string(item.string_at("message")),
                               rule->text.find("oldSelf") != std::string::npos});
    }
  }

  void finish(Schema& s, const Node& node, const std::string& path, bool structural) {
    std::sort(s.properties.begin(), s.properties.end(),
              [](const Property& a, const Property& b) { return a.name < b.name; });
    for (std::size_t i = 1; i < s.properties.size(); ++i) {
      if (s.properties[i].name == s.properties[i - 1].name) {
        error(kRuleInvalidSchema, node.pos, path + ".properties." + s.properties[i].name, "property declared twice");
      }
    }
    if (structural && s.type == Type::Unset && !s.int_or_string && !s.preserve_unknown_fields) {
      error(kRuleNotStructural, node.pos, path,
            "a structural schema needs a type here (unless x-kubernetes-int-or-string or "
            "x-kubernetes-preserve-unknown-fields is true)");
    }
    if (s.list_type == ListType::Map && s.list_map_keys.empty()) {
      error(kRuleInvalidSchema, node.pos, path, "x-kubernetes-list-type: map needs x-kubernetes-list-map-keys");
    }
    if (s.list_type == ListType::Map && s.items != nullptr) {
      // The API server refuses keys that an item may lack: each must be a scalar property
      // of the items, required or defaulted.
      for (const auto& key : s.list_map_keys) {
        const Schema* field = s.items->property(key);
        const std::string at = path + ".x-kubernetes-list-map-keys";
        if (field == nullptr) {
          error(kRuleInvalidSchema, node.pos, at, "map key \"" + key + "\" is not a property of the items");
        } else if (field->type == Type::Object || field->type == Type::Array) {
          error(kRuleInvalidSchema, node.pos, at, "map key \"" + key + "\" must be a scalar");
        } else if (!field->default_value && std::find(s.items->required.begin(), s.items->required.end(), key) ==
                                                s.items->required.end()) {
          error(kRuleInvalidSchema, node.pos, at,
                "map key \"" + key +
                    "\": this property is in x-kubernetes-list-map-keys, so it must have a default or be a "
                    "required property");
        }
      }
    }
    if (s.list_type != ListType::Atomic && s.type != Type::Array) {
      error(kRuleInvalidSchema, node.pos, path, "x-kubernetes-list-type applies to arrays only");
    }
  }

  const CompileContext& ctx_;
};

}  // namespace

const Schema* Schema::property(std::string_view name) const {
  const auto it = std::lower_bound(properties.begin(), properties.end(), name,
                                   [](const Property& p, std::string_view n) { return p.name < n; });
  return it != properties.end() && it->name == name ? it->schema.get() : nullptr;
}

const Schema* Schema::field(std::string_view key) const {
  if (const Schema* p = property(key)) return p;
  return additional.get();
}

Schema compile(const doc::Node& node, const std::string& path, const CompileContext& context) {
  return Compiler(context).compile(node, path, true);
}

std::size_t count_cel_rules(const Schema& s) {
  std::size_t n = s.validations.size();
  for (const auto& p : s.properties) n += count_cel_rules(*p.schema);
  for (const auto* child : {s.additional.get(), s.items.get(), s.not_schema.get()}) {
    if (child != nullptr) n += count_cel_rules(*child);
  }
  for (const auto* group : {&s.all_of, &s.any_of, &s.one_of}) {
    for (const auto& child : *group) n += count_cel_rules(child);
  }
  return n;
}

}  // namespace gpubank::schema::detail
