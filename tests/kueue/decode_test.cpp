#include "kueue/decode.hpp"

#include "document/decode.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include "support/kueue_fixture.hpp"
#include "support/paths.hpp"

namespace gpubank::kueue {
namespace {

using testing::decode_yaml;
using ::testing::ElementsAre;

constexpr std::string_view kAllKinds = R"(
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: h100}
spec:
  nodeLabels: {gpu: h100}
  nodeTaints: [{key: gpu, value: "true", effect: NoSchedule}]
  tolerations: [{key: spot, operator: Exists, effect: NoExecute, tolerationSeconds: 30}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Cohort
metadata: {name: research}
spec:
  parentName: company
  fairSharing: {weight: "2"}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors: [{name: h100, resources: [{name: nvidia.com/gpu, nominalQuota: 8, lendingLimit: 4}]}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: team-a}
spec:
  cohortName: research
  queueingStrategy: StrictFIFO
  stopPolicy: Hold
  namespaceSelector: {matchLabels: {team: a}}
  fairSharing: {weight: 500m}
  preemption:
    reclaimWithinCohort: Any
    borrowWithinCohort: {policy: LowerPriority, maxPriorityThreshold: 100}
    withinClusterQueue: LowerOrNewerEqualPriority
  flavorFungibility: {whenCanBorrow: TryNextFlavor, whenCanPreempt: TryNextFlavor, preference: PreemptionOverBorrowing}
  resourceGroups:
  - coveredResources: [cpu, memory]
    flavors:
    - name: h100
      resources:
      - {name: cpu, nominalQuota: 1500m, borrowingLimit: "1", lendingLimit: 500m}
      - {name: memory, nominalQuota: 64Gi}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: user-queue, namespace: team-a}
spec: {clusterQueue: team-a, stopPolicy: HoldAndDrain}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: WorkloadPriorityClass
metadata: {name: high}
value: 1000
description: urgent
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata:
  name: job-1
  namespace: team-a
  uid: u-1
  labels: {kueue.x-k8s.io/job-uid: j-1}
  creationTimestamp: "2026-11-30T08:00:00Z"
spec:
  queueName: user-queue
  priority: 5
  active: false
  podSets:
  - count: 3
    minCount: 2
    template:
      spec:
        initContainers: [{name: init, restartPolicy: Always, resources: {requests: {cpu: 100m}}}]
        containers: [{name: c, image: x, resources: {requests: {cpu: "1"}, limits: {memory: 1Gi}}}]
        overhead: {cpu: 10m}
        nodeSelector: {gpu: h100}
        tolerations: [{key: gpu, operator: Exists}]
        priorityClassName: batch
  - name: workers
    template: {spec: {containers: [{name: w}]}}
status:
  reclaimablePods: [{name: main, count: 1}]
)";

TEST(KueueDecode, EveryKindWithDefaults) {
  const auto d = decode_yaml(kAllKinds);
  ASSERT_TRUE(d.diagnostics.empty()) << d.lines()[0];
  const ObjectSet& s = d.set;
  ASSERT_EQ(s.resource_flavors.size(), 1u);
  const ResourceFlavor& rf = s.resource_flavors[0];
  EXPECT_EQ(rf.node_labels.at("gpu"), "h100");
  ASSERT_EQ(rf.node_taints.size(), 1u);
  EXPECT_EQ(rf.node_taints[0].effect, "NoSchedule");
  ASSERT_EQ(rf.tolerations.size(), 1u);
  EXPECT_EQ(rf.tolerations[0].op, "Exists");
  EXPECT_EQ(rf.tolerations[0].toleration_seconds, 30);

  ASSERT_EQ(s.cohorts.size(), 1u);
  EXPECT_EQ(s.cohorts[0].parent_name, "company");
  EXPECT_EQ(s.cohorts[0].fair_weight->to_string(), "2");
  EXPECT_EQ(s.cohorts[0].resource_groups[0].flavors[0].resources[0].lending_limit->to_string(), "4");

  ASSERT_EQ(s.cluster_queues.size(), 1u);
  const ClusterQueue& cq = s.cluster_queues[0];
  EXPECT_EQ(cq.cohort_name, "research");
  EXPECT_EQ(cq.queueing_strategy, twin::QueueingStrategy::StrictFIFO);
  EXPECT_EQ(cq.stop_policy, StopPolicy::Hold);
  EXPECT_TRUE(cq.namespace_selector.has_value());
  EXPECT_EQ(cq.fair_weight->to_string(), "500m");
  EXPECT_EQ(cq.preemption.reclaim_within_cohort, twin::PreemptionPolicy::Any);
  EXPECT_EQ(cq.preemption.borrow_within_cohort, twin::BorrowWithinCohortPolicy::LowerPriority);
  EXPECT_EQ(cq.preemption.max_priority_threshold, 100);
  EXPECT_EQ(cq.preemption.within_cluster_queue, twin::PreemptionPolicy::LowerOrNewerEqualPriority);
  EXPECT_EQ(cq.flavor_fungibility.when_can_borrow, twin::FungibilityPolicy::TryNextFlavor);
  EXPECT_EQ(cq.flavor_fungibility.preference, twin::FungibilityPreference::PreemptionOverBorrowing);
  const auto& q = cq.resource_groups[0].flavors[0].resources;
  EXPECT_EQ(q[0].nominal_quota.to_string(), "1500m");
  EXPECT_EQ(q[0].borrowing_limit->to_string(), "1");
  EXPECT_EQ(q[1].nominal_quota.to_string(), "64Gi");
  EXPECT_FALSE(q[1].borrowing_limit.has_value());

  ASSERT_EQ(s.local_queues.size(), 1u);
  EXPECT_EQ(s.local_queues[0].metadata.ns, "team-a");
  EXPECT_EQ(s.local_queues[0].cluster_queue, "team-a");
  EXPECT_EQ(s.local_queues[0].stop_policy, StopPolicy::HoldAndDrain);

  ASSERT_EQ(s.priority_classes.size(), 1u);
  EXPECT_EQ(s.priority_classes[0].value, 1000);
  EXPECT_EQ(s.priority_classes[0].description, "urgent");

  ASSERT_EQ(s.workloads.size(), 1u);
  const Workload& wl = s.workloads[0];
  EXPECT_EQ(wl.metadata.uid, "u-1");
  EXPECT_EQ(wl.metadata.labels.at("kueue.x-k8s.io/job-uid"), "j-1");
  EXPECT_EQ(format_rfc3339(*wl.metadata.creation_timestamp), "2026-11-30T08:00:00Z");
  EXPECT_EQ(wl.queue_name, "user-queue");
  EXPECT_EQ(wl.priority, 5);
  EXPECT_FALSE(wl.active);
  ASSERT_EQ(wl.pod_sets.size(), 2u);
  EXPECT_EQ(wl.pod_sets[0].name, "main");  // defaulted
  EXPECT_EQ(wl.pod_sets[0].count, 3);
  EXPECT_EQ(wl.pod_sets[0].min_count, 2);
  const PodSpec& ps = wl.pod_sets[0].spec;
  EXPECT_EQ(ps.init_containers[0].restart_policy, "Always");
  EXPECT_EQ(ps.containers[0].resources.requests.at("cpu").to_string(), "1");
  EXPECT_EQ(ps.containers[0].resources.limits.at("memory").to_string(), "1Gi");
  EXPECT_EQ(ps.overhead.at("cpu").to_string(), "10m");
  EXPECT_EQ(ps.node_selector.at("gpu"), "h100");
  EXPECT_EQ(ps.tolerations[0].op, "Exists");
  EXPECT_EQ(ps.priority_class_name, "batch");
  EXPECT_EQ(wl.pod_sets[1].name, "workers");
  EXPECT_EQ(wl.pod_sets[1].count, 1);  // defaulted
  ASSERT_EQ(wl.reclaimable_pods.size(), 1u);
  EXPECT_EQ(wl.reclaimable_pods[0].count, 1);
}

