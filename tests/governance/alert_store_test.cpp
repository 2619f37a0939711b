// The alert record in a real SQLite store: transitions are audit entries, a restarted
// scanner folds them back to the same open alerts and does not notify again, a foreign
// entry under the scanner's name is refused naming its seq, and the controller's checkpoint
// notices give the checkpoint grace.
#include "governance/alert_store.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>

#include "support/policy_fixture.hpp"

namespace gpubank::governance {
namespace {

constexpr std::int64_t kT0 = 1'764'000'000'000;

class AlertStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (std::filesystem::temp_directory_path() / "gpubank-alerts-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::unique_ptr<store::Store> open() {
    auto s = store::Store::open((dir_ / "governance.db").string());
    EXPECT_TRUE(s) << s.error();
    return std::move(*s);
  }
  Observed low(const std::string& uid) const {
    WorkloadFacts w;
    w.workload_uid = uid;
    w.business_group = "search";
    w.owner_id = "u1";
    w.namespace_name = "search";
    w.workload_kind = "PyTorchJob";
    w.workload = "ranker-" + uid;
    w.workload_type = "training";
    w.pool = "h100-rdma-training";
    w.gpus = 2;
    w.started_s = static_cast<double>(kT0) / 1000.0 - 36000;
    w.gpu_utilization = 1;
    w.memory_utilization = 1;
    Verdict v = assess(w, policies_, kT0);
    return {w, v};
  }

  std::filesystem::path dir_;
  std::vector<ScanPolicy> policies_ = scan_policies(gpubank::testing::examples_plus());
};

TEST_F(AlertStoreTest, ARestartedScannerContinuesAndDoesNotNotifyAgain) {
  {
    auto store = open();
    AlertBook book;
    ASSERT_TRUE(refresh(*store, book));
    const ScanResult r = step(book.open, book.last_ids, {low("a"), low("b")}, kT0);
    ASSERT_EQ(r.transitions.size(), 4u);  // Detected and Notified of each
    const auto recorded = record(*store, book, r.transitions, kT0);
    ASSERT_TRUE(recorded) << recorded.error();
    EXPECT_EQ(book.open.size(), 2u);
  }
  auto store = open();  // the scanner restarted
  AlertBook book;
  ASSERT_TRUE(refresh(*store, book));
  EXPECT_EQ(book.transitions, 4);
  ASSERT_EQ(book.open.size(), 2u);
  EXPECT_EQ(book.open.at("a").state, AlertState::Notified);
  EXPECT_EQ(book.open.at("a").notified_ms, kT0);
  EXPECT_EQ(book.last_ids.at("b"), 1);
  // Fifteen minutes later nothing is due: no second notice.
  EXPECT_TRUE(step(book.open, book.last_ids, {low("a"), low("b")}, kT0 + 900'000).transitions.empty());

  // The entries are the audit log's, chained and verifiable.
  const auto audit = store->audit(0, 10);
  ASSERT_TRUE(audit);
  ASSERT_EQ(audit->size(), 4u);
  const bank::AuditEntry& first = (*audit)[0];
  EXPECT_EQ(first.actor, "gpubank-scan");
  EXPECT_EQ(first.action, "LowUtilizationDetected");
  EXPECT_EQ(first.object, "PyTorchJob/search/ranker-a");
  EXPECT_EQ(first.decision, "Detected");
  EXPECT_EQ(first.policy_version, "LowUtilizationPolicy/training-default");
  EXPECT_EQ((*audit)[1].reason,
            "GPU utilisation 1.0% < 10.0%, memory utilisation 1.0% < 15.0%; notice delivered to owner");
  const auto verified = store::verify_store(*store);
  ASSERT_TRUE(verified);
  EXPECT_TRUE(verified->ok());
}

TEST_F(AlertStoreTest, AnEntryUnderTheScannersNameThatIsNoAlertIsRefused) {
  auto store = open();
  bank::AuditEntry forged;
  forged.time_ms = kT0;
  forged.actor = "gpubank-scan";
  forged.action = "LowUtilizationResolved";
  forged.object = "Workload/x";
  forged.decision = "Resolved";
  forged.reason = "forged";
  forged.numbers = R"({"id": "one"})";
  ASSERT_TRUE(store->append({}, std::vector<bank::AuditEntry>{forged}));
  AlertBook book;
  const auto read = refresh(*store, book);
  ASSERT_FALSE(read);
  EXPECT_EQ(read.error(), "audit entry 1: alert.id: must be an integer");
}

TEST_F(AlertStoreTest, TheControllersCheckpointNoticesGiveTheCheckpointGrace) {
  auto store = open();
  bank::AuditEntry notice;
  notice.time_ms = kT0 - 600'000;
  notice.actor = "gpubank-controller/c-0";
  notice.action = "ReclaimNoticeSent";
  notice.object = "Workload/search/pytorchjob-ranker-a-5f2c1";
  notice.decision = "CheckpointRequested";
  notice.reason = "reclaim";
  notice.numbers = "{}";
  ASSERT_TRUE(store->append({}, std::vector<bank::AuditEntry>{notice}));
  AlertBook book;
  ASSERT_TRUE(refresh(*store, book));
  Observed o = low("a");
  EXPECT_EQ(last_checkpoint(book, o.facts), kT0 - 600'000);
  o.facts.last_checkpoint_ms = last_checkpoint(book, o.facts);
  EXPECT_EQ(assess(o.facts, policies_, kT0).reason, "checkpoint-grace");
  EXPECT_FALSE(last_checkpoint(book, low("b").facts));  // ranker-b has no notice
  Observed shorter = low("a");
  shorter.facts.workload = "ranker";  // "pytorchjob-ranker-" + "a-5f2c1" is another job's
  EXPECT_FALSE(last_checkpoint(book, shorter.facts));
}

}  // namespace
}  // namespace gpubank::governance
