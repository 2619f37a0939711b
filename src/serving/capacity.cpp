#include "serving/capacity.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <tuple>
#include <utility>

namespace gpubank::serving {
namespace {

struct NodeState {
  std::string name;
  std::string fabric;
  int gpus = 0;
  int free = 0;
  int unhealthy = 0;
  int held = 0;  // by borrowers, reclaimable
};

// Inputs clamped to sense: nothing negative, free + unhealthy + held never above gpus.
std::vector<NodeState> sanitize(const std::vector<NodeCapacity>& nodes) {
  std::vector<NodeState> out;
  out.reserve(nodes.size());
  for (const auto& n : nodes) {
    NodeState s;
    s.name = n.name;
    s.fabric = n.fabric;
    s.gpus = std::max(0, n.gpus);
    s.unhealthy = std::clamp(n.unhealthy, 0, s.gpus);
    s.free = std::clamp(n.free, 0, s.gpus - s.unhealthy);
    s.held = std::clamp(n.held_by_borrowers, 0, s.gpus - s.unhealthy - s.free);
    out.push_back(std::move(s));
  }
  return out;
}

struct Placed {
  ReplicaPlacement placement;
  std::vector<std::pair<std::size_t, int>> reclaimed;  // node index, GPUs
};

// Takes `per` GPUs on node i, from free first, then from what borrowers hold.
void take(std::vector<NodeState>& nodes, std::size_t i, int per, Placed& placed, int& budget) {
  NodeState& n = nodes[i];
  const int from_free = std::min(n.free, per);
  const int from_held = per - from_free;
  n.free -= from_free;
  n.held -= from_held;
  budget -= from_held;
  placed.placement.nodes.push_back(n.name);
  if (from_held > 0) placed.reclaimed.emplace_back(i, from_held);
}

// What node i can give one share of `per` GPUs: reclaim needed, or nullopt.
std::optional<int> reclaim_needed(const NodeState& n, int per, bool allow_reclaim, int budget) {
  if (n.free >= per) return 0;
  if (!allow_reclaim) return std::nullopt;
  const int need = per - n.free;
  if (need <= std::min(n.held, budget)) return need;
  return std::nullopt;
}

// One replica on one node: the least reclaim, then best fit (fewest GPUs that could be
// had), then name.
std::optional<Placed> place_single(std::vector<NodeState>& nodes, int per, bool allow_reclaim, int& budget) {
  std::optional<std::size_t> best;
  std::tuple<int, int, std::string_view> best_key;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const auto need = reclaim_needed(nodes[i], per, allow_reclaim, budget);
    if (!need) continue;
    const int could_have = nodes[i].free + (*need > 0 ? nodes[i].held : 0);
    std::tuple<int, int, std::string_view> key{*need, could_have, nodes[i].name};
    if (!best || key < best_key) {
      best = i;
      best_key = key;
    }
  }
  if (!best) return std::nullopt;
  Placed placed;
  placed.placement.gpus_per_node = per;
  take(nodes, *best, per, placed, budget);
  return placed;
}

// One replica over k nodes of one fabric, `per` GPUs on each.
std::optional<Placed> place_multi(std::vector<NodeState>& nodes, int k, int per, bool allow_reclaim, int& budget) {
  std::map<std::string_view, std::vector<std::size_t>> by_fabric;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (!nodes[i].fabric.empty()) by_fabric[nodes[i].fabric].push_back(i);
  }
  std::optional<std::vector<std::size_t>> best;
  std::tuple<int, int> best_key;  // total reclaim, GPUs the chosen nodes could give; ties: fabric order
  for (auto& [fabric, members] : by_fabric) {
    std::vector<std::tuple<int, int, std::string_view, std::size_t>> fits;
    for (std::size_t i : members) {
      const auto need = reclaim_needed(nodes[i], per, allow_reclaim, budget);
      if (!need) continue;
      const int could_have = nodes[i].free + (*need > 0 ? nodes[i].held : 0);
      fits.emplace_back(*need, could_have, nodes[i].name, i);
    }
    if (static_cast<int>(fits.size()) < k) continue;
    std::sort(fits.begin(), fits.end());
    int reclaim = 0;
    int could_have = 0;
    std::vector<std::size_t> chosen;
    for (int j = 0; j < k; ++j) {
      reclaim += std::get<0>(fits[static_cast<std::size_t>(j)]);
      could_have += std::get<1>(fits[static_cast<std::size_t>(j)]);
      chosen.push_back(std::get<3>(fits[static_cast<std::size_t>(j)]));
    }
    if (reclaim > budget) continue;
    std::tuple<int, int> key{reclaim, could_have};
    if (!best || key < best_key) {
      best = std::move(chosen);
      best_key = key;
    }
  }
  if (!best) return std::nullopt;
  Placed placed;
  placed.placement.gpus_per_node = per;
  for (std::size_t i : *best) take(nodes, i, per, placed, budget);
  return placed;
}

