#include "twin/kueue_perf/scenario.hpp"

#include <algorithm>
#include <set>
#include <utility>

namespace gpubank::twin::kueue_perf {

Scenario expand(GeneratorConfig config) {
  Scenario s;
  s.config = std::move(config);
  const std::string& flavor = s.config.resource_flavor.name;
  s.flavors.push_back(ResourceFlavorSpec{flavor, {}, {}, {}});

  std::set<std::string> workload_classes, queue_classes;
  for (std::size_t ci = 0; ci < s.config.cohorts.size(); ++ci) {
    const CohortSet& cs = s.config.cohorts[ci];
    for (std::int64_t c = 0; c < cs.count; ++c) {
      const std::string cohort = cohort_name(cs.class_name, c);
      for (std::size_t qi = 0; qi < cs.queues_sets.size(); ++qi) {
        const QueuesSet& qs = cs.queues_sets[qi];
        for (std::int64_t q = 0; q < qs.count; ++q) {
          ClusterQueueSpec spec;
          spec.name = cluster_queue_name(qs.class_name, qi, q, cohort);
          spec.cohort = cohort;
          ResourceQuota quota{kResource, qs.nominal_quota.milli_value(), std::nullopt, std::nullopt};
          if (qs.borrowing_limit) quota.borrowing_limit = qs.borrowing_limit->milli_value();
          spec.resource_groups.push_back(ResourceGroup{{kResource}, {FlavorQuotas{flavor, {quota}}}});
          spec.preemption.reclaim_within_cohort = qs.reclaim_within_cohort;
          spec.preemption.within_cluster_queue = qs.within_cluster_queue;

          const auto queue_index = static_cast<std::uint32_t>(s.queues.size());
          s.queues.push_back(QueueInfo{spec.name, cohort, qs.class_name, quota.nominal, ci, qi});
          s.queue_specs.push_back(std::move(spec));
          queue_classes.insert(qs.class_name);

          for (std::size_t wi = 0; wi < qs.workloads_sets.size(); ++wi) {
            const WorkloadsSet& ws = qs.workloads_sets[wi];
            for (const auto& t : ws.workloads) workload_classes.insert(t.class_name);
            CreationStream stream{queue_index, static_cast<std::uint32_t>(wi), &ws, ws.count};
            if (stream.size() == 0) continue;
            s.total_workloads += stream.size();
            s.streams.push_back(stream);
          }
        }
      }
    }
  }
  s.workload_classes.assign(workload_classes.begin(), workload_classes.end());
  s.queue_classes.assign(queue_classes.begin(), queue_classes.end());
  return s;
}

const WorkloadTemplate& workload_template(const CreationStream& stream, std::int64_t n) {
  const auto templates = static_cast<std::int64_t>(stream.set->workloads.size());
  return stream.set->workloads[static_cast<std::size_t>(n % templates)];
}

WorkloadSpec make_workload(const Scenario& scenario, const CreationStream& stream, std::int64_t n,
                           VirtualTime creation, std::string uid) {
  const auto templates = static_cast<std::int64_t>(stream.set->workloads.size());
  const std::int64_t round = n / templates;
  const auto template_index = static_cast<std::size_t>(n % templates);
  const WorkloadTemplate& t = stream.set->workloads[template_index];
  const QueueInfo& queue = scenario.queues[stream.queue];

  WorkloadSpec spec;
  spec.ns = queue.name;
  spec.name = workload_name(t.class_name, stream.workloads_set, round, template_index);
  spec.uid = std::move(uid);
  spec.cluster_queue = queue.name;
  spec.priority = t.priority;
  spec.creation = creation;
  PodSetSpec pod_set;
  pod_set.name = kPodSetName;
  pod_set.count = 1;
  pod_set.requests.emplace_back(kResource, t.request.milli_value());
  spec.pod_sets.push_back(std::move(pod_set));
  return spec;
}

}  // namespace gpubank::twin::kueue_perf
