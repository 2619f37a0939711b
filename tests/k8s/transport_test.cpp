// The transport against the fake API server: TLS trust, client certificates, bearer
// tokens and their refresh, retries (Retry-After, backoff caps) with recorded sleeps,
// limits, Status errors and keep-alive.
#include <gtest/gtest.h>

#include "fake_client.hpp"
#include "fixture.hpp"
#include "payloads.hpp"

namespace gpubank::k8s {
// The alias src/k8s/watch_event.hpp declares (a unity build may include it after this file).
using Json = nlohmann::json;
namespace {

using namespace testing;
using std::chrono::milliseconds;

TEST(Backoff, DoublesWithJitterUpToTheCap) {
  RetryPolicy p;
  p.initial_delay = milliseconds(100);
  p.max_delay = milliseconds(1000);
  p.jitter = 0.5;
  EXPECT_EQ(backoff_delay(p, 0, 0.0), milliseconds(100));
  EXPECT_EQ(backoff_delay(p, 0, 0.5), milliseconds(125));
  EXPECT_EQ(backoff_delay(p, 2, 0.0), milliseconds(400));
  EXPECT_EQ(backoff_delay(p, 3, 0.99), milliseconds(1000));
  EXPECT_EQ(backoff_delay(p, 60, 0.0), milliseconds(1000));
}

TEST(StatusError, CarriesTheStatusObject) {
  const auto e = error_from_response(
      410, R"j({"kind":"Status","apiVersion":"v1","status":"Failure","message":"too old resource version: 5 (9)","reason":"Expired","code":410})j");
  EXPECT_EQ(e.http_status, 410);
  EXPECT_EQ(e.reason, "Expired");
  EXPECT_EQ(e.message, "too old resource version: 5 (9)");
  EXPECT_EQ(e.code, 410);
  EXPECT_FALSE(e.retryable);
  const auto html = error_from_response(502, "<html>bad gateway</html>");
  EXPECT_EQ(html.reason, "Bad Gateway");
  EXPECT_EQ(html.message, "response body: <html>bad gateway</html>");
  EXPECT_TRUE(html.retryable);
}

TEST(Transport, TlsWithTheConfiguredCaAndTokenReusesOneConnection) {
  FakeApiServer fake({});
  SleepLog sleeps;
  auto t = make_transport(config_for(fake), sleeps);
  ASSERT_TRUE(t);
  for (int i = 0; i < 3; ++i) {
    auto res = t->get("/version");
    ASSERT_TRUE(res.ok()) << res.error().describe();
    EXPECT_EQ(res->status, 200);
    EXPECT_EQ(Json::parse(res->body)["gitVersion"], "v1.32.0-fake");
  }
  EXPECT_EQ(t->connections_opened(), 1u);
  EXPECT_EQ(fake.connections(), 1u);
  EXPECT_TRUE(sleeps.get().empty());
}

TEST(Transport, AnUntrustedServerCertificateFailsTheHandshakeWithoutRetries) {
  FakeApiServer fake({});
  SleepLog sleeps;
  auto config = config_for(fake);
  config.ca_pem = other_pem().cert;
  auto t = make_transport(config, sleeps);
  auto res = t->get("/version");
  ASSERT_FALSE(res.ok());
  EXPECT_EQ(res.error().reason, "TLSHandshake");
  EXPECT_NE(res.error().message.find("certificate verify failed"), std::string::npos) << res.error().describe();
  EXPECT_EQ(fake.requests(), 0u);
  EXPECT_TRUE(sleeps.get().empty());
}

TEST(Transport, AWrongVerificationNameFailsTheHandshake) {
  FakeApiServer fake({});
  SleepLog sleeps;
  auto config = config_for(fake);
  config.tls_server_name = "kubernetes.default.svc";  // not in the fake's certificate
  auto t = make_transport(config, sleeps);
  auto res = t->get("/version");
  ASSERT_FALSE(res.ok());
  EXPECT_EQ(res.error().reason, "TLSHandshake");
  config.tls_server_name = "localhost";  // in its subjectAltName
  auto ok = make_transport(config, sleeps)->get("/version");
  EXPECT_TRUE(ok.ok()) << ok.error().describe();
}

TEST(Transport, ClientCertificateAuthenticates) {
  FakeApiServer::Options certificates_only;
  certificates_only.tokens = {};
  certificates_only.client_ca_pem = client_pem().cert;
  FakeApiServer fake(certificates_only);
  SleepLog sleeps;
  auto config = config_for(fake, "");
  config.client_certificate_pem = client_pem().cert;
  config.client_key_pem = client_pem().key;
  auto res = make_transport(config, sleeps)->get("/api/v1/pods");
  ASSERT_TRUE(res.ok()) << res.error().describe();
  EXPECT_EQ(Json::parse(res->body)["kind"], "PodList");

  auto anonymous = make_transport(config_for(fake, ""), sleeps)->get("/api/v1/pods");
  ASSERT_FALSE(anonymous.ok());
  EXPECT_EQ(anonymous.error().http_status, 401);
  EXPECT_EQ(anonymous.error().reason, "Unauthorized");
  EXPECT_EQ(anonymous.error().request, "GET /api/v1/pods");
}

// A rotated token: the first read is stale, expire() makes the next one fresh.
class RotatingToken final : public TokenSource {
 public:
  Expected<std::string> token() override { return fresh_ ? std::string("fake-token") : std::string("stale"); }
  void expire() override {
    fresh_ = true;
    ++expired;
  }
  int expired = 0;

