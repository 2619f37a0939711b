// Whole-second timestamps. Kubernetes keeps creationTimestamp and a condition's
// lastTransitionTime in whole seconds (metav1.Time marshals RFC 3339 without a fraction), and
// Kueue breaks ties between equal timestamps by UID: the queue order
// (pkg/cache/queue/cluster_queue.go baseCompareFunc: priority, queue-order timestamp, UID) and
// the candidate order (pkg/scheduler/preemption/common/ordering.go CandidatesOrdering:
// priority, quotaReservationTime, UID). The twin runs on milliseconds; within one second its
// order must be Kueue's, not the milliseconds'.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "twin/admission/core.hpp"

namespace gpubank::twin {
namespace {

constexpr const char* kTimedGpu = "nvidia.com/gpu";

std::unique_ptr<AdmissionCore> one_timed_queue(Amount gpus) {
  ClusterQueueSpec q;
  q.name = "q";
  q.preemption.within_cluster_queue = PreemptionPolicy::LowerPriority;
  ResourceGroup g;
  g.covered_resources.push_back(kTimedGpu);
  g.flavors.push_back(FlavorQuotas{"default", {ResourceQuota{kTimedGpu, gpus, std::nullopt, std::nullopt}}});
  q.resource_groups.push_back(std::move(g));
  auto created = AdmissionCore::create({}, {ResourceFlavorSpec{"default", {}, {}, {}}}, {}, {q});
  EXPECT_TRUE(created.ok()) << (created.ok() ? "" : created.error());
  return std::move(created).value();
}

WorkloadSpec timed_workload(const std::string& name, const std::string& uid, Amount gpus, std::int32_t priority,
                          VirtualTime created) {
  WorkloadSpec w;
  w.ns = "default";
  w.name = name;
  w.uid = uid;
  w.cluster_queue = "q";
  w.priority = priority;
  w.creation = created;
  w.pod_sets.push_back(PodSetSpec{"main", 1, {{kTimedGpu, gpus}}, {}, {}, {}, -1, {}});
  return w;
}

// Created 500 ms apart within one second: the smaller UID is the head, although created later.
TEST(WholeSecondTimestamps, TheQueueOrdersTheSameSecondByUid) {
  auto core = one_timed_queue(2);
  const WorkloadId earlier = core->submit(timed_workload("earlier", "uid-b", 2, 0, 1200), 1200);
  const WorkloadId later = core->submit(timed_workload("later", "uid-a", 2, 0, 1700), 1700);
  core->run_cycle(2000);
  EXPECT_EQ(core->phase(later), WorkloadPhase::Admitted);
  EXPECT_EQ(core->phase(earlier), WorkloadPhase::Pending);
}

// A second apart, the time decides again.
TEST(WholeSecondTimestamps, DifferentSecondsStillOrderByTime) {
  auto core = one_timed_queue(2);
  const WorkloadId earlier = core->submit(timed_workload("earlier", "uid-b", 2, 0, 900), 900);
  const WorkloadId later = core->submit(timed_workload("later", "uid-a", 2, 0, 1000), 1000);
  core->run_cycle(2000);
  EXPECT_EQ(core->phase(earlier), WorkloadPhase::Admitted);
  EXPECT_EQ(core->phase(later), WorkloadPhase::Pending);
}

// Two victims of priority 0, "first" (uid-a) admitted at 1000 ms and "second" (uid-b) at
// `second_admitted_at`, then a preemptor of priority 10 that needs one of them: the victim.
std::vector<WorkloadId> victims_of_a_preemptor(VirtualTime second_admitted_at, WorkloadId& first, WorkloadId& second) {
  auto core = one_timed_queue(4);
  first = core->submit(timed_workload("first", "uid-a", 2, 0, 0), 0);
  core->run_cycle(1000);
  second = core->submit(timed_workload("second", "uid-b", 2, 0, 1000), 1000);
  core->run_cycle(second_admitted_at);
  EXPECT_EQ(core->phase(first), WorkloadPhase::Admitted);
  EXPECT_EQ(core->phase(second), WorkloadPhase::Admitted);
  core->submit(timed_workload("urgent", "uid-c", 2, 10, 3000), 3000);
  return core->run_cycle(3000).evicted;
}

// Reserved 500 ms apart within one second, they tie on quotaReservationTime: the smaller UID
// is preempted first, not the one admitted last.
TEST(WholeSecondTimestamps, CandidatesReservedInTheSameSecondAreOrderedByUid) {
  WorkloadId first = 0, second = 0;
  const auto evicted = victims_of_a_preemptor(1500, first, second);
  EXPECT_EQ(evicted, std::vector<WorkloadId>{first});
}

// Reserved in different seconds, the most recent reservation is preempted first.
TEST(WholeSecondTimestamps, CandidatesReservedInDifferentSecondsMostRecentFirst) {
  WorkloadId first = 0, second = 0;
  const auto evicted = victims_of_a_preemptor(2000, first, second);
  EXPECT_EQ(evicted, std::vector<WorkloadId>{second});
}

}  // namespace
}  // namespace gpubank::twin
