#include "policy/types.hpp"

#include <algorithm>
#include <array>

#include "document/decode.hpp"

namespace gpubank::policy {

std::string Pool::flavor_key() const {
  return gpu_model + "/" + partition + "/" + (sharing == Sharing::Exclusive ? "exclusive" : "shared");
}

std::vector<std::string> Group::effective_namespaces() const {
  return namespaces.empty() ? std::vector<std::string>{name} : namespaces;
}

namespace {
template <class T>
const T* find_named(const std::vector<T>& items, std::string_view name) {
  auto it = std::find_if(items.begin(), items.end(), [&](const T& item) { return item.name == name; });
  return it == items.end() ? nullptr : &*it;
}
}  // namespace

const Pool* PlatformGuardrailsSpec::find_pool(std::string_view name) const { return find_named(pools, name); }
const Group* PlatformGuardrailsSpec::find_group(std::string_view name) const { return find_named(groups, name); }
const PriorityRule* PlatformGuardrailsSpec::find_priority(std::string_view name) const {
  return find_named(priorities, name);
}

const Group* PlatformGuardrailsSpec::group_of_namespace(std::string_view ns) const {
  for (const auto& g : groups) {
    for (const auto& n : g.effective_namespaces()) {
      if (n == ns) return &g;
    }
  }
  return nullptr;
}

std::optional<int> ReplicaFloor::for_policy(const std::string& name) const {
  if (all) return all;
  if (auto it = per_policy.find(name); it != per_policy.end()) return it->second;
  return std::nullopt;
}

std::optional<std::pair<const TidalWindow*, int>> TidalPolicySpec::largest_floor_window(const std::string& policy) const {
  const auto& names = targets.inference_policies;
  if (std::find(names.begin(), names.end(), policy) == names.end()) return std::nullopt;
  std::optional<std::pair<const TidalWindow*, int>> best;
  for (const auto& w : windows) {
    const auto floor = w.inference_replica_floor ? w.inference_replica_floor->for_policy(policy) : std::nullopt;
    if (floor && (!best || *floor > best->second)) best.emplace(&w, *floor);
  }
  return best;
}

namespace {
constexpr std::array<std::pair<Kind, std::string_view>, 6> kKindNames{{
    {Kind::PlatformGuardrails, "PlatformGuardrails"},
    {Kind::GPUQuotaPolicy, "GPUQuotaPolicy"},
    {Kind::InferenceScalingPolicy, "InferenceScalingPolicy"},
    {Kind::TidalPolicy, "TidalPolicy"},
    {Kind::CapacityLease, "CapacityLease"},
    {Kind::LowUtilizationPolicy, "LowUtilizationPolicy"},
}};
}  // namespace

std::string_view kind_name(Kind kind) {
  for (const auto& [k, name] : kKindNames) {
    if (k == kind) return name;
  }
  return "?";
}

std::optional<Kind> kind_from_name(std::string_view name) {
  for (const auto& [k, n] : kKindNames) {
    if (n == name) return k;
  }
  return std::nullopt;
}

std::string PolicyObject::ref() const { return std::string(kind_name(kind)) + "/" + metadata.name; }

SourcePos PolicyObject::position_of(std::string_view path) const {
  const SourcePos p = fields.find(path);
  return p.line > 0 ? p : origin.pos;
}

}  // namespace gpubank::policy
