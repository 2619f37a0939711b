// Shared by the scaling and consistency tests: the example policy set, variants of it
// edited in place, and the check that a variant still passes validation (the render
// check only ever sees valid sets).
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include <gtest/gtest.h>

#include "policy/policy_set.hpp"
#include "policy/validate.hpp"
#include "support/paths.hpp"

namespace gpubank::render::testing {

// examples/policies, plus files under tests/render/policies/.
inline policy::PolicySet examples_with(const std::vector<std::string>& extra = {}) {
  std::vector<std::string> paths{gpubank::testing::examples_dir() + "/policies"};
  for (const auto& e : extra) paths.push_back(gpubank::testing::source_dir() + "/tests/render/policies/" + e);
  return policy::load_policy_set(paths);
}

// Replaces the policy `kind`/`name` by a copy that `edit` changed.
template <class Spec, class Edit>
void edit(policy::PolicySet& set, policy::Kind kind, std::string_view name, Edit&& edit) {
  const policy::PolicyObject* found = set.find(kind, name);
  ASSERT_NE(found, nullptr) << name;
  policy::PolicyObject copy = *found;
  std::forward<Edit>(edit)(std::get<Spec>(copy.spec));
  set.upsert(std::move(copy));
}

// No reading or validation errors (warnings allowed).
inline void expect_valid(const policy::PolicySet& set) {
  for (const auto& d : policy::check_all(set)) {
    EXPECT_NE(d.severity, Severity::Error) << d.to_string();
  }
}

}  // namespace gpubank::render::testing
