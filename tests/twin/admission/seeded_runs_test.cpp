// Seeded random runs of the admission core, pinned by a hash of everything they decide.
//
// The conformance tests pin Kueue's behaviour case by case; the kueue-perf golden summaries
// pin aggregates of two large scenarios. Neither sees a change that keeps the totals, such
// as two equal victims taken in the other order. These runs do: each seed builds a random
// cluster (flat or two-level cohorts, one or two resources, one or two flavors, lending and
// borrowing limits, all preemption policies, StrictFIFO, fungibility, fair sharing on or
// off) and a random stream of arrivals and finishes, runs 600 cycles, and hashes every
// decision of every cycle (kind, workload, queue, reason, message, related workloads),
// every workload's final status (phase, conditions with transition times, admission) and
// every ClusterQueue's status. The hashes are in golden/seeded-runs.txt.
//
// A second family, the contended runs (golden/contended-runs.txt), is shaped like the
// preemption storms of bench/admission_cycle_bench: flat cohorts of 24 to 40 queues on one
// resource, every queue preempting (mixed policies, borrowWithinCohort, thresholds, some
// lending limits), and bursts that give every queue several heads at once, so that many
// heads of a few priorities search the same cohort in the same state. Their hashes were
// written by the core before it shared those searches' walks (RemovalRun), which must
// decide exactly as the walk did.
//
// Speed work on the core must leave every hash unchanged. A deliberate change of
// semantics rewrites the file with GPUBANK_UPDATE_GOLDEN=1 (the first shard writes all
// seeds); review the seeds that changed.
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <filesystem>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "support/golden.hpp"
#include "support/paths.hpp"
#include "twin/admission/core.hpp"

namespace gpubank::twin {
namespace {

constexpr unsigned kSeeds = 64;
constexpr unsigned kContendedSeeds = 32;
constexpr unsigned kShards = 8;  // separate CTest cases, so that ctest -j spreads them
constexpr int kCycles = 600;

// FNV-1a over length-delimited fields: "ab","c" and "a","bc" hash differently.
class Fnv {
 public:
  void text(std::string_view s) {
    for (const unsigned char c : s) mix(c);
    mix(0xff);
  }
  void number(long long v) { text(std::to_string(v)); }
  [[nodiscard]] std::uint64_t value() const { return h_; }

 private:
  void mix(unsigned char c) {
    h_ ^= c;
    h_ *= 1099511628211ULL;
  }
  std::uint64_t h_ = 1469598103934665603ULL;
};

// What a seed's bits choose; the rest comes from the seed's random stream.
struct Shape {
  explicit Shape(unsigned seed)
      : hierarchical((seed & 1U) != 0),
        two_resources((seed & 2U) != 0),
        fair_sharing((seed & 4U) != 0),
        preemption((seed & 8U) != 0),
        finish_one_in((seed & 32U) != 0 ? 40 : (seed & 16U) != 0 ? 3 : 20),
        load((seed & 32U) != 0 ? 3 : 1) {}
  // A contended run's (see the top of the file): its seed's bits choose lending limits and
  // whether the preemptors may borrow while reclaiming.
  static Shape contended_run(unsigned seed) {
    Shape s(0);
    s.preemption = true;
    s.contended = true;
    s.lending = (seed & 1U) != 0;
    s.borrow_within_cohort = (seed & 2U) != 0;
    s.finish_one_in = (seed & 4U) != 0 ? 10 : 40;
    s.size_scale = (seed & 8U) != 0 ? 2 : 1;
    return s;
  }
  bool hierarchical, two_resources, fair_sharing, preemption;
  int finish_one_in;  // one in N running workloads finishes after each cycle
  int load;           // arrivals per queue every fifth cycle
  bool contended = false, lending = false, borrow_within_cohort = false;
  int size_scale = 1;  // contended runs: requests of up to 4 or 8 CPUs per pod
  bool reference_search = false;  // CoreOptions::reference_search: decides the same, slower
};

struct RunResult {
  std::uint64_t hash = 0;
  long long decisions = 0, admitted = 0, preempted = 0;
  // What a run that forgets finished workloads can be compared on: every decision, and the
  // final status of every workload that has not finished.
  std::uint64_t decisions_hash = 0, unfinished_hash = 0;
};

class SeededRun {
 public:
  // forget_finished: each workload is forgotten as soon as it finishes.
  explicit SeededRun(unsigned seed, bool forget_finished = false)
      : SeededRun(Shape(seed), seed, forget_finished) {}
  SeededRun(Shape shape, unsigned seed, bool forget_finished = false)
      : shape_(shape), rng_(seed), reuse_result_(std::popcount(seed) % 2 == 1), forget_finished_(forget_finished) {}

