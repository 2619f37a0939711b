// What the policy fuzzers share: the input read as policy YAML under the limits a fuzz
// input gets, and the fixed clock validation runs at (a run is a function of its input).
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

#include "core/timestamp.hpp"
#include "document/reader.hpp"
#include "policy/policy_set.hpp"
#include "policy/validate.hpp"

namespace gpubank::fuzz {

inline Timestamp fixed_now() {
  static const Timestamp now = *parse_rfc3339("2026-12-01T08:00:00Z");
  return now;
}

// The input's YAML documents as a policy set (read errors in its diagnostics).
inline policy::PolicySet read_policies(std::string_view text) {
  doc::ReadLimits limits;
  limits.max_bytes = std::size_t{64} << 10;
  limits.max_nodes = 20'000;
  policy::PolicySet set;
  std::vector<doc::Document> docs;
  doc::read_yaml(text, "fuzz.yaml", docs, set.diagnostics(), limits);
  for (const auto& d : docs) set.add(d.root, d.file, d.index);
  return set;
}

inline policy::ValidationOptions validation_options() {
  policy::ValidationOptions options;
  options.now = fixed_now();
  return options;
}

}  // namespace gpubank::fuzz
