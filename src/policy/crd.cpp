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
      return w.take();
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
  static Json get() { return {{"type", "array"}, {"items", schema_of<T>()}}; }
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

template <class S>
Json crd(const KindInfo& info) {
  const std::string kind(kind_name(info.kind));
  Json columns = Json::array();
  for (const auto& c : info.columns) {
    columns.push_back({{"name", c.name}, {"type", c.type}, {"jsonPath", c.path}});
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
        {"status", {{"type", "object"}, {"x-kubernetes-preserve-unknown-fields", true}}}}},
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
