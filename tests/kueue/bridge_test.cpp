#include "kueue/bridge.hpp"

#include <limits>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kueue/amounts.hpp"
#include "support/kueue_fixture.hpp"

namespace gpubank::kueue {
namespace {

using testing::decode_yaml;

constexpr std::string_view kQueues = R"(
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: default, creationTimestamp: "2026-11-30T07:00:00Z"}
spec:
  nodeLabels: {pool: a}
  nodeTaints: [{key: gpu, value: "yes", effect: NoExecute}]
  tolerations: [{key: spot, operator: Exists}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: cq}
spec:
  namespaceSelector: {}
  cohortName: all
  fairSharing: {weight: 250m}
  resourceGroups:
  - coveredResources: [cpu, memory]
    flavors:
    - name: default
      resources:
      - {name: cpu, nominalQuota: 1500m, borrowingLimit: 1E, lendingLimit: 1}
      - {name: memory, nominalQuota: 1Gi}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: broken}
spec:
  namespaceSelector: {}
  stopPolicy: Hold
  resourceGroups:
  - coveredResources: [cpu]
    flavors: [{name: missing-a, resources: [{name: cpu, nominalQuota: 1}]}, {name: default, resources: [{name: cpu, nominalQuota: 1}]}, {name: missing-b, resources: [{name: cpu, nominalQuota: 1}]}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Cohort
metadata: {name: all}
spec:
  parentName: top
  resourceGroups:
  - coveredResources: [cpu]
    flavors: [{name: missing-a, resources: [{name: cpu, nominalQuota: 2}]}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: lq, namespace: ns}
spec: {clusterQueue: cq}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: to-broken, namespace: ns}
spec: {clusterQueue: broken}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: held, namespace: ns}
spec: {clusterQueue: cq, stopPolicy: Hold}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: nowhere, namespace: ns}
spec: {clusterQueue: gone}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: WorkloadPriorityClass
metadata: {name: high}
value: 1000
)";

std::string workload(const std::string& name, const std::string& extra_spec, const std::string& rest = {}) {
  return "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: Workload\nmetadata: {name: " + name +
         ", namespace: ns}\nspec:\n  podSets: [{count: 2, template: {spec: {containers: [{name: c, resources: "
         "{requests: {cpu: 500m}}}]}}}]\n" +
         extra_spec + rest;
}

TEST(KueueBridge, PriorityAsKueueResolvesIt) {
  const auto d = decode_yaml(std::string(kQueues) +
                             workload("by-ref", "  priority: 1\n  priorityClassRef: {group: kueue.x-k8s.io, kind: "
                                                "WorkloadPriorityClass, name: high}\n") +
                             workload("by-label", "  priority: 2\n") +
                             workload("by-spec", "  priority: 3\n") + workload("by-default", "") +
                             workload("pod-class", "  priority: 4\n  priorityClassRef: {group: scheduling.k8s.io, "
                                                   "kind: PriorityClass, name: high}\n") +
                             workload("missing", "  priority: 5\n  priorityClassRef: {group: kueue.x-k8s.io, kind: "
                                                 "WorkloadPriorityClass, name: nope}\n") +
                             workload("missing-label", ""));
  ASSERT_TRUE(d.diagnostics.empty()) << d.lines()[0];
  std::vector<Workload> wls = d.set.workloads;
  wls[1].metadata.labels["kueue.x-k8s.io/priority-class"] = "high";  // not read by the scheduler
  wls[4].metadata.labels["kueue.x-k8s.io/priority-class"] = "high";  // ignored: a Pod PriorityClass is referenced
  wls[6].metadata.labels["kueue.x-k8s.io/priority-class"] = "nope";
  std::vector<std::pair<std::int32_t, std::string>> got;
  for (const auto& wl : wls) {
    const auto p = resolve_priority(wl, d.set);
    got.emplace_back(p.value, p.source);
  }
  EXPECT_THAT(got, ::testing::ElementsAre(std::pair{1000, std::string("WorkloadPriorityClass high")},
                                          std::pair{2, std::string("spec.priority")},
                                          std::pair{3, std::string("spec.priority")},
                                          std::pair{0, std::string("default")},
                                          std::pair{4, std::string("spec.priority")},
                                          std::pair{5, std::string("spec.priority")},
                                          std::pair{0, std::string("default")}));
  const auto missing = resolve_priority(wls[5], d.set);
  ASSERT_TRUE(missing.warning.has_value());
  EXPECT_EQ(missing.warning->to_string(),
            "in.yaml:" + std::to_string(wls[5].source.pos.line) +
                ":1: warning: Workload/ns/missing: spec.priorityClassRef.name: WorkloadPriorityClass \"nope\" not "
                "found; the priority is spec.priority (5) [kueue.priority-class-not-found]");
  EXPECT_EQ(resolve_priority(wls[6], d.set).warning->path, "metadata.labels[kueue.x-k8s.io/priority-class]");
  // The label is the job integrations' input, not the scheduler's: a Workload applied with
  // it alone keeps spec.priority, and is told what the label would have given.
  const auto by_label = resolve_priority(wls[1], d.set);
  ASSERT_TRUE(by_label.warning.has_value());
  EXPECT_EQ(by_label.warning->rule, "kueue.priority-label-not-read");
  EXPECT_THAT(by_label.warning->message,
              ::testing::HasSubstr("the priority is spec.priority (2), not WorkloadPriorityClass high's 1000"));
  EXPECT_THAT(resolve_priority(wls[6], d.set).warning->message,
              ::testing::HasSubstr("the priority is the default (0); WorkloadPriorityClass \"nope\" is not among"));
}