// Fields Kueue acts on that the twin does not model are accepted with a warning that
// names each one (the decisions ignore them), not silently: a ClusterQueue's
// admissionScope and concurrentAdmissionPolicy, a pod set's topologyRequest (TAS).
TEST(KueueDecode, FieldsTheTwinDoesNotModelAreWarnedAboutByName) {
  const auto d = decode_yaml(R"(
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: team-a}
spec:
  admissionScope: {admissionMode: UsageBasedAdmissionFairSharing}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors: [{name: h100, resources: [{name: nvidia.com/gpu, nominalQuota: 8}]}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {name: w, namespace: team-a}
spec:
  queueName: q
  podSets:
  - count: 2
    topologyRequest: {required: cloud.provider.com/topology-rack}
    template: {spec: {containers: [{name: c, resources: {requests: {nvidia.com/gpu: "4"}}}]}}
)");
  ASSERT_EQ(d.set.cluster_queues.size(), 1u);
  ASSERT_EQ(d.set.workloads.size(), 1u);
  std::vector<std::string> paths;
  for (const auto& f : d.diagnostics) {
    EXPECT_EQ(f.severity, Severity::Warning) << f.to_string();
    EXPECT_EQ(f.rule, kRuleFieldNotModelled) << f.to_string();
    EXPECT_NE(f.message.find("not modelled by the twin"), std::string::npos) << f.to_string();
    paths.push_back(f.path);
  }
  EXPECT_EQ(paths, (std::vector<std::string>{"spec.admissionScope", "spec.podSets[0].topologyRequest"}));
}

TEST(KueueDecode, DefaultsOfAClusterQueue) {
  const auto d = decode_yaml(R"(
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: plain}
)");
  ASSERT_TRUE(d.diagnostics.empty());
  const ClusterQueue& cq = d.set.cluster_queues[0];
  EXPECT_EQ(cq.queueing_strategy, twin::QueueingStrategy::BestEffortFIFO);
  EXPECT_EQ(cq.preemption.reclaim_within_cohort, twin::PreemptionPolicy::Never);
  EXPECT_EQ(cq.preemption.within_cluster_queue, twin::PreemptionPolicy::Never);
  EXPECT_EQ(cq.flavor_fungibility.when_can_borrow, twin::FungibilityPolicy::MayStopSearch);
  EXPECT_EQ(cq.flavor_fungibility.when_can_preempt, twin::FungibilityPolicy::TryNextFlavor);
  EXPECT_EQ(cq.stop_policy, StopPolicy::None);
  EXPECT_FALSE(cq.fair_weight.has_value());
}

TEST(KueueDecode, KubectlListOutputWithServerFields) {
  Diagnostics diagnostics;
  const ObjectSet s = load_objects({gpubank::testing::source_dir() + "/tests/kueue/data/kubectl-list.yaml"}, diagnostics);
  ASSERT_TRUE(diagnostics.empty()) << diagnostics[0].to_string();
  ASSERT_EQ(s.cluster_queues.size(), 1u);
  ASSERT_EQ(s.workloads.size(), 1u);
  const Workload& wl = s.workloads[0];
  EXPECT_EQ(wl.metadata.ns, "team-a");
  EXPECT_EQ(wl.metadata.generation, 1);
  EXPECT_EQ(wl.source.item, 1);
  EXPECT_EQ(wl.source.pos, (SourcePos{77, 3}));
  EXPECT_TRUE(wl.has_quota_reservation());
  ASSERT_TRUE(wl.admission.has_value());
  EXPECT_EQ(wl.admission->cluster_queue, "cluster-queue");
  EXPECT_EQ(wl.admission->pod_set_assignments[0].count, 2);
  EXPECT_EQ(wl.admission->pod_set_assignments[0].flavors.at("memory"), "default-flavor");
  EXPECT_EQ(wl.admission->pod_set_assignments[0].resource_usage.at("memory").to_string(), "2Gi");
  ASSERT_EQ(wl.conditions.size(), 2u);
  EXPECT_EQ(wl.conditions[1].type, "Admitted");
  EXPECT_EQ(format_rfc3339(wl.conditions[1].last_transition_time), "2026-11-30T08:00:01Z");
  ASSERT_TRUE(wl.priority_class_ref.has_value());
  EXPECT_EQ(wl.priority_class_ref->name, "high");
  EXPECT_EQ(s.cluster_queues[0].resource_groups[0].flavors[0].resources[1].borrowing_limit->to_string(), "2Gi");
}

TEST(KueueDecode, ApiListKindAndJsonWithPositions) {
  const std::string path = ::testing::TempDir() + "/queues.json";
  std::ofstream(path) << R"({
  "apiVersion": "kueue.x-k8s.io/v1beta2",
  "kind": "LocalQueueList",
  "items": [
    {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
     "metadata": {"name": "q", "namespace": "ns"}, "spec": {"clusterQueue": "Bad_Name"}}
  ]
})";
  Diagnostics diagnostics;
  const ObjectSet s = load_objects({path}, diagnostics);
  ASSERT_EQ(diagnostics.size(), 1u);
  const Diagnostic& d = diagnostics[0];
  EXPECT_EQ(d.file, path);
  EXPECT_EQ(d.pos, (SourcePos{6, 77}));
  EXPECT_EQ(d.kind, "LocalQueue");
  EXPECT_EQ(d.name, "ns/q");
  EXPECT_EQ(d.path, "spec.clusterQueue");
  EXPECT_EQ(d.rule, doc::kRuleInvalidFormat);
  EXPECT_EQ(d.message,
            "Invalid value: \"Bad_Name\": spec.clusterQueue in body should match "
            "'^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$'");
  EXPECT_TRUE(s.local_queues.empty());
}

