#include "schema/builtin.hpp"

#include <cstdint>

#include "core/quote.hpp"

namespace gpubank::schema::detail {
namespace {

// metav1.ObjectMeta (Kubernetes API reference, "ObjectMeta v1 meta"): every field with its
// type; labels and annotations are maps of strings, timestamps RFC 3339 date-times,
// finalizers a set and ownerReferences a map keyed by uid (their +listType markers).
constexpr std::string_view kObjectMeta = R"(
type: object
properties:
  annotations: {type: object, additionalProperties: {type: string}}
  creationTimestamp: {type: string, format: date-time}
  deletionGracePeriodSeconds: {type: integer, format: int64}
  deletionTimestamp: {type: string, format: date-time}
  finalizers:
    type: array
    items: {type: string}
    x-kubernetes-list-type: set
  generateName: {type: string}
  generation: {type: integer, format: int64}
  labels: {type: object, additionalProperties: {type: string}}
  managedFields:
    type: array
    items:
      type: object
      properties:
        apiVersion: {type: string}
        fieldsType: {type: string}
        fieldsV1: {type: object, x-kubernetes-preserve-unknown-fields: true}
        manager: {type: string}
        operation: {type: string}
        subresource: {type: string}
        time: {type: string, format: date-time}
  name: {type: string}
  namespace: {type: string}
  ownerReferences:
    type: array
    x-kubernetes-list-type: map
    x-kubernetes-list-map-keys: [uid]
    items:
      type: object
      required: [apiVersion, kind, name, uid]
      properties:
        apiVersion: {type: string}
        blockOwnerDeletion: {type: boolean}
        controller: {type: boolean}
        kind: {type: string}
        name: {type: string}
        uid: {type: string}
  resourceVersion: {type: string}
  selfLink: {type: string}
  uid: {type: string}
)";

// scheduling.k8s.io/v1 PriorityClass (API reference "PriorityClass v1 scheduling.k8s.io"):
// value (int32, required), globalDefault, description, preemptionPolicy (Never or
// PreemptLowerPriority, the default).
constexpr std::string_view kPriorityClass = R"(
type: object
required: [value]
properties:
  apiVersion: {type: string}
  kind: {type: string}
  metadata: {type: object}
  value: {type: integer, format: int32}
  globalDefault: {type: boolean}
  description: {type: string}
  preemptionPolicy: {type: string, enum: [Never, PreemptLowerPriority]}
)";

// v1 ConfigMap (API reference "ConfigMap v1 core"): data (strings), binaryData (base64),
// immutable.
constexpr std::string_view kConfigMap = R"(
type: object
properties:
  apiVersion: {type: string}
  kind: {type: string}
  metadata: {type: object}
  data: {type: object, additionalProperties: {type: string}}
  binaryData: {type: object, additionalProperties: {type: string, format: byte}}
  immutable: {type: boolean}
)";

void add(std::vector<Violation>& out, std::string path, std::string_view rule, std::string message) {
  out.push_back({std::move(path), std::string(rule), std::move(message)});
}

// pkg/apis/scheduling: names starting "system-" are the two built-in classes only, and a
// user-defined class may not exceed HighestUserDefinablePriority.
constexpr std::int64_t kHighestUserDefinablePriority = 1'000'000'000;

