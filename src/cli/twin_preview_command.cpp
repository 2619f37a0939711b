// gpubank twin preview: the impact of a policy change before it applies (twin/preview).
//
//   gpubank twin preview --current examples/policies --proposed my-policies
//       [--workloads scenario.yaml | --store S [--until TIME] | --seed 1] [--hours 24 | --days 7]
//       [--trace azure-llm:CSV]
//       [--serving-model fluid|requests]
//       [-o text|json|yaml]
//
// Exit codes: 0 the preview ran (whatever it shows), 1 the proposal is refused by the
// checks (its findings are printed) or a run could not be made, 2 usage.
#include <CLI/CLI.hpp>

#include <iostream>

#include "cli/command.hpp"
#include "cli/validators.hpp"
#include "core/timestamp.hpp"
#include "twin/cluster/inventory.hpp"
#include "store/store.hpp"
#include "twin/preview/preview.hpp"
#include "twin/preview/recorded_work.hpp"
#include "twin/run/scenario.hpp"

namespace gpubank::cli {
namespace {

struct PreviewOptions {
  std::vector<std::string> current, proposed;
  std::string workloads;
  std::string store;  // the work a controller recorded (twin/preview/recorded_work.hpp)
  std::string until;  // the end of the replayed window; default: the last recorded finish
  std::string trace;  // azure-llm:<csv>
  std::string inventory = "examples/inventory/example.yaml";
  std::uint64_t seed = 1;
  int hours = 24;
  int days = 0;
  std::string start = "2026-11-30T16:00:00Z";
  double serving_load = 1.0;
  std::string serving_model = "fluid";
  bool quiet = false;
  Format format = Format::Text;
};

int run_preview_command(const PreviewOptions& opt) {
  const char* me = "gpubank twin preview";
  auto start = parse_rfc3339(opt.start);
  if (!start) {
    std::cerr << me << ": --start: " << start.error() << '\n';
    return 2;
  }
  // The policies in force must be valid: they are what the proposal is measured against.
  auto current = load_valid_policies(opt.current, "twin preview --current");
  if (!current) return 1;
  // The proposal is checked by the preview itself: its findings are part of the answer.
  const policy::PolicySet proposed = policy::load_policy_set(opt.proposed);
  if (!opt.trace.empty() && !opt.trace.starts_with("azure-llm:")) {
    std::cerr << me << ": --trace: expected azure-llm:<AzureLLMInferenceTrace csv>, got \"" << opt.trace
              << "\" (a cluster trace brings its own cluster and policies: replay it with gpubank twin run --trace)\n";
    return 2;
  }
  if (!opt.store.empty() && (!opt.workloads.empty() || !opt.trace.empty())) {
    std::cerr << me << ": --store replays the recorded work; it excludes --workloads and --trace\n";
    return 2;
  }
  if (!opt.until.empty() && opt.store.empty()) {
    std::cerr << me << ": --until ends the window of --store's recorded work\n";
    return 2;
  }
  if (!opt.trace.empty() && !opt.workloads.empty()) {
    std::cerr << me << ": --trace drives the seeded day's services; a --workloads scenario runs without serving\n";
    return 2;
  }
  auto inventory = load_valid_inventory(opt.inventory, "twin preview");
  if (!inventory) return 1;

  twin::preview::Work work;
  work.inventory = std::make_shared<const twin::cluster::Inventory>(std::move(*inventory));
  work.day.seed = opt.seed;
  work.day.start = *start;
  work.day.hours = opt.days > 0 ? 24 * opt.days : opt.hours;
  work.day.serving_load = opt.serving_load;
  if (!opt.trace.empty()) work.day.llm_trace = opt.trace.substr(std::string_view("azure-llm:").size());
  work.day.serving_model = opt.serving_model == "requests" ? twin::live::DayOptions::ServingModel::Requests
                                                           : twin::live::DayOptions::ServingModel::Fluid;
  if (!opt.workloads.empty()) {
    Diagnostics diagnostics;
    auto scenario = twin::run::load_scenario(opt.workloads, diagnostics);
    for (const auto& d : diagnostics) std::cerr << d.to_string() << '\n';
    if (!scenario || has_errors(diagnostics)) {
      std::cerr << me << ": --workloads: the scenario is invalid\n";
      return 1;
    }
    work.scenario = std::move(*scenario);
    work.scenario_name = "scenario " + opt.workloads;
  }
  if (!opt.store.empty()) {
    auto store = store::Store::open(opt.store, {.create = false, .read_only = true});
    if (!store) {
      std::cerr << me << ": --store: " << store.error() << '\n';
      return 1;
    }
    std::vector<twin::preview::WorkloadRecord> records;
    std::int64_t seq = 0;
    if (auto read = twin::preview::read_records(**store, seq, records); !read) {
      std::cerr << me << ": --store: " << read.error() << '\n';
      return 1;
    }
    if (records.empty()) {
      std::cerr << me << ": --store: no recorded work (gpubank controller --store records each Workload that finishes)\n";
      return 1;
    }
    std::int64_t to = 0;
    for (const auto& r : records) to = std::max(to, r.finished_ms);
    if (!opt.until.empty()) {
      auto until = parse_rfc3339(opt.until);
      if (!until) {
        std::cerr << me << ": --until: " << until.error() << '\n';
        return 2;
      }
      to = std::chrono::duration_cast<std::chrono::milliseconds>(until->time_since_epoch()).count();
    }
    const std::int64_t hours = opt.days > 0 ? 24 * opt.days : opt.hours;
    const std::int64_t from = to - hours * 3'600'000;
    work.scenario = twin::preview::replay_scenario(records, {}, from, to, twin::preview::priority_classes(*current));
    const std::size_t n = work.scenario->workloads.size();
    work.scenario_name = "the work recorded in " + opt.store + ", the " + std::to_string(hours) + " h to " +
                         format_rfc3339(Timestamp(std::chrono::milliseconds(to))) + " (" + std::to_string(n) +
                         (n == 1 ? " workload)" : " workloads)");
  }
  auto progress = [&](const std::string& side, std::int64_t hour) {
    if (!opt.quiet) std::cerr << me << ": " << side << " policies: hour " << hour << " of " << work.day.hours << '\n';
  };
  auto preview = twin::preview::run_preview(*current, proposed, work, progress);
  if (!preview) {
    std::cerr << me << ": " << preview.error() << '\n';
    return 1;
  }
  if (opt.format == Format::Text) {
    std::cout << twin::preview::to_text(*preview);
  } else {
    print_structured(std::cout, twin::preview::to_json(*preview), opt.format);
  }
  if (preview->refused) {
    std::cerr << me << ": the proposal is refused by the checks\n";
    return 1;
  }
  return 0;
}

}  // namespace

Command add_twin_preview_command(CLI::App& twin) {
  auto opt = std::make_shared<PreviewOptions>();
  CLI::App* cmd = twin.add_subcommand(
      "preview",
      "Preview a policy change: the same work (the seeded day of gpubank up, or a scenario) run under the policies in "
      "force and under the proposal, side by side per business group and pool: queue wait p50/p90/p99, GPU-hours "
      "used, borrowed and lent, reclaims, recompute loss, inference SLO attainment; and the checks the proposal trips");
  cmd->add_option("--current", opt->current, "the policies in force: files and directories")->required()->expected(1, -1);
  cmd->add_option("--proposed", opt->proposed, "the proposed policies: files and directories")->required()->expected(1, -1);
  cmd->add_option("--workloads", opt->workloads,
                  "a scenario file (as gpubank twin run --workloads) instead of the seeded day; runs without serving");
  cmd->add_option("--store", opt->store,
                  "replay the work gpubank controller recorded in this store (SQLite path or postgresql:// URL): the "
                  "--hours (or --days) up to --until; runs without serving");
  cmd->add_option("--until", opt->until, "with --store: the end of the window, RFC 3339 (default: the last recorded finish)");
  cmd->add_option("--trace", opt->trace,
                  "azure-llm:<csv>: the services' requests from the Azure LLM inference trace (conv or code), repeated "
                  "over each day on the diurnal curve as gpubank up --llm-trace serves them");
  cmd->add_option("--inventory", opt->inventory, "the cluster (default examples/inventory/example.yaml)");
  cmd->add_option("--seed", opt->seed, "seed of the day's work, shared by both runs (default 1)")->check(seed_text());
  cmd->add_option("--hours", opt->hours, "length of the day in hours (default 24)")->check(CLI::Range(1, 24 * 14));
  cmd->add_option("--days", opt->days, "length in days (overrides --hours), at most 14")->check(CLI::Range(1, 14));
  cmd->add_option("--start", opt->start, "wall time of virtual time 0, RFC 3339 (default 2026-11-30T16:00:00Z)");
  cmd->add_option("--serving-load", opt->serving_load, "the inference load relative to the scale rule (default 1)")
      ->check(finite_range(0.001, 10));
  cmd->add_option("--serving-model", opt->serving_model,
                  "how the services answer their requests: fluid (default; the quasi-static model calibrated on the "
                  "request model, days in seconds) or requests (every request through the vLLM-like engine, as gpubank "
                  "up runs it; minutes for a week); an embed service always runs fluid")
      ->check(CLI::IsMember({"fluid", "requests"}));
  cmd->add_flag("--quiet", opt->quiet, "no progress on stderr");
  add_output_option(*cmd, opt->format);
  return {cmd, [opt] { return run_preview_command(*opt); }};
}

}  // namespace gpubank::cli
