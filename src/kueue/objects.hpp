// Kueue's kueue.x-k8s.io/v1beta2 objects as C++ values: the fields admission reads, with
// the API server's defaults applied. Every object also keeps the document it came from
// (`source.raw`), so encoding back leaves every field the twin does not own as it was.
//
// Enumerations that are Kueue's own (preemption policies, fungibility, queueing strategy)
// use the admission core's enums in twin/admission/model.hpp, which are defined as Kueue's.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/diagnostic.hpp"
#include "core/quantity.hpp"
#include "core/timestamp.hpp"
#include "document/node.hpp"
#include "twin/admission/model.hpp"

namespace gpubank::kueue {

inline constexpr std::string_view kGroup = "kueue.x-k8s.io";
inline constexpr std::string_view kApiVersion = "kueue.x-k8s.io/v1beta2";

// Labels Kueue reads on a Workload.
inline constexpr std::string_view kLabelPriorityClass = "kueue.x-k8s.io/priority-class";
inline constexpr std::string_view kLabelJobUid = "kueue.x-k8s.io/job-uid";

// Namespace is core/v1: Kueue reads its labels for ClusterQueue.spec.namespaceSelector.
enum class Kind {
  ResourceFlavor,
  Cohort,
  ClusterQueue,
  LocalQueue,
  WorkloadPriorityClass,
  Workload,
  Namespace,
  AdmissionCheck
};

[[nodiscard]] std::string_view kind_name(Kind kind);
// "clusterqueues.kueue.x-k8s.io" ("namespaces" for the core Namespace), as the API server
// names the resource in its messages.
[[nodiscard]] std::string resource_name(Kind kind);

// spec.stopPolicy of ClusterQueues and LocalQueues.
enum class StopPolicy { None, Hold, HoldAndDrain };

// Where an object was read and the document itself.
struct Source {
  std::string file;
  int document = 0;     // index of the document within its file
  int item = -1;        // index within a `kind: List`, -1 when the document is the object
  SourcePos pos;        // of the object's mapping
  doc::Node raw;        // the object as written
};

// metav1.LabelSelector. An empty one matches every label set.
struct LabelSelectorRequirement {
  enum class Operator { In, NotIn, Exists, DoesNotExist };
  std::string key;
  Operator op = Operator::In;
  std::vector<std::string> values;
};
struct LabelSelector {
  std::map<std::string, std::string> match_labels;
  std::vector<LabelSelectorRequirement> match_expressions;
  // labels.Selector.Matches of the selector LabelSelectorAsSelector builds: every
  // matchLabels pair and every requirement must hold (NotIn and DoesNotExist hold when
  // the key is absent).
  [[nodiscard]] bool matches(const std::map<std::string, std::string>& labels) const;
};

struct ObjectMeta {
  std::string name;
  std::string ns;  // metadata.namespace; "default" when a namespaced object has none
  std::string uid;
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;
  std::optional<Timestamp> creation_timestamp;
  std::optional<std::int64_t> generation;
};

// core/v1 Taint and Toleration, as far as Kueue reads them.
struct Taint {
  std::string key, value;
  std::string effect;  // NoSchedule, PreferNoSchedule or NoExecute
  std::optional<Timestamp> time_added;
};

struct Toleration {
  std::string key;
  // "Equal" (also when empty), "Exists", "Lt" or "Gt"; in a pod template any string (the
  // Workload CRD does not restrict it), which then tolerates nothing.
  std::string op;
  std::string value;
  std::string effect;  // empty: every effect
  std::optional<std::int64_t> toleration_seconds;
};

struct ResourceQuota {
  std::string name;
  Quantity nominal_quota;
  std::optional<Quantity> borrowing_limit;
  std::optional<Quantity> lending_limit;
};

struct FlavorQuotas {
  std::string name;
  std::vector<ResourceQuota> resources;
};

struct ResourceGroup {
  std::vector<std::string> covered_resources;
  std::vector<FlavorQuotas> flavors;
};

struct ResourceFlavor {
  ObjectMeta metadata;
  std::map<std::string, std::string> node_labels;
  std::vector<Taint> node_taints;
  std::vector<Toleration> tolerations;
  std::string topology_name;
  Source source;
};

struct Cohort {
  ObjectMeta metadata;
  std::string parent_name;
  std::vector<ResourceGroup> resource_groups;
  std::optional<Quantity> fair_weight;  // spec.fairSharing.weight (default 1)
  Source source;
};

struct ClusterQueue {
  ObjectMeta metadata;
  std::string cohort_name;
  std::vector<ResourceGroup> resource_groups;
  twin::QueueingStrategy queueing_strategy = twin::QueueingStrategy::BestEffortFIFO;
  twin::ClusterQueuePreemption preemption;
  twin::FlavorFungibility flavor_fungibility;
  std::optional<Quantity> fair_weight;
  StopPolicy stop_policy = StopPolicy::None;
  // spec.namespaceSelector; nullopt when unset, which Kueue reads as a selector that
  // matches no namespace (metav1.LabelSelectorAsSelector(nil) is labels.Nothing()).
  std::optional<LabelSelector> namespace_selector;
  // spec.admissionChecksStrategy.admissionChecks: a check and the flavors it runs for
  // (empty: all of them).
  std::vector<std::pair<std::string, std::vector<std::string>>> admission_checks;
  Source source;
};

struct LocalQueue {
  ObjectMeta metadata;
  std::string cluster_queue;
  StopPolicy stop_policy = StopPolicy::None;
  std::optional<Quantity> fair_weight;
  Source source;
};

struct WorkloadPriorityClass {
  ObjectMeta metadata;
  std::int32_t value = 0;
  std::string description;
  Source source;
};

using ResourceList = std::map<std::string, Quantity>;

struct ResourceRequirements {
  ResourceList requests, limits;
};

struct Container {
  std::string name;
  ResourceRequirements resources;
  std::string restart_policy;  // "Always" on an init container: a sidecar
};

// core/v1 NodeSelectorRequirement as written: the Workload CRD requires key and operator
// and checks nothing else; Kueue parses the requirement when it matches flavors.
struct NodeSelectorRequirement {
  std::string key, op;
  std::vector<std::string> values;
};
// A term's matchFields are checked against the schema but not kept: Kueue's flavorSelector
// drops them.
struct NodeSelectorTerm {
  std::vector<NodeSelectorRequirement> match_expressions;
};

// The parts of a pod template admission reads.
struct PodSpec {
  std::vector<Container> init_containers, containers;
  ResourceList overhead;
  std::optional<ResourceRequirements> resources;  // pod-level resources
  std::map<std::string, std::string> node_selector;
  // affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms
  std::vector<NodeSelectorTerm> required_node_affinity;
  std::vector<Toleration> tolerations;
  std::string priority_class_name;
};

struct PodSet {
  std::string name = "main";
  std::int32_t count = 1;
  std::optional<std::int32_t> min_count;
  // template.metadata: checked by the webhook (WorkloadValidationForPodSetMetadata); the
  // twin's admission does not read them.
  std::map<std::string, std::string> template_labels, template_annotations;
  PodSpec spec;  // template.spec
};

struct PriorityClassRef {
  std::string group, kind, name;
};

struct PodSetAssignment {
  std::string name = "main";
  std::map<std::string, std::string> flavors;  // resource -> flavor
  ResourceList resource_usage;
  std::optional<std::int32_t> count;
};

struct Admission {
  std::string cluster_queue;
  std::vector<PodSetAssignment> pod_set_assignments;
};

// metav1.Condition.
struct Condition {
  std::string type;
  std::string status;  // True, False or Unknown
  std::optional<std::int64_t> observed_generation;
  Timestamp last_transition_time{};
  std::string reason;
  std::string message;
};

struct ReclaimablePod {
  std::string name;
  std::int32_t count = 0;
};

struct Workload {
  ObjectMeta metadata;
  std::string queue_name;
  std::vector<PodSet> pod_sets;
  std::optional<std::int32_t> priority;
  std::optional<PriorityClassRef> priority_class_ref;
  bool active = true;
  // status
  std::optional<Admission> admission;
  std::vector<Condition> conditions;
  std::vector<ReclaimablePod> reclaimable_pods;
  Source source;

