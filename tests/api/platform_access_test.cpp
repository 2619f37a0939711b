// Who may do what on `gpubank up`'s API (api/access.hpp, auth/gate.hpp): every endpoint
// tried with no credentials and with each role, a viewer's view cut to its group, browser
// sessions with their CSRF token, revocation, the rate limit, the audit record of writes,
// and hostile requests (bad JSON, oversized bodies, forged cookies, path traversal).
#include <gtest/gtest.h>

#include <httplib.h>

#include <set>
#include <string>
#include <vector>

#include "platform_fixture.hpp"
#include "portal/assets.hpp"
#include "store/store.hpp"

namespace gpubank::api {
namespace {

using nlohmann::json;

// ads's quota with a lower borrowing limit: a change that gives back (applies at once).
const std::string kAdsGiveBack =
    "apiVersion: platform.gpubank.dev/v1alpha1\nkind: GPUQuotaPolicy\nmetadata: {name: ads-training-h100}\nspec:\n"
    "  businessGroup: ads\n  resourcePool: h100-rdma-training\n  guaranteed: 16\n  borrowLimit: 8\n  maxCapacity: 24\n"
    "  reclaimPolicy: {gracePeriod: 10m, onlyPreempt: [checkpointable]}\n";
// ads's quota back to the examples' numbers after kAdsGiveBack: takes more, waits.
const std::string kAdsTakeMore =
    "apiVersion: platform.gpubank.dev/v1alpha1\nkind: GPUQuotaPolicy\nmetadata: {name: ads-training-h100}\nspec:\n"
    "  businessGroup: ads\n  resourcePool: h100-rdma-training\n  guaranteed: 16\n  borrowLimit: 16\n  maxCapacity: 32\n"
    "  reclaimPolicy: {gracePeriod: 10m, onlyPreempt: [checkpointable]}\n";

class PlatformAccessTest : public PlatformServerTest {
 protected:
  [[nodiscard]] bool with_governance() const override { return true; }
  [[nodiscard]] auth::GateOptions gate_options() const override {
    auth::GateOptions o;
    o.refresh_every_ms = 0;  // every request re-reads the grants: revocation is immediate
    return o;
  }
  void SetUp() override {
    PlatformServerTest::SetUp();
    if (HasFatalFailure()) return;
    viewer_ = token(auth::Role::Viewer, "ads", "vic");
    group_admin_ = token(auth::Role::GroupAdmin, "ads", "ada");
    finops_ = token(auth::Role::FinOps, "", "fin");
    // An hour of the day: workloads of every group, a ledger, a governance period.
    post_clock(R"({"action": "step", "step": "1h"})");
  }
  struct Answer {
    int status = 0;
    std::string body;
    httplib::Headers headers;
  };
  Answer call(const std::string& bearer, const std::string& method, const std::string& path,
              const std::string& body = "", const httplib::Headers& headers = {}) {
    auto c = client(bearer);
    httplib::Result res = method == "GET"      ? c->Get(path, headers)
                          : method == "DELETE" ? c->Delete(path, headers)
                                               : c->Post(path, headers, body, "application/json");
    EXPECT_TRUE(res) << method << " " << path;
    if (!res) return {};
    return {res->status, res->body, res->headers};
  }
  std::vector<bank::AuditEntry> writes() {
    auto store = store::Store::open((dir_ / "auth.db").string());
    EXPECT_TRUE(store) << store.error();
    std::vector<bank::AuditEntry> out;
    if (!store) return out;
    auto all = (*store)->audit(0, 100000);
    EXPECT_TRUE(all);
    for (auto& e : *all) {
      if (e.action == auth::kWriteAction) out.push_back(e);
    }
    return out;
  }

