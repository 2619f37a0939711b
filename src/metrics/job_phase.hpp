// The phase a training job reports of itself (docs/metrics-contract.md,
// gpubank_training_phase): an OpenMetrics StateSet, one series per state, 1 for the state the
// job is in and 0 for the others, with the metric's own name as the state label (what
// prometheus_client's Enum exports). Loading, compiling, evaluating, checkpointing and
// recovering are overhead, not idleness: the scanner, the showback and the rendered rules
// leave them out of waste, but only while they are shorter than the policy's window (a job
// that stays "loading" for a whole window is judged like any other). One definition of the
// PromQL for the three readers. Header-only and pure.
#pragma once

#include <array>
#include <string>
#include <string_view>

namespace gpubank::metrics::job_phase {

inline constexpr std::string_view kSeries = "gpubank_training_phase";
inline constexpr std::string_view kStateLabel = "gpubank_training_phase";
inline constexpr std::string_view kTraining = "training";
// The overhead states, in the order the scanner names them.
inline constexpr std::array<std::string_view, 5> kOverhead = {"loading", "compiling", "evaluating", "checkpointing",
                                                              "recovering"};
// At or above this fraction of the window in overhead states, the window was all overhead
// (a scrape or two of "training" at a window's edge does not make it training).
inline constexpr double kWholeWindowFraction = 0.99;
inline constexpr std::string_view kWholeWindowFractionText = "0.99";  // the same, as PromQL writes it

[[nodiscard]] inline bool is_overhead(std::string_view state) {
  for (const std::string_view s : kOverhead) {
    if (s == state) return true;
  }
  return false;
}

// gpubank_training_phase{gpubank_training_phase=~"loading|...|recovering"}
[[nodiscard]] inline std::string overhead_series() {
  std::string alternatives;
  for (const std::string_view s : kOverhead) alternatives += (alternatives.empty() ? "" : "|") + std::string(s);
  return std::string(kSeries) + "{" + std::string(kStateLabel) + "=~\"" + alternatives + "\"}";
}

// Per pod, the fraction of `window` (a PromQL duration) it spent in overhead states: the
// states are exclusive and always exported, so the averages of their 0/1 series add up.
[[nodiscard]] inline std::string overhead_fraction(std::string_view window) {
  return "sum by (cluster, namespace, pod) (avg_over_time(" + overhead_series() + "[" + std::string(window) + "]))";
}

// The pods (labels cluster, namespace, pod; value 1) excused now: in an overhead state at
// some sample of the last `lookback` (empty: at the instant evaluated), unless overhead
// filled the whole `window`.
[[nodiscard]] inline std::string excused_pods(std::string_view lookback, std::string_view window) {
  const std::string state = lookback.empty() ? overhead_series()
                                             : "max_over_time(" + overhead_series() + "[" + std::string(lookback) + "])";
  return "(max by (cluster, namespace, pod) (" + state + ") == 1 unless on (cluster, namespace, pod) " +
         overhead_fraction(window) + " >= " + std::string(kWholeWindowFractionText) + ")";
}

}  // namespace gpubank::metrics::job_phase