TEST(KueueDecode, SchemaErrorsAreAllCollectedWithPositions) {
  const auto d = decode_yaml(R"(
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: cq}
spec:
  cohortName: research
  queueingStrategy: Sometimes
  preemption: {withinClusterQueue: Any}
  colour: blue
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: default
      resources:
      - name: cpu
        nominalQuota: 1.5
      - name: cpu
        nominalQuota: 2x
        lendingLimit: true
    - name: default
      resources: [{name: cpu}]
)");
  EXPECT_TRUE(d.set.cluster_queues.empty());
  EXPECT_THAT(
      d.lines(),
      ElementsAre(
          "in.yaml:7:21: error: ClusterQueue/cq: spec.queueingStrategy: Unsupported value: \"Sometimes\": supported "
          "values: \"StrictFIFO\", \"BestEffortFIFO\" [schema.invalid-enum]",
          "in.yaml:8:36: error: ClusterQueue/cq: spec.preemption.withinClusterQueue: Unsupported value: \"Any\": "
          "supported values: \"Never\", \"LowerPriority\", \"LowerOrNewerEqualPriority\" [schema.invalid-enum]",
          "in.yaml:9:3: error: ClusterQueue/cq: spec.colour: unknown field \"spec.colour\" [schema.unknown-field]",
          "in.yaml:11:5: error: ClusterQueue/cq: spec.resourceGroups[0]: Invalid value: \"object\": flavors must have "
          "the same number of resources as the coveredResources [schema.validation-rule]",
          "in.yaml:16:23: error: ClusterQueue/cq: spec.resourceGroups[0].flavors[0].resources[0].nominalQuota: "
          "Invalid value: \"number\": spec.resourceGroups[0].flavors[0].resources[0].nominalQuota in body must be of "
          "type integer,string: \"number\" [schema.wrong-type]",
          "in.yaml:17:9: error: ClusterQueue/cq: spec.resourceGroups[0].flavors[0].resources[1]: Duplicate value: "
          "map[string]interface {}{\"name\":\"cpu\"} [schema.duplicate-value]",
          "in.yaml:18:23: error: ClusterQueue/cq: spec.resourceGroups[0].flavors[0].resources[1].nominalQuota: "
          "Invalid value: \"2x\": spec.resourceGroups[0].flavors[0].resources[1].nominalQuota in body should match "
          "'^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\."
          "[0-9]+))))?$' [schema.invalid-format]",
          "in.yaml:19:23: error: ClusterQueue/cq: spec.resourceGroups[0].flavors[0].resources[1].lendingLimit: "
          "Invalid value: \"boolean\": spec.resourceGroups[0].flavors[0].resources[1].lendingLimit in body must be of "
          "type integer,string: \"boolean\" [schema.wrong-type]",
          "in.yaml:20:7: error: ClusterQueue/cq: spec.resourceGroups[0].flavors[1]: Duplicate value: "
          "map[string]interface {}{\"name\":\"default\"} [schema.duplicate-value]",
          "in.yaml:21:19: error: ClusterQueue/cq: spec.resourceGroups[0].flavors[1].resources[0].nominalQuota: "
          "Required value [schema.required]"));
}

TEST(KueueDecode, RequiredFieldsAndMetadata) {
  const auto d = decode_yaml(R"(
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {name: Job_1, namespace: Team}
spec:
  podSets:
  - name: main
    count: -1
  - name: Main
    template: {spec: {containers: [{image: x}]}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: WorkloadPriorityClass
metadata: {labels: {a: 1}}
)");
  EXPECT_THAT(
      d.messages(),
      ElementsAre("metadata.name: Invalid value: \"Job_1\": a lowercase RFC 1123 subdomain must consist of lower case "
          "alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. "
          "'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
                  "metadata.namespace: Invalid value: \"Team\": a lowercase RFC 1123 label must consist of lower case "
          "alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  "
          "or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
                  "spec.podSets[0].template: Required value",
                  "spec.podSets[0].count: Invalid value: -1: spec.podSets[0].count in body should be greater than or equal "
          "to 0",
                  "spec.podSets[1].name: Invalid value: \"Main\": spec.podSets[1].name in body should match "
          "'^[a-z0-9]([-a-z0-9]*[a-z0-9])?$'",
                  "spec.podSets[1].template.spec.containers[0].name: Required value",
                  "value: Required value",
                  "metadata.name: Required value: name or generateName is required",
                  "metadata.labels[a]: Invalid value: \"integer\": metadata.labels[a] in body must be of type string: "
          "\"integer\""));
}

TEST(KueueDecode, CelRules) {
  const auto d = decode_yaml(R"(
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: no-cohort}
spec:
  preemption: {borrowWithinCohort: {policy: LowerPriority}}
  flavorFungibility: {preference: BorrowingOverPreemption}
  resourceGroups:
  - coveredResources: [cpu]
    flavors: [{name: f, resources: [{name: cpu, nominalQuota: 1, borrowingLimit: 1}]}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: rf}
spec:
  topologyName: default
  nodeTaints: [{key: a, effect: Sometimes}]
  tolerations: [{operator: Equal, value: x}, {key: b, operator: Exists, value: y}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {name: w}
spec:
  priorityClassRef: {group: kueue.x-k8s.io, kind: PriorityClass, name: high}
  podSets: [{count: 1, minCount: 2, template: {spec: {containers: [{name: c}]}}}]
)");
  EXPECT_THAT(
      d.messages(),
      ElementsAre("spec: Invalid value: \"object\": borrowingLimit must be nil when cohort is empty",
                  "spec.preemption: Invalid value: \"object\": reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never",
                  "spec.flavorFungibility: Invalid value: \"object\": preference can only be set when both whenCanBorrow and "
          "whenCanPreempt are TryNextFlavor",
                  "spec: Invalid value: \"object\": at least one nodeLabel is required when topology is set",
                  "spec.nodeTaints: Invalid value: \"array\": supported taint effect values: 'NoSchedule', "
          "'PreferNoSchedule', 'NoExecute'",
                  "spec.tolerations: Invalid value: \"array\": operator must be Exists when 'key' is empty, which means "
          "'match all values and all keys'",
                  "spec.tolerations: Invalid value: \"array\": a value must be empty when 'operator' is 'Exists'",
                  "spec: Invalid value: \"object\": priority should not be nil when priorityClassRef is set",
                  "spec.priorityClassRef: Invalid value: \"object\": only the WorkloadPriorityClass kind is allowed for the "
          "kueue.x-k8s.io group",
                  "spec.podSets[0]: Invalid value: \"object\": minCount should be positive and less or equal to count"));
  for (const auto& diag : d.diagnostics) EXPECT_EQ(diag.rule, kRuleValidationRule) << diag.to_string();
}

TEST(KueueDecode, ListSizes) {
  std::string groups;
  for (int i = 0; i < 17; ++i) groups += "  - {coveredResources: [r" + std::to_string(i) + "], flavors: [{name: f" +
                                         std::to_string(i) + ", resources: [{name: r" + std::to_string(i) +
                                         ", nominalQuota: 1}]}]}\n";
  const auto d = decode_yaml("apiVersion: kueue.x-k8s.io/v1beta2\nkind: Cohort\nmetadata: {name: c}\nspec:\n"
                             "  resourceGroups:\n" + groups +
                             "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: Workload\nmetadata: {name: w}\n"
                             "spec: {podSets: []}\n");
  EXPECT_THAT(d.messages(),
              ElementsAre("spec.resourceGroups: Too many: 17: must have at most 16 items",
                          "spec.podSets: Invalid value: 0: spec.podSets in body should have at least 1 items"));
}

TEST(KueueDecode, WebhooksRunOnlyAfterTheSchemaPasses) {
  constexpr std::string_view kQueue = R"(
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: cq}
spec:
  fairSharing: {weight: "-1"}
  resourceGroups:
  - coveredResources: [cpu, cpu, "a/b/c"]
    flavors:
    - name: default
      resources:
      - {name: cpu, nominalQuota: "-1", lendingLimit: 2}
      - {name: memory, nominalQuota: 1}
      - {name: a/b/c, nominalQuota: 1}
  - coveredResources: [gpu]
    flavors: [{name: default, resources: [{name: gpu, nominalQuota: 4, lendingLimit: 5}]}]
)";
  const auto d = decode_yaml(kQueue);
  const std::string qualified =
      "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
      "character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
      "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
  EXPECT_THAT(
      d.messages(),
      ElementsAre("spec.fairSharing: Invalid value: \"-1\": must be greater than or equal to 0",
                  "spec.resourceGroups[0].coveredResources[1]: Duplicate value: \"cpu\"",
                  "spec.resourceGroups[0].coveredResources[2]: Invalid value: \"a/b/c\": a valid label key " + qualified +
                      " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                  "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota: Invalid value: \"-1\": must be greater "
                  "than or equal to 0",
                  "spec.resourceGroups[0].flavors[0].resources[0].lendingLimit: Invalid value: \"2\": must be nil when "
                  "cohort is empty",
                  "spec.resourceGroups[0].flavors[0].resources[0].lendingLimit: Invalid value: \"2\": must be less "
                  "than or equal to the nominalQuota",
                  "spec.resourceGroups[0].flavors[0].resources[1].name: Invalid value: \"memory\": must match the name "
                  "in coveredResources",
                  "spec.resourceGroups[1].flavors[0].name: Duplicate value: \"default\"",
                  "spec.resourceGroups[1].flavors[0].resources[0].lendingLimit: Invalid value: \"5\": must be nil when "
                  "cohort is empty",
                  "spec.resourceGroups[1].flavors[0].resources[0].lendingLimit: Invalid value: \"5\": must be less "
                  "than or equal to the nominalQuota"));
  for (const auto& diag : d.diagnostics) EXPECT_EQ(diag.rule, kRuleWebhook);
  EXPECT_EQ(d.diagnostics[5].pos, (SourcePos{12, 55}));

  // With a schema error in the same object, the webhook findings are not reached.
  const auto with_schema_error = decode_yaml(std::string(kQueue) + "  stopPolicy: Never\n");
  EXPECT_THAT(with_schema_error.messages(),
              ElementsAre("spec.stopPolicy: Unsupported value: \"Never\": supported values: \"None\", \"Hold\", "
                          "\"HoldAndDrain\""));
}

