// The scanner's PromQL: a fixed, bounded set of aggregate instant queries, whatever the
// number of workloads, pods or GPUs (never one query per pod), and the facts read back from
// their answers. Pure.
//
//   allocations         gpubank_gpu_allocation_info summed by workload (a time-sliced device
//                       counts 1/holders) with its attribution, pool and exception labels
//   starts              the earliest gpubank_pod_start_time_seconds of each workload
//   borrowing           gpubank_bank_loan_gpus summed by borrower and pool
//   gpu_utilization     per workload and window: 100 x DCGM_FI_PROF_GR_ENGINE_ACTIVE, else
//                       DCGM_FI_DEV_GPU_UTIL (MIG instances have only the first)
//   memory_utilization  per workload and window: FB_USED / (FB_USED + FB_FREE)
//   power_fraction      per workload and window: POWER_USAGE / ENFORCED_POWER_LIMIT (only
//                       when some policy sets averagePowerFraction)
//   token_throughput    per workload and window: vLLM's prompt plus generated tokens per
//                       second, its pods joined through gpubank_gpu_allocation_info (only
//                       when some policy governs inference)
//   training_progress   per workload and window: the training steps its pods completed
//                       (increase of gpubank_training_steps_total, the largest of its
//                       pods: every rank counts the same steps), joined the same way (only
//                       when some policy governs training or batch work)
//   training_phase      per workload, window and lookback: the overhead states
//                       (metrics/job_phase.hpp) its pods reported over the lookback (the
//                       checkpoint grace, at least 2m) and the largest fraction of the
//                       window one of its pods spent in them (same condition)
//
// The per-window queries average over every distinct window of the policies in one query
// each (a `window` label tells them apart), restricted to the workload types those
// policies govern: 5 to 9 queries per scan. Device samples are the attribution exporter's
// (mapping_status="mapped", docs/attribution.md), so only attributed GPUs are judged.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/expected.hpp"
#include "governance/lowutil.hpp"
#include "serving/signals.hpp"

namespace gpubank::governance {

// The training-progress counter a training job's pods may export (docs/metrics-contract.md):
// optimizer steps completed, scraped with the pod's namespace and pod labels.
inline constexpr std::string_view kTrainingStepsSeries = "gpubank_training_steps_total";

struct Query {
  std::string name;    // "allocations", "starts", ...
  std::string promql;
};

[[nodiscard]] std::vector<Query> plan_queries(const std::vector<ScanPolicy>& policies);

// The answers, by query name (as read_prometheus_query returned them).
using Answers = std::map<std::string, std::vector<serving::PromSample>, std::less<>>;

// One WorkloadFacts per workload (workload_key, kept in workload_uid) in the allocations
// answer, sorted by key, with the
// averages over the window of the policy that governs it. A workload listed under several
// pools or owners (pods that disagree) sums its GPUs and takes the labels of its largest
// part. Fails, naming the query and label, on an answer that breaks the query's shape (a
// sample without a workload or window, a non-numeric keep_running_until).
[[nodiscard]] Expected<std::vector<WorkloadFacts>> facts_from(const Answers& answers,
                                                              const std::vector<ScanPolicy>& policies);

// What the scanner keys a workload by: its UID, or "<kind>/<namespace>/<name>" when its pods
// do not carry the UID (Deployments, InferenceServices, LeaderWorkerSets, Ray); empty when
// not even the name is known (unattributed devices, never judged).
[[nodiscard]] std::string workload_key(std::string_view uid, std::string_view kind, std::string_view namespace_name,
                                       std::string_view name);

// The Go-style text of a window as the queries and the `window` label write it ("1h30m").
[[nodiscard]] std::string promql_duration(const Duration& d);

}  // namespace gpubank::governance
