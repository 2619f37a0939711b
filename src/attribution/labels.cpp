#include "attribution/labels.hpp"

#include <algorithm>
#include <chrono>

#include "core/timestamp.hpp"

namespace gpubank::attribution {

namespace {

using Json = nlohmann::json;

// Owner labels that resolve_workload reads (besides pod-template-hash).
namespace owner_keys {
constexpr std::string_view kJobSetName = "jobset.sigs.k8s.io/jobset-name";
constexpr std::string_view kJobSetUid = "jobset.sigs.k8s.io/jobset-uid";
constexpr std::string_view kKubeflowJobName = "training.kubeflow.org/job-name";
constexpr std::string_view kKubeflowOperator = "training.kubeflow.org/operator-name";
constexpr std::string_view kLwsName = "leaderworkerset.sigs.k8s.io/name";
constexpr std::string_view kRayCluster = "ray.io/cluster";
constexpr std::string_view kRayOriginKind = "ray.io/originated-from-crd";
constexpr std::string_view kRayOriginName = "ray.io/originated-from-cr-name";
constexpr std::string_view kKServe = "serving.kserve.io/inferenceservice";
constexpr std::string_view kJobName = "batch.kubernetes.io/job-name";
constexpr std::string_view kLegacyJobName = "job-name";
constexpr std::string_view kJobUid = "batch.kubernetes.io/controller-uid";
constexpr std::string_view kPodTemplateHash = "pod-template-hash";
constexpr std::string_view kNotebookName = "notebook-name";
}  // namespace owner_keys

// Every label key any rule reads: what prune_pod keeps.
constexpr std::array<std::string_view, 24> kReadLabels{
    keys::kBusinessGroup,         keys::kCostCenter,            keys::kOwnerId,
    keys::kWorkloadType,          keys::kModel,                 keys::kModelVersion,
    keys::kKueueQueue,            keys::kVolcanoQueueLabel,     keys::kCapacityRole,
    keys::kCheckpointable,        owner_keys::kJobSetName,      owner_keys::kJobSetUid,
    owner_keys::kKubeflowJobName, owner_keys::kKubeflowOperator, owner_keys::kLwsName,
    owner_keys::kRayCluster,      owner_keys::kRayOriginKind,   owner_keys::kRayOriginName,
    owner_keys::kKServe,          owner_keys::kJobName,         owner_keys::kLegacyJobName,
    owner_keys::kJobUid,          owner_keys::kPodTemplateHash, owner_keys::kNotebookName};
// Every annotation key any rule reads.
constexpr std::array<std::string_view, 2> kReadAnnotations{keys::kVolcanoQueueAnnotation,
                                                           keys::kKeepRunningUntilAnnotation};

// The training operator's operator-name label, for a pod whose owner reference is not the
// job itself.
constexpr std::array<std::pair<std::string_view, std::string_view>, 6> kKubeflowOperators{{
    {"pytorchjob-controller", "PyTorchJob"},
    {"tfjob-controller", "TFJob"},
    {"mpijob-controller", "MPIJob"},
    {"xgboostjob-controller", "XGBoostJob"},
    {"paddlejob-controller", "PaddleJob"},
    {"jaxjob-controller", "JAXJob"},
}};

constexpr std::array<std::string_view, 4> kWorkloadTypes{"training", "inference", "batch", "notebook"};
constexpr std::array<std::string_view, 3> kCapacityRoles{"serving-floor", "burst-headroom", "borrowable-cold"};
constexpr std::array<std::string_view, 2> kBooleans{"true", "false"};

template <std::size_t N>
bool one_of(const std::array<std::string_view, N>& allowed, std::string_view value) {
  return std::find(allowed.begin(), allowed.end(), value) != allowed.end();
}

// Unix seconds as keep_running_until carries them: decimal digits without a leading zero,
// few enough for any int64 reader (the scanner parses them).
bool unix_seconds(std::string_view value) {
  return value.size() <= 18 && value.find_first_not_of("0123456789") == std::string_view::npos &&
         (value.size() == 1 || value.front() != '0');
}

// An RFC 3339 annotation as Unix seconds, rounded up to the whole second (an exception
// "until 18:00:00.5" still holds at 18:00:00); empty when it is no timestamp or before 1970.
std::string unix_seconds_of(const std::string& rfc3339) {
  const auto t = parse_rfc3339(rfc3339);
  if (!t) return {};
  const auto seconds = std::chrono::ceil<std::chrono::seconds>(t->time_since_epoch()).count();
  return seconds < 0 ? std::string() : std::to_string(seconds);
}

const Json& member(const Json& object, std::string_view key) {
  static const Json kNull;
  if (!object.is_object()) return kNull;
  const auto it = object.find(key);
  return it == object.end() ? kNull : *it;
}

std::string text(const Json& object, std::string_view key) {
  const Json& v = member(object, key);
  return v.is_string() ? v.get<std::string>() : std::string();
}

bool is_name_field(std::string_view field) {
  return field == "namespace" || field == "name" || field == "node" || field == "uid" || field == "pod_uid" ||
         field == "workload" || field == "workload_uid";
}

bool alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }

bool safe_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
}

