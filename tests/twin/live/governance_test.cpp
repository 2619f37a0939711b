// Governance on the twin in virtual time (twin/live/governance.hpp): three hours of minutes
// written by hand go through the scanner's and the reports' own code, and the figures are
// checked against arithmetic written out below.
#include <gtest/gtest.h>

#include "core/timestamp.hpp"
#include "policy/policy_set.hpp"
#include "support/paths.hpp"
#include "support/policy_fixture.hpp"
#include "twin/live/governance.hpp"

namespace gpubank::twin::live {
namespace {

constexpr std::int64_t kMinute = 60'000;

policy::PolicySet example_policies() {
  return policy::load_policy_set({testing::source_dir() + "/examples/policies"});
}

std::int64_t base_ms() {  // 00:00 in Shanghai, a multiple of the 15-minute scan period
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             parse_rfc3339("2026-11-30T16:00:00Z")->time_since_epoch())
      .count();
}

DeviceMinute held(std::string device, std::string pool, std::string model, std::string partition, std::string group,
                  std::string owner, std::string kind, std::string name, std::string type) {
  DeviceMinute d;
  d.device = std::move(device);
  d.pool = std::move(pool);
  d.gpu_model = std::move(model);
  d.partition = std::move(partition);
  d.business_group = std::move(group);
  d.owner_id = std::move(owner);
  d.namespace_name = d.business_group;
  d.workload_kind = std::move(kind);
  d.workload = name;
  d.workload_uid = "uid-" + name;
  d.workload_type = std::move(type);
  d.share = 1;
  d.pod_started_s = static_cast<double>(base_ms()) / 1000.0;
  return d;
}

// The three hours from 00:00, minute m at base + m minutes, m = 0..180:
//   notebook  research/alice, a MIG 1g.10gb slice of the development pool, 2 % busy, 10 % power
//             (notebooks-idle: window 30m, below 5 % GPU and 20 % power, startup grace 10m,
//             notify after 1h)
//   training  search/bob, an H100 of h100-rdma-training, 90 % busy until minute 120, then
//             3 %; memory 5 %; the bank's checkpoint notice at minute 170 (training-default:
//             window 60m, below 10 % GPU and 15 % memory, startup grace 30m, checkpoint grace 20m)
//   floor     customer-service's inference replica on h100-inference, 5 % busy,
//             capacity-role serving-floor (no policy covers inference)
//             Its vLLM: 1,500 tokens a minute with TTFT p95 0.4 s for minutes 0..59, 3 s for
//             60..119 (customer-service-llm's ttftP95 is 1.5 s), no requests from 120.
//   one free H100 in h100-rdma-training
// search guarantees 8 GPUs on h100-rdma-training with 4 borrowable; ads lends search 2 GPUs
// of it throughout. search's stopped workloads lose 0.5 GPU-hours of work at minute 30 and
// 0.25 at minute 100. search's ClusterQueue leaves 2 workloads pending for minutes 0..89,
// ads' none. The serving workload runs 3 pods, one idle, while it serves (minutes 0..119).
TwinGovernance three_hours(const policy::PolicySet& policies, int minutes = 180) {
  TwinGovernance g(policies);
  const std::int64_t base = base_ms();
  for (int m = 0; m <= minutes; ++m) {
    MinuteObservation o;
    o.t_ms = base + m * kMinute;
    DeviceMinute nb = held("GPU-a/1", "mig-or-shared-development", "A100", "1g.10gb", "research", "alice", "Pod",
                           "alice-nb", "notebook");
    nb.gpu_utilization = 2;
    nb.memory_utilization = 30;
    nb.power_fraction = 10;
    DeviceMinute tr = held("GPU-h1", "h100-rdma-training", "H100", "full", "search", "bob", "Job", "ranker",
                           "training");
    tr.gpu_utilization = m < 120 ? 90 : 3;
    tr.memory_utilization = 5;
    tr.power_fraction = 50;
    DeviceMinute floor = held("GPU-i1", "h100-inference", "H100", "full", "customer-service", "cs-oncall",
                              "Deployment", "customer-service-llm", "inference");
    floor.workload_uid.clear();  // a Deployment's pods carry no workload UID
    floor.capacity_role = "serving-floor";
    floor.gpu_utilization = 5;
    floor.memory_utilization = 60;
    DeviceMinute free;
    free.device = "GPU-h2";
    free.pool = "h100-rdma-training";
    free.gpu_model = "H100";
    free.partition = "full";
    o.devices = {nb, tr, floor, free};
    o.quotas = {QuotaMinute{"search", "h100-rdma-training", 8, 4}};
    o.loans = {LoanMinute{"ads", "search", "h100-rdma-training", 2}};
    if (m >= 170) o.last_checkpoint_ms["search/ranker"] = base + 170 * kMinute;
    if (m == 10) {  // search's queue admits two workloads, after 30 s and 600 s
      o.admissions = {AdmissionMinute{"search-h100-rdma-training", 30}, AdmissionMinute{"search-h100-rdma-training", 600}};
    }
    o.pending = {PendingMinute{"search-h100-rdma-training", m < 90 ? 2 : 0}, PendingMinute{"ads-h100-rdma-training", 0}};
    if (m == 30) o.recompute_loss = {LossMinute{"search", "h100-rdma-training", 0.5}};
    if (m == 100) o.recompute_loss = {LossMinute{"search", "h100-rdma-training", 0.25}};
    if (m < 120) {
      o.serving = {ServingMinute{"customer-service", "Deployment", "customer-service-llm", "", 1500,
                                 m < 60 ? 0.4 : 3.0, 3, 1, true}};
    }
    g.observe(std::move(o));
  }
  return g;
}

TEST(TwinGovernance, TheScannerRunsEveryFifteenMinutesOnTheMinutes) {
  const auto policies = example_policies();
  const TwinGovernance g = three_hours(policies);
  const auto j = g.alerts_json();
  EXPECT_EQ(j["scans"], 13);  // minutes 0, 15, ..., 180
  EXPECT_EQ(j["scannedAt"], "2026-11-30T19:00:00Z");
  EXPECT_TRUE(g.scan_error().empty()) << g.scan_error();
  // At 180: the notebook is low, the training job is low but inside its checkpoint grace,
  // the floor is not covered by any policy.
  EXPECT_EQ(j["verdicts"]["low"], 1) << j.dump();
  EXPECT_EQ(j["verdicts"]["excluded"], 1) << j.dump();
  EXPECT_EQ(j["verdicts"]["uncovered"], 1) << j.dump();
  EXPECT_EQ(j["excluded"]["checkpoint-grace"], 1) << j.dump();
}

TEST(TwinGovernance, AnIdleNotebookIsNotifiedThenEscalatedAndTheCheckpointIsNotAlerted) {
  const auto policies = example_policies();
  const TwinGovernance g = three_hours(policies);
  const std::int64_t base = base_ms();
  ASSERT_EQ(g.open_alerts().size(), 1u);
  const governance::Alert& a = g.open_alerts().begin()->second;
  EXPECT_EQ(a.workload_uid, "uid-alice-nb");
  EXPECT_EQ(a.policy, "notebooks-idle");
  // Judged from minute 30 (running as long as the 30-minute window): low at once, the owner
  // told in the same scan; escalated at the first scan an hour (notify.after) later.
  EXPECT_EQ(a.detected_ms, base + 30 * kMinute);
  EXPECT_EQ(a.notified_ms, base + 30 * kMinute);
  EXPECT_EQ(a.state, governance::AlertState::Escalated);
  EXPECT_EQ(a.escalated_ms, base + 90 * kMinute);
  EXPECT_EQ(a.evidence.business_group, "research");
  EXPECT_EQ(a.evidence.owner_id, "alice");
  EXPECT_DOUBLE_EQ(*a.evidence.gpu_utilization, 2);
  EXPECT_DOUBLE_EQ(*a.evidence.power_fraction, 10);
  // The training job's three hours never opened one: busy until 120, then inside the
  // checkpoint grace when its hour-long average fell below the thresholds.
  EXPECT_TRUE(g.resolved_alerts().empty());
}

TEST(TwinGovernance, ShowbackAndKpisAddUpToTheMinutes) {
  const auto policies = example_policies();
  const TwinGovernance g = three_hours(policies);
  const std::int64_t base = base_ms();
  auto period = governance::showback_period(base, base + 180 * kMinute);  // minutes 0..179
  ASSERT_TRUE(period);
  auto s = g.showback(*period);
  ASSERT_TRUE(s) << s.error();
  const auto& prices = policies.guardrails_spec()->gpu_hour_price;
  std::map<std::string, governance::ShowbackRow> by;
  for (const auto& r : s->rows) by[r.workload] = r;
  ASSERT_EQ(by.size(), 3u);
  // 180 device-minutes each: 3 GPU-hours.
  for (const auto& [name, r] : by) EXPECT_DOUBLE_EQ(r.allocated_gpu_hours, 3.0) << name;
  // The notebook: low in every minute after its 10-minute grace, 11..179: 169 minutes.
  EXPECT_NEAR(by["alice-nb"].low_utilization_gpu_hours, 169.0 / 60, 1e-9);
  EXPECT_NEAR(by["alice-nb"].cost, 3.0 * prices.at("A100"), 1e-9);
  // The training job: low from minute 120 (after its 30-minute grace), but not in its
  // checkpoint window: the notice at minute 170 and training-default's 20-minute checkpoint
  // grace leave out 170..179. 120..169: 50 minutes.
  EXPECT_NEAR(by["ranker"].low_utilization_gpu_hours, 50.0 / 60, 1e-9);
  EXPECT_NEAR(by["ranker"].low_utilization_cost, 50.0 / 60 * prices.at("H100"), 1e-9);
  // The floor is retention, never waste.
  EXPECT_DOUBLE_EQ(by["customer-service-llm"].serving_floor_gpu_hours, 3.0);
  EXPECT_DOUBLE_EQ(by["customer-service-llm"].low_utilization_gpu_hours, 0.0);
  // Effective: the training job busy (>= 10 %) for minutes 0..119, the notebook never
  // (2 % < 5 %), the floor within its SLO for minutes 0..59; all three measured.
  EXPECT_NEAR(by["ranker"].effective_gpu_hours, 2.0, 1e-9);
  EXPECT_NEAR(by["alice-nb"].effective_gpu_hours, 0.0, 1e-9);
  EXPECT_NEAR(by["customer-service-llm"].effective_gpu_hours, 1.0, 1e-9);
  for (const auto& [name, r] : by) EXPECT_DOUBLE_EQ(r.measured_gpu_hours, 3.0) << name;
  EXPECT_NEAR(by["customer-service-llm"].tokens, 120 * 1500.0, 1e-6);
  EXPECT_NEAR(by["customer-service-llm"].effective_tokens, 60 * 1500.0, 1e-6);
  // ads lent search 2 GPUs for 180 minutes: 6 GPU-hours each way.
  EXPECT_DOUBLE_EQ(s->loans.at({"search", "h100-rdma-training"}).borrowed_gpu_hours, 6.0);
  EXPECT_DOUBLE_EQ(s->loans.at({"ads", "h100-rdma-training"}).lent_gpu_hours, 6.0);
  EXPECT_DOUBLE_EQ(s->loans.at({"search", "h100-rdma-training"}).recompute_loss_gpu_hours, 0.75);
  EXPECT_DOUBLE_EQ(s->loans.at({"ads", "h100-rdma-training"}).recompute_loss_gpu_hours, 0.0);

  auto k = g.kpis(*period);
  ASSERT_TRUE(k) << k.error();
  bool pool_seen = false, group_seen = false;
  for (const governance::Kpi& x : *k) {
    if (x.pool != "h100-rdma-training") continue;
    if (x.business_group.empty()) {
      pool_seen = true;
      // Two devices for three hours, one held: half allocated; 50 of its 180 minutes idle.
      EXPECT_DOUBLE_EQ(x.available_gpu_hours, 6.0);
      EXPECT_DOUBLE_EQ(*x.allocation_rate, 0.5);
      EXPECT_NEAR(*x.idle_waste_share, 50.0 / 180, 1e-9);
      EXPECT_NEAR(*x.effective_utilization, 2.0 / 3, 1e-9);
    } else if (x.business_group == "search") {
      group_seen = true;
      // 8 guaranteed for 3 hours: 24 GPU-hours, 3 used; 6 of 12 borrowable GPU-hours borrowed.
      EXPECT_DOUBLE_EQ(x.available_gpu_hours, 24.0);
      EXPECT_DOUBLE_EQ(*x.allocation_rate, 3.0 / 24);
      EXPECT_DOUBLE_EQ(*x.borrow_rate, 0.5);
      // Kueue's buckets (1, 2.5, 5, ... 320, 640 s): rank 1.8 of 2 lies in (320, 640], at
      // 320 + 320 x 0.8 = 576 s; the mean is (30 + 600) / 2.
      EXPECT_DOUBLE_EQ(x.admissions, 2);
      EXPECT_DOUBLE_EQ(*x.queue_wait_mean_seconds, 315);
      EXPECT_NEAR(*x.queue_wait_p90_seconds, 576, 1e-9);
    }
  }
  EXPECT_TRUE(pool_seen && group_seen);
  // Inference: 3 H100-hours for 90,000 tokens within the SLO.
  bool serving_seen = false;
  for (const governance::Kpi& x : *k) {
    if (x.pool != "h100-inference" || x.business_group != "customer-service") continue;
    serving_seen = true;
    EXPECT_NEAR(*x.effective_utilization, 1.0 / 3, 1e-9);
    EXPECT_NEAR(*x.inference_unit_cost, 3.0 * prices.at("H100") / 0.09, 1e-9);
  }
  EXPECT_TRUE(serving_seen);

  // A period before anything was recorded holds nothing; one cut short holds its minutes.
  auto early = governance::showback_period(base - 60 * kMinute, base);
  ASSERT_TRUE(early);
  auto none = g.showback(*early);
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->rows.empty());
  auto hour = governance::showback_period(base, base + 60 * kMinute);
  auto first = g.showback(*hour);
  ASSERT_TRUE(first);
  for (const auto& r : first->rows) EXPECT_DOUBLE_EQ(r.allocated_gpu_hours, 1.0) << r.workload;
  EXPECT_DOUBLE_EQ(first->loans.at({"search", "h100-rdma-training"}).recompute_loss_gpu_hours, 0.5);
}

