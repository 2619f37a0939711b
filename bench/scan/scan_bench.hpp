// scan_bench's internal header: what its files (bench/scan_bench.cpp and bench/scan/*.cpp)
// share. What the benchmark does is described at the top of bench/scan_bench.cpp.
#pragma once

#include <sys/types.h>

#include <array>
#include <chrono>
#include <csignal>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <httplib.h>

#include "core/expected.hpp"
#include "governance/lowutil.hpp"
#include "governance/prometheus_client.hpp"
#include "governance/scanner.hpp"
#include "serving/signals.hpp"
#include "store/store.hpp"

#ifndef GPUBANK_SOURCE_DIR
#error "GPUBANK_SOURCE_DIR must name the source tree (bench/CMakeLists.txt sets it)"
#endif

namespace gpubank::bench::scan {

namespace fs = std::filesystem;
namespace gov = gpubank::governance;
using Clock = std::chrono::steady_clock;

constexpr std::int64_t kMinute = 60;
// Where scraped data can go: Prometheus takes no sample over an hour older than the newest
// it holds (its own `up` samples carry the wall clock) nor over 10 minutes ahead of the
// clock (scrape.go's maxAheadTime). The data starts this long before the load begins and is
// served up to this far ahead of the clock, each with minutes to spare.
constexpr std::int64_t kStartBehind = 58 * kMinute;
constexpr std::int64_t kMaxAhead = 9 * kMinute + 30;

// ---- interruption, child processes and readings of /proc (process.cpp) ---------------------

extern volatile std::sig_atomic_t g_interrupted;
void on_interrupt(int);

struct Interrupted : std::runtime_error {
  Interrupted() : std::runtime_error("interrupted") {}
};
void check_interrupted();

std::string tail_of(const fs::path& file, std::size_t bytes = 2000);

// A child process with stdout and stderr in a log file. It gets SIGTERM when this program
// dies (PR_SET_PDEATHSIG: also after SIGKILL, where no destructor runs); the destructor
// stops it (SIGTERM, then SIGKILL after a grace period) and reaps it.
class Child {
 public:
  Child() = default;
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  ~Child() { stop(); }

  void start(const std::vector<std::string>& argv, const fs::path& log);

  // Whether it still runs (reaps it when it ended).
  bool running();

  // Waits for it to end; its exit status (128 + signal when killed).
  int wait();

  void signal(int sig) const;

  void stop(std::chrono::seconds grace = std::chrono::seconds(30));

  [[nodiscard]] pid_t pid() const { return pid_; }
  [[nodiscard]] const fs::path& log() const { return log_; }

