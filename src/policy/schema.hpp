// The wire form of the policy API: field names, which are required, defaults and
// per-field checks, in one place. Decoding (with errors) and encoding back both come
// from these descriptions (see document/decode.hpp).
#pragma once

#include "document/decode.hpp"
#include "policy/types.hpp"

namespace gpubank::doc {

namespace policy = gpubank::policy;

// ---- enums ---------------------------------------------------------------------------

template <>
struct EnumNames<policy::WorkloadType> {
  static constexpr std::array<std::pair<policy::WorkloadType, std::string_view>, 4> values{{
      {policy::WorkloadType::Training, "training"},
      {policy::WorkloadType::Inference, "inference"},
      {policy::WorkloadType::Batch, "batch"},
      {policy::WorkloadType::Notebook, "notebook"},
  }};
};
template <>
struct EnumNames<policy::WorkloadTrait> {
  static constexpr std::array<std::pair<policy::WorkloadTrait, std::string_view>, 4> values{{
      {policy::WorkloadTrait::Batch, "batch"},
      {policy::WorkloadTrait::Checkpointable, "checkpointable"},
      {policy::WorkloadTrait::Training, "training"},
      {policy::WorkloadTrait::Development, "development"},
  }};
};
template <>
struct EnumNames<policy::PoolRole> {
  static constexpr std::array<std::pair<policy::PoolRole, std::string_view>, 5> values{{
      {policy::PoolRole::Training, "training"},
      {policy::PoolRole::Inference, "inference"},
      {policy::PoolRole::Batch, "batch"},
      {policy::PoolRole::Development, "development"},
      {policy::PoolRole::Burst, "burst"},
  }};
};
template <>
struct EnumNames<policy::Sharing> {
  static constexpr std::array<std::pair<policy::Sharing, std::string_view>, 2> values{{
      {policy::Sharing::Exclusive, "exclusive"},
      {policy::Sharing::Shared, "shared"},
  }};
};
template <>
struct EnumNames<policy::TaintEffect> {
  static constexpr std::array<std::pair<policy::TaintEffect, std::string_view>, 3> values{{
      {policy::TaintEffect::NoSchedule, "NoSchedule"},
      {policy::TaintEffect::PreferNoSchedule, "PreferNoSchedule"},
      {policy::TaintEffect::NoExecute, "NoExecute"},
  }};
};
template <>
struct EnumNames<policy::WorkloadRefKind> {
  static constexpr std::array<std::pair<policy::WorkloadRefKind, std::string_view>, 4> values{{
      {policy::WorkloadRefKind::InferenceService, "InferenceService"},
      {policy::WorkloadRefKind::LLMInferenceService, "LLMInferenceService"},
      {policy::WorkloadRefKind::Deployment, "Deployment"},
      {policy::WorkloadRefKind::RayService, "RayService"},
  }};
};
template <>
struct EnumNames<policy::ServingTask> {
  static constexpr std::array<std::pair<policy::ServingTask, std::string_view>, 2> values{{
      {policy::ServingTask::Generate, "generate"},
      {policy::ServingTask::Embed, "embed"},
  }};
};
template <>
struct EnumNames<policy::LeaseType> {
  static constexpr std::array<std::pair<policy::LeaseType, std::string_view>, 2> values{{
      {policy::LeaseType::Protection, "Protection"},
      {policy::LeaseType::TemporaryQuota, "TemporaryQuota"},
  }};
};
template <>
struct EnumNames<policy::NotifyTarget> {
  static constexpr std::array<std::pair<policy::NotifyTarget, std::string_view>, 3> values{{
      {policy::NotifyTarget::Owner, "owner"},
      {policy::NotifyTarget::BusinessGroupAdmin, "business-group-admin"},
      {policy::NotifyTarget::PlatformAdmin, "platform-admin"},
  }};
};

// ---- format checks -------------------------------------------------------------------

// "user:<name>" or "group:<name>", as the API server's userInfo reports subjects.
struct SubjectFormat {
  std::string_view rule = kRuleInvalidFormat;
  std::optional<std::string> operator()(const std::vector<std::string>& subjects) const;
};

// "full" or a MIG profile such as "1g.10gb", "3g.40gb", "1g.10gb+me".
struct PartitionFormat {
  std::string_view rule = kRuleInvalidFormat;
  std::optional<std::string> operator()(const std::string& v) const;
};

// GPU model names: letters, digits, '-', '_' and '.', as node labels can carry them.
struct ModelFormat {
  std::string_view rule = kRuleInvalidFormat;
  std::optional<std::string> operator()(const std::string& v) const;
};

// Three upper-case letters (ISO 4217).
struct CurrencyFormat {
  std::string_view rule = kRuleInvalidFormat;
  std::optional<std::string> operator()(const std::string& v) const;
};

// Every element is a DNS-1123 label (names of groups, pools, policies, namespaces).
struct DnsLabels {
  std::string_view rule = kRuleInvalidFormat;
  std::optional<std::string> operator()(const std::vector<std::string>& v) const;
};

// Kubernetes label keys and values (metadata.labels, nodeLabels, selectors).
struct LabelMapFormat {
  std::string_view rule = kRuleInvalidFormat;
  std::optional<std::string> operator()(const std::map<std::string, std::string>& v) const;
};

// A count of GPUs (or of replicas, each at least one GPU): min..kMaxGpus.
struct GpuCount {
  std::int64_t min = 0;
  std::string_view rule = kRuleOutOfRange;
  std::optional<std::string> operator()(int v) const {
    if (v >= min && v <= policy::kMaxGpus) return std::nullopt;
    return "must be between " + std::to_string(min) + " and " + std::to_string(policy::kMaxGpus) +
           " (the most GPUs gpubank accounts for), got " + std::to_string(v);
  }
};

// ---- custom codecs -------------------------------------------------------------------

template <>
struct Codec<CronSchedule> {
  static bool decode(const Field& f, CronSchedule& out);
  static Json encode(const CronSchedule& v) { return v.text(); }
};

template <>
struct Codec<policy::TimeZoneRef> {
  static bool decode(const Field& f, policy::TimeZoneRef& out);
  static Json encode(const policy::TimeZoneRef& v) { return v.name; }
};

// inferenceReplicaFloor: an integer for every targeted policy, or {policy: integer}.
template <>
struct Codec<policy::ReplicaFloor> {
  static bool decode(const Field& f, policy::ReplicaFloor& out);
  static Json encode(const policy::ReplicaFloor& v);
};

// ---- object schemas ------------------------------------------------------------------

template <>
struct Schema<policy::Taint> {
  template <class V, class S>
  static void fields(V& v, S& s) {
    v.required("key", s.key, NotEmpty{});
    v.optional("value", s.value);
    v.required("effect", s.effect);
  }
};

template <>
struct Schema<policy::GroupPoolLimit> {
  template <class V, class S>
  static void fields(V& v, S& s) {
    v.required("minGuaranteed", s.min_guaranteed, GpuCount{0});
    v.required("maxCapacity", s.max_capacity, GpuCount{0});
  }
};

template <>
struct Schema<policy::Pool> {
  template <class V, class S>
  static void fields(V& v, S& s) {
    v.required("name", s.name, DnsLabel{});
    v.required("gpuModel", s.gpu_model, ModelFormat{});
    v.optional("partition", s.partition, PartitionFormat{});
    v.optional("sharing", s.sharing);
    v.required("capacity", s.capacity, GpuCount{0});
    v.required("role", s.role);
    v.optional("gpusPerNode", s.gpus_per_node, GpuCount{1});
    v.optional("nodeLabels", s.node_labels, LabelMapFormat{});
    v.optional("taints", s.taints);
  }
};

template <>
struct Schema<policy::Group> {
  template <class V, class S>
  static void fields(V& v, S& s) {
    v.required("name", s.name, DnsLabel{});
    v.required("costCenter", s.cost_center, NotEmpty{});
    v.optional("admins", s.admins, SubjectFormat{});
    v.optional("members", s.members, SubjectFormat{});
    v.optional("namespaces", s.namespaces, DnsLabels{});
    v.optional("limits", s.limits);
  }
};

template <>
struct Schema<policy::PriorityRule> {
  template <class V, class S>
  static void fields(V& v, S& s) {
    v.required("name", s.name, DnsLabel{});
    v.required("value", s.value, Between{-2147483648LL, 1000000000LL});
    v.optional("workloadTypes", s.workload_types);
    v.optional("preemptible", s.preemptible);
    v.optional("groups", s.groups, DnsLabels{});
  }
};

template <>
struct Schema<policy::LeaseApprovalRules> {
  template <class V, class S>
  static void fields(V& v, S& s) {
    v.optional("allowSelfApproval", s.allow_self_approval);
  }
};

template <>
struct Schema<policy::PlatformGuardrailsSpec> {
  template <class V, class S>
  static void fields(V& v, S& s) {
    v.required("platformAdmins", s.platform_admins, NotEmpty{}, SubjectFormat{});
    v.optional("controllers", s.controllers, SubjectFormat{});
    v.required("pools", s.pools, NotEmpty{});
    v.required("groups", s.groups, NotEmpty{});
    v.optional("priorities", s.priorities);
    v.optional("protectedWorkloadTypes", s.protected_workload_types);
    v.optional("maxGracePeriod", s.max_grace_period, NonNegative{});
    v.optional("maxLeaseDuration", s.max_lease_duration, Positive{});
    v.optional("gpuHourPrice", s.gpu_hour_price);
    v.optional("currency", s.currency, CurrencyFormat{});
    v.optional("leaseApproval", s.lease_approval);
    v.optional("fairSharing", s.fair_sharing);
  }
};

template <>
struct Schema<policy::ReclaimPolicy> {
  template <class V, class S>
  static void fields(V& v, S& s) {
    v.optional("gracePeriod", s.grace_period, NonNegative{});
    v.optional("onlyPreempt", s.only_preempt);
  }
};

template <>
struct Schema<policy::GPUQuotaPolicySpec> {
  template <class V, class S>
  static void fields(V& v, S& s) {
    v.required("businessGroup", s.business_group, DnsLabel{});
    v.required("resourcePool", s.resource_pool, DnsLabel{});
    v.required("guaranteed", s.guaranteed, GpuCount{0});
    v.optional("borrowLimit", s.borrow_limit, GpuCount{0});
    v.optional("lendingLimit", s.lending_limit, GpuCount{0});
    v.optional("maxCapacity", s.max_capacity, GpuCount{0});
    v.optional("fairShareWeight", s.fair_share_weight, Positive{});
    v.optional("reclaimPolicy", s.reclaim_policy);
  }
};

template <>
struct Schema<policy::WorkloadRef> {
  template <class V, class S>
  static void fields(V& v, S& s) {
    v.required("kind", s.kind);
    v.required("name", s.name, NotEmpty{});
    v.required("namespace", s.namespace_, DnsLabel{});
  }
};

template <>
struct Schema<policy::ReplicaShape> {
  template <class V, class S>
  static void fields(V& v, S& s) {
    v.required("tensorParallelSize", s.tensor_parallel_size, GpuCount{1});
    v.required("gpuPerReplica", s.gpu_per_replica, GpuCount{1});
    v.optional("nodesPerReplica", s.nodes_per_replica, GpuCount{1});
  }
};

template <>
struct Schema<policy::ScaleUp> {
  template <class V, class S>
  static void fields(V& v, S& s) {
    v.optional("queueDepthPerReplica", s.queue_depth_per_replica, AtLeast{1});
    v.optional("ttftP95", s.ttft_p95, Positive{});
    v.optional("kvCacheHighWatermark", s.kv_cache_high_watermark, Between{0, 100});
    v.optional("requestsPerSecondPerReplica", s.requests_per_second_per_replica, Between{0, 1'000'000}, Positive{});
    v.optional("stabilizationWindow", s.stabilization_window, NonNegative{});
  }
};

template <>
struct Schema<policy::ScaleDown> {
  template <class V, class S>
  static void fields(V& v, S& s) {
    v.optional("queueDepthPerReplica", s.queue_depth_per_replica, AtLeast{0});
    v.optional("stabilizationWindow", s.stabilization_window, NonNegative{});
    v.optional("drainTimeout", s.drain_timeout, NonNegative{});
  }
};

template <>
struct Schema<policy::InferenceScalingPolicySpec> {
  template <class V, class S>
  static void fields(V& v, S& s) {
    v.required("workloadRef", s.workload_ref);
    v.required("businessGroup", s.business_group, DnsLabel{});
    v.required("resourcePool", s.resource_pool, DnsLabel{});
    v.required("replicaShape", s.replica_shape);
    v.required("minReplicas", s.min_replicas, GpuCount{0});
    v.required("maxReplicas", s.max_replicas, GpuCount{0});
    v.required("scaleUp", s.scale_up);
    v.optional("scaleDown", s.scale_down);
    v.optional("modelLoadTime", s.model_load_time, NonNegative{});
    v.optional("burstHeadroom", s.burst_headroom, GpuCount{0});
    v.optional("task", s.task);
  }
};

template <>
struct Schema<policy::TidalWindow> {
  template <class V, class S>
  static void fields(V& v, S& s) {
    v.required("name", s.name, DnsLabel{});
    v.required("start", s.start);
    v.required("end", s.end);
    v.optional("inferenceReplicaFloor", s.inference_replica_floor);
    v.optional("prewarmBefore", s.prewarm_before, NonNegative{});
    v.optional("trainingBorrowLimit", s.training_borrow_limit, GpuCount{0});
  }
};

template <>
struct Schema<policy::TidalReclaim> {
  template <class V, class S>
  static void fields(V& v, S& s) {
    v.optional("checkpointBefore", s.checkpoint_before, NonNegative{});
    v.optional("gracePeriod", s.grace_period, NonNegative{});
  }
};

template <>
struct Schema<policy::TidalTargets> {
  template <class V, class S>
  static void fields(V& v, S& s) {
    v.optional("inferencePolicies", s.inference_policies, DnsLabels{});
    v.optional("trainingGroups", s.training_groups, DnsLabels{});
    v.required("resourcePool", s.resource_pool, DnsLabel{});
  }
};

template <>
struct Schema<policy::TidalPolicySpec> {
  template <class V, class S>
  static void fields(V& v, S& s) {
    v.required("timezone", s.timezone);
    v.required("windows", s.windows, NotEmpty{});
    v.optional("reclaim", s.reclaim);
    v.required("targets", s.targets);
  }
};

template <>
struct Schema<policy::LabelSelector> {
  template <class V, class S>
  static void fields(V& v, S& s) {
    v.required("matchLabels", s.match_labels, NotEmpty{}, LabelMapFormat{});
  }
};

template <>
struct Schema<policy::CapacityLeaseSpec> {
  template <class V, class S>
  static void fields(V& v, S& s) {
    v.required("businessGroup", s.business_group, DnsLabel{});
    v.required("resourcePool", s.resource_pool, DnsLabel{});
    v.required("type", s.type);
    v.optional("extraGuaranteed", s.extra_guaranteed, GpuCount{1});
    v.optional("selector", s.selector);
    v.optional("start", s.start);
    v.optional("end", s.end);  // required, but by its own rule: lease.end-required
    v.required("reason", s.reason, NotEmpty{});
  }
};

template <>
struct Schema<policy::LowUtilizationMatch> {
  template <class V, class S>
  static void fields(V& v, S& s) {
    v.required("workloadType", s.workload_type);
    v.optional("businessGroup", s.business_group, DnsLabel{});
    v.optional("resourcePool", s.resource_pool, DnsLabel{});
  }
};

template <>
struct Schema<policy::LowUtilizationThresholds> {
  template <class V, class S>
  static void fields(V& v, S& s) {
    v.optional("averageGpuUtilization", s.average_gpu_utilization, Between{0, 100});
    v.optional("averageMemoryUtilization", s.average_memory_utilization, Between{0, 100});
    v.optional("averagePowerFraction", s.average_power_fraction, Between{0, 100});
  }
};

template <>
struct Schema<policy::NotifyPolicy> {
  template <class V, class S>
  static void fields(V& v, S& s) {
    v.required("first", s.first);
    v.optional("after", s.after, NonNegative{});
    v.optional("escalateTo", s.escalate_to);
    v.optional("repeatInterval", s.repeat_interval, Positive{});
  }
};

template <>
struct Schema<policy::Exclusion> {
  template <class V, class S>
  static void fields(V& v, S& s) {
    v.optional("label", s.label, NotEmpty{});
    v.optional("value", s.value);
    v.optional("annotation", s.annotation, NotEmpty{});
  }
};

template <>
struct Schema<policy::LowUtilizationPolicySpec> {
  template <class V, class S>
  static void fields(V& v, S& s) {
    v.required("match", s.match);
    v.required("window", s.window, Positive{});
    v.required("thresholds", s.thresholds);
    v.optional("startupGracePeriod", s.startup_grace_period, NonNegative{});
    v.optional("checkpointGracePeriod", s.checkpoint_grace_period, NonNegative{});
    v.optional("notify", s.notify);
    v.optional("excludeWhen", s.exclude_when);
  }
};

}  // namespace gpubank::doc
