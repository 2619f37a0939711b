// `gpubank serving recommend` against a real Prometheus (Debian's prometheus) scraping
// three vLLM pages served on loopback (the twin's exposition, one replica per page as real
// pods serve them): the rendered queries read what the pages say; the same pages read
// directly agree; samples older than --max-age, and Prometheus killed, make the sync hold
// (exit 1, the count kept, the cause named). Waits bound only the start of real processes.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include <nlohmann/json.hpp>

#include "support/paths.hpp"
#include "support/process.hpp"
#include "support/prometheus_server.hpp"
#include "vllm_page.hpp"

namespace gpubank::autoscale {
namespace {

using gpubank::testing::ChildProcess;
using gpubank::testing::prometheus_query;
using gpubank::testing::run_process;

nlohmann::json last_line(const std::string& out) {
  std::string line;
  std::size_t end = out.find_last_not_of('\n');
  if (end == std::string::npos) return nullptr;
  const std::size_t start = out.rfind('\n', end);
  line = out.substr(start == std::string::npos ? 0 : start + 1, end - (start == std::string::npos ? 0 : start + 1) + 1);
  return nlohmann::json::parse(line, nullptr, false);
}

TEST(ServingRecommendLive, TheRenderedQueriesOnARealPrometheusAndTheHoldWhenItIsGone) {
  ASSERT_TRUE(gpubank::testing::find_on_path("prometheus")) << "prometheus is not installed (scripts/bootstrap.sh installs it)";
  // 12 + 16 + 8 waiting over three replicas, KV 0.5 / 0.6 / 0.4; 20 requests finished per scrape.
  testing::VllmPageServer a(12, 30, 0.5, 20, 400'000), b(16, 30, 0.6, 20, 400'000), c(8, 30, 0.4, 20, 400'000);
  const auto dir = std::filesystem::temp_directory_path() / ("gpubank-recommend-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  const int port = gpubank::testing::free_port();
  ChildProcess prometheus;
  gpubank::testing::start_prometheus(prometheus, dir, "vllm", {a.address(), b.address(), c.address()}, port);
  ASSERT_GT(prometheus.pid, 0);
  httplib::Client client("127.0.0.1", port);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(2);
  // Three pods scraped, each at least twice (a rate).
  while (std::chrono::steady_clock::now() < deadline) {
    const auto pods = prometheus_query(client, R"(count(rate(vllm:request_success_total{job="vllm"}[2m]) > 0))");
    if (pods && *pods == 3) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  ASSERT_EQ(prometheus_query(client, R"(count(rate(vllm:request_success_total{job="vllm"}[2m]) > 0))"), 3)
      << "see " << (dir / "prometheus.log");

  const std::string gpubank = gpubank::testing::binary_dir() + "/cmd/gpubank/gpubank";
  const std::string url = "http://127.0.0.1:" + std::to_string(port);
  const std::vector<std::string> base{gpubank, "serving", "recommend", "--policies", gpubank::testing::examples_dir() + "/policies",
                                      "--policy", "customer-service-llm", "--replicas", "3", "--selector", R"(job="vllm")",
                                      "--replica-label", "instance", "-o", "json"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> argv = base;
    argv.insert(argv.end(), extra.begin(), extra.end());
    return run_process(argv);
  };

  const auto live = with({"--prometheus", url});
  ASSERT_EQ(live.status, 0) << live.err;
  const auto j = last_line(live.out);
  ASSERT_TRUE(j.is_object()) << live.out;
  EXPECT_EQ(j["held"], false);
  EXPECT_EQ(j["observation"]["replicasReporting"], 3);
  EXPECT_EQ(j["observation"]["queueDepth"], 36.0);
  EXPECT_EQ(j["observation"]["running"], 90.0);
  EXPECT_NEAR(j["observation"]["kvCacheUsage"].get<double>(), 0.5, 1e-12);
  ASSERT_TRUE(j["observation"]["ttftP95Seconds"].is_number()) << j.dump();
  EXPECT_GT(j["observation"]["ttftP95Seconds"].get<double>(), 0.3);
  EXPECT_LE(j["observation"]["ttftP95Seconds"].get<double>(), 0.5);
  // The example's chat policy: 8 waiting per replica; 36 over 3 asks for ceil(36 / 8) = 5,
  // and the TTFT (0.4 s) and KV (50 %) are below their targets.
  EXPECT_EQ(j["desired"], 5) << j.dump();
  // pod-deletion-cost: requests in flight, the fewest first (c: 38, a: 42, b: 46).
  const nlohmann::json costs = nlohmann::json::array({{{"replica", c.address()}, {"cost", 38}},
                                                      {{"replica", a.address()}, {"cost", 42}},
                                                      {{"replica", b.address()}, {"cost", 46}}});
  EXPECT_EQ(j["deletionCosts"], costs) << j.dump();

  // The same pages read directly (two syncs a second apart for the rates) see the same.
  const auto direct = run_process({gpubank, "serving", "recommend", "--policies", gpubank::testing::examples_dir() + "/policies",
                                   "--policy", "customer-service-llm", "--replicas", "3", "--scrape", a.url(), "--scrape",
                                   b.url(), "--scrape", c.url(), "--model-name", "chat", "--every", "1s", "--syncs", "2",
                                   "-o", "json"});
  ASSERT_EQ(direct.status, 0) << direct.err;
  const auto d = last_line(direct.out);
  ASSERT_TRUE(d.is_object()) << direct.out;
  EXPECT_EQ(d["observation"]["replicasReporting"], 3);
  EXPECT_EQ(d["observation"]["queueDepth"], 36.0);
  EXPECT_EQ(d["desired"], 5);
  EXPECT_EQ(d["deletionCosts"], costs) << d.dump();

  // Samples are at least a few milliseconds old: with a limit of 1 ms they are stale.
  const auto stale = with({"--prometheus", url, "--max-age", "1ms"});
  EXPECT_EQ(stale.status, 1) << stale.err;
  const auto s = last_line(stale.out);
  ASSERT_TRUE(s.is_object()) << stale.out;
  EXPECT_EQ(s["held"], true);
  EXPECT_EQ(s["desired"], 3);
  EXPECT_NE(s["signalsError"].get<std::string>().find("autoscale.signals-stale"), std::string::npos) << s.dump();

  // Prometheus killed: the sync holds at 3 and names the cause.
  ::kill(prometheus.pid, SIGKILL);
  int status = 0;
  ::waitpid(prometheus.pid, &status, 0);
  prometheus.pid = -1;
  const auto gone = with({"--prometheus", url, "--timeout", "2s"});
  EXPECT_EQ(gone.status, 1) << gone.err;
  const auto g = last_line(gone.out);
  ASSERT_TRUE(g.is_object()) << gone.out;
  EXPECT_EQ(g["held"], true);
  EXPECT_EQ(g["desired"], 3);
  EXPECT_NE(g["signalsError"].get<std::string>().find("could not connect"), std::string::npos) << g.dump();
  EXPECT_NE(gone.err.find("could not connect"), std::string::npos) << gone.err;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace gpubank::autoscale
