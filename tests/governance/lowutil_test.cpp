// The verdict: which policy governs, every exception in its order, thresholds that must all
// hold, and no verdict without data. The examples' training-default: window 60m, GPU < 10 %
// and memory < 15 %, startup grace 30m, checkpoint grace 20m; notebooks-idle (pool
// mig-or-shared-development): window 30m, GPU < 5 % and power < 20 %, startup 10m.
#include "governance/lowutil.hpp"

#include <gtest/gtest.h>

#include "support/policy_fixture.hpp"

namespace gpubank::governance {
namespace {

constexpr std::int64_t kNow = 1'764'000'000'000;  // ms
constexpr double kNowS = kNow / 1000.0;

std::vector<ScanPolicy> example_policies(std::string_view extra = {}) {
  return scan_policies(gpubank::testing::examples_plus(extra));
}

WorkloadFacts training(double gpu, double memory) {
  WorkloadFacts w;
  w.workload_uid = "uid-train";
  w.business_group = "search";
  w.owner_id = "u1001";
  w.namespace_name = "search";
  w.workload_kind = "PyTorchJob";
  w.workload = "ranker";
  w.workload_type = "training";
  w.pool = "h100-rdma-training";
  w.gpu_model = "H100";
  w.gpus = 8;
  w.started_s = kNowS - 5 * 3600;
  w.gpu_utilization = gpu;
  w.memory_utilization = memory;
  return w;
}

TEST(LowUtilVerdict, BothThresholdsMustHold) {
  const auto policies = example_policies();
  const Verdict low = assess(training(3, 10), policies, kNow);
  EXPECT_EQ(low.kind, VerdictKind::Low);
  ASSERT_NE(low.policy, nullptr);
  EXPECT_EQ(low.policy->name, "training-default");
  EXPECT_EQ(low.reason, "GPU utilisation 3.0% < 10.0%, memory utilisation 10.0% < 15.0%");
  // Memory at 15 % is not below 15 %: the workload is fine.
  const Verdict fine = assess(training(3, 15), policies, kNow);
  EXPECT_EQ(fine.kind, VerdictKind::Fine);
  EXPECT_EQ(fine.reason, "memory utilisation 15.0% is not below 15.0%");
  EXPECT_EQ(assess(training(10, 1), policies, kNow).kind, VerdictKind::Fine);
}

// vLLM holds most of its GPU's memory for the KV cache from the start: where the pods report
// tokens, the memory threshold reads "served no token in the window" instead.
TEST(LowUtilVerdict, AVllmServersMemoryIsJudgedByItsTokens) {
  const auto policies = example_policies(gpubank::testing::kServingIdlePolicy);
  WorkloadFacts w = training(2, 92);  // 92 %: the KV cache
  w.workload_type = "inference";
  w.workload_kind = "InferenceService";
  w.pool = "h100-inference";
  // Without token series: memory decides, and 92 % is not below 20 %.
  EXPECT_EQ(assess(w, policies, kNow).kind, VerdictKind::Fine);
  // No token in two hours: idle, whatever the memory.
  w.tokens_per_second = 0;
  const Verdict idle = assess(w, policies, kNow);
  EXPECT_EQ(idle.kind, VerdictKind::Low);
  EXPECT_EQ(idle.reason, "GPU utilisation 2.0% < 5.0%, no tokens served");
  // A trickle of traffic uses the cache: fine.
  w.tokens_per_second = 0.25;
  const Verdict serving = assess(w, policies, kNow);
  EXPECT_EQ(serving.kind, VerdictKind::Fine);
  EXPECT_EQ(serving.reason, "served 0.25 tokens/s (vLLM holds its memory for the KV cache)");
  // Busy GPUs are fine before tokens are looked at.
  w.gpu_utilization = 40;
  w.tokens_per_second = 0;
  EXPECT_EQ(assess(w, policies, kNow).reason, "GPU utilisation 40.0% is not below 5.0%");
}

// Where a training job reports gpubank_training_steps_total, progress decides: a hung job
// (busy GPUs, no step) is low, an input-bound one (idle GPUs, steps) is fine. The exceptions
// still come first.
TEST(LowUtilVerdict, ATrainingJobsStepsDecideOverItsUtilisation) {
  const auto policies = example_policies();
  WorkloadFacts hung = training(97, 60);
  hung.training_steps = 0;
  const Verdict stalled = assess(hung, policies, kNow);
  EXPECT_EQ(stalled.kind, VerdictKind::Low);
  EXPECT_EQ(stalled.reason, "no training steps in 1h at GPU utilisation 97.0%");
  hung.training_steps = 0.4;  // extrapolation of a counter that did not move
  EXPECT_EQ(assess(hung, policies, kNow).kind, VerdictKind::Low);
  WorkloadFacts slow = training(3, 10);
  slow.training_steps = 120;
  const Verdict progressing = assess(slow, policies, kNow);
  EXPECT_EQ(progressing.kind, VerdictKind::Fine);
  EXPECT_EQ(progressing.reason, "120 training steps in 1h at GPU utilisation 3.0%");
  // Without utilisation samples, steps still judge.
  slow.gpu_utilization.reset();
  slow.memory_utilization.reset();
  EXPECT_EQ(assess(slow, policies, kNow).reason, "120 training steps in 1h");
  // Exceptions first: a checkpoint a minute ago excuses the stall.
  hung.last_checkpoint_ms = kNow - 60'000;
  EXPECT_EQ(assess(hung, policies, kNow).reason, "checkpoint-grace");
  // A notebook's steps, if it exported any, do not replace its thresholds.
  WorkloadFacts nb = training(1, 10);
  nb.workload_type = "notebook";
  nb.pool = "mig-or-shared-development";
  nb.power_fraction = 3;
  nb.training_steps = 50;
  EXPECT_EQ(assess(nb, policies, kNow).kind, VerdictKind::Low);
}

// The job's own phase (gpubank_training_phase): an evaluation, a load, a compile, a
// checkpoint or a recovery within the checkpoint grace excuses a dip or a stall, counted as
// job-phase; one that filled the whole window does not. A whole window of evaluation made
// no step by nature, so the thresholds judge it: busy is fine, idle is low, and the reason
// says which phase it was in.
TEST(LowUtilVerdict, AJobsOwnOverheadPhaseExcusesItUnlessItFilledTheWindow) {
  const auto policies = example_policies();
  WorkloadFacts evaluating = training(4, 10);
  evaluating.training_steps = 0;
  evaluating.overhead_phases = {"evaluating"};
  evaluating.overhead_fraction = 0.25;
  const Verdict excused = assess(evaluating, policies, kNow);
  EXPECT_EQ(excused.kind, VerdictKind::Excluded);
  EXPECT_EQ(excused.reason, "job-phase");
  // The exceptions before it still come first.
  evaluating.last_checkpoint_ms = kNow - 60'000;
  EXPECT_EQ(assess(evaluating, policies, kNow).reason, "checkpoint-grace");
  evaluating.last_checkpoint_ms.reset();
  // Just below the whole window still excuses; at 99 % the window was all overhead.
  evaluating.overhead_fraction = 0.98;
  EXPECT_EQ(assess(evaluating, policies, kNow).reason, "job-phase");
  WorkloadFacts stuck = training(4, 10);
  stuck.training_steps = 0;
  stuck.overhead_phases = {"loading"};
  stuck.overhead_fraction = 0.99;
  const Verdict judged = assess(stuck, policies, kNow);
  EXPECT_EQ(judged.kind, VerdictKind::Low);
  EXPECT_EQ(judged.reason, "GPU utilisation 4.0% < 10.0%, memory utilisation 10.0% < 15.0% (in loading for the whole 1h)");
  // A whole window of busy evaluation: no step, yet not idle.
  WorkloadFacts long_eval = training(85, 60);
  long_eval.training_steps = 0;
  long_eval.overhead_phases = {"evaluating"};
  long_eval.overhead_fraction = 1;
  EXPECT_EQ(assess(long_eval, policies, kNow).kind, VerdictKind::Fine);
  // Training now with no overhead in the lookback: the steps decide as before.
  WorkloadFacts back_to_training = training(4, 10);
  back_to_training.training_steps = 0;
  back_to_training.overhead_fraction = 0.3;
  EXPECT_EQ(assess(back_to_training, policies, kNow).reason, "no training steps in 1h at GPU utilisation 4.0%");
}

TEST(LowUtilVerdict, NoSamplesIsNoVerdict) {
  WorkloadFacts w = training(3, 10);
  w.memory_utilization.reset();
  const Verdict v = assess(w, example_policies(), kNow);
  EXPECT_EQ(v.kind, VerdictKind::NoData);
  EXPECT_EQ(v.reason, "no memory utilisation samples");
  // Without a start time the window cannot be known to be covered.
  WorkloadFacts unknown_start = training(3, 10);
  unknown_start.started_s.reset();
  EXPECT_EQ(assess(unknown_start, example_policies(), kNow).reason, "short-history");
}

TEST(LowUtilVerdict, ExceptionsInOrder) {
  const auto policies = example_policies();
  AssessOptions allow;
  allow.allowed_owners = {"u1001"};
  EXPECT_EQ(assess(training(0, 0), policies, kNow, allow).reason, "allow-listed-owner");

  WorkloadFacts floor = training(0, 0);
  floor.capacity_role = "serving-floor";
  floor.owner_id = "u2";
  EXPECT_EQ(assess(floor, policies, kNow).reason, "serving-floor");

  WorkloadFacts kept = training(0, 0);
  kept.keep_running_until_s = static_cast<std::int64_t>(kNowS) + 1;
  EXPECT_EQ(assess(kept, policies, kNow).reason, "keep-running-until");
  kept.keep_running_until_s = static_cast<std::int64_t>(kNowS);  // the instant has come
  EXPECT_EQ(assess(kept, policies, kNow).kind, VerdictKind::Low);

  WorkloadFacts young = training(0, 0);
  young.started_s = kNowS - 29 * 60;  // startup grace 30m
  EXPECT_EQ(assess(young, policies, kNow).reason, "startup-grace");
  young.started_s = kNowS - 45 * 60;  // past the grace, short of the 60m window
  EXPECT_EQ(assess(young, policies, kNow).reason, "short-history");

  WorkloadFacts checkpointing = training(0, 0);
  checkpointing.last_checkpoint_ms = kNow - 19 * 60'000;  // checkpoint grace 20m
  EXPECT_EQ(assess(checkpointing, policies, kNow).reason, "checkpoint-grace");
  checkpointing.last_checkpoint_ms = kNow - 20 * 60'000;
  EXPECT_EQ(assess(checkpointing, policies, kNow).kind, VerdictKind::Low);
}

TEST(LowUtilVerdict, TheMostSpecificPolicyGoverns) {
  const auto policies = example_policies(R"(apiVersion: platform.gpubank.dev/v1alpha1
kind: LowUtilizationPolicy
metadata: {name: search-training}
spec:
  match: {workloadType: training, businessGroup: search}
  window: 30m
  thresholds: {averageGpuUtilization: 20, averageMemoryUtilization: 15}
  startupGracePeriod: 15m
  checkpointGracePeriod: 20m
  notify: {first: owner, after: 1h, escalateTo: business-group-admin, repeatInterval: 6h}
  excludeWhen:
  - {label: platform.gpubank.dev/capacity-role, value: serving-floor}
  - {annotation: platform.gpubank.dev/keep-running-until}
)");
  const Verdict v = assess(training(15, 10), policies, kNow);
  ASSERT_NE(v.policy, nullptr);
  EXPECT_EQ(v.policy->name, "search-training");
  EXPECT_EQ(v.kind, VerdictKind::Low);  // 15 % is below search's 20 %, not the platform's 10 %
  WorkloadFacts ads = training(15, 10);
  ads.business_group = "ads";
  EXPECT_EQ(assess(ads, policies, kNow).policy->name, "training-default");
  EXPECT_EQ(assess(ads, policies, kNow).kind, VerdictKind::Fine);
}

TEST(LowUtilVerdict, UncoveredAndPoolScopedPolicies) {
  const auto policies = example_policies();
  WorkloadFacts nb = training(1, 1);
  nb.workload_type = "notebook";
  EXPECT_EQ(assess(nb, policies, kNow).kind, VerdictKind::Uncovered);  // notebooks-idle is for one pool
  nb.pool = "mig-or-shared-development";
  nb.power_fraction = 12;
  const Verdict v = assess(nb, policies, kNow);
  EXPECT_EQ(v.kind, VerdictKind::Low);
  EXPECT_EQ(v.reason, "GPU utilisation 1.0% < 5.0%, power draw 12.0% < 20.0%");
  WorkloadFacts inference = training(0, 0);
  inference.workload_type = "inference";
  EXPECT_EQ(assess(inference, policies, kNow).reason, "no LowUtilizationPolicy matches");
}

TEST(LowUtilVerdict, ExclusionsThePrometheusSideCannotSeeAreNamed) {
  const auto policies = example_policies(R"(apiVersion: platform.gpubank.dev/v1alpha1
kind: LowUtilizationPolicy
metadata: {name: batch}
spec:
  match: {workloadType: batch}
  window: 60m
  thresholds: {averageGpuUtilization: 5}
  excludeWhen:
  - {annotation: example.com/exempt}
  - {label: example.com/tier, value: gold}
)");
  const std::vector<std::string> w = unsupported_exclusions(policies);
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[0], "LowUtilizationPolicy/batch: excludeWhen annotation example.com/exempt is not exported to "
                  "Prometheus; only platform.gpubank.dev/keep-running-until is evaluated");
  EXPECT_EQ(w[1], "LowUtilizationPolicy/batch: excludeWhen label example.com/tier is not exported to Prometheus");
}

}  // namespace
}  // namespace gpubank::governance
