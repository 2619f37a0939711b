// Building policy sets from YAML text in tests.
#pragma once

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "document/reader.hpp"
#include "policy/policy_set.hpp"
#include "policy/validate.hpp"
#include "support/paths.hpp"

namespace gpubank::testing {

// The example policy set plus extra YAML documents (as one more file, "extra.yaml").
inline policy::PolicySet examples_plus(std::string_view extra_yaml = {}) {
  policy::PolicySet set = policy::load_policy_set({examples_dir() + "/policies"});
  if (!extra_yaml.empty()) {
    std::vector<doc::Document> docs;
    doc::read_yaml(extra_yaml, "extra.yaml", docs, set.diagnostics());
    for (const auto& d : docs) set.add(d.root, d.file, d.index);
  }
  return set;
}

// A LowUtilizationPolicy on inference (the examples have none): GPU below 5 % and memory
// below 20 % over 2h, the policy that makes the scanner ask for vLLM's token throughput.
inline constexpr std::string_view kServingIdlePolicy = R"(apiVersion: platform.gpubank.dev/v1alpha1
kind: LowUtilizationPolicy
metadata: {name: serving-idle}
spec:
  match: {workloadType: inference}
  window: 2h
  thresholds: {averageGpuUtilization: 5, averageMemoryUtilization: 20}
  startupGracePeriod: 15m
  notify: {first: owner, after: 4h, escalateTo: business-group-admin, repeatInterval: 12h}
)";

inline policy::PolicySet from_yaml(std::string_view yaml) {
  policy::PolicySet set;
  std::vector<doc::Document> docs;
  doc::read_yaml(yaml, "in.yaml", docs, set.diagnostics());
  for (const auto& d : docs) set.add(d.root, d.file, d.index);
  return set;
}

inline Diagnostics findings_of(const policy::PolicySet& set, const policy::ValidationOptions& options = {}) {
  return policy::check_all(set, options);
}

inline std::vector<std::string> rules_of(const Diagnostics& findings) {
  std::vector<std::string> out;
  for (const auto& f : findings) out.push_back(f.rule);
  return out;
}

inline bool has_rule(const Diagnostics& findings, std::string_view rule) {
  return std::any_of(findings.begin(), findings.end(), [&](const Diagnostic& d) { return d.rule == rule; });
}

inline const Diagnostic* find_finding(const Diagnostics& findings, std::string_view rule) {
  auto it = std::find_if(findings.begin(), findings.end(), [&](const Diagnostic& d) { return d.rule == rule; });
  return it == findings.end() ? nullptr : &*it;
}

}  // namespace gpubank::testing
