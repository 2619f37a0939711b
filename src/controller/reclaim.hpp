// Graceful reclaim in a cluster, the pure half: what to do next, from the cluster's Kueue
// Workloads, ClusterQueues and LocalQueues and the policy set, at a given time.
//
// gpubank renders every ClusterQueue with reclaimWithinCohort: Never, so Kueue never
// preempts a borrower on its own; the bank does it gracefully, with the twin's rules
// (src/bank): borrowed GPUs are attributed to lenders (bank::BorrowTracker), a lender's
// demand is what its pending workloads need within its guarantee, victims are chosen
// among the workloads running on what that lender lent (bank::choose_victims, honouring
// reclaimPolicy.onlyPreempt, protected types and preemptible: false). Then, per victim:
//
//   Notice     annotate the victim's job (the Workload's controller owner: Job, JobSet,
//              PyTorchJob, RayJob) with platform.gpubank.dev/checkpoint-requested=<time>
//              and the Workload with the reclaim's lender and deadline (now + the lender's
//              reclaimPolicy.gracePeriod, else the guardrails' maxGracePeriod)
//   Stop       when the job reports platform.gpubank.dev/checkpoint-completed (a time at or
//              after the request) or the deadline passed: set the Workload's spec.active to
//              false, which releases its quota (Kueue evicts it); the lender's pending
//              workload is then admitted by Kueue
//   Resume     a victim stopped by gpubank is reactivated (spec.active true) once its
//              lender has no pending demand left; Kueue queues it again
//   Cancel     a notice whose lender has no demand left any more is withdrawn
//
// A low-utilisation reclaim a person approved (governance/reclaim_approval.hpp) takes the
// same Notice and Stop, with reclaim-for "approved:low-utilization" instead of a lender and
// the victim group's own grace. It is never cancelled or resumed (the approval stands; the
// owner reactivates the job when there is work for it) and holds nobody's borrowing.
//
//   Downgrade  an approved downgrade instead: the Workload's spec.priority becomes the
//              class's value (the guardrails' priorities, rendered as Kueue
//              WorkloadPriorityClasses with the same values); where the Workload refers to
//              a WorkloadPriorityClass, the reference and the job's
//              kueue.x-k8s.io/priority-class label move to the new class too, so Kueue's
//              job reconciler (v0.12+ re-reads that label) agrees. Kueue's Workload CRD
//              keeps priority mutable at all times, and the class name mutable while quota
//              is reserved only for WorkloadPriorityClasses; a pod PriorityClass reference
//              is left as it is. Where Kueue's job webhook refuses the label (before the
//              newest Kueue it is immutable on a running job: 403 or 422 from the
//              admission webhook), spec.priority alone is lowered and the class reference
//              stays, agreeing with the label; those versions' reconciler compares the
//              class name only, so the lower priority holds. Marked
//              platform.gpubank.dev/downgraded-to; redone when the priority is found
//              raised again.
//
// The reclaim's state lives in the Workload's annotations, not in the controller: a new
// leader, or a restarted one, continues where the last one stopped.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "policy/policy_set.hpp"
#include "render/object.hpp"

