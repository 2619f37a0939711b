// The admission webhook's decisions, as a pure function of the policy snapshot, the
// AdmissionReview body and the request time: review() for POST /validate, which allows or
// denies, and review_mutation() for POST /mutate, which also patches (the default priority
// class of a protected workload). The HTTPS server and the audit log are the shell around
// them (webhook_server.hpp, audit_log.hpp).
#pragma once

#include <cstddef>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/diagnostic.hpp"
#include "core/timestamp.hpp"
#include "policy/authorize.hpp"
#include "policy/policy_set.hpp"
#include "policy/validate.hpp"

namespace gpubank::api {

// The API server sends at most 3 MiB of object; anything larger is refused unread.
inline constexpr std::size_t kMaxReviewBytes = std::size_t{3} << 20;

// What was decided, with everything the audit log records.
struct AdmissionDecision {
  std::string uid;
  bool allowed = false;
  int code = 200;           // status.code: 200, 400, 403, 413 or 422
  std::string reason;       // status.reason: "", "BadRequest", "Forbidden", "Invalid", "RequestEntityTooLarge"
  std::string message;      // status.message
  std::vector<std::string> warnings;
  std::vector<std::string> rules;  // the rule ids behind a denial (or the warnings)

  // What the request was about.
  std::string operation;    // CREATE, UPDATE, DELETE, CONNECT
  std::string kind;         // "platform.gpubank.dev/GPUQuotaPolicy", "/Pod", "batch/Job"
  std::string sub_resource;
  std::string namespace_;
  std::string name;
  policy::UserInfo user;
  bool dry_run = false;

  // POST /mutate only.
  bool mutating = false;
  // The RFC 6902 JSON Patch for the object (an array of operations; empty: no change).
  // The response carries it base64-encoded with patchType JSONPatch.
  nlohmann::json patch = nlohmann::json::array();
};

// The policies in force: loaded once, shared read-only by every request.
class PolicySnapshot {
 public:
  explicit PolicySnapshot(policy::PolicySet set, const policy::ValidationOptions& options = {});

  [[nodiscard]] const policy::PolicySet& set() const { return set_; }
  // Validation findings of the snapshot itself (to tell a change's new errors from old).
  [[nodiscard]] const Diagnostics& findings() const { return findings_; }
  [[nodiscard]] const policy::OverlapCache& overlaps() const { return overlaps_; }
  // Whether the snapshot already had this finding (same rule, object and field).
  [[nodiscard]] bool had(const Diagnostic& finding) const;

 private:
  policy::PolicySet set_;
  policy::OverlapCache overlaps_;
  Diagnostics findings_;
  std::set<std::string> finding_keys_;
};

// Decides one AdmissionReview. Never throws; any malformed input becomes a denial.
AdmissionDecision review(const PolicySnapshot& snapshot, std::string_view body, Timestamp now);

// Decides one AdmissionReview for the mutating webhook (docs/webhook.md, "Defaulting"): a
// workload of a protected type in a group's namespace that names no priority class gets
// the kueue.x-k8s.io/priority-class label with its type's default; without a default a
// user's workload is denied (priority.protected-needs-class). Everything else is allowed
// unchanged. The envelope is read, and malformed input denied, exactly as by review().
AdmissionDecision review_mutation(const PolicySnapshot& snapshot, std::string_view body, Timestamp now);

// The admission.k8s.io/v1 AdmissionReview response for a decision (with patchType and
// patch when an allowed decision has a patch).
nlohmann::json review_response(const AdmissionDecision& decision);

}  // namespace gpubank::api
