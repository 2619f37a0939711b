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
//
// The parts are in bench/scan/ (scan_bench.hpp is what they share): process.cpp (interruption,
// child processes, /proc), cluster.cpp and series.cpp (the data), checks.cpp (what a scan must
// find), prometheus.cpp and load.cpp (Prometheus and loading it), run.cpp, product.cpp and
// baseline.cpp (the measurement), report.cpp (the summary). This file holds the options and main.
#include <signal.h>

#include <charconv>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <optional>
#include <string>
#include <system_error>

#include "scan/scan_bench.hpp"

namespace gpubank::bench::scan {

namespace {

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

}  // namespace

}  // namespace gpubank::bench::scan

int main(int argc, char** argv) {
  using namespace gpubank::bench::scan;
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
