// From Kueue objects to the admission core's inputs (twin/admission/model.hpp).
//
// Time: the core runs on virtual milliseconds. Virtual time 0 is the earliest
// metadata.creationTimestamp among all input objects (the Unix epoch when no object has
// one); a Workload's queue-order timestamp is its creationTimestamp on that scale. A
// Workload without a creationTimestamp counts as created after every one that has one,
// 1 ms apart in input order. The core orders by whole seconds, as Kubernetes stamps them, so
// such Workloads tie within a second and their UIDs order them, as in Kueue.
//
// Priority (Kueue's pkg/util/priority, the WorkloadPriorityClass controller and the job
// reconciler's ExtractPriority):
//   1. spec.priorityClassRef to a WorkloadPriorityClass (group kueue.x-k8s.io): the
//      class's value, as Kueue's WorkloadPriorityClass controller keeps spec.priority;
//   2. else spec.priority (a reference to a Pod PriorityClass keeps spec.priority: the
//      twin has no PriorityClass objects); else 0 (constants.DefaultPriority), as
//      priority.Priority reads it.
// A named WorkloadPriorityClass that is not among the inputs gives a warning and falls
// through to spec.priority. The `kueue.x-k8s.io/priority-class` label is read by Kueue's
// job integrations when they create a Workload (jobframework sets spec.priorityClassRef and
// spec.priority from it), never by the scheduler: on a Workload applied as it is, a label
// without spec.priorityClassRef is left out, with a warning that says what it would have
// given (kueue.priority-label-not-read).
//
// How each Workload enters the core (Kueue's workload controller and scheduler):
//   - Finished=True: left as it is (Kueue no longer schedules it);
//   - status.admission with QuotaReserved=True: restore_admitted, admitted at the
//     condition's lastTransitionTime; when its ClusterQueue does not exist, an Admitted
//     one is left as it is and a merely reserved one loses its reservation ("ClusterQueue
//     X is terminating or missing");
//   - spec.active false: "The workload is deactivated" (left as it is when it holds quota;
//     Kueue would evict it);
//   - otherwise pending, blocked before the scheduler as Kueue's workload controller
//     blocks it: "LocalQueue X doesn't exist", "LocalQueue X is inactive", "ClusterQueue X
//     doesn't exist", and, in an active ClusterQueue, requests above limits ("resources
//     validation failed: ..."); else submit to the ClusterQueue of its LocalQueue.
// A ClusterQueue naming a ResourceFlavor that does not exist is inactive, as in Kueue
// ("Can't admit new workloads: references missing ResourceFlavor(s): x."); the core gets
// an empty placeholder flavor of that name so that it can build the quota tree.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/diagnostic.hpp"
#include "core/timestamp.hpp"
#include "kueue/objects.hpp"
#include "twin/admission/model.hpp"

namespace gpubank::kueue {

inline constexpr std::string_view kRulePriorityClassNotFound = "kueue.priority-class-not-found";  // warning
inline constexpr std::string_view kRulePriorityLabelNotRead = "kueue.priority-label-not-read";    // warning
inline constexpr std::string_view kRuleRestoreFailed = "kueue.restore-failed";                    // warning
// A ClusterQueue's namespaceSelector needs namespace labels and the input has no Namespace.
inline constexpr std::string_view kRuleSelectorNotEvaluated = "kueue.namespace-selector-not-evaluated";  // warning

struct Timeline {
  Timestamp start{};  // virtual time 0

  // Milliseconds since start, rounded down.
  [[nodiscard]] twin::VirtualTime to_virtual(Timestamp t) const;
  [[nodiscard]] Timestamp to_time(twin::VirtualTime t) const;
  // As metav1.Time prints: RFC 3339 in UTC, whole seconds.
  [[nodiscard]] std::string format(twin::VirtualTime t) const;
};

// Virtual time 0 at the earliest creationTimestamp of any input object.
[[nodiscard]] Timeline make_timeline(const ObjectSet& set);

struct PriorityResolution {
  std::int32_t value = 0;
  // Where it came from: "WorkloadPriorityClass <name>", "spec.priority" or "default".
  std::string source;
  std::optional<Diagnostic> warning;  // a named WorkloadPriorityClass that does not exist
};

[[nodiscard]] PriorityResolution resolve_priority(const Workload& wl, const ObjectSet& set);

// Kueue's ClusterQueue Active condition: whether it can admit, and why not.
struct QueueActivity {
  bool active = true;
  std::string reason = "Ready";
  std::string message = "Can admit new workloads";
};

[[nodiscard]] QueueActivity queue_activity(const ClusterQueue& cq, const ObjectSet& set);

struct CoreInputs {
  std::vector<twin::ResourceFlavorSpec> flavors;  // inputs, then placeholders for missing ones
  std::vector<twin::CohortSpec> cohorts;
  std::vector<twin::ClusterQueueSpec> queues;
};

[[nodiscard]] CoreInputs core_inputs(const ObjectSet& set);
[[nodiscard]] twin::ResourceGroup to_core(const ResourceGroup& group);
[[nodiscard]] twin::Toleration to_core(const Toleration& toleration);
// Parsed as Kueue parses it when it matches flavors (nodeaffinity's
// nodeSelectorRequirementsAsSelector, then labels.NewRequirement), with its errors worded
// as there.
[[nodiscard]] twin::NodeSelectorRequirement to_core(const NodeSelectorRequirement& requirement);

enum class Route {
  Submit,     // pending: core.submit
  Restore,    // holds quota: core.restore_admitted
  Blocked,    // pending before the scheduler: QuotaReserved=False with reason and message
  Untouched,  // left as it is
};

struct WorkloadEntry {
  Route route = Route::Untouched;
  twin::VirtualTime creation = 0;   // every route
  twin::WorkloadSpec spec;          // Submit and Restore
  twin::Admission admission;        // Restore
  twin::VirtualTime admitted_at = 0;  // Restore
  // Restore of an admitted Workload whose ClusterQueue has stopPolicy HoldAndDrain: evicted
  // at once (reason ClusterQueueStopped, "The ClusterQueue is stopped"), as Kueue's workload
  // controller does in reconcileOnClusterQueueActiveState.
  std::string drain_reason, drain_message;
  std::string reason, message;      // Blocked
  std::string cluster_queue;        // Blocked: the ClusterQueue that counts it as pending, if any
  bool drop_admission = false;      // Blocked: the reservation is released
};

// The core's view of one Workload (name, queue, priority, creation, pod sets).
[[nodiscard]] twin::WorkloadSpec workload_spec(const Workload& wl, const ObjectSet& set, twin::VirtualTime creation,
                                               Diagnostics& diagnostics);

// status.admission in the core's terms: usage as Amounts, scaled down to the pods left
// after status.reclaimablePods, as Kueue's totalRequestsFromAdmission does.
[[nodiscard]] twin::Admission admission_of(const Workload& wl);

// One entry per Workload of the set, in the same order. Warnings (priority classes not
// found) go to `diagnostics`.
[[nodiscard]] std::vector<WorkloadEntry> plan_workloads(const ObjectSet& set, const Timeline& timeline,
                                                        Diagnostics& diagnostics);

}  // namespace gpubank::kueue
