#include "policy/lease_approval.hpp"

#include "core/sha256.hpp"
#include "policy/schema.hpp"

namespace gpubank::policy {

std::string lease_spec_hash(const CapacityLeaseSpec& spec) {
  // nlohmann's object keeps keys sorted, so dump() is canonical for one encoding.
  return "sha256:" + sha256_hex(doc::encode_value(spec).dump());
}

ApprovalRead read_approval(const nlohmann::json& status) {
  ApprovalRead out;
  if (!status.is_object() || !status.contains("approval") || status["approval"].is_null()) return out;
  out.present = true;
  const auto& a = status["approval"];
  if (!a.is_object()) {
    out.problem = "status.approval must be an object {approvedBy, specHash, approvedAt}";
    return out;
  }
  const auto text = [&](const char* key) -> std::optional<std::string> {
    if (!a.contains(key) || !a[key].is_string() || a[key].get_ref<const std::string&>().empty()) return std::nullopt;
    return a[key].get<std::string>();
  };
  LeaseApproval approval;
  const auto by = text("approvedBy");
  const auto hash = text("specHash");
  if (!by) {
    out.problem = "status.approval.approvedBy is missing (the approver, \"user:<name>\")";
    return out;
  }
  if (!hash) {
    out.problem = "status.approval.specHash is missing, so the approval does not say which spec it approved";
    return out;
  }
  approval.approved_by = *by;
  approval.spec_hash = *hash;
  if (a.contains("approvedAt")) {
    if (!a["approvedAt"].is_string()) {
      out.problem = "status.approval.approvedAt must be an RFC 3339 time in a string";
      return out;
    }
    const auto at = parse_rfc3339(a["approvedAt"].get<std::string>());
    if (!at) {
      out.problem = "status.approval.approvedAt is not an RFC 3339 time: " + at.error();
      return out;
    }
    approval.approved_at = *at;
  }
  out.approval = std::move(approval);
  return out;
}

bool approved_as_is(const PolicyObject& lease) {
  if (lease.kind != Kind::CapacityLease) return false;
  const ApprovalRead read = read_approval(lease.status);
  return read.approval && read.approval->spec_hash == lease_spec_hash(lease.as<CapacityLeaseSpec>());
}

std::optional<LeaseWindow> lease_window(const PolicyObject& lease) {
  if (!approved_as_is(lease)) return std::nullopt;
  const auto& spec = lease.as<CapacityLeaseSpec>();
  if (!spec.end) return std::nullopt;
  std::optional<Timestamp> start = spec.start;
  if (!start) {
    const ApprovalRead read = read_approval(lease.status);
    if (read.approval && read.approval->approved_at) start = read.approval->approved_at;
  }
  if (!start) return std::nullopt;
  return LeaseWindow{*start, *spec.end};
}

std::optional<std::string> requested_by(const PolicyObject& lease) {
  auto it = lease.metadata.annotations.find(std::string(kAnnotationRequestedBy));
  if (it == lease.metadata.annotations.end()) return std::nullopt;
  return it->second;
}

}  // namespace gpubank::policy
