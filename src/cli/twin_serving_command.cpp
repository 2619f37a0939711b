// gpubank twin serving: the embedded platform's day with the inference replicas decided
// by gpubank's autoscaler and tidal controller, by static provisioning, by a CPU-style
// HPA on GPU utilisation and by the HPA the rendered KEDA ScaledObject creates, side by
// side (twin/live/serving_report.hpp).
#include <CLI/CLI.hpp>

#include <fstream>
#include <iostream>
#include <memory>

#include "cli/command.hpp"
#include "core/timestamp.hpp"
#include "policy/validate.hpp"
#include "twin/cluster/inventory.hpp"
#include "twin/live/serving_report.hpp"

namespace gpubank::cli {

namespace {

using Control = twin::live::DayOptions::ServingControl;

struct ServingOptions {
  std::vector<std::string> policies{"examples/policies"};
  std::string inventory = "examples/inventory/example.yaml";
  std::string llm_trace;
  double serving_load = 1.0;
  std::uint64_t seed = 1;
  // Tuesday 00:00 in Asia/Shanghai: the run covers the daytime window and the next
  // morning's approach (07:30 notices) with the default 32 hours.
  std::string start = "2026-11-30T16:00:00Z";
  int hours = 32;
  std::string control = "all";
  int static_replicas = 0;
  std::string events;  // JSON lines of each run's events, one file per control: <events>.<control>.jsonl
  bool quiet = false;
  Format format = Format::Text;
};

int run_serving(const ServingOptions& opt) {
  auto start = parse_rfc3339(opt.start);
  if (!start) {
    std::cerr << "gpubank twin serving: --start: " << start.error() << '\n';
    return 2;
  }
  std::vector<Control> controls;
  if (opt.control == "all") {
    controls = {Control::Autoscaler, Control::Static, Control::HpaGpuUtilization, Control::Keda};
  } else if (const auto c = twin::live::serving_control_from(opt.control)) {
    controls = {*c};
  } else {
    std::cerr << "gpubank twin serving: --control: must be all, autoscaler, static, hpa-gpu-utilization, keda or planned, "
                 "got \""
              << opt.control << "\"\n";
    return 2;
  }
  auto loaded = load_valid_policies(opt.policies, "twin serving");
  if (!loaded) return 1;
  policy::PolicySet set = std::move(*loaded);
  auto inventory = load_valid_inventory(opt.inventory, "twin serving");
  if (!inventory) return 1;
  auto shared = std::make_shared<const twin::cluster::Inventory>(std::move(*inventory));
  std::vector<twin::live::ServingOutcome> outcomes;
  int autoscaler_peak = 0;
  for (const Control control : controls) {
    twin::live::DayOptions day;
    day.seed = opt.seed;
    day.start = *start;
    day.hours = opt.hours;
    day.llm_trace = opt.llm_trace;
    day.serving_load = opt.serving_load;
    day.serving_control = control;
    // Static provisioning at the peak the autoscaler reached, when it ran first.
    day.static_replicas = opt.static_replicas > 0 ? opt.static_replicas : autoscaler_peak;
    const std::string name(twin::live::to_string(control));
    std::vector<twin::run::Event> events;
    auto ran = twin::live::run_serving_day(
        set, day, shared,
        [&](std::int64_t hour) {
          if (!opt.quiet) std::cerr << "\rgpubank twin serving: " << name << ": hour " << hour << "/" << opt.hours << std::flush;
        },
        opt.events.empty() ? nullptr : &events);
    if (!opt.quiet) std::cerr << '\n';
    if (!ran) {
      std::cerr << "gpubank twin serving: " << name << ": " << ran.error() << '\n';
      return 1;
    }
    if (!opt.events.empty()) {
      const std::string path = opt.events + "." + name + ".jsonl";
      std::ofstream out(path, std::ios::binary | std::ios::trunc);
      for (const auto& e : events) out << twin::run::event_json(e, *start).dump() << '\n';
      out.close();  // a write error may show only when the last buffer is flushed
      if (!out) {
        std::cerr << "gpubank twin serving: cannot write " << path << '\n';
        return 1;
      }
    }
    for (auto& o : *ran) {
      if (control == Control::Autoscaler) autoscaler_peak = std::max(autoscaler_peak, o.peak_replicas);
      outcomes.push_back(std::move(o));
    }
  }
  if (opt.format == Format::Text) {
    std::cout << twin::live::serving_text(outcomes);
  } else {
    print_structured(std::cout, twin::live::serving_json(outcomes), opt.format);
  }
  return 0;
}

}  // namespace

Command add_twin_serving_command(CLI::App& twin) {
  auto opt = std::make_shared<ServingOptions>();
  CLI::App* cmd = twin.add_subcommand(
      "serving",
      "Run the embedded platform's day with the inference replicas decided by gpubank's autoscaler and tidal "
      "controller, static provisioning at the autoscaler's peak, a CPU-style HPA on GPU utilisation and the HPA of "
      "the rendered KEDA ScaledObject, and compare TTFT p95 SLO attainment, inference GPU-hours, training GPU-hours "
      "on the pool and scale-out reaction");
  cmd->add_option("--policies", opt->policies, "policy files and directories (default: examples/policies)")
      ->expected(1, -1);
  cmd->add_option("--inventory", opt->inventory, "the cluster (default: examples/inventory/example.yaml)");
  cmd->add_option("--llm-trace", opt->llm_trace,
                  "drive the services with a real request trace (AzureLLMInferenceTrace_*.csv) instead of the seeded load");
  cmd->add_option("--serving-load", opt->serving_load, "request rate relative to the scale rule (default 1)")
      ->check(CLI::Range(0.001, 10.0));
  cmd->add_option("--seed", opt->seed, "seed of the day (default 1)");
  cmd->add_option("--start", opt->start, "wall time of virtual time 0, RFC 3339 (default 2026-11-30T16:00:00Z)");
  cmd->add_option("--hours", opt->hours, "hours to run (default 32)")->check(CLI::Range(1, 24 * 7));
  cmd->add_option("--control", opt->control,
                  "all (default), autoscaler, static, hpa-gpu-utilization, keda or planned");
  cmd->add_option("--static-replicas", opt->static_replicas,
                  "replicas of static provisioning (default: the autoscaler's peak, or maxReplicas alone)")
      ->check(CLI::Range(0, 10'000));
  cmd->add_option("--events", opt->events,
                  "write each run's event log as JSON lines to <events>.<control>.jsonl");
  cmd->add_flag("--quiet", opt->quiet, "no progress on stderr");
  add_output_option(*cmd, opt->format);
  return {cmd, [opt] { return run_serving(*opt); }};
}

}  // namespace gpubank::cli
