#include "twin/live/queue_metrics.hpp"

#include <algorithm>

namespace gpubank::twin::live {

namespace {
constexpr std::string_view kWorkloadPrefix = "Workload/";
constexpr std::string_view kGroupPrefix = "BusinessGroup/";

std::string after(const std::string& text, std::string_view prefix) {
  return text.rfind(prefix, 0) == 0 ? text.substr(prefix.size()) : std::string();
}
}  // namespace

Expected<std::unique_ptr<QueueMetrics>> QueueMetrics::create(const run::Scenario& scenario,
                                                             std::span<const run::QueueView> queues) {
  metrics::Registry registry;
  auto kueue = telemetry::KueueMetrics::register_in(registry);
  if (!kueue) return Unexpected{kueue.error()};
  std::unique_ptr<QueueMetrics> out(new QueueMetrics(scenario, std::move(registry), std::move(*kueue)));
  for (std::size_t i = 0; i < scenario.workloads.size(); ++i) {
    const auto& w = scenario.workloads[i];
    out->index_[w.namespace_ + "/" + w.name] = i;
  }
  for (const auto& q : queues) out->queues_[q.business_group + "/" + q.pool] = q.cluster_queue;
  return out;
}

const run::ScenarioWorkload* QueueMetrics::workload(const std::string& key) const {
  const auto it = index_.find(key);
  return it == index_.end() ? nullptr : &scenario_.workloads[it->second];
}

std::string QueueMetrics::queue_of(const std::string& group, const std::string& pool) const {
  const auto it = queues_.find(group + "/" + pool);
  return it == queues_.end() ? std::string() : it->second;
}

metrics::Status QueueMetrics::follow(std::span<const run::Event> events) {
  for (; seen_ < events.size(); ++seen_) {
    const run::Event& e = events[seen_];
    const bool admitted = e.kind == "Admitted";
    const bool preempted = e.kind == "Preempted";
    const bool reclaimed = e.kind == "ReclaimVictimStopped";
    const bool timed_out = e.kind == "Evicted" || e.kind == "Deactivated";  // waitForPodsReady
    if (!admitted && !preempted && !reclaimed && !timed_out) continue;
    const std::string key = after(e.object, kWorkloadPrefix);
    const run::ScenarioWorkload* w = workload(key);
    if (w == nullptr || e.queue.empty()) continue;
    const std::string& priority = w->priority_class;
    if (admitted) {
      const auto requeued = requeued_at_.find(key);
      const VirtualTime since = requeued != requeued_at_.end() ? requeued->second : w->arrival_time.milliseconds();
      if (requeued != requeued_at_.end()) requeued_at_.erase(requeued);
      const double wait_s = static_cast<double>(std::max<VirtualTime>(0, e.t - since)) / 1000.0;
      if (auto s = kueue_.admitted(e.queue, priority, wait_s); !s) return s;
      admissions_.push_back({e.t, e.queue, wait_s});
      if (auto s = kueue_.quota_reserved(e.queue, priority, wait_s); !s) return s;
      continue;
    }
    if (timed_out) {
      const bool deactivated = e.kind == "Deactivated";
      if (auto s = kueue_.evicted(e.queue, deactivated ? "Deactivated" : "PodsReadyTimeout",
                                  deactivated ? "RequeuingLimitExceeded" : "", priority);
          !s) {
        return s;
      }
      if (!deactivated) {
        const auto backoff = e.numbers.contains("requeueBackoffSeconds") && e.numbers["requeueBackoffSeconds"].is_number()
                                 ? e.numbers["requeueBackoffSeconds"].get<std::int64_t>()
                                 : 0;
        requeued_at_[key] = e.t + backoff * 1000;
      }
      continue;
    }
    if (auto s = kueue_.evicted(e.queue, "Preempted", "", priority); !s) return s;
    if (preempted) {
      std::string by = e.queue;
      if (!e.related.empty()) {
        if (const auto* p = workload(after(e.related.front(), kWorkloadPrefix)); p != nullptr) {
          if (auto q = queue_of(p->business_group, p->resource_pool); !q.empty()) by = q;
        }
      }
      if (auto s = kueue_.preempted(by, e.reason); !s) return s;
      requeued_at_[key] = e.t;
    } else {
      std::string by = e.queue;
      if (!e.related.empty()) {
        if (auto q = queue_of(after(e.related.front(), kGroupPrefix), e.pool); !q.empty()) by = q;
      }
      if (auto s = kueue_.preempted(by, "InCohortReclamation"); !s) return s;
      const auto backoff = e.numbers.contains("requeueBackoffSeconds") && e.numbers["requeueBackoffSeconds"].is_number()
                               ? e.numbers["requeueBackoffSeconds"].get<std::int64_t>()
                               : 0;
      requeued_at_[key] = e.t + backoff * 1000;
    }
  }
  return std::monostate{};
}

Expected<std::vector<metrics::Family>> QueueMetrics::families(std::span<const run::QueueView> queues,
                                                              std::span<const run::WorkloadOutcome> workloads) {
  std::map<std::string, double> pending_gpus;  // "group/pool"
  for (const auto& w : workloads) {
    if (w.state == "Pending") pending_gpus[w.business_group + "/" + w.pool] += static_cast<double>(w.gpus);
  }
  std::vector<telemetry::ClusterQueueState> states;
  for (const auto& q : queues) {
    telemetry::ClusterQueueState s;
    s.name = q.cluster_queue;
    s.cohort = q.pool;
    s.pending_active = q.pending;
    s.reserving_active = q.admitted;
    s.admitted_active = q.admitted;
    telemetry::ClusterQueueResource r;
    r.flavor = q.flavor;
    r.resource = q.resource;
    r.nominal_quota = static_cast<double>(q.nominal);
    if (q.borrowing_limit) r.borrowing_limit = static_cast<double>(*q.borrowing_limit);
    if (q.lending_limit) r.lending_limit = static_cast<double>(*q.lending_limit);
    r.reservation = static_cast<double>(q.used);
    r.usage = static_cast<double>(q.used);
    s.resources.push_back(std::move(r));
    const auto pending = pending_gpus.find(q.business_group + "/" + q.pool);
    s.pending_resources.emplace_back(q.resource, pending != pending_gpus.end() ? pending->second : 0.0);
    states.push_back(std::move(s));
  }
  if (auto s = kueue_.update(states); !s) return Unexpected{s.error()};
  return std::move(registry_.collect().families);
}

}  // namespace gpubank::twin::live
