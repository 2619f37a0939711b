// The runner's event handling and accounting, over a test double of the admission core
// (fake_core.hpp: per-queue nominal quota, priority order, optional in-queue preemption)
// so that they are tested apart from Kueue's semantics. The real core's runs are in
// scenario_test.cpp.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fake_core.hpp"
#include "support/paths.hpp"
#include "twin/kueue_perf/runner.hpp"

namespace gpubank::twin::kueue_perf {
namespace {

using ::testing::HasSubstr;
using twin::testing::FakeCore;

Scenario scenario_of(std::string_view yaml) {
  Diagnostics findings;
  auto config = parse_generator_config(yaml, "t.yaml", findings);
  EXPECT_TRUE(config) << (findings.empty() ? "" : findings[0].to_string());
  return expand(config ? std::move(*config) : GeneratorConfig{});
}

Scenario shipped(const std::string& file) {
  Diagnostics findings;
  auto config = load_generator_config(gpubank::testing::shared_dir() + "/kueue-perf/" + file, findings);
  EXPECT_TRUE(config);
  return expand(config ? std::move(*config) : GeneratorConfig{});
}

Summary simulate_ok(const Scenario& s, bool preempt, const RunOptions& options = {}) {
  FakeCore core(s.queue_specs, preempt);
  auto result = simulate(s, core, options);
  EXPECT_TRUE(result) << (result ? "" : result.error());
  return result ? *result : Summary{};
}

// One queue of 2 cpus. "small" (1 cpu, 250 ms, priority 0) at 100, 200, 300;
// "big" (2 cpus, 100 ms, priority 10) at 150.
constexpr std::string_view kTiny = R"(
cohorts:
- className: co
  count: 1
  queuesSets:
  - className: cq
    count: 1
    nominalQuota: 2
    workloadsSets:
    - count: 3
      creationIntervalMs: 100
      workloads:
      - {className: small, runtimeMs: 250, priority: 0, request: 1}
    - count: 1
      creationIntervalMs: 150
      workloads:
      - {className: big, runtimeMs: 100, priority: 10, request: 2}
)";

// Worked by hand with the fake core's rules (preemption on):
//   100  A=small-0-0-0 created, admitted (usage 1)
//   150  B=big-1-0-0 created; does not fit (1+2 > 2): A (priority 0) is evicted, released
//        and requeued at once; next cycle B is admitted (usage 2); A waits
//   200  C=small-0-1-0 created, waits
//   250  B finishes; A and C admitted (usage 2)
//   300  D=small-0-2-0 created, waits
//   500  A and C finish; D admitted (usage 1)
//   750  D finishes
// Time to (last) admission: A 150, C 50, D 200 -> mean 133 (upstream truncates), p50 150,
// p90 200; B 0. To finish: A 400, C 300, D 450 -> mean 383; B 100.
// Usage: 1 cpu x 50 ms + 2 x 100 + 2 x 250 + 1 x 250 = 1000 cpu ms = 1,000,000 mCPU ms over
// 750 ms observed with 2000 mCPU nominal: 1333 mCPU average, 66.67 %.
TEST(KueuePerfRunner, TinyRunWorkedByHand) {
  const Scenario s = scenario_of(kTiny);
  const Summary r = simulate_ok(s, true);
  EXPECT_EQ(r.workloads, 4);
  EXPECT_EQ(r.admitted, 4);
  EXPECT_EQ(r.finished, 4);
  EXPECT_EQ(r.pending, 0);
  EXPECT_EQ(r.evictions, 1);
  EXPECT_EQ(r.end_ms, 750);
  EXPECT_EQ(r.events, 8u);  // 4 creations, 4 finishes (A's finish at 350 was voided)

  ASSERT_EQ(r.workload_classes.size(), 2u);
  const WorkloadClassSummary& big = r.workload_classes[0];
  EXPECT_EQ(big.name, "big");
  EXPECT_EQ(big.count, 1);
  EXPECT_EQ(big.average_time_to_admission_ms, 0);
  EXPECT_EQ(big.average_time_to_finish_ms, 100);
  EXPECT_EQ(big.total_evictions, 0);
  const WorkloadClassSummary& small = r.workload_classes[1];
  EXPECT_EQ(small.name, "small");
  EXPECT_EQ(small.count, 3);
  EXPECT_EQ(small.admitted, 3);
  EXPECT_EQ(small.finished, 3);
  EXPECT_EQ(small.total_evictions, 1);
  EXPECT_EQ(small.average_time_to_admission_ms, 133);
  EXPECT_EQ(small.p50_time_to_admission_ms, 150);
  EXPECT_EQ(small.p90_time_to_admission_ms, 200);
  EXPECT_EQ(small.max_time_to_admission_ms, 200);
  EXPECT_EQ(small.average_time_to_finish_ms, 383);

  ASSERT_EQ(r.cluster_queue_classes.size(), 1u);
  const ClusterQueueClassSummary& cq = r.cluster_queue_classes[0];
  EXPECT_EQ(cq.name, "cq");
  EXPECT_EQ(cq.queues, 1);
  EXPECT_EQ(cq.nominal_quota, 2000);
  EXPECT_EQ(cq.cpu_used, 1'000'000);
  EXPECT_EQ(cq.cpu_average_usage, 1333);
  EXPECT_EQ(cq.cpu_max_usage, 2000);
  EXPECT_EQ(cq.first_event_ms, 0);
  EXPECT_EQ(cq.last_event_ms, 750);
  EXPECT_NEAR(cq.usage_percent, 66.6667, 1e-3);
}

// The summary needs nothing of a finished workload from the core, so the runner has the
// core forget each one (50,000 in large-scale); a core that refuses stops the run.
TEST(KueuePerfRunner, FinishedWorkloadsAreForgotten) {
  const Scenario s = scenario_of(kTiny);
  FakeCore core(s.queue_specs, true);
  auto result = simulate(s, core, {});
  ASSERT_TRUE(result) << result.error();
  EXPECT_EQ(core.forgotten, 4);

  FakeCore refusing(s.queue_specs, true);
  refusing.refuse_forget = true;
  auto failed = simulate(s, refusing, {});
  ASSERT_FALSE(failed);
  EXPECT_NE(failed.error().find("cannot forget a finished workload: FakeCore: told to refuse"), std::string::npos)
      << failed.error();
}

// Without preemption B waits for A: A 100-350; B admitted at 350 (waits 200), runs to 450;
// C (created 200) admitted at 450, D (300) at 450; both finish at 700.
TEST(KueuePerfRunner, WithoutPreemptionTheBigOneWaits) {
  const Summary r = simulate_ok(scenario_of(kTiny), false);
  EXPECT_EQ(r.evictions, 0);
  EXPECT_EQ(r.end_ms, 700);
  EXPECT_EQ(r.workload_classes[0].average_time_to_admission_ms, 200);  // big
  // small: A 0, C 250, D 150
  EXPECT_EQ(r.workload_classes[1].average_time_to_admission_ms, 133);
  EXPECT_EQ(r.workload_classes[1].p50_time_to_admission_ms, 150);
  EXPECT_EQ(r.workload_classes[1].p90_time_to_admission_ms, 250);
  // 1 x 250 (100-350) + 2 x 100 (350-450) + 2 x 250 (450-700) = 950 cpu ms over 700 ms
  EXPECT_EQ(r.cluster_queue_classes[0].cpu_used, 950'000);
  EXPECT_EQ(r.cluster_queue_classes[0].cpu_average_usage, 1357);
}

TEST(KueuePerfRunner, WorkloadsThatNeverFitAreReportedPending) {
  const Scenario s = scenario_of(R"(
cohorts:
- className: co
  count: 1
  queuesSets:
  - className: cq
    count: 1
    nominalQuota: 1
    workloadsSets:
    - count: 2
      creationIntervalMs: 10
      workloads:
      - {className: huge, runtimeMs: 5, request: 2}
      - {className: ok, runtimeMs: 5, request: 1}
)");
  const Summary r = simulate_ok(s, false);
  EXPECT_EQ(r.workloads, 4);
  EXPECT_EQ(r.pending, 4);
  EXPECT_EQ(r.workload_classes[0].name, "huge");
  EXPECT_EQ(r.workload_classes[0].admitted, 0);
  EXPECT_EQ(r.workload_classes[0].average_time_to_admission_ms, 0);
  // The fake's queue is strictly ordered: "ok" waits behind the first "huge" for ever.
  EXPECT_EQ(r.workload_classes[1].admitted, 0);
}

TEST(KueuePerfRunner, SameTimeEventsAndZeroIntervals) {
  // Interval 0: every workload of the set is created at t=0, in template order; runtime 0
  // finishes at the admission time.
  const Scenario s = scenario_of(R"(
cohorts:
- className: co
  count: 1
  queuesSets:
  - className: cq
    count: 2
    nominalQuota: 1
    workloadsSets:
    - count: 3
      workloads:
      - {className: w, runtimeMs: 0, request: 1}
)");
  const Summary r = simulate_ok(s, false);
  EXPECT_EQ(r.workloads, 6);
  EXPECT_EQ(r.finished, 6);
  EXPECT_EQ(r.end_ms, 0);
  EXPECT_EQ(r.workload_classes[0].max_time_to_admission_ms, 0);
  EXPECT_EQ(r.cluster_queue_classes[0].cpu_used, 0);
  EXPECT_EQ(r.cluster_queue_classes[0].usage_percent, 0);  // no observed time: 0, not NaN
}

TEST(KueuePerfRunner, ResultsAreByteIdenticalAcrossRuns) {
  const Scenario s = shipped("baseline-generator.yaml");
  const Summary a = simulate_ok(s, true);
  const Summary b = simulate_ok(s, true);
  EXPECT_EQ(to_json(a).dump(), to_json(b).dump());
  EXPECT_EQ(format_text(a), format_text(b));
  EXPECT_EQ(a.workloads, 15000);
  EXPECT_EQ(a.finished, 15000);
}

TEST(KueuePerfRunner, ProgressIsReported) {
  const Scenario s = shipped("baseline-generator.yaml");
  RunOptions options;
  options.progress_every = 5000;
  std::vector<Progress> seen;
  options.progress = [&](const Progress& p) { seen.push_back(p); };
  simulate_ok(s, false, options);
  ASSERT_GE(seen.size(), 2u);
  EXPECT_EQ(seen.back().created, 15000);
  EXPECT_EQ(seen.back().finished, 15000);
  EXPECT_EQ(seen.back().total, 15000);
  for (std::size_t i = 1; i < seen.size(); ++i) EXPECT_GE(seen[i].now, seen[i - 1].now);
}

// The runner's own cost at upstream's large scale: 50,000 workloads, 1,000 queues. (The
// real core's cost is measured by bench/kueue_perf_bench.)
TEST(KueuePerfRunner, LargeScaleRunsThrough) {
  const Scenario s = shipped("large-scale-generator.yaml");
  const Summary r = simulate_ok(s, true);
  EXPECT_EQ(r.workloads, 50000);
  EXPECT_EQ(r.finished, 50000);
  EXPECT_EQ(r.cluster_queue_classes.at(0).queues, 1000);
}

// A core that nominates heads for ever without deciding anything.
class StuckCore final : public AdmissionCore {
 public:
  WorkloadId submit(WorkloadSpec spec, VirtualTime) override {
    specs_.push_back(std::move(spec));
    return static_cast<WorkloadId>(specs_.size() - 1);
  }
  Expected<WorkloadId> restore_admitted(WorkloadSpec, Admission, VirtualTime) override { return Unexpected{""}; }
  void finish(WorkloadId, VirtualTime) override {}
  void release_evicted(WorkloadId, VirtualTime) override {}
  Expected<bool> forget(WorkloadId) override { return Unexpected{"StuckCore: nothing finishes"}; }
  Expected<bool> set_quota(const std::string&, const std::string&, const ResourceQuota&) override {
    return Unexpected{"StuckCore: no quota changes"};
  }
  Expected<bool> set_cohort_quota(const std::string&, const std::string&, const ResourceQuota&) override {
    return Unexpected{"StuckCore: no quota changes"};
  }
  Expected<bool> set_priority(WorkloadId, std::int32_t) override { return Unexpected{"StuckCore: no priority changes"}; }
  Expected<bool> evict(WorkloadId, const std::string&, const std::string&, VirtualTime) override {
    return Unexpected{"StuckCore: no evictions"};
  }
  Expected<bool> evict_stopped(WorkloadId, const std::string&, const std::string&, VirtualTime) override {
    return Unexpected{"StuckCore: no evictions"};
  }
  void do_run_cycle(VirtualTime now, CycleResult& r) override {
    r = CycleResult{};
    r.time = now;
    r.heads = 1;
  }
  [[nodiscard]] bool has_active_heads() const override { return true; }
  [[nodiscard]] std::size_t workload_count() const override { return specs_.size(); }
  [[nodiscard]] const WorkloadSpec& spec(WorkloadId id) const override { return specs_.at(id); }
  [[nodiscard]] WorkloadStatus status(WorkloadId) const override { return status_; }
  [[nodiscard]] WorkloadPhase phase(WorkloadId) const override { return status_.phase; }
  [[nodiscard]] std::vector<std::string> cluster_queue_names() const override { return {}; }
  [[nodiscard]] std::vector<std::string> cohort_names() const override { return {}; }
  [[nodiscard]] ClusterQueueStatus cluster_queue_status(const std::string&) const override { return {}; }
  [[nodiscard]] std::optional<QuotaFigures> figures(const std::string&, const std::string&,
                                                    const std::string&) const override {
    return std::nullopt;
  }

 private:
  std::vector<WorkloadSpec> specs_;
  WorkloadStatus status_;
};

TEST(KueuePerfRunner, ACoreThatDoesNotSettleIsAnError) {
  const Scenario s = scenario_of(kTiny);
  StuckCore core;
  auto result = simulate(s, core);
  ASSERT_FALSE(result);
  EXPECT_THAT(result.error(), HasSubstr("the admission core did not settle at virtual time 100 ms"));
}

TEST(KueuePerfSummary, JsonUsesUpstreamsFieldNames) {
  const Summary r = simulate_ok(scenario_of(kTiny), true);
  const auto j = to_json(r);
  EXPECT_EQ(j["workloadClasses"]["small"]["averageTimeToAdmissionMs"], 133);
  EXPECT_EQ(j["workloadClasses"]["small"]["totalEvictions"], 1);
  EXPECT_EQ(j["workloadClasses"]["small"]["count"], 3);
  EXPECT_EQ(j["workloadClasses"]["big"]["averageTimeToFinishMs"], 100);
  EXPECT_EQ(j["clusterQueueClasses"]["cq"]["cpuUsed"], 1'000'000);
  EXPECT_EQ(j["clusterQueueClasses"]["cq"]["cpuAverageUsage"], 1333);
  EXPECT_EQ(j["clusterQueueClasses"]["cq"]["nominalQuota"], 2000);
  EXPECT_EQ(j["clusterQueueClasses"]["cq"]["usagePercent"], 66.67);
  EXPECT_EQ(j["workloads"]["total"], 4);
}

TEST(KueuePerfSummary, TextTables) {
  const std::string text = format_text(simulate_ok(scenario_of(kTiny), true));
  EXPECT_THAT(text, HasSubstr("4 workloads in 1 ClusterQueues, fair sharing off; last event at 750 ms virtual time"));
  EXPECT_THAT(text, HasSubstr("4 admitted, 4 finished, 0 never finished, 1 evictions"));
  EXPECT_THAT(text, HasSubstr("workload class  count  admitted  evictions  avg to admission (ms)"));
  EXPECT_THAT(text, ::testing::ContainsRegex("small +3 +3 +1 +133 +150 +200 +200 +383"));
  EXPECT_THAT(text, ::testing::ContainsRegex("cq +1 +2000 +1333 +2000 +66.67 +750"));
}

}  // namespace
}  // namespace gpubank::twin::kueue_perf
