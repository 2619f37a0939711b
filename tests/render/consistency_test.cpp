#include "render/consistency.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include "policy/rules.hpp"
#include "render/scaling.hpp"
#include "render/scaling_support.hpp"

namespace gpubank::render {
namespace {

using policy::GPUQuotaPolicySpec;
using policy::InferenceScalingPolicySpec;
using policy::Kind;
using policy::PlatformGuardrailsSpec;
using policy::TidalPolicySpec;
using testing::edit;
using testing::examples_with;
using testing::expect_valid;

std::vector<const Diagnostic*> errors(const ConsistencyReport& r) {
  std::vector<const Diagnostic*> out;
  for (const auto& d : r.diagnostics) {
    if (d.severity == Severity::Error) out.push_back(&d);
  }
  return out;
}

std::string all(const ConsistencyReport& r) {
  std::string s;
  for (const auto& d : r.diagnostics) s += d.to_string() + "\n";
  return s;
}

const ServiceCapacity& service(const ConsistencyReport& r, const std::string& policy) {
  auto it = std::find_if(r.services.begin(), r.services.end(), [&](const auto& s) { return s.policy == policy; });
  if (it == r.services.end()) throw std::runtime_error("no row for " + policy);
  return *it;
}

// Exactly one error, with this rule, about this object and field.
const Diagnostic& only_error(const ConsistencyReport& r, std::string_view rule, const std::string& kind,
                             const std::string& name, const std::string& path) {
  const auto e = errors(r);
  if (e.size() != 1) throw std::runtime_error("expected one error, got:\n" + all(r));
  EXPECT_EQ(e[0]->rule, rule);
  EXPECT_EQ(e[0]->kind, kind);
  EXPECT_EQ(e[0]->name, name);
  EXPECT_EQ(e[0]->path, path);
  EXPECT_GT(e[0]->pos.line, 0) << e[0]->to_string();
  return *e[0];
}

void expect_contains(const std::string& text, const std::string& part) {
  EXPECT_NE(text.find(part), std::string::npos) << "\"" << part << "\" not in: " << text;
}

TEST(Consistency, TheExamplesAgreeOnEveryLayer) {
  const auto set = examples_with();
  expect_valid(set);
  const auto r = check_consistency(set);
  EXPECT_TRUE(r.diagnostics.empty()) << all(r);
  EXPECT_TRUE(r.ok());

  ASSERT_EQ(r.services.size(), 2u);
  const auto& llm = r.services[0];  // h100-inference sorts first
  EXPECT_EQ(llm.policy, "customer-service-llm");
  EXPECT_EQ(llm.workload, "InferenceService customer-service/customer-service-llm");
  EXPECT_EQ(llm.required, 32);       // 8 x TP=4
  EXPECT_EQ(llm.peak_floor, 24);     // daytime floor 6 x 4
  EXPECT_EQ(llm.quota_max_capacity, 40);
  EXPECT_EQ(llm.guardrail_max_capacity, 48);
  EXPECT_EQ(llm.queue_allows, 40);   // nominal 32 + 8 borrowed (its cap) of the 16 no one is guaranteed
  EXPECT_EQ(llm.pool_allows, 48);    // 6 nodes x 2 replicas
  EXPECT_EQ(llm.autoscaler_allows, 32);
  EXPECT_EQ(llm.burst_headroom, 4);
  EXPECT_EQ(llm.lendable_to_non_preemptible, 16);  // customer-service claims its 32; the Cohort's 16 no one
  const auto& emb = r.services[1];
  EXPECT_EQ(emb.policy, "customer-service-embeddings");
  EXPECT_EQ(emb.required, 8);
  EXPECT_EQ(emb.queue_allows, 16);  // nominal 8 + 8 borrowed of the 8 L40S no one is guaranteed
  EXPECT_EQ(emb.pool_allows, 16);

  ASSERT_EQ(r.groups.size(), 11u);  // one per GPUQuotaPolicy
  const auto cs = std::find_if(r.groups.begin(), r.groups.end(),
                               [](const auto& g) { return g.queue == "customer-service-h100-inference"; });
  ASSERT_NE(cs, r.groups.end());
  EXPECT_EQ(cs->guaranteed, 32);
  EXPECT_EQ(cs->borrow_cap, 8);
  EXPECT_EQ(cs->lending_floor, 8);
  EXPECT_EQ(cs->lendable, 24);
  EXPECT_EQ(cs->queue_reach, 40);
  EXPECT_EQ(cs->services_required, 32);
  EXPECT_EQ(cs->services_floor, 24);
  const auto search = std::find_if(r.groups.begin(), r.groups.end(),
                                   [](const auto& g) { return g.queue == "search-h100-rdma-training"; });
  ASSERT_NE(search, r.groups.end());
  EXPECT_EQ(search->queue_reach, 48);  // 32 + 16 borrowed of the 24 ads and research lend and the Cohort's 8

  ASSERT_EQ(r.pools.size(), 4u);
  EXPECT_EQ(r.pools[0].pool, "h100-inference");
  EXPECT_EQ(r.pools[0].cohort_quota, 16);  // 48 - 32 guaranteed: the Cohort's own quota
  EXPECT_EQ(r.pools[0].inference_required, 32);
}

// The classic case in each layer: maxReplicas 8 x TP=4 needs 32 GPUs, and the layer
// allows only 24.

TEST(Consistency, QueueLayerAllowsOnly24) {
  auto set = examples_with();
  // customer-service keeps 16 (lends 8 of it) and may borrow 16. research (8) and ads
  // (16) now guarantee GPUs on the pool and lend none of them; the 8 left are no one's
  // (the Cohort's own quota). The quota's maxCapacity 32 passes validation, but the
  // cohort can lend customer-service only those 8. (The daytime floor drops to 4
  // replicas, which the training groups' guarantees leave room for.)
  edit<GPUQuotaPolicySpec>(set, Kind::GPUQuotaPolicy, "customer-service-inference-h100", [](auto& q) {
    q.guaranteed = 16;
    q.borrow_limit = 16;
    q.max_capacity = 32;
    q.lending_limit = 8;
  });
  edit<GPUQuotaPolicySpec>(set, Kind::GPUQuotaPolicy, "research-borrow-h100-inference", [](auto& q) {
    q.guaranteed = 8;
    q.borrow_limit = 8;
    q.lending_limit = 0;
  });
  edit<GPUQuotaPolicySpec>(set, Kind::GPUQuotaPolicy, "ads-borrow-h100-inference", [](auto& q) {
    q.guaranteed = 16;
    q.borrow_limit = 0;
    q.lending_limit = 0;
  });
  edit<TidalPolicySpec>(set, Kind::TidalPolicy, "weekday-serving-training",
                        [](auto& t) { t.windows[0].inference_replica_floor = policy::ReplicaFloor{4, {}}; });
  expect_valid(set);
  const auto r = check_consistency(set);
  const auto& d = only_error(r, rule::kQueueBelowMaxReplicas, "InferenceScalingPolicy", "customer-service-llm",
                             "spec.maxReplicas");
  expect_contains(d.message, "= 32 GPUs");
  expect_contains(d.message, "ClusterQueue customer-service-h100-inference reaches at most 24: nominalQuota 16 + 8 borrowed");
  expect_contains(d.message, "so 6 replicas (24 GPUs)");
  EXPECT_EQ(service(r, "customer-service-llm").queue_allows, 24);
  EXPECT_FALSE(r.ok());
}

TEST(Consistency, PoolLayerAllowsOnly24) {
  auto set = examples_with();
  // Six nodes of 6 GPUs: a TP=4 replica per node, 2 GPUs stranded on each.
  edit<PlatformGuardrailsSpec>(set, Kind::PlatformGuardrails, "platform", [](auto& g) {
    for (auto& pool : g.pools) {
      if (pool.name == "h100-inference") {
        pool.capacity = 36;
        pool.gpus_per_node = 6;
      }
    }
    for (auto& group : g.groups) {
      if (group.name == "customer-service") group.limits["h100-inference"].max_capacity = 36;
    }
  });
  edit<GPUQuotaPolicySpec>(set, Kind::GPUQuotaPolicy, "customer-service-inference-h100", [](auto& q) {
    q.borrow_limit = 4;
    q.max_capacity = 36;
  });
  edit<TidalPolicySpec>(set, Kind::TidalPolicy, "weekday-serving-training",
                        [](auto& t) { t.windows[1].training_borrow_limit = 28; });
  expect_valid(set);
  const auto r = check_consistency(set);
  const auto& d = only_error(r, rule::kPoolBelowMaxReplicas, "InferenceScalingPolicy", "customer-service-llm",
                             "spec.maxReplicas");
  expect_contains(d.message, "= 32 GPUs");
  expect_contains(d.message, "pool h100-inference (6 nodes of up to 6 GPUs) holds only 6 replicas of 4 GPUs");
  expect_contains(d.message, "(24 GPUs)");
  EXPECT_EQ(service(r, "customer-service-llm").pool_allows, 24);
  EXPECT_EQ(service(r, "customer-service-llm").queue_allows, 36);  // the queue alone would allow it
}

TEST(Consistency, AutoscalerLayerAllowsOnly24) {
  // The team's InferenceService keeps KServe's own autoscaler, capped at 6 replicas.
  const auto set = examples_with({"isvc-capped.yaml"});
  expect_valid(set);
  const auto r = check_consistency(set);
  const auto& d = only_error(r, rule::kAutoscalerBelowMaxReplicas, "InferenceScalingPolicy", "customer-service-llm",
                             "spec.maxReplicas");
  expect_contains(d.message, "= 32 GPUs");
  expect_contains(d.message, "isvc-capped.yaml:13) sets spec.predictor.maxReplicas 6 with autoscalerClass hpa");
  expect_contains(d.message, "stops at 6 replicas (24 GPUs)");
  EXPECT_EQ(service(r, "customer-service-llm").autoscaler_allows, 24);
}

TEST(Consistency, WorkloadPodsAskingForAnotherShapeAreCaught) {
  // autoscalerClass external: KServe's cap is inert, but each pod asks for 8 GPUs.
  const auto set = examples_with({"isvc-shape.yaml"});
  expect_valid(set);
  const auto r = check_consistency(set);
  const auto& d = only_error(r, rule::kWorkloadShapeMismatch, "InferenceScalingPolicy", "customer-service-llm",
                             "spec.replicaShape.gpuPerReplica");
  expect_contains(d.message, "asks for 8 nvidia.com/gpu");
  expect_contains(d.message, "needs 64 GPUs, not 32");
  EXPECT_EQ(service(r, "customer-service-llm").autoscaler_allows, 32);
}

TEST(Consistency, TidalFloorAboveWhatIsNotLentOut) {
  auto set = examples_with();
  // At night the pool lends training all it may borrow: trainingBorrowLimit 40, within
  // the 24 customer-service lends of its 32 plus the 16 the Cohort holds (no one is
  // guaranteed them). That leaves 8: a floor of 7 x 4 does not fit.
  edit<TidalPolicySpec>(set, Kind::TidalPolicy, "weekday-serving-training",
                        [](auto& t) { t.windows[1].inference_replica_floor = policy::ReplicaFloor{7, {}}; });
  expect_valid(set);
  const auto r = check_consistency(set);
  const auto& d = only_error(r, rule::kTidalFloorExceedsUnlent, "TidalPolicy", "weekday-serving-training",
                             "spec.windows[1].inferenceReplicaFloor");
  expect_contains(d.message, "window \"nighttime-training\"");
  expect_contains(d.message, "keeps 28 GPUs serving on pool h100-inference (customer-service-llm 7 x 4)");
  expect_contains(d.message, "leaving 8 not lent out");
}

// research serves a reranker on the same pool, with its own tidal policy.
policy::PolicySet with_research_reranker(int llm_night_floor, const char* start, const char* end) {
  auto set = examples_with();
  policy::PolicyObject rerank = *set.find(Kind::InferenceScalingPolicy, "customer-service-llm");
  rerank.metadata.name = "research-rerank";
  auto& p = std::get<InferenceScalingPolicySpec>(rerank.spec);
  p.workload_ref = {policy::WorkloadRefKind::Deployment, "rerank", "research"};
  p.business_group = "research";
  p.max_replicas = 2;
  set.upsert(rerank);
  policy::PolicyObject tidal = *set.find(Kind::TidalPolicy, "weekday-serving-training");
  tidal.metadata.name = "research-rerank-batch";
  auto& t = std::get<TidalPolicySpec>(tidal.spec);
  policy::TidalWindow w;
  w.name = "batch";
  w.start = CronSchedule::parse(start).value();
  w.end = CronSchedule::parse(end).value();
  w.inference_replica_floor = policy::ReplicaFloor{2, {}};
  t.windows = {w};
  t.targets = {{"research-rerank"}, {}, "h100-inference"};
  set.upsert(tidal);
  edit<TidalPolicySpec>(set, Kind::TidalPolicy, "weekday-serving-training", [&](auto& s) {
    s.windows[1].inference_replica_floor = policy::ReplicaFloor{llm_night_floor, {}};
    // Training borrows 24 at night, leaving 24 of the 48 for the floors.
    s.windows[1].training_borrow_limit = 24;
  });
  return set;
}

TEST(Consistency, AnotherTidalPolicysFloorCountsWhileItsWindowOverlaps) {
  // Nightly 22:00-06:00 overlaps the LLM's night window: 5 x 4 + 2 x 4 = 28 > 24.
  auto set = with_research_reranker(5, "0 22 * * *", "0 6 * * *");
  expect_valid(set);
  auto r = check_consistency(set);
  const auto& d = only_error(r, rule::kTidalFloorExceedsUnlent, "TidalPolicy", "weekday-serving-training",
                             "spec.windows[1].inferenceReplicaFloor");
  expect_contains(d.message, "keeps 28 GPUs serving on pool h100-inference (customer-service-llm 5 x 4, research-rerank 2 x 4)");
  // 4 x 4 + 2 x 4 = 24 fits exactly.
  EXPECT_TRUE(check_consistency(with_research_reranker(4, "0 22 * * *", "0 6 * * *")).ok());
  // Saturday afternoons never meet the weekday night window: the reranker keeps its floor of 1.
  set = with_research_reranker(5, "0 12 * * 6", "0 18 * * 6");
  expect_valid(set);
  r = check_consistency(set);
  EXPECT_TRUE(r.ok()) << all(r);
}

TEST(Consistency, ServicesOfOneGroupThatCannotAllScaleOutTogether) {
  auto set = examples_with();
  policy::PolicyObject second = *set.find(Kind::InferenceScalingPolicy, "customer-service-llm");
  second.metadata.name = "customer-service-rerank";
  auto& p = std::get<InferenceScalingPolicySpec>(second.spec);
  p.workload_ref.name = "rerank";
  p.min_replicas = 3;
  p.max_replicas = 3;
  set.upsert(second);
  // At night training may borrow only 24, so the two services' floors (4 + 12) are not
  // what is in conflict.
  edit<TidalPolicySpec>(set, Kind::TidalPolicy, "weekday-serving-training",
                        [](auto& t) { t.windows[1].training_borrow_limit = 24; });
  expect_valid(set);
  const auto r = check_consistency(set);
  std::vector<std::string> rules;
  for (const auto* e : errors(r)) rules.push_back(e->rule + " " + e->kind + "/" + e->name);
  std::sort(rules.begin(), rules.end());
  EXPECT_EQ(rules, (std::vector<std::string>{
                       "render.queue-below-max-replicas InferenceScalingPolicy/customer-service-llm",
                       "render.services-exceed-queue GPUQuotaPolicy/customer-service-inference-h100"}))
      << all(r);
  // The queue reaches 40 (32 + 8 borrowed); the services need 32 + 12. The rerank
  // service's floor (3 x 4) sits in the same queue: 40 - 12 leaves 7 LLM replicas.
  EXPECT_EQ(service(r, "customer-service-llm").queue_allows, 28);
}

TEST(Consistency, ServingMustOutrankTheTrainingThatBorrowsItsPool) {
  auto set = examples_with();
  edit<PlatformGuardrailsSpec>(set, Kind::PlatformGuardrails, "platform", [](auto& g) {
    std::erase_if(g.priorities, [](const auto& r) { return r.name == "inference-critical"; });
  });
  expect_valid(set);
  const auto r = check_consistency(set);
  const auto& d = only_error(r, rule::kInferencePriorityNotAboveTraining, "InferenceScalingPolicy",
                             "customer-service-llm", "spec.businessGroup");
  expect_contains(d.message, "none (its pods run at priority 0), not above training-high (50000)");
}

TEST(Consistency, NonPreemptibleTrainingMayNotBorrowWhatOthersNeedBack) {
  auto set = examples_with();
  edit<PlatformGuardrailsSpec>(set, Kind::PlatformGuardrails, "platform", [](auto& g) {
    for (auto& r : g.priorities) {
      if (r.name == "training-high") r.preemptible = false;
    }
  });
  expect_valid(set);
  const auto r = check_consistency(set);
  const auto e = errors(r);
  // Both H100 pools; on the MIG pool the 24 slices no one is guaranteed cover what
  // search and ads may borrow.
  ASSERT_EQ(e.size(), 2u) << all(r);
  for (const auto* d : e) {
    EXPECT_EQ(d->rule, rule::kNonPreemptibleBorrowExceedsSpare);
    EXPECT_EQ(d->kind, "PlatformGuardrails");
    EXPECT_EQ(d->path, "spec.priorities[1].preemptible");
  }
  const auto h100 = std::find_if(e.begin(), e.end(), [](const auto* d) {
    return d->message.find("pool h100-inference") != std::string::npos;
  });
  ASSERT_NE(h100, e.end());
  expect_contains((*h100)->message, "may borrow 32 GPUs on pool h100-inference (ads 16, search 16)");
  expect_contains((*h100)->message, "only 16 of the pool's queued GPUs");
  EXPECT_EQ(r.pools[0].non_preemptible_borrow, 32);
}

TEST(Consistency, NotesWhatTheRenderCannotExpress) {
  auto set = examples_with();
  edit<InferenceScalingPolicySpec>(set, Kind::InferenceScalingPolicy, "customer-service-embeddings",
                                   [](auto& p) { p.workload_ref.kind = policy::WorkloadRefKind::RayService; });
  edit<InferenceScalingPolicySpec>(set, Kind::InferenceScalingPolicy, "customer-service-llm",
                                   [](auto& p) { p.scale_down.stabilization_window = Duration(std::chrono::hours(2)); });
  edit<TidalPolicySpec>(set, Kind::TidalPolicy, "weekday-serving-training",
                        [](auto& t) { t.windows[0].start = CronSchedule::parse("*/15 8 * * 1-5").value(); });
  expect_valid(set);
  const auto r = check_consistency(set);
  EXPECT_TRUE(r.ok()) << all(r);
  std::vector<std::string> notes;
  for (const auto& d : r.diagnostics) notes.push_back(d.rule + " " + d.name + " " + d.path);
  std::sort(notes.begin(), notes.end());
  EXPECT_EQ(notes, (std::vector<std::string>{
                       "render.autoscaler-unsupported customer-service-embeddings spec.workloadRef.kind",
                       "render.behavior-clamped customer-service-llm spec.scaleDown.stabilizationWindow",
                       "render.prewarm-not-expressible weekday-serving-training spec.windows[0].prewarmBefore"}));
  EXPECT_FALSE(service(r, "customer-service-embeddings").autoscaler_allows.has_value());

  // And the rendered objects do what the notes say.
  const auto objects = render_scaling(set);
  ASSERT_EQ(objects.size(), 2u);  // no ScaledObject for the RayService
  const Json& spec = objects[0].manifest["spec"];
  EXPECT_EQ(spec["advanced"]["horizontalPodAutoscalerConfig"]["behavior"]["scaleDown"]["stabilizationWindowSeconds"], 3600);
  EXPECT_EQ(spec["triggers"][4]["metadata"]["start"], "*/15 8 * * 1-5");
}

TEST(Consistency, BurstHeadroomThatTheQuotaMayLendIsAWarning) {
  // The examples keep it: customer-service lends at most 24 of its 32 H100s (keeping 8 for
  // the LLM's floor 4 + headroom 4) and 6 of its 8 L40S (keeping the embeddings' 1 + 1).
  {
    const auto r = check_consistency(examples_with());
    for (const auto& d : r.diagnostics) EXPECT_NE(d.rule, rule::kBurstHeadroomLendable) << d.to_string();
  }
  // Without the L40S lendingLimit the whole guarantee may be lent, headroom and all.
  auto set = examples_with();
  edit<GPUQuotaPolicySpec>(set, Kind::GPUQuotaPolicy, "customer-service-l40s", [](auto& q) { q.lending_limit.reset(); });
  // A bigger H100 headroom than its lendingLimit keeps: 4 + 8 GPUs against 8 never lent.
  edit<InferenceScalingPolicySpec>(set, Kind::InferenceScalingPolicy, "customer-service-llm",
                                   [](auto& p) { p.burst_headroom = 8; });
  expect_valid(set);
  const auto r = check_consistency(set);
  EXPECT_TRUE(r.ok()) << all(r);  // a warning, not a conflict
  std::vector<const Diagnostic*> found;
  for (const auto& d : r.diagnostics) {
    if (d.rule == rule::kBurstHeadroomLendable) found.push_back(&d);
  }
  ASSERT_EQ(found.size(), 2u) << all(r);
  for (const auto* d : found) {
    EXPECT_EQ(d->severity, Severity::Warning);
    EXPECT_EQ(d->kind, "GPUQuotaPolicy");
    EXPECT_EQ(d->path, "spec.lendingLimit");
  }
  const std::string text = all(r);
  expect_contains(text, "keep 12 GPUs for their floors and burst headroom (customer-service-llm 4 + 8");
  expect_contains(text, "lends up to 24 of its 32 guaranteed GPUs (lendingLimit), keeping 8");
  expect_contains(text, "set lendingLimit to at most 20");
  expect_contains(text, "keep 2 GPUs for their floors and burst headroom (customer-service-embeddings 1 + 1");
  expect_contains(text, "lends all 8 of its guaranteed GPUs (no lendingLimit)");
  expect_contains(text, "set lendingLimit to at most 6");
}

TEST(Consistency, ReportIsDataAndText) {
  auto set = examples_with();
  edit<TidalPolicySpec>(set, Kind::TidalPolicy, "weekday-serving-training",
                        [](auto& t) { t.windows[1].inference_replica_floor = policy::ReplicaFloor{7, {}}; });
  const auto r = check_consistency(set);
  const Json j = r.to_json();
  EXPECT_EQ(j["services"][0]["policy"], "customer-service-llm");
  EXPECT_EQ(j["services"][0]["requiredGPUs"], 32);
  EXPECT_EQ(j["services"][0]["replicaShape"]["tensorParallelSize"], 4);
  EXPECT_EQ(j["services"][0]["queueAllows"], 40);
  EXPECT_EQ(j["groups"][0]["clusterQueue"], "ads-h100-inference");
  EXPECT_EQ(j["pools"][0]["cohortQuota"], 16);
  EXPECT_EQ(j["errors"], 1);
  EXPECT_EQ(j["diagnostics"][0]["rule"], "render.tidal-floor-exceeds-unlent");
  EXPECT_EQ(j["diagnostics"][0]["path"], "spec.windows[1].inferenceReplicaFloor");
  EXPECT_GT(j["diagnostics"][0]["line"].get<int>(), 0);

  const std::string text = r.to_text();
  expect_contains(text, "InferenceService customer-service/customer-service-llm  customer-service-llm");
  expect_contains(text, "TP4 4/replica");
  expect_contains(text, "customer-service-h100-inference");
  expect_contains(text, "[render.tidal-floor-exceeds-unlent]");
  expect_contains(text, "1 conflicts, 0 warnings");
}

TEST(Consistency, EveryRuleIsRegisteredForGpubankRules) {
  for (auto id : {rule::kQueueBelowMaxReplicas, rule::kPoolBelowMaxReplicas, rule::kAutoscalerBelowMaxReplicas,
                  rule::kServicesExceedQueue, rule::kWorkloadShapeMismatch, rule::kTidalFloorExceedsUnlent,
                  rule::kInferencePriorityNotAboveTraining, rule::kNonPreemptibleBorrowExceedsSpare,
                  rule::kAutoscalerUnsupported, rule::kPrewarmNotExpressible, rule::kBehaviorClamped,
                  rule::kBurstHeadroomLendable}) {
    const policy::RuleInfo* info = policy::find_rule(id);
    ASSERT_NE(info, nullptr) << id;
    EXPECT_EQ(info->scope, policy::RuleScope::PolicySet) << id;
    EXPECT_FALSE(info->has_example) << id;  // shown by these tests, not by `gpubank validate`
    EXPECT_FALSE(info->summary.empty()) << id;
  }
}

}  // namespace
}  // namespace gpubank::render
