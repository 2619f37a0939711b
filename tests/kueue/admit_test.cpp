// The admission run against a scripted core (support/fake_admission_core.hpp): what is
// loaded into the core, how cycles are driven, which events come out, and how results
// are written back into the objects. Kueue's decisions themselves are the core's tests.
#include "kueue/admit.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>

#include "document/yaml_writer.hpp"
#include "support/fake_admission_core.hpp"
#include "support/kueue_fixture.hpp"

namespace gpubank::kueue {
namespace {

using gpubank::testing::FakeAdmissionCore;
using testing::decode_yaml;
using ::testing::ElementsAre;

constexpr std::string_view kObjects = R"(
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: default}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: cq, generation: 3}
spec:
  namespaceSelector: {}
  cohortName: all
  resourceGroups:
  - coveredResources: [memory, cpu]
    flavors: [{name: default, resources: [{name: memory, nominalQuota: 8Gi}, {name: cpu, nominalQuota: 4}]}]
status:
  pendingWorkloads: 7
  custom: kept
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: solo}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu]
    flavors: [{name: default, resources: [{name: cpu, nominalQuota: 1}]}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: lq, namespace: ns}
spec: {clusterQueue: cq}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: solo, namespace: ns}
spec: {clusterQueue: solo}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata:
  name: running
  namespace: ns
  uid: u-running
  generation: 2
  creationTimestamp: "2026-11-30T08:00:00Z"
  managedFields: [{manager: kueue, operation: Apply}]
spec:
  queueName: lq
  podSets: [{count: 1, template: {spec: {containers: [{name: c, resources: {requests: {cpu: "1"}}}]}}}]
status:
  admission:
    clusterQueue: cq
    podSetAssignments: [{name: main, count: 1, flavors: {cpu: default}, resourceUsage: {cpu: "1"}}]
  conditions:
  - {type: QuotaReserved, status: "True", reason: QuotaReserved, message: old, observedGeneration: 2, lastTransitionTime: "2026-11-30T08:00:01Z"}
  requeueState: {count: 1}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {name: a, namespace: ns, uid: u-a, creationTimestamp: "2026-11-30T08:00:02Z"}
