// Self-service policy changes (the portal's policy editor, issue 32): a group admin
// proposes a GPUQuotaPolicy, InferenceScalingPolicy, TidalPolicy or CapacityLease; the
// change is checked (decoding, the guardrails, the author's authority), applied at once or
// held for a platform administrator, and every step is recorded with a diff.
//
//   record     the store's append-only, hash-chained audit log (store/store.hpp):
//              PolicyChangeProposed (numbers: the proposal, its YAML and its RFC 6902
//              patch against the version it was made on), PolicyChangeApproved,
//              PolicyChangeRejected, PolicyChangeApplied (numbers: the version after).
//              The proposals and the set in force are the fold of the log; a crash leaves
//              a step recorded or not, never half.
//   in force   the base set (`--policies`) with every applied change upserted in order.
//   authority  platform-admin: any of the four kinds. group-admin of G: objects whose
//              businessGroup is G (a TidalPolicy: every inference policy it targets is
//              G's), and never one that another group holds now. viewer, finops: none.
//   approval   a platform-admin's own change applies at once. Otherwise approval is needed
//              for a new object, any CapacityLease (policy-api.md), any TidalPolicy (it
//              moves capacity between groups by the clock), a GPUQuotaPolicy that takes
//              more (guaranteed, borrowLimit, maxCapacity or fairShareWeight up,
//              lendingLimit down or newly set, onlyPreempt changed) and an
//              InferenceScalingPolicy that asks for more (min or max replicas up, another
//              replica shape). What only gives back applies at once.
//   stale      a pending change made on another version of the same object is refused at
//              approval: the approver would approve a diff that no longer describes it.
//
// An approved CapacityLease gets status.approval for its spec (policy/lease_approval.hpp)
// and the requested-by annotation of its author.
//
// Two places hold what is in force:
//   Truth::Record   `gpubank up`: the record is the truth; the set in force is the base
//                   with every applied change upserted, and each Applied entry's recorded
//                   version must be the fold's.
//   Truth::Cluster  the controller: the cluster's objects are the truth. The base is
//                   replaced by what the informers hold (rebase) and applied changes are
//                   not upserted: one applied in the record but not yet on the cluster is
//                   not in force until the controller has server-side applied it, which it
//                   records as PolicyChangeEnacted (numbers: id, resourceVersion).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "auth/tokens.hpp"
#include "core/diagnostic.hpp"
#include "core/expected.hpp"
#include "policy/policy_set.hpp"
#include "store/store.hpp"

namespace gpubank::proposals {

inline constexpr std::size_t kMaxDocumentBytes = 64 * 1024;
inline constexpr std::string_view kProposed = "PolicyChangeProposed";
inline constexpr std::string_view kApproved = "PolicyChangeApproved";
inline constexpr std::string_view kRejected = "PolicyChangeRejected";
inline constexpr std::string_view kApplied = "PolicyChangeApplied";
inline constexpr std::string_view kEnacted = "PolicyChangeEnacted";

enum class State { Pending, Applied, Rejected };
[[nodiscard]] std::string_view state_name(State state);

struct Proposal {
  std::string id;  // 16 hex
  std::string author, author_role, author_group;
  std::string object;  // Kind/name
  std::string business_group;
  std::string document;      // the proposed object, as submitted (YAML or JSON)
  std::string base_version;  // the set in force it was made on
  std::string base_spec_hash;  // sha256 of the object's canonical spec then ("" for a new one)
  nlohmann::json patch;      // RFC 6902, current spec -> proposed (null for a new object)
  std::string comment;
  bool needs_approval = false;
  std::string approval_reason;  // why it needs approval, or why not
  State state = State::Pending;
  std::string decided_by, decision_comment;
  std::int64_t submitted_ms = 0, decided_ms = 0;
  std::string version_after;  // the set in force once applied
  std::string applied_document;  // the object as it went into force (JSON), once applied
  // On a cluster (Truth::Cluster): when the controller's server-side apply took it.
  std::int64_t enacted_ms = 0;
  std::string enacted_by, enacted_resource_version;
};

enum class Truth { Record, Cluster };

// The proposals and the set in force, folded from the log.
class Book {
 public:
  explicit Book(policy::PolicySet base, Truth truth = Truth::Record);
  // Reads what is new in the store's audit log.
  Expected<bool> refresh(store::Store& store);
  // Truth::Cluster: the cluster's set now becomes the set in force.
  void rebase(policy::PolicySet cluster);
  [[nodiscard]] const policy::PolicySet& in_force() const { return in_force_; }
  [[nodiscard]] const std::string& version() const { return version_; }
  [[nodiscard]] const std::vector<Proposal>& proposals() const { return proposals_; }
  [[nodiscard]] const Proposal* find(std::string_view id) const;

