// What holds at a time (time_controls.hpp): leases in force, tidal borrow limits, tidal
// floors and the tidal admission hold adjusting the render, on the example policies; and the
// same through the reconciler into a FAKE API server (cluster_fixture.hpp): a lease starts
// and expires, a tidal window moves a borrowing limit and a ScaledObject's floor.
#include "controller/time_controls.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>

#include "cluster_fixture.hpp"
#include "controller/policy_reconciler.hpp"
#include "controller/policy_source.hpp"
#include "bank/ledger.hpp"
#include "document/node.hpp"
#include "policy/decode.hpp"
#include "policy/lease_approval.hpp"
#include "render/render.hpp"

namespace gpubank::controller {
namespace {

using nlohmann::json;

Timestamp at(const char* rfc3339) { return *parse_rfc3339(rfc3339); }

// The examples with ads-holiday-retrain approved (cluster_fixture.hpp).
using testing::examples_with_approved_lease;

json nvidia(const std::vector<render::RenderedObject>& objects, const std::string& kind, const std::string& name) {
  for (const render::RenderedObject& o : objects) {
    if (o.manifest.value("kind", "") == kind && o.manifest["metadata"].value("name", "") == name) {
      return json::parse(o.manifest["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0].dump());
    }
  }
  return json();
}

struct Rendered {
  ClusterPolicies cluster;
  std::vector<render::RenderedObject> objects;
};
Rendered render_at(const std::vector<json>& objects, std::optional<Timestamp> when, TimeControls* controls = nullptr,
                   const bank::LedgerBook* ledger = nullptr) {
  Rendered r{read_cluster_policies(objects), {}};
  render::RenderResult result = render::render(r.cluster.set, render::RenderOptions{});
  if (!result.ok()) {
    for (const Diagnostic& d : result.diagnostics) ADD_FAILURE() << d.to_string();
  }
  r.objects = std::move(result.objects);
  if (when) {
    TimeControls c = adjust_for_time(r.objects, r.cluster.set, *when, ledger);
    if (controls != nullptr) *controls = std::move(c);
  }
  return r;
}

// The spec of the rendered ScaledObject for an InferenceScalingPolicy.
json scaled_object(const std::vector<render::RenderedObject>& objects, const std::string& name) {
  for (const render::RenderedObject& o : objects) {
    if (o.manifest.value("kind", "") == "ScaledObject" && o.manifest["metadata"].value("name", "") == name) {
      return json::parse(o.manifest["spec"].dump());
    }
  }
  return json();
}

json min_replicas_at(const std::vector<json>& objects, const char* when, const std::string& name = "customer-service-llm") {
  return scaled_object(render_at(objects, at(when)).objects, name)["minReplicaCount"];
}

bool mentions(const std::vector<std::string>& lines, const std::string& text) {
  return std::any_of(lines.begin(), lines.end(), [&](const std::string& l) { return l.find(text) != std::string::npos; });
}

TEST(TimeControls, AnApprovedLeaseMovesGpusFromTheCohortToItsQueueWhileInForce) {
  const std::vector<json> objects = examples_with_approved_lease();
  const Rendered plain = render_at(objects, std::nullopt);
  ASSERT_EQ(nvidia(plain.objects, "ClusterQueue", "ads-h100-rdma-training")["nominalQuota"], 16);
  const std::int64_t cohort = nvidia(plain.objects, "Cohort", "h100-rdma-training")["nominalQuota"].get<std::int64_t>();

  TimeControls before;
  const Rendered early = render_at(objects, at("2026-12-18T12:00:00Z"), &before);
  EXPECT_EQ(nvidia(early.objects, "ClusterQueue", "ads-h100-rdma-training")["nominalQuota"], 16);
  ASSERT_TRUE(before.next_change.has_value());
  EXPECT_LE(*before.next_change, at("2026-12-19T00:00:00Z"));  // the lease's start, or an earlier tidal boundary

  TimeControls during;
  const Rendered in_force = render_at(objects, at("2026-12-19T10:00:00Z"), &during);
  EXPECT_EQ(nvidia(in_force.objects, "ClusterQueue", "ads-h100-rdma-training")["nominalQuota"], 24);
  EXPECT_EQ(nvidia(in_force.objects, "Cohort", "h100-rdma-training")["nominalQuota"], std::max<std::int64_t>(0, cohort - 8));
  EXPECT_EQ(during.active_leases, std::vector<std::string>{"CapacityLease/ads-holiday-retrain"});
  ASSERT_TRUE(during.next_change.has_value());
  EXPECT_LE(*during.next_change, at("2026-12-19T20:00:00Z"));

  const Rendered after = render_at(objects, at("2026-12-19T20:00:00Z"));
  EXPECT_EQ(nvidia(after.objects, "ClusterQueue", "ads-h100-rdma-training")["nominalQuota"], 16);
  EXPECT_EQ(nvidia(after.objects, "Cohort", "h100-rdma-training")["nominalQuota"], cohort);
}

TEST(TimeControls, AnUnapprovedLeaseChangesNothing) {
  const std::vector<json> objects = testing::read_objects({gpubank::testing::examples_dir() + "/policies"});
  const Rendered in_window = render_at(objects, at("2026-12-19T10:00:00Z"));
  EXPECT_EQ(nvidia(in_window.objects, "ClusterQueue", "ads-h100-rdma-training")["nominalQuota"], 16);
}

// weekday-serving-training (Asia/Shanghai): training borrows at most 8 GPUs of
// h100-inference by day (from 08:30 minus prewarm and checkpoint leads), 40 by night.
TEST(TimeControls, TheTidalWindowInForceCapsTrainingBorrowing) {
  const std::vector<json> objects = testing::read_objects({gpubank::testing::examples_dir() + "/policies"});
  const Rendered plain = render_at(objects, std::nullopt);
  const std::int64_t rendered = nvidia(plain.objects, "ClusterQueue", "search-h100-inference")["borrowingLimit"].get<std::int64_t>();
  // Monday 2026-12-07 12:00 in Shanghai = 04:00 UTC: daytime.
  TimeControls day_controls;
  const Rendered day = render_at(objects, at("2026-12-07T04:00:00Z"), &day_controls);
  EXPECT_EQ(nvidia(day.objects, "ClusterQueue", "search-h100-inference")["borrowingLimit"], std::min<std::int64_t>(rendered, 8));
  ASSERT_TRUE(day_controls.next_change.has_value());
  // Monday 22:00 in Shanghai = 14:00 UTC: night.
  const Rendered night = render_at(objects, at("2026-12-07T14:00:00Z"));
  EXPECT_EQ(nvidia(night.objects, "ClusterQueue", "search-h100-inference")["borrowingLimit"],
            std::min<std::int64_t>(rendered, 40));
  // A group the policy does not target is left alone.
  EXPECT_EQ(nvidia(day.objects, "ClusterQueue", "customer-service-h100-inference"),
            nvidia(plain.objects, "ClusterQueue", "customer-service-h100-inference"));
}

// weekday-serving-training (Asia/Shanghai, no DST) targets customer-service-llm
// (minReplicas 1, maxReplicas 8): its daytime window (08:30-20:00 on weekdays) asks for 6
// replicas from its prewarm, 30m before the start, to its end; the night window's floor
// is 1. Monday 2026-12-07: prewarm 08:00 CST = 00:00Z, end 20:00 CST = 12:00Z.
TEST(TimeControls, TheTidalFloorInForceIsTheScaledObjectsMinReplicaCount) {
  const std::vector<json> objects = testing::read_objects({gpubank::testing::examples_dir() + "/policies"});
  const Rendered plain = render_at(objects, std::nullopt);
  ASSERT_EQ(scaled_object(plain.objects, "customer-service-llm")["minReplicaCount"], 1);

  EXPECT_EQ(min_replicas_at(objects, "2026-12-06T23:59:59Z"), 1);  // Monday 07:59:59 CST
  TimeControls prewarm;
  const Rendered at_prewarm = render_at(objects, at("2026-12-07T00:00:00Z"), &prewarm);
  EXPECT_EQ(scaled_object(at_prewarm.objects, "customer-service-llm")["minReplicaCount"], 6);
  EXPECT_TRUE(mentions(prewarm.adjustments,
                       "ScaledObject/customer-service/customer-service-llm: minReplicaCount 6 (tidal weekday-serving-training)"));
  // The cron triggers stay as rendered; only minReplicaCount moves.
  EXPECT_EQ(scaled_object(at_prewarm.objects, "customer-service-llm")["triggers"],
            scaled_object(plain.objects, "customer-service-llm")["triggers"]);
  EXPECT_EQ(min_replicas_at(objects, "2026-12-07T04:00:00Z"), 6);   // noon
  EXPECT_EQ(min_replicas_at(objects, "2026-12-07T11:59:59Z"), 6);   // 19:59:59, the night prewarm (floor 1) changes nothing
  EXPECT_EQ(min_replicas_at(objects, "2026-12-07T12:00:00Z"), 1);   // 20:00: the window ended
  EXPECT_EQ(min_replicas_at(objects, "2026-12-12T04:00:00Z"), 1);   // Saturday noon
  // A policy no TidalPolicy targets is left alone.
  EXPECT_EQ(scaled_object(at_prewarm.objects, "customer-service-embeddings"),
            scaled_object(plain.objects, "customer-service-embeddings"));
  TimeControls none;
  render_at(objects, at("2026-12-12T04:00:00Z"), &none);
  EXPECT_FALSE(mentions(none.adjustments, "ScaledObject/"));
}

// A pass runs at every instant the floor or the borrowing limit changes: following
// next_change from Monday 07:00 CST visits the daytime window's approaching (07:30, the
// hold's start and the limit 8), prewarm (08:00, floor 6), start (08:30, the hold's end),
// then the night window's approaching (19:22) and prewarm (19:52), and 20:00 (the day's end
// and the night's start).
TEST(TimeControls, NextChangeVisitsEveryTidalBoundary) {
  const std::vector<json> objects = testing::read_objects({gpubank::testing::examples_dir() + "/policies"});
  std::vector<std::string> visited;
  Timestamp when = at("2026-12-06T23:00:00Z");
  for (int i = 0; i < 6; ++i) {
    TimeControls controls;
    render_at(objects, when, &controls);
    ASSERT_TRUE(controls.next_change.has_value());
    when = *controls.next_change;
    visited.push_back(format_rfc3339(when));
  }
  EXPECT_EQ(visited, (std::vector<std::string>{"2026-12-06T23:30:00Z", "2026-12-07T00:00:00Z", "2026-12-07T00:30:00Z",
                                               "2026-12-07T11:22:00Z", "2026-12-07T11:52:00Z", "2026-12-07T12:00:00Z"}));
}

// The example policy moved to New York, one window 03:30-12:00 every day with a 90m
// prewarm (and the daytime limit 8, so the floor's GPUs are not lent out). On 2026-03-08 clocks jump from 02:00 EST to 03:00 EDT: the window starts at 03:30
// EDT = 07:30Z and the controller's floor 90 minutes before, 06:00Z (01:00 EST), while the
// rendered cron start "0 2 * * *" names a wall-clock time that does not exist that day.
TEST(TimeControls, TheFloorStartsPrewarmBeforeInAbsoluteTimeAcrossADstChange) {
  std::vector<json> objects = testing::read_objects({gpubank::testing::examples_dir() + "/policies"});
  for (json& o : objects) {
    if (o["kind"] != "TidalPolicy") continue;
    o["spec"]["timezone"] = "America/New_York";
    o["spec"]["windows"] = json::array({{{"name", "early-serving"},
                                         {"start", "30 3 * * *"},
                                         {"end", "0 12 * * *"},
                                         {"inferenceReplicaFloor", 6},
                                         {"prewarmBefore", "90m"},
                                         {"trainingBorrowLimit", 8}}});
  }
  const Rendered plain = render_at(objects, std::nullopt);
  const json triggers = scaled_object(plain.objects, "customer-service-llm")["triggers"];
  const auto cron = std::find_if(triggers.begin(), triggers.end(), [](const json& t) { return t["type"] == "cron"; });
  ASSERT_NE(cron, triggers.end());
  EXPECT_EQ((*cron)["metadata"]["start"], "0 2 * * *");
  EXPECT_EQ((*cron)["metadata"]["timezone"], "America/New_York");

  // The day before (EST): start 03:30 EST = 08:30Z, prewarm 07:00Z.
  EXPECT_EQ(min_replicas_at(objects, "2026-03-07T06:59:59Z"), 1);
  EXPECT_EQ(min_replicas_at(objects, "2026-03-07T07:00:00Z"), 6);
  EXPECT_EQ(min_replicas_at(objects, "2026-03-07T17:00:00Z"), 1);  // 12:00 EST: ended
  // The day of the change.
  EXPECT_EQ(min_replicas_at(objects, "2026-03-08T05:59:59Z"), 1);
  EXPECT_EQ(min_replicas_at(objects, "2026-03-08T06:00:00Z"), 6);
  EXPECT_EQ(min_replicas_at(objects, "2026-03-08T15:59:59Z"), 6);
  EXPECT_EQ(min_replicas_at(objects, "2026-03-08T16:00:00Z"), 1);  // 12:00 EDT: ended
  // The day after (EDT): start 07:30Z, prewarm 06:00Z.
  EXPECT_EQ(min_replicas_at(objects, "2026-03-09T05:59:59Z"), 1);
  EXPECT_EQ(min_replicas_at(objects, "2026-03-09T06:00:00Z"), 6);
}

// A ledger on h100-inference (Unix ms): customer-service lends; search borrows 3 GPUs and
// ads 12 before the daytime window approaches (Monday 07:30 CST = 2026-12-06T23:30Z), and
// search borrows 4 more during the hold; research never borrows there.
bank::LedgerBook h100_inference_ledger() {
  std::vector<bank::LedgerEntry> entries;
  auto add = [&](const char* when, bank::LedgerKind kind, const std::string& group, std::int64_t gpus,
                 const std::string& workload = "", const std::string& lender = "") {
    bank::LedgerEntry e;
    e.seq = static_cast<std::int64_t>(entries.size()) + 1;
    e.time_ms = std::chrono::duration_cast<std::chrono::milliseconds>(at(when).time_since_epoch()).count();
    e.kind = kind;
    e.pool = "h100-inference";
    e.business_group = group;
    e.gpus = gpus;
    if (kind == bank::LedgerKind::QuotaSet) {
      e.reason = "Policy";
      e.lending_limit = group == "customer-service" ? 24 : -1;
      e.borrowing_limit = group == "customer-service" ? 8 : 16;
    } else {
      e.flavor = "h100-inference";
      e.workload = workload;
    }
    if (kind == bank::LedgerKind::BorrowOpened) {
      e.lender = lender;
      e.record = "borrow-" + workload;
    }
    entries.push_back(e);
  };
  auto borrow = [&](const char* when, const std::string& group, std::int64_t gpus, const std::string& workload) {
    add(when, bank::LedgerKind::UsageStarted, group, gpus, workload);
    add(when, bank::LedgerKind::BorrowOpened, group, gpus, workload, "customer-service");
  };
  add("2026-12-06T20:00:00Z", bank::LedgerKind::QuotaSet, "customer-service", 32);
  add("2026-12-06T20:00:00Z", bank::LedgerKind::QuotaSet, "search", 0);
  add("2026-12-06T20:00:00Z", bank::LedgerKind::QuotaSet, "ads", 0);
  borrow("2026-12-06T23:00:00Z", "search", 3, "search/pretrain-a");
  borrow("2026-12-06T23:10:00Z", "ads", 12, "ads/ranking");
  borrow("2026-12-06T23:40:00Z", "search", 4, "search/pretrain-b");
  bank::LedgerBook book;
  const auto applied = book.apply_all(entries);
  EXPECT_TRUE(applied.ok()) << (applied ? "" : applied.error());
  return book;
}

// The daytime window raises the floor from 1 to 6 (it needs capacity), so from its
// approaching (07:30 CST) until its start (08:30 CST = 00:30Z) training may not borrow
// more than it did at 07:30: search 3 (it borrows 7 by then), ads the window's limit 8
// (less than its 12), research 0 (no position).
TEST(TimeControls, TheAdmissionHoldCapsTrainingAtWhatItBorrowedWhenTheHoldBegan) {
  const std::vector<json> objects = testing::read_objects({gpubank::testing::examples_dir() + "/policies"});
  const bank::LedgerBook ledger = h100_inference_ledger();
  const Rendered plain = render_at(objects, std::nullopt);
  ASSERT_EQ(nvidia(plain.objects, "ClusterQueue", "search-h100-inference")["borrowingLimit"], 16);
  auto limit = [&](const Rendered& r, const std::string& group) {
    return nvidia(r.objects, "ClusterQueue", group + "-h100-inference")["borrowingLimit"];
  };

  const Rendered before = render_at(objects, at("2026-12-06T23:29:59Z"), nullptr, &ledger);  // no window
  EXPECT_EQ(limit(before, "search"), 16);
  EXPECT_EQ(limit(before, "research"), 16);

  for (const char* inside : {"2026-12-06T23:30:00Z", "2026-12-06T23:45:00Z", "2026-12-07T00:10:00Z", "2026-12-07T00:29:59Z"}) {
    SCOPED_TRACE(inside);
    TimeControls controls;
    const Rendered held = render_at(objects, at(inside), &controls, &ledger);
    EXPECT_EQ(limit(held, "search"), 3);
    EXPECT_EQ(limit(held, "ads"), 8);
    EXPECT_EQ(limit(held, "research"), 0);
    EXPECT_EQ(nvidia(held.objects, "ClusterQueue", "customer-service-h100-inference"),
              nvidia(plain.objects, "ClusterQueue", "customer-service-h100-inference"));
    EXPECT_TRUE(mentions(controls.adjustments,
                         "ClusterQueue/search-h100-inference: borrowingLimit at most 3 (tidal admission hold since "
                         "2026-12-06T23:30:00Z)"));
    EXPECT_TRUE(mentions(controls.adjustments, "ClusterQueue/ads-h100-inference: borrowingLimit at most 8 (tidal)"));
  }

  // At the start the hold ends: the window's limit alone.
  const Rendered started = render_at(objects, at("2026-12-07T00:30:00Z"), nullptr, &ledger);
  EXPECT_EQ(limit(started, "search"), 8);
  EXPECT_EQ(limit(started, "research"), 8);
}

TEST(TimeControls, WithoutALedgerTheAdmissionHoldIsNotApplied) {
  const std::vector<json> objects = testing::read_objects({gpubank::testing::examples_dir() + "/policies"});
  TimeControls controls;
  const Rendered held = render_at(objects, at("2026-12-06T23:45:00Z"), &controls);
  EXPECT_EQ(nvidia(held.objects, "ClusterQueue", "search-h100-inference")["borrowingLimit"], 8);
  EXPECT_EQ(nvidia(held.objects, "ClusterQueue", "research-h100-inference")["borrowingLimit"], 8);
  EXPECT_TRUE(mentions(controls.adjustments, "TidalPolicy/weekday-serving-training: admission hold not applied, no ledger"));
  // Outside a hold nothing is said about it.
  TimeControls day;
  render_at(objects, at("2026-12-07T04:00:00Z"), &day);
  EXPECT_FALSE(mentions(day.adjustments, "admission hold"));
}

class TimeControlsOnCluster : public testing::ClusterFixture {};

TEST_F(TimeControlsOnCluster, ALeaseStartsAndExpiresAndAWindowMovesALimitInTheCluster) {
  for (json& o : examples_with_approved_lease()) put_object(o);
  auto pass = [&](const char* when) {
    auto policies = list_policies(*transport_, mapper_);
    auto live = list_managed(*transport_, mapper_);
    EXPECT_TRUE(policies.ok() && live.ok());
    ReconcileOptions options;
    options.at = at(when);
    const ReconcileReport report = reconcile_policies(*transport_, mapper_, *policies, *live, options, when);
    EXPECT_TRUE(report.rendered);
    EXPECT_EQ(report.failures(), 0U);
    return report;
  };
  auto queue = [&](const std::string& name) {
    for (const json& q : objects("kueue.x-k8s.io/v1beta2", "ClusterQueue")) {
      if (q["metadata"]["name"] == name) return q["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0];
    }
    return json();
  };
  auto floor = [&] {
    for (const json& so : objects("keda.sh/v1alpha1", "ScaledObject")) {
      if (so["metadata"]["name"] == "customer-service-llm") return so["spec"]["minReplicaCount"];
    }
    return json();
  };
  pass("2026-12-18T12:00:00Z");  // Friday 20:00 in Shanghai: night, no lease
  EXPECT_EQ(queue("ads-h100-rdma-training")["nominalQuota"], 16);
  EXPECT_LE(queue("search-h100-inference")["borrowingLimit"].get<std::int64_t>(), 40);
  EXPECT_EQ(floor(), 1);
  const ReconcileReport started = pass("2026-12-19T10:00:00Z");  // lease in force
  EXPECT_EQ(queue("ads-h100-rdma-training")["nominalQuota"], 24);
  EXPECT_EQ(started.active_leases, std::vector<std::string>{"CapacityLease/ads-holiday-retrain"});
  pass("2026-12-21T04:00:00Z");  // Monday noon in Shanghai: lease over, daytime window
  EXPECT_EQ(queue("ads-h100-rdma-training")["nominalQuota"], 16);
  EXPECT_EQ(queue("search-h100-inference")["borrowingLimit"], 8);
  EXPECT_EQ(floor(), 6);  // the daytime window's floor
  pass("2026-12-21T12:00:00Z");  // Monday 20:00 in Shanghai: the window ended
  EXPECT_EQ(floor(), 1);
}

}  // namespace
}  // namespace gpubank::controller
