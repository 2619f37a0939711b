// What the monitoring tests share: the example policy set, and the rendered PrometheusRule
// specs written as rule files for the real promtool (support/promtool.hpp runs it).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "document/yaml_writer.hpp"
#include "policy/policy_set.hpp"
#include "render/object.hpp"
#include "support/paths.hpp"
#include "support/promtool.hpp"

namespace gpubank::testing {

namespace fs = std::filesystem;

// examples/policies, loaded once.
inline const policy::PolicySet& example_policies() {
  static const policy::PolicySet set = policy::load_policy_set({examples_dir() + "/policies"});
  return set;
}

// The rule file promtool reads for one PrometheusRule: its spec (a "groups:" document),
// named <metadata.name>.rules.yaml, the names the committed promtool tests list.
inline std::string rule_file_name(const render::RenderedObject& o) {
  return o.manifest["metadata"]["name"].get<std::string>() + ".rules.yaml";
}

inline std::vector<fs::path> write_rule_files(const std::vector<render::RenderedObject>& objects,
                                              const fs::path& dir) {
  std::vector<fs::path> files;
  for (const auto& o : objects) {
    files.push_back(dir / rule_file_name(o));
    write_file(files.back(), doc::to_yaml(o.manifest["spec"]));
  }
  return files;
}

}  // namespace gpubank::testing
