#include "twin/cluster/cluster.hpp"

#include <algorithm>
#include <bit>
#include <set>
#include <stdexcept>
#include <utility>

#include "twin/cluster/identity.hpp"

namespace gpubank::twin::cluster {
namespace detail {

// The free units of a node, one bit per unit (a node has at most 127 units).
struct Mask {
  std::uint64_t w[2] = {0, 0};
  void set(int i) { w[i >> 6] |= std::uint64_t{1} << (i & 63); }
  void clear(int i) { w[i >> 6] &= ~(std::uint64_t{1} << (i & 63)); }
  [[nodiscard]] bool test(int i) const { return ((w[i >> 6] >> (i & 63)) & 1U) != 0; }
  // The lowest set bit at or above `from`, or -1.
  [[nodiscard]] int next(int from) const {
    if (from < 0) from = 0;
    if (from >= 128) return -1;
    int word = from >> 6;
    std::uint64_t bits = w[word] & (~std::uint64_t{0} << (from & 63));
    while (true) {
      if (bits != 0) return word * 64 + std::countr_zero(bits);
      if (++word == 2) return -1;
      bits = w[word];
    }
  }
  // The highest set bit, or -1.
  [[nodiscard]] int highest() const {
    if (w[1] != 0) return 127 - std::countl_zero(w[1]);
    if (w[0] != 0) return 63 - std::countl_zero(w[0]);
    return -1;
  }
};

constexpr int kMaxUnitsPerNode = 127;

// Nodes with the same labels, taints, model, fabric and units per node: filters are decided
// once per class, and each class indexes its nodes by their number of free units.
struct NodeClass {
  const NodeSpec* spec = nullptr;  // a representative: what filters look at
  std::string pool;
  int units_per_node = 0;
  std::vector<NodeId> nodes;  // ascending
  std::size_t words = 0;      // 64-bit words per bucket
  // bucket f (0..units_per_node): bit i set when nodes[i] has exactly f free units.
  std::vector<std::uint64_t> bits;
  std::vector<int> count;  // nodes per bucket
  Mask nonempty;           // bit f set when count[f] > 0
  // Counters (see PoolUsage).
  std::int64_t units = 0, free = 0, used = 0, unhealthy = 0, used_milli = 0;
  // Healthy units holding only shared work with milli left: (milli left, unit).
  std::set<std::pair<int, UnitId>> shared_open;

