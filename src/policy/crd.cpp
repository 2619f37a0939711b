#include "policy/crd.hpp"

#include "policy/schema.hpp"
#include "policy/types.hpp"

namespace gpubank::policy {
namespace {

using doc::Json;

// Go's duration grammar with a unit always required (what Duration::parse takes).
constexpr const char* kDurationPattern = R"(^[-+]?(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+$)";
constexpr const char* kDnsLabelPattern = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$";
constexpr const char* kSubjectPattern = "^(user|group):.+$";

// ---- what each check means in OpenAPI ------------------------------------------------

void constrain(Json& s, const doc::AtLeast& c) { s["minimum"] = c.min; }
void constrain(Json& s, const doc::Between& c) {
  s["minimum"] = c.min;
  s["maximum"] = c.max;
}
void constrain(Json& s, const doc::GpuCount& c) {
  s["minimum"] = c.min;
  s["maximum"] = kMaxGpus;
}
void constrain(Json& s, const doc::Positive&) {
  if (s["type"] == "number") {
    s["minimum"] = 0;
    s["exclusiveMinimum"] = true;
  }
}
void constrain(Json&, const doc::NonNegative&) {}  // durations: the sign is in the string
void constrain(Json& s, const doc::NotEmpty&) {
  if (s["type"] == "array") {
    s["minItems"] = 1;
  } else if (s["type"] == "string") {
    s["minLength"] = 1;
  } else if (s["type"] == "object") {
    s["minProperties"] = 1;
  }
}
void constrain(Json& s, const doc::DnsLabel&) {
  s["maxLength"] = 63;
  s["pattern"] = kDnsLabelPattern;
}
void constrain(Json& s, const doc::DnsLabels&) {
  s["items"]["maxLength"] = 63;
  s["items"]["pattern"] = kDnsLabelPattern;
}
void constrain(Json& s, const doc::SubjectFormat&) { s["items"]["pattern"] = kSubjectPattern; }
void constrain(Json& s, const doc::PartitionFormat&) { s["pattern"] = R"(^(full|[0-9]+g\.[0-9]+gb(\+me)?)$)"; }
void constrain(Json& s, const doc::ModelFormat&) {
  s["maxLength"] = 63;
  s["pattern"] = "^[A-Za-z0-9._-]+$";
}
void constrain(Json& s, const doc::CurrencyFormat&) { s["pattern"] = "^[A-Z]{3}$"; }
void constrain(Json&, const doc::LabelMapFormat&) {}  // key rules do not fit OpenAPI; the webhook checks them

// ---- how server-side apply merges lists ----------------------------------------------
//
// Every list says how server-side apply merges it (x-kubernetes-list-type). `map` merges
// items by key, so two managers can own different items; the API server then refuses two
// items with the same key, so a list is a map only where gpubank's own validator already
// refuses duplicate keys (guardrails.duplicate-name, tidal.duplicate-window), and its key
// is a required field (the API server refuses a map key that is neither required nor
// defaulted). `set` would refuse duplicate items the same way, and no list of scalars in
// the policy API has its duplicates refused by the validator (duplicate admins, namespaces
// or workload types are harmless there), so those lists are `atomic`: replaced whole by
// whichever manager applies them.

template <class T>
struct ListMapKey {
  static constexpr const char* key = nullptr;
};
template <>
struct ListMapKey<Pool> {
  static constexpr const char* key = "name";  // guardrails.duplicate-name
};
template <>
struct ListMapKey<Group> {
  static constexpr const char* key = "name";  // guardrails.duplicate-name
};
template <>
struct ListMapKey<PriorityRule> {
  static constexpr const char* key = "name";  // guardrails.duplicate-name
};
template <>
struct ListMapKey<TidalWindow> {
  static constexpr const char* key = "name";  // tidal.duplicate-window
};

// ---- CEL rules (x-kubernetes-validations) --------------------------------------------
//
// What CEL can check cheaply and certainly on one object: relations between fields that
// gpubank's validator (validate.cpp) also checks, each rule rejecting exactly what the
// named validator rule rejects, never more. Rules sit on objects that occur once per
// resource (the spec and its singleton children), never inside unbounded lists or maps:
// the API server estimates a rule's cost times how often it may run, and refuses a CRD
// whose rules under unbounded lists could exceed its budget. That leaves out, on purpose,
// guardrails.limit-range (inside groups[].limits) and tidal.window-start-equals-end (inside
// windows[], and a string comparison costs per character). Everything needing other objects
// (sums, references, guardrail ranges) stays with the admission webhook.
// docs/policy-api.md, "What the API server checks", lists them.

struct CelRule {
  const char* rule;
  const char* message;
  const char* field_path;  // relative to the object the rule is on; nullptr: that object
  const char* reason;      // nullptr: FieldValueInvalid
};

template <class T>
struct CelRules {
  static std::vector<CelRule> get() { return {}; }
};
template <>
struct CelRules<GPUQuotaPolicySpec> {
  static std::vector<CelRule> get() {
    return {
        {"!has(self.lendingLimit) || self.lendingLimit <= self.guaranteed",
         "lendingLimit must not be above guaranteed: a group can lend at most its own unused guarantee "
         "[quota.lending-limit-range]",
         ".lendingLimit", nullptr},
        {"!has(self.maxCapacity) || (self.maxCapacity >= self.guaranteed && "
         "self.maxCapacity <= self.guaranteed + (has(self.borrowLimit) ? self.borrowLimit : 0))",
         "maxCapacity must be between guaranteed and guaranteed + borrowLimit [quota.max-capacity-range]",
         ".maxCapacity", nullptr},
    };
  }
};
template <>
struct CelRules<ReplicaShape> {
  static std::vector<CelRule> get() {
    return {{"self.gpuPerReplica % self.tensorParallelSize == 0",
             "gpuPerReplica must be a multiple of tensorParallelSize [inference.shape-tp-multiple]", ".gpuPerReplica",
             nullptr}};
  }
};
template <>
struct CelRules<ScaleUp> {
  static std::vector<CelRule> get() {
    return {{"has(self.queueDepthPerReplica) || has(self.ttftP95) || has(self.kvCacheHighWatermark) || "
             "has(self.requestsPerSecondPerReplica)",
             "scaleUp needs at least one signal: queueDepthPerReplica, ttftP95, kvCacheHighWatermark or "
             "requestsPerSecondPerReplica [inference.no-scale-up-signal]",
             nullptr, "FieldValueRequired"}};
  }
};
template <>
struct CelRules<InferenceScalingPolicySpec> {
  static std::vector<CelRule> get() {
    return {
        {"self.minReplicas <= self.maxReplicas", "minReplicas must not be above maxReplicas [inference.replica-range]",
         ".minReplicas", nullptr},
        {"!has(self.scaleDown) || !has(self.scaleDown.queueDepthPerReplica) || "
         "!has(self.scaleUp.queueDepthPerReplica) || "
         "self.scaleDown.queueDepthPerReplica < self.scaleUp.queueDepthPerReplica",
         "scaleDown.queueDepthPerReplica must be below scaleUp.queueDepthPerReplica, or the service flaps between "
         "the two [inference.scale-down-above-scale-up]",
         ".scaleDown.queueDepthPerReplica", nullptr},
    };
  }
};
template <>
struct CelRules<CapacityLeaseSpec> {
  static std::vector<CelRule> get() {
    return {
        {"has(self.end)", "a lease needs an end time (RFC 3339); leases never run open-ended [lease.end-required]",
         ".end", "FieldValueRequired"},
        // Both are RFC 3339 (format: date-time); timestamp() compares instants, not text.
        {"!has(self.start) || !has(self.end) || timestamp(self.end) > timestamp(self.start)",
         "end must be after start [lease.end-before-start]", ".end", nullptr},
        {"self.type != 'TemporaryQuota' || (has(self.extraGuaranteed) && !has(self.selector))",
         "a TemporaryQuota lease needs extraGuaranteed and no selector [lease.type-fields]", nullptr, nullptr},
        {"self.type != 'Protection' || (has(self.selector) && !has(self.extraGuaranteed))",
         "a Protection lease needs a selector and no extraGuaranteed [lease.type-fields]", nullptr, nullptr},
    };
  }
};
template <>
struct CelRules<LowUtilizationThresholds> {
  static std::vector<CelRule> get() {
    return {{"has(self.averageGpuUtilization) || has(self.averageMemoryUtilization) || has(self.averagePowerFraction)",
             "set at least one of averageGpuUtilization, averageMemoryUtilization, averagePowerFraction "
             "[lowutil.no-threshold]",
             nullptr, "FieldValueRequired"}};
  }
};

void add_rules(Json& s, const std::vector<CelRule>& rules) {
  if (rules.empty()) return;
  Json out = Json::array();
  for (const auto& r : rules) {
    Json v = {{"rule", r.rule}, {"message", r.message}};
    if (r.field_path != nullptr) v["fieldPath"] = r.field_path;
    if (r.reason != nullptr) v["reason"] = r.reason;
    out.push_back(std::move(v));
  }
  s["x-kubernetes-validations"] = std::move(out);
}

// ---- types ---------------------------------------------------------------------------

template <class T>
Json schema_of();

class SchemaWriter {
 public:
  template <class T, class... Checks>
  void required(std::string_view key, const T&, Checks... checks) {
    add<T>(key, checks...);
    required_.push_back(std::string(key));
  }
  template <class T, class... Checks>
  void optional(std::string_view key, const T&, Checks... checks) {
    add<T>(key, checks...);
  }
  void known(std::string_view) {}

