// A person's decision on a ReclaimCandidate: who may decide, that a decision is final even
// when two are recorded at once or a scan runs concurrently, that a decision recorded under
// another name is refused, and the command line that records it (`gpubank scan approve`).
#include "governance/reclaim_approval.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/paths.hpp"
#include "support/promtool.hpp"

namespace gpubank::governance {
namespace {

constexpr std::int64_t kT0 = 1'764'000'000'000;

const policy::PolicySet& examples() {
  static const policy::PolicySet set = policy::load_policy_set({gpubank::testing::examples_dir() + "/policies"});
  return set;
}

Alert candidate(const std::string& uid, const std::string& group, AlertState state = AlertState::ReclaimCandidate) {
  Alert a;
  a.id = 1;
  a.workload_uid = uid;
  a.policy = "training-idle";
  a.state = state;
  a.detected_ms = kT0 - 5 * 3'600'000;
  a.low_since_ms = a.detected_ms - 3'600'000;
  a.notified_ms = a.detected_ms;
  a.escalated_ms = a.detected_ms + 2 * 3'600'000;
  a.evidence.business_group = group;
  a.evidence.owner_id = "u-" + uid;
  a.evidence.namespace_name = group + "-training";
  a.evidence.workload_kind = "PyTorchJob";
  a.evidence.workload = uid;
  a.evidence.workload_type = "training";
  a.evidence.gpus = 16;
  return a;
}

class ReclaimApprovalTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = store::Store::open(db().string());
    ASSERT_TRUE(s) << s.error();
    store_ = std::move(*s);
    std::vector<Transition> seeded;
    for (const Alert& a : {candidate("job-big", "search"), candidate("job-ads", "ads"),
                           candidate("job-esc", "search", AlertState::Escalated)}) {
      seeded.push_back({AlertState::Escalated, a, "ReclaimCandidate", std::nullopt});
    }
    ASSERT_TRUE(record(*store_, book_, seeded, kT0 - 60'000));
  }
  std::filesystem::path db() const { return dir_.path() / "governance.db"; }
  static DecisionRequest request(const std::string& uid, std::string user, std::vector<std::string> groups,
                                 bool approve = true) {
    return {uid, approve, {std::move(user), std::move(groups)}, "idle for five hours on borrowed GPUs", ""};
  }

  gpubank::testing::ScratchDir dir_;
  std::unique_ptr<store::Store> store_;
  AlertBook book_;
};

TEST_F(ReclaimApprovalTest, OnlyAPlatformOrAGroupAdminDecidesAndOnlyOnAReclaimCandidate) {
  // An admin of another group may not; search's admins and the platform admins may.
  auto denied = decide(book_, request("job-big", "eve", {"ads-admins"}), examples(), kT0);
  ASSERT_FALSE(denied);
  EXPECT_NE(denied.error().find("governance.decision-forbidden"), std::string::npos) << denied.error();
  EXPECT_NE(denied.error().find("business group search"), std::string::npos) << denied.error();
  EXPECT_TRUE(decide(book_, request("job-big", "sam", {"search-admins"}), examples(), kT0));
  EXPECT_TRUE(decide(book_, request("job-ads", "pat", {"gpubank-platform-admins"}), examples(), kT0));
  // mei.chen, a user: subject among customer-service's admins, is not one of search's.
  EXPECT_FALSE(decide(book_, request("job-big", "mei.chen", {}), examples(), kT0));

  auto escalated = decide(book_, request("job-esc", "sam", {"search-admins"}), examples(), kT0);
  ASSERT_FALSE(escalated);
  EXPECT_NE(escalated.error().find("alert.state: only a ReclaimCandidate"), std::string::npos) << escalated.error();
  auto unknown = decide(book_, request("job-none", "sam", {"search-admins"}), examples(), kT0);
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().find("no open low-utilisation alert"), std::string::npos);
  EXPECT_NE(decide(book_, request("job-big", "", {"search-admins"}), examples(), kT0).error().find("user: required"),
            std::string::npos);
  DecisionRequest wordy = request("job-big", "sam", {"search-admins"});
  wordy.reason.assign(kMaxDecisionReasonLength + 1, 'x');
  EXPECT_NE(decide(book_, wordy, examples(), kT0).error().find("reason: at most 1024 bytes"), std::string::npos);
}

TEST_F(ReclaimApprovalTest, ADowngradeNamesAPreemptibleClassOpenToTheGroupAndTheWorkloadType) {
  // The examples' priorities: training-high (50000, training, search and ads only),
  // training-standard (10000), batch-low (1000, batch and training), notebook (500,
  // notebook only), inference-critical (preemptible: false, inference only).
  auto downgrade = [&](const std::string& uid, const std::string& to, bool approve = true) {
    DecisionRequest r = request(uid, "pat", {"gpubank-platform-admins"}, approve);
    r.downgrade_to = to;
    return r;
  };
  auto ok = decide(book_, downgrade("job-big", "batch-low"), examples(), kT0);
  ASSERT_TRUE(ok) << ok.error();
  EXPECT_EQ(ok->action, "ReclaimApproved");
  ASSERT_TRUE(ok->alert.decision);
  EXPECT_EQ(ok->alert.decision->downgrade_to, "batch-low");

  auto error_of = [&](const DecisionRequest& r, const AlertBook& book) {
    auto t = decide(book, r, examples(), kT0);
    return t ? std::string("accepted") : t.error();
  };
  EXPECT_NE(error_of(downgrade("job-big", "gold"), book_).find("downgradeTo: governance.downgrade-unknown-class: gold"),
            std::string::npos);
  EXPECT_NE(error_of(downgrade("job-big", "notebook"), book_)
                .find("governance.downgrade-class-not-allowed: priority class notebook is not open to training workloads"),
            std::string::npos);
  EXPECT_NE(error_of(downgrade("job-big", "batch-low", false), book_).find("downgradeTo: only with an approval"),
            std::string::npos);
  // training-high is open to search and ads only; inference-critical would free nothing.
  AlertBook other;
  other.open["job-cs"] = candidate("job-cs", "customer-service");
  EXPECT_NE(error_of(downgrade("job-cs", "training-high"), other)
                .find("governance.downgrade-class-not-allowed: priority class training-high is not open to business "
                      "group customer-service"),
            std::string::npos);
  other.open["job-cs"].evidence.workload_type = "inference";
  EXPECT_NE(error_of(downgrade("job-cs", "inference-critical"), other)
                .find("governance.downgrade-not-preemptible: priority class inference-critical is preemptible: false"),
            std::string::npos);

  // Recorded, read back from the store, and listed for the controller with its class.
  ASSERT_TRUE(record(*store_, book_, std::span(&*ok, 1), kT0));
  AlertBook reread;
  ASSERT_TRUE(refresh(*store_, reread));
  ASSERT_TRUE(reread.open.at("job-big").decision);
  EXPECT_EQ(reread.open.at("job-big").decision->downgrade_to, "batch-low");
  const std::vector<ApprovedReclaim> approved = approved_reclaims(reread);
  ASSERT_EQ(approved.size(), 1u);
  EXPECT_EQ(approved[0].workload_uid, "job-big");
  EXPECT_EQ(approved[0].downgrade_to, "batch-low");
}

TEST_F(ReclaimApprovalTest, TheFirstDecisionStandsThroughConcurrentDecisionsAndScans) {
  // Two admins decide from the same reading, and a scan renotifies from an older one.
  auto approve = decide(book_, request("job-big", "sam", {"search-admins"}), examples(), kT0);
  auto reject = decide(book_, request("job-big", "pat", {"gpubank-platform-admins"}, false), examples(), kT0 + 1);
  ASSERT_TRUE(approve && reject);
  const Alert before = book_.open.at("job-big");
  ASSERT_TRUE(record(*store_, book_, std::span(&*approve, 1), kT0));
  ASSERT_TRUE(record(*store_, book_, std::span(&*reject, 1), kT0 + 1));
  Transition renotified{AlertState::ReclaimCandidate, before, "Renotified", Audience::GroupAdmin};
  renotified.alert.last_notice_ms = kT0 + 2;
  ASSERT_TRUE(record(*store_, book_, std::span(&renotified, 1), kT0 + 2));

  const Alert& now = book_.open.at("job-big");
  ASSERT_TRUE(now.decision);
  EXPECT_TRUE(now.decision->approved);
  EXPECT_EQ(now.decision->by, "sam");
  EXPECT_EQ(now.last_notice_ms, kT0 + 2);
  // A later decision is refused, naming the first.
  auto again = decide(book_, request("job-big", "pat", {"gpubank-platform-admins"}, false), examples(), kT0 + 3);
  ASSERT_FALSE(again);
  EXPECT_NE(again.error().find("already approved by sam"), std::string::npos) << again.error();
  // The record: each decision under its decider's name; a restarted reader folds the same.
  auto entries = store_->audit(0, 100);
  ASSERT_TRUE(entries);
  std::vector<std::string> actors;
  for (const bank::AuditEntry& e : *entries) {
    if (e.action.starts_with("LowUtilizationReclaim") && e.action != "LowUtilizationReclaimCandidate") {
      actors.push_back(e.actor + " " + e.action);
    }
  }
  EXPECT_EQ(actors, (std::vector<std::string>{"sam LowUtilizationReclaimApproved", "pat LowUtilizationReclaimRejected"}));
  AlertBook fresh;
  ASSERT_TRUE(refresh(*store_, fresh));
  EXPECT_EQ(fresh.open, book_.open);

  // What the controller stops; and once the workload holds no GPU, the alert resolves
  // "reclaimed" (an undecided one "ended").
  const std::vector<ApprovedReclaim> approved = approved_reclaims(book_);
  ASSERT_EQ(approved.size(), 1u);
  EXPECT_EQ(approved[0].workload_uid, "job-big");
  EXPECT_EQ(approved[0].approver, "sam");
  const ScanResult r = step(book_.open, book_.last_ids, {}, kT0 + 3'600'000);
  std::map<std::string, std::string> resolutions;
  for (const Transition& t : r.transitions) resolutions[t.alert.workload_uid] = t.alert.resolution;
  EXPECT_EQ(resolutions, (std::map<std::string, std::string>{
                             {"job-ads", "ended"}, {"job-big", "reclaimed"}, {"job-esc", "ended"}}));
}

TEST_F(ReclaimApprovalTest, ADecisionRecordedUnderAnotherNameIsRefused) {
  // Someone with write access to the store appends an approval in alice's name as mallory.
  Alert forged = book_.open.at("job-big");
  forged.decision = ReclaimDecision{true, "alice", kT0, "", ""};
  bank::AuditEntry e;
  e.time_ms = kT0;
  e.actor = "mallory";
  e.action = "LowUtilizationReclaimApproved";
  e.object = "PyTorchJob/search-training/job-big";
  e.decision = "ReclaimCandidate";
  e.reason = "forged";
  e.numbers = to_json(forged).dump();
  auto appended = store_->append({}, std::vector<bank::AuditEntry>{e});
  ASSERT_TRUE(appended) << appended.error();
  AlertBook fresh;
  auto read = refresh(*store_, fresh);
  ASSERT_FALSE(read);
  EXPECT_NE(read.error().find("must be recorded by its decider (actor mallory)"), std::string::npos) << read.error();
}

TEST_F(ReclaimApprovalTest, TheCommandLineRecordsADecisionAndRefusesWhatTheRulesForbid) {
  store_.reset();
  const std::string gpubank = gpubank::testing::binary_dir() + "/cmd/gpubank/gpubank";
  const std::string common = " --policies " + gpubank::testing::examples_dir() + "/policies --store " + db().string();
  auto ok = gpubank::testing::run_in(dir_.path(), gpubank + " scan approve job-big --user sam --group search-admins" +
                                                      common + " --reason 'idle since Monday' -o json");
  ASSERT_EQ(ok.status, 0) << ok.output;
  const nlohmann::json alert = nlohmann::json::parse(ok.output);
  EXPECT_EQ(alert["decision"]["verdict"], "Approved");
  EXPECT_EQ(alert["decision"]["by"], "sam");
  EXPECT_EQ(alert["decision"]["reason"], "idle since Monday");
  EXPECT_EQ(alert["state"], "ReclaimCandidate");

  auto listed = gpubank::testing::run_in(dir_.path(), gpubank + " scan alerts --store " + db().string());
  ASSERT_EQ(listed.status, 0) << listed.output;
  EXPECT_NE(listed.output.find("3 open alerts"), std::string::npos) << listed.output;
  EXPECT_NE(listed.output.find("ReclaimCandidate  job-big  search/u-job-big  PyTorchJob search-training/job-big  16 GPUs  "
                               "reclaim approved by sam"),
            std::string::npos)
      << listed.output;

  auto final_ = gpubank::testing::run_in(dir_.path(), gpubank + " scan reject job-big --user pat --group "
                                                                "gpubank-platform-admins" + common);
  EXPECT_EQ(final_.status, 1);
  EXPECT_NE(final_.output.find("a decision is final"), std::string::npos) << final_.output;
  auto forbidden =
      gpubank::testing::run_in(dir_.path(), gpubank + " scan reject job-ads --user eve --group search-admins" + common);
  EXPECT_EQ(forbidden.status, 1);
  EXPECT_NE(forbidden.output.find("governance.decision-forbidden"), std::string::npos) << forbidden.output;
  auto unknown_class = gpubank::testing::run_in(
      dir_.path(), gpubank + " scan approve job-ads --user pat --group gpubank-platform-admins --downgrade-to gold" + common);
  EXPECT_EQ(unknown_class.status, 1) << unknown_class.output;
  EXPECT_NE(unknown_class.output.find("governance.downgrade-unknown-class"), std::string::npos) << unknown_class.output;
  auto downgraded = gpubank::testing::run_in(
      dir_.path(), gpubank + " scan approve job-ads --user pat --group gpubank-platform-admins --downgrade-to batch-low" +
                       common);
  ASSERT_EQ(downgraded.status, 0) << downgraded.output;
  EXPECT_NE(downgraded.output.find("approved the downgrade of PyTorchJob ads-training/job-ads (16 GPUs, alert 1); "
                                   "gpubank controller moves it to priority class batch-low"),
            std::string::npos)
      << downgraded.output;
  listed = gpubank::testing::run_in(dir_.path(), gpubank + " scan alerts --store " + db().string());
  EXPECT_NE(listed.output.find("job-ads  16 GPUs  downgrade to batch-low approved by pat"), std::string::npos)
      << listed.output;

  auto usage = gpubank::testing::run_in(dir_.path(), gpubank + " scan approve job-ads" + common);
  EXPECT_EQ(usage.status, 2) << usage.output;
  EXPECT_NE(usage.output.find("--user is required"), std::string::npos) << usage.output;
  // A plain scan still needs its Prometheus.
  auto scan = gpubank::testing::run_in(dir_.path(), gpubank + " scan" + common);
  EXPECT_EQ(scan.status, 2);
  EXPECT_NE(scan.output.find("--prometheus is required"), std::string::npos) << scan.output;
}

}  // namespace
}  // namespace gpubank::governance