 private:
  std::optional<std::string> fold(const bank::AuditEntry& e);
  void apply(const Proposal& p);

  Truth truth_ = Truth::Record;
  policy::PolicySet base_;
  policy::PolicySet in_force_;
  std::string version_;
  std::vector<Proposal> proposals_;
  std::int64_t last_seq_ = 0;
};

// One proposed object from text: exactly one document of the four kinds, decoded. Every
// problem is a Diagnostic naming the field and the rule.
[[nodiscard]] std::optional<policy::PolicyObject> parse_document(std::string_view text, Diagnostics& findings);

// What the author may not do with this object, as a finding (rule auth.*); none when allowed.
[[nodiscard]] std::optional<Diagnostic> check_authority(const auth::Principal& author, const policy::PolicyObject& object,
                                                        const policy::PolicySet& in_force);

// Whether the change from `current` (null: a new object) to `proposed` needs approval when
// `author` makes it, and why.
struct ApprovalNeed {
  bool needed = false;
  std::string reason;
};
[[nodiscard]] ApprovalNeed approval_need(const auth::Principal& author, const policy::PolicyObject* current,
                                         const policy::PolicyObject& proposed);

// The set in force with `object` upserted: what a proposal would make.
[[nodiscard]] policy::PolicySet with_change(const policy::PolicySet& in_force, const policy::PolicyObject& object);

struct Submitted {
  Proposal proposal;
  Diagnostics findings;  // errors: refused, nothing recorded
};
// Checks and records a proposal (and, when it needs no approval, applies it in the same
// append). Refused (findings with an error) without a record.
Expected<Submitted> submit(store::Store& store, Book& book, const auth::Principal& author, std::string_view text,
                           std::string_view comment, std::int64_t now_ms);

// A platform administrator's decision on a pending proposal; errors name the rule
// (proposal.unknown, proposal.not-pending, proposal.stale, auth.not-platform-admin).
Expected<Proposal> decide(store::Store& store, Book& book, const auth::Principal& by, std::string_view id, bool approve,
                          std::string_view comment, std::int64_t now_ms);

// Records that the cluster took an applied proposal (Truth::Cluster), by `actor` (the
// controller) with the object's resourceVersion after the apply; an error when the
// proposal is not Applied or already enacted.
Expected<bool> record_enacted(store::Store& store, Book& book, std::string_view id, const std::string& actor,
                              const std::string& resource_version, std::int64_t now_ms);

// A Book and its store behind one mutex, for a server's request threads.
class Desk {
 public:
  Desk(std::unique_ptr<store::Store> store, policy::PolicySet base, Truth truth = Truth::Record)
      : store_(std::move(store)), book_(std::move(base), truth) {}
  static Expected<std::unique_ptr<Desk>> open(const std::string& location, policy::PolicySet base,
                                              Truth truth = Truth::Record);
  void rebase(policy::PolicySet cluster);
  Expected<bool> record_enacted(std::string_view id, const std::string& actor, const std::string& resource_version,
                                std::int64_t now_ms);

  Expected<Submitted> submit(const auth::Principal& author, std::string_view text, std::string_view comment,
                             std::int64_t now_ms);
  Expected<Proposal> decide(const auth::Principal& by, std::string_view id, bool approve, std::string_view comment,
                            std::int64_t now_ms);
  // A consistent copy of what the fold holds now (after reading what is new).
  struct View {
    policy::PolicySet in_force;
    std::string version;
    std::vector<Proposal> proposals;
  };
  Expected<View> view();

 private:
  std::mutex mu_;
  std::unique_ptr<store::Store> store_;
  Book book_;
};

[[nodiscard]] nlohmann::ordered_json to_json(const Proposal& p);
// The finding as the API shows it: {severity, rule, object, field, line, message}.
[[nodiscard]] nlohmann::ordered_json to_json(const Diagnostic& d);

}  // namespace gpubank::proposals
