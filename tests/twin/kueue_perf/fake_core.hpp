// A test double of the admission core for the runner's own tests: NOT Kueue. Each
// ClusterQueue admits from its nominal quota only (no cohort, no borrowing); pending
// workloads are ordered by priority (higher first), then creation, then id; one head per
// queue per cycle; a head that does not fit evicts the queue's admitted workloads of lower
// priority (lowest first, then most recently admitted) when `preempt` is set, else the
// queue waits for quota to be released. Simple enough to work out runs by hand.
#pragma once

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "twin/admission/core.hpp"

namespace gpubank::twin::testing {

class FakeCore final : public AdmissionCore {
 public:
  FakeCore(const std::vector<ClusterQueueSpec>& queues, bool preempt) : preempt_(preempt) {
    for (const auto& q : queues) {
      Queue state;
      state.nominal = q.resource_groups.at(0).flavors.at(0).resources.at(0).nominal;
      state.flavor = q.resource_groups.at(0).flavors.at(0).flavor;
      queues_.emplace(q.name, state);
    }
  }

  WorkloadId submit(WorkloadSpec spec, VirtualTime) override {
    const auto id = static_cast<WorkloadId>(workloads_.size());
    Queue& q = queues_.at(spec.cluster_queue);
    workloads_.push_back({std::move(spec), {}});
    q.pending.insert(key(id));
    q.blocked = false;
    return id;
  }
  Expected<WorkloadId> restore_admitted(WorkloadSpec, Admission, VirtualTime) override {
    return Unexpected{"not supported by the fake"};
  }
  void finish(WorkloadId id, VirtualTime) override {
    auto& w = workloads_.at(id);
    Queue& q = queues_.at(w.spec.cluster_queue);
    q.usage -= request(id);
    q.admitted.erase(id);
    q.blocked = false;
    w.status.phase = WorkloadPhase::Finished;
  }
  Expected<bool> set_quota(const std::string&, const std::string&, const ResourceQuota&) override {
    return Unexpected{"FakeCore: quota changes are not scripted"};
  }
  Expected<bool> set_cohort_quota(const std::string&, const std::string&, const ResourceQuota&) override {
    return Unexpected{"FakeCore: quota changes are not scripted"};
  }
  Expected<bool> set_priority(WorkloadId, std::int32_t) override {
    return Unexpected{"FakeCore: priority changes are not scripted"};
  }
  Expected<bool> evict(WorkloadId, const std::string&, const std::string&, VirtualTime) override {
    return Unexpected{"FakeCore: evictions outside a cycle are not scripted"};
  }
  Expected<bool> evict_stopped(WorkloadId, const std::string&, const std::string&, VirtualTime) override {
    return Unexpected{"FakeCore: evictions outside a cycle are not scripted"};
  }
  Expected<bool> forget(WorkloadId id) override {
    auto& w = workloads_.at(id);
    if (w.status.phase != WorkloadPhase::Finished) return Unexpected{"FakeCore: only a finished workload is forgotten"};
    if (refuse_forget) return Unexpected{"FakeCore: told to refuse"};
    ++forgotten;
    return true;
  }
  int forgotten = 0;
  bool refuse_forget = false;
  void release_evicted(WorkloadId id, VirtualTime) override {
    auto& w = workloads_.at(id);
    Queue& q = queues_.at(w.spec.cluster_queue);
    q.usage -= request(id);
    q.admitted.erase(id);
    q.pending.insert(key(id));
    q.blocked = false;
    w.status.phase = WorkloadPhase::Pending;
    w.status.admission.reset();
  }

