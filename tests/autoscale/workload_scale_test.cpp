// ScaleActuator against a FAKE Kubernetes API server (tests/support/fake_apiserver.hpp,
// real HTTPS on loopback): the count goes through the Deployment's scale subresource with
// the resourceVersion read (a change in between is a conflict, not an overwrite);
// pod-deletion-cost is written before a scale-in, only on pods the Deployment selects; a
// HorizontalPodAutoscaler on the same Deployment stops every write; the TidalPolicy's floor
// in force lifts the count.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>

#include "autoscale/workload_scale.hpp"
#include "k8s/fake_client.hpp"
#include "support/fake_apiserver.hpp"
#include "support/policy_fixture.hpp"

namespace gpubank::autoscale {
namespace {

using gpubank::testing::FakeApiServer;
using Json = nlohmann::json;

// 2026-12-08 (a Tuesday) 02:00 UTC = 10:00 in Shanghai, inside the examples' daytime window.
constexpr std::int64_t kTuesdayMorning = 1'796'695'200'000;

policy::InferenceScalingPolicySpec chat_spec() {
  policy::InferenceScalingPolicySpec s;
  s.workload_ref.kind = policy::WorkloadRefKind::Deployment;
  s.workload_ref.name = "chat";
  s.workload_ref.namespace_ = "serving";
  s.min_replicas = 1;
  s.max_replicas = 8;
  s.scale_up.queue_depth_per_replica = 8;
  s.scale_down.queue_depth_per_replica = 1;
  s.scale_down.stabilization_window = Duration(std::chrono::minutes(1));
  return s;
}

Json deployment(const std::string& ns, const std::string& name, int replicas, int ready) {
  return {{"metadata", {{"name", name}, {"namespace", ns}}},
          {"spec", {{"replicas", replicas}, {"selector", {{"matchLabels", {{"app", name}}}}}}},
          {"status", {{"replicas", replicas}, {"readyReplicas", ready}}}};
}

Json pod(const std::string& ns, const std::string& name, const std::string& app, const std::string& ip) {
  return {{"metadata", {{"name", name}, {"namespace", ns}, {"labels", {{"app", app}}}}}, {"status", {{"podIP", ip}}}};
}

Expected<SignalReading> queue(double depth, int replicas, std::vector<ReplicaLoad> loads = {}) {
  SignalReading r;
  r.observation.replicas_reporting = replicas;
  r.observation.queue_depth = depth;
  r.loads = std::move(loads);
  return r;
}

// No traffic at all: every signal the examples' chat LLM reads, at rest.
Expected<SignalReading> idle(int replicas) {
  SignalReading r;
  r.observation.replicas_reporting = replicas;
  r.observation.queue_depth = 0;
  r.observation.running = 0;
  r.observation.kv_cache_usage = 0;
  r.observation.ttft_idle = true;
  return r;
}

Json object_named(const FakeApiServer& fake, const std::string& resource, const std::string& name) {
  for (const auto& o : fake.objects(resource)) {
    if (o["metadata"].value("name", "") == name) return o;
  }
  return Json();
}

std::vector<Json> events_with_reason(const FakeApiServer& fake, const std::string& reason) {
  std::vector<Json> out;
  for (const auto& e : fake.objects("events")) {
    if (e.value("reason", "") == reason) out.push_back(e);
  }
  return out;
}

class ScaleActuatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto t = k8s::Transport::create(k8s::testing::config_for(fake_), {});
    ASSERT_TRUE(t.ok()) << t.error();
    transport_ = std::move(*t);
  }
  ScaleActuator actuator(const policy::InferenceScalingPolicySpec& spec, ActuatorOptions options = {},
                         const policy::PolicySet& set = {}, const std::string& policy = "chat") {
    auto target = workload_target(spec);
    EXPECT_TRUE(target.ok());
    auto tidal = TidalFloors::create(set, policy);
    EXPECT_TRUE(tidal.ok()) << (tidal.ok() ? "" : tidal.error());
    return ScaleActuator(*transport_, *target, spec, std::move(*tidal), std::move(options));
  }

  FakeApiServer fake_{FakeApiServer::Options{}};
  std::unique_ptr<k8s::Transport> transport_;
};