TEST(KueueDecode, CohortWebhook) {
  const auto d = decode_yaml(R"(
apiVersion: kueue.x-k8s.io/v1beta2
kind: Cohort
metadata: {name: root}
spec:
  fairSharing: {weight: 1n}
  resourceGroups:
  - coveredResources: [cpu]
    flavors: [{name: f, resources: [{name: cpu, nominalQuota: 1, borrowingLimit: 2, lendingLimit: 3}]}]
)");
  EXPECT_THAT(d.messages(),
              ElementsAre("spec.fairSharing: Invalid value: \"1n\": When not 0, weight must be > 10e-9",
                          "spec.resourceGroups[0].flavors[0].resources[0].borrowingLimit: Invalid value: \"2\": must be "
                          "nil when parent is empty",
                          "spec.resourceGroups[0].flavors[0].resources[0].lendingLimit: Invalid value: \"3\": must be "
                          "nil when parent is empty"));
}

// apimachinery v0.36.3's label key (name part) and label value rules, as the messages end.
const std::string kLabelKeyRule =
    "consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character "
    "(e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const std::string kLabelValueRule =
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start "
    "and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for "
    "validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

// ValidateResourceFlavor (pkg/webhooks/resourceflavor_webhook.go) with apimachinery
// v0.36.3's label rules; the labels are checked by key, where Go's map order is random.
TEST(KueueDecode, ResourceFlavorWebhook) {
  const auto d = decode_yaml(R"(
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: gpu}
spec:
  nodeLabels: {"example.com/tier": "-bad", "two/slashes/key": ok}
  nodeTaints:
  - {key: spot, value: "yes", effect: NoSchedule}
  - {key: spot, value: "no", effect: NoSchedule, timeAdded: "2026-11-30T08:00:00.5Z"}
  - {key: spot, effect: NoExecute}
  - {key: "bad key", value: "a<b", effect: NoExecute}
  tolerations:
  - {key: "-x", operator: Exists}
  - {operator: Exists}
)");
  EXPECT_THAT(
      d.messages(),
      ElementsAre(
          "spec.nodeLabels: Invalid value: \"-bad\": " + kLabelValueRule,
          "spec.nodeLabels: Invalid value: \"two/slashes/key\": a valid label key must " + kLabelKeyRule +
              " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
          "spec.nodeTaints[1]: Duplicate value: {\"key\":\"spot\",\"value\":\"no\",\"effect\":\"NoSchedule\","
          "\"timeAdded\":\"2026-11-30T08:00:00Z\"}: taints must be unique by key and effect pair",
          "spec.nodeTaints[3].key: Invalid value: \"bad key\": name part must " + kLabelKeyRule,
          "spec.nodeTaints[3].value: Invalid value: \"a<b\": " + kLabelValueRule,
          "spec.tolerations[0].key: Invalid value: \"-x\": name part must " + kLabelKeyRule));
  EXPECT_TRUE(d.set.resource_flavors.empty());  // rejected as a whole, as the API server does
}

