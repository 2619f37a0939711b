// The policy API (platform.gpubank.dev/v1alpha1) as C++ value types. Field names follow
// ../shared/spec/policy-api.md; the encoded names are in schema.hpp. Extensions beyond
// the spec are marked "extension" and documented in docs/policy-api.md.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <utility>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/cron.hpp"
#include "core/duration.hpp"
#include "core/timestamp.hpp"
#include "document/decode.hpp"

namespace date {
class time_zone;
}

namespace gpubank::policy {

inline constexpr std::string_view kApiGroup = "platform.gpubank.dev";
inline constexpr std::string_view kApiVersion = "platform.gpubank.dev/v1alpha1";

// Labels of the workload contract.
inline constexpr std::string_view kLabelBusinessGroup = "platform.gpubank.dev/business-group";
inline constexpr std::string_view kLabelOwnerId = "platform.gpubank.dev/owner-id";
inline constexpr std::string_view kLabelCostCenter = "platform.gpubank.dev/cost-center";
inline constexpr std::string_view kLabelWorkloadType = "platform.gpubank.dev/workload-type";
inline constexpr std::string_view kLabelCheckpointable = "platform.gpubank.dev/checkpointable";
inline constexpr std::string_view kLabelCapacityRole = "platform.gpubank.dev/capacity-role";
inline constexpr std::string_view kLabelKueueQueueName = "kueue.x-k8s.io/queue-name";
inline constexpr std::string_view kLabelKueuePriorityClass = "kueue.x-k8s.io/priority-class";

// The controllers trusted when the guardrails name none: Kubernetes' own (the Job,
// ReplicaSet, StatefulSet and CronJob controllers), with or without
// --use-service-account-credentials.
inline constexpr std::string_view kDefaultControllers[] = {"group:system:serviceaccounts:kube-system",
                                                           "user:system:kube-controller-manager"};

enum class WorkloadType { Training, Inference, Batch, Notebook };
enum class WorkloadTrait { Batch, Checkpointable, Training, Development };
enum class PoolRole { Training, Inference, Batch, Development, Burst };
enum class Sharing { Exclusive, Shared };
enum class TaintEffect { NoSchedule, PreferNoSchedule, NoExecute };
enum class WorkloadRefKind { InferenceService, LLMInferenceService, Deployment, RayService };
// What the served model does, with vLLM's task names: `generate` (a chat or completion LLM:
// prefill, then one decode step per output token) or `embed` (a pooling model: prefill only,
// one vector per input, no KV cache kept between steps).
enum class ServingTask { Generate, Embed };
enum class LeaseType { Protection, TemporaryQuota };
enum class NotifyTarget { Owner, BusinessGroupAdmin, PlatformAdmin };

// The most GPUs (devices or MIG slices) any count in a policy may name: a pool's capacity,
// a guarantee, a limit, replicas, a floor. The bank's ledger holds the same bound
// (bank::kMaxGpus), so nothing validation admits overflows what the platform accounts
// for, and sums of a few such counts stay far inside 64 bits.
inline constexpr int kMaxGpus = 1'000'000;

// A subject as the API server's userInfo reports it: "user:<name>" or "group:<name>".
using Subject = std::string;

struct Taint {
  std::string key;
  std::string value;
  TaintEffect effect = TaintEffect::NoSchedule;
};

struct Pool {
  std::string name;
  std::string gpu_model;              // "H100", "L40S", "A100"
  std::string partition = "full";     // "full" or a MIG profile such as "1g.10gb"
  Sharing sharing = Sharing::Exclusive;
  int capacity = 0;                   // devices of the pool's flavor (MIG slices for MIG pools)
  PoolRole role = PoolRole::Training;
  std::optional<int> gpus_per_node;   // extension: devices per node, for replica-shape checks
  std::map<std::string, std::string> node_labels;
  std::vector<Taint> taints;

  // "<gpuModel>/<partition>/<sharing>"
  [[nodiscard]] std::string flavor_key() const;
};

struct GroupPoolLimit {
  int min_guaranteed = 0;
  int max_capacity = 0;
};

struct Group {
  std::string name;
  std::string cost_center;
  std::vector<Subject> admins;
  std::vector<Subject> members;
  std::vector<std::string> namespaces;  // extension: the group's namespaces (default: its name)
  std::map<std::string, GroupPoolLimit> limits;  // by pool name

