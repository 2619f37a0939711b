// Helios (S-Lab-System-Group/HeliosData): per-day GPU counts per virtual cluster,
// Venus_cluster_gpu_number.csv and Earth_gpu_number.csv, with the header
// "date,<vc>,<vc>,...,total" (dates "YYYY-MM-DD", 2020-04-01 to 2020-09-28 in the public
// files). Useful as a capacity-per-group schedule (how many GPUs each VC held each day).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/diagnostic.hpp"
#include "twin/trace/csv.hpp"

namespace gpubank::twin::trace {

inline constexpr std::int64_t kMaxHeliosGpus = 1'000'000;

struct HeliosDay {
  std::string date;                // as in the file
  std::int64_t day = 0;            // days since 1970-01-01
  std::vector<std::int64_t> gpus;  // per VC, in header order
  std::int64_t total = 0;          // equals the sum of gpus
};

struct HeliosGpuNumbers {
  std::vector<std::string> vcs;  // header order, between "date" and "total"
  std::vector<HeliosDay> days;   // strictly increasing dates
};

// Errors: a header not of the form date,<one or more unique VC names>,total; dates that are
// malformed or not increasing; counts outside 0..kMaxHeliosGpus; a total that is not the
// sum of its row (kRuleTotal).
[[nodiscard]] std::optional<HeliosGpuNumbers> read_helios_gpu_numbers(std::string_view text, const std::string& file,
                                                                      Diagnostics& diagnostics,
                                                                      const CsvLimits& limits = {});

}  // namespace gpubank::twin::trace