TEST(KueueBridge, TimelineStartsAtTheEarliestCreation) {
  const auto d = decode_yaml(std::string(kQueues) + workload("w", "", "  queueName: lq\n"));
  const Timeline t = make_timeline(d.set);
  EXPECT_EQ(format_rfc3339(t.start), "2026-11-30T07:00:00Z");
  EXPECT_EQ(t.to_virtual(*parse_rfc3339("2026-11-30T07:00:01.5Z")), 1500);
  EXPECT_EQ(t.format(1999), "2026-11-30T07:00:01Z");  // metav1.Time prints whole seconds
  EXPECT_EQ(format_rfc3339(make_timeline(ObjectSet{}).start), "1970-01-01T00:00:00Z");
}

TEST(KueueBridge, TimelineHoldsTheWholeTimestampRangeEitherSideOfItsStart) {
  // Found by kueue_admit_fuzzer: a condition's lastTransitionTime in 1726 against a creation in
  // 2026 overflowed int64 nanoseconds when subtracted.
  const Timeline late{*parse_rfc3339("2262-04-11T00:00:00Z")};
  const Timestamp earliest = *parse_rfc3339("1677-09-21T00:12:44Z");
  EXPECT_EQ(late.to_virtual(earliest), -18'446'658'436'000);
  EXPECT_EQ(format_rfc3339(late.to_time(late.to_virtual(earliest))), "1677-09-21T00:12:44Z");
  const Timeline now{*parse_rfc3339("2026-03-02T08:20:00Z")};
  EXPECT_EQ(now.to_virtual(*parse_rfc3339("1726-01-01T00:00:00.0005Z")), -9'472'321'200'000);  // rounded down
  EXPECT_EQ(now.to_virtual(*parse_rfc3339("2026-03-02T08:19:59.9995Z")), -1);
  EXPECT_EQ(now.format(now.to_virtual(*parse_rfc3339("1726-01-01T00:00:00Z"))), "1726-01-01T00:00:00Z");
  // Virtual times past what a Timestamp holds print as its last instant instead of wrapping.
  EXPECT_EQ(late.to_time(std::numeric_limits<twin::VirtualTime>::max()), Timestamp::max());
  EXPECT_EQ(now.to_time(std::numeric_limits<twin::VirtualTime>::min()), Timestamp::min());
}

