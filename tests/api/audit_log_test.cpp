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

void write_lines(const std::string& path, int n, int first = 1) {
  auto log = AuditLog::open(path);
  ASSERT_TRUE(log) << log.error();
  for (int i = first; i < first + n; ++i) ASSERT_TRUE((*log)->append({{"n", i}, {"allowed", i % 2 == 0}}));
}

void write_file(const std::string& path, const std::vector<std::string>& lines, const std::string& tail = "") {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  for (const auto& l : lines) out << l << '\n';
  out << tail;
}

TEST(AuditLog, ChainsEveryLineAndContinuesTheChainAcrossReopen) {
  const std::string path = fresh_path("chain");
  write_lines(path, 2);
  write_lines(path, 1, 3);
  const auto lines = lines_of(path);
  ASSERT_EQ(lines.size(), 3u);
  std::string prev;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const auto j = nlohmann::ordered_json::parse(lines[i]);
    EXPECT_EQ(j["seq"], i + 1);
    EXPECT_EQ(j["prevHash"], prev);
    EXPECT_EQ(j["n"], i + 1);  // the entry's fields stay at the top level
    prev = j["hash"];
  }
  EXPECT_EQ(lines[0].substr(0, 26), "{\"seq\":1,\"prevHash\":\"\",\"n\"");
  // The hash is taken over the entry's bytes exactly as written.
  EXPECT_EQ(nlohmann::json::parse(lines[0])["hash"], audit_line_hash(1, "", "{\"n\":1,\"allowed\":false}"));
  auto report = verify_audit_log(path);
  ASSERT_TRUE(report) << report.error();
  EXPECT_TRUE(report->ok()) << report->chain.problem;
  EXPECT_EQ(report->chain.entries, 3);
  auto head = audit_log_head(path);
  ASSERT_TRUE(head) << head.error();
  EXPECT_EQ(head->seq, 3);
  EXPECT_EQ(head->hash, prev);
}

TEST(AuditLog, VerifyFindsAChangedARemovedAndAnInsertedLine) {
  const std::string path = fresh_path("tamper");
  write_lines(path, 4);
  const auto lines = lines_of(path);

  auto changed = lines;
  changed[1].replace(changed[1].find("\"allowed\":true"), 14, "\"allowed\":false");
  write_file(path, changed);
  auto report = verify_audit_log(path);
  ASSERT_TRUE(report);
  EXPECT_FALSE(report->ok());
  EXPECT_EQ(report->chain.broken_seq, 2);
  EXPECT_NE(report->chain.problem.find("line 2: hash mismatch"), std::string::npos) << report->chain.problem;

  write_file(path, {lines[0], lines[2], lines[3]});
  report = verify_audit_log(path);
  EXPECT_EQ(report->chain.broken_seq, 2);
  EXPECT_EQ(report->chain.problem, "line 2: gap in seq: expected 2, found 3 (a line was removed or moved)");

  write_file(path, {lines[0], "{\"n\":99}", lines[1]});
  report = verify_audit_log(path);
  EXPECT_EQ(report->chain.broken_seq, 2);
  EXPECT_NE(report->chain.problem.find("line 2: not a chained audit line"), std::string::npos) << report->chain.problem;
}

TEST(AuditLog, AnAnchorCatchesACutTail) {
  const std::string path = fresh_path("anchor");
  write_lines(path, 4);
  auto head = audit_log_head(path);
  ASSERT_TRUE(head);
  EXPECT_TRUE(verify_audit_log(path, *head)->ok());
  const auto lines = lines_of(path);
  write_file(path, {lines[0], lines[1]});
  auto report = verify_audit_log(path, *head);
  ASSERT_TRUE(report);
  EXPECT_TRUE(report->chain.ok);  // what is left is a consistent chain...
  EXPECT_FALSE(report->ok());     // ...that lacks the anchor
  EXPECT_EQ(report->anchor_problem, "anchor 4:" + head->hash +
                                        ": the log has no seq 4 (it ends at seq 2): lines were removed from its tail");
}

TEST(AuditLog, ATornLastLineIsReportedByVerifyAndCutAtOpen) {
  const std::string path = fresh_path("torn");
  write_lines(path, 2);
  const std::string torn = "{\"seq\":3,\"prevHash\":\"ab";  // the crash hit mid-write
  { std::ofstream(path, std::ios::app) << torn; }
  auto report = verify_audit_log(path);
  ASSERT_TRUE(report);
  EXPECT_TRUE(report->ok());  // nothing acknowledged is missing
  EXPECT_EQ(report->chain.entries, 2);
  EXPECT_NE(report->torn_tail.find("line 3 is torn (" + std::to_string(torn.size()) + " bytes without a newline"),
            std::string::npos)
      << report->torn_tail;
  {
    auto log = AuditLog::open(path);
    ASSERT_TRUE(log) << log.error();
    EXPECT_EQ((*log)->torn_bytes_cut(), torn.size());
    ASSERT_TRUE((*log)->append({{"n", 3}}));
  }
  const auto lines = lines_of(path);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(nlohmann::json::parse(lines[2])["seq"], 3);
  report = verify_audit_log(path);
  EXPECT_TRUE(report->ok()) << report->chain.problem;
  EXPECT_TRUE(report->torn_tail.empty());
}

TEST(AuditLog, RefusesToContinueATailItCannotTrust) {
  const std::string path = fresh_path("untrusted");
  write_lines(path, 2);
  auto lines = lines_of(path);
  lines[1].replace(lines[1].find("\"n\":2"), 5, "\"n\":7");
  write_file(path, lines);
  auto log = AuditLog::open(path);
  ASSERT_FALSE(log);
  EXPECT_NE(log.error().find("its last line does not verify: hash mismatch"), std::string::npos) << log.error();
  EXPECT_EQ(lines_of(path), lines);  // untouched

  write_file(path, {"{\"n\":1}"});  // written before the log was chained
  log = AuditLog::open(path);
  ASSERT_FALSE(log);
  EXPECT_NE(log.error().find("not a chained audit line"), std::string::npos) << log.error();
  EXPECT_NE(log.error().find("move the file aside"), std::string::npos) << log.error();
}

TEST(AuditLog, RefusesEntriesThatCarryTheChainsFields) {
  const std::string path = fresh_path("own-fields");
  auto log = AuditLog::open(path);
  ASSERT_TRUE(log);
  auto r = (*log)->append({{"seq", 5}});
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().find("entry field \"seq\" is the log's own"), std::string::npos) << r.error();
  ASSERT_TRUE((*log)->append(nlohmann::ordered_json::object()));
  EXPECT_EQ(lines_of(path).size(), 1u);
  EXPECT_TRUE(verify_audit_log(path)->ok());
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