namespace gpubank::controller {

inline constexpr std::string_view kCheckpointRequested = "platform.gpubank.dev/checkpoint-requested";
inline constexpr std::string_view kCheckpointCompleted = "platform.gpubank.dev/checkpoint-completed";
inline constexpr std::string_view kReclaimFor = "platform.gpubank.dev/reclaim-for";            // the lender
inline constexpr std::string_view kReclaimDeadline = "platform.gpubank.dev/reclaim-deadline";  // RFC 3339
inline constexpr std::string_view kReclaimedAt = "platform.gpubank.dev/reclaimed-at";          // stopped by gpubank
inline constexpr std::string_view kDowngradedTo = "platform.gpubank.dev/downgraded-to";  // an approved downgrade's class
inline constexpr std::string_view kKueuePriorityClassLabel = "kueue.x-k8s.io/priority-class";
inline constexpr std::string_view kWorkloadTypeLabel = "platform.gpubank.dev/workload-type";
inline constexpr std::string_view kCheckpointableLabel = "platform.gpubank.dev/checkpointable";  // "true"
// reclaim-for of an approved low-utilisation reclaim: not a group name (a colon).
inline constexpr std::string_view kApprovedLowUtilization = "approved:low-utilization";
// How often a notice's job is read for checkpoint-completed while the grace runs.
inline constexpr std::int64_t kCheckpointPollMs = 5000;

// A Kueue Workload as the planner needs it.
struct ClusterWorkload {
  std::string key;  // "<namespace>/<name>"
  std::string owner_uid;  // the controller owner's metadata.uid (the job's): what attribution calls workload_uid
  std::string owner_kind, owner_name;  // the controller owner (the job): attribution's workload_kind and workload
  std::string cluster_queue;
  std::string group;  // the ClusterQueue's platform.gpubank.dev/business-group label
  std::string pool;   // its platform.gpubank.dev/resource-pool label
  std::string flavor;  // the ResourceFlavor admitted for the GPUs (status.admission); else the pool's
  std::int64_t gpus = 0;
  std::int64_t pods = 0;          // Σ pod set counts
  std::int64_t gpus_per_pod = 0;  // of the first pod set that asks for GPUs
  bool admitted = false;  // holds quota (QuotaReserved) and is not finished
  bool active = true;     // spec.active
  bool finished = false;
  std::int32_t priority = 0;
  std::string priority_class;       // spec.priorityClassName (v1beta1) or spec.priorityClassRef.name (v1beta2)
  std::string downgraded_to;        // the downgraded-to annotation
  std::int64_t admitted_at_ms = 0;  // QuotaReserved's lastTransitionTime
  std::int64_t created_ms = 0;
  // QuotaReserved's lastTransitionTime while it is True, finished or not (0: never seen).
  std::int64_t quota_reserved_ms = 0;
  std::int64_t finished_ms = 0;  // Finished's lastTransitionTime (0: not finished)
  std::string workload_type;        // the workload-type label ("" unknown)
  std::vector<std::string> traits;  // batch, checkpointable, training, development
  // The reclaim in progress (annotations).
  std::string reclaim_for;
  std::optional<std::int64_t> checkpoint_requested_ms;
  std::optional<std::int64_t> reclaim_deadline_ms;
  std::optional<std::int64_t> reclaimed_ms;           // spec.active set false by gpubank
  std::optional<std::int64_t> checkpoint_completed_ms;  // from the owner job
};

// The Workloads, read from the objects: `workloads` as listed, `cluster_queues` and
// `local_queues` to find each one's ClusterQueue (admitted: status.admission; pending:
// its LocalQueue's) and the group and pool from the ClusterQueue's labels. Workloads of
// queues gpubank did not render (no such labels) are left out. The GPU count is the
// ClusterQueue's first covered resource summed over the pod sets (count x per-pod request).
// `owners`: checkpoint-completed times of the owner jobs, by Workload key.
[[nodiscard]] std::vector<ClusterWorkload> read_workloads(const std::vector<nlohmann::json>& workloads,
                                                          const std::vector<nlohmann::json>& cluster_queues,
                                                          const std::vector<nlohmann::json>& local_queues,
                                                          const std::map<std::string, std::int64_t>& owners = {});

struct ReclaimStep {
  enum class Kind { Notice, Stop, Resume, Cancel, Downgrade };
  Kind kind = Kind::Notice;
  std::string workload;  // "<namespace>/<name>"
  std::string lender;    // business group
  std::string pool;
  std::int64_t gpus = 0;
  std::int64_t deadline_ms = 0;  // Notice
  std::string reason;   // CheckpointRequested, CheckpointCompleted, GraceExpired, DemandGone, LenderIdle
  std::string message;  // one sentence with the numbers
  // Stop: the victim's group, and the GPU-ms of work it loses: GPUs x the time since the
  // later of its admission and its job's last checkpoint-completed (one reported before the
  // notice counts too); unknown (none) when neither time is known.
  std::string victim_group;
  std::optional<std::int64_t> recompute_loss_gpu_ms;
  // Downgrade: the priority class and its value.
  std::string priority_class;
  std::int32_t priority = 0;
};
[[nodiscard]] std::string_view step_name(ReclaimStep::Kind kind);  // "Notice", ...

struct ReclaimPlan {
  std::vector<ReclaimStep> steps;
  // When to look again: the earliest deadline of a notice under way, or the next
  // checkpoint poll (kCheckpointPollMs) before it.
  std::optional<std::int64_t> next_deadline_ms;
  // Per "<pool>/<lender>": GPUs the lender needs within its guarantee that neither free
  // quota, notices under way nor eligible victims cover (logged). Borrowers the lender's
  // onlyPreempt excludes are attributed to the cohort, not to it, and are never its victims.
  std::map<std::string, std::int64_t> uncovered;
  // Per pool, the lenders with a reclaim under way after this plan: a notice sent or
  // running, or a victim stopped while the lender still waits. While one runs, the pool's
  // other groups borrow nothing new (hold_borrowing_during_reclaims), as in the twin: what
  // a stopped victim frees goes to the lender, not to the next borrower.
  std::map<std::string, std::set<std::string>> reclaiming;
  // Approved downgrades not carried out, with why (the class is gone from the guardrails,
  // or the workload's priority is not above it): one line each, by Workload key.
  std::map<std::string, std::string> downgrades_skipped;
};

// A low-utilisation reclaim a person approved, for the Workload whose controller owner has
// this UID.
struct ApprovedStop {
  std::string owner_uid;
  std::int64_t alert_id = 0;
  std::string approver;
  std::string downgrade_to;  // a downgrade to this priority class instead of a stop
};

// Pure: the same inputs give the same steps in the same order.
[[nodiscard]] ReclaimPlan plan_reclaims(const policy::PolicySet& set, const std::vector<ClusterWorkload>& workloads,
                                        std::int64_t now_ms, const std::vector<ApprovedStop>& approved = {});

// Sets borrowingLimit 0 on the pool's flavor of every rendered ClusterQueue of a pool in
// `reclaiming` whose group is not one of the lenders reclaiming there (the twin's rule,
// applied by the policy pass before the steps are carried out). One line per queue held.
[[nodiscard]] std::vector<std::string> hold_borrowing_during_reclaims(
    std::vector<render::RenderedObject>& objects, const std::map<std::string, std::set<std::string>>& reclaiming);

}  // namespace gpubank::controller