  [[nodiscard]] std::vector<std::string> effective_namespaces() const;
};

struct PriorityRule {
  std::string name;
  int value = 0;
  std::vector<WorkloadType> workload_types;  // empty: every type
  bool preemptible = true;
  std::vector<std::string> groups;           // empty: every group
};

// Extension: how CapacityLeases are approved.
struct LeaseApprovalRules {
  bool allow_self_approval = false;  // may the subject who requested a lease approve it?
};

struct PlatformGuardrailsSpec {
  std::vector<Subject> platform_admins;  // extension: who may change guardrails and approve leases
  // extension: the controllers that create and update workloads on users' behalf (the
  // Job, ReplicaSet and StatefulSet controllers, Kueue, JobSet, gpubank's own). They copy
  // labels from objects the webhook already checked, so their writes of owner-id and
  // workload-type are trusted, and only they may set capacity-role (docs/webhook.md).
  // Empty: kDefaultControllers (kept out of the encoded form, so unset stays unset).
  std::vector<Subject> controllers;
  std::vector<Pool> pools;
  std::vector<Group> groups;
  std::vector<PriorityRule> priorities;
  std::vector<WorkloadType> protected_workload_types{WorkloadType::Inference};
  Duration max_grace_period{std::chrono::minutes(30)};
  Duration max_lease_duration{std::chrono::hours(24)};
  std::map<std::string, double> gpu_hour_price;  // by GPU model
  std::string currency = "USD";
  // Unset (and left out when encoding, so guardrails that do not mention it hash as
  // before): the defaults of LeaseApprovalRules.
  std::optional<LeaseApprovalRules> lease_approval;
  // Extension: whether the queueing engine shares idle quota by fair sharing (Kueue's
  // fairSharing: dominant resource share divided by each queue's fairShareWeight) instead
  // of by priority. A cluster-wide mode of the engine, so the platform's to choose, not a
  // group's (docs/render.md, "Fair sharing"). Unset (left out when encoding, so guardrails
  // that do not mention it hash as before): off.
  std::optional<bool> fair_sharing;

  [[nodiscard]] bool fair_sharing_enabled() const { return fair_sharing.value_or(false); }
  [[nodiscard]] bool allows_self_approval() const { return lease_approval && lease_approval->allow_self_approval; }
  [[nodiscard]] const Pool* find_pool(std::string_view name) const;
  [[nodiscard]] const Group* find_group(std::string_view name) const;
  [[nodiscard]] const PriorityRule* find_priority(std::string_view name) const;
  // The group that owns a namespace, if any.
  [[nodiscard]] const Group* group_of_namespace(std::string_view ns) const;
};

struct ReclaimPolicy {
  std::optional<Duration> grace_period;
  std::vector<WorkloadTrait> only_preempt;
};

struct GPUQuotaPolicySpec {
  std::string business_group;
  std::string resource_pool;
  int guaranteed = 0;
  int borrow_limit = 0;
  std::optional<int> lending_limit;  // unset: lend all of the unused guarantee
  std::optional<int> max_capacity;   // unset: guaranteed + borrowLimit
  double fair_share_weight = 1.0;
  std::optional<ReclaimPolicy> reclaim_policy;

  // 64-bit: guaranteed + borrowLimit of two valid int32 fields can pass INT32_MAX.
  [[nodiscard]] std::int64_t effective_max_capacity() const {
    return max_capacity ? std::int64_t{*max_capacity} : std::int64_t{guaranteed} + borrow_limit;
  }
};

struct WorkloadRef {
  WorkloadRefKind kind = WorkloadRefKind::InferenceService;
  std::string name;
  std::string namespace_;
};

struct ReplicaShape {
  int tensor_parallel_size = 1;
  int gpu_per_replica = 1;
  int nodes_per_replica = 1;
};

struct ScaleUp {
  std::optional<int> queue_depth_per_replica;
  std::optional<Duration> ttft_p95;
  std::optional<int> kv_cache_high_watermark;  // percent
  // Requests per second one replica should serve (Knative's "rps" target): the service
  // keeps ceil(rate / this) replicas, up and down.
  std::optional<double> requests_per_second_per_replica;
  Duration stabilization_window{};             // HPA's scale-up default: 0s
};

struct ScaleDown {
  std::optional<int> queue_depth_per_replica;
  Duration stabilization_window{std::chrono::minutes(5)};  // HPA's scale-down default
  Duration drain_timeout{std::chrono::minutes(5)};
};

struct InferenceScalingPolicySpec {
  WorkloadRef workload_ref;
  std::string business_group;
  std::string resource_pool;
  ReplicaShape replica_shape;
  int min_replicas = 1;
  int max_replicas = 1;
  ScaleUp scale_up;
  ScaleDown scale_down;
  Duration model_load_time{std::chrono::minutes(5)};
  std::optional<int> burst_headroom;  // GPUs; unset: gpuPerReplica
  std::optional<ServingTask> task;  // unset: generate

