// How fast the twin answers one of Kueue's scheduler scalability scenarios (the generator
// configs of test/performance/scheduler upstream; ../shared/kueue-perf), against the
// runner's own event loop over a core that admits everything at once.
//
//   (a) runner_floor      baseline: simulate() over UnlimitedCore (no quota, no ordering):
//                         event queue, workload creation, accounting, summary
//   (b) run               kueue_perf::run(): the real admission core, fair sharing off
//   (c) run_fair_sharing  the same with fair sharing on
//   (d) read_expand       reading the config and expanding it (no core)
//
// The config is ../shared/kueue-perf/baseline-generator.yaml unless --config=FILE names
// another (e.g. large-scale-generator.yaml). Each run is checked to finish every workload
// before anything is timed. After the Google Benchmark output, a summary gives workloads/s,
// virtual seconds per wall second, each time as a multiple of (a), and the model's results
// (upstream's summary fields) next to Kueue's published ones. --summary=FILE also writes
// it there (markdown).
#include <benchmark/benchmark.h>

#include "summary_reporter.hpp"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "twin/kueue_perf/runner.hpp"

namespace {

namespace kp = gpubank::twin::kueue_perf;
namespace twin = gpubank::twin;

std::string g_config_path;

// Admits every pending workload in the next cycle: the cost of the runner without Kueue.
class UnlimitedCore final : public twin::AdmissionCore {
 public:
  twin::WorkloadId submit(twin::WorkloadSpec spec, twin::VirtualTime) override {
    const auto id = static_cast<twin::WorkloadId>(workloads_.size());
    workloads_.push_back({std::move(spec), {}});
    pending_.push_back(id);
    return id;
  }
  gpubank::Expected<twin::WorkloadId> restore_admitted(twin::WorkloadSpec, twin::Admission,
                                                       twin::VirtualTime) override {
    return gpubank::Unexpected{"not supported"};
  }
  void finish(twin::WorkloadId id, twin::VirtualTime) override {
    workloads_[id].status.phase = twin::WorkloadPhase::Finished;
  }
  void release_evicted(twin::WorkloadId id, twin::VirtualTime) override { pending_.push_back(id); }
  gpubank::Expected<bool> forget(twin::WorkloadId id) override {
    if (workloads_[id].status.phase != twin::WorkloadPhase::Finished) {
      return gpubank::Unexpected{"only a finished workload is forgotten"};
    }
    return true;
  }
  gpubank::Expected<bool> set_quota(const std::string&, const std::string&, const twin::ResourceQuota&) override {
    return gpubank::Unexpected{"no quota changes in this benchmark"};
  }
  gpubank::Expected<bool> set_cohort_quota(const std::string&, const std::string&, const twin::ResourceQuota&) override {
    return gpubank::Unexpected{"no quota changes in this benchmark"};
  }
  gpubank::Expected<bool> set_priority(twin::WorkloadId, std::int32_t) override {
    return gpubank::Unexpected{"no priority changes in this benchmark"};
  }
  gpubank::Expected<bool> evict(twin::WorkloadId, const std::string&, const std::string&, twin::VirtualTime) override {
    return gpubank::Unexpected{"no evictions in this benchmark"};
  }
  gpubank::Expected<bool> evict_stopped(twin::WorkloadId, const std::string&, const std::string&,
                                        twin::VirtualTime) override {
    return gpubank::Unexpected{"no evictions in this benchmark"};
  }
  void do_run_cycle(twin::VirtualTime now, twin::CycleResult& r) override {
    r = twin::CycleResult{};
    r.time = now;
    r.heads = pending_.size();
    for (twin::WorkloadId id : pending_) {
      auto& w = workloads_[id];
      const auto& ps = w.spec.pod_sets.at(0);
      w.status.phase = twin::WorkloadPhase::Admitted;
      w.status.admitted_at = now;
      w.status.admission = twin::Admission{
          w.spec.cluster_queue,
          {twin::PodSetAssignment{ps.name, {{"cpu", "rf"}}, {{"cpu", ps.requests.at(0).second * ps.count}}, ps.count}}};
      r.decisions.push_back({twin::Decision::Kind::Admitted, id, w.spec.cluster_queue, "QuotaReserved", "", {}});
    }
    pending_.clear();
  }
  [[nodiscard]] bool has_active_heads() const override { return !pending_.empty(); }
  [[nodiscard]] std::size_t workload_count() const override { return workloads_.size(); }
  [[nodiscard]] const twin::WorkloadSpec& spec(twin::WorkloadId id) const override { return workloads_[id].spec; }
  [[nodiscard]] twin::WorkloadStatus status(twin::WorkloadId id) const override { return workloads_[id].status; }
  [[nodiscard]] twin::WorkloadPhase phase(twin::WorkloadId id) const override { return workloads_[id].status.phase; }
  [[nodiscard]] std::vector<std::string> cluster_queue_names() const override { return {}; }
  [[nodiscard]] std::vector<std::string> cohort_names() const override { return {}; }
  [[nodiscard]] twin::ClusterQueueStatus cluster_queue_status(const std::string&) const override { return {}; }
  [[nodiscard]] std::optional<twin::QuotaFigures> figures(const std::string&, const std::string&,
                                                          const std::string&) const override {
    return std::nullopt;
  }

