#include "controller/diff.hpp"

#include <gtest/gtest.h>

#include <random>
#include <stdexcept>

#include "support/process.hpp"
#include "support/promtool.hpp"  // ScratchDir, write_file

namespace gpubank::controller {
namespace {

using nlohmann::json;

TEST(Projection, KeepsOnlyTheAppliedPaths) {
  const json live{{"apiVersion", "v1"},
                  {"kind", "ConfigMap"},
                  {"metadata",
                   {{"name", "a"}, {"namespace", "n"}, {"uid", "u"}, {"resourceVersion", "7"},
                    {"labels", {{"mine", "1"}, {"theirs", "2"}}}, {"managedFields", json::array()}}},
                  {"data", {{"k", "old"}, {"other", "x"}}}};
  const json applied{{"apiVersion", "v1"},
                     {"kind", "ConfigMap"},
                     {"metadata", {{"name", "a"}, {"namespace", "n"}, {"labels", {{"mine", "1"}}}}},
                     {"data", {{"k", "new"}, {"absent", "y"}}}};
  const json p = project(live, applied);
  EXPECT_EQ(p, (json{{"apiVersion", "v1"},
                     {"kind", "ConfigMap"},
                     {"metadata", {{"name", "a"}, {"namespace", "n"}, {"labels", {{"mine", "1"}}}}},
                     {"data", {{"k", "old"}}}}));
}

TEST(UnifiedDiff, EqualTextsHaveNoDiff) { EXPECT_EQ(unified_diff("a\nb\n", "a\nb\n", "x", "y"), ""); }

TEST(UnifiedDiff, CreationAndDeletion) {
  EXPECT_EQ(unified_diff("", "a\nb\n", "/dev/null", "new"), "--- /dev/null\n+++ new\n@@ -0,0 +1,2 @@\n+a\n+b\n");
  EXPECT_EQ(unified_diff("a\n", "", "old", "/dev/null"), "--- old\n+++ /dev/null\n@@ -1 +0,0 @@\n-a\n");
}

// A strict patch applier: every hunk's old range must start where its header says and its
// context and removed lines must match the text there.
std::string apply_patch(const std::string& a, const std::string& patch) {
  std::vector<std::string> old_lines;
  for (std::size_t s = 0; s < a.size();) {
    const std::size_t e = a.find('\n', s);
    old_lines.push_back(a.substr(s, e - s));
    s = e + 1;
  }
  std::vector<std::string> lines;
  for (std::size_t s = 0; s < patch.size();) {
    const std::size_t e = patch.find('\n', s);
    lines.push_back(patch.substr(s, e - s));
    s = e + 1;
  }
  std::string out;
  std::size_t next_old = 0;  // 0-based index of the next old line not yet copied
  for (std::size_t i = 2; i < lines.size();) {
    const std::string& h = lines[i];
    if (h.rfind("@@ -", 0) != 0) throw std::runtime_error("not a hunk header: " + h);
    std::size_t old_start = std::stoul(h.substr(4));
    std::size_t old_count = 1;
    const std::size_t comma = h.find(',', 4);
    if (comma != std::string::npos && comma < h.find(' ', 4)) old_count = std::stoul(h.substr(comma + 1));
    const std::size_t first_old = old_count == 0 ? old_start : old_start - 1;
    if (first_old < next_old) throw std::runtime_error("hunks overlap or go backwards: " + h);
    for (; next_old < first_old; ++next_old) out += old_lines.at(next_old) + "\n";
    std::size_t consumed = 0;
    for (++i; i < lines.size() && lines[i].rfind("@@", 0) != 0; ++i) {
      const char op = lines[i][0];
      const std::string text = lines[i].substr(1);
      if (op == ' ' || op == '-') {
        if (old_lines.at(next_old) != text) throw std::runtime_error("context mismatch at old line " + std::to_string(next_old + 1));
        ++next_old;
        ++consumed;
        if (op == ' ') out += text + "\n";
      } else if (op == '+') {
        out += text + "\n";
      } else {
        throw std::runtime_error("bad hunk line: " + lines[i]);
      }
    }
    if (consumed != old_count) throw std::runtime_error("hunk length differs from its header: " + h);
  }
  for (; next_old < old_lines.size(); ++next_old) out += old_lines[next_old] + "\n";
  return out;
}

// Random texts from a small alphabet, where common subsequences are ambiguous. Each diff
// must turn the old text into the new one under a strict patch applier, and change exactly
// as many lines as GNU diff -u (diffutils is Essential on Debian, so CI has it): the
// longest common subsequence's length is unique even where the subsequence is not, so a
// longer diff than GNU's is not minimal.
TEST(UnifiedDiff, PatchesApplyAndAreAsSmallAsGnuDiffs) {
  const auto diff = gpubank::testing::find_on_path("diff");
  if (!diff) GTEST_SKIP() << "GNU diff is not on PATH: the oracle cannot run";
  gpubank::testing::ScratchDir dir;
  std::mt19937_64 random(7);
  auto text = [&](int lines) {
    std::string t;
    for (int i = 0; i < lines; ++i) t += std::string(1, static_cast<char>('a' + random() % 4)) + "\n";
    return t;
  };
  auto changed = [](const std::string& d) {
    int n = 0;
    for (std::size_t s = 0; s < d.size();) {
      const std::size_t e = d.find('\n', s);
      const std::string line = d.substr(s, e - s);
      if ((line[0] == '-' && line.rfind("---", 0) != 0) || (line[0] == '+' && line.rfind("+++", 0) != 0)) ++n;
      s = e + 1;
    }
    return n;
  };
  for (int round = 0; round < 60; ++round) {
    // Long shared runs between the changes, so hunk splitting and merging are exercised.
    const std::string common = text(10);
    const std::string a = text(3) + common + text(static_cast<int>(random() % 4)) + common + text(static_cast<int>(random() % 3));
    const std::string b = text(2) + common + text(static_cast<int>(random() % 5)) + common + text(static_cast<int>(random() % 3));
    gpubank::testing::write_file(dir.path() / "a", a);
    gpubank::testing::write_file(dir.path() / "b", b);
    const auto gnu = gpubank::testing::run_process(
        {diff->string(), "-u", "--label", "a", "--label", "b", (dir.path() / "a").string(), (dir.path() / "b").string()}, {});
    ASSERT_TRUE(gnu.status == 0 || gnu.status == 1) << gnu.err;
    const std::string ours = unified_diff(a, b, "a", "b");
    ASSERT_EQ(gnu.status == 0, ours.empty()) << "round " << round;
    if (ours.empty()) continue;
    EXPECT_EQ(apply_patch(a, ours), b) << "round " << round << "\n" << ours;
    EXPECT_EQ(changed(ours), changed(gnu.out)) << "round " << round << "\nours:\n" << ours << "\ngnu:\n" << gnu.out;
  }
}

TEST(UnifiedDiff, DistantChangesAreSeparateHunksWithThreeLinesOfContext) {
  std::string a;
  for (int i = 1; i <= 20; ++i) a += std::to_string(i) + "\n";
  std::string b = a;
  b.replace(b.find("2\n"), 2, "two\n");
  b.replace(b.find("\n18\n") + 1, 3, "eighteen\n");
  EXPECT_EQ(unified_diff(a, b, "a", "b"),
            "--- a\n+++ b\n"
            "@@ -1,5 +1,5 @@\n 1\n-2\n+two\n 3\n 4\n 5\n"
            "@@ -15,6 +15,6 @@\n 15\n 16\n 17\n-18\n+eighteen\n 19\n 20\n");
}

TEST(UnifiedDiff, OverTheLineCapEverythingIsReplaced) {
  EXPECT_EQ(unified_diff("a\nb\n", "a\nc\n", "x", "y", 3), "--- x\n+++ y\n@@ -1,2 +1,2 @@\n-a\n-b\n+a\n+c\n");
}

}  // namespace
}  // namespace gpubank::controller
