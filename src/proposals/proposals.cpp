#include "proposals/proposals.hpp"

#include <algorithm>

#include "core/sha256.hpp"
#include "core/timestamp.hpp"
#include "document/reader.hpp"
#include "policy/decode.hpp"
#include "policy/lease_approval.hpp"
#include "policy/validate.hpp"
#include "twin/live/resume.hpp"

namespace gpubank::proposals {

namespace {

using Json = nlohmann::json;

Diagnostic finding(std::string rule, std::string message, const policy::PolicyObject* object = nullptr,
                   std::string path = {}) {
  Diagnostic d;
  d.severity = Severity::Error;
  d.rule = std::move(rule);
  d.message = std::move(message);
  d.path = std::move(path);
  if (object != nullptr) {
    d.kind = std::string(policy::kind_name(object->kind));
    d.name = object->name();
  }
  return d;
}

bool self_service_kind(policy::Kind kind) {
  return kind == policy::Kind::GPUQuotaPolicy || kind == policy::Kind::InferenceScalingPolicy ||
         kind == policy::Kind::TidalPolicy || kind == policy::Kind::CapacityLease;
}

// The group an object belongs to; for a TidalPolicy, the group of every inference policy
// it targets when they agree ("" when they do not or it targets none).
std::string group_of(const policy::PolicyObject& o, const policy::PolicySet& set) {
  switch (o.kind) {
    case policy::Kind::GPUQuotaPolicy: return o.as<policy::GPUQuotaPolicySpec>().business_group;
    case policy::Kind::InferenceScalingPolicy: return o.as<policy::InferenceScalingPolicySpec>().business_group;
    case policy::Kind::CapacityLease: return o.as<policy::CapacityLeaseSpec>().business_group;
    case policy::Kind::TidalPolicy: {
      std::string group;
      for (const std::string& name : o.as<policy::TidalPolicySpec>().targets.inference_policies) {
        const policy::PolicyObject* target = set.find(policy::Kind::InferenceScalingPolicy, name);
        if (target == nullptr) return "";
        const std::string& g = target->as<policy::InferenceScalingPolicySpec>().business_group;
        if (!group.empty() && g != group) return "";
        group = g;
      }
      return group;
    }
    default: return "";
  }
}

std::string spec_hash(const policy::PolicyObject* o) {
  return o == nullptr ? std::string() : sha256_hex(policy::encode_policy(*o)["spec"].dump());
}

Json proposal_numbers(const Proposal& p) {
  return Json{{"id", p.id},
              {"author", p.author},
              {"authorRole", p.author_role},
              {"authorGroup", p.author_group},
              {"object", p.object},
              {"businessGroup", p.business_group},
              {"document", p.document},
              {"baseVersion", p.base_version},
              {"baseSpecHash", p.base_spec_hash},
              {"patch", p.patch},
              {"comment", p.comment},
              {"needsApproval", p.needs_approval},
              {"approvalReason", p.approval_reason}};
}

std::optional<Proposal> proposal_from(const Json& j) {
  try {
    Proposal p;
    p.id = j.at("id").get<std::string>();
    p.author = j.at("author").get<std::string>();
    p.author_role = j.at("authorRole").get<std::string>();
    p.author_group = j.at("authorGroup").get<std::string>();
    p.object = j.at("object").get<std::string>();
    p.business_group = j.at("businessGroup").get<std::string>();
    p.document = j.at("document").get<std::string>();
    p.base_version = j.at("baseVersion").get<std::string>();
    p.base_spec_hash = j.at("baseSpecHash").get<std::string>();
    p.patch = j.at("patch");
    p.comment = j.at("comment").get<std::string>();
    p.needs_approval = j.at("needsApproval").get<bool>();
    p.approval_reason = j.at("approvalReason").get<std::string>();
    return p;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

bank::AuditEntry entry(std::int64_t now_ms, const std::string& actor, std::string_view action, const Proposal& p,
                       std::string decision, std::string reason, Json numbers) {
  bank::AuditEntry e;
  e.time_ms = now_ms;
  e.actor = actor;
  e.action = std::string(action);
  e.object = p.object;
  e.decision = std::move(decision);
  e.reason = std::move(reason);
  e.numbers = numbers.dump();
  return e;
}

// The object as it goes into force: for a lease, approved for its spec by `approver`.
policy::PolicyObject as_applied(policy::PolicyObject object, const Proposal& p, const std::string& approver,
                                std::int64_t now_ms) {
  if (object.kind == policy::Kind::CapacityLease) {
    object.metadata.annotations[std::string(policy::kAnnotationRequestedBy)] = "user:" + p.author;
    nlohmann::json status = object.status.is_object() ? object.status : nlohmann::json::object();
    status["approval"] = {{"approvedBy", "user:" + approver},
                          {"specHash", policy::lease_spec_hash(object.as<policy::CapacityLeaseSpec>())},
                          {"approvedAt", format_rfc3339(Timestamp(std::chrono::milliseconds(now_ms)))}};
    object.status = status;
  }
  return object;
}

}  // namespace

std::string_view state_name(State state) {
  switch (state) {
    case State::Pending: return "Pending";
    case State::Applied: return "Applied";
    case State::Rejected: return "Rejected";
  }
  return "?";
}

std::optional<policy::PolicyObject> parse_document(std::string_view text, Diagnostics& findings) {
  if (text.size() > kMaxDocumentBytes) {
    findings.push_back(finding("proposal.too-large", "the document is " + std::to_string(text.size()) +
                                                         " bytes; the limit is " + std::to_string(kMaxDocumentBytes)));
    return std::nullopt;
  }
  doc::ReadLimits limits;
  limits.max_bytes = kMaxDocumentBytes;
  limits.max_depth = 32;
  limits.max_nodes = 20'000;
  std::vector<doc::Document> docs;
  const std::size_t before = findings.size();
  doc::read_yaml(text, "proposal.yaml", docs, findings, limits);
  if (has_errors(Diagnostics(findings.begin() + static_cast<std::ptrdiff_t>(before), findings.end()))) return std::nullopt;
  if (docs.size() != 1) {
    findings.push_back(finding("proposal.one-document",
                               "a proposal is exactly one policy document; got " + std::to_string(docs.size())));
    return std::nullopt;
  }
  policy::PolicySet one;
  one.add(docs[0].root, "proposal.yaml", 0);
  findings.insert(findings.end(), one.diagnostics().begin(), one.diagnostics().end());
  if (has_errors(one.diagnostics())) return std::nullopt;
  if (one.policies().size() != 1) {
    findings.push_back(finding("proposal.one-document", "the document is not a platform.gpubank.dev policy"));
    return std::nullopt;
  }
  const policy::PolicyObject& object = one.policies()[0];
  if (!self_service_kind(object.kind)) {
    findings.push_back(finding("proposal.kind-not-self-service",
                               std::string(policy::kind_name(object.kind)) +
                                   " is not changed through proposals; self-service kinds: GPUQuotaPolicy, "
                                   "InferenceScalingPolicy, TidalPolicy, CapacityLease",
                               &object, "kind"));
    return std::nullopt;
  }
  return object;
}

std::optional<Diagnostic> check_authority(const auth::Principal& author, const policy::PolicyObject& object,
                                          const policy::PolicySet& in_force) {
  if (author.role == auth::Role::PlatformAdmin) return std::nullopt;
  if (author.role != auth::Role::GroupAdmin) {
    return finding("auth.role-may-not-propose",
                   "role " + std::string(auth::role_name(author.role)) +
                       " may not propose policy changes (group-admin of the group, or platform-admin)",
                   &object);
  }
  const std::string group = group_of(object, in_force);
  if (group != author.group) {
    return finding("auth.not-group-admin",
                   "group-admin of " + author.group + " may not change a policy of " +
                       (group.empty() ? std::string("no single group") : group),
                   &object, object.kind == policy::Kind::TidalPolicy ? "spec.targets" : "spec.businessGroup");
  }
  if (const policy::PolicyObject* now = in_force.find(object.kind, object.name()); now != nullptr) {
    const std::string held_by = group_of(*now, in_force);
    if (held_by != author.group) {
      return finding("auth.not-group-admin",
                     "the " + now->ref() + " in force belongs to " + (held_by.empty() ? std::string("no single group") : held_by) +
                         ", not " + author.group,
                     &object, "metadata.name");
    }
  }
  return std::nullopt;
}

ApprovalNeed approval_need(const auth::Principal& author, const policy::PolicyObject* current,
                           const policy::PolicyObject& proposed) {
  if (author.role == auth::Role::PlatformAdmin) return {false, "proposed by a platform administrator"};
  if (current == nullptr) return {true, "a new " + std::string(policy::kind_name(proposed.kind))};
  switch (proposed.kind) {
    case policy::Kind::CapacityLease: return {true, "every CapacityLease needs a platform administrator's approval"};
    case policy::Kind::TidalPolicy: return {true, "a TidalPolicy moves capacity between groups by the clock"};
    case policy::Kind::GPUQuotaPolicy: {
      const auto& a = current->as<policy::GPUQuotaPolicySpec>();
      const auto& b = proposed.as<policy::GPUQuotaPolicySpec>();
      std::vector<std::string> more;
      if (b.guaranteed > a.guaranteed) more.push_back("guaranteed up");
      if (b.borrow_limit > a.borrow_limit) more.push_back("borrowLimit up");
      if (b.effective_max_capacity() > a.effective_max_capacity()) more.push_back("maxCapacity up");
      if (b.fair_share_weight > a.fair_share_weight) more.push_back("fairShareWeight up");
      const std::int64_t lend_a = a.lending_limit.value_or(a.guaranteed), lend_b = b.lending_limit.value_or(b.guaranteed);
      if (lend_b < lend_a || (b.lending_limit && !a.lending_limit && lend_b < b.guaranteed)) more.push_back("lends less");
      const auto only = [](const policy::GPUQuotaPolicySpec& s) {
        return s.reclaim_policy ? s.reclaim_policy->only_preempt : std::vector<policy::WorkloadTrait>{};
      };
      if (only(a) != only(b)) more.push_back("onlyPreempt changed");
      if (more.empty()) return {false, "gives back only: applies without approval"};
      std::string why;
      for (const auto& m : more) why += (why.empty() ? "" : ", ") + m;
      return {true, "takes more from the other groups (" + why + ")"};
    }
    case policy::Kind::InferenceScalingPolicy: {
      const auto& a = current->as<policy::InferenceScalingPolicySpec>();
      const auto& b = proposed.as<policy::InferenceScalingPolicySpec>();
      if (b.min_replicas > a.min_replicas || b.max_replicas > a.max_replicas ||
          b.replica_shape.gpu_per_replica != a.replica_shape.gpu_per_replica ||
          b.replica_shape.tensor_parallel_size != a.replica_shape.tensor_parallel_size ||
          b.replica_shape.nodes_per_replica != a.replica_shape.nodes_per_replica) {
        return {true, "asks for more replicas or another replica shape"};
      }
      return {false, "asks for no more: applies without approval"};
    }
    default: return {true, "not a self-service change"};
  }
}

policy::PolicySet with_change(const policy::PolicySet& in_force, const policy::PolicyObject& object) {
  policy::PolicySet out = in_force.policies_only();
  out.upsert(object);
  return out;
}

Book::Book(policy::PolicySet base, Truth truth)
    : truth_(truth), base_(base.policies_only()), in_force_(base_.policies_only()),
      version_(twin::live::policy_version(in_force_)) {}

void Book::rebase(policy::PolicySet cluster) {
  base_ = cluster.policies_only();
  in_force_ = base_.policies_only();
  version_ = twin::live::policy_version(in_force_);
}

const Proposal* Book::find(std::string_view id) const {
  for (const Proposal& p : proposals_) {
    if (p.id == id) return &p;
  }
  return nullptr;
}

std::optional<std::string> Book::fold(const bank::AuditEntry& e) {
  if (e.action != kProposed && e.action != kApproved && e.action != kRejected && e.action != kApplied &&
      e.action != kEnacted) {
    return std::nullopt;
  }
  const Json numbers = Json::parse(e.numbers, nullptr, false);
  if (!numbers.is_object() || !numbers.contains("id") || !numbers["id"].is_string()) {
    return "a policy change entry without an id";
  }
  const std::string id = numbers["id"].get<std::string>();
  if (e.action == kProposed) {
    auto p = proposal_from(numbers);
    if (!p) return "a proposal whose fields do not read";
    if (p->author != e.actor || p->object != e.object) return "a proposal must name its author as actor and its object";
    if (find(id) != nullptr) return "proposal " + id + " is recorded twice";
    p->submitted_ms = e.time_ms;
    proposals_.push_back(std::move(*p));
    return std::nullopt;
  }
  auto it = std::find_if(proposals_.begin(), proposals_.end(), [&](const Proposal& p) { return p.id == id; });
  if (it == proposals_.end()) return "a decision on proposal " + id + ", which was never proposed";
  if (e.action == kEnacted) {
    if (it->state != State::Applied) return "proposal " + id + " is enacted before it is applied";
    if (it->enacted_ms != 0) return "proposal " + id + " is enacted twice";
    it->enacted_ms = e.time_ms;
    it->enacted_by = e.actor;
    it->enacted_resource_version = numbers.value("resourceVersion", "");
    return std::nullopt;
  }
  if (it->state != State::Pending) return "proposal " + id + " is decided twice";
  if (e.action == kRejected) {
    it->state = State::Rejected;
    it->decided_by = e.actor;
    it->decided_ms = e.time_ms;
    it->decision_comment = numbers.value("comment", "");
    return std::nullopt;
  }
  if (e.action == kApproved) {
    it->decided_by = e.actor;
    it->decided_ms = e.time_ms;
    it->decision_comment = numbers.value("comment", "");
    return std::nullopt;
  }
  // Applied: the object as it went into force, and the version that made.
  Diagnostics findings;
  auto object = parse_document(numbers.value("document", ""), findings);
  if (!object) return "proposal " + id + ": the applied document does not read";
  it->applied_document = numbers.value("document", "");
  if (truth_ == Truth::Cluster) {
    // The cluster's objects are the set in force (rebase); the record says what was applied.
    it->state = State::Applied;
    it->version_after = numbers.value("versionAfter", "");
  } else {
    in_force_.upsert(std::move(*object));
    version_ = twin::live::policy_version(in_force_);
    if (numbers.value("versionAfter", "") != version_) {
      return "proposal " + id + ": the recorded version after it (" + numbers.value("versionAfter", "") +
             ") is not the fold's (" + version_ + ")";
    }
    it->state = State::Applied;
    it->version_after = version_;
  }
  if (it->decided_by.empty()) {
    it->decided_by = e.actor;
    it->decided_ms = e.time_ms;
  }
  return std::nullopt;
}

Expected<bool> Book::refresh(store::Store& store) {
  return store::read_audit_after(store, last_seq_, [&](const bank::AuditEntry& e) { return fold(e); });
}

Expected<Submitted> submit(store::Store& store, Book& book, const auth::Principal& author, std::string_view text,
                           std::string_view comment, std::int64_t now_ms) {
  if (auto read = book.refresh(store); !read) return Unexpected{read.error()};
  Submitted out;
  if (comment.size() > 1024) {
    out.findings.push_back(finding("proposal.comment-too-long", "the comment is over 1024 bytes"));
    return out;
  }
  auto object = parse_document(text, out.findings);
  if (!object) return out;
  if (auto refused = check_authority(author, *object, book.in_force())) {
    out.findings.push_back(*refused);
    return out;
  }
  const policy::PolicyObject* current = book.in_force().find(object->kind, object->name());
  const auto current_spec = current ? policy::encode_policy(*current)["spec"] : nlohmann::ordered_json();
  const auto proposed_spec = policy::encode_policy(*object)["spec"];
  if (current != nullptr && current_spec == proposed_spec) {
    out.findings.push_back(finding("proposal.no-change", "the proposal equals the " + current->ref() + " in force", &*object));
    return out;
  }
  const policy::PolicySet proposed = with_change(book.in_force(), *object);
  const Diagnostics checks = policy::validate(proposed);
  for (const Diagnostic& d : checks) {
    // The proposal is judged by what it breaks: findings on other objects that were there
    // before are the platform's, not its author's, and are left out.
    if (d.kind == policy::kind_name(object->kind) && d.name == object->name()) out.findings.push_back(d);
    else if (d.severity == Severity::Error) out.findings.push_back(d);
  }
  if (has_errors(out.findings)) return out;

  Proposal& p = out.proposal;
  const auto id = auth::random_hex(8);
  if (!id) return Unexpected{std::string("proposal: the system's random source failed")};
  p.id = *id;
  p.author = author.subject;
  p.author_role = std::string(auth::role_name(author.role));
  p.author_group = author.group;
  p.object = object->ref();
  p.business_group = group_of(*object, book.in_force());
  p.document = std::string(text);
  p.base_version = book.version();
  p.base_spec_hash = spec_hash(current);
  p.patch = current ? nlohmann::json::parse(nlohmann::ordered_json::diff(current_spec, proposed_spec).dump()) : Json();
  p.comment = std::string(comment);
  const ApprovalNeed need = approval_need(author, current, *object);
  p.needs_approval = need.needed;
  p.approval_reason = need.reason;
  p.submitted_ms = now_ms;

  std::vector<bank::AuditEntry> entries;
  entries.push_back(entry(now_ms, p.author, kProposed, p, need.needed ? "Pending" : "Applied",
                          p.author + " proposes a change of " + p.object + ": " + need.reason, proposal_numbers(p)));
  if (!need.needed) {
    const policy::PolicyObject applied = as_applied(*object, p, p.author, now_ms);
    const policy::PolicySet after = with_change(book.in_force(), applied);
    entries.push_back(entry(now_ms, p.author, kApplied, p, "Applied", p.object + " is in force",
                            Json{{"id", p.id},
                                 {"document", policy::encode_policy(applied).dump()},
                                 {"versionAfter", twin::live::policy_version(after)}}));
  }
  if (auto appended = store.append({}, entries); !appended) return Unexpected{appended.error()};
  if (auto read = book.refresh(store); !read) return Unexpected{read.error()};
  if (const Proposal* recorded = book.find(p.id)) p = *recorded;
  return out;
}

Expected<Proposal> decide(store::Store& store, Book& book, const auth::Principal& by, std::string_view id, bool approve,
                          std::string_view comment, std::int64_t now_ms) {
  if (auto read = book.refresh(store); !read) return Unexpected{read.error()};
  if (by.role != auth::Role::PlatformAdmin) {
    return Unexpected{"auth.not-platform-admin: only a platform administrator approves or rejects a proposal"};
  }
  if (comment.size() > 1024) return Unexpected{std::string("proposal.comment-too-long: the comment is over 1024 bytes")};
  const Proposal* found = book.find(id);
  if (found == nullptr) return Unexpected{"proposal.unknown: no proposal " + std::string(id.substr(0, 32))};
  const Proposal p = *found;
  if (p.state != State::Pending) {
    return Unexpected{"proposal.not-pending: proposal " + p.id + " is " + std::string(state_name(p.state))};
  }
  Diagnostics findings;
  auto object = parse_document(p.document, findings);
  if (!object) return Unexpected{"proposal.unreadable: proposal " + p.id + "'s document no longer reads"};
  const policy::PolicyObject* current = book.in_force().find(object->kind, object->name());
  std::vector<bank::AuditEntry> entries;
  const Json decision{{"id", p.id}, {"comment", std::string(comment)}};
  if (!approve) {
    entries.push_back(entry(now_ms, by.subject, kRejected, p, "Rejected",
                            by.subject + " rejects the change of " + p.object, decision));
  } else {
    if (spec_hash(current) != p.base_spec_hash) {
      return Unexpected{"proposal.stale: " + p.object + " changed since proposal " + p.id +
                        " was made; its diff no longer describes the change: propose again"};
    }
    const policy::PolicyObject applied = as_applied(*object, p, by.subject, now_ms);
    const policy::PolicySet after = with_change(book.in_force(), applied);
    for (const Diagnostic& d : policy::validate(after)) {
      if (d.severity == Severity::Error) {
        return Unexpected{"proposal.no-longer-valid: with the changes applied since, it breaks " + d.rule + ": " + d.message};
      }
    }
    entries.push_back(entry(now_ms, by.subject, kApproved, p, "Approved", by.subject + " approves the change of " + p.object,
                            decision));
    entries.push_back(entry(now_ms, by.subject, kApplied, p, "Applied", p.object + " is in force",
                            Json{{"id", p.id},
                                 {"document", policy::encode_policy(applied).dump()},
                                 {"versionAfter", twin::live::policy_version(after)}}));
  }
  if (auto appended = store.append({}, entries); !appended) return Unexpected{appended.error()};
  if (auto read = book.refresh(store); !read) return Unexpected{read.error()};
  return *book.find(p.id);
}

Expected<bool> record_enacted(store::Store& store, Book& book, std::string_view id, const std::string& actor,
                              const std::string& resource_version, std::int64_t now_ms) {
  if (auto read = book.refresh(store); !read) return Unexpected{read.error()};
  const Proposal* p = book.find(id);
  if (p == nullptr) return Unexpected{"proposal.unknown: no proposal " + std::string(id.substr(0, 32))};
  if (p->state != State::Applied) {
    return Unexpected{"proposal.not-applied: proposal " + p->id + " is " + std::string(state_name(p->state))};
  }
  if (p->enacted_ms != 0) return Unexpected{"proposal.enacted: proposal " + p->id + " is on the cluster already"};
  std::vector<bank::AuditEntry> entries;
  entries.push_back(entry(now_ms, actor, kEnacted, *p, "Enacted",
                          p->object + " is server-side applied to the cluster (resourceVersion " +
                              resource_version.substr(0, 64) + ")",
                          Json{{"id", p->id}, {"resourceVersion", resource_version}}));
  if (auto appended = store.append({}, entries); !appended) return Unexpected{appended.error()};
  if (auto read = book.refresh(store); !read) return Unexpected{read.error()};
  return true;
}

Expected<std::unique_ptr<Desk>> Desk::open(const std::string& location, policy::PolicySet base, Truth truth) {
  auto opened = store::Store::open(location);
  if (!opened) return Unexpected{opened.error()};
  auto desk = std::make_unique<Desk>(std::move(*opened), std::move(base), truth);
  if (auto read = desk->book_.refresh(*desk->store_); !read) return Unexpected{location + ": " + read.error()};
  return desk;
}

Expected<Submitted> Desk::submit(const auth::Principal& author, std::string_view text, std::string_view comment,
                                 std::int64_t now_ms) {
  std::lock_guard lock(mu_);
  return proposals::submit(*store_, book_, author, text, comment, now_ms);
}

Expected<Proposal> Desk::decide(const auth::Principal& by, std::string_view id, bool approve, std::string_view comment,
                                std::int64_t now_ms) {
  std::lock_guard lock(mu_);
  return proposals::decide(*store_, book_, by, id, approve, comment, now_ms);
}

void Desk::rebase(policy::PolicySet cluster) {
  std::lock_guard lock(mu_);
  book_.rebase(std::move(cluster));
}

Expected<bool> Desk::record_enacted(std::string_view id, const std::string& actor, const std::string& resource_version,
                                    std::int64_t now_ms) {
  std::lock_guard lock(mu_);
  return proposals::record_enacted(*store_, book_, id, actor, resource_version, now_ms);
}

Expected<Desk::View> Desk::view() {
  std::lock_guard lock(mu_);
  if (auto read = book_.refresh(*store_); !read) return Unexpected{read.error()};
  return View{book_.in_force().policies_only(), book_.version(), book_.proposals()};
}

nlohmann::ordered_json to_json(const Proposal& p) {
  nlohmann::ordered_json j;
  j["id"] = p.id;
  j["object"] = p.object;
  j["businessGroup"] = p.business_group;
  j["state"] = state_name(p.state);
  j["author"] = p.author;
  j["authorRole"] = p.author_role;
  if (!p.author_group.empty()) j["authorGroup"] = p.author_group;
  j["submittedAt"] = format_rfc3339(Timestamp(std::chrono::milliseconds(p.submitted_ms)));
  j["needsApproval"] = p.needs_approval;
  j["approvalReason"] = p.approval_reason;
  j["comment"] = p.comment;
  j["baseVersion"] = p.base_version;
  j["patch"] = p.patch.is_null() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json::parse(p.patch.dump());
  j["document"] = p.document;
  if (!p.decided_by.empty()) {
    j["decidedBy"] = p.decided_by;
    j["decidedAt"] = format_rfc3339(Timestamp(std::chrono::milliseconds(p.decided_ms)));
    if (!p.decision_comment.empty()) j["decisionComment"] = p.decision_comment;
  }
  if (!p.version_after.empty()) j["versionAfter"] = p.version_after;
  if (p.enacted_ms != 0) {
    j["enacted"] = {{"by", p.enacted_by},
                    {"at", format_rfc3339(Timestamp(std::chrono::milliseconds(p.enacted_ms)))},
                    {"resourceVersion", p.enacted_resource_version}};
  }
  return j;
}

nlohmann::ordered_json to_json(const Diagnostic& d) {
  nlohmann::ordered_json j;
  j["severity"] = to_string(d.severity);
  j["rule"] = d.rule;
  if (!d.kind.empty()) j["object"] = d.kind + "/" + d.name;
  if (!d.path.empty()) j["field"] = d.path;
  if (d.pos.line > 0) j["line"] = d.pos.line;
  j["message"] = d.message;
  return j;
}

}  // namespace gpubank::proposals