 private:
  struct Workload {
    twin::WorkloadSpec spec;
    twin::WorkloadStatus status;
  };
  std::vector<Workload> workloads_;
  std::vector<twin::WorkloadId> pending_;
};

std::optional<kp::Scenario> load(std::string* error) {
  gpubank::Diagnostics findings;
  auto config = kp::load_generator_config(g_config_path, findings);
  if (!config) {
    for (const auto& d : findings) *error += d.to_string() + "\n";
    return std::nullopt;
  }
  return kp::expand(std::move(*config));
}

const kp::Scenario& scenario() {
  static const kp::Scenario s = [] {
    std::string error;
    auto loaded = load(&error);
    if (!loaded) {
      std::cerr << "kueue_perf_bench: " << error;
      std::exit(1);
    }
    return std::move(*loaded);
  }();
  return s;
}

kp::RunOptions options(bool fair_sharing) {
  kp::RunOptions o;
  o.core.fair_sharing = fair_sharing;
  return o;
}

// Results of the model (the same on every run), kept for the summary.
std::map<std::string, kp::Summary>& results() {
  static std::map<std::string, kp::Summary> r;
  return r;
}

void set_rates(benchmark::State& state, const kp::Summary& s) {
  state.counters["workloads/s"] =
      benchmark::Counter(static_cast<double>(s.workloads), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["virtual s/s"] =
      benchmark::Counter(static_cast<double>(s.end_ms) / 1000.0, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["cycles"] = static_cast<double>(s.cycles);
}

void runner_floor(benchmark::State& state) {
  kp::Summary last;
  for (auto _ : state) {
    UnlimitedCore core;
    auto r = kp::simulate(scenario(), core);
    if (!r) {
      state.SkipWithError(r.error().c_str());
      return;
    }
    last = std::move(*r);
  }
  set_rates(state, last);
}

void run_with(benchmark::State& state, bool fair_sharing) {
  kp::Summary last;
  for (auto _ : state) {
    auto r = kp::run(scenario(), options(fair_sharing));
    if (!r) {
      state.SkipWithError(r.error().c_str());
      return;
    }
    last = std::move(*r);
  }
  set_rates(state, last);
}

void run(benchmark::State& state) { run_with(state, false); }
void run_fair_sharing(benchmark::State& state) { run_with(state, true); }

void read_expand(benchmark::State& state) {
  for (auto _ : state) {
    std::string error;
    auto s = load(&error);
    benchmark::DoNotOptimize(s->total_workloads);
  }
  state.counters["workloads/s"] = benchmark::Counter(static_cast<double>(scenario().total_workloads),
                                                     benchmark::Counter::kIsIterationInvariantRate);
}

struct Case {
  const char* name;
  const char* what;
  void (*fn)(benchmark::State&);
};

constexpr Case kCases[] = {
    {"runner_floor", "(a) baseline: simulate() over a core that admits everything", runner_floor},
    {"run", "(b) kueue_perf::run(), real admission core", run},
    {"run_fair_sharing", "(c) (b) with fair sharing", run_fair_sharing},
    {"read_expand", "(d) read and expand the config", read_expand},
};

using gpubank::bench::SummaryReporter;
using gpubank::bench::fixed;

std::string summary(const SummaryReporter& reporter) {
  const kp::Scenario& s = scenario();
  std::ostringstream out;
  out << "Config: `" << g_config_path << "`: " << s.total_workloads << " workloads in " << s.queues.size()
      << " ClusterQueues.\n\n";
  out << "| Benchmark | What is timed | Time per run (ms) | Workloads/s | Virtual s per wall s | Time vs (a) |\n";
  out << "|---|---|---:|---:|---:|---:|\n";
  const auto& r = reporter.results();
  const auto base = r.find(kCases[0].name);
  bool medians = true;
  for (const Case& c : kCases) {
    const auto it = r.find(c.name);
    if (it == r.end()) continue;
    medians = medians && it->second.from_median;
    out << "| " << c.name << " | " << c.what << " | " << fixed(it->second.ms_per_iteration, 1) << " | "
        << fixed(it->second.counter("workloads/s"), 0) << " | "
        << (it->second.counter("virtual s/s") > 0 ? fixed(it->second.counter("virtual s/s"), 0) : std::string("")) << " | "
        << (base != r.end() && base->second.ms_per_iteration > 0
                ? fixed(it->second.ms_per_iteration / base->second.ms_per_iteration, 2) + "x"
                : std::string("n/a"))
        << " |\n";
  }
  out << "\nTimes are wall-clock (real) time per run"
      << (medians ? ", medians of the repetitions" : ", one measurement each (no repetitions)") << ".\n";

  for (const auto& [name, m] : results()) {
    out << "\nModel results of `" << name << "` (virtual time; the same on every run): " << m.admitted
        << " admitted, " << m.evictions << " evictions, " << m.cycles << " cycles, last event at " << m.end_ms
        << " ms.\n\n";
    out << "| Workload class | Count | Avg time to admission (ms) | p50 (ms) | p90 (ms) |\n|---|---:|---:|---:|---:|\n";
    for (const auto& c : m.workload_classes) {
      out << "| " << c.name << " | " << c.count << " | " << c.average_time_to_admission_ms << " | "
          << c.p50_time_to_admission_ms << " | " << c.p90_time_to_admission_ms << " |\n";
    }
    out << "\n| Queue class | Queues | Avg usage (%) |\n|---|---:|---:|\n";
    for (const auto& c : m.cluster_queue_classes) {
      out << "| " << c.name << " | " << c.queues << " | " << fixed(c.usage_percent, 2) << " |\n";
    }
  }
  return out.str();
}

// Removes --NAME=VALUE from the arguments (Google Benchmark rejects flags it does not know).

}  // namespace

int main(int argc, char** argv) {
  const std::string summary_path = gpubank::bench::take_flag(argc, argv, "summary");
  g_config_path = gpubank::bench::take_flag(argc, argv, "config");
  if (g_config_path.empty()) {
    const char* shared = std::getenv("GPUBANK_SHARED_DIR");
    g_config_path = std::string(shared != nullptr ? shared : GPUBANK_SOURCE_DIR "/../shared") +
                    "/kueue-perf/baseline-generator.yaml";
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;

  // Every run must finish every workload, or the benchmark would time something else.
  for (const bool fair : {false, true}) {
    auto r = kp::run(scenario(), options(fair));
    if (!r || r->finished != scenario().total_workloads) {
      std::cerr << "kueue_perf_bench: the run " << (fair ? "with" : "without") << " fair sharing failed: "
                << (r ? std::to_string(r->pending) + " workloads never finished" : r.error()) << '\n';
      return 1;
    }
    results()[fair ? "run_fair_sharing" : "run"] = std::move(*r);
  }

  for (const Case& c : kCases) {
    benchmark::RegisterBenchmark(c.name, c.fn)->Unit(benchmark::kMillisecond)->UseRealTime();
  }
  SummaryReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  const std::string text = summary(reporter);
  if (!gpubank::bench::emit_summary(text, summary_path, "kueue_perf_bench")) return 1;
  return 0;
}
