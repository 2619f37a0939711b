// API tokens on a real SQLite store: what issue() refuses, that only the digest is stored,
// that a token authenticates its grant and nothing else (a changed character, an unknown
// id, expiry, revocation), and that a grant written under someone else's name is refused.
#include "auth/tokens.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <limits>

#include <nlohmann/json.hpp>

#include "support/paths.hpp"
#include "support/promtool.hpp"

namespace gpubank::auth {
namespace {

constexpr std::int64_t kT0 = 1'764'000'000'000;

class TokensTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = store::Store::open((dir_.path() / "gpubank.db").string());
    ASSERT_TRUE(s) << s.error();
    store_ = std::move(*s);
  }
  Issued grant(GrantRequest r) {
    auto issued = issue(r, kT0);
    EXPECT_TRUE(issued) << issued.error();
    EXPECT_TRUE(record_grant(*store_, book_, issued->grant));
    return *issued;
  }
  gpubank::testing::ScratchDir dir_;
  std::unique_ptr<store::Store> store_;
  TokenBook book_;
};

TEST_F(TokensTest, IssueNamesTheFieldAndTheRule) {
  auto error = [](GrantRequest r) {
    auto i = issue(r, kT0);
    return i ? std::string("accepted") : i.error();
  };
  EXPECT_EQ(error({"", Role::PlatformAdmin, "", "root", std::nullopt}).substr(0, 18), "subject: required,");
  EXPECT_EQ(error({"sam smith", Role::PlatformAdmin, "", "root", std::nullopt}).substr(0, 18), "subject: required,");
  EXPECT_EQ(error({"sam", Role::Viewer, "", "root", std::nullopt}),
            "group: required for role viewer (the business group it sees)");
  EXPECT_EQ(error({"sam", Role::FinOps, "search", "root", std::nullopt}), "group: role finops spans every group; name none");
  EXPECT_NE(error({"sam", Role::GroupAdmin, "Search!", "root", std::nullopt}).find("group: "), std::string::npos);
  EXPECT_EQ(error({"sam", Role::Viewer, "search", "", std::nullopt}).substr(0, 18), "issuedBy: required");
  EXPECT_EQ(error({"sam", Role::Viewer, "search", "root", -1}), "ttl: must be positive");
  EXPECT_EQ(error({"sam", Role::Viewer, "search", "root", std::numeric_limits<std::int64_t>::max()}).substr(0, 22),
            "ttl: at most ten years");
  EXPECT_EQ(parse_role("group-admin"), Role::GroupAdmin);
  EXPECT_FALSE(parse_role("admin"));
}

TEST_F(TokensTest, OnlyTheDigestIsStoredAndTheTokenAuthenticatesItsGrantAlone) {
  const Issued sam = grant({"sam", Role::GroupAdmin, "search", "root", std::nullopt});
  const Issued fin = grant({"fay", Role::FinOps, "", "root", std::nullopt});
  ASSERT_TRUE(sam.token.starts_with("gpb_"));
  ASSERT_EQ(sam.token.size(), 4U + 16 + 1 + 64);
  EXPECT_NE(sam.token, fin.token);
  // The store holds the digest, never the token or its secret.
  auto entries = store_->audit(0, 100);
  ASSERT_TRUE(entries);
  ASSERT_EQ(entries->size(), 2U);
  for (const bank::AuditEntry& e : *entries) {
    for (const std::string& t : {sam.token, fin.token}) {
      EXPECT_EQ(e.numbers.find(t.substr(21)), std::string::npos);
      EXPECT_EQ(e.reason.find(t.substr(21)), std::string::npos);
    }
  }
  EXPECT_EQ(nlohmann::json::parse((*entries)[0].numbers)["sha256"], sam.grant.digest);
  EXPECT_EQ((*entries)[0].actor, "root");
  EXPECT_EQ((*entries)[0].object, "Token/" + sam.grant.id);

  // Another process reads the grants from the store.
  TokenBook other;
  ASSERT_TRUE(refresh(*store_, other));
  ASSERT_EQ(other.grants.size(), 2U);
  auto who = authenticate(other, "Bearer " + sam.token, kT0);
  ASSERT_TRUE(who);
  EXPECT_EQ(who->subject, "sam");
  EXPECT_EQ(who->role, Role::GroupAdmin);
  EXPECT_EQ(who->group, "search");
  EXPECT_EQ(authenticate(other, fin.token, kT0)->role, Role::FinOps);

  // One character changed in the secret, a known id with another secret, an unknown id,
  // malformed text: nobody.
  std::string changed = sam.token;
  changed.back() = changed.back() == '0' ? '1' : '0';
  EXPECT_FALSE(authenticate(other, changed, kT0));
  EXPECT_FALSE(authenticate(other, sam.token.substr(0, 21) + fin.token.substr(21), kT0));
  EXPECT_FALSE(authenticate(other, "gpb_0000000000000000" + sam.token.substr(20), kT0));
  for (const std::string& bad : {std::string(), std::string("Bearer "), sam.token + "x", sam.token.substr(1),
                                 std::string("Basic ") + sam.token, std::string(sam.token.size(), 'a')}) {
    EXPECT_FALSE(authenticate(other, bad, kT0)) << bad;
  }
}

