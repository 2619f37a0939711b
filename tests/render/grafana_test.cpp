#include "render/grafana.hpp"

#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <set>

#include "document/yaml_writer.hpp"
#include "policy/policy_set.hpp"
#include "render/prometheus_rules.hpp"
#include "render/promtool/promtool.hpp"
#include "support/paths.hpp"

namespace gpubank::render {
namespace {

namespace fs = std::filesystem;
using namespace gpubank::testing;  // promtool.hpp

const std::vector<std::string> kSlugs{"bank", "capacity", "finops", "gpu-noc", "inference-slo", "training"};

std::vector<Json> dashboards(const std::vector<RenderedObject>& objects) {
  std::vector<Json> out;
  for (const auto& o : objects) {
    if (o.path.ends_with(".json")) out.push_back(o.manifest);
  }
  return out;
}

// Every PromQL text of a dashboard: panel targets, and the series selector of each
// label_values() variable query.
std::vector<std::string> queries(const Json& dashboard) {
  std::vector<std::string> out;
  for (const auto& panel : dashboard["panels"]) {
    for (const auto& target : panel["targets"]) out.push_back(target["expr"]);
  }
  return out;
}

std::vector<std::string> variable_selectors(const Json& dashboard) {
  static const std::regex label_values(R"(label_values\((.*), [a-z_]+\))");
  std::vector<std::string> out;
  for (const auto& v : dashboard["templating"]["list"]) {
    if (v["type"] != "query") continue;
    std::smatch m;
    const std::string q = v["query"]["query"];
    if (std::regex_match(q, m, label_values)) {
      out.push_back(m[1]);
    } else {
      ADD_FAILURE() << "variable " << v["name"] << " is not a label_values() query: " << q;
    }
  }
  return out;
}

// The template variables a text refers to ($name or ${name}).
std::set<std::string> referenced(const std::string& text) {
  static const std::regex ref(R"(\$\{?([A-Za-z_][A-Za-z0-9_]*))");
  std::set<std::string> out;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), ref); it != std::sregex_iterator(); ++it) {
    out.insert((*it)[1]);
  }
  return out;
}

// A query with every variable replaced by a sample value, as Grafana would send it.
std::string substituted(const std::string& query) {
  static const std::vector<std::pair<std::regex, std::string>> replacements{
      {std::regex(R"(\$__rate_interval)"), "5m"},
      {std::regex(R"(\$__range)"), "1h"},
      {std::regex(R"(\$__interval)"), "1m"},
      {std::regex(R"(\$\{?[A-Za-z_][A-Za-z0-9_]*\}?)"), "sample"},
  };
  std::string out = query;
  for (const auto& [pattern, value] : replacements) out = std::regex_replace(out, pattern, value);
  return out;
}

// Runs promtool check rules over queries written as recording rules.
gpubank::testing::RunResult check_as_rules(const std::vector<std::string>& exprs) {
  const auto promtool = find_promtool();
  if (!promtool) return {-1, kPromtoolMissing};
  Json rules = Json::array();
  for (std::size_t i = 0; i < exprs.size(); ++i) {
    rules.push_back(Json{{"record", "dashboard_query_" + std::to_string(i)}, {"expr", exprs[i]}});
  }
  ScratchDir dir;
  write_file(dir.path() / "queries.yaml",
             doc::to_yaml(Json{{"groups", Json::array({Json{{"name", "dashboards"}, {"rules", rules}}})}}));
  return run_in(dir.path(), promtool->string() + " check rules queries.yaml");
}