TEST(KueueBridge, CoreInputs) {
  const auto d = decode_yaml(kQueues);
  ASSERT_TRUE(d.diagnostics.empty()) << d.lines()[0];
  const CoreInputs in = core_inputs(d.set);
  ASSERT_EQ(in.flavors.size(), 3u);
  EXPECT_EQ(in.flavors[0].name, "default");
  EXPECT_EQ(in.flavors[0].node_labels.at("pool"), "a");
  EXPECT_EQ(in.flavors[0].node_taints[0].effect, twin::TaintEffect::NoExecute);
  EXPECT_EQ(in.flavors[0].tolerations[0].op, twin::TolerationOperator::Exists);
  EXPECT_FALSE(in.flavors[0].tolerations[0].effect.has_value());
  EXPECT_EQ(in.flavors[1].name, "missing-a");  // placeholders, in order of first mention
  EXPECT_EQ(in.flavors[2].name, "missing-b");
  ASSERT_EQ(in.queues.size(), 2u);
  const twin::ClusterQueueSpec& cq = in.queues[0];
  EXPECT_EQ(cq.cohort, "all");
  EXPECT_TRUE(cq.active);
  EXPECT_DOUBLE_EQ(cq.fair_weight, 0.25);
  const auto& cpu = cq.resource_groups[0].flavors[0].resources[0];
  EXPECT_EQ(cpu.nominal, 1500);
  EXPECT_EQ(cpu.borrowing_limit, kUnlimited);
  EXPECT_EQ(cpu.lending_limit, 1000);
  EXPECT_EQ(cq.resource_groups[0].flavors[0].resources[1].nominal, 1073741824);
  EXPECT_FALSE(in.queues[1].active);
  ASSERT_EQ(in.cohorts.size(), 1u);
  EXPECT_EQ(in.cohorts[0].parent, "top");
  EXPECT_EQ(in.cohorts[0].resource_groups[0].flavors[0].resources[0].nominal, 2000);

  const QueueActivity broken = queue_activity(d.set.cluster_queues[1], d.set);
  EXPECT_FALSE(broken.active);
  EXPECT_EQ(broken.reason, "Stopped");
  EXPECT_EQ(broken.message,
            "Can't admit new workloads: is stopped, references missing ResourceFlavor(s): missing-a,missing-b.");
  EXPECT_EQ(queue_activity(d.set.cluster_queues[0], d.set).message, "Can admit new workloads");
}

TEST(KueueBridge, MissingAndInactiveAdmissionChecksStopTheQueue) {
  // clusterqueue.go inactiveReason: the reasons in order, each message's names sorted.
  const auto d = decode_yaml(R"(
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: default}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: AdmissionCheck
metadata: {name: ready}
spec: {controllerName: example.com/check}
status: {conditions: [{type: Active, status: "True", reason: Active, message: ok, lastTransitionTime: "2026-11-30T08:00:00Z"}]}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: AdmissionCheck
metadata: {name: idle}
spec: {controllerName: example.com/check}
status: {conditions: [{type: Active, status: "False", reason: Inactive, message: no controller, lastTransitionTime: "2026-11-30T08:00:00Z"}]}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: blocked}
spec:
  admissionChecksStrategy:
    admissionChecks: [{name: zeta}, {name: idle}, {name: ready}, {name: alpha}]
  resourceGroups: [{coveredResources: [cpu], flavors: [{name: default, resources: [{name: cpu, nominalQuota: 1}]}]}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: checked}
spec:
  admissionChecksStrategy:
    admissionChecks: [{name: ready, onFlavors: [default]}]
  resourceGroups: [{coveredResources: [cpu], flavors: [{name: default, resources: [{name: cpu, nominalQuota: 1}]}]}]
)");
  ASSERT_TRUE(d.diagnostics.empty()) << d.lines()[0];
  const QueueActivity blocked = queue_activity(d.set.cluster_queues[0], d.set);
  EXPECT_FALSE(blocked.active);
  EXPECT_EQ(blocked.reason, "AdmissionCheckNotFound");
  EXPECT_EQ(blocked.message,
            "Can't admit new workloads: references missing AdmissionCheck(s): alpha,zeta, references inactive "
            "AdmissionCheck(s): idle.");
  EXPECT_TRUE(queue_activity(d.set.cluster_queues[1], d.set).active);
}

