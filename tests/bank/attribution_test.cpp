// Who lends to whom: the attribution rule of bank/attribution.hpp, case by case.
#include "bank/attribution.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>

namespace gpubank::bank {
namespace {

using Kind = BorrowChange::Kind;

std::vector<PoolGroupQuota> pool_abc() {
  return {{"a", 16, std::nullopt, {}}, {"b", 8, std::nullopt, {}}, {"c", 0, std::nullopt, {}}};
}

std::int64_t total(const BorrowTracker& t, const std::string& borrower) {
  std::int64_t sum = 0;
  for (const auto& r : t.open()) sum += r.borrower == borrower ? r.gpus : 0;
  return sum;
}

TEST(Attribution, UseWithinTheGuaranteeBorrowsNothing) {
  BorrowTracker t("p");
  const auto changes = t.update(0, pool_abc(), {{"a/w1", "a", 16, 0, {}}, {"b/w2", "b", 4, 0, {}}});
  EXPECT_TRUE(changes.empty());
  EXPECT_TRUE(t.open().empty());
}

TEST(Attribution, OnlyThePartAboveTheGuaranteeIsBorrowedAndTheLenderWithMostIdleLends) {
  BorrowTracker t("p");
  // b uses 4 of its 8 first; then 12 more: 4 within the guarantee, 8 borrowed, all from a
  // (16 idle, more than b's... b is the borrower; c has nothing to lend).
  auto changes = t.update(0, pool_abc(), {{"b/w1", "b", 4, 0, {}}, {"b/w2", "b", 12, 1, {}}});
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].kind, Kind::Opened);
  EXPECT_EQ(changes[0].record.lender, "a");
  EXPECT_EQ(changes[0].record.borrower, "b");
  EXPECT_EQ(changes[0].record.workload, "b/w2");
  EXPECT_EQ(changes[0].record.gpus, 8);
  EXPECT_EQ(t.lent_by("a"), 8);
}

TEST(Attribution, ABorrowerWithTwoLendersGetsTwoRecords) {
  BorrowTracker t("p");
  // c has no guarantee: 20 GPUs borrowed; a lends 16 (most idle), then b 4.
  const auto changes = t.update(5, pool_abc(), {{"c/big", "c", 20, 5, {}}});
  ASSERT_EQ(changes.size(), 2u);
  EXPECT_EQ(changes[0].record.lender, "a");
  EXPECT_EQ(changes[0].record.gpus, 16);
  EXPECT_EQ(changes[1].record.lender, "b");
  EXPECT_EQ(changes[1].record.gpus, 4);
  EXPECT_EQ(changes[1].record.start, 5);
  EXPECT_EQ(total(t, "c"), 20);
}

TEST(Attribution, RecordsStayPutUntilTheLenderNeedsItsGpus) {
  BorrowTracker t("p");
  t.update(0, pool_abc(), {{"c/x", "c", 8, 0, {}}});  // from a (16 idle)
  ASSERT_EQ(t.open().at(0).lender, "a");
  // a now uses 12 of its 16: 4 idle, the record cannot keep 8 there. 4 stay, 4 move to b.
  const auto changes = t.update(10, pool_abc(), {{"c/x", "c", 8, 0, {}}, {"a/own", "a", 12, 10, {}}});
  ASSERT_EQ(changes.size(), 3u);
  EXPECT_EQ(changes[0].kind, Kind::Closed);
  EXPECT_EQ(changes[0].close_reason, "Reattributed");
  EXPECT_EQ(changes[0].record.gpus, 8);
  EXPECT_EQ(changes[1].kind, Kind::Opened);
  EXPECT_EQ(changes[1].record.lender, "a");
  EXPECT_EQ(changes[1].record.gpus, 4);
  EXPECT_EQ(changes[2].record.lender, "b");
  EXPECT_EQ(changes[2].record.gpus, 4);
  EXPECT_EQ(changes[2].record.start, 10);
  // Nothing changes when nothing changed.
  EXPECT_TRUE(t.update(11, pool_abc(), {{"c/x", "c", 8, 0, {}}, {"a/own", "a", 12, 10, {}}}).empty());
}

TEST(Attribution, ABorrowerBackWithinItsGuaranteeClosesWithinGuarantee) {
  BorrowTracker t("p");
  t.update(0, pool_abc(), {{"b/old", "b", 8, 0, {}}, {"b/new", "b", 4, 1, {}}});  // new borrows 4
  ASSERT_EQ(t.open().size(), 1u);
  const auto changes = t.update(7, pool_abc(), {{"b/new", "b", 4, 1, {}}}, {{"b/old", "Finished"}});
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].close_reason, "WithinGuarantee");
  EXPECT_TRUE(t.open().empty());
}