TEST(KueueDecode, WorkloadWebhook) {
  const auto d = decode_yaml(R"(
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {name: w, namespace: ns}
spec:
  podSets:
  - name: main
    count: 2
    minCount: 1
    template:
      spec:
        containers: [{name: c, resources: {requests: {pods: 1, cpu: "-1"}}}]
  - name: extra
    minCount: 1
    template: {spec: {containers: [{name: c}]}}
status:
  conditions:
  - {type: QuotaReserved, status: "True", reason: QuotaReserved, message: "", lastTransitionTime: "2026-11-30T08:00:00Z"}
  admission:
    clusterQueue: cq
    podSetAssignments:
    - {name: main, count: 2, resourceUsage: {cpu: 3m}}
    - {name: other, count: 1}
)");
  EXPECT_THAT(
      d.messages(),
      ElementsAre("spec.podSets: Invalid value: 2: at most one podSet can use minCount",
                  "spec.podSets[0].template.spec.containers[0].resources.requests[pods]: Invalid value: \"pods\": the "
                  "key is reserved for internal kueue use",
                  "spec.podSets[0].template.spec.containers[0].resources.requests[cpu]: Invalid value: \"-1\": must be "
                  "greater than or equal to 0",
                  "status.admission.podSetAssignments[0].resourceUsage[cpu]: Invalid value: 3m: is not a multiple of 2",
                  "status.admission.podSetAssignments[1].name: Not found: \"other\""));
  // No status.admission while QuotaReserved is true.
  const auto missing = decode_yaml(R"(
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {name: w}
spec: {podSets: [{template: {spec: {containers: [{name: c}]}}}]}
status:
  conditions:
  - {type: QuotaReserved, status: "True", reason: QuotaReserved, message: m, lastTransitionTime: "2026-11-30T08:00:00Z"}
)");
  EXPECT_THAT(missing.messages(),
              ElementsAre("status.admission: Required value: must be set while the QuotaReserved condition is true"));
}

// validatePodSet's metadata checks (WorkloadValidationForPodSetMetadata, on by default) and
// validateReclaimablePods on create.
TEST(KueueDecode, WorkloadWebhookPodSetMetadataAndReclaimablePods) {
  const auto d = decode_yaml(R"(
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {name: w, namespace: ns}
spec:
  podSets:
  - name: main
    count: 2
    template:
      metadata:
        labels: {app: "trainer", "bad key": "x"}
        annotations: {"Example.com/Note": "fine when lowercased", "-no": ""}
      spec: {containers: [{name: c}]}
  - name: aux
    template: {spec: {containers: [{name: c}]}}
status:
  conditions:
  - {type: example.com/a-condition-type-whose-name-part-is-longer-than-sixty-three-bytes, status: "True",
     reason: Set, message: "", lastTransitionTime: "2026-11-30T08:00:00Z"}
  reclaimablePods:
  - {name: main, count: 3}
  - {name: aux, count: 1}
  - {name: gone, count: 1}
)");
  EXPECT_THAT(d.messages(),
              ElementsAre("spec.podSets[0].template.metadata.labels: Invalid value: \"bad key\": name part must " + kLabelKeyRule,
                          "spec.podSets[0].template.metadata.annotations: Invalid value: \"-no\": name part must " + kLabelKeyRule,
                          "status.conditions[0].type: Invalid value: "
                          "\"example.com/a-condition-type-whose-name-part-is-longer-than-sixty-three-bytes\": name "
                          "part must be no more than 63 bytes",
                          "status.reclaimablePods[main].count: Invalid value: 3: should be less or equal to 2",
                          "status.reclaimablePods[gone].name: Unsupported value: \"gone\": supported values: \"main\", "
                          "\"aux\""));
  // Annotations of more than 256 KiB in all.
  std::string big = R"(
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {name: w, namespace: ns}
spec:
  podSets:
  - template:
      metadata:
        annotations: {a: ")";
  big.append(128 * 1024, 'x').append("\", b: \"").append(128 * 1024, 'y').append(R"("}
      spec: {containers: [{name: c}]}
)");
  EXPECT_THAT(decode_yaml(big).messages(),
              ElementsAre("spec.podSets[0].template.metadata.annotations: Too long: may not be more than 262144 bytes"));
}

TEST(KueueDecode, PodTemplatesAreReadLeniently) {
  const auto d = decode_yaml(R"(
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {name: w}
spec:
  podSets:
  - template:
      metadata: {labels: {anything: goes}}
      spec:
        schedulerName: default
        someFutureField: {x: 1}
        containers: [{name: c, image: x, futureField: 1, resources: {claims: [{name: gpu}], requests: {cpu: [1]}}}]
)");
  EXPECT_THAT(d.messages(),
              ElementsAre("spec.podSets[0].template.spec.containers[0].resources.requests[cpu]: Invalid value: "
                          "\"array\": spec.podSets[0].template.spec.containers[0].resources.requests[cpu] in body must "
                          "be of type integer,string: \"array\""));
}

TEST(KueueDecode, RequiredNodeAffinityAsTheSchemaChecksIt) {
  // The Workload CRD requires nodeSelectorTerms, and key and operator in each requirement
  // (matchFields too); it leaves the operator and the values to whoever reads them.
  const auto good = decode_yaml(R"(
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {name: w}
spec:
  podSets:
  - template:
      spec:
        containers: [{name: c}]
        affinity:
          podAntiAffinity: {anything: goes}
          nodeAffinity:
            preferredDuringSchedulingIgnoredDuringExecution: [{weight: 1, preference: {}}]
            requiredDuringSchedulingIgnoredDuringExecution:
              nodeSelectorTerms:
              - matchExpressions:
                - {key: gpu.example.com/product, operator: In, values: [H100, B200]}
                - {key: gpu.example.com/memory-gb, operator: sometimes}
              - matchFields: [{key: metadata.name, operator: In, values: [node-1]}]
)");
  ASSERT_TRUE(good.diagnostics.empty()) << good.lines()[0];
  const auto& terms = good.set.workloads[0].pod_sets[0].spec.required_node_affinity;
  ASSERT_EQ(terms.size(), 2u);
  ASSERT_EQ(terms[0].match_expressions.size(), 2u);
  EXPECT_EQ(terms[0].match_expressions[0].key, "gpu.example.com/product");
  EXPECT_EQ(terms[0].match_expressions[0].op, "In");
  EXPECT_THAT(terms[0].match_expressions[0].values, ElementsAre("H100", "B200"));
  EXPECT_EQ(terms[0].match_expressions[1].op, "sometimes");
  EXPECT_TRUE(terms[1].match_expressions.empty());  // matchFields are not kept

  const auto bad = decode_yaml(R"(
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {name: w}
spec:
  podSets:
  - template:
      spec:
        containers: [{name: c}]
        affinity:
          nodeAffinity:
            requiredDuringSchedulingIgnoredDuringExecution:
              nodeSelectorTerms:
              - matchExpressions: [{operator: In, values: a}]
              - matchFields: [{key: metadata.name}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {name: v}
spec:
  podSets:
  - template:
      spec:
        containers: [{name: c}]
        affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {}}}
)");
  const std::string at = "spec.podSets[0].template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution";
  EXPECT_THAT(bad.messages(),
              ElementsAre(at + ".nodeSelectorTerms[0].matchExpressions[0].key: Required value",
                          at + ".nodeSelectorTerms[0].matchExpressions[0].values: Invalid value: \"string\": " + at +
                              ".nodeSelectorTerms[0].matchExpressions[0].values in body must be of type array: \"string\"",
                          at + ".nodeSelectorTerms[1].matchFields[0].operator: Required value",
                          at + ".nodeSelectorTerms: Required value"));
  EXPECT_TRUE(bad.set.workloads.empty());
}