 private:
  bool fresh_ = false;
};

TEST(Transport, A401ExpiresTheTokenSourceOnceAndSendsAgain) {
  FakeApiServer fake({});
  SleepLog sleeps;
  auto config = config_for(fake, "");
  auto token = std::make_shared<RotatingToken>();
  config.token = token;
  auto t = make_transport(config, sleeps);
  auto res = t->get("/api/v1/nodes");
  ASSERT_TRUE(res.ok()) << res.error().describe();
  EXPECT_EQ(token->expired, 1);
  EXPECT_EQ(fake.unauthorized(), 1u);
  EXPECT_TRUE(sleeps.get().empty());

  // A token that stays wrong: one refresh, then the 401 is the answer.
  auto bad = make_transport(config_for(fake, "wrong"), sleeps)->get("/api/v1/nodes");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().http_status, 401);
  EXPECT_EQ(fake.unauthorized(), 3u);
}

TEST(Transport, Honours429RetryAfterAndCapsIt) {
  FakeApiServer fake({});
  SleepLog sleeps;
  TransportOptions options;
  options.retry.max_retry_after = std::chrono::seconds(10);
  auto t = make_transport(config_for(fake), sleeps, options);
  fake.fail_next(2, 429, 3);
  auto res = t->get("/version");
  ASSERT_TRUE(res.ok()) << res.error().describe();
  EXPECT_EQ(sleeps.get(), (std::vector<milliseconds>{std::chrono::seconds(3), std::chrono::seconds(3)}));
  fake.fail_next(1, 429, 3600);
  ASSERT_TRUE(t->get("/version").ok());
  EXPECT_EQ(sleeps.get().back(), std::chrono::seconds(10));
}

TEST(Transport, BacksOffOn5xxUpToTheCapThenGivesUp) {
  FakeApiServer fake({});
  SleepLog sleeps;
  TransportOptions options;
  options.retry.max_attempts = 6;
  options.retry.initial_delay = milliseconds(100);
  options.retry.max_delay = milliseconds(400);
  options.retry.jitter = 0.2;
  auto t = make_transport(config_for(fake), sleeps, options);
  fake.fail_next(100, 500);
  auto res = t->get("/api/v1/pods");
  ASSERT_FALSE(res.ok());
  EXPECT_EQ(res.error().http_status, 500);
  EXPECT_EQ(res.error().reason, "InternalError");
  EXPECT_NE(res.error().describe().find("gave up after 6 attempts"), std::string::npos) << res.error().describe();
  const auto waits = sleeps.get();
  ASSERT_EQ(waits.size(), 5u);
  EXPECT_GE(waits[0], milliseconds(100));
  EXPECT_LT(waits[0], milliseconds(120));
  EXPECT_GE(waits[1], milliseconds(200));
  EXPECT_LT(waits[1], milliseconds(240));
  for (std::size_t i = 2; i < waits.size(); ++i) EXPECT_EQ(waits[i], milliseconds(400)) << i;
  EXPECT_EQ(fake.requests(), 6u);
}

TEST(Transport, RetriesARefusedConnection) {
  std::uint16_t port = 0;
  {
    FakeApiServer gone({});
    port = static_cast<std::uint16_t>(std::stoi(gone.url().substr(gone.url().rfind(':') + 1)));
  }
  FakeApiServer fake({});
  auto config = config_for(fake);
  config.server.port = port;  // nothing listens there any more
  SleepLog sleeps;
  TransportOptions options;
  options.retry.max_attempts = 3;
  auto res = make_transport(config, sleeps, options)->get("/version");
  ASSERT_FALSE(res.ok());
  EXPECT_EQ(res.error().reason, "ConnectionFailed");
  EXPECT_EQ(sleeps.get().size(), 2u);
}

TEST(Transport, CapsTheResponseBody) {
  FakeApiServer fake({});
  for (int i = 0; i < 20; ++i) fake.put("pods", pod_json("team-a", "train-" + std::to_string(i)));
  SleepLog sleeps;
  TransportOptions options;
  options.max_body_bytes = 16 * 1024;
  auto t = make_transport(config_for(fake), sleeps, options);
  auto res = t->get("/api/v1/pods");
  ASSERT_FALSE(res.ok());
  EXPECT_EQ(res.error().reason, "BodyTooLarge");
  EXPECT_NE(res.error().message.find("16384 bytes limit (TransportOptions::max_body_bytes)"), std::string::npos)
      << res.error().describe();
  EXPECT_TRUE(sleeps.get().empty());
  EXPECT_TRUE(t->get("/api/v1/pods?limit=1").ok());  // a fresh connection afterwards
}

TEST(Transport, NotFoundCarriesTheStatus) {
  FakeApiServer fake({});
  SleepLog sleeps;
  auto res = make_transport(config_for(fake), sleeps)->get("/api/v1/namespaces/team-a/pods/missing");
  ASSERT_FALSE(res.ok());
  EXPECT_EQ(res.error().http_status, 404);
  EXPECT_EQ(res.error().reason, "NotFound");
  EXPECT_EQ(res.error().message, "pods \"missing\" not found");
  EXPECT_EQ(res.error().describe(), "GET /api/v1/namespaces/team-a/pods/missing: 404 NotFound: pods \"missing\" not found");
}

TEST(Transport, PlainHttpToALoopbackFake) {
  FakeApiServer::Options plain;
  plain.tls = false;
  FakeApiServer fake(plain);
  SleepLog sleeps;
  auto config = config_for(fake);
  EXPECT_EQ(config.server.scheme, "http");
  auto res = make_transport(config, sleeps)->get("/apis");
  ASSERT_TRUE(res.ok()) << res.error().describe();
  EXPECT_EQ(Json::parse(res->body)["kind"], "APIGroupList");
}

TEST(Transport, StreamsWatchLinesAndCapsThem) {
  FakeApiServer fake({});
  fake.put("pods", pod_json("team-a", "a"));
  fake.put("pods", pod_json("team-a", "b"));
  SleepLog sleeps;
  auto t = make_transport(config_for(fake), sleeps);
  std::vector<std::string> types;
  auto res = t->stream("/api/v1/pods?watch=true&resourceVersion=0", [&](std::string_view line) {
    types.push_back(Json::parse(line)["type"]);
    return types.size() < 2;
  });
  ASSERT_TRUE(res.ok()) << res.error().describe();
  EXPECT_EQ(types, (std::vector<std::string>{"ADDED", "ADDED"}));

  TransportOptions small;
  small.max_watch_line_bytes = 1024;
  auto capped = make_transport(config_for(fake), sleeps, small)
                    ->stream("/api/v1/pods?watch=true&resourceVersion=0", [](std::string_view) { return true; });
  ASSERT_FALSE(capped.ok());
  EXPECT_EQ(capped.error().reason, "LineTooLong");
  EXPECT_NE(capped.error().message.find("max_watch_line_bytes"), std::string::npos);
}

}  // namespace
}  // namespace gpubank::k8s