 private:
  pid_t pid_ = -1;
  int exit_status_ = -1;
  fs::path log_;
};

// CPU seconds (user + system) of a process, from /proc/<pid>/stat.
double process_cpu_seconds(pid_t pid);

// VmRSS of a process in MiB.
double rss_mib(pid_t pid);

double seconds_since(Clock::time_point t0);

// ---- options (bench/scan_bench.cpp) ----------------------------------------------------------

struct Options {
  int workloads = 10'000;
  int step_seconds = 60;
  int repetitions = 5;
  int later_scans = 4;
  int baseline_workloads = 0;  // 0: all
  int baseline_repetitions = 0;  // 0: --repetitions
  std::string loader = "scrape";
  int shards = 20;
  int scrape_interval_ms = 500;
  std::string policies = std::string(GPUBANK_SOURCE_DIR) + "/examples/policies";
  std::string work_dir;
  bool keep = false;
  std::uint64_t seed = 31;
  std::string summary;
};

// ---- the generated cluster (cluster.cpp) -----------------------------------------------------

struct PoolDef {
  const char* name;
  const char* gpu_model;  // the pool's gpuModel, as the exporter labels allocations
  const char* partition;
  const char* model_name;  // NVML's name, dcgm-exporter's modelName
  const char* node_prefix;
  double fb_mib;
  double power_limit_w;
};
// The pools of examples/policies/00-guardrails.yaml.
inline constexpr PoolDef kPools[] = {
    {"h100-rdma-training", "H100", "full", "NVIDIA H100 80GB HBM3", "h100-train", 81559, 700},
    {"h100-inference", "H100", "full", "NVIDIA H100 80GB HBM3", "h100-infer", 81559, 700},
    {"l40s-inference", "L40S", "full", "NVIDIA L40S", "l40s", 46068, 350},
    {"mig-or-shared-development", "A100", "1g.10gb", "NVIDIA A100-SXM4-80GB", "a100-dev", 81920, 400},
};

struct Pod {
  std::string name, uid, container;
  std::int64_t start_s = 0;
  std::vector<int> devices;  // into Cluster::devices
};

struct Workload {
  std::string uid, type, kind, name, ns, group, owner, cost_center, queue, capacity_role, checkpointable;
  // Whether its pods carry the owner's UID: not for InferenceServices and LeaderWorkerSets
  // (docs/attribution.md), which the scanner keys by kind, namespace and name.
  bool has_uid = true;
  [[nodiscard]] std::string key() const { return has_uid ? uid : kind + "/" + ns + "/" + name; }
  int pool = 0;
  std::optional<std::int64_t> keep_until_s;
  std::optional<std::int64_t> checkpoint_ms;  // the bank's checkpoint notice to its Kueue Workload
  std::string category;                       // what the generator made of it (the mix table)
  bool shared = false;                        // time-sliced: each device held with another notebook
  // Device values: utilisation in percent with its spread, memory and power as fractions.
  double util = 0, util_spread = 0, mem = 0, power = 0;
  std::optional<std::int64_t> busy_from_s;  // "recovering": busy from then on
  std::vector<Pod> pods;
};

struct Device {
  int node = 0, index = 0, pool = 0;
  std::string uuid;
  std::vector<std::pair<int, int>> holders;  // (workload, pod)
};

struct Node {
  std::string name;
  int shard = 0;
};

struct Loan {
  std::string pool, lender, borrower;
  double gpus = 0;
};

enum class Field { Util, FbUsed, FbFree, Power, PowerLimit, Allocation, PodStart, Loan };
inline constexpr Field kFields[] = {Field::Util,       Field::FbUsed,     Field::FbFree,   Field::Power,
                                    Field::PowerLimit, Field::Allocation, Field::PodStart, Field::Loan};
inline constexpr int kFieldCount = static_cast<int>(std::size(kFields));

struct Series {
  Field field = Field::Util;
  int device = -1, workload = -1, pod = -1, loan = -1;
  std::int64_t first_s = 0;  // it exists from then on (the pod's start)
  std::string prefix;        // `name{labels} `
};

struct Cluster {
  std::vector<Workload> workloads;
  std::vector<Device> devices;
  std::vector<Node> nodes;
  std::vector<Loan> loans;
  std::int64_t from_s = 0, t1_s = 0;
  int step_s = 60, steps = 0, shards = 1;
  int shared_notebooks = 0, unallocated = 0;
  // series[shard][field]
  std::vector<std::array<std::vector<Series>, kFieldCount>> series;
  [[nodiscard]] std::int64_t ts(int k) const { return from_s + std::int64_t{k} * step_s; }
  [[nodiscard]] std::uint64_t series_count() const {
    std::uint64_t n = 0;
    for (const auto& shard : series) {
      for (const auto& f : shard) n += f.size();
    }
    return n;
  }
};

// The cluster of the header comment, with samples from `from_s` to `last_s` and the first
// scan at `t1_s` (the workloads' starts are placed relative to it).
Cluster generate(int n, int step_s, int shards, std::int64_t from_s, std::int64_t t1_s, std::int64_t last_s,
                 std::uint64_t seed);

// ---- the series (series.cpp) -----------------------------------------------------------------

void build_series(Cluster& c);

// The values, rounded as written (integers; power to 0.1 W), so that averages recomputed
// from them are what Prometheus computes.
struct DeviceSample {
  double util, fb_used, fb_free, power, limit;
};

DeviceSample device_sample(const Cluster& c, int device, std::int64_t ts);

// One shard's page for step k: OpenMetrics (timestamps in seconds), the marker last.
std::string render_page(const Cluster& c, int shard, int k);

// The whole data set as one OpenMetrics file (a family's samples together, each series'
// in time order), for promtool. Returns the bytes written.
std::uint64_t write_openmetrics(const Cluster& c, const fs::path& file);

std::uint64_t family_size(const Cluster& c, Field f);
std::uint64_t sample_count(const Cluster& c);

// ---- what the scan must find (checks.cpp) ----------------------------------------------------

// A workload's facts at `now_s` as the generator made them, with the averages over the
// window of the policy that governs it (governance::governing_policy).
gov::WorkloadFacts intended_facts(const Cluster& c, std::size_t wi, const std::vector<gov::ScanPolicy>& policies,
                                  std::int64_t now_s);

// Differences between what the scan observed at `now_s` and what the generator intended,
// workload by workload (facts and verdicts), at most `limit` described.
std::vector<std::string> check_scan(const Cluster& c, const std::vector<gov::ScanPolicy>& policies,
                                    const gov::ScanReport& report, std::int64_t now_s, std::size_t limit);

// ---- Prometheus (prometheus.cpp) -------------------------------------------------------------

// governance::PrometheusClient's protocol (POST /api/v1/query, form-encoded, answers read by
// serving::read_prometheus_query) through an httplib client with TCP_NODELAY. The product's
// client leaves Nagle's algorithm on; httplib writes a POST's headers and body in two sends,
// so the body waits for the server's delayed ACK. This one shows what a query costs without
// that wait: the baseline's best configuration, the loader's marker queries, and a second
// series of scans.
class NoDelayPrometheus final : public gov::PrometheusClient {
 public:
  explicit NoDelayPrometheus(int port);

