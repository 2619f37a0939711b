// Policy change proposals (proposals/proposals.hpp) on a real SQLite store: who may
// propose what, which changes wait for a platform administrator, that a stale or no longer
// valid proposal is refused at approval, that the set in force is the fold of the record
// (a second reader sees the same version), and that an edited record is caught.
#include "proposals/proposals.hpp"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include "policy/lease_approval.hpp"
#include "support/paths.hpp"
#include "support/policy_fixture.hpp"
#include "support/promtool.hpp"
#include "twin/live/resume.hpp"

namespace gpubank::proposals {
namespace {

constexpr std::int64_t kNow = 1'764'000'000'000;

const auth::Principal kAdsAdmin{"ada", auth::Role::GroupAdmin, "ads", "t1"};
const auth::Principal kSearchAdmin{"sam", auth::Role::GroupAdmin, "search", "t2"};
const auth::Principal kPlatformAdmin{"pat", auth::Role::PlatformAdmin, "", "t3"};
const auth::Principal kViewer{"vic", auth::Role::Viewer, "ads", "t4"};

std::string ads_quota(int guaranteed, int borrow, int max_capacity) {
  return "apiVersion: platform.gpubank.dev/v1alpha1\nkind: GPUQuotaPolicy\nmetadata: {name: ads-training-h100}\n"
         "spec:\n  businessGroup: ads\n  resourcePool: h100-rdma-training\n  guaranteed: " +
         std::to_string(guaranteed) + "\n  borrowLimit: " + std::to_string(borrow) +
         "\n  maxCapacity: " + std::to_string(max_capacity) +
         "\n  reclaimPolicy: {gracePeriod: 10m, onlyPreempt: [checkpointable]}\n";
}

class ProposalsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = store::Store::open(location());
    ASSERT_TRUE(s) << s.error();
    store_ = std::move(*s);
  }
  std::string location() const { return (dir_.path() / "portal.db").string(); }
  static policy::PolicySet examples() { return policy::load_policy_set({gpubank::testing::examples_dir() + "/policies"}); }
  Submitted submit_ok(const auth::Principal& who, const std::string& text) {
    auto s = submit(*store_, book_, who, text, "why", kNow);
    EXPECT_TRUE(s) << s.error();
    EXPECT_FALSE(has_errors(s->findings)) << (s->findings.empty() ? "" : s->findings.front().to_string());
    return *s;
  }
  std::vector<std::string> refused_rules(const auth::Principal& who, const std::string& text) {
    auto s = submit(*store_, book_, who, text, "", kNow);
    EXPECT_TRUE(s) << s.error();
    return gpubank::testing::rules_of(s->findings);
  }

  gpubank::testing::ScratchDir dir_;
  std::unique_ptr<store::Store> store_;
  Book book_{examples()};
};

TEST_F(ProposalsTest, WhatGivesBackAppliesAtOnceAndWhatTakesMoreWaits) {
  const std::string base = book_.version();
  const Submitted back = submit_ok(kAdsAdmin, ads_quota(16, 8, 24));
  EXPECT_EQ(back.proposal.state, State::Applied);
  EXPECT_FALSE(back.proposal.needs_approval);
  EXPECT_NE(book_.version(), base);
  EXPECT_EQ(book_.in_force().find(policy::Kind::GPUQuotaPolicy, "ads-training-h100")
                ->as<policy::GPUQuotaPolicySpec>()
                .borrow_limit,
            8);
  ASSERT_TRUE(back.proposal.patch.is_array());
  EXPECT_EQ(back.proposal.patch.size(), 2u);

  const Submitted more = submit_ok(kAdsAdmin, ads_quota(16, 16, 32));
  EXPECT_EQ(more.proposal.state, State::Pending);
  EXPECT_TRUE(more.proposal.needs_approval);
  EXPECT_NE(more.proposal.approval_reason.find("borrowLimit up"), std::string::npos) << more.proposal.approval_reason;
  const std::string before = book_.version();

  auto denied = decide(*store_, book_, kAdsAdmin, more.proposal.id, true, "", kNow + 1);
  ASSERT_FALSE(denied);
  EXPECT_EQ(denied.error().rfind("auth.not-platform-admin", 0), 0u) << denied.error();
  auto approved = decide(*store_, book_, kPlatformAdmin, more.proposal.id, true, "ok for Q4", kNow + 2);
  ASSERT_TRUE(approved) << approved.error();
  EXPECT_EQ(approved->state, State::Applied);
  EXPECT_EQ(approved->decided_by, "pat");
  EXPECT_EQ(approved->decision_comment, "ok for Q4");
  EXPECT_NE(book_.version(), before);
  EXPECT_EQ(book_.version(), base) << "back to the examples' numbers: the examples' version";
  auto again = decide(*store_, book_, kPlatformAdmin, more.proposal.id, false, "", kNow + 3);
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().rfind("proposal.not-pending", 0), 0u);

  // A second reader of the same store folds the same set and the same history.
  Book other(examples());
  auto other_store = store::Store::open(location());
  ASSERT_TRUE(other_store);
  ASSERT_TRUE(other.refresh(**other_store));
  EXPECT_EQ(other.version(), book_.version());
  ASSERT_EQ(other.proposals().size(), 2u);
  EXPECT_EQ(other.proposals()[1].state, State::Applied);
  EXPECT_EQ(other.proposals()[1].decided_by, "pat");
}

