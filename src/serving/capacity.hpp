// Can a replica shape be had in a pool, and if not, why. Before the autoscaler (or the
// tidal prewarm) asks for a replica it checks the shape against the pool as it is now: a
// TP=4 replica is four GPUs at once on one node, never "half a replica" on two. The
// answer says where each replica would go, which GPUs must first be reclaimed from
// borrowers (gracefully, through the bank), or why none can be had, with a message and
// numbers ready to become the ScaleUpBlocked event of ../shared/spec/events.md.
//
// Inputs are plain data a shell fills from the twin's cluster or from a real cluster
// (node GPUs from the device plugin, quota from Kueue's ClusterQueue status), so this
// library depends on neither.
//
// Capacity roles (policy-api.md, platform.gpubank.dev/capacity-role): of the group's
// guarantee on the pool, the serving floor is held by the service's floor replicas, the
// burst headroom is kept free (or prewarmed) for fast scale-out, and the rest is
// borrowable cold capacity that training may borrow and that must be reclaimed before an
// inference replica can use it. A request within floor + headroom should find free GPUs;
// what lies beyond comes from cold capacity (numbers headroomGpus / coldGpus).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "policy/types.hpp"

namespace gpubank::serving {

struct NodeCapacity {
  std::string name;
  int gpus = 0;       // devices of the pool's flavor on the node
  int free = 0;       // healthy and holding nothing
  int unhealthy = 0;  // never used
  // GPUs on it held by other groups' workloads that borrow from this group: reclaimable
  // gracefully (checkpoint notice, grace period) through the bank.
  int held_by_borrowers = 0;
  std::string fabric;  // RDMA fabric, for nodesPerReplica > 1; "" : none
};

// The group's quota on the pool (its ClusterQueue), in GPUs.
struct QuotaView {
  int guaranteed = 0;
  int max_capacity = 0;
  int used = 0;         // this group's admitted GPUs on the pool
  int lent = 0;         // of its guarantee, lent to others now
  int cohort_free = 0;  // unused quota it could borrow now
};

struct PoolCapacity {
  std::string pool;
  std::vector<NodeCapacity> nodes;
  QuotaView quota;
};

struct ShapeRequest {
  std::string service;
  policy::ReplicaShape shape;
  int replicas = 1;  // asked for together, each placed on what the previous left
  int serving_floor_gpus = 0;
  int burst_headroom_gpus = 0;
};

enum class ShapeOutcome { Fits, FitsAfterReclaim, Blocked };

enum class BlockedReason {
  None,
  QuotaCap,              // used + requested > maxCapacity
  Fragmented,            // enough GPUs free in total, no node (or fabric) can form the shape
  LentOut,               // its guarantee is lent out and the borrowers' GPUs do not form it either
  InsufficientCapacity,  // too few GPUs free, nothing lent to take back
  InvalidShape,          // gpuPerReplica not a positive multiple of nodesPerReplica, replicas < 1
};

// One replica: the nodes it spans (one for nodesPerReplica 1), each taking gpus_per_node.
struct ReplicaPlacement {
  std::vector<std::string> nodes;
  int gpus_per_node = 0;
};

// GPUs to take back from borrowers on a node before the placements can bind.
struct ReclaimAsk {
  std::string node;
  int gpus = 0;
};

struct ShapeDecision {
  ShapeOutcome outcome = ShapeOutcome::Blocked;
  BlockedReason reason = BlockedReason::None;
  std::vector<ReplicaPlacement> placements;  // Fits and FitsAfterReclaim: one per replica
  std::vector<ReclaimAsk> reclaim;           // FitsAfterReclaim: by node name
  int reclaim_gpus = 0;
  // One sentence naming the service, the shape, the pool, what is free and why it cannot
  // form the shape.
  std::string message;
  // requested, replicas, gpuPerReplica, nodesPerReplica, gpusPerNode, free,
  // largestFreeOnNode, unhealthy, heldByBorrowers, lent, quotaRemaining, cohortFree,
  // servingFloor, burstHeadroom, headroomGpus, coldGpus, replicasThatFit, reclaim.
  nlohmann::ordered_json numbers = nlohmann::ordered_json::object();
};

[[nodiscard]] std::string_view to_string(ShapeOutcome outcome);
// The event reason: "QuotaCap", "Fragmented", "LentOut", "InsufficientCapacity", ...
[[nodiscard]] std::string_view to_string(BlockedReason reason);

// Rules, in order:
//  1. replicas x gpuPerReplica above maxCapacity - used: Blocked/QuotaCap.
//  2. Every replica on free GPUs, one after the other, best fit: the node with the fewest
//     free GPUs that still fits (ties by name), so whole nodes stay free for big shapes.
//     A multi-node replica takes gpuPerReplica / nodesPerReplica on each of
//     nodesPerReplica distinct nodes of one fabric (nodes without a fabric cannot host
//     one); the fabric whose chosen nodes have the fewest free GPUs wins (ties by name).
//     All fit: Fits.
//  3. Otherwise the replicas that did not fit are placed again counting the GPUs
//     borrowers hold as free (at most `lent` in all, the group's own lent guarantee),
//     preferring nodes that need the least reclaimed, then best fit. All fit:
//     FitsAfterReclaim with what to reclaim where.
//  4. Otherwise Blocked: Fragmented when the free GPUs would be enough in total,
//     LentOut when part of the guarantee is lent, else InsufficientCapacity.
// A replica is never split and the replicas are all or nothing (replicasThatFit says how
// many would fit alone). Inputs are clamped to sense (negative counts are 0, free +
// unhealthy + held never above gpus).
[[nodiscard]] ShapeDecision check_shape(const ShapeRequest& request, const PoolCapacity& pool);

}  // namespace gpubank::serving
