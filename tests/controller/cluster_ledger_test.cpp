// The cluster's ledger (cluster_ledger.hpp): entries from admitted Workloads and the policy
// set's quotas, appended to a real SQLite store and read back, across restarts; and the
// quotas the bank counts at a time (leases in force) on the example policies.
#include "controller/cluster_ledger.hpp"

#include <gtest/gtest.h>

#include "cluster_fixture.hpp"
#include "controller/policy_source.hpp"
#include "document/node.hpp"
#include "policy/decode.hpp"
#include "policy/lease_approval.hpp"
#include "store/store.hpp"
#include "support/promtool.hpp"

namespace gpubank::controller {
namespace {

using bank::LedgerKind;

constexpr std::int64_t kT0 = 1'800'000'000'000;  // ms

std::vector<GroupQuota> two_groups() {
  // Pool p: a and b guaranteed 8 each; b lends at most 6.
  GroupQuota a{.pool = "p", .group = "a", .guaranteed = 8, .borrowing_limit = 8};
  GroupQuota b{.pool = "p", .group = "b", .guaranteed = 8, .lending_limit = 6, .borrowing_limit = 8};
  return {a, b};
}

ClusterWorkload holding(const std::string& key, const std::string& group, std::int64_t gpus, std::int64_t admitted_at,
                        std::vector<std::string> traits = {}) {
  ClusterWorkload w;
  w.key = key;
  w.group = group;
  w.pool = "p";
  w.flavor = "p";
  w.gpus = gpus;
  w.admitted = true;
  w.admitted_at_ms = admitted_at;
  w.traits = std::move(traits);
  return w;
}

// What a run of passes produced, as kind/group/lender/gpus/reason lines.
std::string line(const bank::LedgerEntry& e) {
  std::string s = std::string(bank::kind_name(e.kind)) + " " + e.business_group;
  if (!e.lender.empty()) s += "<-" + e.lender;
  if (!e.workload.empty()) s += " " + e.workload;
  s += " " + std::to_string(e.gpus);
  if (!e.reason.empty()) s += " " + e.reason;
  return s;
}
std::vector<std::string> lines(const std::vector<bank::LedgerEntry>& entries) {
  std::vector<std::string> out;
  for (const auto& e : entries) out.push_back(line(e));
  return out;
}

// A producer on a real SQLite store: resumes from it, appends each pass, commits.
class Producer {
 public:
  explicit Producer(const std::string& path, const std::string& holder = "test") : path_(path) {
    auto opened = store::Store::open(path);
    if (!opened) throw std::runtime_error(opened.error());
    store_ = std::move(*opened);
    auto epoch = store_->acquire_writer(holder);
    if (!epoch) throw std::runtime_error(epoch.error());
    auto book = store::load_book(*store_);
    if (!book) throw std::runtime_error(book.error());
    ledger_.emplace(ClusterLedger::resume(std::move(*book), std::to_string(*epoch) + "-"));
  }
  std::vector<bank::LedgerEntry> pass(const std::vector<GroupQuota>& quotas, const std::vector<ClusterWorkload>& workloads,
                                      std::int64_t now) {
    LedgerPass p = ledger_->observe(quotas, workloads, now);
    auto appended = store_->append(p.entries, {});
    if (!appended) throw std::runtime_error(appended.error());
    auto committed = ledger_->commit(std::move(p), appended->ledger);
    if (!committed) throw std::runtime_error(committed.error());
    return appended->ledger;
  }
  ClusterLedger& ledger() { return *ledger_; }
  store::Store& store() { return *store_; }