TEST(KueueBridge, HowEachWorkloadEntersTheCore) {
  const std::string over_limit =
      "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: Workload\nmetadata: {name: %s, namespace: ns}\nspec:\n"
      "  queueName: %q\n  podSets: [{template: {spec: {containers: [{name: c, resources: {requests: {cpu: 2}, "
      "limits: {cpu: 1}}}]}}}]\n";
  const auto over = [&](const std::string& name, const std::string& queue) {
    std::string s = over_limit;
    s.replace(s.find("%s"), 2, name);
    s.replace(s.find("%q"), 2, queue);
    return s;
  };
  const std::string reserved_status =
      "status:\n  admission: {clusterQueue: %c, podSetAssignments: [{name: main, count: 2, flavors: {cpu: default}, "
      "resourceUsage: {cpu: \"1\"}}]}\n  conditions:\n  - {type: QuotaReserved, status: \"True\", reason: "
      "QuotaReserved, message: m, lastTransitionTime: \"2026-11-30T08:00:00Z\"}\n";
  const auto reserved = [&](const std::string& cq, const std::string& more = {}) {
    std::string s = reserved_status;
    s.replace(s.find("%c"), 2, cq);
    return s + more;
  };
  const auto d = decode_yaml(
      std::string(kQueues) + workload("submit", "  queueName: lq\n") +
      workload("no-lq", "  queueName: absent\n") + workload("held", "  queueName: held\n") +
      workload("no-cq", "  queueName: nowhere\n") + over("over-limit", "lq") + over("over-limit-inactive", "to-broken") +
      workload("finished", "  queueName: lq\n",
               "status:\n  conditions:\n  - {type: Finished, status: \"True\", reason: Succeeded, message: done, "
               "lastTransitionTime: \"2026-11-30T08:00:00Z\"}\n") +
      workload("inactive", "  queueName: lq\n  active: false\n") + workload("restore", "  queueName: lq\n", reserved("cq")) +
      workload("reserved-gone", "  queueName: lq\n", reserved("gone")) +
      workload("admitted-gone", "  queueName: lq\n",
               reserved("gone", "  - {type: Admitted, status: \"True\", reason: Admitted, message: m, "
                                "lastTransitionTime: \"2026-11-30T08:00:00Z\"}\n")));
  ASSERT_TRUE(d.diagnostics.empty()) << d.lines()[0];
  Diagnostics warnings;
  const Timeline timeline = make_timeline(d.set);
  const auto entries = plan_workloads(d.set, timeline, warnings);
  EXPECT_TRUE(warnings.empty());
  ASSERT_EQ(entries.size(), 11u);
  const auto blocked = [&](std::size_t i) { return entries[i].reason + ": " + entries[i].message; };
  EXPECT_EQ(entries[0].route, Route::Submit);
  EXPECT_EQ(entries[0].spec.cluster_queue, "cq");
  EXPECT_EQ(entries[0].spec.pod_sets[0].count, 2);
  EXPECT_EQ(entries[0].spec.pod_sets[0].requests, (std::vector<std::pair<std::string, twin::Amount>>{{"cpu", 500}}));
  EXPECT_EQ(blocked(1), "Misconfigured: LocalQueue absent doesn't exist");
  EXPECT_EQ(blocked(2), "Suspended: LocalQueue held is inactive");
  EXPECT_EQ(blocked(3), "Misconfigured: ClusterQueue gone doesn't exist");
  // The scheduler's own refusal (ValidateAdmissibility): queued, refused at each turn.
  EXPECT_EQ(entries[4].route, Route::Submit);
  EXPECT_EQ(entries[4].spec.cluster_queue, "cq");
  EXPECT_EQ(entries[4].spec.refusal_reason + ": " + entries[4].spec.refusal_message,
            "Misconfigured: resources validation failed: spec.podSets[0].template.spec.containers[0]: Invalid value: "
            "[]v1.ResourceName{\"cpu\"}: requests must not exceed its limits");
  EXPECT_EQ(entries[5].route, Route::Submit);  // an inactive ClusterQueue says so first
  EXPECT_EQ(entries[5].spec.cluster_queue, "broken");
  EXPECT_TRUE(entries[5].spec.refusal_message.empty());
  EXPECT_EQ(entries[6].route, Route::Untouched);
  EXPECT_EQ(blocked(7), "Deactivated: The workload is deactivated");
  EXPECT_EQ(entries[8].route, Route::Restore);
  EXPECT_EQ(entries[8].admission.cluster_queue, "cq");
  EXPECT_EQ(entries[8].admitted_at, 3600000);
  EXPECT_EQ(blocked(9), "Misconfigured: ClusterQueue gone is terminating or missing");
  EXPECT_TRUE(entries[9].drop_admission);
  EXPECT_EQ(entries[10].route, Route::Untouched);
  // Without creationTimestamps, Workloads come after the latest one, 1 ms apart in input order.
  EXPECT_EQ(entries[0].spec.creation, 1);
  EXPECT_EQ(entries[5].spec.creation, 6);
}

