// scan_bench: the benchmark's run: the policies, the work directory, the data generated and
// loaded into Prometheus, then the repetitions of gpubank's scans and of the baseline.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "cache_probe.hpp"
#include "core/diagnostic.hpp"
#include "governance/queries.hpp"
#include "policy/policy_set.hpp"
#include "policy/validate.hpp"
#include "scan/scan_bench.hpp"

namespace gpubank::bench::scan {

namespace {

// Data before the first scan's window: the window is fully covered however the range
// selector treats its left end.
constexpr std::int64_t kMarginBefore = 3 * kMinute;

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

std::string load_average() {
  std::ifstream in("/proc/loadavg");
  std::string a, b, c;
  in >> a >> b >> c;
  return a + " " + b + " " + c;
}

}  // namespace

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
  const Context x{o, c, policies, dir, prometheus, t1_ms, failures};

  // Warm-up, not reported: the first queries after the load.
  {
    auto store = fresh_store(x, "warm-up.db");
    gov::Scanner scanner(**client, *store, {}, {});
    const ScanRun warm = timed_scan(x, scanner, t1_ms);
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

  ScanSeries product, fixed_client;
  std::vector<BaselineRun> baselines;
  BaselineRun baseline_product;  // a part of the baseline through the product's client
  const std::size_t product_sample = std::min<std::size_t>(500, baseline_queries.size());
  for (int rep = 0; rep < std::max(o.repetitions, o.baseline_repetitions); ++rep) {
    check_interrupted();
    const double probe_before = probe.nanoseconds_per_load();
    std::cerr << "scan_bench: repetition " << rep + 1 << " (cache probe " << fixed(probe_before, 0) << " ns)\n";
    if (rep < o.repetitions) {
      scan_series(x, **client, "governance-" + std::to_string(rep) + ".db", "gpubank's client", rep == 0, product);
      scan_series(x, nodelay, "nodelay-" + std::to_string(rep) + ".db", "TCP_NODELAY client", false, fixed_client);
    }
    if (rep < o.baseline_repetitions) {
      std::map<std::string, gov::WorkloadFacts, std::less<>> facts;
      if (rep == 0 && !product.firsts.empty()) {
        for (const gov::Observed& ob : product.firsts[0].report.observed) facts[ob.facts.workload_uid] = ob.facts;
      }
      BaselineRun b = run_baseline(x, nodelay, baseline_queries, rep == 0 ? &facts : nullptr);
      std::cerr << "scan_bench:   baseline: " << b.query_ms.size() << " queries in " << fixed(b.seconds, 1) << " s\n";
      baselines.push_back(std::move(b));
      if (rep == 0) {
        const std::vector<BaselineQuery> part(baseline_queries.begin(),
                                              baseline_queries.begin() + static_cast<std::ptrdiff_t>(product_sample));
        baseline_product = run_baseline(x, **client, part, nullptr);
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

  const Measured m{.load_before = load_before,
                   .load_after = load_after,
                   .prometheus_version = prometheus_version,
                   .samples = samples,
                   .mix = std::move(mix),
                   .load = load,
                   .settle_s = settle_s,
                   .probes = std::move(probes),
                   .failures = std::move(failures),
                   .product = std::move(product),
                   .fixed_client = std::move(fixed_client),
                   .baselines = std::move(baselines),
                   .baseline_product = std::move(baseline_product),
                   .baseline_query_count = baseline_queries.size(),
                   .extrapolated = extrapolated,
                   .answer_bytes = std::move(answer_bytes),
                   .prometheus_rss_end = prometheus_rss_end};
  return report(o, c, policies, m);
}

}  // namespace gpubank::bench::scan
