#include "api/audit_log.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

namespace gpubank::api {
namespace {

namespace fs = std::filesystem;

std::string fresh_path(const std::string& name) {
  const std::string dir = ::testing::TempDir() + "/audit-" + name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir + "/audit.jsonl";
}

std::vector<std::string> lines_of(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

TEST(AuditLog, AppendsOneJsonLinePerEntryAndKeepsThemAcrossReopen) {
  const std::string path = fresh_path("reopen");
  {
    auto log = AuditLog::open(path);
    ASSERT_TRUE(log) << log.error();
    ASSERT_TRUE((*log)->append({{"n", 1}, {"message", "line\nbreak"}}));
    ASSERT_TRUE((*log)->append({{"n", 2}}));
  }
  {
    auto log = AuditLog::open(path);
    ASSERT_TRUE(log);
    ASSERT_TRUE((*log)->append({{"n", 3}}));
  }
  const auto lines = lines_of(path);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(nlohmann::json::parse(lines[0])["message"], "line\nbreak");
  EXPECT_EQ(nlohmann::json::parse(lines[2])["n"], 3);
}

TEST(AuditLog, CutsATornLastLineLeftByACrash) {
  const std::string path = fresh_path("torn");
  std::ofstream(path) << "{\"n\":1}\n{\"n\":2}\n{\"n\":3,\"mess";  // the crash hit mid-write
  auto log = AuditLog::open(path);
  ASSERT_TRUE(log) << log.error();
  ASSERT_TRUE((*log)->append({{"n", 4}}));
  const auto lines = lines_of(path);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[1], "{\"n\":2}");
  EXPECT_EQ(lines[2], "{\"n\":4}");
}

TEST(AuditLog, ConcurrentAppendsAreAllDurableAndNeverInterleave) {
  const std::string path = fresh_path("concurrent");
  auto log = AuditLog::open(path);
  ASSERT_TRUE(log);
  constexpr int kThreads = 8;
  constexpr int kEach = 200;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        ASSERT_TRUE((*log)->append({{"thread", t}, {"i", i}, {"pad", std::string(200, 'p')}}));
      }
    });
  }
  for (auto& th : threads) th.join();
  const auto lines = lines_of(path);
  ASSERT_EQ(lines.size(), static_cast<std::size_t>(kThreads * kEach));
  std::set<std::pair<int, int>> seen;
  std::vector<int> last(kThreads, -1);
  for (const auto& line : lines) {
    const auto j = nlohmann::json::parse(line);  // throws on an interleaved line
    const int t = j["thread"];
    const int i = j["i"];
    EXPECT_EQ(i, last[static_cast<std::size_t>(t)] + 1) << "entries of one thread stay in order";
    last[static_cast<std::size_t>(t)] = i;
    seen.insert({t, i});
  }
  EXPECT_EQ(seen.size(), lines.size());
}

TEST(AuditLog, RefusesToOpenWhatItCannotWrite) {
  auto log = AuditLog::open("/nonexistent-dir/audit.jsonl");
  ASSERT_FALSE(log);
  EXPECT_NE(log.error().find("cannot open audit log"), std::string::npos);
}

TEST(AuditLog, FailsClosedWhenTheDiskIsFull) {
  // /dev/full accepts the open and fails every write with ENOSPC.
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full";
  auto log = AuditLog::open("/dev/full");
  ASSERT_TRUE(log) << log.error();
  auto first = (*log)->append({{"n", 1}});
  ASSERT_FALSE(first);
  EXPECT_NE(first.error().find("write failed"), std::string::npos);
  EXPECT_FALSE((*log)->append({{"n", 2}}));  // stays closed
}

}  // namespace
}  // namespace gpubank::api
