// Helpers for the deploy/ tests: the YAML documents of a path as JSON, the schemas every
// shipped object is checked against (../shared/crds and deploy/crds), a scratch
// directory, and the two external programs some tests use when they are there: kubectl
// (kustomize) and node with @bufbuild/cel (CEL rules). CI has neither; those tests skip
// and say so.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "document/loader.hpp"
#include "schema/schema_set.hpp"
#include "support/paths.hpp"
#include "support/process.hpp"

namespace gpubank::deploy::testing {

using Json = schema::Json;

struct Doc {
  std::string file;
  int index = 0;
  Json json;
};

inline std::string describe(const Diagnostics& d) {
  std::string out;
  for (const auto& x : d) out += x.to_string() + "\n";
  return out;
}

// Every document of the files and directories, read with the project's document reader.
inline std::vector<Doc> read_docs(const std::vector<std::string>& paths) {
  std::vector<doc::Document> docs;
  Diagnostics diagnostics;
  doc::load_paths(paths, docs, diagnostics);
  EXPECT_TRUE(diagnostics.empty()) << describe(diagnostics);
  std::vector<Doc> out;
  for (const auto& d : docs) out.push_back({d.file, d.index, doc::to_ordered_json(d.root)});
  return out;
}

// The documents of a YAML stream given as text (kubectl kustomize's output).
inline std::vector<Doc> read_stream(const std::string& text, const std::string& name) {
  std::vector<doc::Document> docs;
  Diagnostics diagnostics;
  doc::read_yaml(text, name, docs, diagnostics);
  EXPECT_TRUE(diagnostics.empty()) << describe(diagnostics);
  std::vector<Doc> out;
  for (const auto& d : docs) out.push_back({d.file, d.index, doc::to_ordered_json(d.root)});
  return out;
}

inline std::string deploy_dir() { return gpubank::testing::source_dir() + "/deploy"; }

// ../shared/crds (Kueue, Volcano, KEDA, KServe, prometheus-operator) and deploy/crds
// (gpubank's own), with the built-in PriorityClass and ConfigMap; loaded once.
inline const schema::SchemaSet& schemas() {
  static const schema::SchemaSet set = [] {
    schema::SchemaSet s;
    Diagnostics diagnostics;
    s.load(gpubank::testing::shared_dir() + "/crds", diagnostics);
    s.load(deploy_dir() + "/crds/platform.gpubank.dev.yaml", diagnostics);
    for (const auto& d : diagnostics) ADD_FAILURE() << d.to_string();
    return s;
  }();
  return set;
}

inline std::string violations(const schema::Result& r) {
  std::string out;
  for (const auto& v : r.violations) out += "  " + v.path + ": " + v.message + " [" + v.rule + "]\n";
  return out;
}

inline std::string ref(const Json& o) {
  const Json& meta = o.contains("metadata") ? o["metadata"] : Json::object();
  std::string out = o.value("kind", "?") + "/";
  if (meta.contains("namespace")) out += meta.value("namespace", "") + "/";
  return out + meta.value("name", "?");
}

// A directory removed when the test ends.
class ScratchDir {
 public:
  ScratchDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "gpubank-deploy-XXXXXX").string();
    if (mkdtemp(pattern.data()) != nullptr) path_ = pattern;
  }
  ~ScratchDir() {
    std::error_code ignored;
    if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  [[nodiscard]] const std::filesystem::path& path() const { return path_; }
  std::string write(const std::string& name, const std::string& text) const {
    const auto p = path_ / name;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary | std::ios::trunc) << text;
    return p.string();
  }

 private:
  std::filesystem::path path_;
};

// `kubectl kustomize DIR`: the rendered stream, or the error; nullopt without kubectl.
struct Kustomized {
  bool ok = false;
  std::string out;
  std::string err;
};
inline std::optional<Kustomized> kustomize(const std::string& dir) {
  static const auto kubectl = gpubank::testing::find_on_path("kubectl");
  if (!kubectl) return std::nullopt;
  static const ScratchDir home;
  const auto r = gpubank::testing::run_process({kubectl->string(), "kustomize", dir},
                                               {{"HOME", home.path().string()}, {"KUBECONFIG", std::nullopt}});
  return Kustomized{r.status == 0, r.out, r.err};
}

inline constexpr const char* kNoKubectl =
    "kubectl is not on PATH: this test builds the overlays with `kubectl kustomize` (kubectl 1.27+ embeds "
    "kustomize v5); the manifests' files are still checked without it by DeployManifests.*";

}  // namespace gpubank::deploy::testing