  RunResult run() {
    if (shape_.contended) return run_contended();
    build_cluster();
    auto created = AdmissionCore::create(CoreOptions{.fair_sharing = shape_.fair_sharing,
                                                     .reference_search = shape_.reference_search},
                                         {ResourceFlavorSpec{"f1", {}, {}, {}}, ResourceFlavorSpec{"f2", {}, {}, {}}},
                                         cohorts_, queues_);
    EXPECT_TRUE(created.ok()) << (created.ok() ? "" : created.error());
    if (!created.ok()) return {};
    core_ = std::move(created).value();
    submit(queues_per_root_ * roots_ * 6);
    // Seeds with an odd number of set bits pass one result to every cycle, the others take
    // a new one each time (every shape has both kinds): the golden hashes hold for both only
    // if a reused result carries nothing over from the cycle before.
    CycleResult reused;
    for (int cycle = 0; cycle < kCycles; ++cycle) {
      CycleResult fresh;
      CycleResult& r = reuse_result_ ? reused : fresh;
      core_->run_cycle(now_, r);
      for (const auto& d : r.decisions) record(d);
      for (const WorkloadId v : r.evicted) core_->release_evicted(v, now_);
      finish_some();
      if (cycle % 5 == 0) submit(shape_.load * (queues_per_root_ * roots_ + 1));
      now_ += 1000;
    }
    return finish_run();
  }

 private:
  RunResult finish_run() {
    record_final_state();
    result_.hash = hash_.value();
    result_.decisions_hash = decisions_hash_.value();
    result_.unfinished_hash = unfinished_hash_.value();
    return result_;
  }

  // 300 cycles; every 25th, and whenever no queue has a head, a burst of 2 to 6 arrivals
  // per queue. One victim in four stays a cycle longer (an evicted candidate then);
  // finished workloads are forgotten.
  RunResult run_contended() {
    build_contended_cluster();
    auto created = AdmissionCore::create(CoreOptions{.reference_search = shape_.reference_search},
                                         {ResourceFlavorSpec{"f1", {}, {}, {}}}, {}, queues_);
    EXPECT_TRUE(created.ok()) << (created.ok() ? "" : created.error());
    if (!created.ok()) return {};
    core_ = std::move(created).value();
    forget_finished_ = true;
    burst(8);
    CycleResult r;
    std::vector<WorkloadId> slow_victims;
    for (int cycle = 0; cycle < 300; ++cycle) {
      core_->run_cycle(now_, r);
      for (const auto& d : r.decisions) record(d);
      for (const WorkloadId v : slow_victims) core_->release_evicted(v, now_);
      slow_victims.clear();
      for (const WorkloadId v : r.evicted) {
        if (draw(4) == 0) {
          slow_victims.push_back(v);
        } else {
          core_->release_evicted(v, now_);
        }
      }
      finish_some();
      if (cycle % 25 == 24 || !core_->has_active_heads()) burst(2 + static_cast<int>(draw(5)));
      now_ += 1000;
    }
    return finish_run();
  }

  void build_contended_cluster() {
    roots_ = 1 + static_cast<int>(draw(2));
    queues_per_root_ = 24 + static_cast<int>(draw(17));
    static constexpr PreemptionPolicy kReclaim[] = {PreemptionPolicy::Any, PreemptionPolicy::LowerPriority,
                                                     PreemptionPolicy::LowerOrNewerEqualPriority};
    for (int c = 0; c < roots_; ++c) {
      // One reclaim policy for most of a cohort, so that many heads share their walks.
      const PreemptionPolicy usual = kReclaim[draw(3)];
      for (int i = 0; i < queues_per_root_; ++i) {
        ClusterQueueSpec q;
        q.name = "cq" + std::to_string(c) + "-" + std::to_string(i);
        q.cohort = "root" + std::to_string(c);
        ResourceQuota quota{"cpu", (4 + draw(5)) * 2000, {}, {}};
        if (draw(3) != 0) quota.borrowing_limit = (2 + draw(10)) * 4000;
        if (shape_.lending && draw(3) != 0) quota.lending_limit = quota.nominal / (1 + draw(4));
        q.resource_groups.push_back(ResourceGroup{{"cpu"}, {FlavorQuotas{"f1", {quota}}}});
        q.preemption.reclaim_within_cohort = draw(3) == 0 ? kReclaim[draw(3)] : usual;
        q.preemption.within_cluster_queue = draw(4) == 0 ? PreemptionPolicy::Never : kReclaim[1 + draw(2)];
        if (shape_.borrow_within_cohort && draw(3) != 0) {
          q.preemption.borrow_within_cohort = BorrowWithinCohortPolicy::LowerPriority;
          if (draw(2) == 0) q.preemption.max_priority_threshold = 100;
        }
        queues_.push_back(q);
      }
    }
  }