  [[nodiscard]] ServingTask effective_task() const { return task.value_or(ServingTask::Generate); }

  [[nodiscard]] int effective_burst_headroom() const {
    return burst_headroom.value_or(replica_shape.gpu_per_replica);
  }
};

// A floor for every targeted inference policy, or one per policy name.
struct ReplicaFloor {
  std::optional<int> all;
  std::map<std::string, int> per_policy;

  // The floor for a policy, if the window sets one.
  [[nodiscard]] std::optional<int> for_policy(const std::string& name) const;
};

struct TidalWindow {
  std::string name;
  CronSchedule start;
  CronSchedule end;
  std::optional<ReplicaFloor> inference_replica_floor;
  std::optional<Duration> prewarm_before;
  std::optional<int> training_borrow_limit;
};

struct TidalReclaim {
  std::optional<Duration> checkpoint_before;
  std::optional<Duration> grace_period;
};

struct TidalTargets {
  std::vector<std::string> inference_policies;
  std::vector<std::string> training_groups;
  std::string resource_pool;
};

// An IANA zone name and the zone it resolves to.
struct TimeZoneRef {
  std::string name;
  const date::time_zone* zone = nullptr;
};

struct TidalPolicySpec {
  TimeZoneRef timezone;
  std::vector<TidalWindow> windows;
  std::optional<TidalReclaim> reclaim;
  TidalTargets targets;

  // When `policy` is one of the targeted inference policies: the window that sets it the
  // largest inferenceReplicaFloor (the first wins a tie), with that floor; else nullopt.
  [[nodiscard]] std::optional<std::pair<const TidalWindow*, int>> largest_floor_window(const std::string& policy) const;
};

struct LabelSelector {
  std::map<std::string, std::string> match_labels;
};

struct CapacityLeaseSpec {
  std::string business_group;
  std::string resource_pool;
  LeaseType type = LeaseType::TemporaryQuota;
  std::optional<int> extra_guaranteed;
  std::optional<LabelSelector> selector;
  std::optional<Timestamp> start;  // unset: from approval
  std::optional<Timestamp> end;    // required (checked as rule lease.end-required)
  std::string reason;
};

struct LowUtilizationMatch {
  WorkloadType workload_type = WorkloadType::Training;
  std::optional<std::string> business_group;
  std::optional<std::string> resource_pool;
};

struct LowUtilizationThresholds {
  std::optional<double> average_gpu_utilization;     // percent
  std::optional<double> average_memory_utilization;  // percent
  std::optional<double> average_power_fraction;      // percent
};

struct NotifyPolicy {
  NotifyTarget first = NotifyTarget::Owner;
  std::optional<Duration> after;
  std::optional<NotifyTarget> escalate_to;
  std::optional<Duration> repeat_interval;
};

struct Exclusion {
  std::optional<std::string> label;
  std::optional<std::string> value;
  std::optional<std::string> annotation;
};

struct LowUtilizationPolicySpec {
  LowUtilizationMatch match;
  Duration window{std::chrono::minutes(60)};
  LowUtilizationThresholds thresholds;
  Duration startup_grace_period{};
  Duration checkpoint_grace_period{};
  std::optional<NotifyPolicy> notify;
  std::vector<Exclusion> exclude_when;
};

enum class Kind {
  PlatformGuardrails,
  GPUQuotaPolicy,
  InferenceScalingPolicy,
  TidalPolicy,
  CapacityLease,
  LowUtilizationPolicy
};

using Spec = std::variant<PlatformGuardrailsSpec, GPUQuotaPolicySpec, InferenceScalingPolicySpec,
                          TidalPolicySpec, CapacityLeaseSpec, LowUtilizationPolicySpec>;

struct ObjectMeta {
  std::string name;
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;
};

// Where an object came from.
struct Origin {
  std::string file;  // empty for objects that came over the API
  SourcePos pos;
  int document = 0;  // index of the YAML document within the file
};

struct PolicyObject {
  Kind kind = Kind::PlatformGuardrails;
  ObjectMeta metadata;
  Spec spec;
  nlohmann::json status;  // kept as given (null when absent); controllers own it
  Origin origin;
  doc::SourceMap fields;

  [[nodiscard]] const std::string& name() const { return metadata.name; }
  template <class S>
  [[nodiscard]] const S& as() const {
    return std::get<S>(spec);
  }
  // "GPUQuotaPolicy/search-team-h100"
  [[nodiscard]] std::string ref() const;
  [[nodiscard]] SourcePos position_of(std::string_view path) const;
};

[[nodiscard]] std::string_view kind_name(Kind kind);
[[nodiscard]] std::optional<Kind> kind_from_name(std::string_view name);

}  // namespace gpubank::policy