// The pod's controller ownerReference, or null.
const Json* controller_owner(const Json& metadata) {
  const Json& refs = member(metadata, "ownerReferences");
  if (!refs.is_array()) return nullptr;
  for (const Json& ref : refs) {
    const Json& controller = member(ref, "controller");
    if (controller.is_boolean() && controller.get<bool>()) return &ref;
  }
  return nullptr;
}

}  // namespace

bool is_allowlisted(std::string_view label) {
  return std::find(kAllowlist.begin(), kAllowlist.end(), label) != kAllowlist.end();
}

std::string_view to_string(DropReason reason) {
  switch (reason) {
    case DropReason::TooLong: return "too-long";
    case DropReason::BadCharacter: return "bad-character";
    case DropReason::Email: return "email";
    case DropReason::NotAllowedValue: return "not-allowed-value";
    case DropReason::NotAllowlisted: return "not-allowlisted";
    case DropReason::MalformedTime: return "malformed-time";
  }
  return "unknown";
}

std::optional<DropReason> check_value(std::string_view field, std::string_view value) {
  if (!is_allowlisted(field) && !is_name_field(field)) return DropReason::NotAllowlisted;
  if (value.empty()) return std::nullopt;
  if (field == "owner_id" && value.find('@') != std::string_view::npos) return DropReason::Email;
  if (value.size() > (is_name_field(field) ? kMaxNameBytes : kMaxValueBytes)) return DropReason::TooLong;
  if (!std::all_of(value.begin(), value.end(), safe_char)) return DropReason::BadCharacter;
  // As Kubernetes label values and object names: alphanumeric at both ends (no ".." node
  // name can become a file name either).
  if (!alnum(value.front()) || !alnum(value.back())) return DropReason::BadCharacter;
  if (field == "workload_type" && !one_of(kWorkloadTypes, value)) return DropReason::NotAllowedValue;
  if (field == "capacity_role" && !one_of(kCapacityRoles, value)) return DropReason::NotAllowedValue;
  if (field == "checkpointable" && !one_of(kBooleans, value)) return DropReason::NotAllowedValue;
  if (field == "keep_running_until" && !unix_seconds(value)) return DropReason::MalformedTime;
  return std::nullopt;
}

void LabelStats::count(std::string_view field, DropReason reason) {
  ++dropped[{std::string(field), std::string(to_string(reason))}];
}

std::uint64_t LabelStats::of(std::string_view field, DropReason reason) const {
  const auto it = dropped.find({std::string(field), std::string(to_string(reason))});
  return it == dropped.end() ? 0 : it->second;
}

std::uint64_t LabelStats::total() const {
  std::uint64_t n = 0;
  for (const auto& [key, count] : dropped) n += count;
  return n;
}