  void burst(int per_queue) {
    static constexpr std::int32_t kPriorities[] = {0, 50, 100, 150, 200};
    for (const auto& q : queues_) {
      for (int k = 0; k < per_queue; ++k) {
        WorkloadSpec w;
        w.ns = "ns";
        w.name = "w" + std::to_string(serial_++);
        w.uid = std::to_string(1000 + draw(100000));
        w.cluster_queue = q.name;
        w.priority = kPriorities[draw(5)];
        w.creation = now_ - static_cast<VirtualTime>(draw(3)) * 1000;
        const Amount cpu = (1 + draw(8)) * 500 * shape_.size_scale;
        w.pod_sets.push_back(PodSetSpec{"main", static_cast<std::int32_t>(1 + draw(2)), {{"cpu", cpu}}, {}, {}, {}, -1, {}});
        core_->submit(std::move(w), now_);
      }
    }
  }

  unsigned draw(unsigned n) { return static_cast<unsigned>(rng_() % n); }

  std::vector<ResourceQuota> quotas(bool cohort) {
    std::vector<ResourceQuota> out;
    for (const auto& name : resources()) {
      ResourceQuota q;
      q.resource = name;
      q.nominal = cohort ? draw(3) * 2000 : (1 + draw(6)) * 4000;
      if (draw(3) == 0) q.borrowing_limit = draw(4) * 4000;
      if (draw(3) == 0) q.lending_limit = q.nominal / (1 + draw(3));
      out.push_back(q);
    }
    return out;
  }
  [[nodiscard]] std::vector<std::string> resources() const {
    return shape_.two_resources ? std::vector<std::string>{"cpu", "gpu"} : std::vector<std::string>{"cpu"};
  }

  void build_cluster() {
    roots_ = 2 + static_cast<int>(draw(2));
    queues_per_root_ = 3 + static_cast<int>(draw(8));
    for (int c = 0; c < roots_; ++c) {
      CohortSpec root;
      root.name = "root" + std::to_string(c);
      root.fair_weight = 1 + draw(2);
      if (draw(2) != 0) root.resource_groups.push_back(ResourceGroup{resources(), {FlavorQuotas{"f1", quotas(true)}}});
      cohorts_.push_back(root);
      const int subcohorts = shape_.hierarchical ? 2 : 0;
      for (int s = 0; s < subcohorts; ++s) {
        CohortSpec sub;
        sub.name = root.name + "-s" + std::to_string(s);
        sub.parent = root.name;
        if (draw(2) != 0) sub.resource_groups.push_back(ResourceGroup{resources(), {FlavorQuotas{"f1", quotas(true)}}});
        cohorts_.push_back(sub);
      }
      for (int i = 0; i < queues_per_root_; ++i) {
        ClusterQueueSpec q;
        q.name = "cq" + std::to_string(c) + "-" + std::to_string(i);
        q.cohort = subcohorts > 0 ? root.name + "-s" + std::to_string(i % subcohorts) : root.name;
        if (i == queues_per_root_ - 1 && draw(2) != 0) q.cohort = root.name;
        std::vector<FlavorQuotas> flavors{FlavorQuotas{"f1", quotas(false)}};
        if (draw(2) != 0) flavors.push_back(FlavorQuotas{"f2", quotas(false)});
        q.resource_groups.push_back(ResourceGroup{resources(), flavors});
        if (shape_.preemption) {
          q.preemption.reclaim_within_cohort = static_cast<PreemptionPolicy>(draw(4));
          q.preemption.within_cluster_queue = static_cast<PreemptionPolicy>(draw(4));
          if (draw(2) != 0) q.preemption.borrow_within_cohort = BorrowWithinCohortPolicy::LowerPriority;
          if (draw(3) == 0) q.preemption.max_priority_threshold = 100;
        }
        if (draw(4) == 0) q.queueing_strategy = QueueingStrategy::StrictFIFO;
        if (draw(3) == 0) q.flavor_fungibility.when_can_borrow = FungibilityPolicy::TryNextFlavor;
        if (draw(3) == 0) q.flavor_fungibility.when_can_preempt = FungibilityPolicy::MayStopSearch;
        q.fair_weight = draw(4) == 0 ? 0.0 : 1.0 + draw(3);
        queues_.push_back(q);
      }
    }
  }