  Expected<std::vector<serving::PromSample>> query(const std::string& promql, std::int64_t time_ms) override;

  [[nodiscard]] const std::string& url() const override { return url_; }
  [[nodiscard]] std::size_t last_bytes() const { return last_bytes_; }

 private:
  std::string url_;
  httplib::Client client_;
  std::size_t last_bytes_ = 0;
};

class Prometheus {
 public:
  Prometheus(fs::path binary, fs::path dir) : binary_(std::move(binary)), dir_(std::move(dir)) {}

  // Starts it on `tsdb` with `config` (written to prometheus.yml) and waits until it is
  // ready; the seconds that took.
  double start(const fs::path& tsdb, const std::string& config);

  // Replaces the configuration (SIGHUP); scrapes stop when the new one has no targets.
  void reload(const std::string& config);

  [[nodiscard]] std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  [[nodiscard]] int port() const { return port_; }
  [[nodiscard]] pid_t pid() const { return child_.pid(); }
  bool running() { return child_.running(); }
  void stop() { child_.stop(); }
  [[nodiscard]] std::string log_tail() const { return tail_of(dir_ / "prometheus.log"); }

 private:
  void write_config(const std::string& config) const;
  bool wait_ready();

  fs::path binary_, dir_;
  Child child_;
  int port_ = 0;
};

// The first line of `binary --version`, run with its output in `dir`.
std::string program_version(const fs::path& binary, const fs::path& dir);

// ---- loading the data into Prometheus (load.cpp) ---------------------------------------------

struct LoadReport {
  std::string how;
  double prometheus_ready_s = 0;  // start to ready (before the data: scrape; on the blocks: promtool)
  double load_s = 0;              // scrape: first page served to last page committed
  double paced_s = 0;             // scrape: of which waiting for the clock (kMaxAhead)
  double write_s = 0;             // promtool: the OpenMetrics file
  double promtool_s = 0;
  double promtool_peak_mib = 0;  // the largest resident set of a reaped child: promtool's
  std::uint64_t file_bytes = 0;
  std::uint64_t tsdb_bytes = 0;
  std::uint64_t scrapes = 0;
  double prometheus_cpu_s = 0;
  double prometheus_rss_mib = 0;
  std::uint64_t samples = 0;
};

// Serves the data to Prometheus page by page, each shard advancing once Prometheus shows
// its marker.
LoadReport load_by_scraping(const Cluster& c, Prometheus& prometheus, const fs::path& tsdb, const Options& o);

LoadReport load_with_promtool(const Cluster& c, Prometheus& prometheus, const fs::path& promtool, const fs::path& dir,
                              const fs::path& tsdb);

// ---- the measurement (run.cpp, product.cpp, baseline.cpp) ------------------------------------

// What the measurements share: run() sets it up once Prometheus holds the data.
struct Context {
  const Options& o;
  const Cluster& c;
  const std::vector<gov::ScanPolicy>& policies;
  const fs::path& dir;  // the work directory
  Prometheus& prometheus;
  std::int64_t t1_ms;
  std::vector<std::string>& failures;  // what the checks found
};

struct ScanRun {
  double seconds = 0;
  double thread_cpu_s = 0;
  double prometheus_cpu_s = 0;
  gov::ScanReport report;
};

// The scans of one client: per repetition, the first and the later ones.
struct ScanSeries {
  std::vector<ScanRun> firsts;
  std::vector<std::vector<ScanRun>> laters;
};

// A fresh store with the bank's checkpoint notices (what `gpubank controller` writes).
std::unique_ptr<store::Store> fresh_store(const Context& x, const std::string& name);

ScanRun timed_scan(const Context& x, gov::Scanner& scanner, std::int64_t at_ms);

// A first scan at T1 on a fresh store and the later ones a minute apart; the first is
// always checked, the later ones when `check_later`.
void scan_series(const Context& x, gov::PrometheusClient& via, const std::string& store_name, const std::string& what,
                 bool check_later, ScanSeries& into);

struct BaselineQuery {
  std::size_t workload = 0;
  std::string promql;
  bool util = false, memory = false, power = false;
};

BaselineQuery baseline_query(const Cluster& c, std::size_t wi, const std::vector<gov::ScanPolicy>& policies);

struct BaselineRun {
  double seconds = 0;
  double prometheus_cpu_s = 0;
  std::vector<double> query_ms;
  std::uint64_t samples = 0;
};

// The baseline over `queries` through `via`; its answers checked against `facts` when given.
BaselineRun run_baseline(const Context& x, gov::PrometheusClient& via, const std::vector<BaselineQuery>& queries,
                         const std::map<std::string, gov::WorkloadFacts, std::less<>>* facts);

// Loads the data, measures, checks and reports: the benchmark; its exit status.
int run(const Options& o);

// ---- the summary (report.cpp) ----------------------------------------------------------------

std::string fixed(double v, int digits);

// What run() measured and found, for the summary.
struct Measured {
  std::string load_before, load_after;
  std::string prometheus_version;
  std::uint64_t samples = 0;
  std::map<std::string, std::map<std::string, int>> mix;  // type -> category -> workloads
  LoadReport load;
  double settle_s = 0;
  std::vector<double> probes;
  std::vector<std::string> failures;
  ScanSeries product, fixed_client;
  std::vector<BaselineRun> baselines;
  BaselineRun baseline_product;  // a part of the baseline through the product's client
  std::size_t baseline_query_count = 0;  // workloads the baseline asked about
  bool extrapolated = false;
  std::map<std::string, std::size_t> answer_bytes;
  double prometheus_rss_end = 0;
};

// Writes the summary (stdout, and --summary), the failures to stderr; the exit status.
int report(const Options& o, const Cluster& c, const std::vector<gov::ScanPolicy>& policies, const Measured& m);

}  // namespace gpubank::bench::scan
