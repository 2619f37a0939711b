// The summary of a run, per business group (all its pools together) and for the cluster:
//   per group: GPU-hours used (held by admitted workloads), borrowed (above its own
//   guarantee, from the borrow records), lent (others' use of its unused guarantee),
//   workloads arrived and admitted, queue wait p50/p90/p99 (arrival to first admission,
//   nearest rank), reclaims it started as lender, stops of its workloads, recompute loss;
//   cluster (with an inventory): GPUs, allocation rate (time-averaged share of GPUs held,
//   shared fractions counted by their share), idle GPU-hours, and fragmentation (the
//   average share of free GPUs that none of the waiting shapes could use, from the hourly
//   samples).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "twin/run/engine.hpp"

namespace gpubank::twin::run {

struct GroupSummary {
  std::string business_group;
  double used_gpu_hours = 0, borrowed_gpu_hours = 0, lent_gpu_hours = 0, loss_gpu_hours = 0;
  std::int64_t workloads = 0, admitted = 0, reclaims = 0, stops = 0;
  std::int64_t wait_p50_ms = 0, wait_p90_ms = 0, wait_p99_ms = 0;
};

struct ClusterSummary {
  std::int64_t gpus = 0;
  double hours = 0;
  double allocation_rate = 0;  // 0..1
  double idle_gpu_hours = 0;
  double fragmentation_rate = 0;  // stranded / free, over the samples; 0 without samples
  std::int64_t samples = 0;
};

struct Summary {
  std::vector<GroupSummary> groups;  // by name
  std::optional<ClusterSummary> cluster;
};

// The nearest-rank percentile (p in (0, 100]) of unsorted values; 0 for none.
[[nodiscard]] std::int64_t percentile(std::vector<std::int64_t> values, double p);

[[nodiscard]] Summary summarize(const RunResult& result);
[[nodiscard]] nlohmann::ordered_json summary_json(const Summary& summary);
[[nodiscard]] std::string summary_text(const Summary& summary);

}  // namespace gpubank::twin::run