struct Pass {
  std::vector<Placed> placed;  // the replicas that fit, in order
  bool reclaims = false;
};

// Places the replicas one after the other on what the previous ones left. With
// allow_reclaim, a replica that finds no free GPUs may take up to `lent` GPUs in all from
// borrowers.
Pass place_all(std::vector<NodeState> nodes, const ShapeRequest& r, int per, bool allow_reclaim, int lent) {
  Pass pass;
  int budget = allow_reclaim ? lent : 0;
  const int k = r.shape.nodes_per_replica;
  for (int i = 0; i < r.replicas; ++i) {
    // Free GPUs first: a replica needs no reclaim where free ones form it.
    int no_budget = 0;
    auto placed = k == 1 ? place_single(nodes, per, false, no_budget) : place_multi(nodes, k, per, false, no_budget);
    if (!placed && allow_reclaim) {
      placed = k == 1 ? place_single(nodes, per, true, budget) : place_multi(nodes, k, per, true, budget);
    }
    if (!placed) break;
    if (!placed->reclaimed.empty()) pass.reclaims = true;
    pass.placed.push_back(std::move(*placed));
  }
  return pass;
}

// "a TP=4 replica (4 GPUs on one node)", "2 TP=8 replicas (16 GPUs each: 8 on each of 2
// nodes of one RDMA fabric)".
std::string shape_text(const policy::ReplicaShape& s, int replicas) {
  const int k = s.nodes_per_replica;
  const bool many = replicas > 1;
  std::string out = many ? std::to_string(replicas) + " TP=" : "a TP=";
  out += std::to_string(s.tensor_parallel_size) + (many ? " replicas (" : " replica (");
  if (k <= 1) {
    out += std::to_string(s.gpu_per_replica) + " GPUs on one node" + (many ? " each)" : ")");
  } else {
    out += std::to_string(s.gpu_per_replica) + " GPUs" + (many ? " each" : "") + ": " +
           std::to_string(s.gpu_per_replica / k) + " on each of " + std::to_string(k) + " nodes of one RDMA fabric)";
  }
  return out;
}

// "node-a 3, node-b 3": nodes with something of `field`, most first, then by name; six at most.
template <class Field>
std::string node_list(const std::vector<NodeState>& nodes, Field field) {
  std::vector<std::pair<int, std::string_view>> items;
  for (const auto& n : nodes) {
    if (field(n) > 0) items.emplace_back(field(n), n.name);
  }
  std::sort(items.begin(), items.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  constexpr std::size_t kShown = 6;
  std::string out;
  for (std::size_t i = 0; i < items.size() && i < kShown; ++i) {
    if (i > 0) out += ", ";
    out += std::string(items[i].second) + " " + std::to_string(items[i].first);
  }
  if (items.size() > kShown) out += ", and " + std::to_string(items.size() - kShown) + " more nodes";
  return out;
}

std::string gpus(int n) { return std::to_string(n) + (n == 1 ? " GPU" : " GPUs"); }
std::string are(int n) { return n == 1 ? " is" : " are"; }

std::string placements_text(const std::vector<Placed>& placed) {
  std::string out;
  for (std::size_t i = 0; i < placed.size(); ++i) {
    if (i > 0) out += ", ";
    const auto& nodes = placed[i].placement.nodes;
    for (std::size_t j = 0; j < nodes.size(); ++j) out += (j > 0 ? "+" : "") + nodes[j];
  }
  return out;
}

}  // namespace

