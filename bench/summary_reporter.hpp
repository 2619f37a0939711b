// Shared by the Google Benchmark programs: the console output as usual, keeping each
// benchmark's result for a markdown summary (the median when there are repetitions, else
// the single run), and number formatting for that summary.
#pragma once

#include <benchmark/benchmark.h>

#include <cstdio>
#include <ostream>
#include <map>
#include <fstream>
#include <iostream>
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

// Removes --NAME=VALUE from the arguments and returns VALUE (empty when absent): Google
// Benchmark rejects flags it does not know.
inline std::string take_flag(int& argc, char** argv, const std::string& name) {
  const std::string prefix = "--" + name + "=";
  std::string value;
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind(prefix, 0) == 0) {
      value = arg.substr(prefix.size());
    } else {
      argv[kept++] = argv[i];
    }
  }
  argc = kept;
  return value;
}

// --summary=FILE: where a benchmark writes its summary table.
inline std::string take_summary_flag(int& argc, char** argv) { return take_flag(argc, argv, "summary"); }

// Prints a benchmark's summary and writes it to `path` too (when not empty); false (with
// a message on stderr) when the file cannot be written.
inline bool emit_summary(const std::string& text, const std::string& path, const char* program) {
  std::cout << '\n' << text;
  if (path.empty()) return true;
  std::ofstream out(path);
  out << text;
  if (out) return true;
  std::cerr << program << ": cannot write " << path << '\n';
  return false;
}

inline std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

// One benchmark of a program: its name, what it times (a summary column), the function.
struct Case {
  const char* name;
  const char* what;
  void (*fn)(benchmark::State&);
};

// Registers every case, timed in real milliseconds.
template <std::size_t N>
void register_cases(const Case (&cases)[N]) {
  for (const Case& c : cases) benchmark::RegisterBenchmark(c.name, c.fn)->Unit(benchmark::kMillisecond)->UseRealTime();
}

// The markdown table of a summary: per case its time per iteration, the counter `rate`
// (column `rate_title`) and its time as a multiple of the first case's, the baseline.
// Returns whether every time is the median of repetitions.
template <std::size_t N>
bool write_table(std::ostream& s, const SummaryReporter& reporter, const Case (&cases)[N], const std::string& rate_title,
                 const std::string& rate) {
  s << "| Benchmark | What is timed | Time per set (ms) | " << rate_title << " | Time vs (a) |\n";
  s << "|---|---|---:|---:|---:|\n";
  const auto& results = reporter.results();
  const auto base = results.find(cases[0].name);
  bool medians = true;
  for (const Case& c : cases) {
    const auto it = results.find(c.name);
    if (it == results.end()) continue;
    const auto& r = it->second;
    medians = medians && r.from_median;
    s << "| " << c.name << " | " << c.what << " | " << fixed(r.ms_per_iteration, 1) << " | "
      << fixed(r.counter(rate), 0) << " | ";
    s << (base != results.end() && base->second.ms_per_iteration > 0
              ? fixed(r.ms_per_iteration / base->second.ms_per_iteration, 2) + "x"
              : std::string("n/a"));
    s << " |\n";
  }
  return medians;
}

}  // namespace gpubank::bench
