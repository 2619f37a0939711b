// gpubank schema validate: checks Kubernetes objects in files against the OpenAPI schemas
// of CRDs (--crds) and the built-in core kinds, as the API server would before storing
// them, and prints every violation with file, line, column and field path.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <charconv>
#include <iostream>
#include <memory>

#include "cli/command.hpp"
#include "document/loader.hpp"
#include "schema/schema_set.hpp"

namespace gpubank::cli {
namespace {

using Json = nlohmann::ordered_json;

struct SchemaValidateOptions {
  std::vector<std::string> crds;
  std::vector<std::string> files;
  Format format = Format::Text;
};

// One object of the input and what validation found.
struct Checked {
  std::string file;
  int document = 0;
  SourcePos pos;
  std::string api_version, kind, ns, name;
  std::vector<std::pair<schema::Violation, SourcePos>> violations;
  std::vector<schema::NotChecked> not_checked;
  std::size_t cel_rules = 0;  // of not_checked
};

std::string string_at(const Json& object, const char* key) {
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// The position of a field path ("spec.groups[0].rules[1]", "metadata.labels[a.b/c]") in a
// document: of the deepest node the path reaches (the parent of a missing field).
SourcePos locate(const doc::Node& root, std::string_view path) {
  const doc::Node* node = &root;
  std::size_t i = 0;
  while (i < path.size() && node != nullptr) {
    std::string_view segment;
    if (path[i] == '[') {
      const std::size_t close = path.find(']', i);
      if (close == std::string_view::npos) break;
      segment = path.substr(i + 1, close - i - 1);
      i = close + 1;
    } else {
      if (path[i] == '.') ++i;
      const std::size_t end = path.find_first_of(".[", i);
      segment = path.substr(i, end == std::string_view::npos ? std::string_view::npos : end - i);
      i = end == std::string_view::npos ? path.size() : end;
    }
    const doc::Node* next = nullptr;
    if (node->type == doc::NodeType::Sequence) {
      std::size_t index = 0;
      const auto [ptr, ec] = std::from_chars(segment.data(), segment.data() + segment.size(), index);
      if (ec == std::errc() && ptr == segment.data() + segment.size() && index < node->items.size()) {
        next = &node->items[index];
      }
    } else {
      next = node->find(segment);
    }
    if (next == nullptr) break;
    node = next;
  }
  return node->pos;
}

// Keys written twice: kubectl's strict decoding refuses them ("duplicate field"), and the
// JSON the validator sees keeps only the last.
void find_duplicates(const doc::Node& node, const std::string& path,
                     std::vector<std::pair<schema::Violation, SourcePos>>& out) {
  if (node.type == doc::NodeType::Sequence) {
    for (std::size_t i = 0; i < node.items.size(); ++i) {
      find_duplicates(node.items[i], path + "[" + std::to_string(i) + "]", out);
    }
    return;
  }
  for (std::size_t i = 0; i < node.entries.size(); ++i) {
    const auto& e = node.entries[i];
    const std::string child = path.empty() ? e.key : path + "." + e.key;
    for (std::size_t j = 0; j < i; ++j) {
      if (node.entries[j].key == e.key) {
        out.push_back({{child, "duplicate-field", "duplicate field \"" + child + "\""}, e.key_pos});
        break;
      }
    }
    find_duplicates(e.value, child, out);
  }
}

Checked check(const schema::SchemaSet& set, const doc::Document& d, const doc::Node& node) {
  Checked c;
  c.file = d.file;
  c.document = d.index;
  c.pos = node.pos;
  const Json object = doc::to_ordered_json(node);
  if (object.is_object()) {
    c.api_version = string_at(object, "apiVersion");
    c.kind = string_at(object, "kind");
    if (const auto meta = object.find("metadata"); meta != object.end() && meta->is_object()) {
      c.ns = string_at(*meta, "namespace");
      c.name = string_at(*meta, "name");
    }
  }
  find_duplicates(node, "", c.violations);
  schema::Result result = set.validate(object);
  for (auto& v : result.violations) {
    const SourcePos pos = locate(node, v.path);
    c.violations.push_back({std::move(v), pos});
  }
  c.cel_rules = result.cel_rules_not_checked();
  c.not_checked = std::move(result.not_checked);
  return c;
}

std::string object_name(const Checked& c) {
  return (c.kind.empty() ? "?" : c.kind) + "/" + (c.ns.empty() ? "" : c.ns + "/") + (c.name.empty() ? "?" : c.name);
}

Diagnostic to_diagnostic(const Checked& c, const schema::Violation& v, SourcePos pos) {
  return Diagnostic{Severity::Error, v.rule, c.file, pos, c.kind, c.name, v.path, v.message};
}

// The object a violation or an unchecked rule is about.
Json located(const Checked& c) {
  return {{"file", c.file}, {"document", c.document}, {"kind", c.kind}, {"name", c.name}};
}

Json structured(const std::vector<Checked>& checked, const Diagnostics& errors) {
  Json objects = Json::array();
  Json violations = Json::array();
  Json not_checked = Json::array();
  std::size_t valid = 0;
  std::size_t cel = 0;
  for (const auto& c : checked) {
    objects.push_back({{"file", c.file},
                       {"document", c.document},
                       {"line", c.pos.line},
                       {"apiVersion", c.api_version},
                       {"kind", c.kind},
                       {"namespace", c.ns},
                       {"name", c.name},
                       {"valid", c.violations.empty()},
                       {"celRulesNotChecked", c.cel_rules}});
    valid += c.violations.empty() ? 1 : 0;
    cel += c.cel_rules;
    for (const auto& [v, pos] : c.violations) {
      Json entry = located(c);
      entry.update({{"line", pos.line}, {"column", pos.column}, {"path", v.path}, {"rule", v.rule}, {"message", v.message}});
      violations.push_back(std::move(entry));
    }
    for (const auto& n : c.not_checked) {
      Json entry = located(c);
      entry.update({{"path", n.path}, {"what", n.what}, {"rule", n.rule}, {"reason", n.reason}});
      not_checked.push_back(std::move(entry));
    }
  }
  Json input_errors = Json::array();
  for (const auto& d : errors) {
    input_errors.push_back({{"file", d.file}, {"line", d.pos.line}, {"column", d.pos.column}, {"path", d.path},
                            {"rule", d.rule}, {"message", d.message}});
  }
  return {{"summary",
           {{"objects", checked.size()},
            {"valid", valid},
            {"invalid", checked.size() - valid},
            {"violations", violations.size()},
            {"celRulesNotChecked", cel},
            {"otherChecksNotEvaluated", not_checked.size() - cel},
            {"inputErrors", input_errors.size()}}},
          {"inputErrors", input_errors},
          {"objects", objects},
          {"violations", violations},
          {"notChecked", not_checked}};
}

std::string count(std::size_t n, std::string_view noun) {
  return std::to_string(n) + " " + std::string(noun) + (n == 1 ? "" : "s");
}

void print_text(const std::vector<Checked>& checked, const Diagnostics& errors) {
  for (const auto& d : errors) std::cout << d.to_string() << '\n';
  std::size_t valid = 0;
  std::size_t violations = 0;
  std::size_t cel = 0;
  std::size_t other = 0;
  for (const auto& c : checked) {
    const std::size_t c_cel = c.cel_rules;
    std::cout << (c.violations.empty() ? "valid    " : "invalid  ") << object_name(c) << "  " << c.file << ':'
              << c.pos.line;
    if (c_cel > 0) std::cout << "  (" << count(c_cel, "CEL rule") << " not checked)";
    std::cout << '\n';
    for (const auto& [v, pos] : c.violations) std::cout << "  " << to_diagnostic(c, v, pos).to_string() << '\n';
    valid += c.violations.empty() ? 1 : 0;
    violations += c.violations.size();
    cel += c_cel;
    other += c.not_checked.size() - c_cel;
  }
  std::cout << '\n'
            << count(checked.size(), "object") << ": " << valid << " valid, " << checked.size() - valid << " invalid; "
            << count(violations, "violation") << "; " << count(cel, "CEL rule") << " and " << count(other, "other check")
            << " not evaluated (-o yaml lists them)\n";
}

int run_schema_validate(const SchemaValidateOptions& opt) {
  schema::SchemaSet set;
  Diagnostics errors;
  for (const auto& dir : opt.crds) set.load(dir, errors);
  std::vector<doc::Document> docs;
  doc::load_paths(opt.files, docs, errors);
  std::vector<Checked> checked;
  for (const auto& d : docs) {
    const doc::Node* items = d.root.find("items");
    const bool list = d.root.string_at("apiVersion") == "v1" && d.root.string_at("kind") == "List" &&
                      items != nullptr && items->type == doc::NodeType::Sequence;
    if (!list) {
      checked.push_back(check(set, d, d.root));
      continue;
    }
    for (const auto& item : items->items) checked.push_back(check(set, d, item));  // kubectl get -o yaml
  }
  if (opt.format == Format::Text) {
    print_text(checked, errors);
  } else {
    print_structured(std::cout, structured(checked, errors), opt.format);
  }
  const bool clean = errors.empty() && std::all_of(checked.begin(), checked.end(),
                                                   [](const Checked& c) { return c.violations.empty(); });
  return clean ? 0 : 1;
}

Command add_schema_validate_command(CLI::App& schema) {
  auto opt = std::make_shared<SchemaValidateOptions>();
  CLI::App* cmd = schema.add_subcommand(
      "validate",
      "Check Kubernetes objects (files and directories: .yaml, .yml, .json; YAML streams; v1 Lists) against the "
      "OpenAPI schemas of CustomResourceDefinitions and the built-in PriorityClass and ConfigMap, as the API server "
      "would with strict field validation. Exits 0 when every object is valid, 1 on violations or unreadable input, "
      "2 on usage errors.");
  cmd->footer(
      "Checked: types, required fields, enums, patterns, bounds, lengths, formats, unknown fields, list-type "
      "set/map uniqueness, embedded resources and metadata (name, namespace, labels, annotations). "
      "x-kubernetes-validations (CEL) rules are not evaluated: each object says how many applied to it, and "
      "-o json|yaml lists them. See docs/schema-validation.md.");
  cmd->add_option("--crds", opt->crds, "a CRD file or directory (repeatable), e.g. ../shared/crds")
      ->allow_extra_args(false);
  cmd->add_option("files", opt->files, "files and directories with the objects to check")->required();
  add_output_option(*cmd, opt->format);
  return {cmd, [opt] { return run_schema_validate(*opt); }};
}

}  // namespace

Command add_schema_command(CLI::App& app) {
  CLI::App* group = app.add_subcommand("schema", "Check objects against Kubernetes OpenAPI schemas (CRDs)");
  group->require_subcommand(1);
  const std::vector<Command> commands{add_schema_validate_command(*group)};
  return {group, [commands] {
            for (const auto& c : commands) {
              if (c.app->parsed()) return c.action();
            }
            return 2;
          }};
}

}  // namespace gpubank::cli
