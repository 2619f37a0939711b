// The alert lifecycle through every transition, on the examples' training-default (notify
// the owner, escalate to business-group-admin after 2h, repeat every 6h; window 60m).
#include "governance/alerts.hpp"

#include <gtest/gtest.h>

#include "support/policy_fixture.hpp"

namespace gpubank::governance {
namespace {

constexpr std::int64_t kHour = 3'600'000;
constexpr std::int64_t kT0 = 1'764'000'000'000;

struct Fixture {
  std::vector<ScanPolicy> policies = scan_policies(gpubank::testing::examples_plus());
  std::map<std::string, Alert, std::less<>> open;
  std::map<std::string, std::int64_t, std::less<>> last_ids;

  Observed observe(double gpu, double borrowed = 0, std::string uid = "uid-a") const {
    WorkloadFacts w;
    w.workload_uid = std::move(uid);
    w.business_group = "search";
    w.owner_id = "u1";
    w.namespace_name = "search";
    w.workload_kind = "PyTorchJob";
    w.workload = "ranker";
    w.workload_type = "training";
    w.pool = "h100-rdma-training";
    w.gpus = 4;
    w.started_s = static_cast<double>(kT0 - 10 * kHour) / 1000.0;
    w.gpu_utilization = gpu;
    w.memory_utilization = 1;
    w.group_borrowed_gpus = borrowed;
    Verdict v = assess(w, policies, kT0);
    return {w, v};
  }
  // Steps and records every transition (as if every notice was delivered).
  ScanResult scan(std::vector<Observed> observed, std::int64_t now) {
    ScanResult r = step(open, last_ids, observed, now);
    for (const Transition& t : r.transitions) {
      last_ids[t.alert.workload_uid] = std::max(last_ids[t.alert.workload_uid], t.alert.id);
      if (t.alert.state == AlertState::Resolved) {
        open.erase(t.alert.workload_uid);
      } else {
        open[t.alert.workload_uid] = t.alert;
      }
    }
    return r;
  }
};

std::vector<std::string> actions(const ScanResult& r) {
  std::vector<std::string> out;
  for (const Transition& t : r.transitions) out.push_back(t.action);
  return out;
}

TEST(AlertLifecycle, DetectNotifyEscalateRepeatResolve) {
  Fixture f;
  ScanResult r = f.scan({f.observe(2)}, kT0);
  ASSERT_EQ(actions(r), (std::vector<std::string>{"Detected", "Notified"}));
  EXPECT_FALSE(r.transitions[0].notice);
  EXPECT_EQ(r.transitions[1].notice, Audience::Owner);
  const Alert& a = f.open.at("uid-a");
  EXPECT_EQ(a.id, 1);
  EXPECT_EQ(a.state, AlertState::Notified);
  EXPECT_EQ(a.low_since_ms, kT0 - kHour);  // the 60m window was low already
  EXPECT_EQ(a.evidence.low_seconds, 3600);
  EXPECT_EQ(a.evidence.running_seconds, 36000);

  // Still low an hour later: nothing is due (escalation after 2h, repeat after 6h).
  EXPECT_TRUE(f.scan({f.observe(2)}, kT0 + kHour).transitions.empty());
  // Two hours after the owner's notice: escalated to the group's admins.
  r = f.scan({f.observe(2)}, kT0 + 2 * kHour);
  ASSERT_EQ(actions(r), (std::vector<std::string>{"Escalated"}));
  EXPECT_EQ(r.transitions[0].notice, Audience::GroupAdmin);
  EXPECT_EQ(f.open.at("uid-a").escalated_ms, kT0 + 2 * kHour);
  EXPECT_EQ(f.open.at("uid-a").evidence.low_seconds, 3 * 3600);
  // The admins are reminded every 6h while it stays low and nothing is borrowed.
  EXPECT_TRUE(f.scan({f.observe(2)}, kT0 + 7 * kHour).transitions.empty());
  r = f.scan({f.observe(2)}, kT0 + 8 * kHour);
  ASSERT_EQ(actions(r), (std::vector<std::string>{"Renotified"}));
  EXPECT_EQ(r.transitions[0].notice, Audience::GroupAdmin);
  // Recovered: resolved, and the next low spell is a new alert.
  r = f.scan({f.observe(50)}, kT0 + 9 * kHour);
  ASSERT_EQ(actions(r), (std::vector<std::string>{"Resolved"}));
  EXPECT_EQ(r.transitions[0].alert.resolution, "recovered");
  EXPECT_TRUE(f.open.empty());
  r = f.scan({f.observe(2)}, kT0 + 10 * kHour);
  ASSERT_EQ(actions(r), (std::vector<std::string>{"Detected", "Notified"}));
  EXPECT_EQ(r.transitions[0].alert.id, 2);
}

TEST(AlertLifecycle, OnBorrowedQuotaAnEscalatedAlertBecomesAReclaimCandidate) {
  Fixture f;
  (void)f.scan({f.observe(2, 8)}, kT0);
  (void)f.scan({f.observe(2, 8)}, kT0 + 2 * kHour);  // escalated
  EXPECT_TRUE(f.scan({f.observe(2, 8)}, kT0 + 3 * kHour).transitions.empty());
  const ScanResult r = f.scan({f.observe(2, 8)}, kT0 + 4 * kHour);  // another 2h
  ASSERT_EQ(actions(r), (std::vector<std::string>{"ReclaimCandidate"}));
  EXPECT_EQ(f.open.at("uid-a").state, AlertState::ReclaimCandidate);
}

TEST(AlertLifecycle, ADecidedCandidateEndsReclaimedOrEndedAndADowngradeIsNotAskedAgain) {
  // Three candidates on borrowed quota: one approved for a reclaim, one approved for a
  // downgrade, one rejected. 6h (repeatInterval) after the escalation notice, only the
  // undecided outcomes are re-notified; the downgraded one keeps running unasked.
  Fixture f;
  const std::vector<std::string> uids{"uid-reclaim", "uid-downgrade", "uid-rejected"};
  auto all = [&] {
    std::vector<Observed> out;
    for (const std::string& uid : uids) out.push_back(f.observe(2, 8, uid));
    return out;
  };
  (void)f.scan(all(), kT0);
  (void)f.scan(all(), kT0 + 2 * kHour);
  (void)f.scan(all(), kT0 + 4 * kHour);
  for (const std::string& uid : uids) ASSERT_EQ(f.open.at(uid).state, AlertState::ReclaimCandidate) << uid;
  f.open.at("uid-reclaim").decision = ReclaimDecision{true, "sam", kT0 + 4 * kHour, "", ""};
  f.open.at("uid-downgrade").decision = ReclaimDecision{true, "sam", kT0 + 4 * kHour, "", "batch-low"};
  f.open.at("uid-rejected").decision = ReclaimDecision{false, "pat", kT0 + 4 * kHour, "", ""};
  ScanResult r = f.scan(all(), kT0 + 8 * kHour);
  std::vector<std::string> renotified;
  for (const Transition& t : r.transitions) renotified.push_back(t.alert.workload_uid + ":" + t.action);
  EXPECT_EQ(renotified, (std::vector<std::string>{"uid-reclaim:Renotified", "uid-rejected:Renotified"}));
  // All three gone from the allocations: only the approved reclaim is "reclaimed".
  r = f.scan({}, kT0 + 9 * kHour);
  std::map<std::string, std::string> resolution;
  for (const Transition& t : r.transitions) resolution[t.alert.workload_uid] = t.alert.resolution;
  EXPECT_EQ(resolution, (std::map<std::string, std::string>{
                            {"uid-downgrade", "ended"}, {"uid-reclaim", "reclaimed"}, {"uid-rejected", "ended"}}));
}

TEST(AlertLifecycle, AFailedNoticeIsAskedForAgainAndTheEndedWorkloadResolves) {
  Fixture f;
  ScanResult r = step(f.open, f.last_ids, {f.observe(2)}, kT0);
  // Only Detected is recorded: the owner's notice failed.
  f.open["uid-a"] = r.transitions[0].alert;
  f.last_ids["uid-a"] = 1;
  r = f.scan({f.observe(2)}, kT0 + 900'000);
  ASSERT_EQ(actions(r), (std::vector<std::string>{"Notified"}));
  EXPECT_EQ(r.transitions[0].from, AlertState::Detected);
  EXPECT_EQ(f.open.at("uid-a").notified_ms, kT0 + 900'000);
  // No data: nothing learnt, the alert stays. Gone from the allocations: ended.
  Observed nodata = f.observe(2);
  nodata.verdict.kind = VerdictKind::NoData;
  EXPECT_TRUE(f.scan({nodata}, kT0 + kHour).transitions.empty());
  r = f.scan({}, kT0 + kHour);
  ASSERT_EQ(actions(r), (std::vector<std::string>{"Resolved"}));
  EXPECT_EQ(r.transitions[0].alert.resolution, "ended");
}

TEST(AlertLifecycle, AnExceptionResolvesWithItsReason) {
  Fixture f;
  (void)f.scan({f.observe(2)}, kT0);
  Observed kept = f.observe(2);
  kept.facts.keep_running_until_s = kT0 / 1000 + 86400;
  kept.verdict = assess(kept.facts, f.policies, kT0 + kHour);
  const ScanResult r = f.scan({kept}, kT0 + kHour);
  ASSERT_EQ(actions(r), (std::vector<std::string>{"Resolved"}));
  EXPECT_EQ(r.transitions[0].alert.resolution, "excluded: keep-running-until");
  EXPECT_EQ(r.excluded.at("keep-running-until"), 1u);
}

TEST(AlertLifecycle, JsonRoundTripAndErrorsNameTheField) {
  Fixture f;
  (void)f.scan({f.observe(2)}, kT0);
  const Alert& a = f.open.at("uid-a");
  const auto back = alert_from_json(nlohmann::json::parse(to_json(a).dump()));
  ASSERT_TRUE(back) << back.error();
  EXPECT_EQ(*back, a);
  nlohmann::json broken = nlohmann::json::parse(to_json(a).dump());
  broken["state"] = "Sleeping";
  EXPECT_EQ(alert_from_json(broken).error(), "alert.state: unknown state \"Sleeping\"");
  broken = nlohmann::json::parse(to_json(a).dump());
  broken["evidence"]["gpus"] = "four";
  EXPECT_EQ(alert_from_json(broken).error(), "alert.evidence.gpus: must be a number");
  broken.erase("evidence");
  broken.erase("detectedMs");
  EXPECT_EQ(alert_from_json(broken).error(), "alert.detectedMs: required");
}

}  // namespace
}  // namespace gpubank::governance