TEST_F(ProposalsTest, AuthorityAndChecksRefuseWithTheRuleAndRecordNothing) {
  EXPECT_EQ(refused_rules(kSearchAdmin, ads_quota(16, 8, 24)), std::vector<std::string>{"auth.not-group-admin"});
  EXPECT_EQ(refused_rules(kViewer, ads_quota(16, 8, 24)), std::vector<std::string>{"auth.role-may-not-propose"});
  EXPECT_EQ(refused_rules(kAdsAdmin, ads_quota(16, 16, 32)), std::vector<std::string>{"proposal.no-change"});
  EXPECT_TRUE(gpubank::testing::has_rule(
      [&] {
        auto s = submit(*store_, book_, kAdsAdmin, ads_quota(16, 24, 40), "", kNow);
        return s->findings;
      }(),
      "quota.max-capacity-outside-guardrail"));
  EXPECT_EQ(refused_rules(kAdsAdmin, "kind: [unclosed"), std::vector<std::string>{"schema.syntax"});
  EXPECT_EQ(refused_rules(kAdsAdmin, ads_quota(16, 8, 24) + "---\n" + ads_quota(16, 8, 24)),
            std::vector<std::string>{"proposal.one-document"});
  EXPECT_EQ(refused_rules(kAdsAdmin, std::string(kMaxDocumentBytes + 1, '#')), std::vector<std::string>{"proposal.too-large"});
  // A kind that is not self-service, even from a platform administrator.
  EXPECT_EQ(refused_rules(kPlatformAdmin, "apiVersion: platform.gpubank.dev/v1alpha1\nkind: LowUtilizationPolicy\n"
                                          "metadata: {name: idle}\nspec:\n  match: {workloadType: notebook}\n"
                                          "  window: 2h\n  thresholds: {averageGpuUtilization: 5}\n"),
            std::vector<std::string>{"proposal.kind-not-self-service"});
  const auto unknown = refused_rules(kAdsAdmin, ads_quota(16, 8, 24) + "  burst: 3\n");
  ASSERT_EQ(unknown.size(), 1u);
  EXPECT_EQ(unknown[0], "schema.unknown-field");
  auto audit = store_->audit(0, 1000);
  ASSERT_TRUE(audit);
  EXPECT_TRUE(audit->empty()) << "a refused proposal leaves no record";
}

