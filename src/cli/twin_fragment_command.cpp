// gpubank twin fragment: the FGD paper's arrival experiment (src/twin/fragment) on the
// Alibaba v2023 node and pod lists, one placement policy per run.
#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>

#include "cli/command.hpp"
#include "cli/validators.hpp"
#include "document/loader.hpp"
#include "document/reader.hpp"
#include "twin/fragment/fragment.hpp"

namespace gpubank::cli {
namespace {

namespace fr = twin::fragment;

struct FragmentOptions {
  std::string trace;      // alibaba:<pod list csv>
  std::string inventory;  // alibaba:<node list csv>
  std::string placement;
  std::uint64_t seed = 1;
  int arrival_percent = 130;
  int step_percent = 5;
  Format format = Format::Text;
};

constexpr std::string_view kCommand = "gpubank twin fragment";
constexpr std::string_view kAlibabaPrefix = "alibaba:";
constexpr std::size_t kMaxInputBytes = std::size_t{256} << 20;

// The path after "alibaba:", or empty when the source has another form.
std::string alibaba_path(const std::string& source) {
  return source.starts_with(kAlibabaPrefix) ? source.substr(kAlibabaPrefix.size()) : std::string();
}

// A file's text, or an input.unreadable diagnostic naming it.
std::optional<std::string> read_input(const std::string& path, Diagnostics& diagnostics) {
  auto text = doc::read_file(path, kMaxInputBytes);
  if (!text) {
    diagnostics.push_back(
        Diagnostic{Severity::Error, std::string(doc::kRuleUnreadable), path, {}, {}, {}, {}, text.error()});
    return std::nullopt;
  }
  return std::move(*text);
}

double gpus(std::int64_t milli) { return static_cast<double>(milli) / fr::kMilliPerGpu; }
// Milli-GPU to GPUs, rounded to the milli: stable digits in JSON and YAML.
double gpus(double milli) { return std::round(milli) / fr::kMilliPerGpu; }

std::string fixed(double value, int decimals) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", decimals, value);
  return buffer;
}

nlohmann::ordered_json to_json(const fr::ExperimentResult& r) {
  nlohmann::ordered_json series = nlohmann::ordered_json::array();
  for (const fr::SeriesPoint& p : r.series) {
    series.push_back({{"arrivedPercent", p.step_percent},
                      {"arrivedGpus", gpus(p.arrived_gpu_milli)},
                      {"allocatedGpus", gpus(p.allocated_gpu_milli)},
                      {"unallocatedGpus", gpus(p.unallocated_gpu_milli)},
                      {"fragmentGpus", gpus(p.fragment_gpu_milli)},
                      {"arrivedPods", p.arrived_pods},
                      {"failedPods", p.failed_pods},
                      {"failedGpus", gpus(p.failed_gpu_milli)}});
  }
  return {{"placement", fr::to_string(r.placement)},
          {"seed", r.seed},
          {"arrivalPercent", r.arrival_percent},
          {"nodes", r.nodes},
          {"gpus", gpus(r.gpu_capacity_milli)},
          {"tracePods", r.trace_pods},
          {"traceGpus", gpus(r.trace_gpu_milli)},
          {"submittedPods", r.submitted_pods},
          {"taskTypes", r.task_types},
          {"typicalPods", r.typical_pods},
          {"series", std::move(series)}};
}

void print_text(std::ostream& out, const fr::ExperimentResult& r) {
  out << "placement " << fr::to_string(r.placement) << ", seed " << r.seed << ": " << r.nodes << " nodes, "
      << fixed(gpus(r.gpu_capacity_milli), 0) << " GPUs\n"
      << "trace: " << r.trace_pods << " pods, " << fixed(gpus(r.trace_gpu_milli), 1) << " GPUs of demand; "
      << r.submitted_pods << " pods submitted (tuned to " << r.arrival_percent << "% of the GPU capacity)\n"
      << "workload for the measure: " << r.task_types << " task types, " << r.typical_pods << " of the " << r.trace_pods
      << " pods\n\n";
  out << "arrived  arrived GPUs  allocated GPUs  unallocated GPUs  fragment GPUs  fragment %  failed pods  failed "
         "GPUs\n";
  for (const fr::SeriesPoint& p : r.series) {
    const double unallocated = gpus(p.unallocated_gpu_milli);
    const double fragment = gpus(p.fragment_gpu_milli);
    char line[200];
    std::snprintf(line, sizeof line, "%6d%%  %12.1f  %14.1f  %16.1f  %13.1f  %9.1f%%  %11lld  %11.1f\n", p.step_percent,
                  gpus(p.arrived_gpu_milli), gpus(p.allocated_gpu_milli), unallocated, fragment,
                  unallocated > 0 ? 100 * fragment / unallocated : 0.0, static_cast<long long>(p.failed_pods),
                  gpus(p.failed_gpu_milli));
    out << line;
  }
}

int run_fragment(const FragmentOptions& opt) {
  const std::string pods_path = alibaba_path(opt.trace);
  const std::string nodes_path = alibaba_path(opt.inventory);
  if (pods_path.empty()) {
    std::cerr << kCommand << ": --trace: expected alibaba:<openb_pod_list_*.csv>, got \"" << opt.trace << "\"\n";
    return 2;
  }
  if (nodes_path.empty()) {
    std::cerr << kCommand << ": --inventory: expected alibaba:<openb_node_list_gpu_node.csv>, got \"" << opt.inventory
              << "\"\n";
    return 2;
  }
  const auto placement = fr::parse_placement(opt.placement);  // CLI11 checked the name
  if (!placement) return 2;

  Diagnostics diagnostics;
  std::optional<std::vector<fr::Node>> nodes;
  std::optional<std::vector<fr::Pod>> pods;
  if (auto text = read_input(nodes_path, diagnostics)) nodes = fr::alibaba_nodes(*text, nodes_path, diagnostics);
  if (auto text = read_input(pods_path, diagnostics)) pods = fr::alibaba_pods(*text, pods_path, diagnostics);
  for (const auto& d : diagnostics) std::cerr << d.to_string() << '\n';
  if (!nodes || !pods) {
    std::cerr << kCommand << ": the inputs are invalid\n";
    return 1;
  }

  fr::ExperimentOptions options;
  options.placement = *placement;
  options.seed = opt.seed;
  options.arrival_percent = opt.arrival_percent;
  options.step_percent = opt.step_percent;
  const fr::ExperimentResult result = fr::run_experiment(*nodes, *pods, options);
  if (opt.format == Format::Text) {
    print_text(std::cout, result);
  } else {
    print_structured(std::cout, to_json(result), opt.format);
  }
  return 0;
}

}  // namespace

