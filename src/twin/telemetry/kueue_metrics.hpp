// Kueue's ClusterQueue metrics, as the twin's admission core would make Kueue report them:
// names, HELP texts, label names and order and histogram buckets of kubernetes-sigs/kueue
// pkg/metrics/metrics.go at ff69552 (v0.20.0-devel-377, August 2026; the version
// docs/twin-admission.md follows), with no custom labels. Every series carries
// replica_role="standalone" (Kueue without leader election's role tracker).
//
// Gauges come from a snapshot of the ClusterQueues (update); counters and histograms from
// the events the engine reports as they happen (admitted, quota_reserved, evicted,
// preempted).
//
//   metrics::Registry registry;
//   auto kueue = KueueMetrics::register_in(registry);
//   kueue->admitted("team-a-h100", "high", 12.5);   // at each admission: wait in seconds
//   kueue->update(cluster_queues);                   // at each scrape
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/expected.hpp"
#include "metrics/registry.hpp"

namespace gpubank::twin::telemetry {

inline constexpr std::string_view kRuleClusterQueue = "telemetry.cluster-queue";

// Kueue's replica_role for a single manager.
inline constexpr std::string_view kReplicaRoleStandalone = "standalone";

// generateExponentialBuckets(n) upstream: 1, then 2.5 × 2^i for i < n - 1.
[[nodiscard]] std::vector<double> kueue_exponential_buckets(int count);

// One (flavor, resource) of a ClusterQueue, in Kubernetes units as Kueue reports them
// (cores for cpu, bytes for memory, devices for nvidia.com/gpu).
struct ClusterQueueResource {
  std::string flavor;
  std::string resource;
  double nominal_quota = 0;
  std::optional<double> borrowing_limit;  // unset: +Inf, as Kueue reports it
  std::optional<double> lending_limit;    // unset: +Inf
  double reservation = 0;  // quota reserved by workloads (kueue_cluster_queue_resource_reservation)
  double usage = 0;        // used by admitted workloads (kueue_cluster_queue_resource_usage)
};

struct ClusterQueueState {
  std::string name;
  std::string cohort;              // empty when the ClusterQueue has none (Kueue writes cohort="")
  std::string status = "active";   // pending | active | terminating
  std::int64_t pending_active = 0;        // workloads in the admission queue
  std::int64_t pending_inadmissible = 0;  // workloads parked after a failed attempt
  std::int64_t reserving_active = 0;      // workloads holding a quota reservation
  std::int64_t admitted_active = 0;       // admitted workloads that are active
  std::vector<ClusterQueueResource> resources;
  // Requests of pending workloads per resource (kueue_cluster_queue_resource_pending).
  std::vector<std::pair<std::string, double>> pending_resources;
};

class KueueMetrics {
 public:
  // Registers the families (the registry must not hold them yet).
  [[nodiscard]] static Expected<KueueMetrics> register_in(metrics::Registry& registry);

  // Replaces every gauge with the ClusterQueues in `queues` (a ClusterQueue not in it loses
  // its gauges, as Kueue clears them on deletion; its counters stay). All or nothing: a
  // repeated ClusterQueue or (flavor, resource), an unknown status, a negative count or
  // text that is not UTF-8 changes nothing.
  metrics::Status update(std::span<const ClusterQueueState> queues);

  // A workload admitted after waiting `wait_seconds` since creation or requeue:
  // kueue_admitted_workloads_total and kueue_admission_wait_time_seconds.
  metrics::Status admitted(std::string_view cluster_queue, std::string_view priority_class, double wait_seconds);
  // Its quota reservation: kueue_quota_reserved_workloads_total and
  // kueue_quota_reserved_wait_time_seconds (the same instant as admission when the
  // ClusterQueue has no admission checks).
  metrics::Status quota_reserved(std::string_view cluster_queue, std::string_view priority_class, double wait_seconds);
  // kueue_evicted_workloads_total; reason "Preempted", "PodsReadyTimeout", ...;
  // underlying_cause usually "".
  metrics::Status evicted(std::string_view cluster_queue, std::string_view reason, std::string_view underlying_cause,
                          std::string_view priority_class);
  // kueue_preempted_workloads_total; reason "InClusterQueue", "InCohortReclamation",
  // "InCohortFairSharing" or "InCohortReclaimWhileBorrowing".
  metrics::Status preempted(std::string_view preempting_cluster_queue, std::string_view reason);

 private:
  KueueMetrics() = default;
  metrics::GaugeFamily* pending_workloads_ = nullptr;
  metrics::GaugeFamily* reserving_active_ = nullptr;
  metrics::GaugeFamily* admitted_active_ = nullptr;
  metrics::GaugeFamily* status_ = nullptr;
  metrics::GaugeFamily* reservation_ = nullptr;
  metrics::GaugeFamily* usage_ = nullptr;
  metrics::GaugeFamily* nominal_ = nullptr;
  metrics::GaugeFamily* borrowing_ = nullptr;
  metrics::GaugeFamily* lending_ = nullptr;
  metrics::GaugeFamily* resource_pending_ = nullptr;
  metrics::CounterFamily* admitted_total_ = nullptr;
  metrics::HistogramFamily* admission_wait_ = nullptr;
  metrics::CounterFamily* quota_reserved_total_ = nullptr;
  metrics::HistogramFamily* quota_reserved_wait_ = nullptr;
  metrics::CounterFamily* evicted_total_ = nullptr;
  metrics::CounterFamily* preempted_total_ = nullptr;
};

}  // namespace gpubank::twin::telemetry
