// The low-utilisation scanner (`gpubank scan`, library gpubank_governance) at the size issue
// 31 names: 10,000 workloads holding 20,000 GPUs, their attributed series in a real
// Prometheus (Debian's `prometheus`), against the per-workload querying that the issue rules
// out. Acceptance: a scan completes in under 10 s with at most 10 PromQL queries.
//
// The data (a fixed seed; --workloads scales it): 50 % training (PyTorchJob with two pods
// of one GPU, JobSet with one pod of two), 20 % notebooks (bare pods; most in
// mig-or-shared-development, some of them time-sliced two to a GPU), 20 % inference
// (InferenceService, LeaderWorkerSet; serving floors and burst headroom), 10 % batch (Job),
// 16 business groups, 2,000 owners, the examples' four pools. Each workload holds 2 GPUs;
// the GPUs that time-slicing frees are left unallocated, so the cluster has exactly 2 GPUs
// per workload, 8 to a node. Most are busy; some are idle (their alerts open), some idle
// but excluded (startup grace, keep-running-until, a checkpoint notice in the store), some
// too young for the window (and cross it during the later scans), some recover.
//
// The series are those tests/governance/scan_prometheus_test.cpp writes, as the
// attribution exporter names them (docs/metrics-contract.md): DCGM_FI_DEV_GPU_UTIL,
// _FB_USED, _FB_FREE, _POWER_USAGE and _ENFORCED_POWER_LIMIT per device and holder with
// mapping_status="mapped" and the attribution labels (sharing="time-sliced" on shared
// devices), gpubank_gpu_allocation_info per device and holder, gpubank_pod_start_time_seconds
// per pod, gpubank_bank_loan_gpus per loan. One sample every --step-seconds (60) from the
// start of the longest window of the policies (60m in the examples) less 3 minutes before the
// first scan at T1, to the last of the later scans a minute apart after it.
//
// Loading (--loader):
//   scrape    (default) this program serves the series as --shards node exporters (HTTP on
//             loopback, OpenMetrics with explicit timestamps, which Prometheus honours), one
//             step per page; each page ends with a marker sample, and a shard's next page is
//             served only once a query shows Prometheus committed the marker (a scrape commits
//             all its samples at once), so a failed or timed-out scrape just repeats the page.
//             The data ends up in Prometheus' head, where the last hours of a production
//             Prometheus are, and nothing the size of the data is ever written out as text.
//             Prometheus rejects samples more than an hour older than the newest it holds (its
//             own `up` samples carry the wall clock) or over 10 minutes ahead of its clock, so
//             the data is placed around now: from 58 minutes ago, each page served once it is
//             at most 9.5 minutes ahead (with the examples' 60m window and 4 later scans, every
//             page is due when the load starts).
//   promtool  the series written to one OpenMetrics file (gigabytes at this size; it is
//             deleted at once) and turned into TSDB blocks by `promtool tsdb
//             create-blocks-from openmetrics`, as the end-to-end test does; promtool reads the
//             whole file into memory and parses it once more per 2-hour block.
//
// Then --repetitions (5) times, each on a fresh SQLite store under --work-dir:
//   (a) gpubank's scan: governance::Scanner with governance::PrometheusClient over HTTP and
//       no notifier (the printed output is the delivery), the policies of --policies
//       (examples/policies): the first scan at T1 (opens the alerts, notifies, records) and
//       --later-scans (4) one minute apart (few transitions). Wall time, queries, each
//       query's time and samples (ScanReport::queries), Prometheus' CPU (/proc/<pid>/stat)
//       and this thread's. Then the same scans through NoDelayPrometheus (below): the
//       product's client waits about 40 ms per query for a delayed ACK.
//   (b) the baseline: one query per workload at T1 asking the same signals for that
//       workload only (its allocation series, its earliest pod start, and the averages its
//       governing policy's thresholds need over its window; for an uncovered workload the
//       first two), one after another through NoDelayPrometheus (its best configuration),
//       over every workload or a fixed random subset (--baseline-workloads), extrapolated
//       and labelled so; in the first repetition also its first 500 queries through the
//       product's client.
// Medians over the repetitions, once Prometheus is idle after the load and after one
// unreported warm-up scan; a reading of the host's cache contention per repetition
// (cache_probe.hpp).
//
// Checked, so that a fast wrong answer cannot pass: the first scans' and the first
// repetition's later scans' facts (labels, GPUs, start, averages over the governing window)
// and verdicts equal what the generator put in and governance::assess makes of it, for
// every workload; every baseline answer of the first repetition equals the first scan's
// facts for that workload. A difference fails the run (exit 1).
//
// Child processes (Prometheus, promtool) get PR_SET_PDEATHSIG, so they die with this
// program however it ends; a normal end, an error or SIGINT/SIGTERM (checked between steps)
// stops them first and removes the work directory (--keep keeps it).
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "cache_probe.hpp"
#include "core/diagnostic.hpp"
#include "core/timestamp.hpp"
#include "document/decode.hpp"
#include "governance/alert_store.hpp"
#include "governance/lowutil.hpp"
#include "governance/prometheus_client.hpp"
#include "governance/queries.hpp"
#include "governance/scanner.hpp"
#include "policy/policy_set.hpp"
#include "policy/schema.hpp"
#include "policy/validate.hpp"
#include "serving/signals.hpp"
#include "store/store.hpp"

#ifndef GPUBANK_SOURCE_DIR
#error "GPUBANK_SOURCE_DIR must name the source tree (bench/CMakeLists.txt sets it)"
#endif

namespace {

using namespace gpubank;
namespace fs = std::filesystem;
namespace gov = gpubank::governance;
using Clock = std::chrono::steady_clock;
using Json = nlohmann::json;

constexpr std::int64_t kMinute = 60;
// Where scraped data can go: Prometheus takes no sample over an hour older than the newest
// it holds (its own `up` samples carry the wall clock) nor over 10 minutes ahead of the
// clock (scrape.go's maxAheadTime). The data starts this long before the load begins and is
// served up to this far ahead of the clock, each with minutes to spare.
constexpr std::int64_t kStartBehind = 58 * kMinute;
constexpr std::int64_t kMaxAhead = 9 * kMinute + 30;
// Data before the first scan's window: the window is fully covered however the range
// selector treats its left end.
constexpr std::int64_t kMarginBefore = 3 * kMinute;

// ---- interruption and child processes ---------------------------------------------------

volatile std::sig_atomic_t g_interrupted = 0;
void on_interrupt(int) { g_interrupted = 1; }

struct Interrupted : std::runtime_error {
  Interrupted() : std::runtime_error("interrupted") {}
};
void check_interrupted() {
  if (g_interrupted) throw Interrupted();
}

// An executable named `name` on PATH, or nothing.
std::optional<fs::path> find_on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  if (path == nullptr) return std::nullopt;
  std::stringstream dirs(path);
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    if (dir.empty()) continue;
    const fs::path candidate = fs::path(dir) / name;
    std::error_code ec;
    if (fs::is_regular_file(candidate, ec) && ::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return std::nullopt;
}

std::string tail_of(const fs::path& file, std::size_t bytes = 2000) {
  std::ifstream in(file, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return text.size() > bytes ? "..." + text.substr(text.size() - bytes) : text;
}

// A child process with stdout and stderr in a log file. It gets SIGTERM when this program
// dies (PR_SET_PDEATHSIG: also after SIGKILL, where no destructor runs); the destructor
// stops it (SIGTERM, then SIGKILL after a grace period) and reaps it.
class Child {
 public:
  Child() = default;
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  ~Child() { stop(); }

  void start(const std::vector<std::string>& argv, const fs::path& log) {
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) throw std::runtime_error("cannot create " + log.string() + ": " + std::strerror(errno));
    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    if (pid < 0) {
      ::close(fd);
      throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
    }
    if (pid == 0) {
      // Only async-signal-safe calls from here to exec.
      ::prctl(PR_SET_PDEATHSIG, SIGTERM);
      if (::getppid() != parent) ::_exit(127);  // the parent died before prctl took effect
      ::signal(SIGPIPE, SIG_DFL);               // this program ignores it; the child must not inherit that
      ::dup2(fd, STDOUT_FILENO);
      ::dup2(fd, STDERR_FILENO);
      ::execv(args[0], args.data());
      ::_exit(127);
    }
    ::close(fd);
    pid_ = pid;
    log_ = log;
  }

  // Whether it still runs (reaps it when it ended).
  bool running() {
    if (pid_ <= 0) return false;
    int status = 0;
    const pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == 0) return true;
    exit_status_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    pid_ = -1;
    return false;
  }

  // Waits for it to end; its exit status (128 + signal when killed).
  int wait() {
    while (pid_ > 0) {
      int status = 0;
      const pid_t r = ::waitpid(pid_, &status, 0);
      if (r == pid_) {
        exit_status_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
        pid_ = -1;
      } else if (r < 0 && errno != EINTR) {
        pid_ = -1;
      }
    }
    return exit_status_;
  }

  void signal(int sig) const {
    if (pid_ > 0) ::kill(pid_, sig);
  }

  void stop(std::chrono::seconds grace = std::chrono::seconds(30)) {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGTERM);
    const auto deadline = Clock::now() + grace;
    while (running() && Clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      wait();
    }
  }

  [[nodiscard]] pid_t pid() const { return pid_; }
  [[nodiscard]] const fs::path& log() const { return log_; }

 private:
  pid_t pid_ = -1;
  int exit_status_ = -1;
  fs::path log_;
};

// A loopback port nobody listens on now (Prometheus needs a number on its command line).
int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  int port = 0;
  if (fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  if (fd >= 0) ::close(fd);
  if (port == 0) throw std::runtime_error("no free loopback port");
  return port;
}

// CPU seconds (user + system) of a process, from /proc/<pid>/stat.
double process_cpu_seconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto paren = text.rfind(')');
  if (paren == std::string::npos) return 0;
  std::istringstream fields(text.substr(paren + 2));
  std::string f;
  double ticks = 0;
  for (int i = 3; i <= 15 && fields >> f; ++i) {
    if (i == 14 || i == 15) ticks += std::stod(f);  // utime, stime
  }
  return ticks / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

double thread_cpu_seconds() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

// VmRSS of a process in MiB.
double rss_mib(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
  }
  return 0;
}

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Waits until a process is idle: under 5 % of a CPU for 3 seconds in a row, at most
// `limit`. After a load Prometheus works on for a while (seconds of CPU at full speed
// after the last scrape), and scans timed meanwhile measured that too. The seconds waited.
double wait_idle(pid_t pid, std::chrono::seconds limit) {
  const auto t0 = Clock::now();
  int quiet = 0;
  double before = process_cpu_seconds(pid);
  while (quiet < 3 && Clock::now() - t0 < limit) {
    check_interrupted();
    std::this_thread::sleep_for(std::chrono::seconds(1));
    const double now = process_cpu_seconds(pid);
    quiet = now - before < 0.05 ? quiet + 1 : 0;
    before = now;
  }
  return seconds_since(t0);
}

std::uintmax_t directory_bytes(const fs::path& dir) {
  std::uintmax_t total = 0;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (it->is_regular_file(ec)) total += it->file_size(ec);
  }
  return total;
}

std::string load_average() {
  std::ifstream in("/proc/loadavg");
  std::string a, b, c;
  in >> a >> b >> c;
  return a + " " + b + " " + c;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto i = static_cast<std::size_t>(std::ceil(p * static_cast<double>(v.size()))) - 1;
  return v[std::min(i, v.size() - 1)];
}

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

