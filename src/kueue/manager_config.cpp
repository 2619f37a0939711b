#include "kueue/manager_config.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "document/reader.hpp"
#include "kueue/decode.hpp"
#include "kueue/reader.hpp"

namespace gpubank::kueue::detail {
namespace {

constexpr std::string_view kGroup = "config.kueue.x-k8s.io/";
constexpr std::string_view kConfigMapKey = "controller_manager_config.yaml";

void not_modelled(Reader& r, const doc::Node& n, const std::string& path, std::string_view what) {
  r.report(kRuleConfigNotModelled, n.pos, path, std::string(what), Severity::Warning);
}

// pkg/config validateFairSharing: the strategies must be one of three lists.
std::optional<std::vector<twin::FairSharingStrategy>> read_strategies(Reader& r, const doc::Node* n,
                                                                       const std::string& path) {
  std::vector<std::string> names;
  const doc::Node* list = list_node(r, n, path, 0, -1);
  if (list == nullptr) return std::nullopt;
  for (std::size_t i = 0; i < list->items.size(); ++i) {
    auto v = read_enum(r, &list->items[i], index(path, i), {"LessThanOrEqualToFinalShare", "LessThanInitialShare"});
    if (!v) return std::nullopt;
    names.push_back(std::move(*v));
  }
  using S = twin::FairSharingStrategy;
  if (names == std::vector<std::string>{"LessThanOrEqualToFinalShare"}) return std::vector<S>{S::LessThanOrEqualToFinalShare};
  if (names == std::vector<std::string>{"LessThanInitialShare"}) return std::vector<S>{S::LessThanInitialShare};
  if (names == std::vector<std::string>{"LessThanOrEqualToFinalShare", "LessThanInitialShare"}) {
    return std::vector<S>{S::LessThanOrEqualToFinalShare, S::LessThanInitialShare};
  }
  if (names.empty()) {
    r.required(n->pos, path, "must be specified");
    return std::nullopt;
  }
  std::string shown = "[]v1beta2.PreemptionStrategy{";
  for (std::size_t i = 0; i < names.size(); ++i) shown += (i > 0 ? ", " : "") + go_quote(names[i]);
  shown += "}";
  r.report(doc::kRuleInvalidEnum, n->pos, path,
           "Unsupported value: " + shown +
               ": supported values: \"LessThanOrEqualToFinalShare\", \"LessThanInitialShare\", "
               "\"LessThanOrEqualToFinalShare,LessThanInitialShare\"");
  return std::nullopt;
}

void read_fair_sharing(Reader& r, const doc::Node& node, bool v1beta1, ManagerConfiguration& config) {
  MapReader fs(r, node, "fairSharing");
  if (!fs.ok()) return;
  bool enabled = true;  // v1beta2: present means on
  if (v1beta1) enabled = read_bool(r, fs.get("enable"), fs.child("enable")).value_or(false);
  const doc::Node* strategies = fs.get("preemptionStrategies");
  if (strategies == nullptr) {
    if (v1beta1) {
      // v1beta1's defaulting: both strategies when fair sharing is enabled without any.
      if (enabled) {
        config.fair_sharing = std::vector<twin::FairSharingStrategy>{twin::FairSharingStrategy::LessThanOrEqualToFinalShare,
                                                                     twin::FairSharingStrategy::LessThanInitialShare};
      }
    } else {
      fs.missing("preemptionStrategies", "must be specified");
    }
  } else if (auto s = read_strategies(r, strategies, fs.child("preemptionStrategies")); s && enabled) {
    config.fair_sharing = std::move(*s);
  }
  fs.finish();
}

void read_feature_gates(Reader& r, const doc::Node& node, ManagerConfiguration& config) {
  if (node.type != doc::NodeType::Mapping) {
    r.type_error(node, "featureGates", "object");
    return;
  }
  std::map<std::string, bool> gates;
  for (const auto& e : node.entries) {
    const std::string path = map_key("featureGates", e.key);
    r.record(path, e.value.pos);
    if (auto v = read_bool(r, &e.value, path)) {
      if (!gates.emplace(e.key, *v).second) {
        r.report(doc::kRuleDuplicateField, e.key_pos, path, "duplicate field " + go_quote(path));
      }
    }
  }
  config.feature_gates = std::move(gates);
}

void read_transformation(Reader& r, const doc::Node& node, const std::string& path, ManagerConfiguration& config) {
  MapReader t(r, node, path);
  if (!t.ok()) return;
  ResourceTransformation out;
  if (auto v = read_string(r, t.get("input"), t.child("input"))) {
    out.input = std::move(*v);
  } else if (t.get("input") == nullptr) {
    t.missing("input");
  }
  // validateResourceTransformations: Retain or Replace (Retain when unset, by defaulting).
  if (auto v = read_enum(r, t.get("strategy"), t.child("strategy"), {"Retain", "Replace"})) out.replace = *v == "Replace";
  if (auto v = read_string(r, t.get("multiplyBy"), t.child("multiplyBy"))) out.multiply_by = std::move(*v);
  if (auto v = read_quantity_map(r, t.get("outputs"), t.child("outputs"))) out.outputs = std::move(*v);
  t.finish();
  if (out.input.empty()) return;
  const bool seen = std::any_of(config.transformations.begin(), config.transformations.end(),
                                [&](const ResourceTransformation& x) { return x.input == out.input; });
  if (seen) {
    r.report(kRuleDuplicateValue, t.get("input")->pos, t.child("input"), "Duplicate value: " + go_quote(out.input));
    return;
  }
  config.transformations.push_back(std::move(out));
}

void read_resources(Reader& r, const doc::Node& node, bool v1beta1, ManagerConfiguration& config) {
  MapReader res(r, node, "resources");
  if (!res.ok()) return;
  config.exclude_resource_prefixes =
      read_strings(r, res.get("excludeResourcePrefixes"), res.child("excludeResourcePrefixes"));
  if (const doc::Node* list = list_node(r, res.get("transformations"), res.child("transformations"), 0, -1)) {
    for (std::size_t i = 0; i < list->items.size(); ++i) {
      read_transformation(r, list->items[i], index(res.child("transformations"), i), config);
    }
  }
  // validateQuotaCheckStrategy, which runs only while the QuotaCheckStrategy gate is on
  // (the default; the Configuration's own featureGates are read before resources).
  const bool gate_on = !config.feature_gates || !config.feature_gates->contains("QuotaCheckStrategy") ||
                       config.feature_gates->at("QuotaCheckStrategy");
  if (const doc::Node* n = v1beta1 ? nullptr : res.get("quotaCheckStrategy")) {  // v1beta2 only
    const std::string path = res.child("quotaCheckStrategy");
    auto v = gate_on ? read_enum(r, n, path, {"IgnoreUndeclared", "BlockUndeclared"}) : read_string(r, n, path);
    if (v && *v == "IgnoreUndeclared") {
      config.ignore_undeclared = true;
      if (gate_on && !config.exclude_resource_prefixes.empty()) {
        r.invalid(n->pos, path, go_quote(*v), "excludeResourcePrefixes is not allowed when quotaCheckStrategy is IgnoreUndeclared");
      }
    }
  }
  if (const doc::Node* n = res.get("deviceClassMappings")) {
    not_modelled(r, *n, res.child("deviceClassMappings"),
                 "not modelled: the twin reads no ResourceClaims, so DRA device classes count nothing");
  }
  res.finish();
}

bool read_configuration(const doc::Node& root, const Source& source, std::string config_map, ObjectSet& out,
                        Diagnostics& diagnostics) {
  const std::string api_version(root.string_at("apiVersion"));
  ManagerConfiguration config;
  config.config_map = std::move(config_map);
  doc::DecodeContext ctx(source.file, "Configuration", config.config_map, diagnostics);
  Reader r(ctx);
  const InFileOrder in_file_order(diagnostics);  // as for the other objects
  if (api_version != std::string(kGroup) + "v1beta1" && api_version != std::string(kGroup) + "v1beta2") {
    r.report(kRuleApiVersion, root.pos, "apiVersion",
             "unsupported apiVersion " + go_quote(api_version) +
                 " for Configuration: the twin reads config.kueue.x-k8s.io/v1beta1 and v1beta2");
    return false;
  }
  const bool v1beta1 = api_version.ends_with("v1beta1");
  // Strict, as the manager decodes its Configuration (serializer.EnableStrict): the fields
  // that do not touch admission are accepted unread, anything else is an unknown field.
  MapReader top(r, root, "");
  if (!top.ok()) return false;
  top.accept({"apiVersion", "kind", "namespace", "manageJobsWithoutQueueName", "managedJobsNamespaceSelector",
              "internalCertManagement", "clientConnection", "integrations", "multiKueue", "objectRetentionPolicies",
              "webhook", "leaderElection", "metrics", "health", "pprofBindAddress", "controller", "tls"});
  if (v1beta1) {
    top.accept({"queueVisibility"});
  } else {
    top.accept({"visibilityServer"});
  }
  if (const doc::Node* n = top.get("fairSharing")) read_fair_sharing(r, *n, v1beta1, config);
  if (const doc::Node* n = top.get("featureGates")) read_feature_gates(r, *n, config);
  if (const doc::Node* n = top.get("resources")) read_resources(r, *n, v1beta1, config);
  if (const doc::Node* n = top.get("waitForPodsReady")) {
    // v1beta1 has an enable switch; in v1beta2 the section's presence turns it on.
    const doc::Node* enable = n->type == doc::NodeType::Mapping ? n->find("enable") : nullptr;
    if (!v1beta1 || read_bool(r, enable, "waitForPodsReady.enable").value_or(false)) {
      not_modelled(r, *n, "waitForPodsReady",
                   "not modelled: the twin has no pods, so it never holds admission until a Workload's pods are ready "
                   "and never evicts on the timeout");
    }
  }
  if (const doc::Node* n = top.get("admissionFairSharing")) {
    not_modelled(r, *n, "admissionFairSharing",
                 "not modelled: the twin orders a ClusterQueue's Workloads by priority and creation, not by their "
                 "LocalQueues' usage");
  }
  top.finish();
  if (r.errors() > 0) return false;
  config.source = source;
  config.source.pos = root.pos;
  config.source.raw = root;
  out.configurations.push_back(std::move(config));
  return true;
}

}  // namespace

std::optional<bool> decode_manager_configuration(const doc::Node& root, const Source& source, ObjectSet& out,
                                                 Diagnostics& diagnostics) {
  const std::string_view kind = root.string_at("kind");
  const std::string_view api_version = root.string_at("apiVersion");
  if (kind == "Configuration") {
    if (!api_version.starts_with(kGroup)) return std::nullopt;
    return read_configuration(root, source, {}, out, diagnostics);
  }
  if (kind != "ConfigMap" || api_version != "v1") return std::nullopt;
  const doc::Node* data = root.find("data");
  const doc::Node* text = data != nullptr && data->type == doc::NodeType::Mapping ? data->find(kConfigMapKey) : nullptr;
  if (text == nullptr) return std::nullopt;
  const doc::Node* meta = root.find("metadata");
  std::string name = meta != nullptr ? std::string(meta->string_at("name")) : std::string();
  const std::string ns = meta != nullptr ? std::string(meta->string_at("namespace")) : std::string();
  if (!ns.empty()) name = ns + "/" + name;
  doc::DecodeContext ctx(source.file, "ConfigMap", name, diagnostics);
  Reader r(ctx);
  const std::string path = "data[" + std::string(kConfigMapKey) + "]";
  if (text->type != doc::NodeType::String) {
    r.type_error(*text, path, "string");
    return false;
  }
  // The embedded document's positions count from the start of the string; its findings
  // name the ConfigMap's file and key.
  const std::string file = source.file + " (ConfigMap " + name + ", " + std::string(kConfigMapKey) + ")";
  std::vector<doc::Document> documents;
  const std::size_t before = diagnostics.size();
  doc::read_yaml(text->text, file, documents, diagnostics);
  if (diagnostics.size() > before &&
      std::any_of(diagnostics.begin() + static_cast<long>(before), diagnostics.end(),
                  [](const Diagnostic& d) { return d.severity == Severity::Error; })) {
    return false;
  }
  if (documents.size() != 1 || documents.front().root.string_at("kind") != "Configuration") {
    r.report(doc::kRuleInvalidFormat, text->pos, path,
             "Invalid value: want one config.kueue.x-k8s.io Configuration document, found " +
                 std::to_string(documents.size()) + " document(s)" +
                 (documents.size() == 1 ? " of kind " + go_quote(documents.front().root.string_at("kind")) : ""));
    return false;
  }
  Source inner = source;
  inner.file = file;
  return read_configuration(documents.front().root, inner, name, out, diagnostics);
}

}  // namespace gpubank::kueue::detail