TEST(KueueDecode, ConditionsAndStatusFields) {
  const auto d = decode_yaml(R"(
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {name: w}
spec: {podSets: [{template: {spec: {containers: [{name: c}]}}}]}
status:
  requeueState: {count: 1}
  conditions:
  - {type: QuotaReserved, status: Maybe, reason: "no good", lastTransitionTime: yesterday}
  - {type: QuotaReserved, status: "False", reason: Pending, message: m, lastTransitionTime: "2026-11-30T08:00:00Z"}
)");
  EXPECT_THAT(
      d.messages(),
      ElementsAre("status.conditions[0].message: Required value",
                  "status.conditions[0].status: Unsupported value: \"Maybe\": supported values: \"True\", \"False\", "
                  "\"Unknown\"",
                  "status.conditions[0].reason: Invalid value: \"no good\": status.conditions[0].reason in body should "
                  "match '^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$'",
                  "status.conditions[0].lastTransitionTime: Invalid value: \"yesterday\": "
                  "status.conditions[0].lastTransitionTime in body must be of type date-time: \"yesterday\"",
                  "status.conditions[1]: Duplicate value: map[string]interface {}{\"type\":\"QuotaReserved\"}"));
}

TEST(KueueDecode, KindsAndVersions) {
  const auto d = decode_yaml(R"(
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: old}
---
apiVersion: v1
kind: Namespace
metadata: {name: team-a, labels: {team: a}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Topology
metadata: {name: prov}
---
metadata: {name: nothing}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Namespace
metadata: {name: team-b}
---
apiVersion: v1
kind: Namespace
metadata: {name: Team.C}
)");
  EXPECT_THAT(d.lines(),
              ElementsAre("in.yaml:2:13: error: ClusterQueue/old: apiVersion: unsupported apiVersion "
                          "\"kueue.x-k8s.io/v1beta1\" for ClusterQueue: the twin reads kueue.x-k8s.io/v1beta2 "
                          "[kueue.unsupported-version]",
                          "in.yaml:10:1: warning: Topology: ignored: kueue.x-k8s.io/v1beta2 Topology is not "
                          "an object admission reads [kueue.ignored-kind]",
                          "in.yaml:14:1: error: kind: Required value: every object needs a kind [schema.required]",
                          "in.yaml:16:13: error: Namespace/team-b: apiVersion: unsupported apiVersion "
                          "\"kueue.x-k8s.io/v1beta2\" for Namespace: the twin reads v1 [kueue.unsupported-version]",
                          "in.yaml:22:18: error: Namespace/Team.C: metadata.name: Invalid value: \"Team.C\": a lowercase "
                          "RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and "
                          "end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation "
                          "is '[a-z0-9]([-a-z0-9]*[a-z0-9])?') [schema.invalid-format]"));
  ASSERT_EQ(d.set.namespaces.size(), 1u);  // core/v1 Namespaces are read for their labels
  EXPECT_EQ(d.set.namespaces[0].metadata.name, "team-a");
  EXPECT_EQ(d.set.namespaces[0].metadata.labels.at("team"), "a");
}

TEST(KueueDecode, AdmissionChecksAndTheStrategyThatNamesThem) {
  const auto d = decode_yaml(R"(
apiVersion: kueue.x-k8s.io/v1beta2
kind: AdmissionCheck
metadata: {name: prov}
spec:
  controllerName: kueue.x-k8s.io/provisioning-request
  parameters: {apiGroup: kueue.x-k8s.io, kind: ProvisioningRequestConfig, name: prov-config}
status:
  conditions:
  - {type: Active, status: "True", reason: Active, message: The admission check is active, lastTransitionTime: "2026-11-30T08:00:00Z"}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: AdmissionCheck
metadata: {name: idle}
spec: {controllerName: example.com/check}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: AdmissionCheck
metadata: {name: bad}
spec:
  parameters: {apiGroup: Example.com, kind: 9Config, name: x}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: cq}
spec:
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors: [{name: h100, resources: [{name: nvidia.com/gpu, nominalQuota: 8}]}]
  admissionChecksStrategy:
    admissionChecks:
    - {name: prov, onFlavors: [h100]}
    - {name: idle}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: not-its-flavor}
spec:
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - {name: l40s, resources: [{name: nvidia.com/gpu, nominalQuota: 8}]}
    - {name: h100, resources: [{name: nvidia.com/gpu, nominalQuota: 8}]}
  admissionChecksStrategy:
    admissionChecks:
    - {name: prov, onFlavors: [h100, a100]}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: no-flavors}
spec:
  admissionChecksStrategy:
    admissionChecks:
    - {name: prov, onFlavors: [h100]}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: dup}
spec:
  admissionChecksStrategy:
    admissionChecks:
    - {name: prov, onFlavors: [h100, h100]}
    - {name: prov}
)");
  std::vector<std::string> messages;
  for (const auto& diag : d.diagnostics) messages.push_back(diag.name + " " + diag.path + ": " + diag.message);
  EXPECT_THAT(messages,
              ::testing::UnorderedElementsAre(
                  "bad spec.controllerName: Required value",
                  "bad spec.parameters.apiGroup: Invalid value: \"Example.com\": spec.parameters.apiGroup in body should "
                  "match '^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$'",
                  "bad spec.parameters.kind: Invalid value: \"9Config\": spec.parameters.kind in body should match "
                  "'^(?i)[a-z]([-a-z0-9]*[a-z0-9])?$'",
                  "dup spec.admissionChecksStrategy.admissionChecks[0].onFlavors[1]: Duplicate value: \"h100\"",
                  "dup spec.admissionChecksStrategy.admissionChecks[1]: Duplicate value: "
                  "map[string]interface {}{\"name\":\"prov\"}",
                  // validateAdmissionCheckOnFlavors (the supported values sorted; Go's are in set order)
                  "not-its-flavor spec.admissionChecksStrategy.admissionChecks[0].onFlavors[1]: Unsupported value: "
                  "\"a100\": supported values: \"h100\", \"l40s\"",
                  "no-flavors spec.admissionChecksStrategy.admissionChecks[0].onFlavors[0]: Unsupported value: \"h100\""));
  ASSERT_EQ(d.set.admission_checks.size(), 2u);
  EXPECT_EQ(d.set.admission_checks[0].controller_name, "kueue.x-k8s.io/provisioning-request");
  EXPECT_TRUE(d.set.admission_checks[0].active);
  EXPECT_FALSE(d.set.admission_checks[1].active);  // no Active=True condition yet
  ASSERT_EQ(d.set.cluster_queues.size(), 1u);
  using Rules = std::vector<std::pair<std::string, std::vector<std::string>>>;
  EXPECT_EQ(d.set.cluster_queues[0].admission_checks, (Rules{{"prov", {"h100"}}, {"idle", {}}}));
}