// 12345678 -> "12,345,678".
std::string grouped(std::uint64_t v) {
  std::string digits = std::to_string(v);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string list_of(const std::vector<double>& v, int digits) {
  std::string out;
  for (double x : v) out += (out.empty() ? "" : ", ") + fixed(x, digits);
  return out;
}

// A path under the source tree as relative to it (the summaries go into RESULTS.md).
std::string shown_path(const std::string& path) {
  const std::string root = std::string(GPUBANK_SOURCE_DIR) + "/";
  return path.rfind(root, 0) == 0 ? path.substr(root.size()) : path;
}

std::string rfc3339(std::int64_t s) { return format_rfc3339(Timestamp(std::chrono::seconds(s))); }

// ---- options ------------------------------------------------------------------------------

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

void usage(std::ostream& out) {
  out << "usage: scan_bench [--workloads N] [--step-seconds N] [--repetitions N] [--later-scans N]\n"
         "                  [--baseline-workloads N] [--baseline-repetitions N] [--loader scrape|promtool]\n"
         "                  [--shards N] [--scrape-interval-ms N] [--policies DIR] [--work-dir DIR] [--keep]\n"
         "                  [--seed N] [--summary FILE]\n"
         "gpubank's low-utilisation scan over N workloads x 2 GPUs of attributed series in a real Prometheus\n"
         "(prometheus, and promtool for --loader promtool, on PATH), against one query per workload.\n"
         "Defaults: 10000 workloads, a sample every 60 s, 5 repetitions of a first scan and 4 later ones,\n"
         "the baseline over every workload, the scrape loader with 20 shards scraped every 500 ms,\n"
         "examples/policies, --work-dir <build>/bench-work.\n";
}

bool parse_options(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::optional<std::string> inline_value;
    if (const auto eq = arg.find('='); arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      inline_value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
    }
    auto text = [&](std::string& out) {
      if (inline_value) {
        out = *inline_value;
      } else if (i + 1 < argc) {
        out = argv[++i];
      } else {
        return false;
      }
      return !out.empty();
    };
    auto number = [&](int& out, int min) {
      std::string s;
      if (!text(s)) return false;
      const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
      return ec == std::errc() && end == s.data() + s.size() && out >= min;
    };
    bool ok = true;
    if (arg == "--help" || arg == "-h") {
      usage(std::cout);
      std::exit(0);
    } else if (arg == "--workloads") {
      ok = number(o.workloads, 10);
    } else if (arg == "--step-seconds") {
      ok = number(o.step_seconds, 1) && 3600 % o.step_seconds == 0;
    } else if (arg == "--repetitions") {
      ok = number(o.repetitions, 1);
    } else if (arg == "--later-scans") {
      ok = number(o.later_scans, 0) && o.later_scans <= 10;
    } else if (arg == "--baseline-workloads") {
      ok = number(o.baseline_workloads, 0);
    } else if (arg == "--baseline-repetitions") {
      ok = number(o.baseline_repetitions, 0);
    } else if (arg == "--loader") {
      ok = text(o.loader) && (o.loader == "scrape" || o.loader == "promtool");
    } else if (arg == "--shards") {
      ok = number(o.shards, 1);
    } else if (arg == "--scrape-interval-ms") {
      ok = number(o.scrape_interval_ms, 50);
    } else if (arg == "--policies") {
      ok = text(o.policies);
    } else if (arg == "--work-dir") {
      ok = text(o.work_dir);
    } else if (arg == "--keep") {
      o.keep = true;
    } else if (arg == "--seed") {
      int seed = 0;
      ok = number(seed, 0);
      o.seed = static_cast<std::uint64_t>(seed);
    } else if (arg == "--summary") {
      ok = text(o.summary);
    } else {
      ok = false;
    }
    if (!ok) {
      std::cerr << "scan_bench: bad or unknown option " << argv[i] << " (--help lists them)\n";
      return false;
    }
  }
  if (o.baseline_repetitions == 0) o.baseline_repetitions = o.repetitions;
  return true;
}

// ---- the generated cluster ----------------------------------------------------------------

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
constexpr PoolDef kPools[] = {
    {"h100-rdma-training", "H100", "full", "NVIDIA H100 80GB HBM3", "h100-train", 81559, 700},
    {"h100-inference", "H100", "full", "NVIDIA H100 80GB HBM3", "h100-infer", 81559, 700},
    {"l40s-inference", "L40S", "full", "NVIDIA L40S", "l40s", 46068, 350},
    {"mig-or-shared-development", "A100", "1g.10gb", "NVIDIA A100-SXM4-80GB", "a100-dev", 81920, 400},
};
enum PoolId { kTrainPool = 0, kInferencePool = 1, kL40sPool = 2, kDevPool = 3 };
constexpr int kGpusPerNode = 8;
constexpr const char* kGroups[] = {"search",      "ads",      "customer-service", "research", "recommendation", "speech",
                                   "vision",      "maps",     "payments",         "fraud",    "translation",    "robotics",
                                   "health",      "finance",  "security",         "retail"};
constexpr int kGroupCount = static_cast<int>(std::size(kGroups));
constexpr int kOwners = 2000;

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
constexpr Field kFields[] = {Field::Util,       Field::FbUsed,     Field::FbFree,   Field::Power,
                             Field::PowerLimit, Field::Allocation, Field::PodStart, Field::Loan};
constexpr int kFieldCount = static_cast<int>(std::size(kFields));
constexpr const char* kFieldNames[] = {"DCGM_FI_DEV_GPU_UTIL",       "DCGM_FI_DEV_FB_USED",
                                       "DCGM_FI_DEV_FB_FREE",        "DCGM_FI_DEV_POWER_USAGE",
                                       "DCGM_FI_DEV_ENFORCED_POWER_LIMIT", "gpubank_gpu_allocation_info",
                                       "gpubank_pod_start_time_seconds", "gpubank_bank_loan_gpus"};

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

// A 64-bit mix (splitmix64's finaliser): the noise of a sample is a function of where and
// when it is, so a page can be rendered again identically and averages recomputed exactly.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}
double noise(std::uint64_t device, std::uint64_t field, std::int64_t ts) {  // in [-1, 1)
  const std::uint64_t h = mix(device * 0x100000001b3ULL ^ mix(field ^ mix(static_cast<std::uint64_t>(ts))));
  return static_cast<double>(h >> 11) * 0x1.0p-52 - 1.0;
}

class Rng {
 public:
  explicit Rng(std::uint64_t seed) : engine_(seed) {}
  double uniform(double a, double b) { return a + (b - a) * static_cast<double>(engine_() >> 11) * 0x1.0p-53; }
  int below(int n) { return static_cast<int>(engine_() % static_cast<std::uint64_t>(n)); }
  bool chance(double p) { return uniform(0, 1) < p; }
  std::string hex(int digits) {
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out;
    for (int i = 0; i < digits; ++i) out += kHex[engine_() % 16];
    return out;
  }
  std::string uuid() { return hex(8) + "-" + hex(4) + "-4" + hex(3) + "-a" + hex(3) + "-" + hex(12); }

 private:
  std::mt19937_64 engine_;
};

std::string padded(int v, int width) {
  std::string s = std::to_string(v);
  return std::string(static_cast<std::size_t>(std::max(0, width - static_cast<int>(s.size()))), '0') + s;
}

// Places devices for a pod on the pool's current node (a new one when it does not fit).
class Placer {
 public:
  Placer(Cluster& c, Rng& rng) : c_(c), rng_(rng) {}
  std::vector<int> place(int pool, int gpus) {
    Cursor& cur = cursors_[pool];
    if (cur.node < 0 || cur.used + gpus > kGpusPerNode) {
      cur.node = static_cast<int>(c_.nodes.size());
      cur.used = 0;
      const int shard = cur.node % c_.shards;
      c_.nodes.push_back({std::string(kPools[pool].node_prefix) + "-" + padded(cur.count++, 5), shard});
    }
    std::vector<int> out;
    for (int i = 0; i < gpus; ++i) {
      out.push_back(static_cast<int>(c_.devices.size()));
      c_.devices.push_back({cur.node, cur.used++, pool, "GPU-" + rng_.uuid(), {}});
    }
    return out;
  }

 private:
  struct Cursor {
    int node = -1, used = 0, count = 0;
  };
  Cluster& c_;
  Rng& rng_;
  Cursor cursors_[std::size(kPools)];
};

struct Profile {
  double util, spread, mem, power;
};
Profile busy_training(Rng& r) { return {r.uniform(55, 95), 8, r.uniform(0.4, 0.9), r.uniform(0.5, 0.9)}; }
Profile idle(Rng& r) { return {r.uniform(0.3, 3.5), 1.5, r.uniform(0.02, 0.1), r.uniform(0.08, 0.14)}; }

void apply(Workload& w, const Profile& p) {
  w.util = p.util;
  w.util_spread = p.spread;
  w.mem = p.mem;
  w.power = p.power;
}

