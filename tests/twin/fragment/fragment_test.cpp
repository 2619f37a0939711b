// The FGD fragmentation measure and its arrival experiment (src/twin/fragment): hand-worked
// fragments, FGD's choice against best-fit's on two nodes, gpu_spec, the tie rule, the 5 %
// series, determinism, input diagnostics, and the shape of the result on the real trace.
#include "twin/fragment/fragment.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "document/loader.hpp"
#include "support/paths.hpp"

namespace gpubank::twin::fragment {
namespace {

Node node(std::string name, int gpus, std::string model = "T4", std::int64_t cpu = 64'000) {
  return Node{std::move(name), std::move(model), cpu, 256 * 1024, gpus};
}

Pod pod(std::string name, int gpu_count, std::int64_t gpu_milli, std::int64_t cpu = 4'000,
        std::vector<std::string> models = {}) {
  return Pod{std::move(name), 0, cpu, 1024, gpu_count, gpu_milli, std::move(models)};
}

TaskType task(int gpu_count, std::int64_t gpu_milli, std::int64_t cpu = 4'000, std::int64_t pods = 1,
              std::vector<std::string> models = {}) {
  return TaskType{cpu, gpu_count, gpu_milli, std::move(models), pods};
}

// A 4-GPU node whose GPUs have 1000, 600, 300 and 0 milli free, 64 CPUs free.
NodeState partly_used() { return NodeState{64'000, 256 * 1024, {1000, 600, 300, 0}}; }

TEST(TaskFragment, SharedTaskCountsTheGpusTooSmallForItsShare) {
  const Node n = node("n", 4);
  // 1000 and 600 can hold 500 milli; 300 and 0 cannot: 300 milli are fragments.
  EXPECT_EQ(task_fragment_milli(n, partly_used(), task(1, 500)), 300);
  // A share of 200 fits every GPU with any free milli: nothing is a fragment.
  EXPECT_EQ(task_fragment_milli(n, partly_used(), task(1, 200)), 0);
}

TEST(TaskFragment, WholeGpuTaskCountsEveryPartlyUsedGpu) {
  const Node n = node("n", 4);
  // One whole GPU fits (the idle one); 600 + 300 on partly used GPUs are fragments.
  EXPECT_EQ(task_fragment_milli(n, partly_used(), task(1, 1000)), 900);
  // Two whole GPUs do not fit: every free milli is a fragment.
  EXPECT_EQ(task_fragment_milli(n, partly_used(), task(2, 1000)), 1900);
}

TEST(TaskFragment, AllFreeGpuIsFragmentWhenTheTaskCannotUseTheNode) {
  const Node n = node("n", 4);
  EXPECT_EQ(task_fragment_milli(n, partly_used(), task(0, 0)), 1900) << "a CPU-only task uses no GPU";
  EXPECT_EQ(task_fragment_milli(n, partly_used(), task(1, 500, 65'000)), 1900) << "too little CPU";
  EXPECT_EQ(task_fragment_milli(n, partly_used(), task(1, 500, 4'000, 1, {"V100M16"})), 1900) << "wrong model";
  EXPECT_EQ(task_fragment_milli(n, partly_used(), task(1, 500, 4'000, 1, {"V100M16", "T4"})), 300);
  EXPECT_EQ(task_fragment_milli(n, NodeState{64'000, 1024, {0, 0, 0, 0}}, task(0, 0)), 0) << "no free GPU";
}

TEST(NodeFragment, WeighsTheTaskTypesByPopularity) {
  Workload workload;
  workload.types = {task(1, 500, 4'000, 3), task(2, 1000, 4'000, 1)};
  workload.trace_pods = workload.typical_pods = 4;
  // (3 x 300 + 1 x 1900) / 4.
  EXPECT_DOUBLE_EQ(node_fragment_milli(node("n", 4), partly_used(), workload), 700.0);
}

TEST(TypicalWorkload, KeepsTheMostPopularTypesUpToTheThreshold) {
  std::vector<Pod> pods;
  for (int i = 0; i < 6; ++i) pods.push_back(pod("a" + std::to_string(i), 1, 500));
  for (int i = 0; i < 3; ++i) pods.push_back(pod("b" + std::to_string(i), 1, 1000));
  pods.push_back(pod("c", 0, 0));
  const Workload ninety = typical_workload(pods, 90);
  ASSERT_EQ(ninety.types.size(), 2U) << "60 % + 30 % reach 90 %";
  EXPECT_EQ(ninety.types[0], task(1, 500, 4'000, 6));
  EXPECT_EQ(ninety.types[1], task(1, 1000, 4'000, 3));
  EXPECT_EQ(ninety.typical_pods, 9);
  EXPECT_EQ(ninety.trace_pods, 10);
  EXPECT_EQ(typical_workload(pods, 95).types.size(), 3U);
}

// Two one-GPU nodes, a: idle, b: 600 milli free; the workload is one type, 500 milli.
// A 500-milli pod on a leaves 500 (still fits the type: no fragment); on b it leaves 100
// (too small: 100 milli of fragment). FGD takes a; best-fit takes b (less left over).
struct TwoNodes : ::testing::Test {
  // b has another model so that a setup pod can be sent there by its gpu_spec.
  Cluster cluster{{node("a", 1), node("b", 1, "B")}, typical_workload(std::vector<Pod>{pod("w", 1, 500)})};
  Rng rng{1};
  void SetUp() override {
    ASSERT_EQ(cluster.place(pod("take-400", 1, 400, 4'000, {"B"}), Placement::BestFit, rng)->node, 1U);
    ASSERT_EQ(cluster.state(1).gpu_free_milli, std::vector<std::int32_t>{600});
    ASSERT_DOUBLE_EQ(cluster.fragment_milli(), 0.0) << "600 free still serve the 500 type";
  }
};

TEST_F(TwoNodes, GradientsWorkedByHand) {
  EXPECT_EQ(cluster.fragment_gradient(pod("p", 1, 500), 0, 1000), 0);
  EXPECT_EQ(cluster.fragment_gradient(pod("p", 1, 500), 1, 600), 100);
}

TEST_F(TwoNodes, FgdPlacesWhereFragmentationGrowsLeast) {
  const auto placed = cluster.place(pod("p", 1, 500), Placement::Fgd, rng);
  ASSERT_TRUE(placed);
  EXPECT_EQ(placed->node, 0U);
  EXPECT_EQ(placed->gpu_free_before, std::vector<std::int32_t>{1000});
  EXPECT_DOUBLE_EQ(cluster.fragment_milli(), 0.0);
}

TEST_F(TwoNodes, FgdExactAgrees) { EXPECT_EQ(cluster.place(pod("p", 1, 500), Placement::FgdExact, rng)->node, 0U); }

TEST_F(TwoNodes, BestFitPacksIntoTheFullerNode) {
  EXPECT_EQ(cluster.place(pod("p", 1, 500), Placement::BestFit, rng)->node, 1U);
  EXPECT_DOUBLE_EQ(cluster.fragment_milli(), 100.0);
}

TEST(Placement, HonoursGpuSpec) {
  Workload workload = typical_workload(std::vector<Pod>{pod("w", 1, 1000)});
  for (const Placement placement : all_placements()) {
    Cluster cluster({node("a", 2, "T4"), node("b", 2, "V100M16")}, workload);
    Rng rng(3);
    const auto placed = cluster.place(pod("p", 1, 1000, 4'000, {"V100M16"}), placement, rng);
    ASSERT_TRUE(placed) << to_string(placement);
    EXPECT_EQ(placed->node, 1U) << to_string(placement);
    EXPECT_FALSE(cluster.place(pod("q", 1, 1000, 4'000, {"A100"}), placement, rng)) << to_string(placement);
    EXPECT_TRUE(cluster.place(pod("cpu", 0, 0, 4'000, {"A100"}), placement, rng))
        << to_string(placement) << ": a CPU-only pod ignores gpu_spec";
  }
}

TEST(Placement, EqualScoresGoToTheFirstNodeByName) {
  Workload workload = typical_workload(std::vector<Pod>{pod("w", 1, 1000)});
  for (const Placement placement : all_placements()) {
    if (placement == Placement::Random) continue;
    Cluster cluster({node("n-2", 2), node("n-1", 2), node("n-3", 2)}, workload);
    Rng rng(5);
    EXPECT_EQ(cluster.place(pod("p", 1, 1000), placement, rng)->node, 1U) << to_string(placement);
  }
}

TEST(Placement, FailsWhenNoNodeHasTheGpus) {
  Cluster cluster({node("a", 2), node("b", 4)}, typical_workload(std::vector<Pod>{pod("w", 1, 1000)}));
  Rng rng(1);
  EXPECT_FALSE(cluster.place(pod("eight", 8, 1000), Placement::Fgd, rng));
  EXPECT_EQ(cluster.place(pod("four", 4, 1000), Placement::Fgd, rng)->node, 1U);
  EXPECT_EQ(cluster.gpu_allocated_milli(), 4000);
}

TEST(RngTest, SameSeedSameDrawsAllBelowTheBound) {
  Rng a(42), b(42);
  for (std::uint64_t n = 1; n < 200; ++n) {
    const std::uint64_t x = a.below(n);
    EXPECT_EQ(x, b.below(n));
    EXPECT_LT(x, n);
  }
}

// Ten one-GPU nodes and twenty whole-GPU pods: each pod is 10 % of the capacity.
struct SmallExperiment : ::testing::Test {
  std::vector<Node> nodes;
  std::vector<Pod> pods;
  void SetUp() override {
    for (int i = 0; i < 10; ++i) nodes.push_back(node("n" + std::to_string(i), 1));
    for (int i = 0; i < 20; ++i) pods.push_back(pod("p" + std::to_string(i), 1, 1000));
  }
};

TEST_F(SmallExperiment, SeriesAtEveryFivePercentUpTo130) {
  const ExperimentResult r = run_experiment(nodes, pods, {});
  EXPECT_EQ(r.gpu_capacity_milli, 10'000);
  EXPECT_EQ(r.submitted_pods, 13) << "tuned down to 130 % of 10 GPUs";
  ASSERT_EQ(r.series.size(), 27U);
  for (std::size_t i = 0; i < r.series.size(); ++i) {
    const SeriesPoint& p = r.series[i];
    EXPECT_EQ(p.step_percent, static_cast<int>(5 * i));
    EXPECT_GE(p.arrived_gpu_milli * 100, std::int64_t{p.step_percent} * r.gpu_capacity_milli);
    // The first pod that reaches the step: one pod (1000 milli) less would not.
    if (p.step_percent > 0) {
      EXPECT_LT((p.arrived_gpu_milli - 1000) * 100, std::int64_t{p.step_percent} * 10'000);
    }
    EXPECT_EQ(p.allocated_gpu_milli + p.unallocated_gpu_milli, r.gpu_capacity_milli);
  }
  const SeriesPoint* full = r.at(100);
  ASSERT_NE(full, nullptr);
  EXPECT_EQ(full->unallocated_gpu_milli, 0);
  EXPECT_EQ(full->failed_pods, 0);
  EXPECT_EQ(r.at(130)->failed_pods, 3);
  EXPECT_EQ(r.at(130)->failed_gpu_milli, 3000);
}

TEST_F(SmallExperiment, TunesUpWithCopiesOfTracePods) {
  pods.resize(5);  // 50 % of the capacity: copies bring it to 130 %
  const ExperimentResult r = run_experiment(nodes, pods, {});
  EXPECT_EQ(r.submitted_pods, 13);
  EXPECT_EQ(r.series.back().arrived_gpu_milli, 13'000);
}

void expect_same(const ExperimentResult& a, const ExperimentResult& b) {
  ASSERT_EQ(a.series.size(), b.series.size());
  for (std::size_t i = 0; i < a.series.size(); ++i) {
    EXPECT_EQ(a.series[i].arrived_gpu_milli, b.series[i].arrived_gpu_milli);
    EXPECT_EQ(a.series[i].allocated_gpu_milli, b.series[i].allocated_gpu_milli);
    EXPECT_EQ(a.series[i].fragment_gpu_milli, b.series[i].fragment_gpu_milli);
    EXPECT_EQ(a.series[i].failed_pods, b.series[i].failed_pods);
  }
}

TEST(Experiment, DeterministicForASeed) {
  std::vector<Node> nodes;
  for (int i = 0; i < 12; ++i) nodes.push_back(node("n" + std::to_string(i), 1 + i % 4, i % 3 == 0 ? "V100M16" : "T4"));
  std::vector<Pod> pods;
  const std::int64_t shares[] = {200, 350, 500, 700, 1000};
  for (int i = 0; i < 60; ++i) {
    pods.push_back(pod("p" + std::to_string(i), i % 7 == 0 ? 2 : 1, i % 7 == 0 ? 1000 : shares[i % 5],
                       1'000 * (1 + i % 9),
                       i % 11 == 0 ? std::vector<std::string>{"V100M16"} : std::vector<std::string>{}));
  }
  for (const Placement placement : all_placements()) {
    ExperimentOptions options;
    options.placement = placement;
    options.seed = 9;
    expect_same(run_experiment(nodes, pods, options), run_experiment(nodes, pods, options));
  }
}

TEST(AlibabaInputs, ReportsTaskShapesTheMeasureCannotTakeWithFileAndLine) {
  Diagnostics diagnostics;
  const std::string text =
      "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n"
      "ok,1000,1024,1,500\n"
      "split,1000,1024,2,500\n"
      "none,1000,1024,1,0\n";
  EXPECT_FALSE(alibaba_pods(text, "pods.csv", diagnostics));
  ASSERT_EQ(diagnostics.size(), 2U);
  EXPECT_EQ(diagnostics[0].rule, kRuleGpuShape);
  EXPECT_EQ(diagnostics[0].file, "pods.csv");
  EXPECT_EQ(diagnostics[0].pos.line, 3);
  EXPECT_EQ(diagnostics[0].path, "num_gpu");
  EXPECT_EQ(diagnostics[1].pos.line, 4);
}

// A list with only CPU pods cannot fill the GPUs: refused with a reason, not run (tuning
// up with copies of GPU-less pods would never reach the target).
TEST(AlibabaInputs, RefusesAListWithoutGpuPods) {
  Diagnostics diagnostics;
  EXPECT_FALSE(alibaba_pods("name,cpu_milli,memory_mib,num_gpu,gpu_milli\ncpu-only,1000,1024,0,0\n", "pods.csv",
                            diagnostics));
  ASSERT_EQ(diagnostics.size(), 1U);
  EXPECT_EQ(diagnostics[0].rule, kRuleEmpty);
  EXPECT_NE(diagnostics[0].message.find("no pod of the list asks for a GPU"), std::string::npos);
}

TEST_F(SmallExperiment, CpuOnlyPodsAreNotCopiedForever) {
  for (auto& p : pods) {
    p.gpu_count = 0;
    p.gpu_milli = 0;
  }
  const ExperimentResult r = run_experiment(nodes, pods, {});
  EXPECT_EQ(r.submitted_pods, 20) << "nothing to tune with";
  EXPECT_EQ(r.series.back().allocated_gpu_milli, 0);
}

TEST(AlibabaInputs, PassesTheReadersDiagnosticsOn) {
  Diagnostics diagnostics;
  EXPECT_FALSE(alibaba_pods("name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,-1,1024,1,500\n", "pods.csv", diagnostics));
  ASSERT_FALSE(diagnostics.empty());
  EXPECT_EQ(diagnostics[0].rule, "trace.out-of-range");
  diagnostics.clear();
  EXPECT_FALSE(alibaba_nodes("sn,cpu_milli,memory_mib,gpu,model\nn0,0,1024,2,T4\n", "nodes.csv", diagnostics));
  ASSERT_FALSE(diagnostics.empty());
  EXPECT_EQ(diagnostics.back().rule, kRuleNodeCapacity);
  EXPECT_EQ(diagnostics.back().file, "nodes.csv");
}

std::string read_shared(const std::string& name) {
  auto text = doc::read_file(testing::shared_dir() + "/traces/alibaba-gpu-v2023/" + name, std::size_t{64} << 20);
  EXPECT_TRUE(text) << text.error();
  return text ? *text : std::string();
}

// The paper's headline on its own trace: FGD strands fewer GPUs than best-fit once the
// arrived demand reaches the capacity. The numbers themselves are not pinned.
TEST(DefaultTrace, FgdLeavesFewerGpusUnallocatedThanBestFit) {
  Diagnostics diagnostics;
  const auto nodes = alibaba_nodes(read_shared("openb_node_list_gpu_node.csv"), "nodes.csv", diagnostics);
  const auto pods = alibaba_pods(read_shared("openb_pod_list_default.csv"), "pods.csv", diagnostics);
  ASSERT_TRUE(nodes && pods) << (diagnostics.empty() ? "" : diagnostics.front().to_string());
  ExperimentOptions options;
  options.placement = Placement::Fgd;
  const ExperimentResult fgd = run_experiment(*nodes, *pods, options);
  options.placement = Placement::BestFit;
  const ExperimentResult best_fit = run_experiment(*nodes, *pods, options);

  EXPECT_EQ(fgd.nodes, 1213U);
  EXPECT_EQ(fgd.gpu_capacity_milli, 6212 * kMilliPerGpu);
  ASSERT_EQ(fgd.series.size(), 27U);
  ASSERT_EQ(best_fit.series.size(), 27U);
  // Before any pod, every free GPU is a fragment for the CPU-only task types only.
  EXPECT_GT(fgd.series[0].fragment_gpu_milli, 0.05 * 6212 * kMilliPerGpu);
  EXPECT_LT(fgd.series[0].fragment_gpu_milli, 0.25 * 6212 * kMilliPerGpu);
  EXPECT_EQ(fgd.at(50)->failed_pods, 0);
  EXPECT_LT(fgd.at(100)->unallocated_gpu_milli, best_fit.at(100)->unallocated_gpu_milli);
  EXPECT_LT(fgd.at(130)->unallocated_gpu_milli, best_fit.at(130)->unallocated_gpu_milli);
  EXPECT_GT(fgd.at(130)->failed_pods, 0) << "130 % of the capacity cannot all fit";
}

}  // namespace
}  // namespace gpubank::twin::fragment
