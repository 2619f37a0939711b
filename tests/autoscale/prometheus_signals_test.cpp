// read_prometheus_signals: the rendered queries, asked at one instant of a query function
// that answers with Prometheus' own JSON (what /api/v1/query returns), the staleness guard
// and the failures that make the autoscaler hold.
#include <gtest/gtest.h>

#include <map>

#include "autoscale/prometheus_signals.hpp"

namespace gpubank::autoscale {
namespace {

constexpr std::int64_t kNow = 1'796'000'000'000;  // 2026-12-01T...Z, Unix ms

policy::InferenceScalingPolicySpec spec(bool rate) {
  policy::InferenceScalingPolicySpec s;
  s.workload_ref.kind = policy::WorkloadRefKind::InferenceService;
  s.workload_ref.name = "chat";
  s.workload_ref.namespace_ = "serving";
  s.replica_shape = {4, 4};
  s.min_replicas = 1;
  s.max_replicas = 8;
  s.scale_up.queue_depth_per_replica = 8;
  if (rate) s.scale_up.requests_per_second_per_replica = 20;
  return s;
}

// A /api/v1/query answer with one sample (or none) as Prometheus writes it.
std::string vector_body(std::optional<std::string> value) {
  std::string result = value ? R"([{"metric":{},"value":[1796000000,")" + *value + R"("]}])" : "[]";
  return R"({"status":"success","data":{"resultType":"vector","result":)" + result + "}}";
}

struct Answers {
  std::map<std::string, std::string> bodies;  // query -> body
  std::vector<std::string> asked;
  QueryFunction function() {
    return [this](const std::string& q, std::int64_t t) -> Expected<std::vector<serving::PromSample>> {
      EXPECT_EQ(t, kNow);
      asked.push_back(q);
      const auto it = bodies.find(q);
      if (it == bodies.end()) return Unexpected{std::string("http://prometheus:9090: could not connect")};
      return serving::read_prometheus_query(it->second);
    };
  }
};

Answers healthy(const SignalQueries& q, double oldest_s) {
  Answers a;
  a.bodies[q.freshness] = vector_body(std::to_string(oldest_s));
  a.bodies[q.queue_depth] = vector_body("40");
  a.bodies[q.running] = vector_body("96");
  a.bodies[q.ttft_p95] = vector_body("0.72");
  a.bodies[q.kv_cache] = vector_body("2.4");
  a.bodies[q.pods_reporting] = vector_body("3");
  if (!q.request_rate.empty()) a.bodies[q.request_rate] = vector_body("51.5");
  return a;
}

TEST(SignalQueries, AreTheRenderedOnesOverTheRenderedPodsGroupedByTheReplicaLabel) {
  const auto selector = rendered_selector(spec(true));
  ASSERT_TRUE(selector.ok()) << selector.error();
  EXPECT_EQ(selector->matchers, R"(namespace="serving",pod=~"chat-predictor-[a-z0-9]+-[a-z0-9]{5}")");
  EXPECT_EQ(selector->replica_label, "pod");
  const auto q = signal_queries(spec(true), *selector);
  EXPECT_EQ(q.queue_depth, "sum(vllm:num_requests_waiting{" + selector->matchers + "})");
  EXPECT_EQ(q.request_rate, "sum(rate(vllm:request_success_total{" + selector->matchers + "}[2m]))");
  EXPECT_EQ(q.freshness, "min(timestamp(vllm:num_requests_waiting{" + selector->matchers + "}))");
  EXPECT_NE(q.kv_cache.find("avg by (pod) (vllm:kv_cache_usage_perc{"), std::string::npos) << q.kv_cache;

  const auto twin = signal_queries(spec(false), SignalSelector{R"(model_name="chat")", "replica"});
  EXPECT_TRUE(twin.request_rate.empty());  // no rate target, no query
  EXPECT_EQ(twin.pods_reporting, R"(count(count by (replica) (vllm:num_requests_waiting{model_name="chat"})))");
  EXPECT_NE(twin.kv_cache.find("avg by (replica) (vllm:gpu_cache_usage_perc{"), std::string::npos) << twin.kv_cache;

  policy::InferenceScalingPolicySpec ray = spec(false);
  ray.workload_ref.kind = policy::WorkloadRefKind::RayService;
  const auto none = rendered_selector(ray);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().find("--selector"), std::string::npos) << none.error();
}

TEST(ReadPrometheusSignals, FreshAnswersBecomeTheObservation) {
  const auto q = signal_queries(spec(true), SignalSelector{R"(model_name="chat")", "replica"});
  auto answers = healthy(q, (kNow - 20'000) / 1000.0);
  const auto o = read_prometheus_signals(q, answers.function(), kNow, std::chrono::seconds(90));
  ASSERT_TRUE(o.ok()) << o.error();
  EXPECT_EQ(o->t_ms, kNow);
  EXPECT_EQ(o->replicas_reporting, 3);
  EXPECT_EQ(o->queue_depth, 40);
  EXPECT_EQ(o->running, 96);
  EXPECT_EQ(o->ttft_p95_s, 0.72);
  EXPECT_DOUBLE_EQ(*o->kv_cache_usage, 0.8);
  EXPECT_EQ(o->request_rate, 51.5);
  EXPECT_EQ(answers.asked.front(), q.freshness);  // asked first: a stale reading asks nothing else
}

TEST(ReadPrometheusSignals, SamplesOlderThanTheLimitAreRefusedWithTheirAge) {
  const auto q = signal_queries(spec(false), SignalSelector{R"(model_name="chat")", "replica"});
  auto answers = healthy(q, (kNow - 312'000) / 1000.0);
  const auto o = read_prometheus_signals(q, answers.function(), kNow, std::chrono::seconds(90));
  ASSERT_FALSE(o.ok());
  EXPECT_NE(o.error().find("312.0 s old (limit 90.0 s)"), std::string::npos) << o.error();
  EXPECT_NE(o.error().find(kRuleSignalsStale), std::string::npos) << o.error();
  EXPECT_EQ(answers.asked.size(), 1u);
  // At the limit it is still fresh.
  auto edge = healthy(q, (kNow - 90'000) / 1000.0);
  EXPECT_TRUE(read_prometheus_signals(q, edge.function(), kNow, std::chrono::seconds(90)).ok());
}

TEST(ReadPrometheusSignals, NoPodScrapedIsAnObservationWithoutReplicasNotAnError) {
  const auto q = signal_queries(spec(false), SignalSelector{R"(model_name="chat")", "replica"});
  Answers a;
  for (const auto* query : {&q.freshness, &q.queue_depth, &q.running, &q.ttft_p95, &q.kv_cache, &q.pods_reporting}) {
    a.bodies[*query] = vector_body(std::nullopt);
  }
  const auto o = read_prometheus_signals(q, a.function(), kNow, std::chrono::seconds(90));
  ASSERT_TRUE(o.ok()) << o.error();
  EXPECT_EQ(o->replicas_reporting, 0);
  EXPECT_FALSE(o->queue_depth);
  EXPECT_FALSE(o->ttft_p95_s);
}

TEST(ReadPrometheusSignals, AFailedOrMalformedAnswerNamesTheQuery) {
  const auto q = signal_queries(spec(false), SignalSelector{R"(model_name="chat")", "replica"});
  auto down = healthy(q, kNow / 1000.0);
  down.bodies.erase(q.kv_cache);
  const auto failed = read_prometheus_signals(q, down.function(), kNow, std::chrono::seconds(90));
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.error().find("the kv-cache query"), std::string::npos) << failed.error();
  EXPECT_NE(failed.error().find("could not connect"), std::string::npos) << failed.error();
  EXPECT_NE(failed.error().find(kRuleSignalsQuery), std::string::npos) << failed.error();

  auto error = healthy(q, kNow / 1000.0);
  error.bodies[q.ttft_p95] = R"({"status":"error","errorType":"timeout","error":"query timed out in expression evaluation"})";
  const auto timed_out = read_prometheus_signals(q, error.function(), kNow, std::chrono::seconds(90));
  ASSERT_FALSE(timed_out.ok());
  EXPECT_NE(timed_out.error().find("the ttft-p95 query"), std::string::npos) << timed_out.error();
  EXPECT_NE(timed_out.error().find("query timed out"), std::string::npos) << timed_out.error();

  auto nan_time = healthy(q, 0);
  nan_time.bodies[q.freshness] = vector_body("NaN");
  EXPECT_FALSE(read_prometheus_signals(q, nan_time.function(), kNow, std::chrono::seconds(90)).ok());

  auto negative = healthy(q, kNow / 1000.0);
  negative.bodies[q.queue_depth] = vector_body("-3");
  const auto refused = read_prometheus_signals(q, negative.function(), kNow, std::chrono::seconds(90));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().find(serving::kRulePromValue), std::string::npos) << refused.error();
}

TEST(ReadPrometheusLoads, EachReplicasRequestsByItsLabel) {
  const auto q = signal_queries(spec(false), SignalSelector{R"(model_name="chat")", "replica"});
  EXPECT_EQ(q.in_flight_by_replica, R"(sum by (replica) (vllm:num_requests_running{model_name="chat"}) + )"
                                    R"(sum by (replica) (vllm:num_requests_waiting{model_name="chat"}))");
  Answers a;
  a.bodies[q.in_flight_by_replica] = R"({"status":"success","data":{"resultType":"vector","result":[)"
                                     R"({"metric":{"replica":"chat-1"},"value":[1796000000,"42"]},)"
                                     R"({"metric":{"replica":"chat-0"},"value":[1796000000,"7"]}]}})";
  const auto loads = read_prometheus_loads(q, a.function(), kNow);
  ASSERT_TRUE(loads.ok()) << loads.error();
  EXPECT_EQ(*loads, (std::vector<ReplicaLoad>{{"chat-1", 42}, {"chat-0", 7}}));

  a.bodies[q.in_flight_by_replica] = vector_body("3");  // no replica label
  const auto unlabelled = read_prometheus_loads(q, a.function(), kNow);
  ASSERT_FALSE(unlabelled.ok());
  EXPECT_NE(unlabelled.error().find("without the label replica"), std::string::npos) << unlabelled.error();
  a.bodies.clear();
  EXPECT_FALSE(read_prometheus_loads(q, a.function(), kNow).ok());
}

}  // namespace
}  // namespace gpubank::autoscale
