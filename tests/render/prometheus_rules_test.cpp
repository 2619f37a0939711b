#include "render/prometheus_rules.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "document/yaml_writer.hpp"
#include "policy/policy_set.hpp"
#include "policy/validate.hpp"
#include "render/grafana.hpp"
#include "support/paths.hpp"
#include "render/promtool/promtool.hpp"

namespace gpubank::render {
namespace {

namespace fs = std::filesystem;
using namespace gpubank::testing;  // promtool.hpp

const fs::path& promtool_dir() {
  static const fs::path dir = fs::path(gpubank::testing::source_dir()) / "tests/render/promtool";
  return dir;
}

const RenderedObject& object_named(const std::vector<RenderedObject>& objects, std::string_view name) {
  for (const auto& o : objects) {
    if (o.manifest["metadata"]["name"] == name) return o;
  }
  throw std::runtime_error("no PrometheusRule " + std::string(name));
}

std::vector<std::string> source_refs(const RenderedObject& o) {
  std::vector<std::string> refs;
  for (const auto* p : o.sources) refs.push_back(p->ref());
  return refs;
}

// Every rule of every object: (object name, rule).
std::vector<std::pair<std::string, Json>> all_rules(const std::vector<RenderedObject>& objects) {
  std::vector<std::pair<std::string, Json>> out;
  for (const auto& o : objects) {
    for (const auto& g : o.manifest["spec"]["groups"]) {
      for (const auto& r : g["rules"]) out.emplace_back(o.manifest["metadata"]["name"].get<std::string>(), r);
    }
  }
  return out;
}

std::string rule_name(const Json& rule) {
  return rule.contains("record") ? rule["record"].get<std::string>() : rule["alert"].get<std::string>();
}

// The committed promtool test of a rule: tests/render/promtool/<name, ':' as '_'>.yaml.
fs::path test_file_of(const std::string& rule) {
  std::string stem = rule;
  std::replace(stem.begin(), stem.end(), ':', '_');
  return promtool_dir() / (stem + ".yaml");
}

TEST(PrometheusRules, ExamplesAreValid) { ASSERT_TRUE(policy::check_all(example_policies()).empty()); }

TEST(PrometheusRules, OneObjectForThePlatformEachGroupEachServiceAndEachLowUtilizationPolicy) {
  const auto objects = render_prometheus_rules(example_policies());
  std::vector<std::string> paths;
  for (const auto& o : objects) {
    paths.push_back(o.path);
    EXPECT_EQ(o.manifest["apiVersion"], "monitoring.coreos.com/v1");
    EXPECT_EQ(o.manifest["kind"], "PrometheusRule");
    EXPECT_EQ(o.manifest["metadata"]["namespace"], kMonitoringNamespace);
    EXPECT_EQ(o.manifest["metadata"]["labels"]["app.kubernetes.io/managed-by"], "gpubank");
    EXPECT_EQ(o.path, "monitoring/prometheusrule-" + o.manifest["metadata"]["name"].get<std::string>() + ".yaml");
  }
  EXPECT_EQ(paths, (std::vector<std::string>{
                       "monitoring/prometheusrule-gpubank-group-ads.yaml",
                       "monitoring/prometheusrule-gpubank-group-customer-service.yaml",
                       "monitoring/prometheusrule-gpubank-group-research.yaml",
                       "monitoring/prometheusrule-gpubank-group-search.yaml",
                       "monitoring/prometheusrule-gpubank-inference-customer-service-embeddings.yaml",
                       "monitoring/prometheusrule-gpubank-inference-customer-service-llm.yaml",
                       "monitoring/prometheusrule-gpubank-lowutil-notebooks-idle.yaml",
                       "monitoring/prometheusrule-gpubank-lowutil-training-default.yaml",
                       "monitoring/prometheusrule-gpubank-platform.yaml",
                   }));
}

TEST(PrometheusRules, SourcesAreThePoliciesThatFeedEachObject) {
  const auto objects = render_prometheus_rules(example_policies());
  EXPECT_EQ(source_refs(object_named(objects, "gpubank-platform")),
            (std::vector<std::string>{"PlatformGuardrails/platform"}));
  EXPECT_EQ(source_refs(object_named(objects, "gpubank-group-search")),
            (std::vector<std::string>{"PlatformGuardrails/platform", "GPUQuotaPolicy/search-borrow-h100-inference",
                                      "GPUQuotaPolicy/search-team-h100", "GPUQuotaPolicy/search-dev-mig"}));
  // The llm's quota sets its own reclaim grace period; the embeddings' quota does not, so
  // the guardrails' maxGracePeriod applies.
  EXPECT_EQ(source_refs(object_named(objects, "gpubank-inference-customer-service-llm")),
            (std::vector<std::string>{"InferenceScalingPolicy/customer-service-llm",
                                      "GPUQuotaPolicy/customer-service-inference-h100"}));
  EXPECT_EQ(source_refs(object_named(objects, "gpubank-inference-customer-service-embeddings")),
            (std::vector<std::string>{"InferenceScalingPolicy/customer-service-embeddings",
                                      "GPUQuotaPolicy/customer-service-l40s", "PlatformGuardrails/platform"}));
  EXPECT_EQ(source_refs(object_named(objects, "gpubank-lowutil-training-default")),
            (std::vector<std::string>{"LowUtilizationPolicy/training-default"}));
  const auto& annotations = object_named(objects, "gpubank-platform").manifest["metadata"]["annotations"];
  EXPECT_EQ(annotations[std::string(kAnnotationSource)], "PlatformGuardrails/platform");
  EXPECT_EQ(annotations[std::string(kAnnotationSourceHash)].get<std::string>().size(), 64U);
}

TEST(PrometheusRules, PromtoolCheckRulesPassesOnEveryObject) {
  const auto promtool = find_promtool();
  ASSERT_TRUE(promtool.has_value()) << kPromtoolMissing;
  const auto objects = render_prometheus_rules(example_policies());
  ScratchDir dir;
  for (const fs::path& file : write_rule_files(objects, dir.path())) {
    const auto r = run_in(dir.path(), promtool->string() + " check rules " + file.filename().string());
    EXPECT_EQ(r.status, 0) << file.filename() << ":\n" << r.output;
  }
}

TEST(PrometheusRules, PromtoolCheckRulesRejectsABrokenExpression) {
  // The check above can fail: promtool finds a broken expression in a rendered object.
  const auto promtool = find_promtool();
  ASSERT_TRUE(promtool.has_value()) << kPromtoolMissing;
  auto objects = render_prometheus_rules(example_policies());
  Json& rule = objects.front().manifest["spec"]["groups"][0]["rules"][0];
  rule["expr"] = rule["expr"].get<std::string>() + " +";
  ScratchDir dir;
  const auto files = write_rule_files({objects.front()}, dir.path());
  const auto r = run_in(dir.path(), promtool->string() + " check rules " + files.front().filename().string());
  EXPECT_NE(r.status, 0) << r.output;
}

TEST(PrometheusRules, EveryRuleHasAPromtoolTestThatExercisesIt) {
  std::set<std::string> names;
  for (const auto& [object, rule] : all_rules(render_prometheus_rules(example_policies()))) names.insert(rule_name(rule));
  for (const std::string& name : names) {
    const fs::path file = test_file_of(name);
    ASSERT_TRUE(fs::exists(file)) << "no promtool test for " << name << " (expected " << file << ")";
    const std::string text = read_file(file);
    const bool is_alert = name.find(':') == std::string::npos;
    if (is_alert) {
      EXPECT_NE(text.find("alertname: " + name + "\n"), std::string::npos) << file << " never evaluates " << name;
      // At least one evaluation where it must not fire.
      EXPECT_NE(text.find("exp_alerts: []"), std::string::npos) << file << " has no case where " << name
                                                                << " stays silent";
    } else {
      EXPECT_NE(text.find("expr: " + name), std::string::npos) << file << " never queries " << name;
    }
  }
}

TEST(PrometheusRules, AlertsCarrySeverityOwnerSummaryDescriptionAndARunbookSection) {
  const std::string docs = read_file(fs::path(gpubank::testing::source_dir()) / "docs/render-monitoring.md");
  for (const auto& [object, rule] : all_rules(render_prometheus_rules(example_policies()))) {
    if (!rule.contains("alert")) continue;
    const std::string name = rule["alert"];
    const std::string severity = rule["labels"]["severity"];
    EXPECT_TRUE(severity == "critical" || severity == "warning" || severity == "info") << object << " " << name;
    EXPECT_FALSE(rule["labels"]["owner"].get<std::string>().empty()) << object << " " << name;
    EXPECT_FALSE(rule["annotations"]["summary"].get<std::string>().empty()) << name;
    EXPECT_FALSE(rule["annotations"]["description"].get<std::string>().empty()) << name;
    const std::string url = rule["annotations"]["runbook_url"];
    const std::string anchor = url.substr(url.find('#') + 1);
    std::string lower = name;
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
    EXPECT_EQ(anchor, lower);
    EXPECT_NE(docs.find("\n### " + name + "\n"), std::string::npos) << "docs/render-monitoring.md has no runbook "
                                                                    << "section for " << name;
  }
}

TEST(PrometheusRules, RecordingRulesAreNamedLevelMetricOperations) {
  const std::regex convention("[a-z_]+:[a-z0-9_]+:[a-z0-9_]+");
  for (const auto& [object, rule] : all_rules(render_prometheus_rules(example_policies()))) {
    if (rule.contains("record")) {
      EXPECT_TRUE(std::regex_match(rule["record"].get<std::string>(), convention)) << rule;
    }
  }
}

std::map<std::string, std::string> texts(const std::vector<RenderedObject>& objects) {
  std::map<std::string, std::string> out;
  for (const auto& o : objects) out[o.path] = doc::to_yaml(o.manifest);
  return out;
}

TEST(PrometheusRules, RenderingTwiceGivesTheSameBytes) {
  EXPECT_EQ(texts(render_prometheus_rules(example_policies())), texts(render_prometheus_rules(example_policies())));
}

// The set with one InferenceScalingPolicy's TTFT target changed.
policy::PolicySet with_ttft(const std::string& policy_name, std::chrono::milliseconds target) {
  policy::PolicySet set = example_policies().policies_only();
  policy::PolicyObject changed = *set.find(policy::Kind::InferenceScalingPolicy, policy_name);
  std::get<policy::InferenceScalingPolicySpec>(changed.spec).scale_up.ttft_p95 = Duration(target);
  set.upsert(std::move(changed));
  return set;
}

TEST(PrometheusRules, ChangingOneTtftTargetChangesOnlyThatServicesObject) {
  const auto before = texts(render_prometheus_rules(example_policies()));
  const auto after = texts(render_prometheus_rules(with_ttft("customer-service-llm", std::chrono::milliseconds(800))));
  ASSERT_EQ(before.size(), after.size());
  std::vector<std::string> changed;
  for (const auto& [path, text] : before) {
    if (after.at(path) != text) changed.push_back(path);
  }
  EXPECT_EQ(changed, (std::vector<std::string>{"monitoring/prometheusrule-gpubank-inference-customer-service-llm.yaml"}));
  // The dashboards read targets from the rules, so they do not change either.
  std::map<std::string, std::string> dashboards_before, dashboards_after;
  for (const auto& o : render_grafana_dashboards(example_policies())) dashboards_before[o.path] = o.manifest.dump();
  for (const auto& o : render_grafana_dashboards(with_ttft("customer-service-llm", std::chrono::milliseconds(800)))) {
    dashboards_after[o.path] = o.manifest.dump();
  }
  EXPECT_EQ(dashboards_before, dashboards_after);
}

std::string rule_expr(const std::vector<RenderedObject>& objects, std::string_view object, std::string_view name) {
  for (const auto& [o, rule] : all_rules(objects)) {
    if (o == object && rule_name(rule) == name) return rule["expr"];
  }
  return {};
}

TEST(PrometheusRules, TtftTargetsBetweenBucketsAreInterpolatedAndTargetsOnABucketAreNot) {
  // 1.5 s lies between vLLM's 1.0 and 2.5 buckets; 2.5 s is a bucket.
  const std::string between = rule_expr(render_prometheus_rules(example_policies()), "gpubank-inference-customer-service-llm",
                                        "namespace_workload:gpubank_ttft_slo_errors:ratio_rate1h");
  EXPECT_NE(between.find("le=\"1.0\""), std::string::npos) << between;
  EXPECT_NE(between.find("le=\"2.5\""), std::string::npos) << between;
  EXPECT_NE(between.find("(1.5 - 1.0) / (2.5 - 1.0)"), std::string::npos) << between;
  const std::string on_bucket =
      rule_expr(render_prometheus_rules(with_ttft("customer-service-llm", std::chrono::milliseconds(2500))),
                "gpubank-inference-customer-service-llm", "namespace_workload:gpubank_ttft_slo_errors:ratio_rate1h");
  EXPECT_NE(on_bucket.find("le=\"2.5\""), std::string::npos) << on_bucket;
  EXPECT_EQ(on_bucket.find("le=\"1.0\""), std::string::npos) << on_bucket;
}

TEST(PrometheusRules, AMoreSpecificLowUtilizationPolicyTakesItsWorkloadsFromTheGeneralOne) {
  policy::PolicySet set = example_policies().policies_only();
  policy::PolicyObject search = *set.find(policy::Kind::LowUtilizationPolicy, "training-default");
  search.metadata.name = "search-training";
  std::get<policy::LowUtilizationPolicySpec>(search.spec).match.business_group = "search";
  set.add(std::move(search));
  ASSERT_TRUE(policy::validate(set).empty());
  const auto objects = render_prometheus_rules(set);
  const std::string general =
      rule_expr(objects, "gpubank-lowutil-training-default", std::string(series::kAllocationLowUtilization));
  EXPECT_NE(general.find("unless on (cluster, gpu_uuid, gpu_instance, namespace, pod, container) "
                         "gpubank_gpu_allocation_info{workload_type=\"training\", business_group=\"search\"}"),
            std::string::npos)
      << general;
  EXPECT_EQ(source_refs(object_named(objects, "gpubank-lowutil-training-default")),
            (std::vector<std::string>{"LowUtilizationPolicy/training-default", "LowUtilizationPolicy/search-training"}));
  const std::string specific =
      rule_expr(objects, "gpubank-lowutil-search-training", std::string(series::kAllocationLowUtilization));
  EXPECT_EQ(specific.find("unless on (cluster, gpu_uuid"), std::string::npos) << specific;
}

TEST(PrometheusRules, ASetWithoutGuardrailsIsAnErrorNamingTheRule) {
  policy::PolicySet set = example_policies().policies_only();
  set.remove(policy::Kind::PlatformGuardrails, "platform");
  try {
    (void)render_prometheus_rules(set);
    FAIL() << "rendered without guardrails";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("PlatformGuardrails"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("[render.guardrails-missing]"), std::string::npos) << e.what();
  }
}

// ---- the committed promtool tests -----------------------------------------------------------

std::vector<std::string> promtool_tests() {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(promtool_dir(), ec)) {
    if (entry.path().extension() == ".yaml") out.push_back(entry.path().filename().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The files `promtool test rules` reports as failed in its output ("Unit Testing:  <file>"
// then "  SUCCESS" or "  FAILED:"), and how many it tested.
struct PromtoolReport {
  std::vector<std::string> failed;
  std::size_t tested = 0;
};
PromtoolReport read_promtool_report(const std::string& output) {
  PromtoolReport out;
  std::istringstream in(output);
  std::string line, current;
  while (std::getline(in, line)) {
    if (const auto at = line.find("Unit Testing:"); at != std::string::npos) {
      current = line.substr(at + 13);
      current.erase(0, current.find_first_not_of(' '));
      ++out.tested;
    } else if (line.find("FAILED") != std::string::npos && !current.empty()) {
      out.failed.push_back(current);
      current.clear();
    }
  }
  return out;
}

// Copies every committed test next to the rendered rule files (their rule_files are
// relative to them) and runs them in one promtool process (one per file cost 0.4 s each
// under CI's sanitizers, most of it promtool starting): a failed expectation fails this
// test and names the file.
TEST(PromtoolTestRules, EveryCommittedTestPasses) {
  const auto promtool = find_promtool();
  ASSERT_TRUE(promtool.has_value()) << kPromtoolMissing;
  ScratchDir dir;
  write_rule_files(render_prometheus_rules(example_policies()), dir.path());
  const std::vector<std::string> files = promtool_tests();
  ASSERT_GT(files.size(), 50U);
  std::string command = promtool->string() + " test rules";
  for (const std::string& f : files) {
    write_file(dir.path() / f, read_file(promtool_dir() / f));
    command += " " + f;
  }
  const auto r = run_in(dir.path(), command);
  const PromtoolReport report = read_promtool_report(r.output);
  EXPECT_EQ(report.tested, files.size()) << r.output;
  EXPECT_TRUE(report.failed.empty()) << ::testing::PrintToString(report.failed) << "\n" << r.output;
  EXPECT_EQ(r.status, 0) << r.output;
}

// The reading of promtool's report can fail: a broken expectation is found and named.
TEST(PromtoolTestRules, AFailedExpectationIsNamed) {
  const auto promtool = find_promtool();
  ASSERT_TRUE(promtool.has_value()) << kPromtoolMissing;
  ScratchDir dir;
  write_rule_files(render_prometheus_rules(example_policies()), dir.path());
  const std::string good = "pool_gpubank_gpus_allocated_ratio.yaml";
  const std::string bad = "pool_gpubank_gpus_capacity_sum.yaml";
  write_file(dir.path() / good, read_file(promtool_dir() / good));
  std::string text = read_file(promtool_dir() / bad);
  const auto value = text.rfind("value: ");
  ASSERT_NE(value, std::string::npos);
  text.insert(value + 7, "1");  // 1 -> 11: never the right answer
  write_file(dir.path() / bad, text);
  const auto r = run_in(dir.path(), promtool->string() + " test rules " + good + " " + bad);
  EXPECT_NE(r.status, 0);
  const PromtoolReport report = read_promtool_report(r.output);
  EXPECT_EQ(report.tested, 2U) << r.output;
  EXPECT_EQ(report.failed, std::vector<std::string>{bad}) << r.output;
}

}  // namespace
}  // namespace gpubank::render