 private:
  std::string path_;
  std::unique_ptr<store::Store> store_;
  std::optional<ClusterLedger> ledger_;
};

TEST(ClusterLedger, BorrowingIsAttributedToTheLenderAndAnUnchangedClusterWritesNothing) {
  gpubank::testing::ScratchDir dir;
  Producer producer((dir.path() / "ledger.db").string());
  // b runs 12: 8 of its own, 4 borrowed from a's idle guarantee.
  const auto first = producer.pass(two_groups(), {holding("ns-b/big", "b", 12, kT0)}, kT0);
  EXPECT_EQ(lines(first), (std::vector<std::string>{"QuotaSet a 8 Policy", "QuotaSet b 8 Policy", "UsageStarted b ns-b/big 12",
                                                     "BorrowOpened b<-a ns-b/big 4"}));
  EXPECT_EQ(first.back().record, "1-p/1");  // the writer epoch prefixes the record ids
  for (const auto& e : first) EXPECT_EQ(e.time_ms, kT0);
  EXPECT_TRUE(producer.pass(two_groups(), {holding("ns-b/big", "b", 12, kT0)}, kT0 + 1000).empty());

  const auto positions = producer.ledger().book().positions();
  ASSERT_EQ(positions.size(), 2u);
  EXPECT_EQ(positions[0].business_group, "a");
  EXPECT_EQ(positions[0].lent, 4);
  EXPECT_EQ(positions[1].borrowed, 4);
  EXPECT_EQ(positions[1].used, 12);
}

TEST(ClusterLedger, ALenderThatNeedsItsGpusBackReattributesAndAnEndClosesRecordsFirst) {
  gpubank::testing::ScratchDir dir;
  Producer producer((dir.path() / "ledger.db").string());
  producer.pass(two_groups(), {holding("ns-b/big", "b", 12, kT0)}, kT0);
  // a starts 6 of its own: it can lend only 2 now; the other 2 come from nobody's guarantee.
  const auto second = producer.pass(two_groups(), {holding("ns-b/big", "b", 12, kT0), holding("ns-a/own", "a", 6, kT0 + 5000)},
                                    kT0 + 60'000);
  EXPECT_EQ(lines(second), (std::vector<std::string>{"UsageStarted a ns-a/own 6", "BorrowClosed b<-a ns-b/big 4 Reattributed",
                                                      "BorrowOpened b<-a ns-b/big 2", "BorrowOpened b<-cohort:p ns-b/big 2"}));
  // b's workload finishes: its records close before its usage ends, with its reason.
  ClusterWorkload done = holding("ns-b/big", "b", 12, kT0);
  done.admitted = false;
  done.finished = true;
  const auto third = producer.pass(two_groups(), {done, holding("ns-a/own", "a", 6, kT0 + 5000)}, kT0 + 120'000);
  EXPECT_EQ(lines(third), (std::vector<std::string>{"BorrowClosed b<-a ns-b/big 2 Finished",
                                                     "BorrowClosed b<-cohort:p ns-b/big 2 Finished",
                                                     "UsageEnded b ns-b/big 12 Finished"}));
  // The pair's GPU-hours are the records' exact integral: 4 GPUs x 1 min + 2 GPUs x 1 min.
  const auto totals = producer.ledger().book().pair_totals(0, bank::kMaxTimeMs);
  ASSERT_FALSE(totals.empty());
  EXPECT_EQ(totals[0].lender, "a");
  EXPECT_EQ(totals[0].gpu_ms, 4 * 60'000 + 2 * 60'000);
}

TEST(ClusterLedger, EachWayOfLosingQuotaHasItsReason) {
  gpubank::testing::ScratchDir dir;
  Producer producer((dir.path() / "ledger.db").string());
  producer.pass(two_groups(),
                {holding("x/reclaimed", "a", 1, kT0), holding("x/evicted", "a", 1, kT0), holding("x/deleted", "a", 1, kT0),
                 holding("x/resized", "a", 1, kT0)},
                kT0);
  ClusterWorkload reclaimed = holding("x/reclaimed", "a", 1, kT0);
  reclaimed.admitted = false;
  reclaimed.active = false;
  reclaimed.reclaimed_ms = kT0 + 1;
  ClusterWorkload evicted = holding("x/evicted", "a", 1, kT0);
  evicted.admitted = false;
  const auto entries = producer.pass(two_groups(), {reclaimed, evicted, holding("x/resized", "a", 2, kT0)}, kT0 + 1000);
  EXPECT_EQ(lines(entries), (std::vector<std::string>{"UsageEnded a x/deleted 1 Deleted", "UsageEnded a x/evicted 1 Evicted",
                                                       "UsageEnded a x/reclaimed 1 Reclaimed", "UsageEnded a x/resized 1 Changed",
                                                       "UsageStarted a x/resized 2"}));
}

TEST(ClusterLedger, ARestartedOrNewProducerContinuesFromTheStoreWithNewRecordIds) {
  gpubank::testing::ScratchDir dir;
  const std::string path = (dir.path() / "ledger.db").string();
  const std::vector<ClusterWorkload> state{holding("ns-b/big", "b", 12, kT0)};
  Producer first(path, "replica-a");
  first.pass(two_groups(), state, kT0);
  Producer second(path, "replica-b");
  // Nothing changed while no one watched: nothing to write.
  EXPECT_TRUE(second.pass(two_groups(), state, kT0 + 10'000).empty());
  // A change is attributed with the resumed records in mind and new ids of epoch 2.
  const std::vector<ClusterWorkload> more_state{holding("ns-b/big", "b", 12, kT0), holding("ns-b/more", "b", 2, kT0 + 20'000)};
  const auto more = second.pass(two_groups(), more_state, kT0 + 30'000);
  EXPECT_EQ(lines(more), (std::vector<std::string>{"UsageStarted b ns-b/more 2", "BorrowOpened b<-a ns-b/more 2"}));
  EXPECT_EQ(more.back().record, "2-p/1");
  // The first producer is fenced: its append fails and stores nothing.
  EXPECT_THROW(first.pass(two_groups(), {holding("ns-b/big", "b", 12, kT0), holding("ns-a/x", "a", 1, kT0)}, kT0 + 40'000),
               std::runtime_error);
  auto verify = store::load_book(second.store());
  ASSERT_TRUE(verify.ok()) << verify.error();
  EXPECT_EQ(verify->size(), 6u);
}

TEST(ClusterLedger, AFailedAppendChangesNothingAndTheNextPassComputesTheSameEntries) {
  ClusterLedger ledger = ClusterLedger::resume(bank::LedgerBook{}, "1-");
  const std::vector<ClusterWorkload> state{holding("ns-b/big", "b", 12, kT0)};
  const LedgerPass a = ledger.observe(two_groups(), state, kT0);
  // Not committed (the store refused it): the same state gives the same entries again.
  const LedgerPass b = ledger.observe(two_groups(), state, kT0);
  EXPECT_EQ(a.entries, b.entries);
  EXPECT_EQ(a.entries.size(), 4u);
}

TEST(ClusterLedger, TimesNeverGoBackAndOddWorkloadsAreLeftOutNotFatal) {
  gpubank::testing::ScratchDir dir;
  Producer producer((dir.path() / "ledger.db").string());
  producer.pass(two_groups(), {}, kT0);
  // A clock behind the last entry (another replica's) dates the pass at the last entry.
  ClusterWorkload odd = holding(std::string(400, 'x'), "a", 1, kT0);
  LedgerPass pass = producer.ledger().observe(two_groups(), {odd, holding("ns/ok", "a", 1, kT0)}, kT0 - 5000);
  ASSERT_EQ(pass.skipped.size(), 1u);
  EXPECT_NE(pass.skipped[0].find("workload"), std::string::npos) << pass.skipped[0];
  ASSERT_EQ(pass.entries.size(), 1u);
  EXPECT_EQ(pass.entries[0].time_ms, kT0);
  EXPECT_EQ(pass.entries[0].workload, "ns/ok");
}

TEST(ClusterLedger, AQuotaPolicyThatIsGoneLeavesNoGuarantee) {
  gpubank::testing::ScratchDir dir;
  Producer producer((dir.path() / "ledger.db").string());
  producer.pass(two_groups(), {}, kT0);
  const auto entries = producer.pass({two_groups()[0]}, {}, kT0 + 1000);
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(line(entries[0]), "QuotaSet b 0 Policy");
  EXPECT_EQ(entries[0].borrowing_limit, 0);
  EXPECT_TRUE(producer.pass({two_groups()[0]}, {}, kT0 + 2000).empty());
}

// ---- group_quotas on the example policies ----

policy::PolicySet examples_with_approved_lease() { return read_cluster_policies(testing::examples_with_approved_lease()).set; }

const GroupQuota* find(const std::vector<GroupQuota>& quotas, const std::string& pool, const std::string& group) {
  for (const GroupQuota& q : quotas) {
    if (q.pool == pool && q.group == group) return &q;
  }
  return nullptr;
}

TEST(ClusterLedger, ALeaseRaisesTheGuaranteeWhileInForceWithItsReasonOnBothEdges) {
  const policy::PolicySet set = examples_with_approved_lease();
  auto at = [](const char* t) { return *parse_rfc3339(t); };
  const auto before = group_quotas(set, at("2026-12-18T23:00:00Z"));
  const auto during = group_quotas(set, at("2026-12-19T10:00:00Z"));
  const auto after = group_quotas(set, at("2026-12-19T20:00:00Z"));
  const GroupQuota* ads_before = find(before, "h100-rdma-training", "ads");
  const GroupQuota* ads_during = find(during, "h100-rdma-training", "ads");
  const GroupQuota* ads_after = find(after, "h100-rdma-training", "ads");
  ASSERT_TRUE(ads_before && ads_during && ads_after);
  EXPECT_EQ(ads_during->guaranteed, ads_before->guaranteed + 8);
  EXPECT_EQ(ads_during->lease_extra, 8);
  EXPECT_EQ(ads_after->guaranteed, ads_before->guaranteed);
  EXPECT_TRUE(ads_after->lease_ended);
  EXPECT_FALSE(ads_before->lease_ended);

  gpubank::testing::ScratchDir dir;
  Producer producer((dir.path() / "ledger.db").string());
  producer.pass(before, {}, kT0);
  const auto activated = producer.pass(during, {}, kT0 + 1000);
  ASSERT_EQ(activated.size(), 1u);
  EXPECT_EQ(line(activated[0]), "QuotaSet ads " + std::to_string(ads_during->guaranteed) + " LeaseActivated");
  const auto expired = producer.pass(after, {}, kT0 + 2000);
  ASSERT_EQ(expired.size(), 1u);
  EXPECT_EQ(line(expired[0]), "QuotaSet ads " + std::to_string(ads_after->guaranteed) + " LeaseExpired");
}

}  // namespace
}  // namespace gpubank::controller
