// Shared by the engine renderer tests: rendering the example policy set, finding objects
// by path, and small policy sets written inline.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "policy/policy_set.hpp"
#include "render/render.hpp"
#include "support/paths.hpp"
#include "support/policy_fixture.hpp"

namespace gpubank::render::testing {

inline policy::PolicySet example_set() {
  return policy::load_policy_set({gpubank::testing::examples_dir() + "/policies"});
}

inline const RenderedObject* find_object(const RenderResult& r, std::string_view path) {
  auto it = std::find_if(r.objects.begin(), r.objects.end(), [&](const RenderedObject& o) { return o.path == path; });
  return it == r.objects.end() ? nullptr : &*it;
}

// The object at `path`, failing the test when there is none.
inline const Json& manifest_at(const RenderResult& r, std::string_view path) {
  static const Json kNull;
  const RenderedObject* o = find_object(r, path);
  EXPECT_NE(o, nullptr) << "no object at " << path;
  return o != nullptr ? o->manifest : kNull;
}

// Writes every object as `gpubank render --out dir` would (without the temp-and-rename).
inline void write_tree(const RenderResult& r, const std::filesystem::path& dir) {
  for (const auto& o : r.objects) {
    const auto file = dir / o.path;
    std::filesystem::create_directories(file.parent_path());
    std::ofstream(file, std::ios::binary) << to_file_text(o);
  }
}

// A one-pool platform for the checks: groups a and b on pool "gpu" (64 H100), and the
// priority classes given (YAML flow items, one per line, two-space indented).
inline std::string guardrails_yaml(std::string_view pools = "  - {name: gpu, gpuModel: H100, capacity: 64, role: training}\n",
                                   std::string_view priorities =
                                       "  - {name: serving, value: 1000, workloadTypes: [inference], preemptible: false}\n"
                                       "  - {name: batch, value: 100, workloadTypes: [batch, training]}\n",
                                   std::string_view groups =
                                       "  - {name: a, costCenter: CC-1, limits: {gpu: {minGuaranteed: 0, maxCapacity: 64}}}\n"
                                       "  - {name: b, costCenter: CC-2, limits: {gpu: {minGuaranteed: 0, maxCapacity: 64}}}\n") {
  return "apiVersion: platform.gpubank.dev/v1alpha1\nkind: PlatformGuardrails\nmetadata: {name: platform}\nspec:\n"
         "  platformAdmins: [group:admins]\n  pools:\n" +
         std::string(pools) + "  groups:\n" + std::string(groups) + "  priorities:\n" + std::string(priorities);
}

inline std::string quota_yaml(std::string_view name, std::string_view group, std::string_view pool,
                              std::string_view fields) {
  return "---\napiVersion: platform.gpubank.dev/v1alpha1\nkind: GPUQuotaPolicy\nmetadata: {name: " + std::string(name) +
         "}\nspec:\n  businessGroup: " + std::string(group) + "\n  resourcePool: " + std::string(pool) + "\n" +
         std::string(fields);
}

}  // namespace gpubank::render::testing