spec:
  queueName: lq
  podSets: [{count: 2, template: {spec: {containers: [{name: c, resources: {requests: {cpu: 500m, memory: 1536Mi}}}]}}}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {name: b, namespace: ns, uid: u-b, creationTimestamp: "2026-11-30T08:00:03Z"}
spec:
  queueName: lq
  podSets: [{template: {spec: {containers: [{name: c, resources: {requests: {cpu: "1"}}}]}}}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {name: lost, namespace: ns, creationTimestamp: "2026-11-30T08:00:01Z"}
spec:
  queueName: absent
  podSets: [{template: {spec: {containers: [{name: c}]}}}]
)";

// Cycle 0 admits a and leaves b pending; cycle 1 changes nothing; cycle 2 admits b.
twin::CycleResult script(FakeAdmissionCore& core, twin::VirtualTime now) {
  twin::CycleResult r;
  const twin::WorkloadId a = 1, b = 2;  // ids in load order: running (restored), a, b
  if (core.cycles_run == 1) core.admit(a, now, "default", r);
  if (core.cycles_run <= 2) {
    r.decisions.push_back({twin::Decision::Kind::Pending, b, "cq", "Pending",
                           "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor "
                           "default, 1 more needed",
                           {}});
  }
  if (core.cycles_run == 3) core.admit(b, now, "default", r);
  return r;
}

// `yaml` decoded and run for `cycles` cycles on the real admission core (Kueue's default
// options), as `twin admit` runs it. Check ok() with ASSERT_TRUE before reading the rest.
struct CoreRun {
  testing::Decoded decoded;
  Diagnostics diagnostics;
  std::unique_ptr<AdmissionRun> run;
  std::unique_ptr<twin::AdmissionCore> core;
  std::string error;

  CoreRun(std::string_view yaml, std::uint64_t cycles) : decoded(decode_yaml(yaml)) {
    if (!decoded.diagnostics.empty()) {
      error = decoded.lines()[0];
      return;
    }
    run = std::make_unique<AdmissionRun>(decoded.set, diagnostics);
    CoreInputs in = run->inputs();
    auto created = twin::AdmissionCore::create(AdmissionRun::core_options(false), std::move(in.flavors),
                                               std::move(in.cohorts), std::move(in.queues));
    if (!created) {
      error = created.error();
      return;
    }
    core = std::move(*created);
    run->load(*core, diagnostics);
    if (auto ran = run->run(*core, {.cycles = cycles}); !ran) error = ran.error();
  }
  [[nodiscard]] bool ok() const { return error.empty(); }
};

struct Fixture {
  testing::Decoded decoded;
  Diagnostics diagnostics;
  FakeAdmissionCore core;
  std::unique_ptr<AdmissionRun> run;

  explicit Fixture(std::string_view yaml) : decoded(decode_yaml(yaml)) {
    run = std::make_unique<AdmissionRun>(decoded.set, diagnostics);
    core.queues = {"cq", "solo"};
  }
};

TEST(KueueAdmit, FeatureGatesSetTheCoreOptionsTheyName) {
  const auto defaults = AdmissionRun::core_options(true, "");
  ASSERT_TRUE(defaults.ok()) << defaults.error();
  EXPECT_TRUE(defaults->fair_sharing);
  EXPECT_TRUE(defaults->partial_admission);
  EXPECT_TRUE(defaults->scheduling_equivalence_hashing);
  EXPECT_TRUE(defaults->unadmitted_workloads_observability);

  const auto set = AdmissionRun::core_options(false, " PartialAdmission=false,SchedulingEquivalenceHashing=0, ,"
                                                     "UnadmittedWorkloadsObservability=False,PartialAdmission=true");
  ASSERT_TRUE(set.ok()) << set.error();
  EXPECT_FALSE(set->fair_sharing);
  EXPECT_TRUE(set->partial_admission);  // the last one wins, as in the manager's flag
  EXPECT_FALSE(set->scheduling_equivalence_hashing);
  EXPECT_FALSE(set->unadmitted_workloads_observability);
}

TEST(KueueAdmit, FeatureGatesRejectWhatTheyDoNotModel) {
  auto error = [](std::string_view gates) {
    const auto r = AdmissionRun::core_options(false, gates);
    return r.ok() ? std::string("accepted") : r.error();
  };
  EXPECT_THAT(error("TopologyAwareScheduling=true"),
              ::testing::HasSubstr("unrecognized feature gate: TopologyAwareScheduling (the twin models "));
  EXPECT_THAT(error("PartialAdmission=yes"), ::testing::HasSubstr("invalid value of PartialAdmission=yes"));
  EXPECT_THAT(error("PartialAdmission"), ::testing::HasSubstr("missing bool value for PartialAdmission"));
  EXPECT_THAT(error(std::string(5000, 'x')), ::testing::HasSubstr("5000 bytes, at most 4096 allowed"));
}

TEST(KueueAdmit, TheInputsManagerConfigurationSetsTheOptionsBeforeTheFlags) {
  const auto d = decode_yaml(R"(
apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
fairSharing: {preemptionStrategies: [LessThanInitialShare]}
featureGates: {PartialAdmission: false, TopologyAwareScheduling: true}
)");
  ASSERT_TRUE(d.diagnostics.empty()) << d.lines()[0];
  Diagnostics diagnostics;
  const auto options = AdmissionRun::core_options(d.set, false, "", diagnostics);
  ASSERT_TRUE(options.ok()) << options.error();
  EXPECT_TRUE(options->fair_sharing);
  EXPECT_EQ(options->fair_sharing_strategies, std::vector<twin::FairSharingStrategy>{twin::FairSharingStrategy::LessThanInitialShare});
  EXPECT_FALSE(options->partial_admission);
  EXPECT_TRUE(options->scheduling_equivalence_hashing);
  ASSERT_EQ(diagnostics.size(), 1u);  // a gate Kueue knows but the twin does not model
  EXPECT_EQ(diagnostics[0].severity, Severity::Warning);
  EXPECT_EQ(diagnostics[0].path, "featureGates");
  EXPECT_THAT(diagnostics[0].message, ::testing::HasSubstr("not modelled: TopologyAwareScheduling"));
  EXPECT_EQ(diagnostics[0].pos.line, 5);

  // The manager refuses gates on its command line and in its Configuration at once.
  const auto both = AdmissionRun::core_options(d.set, false, "PartialAdmission=true", diagnostics);
  ASSERT_FALSE(both.ok());
  EXPECT_THAT(both.error(), ::testing::HasSubstr("feature gates for CLI and configuration cannot both specified"));

  // Without gates in the Configuration the flag applies; --fair-sharing alone keeps Kueue's strategies.
  const auto plain = decode_yaml("apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n");
  const auto flagged = AdmissionRun::core_options(plain.set, true, "PartialAdmission=false", diagnostics);
  ASSERT_TRUE(flagged.ok()) << flagged.error();
  EXPECT_TRUE(flagged->fair_sharing);
  EXPECT_EQ(flagged->fair_sharing_strategies, twin::CoreOptions{}.fair_sharing_strategies);
  EXPECT_FALSE(flagged->partial_admission);
  EXPECT_FALSE(flagged->ignore_undeclared_resources);

  const auto ignoring = decode_yaml(
      "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\nresources: {quotaCheckStrategy: IgnoreUndeclared}\n");
  const auto gate_off = AdmissionRun::core_options(ignoring.set, false, "QuotaCheckStrategy=false", diagnostics);
  ASSERT_TRUE(gate_off.ok()) << gate_off.error();
  EXPECT_TRUE(gate_off->ignore_undeclared_resources);
  EXPECT_FALSE(gate_off->quota_check_strategy);  // the core then checks every resource
}

TEST(KueueAdmit, APodSetThatRequestsNothingIsAdmittedWithNoFlavors) {
  // Status.IsFit: a pod set with no reasons fits, flavors or not; toAPI writes neither
  // flavors nor resourceUsage for it (both omitempty).
  const CoreRun r(R"(
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: default}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: cq}
spec:
  namespaceSelector: {}
  resourceGroups: [{coveredResources: [cpu], flavors: [{name: default, resources: [{name: cpu, nominalQuota: 1}]}]}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: lq, namespace: ns}
spec: {clusterQueue: cq}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {name: idle, namespace: ns, creationTimestamp: "2026-11-30T08:00:01Z"}
spec:
  queueName: lq
  podSets: [{count: 3, template: {spec: {containers: [{name: c}]}}}]
)",
                  2);
  ASSERT_TRUE(r.ok()) << r.error;
  const doc::Json wl = r.run->encode(*r.core).at("items").at(0);
  EXPECT_EQ(wl.at("status").at("admission").at("podSetAssignments").dump(), R"([{"name":"main","count":3}])");
}

