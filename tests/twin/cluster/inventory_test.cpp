// Inventory YAML (every rule), the example inventory against the example policies'
// pools, and the Alibaba v2023 node list.
#include "twin/cluster/inventory.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "document/decode.hpp"
#include "policy/policy_set.hpp"
#include "support/paths.hpp"

namespace gpubank::twin::cluster {
namespace {

using ::testing::ElementsAre;

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// "rule path" of every error, for exact expectations.
std::vector<std::string> errors_of(std::string_view yaml, const InventoryLimits& limits = {}) {
  Diagnostics d;
  const auto inventory = parse_inventory(yaml, "inv.yaml", d, limits);
  EXPECT_FALSE(inventory.has_value());
  std::vector<std::string> out;
  for (const auto& e : d) {
    if (e.severity == Severity::Error) out.push_back(e.rule + " " + e.path);
  }
  return out;
}

Inventory parse_ok(std::string_view yaml) {
  Diagnostics d;
  auto inventory = parse_inventory(yaml, "inv.yaml", d);
  EXPECT_TRUE(inventory.has_value()) << (d.empty() ? "" : d.front().to_string());
  return inventory.value_or(Inventory{});
}

TEST(Inventory, NodeGroupsExpandToZeroPaddedNamesWithDerivedLabels) {
  const Inventory inv = parse_ok(R"(
kind: Inventory
nodeGroups:
- {namePrefix: gpu, count: 3, gpuModel: H100, product: NVIDIA-H100-80GB-HBM3, gpusPerNode: 8, gpuMemory: 80Gi,
   fabric: rdma-a, nvlink: true, cpu: "96", memory: 1Ti, labels: {team: a},
   taints: [{key: dedicated, value: a, effect: NoExecute}]}
nodes:
- {name: mig, gpuModel: A100, gpusPerNode: 2, gpuMemory: 80Gi, mig: {profile: 3g.40gb, slicesPerGpu: 2}}
)");
  ASSERT_EQ(inv.nodes.size(), 4U);
  EXPECT_EQ(inv.nodes[0].name, "gpu-00");
  EXPECT_EQ(inv.nodes[2].name, "gpu-02");
  const NodeSpec& n = inv.nodes[1];
  EXPECT_EQ(n.gpus, 8);
  EXPECT_EQ(n.gpu_memory_mib, 80 * 1024);
  EXPECT_EQ(n.cpu_milli, 96'000);
  EXPECT_EQ(n.memory_mib, 1024 * 1024);
  EXPECT_TRUE(n.nvlink);
  EXPECT_EQ(n.fabric, "rdma-a");
  EXPECT_EQ(n.labels, (std::map<std::string, std::string>{{"nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"}, {"team", "a"}}));
  EXPECT_EQ(n.taints, (std::vector<Taint>{{"dedicated", "a", TaintEffect::NoExecute}}));
  const NodeSpec& mig = inv.nodes[3];
  ASSERT_TRUE(mig.mig.has_value());
  EXPECT_EQ(mig.mig->slice_memory_mib, 40 * 1024);  // from the profile's "40gb"
  EXPECT_EQ(mig.units(), 4);                         // 2 GPUs x 2 slices
  EXPECT_EQ(mig.labels.at("nvidia.com/mig.config"), "all-3g.40gb");
  EXPECT_EQ(inv.gpu_count(), 3 * 8 + 2);
  EXPECT_EQ(inv.unit_count(), 3 * 8 + 4);
}

TEST(Inventory, PaddingGrowsWithTheCount) {
  const Inventory inv = parse_ok(R"(
kind: Inventory
nodeGroups:
- {namePrefix: a, count: 100, gpuModel: T4, gpusPerNode: 1, gpuMemory: 16Gi}
- {namePrefix: b, count: 101, gpuModel: T4, gpusPerNode: 1, gpuMemory: 16Gi}
)");
  ASSERT_EQ(inv.nodes.size(), 201U);
  EXPECT_EQ(inv.nodes[99].name, "a-99");    // indices 0..99 fit two digits
  EXPECT_EQ(inv.nodes[100].name, "b-000");  // 0..100 need three
  EXPECT_EQ(inv.nodes[200].name, "b-100");
}

TEST(Inventory, EachRuleIsReportedWithItsFieldPath) {
  EXPECT_THAT(errors_of("kind: Inventory\nnodeGroups: [{namePrefix: a, count: 1, gpuModle: H100, gpuModel: H100, "
                        "gpusPerNode: 8, gpuMemory: 80Gi}]\n"),
              ElementsAre("schema.unknown-field nodeGroups[0].gpuModle"));
  EXPECT_THAT(errors_of("kind: Inventory\nnodes: [{name: a, gpuModel: H100, gpusPerNode: eight, gpuMemory: 80Gi}]\n"),
              ElementsAre("schema.wrong-type nodes[0].gpusPerNode"));
  EXPECT_THAT(errors_of("kind: Inventory\nnodes: [{name: a, gpuModel: H100, gpusPerNode: 8}]\n"),
              ElementsAre("schema.required nodes[0].gpuMemory"));
  EXPECT_THAT(errors_of("kind: Inventory\nnodes: [{name: a, gpuModel: H100, gpusPerNode: 8, gpuMemory: 80Qi}]\n"),
              ElementsAre("schema.invalid-format nodes[0].gpuMemory"));
  EXPECT_THAT(errors_of("kind: Inventory\nnodes: [{name: a, gpuModel: H100, gpusPerNode: 8, gpuMemory: -1Gi}]\n"),
              ElementsAre("schema.out-of-range nodes[0].gpuMemory"));
  EXPECT_THAT(errors_of("kind: Inventory\nnodeGroups: [{namePrefix: a, count: 0, gpuModel: H100, gpusPerNode: 8, "
                        "gpuMemory: 80Gi}]\n"),
              ElementsAre("schema.out-of-range nodeGroups[0].count"));
  EXPECT_THAT(errors_of("kind: Inventory\nnodes: [{name: a, gpuModel: H100, gpusPerNode: 17, gpuMemory: 80Gi}]\n"),
              ElementsAre("schema.out-of-range nodes[0].gpusPerNode"));
  EXPECT_THAT(errors_of("kind: Inventory\nnodes: [{name: a, gpuModel: H100, gpusPerNode: 8, gpuMemory: 80Gi, "
                        "taints: [{key: k, value: v, effect: NoWay}]}]\n"),
              ElementsAre("schema.invalid-enum nodes[0].taints[0].effect"));
  EXPECT_THAT(errors_of("kind: Nodes\nnodes: []\n"), ElementsAre("inventory.kind kind"));
  EXPECT_THAT(errors_of("kind: Inventory\nnodes: [{name: Node_A, gpuModel: H100, gpusPerNode: 8, gpuMemory: 80Gi}]\n"),
              ElementsAre("schema.invalid-format nodes[0].name"));
  EXPECT_THAT(errors_of("kind: Inventory\nnodes: [{name: a, gpuModel: 'H 100', gpusPerNode: 8, gpuMemory: 80Gi}]\n"),
              ElementsAre("schema.invalid-format nodes[0].gpuModel"));
  EXPECT_THAT(errors_of("kind: Inventory\nnodes: [{name: a, gpuModel: H100, gpusPerNode: 8, gpuMemory: 80Gi, "
                        "labels: {'bad key!': x}}]\n"),
              ElementsAre("inventory.label nodes[0].labels.bad key!"));
  EXPECT_THAT(errors_of("kind: Inventory\nnodes: [{name: a, gpuModel: H100, product: P, gpusPerNode: 8, "
                        "gpuMemory: 80Gi, labels: {nvidia.com/gpu.product: Q}}]\n"),
              ElementsAre("inventory.label-conflict nodes[0].labels.nvidia.com/gpu.product"));
}

TEST(Inventory, DuplicateNamesAcrossGroupsAndNodes) {
  // a-00, a-01 from the group; nodes[0] is a-01 again.
  EXPECT_THAT(errors_of(R"(
kind: Inventory
nodeGroups: [{namePrefix: a, count: 2, gpuModel: T4, gpusPerNode: 1, gpuMemory: 16Gi}]
nodes: [{name: a-01, gpuModel: T4, gpusPerNode: 1, gpuMemory: 16Gi}]
)"),
              ElementsAre("inventory.duplicate-node nodes[0].name"));
}

TEST(Inventory, MigLayoutsMustFitTheGpu) {
  // 4g.40gb x 2 needs 8 compute slices of 7.
  EXPECT_THAT(errors_of("kind: Inventory\nnodes: [{name: a, gpuModel: A100, gpusPerNode: 8, gpuMemory: 80Gi, "
                        "mig: {profile: 4g.40gb, slicesPerGpu: 2}}]\n"),
              ElementsAre("inventory.mig-layout nodes[0].mig.slicesPerGpu"));
  // 7 x 1g.10gb = 70 GiB > 40 GiB.
  EXPECT_THAT(errors_of("kind: Inventory\nnodes: [{name: a, gpuModel: A100, gpusPerNode: 8, gpuMemory: 40Gi, "
                        "mig: {profile: 1g.10gb, slicesPerGpu: 7}}]\n"),
              ElementsAre("inventory.mig-layout nodes[0].mig.slicesPerGpu"));
  EXPECT_THAT(errors_of("kind: Inventory\nnodes: [{name: a, gpuModel: A100, gpusPerNode: 8, gpuMemory: 80Gi, "
                        "mig: {profile: big, slicesPerGpu: 7}}]\n"),
              ElementsAre("schema.invalid-format nodes[0].mig.profile"));
  EXPECT_THAT(errors_of("kind: Inventory\nnodes: [{name: a, gpuModel: A100, gpusPerNode: 8, gpuMemory: 80Gi, "
                        "mig: {profile: 1g.10gb, slicesPerGpu: 8}}]\n"),
              ElementsAre("schema.out-of-range nodes[0].mig.slicesPerGpu"));
}

TEST(Inventory, TotalsAreLimitedBeforeNamesAreBuilt) {
  // 6,000 + 5,000 nodes > 10,000.
  EXPECT_THAT(errors_of(R"(
kind: Inventory
nodeGroups:
- {namePrefix: a, count: 6000, gpuModel: T4, gpusPerNode: 1, gpuMemory: 16Gi}
- {namePrefix: b, count: 5000, gpuModel: T4, gpusPerNode: 1, gpuMemory: 16Gi}
)"),
              ElementsAre("inventory.too-many-nodes "));
  // 2,000 nodes x 16 GPUs x 7 slices = 224,000 units > 200,000.
  EXPECT_THAT(errors_of(R"(
kind: Inventory
nodeGroups:
- {namePrefix: a, count: 2000, gpuModel: A100, gpusPerNode: 16, gpuMemory: 80Gi, mig: {profile: 1g.10gb, slicesPerGpu: 7}}
)"),
              ElementsAre("inventory.too-many-gpus "));
  InventoryLimits small;
  small.max_bytes = 10;
  EXPECT_THAT(errors_of("kind: Inventory\nnodes: []\n", small), ElementsAre("schema.too-large "));
}

TEST(Inventory, ExampleMatchesThePoliciesPoolCapacities) {
  Diagnostics d;
  const auto inv = load_inventory(testing::examples_dir() + "/inventory/example.yaml", d);
  ASSERT_TRUE(inv.has_value()) << (d.empty() ? "" : d.front().to_string());
  EXPECT_EQ(inv->nodes.size(), 17U);   // 8 + 6 + 2 + 1
  EXPECT_EQ(inv->gpu_count(), 136);    // 17 x 8
  EXPECT_EQ(inv->unit_count(), 184);   // 64 + 48 + 16 + 8 x 7
  const policy::PolicySet set = policy::load_policy_set({testing::examples_dir() + "/policies"});
  ASSERT_NE(set.guardrails_spec(), nullptr);
  const auto& pools = set.guardrails_spec()->pools;
  ASSERT_EQ(pools.size(), 4U);
  for (const auto& pool : pools) {
    int units = 0;
    for (const auto& node : inv->nodes) {
      const bool selected = std::all_of(pool.node_labels.begin(), pool.node_labels.end(), [&](const auto& label) {
        const auto it = node.labels.find(label.first);
        return it != node.labels.end() && it->second == label.second;
      });
      if (!selected) continue;
      units += node.units();
      EXPECT_EQ(node.gpu_model, pool.gpu_model) << node.name;
      EXPECT_EQ(node.pool(), pool.name) << node.name;
      ASSERT_EQ(node.taints.size(), pool.taints.size()) << node.name;
      for (std::size_t i = 0; i < pool.taints.size(); ++i) {
        EXPECT_EQ(node.taints[i].key, pool.taints[i].key);
        EXPECT_EQ(node.taints[i].value, pool.taints[i].value);
        EXPECT_EQ(static_cast<int>(node.taints[i].effect), static_cast<int>(pool.taints[i].effect));
      }
      if (pool.gpus_per_node) {
        EXPECT_EQ(node.units(), *pool.gpus_per_node) << node.name;
      }
      if (pool.partition != "full") {
        ASSERT_TRUE(node.mig.has_value()) << node.name;
        EXPECT_EQ(node.mig->profile, pool.partition);
      }
    }
    EXPECT_EQ(units, pool.capacity) << pool.name;
  }
}

// ---- Alibaba ------------------------------------------------------------------------------

TEST(AlibabaInventory, TheV2023NodeListHas1213NodesAnd6212Gpus) {
  const std::string file = testing::shared_dir() + "/traces/alibaba-gpu-v2023/openb_node_list_gpu_node.csv";
  Diagnostics d;
  const auto inv = alibaba_inventory(read(file), file, d);
  ASSERT_TRUE(inv.has_value()) << (d.empty() ? "" : d.front().to_string());
  EXPECT_TRUE(d.empty());  // every model is in the table
  EXPECT_EQ(inv->nodes.size(), 1213U);
  EXPECT_EQ(inv->gpu_count(), 6212);
  // Per model (awk over the file): G2 549 nodes / 4,392 GPUs, T4 404 / 842, P100 134 / 265.
  std::map<std::string, std::pair<int, int>> per_model;
  for (const auto& n : inv->nodes) {
    per_model[n.gpu_model].first += 1;
    per_model[n.gpu_model].second += n.gpus;
  }
  EXPECT_EQ(per_model["G2"], std::make_pair(549, 4392));
  EXPECT_EQ(per_model["T4"], std::make_pair(404, 842));
  EXPECT_EQ(per_model["P100"], std::make_pair(134, 265));
  const NodeSpec& first = inv->nodes.front();  // openb-node-0000,64000,262144,2,P100
  EXPECT_EQ(first.name, "openb-node-0000");
  EXPECT_EQ(first.cpu_milli, 64'000);
  EXPECT_EQ(first.memory_mib, 262'144);
  EXPECT_EQ(first.gpus, 2);
  EXPECT_EQ(first.gpu_memory_mib, 16 * 1024);
  EXPECT_EQ(first.pool(), "alibaba-p100");
  EXPECT_EQ(first.labels.at("nvidia.com/gpu.product"), "Tesla-P100-PCIE-16GB");
}

TEST(AlibabaInventory, PoolNamesAndModelTable) {
  EXPECT_EQ(alibaba_pool_for_model("V100M16"), "alibaba-v100m16");
  EXPECT_EQ(alibaba_pool_for_model("G2"), "alibaba-g2");
  EXPECT_EQ(alibaba_pool_for_model("A.b_c"), "alibaba-a-b-c");
  EXPECT_EQ(alibaba_model("V100M32")->memory_mib, 32 * 1024);
  EXPECT_EQ(alibaba_model("A10")->memory_mib, 24 * 1024);
  EXPECT_FALSE(alibaba_model("H100").has_value());
}

std::vector<std::string> csv_errors(std::string_view text, const InventoryLimits& limits = {}) {
  Diagnostics d;
  EXPECT_FALSE(alibaba_inventory(text, "nodes.csv", d, limits).has_value());
  std::vector<std::string> out;
  for (const auto& e : d) {
    if (e.severity == Severity::Error) out.push_back(e.rule + " " + std::to_string(e.pos.line) + " " + e.path);
  }
  return out;
}

TEST(AlibabaInventory, MalformedRowsAreReportedWithLineNumbers) {
  constexpr std::string_view kHeader = "sn,cpu_milli,memory_mib,gpu,model\n";
  EXPECT_THAT(csv_errors(std::string(kHeader) + "n-0,1,2,1,T4\nn-1,1,2,1\n"), ElementsAre("alibaba.columns 3 "));
  EXPECT_THAT(csv_errors(std::string(kHeader) + "n-0,1,2,1,T4,extra\n"), ElementsAre("alibaba.columns 2 "));
  EXPECT_THAT(csv_errors(std::string(kHeader) + "n-0,abc,2,1,T4\n"), ElementsAre("alibaba.number 2 cpu_milli"));
  EXPECT_THAT(csv_errors(std::string(kHeader) + "n-0,1,-2,1,T4\n"), ElementsAre("alibaba.number 2 memory_mib"));
  EXPECT_THAT(csv_errors(std::string(kHeader) + "n-0,1,2,17,T4\n"), ElementsAre("alibaba.number 2 gpu"));
  EXPECT_THAT(csv_errors(std::string(kHeader) + "n-0,1,2,1,T4\nn-0,1,2,1,T4\n"),
              ElementsAre("inventory.duplicate-node 3 sn"));
  EXPECT_THAT(csv_errors("name,cpu,mem,gpu,model\nn-0,1,2,1,T4\n"), ElementsAre("alibaba.header 1 "));
  EXPECT_THAT(csv_errors(""), ElementsAre("alibaba.header 1 "));
  InventoryLimits two;
  two.max_nodes = 2;
  EXPECT_THAT(csv_errors(std::string(kHeader) + "a,1,2,1,T4\nb,1,2,1,T4\nc,1,2,1,T4\n", two),
              ElementsAre("inventory.too-many-nodes 4 "));
}

TEST(AlibabaInventory, CpuOnlyRowsAreSkippedAndUnknownModelsWarn) {
  Diagnostics d;
  const auto inv = alibaba_inventory("sn,cpu_milli,memory_mib,gpu,model\r\ncpu-0,1000,2048,0,\r\n"
                                     "x-0,1000,2048,4,H800\r\n\r\n",
                                     "nodes.csv", d);
  ASSERT_TRUE(inv.has_value());
  ASSERT_EQ(inv->nodes.size(), 1U);  // cpu-0 holds no GPU
  EXPECT_EQ(inv->nodes[0].gpu_memory_mib, 0);
  EXPECT_EQ(inv->nodes[0].pool(), "alibaba-h800");
  ASSERT_EQ(d.size(), 1U);
  EXPECT_EQ(d[0].severity, Severity::Warning);
  EXPECT_EQ(d[0].rule, "alibaba.unknown-model");
  EXPECT_EQ(d[0].pos.line, 3);
}

}  // namespace
}  // namespace gpubank::twin::cluster
