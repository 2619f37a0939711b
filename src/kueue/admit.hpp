// Running Kueue's admission over a set of objects with the twin's admission core, and
// writing the results back as Kueue would: Workloads with their status.admission and
// conditions, ClusterQueues with their usage status. The core is passed in (any
// twin::AdmissionCore), so this layer does not depend on one implementation.
//
//   AdmissionRun run(set);                       // plans every Workload (bridge.hpp)
//   auto core = twin::AdmissionCore::create(run.core_options(fair), ...run.inputs()...);
//   run.load(**core, diagnostics);               // restores, then submits
//   run.run(**core, {.cycles = std::nullopt});   // until stable
//   doc::Json list = run.encode(**core);         // v1 List: Workloads, then ClusterQueues
//
// Cycles: all Workloads exist at the start; cycle k runs at virtual time t0 + k ms, where
// t0 is the latest creation (or restored admission) time among the Workloads (bridge.hpp);
// Workloads blocked before the scheduler get their condition at t0. After each cycle the
// victims the core evicted are released at once (release_evicted), as Kueue does once
// their pods are gone, so a preemptor is admitted in a later cycle.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/diagnostic.hpp"
#include "core/expected.hpp"
#include "document/decode.hpp"
#include "kueue/bridge.hpp"
#include "kueue/objects.hpp"
#include "twin/admission/core.hpp"

namespace gpubank::kueue {

// One event of ../shared/spec/events.md.
struct Event {
  twin::VirtualTime t = 0;
  std::string kind;    // Admitted, Pending or Preempted
  std::string object;  // Workload/<namespace>/<name>
  std::string queue;   // the ClusterQueue, when known
  std::string reason;
  std::string message;
  std::vector<std::string> related;
};

// One JSON line: t, time, kind, object, queue, reason, message, related (empty ones left out).
[[nodiscard]] std::string to_json_line(const Event& event, const Timeline& timeline);

struct RunOptions {
  // Exactly this many cycles; nullopt: until stable (no ClusterQueue has an active head),
  // at most max_cycles() of them.
  std::optional<std::uint64_t> cycles;
};

class AdmissionRun {
 public:
  // Plans the Workloads; warnings (priority classes not found) go to `diagnostics`.
  AdmissionRun(const ObjectSet& set, Diagnostics& diagnostics);

  [[nodiscard]] const Timeline& timeline() const { return timeline_; }
  [[nodiscard]] const std::vector<WorkloadEntry>& entries() const { return entries_; }
  [[nodiscard]] CoreInputs inputs() const { return core_inputs(set_); }
  [[nodiscard]] static twin::CoreOptions core_options(bool fair_sharing);
  // The same with Kueue's --feature-gates applied ("Name=true,Name=false", as the manager
  // takes them) for the gates that change admission: PartialAdmission,
  // SchedulingEquivalenceHashing, UnadmittedWorkloadsObservability, QuotaCheckStrategy. Any other name, a
  // value that is not a boolean, or a malformed pair is an error naming it.
  [[nodiscard]] static Expected<twin::CoreOptions> core_options(bool fair_sharing, std::string_view feature_gates);
  // The manager's options: the input's Configuration (fairSharing with its strategies,
  // featureGates), then the command line's. --fair-sharing turns fair sharing on (with
  // Kueue's default strategies unless the Configuration sets them); --feature-gates is
  // refused when the Configuration sets featureGates, as the manager refuses both. Gates of
  // the Configuration the twin does not model are a warning in diagnostics.
  [[nodiscard]] static Expected<twin::CoreOptions> core_options(const ObjectSet& set, bool fair_sharing,
                                                                std::string_view feature_gates, Diagnostics& diagnostics);
  // The gates that change how statuses are written, as the core runs with them (default:
  // Kueue's). UnadmittedWorkloadsObservability decides how a reservation that waits for
  // its admission checks shows in the Admitted condition.
  void use_options(const twin::CoreOptions& options) { unadmitted_workloads_observability_ = options.unadmitted_workloads_observability; }
  // The cap of a run until stable: 1000 + 10 cycles per Workload.
  [[nodiscard]] std::uint64_t max_cycles() const;
  // Virtual time of the first cycle.
  [[nodiscard]] twin::VirtualTime first_cycle_time() const { return t0_; }

  // Restores the Workloads that hold quota, then submits the pending ones in creation
  // order. A restore the core refuses becomes a warning and the Workload is left as it is.
  void load(twin::AdmissionCore& core, Diagnostics& diagnostics);
  // Runs cycles; the number run, or an error when a run until stable reached the cap.
  Expected<std::uint64_t> run(twin::AdmissionCore& core, const RunOptions& options);

  [[nodiscard]] const std::vector<Event>& events() const { return events_; }

  // The input objects with the status Kueue would write.
  [[nodiscard]] doc::Json encode_workload(std::size_t index, const twin::AdmissionCore& core) const;
  [[nodiscard]] doc::Json encode_cluster_queue(std::size_t index, const twin::AdmissionCore& core) const;
  // A v1 List of every Workload, then every ClusterQueue, in input order.
  [[nodiscard]] doc::Json encode(const twin::AdmissionCore& core) const;

 private:
  void record(const twin::CycleResult& result, const twin::AdmissionCore& core);
  [[nodiscard]] std::string object_of(twin::WorkloadId id) const;
  // The admission checks, by name, that keep a reservation from being admitted (not Ready).
  [[nodiscard]] std::vector<std::string> unready_checks(std::size_t index, const twin::WorkloadStatus& st) const;
  // Holds a reservation whose admission checks are not all Ready.
  [[nodiscard]] bool awaits_checks(std::size_t index, const twin::WorkloadStatus& st) const;

  const ObjectSet& set_;
  Timeline timeline_;
  std::vector<WorkloadEntry> entries_;
  twin::VirtualTime t0_ = 0;
  std::vector<std::optional<twin::WorkloadId>> ids_;  // per Workload of the set
  std::map<twin::WorkloadId, std::size_t> index_of_;
  std::map<twin::WorkloadId, std::string> last_pending_;  // reason of the last Pending event
  std::vector<Event> events_;
  bool unadmitted_workloads_observability_ = true;
};

// Sets a condition the way apimeta.SetStatusCondition does: an existing one of that type
// keeps its place, and its lastTransitionTime unless the status changes; a new one is
// appended.
void set_condition(doc::Json& conditions, const std::string& type, bool status, const std::string& reason,
                   const std::string& message, const std::string& time, std::optional<std::int64_t> generation);

}  // namespace gpubank::kueue