// The cluster of the header comment, with samples from `from_s` to `last_s` and the first
// scan at `t1_s` (the workloads' starts are placed relative to it).
Cluster generate(int n, int step_s, int shards, std::int64_t from_s, std::int64_t t1_s, std::int64_t last_s,
                 std::uint64_t seed) {
  Cluster c;
  c.step_s = step_s;
  c.shards = shards;
  c.from_s = from_s;
  c.t1_s = t1_s;
  c.steps = static_cast<int>((last_s - from_s) / step_s) + 1;
  c.series.resize(static_cast<std::size_t>(shards));
  Rng rng(seed);
  Placer placer(c, rng);
  const std::int64_t t1 = c.t1_s;
  auto minutes = [&](double lo, double hi) { return static_cast<std::int64_t>(rng.uniform(lo, hi) * kMinute); };

  const int n_training = n / 2;
  const int n_notebook = n / 5;
  const int n_inference = n / 5;
  const int n_batch = n - n_training - n_notebook - n_inference;
  // Time-sliced notebooks, in pairs: 4 % of the workloads.
  c.shared_notebooks = std::min(n_notebook * 9 / 10, n / 25) / 2 * 2;

  auto base = [&](Workload& w, const char* type, int index) {
    w.uid = rng.uuid();
    w.type = type;
    const int g = rng.below(kGroupCount);
    w.group = kGroups[g];
    w.cost_center = "CC-" + std::to_string(1001 + g);
    w.owner = "u-" + padded(rng.below(kOwners), 5);
    w.name = std::string(type == std::string("training") ? "train" : type == std::string("notebook") ? "nb"
                         : type == std::string("inference") ? "svc" : "batch") + "-" + padded(index, 5);
  };
  auto add_pod = [&](Workload& w, std::string name, std::string container, std::int64_t start, int gpus) {
    Pod p{std::move(name), rng.uuid(), std::move(container), start, placer.place(w.pool, gpus)};
    w.pods.push_back(std::move(p));
  };

  for (int i = 0; i < n_training; ++i) {
    Workload w;
    base(w, "training", i);
    w.ns = w.group + "-training";
    w.queue = w.group + "-training";
    w.pool = kTrainPool;
    w.checkpointable = rng.chance(0.7) ? "true" : "false";
    std::int64_t start = t1 - minutes(120, 72 * 60);
    const double u = rng.uniform(0, 1);
    if (u < 0.74) {
      w.category = "busy";
      apply(w, busy_training(rng));
    } else if (u < 0.84) {
      w.category = "idle";
      apply(w, idle(rng));
    } else if (u < 0.88) {
      w.category = "stalled on input (low utilisation, memory held)";
      apply(w, {rng.uniform(1, 5), 2, rng.uniform(0.6, 0.8), 0.25});
    } else if (u < 0.91) {
      w.category = "idle, started < 30m ago";
      apply(w, idle(rng));
      start = t1 - minutes(5, 25);
    } else if (u < 0.95) {
      w.category = "idle, started 31-59m before T1";
      apply(w, idle(rng));
      start = t1 - minutes(31, 59.5);
    } else if (u < 0.97) {
      w.category = "idle, keep-running-until tomorrow";
      apply(w, idle(rng));
      w.keep_until_s = t1 + 24 * 3600;
    } else if (u < 0.99) {
      w.category = "idle, checkpoint notice 5m before T1";
      apply(w, idle(rng));
      w.checkpoint_ms = (t1 - 5 * kMinute) * 1000;
    } else {
      w.category = "idle, busy again from 1-3m before T1";
      apply(w, idle(rng));
      w.busy_from_s = t1 - minutes(1, 3);
    }
    if (rng.chance(0.7)) {
      w.kind = "PyTorchJob";
      add_pod(w, w.name + "-master-0", "pytorch", start, 1);
      add_pod(w, w.name + "-worker-0", "pytorch", start + rng.below(20), 1);
    } else {
      w.kind = "JobSet";
      add_pod(w, w.name + "-trainer-0-0-" + rng.hex(5), "trainer", start, 2);
    }
    c.workloads.push_back(std::move(w));
  }

  int shared_left = c.shared_notebooks;
  for (int i = 0; i < n_notebook; ++i) {
    Workload w;
    base(w, "notebook", i);
    w.ns = w.group + "-dev";
    w.kind = "Pod";
    // The second of a time-sliced pair shares the first's devices and behaviour.
    Workload* partner = nullptr;
    if (shared_left > 0 && shared_left % 2 == 1) partner = &c.workloads.back();
    w.pool = (shared_left > 0 || rng.chance(0.9)) ? kDevPool : kL40sPool;
    std::int64_t start = t1 - minutes(60, 48 * 60);
    const double u = partner != nullptr ? -1 : rng.uniform(0, 1);
    if (partner != nullptr) {
      w.category = partner->category;
      w.util = partner->util;
      w.util_spread = partner->util_spread;
      w.mem = partner->mem;
      w.power = partner->power;
      if (partner->pods[0].start_s > t1 - 60 * kMinute) start = t1 - minutes(2, 29);
    } else if (u < 0.40) {
      w.category = "idle";
      apply(w, idle(rng));
    } else if (u < 0.85) {
      w.category = "busy";
      apply(w, {rng.uniform(15, 60), 10, rng.uniform(0.2, 0.6), rng.uniform(0.35, 0.6)});
    } else if (u < 0.90) {
      w.category = "idle, power drawn above 20 %";
      apply(w, {rng.uniform(0.5, 3), 1, rng.uniform(0.05, 0.1), rng.uniform(0.25, 0.32)});
    } else if (u < 0.95) {
      w.category = "idle, started < 10m ago";
      apply(w, idle(rng));
      start = t1 - minutes(2, 9);
    } else {
      w.category = "idle, started 11-29m before T1";
      apply(w, idle(rng));
      start = t1 - minutes(11, 29);
    }
    if (partner != nullptr) {
      w.shared = partner->shared = true;
      Pod p{w.name, rng.uuid(), "notebook", start, partner->pods[0].devices};
      w.pods.push_back(std::move(p));
    } else {
      add_pod(w, w.name, "notebook", start, 2);
    }
    if (shared_left > 0) --shared_left;
    c.workloads.push_back(std::move(w));
  }

  for (int i = 0; i < n_inference; ++i) {
    Workload w;
    base(w, "inference", i);
    w.ns = w.group + "-serving";
    w.pool = rng.chance(0.7) ? kInferencePool : kL40sPool;
    const double u = rng.uniform(0, 1);
    w.capacity_role = u < 0.3 ? "serving-floor" : u < 0.5 ? "burst-headroom" : "";
    w.category = w.capacity_role.empty() ? "serving" : w.capacity_role;
    apply(w, {rng.uniform(5, 70), 10, rng.uniform(0.5, 0.9), rng.uniform(0.2, 0.7)});
    const std::int64_t start = t1 - minutes(60, 240 * 60);
    w.has_uid = false;
    if (rng.chance(0.6)) {
      w.kind = "InferenceService";
      add_pod(w, w.name + "-predictor-" + rng.hex(10) + "-" + rng.hex(5), "kserve-container", start, 2);
    } else {
      w.kind = "LeaderWorkerSet";
      add_pod(w, w.name + "-0", "vllm", start, 1);
      add_pod(w, w.name + "-0-1", "vllm", start + rng.below(30), 1);
    }
    c.workloads.push_back(std::move(w));
  }

  for (int i = 0; i < n_batch; ++i) {
    Workload w;
    base(w, "batch", i);
    w.ns = w.group + "-batch";
    w.queue = w.group + "-batch";
    w.kind = "Job";
    w.pool = rng.chance(0.5) ? kTrainPool : kL40sPool;
    w.category = "busy";
    apply(w, {rng.uniform(30, 95), 10, rng.uniform(0.3, 0.8), rng.uniform(0.4, 0.85)});
    add_pod(w, w.name + "-" + rng.hex(5), "main", t1 - minutes(70, 600), 2);
    c.workloads.push_back(std::move(w));
  }

  // The GPUs time-slicing saved stay in the cluster, unallocated.
  c.unallocated = c.shared_notebooks;
  for (int i = 0; i < c.unallocated; ++i) placer.place(kDevPool, 1);

  for (int i = 0; i < 24; ++i) {
    const int lender = rng.below(kGroupCount);
    const int borrower = (lender + 1 + rng.below(kGroupCount - 1)) % kGroupCount;
    c.loans.push_back({kPools[i % 2 == 0 ? kTrainPool : kInferencePool].name, kGroups[lender], kGroups[borrower],
                       static_cast<double>(2 + rng.below(31))});
  }

  for (std::size_t wi = 0; wi < c.workloads.size(); ++wi) {
    Workload& w = c.workloads[wi];
    for (std::size_t pi = 0; pi < w.pods.size(); ++pi) {
      for (int d : w.pods[pi].devices) {
        c.devices[static_cast<std::size_t>(d)].holders.push_back({static_cast<int>(wi), static_cast<int>(pi)});
      }
    }
  }
  return c;
}

// ---- the series -----------------------------------------------------------------------------

using Labels = std::vector<std::pair<std::string, std::string>>;

std::string series_text(const char* name, const Labels& labels) {
  std::string out = name;
  out += '{';
  bool first = true;
  for (const auto& [k, v] : labels) {
    if (v.empty()) continue;  // the exporter leaves out a label it does not know
    out += (first ? "" : ",") + k + "=\"" + v + "\"";
    first = false;
  }
  return out + "} ";
}

void build_series(Cluster& c) {
  auto add = [&](int node, Series s) {
    c.series[static_cast<std::size_t>(c.nodes[static_cast<std::size_t>(node)].shard)][static_cast<std::size_t>(s.field)]
        .push_back(std::move(s));
  };
  for (std::size_t di = 0; di < c.devices.size(); ++di) {
    const Device& d = c.devices[di];
    const PoolDef& pool = kPools[d.pool];
    const Node& node = c.nodes[static_cast<std::size_t>(d.node)];
    const Labels dcgm{{"gpu", std::to_string(d.index)},
                      {"UUID", d.uuid},
                      {"device", "nvidia" + std::to_string(d.index)},
                      {"modelName", pool.model_name},
                      {"Hostname", node.name}};
    auto dcgm_series = [&](Labels labels, int wi, int pi, std::int64_t first) {
      for (int f = 0; f <= static_cast<int>(Field::PowerLimit); ++f) {
        add(d.node, {kFields[f], static_cast<int>(di), wi, pi, -1, first, series_text(kFieldNames[f], labels)});
      }
    };
    if (d.holders.empty()) {
      Labels l = dcgm;
      l.push_back({"mapping_status", "unallocated"});
      dcgm_series(l, -1, -1, c.from_s);
      continue;
    }
    for (const auto& [wi, pi] : d.holders) {
      const Workload& w = c.workloads[static_cast<std::size_t>(wi)];
      const Pod& p = w.pods[static_cast<std::size_t>(pi)];
      Labels l = dcgm;
      l.insert(l.end(), {{"mapping_status", "mapped"},
                         {"namespace", w.ns},
                         {"pod", p.name},
                         {"container", p.container},
                         {"pod_uid", p.uid},
                         {"business_group", w.group},
                         {"owner_id", w.owner},
                         {"cost_center", w.cost_center},
                         {"queue", w.queue},
                         {"workload_type", w.type},
                         {"workload_kind", w.kind},
                         {"workload", w.name},
                         {"workload_uid", w.has_uid ? w.uid : ""},
                         {"sharing", w.shared ? "time-sliced" : ""}});
      const std::int64_t first = std::max(c.from_s, p.start_s);
      dcgm_series(l, wi, pi, first);
      const Labels alloc{{"node", node.name},
                         {"pool", pool.name},
                         {"gpu_model", pool.gpu_model},
                         {"partition", pool.partition},
                         {"gpu_uuid", d.uuid},
                         {"namespace", w.ns},
                         {"pod", p.name},
                         {"container", p.container},
                         {"business_group", w.group},
                         {"owner_id", w.owner},
                         {"cost_center", w.cost_center},
                         {"workload_type", w.type},
                         {"workload_kind", w.kind},
                         {"workload", w.name},
                         {"workload_uid", w.has_uid ? w.uid : ""},
                         {"queue", w.queue},
                         {"capacity_role", w.capacity_role},
                         {"checkpointable", w.checkpointable},
                         {"keep_running_until", w.keep_until_s ? std::to_string(*w.keep_until_s) : ""}};
      add(d.node, {Field::Allocation, static_cast<int>(di), wi, pi, -1, first,
                   series_text(kFieldNames[static_cast<int>(Field::Allocation)], alloc)});
    }
  }
  // One start per pod, from the exporter of the node that holds its first device.
  for (std::size_t wi = 0; wi < c.workloads.size(); ++wi) {
    const Workload& w = c.workloads[wi];
    for (std::size_t pi = 0; pi < w.pods.size(); ++pi) {
      const Pod& p = w.pods[pi];
      const Labels l{{"namespace", w.ns},
                     {"pod", p.name},
                     {"pod_uid", p.uid},
                     {"workload_kind", w.kind},
                     {"workload", w.name},
                     {"workload_uid", w.has_uid ? w.uid : ""},
                     {"business_group", w.group},
                     {"owner_id", w.owner}};
      add(c.devices[static_cast<std::size_t>(p.devices[0])].node,
          {Field::PodStart, -1, static_cast<int>(wi), static_cast<int>(pi), -1, std::max(c.from_s, p.start_s),
           series_text(kFieldNames[static_cast<int>(Field::PodStart)], l)});
    }
  }
  // The controller's loans, on the first shard.
  for (std::size_t li = 0; li < c.loans.size(); ++li) {
    const Loan& loan = c.loans[li];
    c.series[0][static_cast<std::size_t>(Field::Loan)].push_back(
        {Field::Loan, -1, -1, -1, static_cast<int>(li), c.from_s,
         series_text(kFieldNames[static_cast<int>(Field::Loan)],
                     {{"pool", loan.pool}, {"lender", loan.lender}, {"borrower", loan.borrower}})});
  }
}

// The values, rounded as written (integers; power to 0.1 W), so that averages recomputed
// from them are what Prometheus computes.
struct DeviceSample {
  double util, fb_used, fb_free, power, limit;
};

DeviceSample device_sample(const Cluster& c, int device, std::int64_t ts) {
  const Device& d = c.devices[static_cast<std::size_t>(device)];
  const PoolDef& pool = kPools[d.pool];
  double util = 0, spread = 0.5, mem = 0.005, power = 0.09;
  if (!d.holders.empty()) {
    const Workload& w = c.workloads[static_cast<std::size_t>(d.holders[0].first)];  // a shared device: its first holder's
    const bool busy = w.busy_from_s && ts >= *w.busy_from_s;
    util = busy ? 90 : w.util;
    spread = w.util_spread;
    mem = busy ? 0.7 : w.mem;
    power = busy ? 0.8 : w.power;
  }
  const auto dev = static_cast<std::uint64_t>(device);
  DeviceSample s{};
  s.util = std::round(std::clamp(util + spread * noise(dev, 1, ts), 0.0, 100.0));
  s.fb_used = std::round(pool.fb_mib * std::clamp(mem + 0.02 * noise(dev, 2, ts), 0.002, 0.998));
  s.fb_free = pool.fb_mib - s.fb_used;
  s.power = std::round(pool.power_limit_w * std::clamp(power + 0.03 * noise(dev, 3, ts), 0.05, 1.0) * 10) / 10;
  s.limit = pool.power_limit_w;
  return s;
}