// With a policy on inference the scanner asks for vLLM's token throughput, and the twin
// answers it from the recorded minutes: at minute 180, serving-idle's 2h window holds minutes
// 61..180, of which 61..119 had vLLM series at 1,500 tokens a minute: 25 tokens a second.
TEST(TwinGovernance, TokenThroughputOverAServingPolicysWindow) {
  const auto policies = gpubank::testing::examples_plus(gpubank::testing::kServingIdlePolicy);
  const TwinGovernance g = three_hours(policies);
  const governance::Answers a = g.scan_answers();
  ASSERT_TRUE(a.contains("token_throughput"));
  const auto& tokens = a.at("token_throughput");
  ASSERT_EQ(tokens.size(), 1u);
  EXPECT_EQ(tokens[0].labels.at("workload"), "customer-service-llm");
  EXPECT_EQ(tokens[0].labels.at("window"), "2h");
  EXPECT_DOUBLE_EQ(tokens[0].value, 25.0);
  // Without one, no such answer.
  EXPECT_FALSE(three_hours(example_policies()).scan_answers().contains("token_throughput"));
}

TEST(TwinGovernance, TheQuotaReviewReadsTheRecordedMinutes) {
  const auto policies = example_policies();
  const TwinGovernance g = three_hours(policies);
  const auto period = governance::showback_period(base_ms(), base_ms() + 180 * kMinute);
  ASSERT_TRUE(period);
  const governance::Answers a = g.review_answers(*period);
  auto one = [&](const std::string& query) {
    EXPECT_EQ(a.at(query).size(), 1u) << query;
    return a.at(query).empty() ? serving::PromSample{} : a.at(query)[0];
  };
  // search borrowed in each of the 180 minutes; its queue had work pending in 90.
  EXPECT_EQ(one("borrowing_minutes").value, 180);
  EXPECT_EQ(one("borrowing_minutes").labels.at("borrower"), "search");
  EXPECT_EQ(one("pending_minutes").value, 90);
  EXPECT_EQ(one("pending_minutes").labels.at("cluster_queue"), "search-h100-rdma-training");
  EXPECT_EQ(a.at("cluster_queues").size(), 2u);
  // 3 pods above minReplicas 1 with one idle, minutes 0..119; both services' floor is 1.
  EXPECT_EQ(one("idle_above_floor_1").value, 120);
  // The most search held in a minute: its one H100.
  bool search_peak = false;
  for (const auto& x : a.at("peak_used")) {
    if (x.labels.at("business_group") == "search") search_peak = x.value == 1;
  }
  EXPECT_TRUE(search_peak);

  const auto findings = g.review(*period);
  ASSERT_TRUE(findings) << findings.error();
  std::map<std::string, std::string> kinds;  // kind -> subject
  for (const governance::Finding& f : *findings) kinds[f.kind] = f.subject;
  EXPECT_EQ(kinds["borrowed-most-of-the-time"], "search on h100-rdma-training");
  EXPECT_EQ(kinds["pending-long"], "ClusterQueue search-h100-rdma-training");  // 50 % > 25 %
  EXPECT_EQ(kinds["replicas-idle-above-floor"], "customer-service/customer-service-llm");  // 67 % > 50 %
  EXPECT_FALSE(kinds.contains("queue-without-policy"));
}

TEST(TwinGovernance, AMinuteSeenTwiceOrOutOfOrderIsIgnored) {
  const auto policies = example_policies();
  TwinGovernance g = three_hours(policies, 30);
  const auto before = g.showback_answers(*governance::showback_period(base_ms(), base_ms() + 31 * kMinute));
  MinuteObservation again;
  again.t_ms = base_ms() + 30 * kMinute;
  again.devices = {held("GPU-x", "h100-rdma-training", "H100", "full", "ads", "eve", "Job", "extra", "training")};
  g.observe(again);
  again.t_ms = base_ms();
  g.observe(again);
  EXPECT_EQ(g.showback_answers(*governance::showback_period(base_ms(), base_ms() + 31 * kMinute)), before);
  EXPECT_EQ(g.last_minute_ms(), base_ms() + 30 * kMinute);
}

}  // namespace
}  // namespace gpubank::twin::live
