#include "policy/policy_set.hpp"

#include <algorithm>

#include "document/loader.hpp"
#include "policy/decode.hpp"
#include "policy/rules.hpp"

namespace gpubank::policy {
namespace {

bool has_pod_spec(const doc::Node& n, int depth) {
  if (depth > 8) return false;
  if (n.type == doc::NodeType::Mapping) {
    if (const doc::Node* c = n.find("containers"); c != nullptr && c->type == doc::NodeType::Sequence) return true;
    return std::any_of(n.entries.begin(), n.entries.end(),
                       [&](const doc::Entry& e) { return has_pod_spec(e.value, depth + 1); });
  }
  if (n.type == doc::NodeType::Sequence) {
    return std::any_of(n.items.begin(), n.items.end(), [&](const doc::Node& i) { return has_pod_spec(i, depth + 1); });
  }
  return false;
}

// The API group of an apiVersion: "platform.gpubank.dev/v1alpha1" -> "platform.gpubank.dev",
// "v1" -> "" (the core group).
std::string_view api_group(std::string_view api_version) {
  const auto slash = api_version.find('/');
  return slash == std::string_view::npos ? std::string_view() : api_version.substr(0, slash);
}

bool is_ours(std::string_view group) {
  return group == kApiGroup || group == "gpubank.dev" || group.ends_with(".gpubank.dev");
}

}  // namespace

bool is_workload_kind(std::string_view group, std::string_view kind) {
  static constexpr std::pair<std::string_view, std::string_view> kinds[] = {
      {"serving.kserve.io", "InferenceService"}, {"serving.kserve.io", "LLMInferenceService"},
      {"ray.io", "RayJob"},                      {"ray.io", "RayService"},
      {"ray.io", "RayCluster"},                  {"leaderworkerset.x-k8s.io", "LeaderWorkerSet"},
  };
  for (const auto& [g, k] : kinds) {
    if (g == group && k == kind) return true;
  }
  return false;
}

bool is_workload(const doc::Node& root) {
  if (is_workload_kind(api_group(root.string_at("apiVersion")), root.string_at("kind"))) return true;
  const doc::Node* spec = root.find("spec");
  return spec != nullptr && has_pod_spec(*spec, 0);
}

void PolicySet::add(const doc::Node& root, const std::string& file, int document) {
  add_item(root, file, document, false);
}

void PolicySet::add_item(const doc::Node& root, const std::string& file, int document, bool inside_list) {
  ObjectEntry entry;
  entry.origin = Origin{file, root.pos, document};
  if (root.type != doc::NodeType::Mapping) {
    diagnostics_.push_back(Diagnostic{Severity::Error, std::string(rule::kWrongType), file, root.pos, {}, {}, {},
                                      "a document must be an object with apiVersion and kind, got " +
                                          std::string(doc::describe(root.type))});
    entries_.push_back(std::move(entry));
    return;
  }
  entry.api_version = root.string_at("apiVersion");
  entry.kind = root.string_at("kind");
  if (const doc::Node* meta = root.find("metadata")) {
    entry.name = meta->string_at("name");
    entry.namespace_ = meta->string_at("namespace");
  }
  if (entry.api_version.empty() || entry.kind.empty()) {
    diagnostics_.push_back(Diagnostic{Severity::Error, std::string(rule::kRequired), file, root.pos, entry.kind,
                                      entry.name, entry.api_version.empty() ? "apiVersion" : "kind",
                                      "every object needs a string apiVersion and kind"});
    entries_.push_back(std::move(entry));
    return;
  }
  if (entry.kind == "List" && entry.api_version == "v1" && !inside_list) {
    const doc::Node* items = root.find("items");
    if (items != nullptr && items->type == doc::NodeType::Sequence) {
      for (const auto& item : items->items) add_item(item, file, document, true);
    }
    return;
  }
  if (is_ours(api_group(entry.api_version))) {
    if (auto object = decode_policy(root, entry.origin, diagnostics_)) {
      entry.category = ObjectEntry::Category::Policy;
      entry.index = static_cast<int>(policies_.size());
      policies_.push_back(std::make_shared<const PolicyObject>(std::move(*object)));
    }
  } else if (is_workload(root)) {
    entry.category = ObjectEntry::Category::Workload;
    entry.index = static_cast<int>(workloads_.size());
    workloads_.push_back(std::make_shared<const WorkloadManifest>(
        WorkloadManifest{entry.api_version, entry.kind, entry.name, entry.namespace_, root, entry.origin}));
  } else {
    entry.category = ObjectEntry::Category::Skipped;
  }
  entries_.push_back(std::move(entry));
}

void PolicySet::add(PolicyObject object) {
  ObjectEntry entry;
  entry.category = ObjectEntry::Category::Policy;
  entry.api_version = kApiVersion;
  entry.kind = kind_name(object.kind);
  entry.name = object.name();
  entry.origin = object.origin;
  entry.index = static_cast<int>(policies_.size());
  entries_.push_back(std::move(entry));
  policies_.push_back(std::make_shared<const PolicyObject>(std::move(object)));
}

const PolicyObject* PolicySet::guardrails() const {
  for (const auto& p : policies_) {
    if (p->kind == Kind::PlatformGuardrails) return p.get();
  }
  return nullptr;
}

const PlatformGuardrailsSpec* PolicySet::guardrails_spec() const {
  const PolicyObject* g = guardrails();
  return g == nullptr ? nullptr : &g->as<PlatformGuardrailsSpec>();
}

const PolicyObject* PolicySet::find(Kind kind, std::string_view name) const {
  for (const auto& p : policies_) {
    if (p->kind == kind && p->name() == name) return p.get();
  }
  return nullptr;
}

bool PolicySet::upsert(PolicyObject object) {
  for (auto& p : policies_) {
    if (p->kind == object.kind && p->name() == object.name()) {
      p = std::make_shared<const PolicyObject>(std::move(object));
      return true;
    }
  }
  add(std::move(object));
  return false;
}

PolicySet PolicySet::policies_only() const {
  PolicySet out;
  out.policies_ = policies_;
  out.workloads_ = workloads_;
  return out;
}

bool PolicySet::remove(Kind kind, std::string_view name) {
  auto it = std::find_if(policies_.begin(), policies_.end(),
                         [&](const auto& p) { return p->kind == kind && p->name() == name; });
  if (it == policies_.end()) return false;
  const int removed = static_cast<int>(it - policies_.begin());
  policies_.erase(it);
  // Keep entries consistent: drop the removed policy's entry and shift later indices.
  std::erase_if(entries_, [&](const ObjectEntry& e) {
    return e.category == ObjectEntry::Category::Policy && e.index == removed;
  });
  for (auto& e : entries_) {
    if (e.category == ObjectEntry::Category::Policy && e.index > removed) --e.index;
  }
  return true;
}

PolicySet load_policy_set(const std::vector<std::string>& paths, const doc::ReadLimits& limits) {
  PolicySet set;
  std::vector<doc::Document> documents;
  doc::load_paths(paths, documents, set.diagnostics(), limits);
  for (const auto& d : documents) set.add(d.root, d.file, d.index);
  return set;
}

}  // namespace gpubank::policy
