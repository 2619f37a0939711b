// How fast gpubank reads, decodes and validates a large policy set, against yaml-cpp
// parsing the same text (the floor: gpubank reads YAML through yaml-cpp).
//
//   (a) yaml_cpp_load_all  baseline: YAML::LoadAll on the text
//   (b) read_decode        doc::read_yaml + PolicySet::add (positioned tree, typed decode)
//   (c) read_validate      (b) + policy::check_all (what `gpubank validate` does)
//   (d) validate_only      policy::check_all on an already decoded set (c minus b)
//
// The set is generated in memory from a fixed seed (policy_generator.hpp) and checked to
// be completely valid before anything is timed. After the Google Benchmark output, a
// summary gives objects/s and each benchmark's time as a multiple of (a), from the medians
// when run with --benchmark_repetitions. --summary=FILE also writes it there (markdown).
#include <benchmark/benchmark.h>

#include "summary_reporter.hpp"
#include <yaml-cpp/yaml.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "document/reader.hpp"
#include "policy/policy_set.hpp"
#include "policy/validate.hpp"
#include "policy_generator.hpp"

namespace {

using gpubank::bench::GeneratedSet;
namespace doc = gpubank::doc;
namespace policy = gpubank::policy;

const GeneratedSet& fixture() {
  static const GeneratedSet set = gpubank::bench::generate_policy_set();
  return set;
}

policy::PolicySet read_and_decode(const std::string& yaml) {
  policy::PolicySet set;
  std::vector<doc::Document> documents;
  doc::read_yaml(yaml, "generated.yaml", documents, set.diagnostics());
  for (const auto& d : documents) set.add(d.root, d.file, d.index);
  return set;
}

void set_rates(benchmark::State& state) {
  const GeneratedSet& g = fixture();
  state.counters["objects/s"] =
      benchmark::Counter(static_cast<double>(g.objects), benchmark::Counter::kIsIterationInvariantRate);
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(g.yaml.size()));
}

void yaml_cpp_load_all(benchmark::State& state) {
  const std::string& yaml = fixture().yaml;
  for (auto _ : state) {
    std::vector<YAML::Node> documents = YAML::LoadAll(yaml);
    benchmark::DoNotOptimize(documents.data());
  }
  set_rates(state);
}

void read_decode(benchmark::State& state) {
  const std::string& yaml = fixture().yaml;
  for (auto _ : state) {
    policy::PolicySet set = read_and_decode(yaml);
    benchmark::DoNotOptimize(&set.policies()[0]);
  }
  set_rates(state);
}

void read_validate(benchmark::State& state) {
  const std::string& yaml = fixture().yaml;
  for (auto _ : state) {
    policy::PolicySet set = read_and_decode(yaml);
    gpubank::Diagnostics findings = policy::check_all(set);
    benchmark::DoNotOptimize(findings.data());
  }
  set_rates(state);
}

void validate_only(benchmark::State& state) {
  const policy::PolicySet set = read_and_decode(fixture().yaml);
  for (auto _ : state) {
    gpubank::Diagnostics findings = policy::check_all(set);
    benchmark::DoNotOptimize(findings.data());
  }
  set_rates(state);
}

using gpubank::bench::Case;

constexpr Case kCases[] = {
    {"yaml_cpp_load_all", "(a) baseline: YAML::LoadAll only", yaml_cpp_load_all},
    {"read_decode", "(b) doc::read_yaml + PolicySet::add", read_decode},
    {"read_validate", "(c) (b) + policy::check_all", read_validate},
    {"validate_only", "(d) policy::check_all on a decoded set", validate_only},
};

using gpubank::bench::SummaryReporter;
using gpubank::bench::fixed;

std::string summary(const SummaryReporter& reporter) {
  const GeneratedSet& g = fixture();
  std::ostringstream s;
  s << "Policy set: " << g.objects << " objects (1 PlatformGuardrails, " << g.quotas << " GPUQuotaPolicy, "
    << g.inference << " InferenceScalingPolicy, " << g.low_utilization << " LowUtilizationPolicy, " << g.leases
    << " CapacityLease, " << g.tidal << " TidalPolicy), " << fixed(static_cast<double>(g.yaml.size()) / 1e6, 2)
    << " MB of YAML, all valid.\n\n";
  const bool medians = gpubank::bench::write_table(s, reporter, kCases, "Objects/s", "objects/s");
  s << "\nTimes are wall-clock (real) time per pass over the whole set"
    << (medians ? ", medians of the repetitions" : ", one measurement each (no repetitions)") << ".\n";
  return s.str();
}

}  // namespace

int main(int argc, char** argv) {
  const std::string summary_path = gpubank::bench::take_summary_flag(argc, argv);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;

  // The set must be valid, or the benchmark would time error reporting instead.
  const GeneratedSet& g = fixture();
  {
    const policy::PolicySet set = read_and_decode(g.yaml);
    const gpubank::Diagnostics findings = policy::check_all(set);
    if (!findings.empty() || set.policies().size() != g.objects) {
      std::cerr << "validate_bench: the generated set is not clean: " << set.policies().size() << " of " << g.objects
                << " objects decoded, " << findings.size() << " findings\n";
      for (std::size_t i = 0; i < findings.size() && i < 20; ++i) std::cerr << "  " << findings[i].to_string() << '\n';
      return 1;
    }
  }

  gpubank::bench::register_cases(kCases);
  SummaryReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();

  const std::string text = summary(reporter);
  if (!gpubank::bench::emit_summary(text, summary_path, "validate_bench")) return 1;
  return 0;
}