TEST(KueueDecode, TheManagerConfigurationAsAnObjectOrInItsConfigMap) {
  // v1beta2 in Kueue's ConfigMap: the rest of the Configuration is accepted unread.
  const auto cm = decode_yaml(R"(
apiVersion: v1
kind: ConfigMap
metadata: {name: kueue-manager-config, namespace: kueue-system}
data:
  controller_manager_config.yaml: |
    apiVersion: config.kueue.x-k8s.io/v1beta2
    kind: Configuration
    leaderElection: {leaderElect: true}
    fairSharing:
      preemptionStrategies: [LessThanInitialShare]
    featureGates: {PartialAdmission: false}
    resources:
      excludeResourcePrefixes: [ephemeral-storage]
      transformations:
      - input: nvidia.com/mig-1g.5gb
        strategy: Replace
        multiplyBy: example.com/x
        outputs: {example.com/accel-memory: 5Gi}
      - input: nvidia.com/gpu
        outputs: {example.com/credits: "10"}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: unrelated, namespace: default}
data: {other.yaml: "a: b"}
)");
  ASSERT_EQ(cm.set.configurations.size(), 1u);
  const ManagerConfiguration& c = cm.set.configurations[0];
  EXPECT_EQ(c.config_map, "kueue-system/kueue-manager-config");
  EXPECT_EQ(c.fair_sharing, std::vector<twin::FairSharingStrategy>{twin::FairSharingStrategy::LessThanInitialShare});
  EXPECT_EQ(c.feature_gates, (std::map<std::string, bool>{{"PartialAdmission", false}}));
  EXPECT_EQ(c.exclude_resource_prefixes, std::vector<std::string>{"ephemeral-storage"});
  ASSERT_EQ(c.transformations.size(), 2u);
  EXPECT_TRUE(c.transformations[0].replace);
  EXPECT_EQ(c.transformations[0].multiply_by, "example.com/x");
  EXPECT_EQ(c.transformations[0].outputs.at("example.com/accel-memory"), *Quantity::parse("5Gi"));
  EXPECT_FALSE(c.transformations[1].replace);  // Retain, the default
  ASSERT_EQ(cm.diagnostics.size(), 1u);  // the other ConfigMap is skipped
  EXPECT_EQ(cm.diagnostics[0].rule, kRuleIgnoredKind);

  // v1beta1: fairSharing.enable, with both strategies by default; off without enable.
  const auto v1 = decode_yaml(R"(
apiVersion: config.kueue.x-k8s.io/v1beta1
kind: Configuration
fairSharing: {enable: true}
)");
  ASSERT_TRUE(v1.diagnostics.empty()) << v1.lines()[0];
  EXPECT_EQ(v1.set.configurations.at(0).fair_sharing,
            (std::vector<twin::FairSharingStrategy>{twin::FairSharingStrategy::LessThanOrEqualToFinalShare,
                                                    twin::FairSharingStrategy::LessThanInitialShare}));
  EXPECT_FALSE(decode_yaml("apiVersion: config.kueue.x-k8s.io/v1beta1\nkind: Configuration\nfairSharing: {enable: false}\n")
                   .set.configurations.at(0)
                   .fair_sharing);
  // v1beta1's waitForPodsReady is on only with enable (then a warning: not modelled).
  auto wait_rules = [](std::string_view enable) {
    std::vector<std::string> rules;
    for (const auto& x : decode_yaml("apiVersion: config.kueue.x-k8s.io/v1beta1\nkind: Configuration\n"
                                     "waitForPodsReady: {enable: " + std::string(enable) + ", timeout: 5m}\n")
                             .diagnostics) {
      rules.push_back(x.rule + " " + x.path);
    }
    return rules;
  };
  EXPECT_THAT(wait_rules("True"), ::testing::ElementsAre(std::string(kRuleConfigNotModelled) + " waitForPodsReady"));
  EXPECT_THAT(wait_rules("false"), ::testing::IsEmpty());
  EXPECT_THAT(wait_rules("\"yes\""), ::testing::ElementsAre(::testing::HasSubstr("waitForPodsReady.enable")));
}

TEST(KueueDecode, TheManagerConfigurationIsValidatedAsTheManagerDoes) {
  const auto d = decode_yaml(R"(
apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
fairSharing:
  preemptionStrategies: [LessThanInitialShare, LessThanOrEqualToFinalShare]
featureGates: {PartialAdmission: maybe}
waitForPodsReady: {timeout: 5m}
admissionFairSharing: {usageHalfLifeTime: 168h}
resources:
  quotaCheckStrategy: IgnoreUndeclared
  excludeResourcePrefixes: [ephemeral-storage]
  transformations:
  - input: nvidia.com/gpu
    strategy: Sometimes
  - input: nvidia.com/gpu
    outputs: {example.com/credits: ten}
  - outputs: {}
    extra: 1
---
apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
fairSharing: {}
fairSharin: {}
queueVisibility: {}
---
apiVersion: config.kueue.x-k8s.io/v1beta1
kind: Configuration
queueVisibility: {}
resources: {quotaCheckStrategy: IgnoreUndeclared}
---
apiVersion: config.kueue.x-k8s.io/v1alpha1
kind: Configuration
---
apiVersion: v1
kind: ConfigMap
metadata: {name: kueue-manager-config, namespace: kueue-system}
data:
  controller_manager_config.yaml: "a: [unclosed"
)");
  std::vector<std::string> messages;
  for (const auto& diag : d.diagnostics) messages.push_back(diag.path + ": " + diag.message);
  EXPECT_THAT(messages,
              ::testing::IsSupersetOf({
                  "fairSharing.preemptionStrategies: Unsupported value: []v1beta2.PreemptionStrategy{"
                  "\"LessThanInitialShare\", \"LessThanOrEqualToFinalShare\"}: supported values: "
                  "\"LessThanOrEqualToFinalShare\", \"LessThanInitialShare\", "
                  "\"LessThanOrEqualToFinalShare,LessThanInitialShare\"",
                  "featureGates[PartialAdmission]: Invalid value: \"string\": featureGates[PartialAdmission] in body "
                  "must be of type boolean: \"string\"",
                  "resources.transformations[1].input: Duplicate value: \"nvidia.com/gpu\"",
                  "resources.transformations[0].strategy: Unsupported value: \"Sometimes\": supported values: "
                  "\"Retain\", \"Replace\"",
                  "resources.transformations[2].input: Required value",
                  "resources.transformations[2].extra: unknown field \"resources.transformations[2].extra\"",
                  ": YAML syntax error: end of sequence flow not found",
                  "fairSharing.preemptionStrategies: Required value: must be specified",
                  "fairSharin: unknown field \"fairSharin\"",
                  "queueVisibility: unknown field \"queueVisibility\"",  // v1beta1 only
                  "resources.quotaCheckStrategy: unknown field \"resources.quotaCheckStrategy\"",  // v1beta2 only
                  "resources.quotaCheckStrategy: Invalid value: \"IgnoreUndeclared\": excludeResourcePrefixes is not "
                  "allowed when quotaCheckStrategy is IgnoreUndeclared",
              }));
  auto has = [&](std::string_view rule, std::string_view path) {
    return std::any_of(d.diagnostics.begin(), d.diagnostics.end(),
                       [&](const Diagnostic& x) { return x.rule == rule && x.path == path; });
  };
  EXPECT_TRUE(has(kRuleConfigNotModelled, "waitForPodsReady"));
  EXPECT_TRUE(has(kRuleConfigNotModelled, "admissionFairSharing"));
  // Without the QuotaCheckStrategy gate the manager does not validate the strategy.
  const auto gate_off = decode_yaml(R"(
apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
featureGates: {QuotaCheckStrategy: false}
resources: {quotaCheckStrategy: Sometimes, excludeResourcePrefixes: [x]}
)");
  EXPECT_TRUE(gate_off.diagnostics.empty()) << gate_off.lines()[0];
  EXPECT_THAT(decode_yaml("apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n"
                          "resources: {quotaCheckStrategy: Sometimes}\n")
                  .lines(),
              ::testing::ElementsAre(::testing::HasSubstr(
                  "resources.quotaCheckStrategy: Unsupported value: \"Sometimes\": supported values: "
                  "\"IgnoreUndeclared\", \"BlockUndeclared\"")));
  EXPECT_TRUE(has(kRuleApiVersion, "apiVersion"));                      // v1alpha1
  EXPECT_TRUE(std::any_of(d.diagnostics.begin(), d.diagnostics.end(), [](const Diagnostic& x) {
    return x.path == "resources.transformations[1].outputs[example.com/credits]" && x.severity == Severity::Error;
  }));
  EXPECT_TRUE(std::any_of(d.diagnostics.begin(), d.diagnostics.end(),
                          [](const Diagnostic& x) { return x.file.find("kueue-manager-config") != std::string::npos; }));
  EXPECT_TRUE(d.set.configurations.empty());  // nothing with an error is kept

  // Two valid ones: Kueue runs with one.
  const auto two = decode_yaml(
      "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n---\n"
      "apiVersion: config.kueue.x-k8s.io/v1beta1\nkind: Configuration\n");
  ASSERT_EQ(two.diagnostics.size(), 1u);
  EXPECT_EQ(two.diagnostics[0].rule, kRuleConfigTwice);
  EXPECT_THAT(two.diagnostics[0].message, ::testing::HasSubstr("a second Kueue manager Configuration (the first is at "));
}

