// A CapacityLease's approval and who asked for it. The approval is bound to the spec it
// approved: status.approval records the sha256 of the canonical spec, so any later change
// of the spec leaves the lease unapproved. The requester is the annotation
// platform.gpubank.dev/requested-by, which the webhook holds to the user who wrote the
// spec (docs/policy-api.md, "Leases").
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/timestamp.hpp"
#include "policy/types.hpp"

namespace gpubank::policy {

inline constexpr std::string_view kAnnotationRequestedBy = "platform.gpubank.dev/requested-by";

// "sha256:<64 hex>" of the spec as gpubank encodes it (defaults filled in, times in UTC,
// keys sorted), so equivalent spellings of one spec hash alike.
[[nodiscard]] std::string lease_spec_hash(const CapacityLeaseSpec& spec);

// status.approval as written by the approver:
//   approval: {approvedBy: "user:<name>", specHash: "sha256:...", approvedAt: RFC 3339}
struct LeaseApproval {
  std::string approved_by;
  std::string spec_hash;
  std::optional<Timestamp> approved_at;
};

// Reading status.approval: absent (no approval), or the record, or what is wrong with it.
struct ApprovalRead {
  bool present = false;
  std::optional<LeaseApproval> approval;  // set when present and well formed
  std::string problem;                    // why not, when present and malformed
};
[[nodiscard]] ApprovalRead read_approval(const nlohmann::json& status);

// Whether the lease's status carries a well-formed approval of its current spec.
[[nodiscard]] bool approved_as_is(const PolicyObject& lease);

// When an approved lease is in force: [start, end), start being spec.start or, when the
// lease names none, its approval time. nullopt for a lease not approved as is, without an
// end, or without either start. The twin and the controller both follow it.
struct LeaseWindow {
  Timestamp start;
  Timestamp end;
};
[[nodiscard]] std::optional<LeaseWindow> lease_window(const PolicyObject& lease);

// The requester the lease records, if any.
[[nodiscard]] std::optional<std::string> requested_by(const PolicyObject& lease);

}  // namespace gpubank::policy
