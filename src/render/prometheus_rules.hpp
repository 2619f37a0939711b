// Policy -> prometheus-operator PrometheusRule objects (monitoring.coreos.com/v1): the
// recording rules of gpubank's metric label contract and FinOps, and tiered alerts.
// docs/metrics-contract.md defines the series these rules read; docs/render-monitoring.md
// explains every rule, threshold and default.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/duration.hpp"
#include "policy/policy_set.hpp"
#include "render/object.hpp"

namespace gpubank::render {

// Where the PrometheusRule objects live. prometheus-operator only picks them up when the
// Prometheus' ruleNamespaceSelector/ruleSelector match (docs/render-monitoring.md).
inline constexpr std::string_view kMonitoringNamespace = "gpubank-system";
// Evaluation interval of every rule group. GPU-hours are sums of 1-minute samples, so the
// FinOps rules depend on it.
inline constexpr std::string_view kRuleInterval = "1m";
inline constexpr int kRuleSamplesPerHour = 60;  // evaluations per hour at kRuleInterval

// Recording rules (level:metric:operations) that other rule objects and the dashboards read.
namespace series {
// Per device (whole GPU or MIG instance), joined with gpubank_gpu_info.
inline constexpr std::string_view kGpuUtilization = "gpu:dcgm_utilization:percent";
inline constexpr std::string_view kGpuMemoryUsed = "gpu:dcgm_memory_used:percent";
inline constexpr std::string_view kGpuPower = "gpu:dcgm_power_usage:percent_of_limit";
// Per allocation (device x container), carrying every attribution label.
inline constexpr std::string_view kAllocationShare = "allocation:gpubank_gpus_allocated:share";
inline constexpr std::string_view kAllocationUtilization = "allocation:dcgm_utilization:percent";
inline constexpr std::string_view kAllocationMemoryUsed = "allocation:dcgm_memory_used:percent";
inline constexpr std::string_view kAllocationPower = "allocation:dcgm_power_usage:percent_of_limit";
inline constexpr std::string_view kAllocationLowUtilization = "allocation:gpubank_gpu_low_utilization:share";
// Per LowUtilizationPolicy with a GPU utilisation threshold: the share while at or above it
// (0 while below), for the allocations the policy governs; for training and batch pods that
// report kTrainingSteps, the share while their steps advance (0 while they do not).
inline constexpr std::string_view kTrainingSteps = "gpubank_training_steps_total";  // the job's own counter
inline constexpr std::string_view kAllocationBusy = "allocation:gpubank_gpu_busy:share";
// vLLM time to first token per serving workload.
inline constexpr std::string_view kTtftBucketRate = "namespace_workload:vllm_time_to_first_token_seconds_bucket:rate5m";
inline constexpr std::string_view kTtftCountRate = "namespace_workload:vllm_time_to_first_token_seconds_count:rate5m";
inline constexpr std::string_view kTtftTarget = "namespace_workload:gpubank_ttft_p95_target:seconds";
// Tokens (prompt and generated) per second per serving workload, with its business group.
inline constexpr std::string_view kTokensRate = "namespace_workload:vllm_tokens:rate5m";
// Per InferenceScalingPolicy with a TTFT target: the workload's devices while vLLM reports
// requests (judged by the SLO), those of them while the p95 met the target, and the tokens
// served while it did.
inline constexpr std::string_view kSloJudged = "namespace_workload:gpubank_gpus_slo_judged:sum";
inline constexpr std::string_view kWithinSlo = "namespace_workload:gpubank_gpus_within_slo:sum";
inline constexpr std::string_view kEffectiveTokensRate = "namespace_workload:gpubank_effective_tokens:rate5m";
// Whole replicas of a service's shape the free GPUs of its pool form.
inline constexpr std::string_view kPlaceableReplicas = "namespace_workload:gpubank_placeable_replicas:count";
// Capacity and fragmentation.
inline constexpr std::string_view kNodeFree = "node:gpubank_gpus_free:sum";
inline constexpr std::string_view kPoolCapacity = "pool:gpubank_gpus_capacity:sum";
inline constexpr std::string_view kPoolAllocated = "pool:gpubank_gpus_allocated:sum";
inline constexpr std::string_view kPoolLargestFree = "pool:gpubank_gpus_free_largest_node:max";
// FinOps.
inline constexpr std::string_view kGroupAllocated = "business_group:gpubank_gpus_allocated:sum";
inline constexpr std::string_view kGroupPoolAllocated = "business_group_pool:gpubank_gpus_allocated:sum";
inline constexpr std::string_view kQueueAllocated = "queue:gpubank_gpus_allocated:sum";
inline constexpr std::string_view kModelAllocated = "model_name:gpubank_gpus_allocated:sum";
inline constexpr std::string_view kGpuModelAllocated = "gpu_model:gpubank_gpus_allocated:sum";
inline constexpr std::string_view kWorkloadAllocated = "workload:gpubank_gpus_allocated:sum";
inline constexpr std::string_view kGroupHours = "business_group:gpubank_gpu_hours:increase1h";
inline constexpr std::string_view kGroupPoolHours = "business_group_pool:gpubank_gpu_hours:increase1h";
inline constexpr std::string_view kQueueHours = "queue:gpubank_gpu_hours:increase1h";
inline constexpr std::string_view kModelHours = "model_name:gpubank_gpu_hours:increase1h";
inline constexpr std::string_view kGpuModelHours = "gpu_model:gpubank_gpu_hours:increase1h";
inline constexpr std::string_view kWorkloadHours = "workload:gpubank_gpu_hours:increase1h";
inline constexpr std::string_view kPrice = "gpu_model:gpubank_gpu_hour_price:config";
inline constexpr std::string_view kGroupPoolCostRate = "business_group_pool:gpubank_gpu_cost_per_hour:sum";
inline constexpr std::string_view kGroupPoolCost = "business_group_pool:gpubank_gpu_cost:increase1h";
inline constexpr std::string_view kGroupPoolLowUtil = "business_group_pool:gpubank_gpus_low_utilization:sum";
inline constexpr std::string_view kGroupPoolLowUtilHours = "business_group_pool:gpubank_low_utilization_gpu_hours:increase1h";
inline constexpr std::string_view kGroupPoolLowUtilCost = "business_group_pool:gpubank_low_utilization_cost:increase1h";
// Effective and measured devices (governance/showback.hpp defines them): the SLO judges
// serving workloads while vLLM reports, the utilisation threshold everything else a
// LowUtilizationPolicy governs.
inline constexpr std::string_view kGroupPoolEffective = "business_group_pool:gpubank_gpus_effective:sum";
inline constexpr std::string_view kGroupPoolMeasured = "business_group_pool:gpubank_gpus_measured:sum";
inline constexpr std::string_view kGroupPoolEffectiveHours = "business_group_pool:gpubank_effective_gpu_hours:increase1h";
inline constexpr std::string_view kGroupPoolMeasuredHours = "business_group_pool:gpubank_measured_gpu_hours:increase1h";
inline constexpr std::string_view kGroupPoolServingFloor = "business_group_pool:gpubank_gpus_serving_floor:sum";
inline constexpr std::string_view kGroupPoolServingFloorHours =
    "business_group_pool:gpubank_serving_floor_gpu_hours:increase1h";
inline constexpr std::string_view kGroupPoolServingFloorCost = "business_group_pool:gpubank_serving_floor_cost:increase1h";
inline constexpr std::string_view kGroupPoolInference = "business_group_pool:gpubank_gpus_inference:sum";
inline constexpr std::string_view kGroupPoolInferenceHours = "business_group_pool:gpubank_inference_gpu_hours:increase1h";
inline constexpr std::string_view kGroupPoolInferenceCost = "business_group_pool:gpubank_inference_cost:increase1h";
inline constexpr std::string_view kGroupTokens = "business_group:gpubank_tokens:increase1h";
inline constexpr std::string_view kGroupPoolEffectiveTokens = "business_group_pool:gpubank_effective_tokens:increase1h";
inline constexpr std::string_view kGroupPoolUnitCost =
    "business_group_pool:gpubank_inference_cost_per_million_effective_tokens:ratio1h";
inline constexpr std::string_view kPoolAllocationRate = "pool:gpubank_gpus_allocated:ratio";
// The bank: the ledger's loans and Kueue's ClusterQueue figures.
inline constexpr std::string_view kGroupPoolBorrowed = "business_group_pool:gpubank_gpus_borrowed:sum";
inline constexpr std::string_view kGroupPoolLent = "business_group_pool:gpubank_gpus_lent:sum";
inline constexpr std::string_view kQueueUsed = "cluster_queue:kueue_gpus_used:sum";
inline constexpr std::string_view kQueueNominal = "cluster_queue:kueue_gpus_nominal:sum";
inline constexpr std::string_view kQueueBorrowingLimit = "cluster_queue:kueue_gpus_borrowing_limit:sum";
inline constexpr std::string_view kQueuePendingGpus = "cluster_queue:kueue_gpus_pending:sum";
inline constexpr std::string_view kQueuePendingWorkloads = "cluster_queue:kueue_pending_workloads:sum";
inline constexpr std::string_view kQueueBorrowed = "cluster_queue:kueue_gpus_borrowed:sum";
inline constexpr std::string_view kGroupPoolBorrowedHours = "business_group_pool:gpubank_borrowed_gpu_hours:increase1h";
inline constexpr std::string_view kGroupPoolLentHours = "business_group_pool:gpubank_lent_gpu_hours:increase1h";
inline constexpr std::string_view kGroupPoolRecomputeLoss = "business_group_pool:gpubank_recompute_loss_gpu_hours:increase1h";
// Kueue's admission wait per ClusterQueue over the last hour.
inline constexpr std::string_view kQueueAdmissions = "cluster_queue:kueue_admitted_workloads:increase1h";
inline constexpr std::string_view kQueueWaitMean = "cluster_queue:kueue_admission_wait_time_seconds:mean1h";
inline constexpr std::string_view kQueueWaitP90 = "cluster_queue:kueue_admission_wait_time_seconds:p90_1h";
}  // namespace series

// PromQL text, shared with the dashboards.
namespace promql {
// A double-quoted string literal, with backslashes and quotes escaped.
[[nodiscard]] std::string quote(std::string_view text);
// A regular expression (RE2, fully anchored by the matcher) that matches exactly these
// strings: a|b\.c for {"a", "b.c"}.
[[nodiscard]] std::string alternation(const std::vector<std::string>& values);
// The shortest decimal text that reads back as the same number: 3.5, 0.2, 64.
[[nodiscard]] std::string number(double value);
// A Prometheus duration: "1h30m", "1s500ms", "0s".
[[nodiscard]] std::string duration(const Duration& d);
}  // namespace promql

// Renders a validated policy set into PrometheusRule objects, sorted by path
// (monitoring/prometheusrule-<name>.yaml):
//   gpubank-platform           label contract, capacity, FinOps, bank; GPU health alerts
//                              (sources: PlatformGuardrails)
//   gpubank-group-<group>      the group's quota and queue alerts
//                              (PlatformGuardrails and the group's GPUQuotaPolicies)
//   gpubank-inference-<name>   TTFT SLO burn, scale-out and headroom alerts of one service
//                              (its InferenceScalingPolicy, the quota on its pool)
//   gpubank-lowutil-<name>     low-utilisation accounting and notifications of one policy
//                              (its LowUtilizationPolicy and the more specific ones)
// so a change to one policy changes only the objects it feeds. Pure and deterministic.
// Throws std::invalid_argument naming object, field and rule when the set lacks what a
// validated set always has (the guardrails, a policy's pool).
[[nodiscard]] std::vector<RenderedObject> render_prometheus_rules(const policy::PolicySet& set);

}  // namespace gpubank::render
