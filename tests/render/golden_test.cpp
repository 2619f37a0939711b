// Golden files: examples/policies rendered per backend, compared byte for byte with
// tests/render/golden/<backend>/ (one file per object, as `gpubank render --out` writes
// them). A missing or extra file fails too. To accept a deliberate change, run the test
// with GPUBANK_UPDATE_GOLDEN=1 and review the diff.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>

#include "render/engines_fixture.hpp"
#include "support/golden.hpp"

namespace gpubank::render {
namespace {

namespace fs = std::filesystem;

fs::path golden_dir(Backend backend) {
  return fs::path(gpubank::testing::source_dir()) / "tests" / "render" / "golden" / std::string(backend_name(backend));
}

std::map<std::string, std::string> read_tree(const fs::path& dir) {
  std::map<std::string, std::string> files;
  if (!fs::is_directory(dir)) return files;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    files[fs::relative(entry.path(), dir).generic_string()] = gpubank::testing::read_golden_file(entry.path()).value_or("");
  }
  return files;
}

class Golden : public ::testing::TestWithParam<Backend> {};

TEST_P(Golden, ExamplesMatchTheGoldenFiles) {
  const RenderResult r = render(testing::example_set(), {GetParam()});
  ASSERT_TRUE(r.ok()) << r.diagnostics.front().to_string();
  const fs::path dir = golden_dir(GetParam());
  if (gpubank::testing::updating_golden_files()) {
    fs::remove_all(dir);
    testing::write_tree(r, dir);
    GTEST_SKIP() << "rewrote " << dir.string();
  }
  std::map<std::string, std::string> want = read_tree(dir);
  ASSERT_FALSE(want.empty()) << "no golden files in " << dir.string() << " (GPUBANK_UPDATE_GOLDEN=1 writes them)";
  for (const auto& o : r.objects) {
    auto it = want.find(o.path);
    if (it == want.end()) {
      ADD_FAILURE() << "rendered " << o.path << ", which has no golden file";
      continue;
    }
    EXPECT_EQ(to_file_text(o), it->second) << "differs from " << (dir / o.path).string();
    want.erase(it);
  }
  for (const auto& [path, _] : want) ADD_FAILURE() << "golden file " << path << " was not rendered";
}

INSTANTIATE_TEST_SUITE_P(Backends, Golden, ::testing::Values(Backend::Kueue, Backend::Volcano),
                         [](const auto& p) { return std::string(backend_name(p.param)); });

}  // namespace
}  // namespace gpubank::render
