// The Alibaba GPU cluster trace v2023 (alibaba/clusterdata cluster-trace-gpu-v2023): pod
// lists, openb_pod_list_*.csv, with the header
//   name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time
// (times in seconds from the trace's start). openb_pod_list_multigpu50.csv carries only the
// first five columns; the reader accepts that header too and leaves the rest unset.
//
// What the files hold (checked by tests/twin/trace): scheduled_time is empty for the pods
// that never ran (pod_phase Pending); gpu_spec is empty in all three public files (any
// model); num_gpu 0 marks CPU-only pods; gpu_milli < 1000 (with num_gpu 1) a shared GPU.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/diagnostic.hpp"
#include "twin/trace/csv.hpp"

namespace gpubank::twin::trace {

enum class AlibabaQos { LS, BE, Burstable, Guaranteed };
enum class AlibabaPodPhase { Pending, Running, Succeeded, Failed, Unknown };

[[nodiscard]] std::string_view to_string(AlibabaQos qos);
[[nodiscard]] std::string_view to_string(AlibabaPodPhase phase);

struct AlibabaPod {
  int line = 0;  // where the row was, for messages
  std::string name;
  std::int64_t cpu_milli = 0;
  std::int64_t memory_mib = 0;
  std::int64_t num_gpu = 0;
  std::int64_t gpu_milli = 0;  // per GPU: 1000 whole, 1..999 a shared fraction, 0 without GPU
  std::vector<std::string> gpu_spec;  // allowed models, in the file's order; empty: any
  std::optional<AlibabaQos> qos;
  std::optional<AlibabaPodPhase> pod_phase;
  std::optional<std::int64_t> creation_time;   // seconds
  std::optional<std::int64_t> deletion_time;   // seconds
  std::optional<std::int64_t> scheduled_time;  // seconds; empty when never scheduled
};

// Bounds of the numbers (a row outside them is an error, kRuleOutOfRange).
inline constexpr std::int64_t kMaxAlibabaCpuMilli = 10'000'000;
inline constexpr std::int64_t kMaxAlibabaMemoryMib = std::int64_t{1} << 30;
inline constexpr std::int64_t kMaxAlibabaGpus = 1024;              // per pod
inline constexpr std::int64_t kMaxAlibabaSeconds = 10LL * 366 * 86400;  // ten years

// Every pod of a pod list in file order; nullopt when any error was reported (all of them
// are: header, tokenizer, every field; duplicate pod names are errors too).
[[nodiscard]] std::optional<std::vector<AlibabaPod>> read_alibaba_pods(std::string_view text, const std::string& file,
                                                                       Diagnostics& diagnostics,
                                                                       const CsvLimits& limits = {});

}  // namespace gpubank::twin::trace