  void submit(int count) {
    static constexpr std::int32_t kPriorities[] = {0, 50, 100, 200};
    for (int k = 0; k < count; ++k) {
      WorkloadSpec w;
      w.ns = "ns";
      w.name = "w" + std::to_string(serial_++);
      w.uid = std::to_string(1000 + draw(100000));  // repeats on purpose: UID ties
      w.cluster_queue = queues_[draw(static_cast<unsigned>(queues_.size()))].name;
      w.priority = kPriorities[draw(4)];
      w.creation = now_;
      std::vector<std::pair<std::string, Amount>> requests{{"cpu", (1 + draw(8)) * 1000}};
      if (shape_.two_resources && draw(2) != 0) requests.emplace_back("gpu", (1 + draw(4)) * 1000);
      w.pod_sets.push_back(PodSetSpec{"main", static_cast<std::int32_t>(1 + draw(2)), requests, {}, {}, {}, -1, {}});
      if (draw(5) == 0) w.pod_sets.push_back(PodSetSpec{"aux", 1, {{"cpu", 1000}}, {}, {}, {}, -1, {}});
      core_->submit(std::move(w), now_);
    }
  }

  void finish_some() {
    std::vector<WorkloadId> still_running;
    for (const WorkloadId w : running_) {
      if (core_->phase(w) != WorkloadPhase::Admitted) continue;
      if (draw(static_cast<unsigned>(shape_.finish_one_in)) == 0) {
        core_->finish(w, now_);
        if (forget_finished_) {
          const auto forgotten = core_->forget(w);
          EXPECT_TRUE(forgotten) << (forgotten ? "" : forgotten.error());
          forgotten_.insert(w);
        }
      } else {
        still_running.push_back(w);
      }
    }
    running_.swap(still_running);
  }

  void record(const Decision& d) {
    decisions_hash_.number(static_cast<int>(d.kind));
    decisions_hash_.number(d.workload);
    decisions_hash_.text(d.message);
    for (const WorkloadId x : d.related) decisions_hash_.number(x);
    ++result_.decisions;
    hash_.number(static_cast<int>(d.kind));
    hash_.number(d.workload);
    hash_.text(d.cluster_queue);
    hash_.text(d.reason);
    hash_.text(d.message);
    for (const WorkloadId x : d.related) hash_.number(x);
    if (d.kind == Decision::Kind::Preempted) ++result_.preempted;
    if (d.kind == Decision::Kind::Admitted) {
      ++result_.admitted;
      running_.push_back(d.workload);
    }
  }

  static void hash_status(Fnv& hash, const WorkloadStatus& s) {
    hash.number(static_cast<int>(s.phase));
    hash.number(s.admitted_at);
    for (const auto& c : s.conditions) {
      hash.text(c.type);
      hash.number(c.status ? 1 : 0);
      hash.text(c.reason);
      hash.text(c.message);
      hash.number(c.last_transition);
    }
    if (!s.admission) return;
    hash.text(s.admission->cluster_queue);
    for (const auto& p : s.admission->pod_sets) {
      hash.text(p.name);
      for (const auto& [resource, flavor] : p.flavors) {
        hash.text(resource);
        hash.text(flavor);
      }
      for (const auto& [resource, amount] : p.resource_usage) {
        hash.text(resource);
        hash.number(amount);
      }
    }
  }