TEST_F(TokensTest, ExpiryAndRevocationEndAToken) {
  const Issued day = grant({"ci-bot", Role::Viewer, "ads", "root", 86'400'000});
  const Issued sam = grant({"sam", Role::PlatformAdmin, "", "root", std::nullopt});
  EXPECT_TRUE(authenticate(book_, day.token, kT0 + 86'399'999));
  EXPECT_FALSE(authenticate(book_, day.token, kT0 + 86'400'000));

  ASSERT_TRUE(revoke(*store_, book_, sam.grant.id, "pat", kT0 + 1));
  EXPECT_FALSE(authenticate(book_, sam.token, kT0 + 2));
  TokenBook other;
  ASSERT_TRUE(refresh(*store_, other));
  EXPECT_FALSE(authenticate(other, sam.token, kT0 + 2));
  EXPECT_TRUE(authenticate(other, day.token, kT0 + 2));
  auto again = revoke(*store_, book_, sam.grant.id, "pat", kT0 + 3);
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error(), "id: token " + sam.grant.id + " is already revoked");
  auto unknown = revoke(*store_, book_, "0123456789abcdef", "pat", kT0 + 3);
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error(), "id: no token 0123456789abcdef was issued in this store");
}

TEST_F(TokensTest, AGrantRecordedUnderAnotherNameOrMalformedIsRefused) {
  // Someone with write access appends a grant that claims root issued it.
  auto forged = issue({"mallory", Role::PlatformAdmin, "", "root", std::nullopt}, kT0);
  ASSERT_TRUE(forged);
  bank::AuditEntry e;
  e.time_ms = kT0;
  e.actor = "mallory";
  e.action = std::string(kIssuedAction);
  e.object = "Token/" + forged->grant.id;
  e.decision = "platform-admin";
  e.reason = "forged";
  e.numbers = nlohmann::json{{"id", forged->grant.id}, {"subject", "mallory"}, {"role", "platform-admin"}, {"group", ""},
                             {"sha256", forged->grant.digest}, {"issuedMs", kT0}, {"issuedBy", "root"}}
                  .dump();
  ASSERT_TRUE(store_->append({}, std::span(&e, 1)));
  auto read = refresh(*store_, book_);
  ASSERT_FALSE(read);
  EXPECT_EQ(read.error(), "audit entry 1: a token grant must name its issuer as actor and Token/<id> as object");
  EXPECT_TRUE(book_.grants.empty());

  TokenBook other;
  e.actor = "root";
  e.numbers = nlohmann::json{{"id", forged->grant.id}, {"subject", "mallory"}, {"role", "owner"}}.dump();
  ASSERT_TRUE(store_->append({}, std::span(&e, 1)));
  other.last_seq = 1;
  read = refresh(*store_, other);
  ASSERT_FALSE(read);
  EXPECT_EQ(read.error(), "audit entry 2: grant.group: required, a string");
}

TEST_F(TokensTest, TheCommandLineIssuesListsAndRevokes) {
  store_.reset();
  const std::string gpubank = gpubank::testing::binary_dir() + "/cmd/gpubank/gpubank";
  const std::string store = " --store " + (dir_.path() / "gpubank.db").string();
  auto created = gpubank::testing::run_in(
      dir_.path(), gpubank + " token create --subject sam --role group-admin --group search --ttl 30d --issuer root -o json" + store);
  ASSERT_EQ(created.status, 0) << created.output;
  const nlohmann::json j = nlohmann::json::parse(created.output);
  EXPECT_EQ(j["subject"], "sam");
  EXPECT_EQ(j["role"], "group-admin");
  EXPECT_EQ(j["group"], "search");
  EXPECT_EQ(j["issuedBy"], "root");
  ASSERT_TRUE(j.contains("expires"));
  const std::string token = j["token"];
  const std::string id = j["id"];

  auto reopened = store::Store::open((dir_.path() / "gpubank.db").string());
  ASSERT_TRUE(reopened);
  TokenBook book;
  ASSERT_TRUE(refresh(**reopened, book));
  const std::int64_t now =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  ASSERT_TRUE(authenticate(book, token, now));
  EXPECT_EQ(authenticate(book, token, now)->group, "search");

  auto listed = gpubank::testing::run_in(dir_.path(), gpubank + " token list" + store);
  ASSERT_EQ(listed.status, 0) << listed.output;
  EXPECT_NE(listed.output.find(id + "  sam  group-admin  search  issued "), std::string::npos) << listed.output;
  EXPECT_EQ(listed.output.find(token.substr(21)), std::string::npos) << "the secret is never listed";

  auto refused = gpubank::testing::run_in(dir_.path(), gpubank + " token create --subject eve --role viewer" + store);
  EXPECT_EQ(refused.status, 1) << refused.output;
  EXPECT_NE(refused.output.find("group: required for role viewer"), std::string::npos) << refused.output;
  auto usage = gpubank::testing::run_in(dir_.path(), gpubank + " token create --subject eve --role owner" + store);
  EXPECT_EQ(usage.status, 2) << usage.output;
  EXPECT_NE(usage.output.find("--role: one of viewer, group-admin, finops, platform-admin"), std::string::npos);
  auto missing = gpubank::testing::run_in(dir_.path(), gpubank + " token list --store " + (dir_.path() / "none.db").string());
  EXPECT_EQ(missing.status, 1) << missing.output;

  auto revoked = gpubank::testing::run_in(dir_.path(), gpubank + " token revoke " + id + " --by pat" + store);
  ASSERT_EQ(revoked.status, 0) << revoked.output;
  ASSERT_TRUE(refresh(**reopened, book));
  EXPECT_FALSE(authenticate(book, token, now));
  auto twice = gpubank::testing::run_in(dir_.path(), gpubank + " token revoke " + id + store);
  EXPECT_EQ(twice.status, 1);
  EXPECT_NE(twice.output.find("is already revoked"), std::string::npos) << twice.output;
}

}  // namespace
}  // namespace gpubank::auth
