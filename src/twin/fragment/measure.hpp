// The fragmentation measure's inner loop, shared by the public functions (fragment.cpp)
// and the cluster's memo (cluster.cpp). Internal to gpubank_twin_fragment.
#pragma once

#include <cstdint>
#include <span>

namespace gpubank::twin::fragment::detail {

// A task's demand in the form the measure needs.
struct TaskDemand {
  std::int64_t cpu_milli = 0;
  int gpu_count = 0;
  std::int64_t gpu_milli = 0;
};

// F_n(m) in milli-GPU for a node whose GPUs have gpu_free milli free, sorted largest first
// (see fragment.hpp for the cases).
[[nodiscard]] inline std::int64_t task_fragment(bool model_allowed, std::int64_t cpu_free,
                                                std::span<const std::int32_t> gpu_free, const TaskDemand& task) {
  std::int64_t total = 0;
  for (const std::int32_t free : gpu_free) total += free;
  if (total == 0 || task.gpu_count == 0 || !model_allowed || cpu_free < task.cpu_milli) return total;
  // Sorted largest first: the GPUs that can serve the task are a prefix.
  std::int64_t serving = 0;
  std::size_t sufficient = 0;
  while (sufficient < gpu_free.size() && gpu_free[sufficient] >= task.gpu_milli) serving += gpu_free[sufficient++];
  if (sufficient < static_cast<std::size_t>(task.gpu_count)) return total;
  return total - serving;
}

}  // namespace gpubank::twin::fragment::detail
