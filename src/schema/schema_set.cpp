#include "schema/schema_set.hpp"

#include <algorithm>
#include <map>
#include <stdexcept>

#include "document/loader.hpp"
#include "document/reader.hpp"
#include "schema/builtin.hpp"
#include "schema/compiled.hpp"
#include "schema/validator.hpp"

namespace gpubank::schema {
namespace {

using detail::Schema;

struct Entry {
  KindInfo info;
  Schema root;
  detail::MetaRules meta;
  void (*check)(const Json&, std::vector<Violation>&) = nullptr;
};

std::string key_of(std::string_view api_version, std::string_view kind) {
  return std::string(api_version) + ' ' + std::string(kind);
}

// A built-in schema text, compiled; a mistake in it is a bug, not an input error.
Schema compile_builtin(std::string_view yaml, std::string_view what) {
  std::vector<doc::Document> docs;
  Diagnostics diagnostics;
  doc::read_yaml(yaml, "built-in " + std::string(what), docs, diagnostics);
  if (docs.size() == 1 && !has_errors(diagnostics)) {
    Schema s = detail::compile(docs[0].root, "", {docs[0].file, "", "", &diagnostics});
    if (!has_errors(diagnostics)) return s;
  }
  throw std::logic_error("built-in schema " + std::string(what) + ": " +
                         (diagnostics.empty() ? "not one document" : diagnostics[0].to_string()));
}

void report(Diagnostics& out, std::string_view rule, const doc::Document& d, SourcePos pos, std::string name,
            std::string path, std::string message) {
  Diagnostic diag;
  diag.rule = rule;
  diag.file = d.file;
  diag.pos = pos;
  diag.kind = "CustomResourceDefinition";
  diag.name = std::move(name);
  diag.path = std::move(path);
  diag.message = std::move(message);
  out.push_back(std::move(diag));
}

// Hostile input is refused before the walk: an iterative pass over the whole value, so
// neither deep nesting nor size can reach a recursive step.
std::optional<Violation> check_limits(const Json& object, const Limits& limits) {
  struct Item {
    const Json* value;
    std::size_t depth;
  };
  std::vector<Item> stack{{&object, 1}};
  std::size_t bytes = 0;  // about the size of the value as compact JSON
  while (!stack.empty()) {
    const Item item = stack.back();
    stack.pop_back();
    if (item.depth > limits.max_depth) {
      return Violation{"", "too-deep",
                       "Too deep: objects and lists are nested more than " + std::to_string(limits.max_depth) + " levels"};
    }
    const Json& v = *item.value;
    if (v.is_object()) {
      bytes += 2;
      for (const auto& [k, child] : v.items()) {
        bytes += k.size() + 4;
        stack.push_back({&child, item.depth + 1});
      }
    } else if (v.is_array()) {
      bytes += 2 + v.size();
      for (const auto& child : v) stack.push_back({&child, item.depth + 1});
    } else if (v.is_string()) {
      bytes += v.get_ref<const std::string&>().size() + 2;
    } else {
      bytes += 8;
    }
    if (bytes > limits.max_bytes) {
      return Violation{"", "too-large",
                       "Too large: the object is more than " + std::to_string(limits.max_bytes) + " bytes as JSON"};
    }
  }
  return std::nullopt;
}

}  // namespace

std::size_t Result::cel_rules_not_checked() const {
  return static_cast<std::size_t>(std::count_if(not_checked.begin(), not_checked.end(), [](const NotChecked& n) {
    return n.what == "x-kubernetes-validations";
  }));
}

struct SchemaSet::Impl {
  Limits limits;
  Schema object_meta;
  std::map<std::string, Entry, std::less<>> kinds;

