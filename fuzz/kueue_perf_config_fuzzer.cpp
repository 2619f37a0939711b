// Fuzzes the kueue-perf generator config reader and its expansion: any input either gives
// findings or a config whose expansion stays within the limits the reader enforces.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/diagnostic.hpp"
#include "twin/kueue_perf/config.hpp"
#include "twin/kueue_perf/scenario.hpp"

using namespace gpubank;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  Diagnostics diagnostics;
  twin::kueue_perf::ConfigLimits limits;
  limits.max_workloads = 20'000;  // keep each run fast; the limit itself is what is tested
  limits.max_queues = 2'000;
  const auto config = twin::kueue_perf::parse_generator_config(text, "fuzz.yaml", diagnostics, limits);
  if (!config) return 0;
  const auto scenario = twin::kueue_perf::expand(*config);
  (void)scenario;
  return 0;
}
