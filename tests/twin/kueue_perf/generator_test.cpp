// The generator config reader and its expansion, against upstream's generator.go
// (names, quotas, preemption, creation schedule) and the two shipped configs.
#include <map>
#include <set>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "support/paths.hpp"
#include "twin/kueue_perf/config.hpp"
#include "twin/kueue_perf/scenario.hpp"

namespace gpubank::twin::kueue_perf {
namespace {

using ::testing::HasSubstr;

struct Parsed {
  std::optional<GeneratorConfig> config;
  Diagnostics findings;
  [[nodiscard]] std::string text() const {
    std::string out;
    for (const auto& d : findings) out += d.to_string() + "\n";
    return out;
  }
};

Parsed parse(std::string_view yaml, const ConfigLimits& limits = {}) {
  Parsed p;
  p.config = parse_generator_config(yaml, "gen.yaml", p.findings, limits);
  return p;
}

// One cohort set, one queue set, one workload set; `extra` lines are spliced in at the
// given level so each test changes one thing.
std::string config(const std::string& cohort_extra = "", const std::string& queue_extra = "",
                   const std::string& set_extra = "", const std::string& template_extra = "") {
  return "cohorts:\n"
         "- className: cohort\n"
         "  count: 2\n" +
         cohort_extra +
         "  queuesSets:\n"
         "  - className: cq\n"
         "    count: 3\n"
         "    nominalQuota: 20\n"
         "    borrowingLimit: 100\n"
         "    reclaimWithinCohort: Any\n"
         "    withinClusterQueue: LowerPriority\n" +
         queue_extra +
         "    workloadsSets:\n"
         "    - count: 4\n"
         "      creationIntervalMs: 100\n" +
         set_extra +
         "      workloads:\n"
         "      - className: small\n"
         "        runtimeMs: 200\n"
         "        priority: 50\n"
         "        request: 1\n" +
         template_extra +
         "      - className: medium\n"
         "        runtimeMs: 500\n"
         "        priority: 100\n"
         "        request: \"2500m\"\n";
}

TEST(KueuePerfConfig, DecodesUpstreamFields) {
  const Parsed p = parse(config());
  ASSERT_TRUE(p.config) << p.text();
  EXPECT_TRUE(p.findings.empty()) << p.text();
  const GeneratorConfig& c = *p.config;
  EXPECT_EQ(c.resource_flavor.name, "rf");
  ASSERT_EQ(c.cohorts.size(), 1u);
  EXPECT_EQ(c.cohorts[0].class_name, "cohort");
  EXPECT_EQ(c.cohorts[0].count, 2);
  const QueuesSet& qs = c.cohorts[0].queues_sets.at(0);
  EXPECT_EQ(qs.nominal_quota.milli_value(), 20000);
  ASSERT_TRUE(qs.borrowing_limit);
  EXPECT_EQ(qs.borrowing_limit->milli_value(), 100000);
  EXPECT_EQ(qs.reclaim_within_cohort, PreemptionPolicy::Any);
  EXPECT_EQ(qs.within_cluster_queue, PreemptionPolicy::LowerPriority);
  const WorkloadsSet& ws = qs.workloads_sets.at(0);
  EXPECT_EQ(ws.count, 4);
  EXPECT_EQ(ws.creation_interval_ms, 100);
  ASSERT_EQ(ws.workloads.size(), 2u);
  EXPECT_EQ(ws.workloads[0].class_name, "small");
  EXPECT_EQ(ws.workloads[0].runtime_ms, 200);
  EXPECT_EQ(ws.workloads[0].priority, 50);
  EXPECT_EQ(ws.workloads[0].request.milli_value(), 1000);
  EXPECT_EQ(ws.workloads[1].request.milli_value(), 2500);
}

TEST(KueuePerfConfig, OptionalFieldsDefaultLikeKueue) {
  const Parsed p = parse(
      "cohorts:\n"
      "- className: c\n"
      "  count: 1\n"
      "  queuesSets:\n"
      "  - className: q\n"
      "    count: 1\n"
      "    nominalQuota: \"1.5\"\n"
      "    workloadsSets:\n"
      "    - count: 1\n"
      "      workloads:\n"
      "      - className: w\n"
      "        request: 500m\n"
      "        podCount: 4\n");
  ASSERT_TRUE(p.config) << p.text();
  // Upstream reads podCount only for TAS workloads.
  EXPECT_THAT(p.text(), HasSubstr("gen.yaml:13:19: warning: cohorts[0].queuesSets[0].workloadsSets[0].workloads[0]."
                                  "podCount: podCount 4 is ignored without tasLevel, as upstream's generator does: "
                                  "the workload has one pod [kueue-perf.ignored]"));
  const QueuesSet& qs = p.config->cohorts[0].queues_sets[0];
  EXPECT_EQ(qs.nominal_quota.milli_value(), 1500);
  EXPECT_FALSE(qs.borrowing_limit);  // upstream: an empty string, no limit
  EXPECT_EQ(qs.reclaim_within_cohort, PreemptionPolicy::Never);
  EXPECT_EQ(qs.within_cluster_queue, PreemptionPolicy::Never);
  const WorkloadTemplate& t = qs.workloads_sets[0].workloads[0];
  EXPECT_EQ(t.runtime_ms, 0);
  EXPECT_EQ(t.priority, 0);
  EXPECT_EQ(t.request.milli_value(), 500);
  EXPECT_EQ(qs.workloads_sets[0].creation_interval_ms, 0);
}

TEST(KueuePerfConfig, UnknownFieldIsPositionedWithAHint) {
  const Parsed p = parse(config("", "    nominalQuotaa: 3\n"));
  EXPECT_FALSE(p.config);
  EXPECT_THAT(p.text(), HasSubstr("gen.yaml:11:5: error: cohorts[0].queuesSets[0].nominalQuotaa: unknown field "
                                  "\"nominalQuotaa\"; did you mean \"nominalQuota\"? [schema.unknown-field]"));
}

TEST(KueuePerfConfig, WrongTypeIsPositioned) {
  std::string yaml = config();
  yaml.replace(yaml.find("runtimeMs: 200"), 14, "runtimeMs: soon");
  const Parsed p = parse(yaml);
  EXPECT_FALSE(p.config);
  EXPECT_THAT(p.text(), HasSubstr("gen.yaml:16:20: error: cohorts[0].queuesSets[0].workloadsSets[0].workloads[0]."
                                  "runtimeMs: expected an integer, got a string \"soon\" [schema.wrong-type]"));
}

TEST(KueuePerfConfig, NegativeCountsAreRejected) {
  const std::string yaml = config();
  std::string negative = yaml;
  negative.replace(negative.find("count: 4"), 8, "count: -4");
  const Parsed p = parse(negative);
  EXPECT_FALSE(p.config);
  EXPECT_THAT(p.text(), HasSubstr("gen.yaml:12:14: error: cohorts[0].queuesSets[0].workloadsSets[0].count: must be "
                                  "at least 0, got -4 [schema.out-of-range]"));
}

TEST(KueuePerfConfig, NegativeAndMalformedQuantitiesAreRejected) {
  std::string yaml = config();
  yaml.replace(yaml.find("request: 1\n"), 11, "request: -1\n");
  yaml.replace(yaml.find("\"2500m\""), 7, "\"2.5x\"");
  const Parsed p = parse(yaml);
  EXPECT_FALSE(p.config);
  EXPECT_THAT(p.text(), HasSubstr("workloads[1].request: quantity \"2.5x\""));
  EXPECT_THAT(p.text(), HasSubstr("[schema.invalid-format]"));
}

TEST(KueuePerfConfig, NegativeRequestIsRejectedWithPosition) {
  std::string yaml = config();
  yaml.replace(yaml.find("request: 1\n"), 11, "request: -1\n");
  const Parsed p = parse(yaml);
  EXPECT_FALSE(p.config);
  EXPECT_THAT(p.text(), HasSubstr("gen.yaml:18:18: error: cohorts[0].queuesSets[0].workloadsSets[0].workloads[0]."
                                  "request: must not be negative, got -1 [schema.out-of-range]"));
}

TEST(KueuePerfConfig, UnknownPreemptionPolicy) {
  std::string yaml = config();
  yaml.replace(yaml.find("reclaimWithinCohort: Any"), 24, "reclaimWithinCohort: Sometimes");
  const Parsed p = parse(yaml);
  EXPECT_FALSE(p.config);
  EXPECT_THAT(p.text(), HasSubstr("gen.yaml:9:26: error: cohorts[0].queuesSets[0].reclaimWithinCohort: unsupported "
                                  "value \"Sometimes\": must be one of \"Never\", \"LowerPriority\", "
                                  "\"LowerOrNewerEqualPriority\" or \"Any\" [schema.invalid-enum]"));
}

TEST(KueuePerfConfig, TooManyWorkloadsNamesTheSet) {
  std::string yaml = config();
  yaml.replace(yaml.find("count: 4"), 8, "count: 2000000");
  const Parsed p = parse(yaml);  // 2 cohorts x 3 queues x 2,000,000 rounds x 2 templates
  EXPECT_FALSE(p.config);
  EXPECT_THAT(p.text(), HasSubstr("gen.yaml:12:14: error: cohorts[0].queuesSets[0].workloadsSets[0].count: the "
                                  "config would create 24000000 workloads (this set: 2000000 rounds x 2 templates "
                                  "x 3 queues x 2 cohorts); the limit is 10000000 [kueue-perf.too-large]"));
}

TEST(KueuePerfConfig, TooManyQueuesNamesTheSet) {
  std::string yaml = config();
  yaml.replace(yaml.find("count: 3"), 8, "count: 60000");
  const Parsed p = parse(yaml);
  EXPECT_FALSE(p.config);
  EXPECT_THAT(p.text(), HasSubstr("gen.yaml:6:12: error: cohorts[0].queuesSets[0].count: the config would create "
                                  "120000 ClusterQueues (this set: 60000 queues x 2 cohorts); the limit is 100000 "
                                  "[kueue-perf.too-large]"));
}

TEST(KueuePerfConfig, TooManyCohortsWithoutQueuesIsAFindingNotALongLoop) {
  // Found by the fuzzer: a cohort set of 2^63 cohorts and no queues passed every limit and
  // expansion walked every cohort.
  const Parsed p = parse("cohorts:\n  - className: c\n    count: 9223372036854775805\n");
  EXPECT_FALSE(p.config);
  EXPECT_THAT(p.text(), HasSubstr("cohorts[0].count: the config would create 9223372036854775805 cohorts in this set; "
                                  "the limit is 100000 (each cohort needs a ClusterQueue) [kueue-perf.too-large]"));
}

TEST(KueuePerfConfig, LimitsAreConfigurable) {
  ConfigLimits limits;
  limits.max_workloads = 47;
  EXPECT_FALSE(parse(config(), limits).config);  // 2 x 3 x 4 x 2 = 48
  limits.max_workloads = 48;
  EXPECT_TRUE(parse(config(), limits).config);
}

TEST(KueuePerfConfig, HugeTimesAndRequestsAreRejected) {
  std::string yaml = config();
  yaml.replace(yaml.find("runtimeMs: 200"), 14, "runtimeMs: 9000000000");
  yaml.replace(yaml.find("\"2500m\""), 7, "2000000");
  const Parsed p = parse(yaml);
  EXPECT_FALSE(p.config);
  EXPECT_THAT(p.text(), HasSubstr("workloads[0].runtimeMs: must be at most 1000000000 ms, got 9000000000"));
  EXPECT_THAT(p.text(), HasSubstr("workloads[1].request: a workload may request at most 1000000 cpus, got 2M"));
}

TEST(KueuePerfConfig, TasFieldsAreUnsupported) {
  const Parsed p = parse("topology:\n  name: t\n" + config("", "", "", "        tasLevel: rack\n"));
  EXPECT_FALSE(p.config);
  EXPECT_THAT(p.text(), HasSubstr("gen.yaml:2:3: error: topology: \"topology\" is part of Kueue's Topology Aware "
                                  "Scheduling tests, which the twin does not model [kueue-perf.unsupported]"));
  EXPECT_THAT(p.text(), HasSubstr("workloads[0].tasLevel: \"tasLevel\" is part of"));
}

TEST(KueuePerfConfig, ResourceFlavorName) {
  const Parsed p = parse("resourceFlavor:\n  name: default\n" + config());
  ASSERT_TRUE(p.config) << p.text();
  EXPECT_EQ(p.config->resource_flavor.name, "default");
}

TEST(KueuePerfConfig, EmptyConfigs) {
  EXPECT_THAT(parse("cohorts: []\n").text(),
              HasSubstr("gen.yaml:1:10: error: cohorts: config must contain at least one cohort [schema.required]"));
  EXPECT_THAT(parse("").text(), HasSubstr("the file holds no generator config"));
  EXPECT_THAT(parse(config() + "---\n" + config()).text(), HasSubstr("found 2 YAML documents"));
  EXPECT_THAT(parse("cohorts: {}\n").text(), HasSubstr("cohorts: expected a list, got an object"));
}

TEST(KueuePerfConfig, ClassNamesMustMakeValidObjectNames) {
  std::string yaml = config();
  yaml.replace(yaml.find("className: cq"), 13, "className: CQ_1");
  EXPECT_THAT(parse(yaml).text(), HasSubstr("queuesSets[0].className: \"CQ_1\" is not a DNS-1123 label"));

  yaml = config();
  const std::string long_class(51, 'q');
  yaml.replace(yaml.find("className: cq"), 13, "className: " + long_class);
  EXPECT_THAT(parse(yaml).text(), HasSubstr("gen.yaml:5:16: error: cohorts[0].queuesSets[0].className: generated "
                                            "ClusterQueue name \"" + long_class +
                                                "-0-0-cohort-0\" is longer than 63 characters"));
}

TEST(KueuePerfConfig, SetsThatGenerateTheSameQueuesAreRejected) {
  const std::string cohort =
      "- className: team\n"
      "  count: 1\n"
      "  queuesSets:\n"
      "  - className: cq\n"
      "    count: 1\n"
      "    nominalQuota: 1\n";
  const Parsed p = parse("cohorts:\n" + cohort + cohort);
  EXPECT_FALSE(p.config);
  EXPECT_THAT(p.text(), HasSubstr("gen.yaml:11:16: error: cohorts[1].queuesSets[0].className: generates ClusterQueue "
                                  "\"cq-0-0-team-0\", which cohorts[0].queuesSets[0] generates too "
                                  "[kueue-perf.duplicate-name]"));
}

TEST(KueuePerfConfig, MissingFileIsAFinding) {
  Diagnostics findings;
  EXPECT_FALSE(load_generator_config("/nonexistent/gen.yaml", findings));
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].rule, "input.unreadable");
}