TEST(KueueAdmit, LoadsRestoresFirstThenSubmitsInCreationOrder) {
  Fixture r(kObjects);
  ASSERT_TRUE(r.decoded.diagnostics.empty()) << r.decoded.lines()[0];
  r.run->load(r.core, r.diagnostics);
  EXPECT_TRUE(r.diagnostics.empty());
  ASSERT_EQ(r.core.specs.size(), 3u);
  EXPECT_EQ(r.core.specs[0].name, "running");
  EXPECT_EQ(r.core.statuses[0].admitted_at, 1000);
  EXPECT_EQ(r.core.specs[1].name, "a");
  EXPECT_EQ(r.core.specs[2].name, "b");
  EXPECT_EQ(r.core.submitted, (std::vector<std::pair<twin::WorkloadId, twin::VirtualTime>>{{1, 2000}, {2, 3000}}));
  EXPECT_EQ(r.run->first_cycle_time(), 3000);
  // Blocked before the scheduler: one Pending event, at the first cycle's time.
  EXPECT_THAT(r.run->events().size(), 1u);
  EXPECT_EQ(to_json_line(r.run->events()[0], r.run->timeline()),
            R"({"t":3000,"time":"2026-11-30T08:00:03Z","kind":"Pending","object":"Workload/ns/lost",)"
            R"("reason":"Misconfigured","message":"LocalQueue absent doesn't exist"})");
}

TEST(KueueAdmit, CyclesStartAfterEveryWorkloadExists) {
  std::string yaml(kObjects);
  const std::string from = "name: lost, namespace: ns, creationTimestamp: \"2026-11-30T08:00:01Z\"";
  yaml.replace(yaml.find(from), from.size(), "name: lost, namespace: ns, creationTimestamp: \"2026-11-30T08:00:05Z\"");
  Fixture r(yaml);
  ASSERT_TRUE(r.decoded.diagnostics.empty()) << r.decoded.lines()[0];
  EXPECT_EQ(r.run->first_cycle_time(), 5000);  // blocked before the scheduler, but created last
}

TEST(KueueAdmit, RunsUntilStableWithEventsOncePerPendingReason) {
  Fixture r(kObjects);
  r.run->load(r.core, r.diagnostics);
  r.core.script = script;
  const auto cycles = r.run->run(r.core, {});
  ASSERT_TRUE(cycles.ok()) << cycles.error();
  EXPECT_EQ(*cycles, 3u);
  std::vector<std::string> lines;
  for (const auto& e : r.run->events()) lines.push_back(std::to_string(e.t) + " " + e.kind + " " + e.object);
  EXPECT_THAT(lines, ElementsAre("3000 Pending Workload/ns/lost",
                                 "3000 Admitted Workload/ns/a", "3000 Pending Workload/ns/b",
                                 "3002 Admitted Workload/ns/b"));
}

TEST(KueueAdmit, AReservationThatWaitsForAdmissionChecksIsRecordedAsQuotaReservedNotAdmitted) {
  // recordWorkloadAdmissionEvents: the scheduler reports Admitted only when the reservation
  // admits, i.e. every admission check is Ready. `waits` has `gate` still Pending; `passes`
  // brings gate Ready in its input; both get quota in the same queue.
  const std::string yaml = R"(
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: default}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: AdmissionCheck
metadata: {name: gate}
spec: {controllerName: example.com/gate}
status: {conditions: [{type: Active, status: "True", reason: Active, message: ok, lastTransitionTime: "2026-11-30T08:00:00Z"}]}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: AdmissionCheck
metadata: {name: budget}
spec: {controllerName: example.com/budget}
status: {conditions: [{type: Active, status: "True", reason: Active, message: ok, lastTransitionTime: "2026-11-30T08:00:00Z"}]}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: checked}
spec:
  namespaceSelector: {}
  admissionChecksStrategy: {admissionChecks: [{name: gate}, {name: budget}]}
  resourceGroups: [{coveredResources: [cpu], flavors: [{name: default, resources: [{name: cpu, nominalQuota: 4}]}]}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: checked, namespace: ns}
