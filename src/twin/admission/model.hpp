// The admission core's input model: Kueue's quota objects and Workloads reduced to what
// admission decides on. Plain values, no Kubernetes wire format (src/kueue maps
// kueue.x-k8s.io/v1beta2 objects to and from these).
//
// Amounts are Kueue's int64 "Amount": CPU in millicores, every other resource in its base
// unit (bytes, GPUs, pods), exactly as Kueue's resources.ResourceValue() reduces a
// resource.Quantity.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/timestamp.hpp"

namespace gpubank::twin {

using Amount = std::int64_t;

// Quota arithmetic as Kueue's resources.Amount does it (pkg/resources/amount.go): the
// largest Amount is Unlimited (a quota too large for int64) and stays Unlimited through
// sums and differences; other results saturate at the ends of int64 instead of wrapping.
// Unlimited - Unlimited is 0; a bounded amount minus Unlimited is the smallest Amount.
inline constexpr Amount kUnlimitedAmount = std::numeric_limits<Amount>::max();
[[nodiscard]] constexpr Amount quota_add(Amount a, Amount b) {
  if (a == kUnlimitedAmount || b == kUnlimitedAmount) return kUnlimitedAmount;
  Amount r = 0;
  if (__builtin_add_overflow(a, b, &r)) return b > 0 ? kUnlimitedAmount : std::numeric_limits<Amount>::min();
  return r;
}
// Usage is plain int64 in Kueue, which wraps on overflow (requests clamp to int64, so two
// huge ones can): wrapping keeps adding and removing a workload exact inverses.
[[nodiscard]] constexpr Amount usage_add(Amount a, Amount b) {
  return static_cast<Amount>(static_cast<std::uint64_t>(a) + static_cast<std::uint64_t>(b));
}
[[nodiscard]] constexpr Amount usage_sub(Amount a, Amount b) {
  return static_cast<Amount>(static_cast<std::uint64_t>(a) - static_cast<std::uint64_t>(b));
}
[[nodiscard]] constexpr Amount quota_sub(Amount a, Amount b) {
  if (a == kUnlimitedAmount && b == kUnlimitedAmount) return 0;
  if (a == kUnlimitedAmount) return kUnlimitedAmount;
  if (b == kUnlimitedAmount) return std::numeric_limits<Amount>::min();
  Amount r = 0;
  if (__builtin_sub_overflow(a, b, &r)) return b < 0 ? kUnlimitedAmount : std::numeric_limits<Amount>::min();
  return r;
}
// A pod's request times the pod count, as Kueue's Requests.ScaledUp does it
// (utilmath.SaturatingMul): a product beyond int64 is the largest (or smallest) Amount.
[[nodiscard]] constexpr Amount request_times(Amount request, std::int64_t count) {
  Amount r = 0;
  if (__builtin_mul_overflow(request, count, &r)) {
    return (request < 0) == (count < 0) ? kUnlimitedAmount : std::numeric_limits<Amount>::min();
  }
  return r;
}
using VirtualTime = std::int64_t;  // milliseconds since the run's start

// kueue.x-k8s.io/v1beta2 PreemptionPolicy.
enum class PreemptionPolicy { Never, LowerPriority, LowerOrNewerEqualPriority, Any };
enum class BorrowWithinCohortPolicy { Never, LowerPriority };
enum class QueueingStrategy { BestEffortFIFO, StrictFIFO };
// flavorFungibility.whenCanBorrow / whenCanPreempt.
enum class FungibilityPolicy { MayStopSearch, TryNextFlavor };
// flavorFungibility.preference (unset: BorrowingOverPreemption behaviour).
enum class FungibilityPreference { Unset, BorrowingOverPreemption, PreemptionOverBorrowing };
enum class TaintEffect { NoSchedule, PreferNoSchedule, NoExecute };
// core/v1 toleration operators. Lt and Gt compare the values as integers (Kueue passes
// enableComparisonOperators=true); Unsupported stands for any other operator a pod
// template may carry (the Workload CRD does not restrict it), which tolerates nothing.
enum class TolerationOperator { Equal, Exists, Lt, Gt, Unsupported };

struct Taint {
  std::string key, value;
  TaintEffect effect = TaintEffect::NoSchedule;
  std::optional<Timestamp> time_added;  // timeAdded: only Kueue's message shows it
};

struct Toleration {
  std::string key;  // empty with Exists: tolerates everything
  TolerationOperator op = TolerationOperator::Equal;
  std::string value;
  std::optional<TaintEffect> effect;  // unset: all effects
};

// core/v1 NodeSelectorRequirement as labels.NewRequirement parses it (src/kueue parses).
enum class NodeSelectorOperator { In, NotIn, Exists, DoesNotExist, Gt, Lt };
struct NodeSelectorRequirement {
  std::string key;
  NodeSelectorOperator op = NodeSelectorOperator::In;
  std::vector<std::string> values;
  std::int64_t bound = 0;  // Gt and Lt: the value as an integer
  // What parsing the requirement reports, each error without the path of the requirement
  // (".values: Invalid value: ..."): Kueue reports them only when no term matches, under a
  // path whose indices count only the requirements kept for the flavor.
  std::vector<std::string> errors;
};
// A nodeSelectorTerm of requiredDuringSchedulingIgnoredDuringExecution. Its matchFields
// are left out: Kueue's flavorSelector copies only matchExpressions.
struct NodeSelectorTerm {
  std::vector<NodeSelectorRequirement> match_expressions;
};

struct ResourceFlavorSpec {
  std::string name;
  std::map<std::string, std::string> node_labels;
  std::vector<Taint> node_taints;
  std::vector<Toleration> tolerations;  // added to the pods' own tolerations
};

struct ResourceQuota {
  std::string resource;
  Amount nominal = 0;
  std::optional<Amount> borrowing_limit;
  std::optional<Amount> lending_limit;
};

struct FlavorQuotas {
  std::string flavor;
  std::vector<ResourceQuota> resources;
};

struct ResourceGroup {
  std::vector<std::string> covered_resources;
  std::vector<FlavorQuotas> flavors;  // tried in this order
};

struct ClusterQueuePreemption {
  PreemptionPolicy reclaim_within_cohort = PreemptionPolicy::Never;
  BorrowWithinCohortPolicy borrow_within_cohort = BorrowWithinCohortPolicy::Never;
  std::optional<std::int32_t> max_priority_threshold;
  PreemptionPolicy within_cluster_queue = PreemptionPolicy::Never;
};

struct FlavorFungibility {
  FungibilityPolicy when_can_borrow = FungibilityPolicy::MayStopSearch;
  FungibilityPolicy when_can_preempt = FungibilityPolicy::TryNextFlavor;
  FungibilityPreference preference = FungibilityPreference::Unset;
};

struct ClusterQueueSpec {
  std::string name;
  std::string cohort;  // empty: not in a cohort
  std::vector<ResourceGroup> resource_groups;
  QueueingStrategy queueing_strategy = QueueingStrategy::BestEffortFIFO;
  ClusterQueuePreemption preemption;
  FlavorFungibility flavor_fungibility;
  double fair_weight = 1.0;  // spec.fairSharing.weight
  bool active = true;        // false: stopPolicy set (Hold / HoldAndDrain)
};

struct CohortSpec {
  std::string name;
  std::string parent;  // spec.parentName; empty: a root
  std::vector<ResourceGroup> resource_groups;
  double fair_weight = 1.0;
};

struct PodSetSpec {
  std::string name;
  std::int32_t count = 1;  // pods to admit: the spec's count less its reclaimable pods
  // Per pod, sorted by resource name; Amounts as described above.
  std::vector<std::pair<std::string, Amount>> requests;
  std::map<std::string, std::string> node_selector;
  std::vector<Toleration> tolerations;
  // Partial admission (spec.podSets[].minCount): the scheduler may admit fewer pods, down
  // to min_count. Kueue's PodSetReducer walks from the spec's own count (spec_count, before
  // reclaimable pods are taken off; -1: the same as count) down to min_count.
  std::optional<std::int32_t> min_count;
  std::int32_t spec_count = -1;
  // affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms
  // (ORed); empty: none.
  std::vector<NodeSelectorTerm> required_node_affinity;
};

struct WorkloadSpec {
  std::string ns, name;  // namespace and name
  std::string uid;
  std::string job_uid;        // label kueue.x-k8s.io/job-uid, empty when absent
  std::string cluster_queue;  // resolved through the LocalQueue
  std::int32_t priority = 0;
  VirtualTime creation = 0;  // the queue-order timestamp
  std::vector<PodSetSpec> pod_sets;
  // Set when the scheduler refuses the Workload before nominating it
  // (workload.ValidateAdmissibility: namespace, resources; failed admission checks): each
  // time it is a head it is requeued as not admissible with this condition reason and
  // message (a StrictFIFO queue stays blocked behind it, as in Kueue, unless the refusal is
  // a namespace mismatch).
  std::string refusal_reason, refusal_message;
  // What the refusal is, where Kueue treats kinds apart (scheduler.go's head loop,
  // ClusterQueue.RequeueIfNotPresent): a namespace that does not match the ClusterQueue's
  // selector is set aside even by a StrictFIFO queue (RequeueReasonNamespaceMismatch); an
  // admission check in Retry or Rejected refuses the head before the queue's own state is
  // looked at ("The workload has failed admission checks").
  enum class Refusal : std::uint8_t { Other, NamespaceMismatch, FailedAdmissionChecks };
  Refusal refusal_kind = Refusal::Other;
};

// Which flavor serves each resource of a pod set, and how much it counts against quota.
struct PodSetAssignment {
  std::string name;
  std::vector<std::pair<std::string, std::string>> flavors;  // resource -> flavor, sorted
  std::vector<std::pair<std::string, Amount>> resource_usage;  // total over the pod set, sorted
  std::int32_t count = 0;
};

struct Admission {
  std::string cluster_queue;
  std::vector<PodSetAssignment> pod_sets;
};

// Manager-level settings (Kueue's Configuration), not per object.
enum class FairSharingStrategy { LessThanOrEqualToFinalShare, LessThanInitialShare };

// Feature gates that change admission results; defaults as in Kueue at ff69552.
struct CoreOptions {
  bool fair_sharing = false;
  // UnadmittedWorkloadsObservability (beta, on): pending reasons are WaitingForQuota,
  // ExceedsMaxQuota, NoMatchingFlavor, ... instead of "Pending", and a pending Workload
  // carries Admitted=False/NoReservation.
  bool unadmitted_workloads_observability = true;
  // SchedulingEquivalenceHashing (beta, on): when a BestEffortFIFO head fails for lack of
  // quota, pending workloads of the same shape in its queue wait with it.
  bool scheduling_equivalence_hashing = true;
  // PartialAdmission (beta, on): a head that neither fits nor finds preemption targets with
  // its full pod counts is retried with fewer pods, down to its pod sets' minCount.
  bool partial_admission = true;
  // QuotaCheckStrategy (beta, on) with the manager Configuration's
  // resources.quotaCheckStrategy: IgnoreUndeclared: a request for a resource none of the
  // ClusterQueue's resource groups covers is left out of the assignment and the usage,
  // instead of making the pod set inadmissible ("resource X unavailable in ClusterQueue").
  bool quota_check_strategy = true;
  bool ignore_undeclared_resources = false;
  std::vector<FairSharingStrategy> fair_sharing_strategies = {
      FairSharingStrategy::LessThanOrEqualToFinalShare, FairSharingStrategy::LessThanInitialShare};
  // Reference mode (not a Kueue setting): every preemption search takes the straightforward
  // path of its upstream function, without the core's fast paths. No memo of the last
  // targets and no shortcut for heads that can have no candidate; the candidates collected
  // in full and sorted (NewCandidateIterator), not merged lazily, not from a cohort's shared
  // order, and an invalid one skipped alone; the greedy search on the quota tree itself (no
  // flat-cohort copy, no removal runs); DRS computed on every read, and the fair-sharing
  // queue choice by a scan of the cohort's children instead of heaps. Slower. The decisions
  // must be identical (tests/twin/admission/reference_mode_test.cpp).
  bool reference_search = false;
};

}  // namespace gpubank::twin
