// Alibaba pods -> scenario: the real default pod list end to end (the scenario checker
// accepts what comes out), the report's exact counts, the group rule's spread and
// stability, replication, naming, each skip reason, and the derived policy set checked by
// the policy loader and validator for the real inventory.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>

#include "core/sha256.hpp"
#include "document/loader.hpp"
#include "document/reader.hpp"
#include "policy/policy_set.hpp"
#include "policy/validate.hpp"
#include "support/paths.hpp"
#include "twin/trace/alibaba_scenario.hpp"
#include "twin/trace/policies.hpp"
#include "twin/trace/scenario_yaml.hpp"

namespace gpubank::twin::trace {
namespace {

std::string trace_file(const std::string& relative) {
  auto text = doc::read_file(gpubank::testing::shared_dir() + "/traces/" + relative, std::size_t{64} << 20);
  EXPECT_TRUE(text.ok()) << relative;
  return text.ok() ? *text : std::string();
}

const std::vector<AlibabaPod>& default_pods() {
  static const std::vector<AlibabaPod> pods = [] {
    Diagnostics d;
    auto p = read_alibaba_pods(trace_file("alibaba-gpu-v2023/openb_pod_list_default.csv"), "default.csv", d);
    EXPECT_TRUE(p);
    return p.value_or(std::vector<AlibabaPod>{});
  }();
  return pods;
}

TraceMapping three_groups(std::uint64_t seed = 7) {
  TraceMapping m;
  m.seed = seed;
  m.groups = {{"search", 5}, {"ads", 3}, {"research", 2}};
  return m;
}

std::string messages(const Diagnostics& d) {
  std::string out;
  for (const auto& x : d) out += x.to_string() + "\n";
  return out;
}

TEST(AlibabaScenario, TheDefaultPodList) {
  const auto mapped = alibaba_scenario(default_pods(), three_groups());
  ASSERT_TRUE(mapped.ok()) << mapped.error();
  const MappingReport& r = mapped->report;
  EXPECT_EQ(r.pods_read, 8152);
  // 7064 GPU pods, less one Pending pod deleted in the second it was created (a BE pod on
  // a shared GPU): no usable duration.
  EXPECT_EQ(r.pods_mapped, 7063);
  EXPECT_EQ(r.workloads, 7063);
  EXPECT_EQ(r.skipped, (std::map<std::string, std::int64_t>{{"cpu-only", 1088}, {"non-positive-run-time", 1}}));
  EXPECT_EQ(r.fallback_run_time, 860);  // the GPU pods of the 897 Pending ones (36 are CPU-only), less that one
  EXPECT_EQ(r.renamed, 0);              // "openb-pod-0000" is a DNS label already
  ASSERT_EQ(r.per_pool.size(), 2u);
  // Shared pods: gpu_milli x run seconds summed; whole-GPU pods: num_gpu x 1000 x run
  // seconds (an independent script over the file gives these sums).
  EXPECT_EQ(r.per_pool.at("alibaba-shared").workloads, 3077);
  EXPECT_EQ(r.per_pool.at("alibaba-shared").gpu_milli_seconds, 25'538'518'660);
  EXPECT_EQ(r.per_pool.at("alibaba-g2").workloads, 3986);
  EXPECT_EQ(r.per_pool.at("alibaba-g2").gpu_milli_seconds, 159'856'932'000);
  std::int64_t group_workloads = 0, group_milli = 0;
  for (const auto& g : r.per_group) {
    group_workloads += g.second.workloads;
    group_milli += g.second.gpu_milli_seconds;
  }
  EXPECT_EQ(group_workloads, 7063);
  EXPECT_EQ(group_milli, 25'538'518'660 + 159'856'932'000);

  std::map<policy::WorkloadType, int> types;
  std::int64_t shared = 0, max_arrival = 0, checkpointable = 0;
  for (const auto& w : mapped->scenario.workloads) {
    types[w.workload_type] += 1;
    shared += w.gpu_milli > 0 ? 1 : 0;
    checkpointable += w.checkpointable ? 1 : 0;
    max_arrival = std::max(max_arrival, w.arrival_time.milliseconds());
    EXPECT_EQ(w.pods, 1);
    EXPECT_TRUE(w.checkpointable ? w.workload_type == policy::WorkloadType::Training : true);
  }
  EXPECT_EQ(types[policy::WorkloadType::Inference], 4011);  // LS
  EXPECT_EQ(types[policy::WorkloadType::Batch], 2947);      // BE, less the pod above
  EXPECT_EQ(types[policy::WorkloadType::Training], 105);    // 99 Burstable + 6 Guaranteed
  EXPECT_EQ(shared, 3077);
  EXPECT_GT(checkpointable, 0);
  EXPECT_LT(checkpointable, 105);
  EXPECT_EQ(max_arrival, 12'901'761'000);  // the latest creation, first creation being 0
  EXPECT_TRUE(std::is_sorted(mapped->scenario.workloads.begin(), mapped->scenario.workloads.end(),
                             [](const auto& a, const auto& b) { return a.arrival_time < b.arrival_time; }));
  // openb-pod-0000: LS, 1 GPU, created 0, scheduled 0, deleted 12537496 s.
  const auto& first = mapped->scenario.workloads.front();
  EXPECT_EQ(first.name, "openb-pod-0000");
  EXPECT_EQ(first.resource_pool, "alibaba-g2");
  EXPECT_EQ(first.run_time.milliseconds(), 12'537'496'000);

  // The scenario checker accepts it (names, pools, 8784h limits, gpuMilli with gpus 1).
  Diagnostics d;
  const auto parsed = run::parse_scenario(scenario_yaml(mapped->scenario), "mapped.yaml", d);
  // (The checker's limits: names, pools and groups DNS labels, times within 8784h, gpuMilli
  // only with gpus 1, unique names.)
  ASSERT_TRUE(parsed) << messages(d);
  ASSERT_EQ(parsed->workloads.size(), 7063u);
  const std::string text = scenario_yaml(mapped->scenario);
  EXPECT_EQ(scenario_yaml(*parsed), text);  // the text round-trips
  const auto again = alibaba_scenario(default_pods(), three_groups());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(scenario_yaml(again->scenario), text);  // byte for byte
}

TEST(AlibabaScenario, GroupsFollowTheWeightsWithinAFewPercent) {
  const auto mapped = alibaba_scenario(default_pods(), three_groups());
  ASSERT_TRUE(mapped.ok());
  const double n = 7064;
  // Weights 5:3:2 of 7064 pods: 3532, 2119.2, 1412.8 expected; a binomial's standard
  // deviation is about 40 pods (0.6 %), so 2 % is a loose bound a broken rule still fails.
  EXPECT_NEAR(static_cast<double>(mapped->report.per_group.at("search").workloads) / n, 0.5, 0.02);
  EXPECT_NEAR(static_cast<double>(mapped->report.per_group.at("ads").workloads) / n, 0.3, 0.02);
  EXPECT_NEAR(static_cast<double>(mapped->report.per_group.at("research").workloads) / n, 0.2, 0.02);
}

TEST(AlibabaScenario, APodsGroupDoesNotMoveWhenOtherPodsComeOrGo) {
  std::vector<AlibabaPod> fewer;
  for (std::size_t i = 0; i < default_pods().size(); ++i) {
    if (i % 3 != 1) fewer.push_back(default_pods()[i]);
  }
  const auto all = alibaba_scenario(default_pods(), three_groups());
  const auto some = alibaba_scenario(fewer, three_groups());
  ASSERT_TRUE(all.ok() && some.ok());
  std::map<std::string, std::string> group;
  for (const auto& w : all->scenario.workloads) group[w.name] = w.business_group;
  std::size_t compared = 0;
  for (const auto& w : some->scenario.workloads) {
    EXPECT_EQ(group.at(w.name), w.business_group) << w.name;
    ++compared;
  }
  EXPECT_GT(compared, 4000u);  // about two thirds of 7064
  // Another seed moves some pods: the seed matters.
  const auto other = alibaba_scenario(default_pods(), three_groups(8));
  ASSERT_TRUE(other.ok());
  std::size_t moved = 0;
  for (const auto& w : other->scenario.workloads) moved += group.at(w.name) != w.business_group ? 1 : 0;
  EXPECT_GT(moved, 1000u);  // 1 - (0.25 + 0.09 + 0.04) = 62 % expected to move
}

// A fingerprint of every field the mapping sets (cheaper than the YAML for 28k workloads).
std::string sha(const run::Scenario& s) {
  std::string text;
  for (const auto& w : s.workloads) {
    text += w.name + "," + w.business_group + "," + w.resource_pool + "," + std::to_string(w.gpus) + "," +
            std::to_string(w.gpu_milli) + "," + std::to_string(static_cast<int>(w.workload_type)) + "," +
            (w.checkpointable ? "c," : "-,") + std::to_string(w.arrival_time.milliseconds()) + "," +
            std::to_string(w.run_time.milliseconds()) + "\n";
  }
  return sha256_hex(text);
}

TEST(AlibabaScenario, ReplicationIsSeededAndDeterministic) {
  TraceMapping m = three_groups();
  m.replication = 4;
  const auto a = alibaba_scenario(default_pods(), m);
  const auto b = alibaba_scenario(default_pods(), m);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->report.workloads, 4 * 7063);
  EXPECT_EQ(a->report.pods_mapped, 7063);
  EXPECT_EQ(a->report.skipped.at("cpu-only"), 1088);  // pods, not copies
  EXPECT_EQ(a->report.per_pool.at("alibaba-shared").workloads, 4 * 3077);
  EXPECT_EQ(a->report.per_pool.at("alibaba-shared").gpu_milli_seconds, 4 * 25'538'518'660);
  EXPECT_EQ(sha(a->scenario), sha(b->scenario));
  m.seed = 8;
  const auto c = alibaba_scenario(default_pods(), m);
  ASSERT_TRUE(c.ok());
  EXPECT_NE(sha(a->scenario), sha(c->scenario));

  std::set<std::string> names;
  std::map<std::string, const run::ScenarioWorkload*> by_name;
  for (const auto& w : a->scenario.workloads) {
    EXPECT_TRUE(names.insert(w.name).second) << w.name;
    EXPECT_TRUE(is_dns_label(w.name)) << w.name;
    by_name[w.name] = &w;
  }
  // Copy 0 is the unreplicated mapping exactly; copy j is "-r<j>" with the same shape and
  // a jitter in [0, 1h).
  const auto single = alibaba_scenario(default_pods(), three_groups());
  ASSERT_TRUE(single.ok());
  std::int64_t jitter_sum = 0;
  for (const auto& w : single->scenario.workloads) {
    const auto* original = by_name.at(w.name);
    EXPECT_EQ(original->business_group, w.business_group);
    EXPECT_EQ(original->arrival_time, w.arrival_time);
    EXPECT_EQ(original->checkpointable, w.checkpointable);
    for (int j = 1; j < 4; ++j) {
      const auto* copy = by_name.at(w.name + "-r" + std::to_string(j));
      const std::int64_t jitter = copy->arrival_time.milliseconds() - w.arrival_time.milliseconds();
      EXPECT_GE(jitter, 0);
      EXPECT_LT(jitter, 3'600'000);
      jitter_sum += jitter;
      EXPECT_EQ(copy->run_time, w.run_time);
      EXPECT_EQ(copy->gpus, w.gpus);
      EXPECT_EQ(copy->resource_pool, w.resource_pool);
    }
  }
  // Uniform in [0, 1h): the mean of 21189 draws is 1800 s, give or take 7 s (one
  // standard deviation: 3600 / sqrt(12 x 21189)).
  EXPECT_NEAR(static_cast<double>(jitter_sum) / (3.0 * 7063) / 1000.0, 1800.0, 30.0);
}

TEST(AlibabaScenario, DaysAndNeverScheduledOptions) {
  TraceMapping m = three_groups();
  m.days = 120;
  auto r = alibaba_scenario(default_pods(), m);
  ASSERT_TRUE(r.ok());
  // Only 838 of the 7064 GPU pods were created in the first 120 days: the pod list is a
  // snapshot of the cluster near the trace's end (median creation on day 133).
  EXPECT_EQ(r->report.pods_mapped, 838);
  EXPECT_EQ(r->report.skipped.at("after-days-limit"), 7064 - 838);
  m = three_groups();
  m.never_scheduled = NeverScheduled::Skip;
  r = alibaba_scenario(default_pods(), m);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->report.pods_mapped, 6203);  // 7064 - 861 (the zero-length one among them)
  EXPECT_EQ(r->report.skipped.at("never-scheduled"), 861);
  EXPECT_EQ(r->report.fallback_run_time, 0);
}

AlibabaPod pod(std::string name, std::int64_t gpus, std::int64_t milli, std::optional<std::int64_t> created,
               std::optional<std::int64_t> deleted, std::optional<std::int64_t> scheduled) {
  AlibabaPod p;
  p.name = std::move(name);
  p.num_gpu = gpus;
  p.gpu_milli = milli;
  p.creation_time = created;
  p.deletion_time = deleted;
  p.scheduled_time = scheduled;
  return p;
}

TEST(AlibabaScenario, EachSkipReason) {
  const std::vector<AlibabaPod> pods{
      pod("ok", 1, 1000, 10, 100, 20),
      pod("cpu", 0, 0, 10, 100, 20),
      pod("multi-shared", 2, 500, 10, 100, 20),
      pod("no-milli", 1, 0, 10, 100, 20),
      pod("no-created", 1, 1000, std::nullopt, 100, 20),
      pod("no-deleted", 1, 1000, 10, std::nullopt, 20),
      pod("zero-run", 1, 1000, 10, 20, 20),
      pod("late", 1, 1000, 10 + 8784LL * 3600, 10 + 8785LL * 3600, 10 + 8784LL * 3600),
      pod("pending", 1, 300, 50, 80, std::nullopt),
  };
  const auto r = alibaba_scenario(pods, three_groups());
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->report.skipped, (std::map<std::string, std::int64_t>{{"cpu-only", 1},
                                                                   {"shared-multi-gpu", 1},
                                                                   {"zero-gpu-milli", 1},
                                                                   {"no-creation-time", 1},
                                                                   {"no-deletion-time", 1},
                                                                   {"non-positive-run-time", 1},
                                                                   {"beyond-scenario-year", 1}}));
  ASSERT_EQ(r->scenario.workloads.size(), 2u);
  EXPECT_EQ(r->scenario.workloads[0].name, "ok");
  EXPECT_EQ(r->scenario.workloads[0].arrival_time.milliseconds(), 0);     // 10 - first creation 10
  EXPECT_EQ(r->scenario.workloads[0].run_time.milliseconds(), 80'000);    // 100 - 20
  EXPECT_EQ(r->scenario.workloads[1].name, "pending");
  EXPECT_EQ(r->scenario.workloads[1].arrival_time.milliseconds(), 40'000);  // 50 - 10
  EXPECT_EQ(r->scenario.workloads[1].run_time.milliseconds(), 30'000);      // fallback: 80 - 50
  EXPECT_EQ(r->scenario.workloads[1].resource_pool, "alibaba-shared");
  EXPECT_EQ(r->scenario.workloads[1].gpu_milli, 300);
  EXPECT_EQ(r->report.fallback_run_time, 1);
}

TEST(AlibabaScenario, PoolsFromGpuSpec) {
  EXPECT_EQ(alibaba_pool_for_model("V100M32"), "alibaba-v100m32");
  EXPECT_EQ(alibaba_pool_for_model("G2"), "alibaba-g2");
  EXPECT_EQ(alibaba_pool_for_model("A100_80G"), "alibaba-a100-80g");
  auto a = pod("a", 1, 1000, 0, 10, 0);
  a.gpu_spec = {"V100M32", "A10"};
  auto shared = pod("s", 1, 250, 0, 10, 0);
  shared.gpu_spec = {"T4"};
  auto r = alibaba_scenario({a, shared}, three_groups());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->scenario.workloads[0].resource_pool, "alibaba-v100m32");
  EXPECT_EQ(r->scenario.workloads[0].gpu_models, (std::vector<std::string>{"V100M32", "A10"}));
  EXPECT_EQ(r->scenario.workloads[1].resource_pool, "alibaba-shared");  // shared wins over the model
  TraceMapping m = three_groups();
  m.pool_for_model = [](std::string_view model) { return model == "V100M32" ? std::string("v100") : std::string("Bad_Pool"); };
  a.gpu_spec = {"V100M32"};
  auto b = pod("b", 1, 1000, 0, 10, 0);
  b.gpu_spec = {"X"};
  r = alibaba_scenario({a, b}, m);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->scenario.workloads[0].resource_pool, "v100");
  EXPECT_EQ(r->report.skipped.at("invalid-pool"), 1);
}

TEST(AlibabaScenario, NamesBecomeUniqueDnsLabels) {
  const std::string long_name(80, 'x');
  const std::vector<AlibabaPod> pods{pod("Pod_A", 1, 1000, 0, 10, 0), pod("pod-a", 1, 1000, 0, 10, 0),
                                     pod("--", 1, 1000, 0, 10, 0), pod(long_name, 1, 1000, 0, 10, 0),
                                     pod(long_name + "y", 1, 1000, 0, 10, 0), pod("pod-a-r1", 1, 1000, 0, 10, 0)};
  TraceMapping m = three_groups();
  m.replication = 2;
  const auto r = alibaba_scenario(pods, m);
  ASSERT_TRUE(r.ok());
  std::set<std::string> names;
  for (const auto& w : r->scenario.workloads) {
    EXPECT_TRUE(is_dns_label(w.name)) << w.name;
    EXPECT_TRUE(names.insert(w.name).second) << w.name;
  }
  EXPECT_EQ(names.size(), 12u);
  EXPECT_TRUE(names.contains("pod-a"));  // "Pod_A" took it first
  EXPECT_TRUE(names.contains("pod"));    // "--" had nothing left
  EXPECT_TRUE(names.contains(std::string(48, 'x')));
  EXPECT_TRUE(names.contains("pod-a-r1"));  // the original pod named so keeps it; Pod_A's copy moves
  Diagnostics d;
  EXPECT_TRUE(run::parse_scenario(scenario_yaml(r->scenario), "names.yaml", d)) << messages(d);
}

TEST(AlibabaScenario, BadMappingsAreRefused) {
  TraceMapping m;
  EXPECT_FALSE(alibaba_scenario({}, m).ok());  // no groups
  m.groups = {{"Search", 1}};
  EXPECT_FALSE(alibaba_scenario({}, m).ok());
  m.groups = {{"a", 1}, {"a", 1}};
  EXPECT_FALSE(alibaba_scenario({}, m).ok());
  m.groups = {{"a", 0}};
  EXPECT_FALSE(alibaba_scenario({}, m).ok());
  m.groups = {{"a", 1}};
  m.replication = 0;
  EXPECT_FALSE(alibaba_scenario({}, m).ok());
  m.replication = 1;
  m.days = 0;
  EXPECT_FALSE(alibaba_scenario({}, m).ok());
  m.days.reset();
  m.shared_pool = "";
  EXPECT_FALSE(alibaba_scenario({}, m).ok());
  m.shared_pool = "s";
  m.checkpointable_fraction = std::nan("");
  EXPECT_FALSE(alibaba_scenario({}, m).ok());
  m.checkpointable_fraction = 1;
  EXPECT_TRUE(alibaba_scenario({}, m).ok());
}

// ---- the derived policy set ----------------------------------------------------------

TEST(TracePolicies, SplitByWeightRoundsDownAndGivesTheRestToTheFirstGroups) {
  const std::vector<GroupWeight> groups{{"a", 5}, {"b", 3}, {"c", 2}};
  // 4392 x 0.5 = 2196, x 0.3 = 1317.6, x 0.2 = 878.4: floors add up to 4391, one left.
  EXPECT_EQ(split_by_weight(4392, groups), (std::vector<std::int64_t>{2197, 1317, 878}));
  // 2 x 0.5 = 1, 0.6, 0.4: floors 1, 0, 0, one left to the first.
  EXPECT_EQ(split_by_weight(2, groups), (std::vector<std::int64_t>{2, 0, 0}));
  EXPECT_EQ(split_by_weight(0, groups), (std::vector<std::int64_t>{0, 0, 0}));
  EXPECT_EQ(split_by_weight(7, {{"a", 1}, {"b", 1}, {"c", 1}}), (std::vector<std::int64_t>{3, 2, 2}));
}

TEST(TracePolicies, TheRealAlibabaInventoryPassesTheLoaderAndValidator) {
  // GPUs per model from the node list, counted here: model -> (GPUs, most on one node).
  Diagnostics d;
  TraceErrors errors("gpu_node.csv", d, 10);
  const auto nodes = read_csv(trace_file("alibaba-gpu-v2023/openb_node_list_gpu_node.csv"), errors);
  ASSERT_TRUE(nodes && errors.count() == 0) << messages(d);
  ASSERT_EQ(nodes->header, (std::vector<std::string>{"sn", "cpu_milli", "memory_mib", "gpu", "model"}));
  std::map<std::string, std::pair<std::int64_t, std::int64_t>> models;
  for (const auto& row : nodes->rows) {
    const auto gpus = parse_int64(row.fields[3]).value();
    auto& m = models[row.fields[4]];
    m.first += gpus;
    m.second = std::max(m.second, gpus);
  }
  EXPECT_EQ(nodes->rows.size(), 1213u);
  EXPECT_EQ(models.size(), 7u);
  EXPECT_EQ(models.at("G2").first, 4392);
  EXPECT_EQ(models.at("T4").first, 842);
  std::int64_t all = 0;
  for (const auto& m : models) all += m.second.first;
  EXPECT_EQ(all, 6212);
  std::vector<PoolInventory> pools;
  for (const auto& m : models) pools.push_back({alibaba_pool_for_model(m.first), m.first, m.second.first, m.second.second});
  // The shared pool's GPUs: what the shared pods ask for at once, rounded up.
  std::int64_t shared_milli = 0;
  for (const auto& p : default_pods()) shared_milli += p.num_gpu == 1 && p.gpu_milli < 1000 ? p.gpu_milli : 0;
  pools.push_back({"alibaba-shared", "T4", (shared_milli + 999) / 1000, 8, true});

  const std::vector<GroupWeight> groups{{"search", 5}, {"ads", 3}, {"research", 2}};
  for (const bool reclaim : {false, true}) {
    TracePolicyOptions options;
    options.reclaim = reclaim;
    const auto yaml = trace_policy_yaml(pools, groups, options);
    ASSERT_TRUE(yaml.ok()) << yaml.error();
    std::vector<doc::Document> docs;
    Diagnostics read;
    doc::read_yaml(*yaml, "trace-policies.yaml", docs, read);
    ASSERT_TRUE(read.empty()) << messages(read);
    ASSERT_EQ(docs.size(), 1u + 8u * 3u);  // guardrails + a quota per (group, pool)
    policy::PolicySet set;
    for (const auto& doc : docs) set.add(doc.root, doc.file, doc.index);
    const auto findings = policy::check_all(set);
    EXPECT_FALSE(has_errors(findings)) << messages(findings) << *yaml;
    ASSERT_NE(set.guardrails_spec(), nullptr);
    const auto& g = *set.guardrails_spec();
    ASSERT_EQ(g.pools.size(), 8u);
    EXPECT_EQ(g.find_pool("alibaba-g2")->capacity, 4392);
    EXPECT_EQ(g.find_pool("alibaba-g2")->gpus_per_node, 8);
    EXPECT_EQ(g.find_pool("alibaba-g2")->node_labels.at("platform.gpubank.dev/pool"), "alibaba-g2");
    EXPECT_EQ(g.find_pool("alibaba-shared")->sharing, policy::Sharing::Shared);
    EXPECT_EQ(g.find_group("ads")->namespaces, (std::vector<std::string>{"ads"}));
    const auto* q = set.find(policy::Kind::GPUQuotaPolicy, "search-alibaba-g2");
    ASSERT_NE(q, nullptr);
    EXPECT_EQ(q->as<policy::GPUQuotaPolicySpec>().guaranteed, 2197);
    EXPECT_EQ(q->as<policy::GPUQuotaPolicySpec>().effective_max_capacity(), 4392);
    EXPECT_EQ(q->as<policy::GPUQuotaPolicySpec>().reclaim_policy.has_value(), reclaim);
  }
}

TEST(TracePolicies, BadInventoriesAreRefused) {
  const std::vector<GroupWeight> groups{{"a", 1}};
  EXPECT_FALSE(trace_policy_yaml({}, groups).ok());
  EXPECT_FALSE(trace_policy_yaml({{"p", "G2", 8, 8, false}}, {}).ok());
  EXPECT_FALSE(trace_policy_yaml({{"P", "G2", 8, 8, false}}, groups).ok());
  EXPECT_FALSE(trace_policy_yaml({{"p", "G 2", 8, 8, false}}, groups).ok());
  EXPECT_FALSE(trace_policy_yaml({{"p", "G2", -1, 8, false}}, groups).ok());
  EXPECT_FALSE(trace_policy_yaml({{"p", "G2", 8, 0, false}}, groups).ok());
  EXPECT_FALSE(trace_policy_yaml({{"p", "G2", 8, 8, false}, {"p", "T4", 8, 8, false}}, groups).ok());
  EXPECT_FALSE(trace_policy_yaml({{"p", "G2", 8, 8, false}}, {{"a", 0}}).ok());
  // A quota name above 63 characters is cut and hashed.
  const auto long_names = trace_policy_yaml({{std::string(40, 'p'), "G2", 8, 8, false}}, {{std::string(40, 'g'), 1}});
  ASSERT_TRUE(long_names.ok());
  std::vector<doc::Document> docs;
  Diagnostics d;
  doc::read_yaml(*long_names, "x.yaml", docs, d);
  policy::PolicySet set;
  for (const auto& doc : docs) set.add(doc.root, doc.file, doc.index);
  EXPECT_FALSE(has_errors(policy::check_all(set))) << messages(policy::check_all(set));
}

}  // namespace
}  // namespace gpubank::twin::trace
