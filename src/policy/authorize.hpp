// Who may write which policy. Subjects are matched against the API server's userInfo:
// "user:<username>" and "group:<group>". Platform administrators may write everything;
// a business group's admins may write the policies of their group; PlatformGuardrails,
// and policies that act on every group, are the platform administrators' alone.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "policy/policy_set.hpp"
#include "policy/types.hpp"

namespace gpubank::policy {

struct UserInfo {
  std::string username;
  std::vector<std::string> groups;
};

[[nodiscard]] bool matches(const Subject& subject, const UserInfo& user);
[[nodiscard]] bool is_platform_admin(const UserInfo& user, const PlatformGuardrailsSpec& guardrails);
[[nodiscard]] bool is_group_admin(const UserInfo& user, const Group& group);

struct AuthResult {
  bool allowed = true;
  std::string_view rule;  // set when denied
  std::string message;
};

// May `user` create, change or delete `object`? `guardrails` are those in force before
// the change (nullptr when there are none yet: then only someone the new guardrails name
// as platform admin may create them). `set` resolves what a TidalPolicy acts on.
[[nodiscard]] AuthResult authorize_write(const UserInfo& user, const PolicyObject& object,
                                         const PlatformGuardrailsSpec* guardrails, const PolicySet& set);

// Status changes (lease approval) are the platform administrators'.
[[nodiscard]] AuthResult authorize_status_write(const UserInfo& user, const PolicyObject& object,
                                                const PlatformGuardrailsSpec* guardrails);

}  // namespace gpubank::policy
