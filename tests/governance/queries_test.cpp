// The scanner's PromQL plan is bounded (5 queries; 7 with a policy on training or batch work,
// its steps and phase; one more with a power threshold, one more with a policy on inference;
// whatever the number of workloads) and its answers become one WorkloadFacts per workload.
#include "governance/queries.hpp"

#include <gtest/gtest.h>

#include "support/policy_fixture.hpp"

namespace gpubank::governance {
namespace {

serving::PromSample sample(std::map<std::string, std::string> labels, double value) {
  return serving::PromSample{std::move(labels), value, 0};
}

TEST(ScanQueries, OneQueryPerSignalWhateverTheWindows) {
  const auto policies = scan_policies(gpubank::testing::examples_plus());
  const std::vector<Query> plan = plan_queries(policies);
  std::vector<std::string> names;
  for (const Query& q : plan) names.push_back(q.name);
  // training-default governs training: its steps; notebooks-idle sets averagePowerFraction.
  EXPECT_EQ(names, (std::vector<std::string>{"allocations", "starts", "borrowing", "gpu_utilization",
                                             "memory_utilization", "training_progress", "training_phase",
                                             "power_fraction"}));
  // The job's phase over training-default's 20m checkpoint grace and its 1h window.
  EXPECT_EQ(plan[6].promql,
            "label_replace(label_replace(label_replace(max by (cluster, namespace, workload_kind, workload, "
            "workload_uid, gpubank_training_phase) (max_over_time(gpubank_training_phase{gpubank_training_phase=~"
            "\"loading|compiling|evaluating|checkpointing|recovering\"}[20m]) * on (cluster, namespace, pod) "
            "group_left (workload_kind, workload, workload_uid) max by (cluster, namespace, pod, workload_kind, "
            "workload, workload_uid) (gpubank_gpu_allocation_info{workload!=\"\"})) == 1, \"measure\", \"recent\", "
            "\"\", \"\") or label_replace(max by (cluster, namespace, workload_kind, workload, workload_uid) (sum by "
            "(cluster, namespace, pod) (avg_over_time(gpubank_training_phase{gpubank_training_phase=~\"loading|"
            "compiling|evaluating|checkpointing|recovering\"}[1h])) * on (cluster, namespace, pod) group_left "
            "(workload_kind, workload, workload_uid) max by (cluster, namespace, pod, workload_kind, workload, "
            "workload_uid) (gpubank_gpu_allocation_info{workload!=\"\"})), \"measure\", \"fraction\", \"\", \"\"), "
            "\"window\", \"1h\", \"\", \"\"), \"lookback\", \"20m\", \"\", \"\")");
  // Steps over training-default's hour only: the notebooks' window asks for none.
  EXPECT_EQ(plan[5].promql,
            "label_replace(max by (cluster, namespace, workload_kind, workload, workload_uid) "
            "(increase(gpubank_training_steps_total[1h]) * on (cluster, namespace, pod) group_left (workload_kind, "
            "workload, workload_uid) max by (cluster, namespace, pod, workload_kind, workload, workload_uid) "
            "(gpubank_gpu_allocation_info{workload!=\"\"})), \"window\", \"1h\", \"\", \"\")");
  // Both windows (30m for notebooks, 1h for training) in one query, each on its types.
  EXPECT_EQ(plan[3].promql,
            "label_replace(avg by (cluster, namespace, workload_kind, workload, workload_uid) (100 * "
            "avg_over_time(DCGM_FI_PROF_GR_ENGINE_ACTIVE{mapping_status=\"mapped\", workload!=\"\", "
            "workload_type=~\"notebook\"}[30m])) or avg by (cluster, namespace, workload_kind, workload, workload_uid) "
            "(avg_over_time(DCGM_FI_DEV_GPU_UTIL{mapping_status=\"mapped\", workload!=\"\", "
            "workload_type=~\"notebook\"}[30m])), \"window\", \"30m\", \"\", \"\")\n"
            "or label_replace(avg by (cluster, namespace, workload_kind, workload, workload_uid) (100 * "
            "avg_over_time(DCGM_FI_PROF_GR_ENGINE_ACTIVE{mapping_status=\"mapped\", workload!=\"\", "
            "workload_type=~\"training\"}[1h])) or avg by (cluster, namespace, workload_kind, workload, workload_uid) "
            "(avg_over_time(DCGM_FI_DEV_GPU_UTIL{mapping_status=\"mapped\", workload!=\"\", "
            "workload_type=~\"training\"}[1h])), \"window\", \"1h\", \"\", \"\")");
  // Without a power threshold, six; without training or batch work either, five.
  std::vector<ScanPolicy> training_only, notebooks_only;
  for (const ScanPolicy& p : policies) {
    if (p.name == "training-default") training_only.push_back(p);
    if (p.spec.match.workload_type == policy::WorkloadType::Notebook) notebooks_only.push_back(p);
  }
  EXPECT_EQ(plan_queries(training_only).size(), 7u);
  ASSERT_FALSE(notebooks_only.empty());
  EXPECT_EQ(plan_queries(notebooks_only).size(), 6u);  // with notebooks-idle's power
  EXPECT_EQ(plan_queries(notebooks_only)[5].name, "power_fraction");
}

TEST(ScanQueries, AnswersBecomeFactsUnderEachWorkloadsOwnWindow) {
  const auto policies = scan_policies(gpubank::testing::examples_plus());
  Answers a;
  a["allocations"] = {
      sample({{"workload_uid", "w1"}, {"business_group", "search"}, {"owner_id", "u1"}, {"namespace", "search"},
              {"workload_kind", "PyTorchJob"}, {"workload", "ranker"}, {"workload_type", "training"},
              {"pool", "h100-rdma-training"}, {"gpu_model", "H100"}, {"partition", "full"},
              {"keep_running_until", "1764003600"}},
             6),
      // Two pods of w1 on another pool: its GPUs add up, the larger part names it.
      sample({{"workload_uid", "w1"}, {"business_group", "search"}, {"workload_type", "training"}, {"pool", "other"}}, 2),
      sample({{"workload_uid", "w2"}, {"business_group", "ads"}, {"workload_type", "notebook"},
              {"pool", "mig-or-shared-development"}, {"capacity_role", "serving-floor"}},
             0.5),
  };
  a["starts"] = {sample({{"workload_uid", "w1"}}, 1764000000), sample({{"workload_uid", "zz"}}, 1)};
  a["borrowing"] = {sample({{"borrower", "search"}, {"pool", "h100-rdma-training"}}, 3),
                    sample({{"borrower", "search"}, {"pool", "h100-rdma-training"}, {"lender", "x"}}, 1)};
  a["gpu_utilization"] = {sample({{"workload_uid", "w1"}, {"window", "1h"}}, 4),
                          sample({{"workload_uid", "w1"}, {"window", "30m"}}, 99),
                          sample({{"workload_uid", "w2"}, {"window", "30m"}}, 2)};
  a["memory_utilization"] = {sample({{"workload_uid", "w1"}, {"window", "1h"}}, 12)};
  a["training_progress"] = {sample({{"workload_uid", "w1"}, {"window", "1h"}}, 240)};
  // w1 evaluated and checkpointed within the lookback, for 30 % of the hour at most; the
  // same workload under a window no policy of its gives is not read.
  a["training_phase"] = {
      sample({{"workload_uid", "w1"}, {"window", "1h"}, {"lookback", "20m"}, {"measure", "recent"},
              {"gpubank_training_phase", "evaluating"}},
             1),
      sample({{"workload_uid", "w1"}, {"window", "1h"}, {"lookback", "20m"}, {"measure", "recent"},
              {"gpubank_training_phase", "checkpointing"}},
             1),
      sample({{"workload_uid", "w1"}, {"window", "1h"}, {"lookback", "20m"}, {"measure", "fraction"}}, 0.3),
      sample({{"workload_uid", "w1"}, {"window", "30m"}, {"lookback", "2m"}, {"measure", "fraction"}}, 0.9),
  };
  const auto facts = facts_from(a, policies);
  ASSERT_TRUE(facts) << facts.error();
  ASSERT_EQ(facts->size(), 2u);
  const WorkloadFacts& w1 = (*facts)[0];
  EXPECT_EQ(w1.workload_uid, "w1");
  EXPECT_EQ(w1.gpus, 8);
  EXPECT_EQ(w1.pool, "h100-rdma-training");
  EXPECT_EQ(w1.owner_id, "u1");
  EXPECT_EQ(w1.keep_running_until_s, 1764003600);
  EXPECT_EQ(w1.started_s, 1764000000);
  EXPECT_EQ(w1.group_borrowed_gpus, 4);
  EXPECT_EQ(w1.gpu_utilization, 4);  // training-default's 1h, not the 30m average
  EXPECT_EQ(w1.memory_utilization, 12);
  EXPECT_FALSE(w1.power_fraction);
  EXPECT_EQ(w1.training_steps, 240);
  EXPECT_EQ(w1.overhead_phases, (std::vector<std::string>{"evaluating", "checkpointing"}));  // kOverhead order
  EXPECT_EQ(w1.overhead_fraction, 0.3);
  const WorkloadFacts& w2 = (*facts)[1];
  EXPECT_TRUE(w2.overhead_phases.empty());
  EXPECT_FALSE(w2.overhead_fraction);
  EXPECT_EQ(w2.gpus, 0.5);
  EXPECT_EQ(w2.capacity_role, "serving-floor");
  EXPECT_EQ(w2.gpu_utilization, 2);
  EXPECT_FALSE(w2.started_s);
}

// A policy on inference adds one query: vLLM's token throughput over that policy's window,
// its pods joined to their workload; the facts carry it under the governing window.
TEST(ScanQueries, APolicyOnInferenceAsksForTokenThroughput) {
  const auto policies = scan_policies(gpubank::testing::examples_plus(gpubank::testing::kServingIdlePolicy));
  const std::vector<Query> plan = plan_queries(policies);
  std::vector<std::string> names;
  for (const Query& q : plan) names.push_back(q.name);
  EXPECT_EQ(names, (std::vector<std::string>{"allocations", "starts", "borrowing", "gpu_utilization",
                                             "memory_utilization", "token_throughput", "training_progress",
                                             "training_phase", "power_fraction"}));
  EXPECT_EQ(plan[5].promql,
            "label_replace(sum by (cluster, namespace, workload_kind, workload, workload_uid) ((sum by (cluster, "
            "namespace, pod) (rate(vllm:prompt_tokens_total[2h])) + sum by (cluster, namespace, pod) "
            "(rate(vllm:generation_tokens_total[2h]))) * on (cluster, namespace, pod) group_left (workload_kind, "
            "workload, workload_uid) max by (cluster, namespace, pod, workload_kind, workload, workload_uid) "
            "(gpubank_gpu_allocation_info{workload!=\"\"})), \"window\", \"2h\", \"\", \"\")");
  Answers a;
  a["allocations"] = {sample({{"workload_kind", "InferenceService"}, {"namespace", "cs"}, {"workload", "llm"},
                              {"workload_type", "inference"}, {"pool", "h100-inference"}},
                             4),
                      sample({{"workload_kind", "InferenceService"}, {"namespace", "cs"}, {"workload", "quiet"},
                              {"workload_type", "inference"}, {"pool", "h100-inference"}},
                             4)};
  a["token_throughput"] = {
      sample({{"workload_kind", "InferenceService"}, {"namespace", "cs"}, {"workload", "llm"}, {"window", "2h"}}, 42.5),
      sample({{"workload_kind", "InferenceService"}, {"namespace", "cs"}, {"workload", "llm"}, {"window", "1h"}}, 99),
      // Prometheus' rate of a counter is never negative: such an answer is not a throughput.
      sample({{"workload_kind", "InferenceService"}, {"namespace", "cs"}, {"workload", "quiet"}, {"window", "2h"}}, -1)};
  const auto facts = facts_from(a, policies);
  ASSERT_TRUE(facts) << facts.error();
  ASSERT_EQ(facts->size(), 2u);
  EXPECT_EQ((*facts)[0].workload, "llm");
  EXPECT_EQ((*facts)[0].tokens_per_second, 42.5);  // serving-idle's 2h
  EXPECT_FALSE((*facts)[1].tokens_per_second);
  // Without a policy on inference, no token query.
  for (const Query& q : plan_queries(scan_policies(gpubank::testing::examples_plus()))) {
    EXPECT_NE(q.name, "token_throughput");
  }
}

TEST(ScanQueries, AWorkloadWhosePodsCarryNoUidIsKeyedByKindNamespaceAndName) {
  const auto policies = scan_policies(gpubank::testing::examples_plus());
  Answers a;
  a["allocations"] = {sample({{"workload_kind", "InferenceService"}, {"namespace", "cs"}, {"workload", "llm"},
                              {"workload_type", "inference"}, {"capacity_role", "serving-floor"}},
                             4)};
  a["starts"] = {sample({{"workload_kind", "InferenceService"}, {"namespace", "cs"}, {"workload", "llm"}}, 1764000000)};
  const auto facts = facts_from(a, policies);
  ASSERT_TRUE(facts) << facts.error();
  ASSERT_EQ(facts->size(), 1u);
  EXPECT_EQ((*facts)[0].workload_uid, "InferenceService/cs/llm");
  EXPECT_EQ((*facts)[0].started_s, 1764000000);
  EXPECT_EQ(workload_key("", "", "", ""), "");
  EXPECT_EQ(workload_key("6c1f", "Job", "ns", "j"), "6c1f");
}

TEST(ScanQueries, AnAnswerOfTheWrongShapeIsRefusedNamingTheLabel) {
  const auto policies = scan_policies(gpubank::testing::examples_plus());
  Answers a;
  a["allocations"] = {sample({{"workload_uid", "w1"}, {"keep_running_until", "tomorrow"}}, 1)};
  EXPECT_EQ(facts_from(a, policies).error(),
            "allocations: label keep_running_until must be Unix seconds (digits), got \"tomorrow\"");
  a["allocations"] = {sample({{"owner_id", "u1"}}, 1)};
  EXPECT_EQ(facts_from(a, policies).error(), "allocations: a sample without workload_uid or workload");
  a["allocations"] = {sample({{"workload_uid", "w1"}}, -1)};
  EXPECT_EQ(facts_from(a, policies).error(),
            "allocations: workload w1 holds a GPU count that is not a non-negative number");
  a["allocations"] = {};
  a["gpu_utilization"] = {sample({{"workload_uid", "w1"}}, 1)};
  EXPECT_EQ(facts_from(a, policies).error(), "gpu_utilization: a sample without a workload or window");
}

// A phase answer that breaks the query's shape is refused, naming the query and label.
TEST(ScanQueries, AMalformedPhaseAnswerIsRefusedNamingTheLabel) {
  const auto policies = scan_policies(gpubank::testing::examples_plus());
  Answers a;
  a["allocations"] = {sample({{"workload_uid", "w1"}, {"workload_type", "training"}, {"pool", "h100-rdma-training"}}, 1)};
  a["training_phase"] = {sample({{"workload_uid", "w1"}, {"window", "1h"}, {"lookback", "20m"}, {"measure", "recent"},
                                 {"gpubank_training_phase", "training"}},
                                1)};
  auto facts = facts_from(a, policies);
  ASSERT_FALSE(facts);
  EXPECT_EQ(facts.error(),
            "training_phase: workload w1: label gpubank_training_phase must be an overhead state, got \"training\"");
  a["training_phase"] = {sample({{"workload_uid", "w1"}, {"window", "1h"}, {"lookback", "20m"}, {"measure", "x"}}, 1)};
  facts = facts_from(a, policies);
  ASSERT_FALSE(facts);
  EXPECT_EQ(facts.error(), "training_phase: label measure must be recent or fraction, got \"x\"");
  a["training_phase"] = {sample({{"workload_uid", "w1"}, {"window", "1h"}, {"measure", "fraction"}}, 1)};
  facts = facts_from(a, policies);
  ASSERT_FALSE(facts);
  EXPECT_EQ(facts.error(), "training_phase: a sample without a workload, window or lookback");
}

}  // namespace
}  // namespace gpubank::governance
