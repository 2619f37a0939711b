// The rendered Kueue objects of examples/policies, written as `gpubank render --out` writes
// them, load into the twin's Kueue admission unchanged (what `gpubank twin admit -f DIR`
// runs), and on the h100-rdma-training cohort two groups borrow from each other up to
// their caps. The twin's own runs (`twin run`, `gpubank up`) build the same quota tree,
// Cohort quotas included, move them with leases as the controller does, and run in the
// mode (fair sharing or not) the rendered manager Configuration says.
//
// The cohort, from the example quotas (Kueue: a queue keeps nominalQuota - lendingLimit
// to itself; the rest of its nominal quota is the cohort's; it may use at most
// nominalQuota + borrowingLimit):
//   search   nominal 32, lendingLimit 8  (keeps 24, lends 8),  borrowingLimit 16 -> cap 48
//   ads      nominal 16, no lendingLimit (keeps 0, lends 16),  borrowingLimit 16 -> cap 32
//   research nominal  8, no lendingLimit (keeps 0, lends 8),   borrowingLimit 24 -> cap 32
//   the Cohort's own nominalQuota: 64 - 56 guaranteed = 8
//   shared by the cohort: 8 + 16 + 8 + 8 = 40 GPUs.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "kueue/admit.hpp"
#include "kueue/decode.hpp"
#include "policy/cohort_quota.hpp"
#include "render/engines_fixture.hpp"
#include "render/scheduling.hpp"
#include "twin/admission/core.hpp"
#include "twin/run/engine.hpp"

namespace gpubank::render {
namespace {

namespace fs = std::filesystem;

struct Submission {
  std::string name;
  std::string ns;
  int gpus = 8;
};

// The example guardrails' training-standard (examples/policies/00-guardrails.yaml).
constexpr int kTrainingStandardPriority = 10000;

// One Workload per submission, created a second apart in the order given, through the
// LocalQueue h100-rdma-training of its namespace, at priority training-standard, as Kueue's
// job integration writes it (spec.priorityClassRef and spec.priority from the label).
std::string workloads_yaml(const std::vector<Submission>& submissions) {
  std::string y;
  int second = 0;
  for (const auto& s : submissions) {
    ++second;
    y += "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: Workload\nmetadata:\n  name: " + s.name +
         "\n  namespace: " + s.ns + "\n  uid: uid-" + s.name + "\n  creationTimestamp: \"2026-12-01T08:00:" +
         (second < 10 ? "0" : "") + std::to_string(second) +
         "Z\"\n  labels: {kueue.x-k8s.io/priority-class: training-standard}\n"
         "spec:\n  queueName: h100-rdma-training\n"
         "  priorityClassRef: {group: kueue.x-k8s.io, kind: WorkloadPriorityClass, name: training-standard}\n"
         "  priority: " + std::to_string(kTrainingStandardPriority) + "\n  podSets:\n  - name: workers\n    count: 1\n    template:\n"
         "      spec:\n        containers:\n        - name: trainer\n          resources:\n"
         "            requests: {nvidia.com/gpu: \"" +
         std::to_string(s.gpus) + "\"}\n";
  }
  return y;
}

struct Outcome {
  std::set<std::string> admitted;  // Workload names with status.admission
  doc::Json list;                  // what `gpubank twin admit -o json` prints
  Diagnostics diagnostics;
  std::map<std::string, twin::QuotaFigures> cohorts;  // each pool's Cohort on its GPU resource, once loaded