Workload resolve_workload(const Json& pod) {
  namespace k = owner_keys;
  const Json& metadata = member(pod, "metadata");
  const Json& labels = member(metadata, "labels");
  const auto label = [&](std::string_view key) { return text(labels, key); };
  const Json* owner = controller_owner(metadata);
  // A bare pod is its own workload. Owner labels count only on a pod some controller owns:
  // a hand-made pod cannot claim another team's job by copying its labels.
  if (owner == nullptr) return {"Pod", text(metadata, "name"), text(metadata, "uid")};
  const std::string owner_kind = text(*owner, "kind");
  const std::string owner_name = text(*owner, "name");
  const std::string owner_uid = text(*owner, "uid");
  const std::string owner_api = text(*owner, "apiVersion");
  const auto owner_is = [&](std::string_view kind, const std::string& name) {
    return owner_kind == kind && owner_name == name;
  };

  if (const std::string name = label(k::kJobSetName); !name.empty()) return {"JobSet", name, label(k::kJobSetUid)};
  if (const std::string name = label(k::kKubeflowJobName); !name.empty()) {
    if (owner_api.starts_with("kubeflow.org/") && owner_name == name) return {owner_kind, name, owner_uid};
    const std::string op = label(k::kKubeflowOperator);
    for (const auto& [operator_name, kind] : kKubeflowOperators) {
      if (op == operator_name) return {std::string(kind), name, ""};
    }
  }
  if (const std::string name = label(k::kLwsName); !name.empty()) return {"LeaderWorkerSet", name, ""};
  if (const std::string kind = label(k::kRayOriginKind); kind == "RayJob" || kind == "RayService") {
    if (const std::string name = label(k::kRayOriginName); !name.empty()) return {kind, name, ""};
  }
  if (const std::string name = label(k::kRayCluster); !name.empty()) {
    return {"RayCluster", name, owner_is("RayCluster", name) ? owner_uid : ""};
  }
  if (const std::string name = label(k::kKServe); !name.empty()) return {"InferenceService", name, ""};
  if (owner_kind == "Job") {
    std::string name = label(k::kJobName);
    if (name.empty()) name = label(k::kLegacyJobName);
    if (name == owner_name) return {"Job", owner_name, owner_uid};
  }
  if (owner_kind == "ReplicaSet") {
    const std::string hash = label(k::kPodTemplateHash);
    if (!hash.empty() && owner_name.size() > hash.size() + 1 && owner_name.ends_with("-" + hash)) {
      // The Deployment's UID is on the ReplicaSet's ownerReference, which the pod does not
      // carry: left unknown rather than reported as the ReplicaSet's (it changes on every
      // rollout).
      return {"Deployment", owner_name.substr(0, owner_name.size() - hash.size() - 1), ""};
    }
  }
  if (owner_kind == "StatefulSet" && label(k::kNotebookName) == owner_name) return {"Notebook", owner_name, ""};
  return {owner_kind, owner_name, owner_uid};
}

std::string keep_running_until_of(const Json& pod, LabelStats* stats) {
  const std::string until =
      text(member(member(pod, "metadata"), "annotations"), keys::kKeepRunningUntilAnnotation);
  if (until.empty()) return {};
  std::string seconds = unix_seconds_of(until);
  if (seconds.empty()) {
    if (stats != nullptr) stats->count("keep_running_until", DropReason::MalformedTime);
    return {};
  }
  if (const auto bad = check_value("keep_running_until", seconds)) {
    if (stats != nullptr) stats->count("keep_running_until", *bad);
    return {};
  }
  return seconds;
}