TEST_F(ProposalsTest, AStaleProposalIsRefusedAtApproval) {
  const Submitted a = submit_ok(kAdsAdmin, ads_quota(16, 16, 24));  // lowers maxCapacity: applies
  EXPECT_EQ(a.proposal.state, State::Applied);
  const Submitted pending = submit_ok(kAdsAdmin, ads_quota(16, 16, 32));  // back up: waits
  ASSERT_EQ(pending.proposal.state, State::Pending);
  submit_ok(kAdsAdmin, ads_quota(16, 8, 24));  // the object changes under the pending one
  auto stale = decide(*store_, book_, kPlatformAdmin, pending.proposal.id, true, "", kNow + 5);
  ASSERT_FALSE(stale);
  EXPECT_EQ(stale.error().rfind("proposal.stale", 0), 0u) << stale.error();
  auto rejected = decide(*store_, book_, kPlatformAdmin, pending.proposal.id, false, "propose again", kNow + 6);
  ASSERT_TRUE(rejected) << rejected.error();
  EXPECT_EQ(rejected->state, State::Rejected);
}

TEST_F(ProposalsTest, ALeaseIsAppliedWithItsApprovalAndItsAuthor) {
  const std::string lease =
      "apiVersion: platform.gpubank.dev/v1alpha1\nkind: CapacityLease\nmetadata: {name: ads-q4-push}\nspec:\n"
      "  businessGroup: ads\n  resourcePool: mig-or-shared-development\n  type: TemporaryQuota\n  extraGuaranteed: 4\n"
      "  start: \"2026-12-10T00:00:00Z\"\n  end: \"2026-12-10T12:00:00Z\"\n  reason: quarter end\n";
  const Submitted s = submit_ok(kAdsAdmin, lease);
  ASSERT_EQ(s.proposal.state, State::Pending);
  EXPECT_NE(s.proposal.approval_reason.find("a new CapacityLease"), std::string::npos) << s.proposal.approval_reason;
  auto approved = decide(*store_, book_, kPlatformAdmin, s.proposal.id, true, "", kNow + 1);
  ASSERT_TRUE(approved) << approved.error();
  const policy::PolicyObject* in_force = book_.in_force().find(policy::Kind::CapacityLease, "ads-q4-push");
  ASSERT_NE(in_force, nullptr);
  EXPECT_TRUE(policy::approved_as_is(*in_force));
  EXPECT_EQ(policy::requested_by(*in_force).value_or(""), "user:ada");
}

// An attacker with the file edits the recorded version after a change (to make the fold
// disagree) and the chain shows it; rewriting the chain too leaves the fold to catch it.
TEST_F(ProposalsTest, AnEditedRecordIsCaught) {
  submit_ok(kAdsAdmin, ads_quota(16, 8, 24));
  store_.reset();
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(location().c_str(), &db), SQLITE_OK);
  // The append-only triggers refuse an UPDATE: the attacker drops them first.
  char* error = nullptr;
  sqlite3_exec(db, "DROP TRIGGER IF EXISTS audit_no_update", nullptr, nullptr, &error);
  sqlite3_free(error);
  int rc = SQLITE_OK;
  {
    sqlite3_stmt* names = nullptr;
    sqlite3_prepare_v2(db, "SELECT name FROM sqlite_master WHERE type='trigger'", -1, &names, nullptr);
    std::vector<std::string> triggers;
    while (sqlite3_step(names) == SQLITE_ROW) triggers.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(names, 0)));
    sqlite3_finalize(names);
    for (const auto& t : triggers) sqlite3_exec(db, ("DROP TRIGGER " + t).c_str(), nullptr, nullptr, nullptr);
    // The applied document is JSON inside the entry's JSON: its quotes are escaped.
    rc = sqlite3_exec(db,
                      R"sql(UPDATE audit SET numbers = replace(numbers, '\"borrowLimit\":8', '\"borrowLimit\":80')
                            WHERE action = 'PolicyChangeApplied')sql",
                      nullptr, nullptr, &error);
    EXPECT_EQ(sqlite3_changes(db), 1) << "the edit must land, or the test tests nothing";
  }
  ASSERT_EQ(rc, SQLITE_OK) << (error ? error : "");
  sqlite3_free(error);
  sqlite3_close(db);
  auto reopened = store::Store::open(location());
  ASSERT_TRUE(reopened) << reopened.error();
  const auto verified = store::verify_store(**reopened);
  ASSERT_TRUE(verified) << verified.error();
  EXPECT_FALSE(verified->ok()) << "the hash chain no longer matches the edited entry";
  Book fresh(examples());
  auto read = fresh.refresh(**reopened);
  ASSERT_FALSE(read) << "the fold refuses a version that its document does not give";
  EXPECT_NE(read.error().find("is not the fold's"), std::string::npos) << read.error();
}

}  // namespace
}  // namespace gpubank::proposals