TEST(KueuePerfNames, MatchGeneratorGo) {
  EXPECT_EQ(cohort_name("cohort", 4), "cohort-4");
  EXPECT_EQ(cluster_queue_name("cq", 0, 5, "cohort-4"), "cq-0-5-cohort-4");
  EXPECT_EQ(workload_name("medium", 1, 99, 0), "medium-1-99-0");
}

TEST(KueuePerfScenario, ExpandsLikeGeneratorGo) {
  Parsed p = parse(config());
  ASSERT_TRUE(p.config) << p.text();
  const Scenario s = expand(std::move(*p.config));
  ASSERT_EQ(s.flavors.size(), 1u);
  EXPECT_EQ(s.flavors[0].name, "rf");
  ASSERT_EQ(s.queue_specs.size(), 6u);
  const std::vector<std::string> names{"cq-0-0-cohort-0", "cq-0-1-cohort-0", "cq-0-2-cohort-0",
                                       "cq-0-0-cohort-1", "cq-0-1-cohort-1", "cq-0-2-cohort-1"};
  for (std::size_t i = 0; i < names.size(); ++i) {
    EXPECT_EQ(s.queue_specs[i].name, names[i]);
    EXPECT_EQ(s.queues[i].name, names[i]);
    EXPECT_EQ(s.queues[i].class_name, "cq");
  }
  const ClusterQueueSpec& q = s.queue_specs[4];
  EXPECT_EQ(q.cohort, "cohort-1");
  ASSERT_EQ(q.resource_groups.size(), 1u);
  EXPECT_EQ(q.resource_groups[0].covered_resources, std::vector<std::string>{"cpu"});
  ASSERT_EQ(q.resource_groups[0].flavors.size(), 1u);
  EXPECT_EQ(q.resource_groups[0].flavors[0].flavor, "rf");
  const ResourceQuota& quota = q.resource_groups[0].flavors[0].resources.at(0);
  EXPECT_EQ(quota.resource, "cpu");
  EXPECT_EQ(quota.nominal, 20000);
  EXPECT_EQ(quota.borrowing_limit, std::optional<Amount>(100000));
  EXPECT_FALSE(quota.lending_limit);
  EXPECT_EQ(q.preemption.reclaim_within_cohort, PreemptionPolicy::Any);
  EXPECT_EQ(q.preemption.within_cluster_queue, PreemptionPolicy::LowerPriority);
  EXPECT_EQ(q.preemption.borrow_within_cohort, BorrowWithinCohortPolicy::Never);

  ASSERT_EQ(s.streams.size(), 6u);
  EXPECT_EQ(s.total_workloads, 48);
  EXPECT_EQ(s.workload_classes, (std::vector<std::string>{"medium", "small"}));
  EXPECT_EQ(s.queue_classes, std::vector<std::string>{"cq"});

  // Each round creates the templates in order, one every creationIntervalMs, the first
  // after one interval.
  const CreationStream& stream = s.streams[4];
  EXPECT_EQ(stream.size(), 8);
  const std::vector<std::string> expected{"small-0-0-0",  "medium-0-0-1", "small-0-1-0",  "medium-0-1-1",
                                          "small-0-2-0",  "medium-0-2-1", "small-0-3-0",  "medium-0-3-1"};
  for (std::int64_t n = 0; n < stream.size(); ++n) {
    EXPECT_EQ(stream.creation_time(n), 100 * (n + 1));
    const WorkloadSpec w = make_workload(s, stream, n, stream.creation_time(n), "uid");
    EXPECT_EQ(w.name, expected[static_cast<std::size_t>(n)]);
    EXPECT_EQ(w.ns, "cq-0-1-cohort-1");
    EXPECT_EQ(w.cluster_queue, "cq-0-1-cohort-1");
    EXPECT_EQ(w.creation, 100 * (n + 1));
    ASSERT_EQ(w.pod_sets.size(), 1u);
    EXPECT_EQ(w.pod_sets[0].name, "main");
    EXPECT_EQ(w.pod_sets[0].count, 1);
    EXPECT_EQ(w.priority, n % 2 == 0 ? 50 : 100);
    EXPECT_EQ(w.pod_sets[0].requests,
              (std::vector<std::pair<std::string, Amount>>{{"cpu", n % 2 == 0 ? 1000 : 2500}}));
  }
}