spec: {clusterQueue: checked}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {name: waits, namespace: ns, creationTimestamp: "2026-11-30T08:00:01Z"}
spec:
  queueName: checked
  podSets: [{template: {spec: {containers: [{name: c, resources: {requests: {cpu: 1}}}]}}}]
status:
  admissionChecks: [{name: budget, state: Ready, message: "", lastTransitionTime: "2026-11-30T08:00:00Z"}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {name: passes, namespace: ns, creationTimestamp: "2026-11-30T08:00:02Z"}
spec:
  queueName: checked
  podSets: [{template: {spec: {containers: [{name: c, resources: {requests: {cpu: 1}}}]}}}]
status:
  admissionChecks:
  - {name: budget, state: Ready, message: "", lastTransitionTime: "2026-11-30T08:00:00Z"}
  - {name: gate, state: Ready, message: "", lastTransitionTime: "2026-11-30T08:00:00Z"}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {name: neither, namespace: ns, creationTimestamp: "2026-11-30T08:00:03Z"}
spec:
  queueName: checked
  podSets: [{template: {spec: {containers: [{name: c, resources: {requests: {cpu: 1}}}]}}}]
)";
  const CoreRun r(yaml, 5);
  ASSERT_TRUE(r.ok()) << r.error;
  std::vector<std::string> lines;
  for (const auto& e : r.run->events()) lines.push_back(e.kind + " " + e.object + ": " + e.message);
  EXPECT_THAT(lines, ElementsAre("QuotaReserved Workload/ns/waits: Quota reserved in ClusterQueue checked; not admitted "
                                 "until admission check gate is Ready",
                                 "Admitted Workload/ns/passes: Quota reserved in ClusterQueue checked",
                                 "QuotaReserved Workload/ns/neither: Quota reserved in ClusterQueue checked; not admitted "
                                 "until admission checks budget, gate are Ready"));
}

