#include <sys/resource.h>

#include <CLI/CLI.hpp>

#include <chrono>
#include <iostream>
#include <memory>

#include "cli/command.hpp"
#include "twin/kueue_perf/runner.hpp"

namespace gpubank::cli {
namespace {

namespace kp = twin::kueue_perf;

struct KueuePerfOptions {
  std::string config;
  Format format = Format::Text;
  bool fair_sharing = false;
  bool reference_search = false;
  bool no_stats = false;
};

// Upstream's CmdStats (runner/stats/stats.go): wall and CPU time in ms, peak RSS in KiB
// (getrusage's ru_maxrss, what Go's Rusage.Maxrss reports on Linux).
struct CmdStats {
  std::int64_t wall_ms = 0, user_ms = 0, sys_ms = 0, maxrss = -1;
};

CmdStats measure(std::chrono::steady_clock::time_point started) {
  CmdStats s;
  s.wall_ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started).count();
  rusage usage{};
  if (getrusage(RUSAGE_SELF, &usage) == 0) {
    auto ms = [](const timeval& tv) { return static_cast<std::int64_t>(tv.tv_sec) * 1000 + tv.tv_usec / 1000; };
    s.user_ms = ms(usage.ru_utime);
    s.sys_ms = ms(usage.ru_stime);
    s.maxrss = usage.ru_maxrss;
  }
  return s;
}

int run_kueue_perf(const KueuePerfOptions& opt) {
  const auto started = std::chrono::steady_clock::now();
  Diagnostics findings;
  auto config = kp::load_generator_config(opt.config, findings);
  for (const auto& d : findings) std::cerr << d.to_string() << '\n';
  if (!config) return 1;
  const kp::Scenario scenario = kp::expand(std::move(*config));

  kp::RunOptions options;
  options.core.fair_sharing = opt.fair_sharing;
  options.core.reference_search = opt.reference_search;
  // Progress for long runs: at most once a second, from the first second on.
  auto last_report = started;
  options.progress = [&](const kp::Progress& p) {
    const auto now = std::chrono::steady_clock::now();
    if (now - last_report < std::chrono::seconds(1)) return;
    last_report = now;
    std::cerr << "gpubank twin kueue-perf: " << p.created << "/" << p.total << " workloads created, " << p.admitted
              << " admitted, " << p.finished << " finished; " << p.now << " ms virtual time, " << p.cycles
              << " cycles, "
              << std::chrono::duration_cast<std::chrono::milliseconds>(now - started).count() / 1000.0
              << " s wall\n";
  };
  auto summary = kp::run(scenario, options);
  if (!summary) {
    std::cerr << "gpubank twin kueue-perf: " << summary.error() << '\n';
    return 1;
  }
  const CmdStats stats = measure(started);
  if (summary->pending > 0) {
    std::cerr << "gpubank twin kueue-perf: warning: " << summary->pending
              << " workloads never finished: they were still pending when nothing was left to happen\n";
  }

  if (opt.format == Format::Text) {
    std::cout << kp::format_text(*summary);
    if (!opt.no_stats) {
      std::cout << "\nwall time " << stats.wall_ms << " ms (user " << stats.user_ms << " ms, system " << stats.sys_ms
                << " ms), peak RSS " << stats.maxrss << " KiB\n";
    }
  } else {
    auto out = kp::to_json(*summary);
    if (!opt.no_stats) {
      out["cmd"] = {{"wallMs", stats.wall_ms}, {"userMs", stats.user_ms}, {"sysMs", stats.sys_ms},
                    {"maxrss", stats.maxrss}};
    }
    print_structured(std::cout, out, opt.format);
  }
  return 0;
}

}  // namespace

Command add_twin_kueue_perf_command(CLI::App& twin) {
  auto opt = std::make_shared<KueuePerfOptions>();
  CLI::App* cmd = twin.add_subcommand(
      "kueue-perf", "Run a Kueue scheduler scalability scenario (generator.yaml) in virtual time");
  cmd->footer(
      "Reads the generator config of Kueue's test/performance/scheduler runner, runs it on the twin's admission "
      "core with an ideal zero-latency controller, and prints the runner's summary: per workload class the time "
      "to admission, per ClusterQueue class the average usage, then the wall time and peak RSS of the run. "
      "Exit codes: 0 done, 1 invalid config or failed run, 2 usage.");
  cmd->add_option("generator", opt->config, "generator config (YAML), e.g. ../shared/kueue-perf/baseline-generator.yaml")
      ->required();
  add_output_option(*cmd, opt->format);
  cmd->add_flag("--fair-sharing", opt->fair_sharing, "admit and preempt with fair sharing (Kueue's fairSharing.enable)");
  cmd->add_flag("--reference-search", opt->reference_search,
                "search for preemption targets the straightforward way, without the core's fast paths "
                "(slower; the decisions are the same, docs/twin-admission.md)");
  cmd->add_flag("--no-stats", opt->no_stats,
                "leave out wall time and peak RSS, so that two runs can be compared byte for byte");
  return {cmd, [opt] { return run_kueue_perf(*opt); }};
}

}  // namespace gpubank::cli