TEST(Attribution, EndedWorkloadsCloseWithTheirReason) {
  BorrowTracker t("p");
  t.update(0, pool_abc(), {{"c/x", "c", 4, 0, {}}});
  auto changes = t.update(3, pool_abc(), {}, {{"c/x", "Reclaimed"}});
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].close_reason, "Reclaimed");
  t.update(4, pool_abc(), {{"c/y", "c", 4, 4, {}}});
  changes = t.update(5, pool_abc(), {});
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].close_reason, "Ended");
}

TEST(Attribution, LendingLimitsAndTraitsDecideWhoLends) {
  BorrowTracker t("p");
  const std::vector<PoolGroupQuota> quotas{{"a", 16, 2, {"checkpointable"}}, {"b", 8, std::nullopt, {}}, {"c", 0, std::nullopt, {}}};
  // a lends at most 2, and prefers workloads that can checkpoint; b lends to anyone.
  auto changes = t.update(0, quotas, {{"c/ckpt", "c", 2, 0, {"checkpointable"}}, {"c/plain", "c", 8, 1, {}}});
  ASSERT_EQ(changes.size(), 2u);
  EXPECT_EQ(changes[0].record.workload, "c/ckpt");
  EXPECT_EQ(changes[0].record.lender, "a");
  EXPECT_EQ(changes[1].record.workload, "c/plain");
  EXPECT_EQ(changes[1].record.lender, "b");
  // More than anyone lends: the rest is the cohort's.
  changes = t.update(1, quotas, {{"c/ckpt", "c", 2, 0, {"checkpointable"}}, {"c/plain", "c", 8, 1, {}}, {"c/more", "c", 3, 2, {}}});
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].record.lender, cohort_lender("p"));
  EXPECT_EQ(changes[0].record.gpus, 3);
}

TEST(Attribution, ALenderWithOnlyPreemptNeverLendsToWorkWithoutItsTraits) {
  BorrowTracker t("p");
  // a has 16 idle GPUs but lends only to checkpointable work; b's 4 idle go to anyone.
  const std::vector<PoolGroupQuota> quotas{{"a", 16, std::nullopt, {"checkpointable"}}, {"b", 4, std::nullopt, {}},
                                           {"c", 0, std::nullopt, {}}};
  auto changes = t.update(0, quotas, {{"c/plain", "c", 8, 0, {"training"}}});
  ASSERT_EQ(changes.size(), 2u);
  EXPECT_EQ(changes[0].record.lender, "b");
  EXPECT_EQ(changes[0].record.gpus, 4);
  EXPECT_EQ(changes[1].record.lender, cohort_lender("p")) << "a turns it away";
  EXPECT_EQ(changes[1].record.gpus, 4);
  EXPECT_EQ(t.lent_by("a"), 0);
  // A checkpointable one borrows from a.
  changes = t.update(1, quotas, {{"c/plain", "c", 8, 0, {"training"}}, {"c/ckpt", "c", 4, 1, {"training", "checkpointable"}}});
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].record.lender, "a");
  EXPECT_TRUE(lends_to({}, {}));
  EXPECT_TRUE(lends_to({"batch", "checkpointable"}, {"training", "checkpointable"}));
  EXPECT_FALSE(lends_to({"batch", "checkpointable"}, {"training"}));
  // a's policy changes to lend only to batch work: its record for c/ckpt closes.
  const std::vector<PoolGroupQuota> batch_only{{"a", 16, std::nullopt, {"batch"}}, {"b", 4, std::nullopt, {}},
                                               {"c", 0, std::nullopt, {}}};
  changes = t.update(2, batch_only, {{"c/plain", "c", 8, 0, {"training"}}, {"c/ckpt", "c", 4, 1, {"training", "checkpointable"}}});
  ASSERT_EQ(changes.size(), 2u);
  EXPECT_EQ(changes[0].kind, Kind::Closed);
  EXPECT_EQ(changes[0].record.lender, "a");
  EXPECT_EQ(changes[0].close_reason, "Reattributed");
  EXPECT_EQ(changes[1].record.lender, cohort_lender("p"));
}

TEST(Attribution, AStoppedWorkloadsRecordsCloseBeforeItsUsageEnds) {
  BorrowTracker t("p");
  t.update(0, pool_abc(), {{"c/x", "c", 4, 0, {}}, {"c/y", "c", 2, 1, {}}});
  const auto closed = t.end_workload("c/x", "Reclaimed");
  ASSERT_EQ(closed.size(), 1u);
  EXPECT_EQ(closed[0].kind, Kind::Closed);
  EXPECT_EQ(closed[0].record.workload, "c/x");
  EXPECT_EQ(closed[0].close_reason, "Reclaimed");
  EXPECT_TRUE(t.end_workload("c/x", "Reclaimed").empty());
  // The next update has nothing of it left to close.
  EXPECT_TRUE(t.update(1, pool_abc(), {{"c/y", "c", 2, 1, {}}}, {{"c/x", "Reclaimed"}}).empty());
  EXPECT_EQ(total(t, "c"), 2);
}

