// Every rule gpubank validates, with a stable id. Ids appear in messages, in the audit
// log, in `gpubank rules` and in tests; they never change meaning once released.
#pragma once

#include <span>
#include <string_view>

#include "document/decode.hpp"
#include "document/reader.hpp"

namespace gpubank::policy {

enum class RuleScope {
  Input,      // reading files and requests
  Schema,     // the shape of one object
  Object,     // one object's fields against each other
  PolicySet,  // objects against the guardrails and each other
  Workload,   // pods, jobs and other workloads against the guardrails
  Admission,  // who may write what; the AdmissionReview request itself
};

struct RuleInfo {
  std::string_view id;
  RuleScope scope;
  std::string_view summary;
  // Whether examples/invalid/<id>.yaml demonstrates it with `gpubank validate` (rules
  // about requests, users and unreadable or huge inputs are shown by tests instead).
  bool has_example = true;
};

[[nodiscard]] std::span<const RuleInfo> all_rules();
[[nodiscard]] const RuleInfo* find_rule(std::string_view id);
[[nodiscard]] std::string_view scope_name(RuleScope scope);

namespace rule {
// Input and schema: the document layer runs these checks, so it owns the ids.
inline constexpr std::string_view kSyntax = doc::kRuleSyntax;
inline constexpr std::string_view kTooLarge = doc::kRuleTooLarge;
inline constexpr std::string_view kUnreadable = doc::kRuleUnreadable;
inline constexpr std::string_view kUnknownField = doc::kRuleUnknownField;
inline constexpr std::string_view kDuplicateField = doc::kRuleDuplicateField;
inline constexpr std::string_view kWrongType = doc::kRuleWrongType;
inline constexpr std::string_view kRequired = doc::kRuleRequired;
inline constexpr std::string_view kOutOfRange = doc::kRuleOutOfRange;
inline constexpr std::string_view kInvalidFormat = doc::kRuleInvalidFormat;
inline constexpr std::string_view kInvalidEnum = doc::kRuleInvalidEnum;
inline constexpr std::string_view kUnknownKind = "schema.unknown-kind";
inline constexpr std::string_view kIgnoredField = "schema.ignored-field";
inline constexpr std::string_view kDuplicateObject = "schema.duplicate-object";
inline constexpr std::string_view kCronInvalid = "cron.invalid";
inline constexpr std::string_view kCronNeverFires = "cron.never-fires";
inline constexpr std::string_view kTimezoneUnknown = "timezone.unknown";

// References shared by every kind.
inline constexpr std::string_view kGroupUnknown = "group.unknown";
inline constexpr std::string_view kPoolUnknown = "pool.unknown";
inline constexpr std::string_view kGracePeriodExceedsMax = "reclaim.grace-period-exceeds-max";

// PlatformGuardrails.
inline constexpr std::string_view kGuardrailsSingleton = "guardrails.singleton";
inline constexpr std::string_view kGuardrailsMissing = "guardrails.missing";
inline constexpr std::string_view kGuardrailsDuplicateName = "guardrails.duplicate-name";
inline constexpr std::string_view kGuardrailsLimitRange = "guardrails.limit-range";
inline constexpr std::string_view kGuardrailsMinGuaranteedExceedsPool = "guardrails.min-guaranteed-exceeds-pool";
inline constexpr std::string_view kGuardrailsPoolsIndistinguishable = "guardrails.pools-indistinguishable";
inline constexpr std::string_view kGuardrailsNamespaceConflict = "guardrails.namespace-conflict";
inline constexpr std::string_view kGuardrailsPriceModelMismatch = "guardrails.price-model-mismatch";

// GPUQuotaPolicy.
inline constexpr std::string_view kQuotaPoolNotAllowed = "quota.pool-not-allowed";
inline constexpr std::string_view kQuotaGuaranteedOutsideGuardrail = "quota.guaranteed-outside-guardrail";
inline constexpr std::string_view kQuotaBorrowLimitOutsideGuardrail = "quota.borrow-limit-outside-guardrail";
inline constexpr std::string_view kQuotaBorrowLimitExceedsPool = "quota.borrow-limit-exceeds-pool";
inline constexpr std::string_view kQuotaMaxCapacityOutsideGuardrail = "quota.max-capacity-outside-guardrail";
inline constexpr std::string_view kQuotaMaxCapacityRange = "quota.max-capacity-range";
inline constexpr std::string_view kQuotaLendingLimitRange = "quota.lending-limit-range";
inline constexpr std::string_view kQuotaSumExceedsPool = "quota.sum-exceeds-pool";
inline constexpr std::string_view kQuotaDuplicate = "quota.duplicate";

// InferenceScalingPolicy.
inline constexpr std::string_view kInferencePoolRole = "inference.pool-role";
inline constexpr std::string_view kInferenceShapeTpMultiple = "inference.shape-tp-multiple";
inline constexpr std::string_view kInferenceShapeExceedsNode = "inference.shape-exceeds-node";
inline constexpr std::string_view kInferenceTpOnPartitionedGpu = "inference.tp-on-partitioned-gpu";
inline constexpr std::string_view kInferenceReplicaRange = "inference.replica-range";
inline constexpr std::string_view kInferenceMaxExceedsQuota = "inference.max-exceeds-quota";
inline constexpr std::string_view kInferenceQuotaMissing = "inference.quota-missing";
inline constexpr std::string_view kInferenceNamespaceNotOwned = "inference.namespace-not-owned";
inline constexpr std::string_view kInferenceDuplicateTarget = "inference.duplicate-target";
inline constexpr std::string_view kInferenceNoScaleUpSignal = "inference.no-scale-up-signal";
inline constexpr std::string_view kInferenceScaleDownAboveScaleUp = "inference.scale-down-above-scale-up";
inline constexpr std::string_view kInferenceFloorAboveGuarantee = "inference.floor-above-guarantee";
inline constexpr std::string_view kInferenceKvSignalOnEmbed = "inference.kv-signal-on-embed";
inline constexpr std::string_view kInferenceRateSignalAlone = "inference.rate-signal-alone";

// TidalPolicy.
inline constexpr std::string_view kTidalWindowsOverlap = "tidal.windows-overlap";
inline constexpr std::string_view kTidalWindowStartEqualsEnd = "tidal.window-start-equals-end";
inline constexpr std::string_view kTidalDuplicateWindow = "tidal.duplicate-window";
inline constexpr std::string_view kTidalUnknownInferencePolicy = "tidal.unknown-inference-policy";
inline constexpr std::string_view kTidalFloorWithoutTarget = "tidal.floor-without-target";
inline constexpr std::string_view kTidalTargetPoolMismatch = "tidal.target-pool-mismatch";
inline constexpr std::string_view kTidalFloorOutOfRange = "tidal.floor-out-of-range";
inline constexpr std::string_view kTidalTrainingBorrowLimitExceedsPool = "tidal.training-borrow-limit-exceeds-pool";
inline constexpr std::string_view kTidalGraceExceedsCheckpoint = "tidal.grace-exceeds-checkpoint";
inline constexpr std::string_view kTidalStartInDstGap = "tidal.start-in-dst-gap";
inline constexpr std::string_view kTidalConflictingPolicies = "tidal.conflicting-policies";

// CapacityLease.
inline constexpr std::string_view kLeaseEndRequired = "lease.end-required";
inline constexpr std::string_view kLeaseEndBeforeStart = "lease.end-before-start";
inline constexpr std::string_view kLeaseTooLong = "lease.too-long";
inline constexpr std::string_view kLeaseTypeFields = "lease.type-fields";
inline constexpr std::string_view kLeaseExceedsGroupCap = "lease.exceeds-group-cap";
inline constexpr std::string_view kLeaseExceedsPool = "lease.exceeds-pool";
inline constexpr std::string_view kLeaseApprovalMismatch = "lease.approval-mismatch";
inline constexpr std::string_view kLeaseApprovalInvalid = "lease.approval-invalid";
inline constexpr std::string_view kLeaseSelfApproval = "lease.self-approval";
inline constexpr std::string_view kLeaseRequesterMismatch = "lease.requester-mismatch";

// LowUtilizationPolicy.
inline constexpr std::string_view kLowUtilNoThreshold = "lowutil.no-threshold";
inline constexpr std::string_view kLowUtilExclusionForm = "lowutil.exclusion-form";
inline constexpr std::string_view kLowUtilDuplicateMatch = "lowutil.duplicate-match";
inline constexpr std::string_view kLowUtilLoosensPlatform = "lowutil.loosens-platform";

// Workloads (pods, jobs, ...).
inline constexpr std::string_view kLabelsReserved = "labels.reserved";
inline constexpr std::string_view kLabelsInvalidWorkloadType = "labels.invalid-workload-type";
inline constexpr std::string_view kPriorityUnknown = "priority.unknown";
inline constexpr std::string_view kPriorityForbidden = "priority.forbidden";
inline constexpr std::string_view kPriorityProtectedNeedsClass = "priority.protected-needs-class";
inline constexpr std::string_view kLabelsOwnerIdNotRequester = "labels.owner-id-not-requester";
inline constexpr std::string_view kLabelsCapacityRoleControllerOnly = "labels.capacity-role-controller-only";
inline constexpr std::string_view kLabelsInferenceNotTargeted = "labels.inference-not-targeted";
inline constexpr std::string_view kLabelsCheckpointableNotAllowed = "labels.checkpointable-not-allowed";
inline constexpr std::string_view kWorkloadMissingQueueName = "workload.missing-queue-name";

// Admission.
inline constexpr std::string_view kAuthNotGroupAdmin = "auth.not-group-admin";
inline constexpr std::string_view kAuthPlatformAdminOnly = "auth.platform-admin-only";
inline constexpr std::string_view kRequestTooLarge = "request.too-large";
inline constexpr std::string_view kRequestMalformed = "request.malformed";
inline constexpr std::string_view kRequestUnsupportedKind = "request.unsupported-kind";
}  // namespace rule

}  // namespace gpubank::policy