TEST(GrafanaDashboards, SixDashboardsEachWithAConfigMapForTheSidecar) {
  const auto objects = render_grafana_dashboards(example_policies());
  std::map<std::string, Json> by_path;
  for (const auto& o : objects) by_path[o.path] = o.manifest;
  ASSERT_EQ(by_path.size(), 12U);
  for (const std::string& slug : kSlugs) {
    ASSERT_TRUE(by_path.contains("grafana/" + slug + ".json")) << slug;
    ASSERT_TRUE(by_path.contains("grafana/configmap-" + slug + ".yaml")) << slug;
    const Json& d = by_path["grafana/" + slug + ".json"];
    EXPECT_EQ(d["uid"], "gpubank-" + slug);
    EXPECT_LE(d["uid"].get<std::string>().size(), 40U);  // Grafana's uid limit
    EXPECT_FALSE(d["title"].get<std::string>().empty());
    EXPECT_EQ(d["schemaVersion"], 39);
    EXPECT_FALSE(d.contains("metadata"));
    const Json& cm = by_path["grafana/configmap-" + slug + ".yaml"];
    EXPECT_EQ(cm["apiVersion"], "v1");
    EXPECT_EQ(cm["kind"], "ConfigMap");
    EXPECT_EQ(cm["metadata"]["labels"]["grafana_dashboard"], "1");
    EXPECT_EQ(cm["metadata"]["labels"]["app.kubernetes.io/managed-by"], "gpubank");
    EXPECT_EQ(Json::parse(cm["data"][slug + ".json"].get<std::string>()), d) << slug;
  }
  // The ConfigMap's label value must stay a string when written as YAML.
  EXPECT_NE(doc::to_yaml(by_path["grafana/configmap-bank.yaml"]).find("grafana_dashboard: \"1\""), std::string::npos);
}

TEST(GrafanaDashboards, OnlyTheGuardrailsFeedDashboardsDirectly) {
  for (const auto& o : render_grafana_dashboards(example_policies())) {
    std::vector<std::string> refs;
    for (const auto* p : o.sources) refs.push_back(p->ref());
    const bool reads_guardrails = o.path.find("capacity") != std::string::npos || o.path.find("finops") != std::string::npos;
    EXPECT_EQ(refs, reads_guardrails ? std::vector<std::string>{"PlatformGuardrails/platform"} : std::vector<std::string>{})
        << o.path;
  }
}

TEST(GrafanaDashboards, PanelIdsAreUniqueAndPanelsTileTheGrid) {
  for (const Json& d : dashboards(render_grafana_dashboards(example_policies()))) {
    std::set<int> ids;
    std::vector<std::array<int, 4>> boxes;
    for (const auto& p : d["panels"]) {
      EXPECT_TRUE(ids.insert(p["id"].get<int>()).second) << d["uid"] << ": panel id " << p["id"] << " twice";
      const auto& g = p["gridPos"];
      const std::array<int, 4> box{g["x"].get<int>(), g["y"].get<int>(), g["w"].get<int>(), g["h"].get<int>()};
      EXPECT_GE(box[0], 0);
      EXPECT_LE(box[0] + box[2], 24) << d["uid"] << " " << p["title"];
      for (const auto& other : boxes) {
        const bool overlap = box[0] < other[0] + other[2] && other[0] < box[0] + box[2] &&
                             box[1] < other[1] + other[3] && other[1] < box[1] + box[3];
        EXPECT_FALSE(overlap) << d["uid"] << ": " << p["title"] << " overlaps another panel";
      }
      boxes.push_back(box);
    }
    EXPECT_GE(ids.size(), 6U) << d["uid"];
  }
}

TEST(GrafanaDashboards, VariablesAreChainedEachFilteredByAllBeforeIt) {
  for (const Json& d : dashboards(render_grafana_dashboards(example_policies()))) {
    const auto& list = d["templating"]["list"];
    ASSERT_EQ(list.size(), std::size(kDashboardVariables));
    std::set<std::string> before;
    for (std::size_t i = 0; i < list.size(); ++i) {
      const std::string name = list[i]["name"];
      EXPECT_EQ(name, kDashboardVariables[i]);
      if (list[i]["type"] == "query") {
        const auto refs = referenced(list[i]["query"]["query"].get<std::string>());
        // Only variables defined above, and all query variables above (the chain).
        for (const auto& r : refs) EXPECT_TRUE(before.contains(r)) << d["uid"] << ": " << name << " uses $" << r;
        for (const auto& b : before) {
          if (b == "datasource") continue;
          EXPECT_TRUE(refs.contains(b)) << d["uid"] << ": " << name << " is not filtered by $" << b;
        }
        EXPECT_EQ(list[i]["datasource"]["uid"], "${datasource}");
        EXPECT_EQ(list[i]["allValue"], ".*");
      } else {
        EXPECT_EQ(list[i]["type"], "datasource");
      }
      before.insert(name);
    }
  }
}