TEST(KueueBridge, AdmissionScaledToReclaimablePods) {
  const auto d = decode_yaml(std::string(kQueues) + workload("w", "  queueName: lq\n",
                                                             "status:\n  reclaimablePods: [{name: main, count: 1}]\n"
                                                             "  admission: {clusterQueue: cq, podSetAssignments: [{name: "
                                                             "main, count: 2, flavors: {cpu: default, memory: default}, "
                                                             "resourceUsage: {cpu: \"1\", memory: 2Gi}}]}\n"));
  ASSERT_TRUE(d.diagnostics.empty()) << d.lines()[0];
  const twin::Admission a = admission_of(d.set.workloads[0]);
  ASSERT_EQ(a.pod_sets.size(), 1u);
  EXPECT_EQ(a.pod_sets[0].count, 1);
  EXPECT_EQ(a.pod_sets[0].flavors, (std::vector<std::pair<std::string, std::string>>{{"cpu", "default"}, {"memory", "default"}}));
  EXPECT_EQ(a.pod_sets[0].resource_usage,
            (std::vector<std::pair<std::string, twin::Amount>>{{"cpu", 500}, {"memory", 1073741824}}));
}

// ClusterQueue.spec.namespaceSelector through the scheduler's ValidateAdmissibility.
std::string selector_cluster(const std::string& namespaces) {
  std::string out = namespaces + "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: {name: default}\n";
  const auto cq = [&](const std::string& name, const std::string& selector) {
    out += "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: " + name + "}\nspec:\n" +
           selector + "  resourceGroups: [{coveredResources: [cpu], flavors: [{name: default, resources: [{name: cpu, "
           "nominalQuota: 8}]}]}]\n";
  };
  cq("unset", "");
  cq("all", "  namespaceSelector: {}\n");
  cq("by-name", "  namespaceSelector: {matchExpressions: [{key: kubernetes.io/metadata.name, operator: In, values: [team-a]}]}\n");
  cq("by-team", "  namespaceSelector: {matchLabels: {team: a}}\n");
  for (const std::string q : {"unset", "all", "by-name", "by-team"}) {
    for (const std::string ns : {"team-a", "team-b"}) {
      out += "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata: {name: " + q + ", namespace: " + ns +
             "}\nspec: {clusterQueue: " + q + "}\n";
      out += "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: Workload\nmetadata: {name: " + q + ", namespace: " + ns +
             "}\nspec:\n  queueName: " + q +
             "\n  podSets: [{count: 1, template: {spec: {containers: [{name: c, resources: {requests: {cpu: 1}}}]}}}]\n";
    }
  }
  return out;
}

