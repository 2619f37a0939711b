// The cluster's recorded work as the impact preview replays it (twin/preview/recorded_work):
// the window's arrivals and run times, work already running at its start, pending work with
// its group's median, unknown priority classes dropped, records read back from a real
// SQLite store (a malformed one refused naming its seq), and a replay that runs and counts
// the recorded workloads.
#include "twin/preview/recorded_work.hpp"

#include <gtest/gtest.h>

#include "store/store.hpp"
#include "support/paths.hpp"
#include "support/policy_fixture.hpp"
#include "support/promtool.hpp"  // ScratchDir
#include "twin/cluster/inventory.hpp"
#include "twin/preview/preview.hpp"

namespace gpubank::twin::preview {
namespace {

constexpr std::int64_t kHour = 3'600'000;
constexpr std::int64_t kFrom = 1'800'000'000'000;  // the window's start
constexpr std::int64_t kTo = kFrom + 6 * kHour;

WorkloadRecord rec(const std::string& key, const std::string& group, std::int64_t created, std::int64_t started,
                   std::int64_t finished, std::int64_t pods = 1, std::int64_t gpus = 8) {
  WorkloadRecord r;
  r.key = key;
  r.business_group = group;
  r.pool = "h100-rdma-training";
  r.pods = pods;
  r.gpus_per_pod = gpus;
  r.workload_type = "training";
  r.priority_class = "batch-low";
  r.created_ms = created;
  r.started_ms = started;
  r.finished_ms = finished;
  return r;
}

const run::ScenarioWorkload* find_workload(const run::Scenario& s, const std::string& name) {
  for (const auto& w : s.workloads) {
    if (w.name == name) return &w;
  }
  return nullptr;
}

TEST(RecordedWork, TheWindowsWorkIsReplayedWithItsArrivalsAndRunTimes) {
  const std::vector<WorkloadRecord> records{
      rec("research/before", "research", kFrom - 3 * kHour, kFrom - 3 * kHour, kFrom - kHour),      // over before
      rec("research/across", "research", kFrom - kHour, kFrom - kHour, kFrom + 2 * kHour),          // running at the start
      rec("research/inside", "research", kFrom + kHour, kFrom + kHour + 600'000, kFrom + 3 * kHour, 2, 4),
      rec("ads/late", "ads", kTo + 1, kTo + 2, kTo + kHour),                                        // after the window
      rec("ads/never", "ads", kFrom + kHour, 0, kFrom + 2 * kHour),                                 // never held quota
  };
  WorkloadRecord pending = rec("research/waiting", "research", kFrom + 5 * kHour, 0, 0);
  WorkloadRecord running = rec("ads/now", "ads", kFrom + 4 * kHour, kFrom + 4 * kHour, 0);
  running.priority_class = "no-such-class";
  const run::Scenario s = replay_scenario(records, {pending, running}, kFrom, kTo, {"batch-low"});
  ASSERT_TRUE(s.start);
  EXPECT_EQ(std::chrono::duration_cast<std::chrono::milliseconds>(s.start->time_since_epoch()).count(), kFrom);
  ASSERT_EQ(s.workloads.size(), 4U);
  EXPECT_EQ(find_workload(s, "research-before"), nullptr);
  EXPECT_EQ(find_workload(s, "ads-late"), nullptr);
  EXPECT_EQ(find_workload(s, "ads-never"), nullptr);

  const auto* across = find_workload(s, "research-across");
  ASSERT_NE(across, nullptr);
  EXPECT_EQ(across->arrival_time.milliseconds(), 0);
  EXPECT_EQ(across->run_time.milliseconds(), 2 * kHour);  // what was left at the window's start

  const auto* inside = find_workload(s, "research-inside");
  ASSERT_NE(inside, nullptr);
  EXPECT_EQ(inside->arrival_time.milliseconds(), kHour);
  EXPECT_EQ(inside->run_time.milliseconds(), 2 * kHour - 600'000);
  EXPECT_EQ(inside->pods, 2);
  EXPECT_EQ(inside->gpus, 4);
  EXPECT_EQ(inside->priority_class, "batch-low");
  EXPECT_EQ(inside->workload_type, policy::WorkloadType::Training);

  // Pending: its group's median recorded run time in the window (3 h and 1 h 50 m: the
  // upper middle of two is 3 h).
  const auto* waiting = find_workload(s, "research-waiting");
  ASSERT_NE(waiting, nullptr);
  EXPECT_EQ(waiting->arrival_time.milliseconds(), 5 * kHour);
  EXPECT_EQ(waiting->run_time.milliseconds(), 3 * kHour);
  // Running now: until the window's end; an unknown class is left out.
  const auto* now = find_workload(s, "ads-now");
  ASSERT_NE(now, nullptr);
  EXPECT_EQ(now->run_time.milliseconds(), 2 * kHour);
  EXPECT_EQ(now->priority_class, "");

  // The same input, the same scenario, in arrival order.
  const run::Scenario again = replay_scenario(records, {pending, running}, kFrom, kTo, {"batch-low"});
  ASSERT_EQ(again.workloads.size(), s.workloads.size());
  for (std::size_t i = 0; i < s.workloads.size(); ++i) EXPECT_EQ(again.workloads[i].name, s.workloads[i].name);
  EXPECT_EQ(s.workloads.front().name, "research-across");
}

TEST(RecordedWork, RecordsRoundTripThroughTheStoreAndABadOneIsRefused) {
  gpubank::testing::ScratchDir dir;
  const std::string location = (dir.path() / "gpubank.db").string();
  auto store = store::Store::open(location);
  ASSERT_TRUE(store.ok()) << store.error();
  const WorkloadRecord r = rec("research/inside", "research", kFrom, kFrom + 1000, kFrom + kHour, 2, 4);
  std::vector<bank::AuditEntry> entries{audit_entry(r, "gpubank-controller/a", kFrom + kHour)};
  ASSERT_TRUE((*store)->append({}, entries));
  std::vector<WorkloadRecord> read;
  std::int64_t seq = 0;
  ASSERT_TRUE(read_records(**store, seq, read));
  ASSERT_EQ(read.size(), 1U);
  EXPECT_EQ(to_json(read[0]), to_json(r));
  EXPECT_EQ(read[0].id(), "research/inside@" + std::to_string(kFrom));

  // A record that does not read: refused, naming its seq and the field.
  bank::AuditEntry bad = audit_entry(r, "x", kFrom + kHour);
  nlohmann::json numbers = to_json(r);
  numbers["gpusPerPod"] = "eight";
  bad.numbers = numbers.dump();
  ASSERT_TRUE((*store)->append({}, std::vector<bank::AuditEntry>{bad}));
  auto refused = read_records(**store, seq, read);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().find("gpusPerPod"), std::string::npos) << refused.error();
  EXPECT_NE(refused.error().find("seq 2"), std::string::npos) << refused.error();

  for (auto [field, value] : std::vector<std::pair<std::string, nlohmann::json>>{
           {"workload", "no-namespace"}, {"pods", 0}, {"startedMs", kFrom - 1}, {"checkpointable", "yes"}}) {
    nlohmann::json j = to_json(r);
    j[field] = value;
    EXPECT_FALSE(record_from_json(j)) << field;
  }
}

TEST(RecordedWork, AReplayRunsUnderBothSetsAndCountsTheRecordedWork) {
  const policy::PolicySet current = policy::load_policy_set({gpubank::testing::examples_dir() + "/policies"});
  Diagnostics diagnostics;
  auto inventory = cluster::load_inventory(gpubank::testing::examples_dir() + "/inventory/example.yaml", diagnostics);
  ASSERT_TRUE(inventory);
  Work work;
  work.inventory = std::make_shared<const cluster::Inventory>(std::move(*inventory));
  work.scenario = replay_scenario({rec("research/a", "research", kFrom, kFrom, kFrom + kHour),
                                   rec("research/b", "research", kFrom + 60'000, kFrom + 60'000, kFrom + 2 * kHour)},
                                  {}, kFrom, kTo, priority_classes(current));
  work.scenario_name = "recorded";
  auto preview = run_preview(current, current, work);
  ASSERT_TRUE(preview) << preview.error();
  ASSERT_FALSE(preview->refused);
  bool research = false;
  for (const Row& row : preview->rows) {
    if (row.business_group != "research" || row.pool != "h100-rdma-training") continue;
    research = true;
    ASSERT_TRUE(row.current && row.proposed);
    EXPECT_EQ(row.current->workloads, 2);
    EXPECT_EQ(row.current->admitted, 2);
    EXPECT_NEAR(row.current->used_gpu_hours, 8.0 * 3.0, 0.5);  // 8 GPUs for 1 h and for 2 h
    EXPECT_EQ(row.proposed->used_gpu_hours, row.current->used_gpu_hours);
  }
  EXPECT_TRUE(research);
}

}  // namespace
}  // namespace gpubank::twin::preview
