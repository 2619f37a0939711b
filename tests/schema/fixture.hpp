// Helpers for the schema tests: objects from YAML text, CRDs from YAML text (through a
// file, so positions are real), and the upstream CRDs of ../shared/crds loaded once.
#pragma once

#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>
#include <unistd.h>

#include "document/reader.hpp"
#include "schema/schema_set.hpp"
#include "support/paths.hpp"

namespace gpubank::schema::testing {

inline std::vector<Json> objects(std::string_view yaml) {
  std::vector<doc::Document> docs;
  Diagnostics diagnostics;
  doc::read_yaml(yaml, "test.yaml", docs, diagnostics);
  EXPECT_TRUE(diagnostics.empty()) << (diagnostics.empty() ? "" : diagnostics[0].to_string());
  std::vector<Json> out;
  for (const auto& d : docs) out.push_back(doc::to_ordered_json(d.root));
  return out;
}

inline Json object(std::string_view yaml) {
  auto all = objects(yaml);
  EXPECT_EQ(all.size(), 1u);
  return all.empty() ? Json() : all.front();
}

// Writes `text` to a file in this process's temporary directory (removed at exit) and
// returns its path.
inline std::string write_temp(const std::string& name, std::string_view text) {
  struct TempDir {
    std::filesystem::path path =
        std::filesystem::temp_directory_path() / ("gpubank-schema-test-" + std::to_string(::getpid()));
    TempDir() { std::filesystem::create_directories(path); }
    ~TempDir() {
      std::error_code ignored;
      std::filesystem::remove_all(path, ignored);
    }
  };
  static const TempDir dir;
  const auto path = dir.path / name;
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
  return path.string();
}

// A SchemaSet with the CRDs in `yaml` loaded; fails the test on any load error.
inline SchemaSet with_crds(std::string_view yaml) {
  SchemaSet set;
  Diagnostics diagnostics;
  set.load(write_temp("crds.yaml", yaml), diagnostics);
  for (const auto& d : diagnostics) ADD_FAILURE() << d.to_string();
  return set;
}

// ../shared/crds, loaded once per process.
inline const SchemaSet& upstream() {
  static const SchemaSet set = [] {
    SchemaSet s;
    Diagnostics diagnostics;
    s.load(gpubank::testing::shared_dir() + "/crds", diagnostics);
    for (const auto& d : diagnostics) ADD_FAILURE() << d.to_string();
    return s;
  }();
  return set;
}

// "path [rule]" of each violation, for compact expectations.
inline std::vector<std::string> found(const Result& r) {
  std::vector<std::string> out;
  for (const auto& v : r.violations) out.push_back(v.path + " [" + v.rule + "]");
  return out;
}

}  // namespace gpubank::schema::testing
