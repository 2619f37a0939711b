// Runs on the real admission core (built only once gpubank_twin_admission exists): tiny
// generator configs worked out by hand with Kueue's semantics (../shared/spec/
// kueue-semantics.md; Kueue main at ff69552), and the shipped baseline config.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "support/golden.hpp"
#include "support/paths.hpp"
#include "twin/kueue_perf/runner.hpp"

namespace gpubank::twin::kueue_perf {
namespace {

Summary run_ok(std::string_view yaml, bool fair_sharing = false) {
  Diagnostics findings;
  auto config = parse_generator_config(yaml, "t.yaml", findings);
  EXPECT_TRUE(config) << (findings.empty() ? "" : findings[0].to_string());
  if (!config) return {};
  const Scenario s = expand(std::move(*config));
  RunOptions options;
  options.core.fair_sharing = fair_sharing;
  auto result = run(s, options);
  EXPECT_TRUE(result) << (result ? "" : result.error());
  return result ? *result : Summary{};
}

const WorkloadClassSummary& wl_class(const Summary& s, std::string_view name) {
  for (const auto& c : s.workload_classes) {
    if (c.name == name) return c;
  }
  static const WorkloadClassSummary none;
  ADD_FAILURE() << "no workload class " << name;
  return none;
}

const ClusterQueueClassSummary& cq_class(const Summary& s, std::string_view name) {
  for (const auto& c : s.cluster_queue_classes) {
    if (c.name == name) return c;
  }
  static const ClusterQueueClassSummary none;
  ADD_FAILURE() << "no queue class " << name;
  return none;
}

// One ClusterQueue (alone in cohort co-0) of 2 cpus. "small" (1 cpu, 250 ms, priority 0)
// created at 100, 200, 300; "big" (2 cpus, 100 ms, priority 10) at 150.
std::string tiny(std::string_view within_cluster_queue) {
  return R"(
cohorts:
- className: co
  count: 1
  queuesSets:
  - className: cq
    count: 1
    nominalQuota: 2
    withinClusterQueue: )" +
         std::string(within_cluster_queue) + R"(
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
}

// withinClusterQueue: LowerPriority.
//   100  A=small-0-0-0 admitted (usage 1)
//   150  B=big-1-0-0: 1 more needed; Preempt mode (nominal 2 >= 2), candidate A (priority
//        0 < 10): A evicted; the runner releases it at once, A is requeued; next cycle the
//        head is B (higher priority): admitted (usage 2); A: no lower-priority candidate,
//        stays pending (inadmissible)
//   200  C=small-0-1-0 created: cannot fit, no candidates, pending
//   250  B finishes; heads A (created 100) then C, one per cycle: both admitted (usage 2)
//   300  D=small-0-2-0: pending;  500: A and C finish, D admitted;  750: D finishes
// To admission: A 250-100 = 150 (upstream keeps the last admission), C 50, D 200 ->
// mean 133, p50 150, p90 200; B 0. Usage: 1x50 + 2x100 + 2x250 + 1x250 = 1000 cpu ms.
TEST(KueuePerfScenario, PreemptionWithinClusterQueueByHand) {
  const Summary r = run_ok(tiny("LowerPriority"));
  EXPECT_EQ(r.workloads, 4);
  EXPECT_EQ(r.finished, 4);
  EXPECT_EQ(r.evictions, 1);
  EXPECT_EQ(r.end_ms, 750);
  const auto& small = wl_class(r, "small");
  EXPECT_EQ(small.total_evictions, 1);
  EXPECT_EQ(small.average_time_to_admission_ms, 133);
  EXPECT_EQ(small.p50_time_to_admission_ms, 150);
  EXPECT_EQ(small.p90_time_to_admission_ms, 200);
  EXPECT_EQ(small.average_time_to_finish_ms, 383);  // (400 + 300 + 450) / 3
  const auto& big = wl_class(r, "big");
  EXPECT_EQ(big.average_time_to_admission_ms, 0);
  EXPECT_EQ(big.average_time_to_finish_ms, 100);
  const auto& cq = cq_class(r, "cq");
  EXPECT_EQ(cq.cpu_used, 1'000'000);
  EXPECT_EQ(cq.cpu_average_usage, 1333);
  EXPECT_EQ(cq.last_event_ms, 750);
  EXPECT_NEAR(cq.usage_percent, 66.6667, 1e-3);
}

// withinClusterQueue: Never, BestEffortFIFO: the inadmissible big one does not block the
// small ones behind it.
//   100  A admitted (usage 1)
//   150  B: 1 more needed, no candidates: inadmissible
//   200  C is the head now: fits, admitted (usage 2)
//   300  D: 1 more needed: inadmissible
//   350  A finishes: B and D requeued; B (priority 10) first: still 1 more needed,
//        inadmissible; next cycle D fits: admitted (usage 2)
//   450  C finishes: B requeued, 1 more needed (D holds 1)
//   600  D finishes: B admitted;  700: B finishes
// To admission: A 0, C 0, D 50 -> mean 16, p50 0, p90 50; B 450.
// Usage: 1x100 + 2x150 + 2x100 + 1x150 + 2x100 = 950 cpu ms over 700 ms.
TEST(KueuePerfScenario, BestEffortFifoWithoutPreemptionByHand) {
  const Summary r = run_ok(tiny("Never"));
  EXPECT_EQ(r.finished, 4);
  EXPECT_EQ(r.evictions, 0);
  EXPECT_EQ(r.end_ms, 700);
  const auto& small = wl_class(r, "small");
  EXPECT_EQ(small.average_time_to_admission_ms, 16);
  EXPECT_EQ(small.p50_time_to_admission_ms, 0);
  EXPECT_EQ(small.p90_time_to_admission_ms, 50);
  EXPECT_EQ(small.average_time_to_finish_ms, 266);  // (250 + 250 + 300) / 3
  const auto& big = wl_class(r, "big");
  EXPECT_EQ(big.average_time_to_admission_ms, 450);
  EXPECT_EQ(big.average_time_to_finish_ms, 550);
  const auto& cq = cq_class(r, "cq");
  EXPECT_EQ(cq.cpu_used, 950'000);
  EXPECT_EQ(cq.cpu_average_usage, 1357);
  EXPECT_NEAR(cq.usage_percent, 67.857, 1e-3);
}

// Borrowing and reclaim in one cohort: "lender" (nominal 4, reclaimWithinCohort: Any)
// and "borrower" (nominal 0, borrowingLimit 4). Guests (1 cpu, 1000 ms, priority 10) in
// the borrower at 100, 200, 300, 400; the owner (3 cpus, 100 ms, priority 100) in the
// lender at 250.
//   100, 200  g0, g1 admitted, borrowing (usage 1, 2)
//   250  owner: available 4 - 2 = 2, 1 more needed; within nominal after admission, so
//        reclaim: candidates in the borrowing queue, most recently admitted first. g0 and
//        g1 were reserved in the same second (Kubernetes keeps whole seconds), so the UID
//        decides, and the runner's UIDs follow creation: g0 is evicted and requeued; next
//        cycle owner (not borrowing) before g0 (borrowing): owner admitted, g0 no longer
//        fits, then cannot fit (NoFit: nominal 0)
//   300  g2 cannot fit (cohort full)
//   350  owner finishes: g0 (created 100) then g2 admitted (usage 3)
//   400  g3 admitted (usage 4); 1200 g1, 1350 g0 and g2, 1400 g3 finish
// Guests to admission: 250, 0, 50, 0 -> mean 75, p50 0, p90 250; to finish 1250, 1000,
// 1050, 1000 -> 1075. Borrower usage 1x100 + 2x50 + 1x100 + 3x50 + 4x800 + 3x150 + 1x50
// = 4150 cpu ms over 1400 ms; lender 3 x 100 = 300 cpu ms over 350 ms of 4 cpus: 21.43 %.
TEST(KueuePerfScenario, BorrowingAndReclaimByHand) {
  const Summary r = run_ok(R"(
cohorts:
- className: co
  count: 1
  queuesSets:
  - className: lender
    count: 1
    nominalQuota: 4
    reclaimWithinCohort: Any
    withinClusterQueue: LowerPriority
    workloadsSets:
    - count: 1
      creationIntervalMs: 250
      workloads:
      - {className: owner, runtimeMs: 100, priority: 100, request: 3}
  - className: borrower
    count: 1
    nominalQuota: 0
    borrowingLimit: 4
    workloadsSets:
    - count: 4
      creationIntervalMs: 100
      workloads:
      - {className: guest, runtimeMs: 1000, priority: 10, request: 1}
)");
  EXPECT_EQ(r.workloads, 5);
  EXPECT_EQ(r.finished, 5);
  EXPECT_EQ(r.evictions, 1);
  EXPECT_EQ(r.end_ms, 1400);
  const auto& guest = wl_class(r, "guest");
  EXPECT_EQ(guest.total_evictions, 1);
  EXPECT_EQ(guest.average_time_to_admission_ms, 75);
  EXPECT_EQ(guest.p50_time_to_admission_ms, 0);
  EXPECT_EQ(guest.p90_time_to_admission_ms, 250);
  EXPECT_EQ(guest.average_time_to_finish_ms, 1075);
  const auto& owner = wl_class(r, "owner");
  EXPECT_EQ(owner.average_time_to_admission_ms, 0);
  EXPECT_EQ(owner.average_time_to_finish_ms, 100);
  const auto& borrower = cq_class(r, "borrower");
  EXPECT_EQ(borrower.cpu_used, 4'150'000);
  EXPECT_EQ(borrower.cpu_max_usage, 4000);
  EXPECT_EQ(borrower.last_event_ms, 1400);
  EXPECT_EQ(borrower.usage_percent, 0);  // no nominal quota: undefined, reported as 0
  const auto& lender = cq_class(r, "lender");
  EXPECT_EQ(lender.cpu_used, 300'000);
  EXPECT_EQ(lender.last_event_ms, 350);
  EXPECT_EQ(lender.cpu_average_usage, 857);
  EXPECT_NEAR(lender.usage_percent, 21.4286, 1e-3);
}

class KueuePerfBaseline : public ::testing::TestWithParam<bool> {};

TEST_P(KueuePerfBaseline, RunsThroughDeterministically) {
  Diagnostics findings;
  auto config = load_generator_config(gpubank::testing::shared_dir() + "/kueue-perf/baseline-generator.yaml",
                                      findings);
  ASSERT_TRUE(config);
  const Scenario s = expand(std::move(*config));
  RunOptions options;
  options.core.fair_sharing = GetParam();
  auto a = run(s, options);
  auto b = run(s, options);
  ASSERT_TRUE(a) << a.error();
  ASSERT_TRUE(b) << b.error();
  EXPECT_EQ(to_json(*a).dump(), to_json(*b).dump());
  EXPECT_EQ(a->workloads, 15000);
  EXPECT_EQ(a->finished, 15000);
  EXPECT_EQ(a->pending, 0);
  const auto& cq = cq_class(*a, "cq");
  EXPECT_EQ(cq.queues, 30);
  EXPECT_EQ(cq.nominal_quota, 600'000);
  // Each cohort's capacity is its queues' nominal quota: usage cannot pass 100 %.
  EXPECT_GT(cq.usage_percent, 0);
  EXPECT_LE(cq.usage_percent, 100);
  // Every workload waits at least 0 and is admitted at most once per eviction plus one.
  for (const auto& c : a->workload_classes) {
    EXPECT_EQ(c.admitted, c.count) << c.name;
    EXPECT_LE(c.p50_time_to_admission_ms, c.p90_time_to_admission_ms) << c.name;
    EXPECT_LE(c.p90_time_to_admission_ms, c.max_time_to_admission_ms) << c.name;
  }
}

// The whole summary of Kueue's baseline and large-scale scenarios, pinned: the admission
// core's speed work must not change a single decision, and these runs make thousands of
// admissions and preemptions, over 1,000 queues for large-scale. A deliberate change of
// semantics updates the files: run with GPUBANK_UPDATE_GOLDEN=1 and review the diff
// (tests/twin/kueue_perf/golden/).
struct PinnedRun {
  const char* generator;
  bool fair_sharing;
};
void PrintTo(const PinnedRun& r, std::ostream* os) { *os << r.generator << (r.fair_sharing ? ", fair sharing" : ""); }
class KueuePerfPinned : public ::testing::TestWithParam<PinnedRun> {};

// Kueue's two scenarios, each with and without fair sharing.
const auto kPinnedRuns = ::testing::Values(PinnedRun{"baseline", false}, PinnedRun{"baseline", true},
                                           PinnedRun{"large-scale", false}, PinnedRun{"large-scale", true});
std::string pinned_run_name(const ::testing::TestParamInfo<PinnedRun>& p) {
  std::string name = std::string(p.param.generator) + (p.param.fair_sharing ? "_fair_sharing" : "");
  std::replace(name.begin(), name.end(), '-', '_');
  return name;
}

TEST_P(KueuePerfPinned, SummaryMatchesTheGoldenFile) {
  const PinnedRun pinned = GetParam();
  Diagnostics findings;
  auto config = load_generator_config(gpubank::testing::shared_dir() + "/kueue-perf/" + pinned.generator + "-generator.yaml",
                                      findings);
  ASSERT_TRUE(config);
  RunOptions options;
  options.core.fair_sharing = pinned.fair_sharing;
  auto r = run(expand(std::move(*config)), options);
  ASSERT_TRUE(r) << r.error();
  const std::string got = to_json(*r).dump(2) + "\n";
  const std::filesystem::path file = std::filesystem::path(gpubank::testing::source_dir()) / "tests" / "twin" /
                                     "kueue_perf" / "golden" /
                                     (std::string(pinned.generator) + (pinned.fair_sharing ? "-fair-sharing" : "") + ".json");
  if (gpubank::testing::updating_golden_files()) {
    gpubank::testing::write_golden_file(file, got);
    GTEST_SKIP() << "rewrote " << file.string();
  }
  const auto want = gpubank::testing::read_golden_file(file);
  ASSERT_TRUE(want) << "no golden file " << file.string() << " (GPUBANK_UPDATE_GOLDEN=1 writes it)";
  EXPECT_EQ(got, *want) << "the summary differs from " << file.string();
}

// The differential test of the core's fast paths on Kueue's two scenarios: the run with
// CoreOptions::reference_search (no memo or shortcut, candidates collected and sorted in
// full, the tree search only, DRS and the fair-sharing choice recomputed) must take every
// decision of the fast run, in the same order. A core that forwards to the real one hashes
// each cycle's decisions and victims on the way.
class HashingCore final : public AdmissionCore {
 public:
  explicit HashingCore(std::unique_ptr<AdmissionCore> inner) : inner_(std::move(inner)) {}
  WorkloadId submit(WorkloadSpec spec, VirtualTime now) override { return inner_->submit(std::move(spec), now); }
  Expected<WorkloadId> restore_admitted(WorkloadSpec spec, Admission admission, VirtualTime at) override {
    return inner_->restore_admitted(std::move(spec), std::move(admission), at);
  }
  void finish(WorkloadId id, VirtualTime now) override { inner_->finish(id, now); }
  void release_evicted(WorkloadId id, VirtualTime now) override { inner_->release_evicted(id, now); }
  Expected<bool> forget(WorkloadId id) override { return inner_->forget(id); }
  Expected<bool> set_quota(const std::string& cq, const std::string& flavor, const ResourceQuota& quota) override {
    return inner_->set_quota(cq, flavor, quota);
  }
  Expected<bool> set_cohort_quota(const std::string& cohort, const std::string& flavor,
                                  const ResourceQuota& quota) override {
    return inner_->set_cohort_quota(cohort, flavor, quota);
  }
  Expected<bool> evict(WorkloadId id, const std::string& reason, const std::string& message, VirtualTime now) override {
    return inner_->evict(id, reason, message, now);
  }
  Expected<bool> evict_stopped(WorkloadId id, const std::string& reason, const std::string& message,
                               VirtualTime now) override {
    return inner_->evict_stopped(id, reason, message, now);
  }
  Expected<bool> set_priority(WorkloadId id, std::int32_t priority) override { return inner_->set_priority(id, priority); }
  [[nodiscard]] bool has_active_heads() const override { return inner_->has_active_heads(); }
  [[nodiscard]] std::size_t workload_count() const override { return inner_->workload_count(); }
  [[nodiscard]] const WorkloadSpec& spec(WorkloadId id) const override { return inner_->spec(id); }
  [[nodiscard]] WorkloadStatus status(WorkloadId id) const override { return inner_->status(id); }
  [[nodiscard]] WorkloadPhase phase(WorkloadId id) const override { return inner_->phase(id); }
  [[nodiscard]] std::vector<std::string> cluster_queue_names() const override { return inner_->cluster_queue_names(); }
  [[nodiscard]] std::vector<std::string> cohort_names() const override { return inner_->cohort_names(); }
  [[nodiscard]] ClusterQueueStatus cluster_queue_status(const std::string& name) const override {
    return inner_->cluster_queue_status(name);
  }
  [[nodiscard]] std::optional<QuotaFigures> figures(const std::string& node, const std::string& flavor,
                                                    const std::string& resource) const override {
    return inner_->figures(node, flavor, resource);
  }
  [[nodiscard]] std::uint64_t hash() const { return hash_; }
  [[nodiscard]] std::uint64_t decisions() const { return decisions_; }

 protected:
  void do_run_cycle(VirtualTime now, CycleResult& out) override {
    inner_->run_cycle(now, out);
    mix(static_cast<std::uint64_t>(now));
    for (const Decision& d : out.decisions) {
      ++decisions_;
      mix(static_cast<std::uint64_t>(d.kind));
      mix(d.workload);
      for (const char c : d.reason) mix(static_cast<unsigned char>(c));
      for (const char c : d.message) mix(static_cast<unsigned char>(c));
      for (const WorkloadId r : d.related) mix(r);
    }
    for (const WorkloadId v : out.evicted) mix(v);
  }

 private:
  void mix(std::uint64_t v) {
    hash_ ^= v;
    hash_ *= 1099511628211ULL;
  }
  std::unique_ptr<AdmissionCore> inner_;
  std::uint64_t hash_ = 1469598103934665603ULL;
  std::uint64_t decisions_ = 0;
};

class KueuePerfReference : public ::testing::TestWithParam<PinnedRun> {};

TEST_P(KueuePerfReference, TheReferenceSearchDecidesAsTheFastCore) {
  const PinnedRun pinned = GetParam();
  Diagnostics findings;
  auto config = load_generator_config(gpubank::testing::shared_dir() + "/kueue-perf/" + pinned.generator + "-generator.yaml",
                                      findings);
  ASSERT_TRUE(config);
  const Scenario scenario = expand(std::move(*config));
  struct Outcome {
    std::string summary;
    std::uint64_t hash = 0, decisions = 0;
  };
  auto run_with = [&](bool reference) -> Outcome {
    RunOptions options;
    options.core.fair_sharing = pinned.fair_sharing;
    options.core.reference_search = reference;
    auto core = AdmissionCore::create(options.core, scenario.flavors, {}, scenario.queue_specs);
    EXPECT_TRUE(core) << (core ? "" : core.error());
    if (!core) return {};
    HashingCore hashing(std::move(*core));
    auto summary = simulate(scenario, hashing, options);
    EXPECT_TRUE(summary) << (summary ? "" : summary.error());
    if (!summary) return {};
    return {to_json(*summary).dump(), hashing.hash(), hashing.decisions()};
  };
  const Outcome fast = run_with(false);
  const Outcome reference = run_with(true);
  EXPECT_GT(fast.decisions, 1000U);
  EXPECT_EQ(reference.decisions, fast.decisions);
  EXPECT_EQ(reference.hash, fast.hash) << "the reference search decided otherwise";
  EXPECT_EQ(reference.summary, fast.summary);
}

INSTANTIATE_TEST_SUITE_P(Scenarios, KueuePerfReference, kPinnedRuns, pinned_run_name);

INSTANTIATE_TEST_SUITE_P(Scenarios, KueuePerfPinned, kPinnedRuns, pinned_run_name);

INSTANTIATE_TEST_SUITE_P(FairSharing, KueuePerfBaseline, ::testing::Values(false, true),
                         [](const auto& param_info) { return std::string(param_info.param ? "on" : "off"); });

}  // namespace
}  // namespace gpubank::twin::kueue_perf