  std::string viewer_, group_admin_, finops_;
};

// The table of api/access.hpp, endpoint by endpoint. 0 in a row: "answered, not refused"
// (a write whose outcome depends on the state: anything but 401, 403 and 429).
TEST_F(PlatformAccessTest, EveryEndpointAnswersEachRoleAsTheTableSays) {
  const json search_workloads = get("/api/v1/workloads?businessGroup=search");
  ASSERT_TRUE(search_workloads.is_array() && !search_workloads.empty());
  const std::string search_workload = search_workloads[0]["workload"];
  const json gpus = get("/api/v1/gpus");
  ASSERT_TRUE(gpus.is_array() && !gpus.empty());
  const std::string uuid = gpus[0]["uuid"];

  struct Row {
    std::string method, path, body;
    int anonymous, viewer, group_admin, finops, admin;
  };
  const std::vector<Row> rows{
      {"GET", "/healthz", "", 200, 200, 200, 200, 200},
      {"GET", "/readyz", "", 200, 200, 200, 200, 200},
      {"GET", "/", "", 200, 200, 200, 200, 200},
      {"GET", "/metrics", "", 401, 403, 403, 200, 200},
      {"GET", "/api/v1/pools", "", 401, 200, 200, 200, 200},
      {"GET", "/api/v1/groups", "", 401, 200, 200, 200, 200},
      {"GET", "/api/v1/queues", "", 401, 200, 200, 200, 200},
      {"GET", "/api/v1/services", "", 401, 200, 200, 200, 200},
      {"GET", "/api/v1/summary", "", 401, 200, 200, 200, 200},
      {"GET", "/api/v1/clock", "", 401, 200, 200, 200, 200},
      {"GET", "/api/v1/workloads", "", 401, 200, 200, 200, 200},
      {"GET", "/api/v1/workloads?businessGroup=ads", "", 401, 200, 200, 200, 200},
      {"GET", "/api/v1/workloads?businessGroup=search", "", 401, 403, 403, 200, 200},
      {"GET", "/api/v1/workloads/" + search_workload, "", 401, 403, 403, 200, 200},
      {"GET", "/api/v1/workloads/" + search_workload + "/history", "", 401, 403, 403, 200, 200},
      {"GET", "/api/v1/workloads/" + search_workload + "/history?from=2026-12-01T10:00:00Z&to=2026-12-01T09:00:00Z", "", 401, 400, 400, 400, 400},
      {"GET", "/api/v1/workloads/nobody/nothing/history", "", 401, 404, 404, 404, 404},
      {"GET", "/api/v1/events", "", 401, 200, 200, 200, 200},
      {"GET", "/api/v1/events?businessGroup=search", "", 401, 403, 403, 200, 200},
      {"GET", "/api/v1/ledger", "", 401, 200, 200, 200, 200},
      {"GET", "/api/v1/reclaims", "", 401, 200, 200, 200, 200},
      {"GET", "/api/v1/reclaims?limit=0", "", 401, 400, 400, 400, 400},
      {"GET", "/api/v1/audit", "", 401, 403, 403, 200, 200},
      {"GET", "/api/v1/gpus", "", 401, 200, 200, 200, 200},
      {"GET", "/api/v1/gpus/" + uuid, "", 401, 200, 200, 200, 200},
      {"GET", "/api/v1/gpus/" + uuid + "/history", "", 401, 200, 200, 200, 200},
      {"GET", "/api/v1/gpus/" + uuid + "/history?from=yesterday", "", 401, 400, 400, 400, 400},
      {"GET", "/api/v1/gpus/GPU-none/history", "", 401, 404, 404, 404, 404},
      // Every group's position is open to every role, as /api/v1/groups is.
      {"GET", "/api/v1/groups/search/history", "", 401, 200, 200, 200, 200},
      {"GET", "/api/v1/groups/search/history?from=2026-11-29T00:00:00Z&to=2026-12-01T00:00:00Z", "", 401, 400, 400, 400, 400},
      {"GET", "/api/v1/groups/nobody/history", "", 401, 404, 404, 404, 404},
      {"GET", "/api/v1/pools/h100-rdma-training/history", "", 401, 200, 200, 200, 200},
      {"GET", "/api/v1/pools/nowhere/history", "", 401, 404, 404, 404, 404},
      {"GET", "/api/v1/services/customer-service-llm/history", "", 401, 200, 200, 200, 200},
      {"GET", "/api/v1/services/no-such-policy/history", "", 401, 404, 404, 404, 404},
      {"GET", "/api/v1/services/customer-service-llm/capacity", "", 401, 200, 200, 200, 200},
      {"GET", "/api/v1/services/no-such-policy/capacity", "", 401, 404, 404, 404, 404},
      {"GET", "/api/v1/governance/alerts", "", 401, 200, 200, 200, 200},
      {"GET", "/api/v1/governance/kpis", "", 401, 200, 200, 200, 200},
      {"GET", "/api/v1/governance/leaderboard", "", 401, 200, 200, 200, 200},
      {"GET", "/api/v1/governance/showback", "", 401, 200, 200, 200, 200},
      {"GET", "/api/v1/governance/showback?level=owner", "", 401, 403, 200, 200, 200},
      {"GET", "/api/v1/governance/showback?level=workload", "", 401, 403, 200, 200, 200},
      {"GET", "/api/v1/governance/review", "", 401, 403, 403, 200, 200},
      {"GET", "/api/v1/session", "", 401, 200, 200, 200, 200},
      {"GET", "/api/v1/policies", "", 401, 200, 200, 200, 200},
      {"GET", "/api/v1/policies/GPUQuotaPolicy/ads-training-h100", "", 401, 200, 200, 200, 200},
      {"GET", "/api/v1/policies/GPUQuotaPolicy/no-such", "", 401, 404, 404, 404, 404},
      {"GET", "/api/v1/proposals", "", 401, 200, 200, 200, 200},
      {"GET", "/api/v1/proposals/0123456789abcdef", "", 401, 404, 404, 404, 404},
      // Only who may propose gets past the checks: a viewer and finops are refused by role.
      {"POST", "/api/v1/proposals", json{{"document", kAdsGiveBack}}.dump(), 401, 403, 201, 403, 0},
      {"POST", "/api/v1/proposals/0123456789abcdef/approve", "{}", 401, 403, 403, 403, 404},
      {"POST", "/api/v1/proposals/0123456789abcdef/reject", "{}", 401, 403, 403, 403, 404},
      {"GET", "/api/v1/no-such-path", "", 401, 404, 404, 404, 404},
      {"POST", "/api/v1/clock", R"({"action": "pause"})", 401, 403, 403, 403, 200},
      {"POST", "/api/v1/gpus/" + uuid + "/health", R"({"healthy": true})", 401, 403, 403, 403, 0},
      {"POST", "/api/v1/tidal/weekday-serving-training/freeze", "", 401, 403, 403, 403, 200},
      {"POST", "/api/v1/tidal/weekday-serving-training/unfreeze", "", 401, 403, 403, 403, 200},
      {"POST", "/api/v1/services/customer-service-llm/faults", R"({"modelLoadFailures": 1})", 401, 403, 403, 403, 200},
      // Who may decide on a reclaim gets to the alert, which does not exist here.
      {"POST", "/api/v1/governance/alerts/no-such-uid/decision", R"({"decision": "approve"})", 401, 403, 404, 403, 404},
      {"POST", "/api/v1/governance/alerts/no-such-uid/decision", R"({"decision": "maybe"})", 401, 403, 400, 403, 400},
      {"POST", "/api/v1/governance/alerts/no-such-uid/decision", R"({"decision": "approve", "downgradeTo": "low"})", 401, 403, 404, 403, 404},
      {"POST", "/api/v1/governance/alerts/no-such-uid/decision", R"({"decision": "reject", "downgradeTo": "low"})", 401, 403, 400, 403, 400},
  };
  const std::vector<std::pair<std::string, std::string>> callers{
      {"anonymous", ""}, {"viewer", viewer_}, {"group-admin", group_admin_}, {"finops", finops_}, {"platform-admin", admin_token_}};
  for (const Row& row : rows) {
    const int expected[] = {row.anonymous, row.viewer, row.group_admin, row.finops, row.admin};
    for (std::size_t i = 0; i < callers.size(); ++i) {
      const Answer a = call(callers[i].second, row.method, row.path, row.body);
      if (expected[i] == 0) {
        EXPECT_TRUE(a.status != 401 && a.status != 403 && a.status != 429)
            << row.method << " " << row.path << " as " << callers[i].first << ": " << a.status << " " << a.body;
      } else {
        EXPECT_EQ(a.status, expected[i]) << row.method << " " << row.path << " as " << callers[i].first << ": " << a.body;
      }
      if (a.status == 401 || a.status == 403) {
        const json error = json::parse(a.body, nullptr, false);
        EXPECT_TRUE(error.is_object() && error.contains("rule") && error.contains("error"))
            << row.path << " as " << callers[i].first << ": " << a.body;
      }
      if (a.status == 401) { EXPECT_FALSE(a.headers.find("WWW-Authenticate") == a.headers.end()) << row.path; }
    }
  }
}

TEST_F(PlatformAccessTest, AViewerSeesItsOwnGroupOnly) {
  post_clock(R"({"action": "step", "step": "7h"})");  // to 08:00 in Shanghai: reclaims have happened
  const json workloads = json::parse(call(viewer_, "GET", "/api/v1/workloads").body);
  ASSERT_TRUE(workloads.is_array());
  EXPECT_FALSE(workloads.empty());
  for (const json& w : workloads) EXPECT_EQ(w.value("businessGroup", ""), "ads") << w.dump();

  const json events = json::parse(call(viewer_, "GET", "/api/v1/events?limit=1000").body);
  ASSERT_TRUE(events.contains("items")) << events.dump();
  EXPECT_FALSE(events["items"].empty());
  for (const json& e : events["items"]) EXPECT_EQ(e.value("businessGroup", ""), "ads") << e.dump();

  // Who runs on a GPU: the group and state of every holder, the name of the own group's only.
  int others = 0, own = 0;
  const json gpus = json::parse(call(viewer_, "GET", "/api/v1/gpus").body);
  for (const json& g : gpus) {
    for (const json& w : g.value("workloads", json::array())) {
      if (w.value("businessGroup", "") == "ads") {
        ++own;
        EXPECT_TRUE(w.contains("workload"));
      } else {
        ++others;
        EXPECT_FALSE(w.contains("workload")) << w.dump();
        EXPECT_TRUE(w.contains("state"));
      }
    }
  }
  EXPECT_GT(others, 0);
  EXPECT_GT(own, 0);

  // A GPU's minutes: another group's holder is a group without a name, its events say when
  // and what but not which; the own group's stay whole, and so do the GPU's XID events.
  std::string shared_uuid;
  for (const json& g : get("/api/v1/gpus")) {
    const json full_history = get("/api/v1/gpus/" + g["uuid"].get<std::string>() + "/history");
    bool ads = false, other = false;
    for (const json& x : full_history["devices"][0]["samples"]) {
      if (x["workload"].is_null()) continue;
      (x["businessGroup"] == "ads" ? ads : other) = true;
    }
    if (other && !full_history["markers"].empty()) {
      shared_uuid = g["uuid"];
      if (ads) break;
    }
  }
  ASSERT_FALSE(shared_uuid.empty()) << "no GPU held by another group with events in the last 6 hours";
  const json seen = json::parse(call(viewer_, "GET", "/api/v1/gpus/" + shared_uuid + "/history").body);
  const json whole = get("/api/v1/gpus/" + shared_uuid + "/history");
  ASSERT_EQ(seen["devices"].size(), whole["devices"].size());
  ASSERT_EQ(seen["devices"][0]["samples"].size(), whole["devices"][0]["samples"].size());
  int hidden = 0;
  for (std::size_t i = 0; i < whole["devices"][0]["samples"].size(); ++i) {
    const json& a = whole["devices"][0]["samples"][i];
    const json& b = seen["devices"][0]["samples"][i];
    EXPECT_EQ(a["gpuUtilization"], b["gpuUtilization"]);
    if (a["workload"].is_null() || a["businessGroup"] == "ads") {
      EXPECT_EQ(a["workload"], b["workload"]);
    } else {
      EXPECT_TRUE(b["workload"].is_null()) << b.dump();
      EXPECT_EQ(a["businessGroup"], b["businessGroup"]);
      ++hidden;
    }
  }
  EXPECT_GT(hidden, 0);
  ASSERT_EQ(seen["markers"].size(), whole["markers"].size());
  for (const json& m : seen["markers"]) {
    if (m["businessGroup"] != "ads" && !m["kind"].get<std::string>().starts_with("Gpu")) {
      EXPECT_TRUE(m["object"].is_null()) << m.dump();
      EXPECT_EQ(m["message"], "");
    }
  }

  // Another group's position history: its minutes whole (positions are open to every role),
  // its workloads' events without which or why; its quota and lease events whole.
  int workload_markers = 0;
  for (const json& g : get("/api/v1/groups")) {
    const std::string name = g["name"];
    if (name == "ads") continue;
    const json all = get("/api/v1/groups/" + name + "/history");
    const json theirs = json::parse(call(viewer_, "GET", "/api/v1/groups/" + name + "/history").body);
    EXPECT_EQ(theirs["pools"], all["pools"]);
    ASSERT_EQ(theirs["markers"].size(), all["markers"].size());
    for (std::size_t i = 0; i < all["markers"].size(); ++i) {
      const json& a = all["markers"][i];
      const json& b = theirs["markers"][i];
      EXPECT_EQ(a["kind"], b["kind"]);
      if (a["object"].is_string() && a["object"].get<std::string>().starts_with("Workload/")) {
        ++workload_markers;
        EXPECT_TRUE(b["object"].is_null()) << b.dump();
        EXPECT_EQ(b["message"], "");
      } else {
        EXPECT_EQ(a, b);
      }
    }
  }
  EXPECT_GT(workload_markers, 0) << "no other group's workload event in its last 6 hours";

  const json ledger = json::parse(call(viewer_, "GET", "/api/v1/ledger?limit=1000").body);
  const json full = get("/api/v1/ledger?limit=1000");
  EXPECT_LT(ledger["items"].size(), full["items"].size());
  for (const json& e : ledger["items"]) {
    EXPECT_TRUE(e.value("businessGroup", "") == "ads" || e.value("lender", "") == "ads") << e.dump();
  }

  // Reclaims: the group's own as lender, or those that stopped its workloads; others'
  // victims without their names.
  const json all_reclaims = get("/api/v1/reclaims?limit=1000");
  const json reclaims = json::parse(call(viewer_, "GET", "/api/v1/reclaims?limit=1000").body);
  ASSERT_TRUE(reclaims.contains("items"));
  EXPECT_FALSE(all_reclaims["items"].empty()) << "the first eight hours have reclaims, or this checks nothing";
  EXPECT_LE(reclaims["items"].size(), all_reclaims["items"].size());
  for (const json& r : reclaims["items"]) {
    bool concerns = r["lender"] == "ads";
    for (const json& v : r["victims"]) {
      concerns |= v["businessGroup"] == "ads";
      EXPECT_EQ(v.contains("workload"), v["businessGroup"] == "ads") << v.dump();
    }
    EXPECT_TRUE(concerns) << r.dump();
  }
  for (const char* list : {"open", "resolved"}) {
    const json alerts = json::parse(call(viewer_, "GET", "/api/v1/governance/alerts").body);
    ASSERT_TRUE(alerts.contains(list)) << alerts.dump();
    for (const json& a : alerts[list]) EXPECT_EQ(a["evidence"].value("businessGroup", ""), "ads") << a.dump();
  }
  // A group-admin reads its own group's people, not another's.
  const json owners = json::parse(call(group_admin_, "GET", "/api/v1/governance/showback?level=owner").body);
  ASSERT_TRUE(owners.contains("rows"));
  EXPECT_FALSE(owners["rows"].empty());
  for (const json& r : owners["rows"]) EXPECT_EQ(r.value("businessGroup", ""), "ads") << r.dump();
}

TEST_F(PlatformAccessTest, ASessionNeedsItsCsrfTokenToWriteAndEndsWithItsToken) {
  const Answer opened = call("", "POST", "/api/v1/session", json{{"token", admin_token_}}.dump());
  ASSERT_EQ(opened.status, 200) << opened.body;
  const json session = json::parse(opened.body);
  EXPECT_EQ(session["subject"], "pat");
  EXPECT_EQ(session["role"], "platform-admin");
  const std::string csrf = session["csrfToken"];
  EXPECT_EQ(csrf.size(), 64u);
  const std::string cookie = opened.headers.find("Set-Cookie")->second;
  EXPECT_NE(cookie.find("HttpOnly"), std::string::npos) << cookie;
  EXPECT_NE(cookie.find("SameSite=Strict"), std::string::npos) << cookie;
  const std::string pair = cookie.substr(0, cookie.find(';'));
  ASSERT_EQ(pair.rfind("gpubank_session=", 0), 0u) << cookie;

  const httplib::Headers with_cookie{{"Cookie", pair}};
  EXPECT_EQ(call("", "GET", "/api/v1/pools", "", with_cookie).status, 200);
  EXPECT_EQ(json::parse(call("", "GET", "/api/v1/session", "", with_cookie).body)["csrfToken"], csrf);
  // A write with the cookie alone is what a forged cross-site form would send.
  Answer forged = call("", "POST", "/api/v1/clock", R"({"action": "pause"})", with_cookie);
  EXPECT_EQ(forged.status, 403);
  EXPECT_NE(forged.body.find("auth.csrf"), std::string::npos) << forged.body;
  httplib::Headers wrong = with_cookie;
  wrong.emplace("X-CSRF-Token", std::string(64, '0'));
  EXPECT_EQ(call("", "POST", "/api/v1/clock", R"({"action": "pause"})", wrong).status, 403);
  httplib::Headers right = with_cookie;
  right.emplace("X-CSRF-Token", csrf);
  EXPECT_EQ(call("", "POST", "/api/v1/clock", R"({"action": "pause"})", right).status, 200);

  // Signing out ends the session; the cookie is cleared.
  const Answer out = call("", "DELETE", "/api/v1/session", "", right);
  EXPECT_EQ(out.status, 204) << out.body;
  EXPECT_NE(out.headers.find("Set-Cookie")->second.find("Max-Age=0"), std::string::npos);
  EXPECT_EQ(call("", "GET", "/api/v1/pools", "", with_cookie).status, 401);

  // A session of a token revoked since: over at its next request, like the token.
  const Answer second = call("", "POST", "/api/v1/session", json{{"token", viewer_}}.dump());
  ASSERT_EQ(second.status, 200);
  const std::string viewer_cookie = second.headers.find("Set-Cookie")->second;
  const httplib::Headers viewer_session{{"Cookie", viewer_cookie.substr(0, viewer_cookie.find(';'))}};
  EXPECT_EQ(call("", "GET", "/api/v1/pools", "", viewer_session).status, 200);
  auto revoked = gate_->revoke_issued("test", "vic", wall_ms());
  ASSERT_TRUE(revoked) << revoked.error();
  EXPECT_EQ(*revoked, 1);
  EXPECT_EQ(call("", "GET", "/api/v1/pools", "", viewer_session).status, 401);
  EXPECT_EQ(call(viewer_, "GET", "/api/v1/pools").status, 401);
}

TEST_F(PlatformAccessTest, EveryWriteIsAuditedBeforeItRunsAndARefusedOneIsNot) {
  const std::size_t before = writes().size();
  EXPECT_EQ(call(viewer_, "POST", "/api/v1/clock", R"({"action": "pause"})").status, 403);
  EXPECT_EQ(call("", "POST", "/api/v1/clock", R"({"action": "pause"})").status, 401);
  EXPECT_EQ(writes().size(), before);
  EXPECT_EQ(call(admin_token_, "POST", "/api/v1/tidal/weekday-serving-training/freeze", R"({"reason": "incident 7"})").status,
            200);
  const auto after = writes();
  ASSERT_EQ(after.size(), before + 1);
  EXPECT_EQ(after.back().actor, "pat");
  EXPECT_EQ(after.back().object, "/api/v1/tidal/weekday-serving-training/freeze");
  EXPECT_EQ(after.back().decision, "POST");
  const json numbers = json::parse(after.back().numbers);
  EXPECT_EQ(numbers["role"], "platform-admin");
  EXPECT_EQ(numbers["bodyBytes"], 24);
  EXPECT_EQ(numbers["bodySha256"].get<std::string>().size(), 64u);
  // The platform's own record names the subject, not an address.
  bool frozen_by_pat = false;
  const json audit = get("/api/v1/audit?limit=1000");
  for (const json& a : audit["items"]) {
    frozen_by_pat |= a["action"] == "TidalFrozen" && a["actor"] == "api:pat";
  }
  EXPECT_TRUE(frozen_by_pat);
}

TEST_F(PlatformAccessTest, HostileRequestsGetAClearErrorAndNothingElse) {
  struct Case {
    std::string method, path, body;
    httplib::Headers headers;
    int status;
    std::string rule;
  };
  const std::string forged_token = "gpb_" + admin_token_.substr(4, 16) + "_" + std::string(64, 'a');
  const std::vector<Case> cases{
      {"POST", "/api/v1/session", "{not json", {}, 400, "request.invalid-json"},
      {"POST", "/api/v1/session", R"(["gpb_"])", {}, 400, "request.invalid-json"},
      {"POST", "/api/v1/session", R"({"token": 42})", {}, 400, "request.required"},
      {"POST", "/api/v1/session", R"({"token": "x", "role": "platform-admin"})", {}, 400, "request.unknown-field"},
      {"POST", "/api/v1/session", json{{"token", forged_token}}.dump(), {}, 401, "auth.invalid-token"},
      {"POST", "/api/v1/session", std::string(5000, ' '), {}, 413, "request.too-large"},
      {"GET", "/api/v1/pools", "", {{"Authorization", "Basic cGF0OnBhdA=="}}, 401, "auth.invalid-token"},
      {"GET", "/api/v1/pools", "", {{"Authorization", "Bearer " + forged_token}}, 401, "auth.invalid-token"},
      {"GET", "/api/v1/pools", "", {{"Authorization", "Bearer " + admin_token_ + "x"}}, 401, "auth.invalid-token"},
      {"GET", "/api/v1/pools", "", {{"Cookie", "gpubank_session=" + std::string(64, 'f')}}, 401, "auth.session-ended"},
      {"GET", "/api/v1/pools", "", {{"Cookie", "gpubank_session=" + admin_token_}}, 401, "auth.session-ended"},
      {"GET", "/portal/../auth.db", "", {}, 404, ""},
      {"GET", "/portal/..%2fauth.db", "", {}, 404, ""},
      {"GET", "/portal/%2e%2e/%2e%2e/etc/passwd", "", {}, 404, ""},
      {"GET", "/portal//etc/passwd", "", {}, 404, ""},
  };
  for (const Case& c : cases) {
    const Answer a = call("", c.method, c.path, c.body, c.headers);
    EXPECT_EQ(a.status, c.status) << c.method << " " << c.path << " " << c.body.substr(0, 60) << ": " << a.body;
    if (!c.rule.empty()) { EXPECT_NE(a.body.find("\"rule\":\"" + c.rule + "\""), std::string::npos) << c.path << ": " << a.body; }
    EXPECT_EQ(a.body.find("root:"), std::string::npos) << c.path;
    EXPECT_EQ(a.body.find("SQLite"), std::string::npos) << c.path;
  }
  // Wrong types and unknown fields of an admin's write: the field and the rule.
  const Answer typed = call(admin_token_, "POST", "/api/v1/clock", R"({"action": 1})");
  EXPECT_EQ(typed.status, 400);
  EXPECT_NE(typed.body.find("\"field\":\"action\""), std::string::npos) << typed.body;
}

TEST_F(PlatformAccessTest, ThePortalIsServedWithItsSecurityHeaders) {
  const Answer page = call("", "GET", "/");
  ASSERT_EQ(page.status, 200);
  EXPECT_NE(page.body.find("<html"), std::string::npos);
  EXPECT_EQ(page.body.find("<script>"), std::string::npos) << "no inline script";
  const auto csp = page.headers.find("Content-Security-Policy");
  ASSERT_NE(csp, page.headers.end());
  EXPECT_NE(csp->second.find("script-src 'self'"), std::string::npos);
  EXPECT_EQ(csp->second.find("unsafe-inline"), std::string::npos);
  EXPECT_EQ(page.headers.find("X-Content-Type-Options")->second, "nosniff");
  EXPECT_EQ(page.headers.find("X-Frame-Options")->second, "DENY");
  for (const portal::Asset& asset : portal::assets()) {
    const Answer a = call("", "GET", "/portal/" + std::string(asset.path));
    EXPECT_EQ(a.status, 200) << asset.path;
    EXPECT_EQ(a.body, asset.body) << asset.path;
    EXPECT_EQ(a.headers.find("Content-Type")->second, asset.content_type) << asset.path;
  }
  EXPECT_GT(portal::assets().size(), 2u);
}

// The policy editor's loop through the API: preview a change, submit it, it waits for a
// platform administrator, who approves it; the proposal, its diff and the decision are on
// record, and another group's viewer neither sees it nor may act on it.
TEST_F(PlatformAccessTest, AProposalIsPreviewedSubmittedApprovedAndAudited) {
  // ads gives back first (applies at once), then asks for it again (waits).
  ASSERT_EQ(call(group_admin_, "POST", "/api/v1/proposals", json{{"document", kAdsGiveBack}}.dump()).status, 201);
  const std::string version_before = json::parse(call(finops_, "GET", "/api/v1/policies").body)["version"];

  const Answer preview =
      call(group_admin_, "POST", "/api/v1/proposals/preview", json{{"document", kAdsTakeMore}, {"hours", 2}}.dump());
  ASSERT_EQ(preview.status, 200) << preview.body;
  const json p = json::parse(preview.body);
  EXPECT_EQ(p["needsApproval"], true);
  EXPECT_EQ(p["changes"][0]["object"], "GPUQuotaPolicy/ads-training-h100");
  EXPECT_FALSE(p["groups"].empty());
  EXPECT_EQ(p["work"], "seeded day (seed 1, 2 h, serving: fluid model)");

  const Answer submitted =
      call(group_admin_, "POST", "/api/v1/proposals", json{{"document", kAdsTakeMore}, {"comment", "Q4 push"}}.dump());
  ASSERT_EQ(submitted.status, 201) << submitted.body;
  const json proposal = json::parse(submitted.body);
  EXPECT_EQ(proposal["state"], "Pending");
  EXPECT_EQ(proposal["author"], "ada");
  EXPECT_EQ(proposal["patch"][0]["path"], "/borrowLimit");
  const std::string id = proposal["id"];

  // Another group's admin sees neither it nor its id; a group-admin may not approve.
  const std::string search_admin = token(auth::Role::GroupAdmin, "search", "sam");
  EXPECT_EQ(json::parse(call(search_admin, "GET", "/api/v1/proposals").body)["items"].size(), 0u);
  EXPECT_EQ(call(search_admin, "GET", "/api/v1/proposals/" + id).status, 403);
  EXPECT_EQ(call(group_admin_, "POST", "/api/v1/proposals/" + id + "/approve", "{}").status, 403);
  EXPECT_EQ(json::parse(call(finops_, "GET", "/api/v1/policies").body)["version"], version_before) << "waits";

  const Answer approved = call(admin_token_, "POST", "/api/v1/proposals/" + id + "/approve", R"({"comment": "ok"})");
  ASSERT_EQ(approved.status, 200) << approved.body;
  EXPECT_EQ(json::parse(approved.body)["state"], "Applied");
  EXPECT_EQ(json::parse(approved.body)["decidedBy"], "pat");
  const json policies = json::parse(call(viewer_, "GET", "/api/v1/policies").body);
  EXPECT_NE(policies["version"], version_before);
  EXPECT_EQ(policies["version"], policies["runningVersion"]) << "back to the examples' numbers";
  EXPECT_EQ(call(admin_token_, "POST", "/api/v1/proposals/" + id + "/approve", "{}").status, 409);

  // The record: the write audit (who called what) and the change's own entries.
  auto store = store::Store::open((dir_ / "auth.db").string());
  ASSERT_TRUE(store);
  auto audit = (*store)->audit(0, 100000);
  ASSERT_TRUE(audit);
  std::vector<std::string> steps;
  for (const auto& e : *audit) {
    if (e.action.rfind("PolicyChange", 0) == 0 && e.numbers.find(id) != std::string::npos) steps.push_back(e.action + " " + e.actor);
  }
  EXPECT_EQ(steps, (std::vector<std::string>{"PolicyChangeProposed ada", "PolicyChangeApproved pat", "PolicyChangeApplied pat"}));
  const auto verified = store::verify_store(**store);
  ASSERT_TRUE(verified);
  EXPECT_TRUE(verified->ok());
}

TEST_F(PlatformAccessTest, AProposalThatBreaksAGuardrailIsRefusedWithItsFindings) {
  std::string over = kAdsTakeMore;
  over.replace(over.find("maxCapacity: 32"), 15, "maxCapacity: 48");
  const Answer a = call(group_admin_, "POST", "/api/v1/proposals", json{{"document", over}}.dump());
  EXPECT_EQ(a.status, 422) << a.body;
  const json j = json::parse(a.body);
  EXPECT_EQ(j["refused"], true);
  bool named = false;
  for (const auto& f : j["findings"]) named |= f["rule"] == "quota.max-capacity-outside-guardrail" && f["field"] == "spec.maxCapacity";
  EXPECT_TRUE(named) << a.body;
  const Answer preview = call(group_admin_, "POST", "/api/v1/proposals/preview", json{{"document", over}}.dump());
  EXPECT_EQ(preview.status, 422) << preview.body;
  // Hostile bodies.
  EXPECT_EQ(call(group_admin_, "POST", "/api/v1/proposals", R"({"document": 7})").status, 400);
  EXPECT_EQ(call(group_admin_, "POST", "/api/v1/proposals", R"({"document": "x", "approve": true})").status, 400);
  EXPECT_EQ(call(group_admin_, "POST", "/api/v1/proposals", std::string(90 * 1024, ' ')).status, 413);
  EXPECT_EQ(call(group_admin_, "POST", "/api/v1/proposals/preview", json{{"document", kAdsTakeMore}, {"hours", 100000}}.dump()).status,
            400);
  const Answer yaml_bomb = call(group_admin_, "POST", "/api/v1/proposals",
                                json{{"document", "a: &a [x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a]\n"
                                                  "c: &c [*b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c]\n"
                                                  "e: &e [*d, *d, *d, *d, *d, *d, *d, *d]\nf: [*e, *e, *e, *e, *e, *e, *e, *e]\n"}}
                                    .dump());
  EXPECT_EQ(yaml_bomb.status, 422) << yaml_bomb.body;
}

// Sign-in by an OIDC reverse proxy: the user and groups headers, believed from the proxy's
// address only, give roles by the guardrails' subjects (examples/policies/00-guardrails.yaml).
class PlatformProxyTest : public PlatformServerTest {
 protected:
  [[nodiscard]] virtual std::string proxy_address() const { return "127.0.0.1"; }
  void adjust(PlatformServerOptions& options) const override {
    ProxyAuth proxy;
    proxy.user_header = "X-Forwarded-User";
    proxy.groups_header = "X-Forwarded-Groups";
    proxy.trusted_from = {proxy_address()};
    proxy.finops = {"group:finance"};
    options.proxy = proxy;
  }
  httplib::Result as(const std::string& user, const std::string& groups, const std::string& method, const std::string& path,
                     const std::string& body = "", bool marked = false) {
    auto c = client("");
    httplib::Headers h{{"X-Forwarded-User", user}};
    if (!groups.empty()) h.emplace("X-Forwarded-Groups", groups);
    if (marked) h.emplace("X-Requested-With", "gpubank");
    return method == "GET" ? c->Get(path, h) : c->Post(path, h, body, "application/json");
  }
};

TEST_F(PlatformProxyTest, ProxiedUsersGetTheirRolesFromTheGuardrails) {
  auto role_of = [&](const std::string& user, const std::string& groups) {
    auto r = as(user, groups, "GET", "/api/v1/session");
    EXPECT_TRUE(r);
    return r && r->status == 200 ? json::parse(r->body) : json{{"status", r ? r->status : 0}, {"body", r ? r->body : ""}};
  };
  const json mei = role_of("mei.chen", "");  // admins: [..., user:mei.chen]
  EXPECT_EQ(mei["role"], "group-admin") << mei.dump();
  EXPECT_EQ(mei["group"], "customer-service");
  const json bob = role_of("bob", "search-engineers, other");
  EXPECT_EQ(bob["role"], "viewer") << bob.dump();
  EXPECT_EQ(bob["group"], "search");
  EXPECT_EQ(role_of("eve", "finance")["role"], "finops");
  EXPECT_EQ(role_of("pat", "gpubank-platform-admins")["role"], "platform-admin");
  EXPECT_EQ(as("bob", "search-engineers", "GET", "/api/v1/workloads?businessGroup=ads")->status, 403);
  const auto nobody = as("zed", "strangers", "GET", "/api/v1/pools");
  EXPECT_EQ(nobody->status, 403);
  EXPECT_NE(nobody->body.find("auth.no-role"), std::string::npos) << nobody->body;
  EXPECT_EQ(as("a b", "", "GET", "/api/v1/pools")->status, 401);
  EXPECT_EQ(as("bob", std::string(300, 'g'), "GET", "/api/v1/pools")->status, 401);

  // A write needs the header no cross-site form can send; then it is audited as the user.
  const auto unmarked = as("pat", "gpubank-platform-admins", "POST", "/api/v1/clock", R"({"action": "pause"})");
  EXPECT_EQ(unmarked->status, 403);
  EXPECT_NE(unmarked->body.find("auth.csrf"), std::string::npos);
  EXPECT_EQ(as("pat", "gpubank-platform-admins", "POST", "/api/v1/clock", R"({"action": "pause"})", true)->status, 200);
  auto store = store::Store::open((dir_ / "auth.db").string());
  ASSERT_TRUE(store);
  auto audit = (*store)->audit(0, 1000);
  ASSERT_TRUE(audit);
  bool recorded = false;
  for (const auto& e : *audit) recorded |= e.action == auth::kWriteAction && e.actor == "pat" && e.object == "/api/v1/clock";
  EXPECT_TRUE(recorded);
}

class PlatformForgedProxyTest : public PlatformProxyTest {
 protected:
  [[nodiscard]] std::string proxy_address() const override { return "10.9.9.9"; }
};

TEST_F(PlatformForgedProxyTest, HeadersFromAnywhereButTheProxyAreRefused) {
  const auto forged = as("pat", "gpubank-platform-admins", "GET", "/api/v1/audit");
  EXPECT_EQ(forged->status, 401);
  EXPECT_NE(forged->body.find("auth.untrusted-proxy"), std::string::npos) << forged->body;
  // Not even beside a valid token: a request that claims a proxied user is refused.
  auto c = client(token(auth::Role::Viewer, "ads", "vic"));
  const auto both = c->Get("/api/v1/audit", httplib::Headers{{"X-Forwarded-User", "pat"}});
  EXPECT_EQ(both->status, 401);
  EXPECT_EQ(client(admin_token_)->Get("/api/v1/audit")->status, 200) << "tokens work as before";
}

class PlatformRateLimitTest : public PlatformServerTest {
 protected:
  [[nodiscard]] auth::GateOptions gate_options() const override {
    auth::GateOptions o;
    o.requests_per_second = 0.001;  // one more every 1,000 s: nothing refills during the test
    o.burst = 3;
    return o;
  }
};

TEST_F(PlatformRateLimitTest, ATokenOverItsRateIsToldToWaitAndOthersAreNot) {
  auto a = client(admin_token_);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(a->Get("/api/v1/clock")->status, 200);
  auto refused = a->Get("/api/v1/clock");
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 429);
  EXPECT_NE(refused->body.find("auth.rate-limited"), std::string::npos);
  const int retry_after = std::stoi(refused->get_header_value("Retry-After"));
  EXPECT_GT(retry_after, 0);
  EXPECT_LE(retry_after, 1000);
  // Another token has its own bucket.
  auto b = client(token(auth::Role::Viewer, "ads", "vic"));
  EXPECT_EQ(b->Get("/api/v1/clock")->status, 200);
}

}  // namespace
}  // namespace gpubank::api
