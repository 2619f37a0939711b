#include "twin/inference/cost_model.hpp"

#include <algorithm>
#include <array>
#include <cmath>

namespace gpubank::twin::inference {

namespace {

constexpr std::int64_t kMiB = std::int64_t{1} << 20;

// Memory: the total nvidia-smi prints (CUDA's cudaMemGetInfo total). Bandwidth and FLOP/s:
// NVIDIA's datasheets (H100 SXM5, H200 SXM, A100 80GB SXM4, L40S), dense BF16 tensor.
constexpr std::array<GpuSpec, 4> kGpus{{
    {"H100", 81'559 * kMiB, 3.35e12, 989e12},
    {"H200", 143'771 * kMiB, 4.8e12, 989e12},
    {"A100", 81'920 * kMiB, 2.039e12, 312e12},
    {"L40S", 46'068 * kMiB, 0.864e12, 362e12},
}};

}  // namespace

std::span<const GpuSpec> known_gpus() { return kGpus; }

std::optional<GpuSpec> find_gpu(std::string_view model) {
  for (const GpuSpec& g : kGpus) {
    if (g.model == model) return g;
  }
  return std::nullopt;
}

std::int64_t ReplicaCosts::step_us(std::int64_t scheduled_tokens, std::int64_t context_tokens) const {
  const double memory_us =
      (weight_bytes_per_gpu + static_cast<double>(context_tokens) * static_cast<double>(kv_bytes_per_token) /
                                  static_cast<double>(tensor_parallel_size)) /
      memory_bytes_per_us;
  const double compute_us = static_cast<double>(scheduled_tokens) * flop_per_token / replica_flop_per_us;
  const auto us = step_overhead_us + std::llround(std::max(memory_us, compute_us));
  return std::max<std::int64_t>(us, 1);
}

std::optional<ReplicaCosts> replica_costs(const ModelConfig& model, const EngineConfig& engine,
                                          std::string_view gpu_model, int tensor_parallel_size) {
  const auto gpu = find_gpu(gpu_model);
  if (!gpu || tensor_parallel_size < 1 || engine.block_size < 1) return std::nullopt;
  ReplicaCosts c;
  c.gpu = *gpu;
  c.tensor_parallel_size = tensor_parallel_size;
  c.block_size = engine.block_size;
  const double tp = tensor_parallel_size;
  c.weight_bytes = model.parameters * model.bytes_per_parameter;
  c.kv_bytes_per_token = std::int64_t{2} * model.num_layers * model.num_kv_heads * model.head_dim * model.kv_dtype_bytes;
  const double usable = tp * static_cast<double>(gpu->memory_bytes) * engine.gpu_memory_utilization -
                        static_cast<double>(c.weight_bytes);
  const double block_bytes = static_cast<double>(engine.block_size) * static_cast<double>(c.kv_bytes_per_token);
  if (!(usable >= block_bytes)) return std::nullopt;
  c.kv_blocks = static_cast<std::int64_t>(std::floor(usable / block_bytes));
  c.kv_tokens = c.kv_blocks * engine.block_size;
  c.max_request_tokens = std::min<std::int64_t>(model.max_model_len, c.kv_tokens);
  c.weight_bytes_per_gpu = static_cast<double>(c.weight_bytes) / tp;
  c.memory_bytes_per_us = gpu->hbm_bytes_per_s * engine.memory_efficiency / 1e6;
  c.flop_per_token = 2.0 * static_cast<double>(model.parameters);
  c.replica_flop_per_us = tp * gpu->dense_bf16_flop_per_s * engine.compute_efficiency / 1e6;
  c.step_overhead_us = engine.step_overhead_us;
  return c;
}

}  // namespace gpubank::twin::inference
