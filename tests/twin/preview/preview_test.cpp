// The impact preview (twin/preview): the same work under two policy sets. A proposal equal
// to the policies in force differs in nothing (the runs share every seed); a tighter
// borrowing limit shows where it bites; a proposal that breaks a guardrail is refused with
// the rule before anything runs; the seeded day (with serving) compares SLO attainment.
#include "twin/preview/preview.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "support/paths.hpp"
#include "support/policy_fixture.hpp"
#include "twin/cluster/inventory.hpp"

namespace gpubank::twin::preview {
namespace {

using gpubank::testing::examples_dir;

// The examples with `old_text` of 10-quotas.yaml replaced, as a proposal.
policy::PolicySet examples_with(const std::string& old_text, const std::string& new_text) {
  std::ifstream in(examples_dir() + "/policies/10-quotas.yaml");
  std::string quotas((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto at = quotas.find(old_text);
  EXPECT_NE(at, std::string::npos) << old_text;
  if (at != std::string::npos) quotas.replace(at, old_text.size(), new_text);
  // The changed quotas file beside the others, read as files are.
  const std::string dir = ::testing::TempDir() + "/gpubank-preview-proposal";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  for (const auto& entry : std::filesystem::directory_iterator(examples_dir() + "/policies")) {
    std::filesystem::copy_file(entry.path(), dir + "/" + entry.path().filename().string());
  }
  std::ofstream(dir + "/10-quotas.yaml", std::ios::trunc) << quotas;
  return policy::load_policy_set({dir});
}

Work scenario_work() {
  Work w;
  Diagnostics d;
  auto scenario = run::load_scenario(examples_dir() + "/scenarios/lend-and-reclaim.yaml", d);
  EXPECT_TRUE(scenario);
  w.scenario = std::move(*scenario);
  w.scenario_name = "scenario lend-and-reclaim";
  auto inventory = cluster::load_inventory(examples_dir() + "/inventory/example.yaml", d);
  EXPECT_TRUE(inventory);
  w.inventory = std::make_shared<const cluster::Inventory>(std::move(*inventory));
  return w;
}

const std::string kAdsQuota = "  guaranteed: 16\n  borrowLimit: 16\n  maxCapacity: 32\n";

TEST(Preview, TheSamePoliciesDifferInNothing) {
  const policy::PolicySet current = policy::load_policy_set({examples_dir() + "/policies"});
  auto p = run_preview(current, current, scenario_work());
  ASSERT_TRUE(p) << p.error();
  EXPECT_FALSE(p->refused);
  EXPECT_TRUE(p->changes.empty());
  EXPECT_EQ(p->current_version, p->proposed_version);
  ASSERT_FALSE(p->rows.empty());
  bool some_work = false;
  for (const Row& r : p->rows) {
    ASSERT_TRUE(r.current && r.proposed) << r.business_group << "@" << r.pool;
    some_work |= r.current->used_gpu_hours > 0;
    EXPECT_EQ(r.current->used_gpu_hours, r.proposed->used_gpu_hours);
    EXPECT_EQ(r.current->wait_p99_ms, r.proposed->wait_p99_ms);
    EXPECT_EQ(r.current->reclaims, r.proposed->reclaims);
  }
  EXPECT_TRUE(some_work);
  // Byte-identical output for the same inputs.
  auto again = run_preview(current, current, scenario_work());
  ASSERT_TRUE(again);
  EXPECT_EQ(to_json(*p).dump(), to_json(*again).dump());
}

TEST(Preview, ATighterBorrowingLimitShowsWhereItBites) {
  const policy::PolicySet current = policy::load_policy_set({examples_dir() + "/policies"});
  const policy::PolicySet proposed = examples_with(kAdsQuota, "  guaranteed: 16\n  borrowLimit: 0\n  maxCapacity: 16\n");
  auto p = run_preview(current, proposed, scenario_work());
  ASSERT_TRUE(p) << p.error();
  ASSERT_FALSE(p->refused) << to_text(*p);
  ASSERT_EQ(p->changes.size(), 1u);
  EXPECT_EQ(p->changes[0].object, "GPUQuotaPolicy/ads-training-h100");
  EXPECT_EQ(p->changes[0].change, "changed");
  const Row* ads = nullptr;
  for (const Row& r : p->rows) {
    if (r.business_group == "ads" && r.pool == "h100-rdma-training") ads = &r;
  }
  ASSERT_NE(ads, nullptr);
  ASSERT_TRUE(ads->current && ads->proposed);
  // The scenario has ads borrowing 16 GPUs: with no borrowing it borrows nothing and waits.
  EXPECT_GT(ads->current->borrowed_gpu_hours, 0);
  EXPECT_EQ(ads->proposed->borrowed_gpu_hours, 0);
  EXPECT_GT(ads->proposed->wait_p99_ms, ads->current->wait_p99_ms);
  const auto j = to_json(*p);
  bool found = false;
  for (const auto& g : j["groups"]) {
    if (g["businessGroup"] == "ads" && g["pool"] == "h100-rdma-training") {
      found = true;
      EXPECT_LT(g["difference"]["borrowedGpuHours"].get<double>(), 0);
    }
  }
  EXPECT_TRUE(found);
}

TEST(Preview, AProposalOutsideTheGuardrailsIsRefusedBeforeAnythingRuns) {
  const policy::PolicySet current = policy::load_policy_set({examples_dir() + "/policies"});
  const policy::PolicySet proposed = examples_with(kAdsQuota, "  guaranteed: 16\n  borrowLimit: 24\n  maxCapacity: 40\n");
  auto p = run_preview(current, proposed, scenario_work());
  ASSERT_TRUE(p) << p.error();
  EXPECT_TRUE(p->refused);
  EXPECT_TRUE(p->rows.empty());
  EXPECT_TRUE(gpubank::testing::has_rule(p->findings, "quota.max-capacity-outside-guardrail")) << to_text(*p);
  EXPECT_NE(to_text(*p).find("the proposal is refused"), std::string::npos);
  EXPECT_EQ(to_json(*p)["refused"], true);
}

TEST(Preview, TheSeededDayComparesServingToo) {
  const policy::PolicySet current = policy::load_policy_set({examples_dir() + "/policies"});
  Work w = scenario_work();
  w.scenario.reset();
  w.day.start = *parse_rfc3339("2026-11-30T16:00:00Z");
  w.day.hours = 3;
  w.day.serving_load = 0.05;
  auto p = run_preview(current, current, w);
  ASSERT_TRUE(p) << p.error();
  EXPECT_EQ(p->work, "seeded day (seed 1, 3 h, serving: every request)");
  ASSERT_FALSE(p->services.empty());
  for (const ServiceRow& s : p->services) {
    EXPECT_EQ(s.current_attainment, s.proposed_attainment) << s.policy;
    EXPECT_EQ(s.current_gpu_hours, s.proposed_gpu_hours) << s.policy;
    EXPECT_GT(s.current_gpu_hours, 0) << s.policy;
  }
}

}  // namespace
}  // namespace gpubank::twin::preview