TEST(KueueDecode, NamespaceSelectorIsValidatedAsTheWebhookDoes) {
  const auto d = decode_yaml(R"(
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: bad}
spec:
  namespaceSelector:
    matchLabels: {"a/b/c": x, team: "-a"}
    matchExpressions:
    - {key: team, operator: Equals, values: [a]}
    - {key: team, operator: In}
    - {key: tier, operator: Exists, values: [gold]}
    - {key: "", operator: NotIn, values: ["bad value"]}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: good}
spec:
  namespaceSelector:
    matchLabels: {kubernetes.io/metadata.name: team-a}
    matchExpressions:
    - {key: example.com/tier, operator: NotIn, values: [bronze, ""]}
    - {key: team, operator: DoesNotExist}
)");
  const std::string name_part = "must " + kLabelKeyRule;
  std::vector<std::string> messages;
  for (const auto& diag : d.diagnostics) messages.push_back(diag.path + ": " + diag.message);
  EXPECT_THAT(messages,
              ::testing::UnorderedElementsAre(
                  "spec.namespaceSelector.matchLabels: Invalid value: \"a/b/c\": a valid label key " + name_part +
                      " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                  "spec.namespaceSelector.matchLabels: Invalid value: \"-a\": " + kLabelValueRule,
                  "spec.namespaceSelector.matchExpressions[0].operator: Invalid value: \"Equals\": not a valid selector "
                  "operator",
                  "spec.namespaceSelector.matchExpressions[1].values: Required value: must be specified when `operator` "
                  "is 'In' or 'NotIn'",
                  "spec.namespaceSelector.matchExpressions[2].values: Forbidden: may not be specified when `operator` "
                  "is 'Exists' or 'DoesNotExist'",
                  "spec.namespaceSelector.matchExpressions[3].key: Invalid value: \"\": name part must be non-empty",
                  // IsLabelKey also fails the empty name part on its pattern.
                  "spec.namespaceSelector.matchExpressions[3].key: Invalid value: \"\": name part " + name_part,
                  "spec.namespaceSelector.matchExpressions[3].values[0]: Invalid value: \"bad value\": " + kLabelValueRule));
  ASSERT_EQ(d.set.cluster_queues.size(), 1u);  // the invalid one is refused
  const auto& sel = d.set.cluster_queues[0].namespace_selector;
  ASSERT_TRUE(sel.has_value());
  EXPECT_TRUE(sel->matches({{"kubernetes.io/metadata.name", "team-a"}}));
  EXPECT_TRUE(sel->matches({{"kubernetes.io/metadata.name", "team-a"}, {"example.com/tier", "gold"}}));
  EXPECT_FALSE(sel->matches({{"kubernetes.io/metadata.name", "team-a"}, {"example.com/tier", "bronze"}}));
  EXPECT_FALSE(sel->matches({{"kubernetes.io/metadata.name", "team-a"}, {"example.com/tier", ""}}));
  EXPECT_FALSE(sel->matches({{"kubernetes.io/metadata.name", "team-a"}, {"team", "a"}}));
  EXPECT_FALSE(sel->matches({{"kubernetes.io/metadata.name", "team-b"}}));
  EXPECT_TRUE(LabelSelector{}.matches({}));  // {}: every namespace
}

TEST(KueueDecode, NamesDefinedTwiceAndCohortCycles) {
  const auto d = decode_yaml(R"(
apiVersion: kueue.x-k8s.io/v1beta2
kind: Cohort
metadata: {name: a}
spec: {parentName: b}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Cohort
metadata: {name: b}
spec: {parentName: c}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Cohort
metadata: {name: c}
spec: {parentName: a}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Cohort
metadata: {name: d}
spec: {parentName: a}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: q, namespace: x}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: q, namespace: y}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: q, namespace: x}
)");
  EXPECT_THAT(d.lines(),
              ElementsAre("in.yaml:30:1: error: LocalQueue/x/q: metadata.name: localqueues.kueue.x-k8s.io \"q\" already "
                          "exists (first defined at in.yaml:22) [kueue.already-exists]",
                          "in.yaml:5:20: warning: Cohort/a: spec.parentName: cohort cycle a -> b -> c -> a: Kueue's "
                          "scheduler leaves out every Cohort that leads into the cycle and every ClusterQueue under one "
                          "(their Workloads wait: \"ClusterQueue <name> is inactive\"); the rest is scheduled "
                          "[kueue.cohort-cycle]"));
}

}  // namespace
}  // namespace gpubank::kueue