double series_value(const Cluster& c, const Series& s, std::int64_t ts) {
  switch (s.field) {
    case Field::Util: return device_sample(c, s.device, ts).util;
    case Field::FbUsed: return device_sample(c, s.device, ts).fb_used;
    case Field::FbFree: return device_sample(c, s.device, ts).fb_free;
    case Field::Power: return device_sample(c, s.device, ts).power;
    case Field::PowerLimit: return kPools[c.devices[static_cast<std::size_t>(s.device)].pool].power_limit_w;
    case Field::Allocation: return 1;
    case Field::PodStart:
      return static_cast<double>(
          c.workloads[static_cast<std::size_t>(s.workload)].pods[static_cast<std::size_t>(s.pod)].start_s);
    case Field::Loan: return c.loans[static_cast<std::size_t>(s.loan)].gpus;
  }
  return 0;
}

void append_number(std::string& out, double v) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);  // shortest text that reads back as v
  out.append(buf, r.ptr);
}

void append_sample(std::string& out, const Cluster& c, const Series& s, std::int64_t ts) {
  out += s.prefix;
  append_number(out, series_value(c, s, ts));
  out += ' ';
  out += std::to_string(ts);
  out += '\n';
}

// One shard's page for step k: OpenMetrics (timestamps in seconds), the marker last.
std::string render_page(const Cluster& c, int shard, int k) {
  const std::int64_t ts = c.ts(k);
  std::string out;
  out.reserve(8 << 20);
  for (int f = 0; f < kFieldCount; ++f) {
    const auto& list = c.series[static_cast<std::size_t>(shard)][static_cast<std::size_t>(f)];
    if (list.empty()) continue;
    out += "# TYPE ";
    out += kFieldNames[f];
    out += " gauge\n";
    for (const Series& s : list) {
      if (s.first_s <= ts) append_sample(out, c, s, ts);
    }
  }
  out += "# TYPE scan_bench_page gauge\nscan_bench_page{shard=\"" + std::to_string(shard) + "\"} " + std::to_string(k) +
         " " + std::to_string(ts) + "\n# EOF\n";
  return out;
}

// The whole data set as one OpenMetrics file (a family's samples together, each series'
// in time order), for promtool. Returns the bytes written.
std::uint64_t write_openmetrics(const Cluster& c, const fs::path& file) {
  std::FILE* out = std::fopen(file.c_str(), "w");
  if (out == nullptr) throw std::runtime_error("cannot create " + file.string() + ": " + std::strerror(errno));
  std::uint64_t bytes = 0;
  std::string buf;
  auto flush = [&] {
    if (std::fwrite(buf.data(), 1, buf.size(), out) != buf.size()) {
      std::fclose(out);
      throw std::runtime_error("writing " + file.string() + " failed: " + std::strerror(errno));
    }
    bytes += buf.size();
    buf.clear();
  };
  for (int f = 0; f < kFieldCount; ++f) {
    buf += "# TYPE ";
    buf += kFieldNames[f];
    buf += " gauge\n";
    for (const auto& shard : c.series) {
      for (const Series& s : shard[static_cast<std::size_t>(f)]) {
        for (int k = 0; k < c.steps; ++k) {
          if (s.first_s <= c.ts(k)) append_sample(buf, c, s, c.ts(k));
        }
        if (buf.size() > (4 << 20)) {
          flush();
          check_interrupted();
        }
      }
    }
  }
  buf += "# EOF\n";
  flush();
  if (std::fclose(out) != 0) throw std::runtime_error("closing " + file.string() + " failed");
  return bytes;
}

// ---- what the scan must find ----------------------------------------------------------------

// A workload's facts at `now_s` as the generator made them, with the averages over the
// window of the policy that governs it (governance::governing_policy).
gov::WorkloadFacts intended_facts(const Cluster& c, std::size_t wi, const std::vector<gov::ScanPolicy>& policies,
                                  std::int64_t now_s) {
  const Workload& w = c.workloads[wi];
  const PoolDef& pool = kPools[w.pool];
  gov::WorkloadFacts f;
  f.workload_uid = w.key();
  f.business_group = w.group;
  f.owner_id = w.owner;
  f.namespace_name = w.ns;
  f.workload_kind = w.kind;
  f.workload = w.name;
  f.workload_type = w.type;
  f.pool = pool.name;
  f.gpu_model = pool.gpu_model;
  f.partition = pool.partition;
  f.capacity_role = w.capacity_role;
  f.checkpointable = w.checkpointable;
  f.keep_running_until_s = w.keep_until_s;
  f.last_checkpoint_ms = w.checkpoint_ms;
  double started = 0;
  for (std::size_t pi = 0; pi < w.pods.size(); ++pi) {
    const Pod& p = w.pods[pi];
    started = pi == 0 ? static_cast<double>(p.start_s) : std::min(started, static_cast<double>(p.start_s));
    for (int d : p.devices) f.gpus += 1.0 / static_cast<double>(c.devices[static_cast<std::size_t>(d)].holders.size());
  }
  f.started_s = started;
  const gov::ScanPolicy* policy = gov::governing_policy(f, policies);
  if (policy == nullptr) return f;
  const std::int64_t window_s = policy->spec.window.milliseconds() / 1000;
  // Per device series: the average of each field over the samples in [now - window, now]
  // (Prometheus 2's range selector includes both ends), then the average over the series.
  double util = 0, memory = 0, power = 0;
  int n = 0;
  for (const Pod& p : w.pods) {
    for (int d : p.devices) {
      double u = 0, used = 0, free = 0, pw = 0, limit = 0;
      int samples = 0;
      for (int k = 0; k < c.steps; ++k) {
        const std::int64_t ts = c.ts(k);
        if (ts < now_s - window_s || ts > now_s || ts < p.start_s) continue;
        const DeviceSample s = device_sample(c, d, ts);
        u += s.util;
        used += s.fb_used;
        free += s.fb_free;
        pw += s.power;
        limit += s.limit;
        ++samples;
      }
      if (samples == 0) continue;
      util += u / samples;
      memory += 100 * (used / samples) / (used / samples + free / samples);
      power += 100 * (pw / samples) / (limit / samples);
      ++n;
    }
  }
  if (n > 0) {
    f.gpu_utilization = util / n;
    f.memory_utilization = memory / n;
    f.power_fraction = power / n;
  }
  return f;
}

std::string without_numbers(const std::string& text) {
  std::string out;
  for (char ch : text) {
    const bool digit = (ch >= '0' && ch <= '9') || ch == '.';
    if (!digit) {
      out += ch;
    } else if (out.empty() || out.back() != '#') {
      out += '#';
    }
  }
  return out;
}

bool near(const std::optional<double>& a, const std::optional<double>& b, double tolerance) {
  if (a.has_value() != b.has_value()) return false;
  return !a || std::fabs(*a - *b) <= tolerance;
}

std::string show(const std::optional<double>& v) { return v ? fixed(*v, 6) : "none"; }

// Differences between what the scan observed at `now_s` and what the generator intended,
// workload by workload (facts and verdicts), at most `limit` described.
std::vector<std::string> check_scan(const Cluster& c, const std::vector<gov::ScanPolicy>& policies,
                                    const gov::ScanReport& report, std::int64_t now_s, std::size_t limit) {
  std::vector<std::string> out;
  std::map<std::string, const gov::Observed*, std::less<>> seen;
  for (const gov::Observed& o : report.observed) seen[o.facts.workload_uid] = &o;
  std::size_t differences = 0;
  auto differ = [&](const std::string& what) {
    if (++differences <= limit) out.push_back(what);
  };
  if (report.workloads != c.workloads.size()) {
    differ("the scan saw " + std::to_string(report.workloads) + " workloads, not " + std::to_string(c.workloads.size()));
  }
  for (std::size_t wi = 0; wi < c.workloads.size(); ++wi) {
    const gov::WorkloadFacts want = intended_facts(c, wi, policies, now_s);
    const auto it = seen.find(want.workload_uid);
    if (it == seen.end()) {
      differ(want.workload_uid + ": not in the scan");
      continue;
    }
    const gov::WorkloadFacts& got = it->second->facts;
    const std::string who = want.workload_uid + " (" + c.workloads[wi].type + ", " + c.workloads[wi].category + ")";
    if (std::tie(got.business_group, got.owner_id, got.namespace_name, got.workload_kind, got.workload, got.workload_type,
                 got.pool, got.gpu_model, got.partition, got.capacity_role, got.checkpointable,
                 got.keep_running_until_s) !=
        std::tie(want.business_group, want.owner_id, want.namespace_name, want.workload_kind, want.workload,
                 want.workload_type, want.pool, want.gpu_model, want.partition, want.capacity_role,
                 want.checkpointable, want.keep_running_until_s)) {
      differ(who + ": labels differ");
    }
    if (std::fabs(got.gpus - want.gpus) > 1e-9) differ(who + ": " + fixed(got.gpus, 3) + " GPUs, not " + fixed(want.gpus, 3));
    if (!near(got.started_s, want.started_s, 1e-6)) differ(who + ": started " + show(got.started_s) + ", not " + show(want.started_s));
    if (!near(got.gpu_utilization, want.gpu_utilization, 1e-6) || !near(got.memory_utilization, want.memory_utilization, 1e-6) ||
        !near(got.power_fraction, want.power_fraction, 1e-6)) {
      differ(who + ": averages " + show(got.gpu_utilization) + "/" + show(got.memory_utilization) + "/" +
             show(got.power_fraction) + ", not " + show(want.gpu_utilization) + "/" + show(want.memory_utilization) + "/" +
             show(want.power_fraction));
    }
    const gov::Verdict v = gov::assess(want, policies, now_s * 1000);
    const gov::Verdict& g = it->second->verdict;
    // The reasons' percentages are left out: Prometheus' running means and these sums agree
    // to about 1e-12, which can round 30.75 either way.
    if (g.kind != v.kind || without_numbers(g.reason) != without_numbers(v.reason)) {
      differ(who + ": verdict " + std::string(gov::to_string(g.kind)) + " (" + g.reason + "), not " +
             std::string(gov::to_string(v.kind)) + " (" + v.reason + ")");
    }
  }
  if (differences > limit) out.push_back("... " + std::to_string(differences - limit) + " more");
  return out;
}

// ---- the baseline: one query per workload ------------------------------------------------------

struct BaselineQuery {
  std::size_t workload = 0;
  std::string promql;
  bool util = false, memory = false, power = false;
};