TEST(KueueAdmit, TheSchedulersRefusalQueuesAndBlocksAStrictFifoQueue) {
  // `over` fails ValidateAdmissibility (requests above limits): Kueue requeues it as a
  // head that is not admissible, with reason Misconfigured and Admitted=False (the
  // scheduler's UnsetQuotaReservationWithCondition syncs it). In a StrictFIFO queue it
  // stays at the front, so `later` waits behind it; in BestEffortFIFO `later` goes ahead.
  for (const std::string strategy : {"StrictFIFO", "BestEffortFIFO"}) {
    SCOPED_TRACE(strategy);
    const std::string yaml = R"(
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: default}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: solo}
spec:
  namespaceSelector: {}
  queueingStrategy: )" + strategy + R"(
  resourceGroups: [{coveredResources: [cpu], flavors: [{name: default, resources: [{name: cpu, nominalQuota: 4}]}]}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: solo, namespace: ns}
spec: {clusterQueue: solo}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {name: over, namespace: ns, creationTimestamp: "2026-11-30T08:00:01Z"}
spec:
  queueName: solo
  podSets: [{template: {spec: {containers: [{name: c, resources: {requests: {cpu: 2}, limits: {cpu: 1}}}]}}}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {name: later, namespace: ns, creationTimestamp: "2026-11-30T08:00:02Z"}
spec:
  queueName: solo
  podSets: [{template: {spec: {containers: [{name: c, resources: {requests: {cpu: 1}}}]}}}]
)";
    const CoreRun r(yaml, 5);
    ASSERT_TRUE(r.ok()) << r.error;
    const doc::Json list = r.run->encode(*r.core);
    auto conditions_of = [&](const std::string& name) {
      std::vector<std::string> out;
      for (const auto& item : list.at("items")) {
        if (item.at("metadata").value("name", "") != name || !item.contains("status")) continue;
        for (const auto& c : item.at("status").value("conditions", doc::Json::array())) {
          out.push_back(c.value("type", "") + "=" + c.value("status", "") + "/" + c.value("reason", ""));
        }
      }
      return out;
    };
    EXPECT_THAT(conditions_of("over"), ElementsAre("QuotaReserved=False/Misconfigured", "Admitted=False/NoReservation"));
    if (strategy == "StrictFIFO") {
      EXPECT_THAT(conditions_of("later"), ::testing::IsEmpty());  // never a head
    } else {
      EXPECT_THAT(conditions_of("later"), ElementsAre("QuotaReserved=True/QuotaReserved", "Admitted=True/Admitted"));
    }
    const doc::Json& solo = list.at("items").back();
    EXPECT_EQ(solo.at("status").value("pendingWorkloads", -1), strategy == "StrictFIFO" ? 2 : 1);
  }
}

TEST(KueueAdmit, FixedNumberOfCyclesAndTheCap) {
  Fixture r(kObjects);
  r.run->load(r.core, r.diagnostics);
  EXPECT_EQ(*r.run->run(r.core, {.cycles = 5}), 5u);
  EXPECT_EQ(r.core.cycles_run, 5u);

  Fixture forever(kObjects);
  forever.run->load(forever.core, forever.diagnostics);
  forever.core.always_active = true;
  // A core that keeps changing something every cycle (a quiet one counts as settled).
  forever.core.script = [](FakeAdmissionCore&, twin::VirtualTime now) {
    twin::CycleResult c;
    c.decisions.push_back({twin::Decision::Kind::Pending, 1, "cq", "Pending", "cycle " + std::to_string(now), {}});
    return c;
  };
  const auto result = forever.run->run(forever.core, {});
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(forever.run->max_cycles(), 1040u);  // 1000 + 10 per Workload
  EXPECT_EQ(forever.core.cycles_run, 1040u);
  EXPECT_EQ(result.error(),
            "admission did not settle within 1040 cycles (the cap is 1000 plus 10 per Workload); run a fixed number "
            "with --cycles");
}

TEST(KueueAdmit, QuietCyclesLongerThanTheQueuesEndTheRun) {
  Fixture r(kObjects);
  r.run->load(r.core, r.diagnostics);
  r.core.always_active = true;  // a StrictFIFO head that never fits stays active
  const auto result = r.run->run(r.core, {});
  ASSERT_TRUE(result.ok()) << result.error();
  EXPECT_LT(*result, 1050u);
}