  void do_run_cycle(VirtualTime now, CycleResult& r) override {
    r = CycleResult{};
    r.cycle = ++cycles_;
    r.time = now;
    for (auto& [name, q] : queues_) {
      if (q.pending.empty() || q.blocked) continue;
      ++r.heads;
      const WorkloadId head = std::get<3>(*q.pending.begin());
      const Amount need = request(head);
      if (q.usage + need <= q.nominal) {
        q.pending.erase(q.pending.begin());
        q.usage += need;
        q.admitted.insert(head);
        auto& st = workloads_[head].status;
        st.phase = WorkloadPhase::Admitted;
        st.admitted_at = now;
        st.admission = Admission{name, {PodSetAssignment{"main", {{"cpu", q.flavor}}, {{"cpu", need}}, 1}}};
        r.decisions.push_back({Decision::Kind::Admitted, head, name, "QuotaReserved", "", {}});
        continue;
      }
      std::vector<WorkloadId> victims;
      if (preempt_) {
        // Lowest priority first, then most recently admitted.
        std::vector<WorkloadId> candidates;
        for (WorkloadId a : q.admitted) {
          if (workloads_[a].spec.priority < workloads_[head].spec.priority) candidates.push_back(a);
        }
        std::sort(candidates.begin(), candidates.end(), [&](WorkloadId a, WorkloadId b) {
          const auto& sa = workloads_[a];
          const auto& sb = workloads_[b];
          return std::make_tuple(sa.spec.priority, -sa.status.admitted_at, a) <
                 std::make_tuple(sb.spec.priority, -sb.status.admitted_at, b);
        });
        Amount freed = 0;
        for (WorkloadId c : candidates) {
          if (q.usage - freed + need <= q.nominal) break;
          victims.push_back(c);
          freed += request(c);
        }
        if (q.usage - freed + need > q.nominal) victims.clear();
      }
      if (victims.empty()) {
        q.blocked = true;
        r.decisions.push_back({Decision::Kind::Pending, head, name, "Pending", "insufficient quota", {}});
        continue;
      }
      for (WorkloadId v : victims) {
        workloads_[v].status.phase = WorkloadPhase::Evicted;
        r.evicted.push_back(v);
      }
      r.decisions.push_back({Decision::Kind::PreemptionIssued, head, name, "Pending", "", victims});
    }
  }

  [[nodiscard]] bool has_active_heads() const override {
    return std::any_of(queues_.begin(), queues_.end(),
                       [](const auto& e) { return !e.second.pending.empty() && !e.second.blocked; });
  }
  [[nodiscard]] std::size_t workload_count() const override { return workloads_.size(); }
  [[nodiscard]] const WorkloadSpec& spec(WorkloadId id) const override { return workloads_.at(id).spec; }
  [[nodiscard]] WorkloadStatus status(WorkloadId id) const override { return workloads_.at(id).status; }
  [[nodiscard]] WorkloadPhase phase(WorkloadId id) const override { return workloads_.at(id).status.phase; }
  [[nodiscard]] std::vector<std::string> cluster_queue_names() const override {
    std::vector<std::string> out;
    for (const auto& [name, q] : queues_) out.push_back(name);
    return out;
  }
  [[nodiscard]] std::vector<std::string> cohort_names() const override { return {}; }
  [[nodiscard]] ClusterQueueStatus cluster_queue_status(const std::string& name) const override {
    ClusterQueueStatus s;
    s.name = name;
    return s;
  }
  [[nodiscard]] std::optional<QuotaFigures> figures(const std::string&, const std::string&,
                                                    const std::string&) const override {
    return std::nullopt;
  }
  [[nodiscard]] std::uint64_t cycles() const { return cycles_; }

 private:
  using Key = std::tuple<std::int32_t, VirtualTime, std::string, WorkloadId>;  // -priority, creation, uid, id
  struct Queue {
    Amount nominal = 0, usage = 0;
    std::string flavor;
    std::set<Key> pending;
    std::set<WorkloadId> admitted;
    bool blocked = false;
  };
  struct Workload {
    WorkloadSpec spec;
    WorkloadStatus status;
  };

  Key key(WorkloadId id) const {
    const auto& s = workloads_[id].spec;
    return {-s.priority, s.creation, s.uid, id};
  }
  Amount request(WorkloadId id) const {
    const auto& ps = workloads_[id].spec.pod_sets.at(0);
    return ps.requests.at(0).second * ps.count;
  }

  bool preempt_;
  std::map<std::string, Queue> queues_;
  std::vector<Workload> workloads_;
  std::uint64_t cycles_ = 0;
};

}  // namespace gpubank::twin::testing
