// The gate of the platform's HTTP API (auth/gate.hpp) in virtual wall time: sessions end
// with their ttl and with their token, a token issued by another process is seen at once,
// a revocation within the refresh interval, the rate limit refills at its rate, and the
// session table stays bounded.
#include "auth/gate.hpp"

#include <gtest/gtest.h>

#include "support/paths.hpp"
#include "support/promtool.hpp"

namespace gpubank::auth {
namespace {

constexpr std::int64_t kGateT0 = 1'764'000'000'000;

class GateTest : public ::testing::Test {
 protected:
  std::unique_ptr<Gate> open(GateOptions options = {}) {
    auto gate = Gate::open(location(), options);
    EXPECT_TRUE(gate) << gate.error();
    return gate ? std::move(*gate) : nullptr;
  }
  std::string location() const { return (dir_.path() / "auth.db").string(); }
  gpubank::testing::ScratchDir dir_;
};

TEST_F(GateTest, ASessionEndsWithItsTtlItsTokenOrSigningOut) {
  GateOptions options;
  options.session_ttl_ms = 60'000;
  auto gate = open(options);
  auto issued = gate->issue(GrantRequest{"sam", Role::GroupAdmin, "search", "pat", 3'600'000}, kGateT0);
  ASSERT_TRUE(issued) << issued.error();
  auto session = gate->open_session(issued->token, kGateT0);
  ASSERT_TRUE(session) << session.error();
  EXPECT_EQ(session->principal.subject, "sam");
  EXPECT_EQ(session->id.size(), 64u);
  EXPECT_NE(session->id, session->csrf);
  EXPECT_TRUE(gate->by_session(session->id, kGateT0 + 59'999));
  EXPECT_FALSE(gate->by_session(session->id, kGateT0 + 60'000)) << "the session's ttl";
  EXPECT_EQ(gate->sessions(), 0u);

  // Never beyond its token: a token with 10 s left gives a session of 10 s.
  auto short_lived = gate->issue(GrantRequest{"kim", Role::Viewer, "ads", "pat", 10'000}, kGateT0);
  ASSERT_TRUE(short_lived);
  auto s2 = gate->open_session(short_lived->token, kGateT0);
  ASSERT_TRUE(s2);
  EXPECT_EQ(s2->expires_ms, kGateT0 + 10'000);
  EXPECT_FALSE(gate->by_session(s2->id, kGateT0 + 10'000));

  auto s3 = gate->open_session(issued->token, kGateT0);
  ASSERT_TRUE(s3);
  gate->close_session(s3->id);
  EXPECT_FALSE(gate->by_session(s3->id, kGateT0));
  EXPECT_FALSE(gate->by_session("", kGateT0));
  EXPECT_FALSE(gate->open_session("gpb_nope", kGateT0));
}

TEST_F(GateTest, CsrfMustMatchExactly) {
  Session s;
  s.csrf = std::string(64, 'a');
  EXPECT_TRUE(Gate::csrf_matches(s, std::string(64, 'a')));
  EXPECT_FALSE(Gate::csrf_matches(s, std::string(63, 'a')));
  EXPECT_FALSE(Gate::csrf_matches(s, std::string(64, 'a') + "a"));
  EXPECT_FALSE(Gate::csrf_matches(s, ""));
  s.csrf.clear();
  EXPECT_FALSE(Gate::csrf_matches(s, "")) << "a session without a CSRF token admits no write";
}

TEST_F(GateTest, AnotherProcessesGrantIsSeenAtOnceAndItsRevocationWithinTheInterval) {
  GateOptions options;
  options.refresh_every_ms = 1000;
  auto gate = open(options);
  // `gpubank token create` on the same store: another handle, as another process has.
  auto other = store::Store::open(location());
  ASSERT_TRUE(other) << other.error();
  TokenBook book;
  auto issued = issue(GrantRequest{"sam", Role::Viewer, "search", "pat", std::nullopt}, kGateT0);
  ASSERT_TRUE(issued);
  ASSERT_TRUE(record_grant(**other, book, issued->grant));
  EXPECT_TRUE(gate->by_token(issued->token, kGateT0)) << "an unknown id forces a read";
  ASSERT_TRUE(revoke(**other, book, issued->grant.id, "pat", kGateT0 + 10));
  EXPECT_TRUE(gate->by_token(issued->token, kGateT0 + 500)) << "read less than a second ago";
  EXPECT_FALSE(gate->by_token(issued->token, kGateT0 + 1000)) << "revoked, read within the second";
}

TEST_F(GateTest, TheBucketRefillsAtItsRate) {
  GateOptions options;
  options.requests_per_second = 2;
  options.burst = 4;
  auto gate = open(options);
  for (int i = 0; i < 4; ++i) EXPECT_FALSE(gate->throttle("t", kGateT0)) << i;
  const auto wait = gate->throttle("t", kGateT0);
  ASSERT_TRUE(wait);
  EXPECT_DOUBLE_EQ(*wait, 0.5);
  EXPECT_FALSE(gate->throttle("other", kGateT0));
  EXPECT_FALSE(gate->throttle("t", kGateT0 + 500));  // half a second: one more
  EXPECT_TRUE(gate->throttle("t", kGateT0 + 500));
  EXPECT_TRUE(gate->throttle("t", kGateT0 + 100)) << "a clock that steps back refills nothing";
  for (int i = 0; i < 4; ++i) EXPECT_FALSE(gate->throttle("t", kGateT0 + 60'000)) << "refilled to the burst, no more";
  EXPECT_TRUE(gate->throttle("t", kGateT0 + 60'000));
}

TEST_F(GateTest, TheSessionTableIsBounded) {
  GateOptions options;
  options.max_sessions = 3;
  auto gate = open(options);
  auto issued = gate->issue(GrantRequest{"sam", Role::Viewer, "search", "pat", std::nullopt}, kGateT0);
  ASSERT_TRUE(issued);
  std::vector<std::string> ids;
  for (int i = 0; i < 5; ++i) {
    auto s = gate->open_session(issued->token, kGateT0 + i);
    ASSERT_TRUE(s);
    ids.push_back(s->id);
  }
  EXPECT_EQ(gate->sessions(), 3u);
  EXPECT_FALSE(gate->by_session(ids[0], kGateT0 + 5)) << "the oldest went first";
  EXPECT_TRUE(gate->by_session(ids[4], kGateT0 + 5));
}

TEST_F(GateTest, AWriteIsRecordedWithItsCallerAndTheOperatorTokensOfALastStartAreRevoked) {
  auto gate = open();
  const Principal who{"pat", Role::PlatformAdmin, "", "0123456789abcdef"};
  ASSERT_TRUE(gate->record_write(who, "POST", "/api/v1/clock", R"({"action":"pause"})", kGateT0));
  auto a = gate->issue(GrantRequest{"op", Role::PlatformAdmin, "", "gpubank-up", std::nullopt}, kGateT0);
  auto b = gate->issue(GrantRequest{"op", Role::PlatformAdmin, "", "someone", std::nullopt}, kGateT0);
  ASSERT_TRUE(a && b);
  auto revoked = gate->revoke_issued("gpubank-up", "op", kGateT0 + 1);
  ASSERT_TRUE(revoked) << revoked.error();
  EXPECT_EQ(*revoked, 1);
  EXPECT_FALSE(gate->by_token(a->token, kGateT0 + 2));
  EXPECT_TRUE(gate->by_token(b->token, kGateT0 + 2));

  auto store = store::Store::open(location());
  ASSERT_TRUE(store);
  auto audit = (*store)->audit(0, 100);
  ASSERT_TRUE(audit);
  ASSERT_FALSE(audit->empty());
  EXPECT_EQ(audit->front().action, kWriteAction);
  EXPECT_EQ(audit->front().actor, "pat");
  EXPECT_EQ(audit->front().object, "/api/v1/clock");
  const auto verified = store::verify_store(**store);
  ASSERT_TRUE(verified) << verified.error();
  EXPECT_TRUE(verified->ok());
}

}  // namespace
}  // namespace gpubank::auth
