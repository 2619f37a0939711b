#include "twin/telemetry/kueue_metrics.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <set>

#include "metrics/names.hpp"

namespace gpubank::twin::telemetry {

namespace {

// HELP texts exactly as pkg/metrics/metrics.go (ff69552) gives them, newlines included
// (the writer escapes them as client_golang does).
constexpr const char* kHelpPendingWorkloads =
    "The number of pending workloads, per 'cluster_queue' and 'status'.\n"
    "'status' can have the following values:\n"
    "- \"active\" means that the workloads are in the admission queue.\n"
    "- \"inadmissible\" means there was a failed admission attempt for these workloads and they won't be retried until cluster conditions, which could make this workload admissible, change";

constexpr const char* kHelpReservingActiveWorkloads =
    "The number of Workloads that are reserving quota, per 'cluster_queue'";

constexpr const char* kHelpAdmittedActiveWorkloads =
    "The number of admitted Workloads that are active, per 'cluster_queue'";

constexpr const char* kHelpClusterQueueStatus =
    "Reports 'cluster_queue' with its 'status' (with possible values 'pending', 'active' or 'terminated').\n"
    "For a ClusterQueue, the metric only reports a value of 1 for one of the statuses.";

constexpr const char* kHelpClusterQueueResourceReservation =
    "Reports the cluster_queue's total resource reservation within all the flavors";

constexpr const char* kHelpClusterQueueResourceUsage =
    "Reports the cluster_queue's total resource usage within all the flavors";

constexpr const char* kHelpClusterQueueNominalQuota =
    "Reports the cluster_queue's resource nominal quota within all the flavors";

constexpr const char* kHelpClusterQueueBorrowingLimit =
    "Reports the cluster_queue's resource borrowing limit within all the flavors. If borrowingLimit is unset, this metric reports +Inf.";

constexpr const char* kHelpClusterQueueLendingLimit =
    "Reports the cluster_queue's resource lending limit within all the flavors. If lendingLimit is unset, this metric reports +Inf.";

constexpr const char* kHelpClusterQueueResourcePending =
    "Reports the cluster_queue's total pending resource requests. Unlike resource_reservation, pending workloads have not yet been assigned to flavors.";

constexpr const char* kHelpAdmittedWorkloadsTotal =
    "The total number of admitted workloads per 'cluster_queue'";

constexpr const char* kHelpAdmissionWaitTimeSeconds =
    "The time between a workload was created or requeued until admission, per 'cluster_queue'";

constexpr const char* kHelpQuotaReservedWorkloadsTotal =
    "The total number of quota reserved workloads per 'cluster_queue'";

constexpr const char* kHelpQuotaReservedWaitTimeSeconds =
    "The time between a workload was created or requeued until it got quota reservation, per 'cluster_queue'";

constexpr const char* kHelpEvictedWorkloadsTotal =
    "The number of evicted workloads per 'cluster_queue',\n"
    "The label 'reason' can have the following values:\n"
    "- \"Preempted\" means that the workload was evicted in order to free resources for a workload with a higher priority or reclamation of nominal quota.\n"
    "- \"PodsReadyTimeout\" means that the eviction took place due to a PodsReady timeout.\n"
    "- \"AdmissionCheck\" means that the workload was evicted because at least one admission check transitioned to False.\n"
    "- \"ClusterQueueStopped\" means that the workload was evicted because the ClusterQueue is stopped.\n"
    "- \"LocalQueueStopped\" means that the workload was evicted because the LocalQueue is stopped.\n"
    "- \"NodeFailures\" means that the workload was evicted due to node failures when using TopologyAwareScheduling.\n"
    "- \"Deactivated\" means that the workload was evicted because spec.active is set to false.\n"
    "The label 'underlying_cause' can have the following values:\n"
    "- \"\" means that the value in 'reason' label is the root cause for eviction.\n"
    "- \"AdmissionCheck\" means that the workload was evicted by Kueue due to a rejected admission check.\n"
    "- \"MaximumExecutionTimeExceeded\" means that the workload was evicted by Kueue due to maximum execution time exceeded.\n"
    "- \"RequeuingLimitExceeded\" means that the workload was evicted by Kueue due to requeuing limit exceeded.";

constexpr const char* kHelpPreemptedWorkloadsTotal =
    "The number of preempted workloads per 'preempting_cluster_queue',\n"
    "The label 'reason' can have the following values:\n"
    "- \"InClusterQueue\" means that the workload was preempted by a workload in the same ClusterQueue.\n"
    "- \"InCohortReclamation\" means that the workload was preempted by a workload in the same cohort due to reclamation of nominal quota.\n"
    "- \"InCohortFairSharing\" means that the workload was preempted by a workload in the same cohort Fair Sharing.\n"
    "- \"InCohortReclaimWhileBorrowing\" means that the workload was preempted by a workload in the same cohort due to reclamation of nominal quota while borrowing.";

using Snapshot = std::vector<std::pair<metrics::LabelValues, double>>;

Unexpected fail(std::string message) { return Unexpected{metrics::with_rule(std::move(message), kRuleClusterQueue)}; }

const std::string kRole(kReplicaRoleStandalone);

// Kueue's CQStatuses, in its order; kueue_cluster_queue_status is 1 for one of them.
constexpr std::array<std::string_view, 3> kStatuses{"pending", "active", "terminating"};

std::optional<std::string> check_text(std::string_view text, const std::string& what) {
  return metrics::check_utf8(text, what);
}

// Everything update() would refuse, before it changes anything.
std::optional<std::string> check_queues(std::span<const ClusterQueueState> queues) {
  std::set<std::string_view> names;
  for (const ClusterQueueState& q : queues) {
    const std::string who = "ClusterQueue " + q.name;
    if (auto bad = check_text(q.name, "the name of a ClusterQueue")) return bad;
    if (auto bad = check_text(q.cohort, who + ": cohort")) return bad;
    if (!names.insert(q.name).second) return who + " is listed twice";
    if (std::find(kStatuses.begin(), kStatuses.end(), q.status) == kStatuses.end()) {
      return who + ": status \"" + q.status + "\" is not one of pending, active, terminating";
    }
    for (const std::int64_t n : {q.pending_active, q.pending_inadmissible, q.reserving_active, q.admitted_active}) {
      if (n < 0) return who + ": a workload count is negative (" + std::to_string(n) + ")";
    }
    std::set<std::pair<std::string_view, std::string_view>> pairs;
    for (const ClusterQueueResource& r : q.resources) {
      if (auto bad = check_text(r.flavor, who + ": flavor")) return bad;
      if (auto bad = check_text(r.resource, who + ": resource")) return bad;
      if (!pairs.emplace(r.flavor, r.resource).second) {
        return who + ": flavor " + r.flavor + " resource " + r.resource + " is listed twice";
      }
    }
    std::set<std::string_view> pending;
    for (const auto& p : q.pending_resources) {
      if (auto bad = check_text(p.first, who + ": pending resource")) return bad;
      if (!pending.insert(p.first).second) return who + ": pending resource " + p.first + " is listed twice";
    }
  }
  return std::nullopt;
}

template <class F>
metrics::Status take(Expected<F*> made, F*& into) {
  if (!made) return Unexpected{made.error()};
  into = *made;
  return std::monostate{};
}

}  // namespace

std::vector<double> kueue_exponential_buckets(int count) {
  std::vector<double> buckets{1};
  double bound = 2.5;
  for (int i = 0; i + 1 < count; ++i, bound *= 2) buckets.push_back(bound);
  return buckets;
}

Expected<KueueMetrics> KueueMetrics::register_in(metrics::Registry& r) {
  KueueMetrics m;
  const std::vector<std::string> cq{"cluster_queue", "replica_role"};
  const std::vector<std::string> cq_status{"cluster_queue", "status", "replica_role"};
  const std::vector<std::string> cq_resource{"cohort", "cluster_queue", "flavor", "resource", "replica_role"};
  const std::vector<std::string> cq_priority{"cluster_queue", "priority_class", "replica_role"};
  const metrics::Status steps[] = {
      take(r.gauge("kueue_pending_workloads", kHelpPendingWorkloads, cq_status), m.pending_workloads_),
      take(r.gauge("kueue_reserving_active_workloads", kHelpReservingActiveWorkloads, cq), m.reserving_active_),
      take(r.gauge("kueue_admitted_active_workloads", kHelpAdmittedActiveWorkloads, cq), m.admitted_active_),
      take(r.gauge("kueue_cluster_queue_status", kHelpClusterQueueStatus, cq_status), m.status_),
      take(r.gauge("kueue_cluster_queue_resource_reservation", kHelpClusterQueueResourceReservation, cq_resource),
           m.reservation_),
      take(r.gauge("kueue_cluster_queue_resource_usage", kHelpClusterQueueResourceUsage, cq_resource), m.usage_),
      take(r.gauge("kueue_cluster_queue_nominal_quota", kHelpClusterQueueNominalQuota, cq_resource), m.nominal_),
      take(r.gauge("kueue_cluster_queue_borrowing_limit", kHelpClusterQueueBorrowingLimit, cq_resource), m.borrowing_),
      take(r.gauge("kueue_cluster_queue_lending_limit", kHelpClusterQueueLendingLimit, cq_resource), m.lending_),
      take(r.gauge("kueue_cluster_queue_resource_pending", kHelpClusterQueueResourcePending,
                   {"cluster_queue", "resource", "replica_role"}),
           m.resource_pending_),
      take(r.counter("kueue_admitted_workloads_total", kHelpAdmittedWorkloadsTotal, cq_priority), m.admitted_total_),
      take(r.histogram("kueue_admission_wait_time_seconds", kHelpAdmissionWaitTimeSeconds, cq_priority,
                       kueue_exponential_buckets(16)),
           m.admission_wait_),
      take(r.counter("kueue_quota_reserved_workloads_total", kHelpQuotaReservedWorkloadsTotal, cq_priority),
           m.quota_reserved_total_),
      take(r.histogram("kueue_quota_reserved_wait_time_seconds", kHelpQuotaReservedWaitTimeSeconds, cq_priority,
                       kueue_exponential_buckets(14)),
           m.quota_reserved_wait_),
      take(r.counter("kueue_evicted_workloads_total", kHelpEvictedWorkloadsTotal,
                     {"cluster_queue", "reason", "underlying_cause", "priority_class", "replica_role"}),
           m.evicted_total_),
      take(r.counter("kueue_preempted_workloads_total", kHelpPreemptedWorkloadsTotal,
                     {"preempting_cluster_queue", "reason", "replica_role"}),
           m.preempted_total_),
  };
  for (const metrics::Status& s : steps) {
    if (!s) return Unexpected{s.error()};
  }
  return m;
}

metrics::Status KueueMetrics::update(std::span<const ClusterQueueState> queues) {
  if (auto bad = check_queues(queues)) return fail("kueue metrics: " + *bad);
  Snapshot pending, reserving, admitted, status, reservation, usage, nominal, borrowing, lending, resource_pending;
  constexpr double kInf = std::numeric_limits<double>::infinity();
  for (const ClusterQueueState& q : queues) {
    pending.push_back({{q.name, "active", kRole}, static_cast<double>(q.pending_active)});
    pending.push_back({{q.name, "inadmissible", kRole}, static_cast<double>(q.pending_inadmissible)});
    reserving.push_back({{q.name, kRole}, static_cast<double>(q.reserving_active)});
    admitted.push_back({{q.name, kRole}, static_cast<double>(q.admitted_active)});
    for (const std::string_view s : kStatuses) status.push_back({{q.name, std::string(s), kRole}, s == q.status ? 1.0 : 0.0});
    for (const ClusterQueueResource& r : q.resources) {
      metrics::LabelValues labels{q.cohort, q.name, r.flavor, r.resource, kRole};
      reservation.push_back({labels, r.reservation});
      usage.push_back({labels, r.usage});
      nominal.push_back({labels, r.nominal_quota});
      borrowing.push_back({labels, r.borrowing_limit.value_or(kInf)});
      lending.push_back({std::move(labels), r.lending_limit.value_or(kInf)});
    }
    for (const auto& p : q.pending_resources) resource_pending.push_back({{q.name, p.first, kRole}, p.second});
  }
  const std::pair<metrics::GaugeFamily*, const Snapshot*> gauges[] = {
      {pending_workloads_, &pending}, {reserving_active_, &reserving}, {admitted_active_, &admitted},
      {status_, &status},             {reservation_, &reservation},    {usage_, &usage},
      {nominal_, &nominal},           {borrowing_, &borrowing},        {lending_, &lending},
      {resource_pending_, &resource_pending}};
  for (const auto& entry : gauges) {
    if (auto done = entry.first->set_all(*entry.second); !done) return done;
  }
  return std::monostate{};
}

metrics::Status KueueMetrics::admitted(std::string_view cluster_queue, std::string_view priority_class,
                                       double wait_seconds) {
  if (std::isnan(wait_seconds) || wait_seconds < 0) {
    return fail("kueue_admission_wait_time_seconds: wait " + std::to_string(wait_seconds) + " s is not a number >= 0");
  }
  const metrics::LabelValues labels{std::string(cluster_queue), std::string(priority_class), kRole};
  if (auto done = admitted_total_->inc(labels); !done) return done;
  return admission_wait_->observe(labels, wait_seconds);
}

metrics::Status KueueMetrics::quota_reserved(std::string_view cluster_queue, std::string_view priority_class,
                                             double wait_seconds) {
  if (std::isnan(wait_seconds) || wait_seconds < 0) {
    return fail("kueue_quota_reserved_wait_time_seconds: wait " + std::to_string(wait_seconds) +
                " s is not a number >= 0");
  }
  const metrics::LabelValues labels{std::string(cluster_queue), std::string(priority_class), kRole};
  if (auto done = quota_reserved_total_->inc(labels); !done) return done;
  return quota_reserved_wait_->observe(labels, wait_seconds);
}

metrics::Status KueueMetrics::evicted(std::string_view cluster_queue, std::string_view reason,
                                      std::string_view underlying_cause, std::string_view priority_class) {
  return evicted_total_->inc({std::string(cluster_queue), std::string(reason), std::string(underlying_cause),
                              std::string(priority_class), kRole});
}

metrics::Status KueueMetrics::preempted(std::string_view preempting_cluster_queue, std::string_view reason) {
  return preempted_total_->inc({std::string(preempting_cluster_queue), std::string(reason), kRole});
}

}  // namespace gpubank::twin::telemetry
