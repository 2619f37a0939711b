// The arrival experiment: shuffle, tune to arrival_percent of the GPU capacity, place pod by
// pod, and record the series at every step (see fragment.hpp).
#include <algorithm>
#include <numeric>
#include <utility>

#include "twin/fragment/fragment.hpp"

namespace gpubank::twin::fragment {

namespace {

// Fisher-Yates with our draw (std::shuffle's use of the engine is implementation-defined).
void shuffle(std::vector<std::size_t>& order, Rng& rng) {
  for (std::size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng.below(i)]);
}

// TunePodsByNodeTotalResource: drop random pods while the GPU demand is above the target;
// append random trace pods while the next one keeps it at or below the target.
void tune(std::vector<std::size_t>& order, const std::vector<std::size_t>& by_name, std::span<const Pod> pods,
          std::int64_t target, Rng& rng) {
  std::int64_t demand = 0;
  for (const std::size_t i : order) demand += pods[i].gpu_demand_milli();
  while (demand > target && !order.empty()) {
    const auto drop = static_cast<std::ptrdiff_t>(rng.below(order.size()));
    demand -= pods[order[static_cast<std::size_t>(drop)]].gpu_demand_milli();
    order.erase(order.begin() + drop);
  }
  // Without a GPU pod no copy brings the demand any closer: appending would never stop.
  const bool any_gpu = std::any_of(by_name.begin(), by_name.end(), [&](std::size_t i) { return pods[i].gpu_demand_milli() > 0; });
  if (demand == target || !any_gpu) return;
  while (true) {
    const std::size_t copy = by_name[rng.below(by_name.size())];
    if (demand + pods[copy].gpu_demand_milli() > target) return;
    demand += pods[copy].gpu_demand_milli();
    order.push_back(copy);
  }
}

}  // namespace

ExperimentResult run_experiment(std::span<const Node> nodes, std::span<const Pod> pods,
                                const ExperimentOptions& options) {
  Rng rng(options.seed);
  Cluster cluster(std::vector<Node>(nodes.begin(), nodes.end()), typical_workload(pods, options.popularity_percent));

  ExperimentResult result;
  result.placement = options.placement;
  result.seed = options.seed;
  result.arrival_percent = options.arrival_percent;
  result.nodes = nodes.size();
  result.gpu_capacity_milli = cluster.gpu_capacity_milli();
  result.trace_pods = static_cast<std::int64_t>(pods.size());
  for (const Pod& pod : pods) result.trace_gpu_milli += pod.gpu_demand_milli();
  result.task_types = cluster.workload().types.size();
  result.typical_pods = cluster.workload().typical_pods;

  std::vector<std::size_t> by_name(pods.size());
  std::iota(by_name.begin(), by_name.end(), std::size_t{0});
  std::ranges::stable_sort(by_name, {}, [&](std::size_t i) -> const std::string& { return pods[i].name; });
  std::vector<std::size_t> order = by_name;
  shuffle(order, rng);
  const std::int64_t capacity = result.gpu_capacity_milli;
  tune(order, by_name, pods, options.arrival_percent * capacity / 100, rng);
  result.submitted_pods = static_cast<std::int64_t>(order.size());

  SeriesPoint now;
  auto record = [&](int step) {
    now.step_percent = step;
    now.allocated_gpu_milli = cluster.gpu_allocated_milli();
    now.unallocated_gpu_milli = capacity - now.allocated_gpu_milli;
    now.fragment_gpu_milli = cluster.fragment_milli();
    result.series.push_back(now);
  };
  const int step = std::max(options.step_percent, 1);
  record(0);
  int next_step = step;
  for (const std::size_t i : order) {
    const Pod& pod = pods[i];
    now.arrived_gpu_milli += pod.gpu_demand_milli();
    ++now.arrived_pods;
    if (!cluster.place(pod, options.placement, rng)) {
      ++now.failed_pods;
      now.failed_gpu_milli += pod.gpu_demand_milli();
    }
    // arrived >= next_step % of the capacity, in integers.
    while (next_step <= options.arrival_percent && now.arrived_gpu_milli * 100 >= std::int64_t{next_step} * capacity) {
      record(next_step);
      next_step += step;
    }
  }
  // The tuned workload stops within one pod of the target: its end stands for the last step.
  if (result.series.back().step_percent < options.arrival_percent) record(options.arrival_percent);
  result.memoised_states = cluster.memoised_states();
  return result;
}

}  // namespace gpubank::twin::fragment
