// A scripted twin::AdmissionCore for tests of code that drives the core (src/kueue's
// admission run): it records what it is given, and each cycle runs the test's script.
// Nothing here decides like Kueue does.
#pragma once

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "twin/admission/core.hpp"

namespace gpubank::testing {

class FakeAdmissionCore : public twin::AdmissionCore {
 public:
  using Script = std::function<twin::CycleResult(FakeAdmissionCore&, twin::VirtualTime)>;

  std::vector<twin::WorkloadSpec> specs;
  std::vector<twin::WorkloadStatus> statuses;
  std::vector<std::pair<twin::WorkloadId, twin::VirtualTime>> submitted, released, finished;
  std::vector<std::string> queues{"cq"};
  std::map<std::string, twin::ClusterQueueStatus> queue_status;
  Script script;
  std::size_t cycles_run = 0;

  twin::WorkloadId submit(twin::WorkloadSpec spec, twin::VirtualTime now) override {
    const auto id = static_cast<twin::WorkloadId>(specs.size());
    specs.push_back(std::move(spec));
    statuses.emplace_back();
    submitted.emplace_back(id, now);
    return id;
  }

  Expected<twin::WorkloadId> restore_admitted(twin::WorkloadSpec spec, twin::Admission admission,
                                              twin::VirtualTime admitted_at) override {
    if (std::find(queues.begin(), queues.end(), admission.cluster_queue) == queues.end()) {
      return Unexpected{"ClusterQueue " + admission.cluster_queue + " not found"};
    }
    const auto id = static_cast<twin::WorkloadId>(specs.size());
    specs.push_back(std::move(spec));
    twin::WorkloadStatus st;
    st.phase = twin::WorkloadPhase::Admitted;
    st.admission = std::move(admission);
    st.admitted_at = admitted_at;
    st.conditions = {{"QuotaReserved", true, "QuotaReserved", "restored", admitted_at},
                     {"Admitted", true, "Admitted", "restored", admitted_at}};
    statuses.push_back(std::move(st));
    return id;
  }

  void finish(twin::WorkloadId id, twin::VirtualTime now) override {
    statuses[id].phase = twin::WorkloadPhase::Finished;
    finished.emplace_back(id, now);
  }

  Expected<bool> set_quota(const std::string&, const std::string&, const twin::ResourceQuota&) override {
    return Unexpected{"FakeAdmissionCore: quota changes are not scripted"};
  }
  Expected<bool> set_cohort_quota(const std::string&, const std::string&, const twin::ResourceQuota&) override {
    return Unexpected{"FakeAdmissionCore: quota changes are not scripted"};
  }
  Expected<bool> set_priority(twin::WorkloadId id, std::int32_t priority) override {
    if (statuses[id].phase != twin::WorkloadPhase::Admitted) return Unexpected{std::string("not admitted")};
    if (specs[id].priority == priority) return false;
    specs[id].priority = priority;
    return true;
  }
  Expected<bool> evict(twin::WorkloadId, const std::string&, const std::string&, twin::VirtualTime) override {
    return Unexpected{"FakeAdmissionCore: evictions outside a cycle are not scripted"};
  }
  Expected<bool> evict_stopped(twin::WorkloadId, const std::string&, const std::string&, twin::VirtualTime) override {
    return Unexpected{"FakeAdmissionCore: evictions outside a cycle are not scripted"};
  }
  gpubank::Expected<bool> forget(twin::WorkloadId id) override {
    if (statuses.at(id).phase != twin::WorkloadPhase::Finished) {
      return gpubank::Unexpected{"FakeAdmissionCore: only a finished workload is forgotten"};
    }
    return true;
  }
  void release_evicted(twin::WorkloadId id, twin::VirtualTime now) override {
    statuses[id].phase = twin::WorkloadPhase::Pending;
    statuses[id].admission.reset();
    released.emplace_back(id, now);
  }

  void do_run_cycle(twin::VirtualTime now, twin::CycleResult& r) override {
    ++cycles_run;
    r = script ? script(*this, now) : twin::CycleResult{};
    r.time = now;
  }

  // Active heads while some workload is pending and not marked inadmissible (or forever,
  // to test the cap).
  bool always_active = false;
  std::set<twin::WorkloadId> inadmissible;
  [[nodiscard]] bool has_active_heads() const override {
    if (always_active) return true;
    for (std::size_t id = 0; id < statuses.size(); ++id) {
      if (statuses[id].phase == twin::WorkloadPhase::Pending && !inadmissible.contains(static_cast<twin::WorkloadId>(id))) {
        return true;
      }
    }
    return false;
  }

  [[nodiscard]] std::size_t workload_count() const override { return specs.size(); }
  [[nodiscard]] const twin::WorkloadSpec& spec(twin::WorkloadId id) const override { return specs[id]; }
  [[nodiscard]] twin::WorkloadStatus status(twin::WorkloadId id) const override { return statuses[id]; }
  [[nodiscard]] twin::WorkloadPhase phase(twin::WorkloadId id) const override { return statuses[id].phase; }
  [[nodiscard]] std::vector<std::string> cluster_queue_names() const override { return queues; }
  [[nodiscard]] std::vector<std::string> cohort_names() const override { return {}; }
  [[nodiscard]] twin::ClusterQueueStatus cluster_queue_status(const std::string& name) const override {
    const auto it = queue_status.find(name);
    if (it != queue_status.end()) return it->second;
    twin::ClusterQueueStatus s;
    s.name = name;
    return s;
  }
  [[nodiscard]] std::optional<twin::QuotaFigures> figures(const std::string&, const std::string&,
                                                          const std::string&) const override {
    return std::nullopt;
  }

  // Script helper: admit `id` into its queue with every resource on `flavor`.
  void admit(twin::WorkloadId id, twin::VirtualTime now, const std::string& flavor, twin::CycleResult& r) {
    twin::WorkloadStatus& st = statuses[id];
    st.phase = twin::WorkloadPhase::Admitted;
    twin::Admission a;
    a.cluster_queue = specs[id].cluster_queue;
    for (const auto& ps : specs[id].pod_sets) {
      twin::PodSetAssignment psa;
      psa.name = ps.name;
      psa.count = ps.count;
      for (const auto& [res, amount] : ps.requests) {
        psa.flavors.emplace_back(res, flavor);
        psa.resource_usage.emplace_back(res, amount * ps.count);
      }
      a.pod_sets.push_back(std::move(psa));
    }
    st.admission = std::move(a);
    st.admitted_at = now;
    const std::string message = "Quota reserved in ClusterQueue " + specs[id].cluster_queue;
    set(st, {"QuotaReserved", true, "QuotaReserved", message, now});
    set(st, {"Admitted", true, "Admitted", "The workload is admitted", now});
    r.decisions.push_back({twin::Decision::Kind::Admitted, id, specs[id].cluster_queue, "QuotaReserved", message, {}});
  }

  static void set(twin::WorkloadStatus& st, twin::Condition c) {
    for (auto& existing : st.conditions) {
      if (existing.type == c.type) {
        existing = std::move(c);
        return;
      }
    }
    st.conditions.push_back(std::move(c));
  }
};

}  // namespace gpubank::testing
