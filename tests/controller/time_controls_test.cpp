// What holds at a time (time_controls.hpp): leases in force and tidal borrow limits
// adjusting the render, on the example policies; and the same through the reconciler into a
// FAKE API server (cluster_fixture.hpp): a lease starts and expires, a tidal window moves a
// borrowing limit.
#include "controller/time_controls.hpp"

#include <gtest/gtest.h>

#include "cluster_fixture.hpp"
#include "controller/policy_reconciler.hpp"
#include "controller/policy_source.hpp"
#include "document/node.hpp"
#include "policy/decode.hpp"
#include "policy/lease_approval.hpp"
#include "render/render.hpp"

namespace gpubank::controller {
namespace {

using nlohmann::json;

Timestamp at(const char* rfc3339) { return *parse_rfc3339(rfc3339); }

// The examples with ads-holiday-retrain (8 more guaranteed GPUs for ads on
// h100-rdma-training, 2026-12-19 00:00-20:00 UTC) approved.
std::vector<json> examples_with_approved_lease() {
  std::vector<json> objects = testing::read_objects({gpubank::testing::examples_dir() + "/policies"});
  for (json& o : objects) {
    if (o["kind"] != "CapacityLease" || o["metadata"]["name"] != "ads-holiday-retrain") continue;
    Diagnostics ignored;
    const auto decoded = policy::decode_policy(doc::from_json(o), policy::Origin{}, ignored);
    o["status"] = {{"phase", "Approved"},
                   {"approval",
                    {{"approvedBy", "user:pat"},
                     {"specHash", policy::lease_spec_hash(decoded->as<policy::CapacityLeaseSpec>())},
                     {"approvedAt", "2026-12-18T09:00:00Z"}}}};
  }
  return objects;
}

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
Rendered render_at(const std::vector<json>& objects, std::optional<Timestamp> when, TimeControls* controls = nullptr) {
  Rendered r{read_cluster_policies(objects), {}};
  render::RenderResult result = render::render(r.cluster.set, render::RenderOptions{});
  EXPECT_TRUE(result.ok());
  r.objects = std::move(result.objects);
  if (when) {
    TimeControls c = adjust_for_time(r.objects, r.cluster.set, *when);
    if (controls != nullptr) *controls = std::move(c);
  }
  return r;
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
  pass("2026-12-18T12:00:00Z");  // Friday 20:00 in Shanghai: night, no lease
  EXPECT_EQ(queue("ads-h100-rdma-training")["nominalQuota"], 16);
  EXPECT_LE(queue("search-h100-inference")["borrowingLimit"].get<std::int64_t>(), 40);
  const ReconcileReport started = pass("2026-12-19T10:00:00Z");  // lease in force
  EXPECT_EQ(queue("ads-h100-rdma-training")["nominalQuota"], 24);
  EXPECT_EQ(started.active_leases, std::vector<std::string>{"CapacityLease/ads-holiday-retrain"});
  pass("2026-12-21T04:00:00Z");  // Monday noon in Shanghai: lease over, daytime window
  EXPECT_EQ(queue("ads-h100-rdma-training")["nominalQuota"], 16);
  EXPECT_EQ(queue("search-h100-inference")["borrowingLimit"], 8);
}

}  // namespace
}  // namespace gpubank::controller
