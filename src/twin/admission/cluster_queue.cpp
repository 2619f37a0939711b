// The pending queues: one ordered set per ClusterQueue, heads, inadmissible workloads and
// their requeue. Follows pkg/cache/queue/cluster_queue.go (and manager.go's
// QueueInadmissibleWorkloads).
#include "twin/admission/core_impl.hpp"

namespace gpubank::twin::admission {

// The scheduling shape: priority and, per pod set, name, count, requests and the
// placement constraints the twin models.
std::string Core::shape_of(const WorkloadSpec& w) {
  std::string s = std::to_string(w.priority);
  for (const auto& ps : w.pod_sets) {
    s += '|' + ps.name + '#' + std::to_string(ps.count);
    if (ps.min_count) s += '~' + std::to_string(*ps.min_count);  // the hash includes minCount
    for (const auto& [r, v] : ps.requests) s += ';' + r + '=' + std::to_string(v);
    for (const auto& [k, v] : ps.node_selector) s += ";ns:" + k + '=' + v;
    // Length-prefixed: keys, values and messages may hold any separator.
    const auto field = [&s](const std::string& text) { s += std::to_string(text.size()) + ':' + text; };
    for (const auto& term : ps.required_node_affinity) {
      s += ";term";
      for (const auto& r : term.match_expressions) {
        s += ";na" + std::to_string(static_cast<int>(r.op)) + ',' + std::to_string(r.values.size()) + ',' +
             std::to_string(r.errors.size()) + ',';
        field(r.key);
        for (const auto& v : r.values) field(v);
        for (const auto& e : r.errors) field(e);
      }
    }
    for (const auto& t : ps.tolerations) {
      s += ";t:" + t.key + '/' + std::to_string(static_cast<int>(t.op)) + '/' + t.value + '/' +
           (t.effect ? std::to_string(static_cast<int>(*t.effect)) : "*");
    }
  }
  return s;
}

std::uint32_t Core::shape_id(const WorkloadSpec& w) {
  return shape_ids_.try_emplace(shape_of(w), static_cast<std::uint32_t>(shape_ids_.size())).first->second;
}

// Makes a pending workload active. check_shape: a workload added or updated
// (ClusterQueue.PushOrUpdate) waits with its equivalence class if that class was
// bulk-moved to inadmissible.
void Core::push_active(WorkloadId id, bool check_shape) {
  Wl& w = wl(id);
  Queue& q = queues_[at(w.queue)];
  const OrderKey key{!(q.sticky && *q.sticky == id), w.spec.priority, w.queued_at, w.uid_label, id};
  if (w.in_pending && key.not_sticky != w.key.not_sticky) pending_erase(q, w);
  const bool was_pending = w.in_pending;
  if (!w.in_pending) {
    w.key = key;
    pending_insert(q, w);
  }
  if (check_shape && !was_pending && options_.scheduling_equivalence_hashing &&
      q.spec.queueing_strategy == QueueingStrategy::BestEffortFIFO && q.bulk_moved_shapes.contains(w.shape)) {
    set_inadmissible(q, w);
    return;
  }
  set_active(q, w);
}

Core::Queue::ShapeCount& Core::shape_count(const Queue& q, std::uint32_t shape) {
  Queue::ShapeCount& c = q.shape_counts[shape];
  if (c.parked_generation != q.generation) {
    c.parked = 0;
    c.parked_generation = q.generation;
  }
  return c;
}

// Sets a workload aside for this generation (inadmissibleWorkloads). Const: the head search
// applies a bulk move with it, which only records what the queue's state already says.
void Core::set_inadmissible(const Queue& q, const Wl& w) {
  if (w.inadmissible_generation == q.generation) return;
  w.inadmissible_generation = q.generation;
  if (!w.in_pending) return;
  ++shape_count(q, w.shape).parked;
  if (!q.bulk_moved_shapes.contains(w.shape)) --q.active_pending;
}

void Core::bulk_move(Queue& q, std::uint32_t shape) {
  if (!q.bulk_moved_shapes.insert(shape).second) return;
  const Queue::ShapeCount& c = shape_count(q, shape);
  q.active_pending -= c.pending - c.parked;
}

// With set_inadmissible and set_active, the only ways `pending` and inadmissible_generation
// change. Every head leaves its queue at the start of a cycle and most come back at the end:
// the set's nodes are kept for reuse instead of being freed and allocated again.
void Core::pending_insert(Queue& q, Wl& w) {
  if (spare_pending_nodes_.empty()) {
    q.pending.insert(w.key);
  } else {
    auto node = std::move(spare_pending_nodes_.back());
    spare_pending_nodes_.pop_back();
    node.value() = w.key;
    q.pending.insert(std::move(node));
  }
  w.in_pending = true;
  Queue::ShapeCount& c = shape_count(q, w.shape);
  ++c.pending;
  if (w.inadmissible_generation == q.generation) {
    ++c.parked;
  } else {
    if (!q.bulk_moved_shapes.contains(w.shape)) ++q.active_pending;
    scan_from_here(q, w.key);
  }
}

void Core::pending_erase(Queue& q, Wl& w) {
  const auto it = q.pending.find(w.key);
  if (it != q.pending.end()) {
    pending_erase(q, w, it);
  } else {
    w.in_pending = false;
  }
}

// The same, where the caller holds w's position (a head just found): no second search.
void Core::pending_erase(Queue& q, Wl& w, std::set<OrderKey>::const_iterator at_w) {
  auto node = q.pending.extract(at_w);
  Queue::ShapeCount& c = shape_count(q, w.shape);
  --c.pending;
  if (w.inadmissible_generation == q.generation) {
    --c.parked;
  } else if (!q.bulk_moved_shapes.contains(w.shape)) {
    --q.active_pending;
  }
  if (spare_pending_nodes_.size() < kSparePendingNodes) spare_pending_nodes_.push_back(std::move(node));
  w.in_pending = false;
}

void Core::set_active(Queue& q, Wl& w) {
  const bool was_parked = w.inadmissible_generation == q.generation;
  w.inadmissible_generation = 0;
  if (!w.in_pending) return;
  if (was_parked) {
    --shape_count(q, w.shape).parked;
    if (!q.bulk_moved_shapes.contains(w.shape)) ++q.active_pending;
  }
  scan_from_here(q, w.key);
}

void Core::push_inadmissible(WorkloadId id) {
  Wl& w = wl(id);
  Queue& q = queues_[at(w.queue)];
  const OrderKey key{!(q.sticky && *q.sticky == id), w.spec.priority, w.queued_at, w.uid_label, id};
  if (w.in_pending && key.not_sticky != w.key.not_sticky) pending_erase(q, w);
  if (!w.in_pending) {
    w.key = key;
    pending_insert(q, w);
  }
  set_inadmissible(q, w);
}

// The first active pending workload; members of a bulk-moved equivalence class are set
// aside on the way.
std::optional<WorkloadId> Core::find_head(Queue& q) {
  const auto it = find_head_at(q);
  if (it == q.pending.end()) return std::nullopt;
  return it->id;
}

// The same, as the head's position in `pending` (end(): none). Read-only for the queue's
// order: on the way it sets aside the members of a bulk-moved equivalence class and keeps
// where the search stopped, which only apply what the queue's state already says (those
// fields are mutable caches), so has_active_heads can ask without changing anything a cycle
// would decide differently.
std::set<OrderKey>::const_iterator Core::scan_for_head(const Queue& q) const {
#ifdef NDEBUG
  if (q.active_pending == 0) return q.pending.end();  // all set aside: no walk over them
#endif
  const bool known = q.scan_generation == q.generation;
  auto it = !known ? q.pending.begin() : q.scan_from ? q.pending.lower_bound(*q.scan_from) : q.pending.end();
  for (; it != q.pending.end(); ++it) {
    const Wl& w = wl(it->id);
    if (w.inadmissible_generation == q.generation) continue;
    if (!q.bulk_moved_shapes.empty() && q.bulk_moved_shapes.contains(w.shape)) {
      set_inadmissible(q, w);
      continue;
    }
    break;
  }
  q.scan_generation = q.generation;
#ifndef NDEBUG
  // Debug builds (the tests) walk anyway and hold the count to what the walk finds.
  if ((it == q.pending.end()) != (q.active_pending == 0)) {
    throw std::logic_error("twin admission: ClusterQueue " + q.spec.name + " counts " +
                           std::to_string(q.active_pending) + " active pending workloads, the walk " +
                           (it == q.pending.end() ? "found none" : "found one"));
  }
#endif
  if (it == q.pending.end()) {
    q.scan_from.reset();
  } else {
    q.scan_from = *it;
  }
  return it;
}

// preemptorWorkload.set with isSticky: `id` goes to the head of its queue's order. The
// workload it replaces, if still pending, is ordered by priority and time again.
void Core::make_sticky(Queue& q, WorkloadId id) {
  const std::optional<WorkloadId> previous = q.sticky;
  q.sticky = id;
  if (!previous || *previous == id) return;
  Wl& p = wl(*previous);
  if (!p.in_pending) return;
  pending_erase(q, p);
  p.key.not_sticky = true;
  pending_insert(q, p);
}

void Core::unqueue(WorkloadId id) {
  Wl& w = wl(id);
  if (w.queue < 0) return;
  Queue& q = queues_[at(w.queue)];
  if (w.in_pending) pending_erase(q, w);
  if (q.sticky && *q.sticky == id) q.sticky.reset();
}

// The same for the tree of any node.
void Core::requeue_tree(int node) {
  std::vector<int> stack{tree_.root(node)};
  while (!stack.empty()) {
    const int n = stack.back();
    stack.pop_back();
    const auto& x = tree_.node(n);
    if (x.is_queue) {
      Queue& q = queues_[at(node_queue_[at(n)])];
      q.bulk_moved_shapes.clear();
      ++q.generation;  // every pending workload is active again
      q.active_pending = static_cast<std::int64_t>(q.pending.size());
      continue;
    }
    for (int c : x.child_cohorts) stack.push_back(c);
    for (int c : x.child_queues) stack.push_back(c);
  }
}

}  // namespace gpubank::twin::admission