struct ShippedConfig {
  const char* file;
  std::size_t queues;
  std::int64_t workloads;
  std::int64_t small, medium, large;           // workloads per class
  VirtualTime last_small, last_medium, last_large;  // last creation per stream
  const char* last_queue;
};

class KueuePerfShipped : public ::testing::TestWithParam<ShippedConfig> {};

TEST_P(KueuePerfShipped, ExpandsToUpstreamsCounts) {
  const ShippedConfig& want = GetParam();
  Diagnostics findings;
  auto config = load_generator_config(gpubank::testing::shared_dir() + "/kueue-perf/" + want.file, findings);
  ASSERT_TRUE(config) << (findings.empty() ? "" : findings[0].to_string());
  const Scenario s = expand(std::move(*config));
  EXPECT_EQ(s.queues.size(), want.queues);
  EXPECT_EQ(s.total_workloads, want.workloads);
  EXPECT_EQ(s.streams.size(), 3 * want.queues);
  EXPECT_EQ(s.queues.front().name, "cq-0-0-cohort-0");
  EXPECT_EQ(s.queues.back().name, want.last_queue);
  EXPECT_EQ(s.workload_classes, (std::vector<std::string>{"large", "medium", "small"}));

  std::map<std::string, std::int64_t> per_class;
  std::map<std::string, VirtualTime> last;
  std::set<std::string> cohorts;
  for (const auto& q : s.queues) cohorts.insert(q.cohort);
  for (const auto& stream : s.streams) {
    for (std::int64_t n = 0; n < stream.size(); ++n) {
      const std::string& cls = workload_template(stream, n).class_name;
      ++per_class[cls];
      last[cls] = std::max(last[cls], stream.creation_time(n));
    }
  }
  EXPECT_EQ(per_class["small"], want.small);
  EXPECT_EQ(per_class["medium"], want.medium);
  EXPECT_EQ(per_class["large"], want.large);
  EXPECT_EQ(last["small"], want.last_small);
  EXPECT_EQ(last["medium"], want.last_medium);
  EXPECT_EQ(last["large"], want.last_large);
  EXPECT_EQ(cohorts.size(), want.queues / (want.queues == 30 ? 6 : 100));
  for (const auto& q : s.queue_specs) {
    const ResourceQuota& quota = q.resource_groups.at(0).flavors.at(0).resources.at(0);
    EXPECT_EQ(quota.nominal, 20000);
    EXPECT_EQ(quota.borrowing_limit, std::optional<Amount>(100000));
  }
}

INSTANTIATE_TEST_SUITE_P(
    Configs, KueuePerfShipped,
    ::testing::Values(ShippedConfig{"baseline-generator.yaml", 30, 15000, 10500, 3000, 1500, 35000, 50000, 60000,
                                    "cq-0-5-cohort-4"},
                      ShippedConfig{"large-scale-generator.yaml", 1000, 50000, 35000, 11000, 4000, 2100, 3300, 2800,
                                    "cq-0-99-cohort-9"}),
    [](const auto& param_info) { return std::string(param_info.param.file[0] == 'b' ? "baseline" : "large_scale"); });

}  // namespace
}  // namespace gpubank::twin::kueue_perf