TEST(WorkloadTarget, FollowsWhatRenderScalesAndRefusesARayService) {
  auto spec = chat_spec();
  auto t = workload_target(spec);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->path(), "/apis/apps/v1/namespaces/serving/deployments/chat");
  EXPECT_EQ(t->describe(), "Deployment serving/chat");
  spec.workload_ref.kind = policy::WorkloadRefKind::InferenceService;
  EXPECT_EQ(workload_target(spec)->name, "chat-predictor");  // KServe's predictor Deployment
  spec.workload_ref.kind = policy::WorkloadRefKind::LLMInferenceService;
  spec.replica_shape.nodes_per_replica = 2;
  EXPECT_EQ(workload_target(spec)->path(), "/apis/leaderworkerset.x-k8s.io/v1/namespaces/serving/leaderworkersets/chat-kserve");
  spec.workload_ref.kind = policy::WorkloadRefKind::RayService;
  ASSERT_FALSE(workload_target(spec).ok());
  EXPECT_NE(workload_target(spec).error().find("Ray Serve's autoscaler owns its replicas"), std::string::npos);
}

TEST(SelectorFromText, ReadsTheScaleSubresourcesSelectorAsTheAPIServerWritesIt) {
  auto s = selector_from_text("leaderworkerset.sigs.k8s.io/name=chat,leaderworkerset.sigs.k8s.io/worker-index==0");
  ASSERT_TRUE(s.ok()) << s.error();
  EXPECT_EQ((*s)["matchLabels"], (Json{{"leaderworkerset.sigs.k8s.io/name", "chat"}, {"leaderworkerset.sigs.k8s.io/worker-index", "0"}}));
  s = selector_from_text("app=chat,tier in (a, b),zone notin (x),gpu,!spot,team!=ads");
  ASSERT_TRUE(s.ok()) << s.error();
  EXPECT_EQ((*s)["matchExpressions"], Json::parse(R"([
    {"key":"tier","operator":"In","values":["a","b"]},
    {"key":"zone","operator":"NotIn","values":["x"]},
    {"key":"gpu","operator":"Exists"},
    {"key":"spot","operator":"DoesNotExist"},
    {"key":"team","operator":"NotIn","values":["ads"]}])"));
  EXPECT_EQ(selector_from_text("").error(), "status.selector \"\": an empty requirement");
  EXPECT_EQ(selector_from_text("a=b,,c=d").error(), "status.selector \"a=b,,c=d\": an empty requirement");
  EXPECT_EQ(selector_from_text("tier in a").error(), "status.selector \"tier in a\": \"tier in a\" is not key in (values)");
  EXPECT_EQ(selector_from_text("=x").error(), "status.selector \"=x\": \"=x\" has no key");
  // Found by fuzz/scale_fuzzer: requirements without a key.
  EXPECT_EQ(selector_from_text("a=b,!=x").error(), "status.selector \"a=b,!=x\": \"!=x\" has no key");
  EXPECT_EQ(selector_from_text("!").error(), "status.selector \"!\": \"!\" has no key");
}

TEST_F(ScaleActuatorTest, ScalesOutThroughTheScaleSubresourceAndSaysWhyInAnEvent) {
  fake_.put("deployments", deployment("serving", "chat", 2, 2));
  auto a = actuator(chat_spec());
  // 40 waiting at 8 per replica: ceil(40 / 8) = 5.
  const auto sync = a.sync([](std::int64_t) { return queue(40, 2); }, kTuesdayMorning);
  EXPECT_EQ(sync.error, "");
  EXPECT_EQ(sync.step.current, 2);
  EXPECT_EQ(sync.step.ready, 2);
  EXPECT_EQ(sync.target, 5);
  EXPECT_TRUE(sync.written);
  EXPECT_TRUE(sync.costs.empty());  // a scale-out writes no costs
  const Json d = object_named(fake_, "deployments", "chat");
  EXPECT_EQ(d["spec"]["replicas"], 5);
  EXPECT_EQ(d["spec"]["selector"]["matchLabels"]["app"], "chat");  // the rest of the object kept
  EXPECT_EQ(d["metadata"]["generation"], 2);
  const auto events = events_with_reason(fake_, "SuccessfulRescale");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0]["regarding"]["kind"], "Deployment");
  EXPECT_EQ(events[0]["regarding"]["name"], "chat");
  EXPECT_NE(events[0].value("note", "").find("New size: 5; reason: "), std::string::npos) << events[0].dump();
  EXPECT_EQ(to_json(sync)["written"], true);
  EXPECT_EQ(to_json(sync)["target"], 5);

  // The same load a sync later: 5 replicas are what it asks for; nothing is written.
  const std::size_t requests = fake_.requests();
  const auto again = a.sync([](std::int64_t) { return queue(40, 5); }, kTuesdayMorning + 15'000);
  EXPECT_EQ(again.target, 5);
  EXPECT_FALSE(again.written);
  EXPECT_EQ(again.error, "");
  EXPECT_EQ(fake_.requests(), requests + 3);  // the scale, the Deployment, the HPAs: reads only
}

