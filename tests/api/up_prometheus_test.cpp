// `gpubank up --speed max --with-prometheus`: the binary serves the embedded day, starts a
// real Prometheus (Debian's prometheus) scraping it, and what Prometheus stored agrees with
// the REST API: GPU series carry pool and UUID labels, and the GPUs the bank counts as used
// are the GPUs the REST API reports as used. Timeouts below only bound waiting for real
// processes; nothing asserts on speed.
#include <gtest/gtest.h>

#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <filesystem>
#include <thread>

#include <date/date.h>
#include <nlohmann/json.hpp>

#include "serving/signals.hpp"
#include "support/paths.hpp"
#include "support/process.hpp"
#include "support/promtool.hpp"

namespace gpubank::testing {
namespace {

int free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  const int port = ntohs(addr.sin_port);
  close(fd);
  return port;
}

struct Child {
  pid_t pid = -1;
  ~Child() {
    if (pid > 0) {
      kill(pid, SIGTERM);
      int status = 0;
      waitpid(pid, &status, 0);
    }
  }
};

nlohmann::json get_json(httplib::Client& client, const std::string& path) {
  auto res = client.Get(path);
  if (!res || res->status != 200) return nullptr;
  return nlohmann::json::parse(res->body, nullptr, false);
}

// The value of a one-sample instant query, or nullopt while Prometheus has none.
std::optional<double> query(httplib::Client& prometheus, const std::string& promql) {
  const auto j = get_json(prometheus, "/api/v1/query?query=" + httplib::detail::encode_query_param(promql));
  if (!j.is_object() || j.value("status", "") != "success") return std::nullopt;
  const auto& result = j["data"]["result"];
  if (!result.is_array() || result.size() != 1) return std::nullopt;
  return std::stod(result[0]["value"][1].get<std::string>());
}

TEST(UpWithPrometheus, GpuSeriesCarryPoolAndUuidAndUsedGpusAgreeWithTheRestApi) {
  ASSERT_TRUE(find_promtool()) << "prometheus is not installed (scripts/bootstrap.sh installs it)";
  const auto dir = std::filesystem::temp_directory_path() / ("gpubank-up-test-" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const int port = free_port();
  const int prometheus_port = free_port();
  const std::string binary = binary_dir() + "/cmd/gpubank/gpubank";
  const std::string port_arg = std::to_string(port), prometheus_arg = std::to_string(prometheus_port);
  const std::string policies = source_dir() + "/examples/policies";
  const std::string inventory = source_dir() + "/examples/inventory/example.yaml";
  const std::string data = (dir / "data").string();
  const std::string log = (dir / "up.log").string();
  const std::string token_file = (dir / "operator.token").string();

  Child up;
  up.pid = fork();
  ASSERT_GE(up.pid, 0);
  if (up.pid == 0) {
    FILE* f = std::freopen(log.c_str(), "w", stderr);
    (void)f;
    execl(binary.c_str(), binary.c_str(), "up", "--speed", "max", "--quiet", "--hours", "6", "--serving-load", "0.05",
          "--port", port_arg.c_str(),
          "--policies", policies.c_str(), "--inventory", inventory.c_str(), "--data-dir", data.c_str(),
          "--with-prometheus", "--prometheus-port", prometheus_arg.c_str(), "--token-file", token_file.c_str(),
          static_cast<char*>(nullptr));
    _exit(127);
  }

  httplib::Client api("127.0.0.1", port);
  httplib::Client prometheus("127.0.0.1", prometheus_port);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(3);
  // The API answers its operator's token only (written before the server listens); the
  // Prometheus scrapes with a token of its own, from its configuration.
  std::string token;
  while (token.empty() && std::chrono::steady_clock::now() < deadline) {
    std::ifstream in(token_file);
    std::getline(in, token);
    if (token.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_FALSE(token.empty()) << "no " << token_file << "; see " << log;
  while (!api.Get("/readyz") && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  {
    auto anonymous = api.Get("/api/v1/clock");
    ASSERT_TRUE(anonymous);
    EXPECT_EQ(anonymous->status, 401) << anonymous->body;
  }
  api.set_bearer_token_auth(token);
  // The (6-hour) day runs at max speed; after that the platform's state stays as it is.
  nlohmann::json clock;
  while (std::chrono::steady_clock::now() < deadline) {
    clock = get_json(api, "/api/v1/clock");
    if (clock.is_object() && clock.value("finished", false)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  ASSERT_TRUE(clock.is_object() && clock.value("finished", false)) << "see " << log;

  const auto pools = get_json(api, "/api/v1/pools");
  ASSERT_TRUE(pools.is_array());
  double used_by_rest = 0;
  for (const auto& p : pools) used_by_rest += p["used"].get<double>();
  const auto gpus = get_json(api, "/api/v1/gpus?pool=h100-inference");
  ASSERT_TRUE(gpus.is_array());
  EXPECT_EQ(gpus.size(), 48u);  // 6 nodes x 8 H100 in the example inventory

  // Wait for a scrape of the finished state (the platform's clock gauge at the day's end).
  std::optional<double> clock_seen;
  while (std::chrono::steady_clock::now() < deadline) {
    clock_seen = query(prometheus, "gpubank_twin_virtual_time_seconds");
    if (clock_seen && *clock_seen == 6 * 3600) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  ASSERT_TRUE(clock_seen && *clock_seen == 6 * 3600) << "Prometheus never scraped the finished day; see " << dir;

  const auto used = query(prometheus, R"(sum(gpubank_quota_gpus{kind="used"}))");
  ASSERT_TRUE(used);
  EXPECT_GT(*used, 0);
  EXPECT_EQ(*used, used_by_rest);

  // The autoscaler's two ways to its signals agree on the finished (frozen) state: the
  // service's own /metrics page read directly, and the same series through Prometheus'
  // query API (raw responses through read_prometheus_query and from_prometheus).
  {
    auto page = api.Get("/metrics");
    ASSERT_TRUE(page && page->status == 200);
    serving::ScrapeOptions options;
    options.model_name = "customer-service-llm";
    auto direct = serving::read_vllm_text(page->body, 6 * 3'600'000, options);
    ASSERT_TRUE(direct.ok()) << direct.error();
    ASSERT_FALSE(direct->replicas.empty());
    serving::SignalWindow window;
    ASSERT_TRUE(window.add(*direct).ok());
    const serving::Observation seen = window.observe();
    auto raw = [&](const std::string& promql) {
      auto res = prometheus.Get("/api/v1/query?query=" + httplib::detail::encode_query_param(promql));
      EXPECT_TRUE(res && res->status == 200) << promql;
      auto samples = serving::read_prometheus_query(res ? res->body : std::string("{}"));
      EXPECT_TRUE(samples.ok()) << promql << ": " << samples.error();
      return samples.ok() ? *samples : std::vector<serving::PromSample>{};
    };
    const std::string m = R"({model_name="customer-service-llm"})";
    serving::PrometheusResults results;
    results.t_ms = 6 * 3'600'000;
    results.queue_depth = raw("sum(vllm:num_requests_waiting" + m + ")");
    results.kv_cache = raw("sum(avg by (replica) (vllm:kv_cache_usage_perc" + m + "))");
    results.pods_reporting = raw("count(count by (replica) (vllm:num_requests_waiting" + m + "))");
    results.ttft_p95 = raw("histogram_quantile(0.95, sum by (le) (rate(vllm:time_to_first_token_seconds_bucket" + m + "[2m])))");
    const auto through = serving::from_prometheus(results);
    ASSERT_TRUE(through.ok()) << through.error();
    EXPECT_EQ(through->replicas_reporting, seen.replicas_reporting);
    EXPECT_EQ(through->queue_depth, seen.queue_depth);
    ASSERT_TRUE(through->kv_cache_usage && seen.kv_cache_usage);
    EXPECT_NEAR(*through->kv_cache_usage, *seen.kv_cache_usage, 1e-12);
    // TTFT is a rate, and Prometheus' [2m] is two minutes of wall time: whether first tokens
    // fall into it depends on how fast this machine ran the day (the CI run that started this
    // test next to the heavy ones saw some; a quiet run saw none). So either no sample, or a
    // quantile within the histogram's finite buckets (vLLM's largest is 2560 s).
    if (through->ttft_p95_s) {
      EXPECT_GT(*through->ttft_p95_s, 0);
      EXPECT_LE(*through->ttft_p95_s, 2560);
    }
  }

  // Every device has a dcgm series with a GPU UUID; joined on it, gpubank_gpu_info gives
  // the pool: 64 + 48 H100, 16 L40S, 8 A100 as 56 MIG instances = 184 devices.
  EXPECT_EQ(query(prometheus, R"(count(DCGM_FI_DEV_POWER_USAGE{UUID=~"GPU-[0-9a-f-]{36}"}))"), 184);
  EXPECT_EQ(query(prometheus, R"(count(gpubank_gpu_info{pool="h100-rdma-training",gpu_uuid=~"GPU-.+"}))"), 64);
  EXPECT_EQ(query(prometheus, R"(count(count by (gpu_uuid) (gpubank_gpu_info{pool="mig-or-shared-development"})))"), 8);
  const auto joined = query(prometheus,
                            R"(count(DCGM_FI_DEV_GPU_UTIL * on (UUID) group_left (pool) )"
                            R"q(label_replace(gpubank_gpu_info{pool="h100-inference"}, "UUID", "$1", "gpu_uuid", "(.*)")))q");
  EXPECT_EQ(joined, 48);

  // The mission's attribution checks, as PromQL on what Prometheus stored: every device
  // sample has a mapping_status (the twin's nodes run the exporter's join), metasync knew
  // every pod that held a device, and no device that is not shared is attributed to two
  // pods at one time.
  EXPECT_EQ(query(prometheus, R"(absent(DCGM_FI_DEV_POWER_USAGE{mapping_status=""}))"), 1);
  EXPECT_EQ(query(prometheus, R"(absent(DCGM_FI_DEV_POWER_USAGE{mapping_status="unknown"}))"), 1);
  EXPECT_GT(query(prometheus, R"(count(DCGM_FI_DEV_POWER_USAGE{mapping_status="mapped"}))").value_or(0), 0);
  EXPECT_EQ(query(prometheus, R"(absent(count by (UUID, GPU_I_ID) (DCGM_FI_DEV_POWER_USAGE{mapping_status="mapped",sharing=""}) > 1))"),
            1);
  EXPECT_EQ(query(prometheus, R"(count(gpubank_gpu_allocation_info))"),
            query(prometheus, R"(count(DCGM_FI_DEV_POWER_USAGE{mapping_status="mapped"}))"));

  // vLLM's series carry the pod and namespace a PodMonitor scrape would give them, so they
  // join to the pod's workload as showback's token and SLO queries join them.
  const auto vllm_series = query(prometheus, R"(count(vllm:num_requests_running))");
  ASSERT_TRUE(vllm_series);
  EXPECT_GT(*vllm_series, 0);
  EXPECT_EQ(query(prometheus,
                  R"(count(vllm:num_requests_running * on (namespace, pod) group_left (workload) )"
                  R"(max by (namespace, pod, workload) (gpubank_gpu_allocation_info)))"),
            *vllm_series);

  // The governance commands run against the twin's Prometheus unchanged: the scanner sees
  // every attributed workload and gives each one verdict, and showback adds the twin's
  // devices up. (The twin's pods were created in virtual time and Prometheus keeps wall
  // time, so the verdicts themselves are not checked here: tests/governance does that.)
  const std::string prometheus_url = "http://127.0.0.1:" + prometheus_arg;
  const auto scanned = run_process({binary, "scan", "--prometheus", prometheus_url, "--policies", policies, "--store",
                                    (dir / "governance.db").string(), "-o", "json"});
  ASSERT_EQ(scanned.status, 0) << scanned.err;
  const auto scan = nlohmann::json::parse(scanned.out, nullptr, false);
  ASSERT_TRUE(scan.is_object()) << scanned.out;
  const auto workloads =
      query(prometheus, R"(count(count by (namespace, workload_kind, workload, workload_uid) (gpubank_gpu_allocation_info{workload!=""})))");
  ASSERT_TRUE(workloads);
  EXPECT_EQ(scan["workloads"], *workloads);
  int judged = 0;
  for (const auto& [verdict, n] : scan["verdicts"].items()) judged += n.get<int>();
  EXPECT_EQ(judged, *workloads);
  EXPECT_EQ(scan["queries"].size(), 8u);  // with training_progress and training_phase (the twin's jobs report neither: no answer)
  // A period reaching past now: its last minute's sample is the latest scrape (Prometheus
  // looks back five minutes), as the twin has run for seconds of wall time, not minutes.
  const auto now = std::chrono::floor<std::chrono::minutes>(std::chrono::system_clock::now());
  auto at = [](auto t) { return date::format("%FT%TZ", t); };
  const auto shown = run_process({binary, "report", "showback", "--prometheus", prometheus_url, "--policies", policies,
                                  "--from", at(now - std::chrono::minutes(5)), "--to", at(now + std::chrono::minutes(2)),
                                  "--format", "json"});
  ASSERT_EQ(shown.status, 0) << shown.err;
  const auto showback = nlohmann::json::parse(shown.out, nullptr, false);
  ASSERT_TRUE(showback.is_object()) << shown.out;
  EXPECT_FALSE(showback["rows"].empty());
  EXPECT_GT(showback["totals"].back()["allocatedGpuHours"].get<double>(), 0);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace gpubank::testing