TEST(KueueAdmit, VictimsAreReleasedAfterTheCycleThatEvictedThem) {
  Fixture r(kObjects);
  r.run->load(r.core, r.diagnostics);
  const twin::WorkloadId running = 0, a = 1, b = 2;
  r.core.script = [&](FakeAdmissionCore& core, twin::VirtualTime now) {
    twin::CycleResult c;
    if (core.cycles_run == 1) {
      c.decisions.push_back({twin::Decision::Kind::PreemptionIssued, a, "cq", "Pending",
                             "Pending the preemption of 1 workload(s)", {running}});
      c.decisions.push_back({twin::Decision::Kind::Preempted, running, "cq", "InClusterQueue",
                             "Preempted to accommodate a workload (UID: u-a, JobUID: UNKNOWN) due to prioritization in "
                             "the ClusterQueue",
                             {a}});
      core.statuses[running].phase = twin::WorkloadPhase::Evicted;
      c.evicted = {running};
      core.inadmissible.insert(b);
    } else if (core.cycles_run == 2) {
      core.admit(a, now, "default", c);
      core.inadmissible.insert(running);
    }
    return c;
  };
  EXPECT_EQ(*r.run->run(r.core, {}), 2u);
  EXPECT_EQ(r.core.released, (std::vector<std::pair<twin::WorkloadId, twin::VirtualTime>>{{running, 3000}}));
  const auto& events = r.run->events();
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(to_json_line(events[1], r.run->timeline()),
            R"({"t":3000,"time":"2026-11-30T08:00:03Z","kind":"Pending","object":"Workload/ns/a","queue":"cq",)"
            R"x("reason":"Pending","message":"Pending the preemption of 1 workload(s)","related":["Workload/ns/running"]})x");
  EXPECT_EQ(events[2].kind, "Preempted");
  EXPECT_EQ(events[2].object, "Workload/ns/running");
  EXPECT_EQ(events[2].related, std::vector<std::string>{"Workload/ns/a"});
  EXPECT_EQ(events[3].kind, "Admitted");
  EXPECT_EQ(events[3].t, 3001);
  (void)b;
}

