// Fuzzes what `gpubank serving autoscale` reads from an API server (autoscale/
// workload_scale.hpp, pool_view.hpp): a Scale's status.selector string and node and pod
// objects. The input is tried as a selector string and, when it is JSON, as a node, a pod
// and a list of each for the examples' customer-service-llm pool.
// Invariants: no crash (no JSON exception either: fields of the wrong type are read as
// absent); an error is never empty; a parsed selector has a key in every
// requirement; a pod holds 0 or more devices; a pool view never has a node with more free
// or held devices than it has, nor negative figures.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "autoscale/pool_view.hpp"
#include "autoscale/workload_scale.hpp"
#include "policy/policy_set.hpp"

using namespace gpubank;

namespace {

const policy::PolicySet& examples() {
  static const policy::PolicySet set = [] {
    const char* dir = std::getenv("GPUBANK_SOURCE_DIR");
    return policy::load_policy_set({std::string(dir != nullptr ? dir : GPUBANK_DEFAULT_SOURCE_DIR) + "/examples/policies"});
  }();
  return set;
}

const policy::InferenceScalingPolicySpec* llm() {
  for (const auto& p : examples().policies()) {
    if (p.name() == "customer-service-llm") return &p.as<policy::InferenceScalingPolicySpec>();
  }
  return nullptr;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  if (auto s = autoscale::selector_from_text(text); s.ok()) {
    for (const auto& [k, v] : (*s)["matchLabels"].items()) {
      if (k.empty()) __builtin_trap();
    }
    for (const auto& r : (*s)["matchExpressions"]) {
      if (r.value("key", "").empty()) __builtin_trap();
    }
  } else if (s.error().empty()) {
    __builtin_trap();
  }
  const auto json = nlohmann::json::parse(text, nullptr, false);
  if (json.is_discarded()) return 0;
  if (autoscale::pod_devices(json, "nvidia.com/gpu") < 0) __builtin_trap();
  const auto* spec = llm();
  if (spec == nullptr) __builtin_trap();
  autoscale::ClusterObjects objects;
  objects.nodes.push_back(json);
  objects.pods.push_back(json);
  if (json.is_array()) {
    for (const auto& item : json) {
      objects.nodes.push_back(item);
      objects.pods.push_back(item);
    }
  }
  auto view = autoscale::pool_view(examples(), *spec, objects);
  if (!view) {
    if (view.error().empty()) __builtin_trap();
    return 0;
  }
  for (const auto& n : view->nodes) {
    if (n.free < 0 || n.unhealthy < 0 || n.held_by_borrowers < 0 || n.free > n.gpus || n.held_by_borrowers > n.gpus) {
      __builtin_trap();
    }
  }
  if (view->quota.used < 0 || view->quota.lent < 0 || view->quota.cohort_free < 0) __builtin_trap();
  (void)autoscale::replica_phases(objects.pods);
  return 0;
}