  [[nodiscard]] std::uint64_t* bucket(int f) { return bits.data() + static_cast<std::size_t>(f) * words; }
  [[nodiscard]] const std::uint64_t* bucket(int f) const {
    return bits.data() + static_cast<std::size_t>(f) * words;
  }
  // The lowest bucket >= need with a node, or -1.
  [[nodiscard]] int lowest_bucket(int need) const { return need > units_per_node ? -1 : nonempty.next(need); }
  [[nodiscard]] NodeId first_in(int f) const {
    const std::uint64_t* b = bucket(f);
    for (std::size_t i = 0; i < words; ++i) {
      if (b[i] != 0) return nodes[i * 64 + static_cast<std::size_t>(std::countr_zero(b[i]))];
    }
    return nodes.front();  // not reached: callers ask for non-empty buckets
  }
  template <class F>
  void for_each_in(int f, F&& fn) const {
    const std::uint64_t* b = bucket(f);
    for (std::size_t i = 0; i < words; ++i) {
      std::uint64_t word = b[i];
      while (word != 0) {
        fn(nodes[i * 64 + static_cast<std::size_t>(std::countr_zero(word))]);
        word &= word - 1;
      }
    }
  }
};

struct NodeState {
  std::uint32_t cls = 0;
  std::uint32_t local = 0;  // index in its class's nodes
  int free = 0;
  Mask free_mask;           // bit i: unit first_unit + i is free and healthy
  UnitId first_unit = 0;
  int units = 0;
};

struct WorkloadRecord {
  std::string key;
  bool bound = false;
  Placement placement;
};

// The classes a request's filters accept: `preferred` without untolerated
// PreferNoSchedule taints, `all` with them too (both ascending).
struct Match {
  std::vector<std::uint32_t> preferred;
  std::vector<std::uint32_t> all;
};

}  // namespace detail

using namespace detail;

struct Cluster::State {
  std::vector<NodeClass> classes;
  std::vector<NodeState> nodes;
  std::map<std::string, std::vector<std::uint32_t>, std::less<>> pools;  // pool -> classes
  std::unordered_map<std::string, NodeId> node_by_name;
  std::unordered_map<std::string, std::pair<GpuId, int>> by_uuid;  // -> (gpu, slice or -1)
  std::vector<std::vector<std::uint32_t>> holders;  // per unit: workload ids, binding order
  std::unordered_map<std::string, std::uint32_t> workload_ids;
  std::vector<WorkloadRecord> workloads;
  // Memo of request filters -> classes (a pure function of the inventory: never stale).
  mutable std::unordered_map<std::string, Match> match_memo;
};

namespace {

enum class Reject { None, Selector, Taint, Model };

bool tolerates(const Toleration& t, const Taint& taint) {
  if (t.effect && *t.effect != taint.effect) return false;
  if (t.op == TolerationOperator::Exists) return t.key.empty() || t.key == taint.key;
  return t.key == taint.key && t.value == taint.value;
}

bool tolerated(const PlacementRequest& r, const Taint& taint) {
  return std::any_of(r.tolerations.begin(), r.tolerations.end(), [&](const Toleration& t) { return tolerates(t, taint); });
}

// The first filter the class fails, and whether an untolerated PreferNoSchedule taint
// makes it a second choice.
Reject check_class(const NodeClass& c, const PlacementRequest& r, bool* penalised) {
  const NodeSpec& n = *c.spec;
  for (const auto& [key, value] : r.node_selector) {
    const auto it = n.labels.find(key);
    if (it == n.labels.end() || it->second != value) return Reject::Selector;
  }
  bool penalty = false;
  for (const auto& taint : n.taints) {
    if (tolerated(r, taint)) continue;
    if (taint.effect == TaintEffect::PreferNoSchedule) {
      penalty = true;
    } else {
      return Reject::Taint;
    }
  }
  if (!r.gpu_models.empty() && std::find(r.gpu_models.begin(), r.gpu_models.end(), n.gpu_model) == r.gpu_models.end()) {
    return Reject::Model;
  }
  if (penalised != nullptr) *penalised = penalty;
  return Reject::None;
}

void append_field(std::string& key, std::string_view s) {
  key += std::to_string(s.size());
  key += ':';
  key += s;
}

std::string filter_key(const PlacementRequest& r) {
  std::string key;
  for (const auto& [k, v] : r.node_selector) {
    append_field(key, k);
    append_field(key, v);
  }
  key += '|';
  for (const auto& t : r.tolerations) {
    append_field(key, t.key);
    key += t.op == TolerationOperator::Exists ? 'X' : 'E';
    append_field(key, t.value);
    key += t.effect ? static_cast<char>('0' + static_cast<int>(*t.effect)) : '*';
  }
  key += '|';
  for (const auto& m : r.gpu_models) append_field(key, m);
  return key;
}

std::string class_key(const NodeSpec& n) {
  std::string key;
  for (const auto& [k, v] : n.labels) {
    append_field(key, k);
    append_field(key, v);
  }
  key += '|';
  for (const auto& t : n.taints) {
    append_field(key, t.key);
    append_field(key, t.value);
    key += static_cast<char>('0' + static_cast<int>(t.effect));
  }
  key += '|';
  append_field(key, n.gpu_model);
  append_field(key, n.fabric);
  key += std::to_string(n.units());
  return key;
}

std::optional<std::string> request_problem(const PlacementRequest& r) {
  if (r.pods < 1) return "pods must be at least 1, got " + std::to_string(r.pods);
  if (r.gpus_per_pod < 1) return "GPUs per pod must be at least 1, got " + std::to_string(r.gpus_per_pod);
  if (r.gpu_milli < 0 || r.gpu_milli >= kMilliPerGpu) {
    return "gpu_milli must be 0 (whole GPUs) or 1..999, got " + std::to_string(r.gpu_milli);
  }
  if (r.gpu_milli > 0 && r.gpus_per_pod != 1) {
    return "a shared fraction (gpu_milli) needs 1 GPU per pod, got " + std::to_string(r.gpus_per_pod);
  }
  return std::nullopt;
}

struct Best {
  int f = -1;
  NodeId node = 0;
  [[nodiscard]] bool found() const { return f >= 0; }
  [[nodiscard]] bool better_than(const Best& o) const { return !o.found() || f < o.f || (f == o.f && node < o.node); }
};

}  // namespace

// ---- construction -----------------------------------------------------------------------

Cluster::Cluster(Inventory inventory) : inventory_(std::move(inventory)), state_(std::make_unique<State>()) {
  State& s = *state_;
  std::unordered_map<std::string, std::uint32_t> class_ids;
  s.nodes.resize(inventory_.nodes.size());
  for (std::size_t i = 0; i < inventory_.nodes.size(); ++i) {
    const NodeSpec& spec = inventory_.nodes[i];
    const auto id = static_cast<NodeId>(i);
    if (spec.units() < 1 || spec.units() > kMaxUnitsPerNode) {
      throw std::invalid_argument("node " + spec.name + " has " + std::to_string(spec.units()) +
                                  " units; the cluster model takes 1.." + std::to_string(kMaxUnitsPerNode));
    }
    if (!s.node_by_name.emplace(spec.name, id).second) throw std::invalid_argument("duplicate node " + spec.name);
    const auto [it, inserted] = class_ids.emplace(class_key(spec), static_cast<std::uint32_t>(s.classes.size()));
    if (inserted) {
      NodeClass c;
      c.spec = &spec;
      c.pool = std::string(spec.pool());
      c.units_per_node = spec.units();
      s.classes.push_back(std::move(c));
      s.pools[std::string(spec.pool())].push_back(it->second);
    }
    NodeClass& c = s.classes[it->second];
    NodeState& ns = s.nodes[i];
    ns.cls = it->second;
    ns.local = static_cast<std::uint32_t>(c.nodes.size());
    ns.first_unit = static_cast<UnitId>(units_.size());
    ns.units = spec.units();
    c.nodes.push_back(id);
    for (int g = 0; g < spec.gpus; ++g) {
      Gpu gpu;
      gpu.node = id;
      gpu.index = g;
      gpu.uuid = gpu_uuid(spec.name, g);
      gpu.pci_bus_id = pci_bus_id(g);
      gpu.device = device_name(g);
      gpu.first_unit = static_cast<UnitId>(units_.size());
      gpu.units = spec.mig ? spec.mig->slices_per_gpu : 1;
      const auto gpu_id = static_cast<GpuId>(gpus_.size());
      s.by_uuid.emplace(gpu.uuid, std::make_pair(gpu_id, -1));
      for (int k = 0; k < gpu.units; ++k) {
        Unit u;
        u.node = id;
        u.gpu = gpu_id;
        if (spec.mig) {
          u.slice = k;
          u.uuid = mig_uuid(spec.name, g, k);
          s.by_uuid.emplace(u.uuid, std::make_pair(gpu_id, k));
        } else {
          u.uuid = gpu.uuid;
        }
        units_.push_back(std::move(u));
      }
      gpus_.push_back(std::move(gpu));
    }
    for (int k = 0; k < ns.units; ++k) ns.free_mask.set(k);
    ns.free = ns.units;
  }
  s.holders.resize(units_.size());
  for (NodeClass& c : s.classes) {
    c.words = (c.nodes.size() + 63) / 64;
    c.bits.assign(c.words * static_cast<std::size_t>(c.units_per_node + 1), 0);
    c.count.assign(static_cast<std::size_t>(c.units_per_node + 1), 0);
    const int f = c.units_per_node;
    for (std::size_t i = 0; i < c.nodes.size(); ++i) c.bucket(f)[i / 64] |= std::uint64_t{1} << (i % 64);
    c.count[static_cast<std::size_t>(f)] = static_cast<int>(c.nodes.size());
    c.nonempty.set(f);
    c.units = static_cast<std::int64_t>(c.nodes.size()) * c.units_per_node;
    c.free = c.units;
  }
}

Cluster::~Cluster() = default;
Cluster::Cluster(Cluster&&) noexcept = default;
Cluster& Cluster::operator=(Cluster&&) noexcept = default;

// ---- state changes ----------------------------------------------------------------------

namespace {

void move_bucket(NodeClass& c, std::uint32_t local, int from, int to) {
  const std::uint64_t bit = std::uint64_t{1} << (local % 64);
  c.bucket(from)[local / 64] &= ~bit;
  if (--c.count[static_cast<std::size_t>(from)] == 0) c.nonempty.clear(from);
  c.bucket(to)[local / 64] |= bit;
  if (c.count[static_cast<std::size_t>(to)]++ == 0) c.nonempty.set(to);
}

bool is_free(const Unit& u) { return u.healthy && u.used_milli == 0 && !u.whole; }
bool is_shared_open(const Unit& u) {
  return u.healthy && !u.whole && u.used_milli > 0 && u.used_milli < kMilliPerGpu;
}

// Applies `change` to a unit and keeps every index and counter in step with it.
template <class F>
void modify_unit(Cluster::State& s, std::vector<Unit>& units, UnitId id, F&& change) {
  Unit& u = units[id];
  NodeState& ns = s.nodes[u.node];
  NodeClass& c = s.classes[ns.cls];
  const bool was_free = is_free(u);
  const bool was_open = is_shared_open(u);
  const int old_left = kMilliPerGpu - u.used_milli;
  c.used -= u.used_milli > 0 ? 1 : 0;
  c.unhealthy -= u.healthy ? 0 : 1;
  c.used_milli -= u.used_milli;
  change(u);
  c.used += u.used_milli > 0 ? 1 : 0;
  c.unhealthy += u.healthy ? 0 : 1;
  c.used_milli += u.used_milli;
  const bool now_free = is_free(u);
  const bool now_open = is_shared_open(u);
  if (was_free != now_free) {
    const int bit = static_cast<int>(id - ns.first_unit);
    const int before = ns.free;
    if (now_free) {
      ns.free_mask.set(bit);
      ++ns.free;
      ++c.free;
    } else {
      ns.free_mask.clear(bit);
      --ns.free;
      --c.free;
    }
    move_bucket(c, ns.local, before, ns.free);
  }
  const int new_left = kMilliPerGpu - u.used_milli;
  if (was_open && (!now_open || old_left != new_left)) c.shared_open.erase({old_left, id});
  if (now_open && (!was_open || old_left != new_left)) c.shared_open.emplace(new_left, id);
}

}  // namespace

// ---- finding ----------------------------------------------------------------------------

namespace {

const Match& match_for(const Cluster::State& s, const PlacementRequest& r) {
  std::string key = filter_key(r);
  const auto it = s.match_memo.find(key);
  if (it != s.match_memo.end()) return it->second;
  if (s.match_memo.size() >= 4096) s.match_memo.clear();  // bounded; rebuilt on demand
  Match m;
  for (std::uint32_t i = 0; i < s.classes.size(); ++i) {
    bool penalised = false;
    if (check_class(s.classes[i], r, &penalised) != Reject::None) continue;
    m.all.push_back(i);
    if (!penalised) m.preferred.push_back(i);
  }
  return s.match_memo.emplace(std::move(key), std::move(m)).first->second;
}

// The best-fit node with at least `need` free units among the classes.
Best best_node(const Cluster::State& s, std::span<const std::uint32_t> classes, int need) {
  Best best;
  for (const std::uint32_t ci : classes) {
    const NodeClass& c = s.classes[ci];
    const int f = c.lowest_bucket(need);
    if (f < 0) continue;
    const Best candidate{f, c.first_in(f)};
    if (candidate.better_than(best)) best = candidate;
  }
  return best;
}

// Takes `count` of the node's lowest free units, skipping the first `skip` of them.
void take_units(const NodeState& ns, int skip, int count, std::vector<UnitId>& out) {
  int bit = ns.free_mask.next(0);
  for (int i = 0; i < skip && bit >= 0; ++i) bit = ns.free_mask.next(bit + 1);
  for (int i = 0; i < count && bit >= 0; ++i) {
    out.push_back(ns.first_unit + static_cast<UnitId>(bit));
    bit = ns.free_mask.next(bit + 1);
  }
}

// Nodes of the classes in best-fit order (free units ascending from `need`, then node
// order), until fn returns false.
template <class F>
void for_each_best_fit(const Cluster::State& s, std::span<const std::uint32_t> classes, int need, F&& fn) {
  int top = -1;
  for (const std::uint32_t ci : classes) top = std::max(top, s.classes[ci].nonempty.highest());
  std::vector<NodeId> batch;
  for (int f = std::max(need, 0); f <= top; ++f) {
    batch.clear();
    for (const std::uint32_t ci : classes) {
      const NodeClass& c = s.classes[ci];
      if (f <= c.units_per_node && c.count[static_cast<std::size_t>(f)] > 0) {
        c.for_each_in(f, [&](NodeId n) { batch.push_back(n); });
      }
    }
    if (classes.size() > 1) std::sort(batch.begin(), batch.end());
    for (const NodeId n : batch) {
      if (!fn(n, f)) return;
    }
  }
}

std::optional<Placement> place_single(const Cluster::State& s, std::span<const std::uint32_t> classes, int need) {
  const Best best = best_node(s, classes, need);
  if (!best.found()) return std::nullopt;
  Placement p;
  PodPlacement pod{best.node, {}};
  take_units(s.nodes[best.node], 0, need, pod.units);
  p.pods.push_back(std::move(pod));
  return p;
}

// Pods of `need` units each, filling nodes in best-fit order.
Placement fill_best_fit(const Cluster::State& s, std::span<const std::uint32_t> classes, int pods, int need) {
  Placement p;
  int remaining = pods;
  for_each_best_fit(s, classes, need, [&](NodeId n, int f) {
    const int here = std::min(remaining, f / need);
    for (int k = 0; k < here; ++k) {
      PodPlacement pod{n, {}};
      take_units(s.nodes[n], k * need, need, pod.units);
      p.pods.push_back(std::move(pod));
    }
    remaining -= here;
    return remaining > 0;
  });
  return p;
}

std::optional<Placement> place_gang(const Cluster::State& s, std::span<const std::uint32_t> classes, int pods, int need) {
  // Candidates: the best single node without a fabric, and each fabric.
  std::vector<std::uint32_t> no_fabric;
  std::map<std::string_view, std::vector<std::uint32_t>> fabrics;
  for (const std::uint32_t ci : classes) {
    const NodeClass& c = s.classes[ci];
    if (c.spec->fabric.empty()) {
      no_fabric.push_back(ci);
    } else {
      fabrics[c.spec->fabric].push_back(ci);
    }
  }
  const std::int64_t gang = static_cast<std::int64_t>(pods) * need;
  std::int64_t best_leftover = -1;
  NodeId best_first = 0;
  const std::vector<std::uint32_t>* best_fabric = nullptr;
  Best best_single;
  if (gang <= kMaxUnitsPerNode) {
    best_single = best_node(s, no_fabric, static_cast<int>(gang));
    if (best_single.found()) {
      best_leftover = best_single.f - gang;
      best_first = best_single.node;
    }
  }
  for (const auto& [fabric, members] : fabrics) {
    std::int64_t capacity = 0, free = 0;
    for (const std::uint32_t ci : members) {
      const NodeClass& c = s.classes[ci];
      free += c.free;
      for (int f = need; f <= c.units_per_node; ++f) capacity += static_cast<std::int64_t>(c.count[static_cast<std::size_t>(f)]) * (f / need);
    }
    if (capacity < pods) continue;
    const std::int64_t leftover = free - gang;
    const NodeId first = best_node(s, members, need).node;
    if (best_leftover < 0 || leftover < best_leftover || (leftover == best_leftover && first < best_first)) {
      best_leftover = leftover;
      best_first = first;
      best_fabric = &members;
    }
  }
  if (best_leftover < 0) return std::nullopt;
  if (best_fabric == nullptr) {
    Placement p;
    for (int k = 0; k < pods; ++k) {
      PodPlacement pod{best_single.node, {}};
      take_units(s.nodes[best_single.node], k * need, need, pod.units);
      p.pods.push_back(std::move(pod));
    }
    return p;
  }
  return fill_best_fit(s, *best_fabric, pods, need);
}

std::optional<Placement> place_shared(const Cluster::State& s, std::span<const std::uint32_t> classes, int pods,
                                      int milli) {
  Placement p;
  p.gpu_milli = milli;
  int remaining = pods;
  // Shared units with room, least room first: each takes as many pods as fit.
  using Iter = std::set<std::pair<int, UnitId>>::const_iterator;
  std::vector<std::pair<Iter, Iter>> cursors;
  for (const std::uint32_t ci : classes) {
    const auto& open = s.classes[ci].shared_open;
    auto it = open.lower_bound({milli, 0});
    if (it != open.end()) cursors.emplace_back(it, open.end());
  }
  while (remaining > 0) {
    std::pair<Iter, Iter>* pick = nullptr;
    for (auto& cursor : cursors) {
      if (cursor.first != cursor.second && (pick == nullptr || *cursor.first < *pick->first)) pick = &cursor;
    }
    if (pick == nullptr) break;
    const auto [left, unit] = *pick->first;
    const int here = std::min(remaining, left / milli);
    for (int k = 0; k < here; ++k) p.pods.push_back(PodPlacement{0, {unit}});  // node: filled in by find()
    remaining -= here;
    ++pick->first;
  }
  // Then free units, best-fit node first, each unit filled before the next.
  if (remaining > 0) {
    const int per_unit = kMilliPerGpu / milli;
    for_each_best_fit(s, classes, 1, [&](NodeId n, int f) {
      std::vector<UnitId> free_units;
      take_units(s.nodes[n], 0, f, free_units);
      for (const UnitId u : free_units) {
        const int here = std::min(remaining, per_unit);
        for (int k = 0; k < here; ++k) p.pods.push_back(PodPlacement{n, {u}});
        remaining -= here;
        if (remaining == 0) return false;
      }
      return true;
    });
  }
  if (remaining > 0) return std::nullopt;
  return p;
}

}  // namespace

std::optional<Placement> Cluster::find(const PlacementRequest& r) const {
  if (request_problem(r)) return std::nullopt;
  const State& s = *state_;
  // Shapes that cannot fit even an empty cluster fail at once.
  const auto total = static_cast<std::int64_t>(units_.size());
  if (r.gpus_per_pod > kMaxUnitsPerNode) return std::nullopt;
  if (r.gpu_milli == 0 && static_cast<std::int64_t>(r.pods) * r.gpus_per_pod > total) return std::nullopt;
  if (r.gpu_milli > 0 && r.pods > total * (kMilliPerGpu / r.gpu_milli)) return std::nullopt;
  const Match& m = match_for(s, r);
  const auto attempt = [&](std::span<const std::uint32_t> classes) -> std::optional<Placement> {
    if (classes.empty()) return std::nullopt;
    if (r.gpu_milli > 0) return place_shared(s, classes, r.pods, r.gpu_milli);
    if (r.pods == 1) return place_single(s, classes, r.gpus_per_pod);
    return place_gang(s, classes, r.pods, r.gpus_per_pod);
  };
  auto placed = attempt(m.preferred);
  if (!placed && m.all.size() != m.preferred.size()) placed = attempt(m.all);
  if (placed) {
    // Shared pods on an already shared unit do not know their node yet.
    for (auto& pod : placed->pods) pod.node = units_[pod.units.front()].node;
  }
  return placed;
}

// ---- binding ----------------------------------------------------------------------------

Expected<bool> Cluster::bind(const std::string& workload, const Placement& placement) {
  State& s = *state_;
  const auto known = s.workload_ids.find(workload);
  if (known != s.workload_ids.end() && s.workloads[known->second].bound) {
    return Unexpected{"workload \"" + workload + "\" is already bound"};
  }
  if (placement.pods.empty()) return Unexpected{"the placement of \"" + workload + "\" has no pods"};
  const int milli = placement.gpu_milli;
  if (milli < 0 || milli >= kMilliPerGpu) {
    return Unexpected{"gpu_milli must be 0 or 1..999, got " + std::to_string(milli)};
  }
  // Validate everything before changing anything.
  std::vector<UnitId> all;
  for (std::size_t i = 0; i < placement.pods.size(); ++i) {
    const PodPlacement& pod = placement.pods[i];
    const std::string where = "pod " + std::to_string(i) + " of \"" + workload + "\"";
    if (pod.node >= node_count()) return Unexpected{where + ": no node " + std::to_string(pod.node)};
    if (pod.units.empty()) return Unexpected{where + ": no units"};
    if (milli > 0 && pod.units.size() != 1) return Unexpected{where + ": a shared fraction takes exactly one unit"};
    for (const UnitId u : pod.units) {
      if (u >= units_.size()) return Unexpected{where + ": no unit " + std::to_string(u)};
      const Unit& unit = units_[u];
      if (unit.node != pod.node) {
        return Unexpected{where + ": unit " + std::to_string(u) + " is on node " + node(unit.node).name + ", not " +
                          node(pod.node).name};
      }
      if (!unit.healthy) return Unexpected{where + ": unit " + unit.uuid + " is unhealthy"};
      if (unit.whole || (milli == 0 && unit.used_milli > 0)) {
        return Unexpected{where + ": unit " + std::to_string(u) + " (" + unit.uuid + ") is in use"};
      }
      all.push_back(u);
    }
  }
  std::sort(all.begin(), all.end());
  for (std::size_t i = 0; i < all.size();) {
    std::size_t j = i;
    while (j < all.size() && all[j] == all[i]) ++j;
    const auto times = static_cast<int>(j - i);
    if (milli == 0 && times > 1) return Unexpected{"unit " + std::to_string(all[i]) + " is given twice"};
    if (milli > 0 && units_[all[i]].used_milli + times * milli > kMilliPerGpu) {
      return Unexpected{"unit " + std::to_string(all[i]) + " (" + units_[all[i]].uuid + ") has " +
                        std::to_string(kMilliPerGpu - units_[all[i]].used_milli) + " milli left, " +
                        std::to_string(times * milli) + " asked"};
    }
    i = j;
  }
  std::uint32_t id = 0;
  if (known != s.workload_ids.end()) {
    id = known->second;
  } else {
    id = static_cast<std::uint32_t>(s.workloads.size());
    s.workload_ids.emplace(workload, id);
    s.workloads.push_back(WorkloadRecord{workload, false, {}});
  }
  for (const PodPlacement& pod : placement.pods) {
    for (const UnitId u : pod.units) {
      modify_unit(s, units_, u, [&](Unit& unit) {
        if (milli == 0) {
          unit.whole = true;
          unit.used_milli = kMilliPerGpu;
        } else {
          unit.used_milli += milli;
        }
      });
      s.holders[u].push_back(id);
    }
  }
  s.workloads[id].bound = true;
  s.workloads[id].placement = placement;
  return true;
}

Expected<bool> Cluster::release(const std::string& workload) {
  State& s = *state_;
  const auto known = s.workload_ids.find(workload);
  if (known == s.workload_ids.end()) return Unexpected{"workload \"" + workload + "\" was never bound"};
  WorkloadRecord& record = s.workloads[known->second];
  if (!record.bound) return true;
  const int milli = record.placement.gpu_milli;
  for (const PodPlacement& pod : record.placement.pods) {
    for (const UnitId u : pod.units) {
      modify_unit(s, units_, u, [&](Unit& unit) {
        if (milli == 0) {
          unit.whole = false;
          unit.used_milli = 0;
        } else {
          unit.used_milli -= milli;
        }
      });
      auto& h = s.holders[u];
      const auto it = std::find(h.begin(), h.end(), known->second);
      if (it != h.end()) h.erase(it);
    }
  }
  record.bound = false;
  record.placement = {};
  return true;
}

const Placement* Cluster::placement_of(std::string_view workload) const {
  const auto it = state_->workload_ids.find(std::string(workload));
  if (it == state_->workload_ids.end() || !state_->workloads[it->second].bound) return nullptr;
  return &state_->workloads[it->second].placement;
}

// ---- health -----------------------------------------------------------------------------

Expected<std::vector<std::string>> Cluster::set_gpu_health(std::string_view uuid, bool healthy, int xid) {
  State& s = *state_;
  const auto it = s.by_uuid.find(std::string(uuid));
  if (it == s.by_uuid.end()) return Unexpected{"no GPU or MIG slice with uuid \"" + std::string(uuid) + "\""};
  const auto [gpu_id, slice] = it->second;
  Gpu& gpu = gpus_[gpu_id];
  const UnitId first = slice < 0 ? gpu.first_unit : gpu.first_unit + static_cast<UnitId>(slice);
  const UnitId last = slice < 0 ? gpu.first_unit + static_cast<UnitId>(gpu.units) : first + 1;
  std::vector<std::uint32_t> ids;
  for (UnitId u = first; u < last; ++u) {
    ids.insert(ids.end(), s.holders[u].begin(), s.holders[u].end());
    modify_unit(s, units_, u, [&](Unit& unit) { unit.healthy = healthy; });
  }
  gpu.healthy = true;
  for (int k = 0; k < gpu.units; ++k) gpu.healthy = gpu.healthy && units_[gpu.first_unit + static_cast<UnitId>(k)].healthy;
  if (xid != 0) {
    ++gpu.xid_errors;
    gpu.last_xid = xid;
  }
  std::vector<std::string> out;
  for (const std::uint32_t id : ids) out.push_back(s.workloads[id].key);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

Expected<bool> Cluster::add_ecc_errors(std::string_view uuid, std::int64_t n) {
  const auto it = state_->by_uuid.find(std::string(uuid));
  if (it == state_->by_uuid.end()) return Unexpected{"no GPU or MIG slice with uuid \"" + std::string(uuid) + "\""};
  if (n < 0) return Unexpected{std::string("a count of ECC errors must not be negative")};
  gpus_[it->second.first].ecc_dbe += n;
  return true;
}

// ---- reading ----------------------------------------------------------------------------

std::optional<NodeId> Cluster::find_node(std::string_view name) const {
  const auto it = state_->node_by_name.find(std::string(name));
  if (it == state_->node_by_name.end()) return std::nullopt;
  return it->second;
}

int Cluster::node_free(NodeId id) const { return state_->nodes[id].free; }
int Cluster::node_units(NodeId id) const { return state_->nodes[id].units; }
UnitId Cluster::node_first_unit(NodeId id) const { return state_->nodes[id].first_unit; }

std::optional<GpuId> Cluster::find_gpu(std::string_view uuid) const {
  const auto it = state_->by_uuid.find(std::string(uuid));
  if (it == state_->by_uuid.end()) return std::nullopt;
  return it->second.first;
}

std::vector<std::string> Cluster::workloads_on_unit(UnitId id) const {
  std::vector<std::string> out;
  for (const std::uint32_t w : state_->holders[id]) {
    const std::string& key = state_->workloads[w].key;
    if (std::find(out.begin(), out.end(), key) == out.end()) out.push_back(key);
  }
  return out;
}

std::vector<std::string> Cluster::workloads_on_gpu(GpuId id) const {
  std::vector<std::string> out;
  const Gpu& g = gpus_[id];
  for (int k = 0; k < g.units; ++k) {
    for (auto& key : workloads_on_unit(g.first_unit + static_cast<UnitId>(k))) {
      if (std::find(out.begin(), out.end(), key) == out.end()) out.push_back(std::move(key));
    }
  }
  return out;
}

PoolUsage Cluster::pool_usage(std::string_view pool) const {
  PoolUsage u;
  const auto it = state_->pools.find(pool);
  if (it == state_->pools.end()) return u;
  for (const std::uint32_t ci : it->second) {
    const NodeClass& c = state_->classes[ci];
    u.units += c.units;
    u.free += c.free;
    u.used += c.used;
    u.unhealthy += c.unhealthy;
    u.used_milli += c.used_milli;
  }
  return u;
}

std::vector<std::string> Cluster::pool_names() const {
  std::vector<std::string> out;
  for (const auto& [name, classes] : state_->pools) out.push_back(name);
  return out;
}

// ---- explaining -------------------------------------------------------------------------

Explanation Cluster::explain(const PlacementRequest& r) const {
  const State& s = *state_;
  Explanation e;
  e.nodes_total = static_cast<int>(node_count());
  if (const auto problem = request_problem(r)) {
    e.invalid = true;
    e.message = *problem;
    return e;
  }
  std::vector<std::uint32_t> matching;
  for (std::uint32_t i = 0; i < s.classes.size(); ++i) {
    const NodeClass& c = s.classes[i];
    const auto n = static_cast<int>(c.nodes.size());
    switch (check_class(c, r, nullptr)) {
      case Reject::Selector: e.rejected_by_selector += n; break;
      case Reject::Taint: e.rejected_by_taint += n; break;
      case Reject::Model: e.rejected_by_model += n; break;
      case Reject::None:
        matching.push_back(i);
        e.nodes_matching += n;
        e.free_units += c.free;
        e.unhealthy_units += c.unhealthy;
        e.most_free_on_one_node = std::max(e.most_free_on_one_node, c.nonempty.highest());
        break;
    }
  }
  const auto placed = find(r);
  e.fits = placed.has_value();
  const int need = r.gpus_per_pod;
  if (r.gpu_milli > 0) {
    std::int64_t capacity = 0;
    for (const std::uint32_t ci : matching) {
      const NodeClass& c = s.classes[ci];
      for (const auto& [left, unit] : c.shared_open) {
        e.most_milli_left = std::max(e.most_milli_left, left);
        capacity += left / r.gpu_milli;
      }
      capacity += c.free * (kMilliPerGpu / r.gpu_milli);
      if (c.free > 0) e.most_milli_left = kMilliPerGpu;
      for (int f = 1; f <= c.units_per_node; ++f) e.nodes_with_room += c.count[static_cast<std::size_t>(f)];
    }
    e.pods_that_fit = static_cast<int>(std::min<std::int64_t>(capacity, r.pods));
  } else {
    std::int64_t best = 0;
    std::map<std::string_view, std::int64_t> per_fabric;
    for (const std::uint32_t ci : matching) {
      const NodeClass& c = s.classes[ci];
      for (int f = need; f <= c.units_per_node; ++f) {
        const int nodes = c.count[static_cast<std::size_t>(f)];
        if (nodes == 0) continue;
        e.nodes_with_room += nodes;
        const std::int64_t pods_here = static_cast<std::int64_t>(nodes) * (f / need);
        if (c.spec->fabric.empty() || r.pods == 1) {
          best = std::max<std::int64_t>(best, f / need);
        } else {
          per_fabric[c.spec->fabric] += pods_here;
        }
      }
    }
    for (const auto& [fabric, pods] : per_fabric) best = std::max(best, pods);
    e.pods_that_fit = e.fits ? r.pods : static_cast<int>(std::min<std::int64_t>(best, r.pods));
  }
  if (e.fits) {
    e.pods_that_fit = r.pods;
    e.message = "fits";
    return e;
  }
  const auto plural = [](std::int64_t n, const char* one, const char* many) {
    return std::to_string(n) + " " + (n == 1 ? one : many);
  };
  if (e.nodes_matching == 0) {
    e.message = "no node matches: of " + plural(e.nodes_total, "node", "nodes") + ", " +
                std::to_string(e.rejected_by_selector) + " fail the node selector, " +
                std::to_string(e.rejected_by_taint) + " have a taint not tolerated, " +
                std::to_string(e.rejected_by_model) + " have another GPU model";
    return e;
  }
  const std::string matched = plural(e.nodes_matching, "node matches", "nodes match");
  const std::string unhealthy =
      e.unhealthy_units > 0 ? ", " + std::to_string(e.unhealthy_units) + " unhealthy" : std::string();
  if (r.gpu_milli > 0) {
    e.message = "needs " + std::to_string(r.gpu_milli) + " milli-GPU on one GPU for each of " +
                plural(r.pods, "pod", "pods") + "; " + matched + ", the most left on one GPU is " +
                std::to_string(e.most_milli_left) + " milli, " + std::to_string(e.pods_that_fit) + " of the pods fit (" +
                std::to_string(e.free_units) + " free GPUs" + unhealthy + ")";
  } else if (r.pods == 1) {
    e.message = "needs " + plural(need, "GPU", "GPUs") + " on one node; " + matched +
                ", the most free on one node is " + std::to_string(e.most_free_on_one_node) + " (" +
                std::to_string(e.free_units) + " free in total" + unhealthy + ")";
  } else {
    e.message = "needs " + std::to_string(r.pods) + " pods x " + plural(need, "GPU", "GPUs") +
                " on one node without fabric or on one RDMA fabric; " + matched + ", at most " +
                std::to_string(e.pods_that_fit) + " of the pods fit together, the most free on one node is " +
                std::to_string(e.most_free_on_one_node) + " (" + std::to_string(e.free_units) + " free in total" +
                unhealthy + ")";
  }
  return e;
}

// ---- fragmentation ----------------------------------------------------------------------

FragmentationReport Cluster::fragmentation(std::span<const PlacementRequest> pending) const {
  const State& s = *state_;
  FragmentationReport report;
  // Per class: the fewest free units a matching whole-device request needs on a node
  // (INT_MAX: none), the smallest shared fraction of a matching shared request, and
  // whether any request matches it at all when empty.
  constexpr int kNone = 1 << 30;
  std::vector<int> whole_need(s.classes.size(), kNone);
  std::vector<int> shared_need(s.classes.size(), kNone);
  for (const PlacementRequest& r : pending) {
    if (request_problem(r)) continue;
    const Match& m = match_for(s, r);
    for (const std::uint32_t ci : m.all) {
      const NodeClass& c = s.classes[ci];
      if (r.gpu_milli > 0) {
        shared_need[ci] = std::min(shared_need[ci], r.gpu_milli);
        whole_need[ci] = std::min(whole_need[ci], 1);
        continue;
      }
      const std::int64_t need = (r.pods > 1 && c.spec->fabric.empty())
                                    ? static_cast<std::int64_t>(r.pods) * r.gpus_per_pod
                                    : r.gpus_per_pod;
      if (need <= c.units_per_node) whole_need[ci] = std::min(whole_need[ci], static_cast<int>(need));
    }
  }
  for (const auto& [pool, classes] : s.pools) {
    PoolUsage u = pool_usage(pool);
    const bool demand = std::any_of(classes.begin(), classes.end(), [&](std::uint32_t ci) {
      return whole_need[ci] != kNone || shared_need[ci] != kNone;
    });
    for (const std::uint32_t ci : classes) {
      const NodeClass& c = s.classes[ci];
      for (const auto& [left, unit] : c.shared_open) {
        u.shared_milli_left += left;
        if (demand && left < shared_need[ci]) u.shared_milli_stranded += left;
      }
      if (!demand) continue;
      const int usable_from = std::min(whole_need[ci], c.units_per_node + 1);
      for (int f = 1; f < usable_from; ++f) {
        u.stranded += static_cast<std::int64_t>(c.count[static_cast<std::size_t>(f)]) * f;
      }
    }
    report.total.units += u.units;
    report.total.free += u.free;
    report.total.used += u.used;
    report.total.unhealthy += u.unhealthy;
    report.total.used_milli += u.used_milli;
    report.total.stranded += u.stranded;
    report.total.shared_milli_left += u.shared_milli_left;
    report.total.shared_milli_stranded += u.shared_milli_stranded;
    report.pools.emplace(pool, u);
  }
  return report;
}

}  // namespace gpubank::twin::cluster