std::vector<std::string> selector_outcomes(const ObjectSet& set, Diagnostics& warnings) {
  const auto entries = plan_workloads(set, make_timeline(set), warnings);
  std::vector<std::string> out;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const auto& m = set.workloads[i].metadata;
    const auto& e = entries[i];
    out.push_back(m.ns + "/" + m.name + ": " +
                  (e.route != Route::Submit ? "blocked " + e.message
                                            : e.spec.refusal_message.empty() ? std::string("submit")
                                                                             : "refused " + e.spec.refusal_message));
  }
  return out;
}

TEST(KueueBridge, NamespaceSelectorWithoutNamespaceObjects) {
  // Namespaces are taken to exist with their kubernetes.io/metadata.name label only: an
  // unset selector matches nothing, {} everything, a selector on the name label is
  // evaluated, one on other labels is not (a warning says so) and lets everything in.
  const auto d = decode_yaml(selector_cluster(""));
  ASSERT_TRUE(d.diagnostics.empty()) << d.lines()[0];
  Diagnostics warnings;
  const std::string mismatch = "refused workload namespace doesn't match ClusterQueue selector";
  EXPECT_THAT(selector_outcomes(d.set, warnings),
              ::testing::ElementsAre("team-a/unset: " + mismatch, "team-b/unset: " + mismatch, "team-a/all: submit",
                          "team-b/all: submit", "team-a/by-name: submit", "team-b/by-name: " + mismatch,
                          "team-a/by-team: submit", "team-b/by-team: submit"));
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0].rule, kRuleSelectorNotEvaluated);
  EXPECT_EQ(warnings[0].name, "by-team");
  EXPECT_EQ(warnings[0].severity, Severity::Warning);
}

TEST(KueueBridge, NamespaceSelectorWithNamespaceObjects) {
  // With Namespaces in the input, their labels decide, the API server's name label
  // included, and a namespace that is not there does not exist.
  const auto d = decode_yaml(selector_cluster("---\napiVersion: v1\nkind: Namespace\nmetadata: {name: team-a, labels: {team: a}}\n"));
  ASSERT_TRUE(d.diagnostics.empty()) << d.lines()[0];
  Diagnostics warnings;
  const std::string mismatch = "refused workload namespace doesn't match ClusterQueue selector";
  const std::string missing = "refused workload namespace \"team-b\" does not exist: namespaces \"team-b\" not found";
  EXPECT_THAT(selector_outcomes(d.set, warnings),
              ::testing::ElementsAre("team-a/unset: " + mismatch, "team-b/unset: " + missing, "team-a/all: submit",
                          "team-b/all: " + missing, "team-a/by-name: submit", "team-b/by-name: " + missing,
                          "team-a/by-team: submit", "team-b/by-team: " + missing));
  EXPECT_TRUE(warnings.empty());
}

TEST(KueueBridge, MinCountAndTheSpecCountReachTheCore) {
  // The pods to admit are the spec's less the reclaimable ones; partial admission's reducer
  // starts from the spec's count (PodSetReducer reads spec.podSets[].count).
  const std::string spec =
      "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: Workload\nmetadata: {name: w, namespace: ns}\nspec:\n"
      "  queueName: lq\n  podSets: [{count: 4, minCount: 2, template: {spec: {containers: [{name: c, resources: "
      "{requests: {cpu: 500m}}}]}}}]\nstatus:\n  reclaimablePods: [{name: main, count: 1}]\n";
  const auto d = decode_yaml(std::string(kQueues) + spec);
  ASSERT_TRUE(d.diagnostics.empty()) << d.lines()[0];
  Diagnostics diagnostics;
  const twin::WorkloadSpec w = workload_spec(d.set.workloads[0], d.set, 0, diagnostics);
  EXPECT_TRUE(diagnostics.empty());
  ASSERT_EQ(w.pod_sets.size(), 1u);
  EXPECT_EQ(w.pod_sets[0].count, 3);
  EXPECT_EQ(w.pod_sets[0].spec_count, 4);
  EXPECT_EQ(w.pod_sets[0].min_count, 2);
}

