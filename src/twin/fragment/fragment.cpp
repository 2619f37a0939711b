// The measure (F_n(m), F_n(M), the workload's task types), the policies' names, the seeded
// draw, and the Alibaba inputs. The cluster and its policies are in cluster.cpp, the
// arrival experiment in experiment.cpp.
#include "twin/fragment/fragment.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <map>
#include <set>
#include <tuple>
#include <utility>

#include "twin/fragment/measure.hpp"
#include "twin/trace/alibaba.hpp"

namespace gpubank::twin::fragment {

namespace {

constexpr std::array<std::pair<Placement, std::string_view>, 7> kPlacementNames{{
    {Placement::Fgd, "fgd"},
    {Placement::FgdExact, "fgd-exact"},
    {Placement::BestFit, "best-fit"},
    {Placement::DotProduct, "dot-product"},
    {Placement::Packing, "packing"},
    {Placement::Clustering, "clustering"},
    {Placement::Random, "random"},
}};
constexpr std::array<Placement, 7> kPlacements{Placement::Fgd,        Placement::FgdExact, Placement::BestFit,
                                               Placement::DotProduct, Placement::Packing,  Placement::Clustering,
                                               Placement::Random};

bool model_allowed(const std::vector<std::string>& allowed, const std::string& model) {
  return allowed.empty() || std::ranges::find(allowed, model) != allowed.end();
}

// The key that tells task types apart (the simulator's PodResource: no memory).
auto type_key(const Pod& pod) { return std::tie(pod.cpu_milli, pod.gpu_count, pod.gpu_milli, pod.gpu_models); }

}  // namespace

NodeState NodeState::idle(const Node& node) {
  return NodeState{
      node.cpu_milli, node.memory_mib,
      std::vector<std::int32_t>(static_cast<std::size_t>(node.gpus), static_cast<std::int32_t>(kMilliPerGpu))};
}

std::int64_t NodeState::gpu_free_total() const {
  std::int64_t total = 0;
  for (const std::int32_t free : gpu_free_milli) total += free;
  return total;
}

Workload typical_workload(std::span<const Pod> pods, int popularity_percent) {
  // Count the pods of each type (std::map: a deterministic first order).
  std::map<std::tuple<std::int64_t, int, std::int64_t, std::vector<std::string>>, std::int64_t> counts;
  for (const Pod& pod : pods) ++counts[type_key(pod)];
  Workload workload;
  workload.trace_pods = static_cast<std::int64_t>(pods.size());
  for (const auto& [key, count] : counts) {
    const auto& [cpu, gpu_count, gpu_milli, models] = key;
    workload.types.push_back(TaskType{cpu, gpu_count, gpu_milli, models, count});
  }
  // Most popular first; ties as the simulator's sort.Reverse(TargetPodList): larger CPU,
  // then larger GPU share, more GPUs, then the later spec first.
  std::ranges::sort(workload.types, [](const TaskType& a, const TaskType& b) {
    return std::tie(b.pods, b.cpu_milli, b.gpu_milli, b.gpu_count, b.gpu_models) <
           std::tie(a.pods, a.cpu_milli, a.gpu_milli, a.gpu_count, a.gpu_models);
  });
  // Keep types until they cover popularity_percent of the pods (integers: exact).
  std::int64_t covered = 0;
  std::size_t kept = 0;
  while (kept < workload.types.size() && covered * 100 < std::int64_t{popularity_percent} * workload.trace_pods) {
    covered += workload.types[kept++].pods;
  }
  workload.types.resize(kept);
  workload.typical_pods = covered;
  return workload;
}

std::int64_t task_fragment_milli(const Node& node, const NodeState& state, const TaskType& task) {
  return detail::task_fragment(model_allowed(task.gpu_models, node.gpu_model), state.cpu_free, state.gpu_free_milli,
                               {task.cpu_milli, task.gpu_count, task.gpu_milli});
}

double node_fragment_milli(const Node& node, const NodeState& state, const Workload& workload) {
  if (workload.typical_pods == 0) return 0;
  std::int64_t weighted = 0;
  for (const TaskType& task : workload.types) weighted += task.pods * task_fragment_milli(node, state, task);
  return static_cast<double>(weighted) / static_cast<double>(workload.typical_pods);
}

std::string_view to_string(Placement placement) {
  for (const auto& [value, name] : kPlacementNames) {
    if (value == placement) return name;
  }
  return "?";
}

std::optional<Placement> parse_placement(std::string_view name) {
  for (const auto& [value, text] : kPlacementNames) {
    if (text == name) return value;
  }
  return std::nullopt;
}

std::span<const Placement> all_placements() { return kPlacements; }

std::uint64_t Rng::below(std::uint64_t n) {
  if (n <= 1) return 0;
  // The smallest all-ones mask covering n - 1; a draw outside [0, n) is drawn again
  // (fewer than half the draws on average).
  const std::uint64_t mask = std::bit_ceil(n) - 1;
  while (true) {
    const std::uint64_t value = engine_() & mask;
    if (value < n) return value;
  }
}

const SeriesPoint* ExperimentResult::at(int step_percent) const {
  const auto it = std::ranges::find(series, step_percent, &SeriesPoint::step_percent);
  return it == series.end() ? nullptr : &*it;
}

bool validate_nodes(std::span<const Node> nodes, const std::string& nodes_file, Diagnostics& diagnostics) {
  const std::size_t before = diagnostics.size();
  auto error = [&](std::string_view rule, const std::string& name, std::string message) {
    diagnostics.push_back(Diagnostic{
        Severity::Error, std::string(rule), nodes_file, {}, name.empty() ? "" : "Node", name, {}, std::move(message)});
  };
  if (nodes.empty()) error(kRuleEmpty, {}, "the node list has no GPU node");
  std::set<std::string> models;
  for (const Node& node : nodes) {
    if (node.gpus < 1 || node.gpus > kMaxGpusPerNode) {
      error(kRuleNodeCapacity, node.name,
            "a node needs 1 to " + std::to_string(kMaxGpusPerNode) + " GPUs, got " + std::to_string(node.gpus));
    }
    if (node.cpu_milli <= 0 || node.memory_mib <= 0) {
      error(kRuleNodeCapacity, node.name,
            "a node needs its CPU and memory (the measure and the fit read them), got cpu_milli " +
                std::to_string(node.cpu_milli) + " and memory_mib " + std::to_string(node.memory_mib));
    }
    models.insert(node.gpu_model);
  }
  if (models.size() > kMaxGpuModels) {
    error(kRuleTooManyModels, {},
          "at most " + std::to_string(kMaxGpuModels) + " GPU models, got " + std::to_string(models.size()));
  }
  return diagnostics.size() == before;
}

std::vector<Node> nodes_from_inventory(const cluster::Inventory& inventory) {
  std::vector<Node> nodes;
  nodes.reserve(inventory.nodes.size());
  for (const auto& spec : inventory.nodes) {
    nodes.push_back(Node{spec.name, spec.gpu_model, spec.cpu_milli, spec.memory_mib, spec.gpus});
  }
  return nodes;
}

std::optional<std::vector<Node>> alibaba_nodes(std::string_view text, const std::string& file,
                                               Diagnostics& diagnostics) {
  auto inventory = cluster::alibaba_inventory(text, file, diagnostics);
  if (!inventory) return std::nullopt;
  std::vector<Node> nodes = nodes_from_inventory(*inventory);
  if (!validate_nodes(nodes, file, diagnostics)) return std::nullopt;
  return nodes;
}

std::optional<std::vector<Pod>> alibaba_pods(std::string_view text, const std::string& file, Diagnostics& diagnostics) {
  auto rows = trace::read_alibaba_pods(text, file, diagnostics);
  if (!rows) return std::nullopt;
  std::vector<Pod> pods;
  pods.reserve(rows->size());
  bool ok = true;
  for (auto& row : *rows) {
    auto shape_error = [&](std::string path, std::string message) {
      diagnostics.push_back(Diagnostic{Severity::Error,
                                       std::string(kRuleGpuShape),
                                       file,
                                       {row.line, 0},
                                       {},
                                       {},
                                       std::move(path),
                                       std::move(message)});
      ok = false;
    };
    const std::string shape =
        "num_gpu " + std::to_string(row.num_gpu) + " with gpu_milli " + std::to_string(row.gpu_milli);
    if (row.num_gpu == 0 && row.gpu_milli != 0) {
      shape_error("gpu_milli", "pod " + row.name + ": " + shape + ": a CPU-only pod has gpu_milli 0");
    } else if (row.num_gpu > 0 && row.gpu_milli == 0) {
      shape_error("gpu_milli", "pod " + row.name + ": " + shape + ": a GPU pod needs gpu_milli 1 to 1000");
    } else if (row.num_gpu > 1 && row.gpu_milli < kMilliPerGpu) {
      shape_error("num_gpu", "pod " + row.name + ": " + shape +
                                 ": a share of a GPU (gpu_milli below 1000) is for one GPU (num_gpu 1)");
    }
    pods.push_back(Pod{std::move(row.name), row.line, row.cpu_milli, row.memory_mib, static_cast<int>(row.num_gpu),
                       row.gpu_milli, std::move(row.gpu_spec)});
  }
  if (!ok) return std::nullopt;
  if (pods.empty()) {
    diagnostics.push_back(
        Diagnostic{Severity::Error, std::string(kRuleEmpty), file, {}, {}, {}, {}, "the pod list has no pod"});
    return std::nullopt;
  }
  if (std::none_of(pods.begin(), pods.end(), [](const Pod& p) { return p.gpu_count > 0; })) {
    diagnostics.push_back(Diagnostic{Severity::Error, std::string(kRuleEmpty), file, {}, {}, {}, {},
                                     "no pod of the list asks for a GPU: the experiment fills the cluster's GPUs"});
    return std::nullopt;
  }
  return pods;
}

}  // namespace gpubank::twin::fragment