  std::size_t add_document(const doc::Document& d, Diagnostics& diagnostics);
};

std::size_t SchemaSet::Impl::add_document(const doc::Document& d, Diagnostics& diagnostics) {
  const doc::Node& root = d.root;
  const std::string_view api_version = root.string_at("apiVersion");
  const std::string_view kind = root.string_at("kind");
  const doc::Node* metadata = root.find("metadata");
  const std::string name(metadata != nullptr ? metadata->string_at("name") : "");
  if (api_version != "apiextensions.k8s.io/v1" || kind != "CustomResourceDefinition") {
    std::string message = "not an apiextensions.k8s.io/v1 CustomResourceDefinition (apiVersion " +
                          std::string(api_version.empty() ? "missing" : api_version) + ", kind " +
                          std::string(kind.empty() ? "missing" : kind) + ")";
    if (api_version == "apiextensions.k8s.io/v1beta1") message += "; v1beta1 CRDs were removed in Kubernetes 1.22";
    report(diagnostics, kRuleNotCrd, d, root.pos, name, "", std::move(message));
    return 0;
  }
  const doc::Node* spec = root.find("spec");
  const doc::Node* names = spec != nullptr ? spec->find("names") : nullptr;
  const doc::Node* versions = spec != nullptr ? spec->find("versions") : nullptr;
  const std::string group(spec != nullptr ? spec->string_at("group") : "");
  const std::string crd_kind(names != nullptr ? names->string_at("kind") : "");
  if (group.empty() || crd_kind.empty() || versions == nullptr || versions->type != doc::NodeType::Sequence) {
    report(diagnostics, kRuleNotCrd, d, spec != nullptr ? spec->pos : root.pos, name, "spec",
           "a CustomResourceDefinition needs spec.group, spec.names.kind and spec.versions");
    return 0;
  }
  const bool namespaced = spec->string_at("scope") == "Namespaced";
  std::size_t added = 0;
  for (std::size_t i = 0; i < versions->items.size(); ++i) {
    const doc::Node& version = versions->items[i];
    const std::string path = "spec.versions[" + std::to_string(i) + "]";
    const doc::Node* served = version.find("served");
    if (served != nullptr && served->type == doc::NodeType::Bool && !served->boolean) continue;
    const std::string version_name(version.string_at("name"));
    const doc::Node* schema = version.find("schema");
    const doc::Node* openapi = schema != nullptr ? schema->find("openAPIV3Schema") : nullptr;
    if (version_name.empty() || openapi == nullptr) {
      report(diagnostics, kRuleNoSchema, d, version.pos, name, path + ".schema.openAPIV3Schema",
             "served version " + (version_name.empty() ? "(unnamed)" : version_name) +
                 " has no schema.openAPIV3Schema to validate against");
      continue;
    }
    const std::size_t errors_before = diagnostics.size();
    Schema compiled =
        detail::compile(*openapi, path + ".schema.openAPIV3Schema", {d.file, "CustomResourceDefinition", name, &diagnostics});
    if (diagnostics.size() != errors_before) continue;  // the API server would refuse this CRD
    const std::string api = group + "/" + version_name;
    const std::string key = key_of(api, crd_kind);
    if (const auto it = kinds.find(key); it != kinds.end()) {
      report(diagnostics, kRuleDuplicateCrd, d, version.pos, name, path,
             api + " " + crd_kind + " is already defined by " + it->second.info.source);
      continue;
    }
    Entry entry;
    entry.info = {api, crd_kind, d.file, namespaced, detail::count_cel_rules(compiled)};
    entry.root = std::move(compiled);
    entry.meta = detail::meta_rules(group, crd_kind, namespaced);
    kinds.emplace(key, std::move(entry));
    ++added;
  }
  return added;
}

SchemaSet::SchemaSet(Limits limits) : impl_(std::make_unique<Impl>()) {
  impl_->limits = limits;
  impl_->object_meta = compile_builtin(detail::object_meta_schema(), "ObjectMeta");
  for (const auto& b : detail::builtin_kinds()) {
    Entry entry;
    entry.root = compile_builtin(b.schema, b.kind);
    entry.info = {std::string(b.api_version), std::string(b.kind), "built-in", b.namespaced, 0};
    const std::size_t slash = b.api_version.find('/');
    const std::string_view group = slash == std::string_view::npos ? "" : b.api_version.substr(0, slash);
    entry.meta = detail::meta_rules(group, b.kind, b.namespaced);
    entry.check = b.check;
    impl_->kinds.emplace(key_of(b.api_version, b.kind), std::move(entry));
  }
}

SchemaSet::~SchemaSet() = default;
SchemaSet::SchemaSet(SchemaSet&&) noexcept = default;
SchemaSet& SchemaSet::operator=(SchemaSet&&) noexcept = default;

std::size_t SchemaSet::load(const std::string& path, Diagnostics& diagnostics) {
  std::vector<doc::Document> docs;
  doc::ReadLimits limits;
  limits.max_bytes = std::size_t{64} << 20;  // generated CRDs of pod-embedding kinds reach megabytes
  limits.max_nodes = 20'000'000;
  doc::load_paths({path}, docs, diagnostics, limits);
  std::size_t added = 0;
  for (const auto& d : docs) added += impl_->add_document(d, diagnostics);
  return added;
}

std::size_t SchemaSet::add_crd(const Json& crd, const std::string& source, Diagnostics& diagnostics) {
  doc::Document d;
  d.file = source;
  d.root = doc::from_json(nlohmann::json::parse(crd.dump(-1, ' ', false, Json::error_handler_t::replace)));
  return impl_->add_document(d, diagnostics);
}

bool SchemaSet::contains(std::string_view api_version, std::string_view kind) const {
  return impl_->kinds.contains(key_of(api_version, kind));
}

std::vector<KindInfo> SchemaSet::kinds() const {
  std::vector<KindInfo> out;
  out.reserve(impl_->kinds.size());
  for (const auto& [key, entry] : impl_->kinds) out.push_back(entry.info);
  return out;
}

Result SchemaSet::validate(const Json& object) const {
  Result result;
  if (auto too_big = check_limits(object, impl_->limits)) {
    result.violations.push_back(std::move(*too_big));
    return result;
  }
  if (!object.is_object()) {
    result.violations.push_back({"", "type", "Invalid value: \"" + std::string(detail::json_type(object)) +
                                                 "\": a Kubernetes object must be of type object"});
    return result;
  }
  std::string fields[2];
  const char* names[2] = {"apiVersion", "kind"};
  for (int i = 0; i < 2; ++i) {
    const auto it = object.find(names[i]);
    if (it == object.end() || it->is_null()) {
      result.violations.push_back({names[i], "required", "Required value"});
    } else if (!it->is_string() || it->get_ref<const std::string&>().empty()) {
      result.violations.push_back({names[i], "type", "Invalid value: " + detail::preview(*it) + ": must be a non-empty string"});
    } else {
      fields[i] = it->get<std::string>();
    }
  }
  if (!result.violations.empty()) return result;
  const auto it = impl_->kinds.find(key_of(fields[0], fields[1]));
  if (it == impl_->kinds.end()) {
    std::string known;
    for (const auto& [key, entry] : impl_->kinds) {
      if (entry.info.kind == fields[1]) known += (known.empty() ? "" : ", ") + entry.info.api_version;
    }
    if (known.empty()) {
      result.violations.push_back({"kind", "unknown-kind",
                                   "no schema for kind " + fields[1] + " in " + fields[0] + " (load its CRD)"});
    } else {
      result.violations.push_back({"apiVersion", "unknown-kind",
                                   "no schema for " + fields[0] + " " + fields[1] + " (" + fields[1] +
                                       " has schemas for " + known + ")"});
    }
    return result;
  }
  const Entry& entry = it->second;
  detail::Validator(impl_->object_meta, result).resource(entry.root, object, entry.meta);
  if (entry.check != nullptr) entry.check(object, result.violations);
  return result;
}

}  // namespace gpubank::schema