BaselineQuery baseline_query(const Cluster& c, std::size_t wi, const std::vector<gov::ScanPolicy>& policies) {
  const Workload& w = c.workloads[wi];
  BaselineQuery q;
  q.workload = wi;
  // Its own series only: by UID, or by kind, namespace and name where the pods carry none.
  const std::string uid = w.has_uid ? "workload_uid=\"" + w.uid + "\""
                                    : "namespace=\"" + w.ns + "\", workload_kind=\"" + w.kind + "\", workload=\"" +
                                          w.name + "\"";
  auto tagged = [](const std::string& expr, const char* signal) {
    return "label_replace(" + expr + ", \"signal\", \"" + signal + "\", \"\", \"\")";
  };
  q.promql = tagged("gpubank_gpu_allocation_info{" + uid + "}", "allocation") + "\nor " +
             tagged("min(gpubank_pod_start_time_seconds{" + uid + "})", "start");
  // A per-workload tool knows the workload's type and pool (its first query would tell it;
  // not counted here) and asks only what the governing policy's thresholds need.
  const gov::ScanPolicy* p = gov::governing_policy(intended_facts(c, wi, {}, c.t1_s), policies);
  if (p == nullptr) return q;
  const std::string win = "[" + gov::promql_duration(p->spec.window) + "]";
  const std::string sel = "{mapping_status=\"mapped\", " + uid + "}";
  if (p->spec.thresholds.average_gpu_utilization) {
    q.util = true;
    q.promql += "\nor " + tagged("avg(100 * avg_over_time(DCGM_FI_PROF_GR_ENGINE_ACTIVE" + sel + win +
                                     ")) or avg(avg_over_time(DCGM_FI_DEV_GPU_UTIL" + sel + win + "))",
                                 "gpu_utilization");
  }
  if (p->spec.thresholds.average_memory_utilization) {
    q.memory = true;
    q.promql += "\nor " + tagged("avg(100 * avg_over_time(DCGM_FI_DEV_FB_USED" + sel + win +
                                     ") / (avg_over_time(DCGM_FI_DEV_FB_USED" + sel + win +
                                     ") + avg_over_time(DCGM_FI_DEV_FB_FREE" + sel + win + ")))",
                                 "memory_utilization");
  }
  if (p->spec.thresholds.average_power_fraction) {
    q.power = true;
    q.promql += "\nor " + tagged("avg(100 * avg_over_time(DCGM_FI_DEV_POWER_USAGE" + sel + win +
                                     ") / avg_over_time(DCGM_FI_DEV_ENFORCED_POWER_LIMIT" + sel + win + "))",
                                 "power_fraction");
  }
  return q;
}

// What one baseline answer says against the scan's facts for the workload.
std::optional<std::string> check_baseline(const Cluster& c, const BaselineQuery& q,
                                          const std::vector<serving::PromSample>& samples,
                                          const gov::WorkloadFacts& facts) {
  const Workload& w = c.workloads[q.workload];
  std::size_t holdings = 0;
  for (const Pod& p : w.pods) holdings += p.devices.size();
  std::size_t allocation = 0;
  std::map<std::string, double> signals;
  for (const serving::PromSample& s : samples) {
    const auto it = s.labels.find("signal");
    if (it == s.labels.end()) return "a sample without a signal label";
    if (it->second == "allocation") {
      ++allocation;
    } else {
      signals[it->second] = s.value;
    }
  }
  auto same = [&](const char* name, const std::optional<double>& want) {
    const auto it = signals.find(name);
    return want && it != signals.end() && std::fabs(it->second - *want) <= 1e-9 * std::max(1.0, std::fabs(*want));
  };
  if (allocation != holdings) return std::to_string(allocation) + " allocation series, not " + std::to_string(holdings);
  if (!same("start", facts.started_s)) return std::string("its start differs from the scan's");
  if (q.util && !same("gpu_utilization", facts.gpu_utilization)) return std::string("its GPU utilisation differs");
  if (q.memory && !same("memory_utilization", facts.memory_utilization)) return std::string("its memory utilisation differs");
  if (q.power && !same("power_fraction", facts.power_fraction)) return std::string("its power fraction differs");
  return std::nullopt;
}

// ---- Prometheus -------------------------------------------------------------------------------

// governance::PrometheusClient's protocol (POST /api/v1/query, form-encoded, answers read by
// serving::read_prometheus_query) through an httplib client with TCP_NODELAY. The product's
// client leaves Nagle's algorithm on; httplib writes a POST's headers and body in two sends,
// so the body waits for the server's delayed ACK. This one shows what a query costs without
// that wait: the baseline's best configuration, the loader's marker queries, and a second
// series of scans.
class NoDelayPrometheus final : public gov::PrometheusClient {
 public:
  explicit NoDelayPrometheus(int port) : url_("http://127.0.0.1:" + std::to_string(port)), client_("127.0.0.1", port) {
    client_.set_tcp_nodelay(true);
    client_.set_keep_alive(true);
    client_.set_read_timeout(120, 0);
  }

  Expected<std::vector<serving::PromSample>> query(const std::string& promql, std::int64_t time_ms) override {
    char when[32];
    std::snprintf(when, sizeof when, "%lld.%03lld", static_cast<long long>(time_ms / 1000),
                  static_cast<long long>(time_ms % 1000));
    auto res = client_.Post("/api/v1/query", httplib::Params{{"query", promql}, {"time", when}});
    if (!res) return Unexpected{url_ + ": " + httplib::to_string(res.error())};
    last_bytes_ = res->body.size();
    if (res->status != 200) return Unexpected{url_ + ": HTTP " + std::to_string(res->status) + ": " + res->body.substr(0, 2000)};
    return serving::read_prometheus_query(res->body);
  }

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
  double start(const fs::path& tsdb, const std::string& config) {
    write_config(config);
    const auto t0 = Clock::now();
    for (int attempt = 0;; ++attempt) {
      port_ = free_port();
      child_.start({binary_.string(), "--config.file=" + (dir_ / "prometheus.yml").string(),
                    "--storage.tsdb.path=" + tsdb.string(), "--storage.tsdb.retention.time=30d",
                    "--web.listen-address=127.0.0.1:" + std::to_string(port_), "--log.level=warn"},
                   dir_ / "prometheus.log");
      if (wait_ready()) return seconds_since(t0);
      const std::string log = tail_of(dir_ / "prometheus.log");
      child_.stop();
      // Another process may have taken the port between free_port() and the bind.
      if (attempt < 2 && log.find("address already in use") != std::string::npos) continue;
      throw std::runtime_error("Prometheus did not become ready; its log ends:\n" + log);
    }
  }

  // Replaces the configuration (SIGHUP); scrapes stop when the new one has no targets.
  void reload(const std::string& config) {
    write_config(config);
    child_.signal(SIGHUP);
  }

  [[nodiscard]] std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  [[nodiscard]] int port() const { return port_; }
  [[nodiscard]] pid_t pid() const { return child_.pid(); }
  bool running() { return child_.running(); }
  void stop() { child_.stop(); }
  [[nodiscard]] std::string log_tail() const { return tail_of(dir_ / "prometheus.log"); }

 private:
  void write_config(const std::string& config) const {
    std::ofstream out(dir_ / "prometheus.yml");
    out << config;
    if (!out) throw std::runtime_error("cannot write " + (dir_ / "prometheus.yml").string());
  }

