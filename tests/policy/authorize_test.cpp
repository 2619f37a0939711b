#include "policy/authorize.hpp"

#include <gtest/gtest.h>

#include "policy/rules.hpp"
#include "support/policy_fixture.hpp"

namespace gpubank::policy {
namespace {

const PolicySet& examples() {
  static const PolicySet set = gpubank::testing::examples_plus();
  return set;
}

AuthResult may(const UserInfo& user, Kind kind, const char* name) {
  const PolicyObject* o = examples().find(kind, name);
  EXPECT_NE(o, nullptr) << name;
  return authorize_write(user, *o, examples().guardrails_spec(), examples());
}

const UserInfo kSearchAdmin{"sam", {"search-admins", "system:authenticated"}};
const UserInfo kSearchEngineer{"erin", {"search-engineers"}};
const UserInfo kPlatformAdmin{"pat", {"gpubank-platform-admins"}};
const UserInfo kMei{"mei.chen", {}};

TEST(Authorize, SubjectsMatchUsersAndGroups) {
  EXPECT_TRUE(matches("user:sam", kSearchAdmin));
  EXPECT_TRUE(matches("group:search-admins", kSearchAdmin));
  EXPECT_FALSE(matches("user:search-admins", kSearchAdmin));
  EXPECT_FALSE(matches("group:sam", kSearchAdmin));
  EXPECT_FALSE(matches("sam", kSearchAdmin));
}

TEST(Authorize, GroupAdminsWriteTheirOwnGroupsPoliciesOnly) {
  EXPECT_TRUE(may(kSearchAdmin, Kind::GPUQuotaPolicy, "search-team-h100").allowed);
  const auto other = may(kSearchAdmin, Kind::GPUQuotaPolicy, "ads-training-h100");
  EXPECT_FALSE(other.allowed);
  EXPECT_EQ(other.rule, rule::kAuthNotGroupAdmin);
  EXPECT_NE(other.message.find("not an admin of business group ads"), std::string::npos);
  EXPECT_FALSE(may(kSearchEngineer, Kind::GPUQuotaPolicy, "search-team-h100").allowed);
  EXPECT_TRUE(may(kMei, Kind::InferenceScalingPolicy, "customer-service-llm").allowed);  // a user: subject
}

TEST(Authorize, GuardrailsAndPlatformWidePoliciesArePlatformAdminsOnly) {
  const auto g = may(kSearchAdmin, Kind::PlatformGuardrails, "platform");
  EXPECT_FALSE(g.allowed);
  EXPECT_EQ(g.rule, rule::kAuthPlatformAdminOnly);
  EXPECT_FALSE(may(kSearchAdmin, Kind::LowUtilizationPolicy, "training-default").allowed);  // matches all groups
  EXPECT_TRUE(may(kPlatformAdmin, Kind::PlatformGuardrails, "platform").allowed);
  EXPECT_TRUE(may(kPlatformAdmin, Kind::GPUQuotaPolicy, "ads-training-h100").allowed);
}

TEST(Authorize, TidalPoliciesNeedAnAdminOfEveryGroupTheyActOn) {
  // weekday-serving-training acts on customer-service (its inference policy) and on the
  // training groups search, ads and research.
  EXPECT_FALSE(may(kMei, Kind::TidalPolicy, "weekday-serving-training").allowed);
  const UserInfo all{"x", {"customer-service-admins", "search-admins", "ads-admins", "research-admins"}};
  EXPECT_TRUE(may(all, Kind::TidalPolicy, "weekday-serving-training").allowed);
}

TEST(Authorize, TheFirstGuardrailsMustNameTheirAuthor) {
  const PolicyObject* g = examples().guardrails();
  EXPECT_TRUE(authorize_write(kPlatformAdmin, *g, nullptr, examples()).allowed);
  EXPECT_FALSE(authorize_write(kSearchAdmin, *g, nullptr, examples()).allowed);
}

TEST(Authorize, StatusChangesArePlatformAdminsOnly) {
  const PolicyObject* lease = examples().find(Kind::CapacityLease, "ads-holiday-retrain");
  const UserInfo ads_admin{"a", {"ads-admins"}};
  EXPECT_TRUE(authorize_write(ads_admin, *lease, examples().guardrails_spec(), examples()).allowed);
  EXPECT_FALSE(authorize_status_write(ads_admin, *lease, examples().guardrails_spec()).allowed);
  EXPECT_TRUE(authorize_status_write(kPlatformAdmin, *lease, examples().guardrails_spec()).allowed);
}

}  // namespace
}  // namespace gpubank::policy
