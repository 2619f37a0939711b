// A start of `gpubank up` applies what the policy desk holds in force but the run never took
// (a stop between the desk's record and the journal, or a new --data-dir beside an old
// --auth-store): each such proposal once, in the desk's order, journalled; what the run
// refuses says why; a second start finds nothing to do.
#include "api/desk_reconcile.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>

#include "core/timestamp.hpp"
#include "policy/policy_set.hpp"
#include "support/paths.hpp"
#include "twin/cluster/inventory.hpp"

namespace gpubank::api {
namespace {

namespace fs = std::filesystem;

constexpr std::int64_t kDeskNow = 1'796'000'000'000;

const std::string kAdsLess = R"(apiVersion: platform.gpubank.dev/v1alpha1
kind: GPUQuotaPolicy
metadata: {name: ads-training-h100}
spec:
  businessGroup: ads
  resourcePool: h100-rdma-training
  guaranteed: 8
  borrowLimit: 8
  maxCapacity: 16
  reclaimPolicy: {gracePeriod: 5m, onlyPreempt: [checkpointable]}
)";

// The example TidalPolicy with another prewarm: a kind the running day cannot change.
std::string tidal_with_other_prewarm() {
  std::ifstream in(testing::source_dir() + "/examples/policies/30-tidal.yaml");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (const auto dash = text.find("\n---"); dash != std::string::npos) text.resize(dash);
  return std::regex_replace(text, std::regex("prewarmBefore: [0-9a-z]+"), "prewarmBefore: 7m");
}

TEST(DeskReconcile, WhatTheDeskHoldsButTheRunNeverTookIsAppliedOnceInTheDesksOrder) {
  std::string pattern = (fs::temp_directory_path() / "gpubank-reconcile-XXXXXX").string();
  ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
  const fs::path dir = pattern;
  const policy::PolicySet policies = policy::load_policy_set({testing::source_dir() + "/examples/policies"});
  auto desk = proposals::Desk::open((dir / "auth.db").string(), policies.policies_only());
  ASSERT_TRUE(desk) << desk.error();
  const auth::Principal admin{"pat", auth::Role::PlatformAdmin, "", "t-1"};
  // Both in force at once (a platform-admin never waits): the quota first, then the tidal policy.
  auto quota = (*desk)->submit(admin, kAdsLess, "smaller", kDeskNow);
  ASSERT_TRUE(quota) << quota.error();
  ASSERT_EQ(quota->proposal.state, proposals::State::Applied);
  auto tidal = (*desk)->submit(admin, tidal_with_other_prewarm(), "earlier", kDeskNow + 1000);
  ASSERT_TRUE(tidal) << tidal.error();
  ASSERT_EQ(tidal->proposal.state, proposals::State::Applied);
  auto view = (*desk)->view();
  ASSERT_TRUE(view) << view.error();

  Diagnostics d;
  auto inventory = twin::cluster::load_inventory(testing::source_dir() + "/examples/inventory/example.yaml", d);
  ASSERT_TRUE(inventory);
  twin::run::RunOptions run;
  run.inventory = std::make_shared<const twin::cluster::Inventory>(std::move(*inventory));
  twin::live::DayOptions day;
  day.hours = 1;
  day.serving_load = 0.05;
  day.start = *parse_rfc3339("2026-11-30T16:00:00Z");
  auto platform = twin::live::Platform::create(policy::load_policy_set({testing::source_dir() + "/examples/policies"}),
                                               day, run);
  ASSERT_TRUE(platform) << platform.error();
  twin::live::Platform& p = **platform;
  std::vector<twin::live::Intervention> journal;
  p.set_journal([&](twin::live::Intervention& i) {
    i.seq = static_cast<std::int64_t>(journal.size()) + 1;
    journal.push_back(i);
    return Expected<bool>(true);
  });
  ASSERT_TRUE(p.advance_to(600'000)) << p.error();

  const auto first = reconcile_desk(p, view->proposals, {}, "gpubank-up/pat");
  ASSERT_EQ(first.size(), 2u);
  EXPECT_EQ(first[0].id, quota->proposal.id);
  EXPECT_EQ(first[0].object, "GPUQuotaPolicy/ads-training-h100");
  EXPECT_TRUE(first[0].applied) << first[0].reason;
  EXPECT_EQ(first[1].id, tidal->proposal.id);
  EXPECT_TRUE(first[1].object.starts_with("TidalPolicy/")) << first[1].object;
  EXPECT_FALSE(first[1].applied);
  EXPECT_NE(first[1].reason.find("applies at the next start"), std::string::npos) << first[1].reason;
  // Both journalled (the refusal too, so a replay refuses it again), the quota in force.
  ASSERT_EQ(journal.size(), 2u);
  EXPECT_EQ(p.applied_proposals(), std::vector<std::string>{quota->proposal.id});
  bool changed = false;
  for (const twin::run::Event& e : p.events()) changed |= e.kind == "QuotaChanged" && e.object == "GPUQuotaPolicy/ads-training-h100";
  EXPECT_TRUE(changed);
  bool audited = false;
  for (const bank::AuditEntry& e : p.audit()) audited |= e.actor == "gpubank-up/pat";
  EXPECT_TRUE(audited);

  // The next start has them in its journal: nothing to do.
  EXPECT_TRUE(reconcile_desk(p, view->proposals, journal, "gpubank-up/pat").empty());
  // Neither a pending nor a rejected proposal is ever applied.
  const auth::Principal ads_admin{"ada", auth::Role::GroupAdmin, "ads", "t-2"};
  std::string more = kAdsLess;
  more.replace(more.find("guaranteed: 8"), 13, "guaranteed: 24");
  auto pending = (*desk)->submit(ads_admin, more, "more", kDeskNow + 2000);
  ASSERT_TRUE(pending) << pending.error();
  ASSERT_EQ(pending->proposal.state, proposals::State::Pending);
  view = (*desk)->view();
  ASSERT_TRUE(view);
  EXPECT_TRUE(reconcile_desk(p, view->proposals, journal, "gpubank-up/pat").empty());
  fs::remove_all(dir);
}

}  // namespace
}  // namespace gpubank::api