std::string_view to_string(ShapeOutcome outcome) {
  switch (outcome) {
    case ShapeOutcome::Fits: return "Fits";
    case ShapeOutcome::FitsAfterReclaim: return "FitsAfterReclaim";
    case ShapeOutcome::Blocked: return "Blocked";
  }
  return "Blocked";
}

std::string_view to_string(BlockedReason reason) {
  switch (reason) {
    case BlockedReason::None: return "None";
    case BlockedReason::QuotaCap: return "QuotaCap";
    case BlockedReason::Fragmented: return "Fragmented";
    case BlockedReason::LentOut: return "LentOut";
    case BlockedReason::InsufficientCapacity: return "InsufficientCapacity";
    case BlockedReason::InvalidShape: return "InvalidShape";
  }
  return "None";
}

ShapeDecision check_shape(const ShapeRequest& r, const PoolCapacity& pool) {
  ShapeDecision d;
  const auto& s = r.shape;
  const std::string subject = r.service + " needs " + shape_text(s, std::max(1, r.replicas)) + " in " + pool.pool;
  if (r.replicas < 1 || s.nodes_per_replica < 1 || s.gpu_per_replica < 1 || s.gpu_per_replica % s.nodes_per_replica != 0) {
    d.reason = BlockedReason::InvalidShape;
    d.message = r.service + ": the replica shape (gpuPerReplica " + std::to_string(s.gpu_per_replica) +
                ", nodesPerReplica " + std::to_string(s.nodes_per_replica) + ", replicas " +
                std::to_string(r.replicas) + ") cannot be placed: gpuPerReplica must be a positive multiple of " +
                "nodesPerReplica";
    d.numbers["replicas"] = r.replicas;
    d.numbers["gpuPerReplica"] = s.gpu_per_replica;
    d.numbers["nodesPerReplica"] = s.nodes_per_replica;
    return d;
  }

  const auto nodes = sanitize(pool.nodes);
  const int per = s.gpu_per_replica / s.nodes_per_replica;
  const int requested = r.replicas * s.gpu_per_replica;
  const QuotaView& q = pool.quota;
  const int lent = std::max(0, q.lent);
  int free = 0;
  int largest = 0;
  int unhealthy = 0;
  int held = 0;
  for (const auto& n : nodes) {
    free += n.free;
    largest = std::max(largest, n.free);
    unhealthy += n.unhealthy;
    held += n.held;
  }
  const int quota_remaining = q.max_capacity - q.used;
  // Within the floor and burst headroom the GPUs should be free; beyond, they come from
  // borrowable cold capacity.
  const int headroom_left = std::max(0, r.serving_floor_gpus + r.burst_headroom_gpus - q.used);
  const int headroom_gpus = std::min(requested, headroom_left);

  auto& num = d.numbers;
  num["requested"] = requested;
  num["replicas"] = r.replicas;
  num["gpuPerReplica"] = s.gpu_per_replica;
  num["nodesPerReplica"] = s.nodes_per_replica;
  num["gpusPerNode"] = per;
  num["free"] = free;
  num["largestFreeOnNode"] = largest;
  num["unhealthy"] = unhealthy;
  num["heldByBorrowers"] = held;
  num["lent"] = lent;
  num["quotaRemaining"] = quota_remaining;
  num["cohortFree"] = std::max(0, q.cohort_free);
  num["servingFloor"] = r.serving_floor_gpus;
  num["burstHeadroom"] = r.burst_headroom_gpus;
  num["headroomGpus"] = headroom_gpus;
  num["coldGpus"] = requested - headroom_gpus;

  const std::string unhealthy_note = unhealthy > 0 ? "; " + gpus(unhealthy) + are(unhealthy) + " unhealthy" : "";
  const std::string lent_note = lent > 0 ? "; " + gpus(lent) + " of its guarantee" + are(lent) + " lent to borrowers" : "";

  if (requested > quota_remaining) {
    d.reason = BlockedReason::QuotaCap;
    num["replicasThatFit"] = 0;
    d.message = subject + " (" + gpus(requested) + ") but its group's quota allows " +
                (quota_remaining > 0 ? "only " + std::to_string(quota_remaining) + " more" : "no more") + " (" +
                std::to_string(q.used) + " used of maxCapacity " + std::to_string(q.max_capacity) + ")";
    return d;
  }

  const Pass on_free = place_all(nodes, r, per, false, 0);
  num["replicasThatFit"] = on_free.placed.size();
  if (static_cast<int>(on_free.placed.size()) == r.replicas) {
    d.outcome = ShapeOutcome::Fits;
    for (const auto& p : on_free.placed) d.placements.push_back(p.placement);
    d.message = r.service + ": " + shape_text(s, r.replicas) + " fit" + (r.replicas == 1 ? "s" : "") + " in " +
                pool.pool + " on " + placements_text(on_free.placed) + " (" + gpus(free) + " free, at most " +
                std::to_string(largest) + " on one node)";
    return d;
  }

  const Pass with_reclaim = lent > 0 ? place_all(nodes, r, per, true, lent) : Pass{};
  num["replicasAfterReclaim"] = with_reclaim.placed.size();
  const std::string free_list = free > 0 ? " (" + node_list(nodes, [](const NodeState& n) { return n.free; }) + ")" : "";
  const std::string most_text = s.nodes_per_replica == 1
                                    ? "at most " + std::to_string(largest) + " on any node"
                                    : "no RDMA fabric has " + std::to_string(s.nodes_per_replica) + " nodes with " +
                                          std::to_string(per) + " free each";
  if (static_cast<int>(with_reclaim.placed.size()) == r.replicas) {
    d.outcome = ShapeOutcome::FitsAfterReclaim;
    std::map<std::string, int> by_node;
    for (const auto& p : with_reclaim.placed) {
      d.placements.push_back(p.placement);
      for (const auto& [i, n] : p.reclaimed) by_node[nodes[i].name] += n;
    }
    std::string reclaim_list;
    for (const auto& [node, n] : by_node) {
      d.reclaim.push_back({node, n});
      d.reclaim_gpus += n;
      reclaim_list += (reclaim_list.empty() ? "" : ", ") + node + " " + std::to_string(n);
    }
    num["reclaim"] = d.reclaim_gpus;
    d.message = subject + ": " + gpus(free) + are(free) + " free but " + most_text + free_list + "; " +
                gpus(d.reclaim_gpus) + " must first be reclaimed from borrowers (" + reclaim_list + ") to place it on " +
                placements_text(with_reclaim.placed) + lent_note + unhealthy_note;
    return d;
  }

  const int fit = static_cast<int>(std::max(on_free.placed.size(), with_reclaim.placed.size()));
  const std::string partial = r.replicas > 1 && fit > 0 ? "; only " + std::to_string(fit) + " of the " +
                                                              std::to_string(r.replicas) + " replicas would fit"
                                                        : "";
  if (free >= requested) {
    d.reason = BlockedReason::Fragmented;
    d.message = subject + ": " + gpus(free) + are(free) + " free but " + most_text + free_list + partial + lent_note +
                unhealthy_note;
  } else if (lent > 0) {
    d.reason = BlockedReason::LentOut;
    d.message = subject + ": " + (free > 0 ? "only " + gpus(free) + are(free) + " free" + free_list : "no GPU is free") +
                "; " + gpus(lent) + " of its guarantee" + are(lent) + " lent to borrowers, " +
                (held > 0 ? "and the " + gpus(held) + " they hold here (" +
                                node_list(nodes, [](const NodeState& n) { return n.held; }) +
                                ") do not form the shape either"
                          : "who hold none of them on this pool's nodes") +
                partial + unhealthy_note;
  } else {
    d.reason = BlockedReason::InsufficientCapacity;
    d.message = subject + ": " + (free > 0 ? "only " + gpus(free) + are(free) + " free" + free_list : "no GPU is free") +
                ", " + std::to_string(requested) + " needed, and nothing of its guarantee is lent to take back" + partial +
                unhealthy_note;
  }
  return d;
}

}  // namespace gpubank::serving
