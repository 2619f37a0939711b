// gpubank twin serving: the embedded platform's day with the inference replicas decided
// by gpubank's autoscaler and tidal controller, by static provisioning at the smallest
// count that meets the SLO in the peak window, by a CPU-style HPA on GPU utilisation and by
// the HPA the rendered KEDA ScaledObject creates, side by side over seeds
// (twin/live/serving_comparison.hpp).
#include <CLI/CLI.hpp>

#include <fstream>
#include <iostream>
#include <memory>
#include <thread>

#include "cli/command.hpp"
#include "cli/validators.hpp"
#include "core/timestamp.hpp"
#include "policy/validate.hpp"
#include "twin/cluster/inventory.hpp"
#include "twin/live/serving_comparison.hpp"

namespace gpubank::cli {

namespace {

using Control = twin::live::DayOptions::ServingControl;

struct ServingOptions {
  std::vector<std::string> policies{"examples/policies"};
  std::string inventory = "examples/inventory/example.yaml";
  std::string llm_trace;
  double serving_load = 1.0;
  std::string serving_model = "requests";
  std::string seeds = "1";
  // Tuesday 00:00 in Asia/Shanghai: the run covers the daytime window and the next
  // morning's approach (07:30 notices) with the default 32 hours.
  std::string start = "2026-11-30T16:00:00Z";
  int hours = 32;
  std::string control = "all";
  int static_replicas = 0;  // 0: searched
  double slo_target = 95;   // percent
  std::string peak;
  bool search_floor = false;
  int jobs = 0;             // 0: one per CPU
  std::string events;  // JSON lines of each run's events: <events>.<control>.jsonl (.<seed> with several seeds)
  bool quiet = false;
  Format format = Format::Text;
};

int run_serving(const ServingOptions& opt, const CLI::App& cmd) {
  auto start = parse_rfc3339(opt.start);
  if (!start) {
    std::cerr << "gpubank twin serving: --start: " << start.error() << '\n';
    return 2;
  }
  twin::live::ComparisonOptions compare;
  if (opt.control == "all") {
    compare.controls = {Control::Autoscaler, Control::Static, Control::HpaGpuUtilization, Control::Keda};
  } else if (const auto c = twin::live::serving_control_from(opt.control)) {
    compare.controls = {*c};
  } else {
    std::cerr << "gpubank twin serving: --control: must be all, autoscaler, static, hpa-gpu-utilization, keda or planned, "
                 "got \""
              << opt.control << "\"\n";
    return 2;
  }
  auto seeds = twin::live::parse_seeds(opt.seeds);
  if (!seeds) {
    std::cerr << "gpubank twin serving: " << seeds.error() << '\n';
    return 2;
  }
  compare.seeds = std::move(*seeds);
  if (cmd.count("--static-replicas") > 0) compare.static_replicas = opt.static_replicas;
  compare.slo_target = opt.slo_target / 100.0;
  if (!opt.peak.empty()) compare.peak = opt.peak;
  compare.search_floor = opt.search_floor;
  compare.jobs = opt.jobs > 0 ? opt.jobs : static_cast<int>(std::max(1U, std::thread::hardware_concurrency()));
  compare.keep_events = !opt.events.empty();
  compare.day.start = *start;
  compare.day.hours = opt.hours;
  compare.day.llm_trace = opt.llm_trace;
  compare.day.serving_load = opt.serving_load;
  compare.day.serving_model = opt.serving_model == "fluid" ? twin::live::DayOptions::ServingModel::Fluid
                                                           : twin::live::DayOptions::ServingModel::Requests;
  auto loaded = load_valid_policies(opt.policies, "twin serving");
  if (!loaded) return 1;
  policy::PolicySet set = std::move(*loaded);
  auto inventory = load_valid_inventory(opt.inventory, "twin serving");
  if (!inventory) return 1;
  auto shared = std::make_shared<const twin::cluster::Inventory>(std::move(*inventory));
  auto compared = twin::live::compare_serving(set, compare, shared, [&](const std::string& line) {
    if (line.rfind("warning: ", 0) == 0) {
      std::cerr << "gpubank twin serving: " << line << '\n';  // the consistency check, even with --quiet
    } else if (!opt.quiet) {
      std::cerr << "gpubank twin serving: " << opt.hours << " h, " << line << '\n';
    }
  });
  if (!compared) {
    std::cerr << "gpubank twin serving: " << compared.error() << '\n';
    // A bad option's value is a usage error; a run that fails is not.
    return compared.error().rfind("--", 0) == 0 ? 2 : 1;
  }
  if (!opt.events.empty()) {
    for (const auto& [key, events] : compared->events) {
      // "<control>.<seed>": the seed in the name only when several were run.
      const std::string control = key.substr(0, key.find('.'));
      const std::string path = opt.events + "." + (compare.seeds.size() == 1 ? control : key) + ".jsonl";
      std::ofstream out(path, std::ios::binary | std::ios::trunc);
      for (const auto& e : events) out << twin::run::event_json(e, *start).dump() << '\n';
      out.close();  // a write error may show only when the last buffer is flushed
      if (!out) {
        std::cerr << "gpubank twin serving: cannot write " << path << '\n';
        return 1;
      }
    }
  }
  if (opt.format == Format::Text) {
    std::cout << twin::live::comparison_text(*compared);
  } else {
    print_structured(std::cout, twin::live::comparison_json(*compared), opt.format);
  }
  return 0;
}

}  // namespace

Command add_twin_serving_command(CLI::App& twin) {
  auto opt = std::make_shared<ServingOptions>();
  CLI::App* cmd = twin.add_subcommand(
      "serving",
      "Run the embedded platform's day with the inference replicas decided by gpubank's autoscaler and tidal "
      "controller, static provisioning at the smallest count that meets the SLO in the peak window (searched), a "
      "CPU-style HPA on GPU utilisation and the HPA of the rendered KEDA ScaledObject, over one or more seeds, and "
      "compare TTFT p95 SLO attainment in the peak window and all day, inference GPU-hours, training GPU-hours on "
      "the pool and scale-out reaction");
  cmd->add_option("--policies", opt->policies, "policy files and directories (default: examples/policies)")
      ->expected(1, -1);
  cmd->add_option("--inventory", opt->inventory, "the cluster (default: examples/inventory/example.yaml)");
  cmd->add_option("--llm-trace", opt->llm_trace,
                  "drive the generate services with a real request trace (AzureLLMInferenceTrace_*.csv) instead of the "
                  "seeded load (embed services keep theirs)");
  cmd->add_option("--serving-load", opt->serving_load, "request rate relative to the scale rule (default 1)")
      ->check(finite_range(0.001, 10));
  cmd->add_option("--serving-model", opt->serving_model,
                  "requests (default: every request through the vLLM-like engine) or fluid (the model calibrated on "
                  "it that the impact preview runs: a day in about a second); an embed service always runs fluid")
      ->check(CLI::IsMember({"requests", "fluid"}));
  cmd->add_option("--seeds,--seed", opt->seeds, "seeds of the day: N, FIRST..LAST or a comma list (default 1)");
  cmd->add_option("--start", opt->start, "wall time of virtual time 0, RFC 3339 (default 2026-11-30T16:00:00Z)");
  cmd->add_option("--hours", opt->hours, "hours to run (default 32)")->check(CLI::Range(1, 24 * 7));
  cmd->add_option("--control", opt->control,
                  "all (default), autoscaler, static, hpa-gpu-utilization, keda or planned");
  cmd->add_option("--static-replicas", opt->static_replicas,
                  "replicas of static provisioning for every service, in [1, its maxReplicas] (default: the smallest "
                  "count whose worst-seed peak SLO attainment reaches --slo-target, searched)");
  cmd->add_option("--slo-target", opt->slo_target,
                  "peak TTFT SLO attainment, percent of minutes, the static baseline must reach (default 95)")
      ->check(finite_range(1, 100));
  cmd->add_option("--peak", opt->peak,
                  "peak window HH:MM-HH:MM in local time (default: each service's TidalPolicy window with the largest "
                  "replica floor)");
  cmd->add_flag("--search-floor", opt->search_floor,
               "search each service's peak-window inferenceReplicaFloor: the smallest floor, from the TidalPolicy's "
               "up to maxReplicas, whose worst-seed peak attainment under the autoscaler reaches --slo-target; every "
               "control then runs with it");
  cmd->add_option("--jobs,-j", opt->jobs, "runs at once (default: one per CPU)")->check(CLI::Range(1, 256));
  cmd->add_option("--events", opt->events,
                  "write each run's event log as JSON lines to <events>.<control>.jsonl (<events>.<control>.<seed>.jsonl "
                  "with several seeds)");
  cmd->add_flag("--quiet", opt->quiet, "no progress on stderr");
  add_output_option(*cmd, opt->format);
  return {cmd, [opt, cmd] { return run_serving(*opt, *cmd); }};
}

}  // namespace gpubank::cli