TEST_F(ScaleActuatorTest, AScaleInWritesDeletionCostsFirstAndOnlyOnTheDeploymentsPods) {
  fake_.put("deployments", deployment("serving", "chat", 4, 4));
  fake_.put("pods", pod("serving", "chat-a", "chat", "10.0.0.1"));
  fake_.put("pods", pod("serving", "chat-b", "chat", "10.0.0.2"));
  fake_.put("pods", pod("serving", "chat-c", "chat", "10.0.0.3"));
  fake_.put("pods", pod("serving", "chat-d", "chat", "10.0.0.4"));
  // Another team's pod in the namespace, which a forged `pod` label names.
  fake_.put("pods", pod("serving", "billing-0", "billing", "10.0.0.9"));
  // Two pods on the host network: one address, so a page scraped there names neither.
  fake_.put("pods", pod("serving", "chat-host-1", "chat", "192.168.1.5"));
  fake_.put("pods", pod("serving", "chat-host-2", "chat", "192.168.1.5"));
  auto a = actuator(chat_spec());
  const std::vector<ReplicaLoad> loads{{"chat-a", 3},    {"chat-b", 0.4}, {"10.0.0.3:8000", 7},
                                       {"billing-0", 0}, {"chat-d", 1},   {"192.168.1.5:8000", 2}};
  const auto sync = a.sync([&](std::int64_t) { return queue(0, 4, loads); }, kTuesdayMorning);
  EXPECT_EQ(sync.error, "");
  EXPECT_EQ(sync.target, 3);  // an idle service gives back one replica per window
  EXPECT_TRUE(sync.written);
  ASSERT_EQ(sync.costs.size(), 6u);
  std::map<std::string, CostWrite> by_replica;
  for (const auto& c : sync.costs) by_replica[c.replica] = c;
  EXPECT_EQ(by_replica["billing-0"].pod, "");
  EXPECT_EQ(by_replica["billing-0"].outcome, "no pod of Deployment serving/chat is named or addressed so");
  EXPECT_EQ(by_replica["10.0.0.3:8000"].pod, "chat-c");  // a scraped page's address
  EXPECT_EQ(by_replica["192.168.1.5:8000"].outcome, "2 pods of Deployment serving/chat have that address");
  for (const char* p : {"chat-a", "chat-b", "chat-d", "10.0.0.3:8000"}) EXPECT_EQ(by_replica[p].outcome, "written") << p;
  const auto cost_of = [&](const std::string& name) {
    return object_named(fake_, "pods", name)["metadata"]["annotations"].value(std::string(kPodDeletionCostAnnotation), "");
  };
  EXPECT_EQ(cost_of("chat-a"), "3");
  EXPECT_EQ(cost_of("chat-b"), "0");
  EXPECT_EQ(cost_of("chat-c"), "7");
  EXPECT_EQ(cost_of("chat-d"), "1");
  for (const char* untouched : {"billing-0", "chat-host-1", "chat-host-2"}) {
    EXPECT_FALSE(object_named(fake_, "pods", untouched)["metadata"].contains("annotations")) << untouched;
  }
  // Costs before the count: every pod PATCH precedes the scale PUT.
  const auto targets = fake_.targets();
  std::size_t last_pod = 0, scale = 0;
  for (std::size_t i = 0; i < targets.size(); ++i) {
    if (targets[i].starts_with("/api/v1/namespaces/serving/pods/")) last_pod = i;
    if (targets[i].starts_with("/apis/apps/v1/namespaces/serving/deployments/chat/scale")) scale = i;
  }
  EXPECT_LT(last_pod, scale);
  EXPECT_EQ(object_named(fake_, "deployments", "chat")["spec"]["replicas"], 3);

  // The next scale-in a window later: costs that did not change are not written again.
  fake_.put("deployments", deployment("serving", "chat", 3, 3));
  const auto later = a.sync([&](std::int64_t) { return queue(0, 3, {{"chat-a", 3}, {"chat-b", 2}}); },
                            kTuesdayMorning + 61'000);
  EXPECT_EQ(later.target, 2);
  ASSERT_EQ(later.costs.size(), 2u);
  EXPECT_EQ(later.costs[0].replica, "chat-b");  // lowest first
  EXPECT_EQ(later.costs[0].outcome, "written");
  EXPECT_EQ(later.costs[1].outcome, "unchanged");
  EXPECT_EQ(cost_of("chat-b"), "2");
}

TEST_F(ScaleActuatorTest, AHorizontalPodAutoscalerOnTheSameDeploymentStopsEveryWrite) {
  fake_.put("deployments", deployment("serving", "chat", 2, 2));
  // One on another Deployment does not count.
  fake_.put("horizontalpodautoscalers",
            {{"metadata", {{"name", "other"}, {"namespace", "serving"}}},
             {"spec", {{"scaleTargetRef", {{"apiVersion", "apps/v1"}, {"kind", "Deployment"}, {"name", "billing"}}}}}});
  auto a = actuator(chat_spec());
  EXPECT_TRUE(a.sync([](std::int64_t) { return queue(40, 2); }, kTuesdayMorning).written);
  fake_.put("horizontalpodautoscalers",
            {{"metadata", {{"name", "keda-hpa-chat"}, {"namespace", "serving"}}},
             {"spec", {{"scaleTargetRef", {{"apiVersion", "apps/v1"}, {"kind", "Deployment"}, {"name", "chat"}}}}}});
  const auto sync = a.sync([](std::int64_t) { return queue(80, 5); }, kTuesdayMorning + 15'000);
  EXPECT_EQ(sync.target, 8);
  EXPECT_FALSE(sync.written);
  EXPECT_NE(sync.error.find("Deployment serving/chat is scaled by HorizontalPodAutoscaler serving/keda-hpa-chat"),
            std::string::npos)
      << sync.error;
  EXPECT_EQ(object_named(fake_, "deployments", "chat")["spec"]["replicas"], 5);
}

TEST_F(ScaleActuatorTest, AChangeBetweenTheReadAndTheWriteIsAConflictNotAnOverwrite) {
  fake_.put("deployments", deployment("serving", "chat", 2, 2));
  auto a = actuator(chat_spec());
  // Someone scales the Deployment by hand while the signals are read.
  const auto sync = a.sync(
      [&](std::int64_t) {
        fake_.put("deployments", deployment("serving", "chat", 7, 2));
        return queue(40, 2);
      },
      kTuesdayMorning);
  EXPECT_EQ(sync.target, 5);
  EXPECT_FALSE(sync.written);
  EXPECT_NE(sync.error.find("409"), std::string::npos) << sync.error;
  EXPECT_NE(sync.error.find("the object has been modified"), std::string::npos) << sync.error;
  EXPECT_EQ(object_named(fake_, "deployments", "chat")["spec"]["replicas"], 7);
  const auto failed = events_with_reason(fake_, "FailedRescale");
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_EQ(failed[0]["type"], "Warning");
}

TEST_F(ScaleActuatorTest, DryRunDecidesAndWritesNothing) {
  fake_.put("deployments", deployment("serving", "chat", 4, 4));
  fake_.put("pods", pod("serving", "chat-a", "chat", "10.0.0.1"));
  auto a = actuator(chat_spec(), {.dry_run = true});
  const auto sync = a.sync([](std::int64_t) { return queue(0, 4, {{"chat-a", 2}}); }, kTuesdayMorning);
  EXPECT_EQ(sync.target, 3);
  EXPECT_FALSE(sync.written);
  EXPECT_EQ(sync.error, "");
  ASSERT_EQ(sync.costs.size(), 1u);
  EXPECT_EQ(sync.costs[0].outcome, "dry run");
  EXPECT_EQ(object_named(fake_, "deployments", "chat")["spec"]["replicas"], 4);
  EXPECT_FALSE(object_named(fake_, "pods", "chat-a")["metadata"].contains("annotations"));
  EXPECT_TRUE(fake_.objects("events").empty());
}

TEST_F(ScaleActuatorTest, SignalsThatCannotBeReadHoldTheCount) {
  fake_.put("deployments", deployment("serving", "chat", 4, 4));
  auto a = actuator(chat_spec());
  const auto sync = a.sync([](std::int64_t) -> Expected<SignalReading> { return Unexpected{std::string("Prometheus down")}; },
                           kTuesdayMorning);
  EXPECT_TRUE(sync.step.held);
  EXPECT_EQ(sync.target, 4);
  EXPECT_FALSE(sync.written);
  EXPECT_EQ(object_named(fake_, "deployments", "chat")["spec"]["replicas"], 4);
}

TEST_F(ScaleActuatorTest, AWorkloadThatCannotBeReadOrSelectsEverythingWritesNothing) {
  auto a = actuator(chat_spec());
  const auto missing = a.sync([](std::int64_t) { return queue(40, 2); }, kTuesdayMorning);
  EXPECT_NE(missing.error.find("GET Deployment serving/chat scale: "), std::string::npos) << missing.error;
  EXPECT_NE(missing.error.find("404"), std::string::npos) << missing.error;
  EXPECT_FALSE(missing.written);

  Json d = deployment("serving", "chat", 2, 2);
  d["spec"]["selector"] = Json::object();
  fake_.put("deployments", d);
  const auto everything = a.sync([](std::int64_t) { return queue(40, 2); }, kTuesdayMorning + 15'000);
  EXPECT_NE(everything.error.find("spec.selector: empty"), std::string::npos) << everything.error;
  EXPECT_EQ(object_named(fake_, "deployments", "chat")["spec"]["replicas"], 2);

  d["spec"]["selector"] = {{"matchExpressions", {{{"key", "app"}, {"operator", "Near"}}}}};
  fake_.put("deployments", d);
  const auto bad = a.sync([](std::int64_t) { return queue(40, 2); }, kTuesdayMorning + 30'000);
  EXPECT_NE(bad.error.find("operator \"Near\" is not In, NotIn, Exists or DoesNotExist"), std::string::npos) << bad.error;
}

TEST_F(ScaleActuatorTest, AMalformedObjectFromTheApiServerEndsTheSyncWithItsError) {
  fake_.put("deployments", deployment("serving", "chat", 2, 2));
  // An HPA whose spec is not an object (the fake, like a broken server, keeps what it gets).
  fake_.put("horizontalpodautoscalers", {{"metadata", {{"name", "mangled"}, {"namespace", "serving"}}}, {"spec", "x"}});
  auto a = actuator(chat_spec());
  const auto sync = a.sync([](std::int64_t) { return queue(40, 2); }, kTuesdayMorning);
  EXPECT_FALSE(sync.written);
  EXPECT_NE(sync.error.find("a malformed object from the API server: "), std::string::npos) << sync.error;
  EXPECT_EQ(object_named(fake_, "deployments", "chat")["spec"]["replicas"], 2);
  // A pod condition of the wrong type is not Ready, not an exception (pool_view).
  Json p = pod("serving", "chat-a", "chat", "10.0.0.1");
  p["status"]["conditions"] = {{{"type", 7}, {"status", true}}};
  EXPECT_EQ(replica_phases({p}), (ReplicaPhases{0, 0, 0, 1}));
}

TEST_F(ScaleActuatorTest, TheTidalFloorInForceLiftsAnIdleServiceByDayAndNotByNight) {
  // The examples: customer-service-llm (an InferenceService: KServe's predictor Deployment),
  // floor 6 from 08:00 (prewarm) to 20:00 on weekdays in Shanghai, 1 at night.
  const policy::PolicySet set = gpubank::testing::examples_plus();
  const policy::PolicyObject* llm = nullptr;
  for (const auto& p : set.policies()) {
    if (p.name() == "customer-service-llm") llm = &p;
  }
  ASSERT_NE(llm, nullptr);
  const auto& spec = llm->as<policy::InferenceScalingPolicySpec>();
  fake_.put("deployments", deployment("customer-service", "customer-service-llm-predictor", 2, 2));
  auto a = actuator(spec, {}, set, "customer-service-llm");
  const auto day = a.sync([](std::int64_t) { return idle(2); }, kTuesdayMorning);
  EXPECT_EQ(day.error, "");
  EXPECT_LE(day.step.recommendation.desired, 2);  // idle: the real-time autoscaler asks for no more
  EXPECT_EQ(day.target, 6);
  EXPECT_TRUE(day.written);
  ASSERT_TRUE(day.tidal);
  EXPECT_EQ(day.tidal->floor_in_force, 6);
  EXPECT_NE(day.decision.find("TidalPolicy/weekday-serving-training: tidal floor 6"), std::string::npos) << day.decision;
  EXPECT_EQ(object_named(fake_, "deployments", "customer-service-llm-predictor")["spec"]["replicas"], 6);
  EXPECT_EQ(to_json(day)["tidal"]["floorInForce"], 6);

  // 23:00 in Shanghai: the night floor is 1 and the idle service comes down, one step of
  // its scale-down policy at a time.
  fake_.put("deployments", deployment("customer-service", "customer-service-llm-predictor", 6, 6));
  const auto night = a.sync([](std::int64_t) { return idle(6); }, kTuesdayMorning + 13LL * 3'600'000);
  EXPECT_EQ(night.error, "");
  EXPECT_EQ(night.tidal->floor_in_force, night.step.recommendation.desired);
  EXPECT_LT(night.target, 6);
  EXPECT_TRUE(night.written);
}

}  // namespace
}  // namespace gpubank::autoscale