  void record_final_state() {
    for (WorkloadId w = 0; w < core_->workload_count(); ++w) {
      if (forgotten_.contains(w)) {
        EXPECT_THROW((void)core_->status(w), std::out_of_range) << "workload " << w;
        continue;
      }
      const WorkloadStatus s = core_->status(w);
      EXPECT_EQ(core_->phase(w), s.phase) << "workload " << w;
      if (!forget_finished_) hash_status(hash_, s);
      if (s.phase != WorkloadPhase::Finished) hash_status(unfinished_hash_, s);
    }
    if (forget_finished_) return;  // the queues' statuses are compared through the decisions
    for (const auto& name : core_->cluster_queue_names()) {
      const ClusterQueueStatus s = core_->cluster_queue_status(name);
      hash_.number(s.pending_workloads);
      hash_.number(s.admitted_workloads);
      if (s.weighted_share) hash_.number(*s.weighted_share);
      for (const auto& f : s.flavors_usage) {
        hash_.text(f.flavor);
        hash_.text(f.resource);
        hash_.number(f.total);
        hash_.number(f.borrowed);
      }
    }
  }

  Shape shape_;
  std::mt19937 rng_;  // fully specified by the standard: the same stream everywhere
  bool reuse_result_;
  bool forget_finished_;
  std::set<WorkloadId> forgotten_;
  Fnv decisions_hash_, unfinished_hash_;
  int roots_ = 0, queues_per_root_ = 0;
  std::vector<CohortSpec> cohorts_;
  std::vector<ClusterQueueSpec> queues_;
  std::unique_ptr<AdmissionCore> core_;
  std::vector<WorkloadId> running_;
  VirtualTime now_ = 0;
  int serial_ = 0;
  Fnv hash_;
  RunResult result_;
};

std::string golden_line(unsigned seed, bool reference_search = false) {
  Shape shape(seed);
  shape.reference_search = reference_search;
  const RunResult r = SeededRun(shape, seed).run();
  char hash[17];
  std::snprintf(hash, sizeof hash, "%016llx", static_cast<unsigned long long>(r.hash));
  std::ostringstream line;
  line << "seed " << seed << (shape.hierarchical ? " two-level" : " flat") << (shape.two_resources ? " 2res" : " 1res")
       << (shape.fair_sharing ? " fair" : " classic") << (shape.preemption ? " preempt" : " no-preempt") << " finish-1-in-"
       << shape.finish_one_in << " decisions " << r.decisions << " admitted " << r.admitted << " preempted " << r.preempted
       << " hash " << hash << "\n";
  return line.str();
}

std::filesystem::path golden_file() {
  return std::filesystem::path(gpubank::testing::source_dir()) / "tests" / "twin" / "admission" / "golden" /
         "seeded-runs.txt";
}

// The golden file's lines (each with its newline); a failure, and no lines, unless there
// is one per seed.
std::vector<std::string> golden_lines(const std::filesystem::path& file, unsigned seeds) {
  const auto text = gpubank::testing::read_golden_file(file);
  if (!text) {
    ADD_FAILURE() << "no golden file " << file.string() << " (GPUBANK_UPDATE_GOLDEN=1 writes it)";
    return {};
  }
  std::vector<std::string> lines;
  std::istringstream in(*text);
  for (std::string line; std::getline(in, line);) lines.push_back(line + "\n");
  if (lines.size() != seeds) {
    ADD_FAILURE() << file.string() << " has " << lines.size() << " lines, one per seed (" << seeds << ") expected";
    return {};
  }
  return lines;
}

class SeededRuns : public ::testing::TestWithParam<unsigned> {};

TEST_P(SeededRuns, DecisionsAndStatusesMatchTheGoldenHashes) {
  const unsigned shard = GetParam();
  if (gpubank::testing::updating_golden_files()) {
    if (shard != 0) GTEST_SKIP() << "shard 0 rewrites the golden file";
    std::string all;
    for (unsigned seed = 0; seed < kSeeds; ++seed) all += golden_line(seed);
    gpubank::testing::write_golden_file(golden_file(), all);
    GTEST_SKIP() << "rewrote " << golden_file().string();
  }
  const std::vector<std::string> want = golden_lines(golden_file(), kSeeds);
  ASSERT_EQ(want.size(), kSeeds);
  for (unsigned seed = shard; seed < kSeeds; seed += kShards) {
    EXPECT_EQ(golden_line(seed), want[seed]) << "seed " << seed << " decides differently from " << golden_file().string();
  }
}

INSTANTIATE_TEST_SUITE_P(Shards, SeededRuns, ::testing::Range(0U, kShards));

std::string contended_golden_line(unsigned seed, bool reference_search = false) {
  Shape shape = Shape::contended_run(seed);
  shape.reference_search = reference_search;
  const RunResult r = SeededRun(shape, seed).run();
  char hash[17];
  std::snprintf(hash, sizeof hash, "%016llx", static_cast<unsigned long long>(r.hash));
  std::ostringstream line;
  line << "seed " << seed << (shape.lending ? " lending" : " no-lending")
       << (shape.borrow_within_cohort ? " borrow-within-cohort" : " no-borrow-within-cohort") << " finish-1-in-"
       << shape.finish_one_in << " decisions " << r.decisions << " admitted " << r.admitted << " preempted " << r.preempted
       << " hash " << hash << "\n";
  return line.str();
}

TEST(ContendedRuns, DecisionsAndStatusesMatchTheGoldenHashes) {
  const auto file = golden_file().parent_path() / "contended-runs.txt";
  if (gpubank::testing::updating_golden_files()) {
    std::string all;
    for (unsigned seed = 0; seed < kContendedSeeds; ++seed) all += contended_golden_line(seed);
    gpubank::testing::write_golden_file(file, all);
    GTEST_SKIP() << "rewrote " << file.string();
  }
  const std::vector<std::string> want = golden_lines(file, kContendedSeeds);
  ASSERT_EQ(want.size(), kContendedSeeds);
  for (unsigned seed = 0; seed < kContendedSeeds; ++seed) {
    const std::string got = contended_golden_line(seed);
    EXPECT_EQ(got, want[seed]) << "seed " << seed << " decides differently from " << file.string();
    EXPECT_EQ(got.find(" preempted 0 "), std::string::npos) << "seed " << seed << " preempts nothing: no contention";
  }
}

// The differential test of the core's fast paths (memo, shortcut, lazy and shared candidate
// orders, the flat-cohort search and its removal runs, cached DRS, the fair-sharing heaps):
// the same runs with CoreOptions::reference_search, which takes none of them, must match
// the golden hashes the fast core wrote, decision for decision. Every seed that preempts,
// classical and fair sharing, and every contended run.
class ReferenceSearch : public ::testing::TestWithParam<unsigned> {};

TEST_P(ReferenceSearch, PreemptingSeededRunsDecideAsTheFastCore) {
  if (gpubank::testing::updating_golden_files()) GTEST_SKIP() << "the golden file is being rewritten";
  const std::vector<std::string> want = golden_lines(golden_file(), kSeeds);
  ASSERT_EQ(want.size(), kSeeds);
  int runs = 0;
  for (unsigned seed = GetParam(); seed < kSeeds; seed += kShards) {
    if (!Shape(seed).preemption) continue;
    EXPECT_EQ(golden_line(seed, true), want[seed]) << "seed " << seed << ": the reference search decides otherwise";
    ++runs;
  }
  EXPECT_GT(runs, 0);
}

TEST_P(ReferenceSearch, ContendedRunsDecideAsTheFastCore) {
  if (gpubank::testing::updating_golden_files()) GTEST_SKIP() << "the golden file is being rewritten";
  const std::vector<std::string> want = golden_lines(golden_file().parent_path() / "contended-runs.txt", kContendedSeeds);
  ASSERT_EQ(want.size(), kContendedSeeds);
  for (unsigned seed = GetParam(); seed < kContendedSeeds; seed += kShards) {
    EXPECT_EQ(contended_golden_line(seed, true), want[seed]) << "seed " << seed << ": the reference search decides otherwise";
  }
}

INSTANTIATE_TEST_SUITE_P(Shards, ReferenceSearch, ::testing::Range(0U, kShards));

// Forgetting each workload as soon as it finishes changes no decision and no status of
// what has not finished: a finished workload is in none of the core's queues, lists or
// caches. Sixteen seeds, in which every bit of the shape takes both values.
TEST(SeededRunsForgetting, ForgettingFinishedWorkloadsChangesNoDecision) {
  for (unsigned i = 0; i < 16; ++i) {
    const unsigned seed = i * 4 + i % 4;
    const RunResult keeping = SeededRun(seed).run();
    const RunResult forgetting = SeededRun(seed, true).run();
    EXPECT_GT(forgetting.decisions, 0) << "seed " << seed;
    EXPECT_EQ(forgetting.decisions, keeping.decisions) << "seed " << seed;
    EXPECT_EQ(forgetting.decisions_hash, keeping.decisions_hash) << "seed " << seed;
    EXPECT_EQ(forgetting.unfinished_hash, keeping.unfinished_hash) << "seed " << seed;
  }
}

}  // namespace
}  // namespace gpubank::twin
