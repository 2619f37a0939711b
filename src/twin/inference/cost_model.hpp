// The cost model of one vLLM-like replica: what its GPUs can hold and how long one engine
// step takes. Deliberately simple and monotone (docs/twin-inference.md, "Cost model"):
//
//   weights      = parameters x bytes per parameter, split evenly over the TP GPUs
//   KV per token = 2 (K and V) x layers x KV heads x head dim x KV dtype bytes
//   KV blocks    = floor((TP x GPU memory x gpu_memory_utilization - weights)
//                        / (block size x KV per token))
//   step         = overhead + max(memory time, compute time), rounded to the microsecond
//     memory time  = (weights per GPU + context tokens x KV per token / TP)
//                    / (HBM bandwidth x memory efficiency)
//     compute time = scheduled tokens x 2 x parameters / (TP x dense BF16 FLOP/s x compute efficiency)
//
// A decode step streams every weight once and reads the KV cache of the batch (memory
// bound); a prefill chunk is compute bound. The GPU table holds vendor figures.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace gpubank::twin::inference {

struct GpuSpec {
  std::string_view model;            // the pool's gpuModel: "H100", "H200", "A100", "L40S"
  std::int64_t memory_bytes = 0;     // total memory as CUDA reports it (nvidia-smi's MiB x 2^20)
  double hbm_bytes_per_s = 0;        // peak memory bandwidth
  double dense_bf16_flop_per_s = 0;  // peak dense BF16 tensor throughput (no sparsity)
};

// The GPUs the twin knows, in a fixed order.
[[nodiscard]] std::span<const GpuSpec> known_gpus();
[[nodiscard]] std::optional<GpuSpec> find_gpu(std::string_view model);

// The model's shape; defaults are Llama-3.1-70B's config.json (bf16 weights and KV cache).
struct ModelConfig {
  std::int64_t parameters = 70'553'706'496;
  int bytes_per_parameter = 2;
  int num_layers = 80;
  int num_kv_heads = 8;
  int head_dim = 128;
  int kv_dtype_bytes = 2;
  std::int32_t max_model_len = 131'072;  // vLLM refuses longer requests (and caps at KV capacity here)
};

// vLLM's engine settings (defaults as vLLM's) and the cost model's three calibration
// constants (chosen so that a 70B model on TP=4 H100 gives ~20 ms inter-token latency at
// batch 1 and ~100 ms TTFT for a 1,000-token prompt).
struct EngineConfig {
  double gpu_memory_utilization = 0.9;
  int block_size = 16;
  int max_num_seqs = 256;
  int max_num_batched_tokens = 8192;  // the token budget of one step (chunked prefill)
  double memory_efficiency = 0.6;     // achieved / peak HBM bandwidth in decode
  double compute_efficiency = 0.35;   // achieved / peak FLOP/s in prefill (MFU, TP all-reduce included)
  std::int64_t step_overhead_us = 3000;  // scheduling, sampling, kernel launches per step
};

// What a replica of a model on a GPU model and TP size can do, derived once.
struct ReplicaCosts {
  GpuSpec gpu;
  int tensor_parallel_size = 1;
  int block_size = 16;
  std::int64_t weight_bytes = 0;        // all GPUs together
  std::int64_t kv_bytes_per_token = 0;  // all GPUs together
  std::int64_t kv_blocks = 0;           // KV cache capacity in blocks (> 0)
  std::int64_t kv_tokens = 0;           // kv_blocks x block_size
  std::int64_t max_request_tokens = 0;  // min(max_model_len, kv_tokens): longer requests are refused
  double weight_bytes_per_gpu = 0;
  double memory_bytes_per_us = 0;       // one GPU, effective
  double flop_per_token = 0;            // 2 x parameters
  double replica_flop_per_us = 0;       // TP GPUs, effective
  std::int64_t step_overhead_us = 0;

  // One engine step that computes `scheduled_tokens` tokens for requests whose KV cache
  // after the step holds `context_tokens` tokens in all, in microseconds (>= 1).
  [[nodiscard]] std::int64_t step_us(std::int64_t scheduled_tokens, std::int64_t context_tokens) const;
  [[nodiscard]] std::int64_t blocks_for(std::int64_t tokens) const { return (tokens + block_size - 1) / block_size; }
};

// Nothing when the GPU model is unknown or the weights leave no room for one KV block
// (check_service says which).
[[nodiscard]] std::optional<ReplicaCosts> replica_costs(const ModelConfig& model, const EngineConfig& engine,
                                                        std::string_view gpu_model, int tensor_parallel_size);

}  // namespace gpubank::twin::inference
