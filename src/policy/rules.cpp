#include "policy/rules.hpp"

#include <algorithm>
#include <array>

namespace gpubank::policy {
namespace {

using S = RuleScope;

constexpr std::array kRules = {
    RuleInfo{rule::kUnreadable, S::Input, "a file or directory cannot be read", false},
    RuleInfo{rule::kSyntax, S::Input, "YAML or JSON syntax error, or an unsupported YAML construct"},
    RuleInfo{rule::kTooLarge, S::Input, "input above the size, nesting or node-count limits", false},
    RuleInfo{rule::kUnknownField, S::Schema, "a field the kind does not have (never silently dropped)"},
    RuleInfo{rule::kDuplicateField, S::Schema, "the same key twice in one object"},
    RuleInfo{rule::kWrongType, S::Schema, "a value of the wrong type (\"32\" where an integer belongs)"},
    RuleInfo{rule::kRequired, S::Schema, "a required field is missing or empty"},
    RuleInfo{rule::kOutOfRange, S::Schema, "a number or duration outside its allowed range"},
    RuleInfo{rule::kInvalidFormat, S::Schema, "a malformed duration, time, name, subject, label or profile"},
    RuleInfo{rule::kInvalidEnum, S::Schema, "a value outside the field's fixed set of choices"},
    RuleInfo{rule::kUnknownKind, S::Schema, "an unknown kind or version of platform.gpubank.dev"},
    RuleInfo{rule::kIgnoredField, S::Schema, "a field that is accepted but has no effect (warning)", false},
    RuleInfo{rule::kDuplicateObject, S::Schema, "two objects of one kind with the same name"},
    RuleInfo{rule::kCronInvalid, S::Schema, "a cron expression robfig/cron's standard parser would reject"},
    RuleInfo{rule::kCronNeverFires, S::Object, "a cron expression that never fires (\"0 0 30 2 *\")"},
    RuleInfo{rule::kTimezoneUnknown, S::Schema, "a time zone that is not in the IANA database"},

    RuleInfo{rule::kGroupUnknown, S::PolicySet, "a business group the guardrails do not define"},
    RuleInfo{rule::kPoolUnknown, S::PolicySet, "a resource pool the guardrails do not define"},
    RuleInfo{rule::kGracePeriodExceedsMax, S::PolicySet, "a reclaim grace period above guardrails' maxGracePeriod"},

    RuleInfo{rule::kGuardrailsSingleton, S::PolicySet, "more than one PlatformGuardrails"},
    RuleInfo{rule::kGuardrailsMissing, S::PolicySet, "policies without the PlatformGuardrails they are checked against", false},
    RuleInfo{rule::kGuardrailsDuplicateName, S::Object, "two pools, groups or priorities with the same name"},
    RuleInfo{rule::kGuardrailsLimitRange, S::Object, "a group limit with minGuaranteed above maxCapacity or maxCapacity above the pool"},
    RuleInfo{rule::kGuardrailsMinGuaranteedExceedsPool, S::Object, "the groups' minGuaranteed on a pool add up to more than its capacity"},
    RuleInfo{rule::kGuardrailsPoolsIndistinguishable, S::Object, "two pools of one flavor with the same node labels (they would share GPUs)"},
    RuleInfo{rule::kGuardrailsNamespaceConflict, S::Object, "a namespace claimed by two business groups"},
    RuleInfo{rule::kGuardrailsPriceModelMismatch, S::Object, "a GPU model with no price, or a price for no pool's model (warning)", false},

    RuleInfo{rule::kQuotaPoolNotAllowed, S::PolicySet, "a quota on a pool the group has no guardrail limits for"},
    RuleInfo{rule::kQuotaGuaranteedOutsideGuardrail, S::PolicySet, "guaranteed outside the group's minGuaranteed..maxCapacity"},
    RuleInfo{rule::kQuotaBorrowLimitOutsideGuardrail, S::PolicySet, "guaranteed + borrowLimit above the group's guardrail maxCapacity"},
    RuleInfo{rule::kQuotaBorrowLimitExceedsPool, S::PolicySet, "borrowLimit above the capacity of the pool, whatever maxCapacity says"},
    RuleInfo{rule::kQuotaMaxCapacityOutsideGuardrail, S::PolicySet, "maxCapacity above the group's guardrail maxCapacity"},
    RuleInfo{rule::kQuotaMaxCapacityRange, S::Object, "maxCapacity outside guaranteed..guaranteed + borrowLimit"},
    RuleInfo{rule::kQuotaLendingLimitRange, S::Object, "lendingLimit above guaranteed"},
    RuleInfo{rule::kQuotaSumExceedsPool, S::PolicySet, "the guarantees on a pool add up to more than its capacity"},
    RuleInfo{rule::kQuotaDuplicate, S::PolicySet, "two quota policies for one group and pool"},

    RuleInfo{rule::kInferencePoolRole, S::PolicySet, "an inference policy on a pool whose role is not inference or burst"},
    RuleInfo{rule::kInferenceShapeTpMultiple, S::Object, "gpuPerReplica is not a multiple of tensorParallelSize"},
    RuleInfo{rule::kInferenceShapeExceedsNode, S::PolicySet, "a replica needs more GPUs per node than the pool's nodes have"},
    RuleInfo{rule::kInferenceTpOnPartitionedGpu, S::PolicySet, "tensor parallelism over MIG slices or shared GPUs"},
    RuleInfo{rule::kInferenceReplicaRange, S::Object, "minReplicas above maxReplicas"},
    RuleInfo{rule::kInferenceMaxExceedsQuota, S::PolicySet, "maxReplicas x gpuPerReplica above the group's maxCapacity on the pool"},
    RuleInfo{rule::kInferenceQuotaMissing, S::PolicySet, "an inference policy for a group with no quota on that pool"},
    RuleInfo{rule::kInferenceNamespaceNotOwned, S::PolicySet, "a workloadRef in a namespace that is not the group's"},
    RuleInfo{rule::kInferenceDuplicateTarget, S::PolicySet, "two inference policies for one workload"},
    RuleInfo{rule::kInferenceNoScaleUpSignal, S::Object, "scaleUp sets none of queueDepthPerReplica, ttftP95, kvCacheHighWatermark, requestsPerSecondPerReplica"},
    RuleInfo{rule::kInferenceScaleDownAboveScaleUp, S::Object, "scale-down queue depth not below the scale-up one (flapping)"},
    RuleInfo{rule::kInferenceFloorAboveGuarantee, S::PolicySet, "the serving floor needs more GPUs than the group's guarantee (warning)", false},
    RuleInfo{rule::kInferenceKvSignalOnEmbed, S::Object, "kvCacheHighWatermark on an embed service, which keeps no KV cache between requests (warning)", false},
    RuleInfo{rule::kInferenceRateSignalAlone, S::Object, "requestsPerSecondPerReplica as the only scale-up signal: a saturated service finishes no more requests than it serves (warning)", false},

    RuleInfo{rule::kTidalWindowsOverlap, S::Object, "two windows of one tidal policy are active at the same time"},
    RuleInfo{rule::kTidalWindowStartEqualsEnd, S::Object, "a window whose start and end are the same schedule"},
    RuleInfo{rule::kTidalDuplicateWindow, S::Object, "two windows with the same name"},
    RuleInfo{rule::kTidalUnknownInferencePolicy, S::PolicySet, "a target or floor naming an InferenceScalingPolicy that does not exist or is not targeted"},
    RuleInfo{rule::kTidalFloorWithoutTarget, S::Object, "a replica floor with no inference policies to apply it to"},
    RuleInfo{rule::kTidalTargetPoolMismatch, S::PolicySet, "a targeted inference policy on another pool than targets.resourcePool"},
    RuleInfo{rule::kTidalFloorOutOfRange, S::PolicySet, "a floor outside the inference policy's minReplicas..maxReplicas"},
    RuleInfo{rule::kTidalTrainingBorrowLimitExceedsPool, S::PolicySet, "trainingBorrowLimit above the pool's capacity"},
    RuleInfo{rule::kTidalStartInDstGap, S::Object, "a window starts at a local time a DST change skips: it does not open that day (warning)", false},
    RuleInfo{rule::kTidalGraceExceedsCheckpoint, S::Object, "reclaim.gracePeriod longer than reclaim.checkpointBefore: borrowers still hold the GPUs at the prewarm"},
    RuleInfo{rule::kTidalConflictingPolicies, S::PolicySet, "two tidal policies acting on the same inference policy"},

    RuleInfo{rule::kLeaseEndRequired, S::Object, "a lease without an end"},
    RuleInfo{rule::kLeaseEndBeforeStart, S::Object, "a lease that ends before it starts"},
    RuleInfo{rule::kLeaseTooLong, S::PolicySet, "a lease longer than guardrails' maxLeaseDuration"},
    RuleInfo{rule::kLeaseTypeFields, S::Object, "TemporaryQuota without extraGuaranteed, Protection without selector, or fields of the other type"},
    RuleInfo{rule::kLeaseExceedsGroupCap, S::PolicySet, "a temporary guarantee above the group's guardrail maxCapacity"},
    RuleInfo{rule::kLeaseExceedsPool, S::PolicySet, "guarantees plus overlapping temporary quotas above the pool's capacity"},
    RuleInfo{rule::kLeaseApprovalMismatch, S::Object, "status.approval approves another spec than the lease's (or is malformed)"},
    RuleInfo{rule::kLeaseApprovalInvalid, S::Admission, "an approval not recorded as the approving user at the time of the request", false},
    RuleInfo{rule::kLeaseSelfApproval, S::Admission, "the requester of a lease approving it, where the guardrails forbid it", false},
    RuleInfo{rule::kLeaseRequesterMismatch, S::Admission, "requested-by annotation missing or not the user who wrote the lease's spec", false},

    RuleInfo{rule::kLowUtilNoThreshold, S::Object, "a low-utilisation policy without any threshold"},
    RuleInfo{rule::kLowUtilExclusionForm, S::Object, "an exclusion that is not exactly {label, value?} or {annotation}"},
    RuleInfo{rule::kLowUtilDuplicateMatch, S::PolicySet, "two low-utilisation policies with the same match"},
    RuleInfo{rule::kLowUtilLoosensPlatform, S::PolicySet, "a group's low-utilisation policy weaker than a platform-wide one it overrides"},

    RuleInfo{rule::kLabelsReserved, S::Workload, "a business-group or cost-center label that admission did not write"},
    RuleInfo{rule::kLabelsInvalidWorkloadType, S::Workload, "a workload-type label outside training, inference, batch, notebook"},
    RuleInfo{rule::kPriorityUnknown, S::Workload, "a priority class the guardrails do not allow at all"},
    RuleInfo{rule::kPriorityForbidden, S::Workload, "a priority class not allowed for the workload's group or type"},
    RuleInfo{rule::kPriorityProtectedNeedsClass, S::Workload, "a workload of a protected type without a priority class (POST /mutate adds the default)", false},
    RuleInfo{rule::kLabelsOwnerIdNotRequester, S::Workload, "an owner-id label that is not the requesting user, or changed on update", false},
    RuleInfo{rule::kLabelsCapacityRoleControllerOnly, S::Workload, "a capacity-role label set by someone other than the guardrails' controllers", false},
    RuleInfo{rule::kLabelsInferenceNotTargeted, S::Workload, "workload-type inference on a workload no InferenceScalingPolicy targets"},
    RuleInfo{rule::kLabelsCheckpointableNotAllowed, S::Workload, "checkpointable other than \"true\", or on a workload of a protected or no type"},
    RuleInfo{rule::kWorkloadMissingQueueName, S::Workload, "a GPU workload in a group's namespace without a kueue.x-k8s.io/queue-name label"},

    // The four-layer capacity check of `gpubank render` (src/render/consistency.hpp); the
    // policy library cannot see the render library, so the ids are spelled out here.
    RuleInfo{"render.queue-below-max-replicas", S::PolicySet, "an inference service's maxReplicas x replica shape above what its ClusterQueue can reach in the cohort", false},
    RuleInfo{"render.pool-below-max-replicas", S::PolicySet, "an inference service's maxReplicas that the pool's nodes cannot hold in its replica shape beside the other floors", false},
    RuleInfo{"render.autoscaler-below-max-replicas", S::PolicySet, "a workload manifest whose own autoscaler caps the service below the policy's maxReplicas", false},
    RuleInfo{"render.services-exceed-queue", S::PolicySet, "a group's inference services on a pool need more at maxReplicas than its ClusterQueue reaches", false},
    RuleInfo{"render.workload-shape-mismatch", S::PolicySet, "a workload manifest whose pods ask for another GPU count than the replica shape", false},
    RuleInfo{"render.tidal-floor-exceeds-unlent", S::PolicySet, "a tidal window's serving floor above what the pool does not lend to training then", false},
    RuleInfo{"render.inference-priority-not-above-training", S::PolicySet, "serving may not use a priority above the training that borrows its pool", false},
    RuleInfo{"render.non-preemptible-borrow-exceeds-spare", S::PolicySet, "non-preemptible training may borrow GPUs that guarantees or inference services need back", false},
    RuleInfo{"render.autoscaler-unsupported", S::PolicySet, "a workload KEDA cannot scale, so no ScaledObject is rendered (warning)", false},
    RuleInfo{"render.prewarm-not-expressible", S::PolicySet, "a prewarmBefore that one cron start expression cannot express (warning)", false},
    RuleInfo{"render.behavior-clamped", S::PolicySet, "a stabilization window or model load time beyond the HPA's limits, clamped (warning)", false},
    RuleInfo{"render.burst-headroom-lendable", S::PolicySet, "a quota that may lend the GPUs its inference services keep for their floors and burst headroom (warning)", false},
    RuleInfo{"render.name-collision", S::PolicySet, "two rendered objects of one kind would get the same name (e.g. group-pool queue names)", false},
    RuleInfo{"render.reserved-priority-name", S::PolicySet, "a priority whose PriorityClass name Kubernetes reserves (system-)", false},
    RuleInfo{"render.protected-priority-order", S::PolicySet, "a protected priority valued below a preemptible one (warning)", false},

    RuleInfo{rule::kAuthNotGroupAdmin, S::Admission, "a user changing a group's policy without being its admin", false},
    RuleInfo{rule::kAuthPlatformAdminOnly, S::Admission, "a change only platform administrators may make", false},
    RuleInfo{rule::kRequestTooLarge, S::Admission, "an admission request body above 3 MiB", false},
    RuleInfo{rule::kRequestMalformed, S::Admission, "an admission request that is not a valid AdmissionReview", false},
    RuleInfo{rule::kRequestUnsupportedKind, S::Admission, "an admission request for a kind the webhook does not handle", false},
};

}  // namespace

std::span<const RuleInfo> all_rules() { return kRules; }

const RuleInfo* find_rule(std::string_view id) {
  const auto* it = std::find_if(kRules.begin(), kRules.end(), [&](const RuleInfo& r) { return r.id == id; });
  return it == kRules.end() ? nullptr : &*it;
}

std::string_view scope_name(RuleScope scope) {
  switch (scope) {
    case RuleScope::Input: return "input";
    case RuleScope::Schema: return "schema";
    case RuleScope::Object: return "object";
    case RuleScope::PolicySet: return "policy-set";
    case RuleScope::Workload: return "workload";
    case RuleScope::Admission: return "admission";
  }
  return "?";
}

}  // namespace gpubank::policy
