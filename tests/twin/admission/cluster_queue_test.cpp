// The pending queues (src/twin/admission/cluster_queue.cpp) against Kueue's
// pkg/cache/queue/cluster_queue.go at ff69552: what keeps a workload at the head.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "twin/admission/core.hpp"

namespace gpubank::twin {
namespace {

constexpr const char* kGpu = "nvidia.com/gpu";

ClusterQueueSpec gpu_queue(std::string name, Amount gpus) {
  ClusterQueueSpec q;
  q.name = std::move(name);
  q.queueing_strategy = QueueingStrategy::BestEffortFIFO;
  q.preemption.within_cluster_queue = PreemptionPolicy::LowerPriority;
  ResourceGroup g;
  g.covered_resources.push_back(kGpu);
  g.flavors.push_back(FlavorQuotas{"default", {ResourceQuota{kGpu, gpus, std::nullopt, std::nullopt}}});
  q.resource_groups.push_back(std::move(g));
  return q;
}

WorkloadSpec gpu_workload(const std::string& name, Amount gpus, std::int32_t priority, VirtualTime created) {
  WorkloadSpec w;
  w.ns = "default";
  w.name = name;
  w.uid = "uid-" + name;
  w.cluster_queue = "q";
  w.priority = priority;
  w.creation = created;
  w.pod_sets.push_back(PodSetSpec{"main", 1, {{kGpu, gpus}}, {}, {}, {}, -1, {}});
  return w;
}

// requeueIfNotPresent sets the preemptor (sticky at the head of a BestEffortFIFO queue) on
// RequeueReasonPendingPreemption only, and ClusterQueue.delete (admission, deletion) is the
// only place that clears it: a preemptor requeued for another reason stays at the head, ahead
// of a pending workload of higher priority. cluster_queue_test.go
// TestBestEffortFIFORequeueIfNotPresent pins when it is set; cluster_queue.go's
// preemptorWorkload says it lasts "until admitted, unschedulable, or deleted".
TEST(StickyPreemptor, StaysAtTheHeadWhenRequeuedForAnotherReason) {
  auto created = AdmissionCore::create({}, {ResourceFlavorSpec{"default", {}, {}, {}}}, {}, {gpu_queue("q", 4)});
  ASSERT_TRUE(created.ok()) << created.error();
  AdmissionCore& core = **created;
  const WorkloadId victim = core.submit(gpu_workload("victim", 4, 0, 0), 0);
  core.run_cycle(0);
  ASSERT_EQ(core.phase(victim), WorkloadPhase::Admitted);

  // The preemptor evicts the victim and becomes the queue's sticky preemptor.
  const WorkloadId preemptor = core.submit(gpu_workload("preemptor", 4, 5, 1000), 1000);
  const CycleResult preempting = core.run_cycle(1000);
  ASSERT_EQ(preempting.evicted, std::vector<WorkloadId>{victim});
  ASSERT_EQ(core.phase(preemptor), WorkloadPhase::Pending);

  // Before the victim is gone the queue's quota drops below the preemptor's request: it is
  // requeued as NoFit, and set aside.
  ASSERT_TRUE(core.set_quota("q", "default", ResourceQuota{kGpu, 2, std::nullopt, std::nullopt}).ok());
  core.run_cycle(2000);
  ASSERT_EQ(core.phase(preemptor), WorkloadPhase::Pending);
  // A workload of higher priority arrives, and does not fit either.
  const WorkloadId urgent = core.submit(gpu_workload("urgent", 4, 9, 3000), 3000);
  core.run_cycle(3000);
  ASSERT_EQ(core.phase(urgent), WorkloadPhase::Pending);

  // The quota comes back and the victim's pods are gone: both are requeued. The preemptor
  // is still sticky, so it is the head, and takes the quota before the higher priority.
  ASSERT_TRUE(core.set_quota("q", "default", ResourceQuota{kGpu, 4, std::nullopt, std::nullopt}).ok());
  core.release_evicted(victim, 4000);
  core.run_cycle(4000);
  EXPECT_EQ(core.phase(preemptor), WorkloadPhase::Admitted);
  EXPECT_EQ(core.phase(urgent), WorkloadPhase::Pending);
}

// Once admitted it is no longer the preemptor (workload_controller.go: Pending ->
// QuotaReserved deletes it from the queues): evicted and requeued later, it waits its turn
// by priority like any other.
TEST(StickyPreemptor, AnAdmittedPreemptorIsNoLongerSticky) {
  ClusterQueueSpec q = gpu_queue("q", 4);
  auto created = AdmissionCore::create({}, {ResourceFlavorSpec{"default", {}, {}, {}}}, {}, {q});
  ASSERT_TRUE(created.ok()) << created.error();
  AdmissionCore& core = **created;
  const WorkloadId victim = core.submit(gpu_workload("victim", 4, 0, 0), 0);
  core.run_cycle(0);
  const WorkloadId preemptor = core.submit(gpu_workload("preemptor", 4, 5, 1000), 1000);
  core.run_cycle(1000);
  core.release_evicted(victim, 1500);
  core.run_cycle(2000);
  ASSERT_EQ(core.phase(preemptor), WorkloadPhase::Admitted);

  // Evicted by the twin's graceful reclaim and requeued, next to a pending workload of
  // higher priority: that one goes first.
  const WorkloadId urgent = core.submit(gpu_workload("urgent", 4, 9, 3000), 3000);
  ASSERT_TRUE(core.evict(preemptor, "Preempted", "reclaimed", 3000).ok());
  core.release_evicted(preemptor, 3500);
  core.run_cycle(4000);
  EXPECT_EQ(core.phase(urgent), WorkloadPhase::Admitted);
  EXPECT_EQ(core.phase(preemptor), WorkloadPhase::Pending);
}

}  // namespace
}  // namespace gpubank::twin
