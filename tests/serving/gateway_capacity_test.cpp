// The capacity signals a gateway reads (serving/gateway_capacity.hpp), from a TP=4 service's
// replicas and check_shape's answer for one more replica.
#include "serving/gateway_capacity.hpp"

#include <gtest/gtest.h>

#include <chrono>

namespace gpubank::serving {
namespace {

// Two nodes of 8 H100s; the group guarantees 32 of maxCapacity 48 and uses 24.
PoolCapacity gateway_pool(int free_a, int free_b, int held_b = 0, int lent = 0) {
  PoolCapacity p;
  p.pool = "h100-inference";
  p.nodes = {NodeCapacity{"node-a", 8, free_a, 0, 0, ""}, NodeCapacity{"node-b", 8, free_b, 0, held_b, ""}};
  p.quota = QuotaView{32, 48, 24, lent, 0};
  return p;
}

CapacityInputs six_replicas(const PoolCapacity& pool) {
  CapacityInputs in;
  in.policy = "customer-service-llm";
  in.ready = 4;
  in.loading = 1;
  in.draining = 1;
  in.max_replicas = 8;
  in.queue_depth = 12;
  in.arrival_rps = 5.0;
  in.replica_rps = 1.5;
  in.model_load_time = Duration(std::chrono::minutes(6));
  in.reclaim_grace = Duration(std::chrono::minutes(10));
  ShapeRequest r;
  r.service = in.policy;
  r.shape = policy::ReplicaShape{4, 4, 1};
  r.replicas = 1;
  in.next_replica = check_shape(r, pool);
  return in;
}

TEST(GatewayCapacity, HeadroomAndAScaleOutThatFits) {
  // 4 ready x 1.5 = 6 requests/s against 5 arriving: 1 of headroom; the loading replica's
  // 1.5 is on its way. node-a has 4 free: a TP=4 replica fits, ready in the model load.
  const Capacity c = gateway_capacity(six_replicas(gateway_pool(4, 2)));
  EXPECT_EQ(c.ready, 4);
  EXPECT_EQ(c.loading, 1);
  EXPECT_EQ(c.draining, 1);
  EXPECT_DOUBLE_EQ(c.capacity_rps, 6.0);
  EXPECT_DOUBLE_EQ(c.coming_rps, 1.5);
  ASSERT_TRUE(c.headroom_rps.has_value());
  EXPECT_DOUBLE_EQ(*c.headroom_rps, 1.0);
  EXPECT_TRUE(c.scale_out_possible);
  EXPECT_EQ(c.scale_out_ready_seconds, 360.0);
  // Quota room 48 - 24 = 24, bounded by the 6 free GPUs.
  EXPECT_EQ(c.borrowable_gpus, 6);
  const auto j = to_json(c);
  EXPECT_EQ(j["replicas"]["ready"], 4);
  EXPECT_EQ(j["scaleOut"]["possible"], true);
  EXPECT_EQ(j["scaleOut"]["readySeconds"], 360.0);
  EXPECT_FALSE(j["scaleOut"].contains("blockedReason"));
}

TEST(GatewayCapacity, OverloadHasNoHeadroomAndAReclaimAddsTheGrace) {
  // 9 requests/s arriving on 6 of capacity: headroom 0, not negative. Only 2 + 3 GPUs free
  // (fragmented), but borrowers hold 4 of node-b's GPUs of the lent guarantee: the
  // replica fits after a reclaim, ready after the 10 m grace and the 6 m load.
  auto in = six_replicas(gateway_pool(2, 3, 4, 8));
  in.arrival_rps = 9.0;
  const Capacity c = gateway_capacity(in);
  EXPECT_EQ(c.headroom_rps, 0.0);
  EXPECT_TRUE(c.scale_out_possible);
  EXPECT_EQ(c.scale_out_ready_seconds, 960.0);
  EXPECT_NE(c.scale_out_message.find("back from borrowers"), std::string::npos) << c.scale_out_message;
  // 5 free + min(4 held, 8 lent) = 9, within the quota's room of 24.
  EXPECT_EQ(c.borrowable_gpus, 9);
}

TEST(GatewayCapacity, NoScaleOutAtMaxReplicasOrWhenTheShapeCannotBeFormed) {
  auto at_max = six_replicas(gateway_pool(8, 8));
  at_max.ready = 7;
  const Capacity full = gateway_capacity(at_max);
  EXPECT_FALSE(full.scale_out_possible);
  EXPECT_EQ(full.scale_out_blocked_reason, "MaxReplicas");
  EXPECT_FALSE(full.scale_out_ready_seconds.has_value());

  const Capacity fragmented = gateway_capacity(six_replicas(gateway_pool(3, 3)));
  EXPECT_FALSE(fragmented.scale_out_possible);
  EXPECT_EQ(fragmented.scale_out_blocked_reason, "Fragmented");
  EXPECT_NE(fragmented.scale_out_message.find("at most 3 on any node"), std::string::npos) << fragmented.scale_out_message;

  auto unknown = six_replicas(gateway_pool(8, 8));
  unknown.next_replica.reset();
  unknown.arrival_rps.reset();
  const Capacity blind = gateway_capacity(unknown);
  EXPECT_EQ(blind.scale_out_blocked_reason, "NoPoolView");
  EXPECT_FALSE(blind.headroom_rps.has_value());
  EXPECT_TRUE(to_json(blind)["headroomRequestsPerSecond"].is_null());
}

}  // namespace
}  // namespace gpubank::serving
