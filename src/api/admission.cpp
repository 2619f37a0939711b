#include "api/admission.hpp"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <set>
#include <tuple>

#include "document/reader.hpp"
#include "policy/decode.hpp"
#include "policy/lease_approval.hpp"
#include "policy/rules.hpp"
#include "policy/schema.hpp"  // the names of workload types
#include "policy/validate.hpp"
#include "policy/workload.hpp"

namespace gpubank::api {
namespace {

// Whether two statuses differ at most in what a controller reports about the resource.
bool reporting_fields_only(const nlohmann::json& before, const nlohmann::json& after) {
  auto strip = [](nlohmann::json status) {
    if (!status.is_object()) return status.is_null() ? nlohmann::json::object() : status;
    status.erase("conditions");
    status.erase("observedGeneration");
    return status;
  };
  return strip(before) == strip(after);
}


namespace rule = policy::rule;
using doc::Node;
using doc::NodeType;

constexpr std::size_t kMaxWarnings = 20;
constexpr std::size_t kMaxWarningLength = 256;

// Finds request.uid without building the document, for bodies too large to read.
class UidFinder : public nlohmann::json_sax<nlohmann::json> {
 public:
  bool null() override { return value(); }
  bool boolean(bool) override { return value(); }
  bool number_integer(number_integer_t) override { return value(); }
  bool number_unsigned(number_unsigned_t) override { return value(); }
  bool number_float(number_float_t, const string_t&) override { return value(); }
  bool string(string_t& val) override {
    if (depth_ == 2 && in_request_ && key_ == "uid") {
      uid = val;
      return false;  // found: stop reading
    }
    return value();
  }
  bool binary(binary_t&) override { return value(); }
  bool start_object(std::size_t) override { return open(); }
  bool end_object() override { return close(); }
  bool start_array(std::size_t) override { return open(); }
  bool end_array() override { return close(); }
  bool key(string_t& val) override {
    key_ = val;
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override { return false; }

  std::string uid;

 private:
  bool value() { return true; }
  // No depth limit: nlohmann's SAX parser does not recurse, and stopping early would
  // lose a request.uid that follows deep nesting (the body is refused, but the response
  // must still carry the uid for the API server to accept it).
  bool open() {
    if (depth_ == 1) in_request_ = key_ == "request";
    ++depth_;
    return true;
  }
  bool close() {
    --depth_;
    if (depth_ == 1) in_request_ = false;
    return true;
  }
  int depth_ = 0;
  bool in_request_ = false;
  std::string key_;
};

std::string find_uid(std::string_view body) {
  UidFinder finder;
  nlohmann::json::sax_parse(body, &finder, nlohmann::json::input_format_t::json, false, true);
  return finder.uid;
}

// Every denial message ends with the rule id in brackets, as validation findings do.
void deny(AdmissionDecision& d, int code, std::string reason, std::string_view rule_id, std::string message) {
  d.allowed = false;
  d.code = code;
  d.reason = std::move(reason);
  d.rules.emplace_back(rule_id);
  d.message = std::move(message) + " [" + std::string(rule_id) + "]";
}

std::string string_at(const Node* n, std::string_view key) {
  return n == nullptr ? std::string() : std::string(n->string_at(key));
}

void add_warning(AdmissionDecision& d, std::string text) {
  if (d.warnings.size() >= kMaxWarnings) return;
  if (text.size() > kMaxWarningLength) {
    // Cut on a UTF-8 character boundary: the response is JSON, which must be valid UTF-8.
    std::size_t cut = kMaxWarningLength - 3;
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
    text = text.substr(0, cut) + "...";
  }
  d.warnings.push_back(std::move(text));
}

// "spec.guaranteed: message [rule]" for one finding about the reviewed object.
std::string brief(const Diagnostic& f) {
  std::string s;
  if (!f.path.empty()) s += f.path + ": ";
  s += f.message + " [" + f.rule + "]";
  return s;
}

// Denies with every error finding; warnings become AdmissionReview warnings.
void conclude(AdmissionDecision& d, const Diagnostics& findings, const std::string& what, int code,
              const std::string& reason) {
  std::vector<const Diagnostic*> errors;
  for (const auto& f : findings) {
    if (f.severity == Severity::Error) {
      errors.push_back(&f);
    } else {
      add_warning(d, brief(f));
    }
  }
  if (errors.empty()) {
    d.allowed = true;
    return;
  }
  std::string message = what + " is rejected: ";
  std::set<std::string> seen_rules;
  for (std::size_t i = 0; i < errors.size(); ++i) {
    const Diagnostic& e = *errors[i];
    if (i > 0) message += "; ";
    // Errors about another object (a change that breaks it) name that object.
    if (!e.kind.empty() && (e.kind + "/" + e.name) != what) message += e.kind + "/" + e.name + ": ";
    message += brief(e);
    if (seen_rules.insert(e.rule).second) d.rules.push_back(e.rule);
  }
  d.allowed = false;
  d.code = code;
  d.reason = reason;
  d.message = std::move(message);
}

std::string key_of(const Diagnostic& f) { return f.rule + '\0' + f.kind + '\0' + f.name + '\0' + f.path; }

// ---- CapacityLease: who asked, who approved, and what ---------------------------------

std::string subject_of(const policy::UserInfo& user) { return "user:" + user.username; }

std::string requested_by_text(const std::optional<std::string>& requester) {
  return requester ? "\"" + *requester + "\"" : std::string("nobody (the annotation is missing)");
}

// The requested-by annotation names who wrote the lease's spec: the creating user, then
// each user who changes the spec. The API server cannot fill it in for a validating
// webhook, so the writer sets it and the webhook holds it to userInfo. An update that
// keeps the spec keeps it. Returns false after denying.
bool check_lease_requester(const policy::PolicyObject& lease, const policy::PolicyObject* old, AdmissionDecision& d) {
  const auto requester = policy::requested_by(lease);
  const std::string me = subject_of(d.user);
  const std::string field = "metadata.annotations[\"" + std::string(policy::kAnnotationRequestedBy) + "\"]";
  const auto& spec = lease.as<policy::CapacityLeaseSpec>();
  const bool spec_changed =
      old == nullptr || policy::lease_spec_hash(old->as<policy::CapacityLeaseSpec>()) != policy::lease_spec_hash(spec);
  if (spec_changed && requester != me) {
    deny(d, 403, "Forbidden", rule::kLeaseRequesterMismatch,
         field + " must name the user who writes the lease's spec, \"" + me + "\"; it names " +
             requested_by_text(requester) + " (approval checks that the approver is not the requester)");
    return false;
  }
  if (!spec_changed && requester != policy::requested_by(*old)) {
    deny(d, 403, "Forbidden", rule::kLeaseRequesterMismatch,
         field + " records who wrote the spec, " + requested_by_text(policy::requested_by(*old)) +
             "; an update that leaves the spec as it is may not change it (to " + requested_by_text(requester) + ")");
    return false;
  }
  return true;
}

// A status write that approves a lease (adds or changes status.approval): the approval
// must record its approver as the requesting user, not be dated ahead of the request,
// not come from the lease's requester unless the guardrails allow it, and approve the
// spec as it is (validation: lease.approval-mismatch), a lease valid from now on. Other
// status writes (phase, expiry, revoking the approval) pass.
void review_lease_status(const PolicySnapshot& snapshot, const policy::PolicyObject& lease,
                         const policy::PolicyObject* old, const policy::PlatformGuardrailsSpec& guardrails,
                         AdmissionDecision& d, Timestamp now) {
  const auto approval_json = [](const policy::PolicyObject* o) {
    return o != nullptr && o->status.is_object() && o->status.contains("approval") ? o->status["approval"]
                                                                                  : nlohmann::json();
  };
  const policy::ApprovalRead fresh = policy::read_approval(lease.status);
  if (!fresh.present || approval_json(&lease) == approval_json(old)) {
    d.allowed = true;
    return;
  }
  if (!fresh.approval) {
    deny(d, 422, "Invalid", rule::kLeaseApprovalInvalid, fresh.problem);
    return;
  }
  const std::string me = subject_of(d.user);
  const policy::LeaseApproval& approval = *fresh.approval;
  if (approval.approved_by != me) {
    deny(d, 422, "Invalid", rule::kLeaseApprovalInvalid,
         "status.approval.approvedBy is \"" + approval.approved_by + "\", but " + me +
             " is approving: an approval records its own approver");
    return;
  }
  if (approval.approved_at && *approval.approved_at > now) {
    deny(d, 422, "Invalid", rule::kLeaseApprovalInvalid,
         "status.approval.approvedAt " + format_rfc3339(*approval.approved_at) + " is after the request (" +
             format_rfc3339(now) + "); a lease without start runs from its approval, so it may not be dated ahead");
    return;
  }
  if (!guardrails.allows_self_approval()) {
    const auto requester = policy::requested_by(lease);
    const std::string key(policy::kAnnotationRequestedBy);
    if (!requester) {
      deny(d, 403, "Forbidden", rule::kLeaseSelfApproval,
           lease.ref() + " does not record its requester (annotation " + key +
               "), so the approver cannot be told from the requester; the guardrails forbid self-approval "
               "(spec.leaseApproval.allowSelfApproval: false)");
      return;
    }
    if (*requester == me) {
      deny(d, 403, "Forbidden", rule::kLeaseSelfApproval,
           me + " requested " + lease.ref() + " (annotation " + key +
               ") and may not approve it; another platform administrator must (the guardrails set "
               "spec.leaseApproval.allowSelfApproval: false)");
      return;
    }
  }
  policy::PolicySet candidate = snapshot.set().policies_only();
  candidate.upsert(lease);
  const policy::ValidationOptions options{now, &snapshot.overlaps()};
  Diagnostics about_lease;
  for (const auto& f : policy::validate(candidate, options)) {
    if (f.kind == policy::kind_name(lease.kind) && f.name == lease.name()) about_lease.push_back(f);
  }
  conclude(d, about_lease, lease.ref(), 422, "Invalid");
}

void review_policy(const PolicySnapshot& snapshot, const Node& request, AdmissionDecision& d, Timestamp now) {
  const Node* object = request.find("object");
  const Node* old_object = request.find("oldObject");
  const bool deleting = d.operation == "DELETE";
  const Node* subject_node = deleting ? old_object : object;
  if (subject_node == nullptr || subject_node->type != NodeType::Mapping) {
    deny(d, 400, "BadRequest", rule::kRequestMalformed,
         std::string("request.") + (deleting ? "oldObject" : "object") + " is required for " + d.operation);
    return;
  }
  const policy::PlatformGuardrailsSpec* in_force = snapshot.set().guardrails_spec();

  Diagnostics decode_findings;
  auto decoded = policy::decode_policy(*subject_node, policy::Origin{}, decode_findings);
  const std::string what = d.kind.substr(d.kind.find('/') + 1) + "/" + d.name;
  if (!decoded) {
    conclude(d, decode_findings, what, 422, "Invalid");
    return;
  }
  std::optional<policy::PolicyObject> old_decoded;
  if (d.operation == "UPDATE" && old_object != nullptr && old_object->type == NodeType::Mapping) {
    Diagnostics ignored;
    old_decoded = policy::decode_policy(*old_object, policy::Origin{}, ignored);
  }

  // Authorisation first: who may touch this object at all.
  if (d.sub_resource == "status") {
    // gpubank's controller reports on every resource (status.conditions and
    // status.observedGeneration); a listed controller may write exactly those and nothing
    // else of a status (a lease's approval stays with the platform administrators).
    if (in_force != nullptr && old_decoded && policy::is_controller(d.user, *in_force) &&
        reporting_fields_only(old_decoded->status, decoded->status)) {
      d.allowed = true;
      return;
    }
    const auto auth = policy::authorize_status_write(d.user, *decoded, in_force);
    if (!auth.allowed) {
      deny(d, 403, "Forbidden", auth.rule, auth.message);
    } else if (decoded->kind == policy::Kind::CapacityLease && in_force != nullptr) {
      const bool same_kind = old_decoded && old_decoded->kind == decoded->kind;
      review_lease_status(snapshot, *decoded, same_kind ? &*old_decoded : nullptr, *in_force, d, now);
    } else {
      d.allowed = true;
    }
    return;
  }
  for (const policy::PolicyObject* o : {&*decoded, old_decoded ? &*old_decoded : nullptr}) {
    if (o == nullptr) continue;
    const auto auth = policy::authorize_write(d.user, *o, in_force, snapshot.set());
    if (!auth.allowed) {
      deny(d, 403, "Forbidden", auth.rule, auth.message);
      return;
    }
  }
  const policy::PolicyObject* old_lease =
      old_decoded && old_decoded->kind == policy::Kind::CapacityLease ? &*old_decoded : nullptr;
  if (decoded->kind == policy::Kind::CapacityLease && !deleting && !check_lease_requester(*decoded, old_lease, d)) {
    return;
  }

  // The set as it would be after the change.
  policy::PolicySet candidate = snapshot.set().policies_only();
  if (deleting) {
    candidate.remove(decoded->kind, decoded->name());
  } else {
    candidate.upsert(*decoded);
  }
  // The request's time on UPDATE as on CREATE: a lease without start is measured from
  // now either way, so lengthening one by an update meets lease.too-long too.
  const policy::ValidationOptions options{deleting ? std::nullopt : std::optional<Timestamp>(now),
                                          &snapshot.overlaps()};
  const Diagnostics after = policy::validate(candidate, options);

  const std::string kind_name(policy::kind_name(decoded->kind));
  // Findings about the reviewed object first, then what the change breaks elsewhere.
  Diagnostics relevant = decode_findings;  // warnings of decoding
  Diagnostics elsewhere;
  for (const auto& f : after) {
    const bool about_reviewed = !deleting && f.kind == kind_name && f.name == decoded->name();
    if (about_reviewed) {
      relevant.push_back(f);
    } else if (!snapshot.had(f)) {
      elsewhere.push_back(f);
    }
  }
  relevant.insert(relevant.end(), elsewhere.begin(), elsewhere.end());
  conclude(d, relevant, what, 422, "Invalid");
}

void review_workload(const PolicySnapshot& snapshot, const Node& request, AdmissionDecision& d) {
  if (d.operation == "DELETE" || d.operation == "CONNECT" || !d.sub_resource.empty()) {
    d.allowed = true;  // deleting, exec/attach and subresources (status, scale) carry no labels to forge
    return;
  }
  const Node* object = request.find("object");
  if (object == nullptr || object->type != NodeType::Mapping) {
    deny(d, 400, "BadRequest", rule::kRequestMalformed, "request.object is required for " + d.operation);
    return;
  }
  const policy::PlatformGuardrailsSpec* guardrails = snapshot.set().guardrails_spec();
  if (guardrails == nullptr) {
    d.allowed = true;
    add_warning(d, "gpubank has no PlatformGuardrails loaded; workload labels and priorities were not checked");
    return;
  }
  const Node* old_object = d.operation == "UPDATE" ? request.find("oldObject") : nullptr;
  Diagnostics findings;
  const std::string what = d.kind.substr(d.kind.find('/') + 1) + "/" + d.namespace_ + "/" + d.name;
  const policy::WorkloadContext context{d.namespace_, *guardrails, &snapshot.set(),
                                       old_object != nullptr && old_object->type == NodeType::Mapping ? old_object
                                                                                                     : nullptr,
                                       &d.user};
  policy::check_workload(*object, context,
                         [&](std::string_view rule_id, std::string path, std::string message, SourcePos) {
                           findings.push_back(Diagnostic{Severity::Error, std::string(rule_id), {}, {}, {}, {},
                                                         std::move(path), std::move(message)});
                         });
  conclude(d, findings, what, 403, "Forbidden");
}

// ---- POST /mutate: the default priority class of a protected workload ------------------

// The JSON Patch that sets the label at the object's top level: one "add" into existing
// labels, or the whole labels map (or metadata) where there is none. The label key holds a
// "/", written "~1" in a JSON pointer (RFC 6901).
nlohmann::json priority_label_patch(const Node& object, const std::string& class_name) {
  const std::string key(policy::kLabelKueuePriorityClass);
  const Node* meta = object.find("metadata");
  if (meta == nullptr || meta->type != NodeType::Mapping) {
    return nlohmann::json::array({{{"op", "add"}, {"path", "/metadata"}, {"value", {{"labels", {{key, class_name}}}}}}});
  }
  const Node* labels = meta->find("labels");
  if (labels != nullptr && labels->type == NodeType::Mapping) {
    const nlohmann::json::json_pointer label = nlohmann::json::json_pointer("/metadata/labels") / key;
    return nlohmann::json::array({{{"op", "add"}, {"path", label.to_string()}, {"value", class_name}}});
  }
  // Absent or null: "add" creates the member or replaces the null.
  return nlohmann::json::array({{{"op", "add"}, {"path", "/metadata/labels"}, {"value", {{key, class_name}}}}});
}

void mutate_workload(const PolicySnapshot& snapshot, const Node& request, AdmissionDecision& d) {
  if ((d.operation != "CREATE" && d.operation != "UPDATE") || !d.sub_resource.empty()) {
    d.allowed = true;  // nothing of a delete, an exec or a subresource reaches Kueue's priority
    return;
  }
  const Node* object = request.find("object");  // a mapping: review_mutation checked
  const policy::PlatformGuardrailsSpec* guardrails = snapshot.set().guardrails_spec();
  if (guardrails == nullptr) {
    d.allowed = true;
    add_warning(d, "gpubank has no PlatformGuardrails loaded; no default priority class was written");
    return;
  }
  const auto missing = policy::missing_priority_class(*object, d.namespace_, *guardrails);
  if (!missing) {
    d.allowed = true;
    return;
  }
  if (const Node* meta = object->find("metadata"); meta != nullptr && meta->type == NodeType::Mapping) {
    const Node* labels = meta->find("labels");
    if (labels != nullptr && labels->type != NodeType::Mapping && labels->type != NodeType::Null) {
      deny(d, 400, "BadRequest", rule::kRequestMalformed,
           "request.object.metadata.labels must be a map of strings, not " + doc::preview(*labels));
      return;
    }
  }
  const std::string what = d.kind.substr(d.kind.find('/') + 1) + "/" + d.namespace_ + "/" + d.name;
  if (missing->default_class == nullptr) {
    // A controller's copy is judged with the object it copies (as by the validating rule).
    if (policy::is_controller(d.user, *guardrails)) {
      d.allowed = true;
      return;
    }
    conclude(d,
             {Diagnostic{Severity::Error, std::string(rule::kPriorityProtectedNeedsClass), {}, {}, {}, {},
                         std::string(policy::kPriorityClassLabelPath), policy::missing_priority_message(*missing)}},
             what, 403, "Forbidden");
    return;
  }
  // Controllers' writes are defaulted too: the pods a ReplicaSet creates for a Deployment
  // are where Kueue's pod integration reads the class.
  const std::string& class_name = missing->default_class->name;
  d.allowed = true;
  d.patch = priority_label_patch(*object, class_name);
  d.rules.emplace_back(rule::kPriorityProtectedNeedsClass);
  add_warning(d, std::string(policy::kPriorityClassLabelPath) + ": set to \"" + class_name + "\", the default for " +
                     std::string(doc::enum_name(missing->type)) + " workloads of " + missing->group->name +
                     " (a protected type needs a priority class) [" + std::string(rule::kPriorityProtectedNeedsClass) +
                     "]");
}

}  // namespace

PolicySnapshot::PolicySnapshot(policy::PolicySet set, const policy::ValidationOptions& options)
    : set_(std::move(set)), overlaps_(policy::OverlapCache::of(set_)) {
  policy::ValidationOptions with_cache = options;
  with_cache.overlaps = &overlaps_;
  findings_ = policy::validate(set_, with_cache);
  for (const auto& f : findings_) finding_keys_.insert(key_of(f));
}

bool PolicySnapshot::had(const Diagnostic& finding) const { return finding_keys_.contains(key_of(finding)); }

namespace {

// What a decision needs of the request besides the decision itself.
struct RequestKind {
  std::string group;  // request.kind.group ("" for the core group)
  std::string kind;   // request.kind.kind
};

using Decide = std::function<void(const Node& request, const RequestKind& kind, AdmissionDecision& d)>;

// Reads the AdmissionReview envelope into `d` (uid, operation, kind, user, ...) and calls
// `decide` with its request; malformed or oversized bodies are denied here, the same way
// for both endpoints.
AdmissionDecision read_review(std::string_view body, bool mutating, const Decide& decide) {
  AdmissionDecision d;
  d.mutating = mutating;
  if (body.size() > kMaxReviewBytes) {
    d.uid = find_uid(body);
    deny(d, 413, "RequestEntityTooLarge", rule::kRequestTooLarge,
         "the AdmissionReview is " + std::to_string(body.size()) + " bytes, above the webhook's limit of " +
             std::to_string(kMaxReviewBytes) + " bytes (3 MiB)");
    return d;
  }
  doc::ReadLimits limits;
  limits.max_bytes = kMaxReviewBytes;
  limits.max_nodes = 200'000;
  auto parsed = doc::parse_json(body, limits);
  if (!parsed) {
    d.uid = find_uid(body);
    deny(d, 400, "BadRequest", rule::kRequestMalformed, "the body is not a JSON AdmissionReview: " + parsed.error());
    return d;
  }
  const Node& root = *parsed;
  const Node* request = root.find("request");
  if (request != nullptr) d.uid = string_at(request, "uid");
  if (root.type != NodeType::Mapping || root.string_at("apiVersion") != "admission.k8s.io/v1" ||
      root.string_at("kind") != "AdmissionReview") {
    deny(d, 400, "BadRequest", rule::kRequestMalformed,
         "the body must be an admission.k8s.io/v1 AdmissionReview (got apiVersion \"" + string_at(&root, "apiVersion") +
             "\", kind \"" + string_at(&root, "kind") + "\")");
    return d;
  }
  if (request == nullptr || request->type != NodeType::Mapping) {
    deny(d, 400, "BadRequest", rule::kRequestMalformed, "the AdmissionReview has no request object");
    return d;
  }
  d.operation = string_at(request, "operation");
  d.sub_resource = string_at(request, "subResource");
  d.namespace_ = string_at(request, "namespace");
  d.name = string_at(request, "name");
  if (const Node* dry = request->find("dryRun"); dry != nullptr && dry->type == NodeType::Bool) d.dry_run = dry->boolean;
  const Node* kind = request->find("kind");
  const RequestKind request_kind{string_at(kind, "group"), string_at(kind, "kind")};
  d.kind = request_kind.group + "/" + request_kind.kind;
  if (const Node* user = request->find("userInfo")) {
    d.user.username = string_at(user, "username");
    if (const Node* groups = user->find("groups"); groups != nullptr && groups->type == NodeType::Sequence) {
      for (const auto& g : groups->items) {
        if (g.type == NodeType::String) d.user.groups.push_back(g.text);
      }
    }
  }
  std::string missing;
  if (d.uid.empty()) missing = "request.uid";
  else if (request_kind.kind.empty()) missing = "request.kind.kind";
  else if (d.operation.empty()) missing = "request.operation";
  else if (d.user.username.empty()) missing = "request.userInfo.username";
  if (!missing.empty()) {
    deny(d, 400, "BadRequest", rule::kRequestMalformed, "the AdmissionReview request has no " + missing);
    return d;
  }
  static const std::set<std::string> operations{"CREATE", "UPDATE", "DELETE", "CONNECT"};
  if (!operations.contains(d.operation)) {
    deny(d, 400, "BadRequest", rule::kRequestMalformed, "unknown operation \"" + d.operation + "\"");
    return d;
  }
  if (d.name.empty()) {
    // On CREATE with generateName the API server sends no name yet.
    if (const Node* o = request->find("object")) {
      if (const Node* meta = o->find("metadata")) d.name = string_at(meta, "name");
    }
  }
  decide(*request, request_kind, d);
  return d;
}

// Whether the request is for a workload (a kind the webhook knows, or any object with a
// pod template).
bool is_workload_request(const Node& request, const RequestKind& kind, const AdmissionDecision& d) {
  const Node* object = request.find(d.operation == "DELETE" ? "oldObject" : "object");
  return policy::is_workload_kind(kind.group, kind.kind) || (object != nullptr && policy::is_workload(*object));
}

}  // namespace

AdmissionDecision review(const PolicySnapshot& snapshot, std::string_view body, Timestamp now) {
  return read_review(body, false, [&](const Node& request, const RequestKind& kind, AdmissionDecision& d) {
    if (kind.group == policy::kApiGroup) {
      review_policy(snapshot, request, d, now);
      return;
    }
    if (is_workload_request(request, kind, d)) {
      review_workload(snapshot, request, d);
      return;
    }
    if (!d.sub_resource.empty() || d.operation == "DELETE" || d.operation == "CONNECT") {
      d.allowed = true;  // subresources and deletes of workloads we do not inspect
      return;
    }
    deny(d, 400, "BadRequest", rule::kRequestUnsupportedKind,
         "gpubank's webhook validates platform.gpubank.dev policies and workloads with pod templates, not " + d.kind +
             "; check the rules of its ValidatingWebhookConfiguration");
  });
}

AdmissionDecision review_mutation(const PolicySnapshot& snapshot, std::string_view body, Timestamp /*now*/) {
  return read_review(body, true, [&](const Node& request, const RequestKind& kind, AdmissionDecision& d) {
    const bool writes_object = (d.operation == "CREATE" || d.operation == "UPDATE") && d.sub_resource.empty();
    if (const Node* object = request.find("object");
        writes_object && (object == nullptr || object->type != NodeType::Mapping)) {
      // Whatever the kind: the API server always sends the object it is about to store.
      deny(d, 400, "BadRequest", rule::kRequestMalformed, "request.object is required for " + d.operation);
      return;
    }
    // Policies are never changed, and kinds the validating webhook judges otherwise
    // (or refuses) are left to it.
    if (kind.group != policy::kApiGroup && is_workload_request(request, kind, d)) {
      mutate_workload(snapshot, request, d);
      return;
    }
    d.allowed = true;
  });
}

namespace {

// RFC 4648 base64 with padding, as AdmissionResponse.patch ([]byte in Go) is encoded in JSON.
std::string base64(std::string_view bytes) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (std::size_t i = 0; i < bytes.size(); i += 3) {
    const std::size_t n = std::min<std::size_t>(3, bytes.size() - i);
    std::uint32_t chunk = 0;
    for (std::size_t k = 0; k < 3; ++k) {
      chunk = (chunk << 8) | (k < n ? static_cast<unsigned char>(bytes[i + k]) : 0U);
    }
    for (std::size_t k = 0; k < 4; ++k) {
      out += k <= n ? kAlphabet[(chunk >> (18 - 6 * k)) & 0x3F] : '=';
    }
  }
  return out;
}

}  // namespace

nlohmann::json review_response(const AdmissionDecision& d) {
  nlohmann::json response = {{"uid", d.uid}, {"allowed", d.allowed}};
  if (!d.allowed) {
    response["status"] = {{"code", d.code}, {"message", d.message}};
    if (!d.reason.empty()) response["status"]["reason"] = d.reason;
  }
  if (d.allowed && !d.patch.empty()) {
    response["patchType"] = "JSONPatch";
    response["patch"] = base64(d.patch.dump());
  }
  if (!d.warnings.empty()) response["warnings"] = d.warnings;
  return {{"apiVersion", "admission.k8s.io/v1"}, {"kind", "AdmissionReview"}, {"response", response}};
}

}  // namespace gpubank::api