// The reduced form of rule 1's answer (what the twin's engine passes): only the workloads
// that borrow, found from each group's newest admission back, and those that hold records.
// A tracker fed that must open and close exactly what a tracker fed every running workload
// does, through random arrivals, departures, ended reasons, limits and traits.
PoolUsage reduced_usage(const std::vector<PoolGroupQuota>& quotas, const std::vector<RunningWorkload>& running,
                        const BorrowTracker& tracker) {
  std::vector<const RunningWorkload*> newest_first;
  for (const auto& w : running) newest_first.push_back(&w);
  std::sort(newest_first.begin(), newest_first.end(),
            [](const RunningWorkload* a, const RunningWorkload* b) { return a->admitted_at > b->admitted_at; });
  PoolUsage usage;
  for (const auto& w : running) usage.used[w.group] += w.gpus;
  std::vector<Borrowing> kept;
  std::set<const RunningWorkload*> taken;
  for (const auto& q : quotas) {
    std::int64_t after = 0;
    for (const RunningWorkload* w : newest_first) {
      if (w->group != q.group) continue;
      const std::int64_t before = usage.used[q.group] - after - w->gpus;
      const std::int64_t b = w->gpus - std::clamp<std::int64_t>(q.guaranteed - before, 0, w->gpus);
      if (b <= 0) break;
      kept.push_back(Borrowing{w, b});
      taken.insert(w);
      after += w->gpus;
    }
  }
  for (const auto& r : tracker.open()) {
    for (const auto& w : running) {
      if (w.name == r.workload && taken.insert(&w).second) kept.push_back(Borrowing{&w, 0});
    }
  }
  std::sort(kept.begin(), kept.end(),
            [](const Borrowing& a, const Borrowing& b) { return a.workload->admitted_at < b.workload->admitted_at; });
  usage.borrowing = std::move(kept);
  return usage;
}

TEST(Attribution, BorrowersAndRecordHoldersAloneGiveTheSameRecords) {
  for (std::uint32_t seed = 1; seed <= 40; ++seed) {
    std::mt19937 rng(seed);
    const auto pick = [&rng](int n) { return static_cast<int>(rng() % static_cast<std::uint32_t>(n)); };
    const std::vector<std::string> groups{"a", "b", "c", "d"};
    const std::vector<std::vector<std::string>> trait_sets{{}, {"batch"}, {"training", "checkpointable"}};
    BorrowTracker full("p"), reduced("p");
    std::vector<RunningWorkload> running;
    std::int64_t admitted = 0, opened = 0;
    for (int step = 0; step < 300; ++step) {
      std::vector<PoolGroupQuota> quotas;
      for (std::size_t g = 0; g < groups.size(); ++g) {
        std::optional<std::int64_t> limit;
        if (pick(4) == 0) limit = pick(6);
        quotas.push_back(PoolGroupQuota{groups[g], static_cast<std::int64_t>(4 + 4 * g), limit,
                                        g == 1 ? std::vector<std::string>{"batch"} : std::vector<std::string>{}});
      }
      std::map<std::string, std::string> ended;
      const int departures = running.empty() ? 0 : pick(3);
      for (int k = 0; k < departures && !running.empty(); ++k) {
        const auto i = static_cast<std::size_t>(pick(static_cast<int>(running.size())));
        if (pick(2) == 0) ended[running[i].name] = "Finished";
        running.erase(running.begin() + static_cast<std::ptrdiff_t>(i));
      }
      for (int k = pick(3); k > 0; --k) {
        const std::string& g = groups[static_cast<std::size_t>(pick(4))];
        running.push_back(RunningWorkload{g + "/w" + std::to_string(admitted), g, 1 + pick(6), admitted,
                                          trait_sets[static_cast<std::size_t>(pick(3))]});
        ++admitted;
      }
      const auto a = full.update(step, quotas, running, ended);
      const auto b = reduced.update_from_usage(step, quotas, reduced_usage(quotas, running, reduced), ended);
      ASSERT_EQ(a.size(), b.size()) << "seed " << seed << " step " << step;
      for (std::size_t i = 0; i < a.size(); ++i) {
        EXPECT_EQ(a[i].kind, b[i].kind);
        EXPECT_EQ(a[i].record.id, b[i].record.id);
        EXPECT_EQ(a[i].record.lender, b[i].record.lender);
        EXPECT_EQ(a[i].record.workload, b[i].record.workload);
        EXPECT_EQ(a[i].record.gpus, b[i].record.gpus);
        EXPECT_EQ(a[i].close_reason, b[i].close_reason);
      }
      opened += static_cast<std::int64_t>(std::count_if(a.begin(), a.end(), [](const BorrowChange& c) { return c.kind == Kind::Opened; }));
    }
    EXPECT_GT(opened, 20) << "seed " << seed << ": the run borrowed too little to compare anything";
  }
}

}  // namespace
}  // namespace gpubank::bank
