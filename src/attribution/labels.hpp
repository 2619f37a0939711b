// The attribution allowlist: which pod metadata may become a label of a GPU sample, where
// each value comes from, and what a value must look like. Pure.
//
//   - Only the allowlisted names (kAllowlist) ever leave metasync; pod_meta_from_json reads
//     the label and annotation keys of docs/attribution.md's table and nothing else, so a
//     prompt, a request ID or a user name in some other label never becomes a label.
//   - A value is accepted as it is or dropped (empty): never truncated or rewritten into
//     something that looks valid but means another team. check_value says why a value is
//     refused; the reasons are counted in LabelStats (metasync's /metrics).
//   - Character set: [A-Za-z0-9._-], alphanumeric at both ends: a Kubernetes label value,
//     which also covers object names (DNS subdomains) and Kueue/Volcano queue names. At most
//     kMaxValueBytes bytes for attribution values; object names (namespace, pod, workload,
//     node, UIDs) may have Kubernetes' own limit, kMaxNameBytes.
//   - owner_id with an '@' is an e-mail address, a personal identifier: dropped ("email").
//     workload_type must be training, inference, batch or notebook, capacity_role
//     serving-floor, burst-headroom or borrowable-cold, checkpointable true or false
//     ("not-allowed-value"). keep_running_until is an instant as decimal Unix seconds, read
//     from an RFC 3339 annotation ("malformed-time" when it is not one).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "attribution/snapshot.hpp"
#include "core/expected.hpp"

namespace gpubank::attribution {

inline constexpr std::size_t kMaxValueBytes = 128;
inline constexpr std::size_t kMaxNameBytes = 253;

// The label names the attribution exporter may add to a sample.
inline constexpr std::array<std::string_view, 14> kAllowlist{
    "business_group", "owner_id",      "cost_center",   "queue",          "workload_type",
    "workload_uid",   "workload_kind", "workload",      "model",          "model_version",
    "pod_uid",        "capacity_role", "checkpointable", "keep_running_until"};
[[nodiscard]] bool is_allowlisted(std::string_view label);

// The pod label and annotation keys read (docs/attribution.md has the table).
namespace keys {
inline constexpr std::string_view kBusinessGroup = "platform.gpubank.dev/business-group";
inline constexpr std::string_view kCostCenter = "platform.gpubank.dev/cost-center";
inline constexpr std::string_view kOwnerId = "platform.gpubank.dev/owner-id";
inline constexpr std::string_view kWorkloadType = "platform.gpubank.dev/workload-type";
inline constexpr std::string_view kModel = "platform.gpubank.dev/model";
inline constexpr std::string_view kModelVersion = "platform.gpubank.dev/model-version";
inline constexpr std::string_view kKueueQueue = "kueue.x-k8s.io/queue-name";
inline constexpr std::string_view kVolcanoQueueAnnotation = "scheduling.volcano.sh/queue-name";
inline constexpr std::string_view kVolcanoQueueLabel = "volcano.sh/queue-name";
inline constexpr std::string_view kCapacityRole = "platform.gpubank.dev/capacity-role";
inline constexpr std::string_view kCheckpointable = "platform.gpubank.dev/checkpointable";
inline constexpr std::string_view kKeepRunningUntilAnnotation = "platform.gpubank.dev/keep-running-until";
}  // namespace keys

// Why a value was dropped.
enum class DropReason { TooLong, BadCharacter, Email, NotAllowedValue, NotAllowlisted, MalformedTime };
[[nodiscard]] std::string_view to_string(DropReason reason);

// Empty when `value` may be the value of `field` (an allowlisted label name, or one of the
// identity fields "namespace", "name", "node", "uid"); else why not. An empty value is
// accepted (it means unknown).
[[nodiscard]] std::optional<DropReason> check_value(std::string_view field, std::string_view value);

// Dropped values by (field, reason), for /metrics.
struct LabelStats {
  std::map<std::pair<std::string, std::string>, std::uint64_t> dropped{};
  void count(std::string_view field, DropReason reason);
  [[nodiscard]] std::uint64_t of(std::string_view field, DropReason reason) const;
  [[nodiscard]] std::uint64_t total() const;
};

// A pod (as the API server returns it) as a PodMeta: identity from metadata and
// spec.nodeName, attribution from the table's sources, the top-level owner by
// resolve_workload. Values check_value refuses are left empty and counted in `stats` (when
// given). Fails, naming the field, when metadata.uid, .name or .namespace is missing or not
// a valid name, or creationTimestamp is malformed.
[[nodiscard]] Expected<PodMeta> pod_meta_from_json(const nlohmann::json& pod, LabelStats* stats = nullptr);

// The keep-running-until annotation as keep_running_until carries it (decimal Unix
// seconds), or empty when absent or refused (counted in `stats` when given). Unlike the
// attribution it follows the pod: an owner may add or withdraw the exception while the pod
// runs (SnapshotBuilder re-reads it on every update).
[[nodiscard]] std::string keep_running_until_of(const nlohmann::json& pod, LabelStats* stats = nullptr);

// The top-level owner of a pod from its controller ownerReference and well-known labels,
// without asking the API server (the rules: docs/attribution.md). Values are unchecked.
struct Workload {
  std::string kind{};
  std::string name{};
  std::string uid{};
  friend bool operator==(const Workload&, const Workload&) = default;
};
[[nodiscard]] Workload resolve_workload(const nlohmann::json& pod);

// Strips a pod to what pod_meta_from_json and the informer's store need (name, namespace,
// uid, creationTimestamp, deletionTimestamp, the controller ownerReference, the labels and
// annotations of the table, spec.nodeName, status.phase), so that metasync's cache holds a
// few hundred bytes per pod instead of the whole object. pod_meta_from_json(prune) ==
// pod_meta_from_json(pod).
void prune_pod(nlohmann::json& pod);

// The pod is finished (status.phase Succeeded or Failed): it holds no devices any more.
[[nodiscard]] bool pod_finished(const nlohmann::json& pod);

}  // namespace gpubank::attribution