TEST(GrafanaDashboards, EveryPanelAndTargetUsesTheDatasourceVariable) {
  for (const Json& d : dashboards(render_grafana_dashboards(example_policies()))) {
    for (const auto& p : d["panels"]) {
      EXPECT_EQ(p["datasource"], (Json{{"type", "prometheus"}, {"uid", "${datasource}"}})) << p["title"];
      ASSERT_FALSE(p["targets"].empty()) << p["title"];
      for (const auto& t : p["targets"]) EXPECT_EQ(t["datasource"]["uid"], "${datasource}") << p["title"];
    }
  }
}

TEST(GrafanaDashboards, PanelsUseOnlyDefinedVariablesAndAllDrillDownByCluster) {
  const std::set<std::string> builtins{"__rate_interval", "__range", "__interval"};
  for (const Json& d : dashboards(render_grafana_dashboards(example_policies()))) {
    std::set<std::string> defined;
    for (const auto& v : d["templating"]["list"]) defined.insert(v["name"]);
    for (const std::string& q : queries(d)) {
      for (const auto& r : referenced(q)) {
        EXPECT_TRUE(defined.contains(r) || builtins.contains(r)) << d["uid"] << ": $" << r << " in " << q;
      }
      EXPECT_NE(q.find("$cluster"), std::string::npos) << d["uid"] << ": no cluster filter in " << q;
    }
  }
}

TEST(GrafanaDashboards, PanelsReadRecordingRulesThatExist) {
  std::set<std::string> records;
  for (const auto& o : render_prometheus_rules(example_policies())) {
    for (const auto& g : o.manifest["spec"]["groups"]) {
      for (const auto& r : g["rules"]) {
        if (r.contains("record")) records.insert(r["record"]);
      }
    }
  }
  static const std::regex rule_name(R"([a-z_]+:[a-z0-9_]+:[a-z0-9_]+)");
  std::size_t uses = 0;
  for (const Json& d : dashboards(render_grafana_dashboards(example_policies()))) {
    for (const std::string& q : queries(d)) {
      for (auto it = std::sregex_iterator(q.begin(), q.end(), rule_name); it != std::sregex_iterator(); ++it) {
        EXPECT_TRUE(records.contains(it->str())) << d["uid"] << " reads " << it->str() << ", which no rule records";
        ++uses;
      }
    }
  }
  EXPECT_GT(uses, 40U);
}

TEST(GrafanaDashboards, EveryQueryIsValidPromQL) {
  ASSERT_TRUE(find_promtool().has_value()) << kPromtoolMissing;
  std::vector<std::string> exprs;
  for (const Json& d : dashboards(render_grafana_dashboards(example_policies()))) {
    for (const auto& q : queries(d)) exprs.push_back(substituted(q));
    for (const auto& q : variable_selectors(d)) exprs.push_back(substituted(q));
  }
  ASSERT_GT(exprs.size(), 60U);
  const auto ok = check_as_rules(exprs);
  EXPECT_EQ(ok.status, 0) << ok.output;
  // The same check fails on one broken query.
  exprs.push_back(substituted("sum by (pool) (node:gpubank_gpus_free:sum{cluster=~\"$cluster\"}"));
  const auto broken = check_as_rules(exprs);
  EXPECT_NE(broken.status, 0) << broken.output;
}

TEST(GrafanaDashboards, CapacityComparesEveryPoolWithItsGuardrailCapacity) {
  const Json* capacity = nullptr;
  const auto objects = render_grafana_dashboards(example_policies());
  for (const auto& o : objects) {
    if (o.path == "grafana/capacity.json") capacity = &o.manifest;
  }
  ASSERT_NE(capacity, nullptr);
  const std::string text = capacity->dump();
  for (const auto& pool : example_policies().guardrails_spec()->pools) {
    EXPECT_NE(text.find("pool=\\\"" + pool.name + "\\\"}) - " + std::to_string(pool.capacity)), std::string::npos)
        << pool.name;
  }
}

TEST(GrafanaDashboards, RenderingTwiceGivesTheSameBytes) {
  auto dump = [] {
    std::map<std::string, std::string> out;
    for (const auto& o : render_grafana_dashboards(example_policies())) {
      out[o.path] = o.path.ends_with(".json") ? o.manifest.dump(2) : doc::to_yaml(o.manifest);
    }
    return out;
  };
  EXPECT_EQ(dump(), dump());
}

}  // namespace
}  // namespace gpubank::render
