// A deterministic discrete-event run of a generator scenario in virtual time, over the
// admission core's interface: what upstream's runner (generator + controller + recorder)
// does against a live Kueue, with an ideal controller that reacts in zero time.
//
// Events, in a priority queue keyed by (virtual ms, sequence number):
//   - creation: the next workload of a stream (see CreationStream) is submitted;
//   - finish: `runtimeMs` after its admission an admitted workload finishes and releases
//     its quota (AdmissionCore::finish). An eviction voids the pending finish.
// Events are handled in batches: all events at the same virtual time, in sequence order
// (which follows the expansion order for simultaneous creations). After each batch,
// cycles run at that time: while the core has active heads, run_cycle(now); every
// victim it evicted is released at once (release_evicted) and so requeued pending, as
// upstream's controller unsets a preempted workload's quota reservation as soon as it
// sees the Evicted condition; an admitted workload's runtime starts at its admission, and
// again from zero after a re-admission. Cycles stop when no head is active, or when a
// cycle nominated no head. A core that keeps nominating heads without admitting or
// evicting anything, more often than there are pending workloads and queues, is reported
// as an error rather than looped on forever.
//
// Usage per ClusterQueue is integrated exactly (mCPU x ms between events). Nothing reads
// a clock: the Summary is a function of the scenario and the core.
#pragma once

#include <cstdint>
#include <functional>

#include "core/expected.hpp"
#include "twin/admission/core.hpp"
#include "twin/kueue_perf/scenario.hpp"
#include "twin/kueue_perf/summary.hpp"

namespace gpubank::twin::kueue_perf {

struct Progress {
  VirtualTime now = 0;
  std::int64_t created = 0, admitted = 0, finished = 0, total = 0;
  std::uint64_t cycles = 0;
};

struct RunOptions {
  CoreOptions core;  // fair sharing on/off (Kueue's manager setting)
  // Called after every `progress_every` events (at a batch boundary) and once at the end.
  std::function<void(const Progress&)> progress;
  std::uint64_t progress_every = 4096;
};

// Runs the scenario on a core built from scenario.flavors and scenario.queue_specs
// (no Cohort objects: upstream's cohorts exist implicitly, without quota of their own).
Expected<Summary> simulate(const Scenario& scenario, AdmissionCore& core, const RunOptions& options = {});

// Builds the core (AdmissionCore::create) and simulates. Errors: the core rejected the
// objects, or it did not settle.
Expected<Summary> run(const Scenario& scenario, const RunOptions& options = {});

}  // namespace gpubank::twin::kueue_perf
