// The Alibaba replay's inputs from the real files: the shared pool carved from the T4
// nodes, a policy set that validates, and the mapped workloads.
#include "twin/trace/alibaba_replay.hpp"

#include <gtest/gtest.h>

#include "document/loader.hpp"
#include "document/reader.hpp"
#include "policy/validate.hpp"
#include "support/paths.hpp"

namespace gpubank::twin::trace {
namespace {

std::string read(const std::string& name) {
  auto text = doc::read_file(testing::shared_dir() + "/traces/alibaba-gpu-v2023/" + name, std::size_t{64} << 20);
  EXPECT_TRUE(text) << text.error();
  return text ? *text : std::string();
}

AlibabaReplayOptions options() {
  AlibabaReplayOptions o;
  o.mapping.groups = {{"team-a", 4}, {"team-b", 3}, {"team-c", 2}, {"team-d", 1}};
  return o;
}

TEST(AlibabaReplay, SharedPoolFromT4NodesAndPoliciesThatValidate) {
  Diagnostics d;
  const auto replay = alibaba_replay(read("openb_pod_list_default.csv"), "pods.csv",
                                     read("openb_node_list_gpu_node.csv"), "nodes.csv", options(), d);
  ASSERT_TRUE(replay) << (d.empty() ? "" : d.front().to_string());
  std::int64_t gpus = 0, t4 = 0, shared_nodes = 0;
  for (const auto& node : replay->inventory.nodes) {
    gpus += node.gpus;
    if (node.gpu_model == "T4") t4 += node.gpus;
    if (node.pool() == "alibaba-shared") {
      ++shared_nodes;
      EXPECT_EQ(node.gpu_model, "T4");
    }
  }
  EXPECT_EQ(gpus, 6212);
  EXPECT_EQ(t4, 842);
  EXPECT_GT(shared_nodes, 0);
  for (const auto& p : replay->pools) {
    if (p.name == "alibaba-shared") {
      EXPECT_EQ(p.gpus, 842 * 4);  // time-slicing replicas
    }
    if (p.name == "alibaba-g2") {
      EXPECT_EQ(p.gpus, 4392);
    }
  }
  // The generated policies load and validate.
  policy::PolicySet set;
  std::vector<doc::Document> docs;
  doc::read_yaml(replay->policy_yaml, "trace-policies.yaml", docs, set.diagnostics());
  for (const auto& doc : docs) set.add(doc.root, doc.file, doc.index);
  const auto findings = policy::validate(set);
  EXPECT_FALSE(has_errors(findings)) << (findings.empty() ? "" : findings.front().to_string());
  // 7,063 workloads (readers' tests count the pods); shared ones go to the shared pool.
  EXPECT_EQ(replay->scenario.workloads.size(), 7063u);
  std::int64_t shared = 0;
  for (const auto& w : replay->scenario.workloads) {
    if (w.gpu_milli > 0) {
      ++shared;
      EXPECT_EQ(w.resource_pool, "alibaba-shared");
    }
  }
  EXPECT_EQ(shared, 3077);  // 3,078 shared pods, less the one skipped (deleted the second it was created)
}

TEST(AlibabaReplay, RefusesASharedModelWithoutNodesOrTheDefaultPoolsModel) {
  Diagnostics d;
  auto o = options();
  o.shared_model = "H100";
  EXPECT_FALSE(alibaba_replay(read("openb_pod_list_default.csv"), "pods.csv", read("openb_node_list_gpu_node.csv"),
                              "nodes.csv", o, d));
  ASSERT_FALSE(d.empty());
  EXPECT_EQ(d.front().rule, "trace.shared-model");
  d.clear();
  o.shared_model = "G2";
  EXPECT_FALSE(alibaba_replay(read("openb_pod_list_default.csv"), "pods.csv", read("openb_node_list_gpu_node.csv"),
                              "nodes.csv", o, d));
  ASSERT_FALSE(d.empty());
  EXPECT_EQ(d.front().rule, "trace.shared-model");
}

}  // namespace
}  // namespace gpubank::twin::trace
