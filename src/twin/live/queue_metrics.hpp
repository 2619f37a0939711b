// Kueue's ClusterQueue metrics for the embedded platform's /metrics: the gauges from the
// run's ClusterQueues at each scrape, the counters and histograms from its event log, read
// incrementally (each event once, in order). The mapping (docs/up.md, "Kueue metrics"):
//   - one ClusterQueue per QueueView; cohort = the pool's name (render/kueue.cpp gives
//     every pool one root Cohort of its name); pending active = its pending workloads,
//     reserving and admitted active = its admitted ones; resource pending = GPUs of its
//     workloads in state Pending;
//   - Admitted: kueue_admitted_workloads_total and kueue_quota_reserved_workloads_total
//     (no admission checks: the same instant), wait = the admission time minus the
//     workload's arrival, or minus its requeue after an eviction;
//   - Preempted (Kueue's own preemption): evicted{reason="Preempted"} on the victim's
//     queue, preempted{reason=the event's} on the preemptor's, requeued at once;
//   - ReclaimVictimStopped (the bank's reclaim): evicted{reason="Preempted"} on the
//     victim's queue, preempted{reason="InCohortReclamation"} on the lender's, requeued
//     after the event's requeueBackoffSeconds.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/expected.hpp"
#include "metrics/exposition.hpp"
#include "metrics/registry.hpp"
#include "twin/run/engine.hpp"
#include "twin/run/scenario.hpp"
#include "twin/telemetry/kueue_metrics.hpp"

namespace gpubank::twin::live {

class QueueMetrics {
 public:
  // `queues`: the run's ClusterQueues (names per group and pool). The scenario must
  // outlive this object.
  static Expected<std::unique_ptr<QueueMetrics>> create(const run::Scenario& scenario,
                                                        std::span<const run::QueueView> queues);

  // Counts the events not seen yet.
  metrics::Status follow(std::span<const run::Event> events);

  // Every admission followed so far, in order: what kueue_admission_wait_time_seconds observed.
  struct Admission {
    VirtualTime t = 0;
    std::string cluster_queue;
    double wait_seconds = 0;
  };
  [[nodiscard]] const std::vector<Admission>& admissions() const { return admissions_; }

  // Every Kueue family now, sorted by name: gauges from `queues` and `workloads`
  // (index-aligned with the scenario's workloads), counters from the events followed.
  Expected<std::vector<metrics::Family>> families(std::span<const run::QueueView> queues,
                                                  std::span<const run::WorkloadOutcome> workloads);

 private:
  QueueMetrics(const run::Scenario& scenario, metrics::Registry registry, telemetry::KueueMetrics kueue)
      : scenario_(scenario), registry_(std::move(registry)), kueue_(std::move(kueue)) {}
  [[nodiscard]] const run::ScenarioWorkload* workload(const std::string& key) const;
  [[nodiscard]] std::string queue_of(const std::string& group, const std::string& pool) const;

  const run::Scenario& scenario_;
  metrics::Registry registry_;
  telemetry::KueueMetrics kueue_;
  std::map<std::string, std::size_t> index_;                // "namespace/name" -> scenario workload
  std::map<std::string, std::string> queues_;               // "group/pool" -> ClusterQueue
  std::map<std::string, VirtualTime> requeued_at_;          // evicted workloads -> back in the queue
  std::size_t seen_ = 0;
  std::vector<Admission> admissions_;
};

}  // namespace gpubank::twin::live