  bool wait_ready() {
    httplib::Client client("127.0.0.1", port_);
    client.set_connection_timeout(1, 0);
    const auto deadline = Clock::now() + std::chrono::minutes(5);
    while (Clock::now() < deadline) {
      check_interrupted();
      if (!child_.running()) return false;
      if (auto r = client.Get("/-/ready"); r && r->status == 200) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  }

  fs::path binary_, dir_;
  Child child_;
  int port_ = 0;
};

// The first line of `binary --version`, run with its output in `dir`.
std::string program_version(const fs::path& binary, const fs::path& dir) {
  const fs::path out = dir / "version.txt";
  Child child;
  child.start({binary.string(), "--version"}, out);
  child.wait();
  const std::string text = tail_of(out, 4000);
  fs::remove(out);
  return text.substr(0, text.find('\n'));
}

// One node exporter shard: serves the page of step `page` to whoever scrapes it.
struct Shard {
  httplib::Server server;
  std::thread thread;
  std::atomic<int> page{0};
  std::atomic<std::uint64_t> scrapes{0};
  int port = 0;
};

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

std::uint64_t family_size(const Cluster& c, Field f) {
  std::uint64_t n = 0;
  for (const auto& shard : c.series) n += shard[static_cast<std::size_t>(f)].size();
  return n;
}

std::uint64_t sample_count(const Cluster& c) {
  std::uint64_t n = 0;
  for (const auto& shard : c.series) {
    for (const auto& list : shard) {
      for (const Series& s : list) {
        for (int k = 0; k < c.steps; ++k) n += s.first_s <= c.ts(k) ? 1 : 0;
      }
    }
  }
  return n;
}

// Serves the data to Prometheus page by page, each shard advancing once Prometheus shows
// its marker.
LoadReport load_by_scraping(const Cluster& c, Prometheus& prometheus, const fs::path& tsdb, const Options& o) {
  LoadReport r;
  r.how = "scraped";
  std::vector<std::unique_ptr<Shard>> shards;
  for (int s = 0; s < c.shards; ++s) {
    auto shard = std::make_unique<Shard>();
    Shard* self = shard.get();
    shard->server.Get("/metrics", [&c, self, s](const httplib::Request&, httplib::Response& res) {
      ++self->scrapes;
      int k = std::min(self->page.load(), c.steps - 1);
      // Prometheus drops scraped samples over 10 minutes ahead of its clock: a page not yet
      // due is held back (the previous one, already committed, is served again).
      const std::int64_t now =
          std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
      while (k > 0 && c.ts(k) > now + kMaxAhead) --k;
      // Not text/plain: httplib would gzip it for Prometheus (which asks for gzip), spending
      // this program's CPU on a loopback transfer.
      res.set_content(render_page(c, s, k), "application/openmetrics-text; version=1.0.0; charset=utf-8");
    });
    shard->port = shard->server.bind_to_any_port("127.0.0.1");
    if (shard->port <= 0) throw std::runtime_error("cannot listen on loopback");
    shard->thread = std::thread([self] { self->server.listen_after_bind(); });
    shards.push_back(std::move(shard));
  }
  // Stop and join the servers on every way out of here.
  struct StopAll {
    std::vector<std::unique_ptr<Shard>>& shards;
    ~StopAll() {
      for (auto& s : shards) {
        s->server.stop();
        if (s->thread.joinable()) s->thread.join();
      }
    }
  } stop_all{shards};

  const double interval = o.scrape_interval_ms / 1000.0;
  std::string config = "global:\n  scrape_interval: " + std::to_string(o.scrape_interval_ms) +
                       "ms\n  scrape_timeout: " + std::to_string(o.scrape_interval_ms) +
                       "ms\nscrape_configs:\n- job_name: gpu-nodes\n  static_configs:\n  - targets:\n";
  for (const auto& s : shards) config += "    - 127.0.0.1:" + std::to_string(s->port) + "\n";
  r.prometheus_ready_s = prometheus.start(tsdb, config);
  const double cpu0 = process_cpu_seconds(prometheus.pid());
  std::cerr << "scan_bench: Prometheus ready in " << fixed(r.prometheus_ready_s, 1) << " s; serving " << c.steps
            << " pages on each of " << c.shards << " shards, scraped every " << fixed(interval, 3) << " s\n";

  NoDelayPrometheus client(prometheus.port());
  const auto t0 = Clock::now();
  {
    const std::int64_t now =
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
    r.paced_s = static_cast<double>(std::max<std::int64_t>(0, c.ts(c.steps - 1) - kMaxAhead - now));
  }
  auto progress_at = t0;
  auto last_progress = t0;
  int done_min = -1;
  for (;;) {
    check_interrupted();
    if (!prometheus.running()) throw std::runtime_error("Prometheus ended; its log ends:\n" + prometheus.log_tail());
    auto answer = client.query("max by (shard) (max_over_time(scan_bench_page[1d]))", c.ts(c.steps - 1) * 1000);
    if (!answer) throw std::runtime_error("the marker query failed: " + answer.error());
    int lowest = c.steps;
    std::vector<int> committed(static_cast<std::size_t>(c.shards), -1);
    for (const serving::PromSample& s : *answer) {
      const auto it = s.labels.find("shard");
      if (it == s.labels.end()) continue;
      const int shard = std::stoi(it->second);
      if (shard >= 0 && shard < c.shards) committed[static_cast<std::size_t>(shard)] = static_cast<int>(s.value);
    }
    for (int s = 0; s < c.shards; ++s) {
      const int k = committed[static_cast<std::size_t>(s)];
      Shard& shard = *shards[static_cast<std::size_t>(s)];
      if (k >= shard.page.load() && k + 1 < c.steps) shard.page.store(k + 1);
      lowest = std::min(lowest, k);
    }
    if (lowest > done_min) {
      done_min = lowest;
      last_progress = Clock::now();
    }
    if (lowest == c.steps - 1) break;
    if (seconds_since(last_progress) > 180) {
      throw std::runtime_error("no shard progressed for 3 minutes (at page " + std::to_string(lowest + 1) + " of " +
                               std::to_string(c.steps) + "); Prometheus' log ends:\n" + prometheus.log_tail());
    }
    if (seconds_since(progress_at) > 10) {
      progress_at = Clock::now();
      std::cerr << "scan_bench: loading: every shard has " << lowest + 1 << " of " << c.steps << " pages after "
                << fixed(seconds_since(t0), 0) << " s\n";
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  r.load_s = seconds_since(t0);
  r.prometheus_cpu_s = process_cpu_seconds(prometheus.pid()) - cpu0;
  for (const auto& s : shards) r.scrapes += s->scrapes.load();

  // No more scrapes: a configuration without targets, confirmed by the targets API.
  prometheus.reload("global:\n  scrape_interval: 1m\n");
  httplib::Client api("127.0.0.1", prometheus.port());
  for (int i = 0;; ++i) {
    check_interrupted();
    auto res = api.Get("/api/v1/targets?state=active");
    if (res && res->status == 200) {
      const Json j = Json::parse(res->body, nullptr, false);
      if (j.is_object() && j["data"]["activeTargets"].is_array() && j["data"]["activeTargets"].empty()) break;
    }
    if (i > 600) throw std::runtime_error("Prometheus kept its scrape targets after a reload");
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  r.prometheus_rss_mib = rss_mib(prometheus.pid());
  r.tsdb_bytes = directory_bytes(tsdb);
  return r;
}

LoadReport load_with_promtool(const Cluster& c, Prometheus& prometheus, const fs::path& promtool, const fs::path& dir,
                              const fs::path& tsdb) {
  LoadReport r;
  r.how = "promtool";
  const fs::path file = dir / "series.om";
  auto t0 = Clock::now();
  r.file_bytes = write_openmetrics(c, file);
  r.write_s = seconds_since(t0);
  std::cerr << "scan_bench: wrote " << fixed(static_cast<double>(r.file_bytes) / (1 << 30), 2) << " GiB of OpenMetrics in "
            << fixed(r.write_s, 1) << " s; promtool tsdb create-blocks-from openmetrics...\n";
  t0 = Clock::now();
  {
    Child tool;
    tool.start({promtool.string(), "tsdb", "create-blocks-from", "openmetrics", "-q", file.string(), tsdb.string()},
               dir / "promtool.log");
    while (tool.running()) {
      if (g_interrupted) {
        tool.stop();
        fs::remove(file);
        throw Interrupted();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    const int status = tool.wait();
    rusage usage{};
    if (::getrusage(RUSAGE_CHILDREN, &usage) == 0) r.promtool_peak_mib = static_cast<double>(usage.ru_maxrss) / 1024.0;
    fs::remove(file);
    if (status != 0) {
      throw std::runtime_error("promtool failed (exit " + std::to_string(status) + "):\n" + tail_of(dir / "promtool.log"));
    }
  }
  r.promtool_s = seconds_since(t0);
  r.tsdb_bytes = directory_bytes(tsdb);
  r.prometheus_ready_s = prometheus.start(tsdb, "global:\n  scrape_interval: 1m\n");
  r.prometheus_rss_mib = rss_mib(prometheus.pid());
  return r;
}

// ---- the measurement --------------------------------------------------------------------------

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

struct ScanStats {
  std::vector<double> first_s, first_prom_cpu, first_thread_cpu, first_query_sum;
  std::vector<double> later_s, later_prom_cpu, later_thread_cpu, later_query_sum;
  std::map<std::string, std::vector<double>> first_query_ms, later_query_ms;
  std::map<std::string, std::size_t> query_samples;  // at T1
  std::vector<std::string> query_order;
  double slowest = 0;
  std::size_t count = 0;
};

ScanStats stats_of(const ScanSeries& series) {
  ScanStats st;
  auto take = [&](const ScanRun& r, bool first) {
    double sum = 0;
    for (const gov::QueryTiming& q : r.report.queries) {
      if (first) {
        if (!st.query_samples.count(q.name)) st.query_order.push_back(q.name);
        st.query_samples[q.name] = q.samples;
      }
      (first ? st.first_query_ms : st.later_query_ms)[q.name].push_back(q.seconds * 1000);
      sum += q.seconds;
    }
    (first ? st.first_s : st.later_s).push_back(r.seconds);
    (first ? st.first_prom_cpu : st.later_prom_cpu).push_back(r.prometheus_cpu_s);
    (first ? st.first_thread_cpu : st.later_thread_cpu).push_back(r.thread_cpu_s);
    (first ? st.first_query_sum : st.later_query_sum).push_back(sum);
    st.slowest = std::max(st.slowest, r.seconds);
    ++st.count;
  };
  for (const ScanRun& r : series.firsts) take(r, true);
  for (const auto& rep : series.laters) {
    for (const ScanRun& r : rep) take(r, false);
  }
  return st;
}

std::vector<double> map_get(const std::map<std::string, std::vector<double>>& m, const std::string& key) {
  const auto it = m.find(key);
  return it == m.end() ? std::vector<double>{} : it->second;
}

struct BaselineRun {
  double seconds = 0;
  double prometheus_cpu_s = 0;
  std::vector<double> query_ms;
  std::uint64_t samples = 0;
};

std::string verdict_counts(const gov::ScanReport& r) {
  std::string out;
  for (const auto& [kind, count] : r.verdicts) out += (out.empty() ? "" : ", ") + kind + " " + grouped(count);
  if (!r.excluded.empty()) {
    out += " (excluded: ";
    bool first = true;
    for (const auto& [reason, count] : r.excluded) {
      out += (first ? "" : ", ") + reason + " " + grouped(count);
      first = false;
    }
    out += ")";
  }
  return out;
}

std::string transition_counts(const std::vector<gov::Transition>& recorded) {
  std::map<std::string, std::size_t> by_action;
  for (const gov::Transition& t : recorded) ++by_action[t.action];
  std::string out;
  for (const auto& [action, count] : by_action) out += (out.empty() ? "" : ", ") + action + " " + grouped(count);
  return out.empty() ? "none" : out;
}

int run(const Options& o) {
  const std::string load_before = load_average();
  const std::optional<fs::path> prometheus_bin = find_on_path("prometheus");
  if (!prometheus_bin) {
    std::cerr << "scan_bench: prometheus is not on PATH (Debian: apt-get install prometheus; scripts/bootstrap.sh "
                 "installs it)\n";
    return 2;
  }
  std::optional<fs::path> promtool;
  if (o.loader == "promtool") {
    promtool = find_on_path("promtool");
    if (!promtool) {
      std::cerr << "scan_bench: promtool is not on PATH (Debian's prometheus package has it; scripts/bootstrap.sh "
                   "installs it)\n";
      return 2;
    }
  }

  // The policies, as `gpubank scan --policies` reads them.
  policy::PolicySet set = policy::load_policy_set({o.policies});
  Diagnostics diagnostics = set.diagnostics();
  const Diagnostics checks = policy::validate(set);
  diagnostics.insert(diagnostics.end(), checks.begin(), checks.end());
  if (has_errors(diagnostics)) {
    for (const auto& d : diagnostics) std::cerr << d.to_string() << '\n';
    std::cerr << "scan_bench: the policies in " << o.policies << " are invalid\n";
    return 2;
  }
  const std::vector<gov::ScanPolicy> policies = gov::scan_policies(set);
  if (policies.empty()) {
    std::cerr << "scan_bench: " << o.policies << " holds no LowUtilizationPolicy\n";
    return 2;
  }

  fs::path work = o.work_dir.empty() ? fs::read_symlink("/proc/self/exe").parent_path().parent_path() / "bench-work"
                                     : fs::path(o.work_dir);
  const fs::path dir = fs::absolute(work) / "scan_bench";  // only this is ever removed
  fs::remove_all(dir);                                       // a killed run's leftovers
  fs::create_directories(dir);
  struct RemoveDir {
    fs::path dir;
    bool keep;
    ~RemoveDir() {
      std::error_code ec;
      if (!keep) fs::remove_all(dir, ec);
    }
  } remove_dir{dir, o.keep};
  const fs::path tsdb = dir / "tsdb";

  // The data sits around now (kStartBehind, kMaxAhead): from the start of the longest
  // window before T1, less a margin, to the last later scan.
  std::int64_t window_s = 0;
  for (const gov::ScanPolicy& p : policies) window_s = std::max(window_s, p.spec.window.milliseconds() / 1000);
  const std::int64_t step = o.step_seconds;
  const std::int64_t now_s =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  const std::int64_t from_s = (now_s - kStartBehind + step - 1) / step * step;
  const std::int64_t t1_s = (from_s + window_s + kMarginBefore + step - 1) / step * step;
  const std::int64_t last_s = (t1_s + o.later_scans * kMinute + step - 1) / step * step;
  if (o.loader == "scrape" && last_s - now_s > kMaxAhead + 10 * kMinute) {
    std::cerr << "scan_bench: a " << window_s / kMinute << "m window and " << o.later_scans
              << " later scans span more than Prometheus takes by scraping without waiting for the clock; use "
                 "--loader promtool\n";
    return 2;
  }
  auto t_gen = Clock::now();
  Cluster c = generate(o.workloads, o.step_seconds, o.shards, from_s, t1_s, last_s, o.seed);
  build_series(c);
  const std::uint64_t samples = sample_count(c);
  const double generate_s = seconds_since(t_gen);
  std::map<std::string, std::map<std::string, int>> mix;  // type -> category -> workloads
  for (const Workload& w : c.workloads) ++mix[w.type][w.category];
  std::cerr << "scan_bench: " << c.workloads.size() << " workloads, " << c.devices.size() << " GPUs on " << c.nodes.size()
            << " nodes, " << c.series_count() << " series, " << samples << " samples (generated in "
            << fixed(generate_s, 1) << " s); work directory " << dir << '\n';

  Prometheus prometheus(*prometheus_bin, dir);
  const std::string prometheus_version = program_version(*prometheus_bin, dir);
  LoadReport load = o.loader == "promtool" ? load_with_promtool(c, prometheus, *promtool, dir, tsdb)
                                           : load_by_scraping(c, prometheus, tsdb, o);
  load.samples = samples;
  std::cerr << "scan_bench: loaded (" << load.how << ") in " << fixed(load.load_s + load.promtool_s + load.write_s, 1)
            << " s; Prometheus holds " << fixed(load.prometheus_rss_mib, 0) << " MiB\n";

  // The product's client (what `gpubank scan` uses), and the same protocol with TCP_NODELAY.
  auto client = gov::PrometheusClient::create(prometheus.url(), std::chrono::seconds(120));
  if (!client) throw std::runtime_error(client.error());
  NoDelayPrometheus nodelay(prometheus.port());
  const double settle_s = wait_idle(prometheus.pid(), std::chrono::seconds(180));
  std::cerr << "scan_bench: Prometheus idle after " << fixed(settle_s, 0) << " s\n";
  bench::CacheProbe probe;
  std::vector<double> probes;  // per repetition, the larger of the readings before and after

  std::vector<std::string> failures;
  const std::int64_t t1_ms = c.t1_s * 1000;

  // A fresh store with the bank's checkpoint notices (what `gpubank controller` writes).
  auto fresh_store = [&](const std::string& name) {
    const fs::path path = dir / name;
    for (const char* suffix : {"", "-wal", "-shm", "-journal"}) fs::remove(path.string() + suffix);
    auto store = store::Store::open(path.string());
    if (!store) throw std::runtime_error("store: " + store.error());
    std::vector<bank::AuditEntry> notices;
    for (const Workload& w : c.workloads) {
      if (!w.checkpoint_ms) continue;
      bank::AuditEntry e;
      e.time_ms = *w.checkpoint_ms;
      e.actor = "gpubank-controller/c-0";
      e.action = "ReclaimNoticeSent";
      std::string kind;
      for (char ch : w.kind) kind += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      e.object = "Workload/" + w.ns + "/" + kind + "-" + w.name + "-0f3a9";  // Kueue's name for the job's Workload
      e.decision = "CheckpointRequested";
      e.reason = "the lender reclaims its guarantee";
      e.numbers = "{}";
      notices.push_back(std::move(e));
    }
    if (!notices.empty()) {
      if (auto r = store::append_in_batches(**store, {}, notices); !r) throw std::runtime_error("store: " + r.error());
    }
    return std::move(*store);
  };

  auto timed_scan = [&](gov::Scanner& scanner, std::int64_t at_ms) {
    ScanRun run;
    const double cpu0 = process_cpu_seconds(prometheus.pid());
    const double thread0 = thread_cpu_seconds();
    const auto t0 = Clock::now();
    auto report = scanner.scan(policies, at_ms);
    run.seconds = seconds_since(t0);
    run.thread_cpu_s = thread_cpu_seconds() - thread0;
    run.prometheus_cpu_s = process_cpu_seconds(prometheus.pid()) - cpu0;
    if (!report) throw std::runtime_error("scan: " + report.error());
    run.report = std::move(*report);
    return run;
  };

  // A first scan at T1 on a fresh store and the later ones a minute apart; the first is
  // always checked, the later ones when `check_later`.
  auto scan_series = [&](gov::PrometheusClient& via, const std::string& store_name, const std::string& what,
                         bool check_later, ScanSeries& into) {
    auto store = fresh_store(store_name);
    gov::Scanner scanner(via, *store, {}, {});
    ScanRun first = timed_scan(scanner, t1_ms);
    std::cerr << "scan_bench:   " << what << ": first scan " << fixed(first.seconds, 2) << " s ("
              << first.report.queries.size() << " queries, " << first.report.recorded.size() << " transitions), later";
    for (const std::string& d : check_scan(c, policies, first.report, c.t1_s, 10)) failures.push_back(what + ", first scan: " + d);
    std::vector<ScanRun> later;
    for (int k = 1; k <= o.later_scans; ++k) {
      check_interrupted();
      ScanRun run = timed_scan(scanner, t1_ms + k * kMinute * 1000);
      std::cerr << ' ' << fixed(run.seconds, 2);
      if (check_later) {
        for (const std::string& d : check_scan(c, policies, run.report, c.t1_s + k * kMinute, 10)) {
          failures.push_back(what + ", later scan " + std::to_string(k) + ": " + d);
        }
      }
      later.push_back(std::move(run));
    }
    std::cerr << " s\n";
    into.firsts.push_back(std::move(first));
    into.laters.push_back(std::move(later));
  };

  // Warm-up, not reported: the first queries after the load.
  {
    auto store = fresh_store("warm-up.db");
    gov::Scanner scanner(**client, *store, {}, {});
    const ScanRun warm = timed_scan(scanner, t1_ms);
    std::cerr << "scan_bench: warm-up scan " << fixed(warm.seconds, 2) << " s\n";
  }

  // The baseline's workloads: all, or a fixed random subset.
  std::vector<std::size_t> subset(c.workloads.size());
  for (std::size_t i = 0; i < subset.size(); ++i) subset[i] = i;
  const bool extrapolated = o.baseline_workloads > 0 && static_cast<std::size_t>(o.baseline_workloads) < subset.size();
  if (extrapolated) {
    std::mt19937_64 shuffle_rng(o.seed + 1);
    std::shuffle(subset.begin(), subset.end(), shuffle_rng);
    subset.resize(static_cast<std::size_t>(o.baseline_workloads));
    std::sort(subset.begin(), subset.end());
  }
  std::vector<BaselineQuery> baseline_queries;
  for (std::size_t wi : subset) baseline_queries.push_back(baseline_query(c, wi, policies));

  // The baseline over `queries` through `via`; its answers checked against `facts` when given.
  auto run_baseline = [&](gov::PrometheusClient& via, const std::vector<BaselineQuery>& queries,
                          const std::map<std::string, gov::WorkloadFacts, std::less<>>* facts) {
    BaselineRun b;
    const double cpu0 = process_cpu_seconds(prometheus.pid());
    const auto t0 = Clock::now();
    std::size_t failed_checks = 0;
    for (const BaselineQuery& q : queries) {
      if ((b.query_ms.size() & 63) == 0) check_interrupted();
      const auto q0 = Clock::now();
      auto answer = via.query(q.promql, t1_ms);
      b.query_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - q0).count());
      if (!answer) throw std::runtime_error("baseline query: " + answer.error());
      b.samples += answer->size();
      if (facts != nullptr) {
        const std::string key = c.workloads[q.workload].key();
        const auto it = facts->find(key);
        const auto wrong = it == facts->end() ? std::optional<std::string>("not in the scan")
                                              : check_baseline(c, q, *answer, it->second);
        if (wrong && ++failed_checks <= 5) failures.push_back("baseline, " + key + ": " + *wrong);
      }
    }
    b.seconds = seconds_since(t0);
    b.prometheus_cpu_s = process_cpu_seconds(prometheus.pid()) - cpu0;
    return b;
  };

  ScanSeries product, fixed_client;
  std::vector<BaselineRun> baselines;
  BaselineRun baseline_product;  // a part of the baseline through the product's client
  const std::size_t product_sample = std::min<std::size_t>(500, baseline_queries.size());
  for (int rep = 0; rep < std::max(o.repetitions, o.baseline_repetitions); ++rep) {
    check_interrupted();
    const double probe_before = probe.nanoseconds_per_load();
    std::cerr << "scan_bench: repetition " << rep + 1 << " (cache probe " << fixed(probe_before, 0) << " ns)\n";
    if (rep < o.repetitions) {
      scan_series(**client, "governance-" + std::to_string(rep) + ".db", "gpubank's client", rep == 0, product);
      scan_series(nodelay, "nodelay-" + std::to_string(rep) + ".db", "TCP_NODELAY client", false, fixed_client);
    }
    if (rep < o.baseline_repetitions) {
      std::map<std::string, gov::WorkloadFacts, std::less<>> facts;
      if (rep == 0 && !product.firsts.empty()) {
        for (const gov::Observed& ob : product.firsts[0].report.observed) facts[ob.facts.workload_uid] = ob.facts;
      }
      BaselineRun b = run_baseline(nodelay, baseline_queries, rep == 0 ? &facts : nullptr);
      std::cerr << "scan_bench:   baseline: " << b.query_ms.size() << " queries in " << fixed(b.seconds, 1) << " s\n";
      baselines.push_back(std::move(b));
      if (rep == 0) {
        const std::vector<BaselineQuery> part(baseline_queries.begin(),
                                              baseline_queries.begin() + static_cast<std::ptrdiff_t>(product_sample));
        baseline_product = run_baseline(**client, part, nullptr);
        std::cerr << "scan_bench:   baseline through gpubank's client: " << part.size() << " queries in "
                  << fixed(baseline_product.seconds, 1) << " s\n";
      }
    }
    probes.push_back(std::max(probe_before, probe.nanoseconds_per_load()));
  }

  // Each planned query's answer size (not timed): the product's client refuses answers
  // over serving::kPromMaxBodyBytes.
  std::map<std::string, std::size_t> answer_bytes;
  for (const gov::Query& q : gov::plan_queries(policies)) {
    if (nodelay.query(q.promql, t1_ms)) answer_bytes[q.name] = nodelay.last_bytes();
  }
  const double prometheus_rss_end = rss_mib(prometheus.pid());
  prometheus.stop();
  const std::string load_after = load_average();

  // ---- the summary ----
  const ScanStats ps = stats_of(product);
  const ScanStats ns = stats_of(fixed_client);
  std::vector<double> baseline_s, baseline_cpu, baseline_all_ms;
  for (const BaselineRun& b : baselines) {
    baseline_s.push_back(b.seconds);
    baseline_cpu.push_back(b.prometheus_cpu_s);
    baseline_all_ms.insert(baseline_all_ms.end(), b.query_ms.begin(), b.query_ms.end());
  }
  const double scale = static_cast<double>(c.workloads.size()) / static_cast<double>(baseline_queries.size());
  const double baseline_total = median(baseline_s) * scale;
  const std::size_t queries_per_scan = product.firsts.empty() ? 0 : product.firsts[0].report.queries.size();
  std::size_t n_held = 0;
  for (const Device& d : c.devices) n_held += d.holders.empty() ? 0 : 1;
  std::size_t uidless = 0;
  for (const Workload& w : c.workloads) uidless += w.has_uid ? 0 : 1;

  std::ostringstream out;
  out << "scan_bench: " << grouped(c.workloads.size()) << " workloads holding 2 GPUs each on a cluster of "
      << grouped(c.devices.size()) << " GPUs (" << grouped(c.nodes.size()) << " nodes of 8; "
      << grouped(static_cast<std::uint64_t>(c.shared_notebooks)) << " notebooks time-sliced two to a GPU, so "
      << grouped(n_held) << " GPUs held and " << grouped(static_cast<std::uint64_t>(c.unallocated))
      << " unallocated; the " << grouped(uidless)
      << " InferenceServices and LeaderWorkerSets carry no workload_uid and are keyed by kind, namespace and name). "
      << grouped(c.series_count()) << " series: per DCGM field " << grouped(family_size(c, Field::Util))
      << " (a device per holder, and the unallocated ones), " << grouped(family_size(c, Field::Allocation))
      << " gpubank_gpu_allocation_info, " << grouped(family_size(c, Field::PodStart))
      << " gpubank_pod_start_time_seconds (one per pod), " << c.loans.size()
      << " gpubank_bank_loan_gpus. One sample every " << c.step_s << " s from T1-" << (c.t1_s - c.from_s) / kMinute
      << "m to T1+" << (c.ts(c.steps - 1) - c.t1_s) / kMinute << "m (" << c.steps << " per series; T1 = "
      << rfc3339(c.t1_s) << "), " << grouped(samples) << " samples. Policies: " << shown_path(o.policies) << " (";
  for (std::size_t i = 0; i < policies.size(); ++i) {
    const auto& p = policies[i];
    out << (i ? "; " : "") << p.name << ": " << gov::promql_duration(p.spec.window) << " window over "
        << doc::enum_name(p.spec.match.workload_type) << (p.spec.match.resource_pool ? " in " + *p.spec.match.resource_pool : "");
  }
  out << "). " << prometheus_version << ". Load average before: " << load_before << ", after: " << load_after << ".\n\n";

  out << "| workload type | category | workloads |\n|---|---|---:|\n";
  for (const auto& [type, categories] : mix) {
    for (const auto& [category, count] : categories) {
      out << "| " << type << " | " << category << " | " << grouped(static_cast<std::uint64_t>(count)) << " |\n";
    }
  }
  out << "\nLoading: ";
  if (load.how == "scraped") {
    out << "Prometheus scraped the series from " << c.shards << " loopback targets (this program, one page per step, "
        << "OpenMetrics with explicit timestamps; a shard's next page served once a query showed its marker) every "
        << o.scrape_interval_ms << " ms: " << c.steps << " pages per shard in " << fixed(load.load_s, 1) << " s ("
        << grouped(static_cast<std::uint64_t>(static_cast<double>(samples) / load.load_s)) << " samples/s"
        << (load.paced_s > 0 ? "; of that, up to " + fixed(load.paced_s, 0) + " s waiting for the clock to let the last pages in" : "")
        << ", " << grouped(load.scrapes) << " scrapes for "
        << grouped(static_cast<std::uint64_t>(c.steps) * static_cast<std::uint64_t>(c.shards))
        << " pages), Prometheus using " << fixed(load.prometheus_cpu_s, 1) << " s of CPU; Prometheus started and ready in "
        << fixed(load.prometheus_ready_s, 1) << " s before that. The data is in Prometheus' head, "
        << fixed(load.prometheus_rss_mib, 0) << " MiB resident after the load, " << fixed(prometheus_rss_end, 0)
        << " MiB after the scans; its data directory (WAL) " << fixed(static_cast<double>(load.tsdb_bytes) / (1 << 20), 0)
        << " MiB.\n";
  } else {
    out << "the series written as one OpenMetrics file of " << fixed(static_cast<double>(load.file_bytes) / (1 << 30), 2)
        << " GiB in " << fixed(load.write_s, 1) << " s, `promtool tsdb create-blocks-from openmetrics` on it "
        << fixed(load.promtool_s, 1) << " s (" << grouped(static_cast<std::uint64_t>(static_cast<double>(samples) / load.promtool_s))
        << " samples/s, peak resident set " << fixed(load.promtool_peak_mib, 0) << " MiB; blocks of " << fixed(static_cast<double>(load.tsdb_bytes) / (1 << 20), 0)
        << " MiB), Prometheus started on the blocks and ready in " << fixed(load.prometheus_ready_s, 1) << " s, "
        << fixed(load.prometheus_rss_mib, 0) << " MiB resident, " << fixed(prometheus_rss_end, 0)
        << " MiB after the scans. The data is in persisted blocks (the file is deleted).\n";
  }

  out << "\nThe scans: governance::Scanner, a fresh SQLite store per repetition, no notifier (the printed output is the "
         "delivery: notices are recorded at once); "
      << o.repetitions << " repetitions of a first scan at T1 and " << o.later_scans
      << " later scans a minute apart, medians, after Prometheus was idle (" << fixed(settle_s, 0)
      << " s after the load) and one unreported warm-up scan. Each repetition scans through "
         "gpubank's client (governance::PrometheusClient, what `gpubank scan` runs) and then through the same protocol "
         "with TCP_NODELAY (this program's): the product's client leaves Nagle's algorithm on, and httplib sends a "
         "POST's headers and body in two writes, so each query's body waits for the server's delayed ACK (about 40 ms on "
         "Linux). Prometheus CPU: its process's user + system time over the scan, from /proc; scanner CPU: the scanning "
         "thread's (HTTP, JSON, judging, SQLite). Host cache contention per repetition (bench/cache_probe.hpp, ns per "
         "dependent load through 8 MiB, the larger of the readings before and after; about 25-30 when the host is "
         "quiet): "
      << list_of(probes, 0) << ".\n\n";
  out << "| scan | client | wall (s), median | each run (s) | queries | Prometheus CPU (s) | scanner CPU (s) | "
         "query time, sum (s) | transitions recorded (first repetition) |\n|---|---|---:|---|---:|---:|---:|---:|---|\n";
  auto scan_rows = [&](const ScanSeries& series, const ScanStats& st, const char* client_name) {
    if (series.firsts.empty()) return;
    out << "| first (opens the alerts, notifies, records) | " << client_name << " | " << fixed(median(st.first_s), 2)
        << " | " << list_of(st.first_s, 2) << " | " << queries_per_scan << " | " << fixed(median(st.first_prom_cpu), 2)
        << " | " << fixed(median(st.first_thread_cpu), 2) << " | " << fixed(median(st.first_query_sum), 2) << " | "
        << transition_counts(series.firsts[0].report.recorded) << " |\n";
    if (st.later_s.empty()) return;
    std::string per_scan;
    for (const ScanRun& r : series.laters[0]) per_scan += (per_scan.empty() ? "" : "; ") + transition_counts(r.report.recorded);
    out << "| later (T1+1m ... T1+" << o.later_scans << "m) | " << client_name << " | " << fixed(median(st.later_s), 2)
        << " | " << fixed(*std::min_element(st.later_s.begin(), st.later_s.end()), 2) << " to "
        << fixed(*std::max_element(st.later_s.begin(), st.later_s.end()), 2) << " (" << st.later_s.size() << " scans) | " << queries_per_scan << " | " << fixed(median(st.later_prom_cpu), 2)
        << " | " << fixed(median(st.later_thread_cpu), 2) << " | " << fixed(median(st.later_query_sum), 2) << " | "
        << per_scan << " |\n";
  };
  scan_rows(product, ps, "gpubank's");
  scan_rows(fixed_client, ns, "TCP_NODELAY");
  if (!product.firsts.empty()) {
    out << "\nVerdicts at T1: " << verdict_counts(product.firsts[0].report) << "; "
        << product.firsts[0].report.open_alerts << " alerts open after the first scan.\n";
    out << "\n| query | samples at T1 | answer (bytes) | gpubank's client, first scan: median (ms) | later scans: median (ms) "
           "| TCP_NODELAY client, first scan: median (ms) |\n|---|---:|---:|---:|---:|---:|\n";
    for (const std::string& name : ps.query_order) {
      out << "| " << name << " | " << grouped(ps.query_samples.at(name)) << " | " << grouped(answer_bytes[name]) << " | "
          << fixed(median(ps.first_query_ms.at(name)), 1) << " | " << fixed(median(map_get(ps.later_query_ms, name)), 1)
          << " | " << fixed(median(map_get(ns.first_query_ms, name)), 1) << " |\n";
    }
    out << "\nAnswer sizes: the same queries posted once more after the scans (Prometheus' JSON); gpubank's client "
           "refuses an answer over "
        << grouped(serving::kPromMaxBodyBytes) << " bytes (serving::kPromMaxBodyBytes).\n";
  }

  out << "\nBaseline: one query per workload at T1, one after another through the TCP_NODELAY client (the baseline's "
         "best configuration), asking only that workload's series (`workload_uid=\"...\"`, or its namespace, "
         "workload_kind and workload where the pods carry no UID): its allocation series, its earliest pod start and "
         "the averages its governing policy's thresholds need over that policy's window (the first two only for a "
         "workload no policy covers), each tagged by label_replace and joined with `or`. "
      << (extrapolated ? "**A fixed random subset of " + grouped(baseline_queries.size()) + " of the " +
                             grouped(c.workloads.size()) + " workloads, the total extrapolated x" + fixed(scale, 2) + ".** "
                       : "Every workload. ")
      << baselines.size() << " repetitions, medians.\n\n";
  out << "| | queries | wall (s), median | each run (s) | per query: median (ms) | p99 (ms) | Prometheus CPU (s) |\n"
         "|---|---:|---:|---|---:|---:|---:|\n";
  out << "| baseline, " << (extrapolated ? "extrapolated to " : "") << grouped(c.workloads.size()) << " workloads | "
      << grouped(c.workloads.size()) << " | " << fixed(baseline_total, 1) << " | " << list_of(baseline_s, 1)
      << (extrapolated ? " (measured, " + grouped(baseline_queries.size()) + " queries)" : "") << " | "
      << fixed(median(baseline_all_ms), 2) << " | " << fixed(percentile(baseline_all_ms, 0.99), 2) << " | "
      << fixed(median(baseline_cpu) * scale, 1) << " |\n";
  if (!baseline_product.query_ms.empty()) {
    out << "| baseline through gpubank's client, first " << grouped(baseline_product.query_ms.size())
        << " workloads, extrapolated to " << grouped(c.workloads.size()) << " | " << grouped(c.workloads.size()) << " | "
        << fixed(baseline_product.seconds * static_cast<double>(c.workloads.size()) /
                     static_cast<double>(baseline_product.query_ms.size()),
                 1)
        << " | " << fixed(baseline_product.seconds, 1) << " (measured) | " << fixed(median(baseline_product.query_ms), 2)
        << " | " << fixed(percentile(baseline_product.query_ms, 0.99), 2) << " | |\n";
  }
  out << "| gpubank scan, first, gpubank's client | " << queries_per_scan << " | " << fixed(median(ps.first_s), 2) << " | "
      << list_of(ps.first_s, 2) << " | | | " << fixed(median(ps.first_prom_cpu), 2) << " |\n";
  out << "| gpubank scan, later, gpubank's client | " << queries_per_scan << " | " << fixed(median(ps.later_s), 2)
      << " | | | | " << fixed(median(ps.later_prom_cpu), 2) << " |\n";
  out << "| gpubank scan, first, TCP_NODELAY client | " << queries_per_scan << " | " << fixed(median(ns.first_s), 2)
      << " | " << list_of(ns.first_s, 2) << " | | | " << fixed(median(ns.first_prom_cpu), 2) << " |\n";
  out << "\nBaseline / scan, wall time: " << fixed(baseline_total / std::max(1e-9, median(ps.first_s)), 1)
      << "x the first scan, " << fixed(baseline_total / std::max(1e-9, median(ps.later_s)), 1)
      << "x a later scan (gpubank's client); " << fixed(baseline_total / std::max(1e-9, median(ns.first_s)), 1)
      << "x the first scan with both on the TCP_NODELAY client. Prometheus CPU: "
      << fixed(median(baseline_cpu) * scale / std::max(1e-9, median(ps.first_prom_cpu)), 1)
      << "x the first scan's. Queries: " << grouped(c.workloads.size()) << " against " << queries_per_scan << ".\n";

  const double slowest = std::max(ps.slowest, ns.slowest);
  const bool met = slowest < 10.0 && queries_per_scan <= 10;
  out << "\n**Target: a scan over " << grouped(c.workloads.size()) << " workloads on " << grouped(c.devices.size())
      << " GPUs in under 10 s with at most 10 PromQL queries: " << (met ? "met" : "NOT met") << "** ("
      << queries_per_scan << " queries; through gpubank's client the first scan " << fixed(median(ps.first_s), 2)
      << " s and a later scan " << fixed(median(ps.later_s), 2) << " s, medians; the slowest of all "
      << ps.count + ns.count << " scans " << fixed(slowest, 2) << " s).\n";
  out << "\nChecks: " << (failures.empty() ? "passed" : "FAILED")
      << ": every first scan's facts (labels, GPUs, start, averages over the governing window) and verdicts, and those "
         "of the later scans of the first repetition, equal the generator's workload by workload, and every baseline "
         "answer of the first repetition equals the first scan's facts for its workload.\n";

  for (const std::string& f : failures) std::cerr << "scan_bench: FAILED: " << f << '\n';
  std::cout << '\n' << out.str();
  if (!o.summary.empty()) {
    std::ofstream file(o.summary);
    file << out.str();
    if (!file) {
      std::cerr << "scan_bench: cannot write " << o.summary << '\n';
      return 1;
    }
  }
  return failures.empty() ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!parse_options(argc, argv, o)) return 2;
  ::signal(SIGPIPE, SIG_IGN);  // a scraper that hangs up must not end the program
  struct sigaction sa{};
  sa.sa_handler = on_interrupt;
  sa.sa_flags = SA_RESETHAND;  // a second signal ends the program at once (the children still get SIGTERM)
  ::sigemptyset(&sa.sa_mask);
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
  try {
    return run(o);
  } catch (const Interrupted&) {
    std::cerr << "scan_bench: interrupted\n";
    return 130;
  } catch (const std::exception& e) {
    std::cerr << "scan_bench: " << e.what() << '\n';
    return 1;
  }
}
