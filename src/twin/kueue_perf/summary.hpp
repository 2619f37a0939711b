// The result of a kueue-perf run, in the terms of upstream's runner summary
// (test/performance/scheduler/runner/recorder/recorder.go: Summary, CQGroupSummary,
// WorkloadsClassSummary; the usage percentage as checker/checker_test.go computes it),
// with virtual milliseconds where upstream has wall-clock timestamps, and a few additions
// (admitted/finished counts, p50/p90 time to admission).
//
// Everything here is a function of the config and the admission core's decisions: two
// runs give the same Summary, and the same bytes from to_json and format_text. Wall time
// and peak RSS are the command's business (upstream's CmdStats), not the model's.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "twin/admission/model.hpp"

namespace gpubank::twin::kueue_perf {

struct WorkloadClassSummary {
  std::string name;
  std::int64_t count = 0;            // workloads created (upstream: count)
  std::int64_t admitted = 0;         // admitted at least once
  std::int64_t finished = 0;
  std::int64_t total_evictions = 0;  // upstream: totalEvictions
  // Time from creation to the workload's last admission (upstream overwrites it on each
  // re-admission after an eviction), over the admitted workloads: the mean truncated to a
  // whole ms as upstream's integer division does, and nearest-rank percentiles.
  std::int64_t average_time_to_admission_ms = 0;
  std::int64_t p50_time_to_admission_ms = 0;
  std::int64_t p90_time_to_admission_ms = 0;
  std::int64_t max_time_to_admission_ms = 0;
  // Creation to finish, over the finished workloads (upstream: averageTimeToFinishMs).
  std::int64_t average_time_to_finish_ms = 0;
};

struct ClusterQueueClassSummary {
  std::string name;
  std::int64_t queues = 0;
  std::int64_t nominal_quota = 0;      // mCPU, summed over the class's queues
  std::int64_t cpu_used = 0;           // mCPU x ms of admitted usage, summed (saturates at int64)
  std::int64_t cpu_average_usage = 0;  // mCPU: cpu_used / observed time, truncated
  std::int64_t cpu_max_usage = 0;      // mCPU: the highest usage of any one queue of the class
  VirtualTime first_event_ms = 0;      // queues are created at 0
  VirtualTime last_event_ms = 0;       // last workload event (create/admit/evict/finish) in any queue
  // cpu_used * 100 / (nominal_quota * (last - first)): upstream's checker. 0 when undefined.
  double usage_percent = 0;
};

struct Summary {
  bool fair_sharing = false;
  std::int64_t queues = 0;
  std::int64_t workloads = 0;   // created
  std::int64_t admitted = 0;    // admitted at least once
  std::int64_t finished = 0;
  std::int64_t pending = 0;     // never finished: still pending when nothing was left to happen
  std::int64_t evictions = 0;
  std::uint64_t cycles = 0;     // scheduling cycles run
  std::uint64_t events = 0;     // creations and finishes (not the finishes voided by evictions)
  VirtualTime end_ms = 0;       // virtual time of the last event
  std::vector<WorkloadClassSummary> workload_classes;        // by name
  std::vector<ClusterQueueClassSummary> cluster_queue_classes;  // by name
};

// Upstream's summary.yaml field names (camelCase, classes keyed by name) plus ours.
[[nodiscard]] nlohmann::ordered_json to_json(const Summary& summary);
// Two tables for people.
[[nodiscard]] std::string format_text(const Summary& summary);

}  // namespace gpubank::twin::kueue_perf
