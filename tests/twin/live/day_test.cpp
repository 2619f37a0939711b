// The seeded day behind `gpubank up`: deterministic, shaped by the policies, and it runs.
#include <gtest/gtest.h>

#include <set>

#include "policy/policy_set.hpp"
#include "twin/cluster/inventory.hpp"
#include "support/paths.hpp"
#include "twin/live/day.hpp"
#include "twin/live/platform.hpp"

namespace gpubank::twin::live {
namespace {

policy::PolicySet example_policies() {
  return policy::load_policy_set({testing::source_dir() + "/examples/policies"});
}

DayOptions options(std::uint64_t seed) {
  DayOptions o;
  o.seed = seed;
  o.start = *parse_rfc3339("2026-11-30T16:00:00Z");  // 00:00 on Tuesday 1 December in Asia/Shanghai
  return o;
}

TEST(Day, RunsToTheEndOfTheDay) {
  DayOptions o = options(1);
  o.serving_load = 0.1;  // a tenth of the requests: a whole day of full load is minutes under the sanitizers
  auto created = Platform::create(example_policies(), o);
  ASSERT_TRUE(created) << created.error();
  auto& p = *created.value();
  ASSERT_TRUE(p.advance_to(p.end())) << p.error();
  EXPECT_EQ(p.now(), 24 * 3'600'000);
  // The day's requests: the curve's 24 factors sum to 15.7 peak hours. With the autoscaler
  // deciding replicas the peak is 1.45 x maxReplicas = 11.6 replica capacities (above the
  // largest floor, 6), here at a tenth: customer-service-llm (3.7436/s a replica) gets
  // 0.1 x 15.7 x 3,600 x 11.6 x 3.7436 = 245,446 expected (Poisson: sd 495) and the
  // embeddings (an embed service: 418.63/s a replica, half its full steps) 0.1 x 15.7 x
  // 3,600 x 11.6 x 418.63 = 27,443,066 (sd 5,239). The linear ramp between the hours keeps
  // a whole day's total exactly.
  const auto stats = p.serving().stats();
  ASSERT_EQ(stats.size(), 2u);
  EXPECT_NEAR(stats[0].expected_requests, 245'446, 30);
  EXPECT_NEAR(static_cast<double>(stats[0].snapshot.arrived), stats[0].expected_requests, 4 * 495);
  EXPECT_NEAR(stats[1].expected_requests, 27'443'066, 30);
  EXPECT_NEAR(static_cast<double>(stats[1].snapshot.arrived), stats[1].expected_requests, 4 * 5'239);
  for (const auto& s : stats) {
    std::cout << s.policy << ": " << s.snapshot.arrived << " requests, " << s.snapshot.finished << " finished, "
              << s.snapshot.aborted << " cut, " << s.snapshot.rejected << " rejected, TTFT p95 (last 5 min) "
              << s.ttft_p95_s.value_or(-1) << " s at 24:00\n";
  }
}

// The first 9 hours: the night, the training, and the daytime replicas loading (8:00) and
// serving (8:30 on); a whole day of serving costs long under the sanitizers.
std::string event_log(std::uint64_t seed) {
  Diagnostics d;
  auto inventory = cluster::load_inventory(testing::source_dir() + "/examples/inventory/example.yaml", d);
  run::RunOptions run;
  run.inventory = std::make_shared<const cluster::Inventory>(std::move(*inventory));
  DayOptions o = options(seed);
  o.hours = 9;
  o.serving_load = 0.05;  // the event log is the engine's; serving is measured elsewhere
  auto created = Platform::create(example_policies(), o, run);
  if (!created) return created.error();
  auto& p = *created.value();
  p.advance_to(p.end());
  std::string out;
  for (const auto& e : p.result().events) out += run::event_json(e, p.start()).dump() + "\n";
  return out;
}

TEST(Day, SameSeedSameEventLogByteForByte) {
  const std::string a = event_log(7);
  EXPECT_EQ(a, event_log(7));
  EXPECT_NE(a, event_log(8));
  EXPECT_NE(a.find("\"kind\":\"Placed\""), std::string::npos);
}

TEST(Day, ServingFollowsTheTidalFloorAndTrainingArrives) {
  Diagnostics d;
  // With the autoscaler (the default) the day holds no replica workloads: the controller
  // creates them as it goes.
  for (const auto& w : make_day(example_policies(), options(1), d).workloads) {
    EXPECT_NE(w.workload_type, policy::WorkloadType::Inference) << w.name;
  }
  DayOptions planned = options(1);
  planned.serving_control = DayOptions::ServingControl::Planned;
  const auto day = make_day(example_policies(), planned, d);
  ASSERT_FALSE(has_errors(d));
  // customer-service-llm: minReplicas 1 all day; virtual time 0 is 00:00 in Shanghai, so
  // the daytime window (08:30-20:00 Shanghai) is 8.5 h to 20 h of virtual time and raises
  // the floor to 6: replicas 2..6 arrive 30 min (prewarmBefore) ahead, at 8 h, and are
  // deleted at 20 h.
  int all_day = 0, daytime = 0;
  for (const auto& w : day.workloads) {
    if (w.name.rfind("customer-service-llm-r", 0) != 0) continue;
    EXPECT_EQ(w.gpus, 4);
    EXPECT_EQ(w.workload_type, policy::WorkloadType::Inference);
    if (!w.delete_time) {
      ++all_day;
    } else {
      ++daytime;
      EXPECT_EQ(w.arrival_time.milliseconds(), 8 * 3'600'000);
      EXPECT_EQ(w.delete_time->milliseconds(), 20 * 3'600'000);
    }
  }
  EXPECT_EQ(all_day, 1);
  EXPECT_EQ(daytime, 5);
  int training = 0, night_on_inference = 0, notebooks = 0;
  for (const auto& w : day.workloads) {
    if (w.workload_type == policy::WorkloadType::Training && w.resource_pool == "h100-rdma-training") ++training;
    if (w.workload_type == policy::WorkloadType::Training && w.resource_pool == "h100-inference") {
      ++night_on_inference;
      // In a night window, until an hour before it ends: the one open since 20:00 the
      // evening before and ending at 07:30 (7.5 h of virtual time, so until 6.5 h), or the
      // one opening at 20 h.
      const auto t = w.arrival_time.milliseconds();
      EXPECT_TRUE(t < 6 * 3'600'000 + 1'800'000 || t >= 20 * 3'600'000) << w.name << " arrives at " << t;
    }
    if (w.workload_type == policy::WorkloadType::Notebook) ++notebooks;
  }
  EXPECT_GT(training, 0);
  EXPECT_GT(night_on_inference, 0);
  EXPECT_EQ(notebooks, 4 + 4 + 8);  // guaranteed/2 per group on the MIG pool: 8, 8, 16
  // Sorted by arrival, names unique.
  std::set<std::string> names;
  for (std::size_t i = 0; i < day.workloads.size(); ++i) {
    EXPECT_TRUE(names.insert(day.workloads[i].name).second);
    if (i > 0) {
      EXPECT_LE(day.workloads[i - 1].arrival_time, day.workloads[i].arrival_time);
    }
  }
}

}  // namespace
}  // namespace gpubank::twin::live