void check_priority_class(const Json& object, std::vector<Violation>& out) {
  const auto meta = object.find("metadata");
  if (meta == object.end() || !meta->is_object()) return;
  const auto name = meta->find("name");
  const auto value = object.find("value");
  const bool has_value = value != object.end() && value->is_number_integer();
  if (name != meta->end() && name->is_string() && name->get_ref<const std::string&>().starts_with("system-")) {
    const auto& n = name->get_ref<const std::string&>();
    const bool known = (n == "system-node-critical" && has_value && *value == 2'000'001'000) ||
                       (n == "system-cluster-critical" && has_value && *value == 2'000'000'000);
    if (!known) {
      add(out, "metadata.name", "priorityclass.reserved-name",
          "Forbidden: priority class names with 'system-' prefix are reserved for system use only (" + quote(n) +
              " is not system-node-critical or system-cluster-critical with its value)");
    }
  } else if (has_value && value->get<std::int64_t>() > kHighestUserDefinablePriority) {
    add(out, "value", "priorityclass.value",
        "Forbidden: maximum allowed value of a user defined priority is " + std::to_string(kHighestUserDefinablePriority));
  }
}

// pkg/apis/core/validation ValidateConfigMap: keys are IsConfigMapKey, data and binaryData
// keys do not overlap, and all values together are at most 1 MiB.
constexpr std::size_t kMaxConfigMapBytes = 1024 * 1024;

std::optional<std::string> check_config_map_key(std::string_view key) {
  if (key.size() > 253) return "must be no more than 253 characters";
  if (key.empty()) return "a valid config key must consist of alphanumeric characters, '-', '_' or '.'";
  for (const char c : key) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
                    c == '_' || c == '.';
    if (!ok) {
      return "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (regex '[-._a-zA-Z0-9]+')";
    }
  }
  if (key == "." || key == "..") return "must not be '" + std::string(key) + "'";
  if (key.starts_with("..")) return std::string("must not start with '..'");
  return std::nullopt;
}

void check_config_map(const Json& object, std::vector<Violation>& out) {
  std::size_t total = 0;
  const auto data = object.find("data");
  const bool has_data = data != object.end() && data->is_object();
  for (const char* field : {"data", "binaryData"}) {
    const auto map = object.find(field);
    if (map == object.end() || !map->is_object()) continue;
    const bool binary = field == std::string_view("binaryData");
    for (const auto& [key, value] : map->items()) {
      const std::string path = std::string(field) + "[" + key + "]";
      if (auto problem = check_config_map_key(key)) add(out, path, "configmap.key", "Invalid value: " + quote(key) + ": " + *problem);
      if (binary && has_data && data->contains(key)) {
        add(out, path, "configmap.duplicate-key", "Invalid value: " + quote(key) + ": duplicate of key present in data");
      }
      if (!value.is_string()) continue;
      const std::size_t size = value.get_ref<const std::string&>().size();
      total += binary ? size / 4 * 3 : size;  // binaryData counts its decoded bytes
    }
  }
  if (total > kMaxConfigMapBytes) {
    add(out, "", "configmap.size",
        "Too long: must have at most " + std::to_string(kMaxConfigMapBytes) + " bytes (data and binaryData hold about " +
            std::to_string(total) + ")");
  }
}

constexpr BuiltinKind kBuiltins[] = {
    {"scheduling.k8s.io/v1", "PriorityClass", false, kPriorityClass, check_priority_class},
    {"v1", "ConfigMap", true, kConfigMap, check_config_map},
};

}  // namespace

std::span<const BuiltinKind> builtin_kinds() { return kBuiltins; }

std::string_view object_meta_schema() { return kObjectMeta; }

MetaRules meta_rules(std::string_view group, std::string_view kind, bool namespaced) {
  MetaRules rules;
  rules.namespaced = namespaced;
  if (group == "kueue.x-k8s.io" && (kind == "LocalQueue" || kind == "WorkloadPriorityClass")) {
    // Jobs name these in label values (kueue.x-k8s.io/queue-name, kueue.x-k8s.io/priority-class),
    // and a label value is at most 63 characters: a longer name could never be used.
    rules.max_name_length = 63;
    rules.name_reason = std::string(kind) + " names are used as label values by the jobs that use them";
  } else if (group == "serving.kserve.io" && kind == "InferenceService") {
    // KServe's validating webhook requires IsvcNameFmt, [a-z]([-a-z0-9]*[a-z0-9])?; the name
    // becomes the prefix of the Services and Deployments it creates (DNS-1035 labels).
    rules.name = NameRule::Dns1035Label;
    rules.name_reason = "KServe's webhook requires InferenceService names to be DNS-1035 labels";
  }
  return rules;
}

}  // namespace gpubank::schema::detail
