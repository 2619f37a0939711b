#include "policy/authorize.hpp"

#include <algorithm>
#include <set>

#include "policy/rules.hpp"

namespace gpubank::policy {
namespace {

bool any_matches(const std::vector<Subject>& subjects, const UserInfo& user) {
  return std::any_of(subjects.begin(), subjects.end(), [&](const Subject& s) { return matches(s, user); });
}

AuthResult deny(std::string_view rule, std::string message) { return AuthResult{false, rule, std::move(message)}; }

std::string who(const UserInfo& user) { return "user \"" + user.username + "\""; }

// The business groups a policy belongs to; empty when it is platform-wide.
std::set<std::string> owning_groups(const PolicyObject& object, const PolicySet& set) {
  switch (object.kind) {
    case Kind::PlatformGuardrails: return {};
    case Kind::GPUQuotaPolicy: return {object.as<GPUQuotaPolicySpec>().business_group};
    case Kind::InferenceScalingPolicy: return {object.as<InferenceScalingPolicySpec>().business_group};
    case Kind::CapacityLease: return {object.as<CapacityLeaseSpec>().business_group};
    case Kind::LowUtilizationPolicy: {
      const auto& m = object.as<LowUtilizationPolicySpec>().match;
      if (m.business_group) return {*m.business_group};
      return {};
    }
    case Kind::TidalPolicy: {
      const auto& t = object.as<TidalPolicySpec>();
      std::set<std::string> groups(t.targets.training_groups.begin(), t.targets.training_groups.end());
      for (const auto& name : t.targets.inference_policies) {
        if (const PolicyObject* p = set.find(Kind::InferenceScalingPolicy, name)) {
          groups.insert(p->as<InferenceScalingPolicySpec>().business_group);
        }
      }
      return groups;
    }
  }
  return {};
}

}  // namespace

bool matches(const Subject& subject, const UserInfo& user) {
  if (subject.starts_with("user:")) return std::string_view(subject).substr(5) == user.username;
  if (subject.starts_with("group:")) {
    const std::string_view group = std::string_view(subject).substr(6);
    return std::find(user.groups.begin(), user.groups.end(), group) != user.groups.end();
  }
  return false;
}

bool is_platform_admin(const UserInfo& user, const PlatformGuardrailsSpec& guardrails) {
  return any_matches(guardrails.platform_admins, user);
}

bool is_group_admin(const UserInfo& user, const Group& group) { return any_matches(group.admins, user); }

AuthResult authorize_write(const UserInfo& user, const PolicyObject& object, const PlatformGuardrailsSpec* guardrails,
                           const PolicySet& set) {
  if (guardrails == nullptr) {
    if (object.kind != Kind::PlatformGuardrails) return {};  // validation reports guardrails.missing
    if (any_matches(object.as<PlatformGuardrailsSpec>().platform_admins, user)) return {};
    return deny(rule::kAuthPlatformAdminOnly,
                "the first PlatformGuardrails must name its author among spec.platformAdmins; " + who(user) +
                    " is not there");
  }
  if (is_platform_admin(user, *guardrails)) return {};
  if (object.kind == Kind::PlatformGuardrails) {
    return deny(rule::kAuthPlatformAdminOnly,
                "only platform administrators may change PlatformGuardrails; " + who(user) + " is not one");
  }
  const auto groups = owning_groups(object, set);
  if (groups.empty()) {
    return deny(rule::kAuthPlatformAdminOnly, object.ref() + " applies to every business group, so only platform "
                                                              "administrators may change it; " + who(user) + " is not one");
  }
  for (const auto& name : groups) {
    const Group* group = guardrails->find_group(name);
    if (group == nullptr) {
      return deny(rule::kAuthNotGroupAdmin, who(user) + " is not an admin of business group \"" + name +
                                                "\" (it is not defined in the guardrails)");
    }
    if (!is_group_admin(user, *group)) {
      return deny(rule::kAuthNotGroupAdmin,
                  who(user) + " is not an admin of business group " + name + ", which " + object.ref() + " belongs to");
    }
  }
  return {};
}

AuthResult authorize_status_write(const UserInfo& user, const PolicyObject& object,
                                  const PlatformGuardrailsSpec* guardrails) {
  if (guardrails != nullptr && is_platform_admin(user, *guardrails)) return {};
  return deny(rule::kAuthPlatformAdminOnly, "only platform administrators may change the status of " + object.ref() +
                                                " (for example, approve a lease); " + who(user) + " is not one");
}

}  // namespace gpubank::policy
