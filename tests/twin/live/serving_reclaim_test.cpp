// `gpubank twin serving`'s day (the example policies and cluster, the autoscaler and the
// tidal controller, 32 hours from Tuesday 00:00 in Shanghai) over seeds 1 to 5: a training
// gang admitted on quota borrowed from customer-service that cannot be placed gives it
// back (waitForPodsReady as gpubank renders it, and the bank's reclaim taking Placing
// borrowers first), so the LLM service meets its SLO on every seed about as on seed 1.
// One ctest case per seed (they run in parallel); each is one day of the twin: about 35
// minutes of wall time per seed under ASan on the shared 2-core machine where it was
// measured (two seeds at once among ~16 other compile jobs, ~3 min of CPU each).
#include <gtest/gtest.h>

#include <map>

#include "core/timestamp.hpp"
#include "policy/policy_set.hpp"
#include "render/kueue.hpp"
#include "support/paths.hpp"
#include "twin/cluster/inventory.hpp"
#include "twin/live/serving_report.hpp"

namespace gpubank::twin::live {
namespace {

// customer-service-llm's TTFT SLO attainment on seed 1 (docs/serving.md's table): 1871/1920
// before waitForPodsReady and the Placing reclaim, 1880/1920 with them, 1882/1920 since each
// pool's Cohort holds the GPUs no group is guaranteed, 1898/1920 since the seeded load ramps
// between the hours (issue 33; measured by scripts/bench-serving.sh in the release build).
constexpr double kSeedOneAttainment = 1898.0 / 1920.0;

class ServingDayReclaim : public ::testing::TestWithParam<std::uint64_t> {};

TEST_P(ServingDayReclaim, NoBorrowerHoldsQuotaUnplacedPastTheTimeoutAndTheSloHolds) {
  Diagnostics d;
  auto inventory = cluster::load_inventory(testing::source_dir() + "/examples/inventory/example.yaml", d);
  ASSERT_TRUE(inventory.has_value());
  const policy::PolicySet policies = policy::load_policy_set({testing::source_dir() + "/examples/policies"});
  DayOptions day;
  day.seed = GetParam();
  day.start = *parse_rfc3339("2026-11-30T16:00:00Z");
  day.hours = 32;
  day.serving_control = DayOptions::ServingControl::Autoscaler;
  std::vector<run::Event> events;
  const auto outcomes =
      run_serving_day(policies, day, std::make_shared<const cluster::Inventory>(std::move(*inventory)), {}, &events);
  ASSERT_TRUE(outcomes) << outcomes.error();

  // From each admission to the workload's pods on nodes (or its quota given back): at most
  // the PodsReady timeout.
  constexpr std::int64_t kTimeout = render::kPodsReadyTimeoutSeconds * 1000;
  const std::int64_t end = day.hours * 3'600'000;
  std::map<std::string, std::int64_t> placing;  // workload -> admitted at
  std::int64_t longest = 0, evicted = 0;
  std::string longest_of;
  auto settle = [&](const std::string& object, std::int64_t t) {
    const auto it = placing.find(object);
    if (it == placing.end()) return;
    if (t - it->second > longest) {
      longest = t - it->second;
      longest_of = object;
    }
    placing.erase(it);
  };
  for (const auto& e : events) {
    if (e.object.rfind("Workload/", 0) != 0) continue;
    if (e.kind == "Admitted") {
      placing[e.object] = e.t;
    } else if (e.kind == "Placed" || e.kind == "Evicted" || e.kind == "Deactivated" ||
               e.kind == "ReclaimVictimStopped" || e.kind == "Preempted" || e.kind == "Deleted") {
      evicted += e.kind == "Evicted" ? 1 : 0;
      settle(e.object, e.t);
    }
  }
  for (const auto& [object, t] : std::map<std::string, std::int64_t>(placing)) settle(object, end);
  EXPECT_LE(longest, kTimeout) << longest_of << " held its quota unplaced for " << longest / 1000 << " s";

  const ServingOutcome* llm = nullptr;
  for (const auto& o : *outcomes) {
    if (o.policy == "customer-service-llm") llm = &o;
  }
  ASSERT_NE(llm, nullptr);
  EXPECT_GE(llm->attainment(), kSeedOneAttainment - 0.02)
      << "seed " << GetParam() << ": " << llm->minutes_within << "/" << llm->minutes << " minutes within the SLO ("
      << evicted << " PodsReady evictions)";
  if (GetParam() == 1) {
    EXPECT_NEAR(llm->attainment(), kSeedOneAttainment, 1e-9);  // the docs' figure
  }
}

INSTANTIATE_TEST_SUITE_P(Seeds, ServingDayReclaim, ::testing::Values(1, 2, 3, 4, 5));

}  // namespace
}  // namespace gpubank::twin::live