Expected<PodMeta> pod_meta_from_json(const Json& pod, LabelStats* stats) {
  if (!pod.is_object()) return Unexpected{"pod: not an object"};
  const Json& metadata = member(pod, "metadata");
  if (!metadata.is_object()) return Unexpected{"metadata: missing"};
  PodMeta meta;
  const auto identity = [&](std::string_view key, std::string_view field, std::string& out) -> std::optional<std::string> {
    out = text(metadata, key);
    if (out.empty()) return "metadata." + std::string(key) + ": missing";
    if (const auto bad = check_value(field, out)) return "metadata." + std::string(key) + ": " + std::string(to_string(*bad));
    return std::nullopt;
  };
  if (auto e = identity("uid", "uid", meta.uid)) return Unexpected{*e};
  if (auto e = identity("name", "name", meta.name)) return Unexpected{*e};
  if (auto e = identity("namespace", "namespace", meta.namespace_name)) return Unexpected{*e};
  meta.node = text(member(pod, "spec"), "nodeName");
  if (const auto bad = check_value("node", meta.node)) return Unexpected{"spec.nodeName: " + std::string(to_string(*bad))};
  if (const std::string created = text(metadata, "creationTimestamp"); !created.empty()) {
    auto t = parse_rfc3339(created);
    if (!t) return Unexpected{"metadata.creationTimestamp: " + t.error()};
    meta.created_ms = std::chrono::duration_cast<std::chrono::milliseconds>(t->time_since_epoch()).count();
  }

  const Json& labels = member(metadata, "labels");
  const auto take = [&](std::string_view field, std::string value, std::string& out) {
    if (const auto bad = check_value(field, value)) {
      if (stats != nullptr) stats->count(field, *bad);
      return;
    }
    out = std::move(value);
  };
  take("business_group", text(labels, keys::kBusinessGroup), meta.business_group);
  take("cost_center", text(labels, keys::kCostCenter), meta.cost_center);
  take("owner_id", text(labels, keys::kOwnerId), meta.owner_id);
  take("workload_type", text(labels, keys::kWorkloadType), meta.workload_type);
  take("model", text(labels, keys::kModel), meta.model);
  take("model_version", text(labels, keys::kModelVersion), meta.model_version);
  // The first source present decides: an invalid Kueue queue does not fall back to a
  // Volcano one (a pod is queued by one of them).
  std::string queue = text(labels, keys::kKueueQueue);
  if (queue.empty()) queue = text(member(metadata, "annotations"), keys::kVolcanoQueueAnnotation);
  if (queue.empty()) queue = text(labels, keys::kVolcanoQueueLabel);
  take("queue", std::move(queue), meta.queue);
  take("capacity_role", text(labels, keys::kCapacityRole), meta.capacity_role);
  take("checkpointable", text(labels, keys::kCheckpointable), meta.checkpointable);
  meta.keep_running_until = keep_running_until_of(pod, stats);
  Workload workload = resolve_workload(pod);
  take("workload_kind", std::move(workload.kind), meta.workload_kind);
  take("workload", std::move(workload.name), meta.workload);
  take("workload_uid", std::move(workload.uid), meta.workload_uid);
  return meta;
}

void prune_pod(Json& pod) {
  if (!pod.is_object()) return;
  Json out = Json::object();
  const Json& metadata = member(pod, "metadata");
  Json m = Json::object();
  for (const char* key : {"name", "namespace", "uid", "creationTimestamp", "deletionTimestamp"}) {
    if (const Json& v = member(metadata, key); !v.is_null()) m[key] = v;
  }
  if (const Json& labels = member(metadata, "labels"); labels.is_object()) {
    Json kept = Json::object();
    for (const std::string_view key : kReadLabels) {
      if (const Json& v = member(labels, key); !v.is_null()) kept[std::string(key)] = v;
    }
    if (!kept.empty()) m["labels"] = std::move(kept);
  }
  for (const std::string_view key : kReadAnnotations) {
    if (const Json& v = member(member(metadata, "annotations"), key); !v.is_null()) m["annotations"][std::string(key)] = v;
  }
  if (const Json* owner = controller_owner(metadata); owner != nullptr) {
    Json ref = Json::object();
    for (const char* key : {"apiVersion", "kind", "name", "uid", "controller"}) {
      if (const Json& v = member(*owner, key); !v.is_null()) ref[key] = v;
    }
    m["ownerReferences"] = Json::array({std::move(ref)});
  }
  out["metadata"] = std::move(m);
  if (const Json& node = member(member(pod, "spec"), "nodeName"); !node.is_null()) out["spec"]["nodeName"] = node;
  if (const Json& phase = member(member(pod, "status"), "phase"); !phase.is_null()) out["status"]["phase"] = phase;
  pod = std::move(out);
}

bool pod_finished(const Json& pod) {
  const std::string phase = text(member(pod, "status"), "phase");
  return phase == "Succeeded" || phase == "Failed";
}

}  // namespace gpubank::attribution