  // The condition of that type, or nullptr.
  [[nodiscard]] const Condition* condition(std::string_view type) const;
  // A true QuotaReserved condition (Kueue's workload.HasQuotaReservation).
  [[nodiscard]] bool has_quota_reservation() const;
  [[nodiscard]] bool is_condition_true(std::string_view type) const;
};

// Every object read, per kind, each in input order.
// An AdmissionCheck: its controller, and whether that controller marked it Active (Kueue's
// cache reads status.conditions[Active] == True; without it the check is inactive).
struct AdmissionCheck {
  ObjectMeta metadata;
  std::string controller_name;
  bool active = false;
  Source source;
};

// One entry of Configuration.resources.transformations (config.kueue.x-k8s.io).
struct ResourceTransformation {
  std::string input;
  bool replace = false;     // strategy Replace: the input no longer counts; Retain (default) keeps it
  std::string multiply_by;  // empty: none
  ResourceList outputs;     // per unit of input
};

// Kueue's manager Configuration (config.kueue.x-k8s.io v1beta1 or v1beta2, as an object or
// in the ConfigMap that carries it): the parts that change admission.
struct ManagerConfiguration {
  std::string config_map;  // "<ns>/<name>" of the ConfigMap that held it; empty for a Configuration object
  // Set when fair sharing is on: its preemption strategies, validated.
  std::optional<std::vector<twin::FairSharingStrategy>> fair_sharing;
  std::optional<std::map<std::string, bool>> feature_gates;
  std::vector<std::string> exclude_resource_prefixes;
  std::vector<ResourceTransformation> transformations;
  bool ignore_undeclared = false;  // resources.quotaCheckStrategy: IgnoreUndeclared (default BlockUndeclared)
  Source source;  // of the Configuration itself (in a ConfigMap: file names both, lines count in the key's text)
};

// core/v1 Namespace: only its name and labels matter to admission.
struct Namespace {
  ObjectMeta metadata;
  Source source;
};

struct ObjectSet {
  std::vector<ResourceFlavor> resource_flavors;
  std::vector<Cohort> cohorts;
  std::vector<ClusterQueue> cluster_queues;
  std::vector<LocalQueue> local_queues;
  std::vector<WorkloadPriorityClass> priority_classes;
  std::vector<Workload> workloads;
  std::vector<Namespace> namespaces;  // core/v1; none given: the selector checks that need labels are skipped
  std::vector<AdmissionCheck> admission_checks;
  std::vector<ManagerConfiguration> configurations;  // at most one is valid (check_object_set)

  // The manager's Configuration when the input has one.
  [[nodiscard]] const ManagerConfiguration* configuration() const {
    return configurations.empty() ? nullptr : &configurations.front();
  }

  [[nodiscard]] const ResourceFlavor* find_flavor(std::string_view name) const;
  [[nodiscard]] const Cohort* find_cohort(std::string_view name) const;
  [[nodiscard]] const ClusterQueue* find_cluster_queue(std::string_view name) const;
  [[nodiscard]] const LocalQueue* find_local_queue(std::string_view ns, std::string_view name) const;
  [[nodiscard]] const WorkloadPriorityClass* find_priority_class(std::string_view name) const;
  [[nodiscard]] const Namespace* find_namespace(std::string_view name) const;
  [[nodiscard]] const AdmissionCheck* find_admission_check(std::string_view name) const;
};

}  // namespace gpubank::kueue
