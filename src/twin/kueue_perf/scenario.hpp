// A generator config expanded the way upstream's generator.go creates objects: one
// ResourceFlavor, per generated ClusterQueue its spec (cohort, flavor, cpu quota,
// preemption), and per (queue, workload set) one creation stream. Workloads are not
// materialised here: a stream yields them one by one, so memory stays proportional to the
// queues, not to the workloads.
//
// Order (what makes equal-time events deterministic): cohort sets, cohort index, queue
// sets, queue index, as the config lists them; streams per queue in workload-set order.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "twin/admission/model.hpp"
#include "twin/kueue_perf/config.hpp"

namespace gpubank::twin::kueue_perf {

inline constexpr const char* kResource = "cpu";
inline constexpr const char* kPodSetName = "main";  // kueue.DefaultPodSetName

struct QueueInfo {
  std::string name;       // ClusterQueue = LocalQueue = namespace
  std::string cohort;
  std::string class_name;  // the queue set's className (upstream's class label)
  Amount nominal_quota = 0;  // millicores
  std::size_t cohort_set = 0, queue_set = 0;
};

// One workload set of one ClusterQueue: `rounds` rounds of `templates`, one creation every
// `interval_ms`, the first at `interval_ms` (upstream waits, then creates).
struct CreationStream {
  std::uint32_t queue = 0;            // index into Scenario::queues
  std::uint32_t workloads_set = 0;    // index within the queue set
  const WorkloadsSet* set = nullptr;  // points into Scenario::config
  std::int64_t rounds = 0;

  [[nodiscard]] std::int64_t size() const { return rounds * static_cast<std::int64_t>(set->workloads.size()); }
  // Creation time of the n-th workload (0-based) of this stream.
  [[nodiscard]] VirtualTime creation_time(std::int64_t n) const { return (n + 1) * set->creation_interval_ms; }
};

struct Scenario {
  GeneratorConfig config;
  std::vector<ResourceFlavorSpec> flavors;      // the one flavor, "rf" unless configured
  std::vector<ClusterQueueSpec> queue_specs;    // for AdmissionCore::create
  std::vector<QueueInfo> queues;                // parallel to queue_specs
  std::vector<CreationStream> streams;
  std::vector<std::string> workload_classes;    // sorted, distinct
  std::vector<std::string> queue_classes;       // sorted, distinct
  std::int64_t total_workloads = 0;

  Scenario() = default;
  // Streams point into `config`: copying would leave them pointing into the source.
  Scenario(const Scenario&) = delete;
  Scenario& operator=(const Scenario&) = delete;
  Scenario(Scenario&&) = default;
  Scenario& operator=(Scenario&&) = default;
};

// Expands a config that parse_generator_config accepted (its limits hold).
Scenario expand(GeneratorConfig config);

// The n-th (0-based) workload of a stream, created at `creation`, with the given uid.
// Requests `request` cpu in pod set "main" of one pod, and has the template's
// priority; its namespace and ClusterQueue are the stream's queue.
WorkloadSpec make_workload(const Scenario& scenario, const CreationStream& stream, std::int64_t n,
                           VirtualTime creation, std::string uid);
// The template the n-th workload of a stream comes from.
const WorkloadTemplate& workload_template(const CreationStream& stream, std::int64_t n);

}  // namespace gpubank::twin::kueue_perf