  // flavorsUsage of a ClusterQueue for the pool's flavor: {total, borrowed}.
  [[nodiscard]] std::pair<std::string, std::string> usage(const std::string& cluster_queue) const {
    for (const auto& item : list.at("items")) {
      if (item.at("kind") != "ClusterQueue" || item.at("metadata").at("name") != cluster_queue) continue;
      for (const auto& f : item.at("status").at("flavorsUsage")) {
        const auto& r = f.at("resources").at(0);
        return {r.at("total").get<std::string>(), r.at("borrowed").get<std::string>()};
      }
    }
    return {"absent", "absent"};
  }
};

// Writes the rendered objects and the Workloads into a fresh directory and runs
// admission until stable, as `gpubank twin admit -f <dir>` does (the manager
// Configuration's ConfigMap included, so the twin runs in its mode).
Outcome admit(const std::vector<Submission>& submissions, const policy::PolicySet& set = testing::example_set()) {
  const RenderResult rendered = render(set, {Backend::Kueue});
  EXPECT_TRUE(rendered.ok());
  const fs::path dir = fs::temp_directory_path() / ("gpubank-render-twin-" + std::to_string(::getpid()) + "-" +
                                                    ::testing::UnitTest::GetInstance()->current_test_info()->name());
  fs::remove_all(dir);
  testing::write_tree(rendered, dir);
  std::ofstream(dir / "workloads.yaml") << workloads_yaml(submissions);

  Outcome out;
  // The Kueue backend's directory as rendered (the rest of --out is KEDA, Prometheus and
  // Grafana objects, which `twin admit` has no use for), plus the test's Workloads.
  const kueue::ObjectSet objects =
      kueue::load_objects({(dir / "kueue").string(), (dir / "workloads.yaml").string()}, out.diagnostics);
  fs::remove_all(dir);
  EXPECT_FALSE(has_errors(out.diagnostics)) << out.diagnostics.front().to_string();
  kueue::AdmissionRun run(objects, out.diagnostics);
  kueue::CoreInputs in = run.inputs();
  const auto options = kueue::AdmissionRun::core_options(objects, false, {}, out.diagnostics);
  EXPECT_TRUE(options.ok());
  if (!options.ok()) return out;
  auto core = twin::AdmissionCore::create(*options, std::move(in.flavors), std::move(in.cohorts), std::move(in.queues));
  EXPECT_TRUE(core.ok()) << (core.ok() ? "" : core.error());
  if (!core.ok()) return out;
  for (const auto& pool : set.guardrails_spec()->pools) {
    if (auto f = (**core).figures(pool.name, pool.name, gpu_resource(pool))) out.cohorts[pool.name] = *f;
  }
  run.load(**core, out.diagnostics);
  const auto cycles = run.run(**core, {});
  EXPECT_TRUE(cycles.ok());
  out.list = run.encode(**core);
  for (const auto& item : out.list.at("items")) {
    if (item.at("kind") == "Workload" && item.contains("status") && item.at("status").contains("admission")) {
      out.admitted.insert(item.at("metadata").at("name").get<std::string>());
    }
  }
  return out;
}

TEST(RenderedKueueInTheTwin, ObjectsLoadUnchanged) {
  const Outcome out = admit({});
  // Only the PriorityClasses (scheduling.k8s.io, not Kueue's) are skipped, with a warning
  // each; the manager Configuration is read, and its waitForPodsReady, which `twin admit`
  // (no pods) does not run, is said once.
  int not_modelled = 0;
  for (const auto& d : out.diagnostics) {
    if (d.rule == kueue::kRuleConfigNotModelled) {
      EXPECT_EQ(d.path, "waitForPodsReady") << d.to_string();
      ++not_modelled;
      continue;
    }
    EXPECT_EQ(d.rule, "kueue.ignored-kind") << d.to_string();
    EXPECT_EQ(d.kind, "PriorityClass") << d.to_string();
  }
  EXPECT_EQ(not_modelled, 1);
  int cluster_queues = 0;
  for (const auto& item : out.list.at("items")) cluster_queues += item.at("kind") == "ClusterQueue" ? 1 : 0;
  EXPECT_EQ(cluster_queues, 11);  // one per GPUQuotaPolicy
}

TEST(RenderedKueueInTheTwin, SearchBorrowsFromAdsAndResearchUpToItsCap) {
  // search alone asks for 7 x 8 = 56. It keeps 24 and may take all 32 the cohort shares,
  // but borrowingLimit 16 caps it at 32 + 16 = 48: six workloads, the seventh waits.
  std::vector<Submission> s;
  for (int i = 1; i <= 7; ++i) s.push_back({"search-" + std::to_string(i), "search-training"});
  const Outcome out = admit(s);
  EXPECT_EQ(out.admitted, (std::set<std::string>{"search-1", "search-2", "search-3", "search-4", "search-5", "search-6"}));
  EXPECT_EQ(out.usage("search-h100-rdma-training"), std::make_pair(std::string("48"), std::string("16")));
}

TEST(RenderedKueueInTheTwin, AdsBorrowsFromSearchAndResearchUpToItsCap) {
  // ads alone asks for 5 x 8 = 40. Its cap is 16 + 16 = 32, and the cohort shares exactly
  // 32 (search's 8 + its own 16 + research's 8): four workloads, 16 of them borrowed.
  std::vector<Submission> s;
  for (int i = 1; i <= 5; ++i) s.push_back({"ads-" + std::to_string(i), "ads-training"});
  const Outcome out = admit(s);
  EXPECT_EQ(out.admitted, (std::set<std::string>{"ads-1", "ads-2", "ads-3", "ads-4"}));
  EXPECT_EQ(out.usage("ads-h100-rdma-training"), std::make_pair(std::string("32"), std::string("16")));
}

TEST(RenderedKueueInTheTwin, SearchsLendingFloorIsNeverLent) {
  // search is idle, ads runs 2 x 8 = 16 (its nominal, all of it in the shared part) and
  // research asks for 5 x 8 = 40 (cap 8 + 24 = 32). The shared 40 less ads' 16 leaves 24:
  // research's own 8, search's lendable 8 and the 8 no one is guaranteed (the Cohort's).
  // search's other 24 stay idle, never lent, so research stops at 24 (16 borrowed), below
  // its cap: three workloads.
  std::vector<Submission> s;
  for (int i = 1; i <= 2; ++i) s.push_back({"ads-" + std::to_string(i), "ads-training"});
  for (int i = 1; i <= 5; ++i) s.push_back({"research-" + std::to_string(i), "research"});
  const Outcome out = admit(s);
  EXPECT_EQ(out.admitted, (std::set<std::string>{"ads-1", "ads-2", "research-1", "research-2", "research-3"}));
  EXPECT_EQ(out.usage("ads-h100-rdma-training"), std::make_pair(std::string("16"), std::string("0")));
  EXPECT_EQ(out.usage("research-h100-rdma-training"), std::make_pair(std::string("24"), std::string("16")));
  EXPECT_EQ(out.usage("search-h100-rdma-training"), std::make_pair(std::string("0"), std::string("0")));
}

// The Cohort quotas the render writes are the twin's: in `twin admit`'s tree from the
// written files, and in the run engine's (`twin run`, `gpubank up`), which builds its
// tree from the same render. Each pool's tree then adds up to its capacity.
TEST(RenderedKueueInTheTwin, CohortQuotasAreTheRenderedOnes) {
  const policy::PolicySet set = testing::example_set();
  const RenderResult rendered = render(set, {Backend::Kueue});
  const Outcome out = admit({});
  const twin::run::Scenario nothing;
  twin::run::Simulation simulation(set, nothing);
  ASSERT_TRUE(simulation.start()) << simulation.result().diagnostics.front().to_string();
  const std::vector<twin::run::CohortView> run_cohorts = simulation.cohorts();
  ASSERT_EQ(run_cohorts.size(), set.guardrails_spec()->pools.size());
  for (const auto& pool : set.guardrails_spec()->pools) {
    SCOPED_TRACE(pool.name);
    const Json& cohort = testing::manifest_at(rendered, "kueue/cohort-" + pool.name + ".yaml");
    const std::int64_t quota = cohort["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"];
    EXPECT_EQ(quota, policy::cohort_nominal_quota(set, pool));
    EXPECT_EQ(quota, pool.capacity - policy::guaranteed_on_pool(set, pool.name));
    ASSERT_TRUE(out.cohorts.contains(pool.name));
    EXPECT_EQ(out.cohorts.at(pool.name).nominal, quota);
    // The subtree is the capacity less what the queues keep private (their lending
    // floors: search's 24 on the training pool, customer-service's 8 on h100-inference).
    std::int64_t kept_private = 0;
    for (const auto& o : set.policies()) {
      if (o.kind != policy::Kind::GPUQuotaPolicy) continue;
      const auto& q = o.as<policy::GPUQuotaPolicySpec>();
      if (q.resource_pool == pool.name && q.lending_limit) kept_private += q.guaranteed - *q.lending_limit;
    }
    EXPECT_EQ(out.cohorts.at(pool.name).subtree_quota, pool.capacity - kept_private);
    const auto run = std::find_if(run_cohorts.begin(), run_cohorts.end(),
                                  [&](const twin::run::CohortView& c) { return c.pool == pool.name; });
    ASSERT_NE(run, run_cohorts.end());
    EXPECT_EQ(run->cohort, pool.name);
    EXPECT_EQ(run->nominal, quota);
    EXPECT_EQ(run->subtree_quota, out.cohorts.at(pool.name).subtree_quota);
  }
}

// A TemporaryQuota lease moves GPUs from the Cohort to the lessee's ClusterQueue in the
// twin, exactly as policy::cohort_nominal_quota (what the controller applies) says, and
// gives them back when it ends: ads-holiday-retrain adds 8 to ads on h100-rdma-training,
// all of the 8 no one is guaranteed there.
TEST(RenderedKueueInTheTwin, LeasesMoveTheCohortQuotaAsTheControllerWould) {
  const policy::PolicySet set = testing::example_set();
  Diagnostics diagnostics;
  const auto scenario = twin::run::parse_scenario(R"(start: "2026-12-19T00:00:00Z"
workloads: []
leases:
- name: ads-holiday-retrain
  requestedAt: 0s
  requestedBy: {username: ads.lead, groups: [ads-admins]}
  decision: Approved
  decidedAt: 0s
  decidedBy: {username: ops.zhang, groups: [gpubank-platform-admins]}
)",
                                                  "lease.yaml", diagnostics);
  ASSERT_TRUE(scenario.has_value()) << diagnostics.front().to_string();
  twin::run::Simulation simulation(set, *scenario);
  ASSERT_TRUE(simulation.start()) << simulation.result().diagnostics.front().to_string();
  const policy::PolicyObject* lease = set.find(policy::Kind::CapacityLease, "ads-holiday-retrain");
  ASSERT_NE(lease, nullptr);
  const policy::Pool& pool = *set.guardrails_spec()->find_pool("h100-rdma-training");
  auto training = [&] {
    for (const auto& c : simulation.cohorts()) {
      if (c.pool == pool.name) return c;
    }
    ADD_FAILURE() << "no cohort " << pool.name;
    return twin::run::CohortView{};
  };
  auto ads_nominal = [&] {
    for (const auto& q : simulation.queues()) {
      if (q.cluster_queue == "ads-h100-rdma-training") return q.nominal;
    }
    return std::int64_t{-1};
  };
  const std::vector<const policy::CapacityLeaseSpec*> active{&lease->as<policy::CapacityLeaseSpec>()};
  ASSERT_TRUE(simulation.advance_to(60'000));
  EXPECT_EQ(training().nominal, policy::cohort_nominal_quota(set, pool, active));
  EXPECT_EQ(training().nominal, 0);
  EXPECT_EQ(ads_nominal(), 24);
  EXPECT_EQ(training().subtree_quota, 64 - 24);  // the same tree: search's floor still kept private
  // The lease ends at 20:00.
  ASSERT_TRUE(simulation.advance_to(20 * 3'600'000 + 1));
  EXPECT_EQ(training().nominal, policy::cohort_nominal_quota(set, pool));
  EXPECT_EQ(training().nominal, 8);
  EXPECT_EQ(ads_nominal(), 16);
  bool said = false;
  for (const auto& e : simulation.result().events) {
    if (e.kind != "LeaseActivated") continue;
    said = true;
    EXPECT_EQ(e.numbers.at("cohortQuota"), 0);
  }
  EXPECT_TRUE(said);
}

// Fair sharing or not, as the guardrails say: the ConfigMap `twin admit` reads turns it on
// (ClusterQueues then report their weighted share), and the run engine, which reads the
// same Configuration, admits by share instead of by arrival: at 2 minutes 16 GPUs come
// free and two heads want them, a-late (a already far above its guarantee, first in line)
// and b-late (b within its reach). Classic admission orders both borrowing heads by
// priority, then creation: a-late. Fair sharing's tournament picks the lower share: b-late.
TEST(RenderedKueueInTheTwin, TheTwinRunsInTheRenderedMode) {
  for (const bool fair : {false, true}) {
    SCOPED_TRACE(fair ? "fair sharing" : "classic");
    const policy::PolicySet set = gpubank::testing::from_yaml(
        testing::guardrails_yaml() + (fair ? "  fairSharing: true\n" : "") +
        testing::quota_yaml("a-gpu", "a", "gpu", "  guaranteed: 8\n  borrowLimit: 56\n") +
        testing::quota_yaml("b-gpu", "b", "gpu", "  guaranteed: 8\n  borrowLimit: 56\n"));
    const Outcome admitted = admit({}, set);
    for (const auto& item : admitted.list.at("items")) {
      if (item.at("kind") != "ClusterQueue") continue;
      EXPECT_EQ(item.at("status").contains("fairSharing"), fair) << item.at("metadata").at("name");
    }

    Diagnostics diagnostics;
    const auto scenario = twin::run::parse_scenario(R"(workloads:
- {name: a-big, businessGroup: a, resourcePool: gpu, gpus: 48, workloadType: training, priorityClass: batch, runTime: 10h}
- {name: b-first, businessGroup: b, resourcePool: gpu, gpus: 16, workloadType: training, priorityClass: batch, runTime: 2m}
- {name: a-late, businessGroup: a, resourcePool: gpu, gpus: 16, workloadType: training, priorityClass: batch,
   arrivalTime: 1m, runTime: 1h}
- {name: b-late, businessGroup: b, resourcePool: gpu, gpus: 16, workloadType: training, priorityClass: batch,
   arrivalTime: 90s, runTime: 1h}
)",
                                                    "fair.yaml", diagnostics);
    ASSERT_TRUE(scenario.has_value()) << diagnostics.front().to_string();
    twin::run::RunOptions options;
    options.until = 3 * 60'000;
    const twin::run::RunResult r = twin::run::run_scenario(set, *scenario, options);
    ASSERT_TRUE(r.ok()) << r.diagnostics.front().to_string();
    std::map<std::string, std::optional<twin::VirtualTime>> first_admitted;
    for (const auto& w : r.workloads) first_admitted[w.workload] = w.first_admitted;
    EXPECT_EQ(first_admitted.at("a/a-big"), 0);
    EXPECT_EQ(first_admitted.at("b/b-first"), 0);
    EXPECT_EQ(first_admitted.at(fair ? "b/b-late" : "a/a-late"), 120'000);
    EXPECT_FALSE(first_admitted.at(fair ? "a/a-late" : "b/b-late").has_value());
  }
}

}  // namespace
}  // namespace gpubank::render