TEST(KueueBridge, NodeSelectorRequirementsParsedAsKueueParsesThem) {
  using Op = twin::NodeSelectorOperator;
  const auto parsed = [](std::string key, std::string op, std::vector<std::string> values) {
    return to_core(NodeSelectorRequirement{std::move(key), std::move(op), std::move(values)});
  };
  const auto gt = parsed("memory-gb", "Gt", {"45"});
  EXPECT_EQ(gt.op, Op::Gt);
  EXPECT_EQ(gt.bound, 45);
  EXPECT_TRUE(gt.errors.empty());
  // strconv.ParseInt takes "+45", but the value is also held to the label value syntax.
  const auto signed_bound = parsed("memory-gb", "Gt", {"+45"});
  EXPECT_EQ(signed_bound.bound, 45);
  ASSERT_EQ(signed_bound.errors.size(), 1u);
  EXPECT_TRUE(signed_bound.errors[0].starts_with(".values[0][memory-gb]: Invalid value: \"+45\": a valid label"));
  EXPECT_TRUE(parsed("product", "NotIn", {"A100", "L4"}).errors.empty());
  EXPECT_TRUE(parsed("product", "DoesNotExist", {}).errors.empty());

  EXPECT_THAT(parsed("product", "in", {"H100"}).errors,
              ::testing::ElementsAre(".operator: Unsupported value: \"in\": supported values: \"In\", \"NotIn\", \"Exists\", "
                          "\"DoesNotExist\", \"Gt\", \"Lt\""));
  EXPECT_THAT(parsed("product", "Equals<&>", {}).errors,
              ::testing::ElementsAre(".operator: Unsupported value: \"Equals\\u003c\\u0026\\u003e\": supported values: \"In\", "
                          "\"NotIn\", \"Exists\", \"DoesNotExist\", \"Gt\", \"Lt\""));
  EXPECT_THAT(parsed("product", "In", {}).errors,
              ::testing::ElementsAre(".values: Invalid value: null: for 'in', 'notin' operators, values set can't be empty"));
  EXPECT_THAT(parsed("product", "Exists", {"H100", "a\"b"}).errors,
              ::testing::ElementsAre(".values: Invalid value: [\"H100\",\"a\\\"b\"]: values set must be empty for exists and does "
                          "not exist",
                          ".values[1][product]: Invalid value: \"a\\\"b\": a valid label must be an empty string or "
                          "consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
                          "alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for "
                          "validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"));
  EXPECT_THAT(parsed("memory-gb", "Lt", {"1", "x"}).errors,
              ::testing::ElementsAre(".values: Invalid value: [\"1\",\"x\"]: for 'Gt', 'Lt' operators, exactly one value is required",
                          ".values[1]: Invalid value: \"x\": for 'Gt', 'Lt' operators, the value must be an integer"));
  EXPECT_THAT(parsed("a/b/c", "Exists", {}).errors,
              ::testing::ElementsAre(".key: Invalid value: \"a/b/c\": a valid label key must consist of alphanumeric characters, "
                          "'-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or "
                          "'my.name',  or '123-abc', regex used for validation is "
                          "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' "
                          "(e.g. 'example.com/MyName')"));
}

TEST(KueueBridge, TolerationOperators) {
  const auto op = [](std::string text) { return to_core(Toleration{"k", std::move(text), "1", "", {}}).op; };
  EXPECT_EQ(op(""), twin::TolerationOperator::Equal);
  EXPECT_EQ(op("Equal"), twin::TolerationOperator::Equal);
  EXPECT_EQ(op("Exists"), twin::TolerationOperator::Exists);
  EXPECT_EQ(op("Lt"), twin::TolerationOperator::Lt);
  EXPECT_EQ(op("Gt"), twin::TolerationOperator::Gt);
  // Was read as Equal before, which tolerated a taint k=1.
  EXPECT_EQ(op("equal"), twin::TolerationOperator::Unsupported);
}

}  // namespace
}  // namespace gpubank::kueue
