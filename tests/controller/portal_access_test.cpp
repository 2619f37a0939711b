// The controller's portal (api/cluster_server.hpp) as an attacker and as every role sees
// it, against a FAKE API server (portal_fixture.hpp): each endpoint with each role and
// with no credentials; malformed, oversized, chunked, mistyped and unknown-field bodies;
// unknown and repeated query parameters; path traversal on the portal's assets; a browser
// session's write without its CSRF token.
#include <gtest/gtest.h>
#include <httplib.h>

#include <map>

#include "portal_fixture.hpp"

namespace gpubank::controller {
namespace {

using nlohmann::json;
using k8s::testing::eventually;
using testing::ControllerPortal;

class ControllerPortalAccess : public ControllerPortal {
 protected:
  void SetUp() override {
    ControllerPortal::SetUp();
    tokens_["viewer-research"] = token(auth::Role::Viewer, "research", "vic");
    tokens_["viewer-ads"] = token(auth::Role::Viewer, "ads", "ann");
    tokens_["group-admin-research"] = token(auth::Role::GroupAdmin, "research", "rae");
    tokens_["finops"] = token(auth::Role::FinOps, "", "fin");
    tokens_["platform-admin"] = token(auth::Role::PlatformAdmin, "", "pat");
  }
  int status(const std::string& who, const std::string& method, const std::string& path, const std::string& body = "{}") {
    httplib::Client c("127.0.0.1", port_);
    c.set_read_timeout(60, 0);
    if (!who.empty()) c.set_bearer_token_auth(tokens_.at(who));
    auto res = method == "GET" ? c.Get(path) : c.Post(path, body, "application/json");
    EXPECT_TRUE(res) << method << " " << path;
    return res ? res->status : -1;
  }
  std::map<std::string, std::string> tokens_;
};

TEST_F(ControllerPortalAccess, EveryEndpointWithEveryRole) {
  const std::string doc = edited_document(tokens_.at("platform-admin"), "maxCapacity: 32", "maxCapacity: 30");
  json preview = json::parse(doc);
  preview.erase("comment");
  struct Row {
    std::string method, path;
    std::map<std::string, int> expected;  // by role; "" is no credentials
  };
  const std::vector<std::string> roles{"", "viewer-research", "viewer-ads", "group-admin-research", "finops", "platform-admin"};
  auto all = [&](int anonymous, int everyone) {
    std::map<std::string, int> m;
    for (const auto& r : roles) m[r] = r.empty() ? anonymous : everyone;
    return m;
  };
  std::vector<Row> rows{
      {"GET", "/api/v1/session", all(401, 200)},
      {"GET", "/api/v1/pools", all(401, 200)},
      {"GET", "/api/v1/groups", all(401, 200)},
      {"GET", "/api/v1/queues", all(401, 200)},
      {"GET", "/api/v1/workloads", all(401, 200)},
      {"GET", "/api/v1/ledger", all(401, 200)},
      {"GET", "/api/v1/reclaims", all(401, 200)},
      {"GET", "/api/v1/clock", all(401, 200)},
      {"GET", "/api/v1/governance/alerts", all(401, 200)},
      {"GET", "/api/v1/policies", all(401, 200)},
      {"GET", "/api/v1/policies/GPUQuotaPolicy/research-training-h100", all(401, 200)},
      {"GET", "/api/v1/proposals", all(401, 200)},
      {"POST", "/api/v1/proposals/preview", all(401, 404)},  // no --preview-inventory: preview.off
  };
  Row other{"GET", "/api/v1/workloads?businessGroup=research", all(401, 200)};
  other.expected["viewer-ads"] = 403;
  rows.push_back(other);
  Row propose{"POST", "/api/v1/proposals", all(401, 403)};  // viewers and finops may not propose
  propose.expected["group-admin-research"] = 201;
  propose.expected["platform-admin"] = 201;
  for (const Row& r : rows) {
    for (const auto& [who, want] : r.expected) {
      const std::string body = r.path.ends_with("preview") ? preview.dump() : "{}";
      EXPECT_EQ(status(who, r.method, r.path, body), want) << r.method << " " << r.path << " as " << (who.empty() ? "nobody" : who);
    }
  }
  // Proposing: the research admin's change waits or applies; each later one is refused as
  // no change or made; what matters here is who gets through the door.
  for (const auto& [who, want] : propose.expected) {
    const int got = status(who, "POST", "/api/v1/proposals", doc);
    if (want == 201) {
      EXPECT_TRUE(got == 201 || got == 422) << who << ": " << got;  // 422: the same change again
    } else {
      EXPECT_EQ(got, want) << "POST /api/v1/proposals as " << (who.empty() ? "nobody" : who);
    }
  }
  // Deciding is the platform administrator's alone.
  auto listed = json::parse([&] {
    httplib::Client c("127.0.0.1", port_);
    c.set_bearer_token_auth(tokens_.at("platform-admin"));
    return c.Get("/api/v1/proposals")->body;
  }());
  ASSERT_FALSE(listed["items"].empty());
  const std::string id = listed["items"][0]["id"];
  for (const auto& who : roles) {
    if (who == "platform-admin") continue;
    EXPECT_EQ(status(who, "POST", "/api/v1/proposals/" + id + "/reject", "{}"), who.empty() ? 401 : 403) << who;
  }
  // The portal's page and the health check need nothing.
  httplib::Client anonymous("127.0.0.1", port_);
  EXPECT_EQ(anonymous.Get("/")->status, 200);
  EXPECT_EQ(anonymous.Get("/healthz")->status, 200);
  EXPECT_EQ(anonymous.Get("/portal/app.js")->status, 200);
}

TEST_F(ControllerPortalAccess, HostileRequestsAreRefusedWithTheRule) {
  httplib::Client c("127.0.0.1", port_);
  c.set_read_timeout(60, 0);
  c.set_bearer_token_auth(tokens_.at("platform-admin"));
  auto rule = [](const httplib::Result& res) {
    const json j = json::parse(res->body, nullptr, false);
    return j.is_object() ? j.value("rule", "") : std::string("(not JSON) ") + res->body.substr(0, 80);
  };
  auto post = [&](const std::string& path, const std::string& body) { return c.Post(path, body, "application/json"); };

  auto r = post("/api/v1/proposals", "{\"document\": ");
  EXPECT_EQ(r->status, 400);
  EXPECT_EQ(rule(r), "request.invalid-json");
  r = post("/api/v1/proposals", R"({"document": "x", "sneaky": 1})");
  EXPECT_EQ(r->status, 400);
  EXPECT_EQ(rule(r), "request.unknown-field");
  r = post("/api/v1/proposals", R"({"document": 7})");
  EXPECT_EQ(r->status, 400);
  EXPECT_EQ(rule(r), "request.wrong-type");
  r = post("/api/v1/proposals/preview", R"({"document": "x", "hours": "many"})");
  EXPECT_EQ(r->status, 400);
  EXPECT_EQ(rule(r), "request.wrong-type");
  // Over the route's limit: by its declared length, and chunked (no length) as it arrives.
  r = post("/api/v1/proposals", std::string(200 * 1024, 'x'));
  EXPECT_EQ(r->status, 413);
  EXPECT_EQ(rule(r), "request.too-large");
  {
    std::size_t sent = 0;
    auto chunked = c.Post("/api/v1/proposals/0000000000000000/approve", [&](size_t, httplib::DataSink& sink) {
      const std::string piece(16 * 1024, ' ');
      if (sent < 10) {
        ++sent;
        sink.write(piece.data(), piece.size());
      } else {
        sink.done();
      }
      return true;
    }, "application/json");
    ASSERT_TRUE(chunked);
    EXPECT_EQ(chunked->status, 413) << chunked->body;
  }
  // Query parameters: unknown, repeated, out of range, over long.
  EXPECT_EQ(c.Get("/api/v1/pools?x=1")->status, 400);
  EXPECT_EQ(c.Get("/api/v1/workloads?state=Running&state=Pending")->status, 400);
  EXPECT_EQ(c.Get("/api/v1/ledger?limit=100000")->status, 400);
  EXPECT_EQ(c.Get("/api/v1/workloads?businessGroup=" + std::string(300, 'a'))->status, 400);
  // Paths: traversal finds nothing, an unknown proposal is 404, an id of the wrong shape no route.
  for (const char* path : {"/portal/../../etc/passwd", "/portal/%2e%2e/%2e%2e/etc/passwd", "/portal/..%2fCMakeLists.txt",
                           "/portal/.hidden.js"}) {
    auto res = c.Get(path);
    ASSERT_TRUE(res) << path;
    EXPECT_EQ(res->status, 404) << path;
    EXPECT_EQ(res->body.find("root:"), std::string::npos) << path;
  }
  EXPECT_EQ(post("/api/v1/proposals/0123456789abcdef/approve", "{}")->status, 404);
  EXPECT_EQ(c.Get("/api/v1/workloads/research/nothing")->status, 404);
  // A forged token is 401, whatever it claims.
  httplib::Client forged("127.0.0.1", port_);
  forged.set_bearer_token_auth("gpb_" + std::string(64, '0'));
  EXPECT_EQ(forged.Get("/api/v1/policies")->status, 401);
}

TEST_F(ControllerPortalAccess, ABrowserSessionWritesOnlyWithItsCsrfToken) {
  httplib::Client c("127.0.0.1", port_);
  auto signed_in = c.Post("/api/v1/session", json{{"token", tokens_.at("group-admin-research")}}.dump(), "application/json");
  ASSERT_TRUE(signed_in);
  ASSERT_EQ(signed_in->status, 200) << signed_in->body;
  const std::string cookie = signed_in->get_header_value("Set-Cookie");
  const std::string session = cookie.substr(0, cookie.find(';'));
  const std::string csrf = json::parse(signed_in->body)["csrfToken"];
  const std::string doc = edited_document(tokens_.at("group-admin-research"), "maxCapacity: 32", "maxCapacity: 30");
  auto without = c.Post("/api/v1/proposals", httplib::Headers{{"Cookie", session}}, doc, "application/json");
  ASSERT_TRUE(without);
  EXPECT_EQ(without->status, 403) << without->body;
  auto with = c.Post("/api/v1/proposals", httplib::Headers{{"Cookie", session}, {"X-CSRF-Token", csrf}}, doc, "application/json");
  ASSERT_TRUE(with);
  EXPECT_EQ(with->status, 201) << with->body;
  // The answer says the server is the controller's.
  auto me = c.Get("/api/v1/session", httplib::Headers{{"Cookie", session}});
  EXPECT_EQ(json::parse(me->body)["server"]["kind"], "controller");
}

}  // namespace
}  // namespace gpubank::controller