TEST(KueueAdmit, EncodesStatusesAsKueueWritesThem) {
  Fixture r(kObjects);
  r.run->load(r.core, r.diagnostics);
  r.core.script = script;
  ASSERT_TRUE(r.run->run(r.core, {}).ok());
  twin::ClusterQueueStatus cq;
  cq.flavors_reservation = {{"default", "cpu", 5500, 1500}, {"default", "memory", 3221225472, 0}};
  cq.flavors_usage = {{"default", "cpu", 1000, 0}};
  cq.pending_workloads = 0;
  cq.reserving_workloads = 3;
  cq.admitted_workloads = 3;
  cq.weighted_share = 150;
  r.core.queue_status["cq"] = cq;
  twin::ClusterQueueStatus solo;
  solo.flavors_reservation = {{"default", "cpu", 500, 100}};
  r.core.queue_status["solo"] = solo;

  const doc::Json list = r.run->encode(r.core);
  EXPECT_EQ(list["apiVersion"], "v1");
  EXPECT_EQ(list["kind"], "List");
  ASSERT_EQ(list["items"].size(), 6u);  // 4 Workloads, then 2 ClusterQueues

  // Restored: other fields and key order kept; a condition whose status does not change
  // keeps its lastTransitionTime.
  const doc::Json& running = list["items"][0];
  EXPECT_EQ(running["metadata"]["managedFields"][0]["manager"], "kueue");
  EXPECT_EQ(running["status"].dump(),
            R"({"admission":{"clusterQueue":"cq","podSetAssignments":[{"name":"main","flavors":{"cpu":"default"},)"
            R"("resourceUsage":{"cpu":"1"},"count":1}]},"conditions":[{"type":"QuotaReserved","status":"True",)"
            R"("reason":"QuotaReserved","message":"restored","observedGeneration":2,"lastTransitionTime":)"
            R"("2026-11-30T08:00:01Z"},{"type":"Admitted","status":"True","observedGeneration":2,)"
            R"("lastTransitionTime":"2026-11-30T08:00:01Z","reason":"Admitted","message":"restored"}],)"
            R"("requeueState":{"count":1}})");
  // Admitted in the run.
  EXPECT_EQ(list["items"][1]["status"].dump(),
            R"({"conditions":[{"type":"QuotaReserved","status":"True","lastTransitionTime":"2026-11-30T08:00:03Z",)"
            R"("reason":"QuotaReserved","message":"Quota reserved in ClusterQueue cq"},{"type":"Admitted",)"
            R"("status":"True","lastTransitionTime":"2026-11-30T08:00:03Z","reason":"Admitted","message":)"
            R"("The workload is admitted"}],"admission":{"clusterQueue":"cq","podSetAssignments":[{"name":"main",)"
            R"("flavors":{"cpu":"default","memory":"default"},"resourceUsage":{"cpu":"1","memory":"3Gi"},"count":2}]}})");
  // Blocked before the scheduler.
  EXPECT_EQ(list["items"][3]["status"].dump(),
            R"({"conditions":[{"type":"QuotaReserved","status":"False","lastTransitionTime":"2026-11-30T08:00:03Z",)"
            R"("reason":"Misconfigured","message":"LocalQueue absent doesn't exist"}]})");

  EXPECT_EQ(list["items"][4]["status"].dump(),
            R"({"pendingWorkloads":0,"custom":"kept","conditions":[{"type":"Active","status":"True",)"
            R"("observedGeneration":3,"lastTransitionTime":"2026-11-30T08:00:00Z","reason":"Ready","message":)"
            R"("Can admit new workloads"}],"flavorsReservation":[{"name":"default","resources":[{"name":"cpu",)"
            R"("total":"5500m","borrowed":"1500m"},{"name":"memory","total":"3Gi","borrowed":"0"}]}],)"
            R"("flavorsUsage":[{"name":"default","resources":[{"name":"cpu","total":"1","borrowed":"0"},)"
            R"({"name":"memory","total":"0","borrowed":"0"}]}],"reservingWorkloads":3,"admittedWorkloads":3,)"
            R"("fairSharing":{"weightedShare":150}})");
  // Outside a cohort nothing is borrowed.
  EXPECT_EQ(list["items"][5]["status"].dump(),
            R"({"conditions":[{"type":"Active","status":"True","lastTransitionTime":"2026-11-30T08:00:00Z",)"
            R"("reason":"Ready","message":"Can admit new workloads"}],"flavorsReservation":[{"name":"default",)"
            R"("resources":[{"name":"cpu","total":"500m","borrowed":"0"}]}],"flavorsUsage":[{"name":"default",)"
            R"("resources":[{"name":"cpu","total":"0","borrowed":"0"}]}],"pendingWorkloads":0,)"
            R"("reservingWorkloads":0,"admittedWorkloads":0})");
}

TEST(KueueAdmit, EncodedObjectsDecodeAgain) {
  Fixture r(kObjects);
  r.run->load(r.core, r.diagnostics);
  r.core.script = script;
  ASSERT_TRUE(r.run->run(r.core, {}).ok());
  const auto again = decode_yaml(doc::to_yaml(r.run->encode(r.core)));
  ASSERT_TRUE(again.diagnostics.empty()) << again.lines()[0];
  ASSERT_EQ(again.set.workloads.size(), 4u);
  ASSERT_EQ(again.set.cluster_queues.size(), 2u);
  const Workload& b = again.set.workloads[2];
  EXPECT_TRUE(b.has_quota_reservation());
  ASSERT_TRUE(b.admission.has_value());
  EXPECT_EQ(b.admission->pod_set_assignments[0].resource_usage.at("cpu").to_string(), "1");
  // Read back, the admitted Workloads are restored, not submitted.
  Diagnostics diagnostics;
  AdmissionRun second(again.set, diagnostics);
  EXPECT_EQ(second.entries()[1].route, Route::Restore);
  EXPECT_EQ(second.entries()[2].route, Route::Restore);
  EXPECT_EQ(second.entries()[2].admission.pod_sets[0].resource_usage,
            (std::vector<std::pair<std::string, twin::Amount>>{{"cpu", 1000}}));
}

TEST(KueueAdmit, RefusedRestoresAreWarnings) {
  Fixture r(kObjects);
  r.core.queues = {"solo"};
  r.run->load(r.core, r.diagnostics);
  ASSERT_EQ(r.diagnostics.size(), 1u);
  EXPECT_EQ(r.diagnostics[0].rule, kRuleRestoreFailed);
  EXPECT_EQ(r.diagnostics[0].message, "ClusterQueue cq not found; the Workload is left as it is");
  EXPECT_EQ(r.run->entries()[0].route, Route::Untouched);
}

}  // namespace
}  // namespace gpubank::kueue
