// Kueue's scheduler scalability generator config (test/performance/scheduler/configs/*/
// generator.yaml upstream, runner/generator/generator.go): cohort sets x queue sets x
// workload sets. Decoded with positioned errors: unknown fields, wrong types, negative
// counts, and sizes that would not fit in memory are rejected with the field's path.
//
// Upstream's quantities (nominalQuota, borrowingLimit, request) are Kubernetes quantity
// strings; a plain YAML number is read as the same quantity ("request: 1" is one cpu).
// The TAS extensions (topology, resourceFlavor.nodeLabel/topologyName, the workloads'
// tasConstraint/tasLevel/sliceSize) are recognised and rejected as unsupported. A
// workload's podCount is accepted and ignored with a warning: upstream only reads it with
// tasLevel; otherwise its workloads have one pod.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/diagnostic.hpp"
#include "core/quantity.hpp"
#include "twin/admission/model.hpp"

namespace gpubank::twin::kueue_perf {

// Rule ids of findings beyond the schema.* ones of the decoder.
inline constexpr std::string_view kRuleTooLarge = "kueue-perf.too-large";
inline constexpr std::string_view kRuleUnsupported = "kueue-perf.unsupported";
inline constexpr std::string_view kRuleDuplicateName = "kueue-perf.duplicate-name";
inline constexpr std::string_view kRuleNameTooLong = "kueue-perf.name-too-long";
inline constexpr std::string_view kRuleIgnored = "kueue-perf.ignored";

// What one generator config may expand to. Every workload costs memory in the model and
// in the core, so these bound what a config (or a typo in a count) can ask for.
struct ConfigLimits {
  std::int64_t max_workloads = 10'000'000;
  std::int64_t max_queues = 100'000;
  std::int64_t max_milliseconds = 1'000'000'000;  // runtimeMs, creationIntervalMs (~11.6 days)
  std::int64_t max_request_cpus = 1'000'000;      // one workload's request
  std::int64_t max_quota_cpus = 1'000'000'000;    // nominalQuota, borrowingLimit
};

struct WorkloadTemplate {
  std::string class_name;
  std::int64_t runtime_ms = 0;
  int priority = 0;
  Quantity request;  // cpu of the workload's one pod
};

struct WorkloadsSet {
  std::int64_t count = 0;  // rounds
  std::int64_t creation_interval_ms = 0;
  std::vector<WorkloadTemplate> workloads;
};

struct QueuesSet {
  std::string class_name;
  std::int64_t count = 0;
  Quantity nominal_quota;
  std::optional<Quantity> borrowing_limit;  // unset: no limit (upstream: empty string)
  PreemptionPolicy reclaim_within_cohort = PreemptionPolicy::Never;
  PreemptionPolicy within_cluster_queue = PreemptionPolicy::Never;
  std::vector<WorkloadsSet> workloads_sets;
};

struct CohortSet {
  std::string class_name;
  std::int64_t count = 0;
  std::vector<QueuesSet> queues_sets;
};

struct ResourceFlavorConfig {
  std::string name = "rf";
};

struct GeneratorConfig {
  std::string file;  // where it was read from, for messages
  ResourceFlavorConfig resource_flavor;
  std::vector<CohortSet> cohorts;
};

// Upstream's names (generator.go): Cohort "<class>-<index>"; ClusterQueue, its namespace
// and its LocalQueue "<queue class>-<queue set index>-<index>-<cohort name>"; Workload
// "<class>-<workload set index>-<round>-<template index>" in the queue's namespace.
std::string cohort_name(std::string_view cohort_class, std::int64_t index);
std::string cluster_queue_name(std::string_view queue_class, std::size_t queue_set_index, std::int64_t index,
                               std::string_view cohort);
std::string workload_name(std::string_view workload_class, std::size_t workloads_set_index, std::int64_t round,
                          std::size_t template_index);

// Decodes one YAML (or JSON) document. Findings go to `diagnostics`, with `file` and
// positions; the result is set only when there were no errors.
std::optional<GeneratorConfig> parse_generator_config(std::string_view text, const std::string& file,
                                                      Diagnostics& diagnostics,
                                                      const ConfigLimits& limits = {});
// Reads and decodes a file (at most 16 MiB).
std::optional<GeneratorConfig> load_generator_config(const std::string& path, Diagnostics& diagnostics,
                                                     const ConfigLimits& limits = {});

}  // namespace gpubank::twin::kueue_perf
