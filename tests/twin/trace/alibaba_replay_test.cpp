// The Alibaba replay's inputs from the real files: the shared pool carved from the T4
// nodes, a policy set that validates, and the mapped workloads.
#include "twin/trace/alibaba_replay.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>

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

// The gpuspec lists constrain a pod to GPU models ("V100M16|V100M32", "T4", "G2|P100|T4|..."):
// a whole GPU goes to the first listed model with a pool of whole GPUs, passing over the
// shared model (its nodes form the shared pool); a whole GPU asked of the shared model
// only is skipped with its reason; a fraction goes to the shared pool as in every list.
// Rows in the published format (openb_pod_list_gpuspec33.csv's header and values).
TEST(AlibabaReplay, GpuSpecListsMapEachPodToAPoolOfAModelItNames) {
  const std::string pods =
      "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n"
      "openb-pod-0009,12000,16384,1,1000,V100M16|V100M32,LS,Running,4975773,12902960,4975773\n"
      "openb-pod-0012,8000,32768,1,1000,T4,LS,Running,6588193,10959245,6595531\n"
      "openb-pod-0013,8000,16384,1,1000,G2,LS,Running,6976821,10650110,6976823\n"
      "openb-pod-0021,8000,30517,1,440,G2|P100|T4|V100M16|V100M32,LS,Running,9671707,12902960,9671708\n"
      "openb-pod-0087,11908,47104,1,1000,T4|P100|V100M16|V100M32,BE,Running,10017643,10019780,10017677\n"
      "openb-pod-0017,88000,327680,8,1000,G2,Burstable,Succeeded,9437497,10769854,9437497\n";
  Diagnostics d;
  const auto replay = alibaba_replay(pods, "gpuspec.csv", read("openb_node_list_gpu_node.csv"), "nodes.csv", options(), d);
  ASSERT_TRUE(replay) << (d.empty() ? "" : d.front().to_string());
  std::map<std::string, std::string> pool_of;
  for (const auto& w : replay->scenario.workloads) pool_of[w.name] = w.resource_pool;
  EXPECT_EQ(pool_of["openb-pod-0009"], "alibaba-v100m16");
  EXPECT_EQ(pool_of["openb-pod-0013"], "alibaba-g2");
  EXPECT_EQ(pool_of["openb-pod-0021"], "alibaba-shared");  // a fraction of a GPU
  EXPECT_EQ(pool_of["openb-pod-0087"], "alibaba-p100");    // T4 passed over: its nodes are shared
  EXPECT_EQ(pool_of["openb-pod-0017"], "alibaba-g2");
  EXPECT_FALSE(pool_of.contains("openb-pod-0012"));
  EXPECT_EQ(replay->report.skipped.at(std::string(kSkipNoWholeGpuPool)), 1);
  // The generated policies give every mapped workload's group quota in its pool.
  policy::PolicySet set;
  std::vector<doc::Document> docs;
  doc::read_yaml(replay->policy_yaml, "trace-policies.yaml", docs, set.diagnostics());
  for (const auto& doc : docs) set.add(doc.root, doc.file, doc.index);
  EXPECT_FALSE(has_errors(policy::validate(set)));
}

// A list with no creation times (openb_pod_list_multigpu50.csv: name, cpu_milli,
// memory_mib, num_gpu, gpu_milli) maps nothing in time: an error that says why, not an
// empty run that exits 0.
TEST(AlibabaReplay, AListThatMapsNothingIsAnErrorThatSaysWhy) {
  Diagnostics d;
  EXPECT_FALSE(alibaba_replay(read("openb_pod_list_multigpu50.csv"), "multigpu50.csv", read("openb_node_list_gpu_node.csv"),
                              "nodes.csv", options(), d));
  ASSERT_EQ(d.size(), 1U);
  EXPECT_EQ(d.front().rule, "trace.empty");
  EXPECT_NE(d.front().message.find("no pod of the 9061 read became a workload"), std::string::npos) << d.front().message;
  EXPECT_NE(d.front().message.find("no-creation-time"), std::string::npos) << d.front().message;
  EXPECT_NE(d.front().message.find("this list has no creation times"), std::string::npos) << d.front().message;
}

// Every pod list of the release that the shared folder holds (the release publishes 24:
// default, cpu*, gpushare*, gpuspec*, multigpu*): a list with creation times maps pods to
// workloads whose groups the generated policies give quota in their pools; a list without
// them is refused with trace.empty. Run on all 24 of the release by hand (docs).
TEST(AlibabaReplay, EveryPublishedPodListInTheSharedFolderReplaysOrIsRefusedWithItsReason) {
  namespace fs = std::filesystem;
  const fs::path folder = testing::shared_dir() + "/traces/alibaba-gpu-v2023";
  int lists = 0;
  for (const auto& entry : fs::directory_iterator(folder)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("openb_pod_list_", 0) != 0 || entry.path().extension() != ".csv") continue;
    SCOPED_TRACE(name);
    ++lists;
    const std::string pods = read(name);
    const bool timed = pods.substr(0, pods.find('\n')).find("creation_time") != std::string::npos;
    Diagnostics d;
    const auto replay = alibaba_replay(pods, name, read("openb_node_list_gpu_node.csv"), "nodes.csv", options(), d);
    if (!timed) {
      ASSERT_FALSE(replay);
      ASSERT_FALSE(d.empty());
      EXPECT_EQ(d.front().rule, "trace.empty");
      continue;
    }
    ASSERT_TRUE(replay) << (d.empty() ? "" : d.front().to_string());
    EXPECT_GT(replay->report.workloads, 0);
    policy::PolicySet set;
    std::vector<doc::Document> docs;
    doc::read_yaml(replay->policy_yaml, "trace-policies.yaml", docs, set.diagnostics());
    for (const auto& doc : docs) set.add(doc.root, doc.file, doc.index);
    EXPECT_FALSE(has_errors(policy::validate(set)));
    std::set<std::string> pools;
    for (const auto& p : replay->pools) pools.insert(p.name);
    for (const auto& w : replay->scenario.workloads) {
      ASSERT_TRUE(pools.contains(w.resource_pool)) << w.name << " in " << w.resource_pool;
    }
  }
  EXPECT_GE(lists, 3);
}

}  // namespace
}  // namespace gpubank::twin::trace
