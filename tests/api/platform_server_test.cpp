// The REST API of `gpubank up` on loopback, in process: views, paging, the clock, and bad
// input answered with the field and the rule.
#include <gtest/gtest.h>

#include <set>

#include <httplib.h>

#include <sstream>
#include <thread>

#include "platform_fixture.hpp"

namespace gpubank::api {
namespace {

using nlohmann::json;

TEST_F(PlatformServerTest, PausedClockStepsExactlyAndViewsFollow) {
  EXPECT_EQ(get("/api/v1/clock")["virtualTimeMs"], 0);
  const json stepped = post_clock(R"({"action": "step", "step": "10h"})");
  EXPECT_EQ(stepped["virtualTimeMs"], 36'000'000);
  EXPECT_EQ(stepped["time"], "2026-12-01T02:00:00Z");  // 10:00 in Shanghai, inside the daytime window
  EXPECT_EQ(stepped["paused"], true);
  // Daytime: the tidal floor of 6 replicas of 4 GPUs for customer-service-llm is running.
  const json running = get("/api/v1/workloads?businessGroup=customer-service&state=Running");
  int llm = 0;
  for (const auto& w : running) llm += w["workload"].get<std::string>().find("customer-service-llm-r") != std::string::npos;
  EXPECT_EQ(llm, 6);
  // The pools' used GPUs are the sum of the groups' positions.
  std::int64_t used_pools = 0, used_groups = 0;
  for (const auto& p : get("/api/v1/pools")) used_pools += p["used"].get<std::int64_t>();
  for (const auto& g : get("/api/v1/groups")) {
    for (const auto& p : g["positions"]) used_groups += p["used"].get<std::int64_t>();
  }
  EXPECT_EQ(used_pools, used_groups);
  EXPECT_GT(used_pools, 0);
  // Every GPU of the H100 training pool, each with its UUID.
  const json gpus = get("/api/v1/gpus?pool=h100-rdma-training");
  ASSERT_EQ(gpus.size(), 64u);
  const std::string uuid = gpus[0]["uuid"];
  EXPECT_EQ(get("/api/v1/gpus/" + uuid)["node"], gpus[0]["node"]);
  get("/api/v1/gpus/GPU-00000000-0000-0000-0000-000000000000", 404);
}

TEST_F(PlatformServerTest, EventsAndLedgerPageWithoutGapsOrRepeats) {
  post_clock(R"({"action": "step", "step": "12h"})");
  const json all = get("/api/v1/events?limit=1000");
  json collected = json::array();
  std::int64_t after = 0;
  for (int page = 0; page < 10000; ++page) {
    const json j = get("/api/v1/events?limit=7&after=" + std::to_string(after));
    for (const auto& e : j["items"]) collected.push_back(e);
    after = j["next"];
    if (!j["more"].get<bool>()) break;
  }
  ASSERT_FALSE(collected.empty());
  if (!all["more"].get<bool>()) {
    EXPECT_EQ(collected, all["items"]);
  }
  for (std::size_t i = 0; i < collected.size(); ++i) EXPECT_EQ(collected[i]["seq"], static_cast<int>(i) + 1);
  const json admitted = get("/api/v1/events?kind=Admitted&limit=3");
  for (const auto& e : admitted["items"]) EXPECT_EQ(e["kind"], "Admitted");
  const json ledger = get("/api/v1/ledger?limit=2");
  ASSERT_EQ(ledger["items"].size(), 2u);
  EXPECT_EQ(ledger["items"][0]["seq"], 1);
}

TEST_F(PlatformServerTest, BadInputNamesTheFieldAndTheRule) {
  json e = get("/api/v1/events?limit=abc", 400);
  EXPECT_EQ(e["field"], "limit");
  EXPECT_EQ(e["rule"], "query.out-of-range");
  e = get("/api/v1/events?limit=1001", 400);
  EXPECT_EQ(e["field"], "limit");
  e = get("/api/v1/events?colour=blue", 400);
  EXPECT_EQ(e["field"], "colour");
  EXPECT_EQ(e["rule"], "query.unknown-parameter");
  e = get("/api/v1/workloads?state=Sleeping", 400);
  EXPECT_EQ(e["field"], "state");
  EXPECT_EQ(e["rule"], "query.invalid-enum");
  // Every state a workload can be in is a filter, waitForPodsReady's Deactivated included.
  for (const char* state : {"Waiting", "Deactivated", "Placing", "Checkpointing"}) {
    EXPECT_TRUE(get(std::string("/api/v1/workloads?state=") + state).is_array()) << state;
  }
  // A value cut at 32 bytes inside a UTF-8 sequence still makes a valid JSON error.
  e = get("/api/v1/workloads?state=" + std::string(31, 'x') + "%C3%A9", 400);
  EXPECT_EQ(e["rule"], "query.invalid-enum");
  e = get("/api/v1/nothing", 404);
  EXPECT_EQ(e["rule"], "api.not-found");
  e = post_clock("{not json", 400);
  EXPECT_EQ(e["rule"], "request.invalid-json");
  e = post_clock(R"({"action": "rewind"})", 400);
  EXPECT_EQ(e["field"], "action");
  e = post_clock(R"({"action": "step"})", 400);
  EXPECT_EQ(e["field"], "step");
  EXPECT_EQ(e["rule"], "request.required");
  e = post_clock(R"({"action": "step", "step": "-5m"})", 400);
  EXPECT_EQ(e["field"], "step");
  e = post_clock(R"({"speed": "fast"})", 400);
  EXPECT_EQ(e["field"], "speed");
  e = post_clock(R"({"when": 1})", 400);
  EXPECT_EQ(e["rule"], "request.unknown-field");
  auto res = client_->Post("/api/v1/clock", std::string(5000, ' '), "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 413);
  // Nothing moved.
  EXPECT_EQ(get("/api/v1/clock")["virtualTimeMs"], 0);
}

TEST_F(PlatformServerTest, AnInjectedXidErrorMovesTheWorkloadOffTheGpu) {
  post_clock(R"({"action": "step", "step": "10h"})");
  std::string uuid, workload;
  for (const auto& g : get("/api/v1/gpus?pool=h100-rdma-training")) {
    if (!g["workloads"].empty()) {
      uuid = g["uuid"];
      workload = g["workloads"][0]["workload"];
      break;
    }
  }
  ASSERT_FALSE(uuid.empty()) << "no training GPU in use at 10:00";
  auto res = client_->Post("/api/v1/gpus/" + uuid + "/health", R"({"healthy": false, "xid": 79})", "application/json");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  const json gpu = json::parse(res->body);
  EXPECT_EQ(gpu["healthy"], false);
  EXPECT_EQ(gpu["xidErrors"], 1);
  EXPECT_TRUE(gpu["workloads"].empty());  // its workload got new pods elsewhere (or waits)
  const json unhealthy = get("/api/v1/events?kind=GpuUnhealthy");
  ASSERT_EQ(unhealthy["items"].size(), 1u);
  EXPECT_EQ(unhealthy["items"][0]["object"], "GPU/" + uuid);
  const json failed = get("/api/v1/events?kind=Failed&object=Workload/" + workload);
  ASSERT_EQ(failed["items"].size(), 1u);
  EXPECT_EQ(failed["items"][0]["reason"], "GpuXidError");
  // The audit log names who injected it.
  bool audited = false;
  for (std::int64_t after = 0, page = 0; page < 1000; ++page) {
    const json j = get("/api/v1/audit?limit=1000&after=" + std::to_string(after));
    for (const auto& a : j["items"]) {
      if (a["action"] == "GpuUnhealthy") audited = a["actor"] == "api:pat";
    }
    after = j["next"];
    if (!j["more"].get<bool>()) break;
  }
  EXPECT_TRUE(audited);
  // Recovery, and bad bodies.
  res = client_->Post("/api/v1/gpus/" + uuid + "/health", R"({"healthy": true})", "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(json::parse(res->body)["healthy"], true);
  res = client_->Post("/api/v1/gpus/" + uuid + "/health", R"({"xid": 79})", "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400);
  EXPECT_EQ(json::parse(res->body)["field"], "healthy");
  res = client_->Post("/api/v1/gpus/" + uuid + "/health", R"({"healthy": false, "xid": 5000})", "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(json::parse(res->body)["field"], "xid");
  // A double-bit ECC error: XID 48 and the counter dcgm-exporter reports.
  res = client_->Post("/api/v1/gpus/" + uuid + "/health", R"({"healthy": false, "eccDoubleBit": 2})", "application/json");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(json::parse(res->body)["lastXid"], 48);
  EXPECT_EQ(json::parse(res->body)["eccDoubleBit"], 2);
  auto metrics = client_->Get("/metrics");
  ASSERT_TRUE(metrics);
  std::string ecc_line;
  std::istringstream lines(metrics->body);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{", 0) == 0 && line.find("UUID=\"" + uuid + "\"") != std::string::npos) {
      ecc_line = line;
    }
  }
  ASSERT_FALSE(ecc_line.empty());
  EXPECT_EQ(ecc_line.substr(ecc_line.rfind(' ') + 1), "2") << ecc_line;
  res = client_->Post("/api/v1/gpus/GPU-nope/health", R"({"healthy": false})", "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 404);
}

TEST_F(PlatformServerTest, ServesEachServicesCapacityForTheGatewayAsJsonAndSeries) {
  post_clock(R"({"action": "step", "step": "10m"})");
  const json c = get("/api/v1/services/customer-service-llm/capacity");
  EXPECT_EQ(c["policy"], "customer-service-llm");
  const int ready = c["replicas"]["ready"].get<int>();
  EXPECT_GE(ready, 1) << c.dump();
  ASSERT_TRUE(c["arrivalRequestsPerSecond"].is_number()) << c.dump();
  ASSERT_TRUE(c["headroomRequestsPerSecond"].is_number()) << c.dump();
  EXPECT_GE(c["headroomRequestsPerSecond"].get<double>(), 0.0);
  // Capacity is the ready replicas' reference rate: positive and in proportion.
  EXPECT_GT(c["capacityRequestsPerSecond"].get<double>(), 0.0);
  ASSERT_TRUE(c["scaleOut"]["possible"].is_boolean());
  if (c["scaleOut"]["possible"].get<bool>()) {
    // The example's modelLoadTime is 6 m; a reclaim adds the group's grace.
    EXPECT_GE(c["scaleOut"]["readySeconds"].get<double>(), 360.0) << c.dump();
  } else {
    EXPECT_TRUE(c["scaleOut"].contains("blockedReason")) << c.dump();
  }
  EXPECT_GE(c["borrowableGpus"].get<int>(), 0);
  EXPECT_EQ(get("/api/v1/services/no-such-policy/capacity", 404)["rule"], "api.not-found");
  EXPECT_EQ(get("/api/v1/services/customer-service-llm/capacity?x=1", 400)["field"], "x");

  // The same numbers as Prometheus series.
  auto metrics = client_->Get("/metrics");
  ASSERT_TRUE(metrics);
  const std::string ready_series = "gpubank_service_replicas{policy=\"customer-service-llm\",phase=\"ready\"} ";
  const auto at = metrics->body.find(ready_series);
  ASSERT_NE(at, std::string::npos) << metrics->body.substr(0, 2000);
  EXPECT_EQ(std::stoi(metrics->body.substr(at + ready_series.size())), ready);
  EXPECT_NE(metrics->body.find("gpubank_service_scale_out_possible{policy=\"customer-service-llm\"} "), std::string::npos);
  EXPECT_NE(metrics->body.find("gpubank_service_headroom_requests_per_second{policy=\"customer-service-llm\"} "),
            std::string::npos);
}

TEST_F(PlatformServerTest, TidalFreezeIsAuditedWithTheCallerAndRefusesBadRequests) {
  // At 00:00 the tidal controller has stepped once: freezing pins the replicas serving.
  auto res = client_->Post("/api/v1/tidal/weekday-serving-training/freeze", R"({"reason": "incident 42"})",
                           "application/json");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  const json services = json::parse(res->body, nullptr, false);
  ASSERT_TRUE(services.is_array());
  EXPECT_EQ(services[0]["autoscaling"]["control"], "autoscaler");
  const json events = get("/api/v1/events?kind=TidalFrozen");
  ASSERT_EQ(events["items"].size(), 1u);
  EXPECT_NE(events["items"][0]["message"].get<std::string>().find("incident 42"), std::string::npos) << events.dump();
  bool audited = false;
  for (std::int64_t after = 0, page = 0; page < 1000; ++page) {
    const json j = get("/api/v1/audit?limit=1000&after=" + std::to_string(after));
    for (const auto& a : j["items"]) {
      audited |= a["action"] == "TidalFrozen" && a["actor"] == "api:pat";
    }
    after = j["next"];
    if (!j["more"].get<bool>()) break;
  }
  EXPECT_TRUE(audited);
  // Frozen twice: a conflict; unknown policy: 404; a body with another field or a long
  // reason: 400 naming it.
  res = client_->Post("/api/v1/tidal/weekday-serving-training/freeze", "", "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 409) << res->body;
  res = client_->Post("/api/v1/tidal/nightly/freeze", "", "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 404) << res->body;
  res = client_->Post("/api/v1/tidal/weekday-serving-training/unfreeze", R"({"who": "me"})", "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400);
  EXPECT_EQ(json::parse(res->body)["field"], "who");
  res = client_->Post("/api/v1/tidal/weekday-serving-training/unfreeze", R"({"reason": ")" + std::string(300, 'x') + R"("})",
                      "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400);
  EXPECT_EQ(json::parse(res->body)["field"], "reason");
  res = client_->Post("/api/v1/tidal/weekday-serving-training/unfreeze", "", "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(get("/api/v1/events?kind=TidalUnfrozen")["items"].size(), 1u);
}

TEST_F(PlatformServerTest, ModelLoadFaultsAreInjectedAndCheckedLikeAnyInput) {
  auto res = client_->Post("/api/v1/services/customer-service-llm/faults", R"({"modelLoadFailures": 2})",
                           "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200) << res->body;
  const json injected = get("/api/v1/events?kind=FaultInjected");
  ASSERT_EQ(injected["items"].size(), 1u);
  EXPECT_EQ(injected["items"][0]["numbers"]["count"], 2);
  for (const auto& [body, field] : std::vector<std::pair<std::string, std::string>>{
           {R"({"modelLoadFailures": 0})", "modelLoadFailures"},
           {R"({"modelLoadFailures": "two"})", "modelLoadFailures"},
           {R"({"gpuFailures": 1})", "gpuFailures"}}) {
    res = client_->Post("/api/v1/services/customer-service-llm/faults", body, "application/json");
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 400) << body;
    EXPECT_EQ(json::parse(res->body)["field"], field) << body;
  }
  res = client_->Post("/api/v1/services/nope/faults", R"({"modelLoadFailures": 1})", "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 404);
}

TEST_F(PlatformServerTest, ServicesShowTheReplicasServing) {
  post_clock(R"({"action": "step", "step": "10h"})");
  const json services = get("/api/v1/services");
  ASSERT_TRUE(services.is_array());
  ASSERT_EQ(services.size(), 2u);  // customer-service-llm and customer-service-embeddings
  EXPECT_EQ(services[0]["policy"], "customer-service-llm");
  EXPECT_EQ(services[0]["replicas"].size(), 6u);  // the daytime floor at 10:00 Shanghai
  EXPECT_GT(services[0]["finished"].get<std::int64_t>(), 0);
}

TEST_F(PlatformServerTest, MetricsCarryDcgmAndBankSeries) {
  post_clock(R"({"action": "step", "step": "12h"})");
  auto res = client_->Get("/metrics");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_NE(res->body.find("DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"GPU-"), std::string::npos);
  EXPECT_NE(res->body.find("gpubank_quota_gpus{business_group=\"search\",pool=\"h100-rdma-training\",kind=\"used\"}"),
            std::string::npos);
  EXPECT_NE(res->body.find("gpubank_twin_virtual_time_seconds 43200"), std::string::npos);
}

// As gpubank up runs it: with governance in virtual time.
class PlatformServerGovernanceTest : public PlatformServerTest {
 protected:
  [[nodiscard]] bool with_governance() const override { return true; }
};

// The group page's chart: a group's position per pool and minute, as the governance
// recorder saw it, with the events that moved it. A platform-admin halves ads's guarantee in
// the running night (applied at once): the minutes before show 16, the minutes after 8, the
// change is a marker, and the last minute agrees with /api/v1/groups.
TEST_F(PlatformServerGovernanceTest, AGroupsHistoryFollowsItsPositionAndMarksItsQuotaChange) {
  const std::string halved =
      "apiVersion: platform.gpubank.dev/v1alpha1\nkind: GPUQuotaPolicy\nmetadata: {name: ads-training-h100}\nspec:\n"
      "  businessGroup: ads\n  resourcePool: h100-rdma-training\n  guaranteed: 8\n  borrowLimit: 8\n  maxCapacity: 16\n"
      "  reclaimPolicy: {gracePeriod: 10m, onlyPreempt: [checkpointable]}\n";
  post_clock(R"({"action": "step", "step": "60m"})");
  auto res = client_->Post("/api/v1/proposals", json{{"document", halved}}.dump(), "application/json");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 201) << res->body;
  EXPECT_EQ(json::parse(res->body)["running"]["applied"], true) << res->body;
  post_clock(R"({"action": "step", "step": "30m"})");

  const json h = get("/api/v1/groups/ads/history");
  EXPECT_EQ(h["to"], "2026-11-30T17:30:00Z");
  EXPECT_EQ(h["from"], "2026-11-30T11:30:00Z");  // six hours back by default
  const json* training = nullptr;
  for (const json& p : h["pools"]) {
    if (p["pool"] == "h100-rdma-training") training = &p;
  }
  ASSERT_NE(training, nullptr) << h.dump();
  const json& minutes = (*training)["minutes"];
  ASSERT_EQ(minutes.size(), 91u);  // 16:00 .. 17:30
  EXPECT_EQ(minutes[30]["guaranteed"], 16);
  EXPECT_EQ(minutes[61]["guaranteed"], 8);
  EXPECT_EQ(minutes.back()["guaranteed"], 8);
  bool marked = false;
  for (const json& m : h["markers"]) {
    if (m["kind"] == "QuotaChanged") {
      marked = true;
      EXPECT_EQ(m["object"], "GPUQuotaPolicy/ads-training-h100");
      EXPECT_EQ(m["t"], "2026-11-30T17:00:00Z");
    }
  }
  EXPECT_TRUE(marked) << h["markers"].dump();
  for (const json& g : get("/api/v1/groups")) {
    if (g["name"] != "ads") continue;
    for (const json& pos : g["positions"]) {
      if (pos["pool"] == "h100-rdma-training") { EXPECT_EQ(pos["guaranteed"], minutes.back()["guaranteed"]); }
    }
  }
  // The pool's own chart: its 64 GPUs every minute, what the groups held adding up to the
  // devices held, the quota change among its markers.
  const json pool = get("/api/v1/pools/h100-rdma-training/history");
  ASSERT_EQ(pool["minutes"].size(), 91u);
  for (const json& m : pool["minutes"]) {
    EXPECT_EQ(m["devices"], 64);
    double sum = 0;
    for (const auto& [g, held] : m["groups"].items()) sum += held.get<double>();
    EXPECT_NEAR(sum, m["held"].get<double>(), 0.05 * static_cast<double>(m["groups"].size()) + 1e-9) << m.dump();
  }
  bool pool_marked = false;
  for (const json& m : pool["markers"]) pool_marked |= m["kind"] == "QuotaChanged";
  EXPECT_TRUE(pool_marked);
  // A service's minutes: at least its minReplicas serving every minute once it started,
  // against the policy's 1.5 s target.
  const json llm = get("/api/v1/services/customer-service-llm/history");
  EXPECT_EQ(llm["ttftP95TargetSeconds"], 1.5);
  EXPECT_EQ(llm["workload"], "InferenceService/customer-service/customer-service-llm");
  ASSERT_GE(llm["minutes"].size(), 60u) << llm.dump().substr(0, 500);
  EXPECT_GE(llm["minutes"].back()["replicas"].get<int>(), 1);
  for (const json& m : llm["minutes"]) EXPECT_LE(m["idleReplicas"].get<int>(), m["replicas"].get<int>());
  // Another range, bounded as the GPU's is.
  const json part = get("/api/v1/groups/ads/history?from=2026-11-30T17:00:00Z&to=2026-11-30T17:10:00Z");
  ASSERT_FALSE(part["pools"].empty());
  for (const json& p : part["pools"]) EXPECT_EQ(p["minutes"].size(), 11u) << p["pool"];
  EXPECT_EQ(get("/api/v1/groups/ads/history?from=2026-11-29T00:00:00Z&to=2026-11-30T17:00:00Z", 400)["rule"], "query.range-too-long");
}

TEST_F(PlatformServerTest, GovernanceIsOffUnlessAsked) {
  EXPECT_EQ(get("/api/v1/governance/alerts", 404)["rule"], "governance.off");
  EXPECT_EQ(get("/api/v1/governance/kpis", 404)["rule"], "governance.off");
}

TEST_F(PlatformServerGovernanceTest, ServesAlertsAndReportsInVirtualTime) {
  // Before a minute has passed there is nothing to report, but the scanner ran at 00:00.
  EXPECT_EQ(get("/api/v1/governance/alerts")["scans"], 1);
  EXPECT_EQ(get("/api/v1/governance/showback", 400)["rule"], "query.empty-period");

  // The night's training, 00:00-06:00 Shanghai, in steps of five minutes, counting what each
  // group held as quota but not yet on nodes (Placing: Kueue admitted it, the pods wait for
  // room), which the run's used GPU-hours count and devices, so showback, do not.
  std::map<std::string, double> placing_gpu_hours;
  for (int i = 0; i < 72; ++i) {
    for (const json& w : get("/api/v1/workloads?state=Placing")) {
      placing_gpu_hours[w["businessGroup"]] += w["gpus"].get<double>() * 5 / 60;
    }
    post_clock(R"({"action": "step", "step": "5m"})");
    if (i == 36) {  // 03:05: a training GPU falls off the bus; its job loses its work since the last checkpoint
      for (const auto& g : get("/api/v1/gpus?pool=h100-rdma-training")) {
        if (g["workloads"].empty()) continue;
        auto res = client_->Post("/api/v1/gpus/" + g["uuid"].get<std::string>() + "/health",
                                 R"({"healthy": false, "xid": 79})", "application/json");
        ASSERT_TRUE(res);
        ASSERT_EQ(res->status, 200) << res->body;
        break;
      }
    }
  }
  const json alerts = get("/api/v1/governance/alerts");
  EXPECT_EQ(alerts["scans"], 25);  // every 15 virtual minutes, 00:00 to 06:00
  EXPECT_EQ(alerts["scannedAt"], "2026-11-30T22:00:00Z");
  EXPECT_FALSE(alerts.contains("error")) << alerts.dump();
  std::int64_t judged = 0;
  for (const auto& [verdict, n] : alerts["verdicts"].items()) judged += n.get<std::int64_t>();
  EXPECT_GT(judged, 0);
  for (const json& a : alerts["open"]) {
    EXPECT_FALSE(a["evidence"]["business_group"].get<std::string>().empty()) << a.dump();
    EXPECT_NE(a["state"], "Resolved");
  }

  // Showback over the six hours: every group's allocated GPU-hours against the run's own
  // integral of the quota its admitted workloads held (summary) less what was Placing,
  // which count to the millisecond where the minutes and the five-minute steps sample:
  // they agree within a few minutes per admission.
  const json showback = get("/api/v1/governance/showback?level=group");
  EXPECT_EQ(showback["from"], "2026-11-30T16:00:00Z");
  EXPECT_EQ(showback["to"], "2026-11-30T22:00:00Z");
  std::map<std::string, double> by_group;
  for (const json& r : showback["rows"]) by_group[r["businessGroup"]] += r["allocatedGpuHours"].get<double>();
  const json summary = get("/api/v1/summary");
  std::size_t compared = 0;
  for (const json& g : summary["groups"]) {
    const double used = g["usedGpuHours"].get<double>();
    const double admitted = g["admitted"].get<double>();
    if (used <= 0) continue;
    ++compared;
    const std::string group = g["businessGroup"];
    EXPECT_NEAR(by_group[group], used - placing_gpu_hours[group], admitted * 8 / 60.0 + 0.02 * used)
        << g.dump() << " placing " << placing_gpu_hours[group];
  }
  EXPECT_GE(compared, 3u);
  // Every pod of the twin carries its attribution: no device-hour is the "unknown" row.
  EXPECT_FALSE(by_group.contains("unknown")) << showback.dump();
  // Recompute loss is the run's, group by group: a loss is counted at the first minute
  // recorded after it, so a period to 22:01 holds all of it.
  const json with_last = get("/api/v1/governance/showback?level=group&from=2026-11-30T16:00:00Z&to=2026-11-30T22:01:00Z");
  std::map<std::string, double> loss;
  for (const json& l : with_last["loans"]) loss[l["businessGroup"]] += l["recomputeLossGpuHours"].get<double>();
  std::map<std::string, double> run_loss_by_group;
  double run_loss = 0;
  for (const json& g : summary["groups"]) {
    run_loss_by_group[g["businessGroup"]] += g["recomputeLossGpuHours"].get<double>();
    run_loss += g["recomputeLossGpuHours"].get<double>();
  }
  for (const auto& [group, lost] : run_loss_by_group) EXPECT_NEAR(loss[group], lost, 1e-9) << group;
  std::cout << "recompute loss over the night: " << run_loss << " GPU-hours\n";
  EXPECT_GT(run_loss, 0);  // the XID error's job at least

  const json kpis = get("/api/v1/governance/kpis?from=2026-11-30T16:00:00Z&to=2026-11-30T22:00:00Z");
  ASSERT_TRUE(kpis["kpis"].is_array());
  bool training_pool = false;
  for (const json& k : kpis["kpis"]) {
    if (k["pool"] == "h100-rdma-training" && !k.contains("businessGroup")) {
      training_pool = true;
      EXPECT_GT(k["allocationRate"].get<double>(), 0.0) << k.dump();
      EXPECT_LE(k["allocationRate"].get<double>(), 1.0) << k.dump();
    }
  }
  EXPECT_TRUE(training_pool) << kpis.dump();
  // The LLM service's replicas: their vLLM tokens and TTFT reach showback, so its hours are
  // judged by its SLO and its tokens have a price.
  const json by_workload = get("/api/v1/governance/showback?level=workload");
  double llm_tokens = 0, llm_effective = 0, llm_measured = 0;
  for (const json& r : by_workload["rows"]) {
    if (r.value("workload", "") != "customer-service-llm") continue;
    llm_tokens += r.value("tokens", 0.0);
    llm_effective += r["effectiveGpuHours"].get<double>();
    llm_measured += r["measuredGpuHours"].get<double>();
  }
  std::cout << "customer-service-llm: " << llm_tokens << " tokens, " << llm_effective << " of " << llm_measured
            << " GPU-hours effective\n";
  EXPECT_GT(llm_tokens, 0);
  EXPECT_GT(llm_measured, 0);
  EXPECT_GT(llm_effective, 0);
  EXPECT_LE(llm_effective, llm_measured);
  bool priced = false;
  for (const json& k : kpis["kpis"]) {
    if (k.value("businessGroup", "") == "customer-service" && k.contains("inferenceUnitCostPerMillionTokens") &&
        k["inferenceUnitCostPerMillionTokens"].is_number()) {
      priced = k["inferenceUnitCostPerMillionTokens"].get<double>() > 0;
    }
  }
  EXPECT_TRUE(priced) << kpis.dump();
  // Kueue's admission waits reach the groups' KPIs: as many admissions as the run counted.
  // Kueue observes the wait at every admission, a workload admitted again after an
  // eviction included; the summary's `admitted` counts workloads (first admissions), so
  // the KPIs lie between it and every admission of every workload.
  double admissions = 0;
  for (const json& k : kpis["kpis"]) admissions += k.value("admissions", 0.0);
  double admitted = 0;
  for (const json& g : summary["groups"]) admitted += g["admitted"].get<double>();
  double every_admission = 0;
  for (const json& w : get("/api/v1/workloads")) every_admission += w["admissions"].get<double>();
  EXPECT_GT(admissions, 0);
  EXPECT_GE(admissions, admitted - 1e-9);
  EXPECT_LE(admissions, every_admission + 1e-9);
  const json board = get("/api/v1/governance/leaderboard?minGpuHours=1");
  EXPECT_EQ(board["minGpuHours"], 1.0);
  EXPECT_FALSE(board["leaderboard"].empty());

  // The quota review over the same night, from the recorded minutes and the alert record.
  const json review = get("/api/v1/governance/review?from=2026-11-30T16:00:00Z&to=2026-11-30T22:00:00Z");
  ASSERT_TRUE(review["findings"].is_array()) << review.dump();
  std::cout << "review: " << review["findings"].size() << " findings over the night\n";
  // The night's training queues wait for quota (the twin leaves tried workloads pending).
  bool pending_long = false;
  for (const json& f : review["findings"]) pending_long = pending_long || f["kind"] == "pending-long";
  EXPECT_TRUE(pending_long) << review.dump();
  const std::set<std::string> known{"guarantee-unused",  "borrowed-most-of-the-time", "pending-long",
                                    "pool-without-policy", "queue-without-policy",    "alert-reopened",
                                    "lease-expired",       "lease-unused",            "replicas-idle-above-floor"};
  for (const json& f : review["findings"]) {
    EXPECT_TRUE(known.contains(f["kind"].get<std::string>())) << f.dump();
    EXPECT_FALSE(f["policy"].get<std::string>().empty()) << f.dump();
    EXPECT_FALSE(f["message"].get<std::string>().empty()) << f.dump();
  }
  EXPECT_EQ(get("/api/v1/governance/review?level=group", 400)["rule"], "query.unknown-parameter");

  // Bad input names the field and the rule.
  json e = get("/api/v1/governance/showback?level=team", 400);
  EXPECT_EQ(e["field"], "level");
  EXPECT_EQ(e["rule"], "query.invalid-enum");
  e = get("/api/v1/governance/kpis?from=yesterday", 400);
  EXPECT_EQ(e["field"], "from");
  EXPECT_EQ(e["rule"], "query.invalid-time");
  e = get("/api/v1/governance/kpis?from=2026-11-30T20:00:00Z&to=2026-11-30T19:00:00Z", 400);
  EXPECT_EQ(e["field"], "to");
  e = get("/api/v1/governance/leaderboard?minGpuHours=-1", 400);
  EXPECT_EQ(e["field"], "minGpuHours");
  e = get("/api/v1/governance/leaderboard?minGpuHours=1e400", 400);
  EXPECT_EQ(e["field"], "minGpuHours");
  e = get("/api/v1/governance/kpis?level=group", 400);
  EXPECT_EQ(e["rule"], "query.unknown-parameter");
  e = get("/api/v1/governance/alerts?all=1", 400);
  EXPECT_EQ(e["field"], "all");
}

}  // namespace
}  // namespace gpubank::api