  Json take() {
    Json out = {{"type", "object"}, {"properties", std::move(properties_)}};
    if (!required_.empty()) out["required"] = required_;
    return out;
  }

 private:
  template <class T, class... Checks>
  void add(std::string_view key, Checks... checks) {
    Json s = schema_of<T>();
    (constrain(s, checks), ...);
    properties_[std::string(key)] = std::move(s);
  }
  Json properties_ = Json::object();
  std::vector<std::string> required_;
};

template <class T>
struct SchemaOf {
  static Json get() {
    if constexpr (doc::HasSchema<T>) {
      SchemaWriter w;
      const T prototype{};  // the writer reads only the field descriptions
      doc::Schema<T>::fields(w, prototype);
      Json out = w.take();
      add_rules(out, CelRules<T>::get());
      return out;
    } else if constexpr (doc::IsEnumWithNames<T>) {
      Json values = Json::array();
      for (const auto& [value, name] : doc::EnumNames<T>::values) values.push_back(std::string(name));
      return {{"type", "string"}, {"enum", values}};
    } else {
      static_assert(sizeof(T) == 0, "no OpenAPI schema for this type");
    }
  }
};
template <class T>
struct SchemaOf<std::optional<T>> {
  static Json get() { return schema_of<T>(); }
};
template <class T>
struct SchemaOf<std::vector<T>> {
  static Json get() {
    Json s = {{"type", "array"}, {"items", schema_of<T>()}};
    if constexpr (ListMapKey<T>::key != nullptr) {
      s["x-kubernetes-list-type"] = "map";
      s["x-kubernetes-list-map-keys"] = {ListMapKey<T>::key};
    } else {
      s["x-kubernetes-list-type"] = "atomic";
    }
    return s;
  }
};
template <class T>
struct SchemaOf<std::map<std::string, T>> {
  static Json get() { return {{"type", "object"}, {"additionalProperties", schema_of<T>()}}; }
};
template <>
struct SchemaOf<std::string> {
  static Json get() { return {{"type", "string"}}; }
};
template <>
struct SchemaOf<bool> {
  static Json get() { return {{"type", "boolean"}}; }
};
template <>
struct SchemaOf<int> {
  static Json get() { return {{"type", "integer"}, {"format", "int32"}}; }
};
template <>
struct SchemaOf<double> {
  static Json get() { return {{"type", "number"}}; }
};
template <>
struct SchemaOf<Duration> {
  static Json get() { return {{"type", "string"}, {"pattern", kDurationPattern}}; }
};
template <>
struct SchemaOf<Timestamp> {
  static Json get() { return {{"type", "string"}, {"format", "date-time"}}; }
};
template <>
struct SchemaOf<CronSchedule> {
  static Json get() { return {{"type", "string"}, {"minLength", 1}, {"description", "five-field cron (robfig/cron v3)"}}; }
};
template <>
struct SchemaOf<TimeZoneRef> {
  static Json get() { return {{"type", "string"}, {"minLength", 1}, {"description", "IANA time zone"}}; }
};
template <>
struct SchemaOf<ReplicaFloor> {
  // An integer, or {policy name: integer}: no single structural type, so the API server
  // keeps it as given and the webhook checks it.
  static Json get() {
    return {{"x-kubernetes-preserve-unknown-fields", true},
            {"description", "replicas for every targeted policy (integer) or per policy ({name: integer})"}};
  }
};

template <class T>
Json schema_of() {
  return SchemaOf<T>::get();
}

struct KindInfo {
  Kind kind;
  const char* plural;
  const char* singular;
  const char* short_name;
  struct Column {
    const char* name;
    const char* type;  // "string", "integer", "date"
    const char* path;
  };
  std::vector<Column> columns;
};

// metav1.Condition, as controller-gen writes it: what the controller sets (Accepted,
// Rendered, Applied; src/controller/conditions.hpp) and what `kubectl wait
// --for=condition=...` reads. A map keyed by type, so another controller's conditions merge
// in beside gpubank's.
Json condition_list() {
  Json condition = {
      {"type", "object"},
      {"required", {"lastTransitionTime", "message", "reason", "status", "type"}},
      {"properties",
       {{"type",
         {{"type", "string"},
          {"maxLength", 316},
          {"pattern",
           R"(^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$)"},
          {"description", "Accepted, Rendered or Applied (gpubank's), or another controller's"}}},
        {"status", {{"type", "string"}, {"enum", {"True", "False", "Unknown"}}}},
        {"observedGeneration", {{"type", "integer"}, {"format", "int64"}, {"minimum", 0}}},
        {"lastTransitionTime", {{"type", "string"}, {"format", "date-time"}}},
        {"reason",
         {{"type", "string"},
          {"minLength", 1},
          {"maxLength", 1024},
          {"pattern", "^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"}}},
        {"message", {{"type", "string"}, {"maxLength", 32768}}}}},
  };
  return {{"type", "array"},
          {"x-kubernetes-list-type", "map"},
          {"x-kubernetes-list-map-keys", {"type"}},
          {"items", std::move(condition)}};
}

// status: what the controller writes through the status subresource (observedGeneration,
// conditions), typed. A CapacityLease's status also holds its approval
// (lease_approval.hpp), which gpubank reads and the webhook checks, and the phase and other
// fields administrators' tools write (docs/policy-api.md, "Leases"): its status keeps
// unknown fields, the other kinds' do not.
Json status_schema(Kind kind) {
  Json status = {{"type", "object"},
                 {"properties",
                  {{"observedGeneration",
                    {{"type", "integer"},
                     {"format", "int64"},
                     {"minimum", 0},
                     {"description", "the metadata.generation the conditions are about"}}},
                   {"conditions", condition_list()}}}};
  if (kind == Kind::CapacityLease) {
    status["x-kubernetes-preserve-unknown-fields"] = true;
    status["properties"]["phase"] = {{"type", "string"}, {"description", "informational"}};
    status["properties"]["approval"] = {
        {"type", "object"},
        {"description", "written by a platform administrator; binds the approval to the spec it approved"},
        {"required", {"approvedBy", "specHash"}},
        {"properties",
         {{"approvedBy", {{"type", "string"}, {"minLength", 1}, {"description", "user:<name>, as userInfo reports it"}}},
          {"specHash", {{"type", "string"}, {"minLength", 1}, {"description", "sha256:<hex> of the canonical spec"}}},
          {"approvedAt", {{"type", "string"}, {"format", "date-time"}}}}}};
  }
  return status;
}

template <class S>
Json crd(const KindInfo& info) {
  const std::string kind(kind_name(info.kind));
  Json columns = Json::array();
  for (const auto& c : info.columns) {
    columns.push_back({{"name", c.name}, {"type", c.type}, {"jsonPath", c.path}});
  }
  for (const char* condition : {"Accepted", "Applied"}) {
    columns.push_back({{"name", condition},
                       {"type", "string"},
                       {"jsonPath", std::string(R"(.status.conditions[?(@.type==")") + condition + R"(")].status)"}});
  }
  columns.push_back({{"name", "Age"}, {"type", "date"}, {"jsonPath", ".metadata.creationTimestamp"}});
  Json root = {
      {"type", "object"},
      {"required", {"spec"}},
      {"properties",
       {{"apiVersion", {{"type", "string"}}},
        {"kind", {{"type", "string"}}},
        {"metadata", {{"type", "object"}}},
        {"spec", schema_of<S>()},
        {"status", status_schema(info.kind)}}},
  };
  return {
      {"apiVersion", "apiextensions.k8s.io/v1"},
      {"kind", "CustomResourceDefinition"},
      {"metadata",
       {{"name", std::string(info.plural) + "." + std::string(kApiGroup)},
        {"labels", {{"app.kubernetes.io/part-of", "gpubank"}, {"app.kubernetes.io/managed-by", "gpubank"}}}}},
      {"spec",
       {{"group", kApiGroup},
        {"scope", "Cluster"},
        {"names",
         {{"kind", kind},
          {"listKind", kind + "List"},
          {"plural", info.plural},
          {"singular", info.singular},
          {"shortNames", {info.short_name}},
          {"categories", {"gpubank"}}}},
        {"versions",
         {{{"name", "v1alpha1"},
           {"served", true},
           {"storage", true},
           {"subresources", {{"status", Json::object()}}},
           {"additionalPrinterColumns", columns},
           {"schema", {{"openAPIV3Schema", root}}}}}}}},
  };
}

}  // namespace

std::vector<Json> custom_resource_definitions() {
  return {
      crd<PlatformGuardrailsSpec>({Kind::PlatformGuardrails, "platformguardrails", "platformguardrail", "guardrails", {}}),
      crd<GPUQuotaPolicySpec>({Kind::GPUQuotaPolicy, "gpuquotapolicies", "gpuquotapolicy", "gqp",
                               {{"Group", "string", ".spec.businessGroup"}, {"Pool", "string", ".spec.resourcePool"},
                                {"Guaranteed", "integer", ".spec.guaranteed"}, {"Borrow", "integer", ".spec.borrowLimit"}}}),
      crd<InferenceScalingPolicySpec>({Kind::InferenceScalingPolicy, "inferencescalingpolicies",
                                       "inferencescalingpolicy", "isp",
                                       {{"Group", "string", ".spec.businessGroup"}, {"Pool", "string", ".spec.resourcePool"},
                                        {"Min", "integer", ".spec.minReplicas"}, {"Max", "integer", ".spec.maxReplicas"}}}),
      crd<TidalPolicySpec>({Kind::TidalPolicy, "tidalpolicies", "tidalpolicy", "tidal",
                            {{"Zone", "string", ".spec.timezone"}, {"Pool", "string", ".spec.targets.resourcePool"}}}),
      crd<CapacityLeaseSpec>({Kind::CapacityLease, "capacityleases", "capacitylease", "lease",
                              {{"Group", "string", ".spec.businessGroup"}, {"Type", "string", ".spec.type"},
                               {"End", "date", ".spec.end"}, {"Phase", "string", ".status.phase"}}}),
      crd<LowUtilizationPolicySpec>({Kind::LowUtilizationPolicy, "lowutilizationpolicies", "lowutilizationpolicy",
                                     "lowutil",
                                     {{"Type", "string", ".spec.match.workloadType"}, {"Window", "string", ".spec.window"}}}),
  };
}

}  // namespace gpubank::policy