Command add_twin_fragment_command(CLI::App& twin) {
  auto opt = std::make_shared<FragmentOptions>();
  CLI::App* cmd = twin.add_subcommand(
      "fragment", "Measure GPU fragmentation as the FGD paper does, placing a trace's pods with one policy");
  cmd->footer(
      "Submits the pod list's pods in a seeded random order, tuned to --arrival-percent of the cluster's GPU "
      "capacity, places each with the chosen policy (none departs), and prints at every --step-percent of arrived "
      "GPU demand the allocated and unallocated GPUs, the fragmentation measure F (sum over nodes of the "
      "popularity-weighted fragment of each task type, Weng et al., USENIX ATC 2023) and the failed pods. "
      "Deterministic: the same inputs and seed print the same bytes. "
      "Exit codes: 0 done, 1 invalid or unreadable input, 2 usage.");
  cmd->add_option("--trace", opt->trace,
                  "alibaba:<pod list>, e.g. alibaba:../shared/traces/alibaba-gpu-v2023/openb_pod_list_default.csv")
      ->required();
  cmd->add_option("--inventory", opt->inventory, "alibaba:<node list>, e.g. alibaba:.../openb_node_list_gpu_node.csv")
      ->required();
  std::vector<std::string> names;
  for (const fr::Placement p : fr::all_placements()) names.emplace_back(fr::to_string(p));
  cmd->add_option("--placement", opt->placement, "placement policy")->required()->check(CLI::IsMember(names));
  cmd->add_option("--seed", opt->seed, "seed of the submission order and of the random policy")
      ->check(seed_text())
      ->capture_default_str();
  cmd->add_option("--arrival-percent", opt->arrival_percent, "GPU demand submitted, in % of the GPU capacity")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  cmd->add_option("--step-percent", opt->step_percent, "a row every this many % of arrived demand")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  add_output_option(*cmd, opt->format);
  return {cmd, [opt] { return run_fragment(*opt); }};
}

}  // namespace gpubank::cli