namespace gpubank::controller {
namespace {

// Sign-in by a trusted OIDC proxy on a cluster: roles from the cluster's PlatformGuardrails
// as they are at each request (a kubectl edit of the guardrails changes who is who).
class ControllerPortalProxy : public ControllerPortal {
 protected:
  void configure(api::ClusterServerOptions& server) override {
    api::ProxyAuth proxy;
    proxy.user_header = "X-Forwarded-User";
    proxy.groups_header = "X-Forwarded-Groups";
    proxy.trusted_from = {"127.0.0.1"};
    server.proxy = proxy;
  }
  httplib::Result as(const std::string& user, const std::string& groups, const std::string& method, const std::string& path,
                     const std::string& body = "", bool requested_with = false) {
    httplib::Client c("127.0.0.1", port_);
    httplib::Headers headers{{"X-Forwarded-User", user}, {"X-Forwarded-Groups", groups}};
    if (requested_with) headers.emplace("X-Requested-With", "gpubank");
    return method == "GET" ? c.Get(path, headers) : c.Post(path, headers, body, "application/json");
  }
};

TEST_F(ControllerPortalProxy, ProxiedUsersGetTheirRolesFromTheClustersGuardrails) {
  auto me = as("pat", "gpubank-platform-admins", "GET", "/api/v1/session");
  ASSERT_TRUE(me);
  ASSERT_EQ(me->status, 200) << me->body;
  EXPECT_EQ(json::parse(me->body)["role"], "platform-admin");
  me = as("rae", "research-admins", "GET", "/api/v1/session");
  ASSERT_EQ(me->status, 200) << me->body;
  EXPECT_EQ(json::parse(me->body)["role"], "group-admin");
  EXPECT_EQ(json::parse(me->body)["group"], "research");
  auto nobody = as("zed", "strangers", "GET", "/api/v1/policies");
  EXPECT_EQ(nobody->status, 403);
  EXPECT_EQ(json::parse(nobody->body)["rule"], "auth.no-role");

  // A write through the proxy needs the header no cross-site form can send.
  const std::string doc = edited_document(token(auth::Role::PlatformAdmin, "", "pat"), "maxCapacity: 32", "maxCapacity: 30");
  auto forged = as("rae", "research-admins", "POST", "/api/v1/proposals", doc);
  EXPECT_EQ(forged->status, 403);
  EXPECT_EQ(json::parse(forged->body)["rule"], "auth.csrf");
  auto made = as("rae", "research-admins", "POST", "/api/v1/proposals", doc, true);
  EXPECT_EQ(made->status, 201) << made->body;

  // The guardrails on the cluster change: research's admins are another group now.
  json guardrails;
  for (const json& g : objects("platform.gpubank.dev/v1alpha1", "PlatformGuardrails")) guardrails = g;
  ASSERT_FALSE(guardrails.is_null());
  for (json& g : guardrails["spec"]["groups"]) {
    if (g["name"] == "research") g["admins"] = json::array({"group:research-leads"});
  }
  put_object(guardrails);
  ASSERT_TRUE(eventually([&] {
    auto res = as("rae", "research-admins", "GET", "/api/v1/session");
    return res && res->status == 403;
  }));
  me = as("lee", "research-leads", "GET", "/api/v1/session");
  ASSERT_EQ(me->status, 200) << me->body;
  EXPECT_EQ(json::parse(me->body)["role"], "group-admin");
}

}  // namespace
}  // namespace gpubank::controller
