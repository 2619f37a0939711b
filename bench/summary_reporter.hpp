// Shared by the Google Benchmark programs: the console output as usual, keeping each
// benchmark's result for a markdown summary (the median when there are repetitions, else
// the single run), and number formatting for that summary.
#pragma once

#include <benchmark/benchmark.h>

#include <cstdio>
#include <map>
#include <string>
#include <vector>

namespace gpubank::bench {

class SummaryReporter : public benchmark::ConsoleReporter {
 public:
  struct Result {
    double ms_per_iteration = 0;
    bool from_median = false;
    std::map<std::string, double> counters;
    [[nodiscard]] double counter(const std::string& name) const {
      auto it = counters.find(name);
      return it == counters.end() ? 0.0 : it->second;
    }
  };

  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) {
      const bool median = run.run_type == Run::RT_Aggregate && run.aggregate_name == "median";
      if (run.run_type == Run::RT_Aggregate && !median) continue;
      Result& r = results_[run.run_name.function_name];
      if (r.from_median && !median) continue;
      r.from_median = median;
      r.ms_per_iteration = run.GetAdjustedRealTime() * benchmark::GetTimeUnitMultiplier(benchmark::kMillisecond) /
                           benchmark::GetTimeUnitMultiplier(run.time_unit);
      for (const auto& [name, counter] : run.counters) r.counters[name] = counter.value;
    }
    ConsoleReporter::ReportRuns(runs);
  }

  [[nodiscard]] const std::map<std::string, Result>& results() const { return results_; }

 private:
  std::map<std::string, Result> results_;
};

inline std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

}  // namespace gpubank::bench