namespace gpubank::proposals {
namespace {

// Truth::Cluster (the controller's desk): the cluster's objects are the set in force. An
// applied change is not upserted by the fold; it is in force once the cluster holds it,
// which the controller records as enacted, once.
TEST_F(ProposalsTest, OnAClusterTheClusterIsTheSetInForce) {
  Book cluster_book(policy::PolicySet{}, Truth::Cluster);
  cluster_book.rebase(examples());
  const std::string base = cluster_book.version();
  auto s = submit(*store_, cluster_book, kAdsAdmin, ads_quota(16, 8, 24), "why", kNow);
  ASSERT_TRUE(s) << s.error();
  ASSERT_FALSE(has_errors(s->findings));
  const Proposal applied = s->proposal;
  ASSERT_EQ(applied.state, State::Applied);
  EXPECT_FALSE(applied.applied_document.empty());
  // Applied in the record, not yet on the cluster: the set in force is unchanged.
  EXPECT_EQ(cluster_book.version(), base);
  EXPECT_EQ(cluster_book.in_force().find(policy::Kind::GPUQuotaPolicy, "ads-training-h100")
                ->as<policy::GPUQuotaPolicySpec>()
                .borrow_limit,
            16);

  // Enacted once; not before it is applied, never twice.
  // Made on the cluster's object (not on the applied change): a higher weight waits.
  auto pending = submit(*store_, cluster_book, kAdsAdmin, ads_quota(16, 16, 32) + "  fairShareWeight: 3\n", "", kNow);
  ASSERT_TRUE(pending) << pending.error();
  ASSERT_EQ(pending->proposal.state, State::Pending);
  auto early = record_enacted(*store_, cluster_book, pending->proposal.id, "gpubank-controller/a", "7", kNow + 1);
  ASSERT_FALSE(early);
  EXPECT_NE(early.error().find("proposal.not-applied"), std::string::npos) << early.error();
  ASSERT_TRUE(record_enacted(*store_, cluster_book, applied.id, "gpubank-controller/a", "42", kNow + 2));
  auto twice = record_enacted(*store_, cluster_book, applied.id, "gpubank-controller/a", "43", kNow + 3);
  ASSERT_FALSE(twice);
  EXPECT_NE(twice.error().find("proposal.enacted"), std::string::npos) << twice.error();
  const Proposal* enacted = cluster_book.find(applied.id);
  ASSERT_NE(enacted, nullptr);
  EXPECT_EQ(enacted->enacted_resource_version, "42");
  EXPECT_EQ(enacted->enacted_by, "gpubank-controller/a");
  EXPECT_EQ(to_json(*enacted)["enacted"]["resourceVersion"], "42");

  // The cluster now holds the change: rebased, it is in force, and the pending proposal
  // (made on the old object) is stale.
  Diagnostics ignored;
  cluster_book.rebase(with_change(examples(), *parse_document(ads_quota(16, 8, 24), ignored)));
  EXPECT_NE(cluster_book.version(), base);
  auto stale = decide(*store_, cluster_book, kPlatformAdmin, pending->proposal.id, true, "", kNow + 4);
  ASSERT_FALSE(stale);
  EXPECT_NE(stale.error().find("proposal.stale"), std::string::npos) << stale.error();

  // A second reader of the same record folds the same proposals (the record's version
  // check is the twin's, not the cluster's).
  Book again(examples(), Truth::Cluster);
  ASSERT_TRUE(again.refresh(*store_));
  ASSERT_EQ(again.proposals().size(), 2U);
  EXPECT_EQ(again.find(applied.id)->enacted_resource_version, "42");
  // Read as the twin's record (Truth::Record) it folds too: the enacted step is kept.
  Book record(examples());
  ASSERT_TRUE(record.refresh(*store_));
  EXPECT_EQ(record.find(applied.id)->enacted_ms, kNow + 2);
}

}  // namespace
}  // namespace gpubank::proposals
