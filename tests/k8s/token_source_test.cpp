#include "k8s/token_source.hpp"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "fixture.hpp"

namespace gpubank::k8s {
namespace {

using namespace std::chrono_literals;
using testing::ScratchDir;
using testing::write_file;

// A clock the test moves by hand.
struct FakeClock {
  std::chrono::steady_clock::time_point now{};
  FileTokenSource::Clock fn() {
    return [this] { return now; };
  }
};

std::string token_of(TokenSource& source) {
  auto t = source.token();
  EXPECT_TRUE(t.ok()) << (t.ok() ? "" : t.error());
  return t.ok() ? *t : std::string();
}

TEST(FileTokenSource, RereadsARotatedTokenAfterTheInterval) {
  ScratchDir dir;
  const auto file = dir.path() / "token";
  write_file(file, "first\n");
  FakeClock clock;
  FileTokenSource source(file.string(), 60s, clock.fn());
  EXPECT_EQ(token_of(source), "first");  // trimmed
  write_file(file, "second");           // the kubelet rotates the token
  clock.now += 59s;
  EXPECT_EQ(token_of(source), "first");  // not re-read within the interval
  clock.now += 1s;
  EXPECT_EQ(token_of(source), "second");
  write_file(file, "third");
  clock.now += 30s;
  EXPECT_EQ(token_of(source), "second");
  source.expire();  // what a transport does on 401
  EXPECT_EQ(token_of(source), "third");
  EXPECT_EQ(source.path(), file.string());
}

TEST(FileTokenSource, KeepsTheLastGoodTokenWhileTheFileIsBeingReplaced) {
  ScratchDir dir;
  const auto file = dir.path() / "token";
  write_file(file, "good");
  FakeClock clock;
  FileTokenSource source(file.string(), 60s, clock.fn());
  EXPECT_EQ(token_of(source), "good");
  std::filesystem::remove(file);
  clock.now += 61s;
  EXPECT_EQ(token_of(source), "good");
  write_file(file, "   \n");  // briefly empty
  EXPECT_EQ(token_of(source), "good");
  write_file(file, "new");  // a failed read does not start a new interval: read again at once
  EXPECT_EQ(token_of(source), "new");
}

TEST(FileTokenSource, NoTokenEverReadIsAnErrorNamingTheFile) {
  ScratchDir dir;
  const std::string file = (dir.path() / "token").string();
  FileTokenSource missing(file);
  auto t = missing.token();
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error(), "cannot read " + file + ": no such file or directory");

  write_file(file, "\n");
  FileTokenSource empty(file);
  t = empty.token();
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error(), "token file " + file + ": the token is empty");

  write_file(file, "abc\r\nInjected: header");
  FileTokenSource injected(file);
  t = injected.token();
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error(), "token file " + file +
                           ": the token has a space, a control character or a non-ASCII byte at offset 3 (it goes "
                           "into an HTTP header)");
}

TEST(FileTokenSource, UsesTheInjectedReader) {
  int reads = 0;
  FakeClock clock;
  FileTokenSource source("/virtual/token", 10s, clock.fn(), [&](const std::string& path) -> Expected<std::string> {
    ++reads;
    return path + "-" + std::to_string(reads);
  });
  EXPECT_EQ(token_of(source), "/virtual/token-1");
  EXPECT_EQ(token_of(source), "/virtual/token-1");
  clock.now += 10s;
  EXPECT_EQ(token_of(source), "/virtual/token-2");
  EXPECT_EQ(reads, 2);
}

TEST(FileTokenSource, IsSafeToShareBetweenThreads) {
  std::atomic<int> reads{0};
  FileTokenSource source("/virtual", 0s, {}, [&](const std::string&) -> Expected<std::string> {
    ++reads;
    return std::string("tok");
  });
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&] {
      for (int j = 0; j < 200; ++j) EXPECT_EQ(token_of(source), "tok");
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(reads.load(), 800);  // interval 0: every call reads
}

TEST(StaticTokenSource, ReturnsItsToken) {
  StaticTokenSource source("abc");
  source.expire();
  EXPECT_EQ(token_of(source), "abc");
}

}  // namespace
}  // namespace gpubank::k8s
