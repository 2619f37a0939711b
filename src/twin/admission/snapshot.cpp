// Usage as the scheduler's snapshot keeps it: per ClusterQueue through the quota tree, the
// admitted workloads ranked for preemption, and the memo's state id. Follows
// pkg/cache/scheduler/clusterqueue.go and snapshot.go.
#include "twin/admission/core_impl.hpp"

namespace gpubank::twin::admission {

int Core::fr_of(int flavor, const std::string& resource, bool create) const {
  auto it = fr_index_.find({flavor, resource});
  if (it != fr_index_.end()) return it->second;
  if (!create) return -1;
  const int fr = static_cast<int>(fr_flavor_.size());
  fr_index_.emplace(std::make_pair(flavor, resource), fr);
  fr_flavor_.push_back(flavor);
  fr_resource_.push_back(resource);
  auto r = std::find(resource_names_.begin(), resource_names_.end(), resource);
  if (r == resource_names_.end()) r = resource_names_.insert(resource_names_.end(), resource);
  fr_resource_index_.push_back(static_cast<int>(r - resource_names_.begin()));
  return fr;
}

int Core::height(int n) const {  // classical.getNodeHeight
  const auto& x = tree_.node(n);
  int h = std::min<int>(static_cast<int>(x.child_cohorts.size() + x.child_queues.size()), 1);
  for (int c : x.child_cohorts) h = std::max(h, height(c) + 1);
  return h;
}

void Core::add_usage(int queue, const Usage& u) {
  changed();
  for (const auto& [fr, v] : u) tree_.add_usage(queues_[at(queue)].node, fr, v);
}

void Core::remove_usage(int queue, const Usage& u) {
  changed();
  for (const auto& [fr, v] : u) tree_.remove_usage(queues_[at(queue)].node, fr, v);
}

// CandidatesOrdering within one queue for admitted workloads: lower priority, then the
// newest reservation, then UID. The key is kept in `ranked` with the id, so a search
// reads that array only, not the record of every workload it compares with; the UID's
// first eight bytes decide before its label (see uid_prefix).
RankEntry Core::rank_entry(WorkloadId id) const {
  const Wl& w = wl(id);
  const bool one = w.usage.size() == 1;
  return RankEntry{w.spec.priority, id, w.reserved_at, w.uid_prefix, w.uid_label, w.queued_at,
                   one ? w.usage.front().first : -1, one ? w.usage.front().second : Amount{-1}};
}

bool Core::rank_before(const RankEntry& x, const RankEntry& y) { return x.rank() < y.rank(); }

void Core::rank(Queue& q, WorkloadId id) {
  const RankEntry key = rank_entry(id);
  q.ranked.insert(std::lower_bound(q.ranked.begin(), q.ranked.end(), key, rank_before), key);
}

void Core::unrank(Queue& q, WorkloadId id) {
  auto it = std::lower_bound(q.ranked.begin(), q.ranked.end(), rank_entry(id), rank_before);
  if (it == q.ranked.end() || it->id != id) throw std::logic_error("admission core: ranked index out of step");
  q.ranked.erase(it);
}

void Core::hold(WorkloadId id) {  // the workload is Admitted with its reserved_at set
  Wl& w = wl(id);
  Queue& q = queues_[at(w.queue)];
  w.holding_pos = q.holding.size();
  q.holding.push_back(id);
  rank(q, id);
  add_workload(id);
  if (admissions_.size() != tree_.size()) admissions_.assign(tree_.size(), 0);
  for (int a = tree_.parent(q.node); a >= 0; a = tree_.parent(a)) ++admissions_[at(a)];
}

void Core::mark_evicted(WorkloadId id) {
  Wl& w = wl(id);
  Queue& q = queues_[at(w.queue)];
  unrank(q, id);
  w.evicted_pos = q.evicted.size();
  q.evicted.push_back(id);
  w.phase = WorkloadPhase::Evicted;
}

void Core::release(WorkloadId id) {
  Wl& w = wl(id);
  Queue& q = queues_[at(w.queue)];
  if (w.phase == WorkloadPhase::Evicted) {
    const WorkloadId last_evicted = q.evicted.back();
    q.evicted[w.evicted_pos] = last_evicted;
    wl(last_evicted).evicted_pos = w.evicted_pos;
    q.evicted.pop_back();
  } else {
    unrank(q, id);
  }
  remove_workload(id);
  const WorkloadId last = q.holding.back();
  q.holding[w.holding_pos] = last;
  wl(last).holding_pos = w.holding_pos;
  q.holding.pop_back();
  w.usage.clear();
}

bool Core::fits(int queue, const Usage& u) const {  // ClusterQueueSnapshot.Fits
  const int n = queues_[at(queue)].node;
  return std::all_of(u.begin(), u.end(), [&](const auto& p) { return p.second <= tree_.available(n, p.first); });
}

}  // namespace gpubank::twin::admission
