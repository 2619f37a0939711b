#include "policy/decode.hpp"

#include "policy/rules.hpp"
#include "policy/schema.hpp"

namespace gpubank::doc {

template <>
struct Schema<policy::ObjectMeta> {
  template <class V, class S>
  static void fields(V& v, S& s) {
    v.required("name", s.name, DnsLabel{});
    v.optional("labels", s.labels, LabelMapFormat{});
    v.optional("annotations", s.annotations);
    v.known("namespace");  // accepted with a warning: policies are cluster-scoped
    // Server-written fields of objects read back from a cluster: accepted, not kept.
    for (auto key : {"uid", "resourceVersion", "generation", "creationTimestamp", "deletionTimestamp",
                     "deletionGracePeriodSeconds", "managedFields", "finalizers", "ownerReferences",
                     "generateName", "selfLink"}) {
      v.known(key);
    }
  }
};

}  // namespace gpubank::doc

namespace gpubank::policy {
namespace {

template <class S>
std::optional<Spec> decode_spec(const doc::Field& f) {
  S spec{};
  if (!doc::decode_value(f, spec)) return std::nullopt;
  return Spec(std::move(spec));
}

std::optional<Spec> decode_spec_of(Kind kind, const doc::Field& f) {
  switch (kind) {
    case Kind::PlatformGuardrails: return decode_spec<PlatformGuardrailsSpec>(f);
    case Kind::GPUQuotaPolicy: return decode_spec<GPUQuotaPolicySpec>(f);
    case Kind::InferenceScalingPolicy: return decode_spec<InferenceScalingPolicySpec>(f);
    case Kind::TidalPolicy: return decode_spec<TidalPolicySpec>(f);
    case Kind::CapacityLease: return decode_spec<CapacityLeaseSpec>(f);
    case Kind::LowUtilizationPolicy: return decode_spec<LowUtilizationPolicySpec>(f);
  }
  return std::nullopt;
}

std::string supported_kinds() {
  std::string out;
  for (Kind k : {Kind::PlatformGuardrails, Kind::GPUQuotaPolicy, Kind::InferenceScalingPolicy, Kind::TidalPolicy,
                 Kind::CapacityLease, Kind::LowUtilizationPolicy}) {
    if (!out.empty()) out += ", ";
    out += kind_name(k);
  }
  return out;
}

}  // namespace

std::optional<PolicyObject> decode_policy(const doc::Node& root, const Origin& origin, Diagnostics& out) {
  const std::string kind_text(root.string_at("kind"));
  std::string name;
  if (const doc::Node* meta = root.find("metadata")) name = std::string(meta->string_at("name"));

  PolicyObject object;
  object.origin = origin;
  doc::DecodeContext ctx(origin.file, kind_text, name, out, &object.fields);
  const doc::Field top{ctx, root, ""};
  doc::ObjectReader reader(top);
  if (!reader.is_object()) return std::nullopt;

  std::string api_version;
  std::string kind_field;
  reader.required("apiVersion", api_version);
  reader.required("kind", kind_field);
  const auto kind = kind_from_name(kind_field);
  if (api_version != kApiVersion || !kind) {
    if (!api_version.empty() && !kind_field.empty()) {
      const bool bad_version = api_version != kApiVersion;
      const doc::Node* at = root.find(bad_version ? "apiVersion" : "kind");
      ctx.report(rule::kUnknownKind, at->pos, bad_version ? "apiVersion" : "kind",
                 bad_version ? "unsupported apiVersion \"" + api_version + "\": gpubank serves " +
                                   std::string(kApiVersion)
                             : "unknown kind \"" + kind_field + "\" in " + std::string(kApiVersion) +
                                   ": supported kinds are " + supported_kinds());
    }
    return std::nullopt;
  }
  object.kind = *kind;
  reader.required("metadata", object.metadata);
  if (const doc::Node* meta = root.find("metadata"); meta != nullptr && meta->find("namespace") != nullptr) {
    ctx.report(rule::kIgnoredField, meta->find("namespace")->pos, "metadata.namespace",
               "policies are cluster-scoped; metadata.namespace is ignored", Severity::Warning);
  }
  if (const doc::Node* spec = reader.raw("spec"); spec == nullptr || spec->type == doc::NodeType::Null) {
    ctx.report(rule::kRequired, root.pos, "spec", "required field is missing");
  } else {
    ctx.record("spec", spec->pos);
    if (auto decoded = decode_spec_of(*kind, top.child(*spec, "spec"))) object.spec = std::move(*decoded);
  }
  if (const doc::Node* status = reader.raw("status"); status != nullptr) {
    object.status = doc::to_json(*status);
    // Where a lease's approval is, for findings about it (lease.approval-mismatch).
    ctx.record("status", status->pos);
    if (const doc::Node* approval = status->find("approval"); approval != nullptr) {
      ctx.record("status.approval", approval->pos);
      if (const doc::Node* hash = approval->find("specHash"); hash != nullptr) {
        ctx.record("status.approval.specHash", hash->pos);
      }
    }
  }
  reader.finish();
  if (ctx.error_count() > 0) return std::nullopt;
  return object;
}

doc::Json encode_policy(const PolicyObject& object) {
  doc::Json out = doc::Json::object();
  out["apiVersion"] = kApiVersion;
  out["kind"] = kind_name(object.kind);
  out["metadata"] = doc::encode_value(object.metadata);
  out["spec"] = std::visit([](const auto& spec) { return doc::encode_value(spec); }, object.spec);
  if (!object.status.is_null()) out["status"] = doc::Json::parse(object.status.dump());
  return out;
}

}  // namespace gpubank::policy
