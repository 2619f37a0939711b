#include "kueue/requests.hpp"

#include <gtest/gtest.h>

#include "support/kueue_fixture.hpp"

namespace gpubank::kueue {
namespace {

using Amounts = std::vector<std::pair<std::string, twin::Amount>>;

Quantity q(std::string_view text) { return *Quantity::parse(text); }

Container container(std::string name, ResourceList requests, ResourceList limits = {}, std::string restart = {}) {
  Container c;
  c.name = std::move(name);
  c.resources.requests = std::move(requests);
  c.resources.limits = std::move(limits);
  c.restart_policy = std::move(restart);
  return c;
}

// The Configuration's resources section, with the cases of Kueue's
// TestApplyResourceTransformations and the allowance rule of applyResourceTransformations.
TEST(KueueRequests, TheConfigurationExcludesThenTransforms) {
  ManagerConfiguration config;
  config.exclude_resource_prefixes = {"ephemeral-storage", "example.com/ignored"};
  config.transformations = {
      ResourceTransformation{"nvidia.com/mig-1g.5gb", true, {}, {{"example.com/accel-memory", q("5Gi")}, {"example.com/credits", q("10")}}},
      ResourceTransformation{"nvidia.com/mig-2g.10gb", false, {}, {{"example.com/accel-memory", q("10Gi")}, {"example.com/credits", q("15")}}},
      ResourceTransformation{"example.com/cores", false, "example.com/threads", {{"example.com/vcpu", q("1")}}},
      ResourceTransformation{"example.com/discount", true, {}, {{"example.com/credits", q("-30")}}},
  };
  using L = ResourceList;
  // Nothing to transform: only the exclusions.
  EXPECT_EQ(counted_requests(L{{"cpu", q("1")}, {"ephemeral-storage", q("1Gi")}, {"example.com/ignored-too", q("1")}}, config),
            (L{{"cpu", q("1")}}));
  // Replace drops the input; Retain keeps it; outputs of several inputs add up.
  EXPECT_EQ(counted_requests(L{{"cpu", q("1")}, {"nvidia.com/mig-1g.5gb", q("2")}, {"nvidia.com/mig-2g.10gb", q("1")}}, config),
            (L{{"cpu", q("1")},
               {"example.com/accel-memory", q("20Gi")},
               {"example.com/credits", q("35")},
               {"nvidia.com/mig-2g.10gb", q("1")}}));
  // multiplyBy scales the outputs, not the retained input; without it in the pod, no scaling.
  EXPECT_EQ(counted_requests(L{{"example.com/cores", q("4")}, {"example.com/threads", q("2")}}, config),
            (L{{"example.com/cores", q("4")}, {"example.com/threads", q("2")}, {"example.com/vcpu", q("8")}}));
  EXPECT_EQ(counted_requests(L{{"example.com/cores", q("4")}}, config), (L{{"example.com/cores", q("4")}, {"example.com/vcpu", q("4")}}));
  // A negative factor is an allowance against generated outputs only, floored at 0; the
  // pod's own request of the same name is never reduced by it.
  EXPECT_EQ(counted_requests(L{{"nvidia.com/mig-1g.5gb", q("1")}, {"example.com/discount", q("1")}}, config),
            (L{{"example.com/accel-memory", q("5Gi")}, {"example.com/credits", q("0")}}));
  EXPECT_EQ(counted_requests(L{{"example.com/credits", q("7")}, {"example.com/discount", q("1")}}, config),
            (L{{"example.com/credits", q("7")}}));
  // pod_amounts applies it per pod, before ResourceValue rounds each resource up.
  PodSpec spec;
  spec.containers = {container("a", {{"nvidia.com/mig-1g.5gb", q("1")}, {"ephemeral-storage", q("10Gi")}})};
  EXPECT_EQ(pod_amounts(spec, &config), (Amounts{{"example.com/accel-memory", 5368709120}, {"example.com/credits", 10}}));
  EXPECT_EQ(pod_amounts(spec), (Amounts{{"ephemeral-storage", 10737418240}, {"nvidia.com/mig-1g.5gb", 1}}));
}

TEST(KueueRequests, ContainersAddUp) {
  PodSpec spec;
  spec.containers = {container("a", {{"cpu", q("500m")}, {"memory", q("1Gi")}}), container("b", {{"cpu", q("250m")}})};
  EXPECT_EQ(pod_amounts(spec), (Amounts{{"cpu", 750}, {"memory", 1073741824}}));
}

TEST(KueueRequests, InitContainersTakeTheMaximum) {
  PodSpec spec;
  spec.containers = {container("a", {{"cpu", q("750m")}, {"memory", q("1Gi")}})};
  spec.init_containers = {container("i1", {{"cpu", q("2")}}), container("i2", {{"memory", q("512Mi")}})};
  EXPECT_EQ(pod_amounts(spec), (Amounts{{"cpu", 2000}, {"memory", 1073741824}}));
}

// KEP-753: a sidecar (restartPolicy: Always) runs next to everything after it.
TEST(KueueRequests, SidecarsAddToContainersAndLaterInitContainers) {
  PodSpec spec;
  spec.containers = {container("main", {{"cpu", q("500m")}})};
  spec.init_containers = {container("proxy", {{"cpu", q("100m")}}, {}, "Always"),
                          container("setup", {{"cpu", q("1")}})};
  EXPECT_EQ(pod_amounts(spec), (Amounts{{"cpu", 1100}}));  // max(500m + 100m, 1 + 100m)
  spec.init_containers[1].resources.requests["cpu"] = q("200m");
  EXPECT_EQ(pod_amounts(spec), (Amounts{{"cpu", 600}}));
}

TEST(KueueRequests, OverheadIsAdded) {
  PodSpec spec;
  spec.containers = {container("a", {{"cpu", q("1")}})};
  spec.overhead = {{"cpu", q("10m")}, {"memory", q("64Mi")}};
  EXPECT_EQ(pod_amounts(spec), (Amounts{{"cpu", 1010}, {"memory", 67108864}}));
}

TEST(KueueRequests, LimitsStandInForMissingRequests) {
  PodSpec spec;
  spec.containers = {container("a", {{"cpu", q("1")}}, {{"cpu", q("2")}, {"memory", q("1Gi")}}),
                     container("b", {}, {{"nvidia.com/gpu", q("1")}})};
  EXPECT_EQ(pod_amounts(spec), (Amounts{{"cpu", 1000}, {"memory", 1073741824}, {"nvidia.com/gpu", 1}}));
}

TEST(KueueRequests, PodLevelRequestsReplaceCpuMemoryAndHugepages) {
  PodSpec spec;
  spec.containers = {container("a", {{"cpu", q("1")}, {"memory", q("1Gi")}, {"nvidia.com/gpu", q("1")}})};
  spec.resources = ResourceRequirements{{{"cpu", q("4")}, {"nvidia.com/gpu", q("8")}}, {{"memory", q("2Gi")}}};
  // cpu from the pod level; memory from the pod-level limit (limits stand in for requests);
  // the GPU is not a pod-level resource.
  EXPECT_EQ(pod_amounts(spec), (Amounts{{"cpu", 4000}, {"memory", 2147483648}, {"nvidia.com/gpu", 1}}));
}

TEST(KueueRequests, SumsAreExactBeforeRounding) {
  PodSpec spec;
  spec.containers = {container("a", {{"cpu", q("500u")}}), container("b", {{"cpu", q("500u")}})};
  EXPECT_EQ(pod_amounts(spec), (Amounts{{"cpu", 1}}));  // 1m, not 2 x 1m
}

TEST(KueueRequests, NegativeRequestsCountAsZero) {
  PodSpec spec;
  spec.containers = {container("a", {{"cpu", q("-1")}, {"memory", q("1")}})};
  EXPECT_EQ(pod_amounts(spec), (Amounts{{"cpu", 0}, {"memory", 1}}));
}

TEST(KueueRequests, ReclaimablePodsLowerTheCount) {
  const auto d = testing::decode_yaml(R"(
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {name: w}
spec:
  podSets:
  - {name: main, count: 4, template: {spec: {containers: [{name: c}]}}}
  - {name: aux, count: 1, template: {spec: {containers: [{name: c}]}}}
status:
  reclaimablePods: [{name: main, count: 3}]
)");
  ASSERT_EQ(d.set.workloads.size(), 1u);
  const Workload& wl = d.set.workloads[0];
  EXPECT_EQ(count_after_reclaim(wl, wl.pod_sets[0]), 1);
  EXPECT_EQ(count_after_reclaim(wl, wl.pod_sets[1]), 1);
}

TEST(KueueRequests, RequestsAboveLimitsAreKueuesResourceValidationMessage) {
  const auto d = testing::decode_yaml(R"(
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {name: w}
spec:
  podSets:
  - template:
      spec:
        initContainers: [{name: i, resources: {requests: {cpu: "2"}, limits: {cpu: 1500m}}}]
        containers:
        - {name: a, resources: {requests: {cpu: "1", memory: 2Gi}, limits: {cpu: "1", memory: 1Gi}}}
        - {name: b, resources: {requests: {memory: 1Gi, cpu: 2}, limits: {memory: 1Gi, cpu: 1}}}
)");
  ASSERT_EQ(d.set.workloads.size(), 1u);
  EXPECT_EQ(resources_validation_error(d.set.workloads[0]),
            "resources validation failed: [spec.podSets[0].template.spec.initContainers[0]: Invalid value: "
            "[]v1.ResourceName{\"cpu\"}: requests must not exceed its limits, "
            "spec.podSets[0].template.spec.containers[0]: Invalid value: []v1.ResourceName{\"memory\"}: requests must "
            "not exceed its limits, spec.podSets[0].template.spec.containers[1]: Invalid value: "
            "[]v1.ResourceName{\"cpu\"}: requests must not exceed its limits]");
  Workload ok = d.set.workloads[0];
  ok.pod_sets[0].spec.init_containers.clear();
  ok.pod_sets[0].spec.containers.resize(1);
  ok.pod_sets[0].spec.containers[0].resources.limits.erase("memory");
  EXPECT_EQ(resources_validation_error(ok), std::nullopt);
}

}  // namespace
}  // namespace gpubank::kueue
