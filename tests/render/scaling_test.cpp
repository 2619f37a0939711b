#include "render/scaling.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <date/date.h>

#include "core/timezone.hpp"
#include "document/yaml_writer.hpp"
#include "policy/prewarm.hpp"
#include "render/scaling_support.hpp"
#include "support/process.hpp"

namespace gpubank::render {
namespace {

namespace fs = std::filesystem;
using testing::edit;
using testing::examples_with;
using testing::expect_valid;

const RenderedObject& object_at(const std::vector<RenderedObject>& objects, const std::string& path) {
  for (const auto& o : objects) {
    if (o.path == path) return o;
  }
  throw std::runtime_error("no rendered object at " + path);
}

std::map<std::string, std::string> as_files(const std::vector<RenderedObject>& objects) {
  std::map<std::string, std::string> out;
  for (const auto& o : objects) out[o.path] = doc::to_yaml(o.manifest);
  return out;
}

std::vector<std::string> changed(const std::map<std::string, std::string>& a, const std::map<std::string, std::string>& b) {
  std::vector<std::string> out;
  for (const auto& [path, text] : b) {
    auto it = a.find(path);
    if (it == a.end() || it->second != text) out.push_back(path);
  }
  for (const auto& [path, text] : a) {
    if (!b.contains(path)) out.push_back(path);
  }
  return out;
}

const std::string kLlmPods =
    R"(namespace="customer-service",pod=~"customer-service-llm-predictor-[a-z0-9]+-[a-z0-9]{5}")";
const std::string kEmbeddingsPods = R"(namespace="customer-service",pod=~"embeddings-[a-z0-9]+-[a-z0-9]{5}")";
const std::string kPrometheus = "http://prometheus-operated.monitoring.svc:9090";

Json prometheus(const std::string& name, const std::string& metric_type, const std::string& query,
                const std::string& threshold) {
  return Json{{"type", "prometheus"},
              {"name", name},
              {"metricType", metric_type},
              {"metadata", Json{{"serverAddress", kPrometheus},
                                {"query", query},
                                {"threshold", threshold},
                                {"ignoreNullValues", "false"}}}};
}

Json cron(const std::string& name, const std::string& start, const std::string& end, const std::string& replicas) {
  return Json{{"type", "cron"},
              {"name", name},
              {"metadata", Json{{"timezone", "Asia/Shanghai"}, {"start", start}, {"end", end}, {"desiredReplicas", replicas}}}};
}

TEST(RenderScaling, ExamplesGiveOneScaledObjectPerServiceAndKServeAnnotationsForTheInferenceService) {
  const auto set = examples_with();
  expect_valid(set);
  const auto objects = render_scaling(set);
  std::vector<std::string> paths;
  for (const auto& o : objects) paths.push_back(o.path);
  EXPECT_EQ(paths, (std::vector<std::string>{"keda/scaledobject-customer-service-customer-service-embeddings.yaml",
                                             "keda/scaledobject-customer-service-customer-service-llm.yaml",
                                             "kserve/inferenceservice-customer-service-customer-service-llm.yaml"}));
}

TEST(RenderScaling, LlmScaledObjectFieldByField) {
  const auto set = examples_with();
  const auto objects = render_scaling(set);
  const RenderedObject& o = object_at(objects, "keda/scaledobject-customer-service-customer-service-llm.yaml");
  const Json& m = o.manifest;
  EXPECT_EQ(m["apiVersion"], "keda.sh/v1alpha1");
  EXPECT_EQ(m["kind"], "ScaledObject");
  EXPECT_EQ(m["metadata"]["name"], "customer-service-llm");
  EXPECT_EQ(m["metadata"]["namespace"], "customer-service");
  EXPECT_EQ(m["metadata"]["labels"][std::string(kLabelManagedBy)], "gpubank");
  // The inference policy and the tidal policy whose windows set its floor; nothing else.
  EXPECT_EQ(m["metadata"]["annotations"][std::string(kAnnotationSource)],
            "InferenceScalingPolicy/customer-service-llm,TidalPolicy/weekday-serving-training");
  ASSERT_EQ(o.sources.size(), 2u);

  const Json& spec = m["spec"];
  EXPECT_EQ(spec["scaleTargetRef"], (Json{{"apiVersion", "apps/v1"}, {"kind", "Deployment"},
                                          {"name", "customer-service-llm-predictor"}}));
  EXPECT_EQ(spec["pollingInterval"], 30);
  EXPECT_EQ(spec["cooldownPeriod"], 600);  // scaleDown.stabilizationWindow 10m
  EXPECT_EQ(spec["minReplicaCount"], 1);
  EXPECT_EQ(spec["maxReplicaCount"], 8);

  const Json& behavior = spec["advanced"]["horizontalPodAutoscalerConfig"]["behavior"];
  // Per modelLoadTime (6m): a doubling, or 5 replicas at once (the daytime floor 6 over
  // minReplicas 1), whichever is more.
  EXPECT_EQ(behavior["scaleUp"], (Json{{"stabilizationWindowSeconds", 30},
                                       {"selectPolicy", "Max"},
                                       {"policies", Json::array({Json{{"type", "Pods"}, {"value", 5}, {"periodSeconds", 360}},
                                                                 Json{{"type", "Percent"}, {"value", 100}, {"periodSeconds", 360}}})}}));
  EXPECT_EQ(behavior["scaleDown"], (Json{{"stabilizationWindowSeconds", 600},
                                         {"selectPolicy", "Max"},
                                         {"policies", Json::array({Json{{"type", "Pods"}, {"value", 1}, {"periodSeconds", 600}}})}}));

  const std::string waiting = "vllm:num_requests_waiting{" + kLlmPods + "}";
  const Json expected = Json::array({
      prometheus("queue-depth", "AverageValue", "sum(" + waiting + ")", "8"),
      prometheus("queue-depth-scale-down", "AverageValue",
                 "count(count by (pod) (" + waiting + ")) * (sum(" + waiting + ") / count(count by (pod) (" + waiting +
                     ")) >= bool 1)",
                 "1"),
      prometheus("ttft-p95", "Value",
                 "(histogram_quantile(0.95, sum by (le) (rate(vllm:time_to_first_token_seconds_bucket{" + kLlmPods +
                     "}[2m]))) >= 0) or (sum(rate(vllm:time_to_first_token_seconds_count{" + kLlmPods +
                     "}[2m])) == 0)",
                 "1.5"),
      prometheus("kv-cache", "AverageValue",
                 "sum(avg by (pod) (vllm:kv_cache_usage_perc{" + kLlmPods + "}) or avg by (pod) (vllm:gpu_cache_usage_perc{" +
                     kLlmPods + "}))",
                 "0.85"),
      // daytime-serving starts at 08:30 with prewarmBefore 30m: the floor rises at 08:00.
      cron("weekday-serving-training-daytime-serving", "0 8 * * 1-5", "0 20 * * 1-5", "6"),
      // No prewarmBefore: the default, modelLoadTime 6m + 2m (policy/prewarm.hpp), as the
      // tidal controller uses it. Harmless before a lower floor: the HPA takes the max.
      cron("weekday-serving-training-nighttime-training", "52 19 * * 1-5", "30 7 * * 2-6", "1"),
  });
  ASSERT_EQ(spec["triggers"].size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) EXPECT_EQ(spec["triggers"][i], expected[i]) << "trigger " << i;
}

TEST(RenderScaling, DeploymentScaledObjectHasOnlyTheSignalsItsPolicySets) {
  const auto set = examples_with();
  const auto objects = render_scaling(set);
  const Json& spec = object_at(objects, "keda/scaledobject-customer-service-customer-service-embeddings.yaml").manifest["spec"];
  EXPECT_EQ(spec["scaleTargetRef"]["name"], "embeddings");
  EXPECT_EQ(spec["minReplicaCount"], 1);
  EXPECT_EQ(spec["maxReplicaCount"], 8);
  EXPECT_EQ(spec["cooldownPeriod"], 300);
  const Json& up = spec["advanced"]["horizontalPodAutoscalerConfig"]["behavior"]["scaleUp"];
  EXPECT_EQ(up["stabilizationWindowSeconds"], 0);  // unset: the HPA's scale-up default
  EXPECT_EQ(up["policies"][0], (Json{{"type", "Pods"}, {"value", 1}, {"periodSeconds", 90}}));
  const Json& t = spec["triggers"];
  ASSERT_EQ(t.size(), 3u);  // no scale-down queue, no kvCacheHighWatermark, no tidal window
  EXPECT_EQ(t[0]["metadata"]["query"], "sum(vllm:num_requests_waiting{" + kEmbeddingsPods + "})");
  EXPECT_EQ(t[0]["metadata"]["threshold"], "32");
  EXPECT_EQ(t[1]["name"], "ttft-p95");
  EXPECT_EQ(t[1]["metadata"]["threshold"], "0.2");
  EXPECT_EQ(t[2]["name"], "request-rate");
  EXPECT_EQ(t[2]["metricType"], "AverageValue");
  EXPECT_EQ(t[2]["metadata"]["query"], "sum(rate(vllm:request_success_total{" + kEmbeddingsPods + "}[2m]))");
  EXPECT_EQ(t[2]["metadata"]["threshold"], "700");
  EXPECT_EQ(object_at(objects, "keda/scaledobject-customer-service-customer-service-embeddings.yaml").sources.size(), 1u);
}

TEST(RenderScaling, KServeGetsTheAnnotationsThatHandItsPredictorToKeda) {
  const auto set = examples_with();
  const auto objects = render_scaling(set);
  const RenderedObject& o = object_at(objects, "kserve/inferenceservice-customer-service-customer-service-llm.yaml");
  Json expected = Json::parse(R"({
    "apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService",
    "metadata": {"name": "customer-service-llm", "namespace": "customer-service",
                 "annotations": {"serving.kserve.io/deploymentMode": "Standard",
                                 "serving.kserve.io/autoscalerClass": "external"}}})");
  // drainTimeout 20m: the hook waits up to 1,200 s after 5 s of endpoint propagation; the
  // grace period adds vLLM's 30 s shutdown.
  expected["spec"]["predictor"]["terminationGracePeriodSeconds"] = 1'235;
  expected["spec"]["predictor"]["model"]["lifecycle"]["preStop"]["exec"]["command"] =
      Json::array({"python3", "-c", drain_script(8080, 1'200, 5)});
  Json got = o.manifest;
  got["metadata"].erase("labels");
  got["metadata"]["annotations"].erase(std::string(kAnnotationSource));
  got["metadata"]["annotations"].erase(std::string(kAnnotationSourceHash));
  EXPECT_EQ(got, expected);
  // Only the annotations and the drain: the team's manifest owns the rest (server-side apply).
  EXPECT_EQ(o.manifest["spec"]["predictor"].size(), 2u);
  EXPECT_EQ(o.manifest["spec"]["predictor"]["model"].size(), 1u);
  ASSERT_EQ(o.sources.size(), 1u);
  EXPECT_EQ(o.sources[0]->name(), "customer-service-llm");
}

// The drain hook against a real HTTP server on loopback serving vLLM's gauges: it waits while
// requests run or wait, returns once both are 0, and gives up at the deadline.
int free_loopback_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t n = sizeof a;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &n) != 0) {
    if (fd >= 0) ::close(fd);
    return -1;
  }
  const int port = ntohs(a.sin_port);
  ::close(fd);
  return port;
}

// A vLLM-like /metrics page whose running requests drop to 0 after `busy_polls` scrapes
// (never, with -1), serving while the hook runs; prints how many scrapes it answered.
std::string drain_harness(int port, int busy_polls) {
  return "import http.server,threading,time,sys\n"
         "polls=[0]\n"
         "class H(http.server.BaseHTTPRequestHandler):\n"
         "    def do_GET(self):\n"
         "        polls[0]+=1\n"
         "        busy=" + std::to_string(busy_polls) + "<0 or polls[0]<=" + std::to_string(busy_polls) + "\n"
         "        body=('# TYPE vllm:num_requests_running gauge\\n'\n"
         "              'vllm:num_requests_running{engine=\"0\",model_name=\"m\"} %d\\n'\n"
         "              'vllm:num_requests_waiting{engine=\"0\",model_name=\"m\"} %d\\n' % (3 if busy else 0, 1 if busy else 0)).encode()\n"
         "        self.send_response(200); self.send_header('Content-Length',str(len(body))); self.end_headers(); self.wfile.write(body)\n"
         "    def log_message(self,*a): pass\n"
         "server=http.server.HTTPServer(('127.0.0.1'," + std::to_string(port) + "),H)\n"
         "threading.Thread(target=server.serve_forever,daemon=True).start()\n"
         "exec(sys.argv[1])\n"
         "print(polls[0])\n";
}

TEST(RenderScaling, TheDrainHookWaitsForTheEnginesRequestsThenLetsSigtermThrough) {
  const auto python = ::gpubank::testing::find_on_path("python3");
  ASSERT_TRUE(python) << "python3 is needed (Debian python3)";
  const int port = free_loopback_port();
  ASSERT_GT(port, 0);
  // Busy for two scrapes, idle at the third: done after two 2-second sleeps.
  auto r = ::gpubank::testing::run_process({python->string(), "-c", drain_harness(port, 2), drain_script(port, 60, 0)});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "3\n");
  // Busy for ever: the deadline (3 s) ends the wait.
  const int port2 = free_loopback_port();
  r = ::gpubank::testing::run_process({python->string(), "-c", drain_harness(port2, -1), drain_script(port2, 3, 0)});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "2\n");  // scrapes at 0 s and 2 s; the next would be past 3 s
  // Nothing listening (the server is gone): no wait at all.
  const int closed = free_loopback_port();
  r = ::gpubank::testing::run_process({python->string(), "-c", "import sys\nexec(sys.argv[1])\nprint('gone')\n",
                            drain_script(closed, 60, 0)});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "gone\n");
}

TEST(RenderScaling, RenderingTwiceIsByteIdentical) {
  const auto a = as_files(render_scaling(examples_with()));
  const auto b = as_files(render_scaling(examples_with()));
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.size(), 3u);
}

TEST(RenderScaling, ChangingOnePolicysTargetChangesOnlyItsOwnObjects) {
  const auto before = as_files(render_scaling(examples_with()));
  auto set = examples_with();
  edit<policy::InferenceScalingPolicySpec>(set, policy::Kind::InferenceScalingPolicy, "customer-service-embeddings",
                                           [](auto& p) { p.scale_up.ttft_p95 = Duration(std::chrono::milliseconds(300)); });
  EXPECT_EQ(changed(before, as_files(render_scaling(set))),
            (std::vector<std::string>{"keda/scaledobject-customer-service-customer-service-embeddings.yaml"}));

  auto set2 = examples_with();
  edit<policy::InferenceScalingPolicySpec>(set2, policy::Kind::InferenceScalingPolicy, "customer-service-llm",
                                           [](auto& p) { p.scale_up.queue_depth_per_replica = 16; });
  const auto after = as_files(render_scaling(set2));
  // Its ScaledObject, and its KServe annotations only through the source hash.
  EXPECT_EQ(changed(before, after),
            (std::vector<std::string>{"keda/scaledobject-customer-service-customer-service-llm.yaml",
                                      "kserve/inferenceservice-customer-service-customer-service-llm.yaml"}));
  const std::string isvc = "kserve/inferenceservice-customer-service-customer-service-llm.yaml";
  std::istringstream a(before.at(isvc));
  std::istringstream b(after.at(isvc));
  std::string la;
  std::string lb;
  int differing = 0;
  while (std::getline(a, la) && std::getline(b, lb)) {
    if (la != lb) {
      ++differing;
      EXPECT_NE(la.find(kAnnotationSourceHash), std::string::npos) << la;
    }
  }
  EXPECT_EQ(differing, 1);
}

TEST(RenderScaling, PrewarmMovesTheCronStartEarlierOnlyWhereOneExpressionSaysIt) {
  auto moved = [](const char* start, std::chrono::minutes lead) {
    policy::TidalWindow w;
    w.name = "w";
    w.start = CronSchedule::parse(start).value();
    w.end = CronSchedule::parse("0 22 * * *").value();
    return prewarm_start(w, Duration(lead));
  };
  using std::chrono::minutes;
  EXPECT_EQ(moved("30 8 * * 1-5", minutes(30)).value(), "0 8 * * 1-5");
  EXPECT_EQ(moved("30 8 * * 1-5", minutes(0)).value(), "30 8 * * 1-5");
  EXPECT_EQ(moved("0 8,20 * * *", minutes(30)).value(), "30 7,19 * * *");
  // Across midnight the weekday moves with it (day-of-month "*": robfig ANDs the fields).
  EXPECT_EQ(moved("15 0 * * MON-FRI", minutes(30)).value(), "45 23 * * 0-4");
  EXPECT_EQ(moved("15 0 * * *", minutes(30)).value(), "45 23 * * *");
  // 08:00, 08:15, ... minus 10m: 07:50 and 08:05 are not one minute list at one hour list.
  EXPECT_FALSE(moved("*/15 8 * * *", minutes(10)).ok());
  // The 1st of the month moved before midnight is the last day of the previous month.
  EXPECT_FALSE(moved("15 0 1 * *", minutes(30)).ok());
  EXPECT_FALSE(moved("15 0,12 * * 1", minutes(30)).ok());
}

TEST(RenderScaling, AnUnsetPrewarmBeforeIsTheSlowestTargetsModelLoadPlusTheMargin) {
  // The controller and the rendered trigger agree: without prewarmBefore the daytime window
  // starts loading the slowest targeted model's modelLoadTime plus 2m early.
  auto set = examples_with();
  edit<policy::TidalPolicySpec>(set, policy::Kind::TidalPolicy, "weekday-serving-training", [](auto& t) {
    t.windows[0].prewarm_before.reset();
    t.targets.inference_policies.push_back("customer-service-embeddings");
  });
  edit<policy::InferenceScalingPolicySpec>(set, policy::Kind::InferenceScalingPolicy, "customer-service-embeddings",
                                           [](auto& p) { p.model_load_time = Duration(std::chrono::minutes(11)); });
  const auto& tidal = set.find(policy::Kind::TidalPolicy, "weekday-serving-training")->as<policy::TidalPolicySpec>();
  EXPECT_EQ(policy::effective_prewarm_before(set, tidal, tidal.windows[0]).to_string(), "13m");
  auto objects = render_scaling(set);
  const Json& triggers =
      object_at(objects, "keda/scaledobject-customer-service-customer-service-llm.yaml").manifest["spec"]["triggers"];
  bool found = false;
  for (const auto& t : triggers) {
    if (t["name"] != "weekday-serving-training-daytime-serving") continue;
    EXPECT_EQ(t["metadata"]["start"], "17 8 * * 1-5");  // 08:30 - 13m
    found = true;
  }
  EXPECT_TRUE(found);
  // Set explicitly, it is taken as written; with no target held in the set, there is no lead.
  policy::TidalWindow w = tidal.windows[0];
  w.prewarm_before = Duration(std::chrono::minutes(1));
  EXPECT_EQ(policy::effective_prewarm_before(set, tidal, w).to_string(), "1m");
  policy::TidalPolicySpec orphan = tidal;
  orphan.targets.inference_policies = {"not-in-the-set"};
  EXPECT_EQ(policy::effective_prewarm_before(set, orphan, tidal.windows[0]).to_string(), "0s");
}

TEST(RenderScaling, CronTriggersKeepLocalTimeAcrossDaylightSavingTime) {
  // A Berlin office's workday floor for the embeddings service, with a 30m prewarm.
  auto set = examples_with({"berlin-workday.yaml"});
  expect_valid(set);
  const auto objects = render_scaling(set);
  const Json& triggers =
      object_at(objects, "keda/scaledobject-customer-service-customer-service-embeddings.yaml").manifest["spec"]["triggers"];
  const Json& c = triggers.back();
  ASSERT_EQ(c["type"], "cron");
  EXPECT_EQ(c["metadata"], (Json{{"timezone", "Europe/Berlin"}, {"start", "30 7 * * 1-5"}, {"end", "0 18 * * 1-5"},
                                 {"desiredReplicas", "4"}}));
  // The expressions are wall-clock times in the zone, so KEDA fires at 07:30 local on
  // both sides of the spring change (29 March 2026): 06:30Z in CET, 05:30Z in CEST,
  // always exactly prewarmBefore ahead of the window's own start.
  const auto* zone = find_time_zone("Europe/Berlin").value();
  const auto rendered = CronSchedule::parse(c["metadata"]["start"].get<std::string>()).value();
  const auto original = CronSchedule::parse("0 8 * * 1-5").value();
  using namespace date;  // NOLINT(google-build-using-namespace): calendar literals
  EXPECT_EQ(rendered.next(sys_days{2026_y / March / 27}, *zone), sys_days{2026_y / March / 27} + std::chrono::hours(6) +
                                                                     std::chrono::minutes(30));
  EXPECT_EQ(rendered.next(sys_days{2026_y / March / 30}, *zone), sys_days{2026_y / March / 30} + std::chrono::hours(5) +
                                                                     std::chrono::minutes(30));
  std::chrono::sys_seconds a = sys_days{2026_y / January / 1};
  std::chrono::sys_seconds b = a;
  for (int i = 0; i < 300; ++i) {
    a = rendered.next(a, *zone).value();
    b = original.next(b, *zone).value();
    ASSERT_EQ(b - a, std::chrono::minutes(30)) << date::format("%F %R", a);
  }
}

TEST(RenderScaling, TargetsAndPodPatternsPerWorkloadKind) {
  policy::InferenceScalingPolicySpec p;
  p.workload_ref = {policy::WorkloadRefKind::LLMInferenceService, "chat", "ns"};
  auto t = scale_target_of(p).value();
  EXPECT_EQ(t.kind, "Deployment");
  EXPECT_EQ(t.name, "chat-kserve");
  p.replica_shape.nodes_per_replica = 2;
  t = scale_target_of(p).value();
  EXPECT_EQ(t.api_version, "leaderworkerset.x-k8s.io/v1");
  EXPECT_EQ(t.kind, "LeaderWorkerSet");
  EXPECT_EQ(t.pod_pattern, "chat-kserve-[0-9]+");  // leader pods serve the metrics
  p.workload_ref = {policy::WorkloadRefKind::RayService, "ray", "ns"};
  EXPECT_FALSE(scale_target_of(p).has_value());
  // Regex characters in a name are literal; PromQL strings escape the backslash.
  p.workload_ref = {policy::WorkloadRefKind::Deployment, "llama.3", "ns"};
  t = scale_target_of(p).value();
  EXPECT_EQ(t.pod_pattern, R"(llama\.3-[a-z0-9]+-[a-z0-9]{5})");
  EXPECT_EQ(pod_matchers(p.workload_ref, t), R"(namespace="ns",pod=~"llama\\.3-[a-z0-9]+-[a-z0-9]{5}")");
  // Past 46 characters the generated pod name keeps only a prefix of the Deployment's.
  p.workload_ref.name = std::string(60, 'a');
  EXPECT_EQ(scale_target_of(p)->pod_pattern, std::string(58, 'a') + "[-a-z0-9]*");
}

// ---- the queries against Prometheus' own evaluator ------------------------------------

std::string promtool() {
  for (const char* dir : {"/usr/bin", "/usr/local/bin", "/bin"}) {
    const fs::path p = fs::path(dir) / "promtool";
    if (fs::exists(p)) return p.string();
  }
  return "";
}

// Series of two pods of the service (one with two engines), a sibling Deployment's pod
// in the same namespace and a pod of the same name in another namespace.
constexpr const char* kSeries = R"(
      - series: 'vllm:num_requests_waiting{namespace="customer-service",pod="customer-service-llm-predictor-5d8f7c9b4-x2k9p",engine="0"}'
        values: '3x10'
      - series: 'vllm:num_requests_waiting{namespace="customer-service",pod="customer-service-llm-predictor-5d8f7c9b4-x2k9p",engine="1"}'
        values: '2x10'
      - series: 'vllm:num_requests_waiting{namespace="customer-service",pod="customer-service-llm-predictor-5d8f7c9b4-q7w4z",engine="0"}'
        values: '5x10'
      - series: 'vllm:num_requests_waiting{namespace="customer-service",pod="customer-service-llm-predictor-canary-6c9d8-h2j4k",engine="0"}'
        values: '100x10'
      - series: 'vllm:num_requests_waiting{namespace="staging",pod="customer-service-llm-predictor-5d8f7c9b4-x2k9p",engine="0"}'
        values: '100x10'
      - series: 'vllm:kv_cache_usage_perc{namespace="customer-service",pod="customer-service-llm-predictor-5d8f7c9b4-x2k9p",engine="0"}'
        values: '0.5x10'
      - series: 'vllm:gpu_cache_usage_perc{namespace="customer-service",pod="customer-service-llm-predictor-5d8f7c9b4-x2k9p",engine="0"}'
        values: '0.5x10'
      - series: 'vllm:gpu_cache_usage_perc{namespace="customer-service",pod="customer-service-llm-predictor-5d8f7c9b4-q7w4z",engine="0"}'
        values: '0.25x10'
      - series: 'vllm:kv_cache_usage_perc{namespace="customer-service",pod="customer-service-llm-predictor-canary-6c9d8-h2j4k",engine="0"}'
        values: '0.9x10'
      - series: 'vllm:time_to_first_token_seconds_bucket{namespace="customer-service",pod="customer-service-llm-predictor-5d8f7c9b4-x2k9p",le="0.5"}'
        values: '0+0x10'
      - series: 'vllm:time_to_first_token_seconds_bucket{namespace="customer-service",pod="customer-service-llm-predictor-5d8f7c9b4-x2k9p",le="1"}'
        values: '0+0x10'
      - series: 'vllm:time_to_first_token_seconds_bucket{namespace="customer-service",pod="customer-service-llm-predictor-5d8f7c9b4-x2k9p",le="2"}'
        values: '0+60x10'
      - series: 'vllm:time_to_first_token_seconds_bucket{namespace="customer-service",pod="customer-service-llm-predictor-5d8f7c9b4-x2k9p",le="+Inf"}'
        values: '0+60x10'
      - series: 'vllm:time_to_first_token_seconds_count{namespace="customer-service",pod="customer-service-llm-predictor-5d8f7c9b4-x2k9p"}'
        values: '0+60x10'
      - series: 'vllm:time_to_first_token_seconds_bucket{namespace="customer-service",pod="customer-service-llm-predictor-canary-6c9d8-h2j4k",le="0.5"}'
        values: '0+600x10'
      - series: 'vllm:time_to_first_token_seconds_bucket{namespace="customer-service",pod="customer-service-llm-predictor-canary-6c9d8-h2j4k",le="1"}'
        values: '0+600x10'
      - series: 'vllm:time_to_first_token_seconds_bucket{namespace="customer-service",pod="customer-service-llm-predictor-canary-6c9d8-h2j4k",le="2"}'
        values: '0+600x10'
      - series: 'vllm:time_to_first_token_seconds_bucket{namespace="customer-service",pod="customer-service-llm-predictor-canary-6c9d8-h2j4k",le="+Inf"}'
        values: '0+600x10'
      - series: 'vllm:request_success_total{namespace="customer-service",pod="customer-service-llm-predictor-5d8f7c9b4-x2k9p",engine="0",finished_reason="stop"}'
        values: '0+120x10'
      - series: 'vllm:request_success_total{namespace="customer-service",pod="customer-service-llm-predictor-5d8f7c9b4-x2k9p",engine="1",finished_reason="length"}'
        values: '0+60x10'
      - series: 'vllm:request_success_total{namespace="customer-service",pod="customer-service-llm-predictor-canary-6c9d8-h2j4k",engine="0",finished_reason="stop"}'
        values: '0+6000x10'
      - series: 'vllm:request_success_total{namespace="staging",pod="customer-service-llm-predictor-5d8f7c9b4-x2k9p",engine="0",finished_reason="stop"}'
        values: '0+6000x10'
)";

std::string expr_test(const std::string& query, const std::string& value) {
  Json q = query;  // a JSON string is a valid YAML flow scalar
  return "      - expr: " + q.dump() + "\n        eval_time: 5m\n        exp_samples:\n          - labels: '{}'\n            value: " +
         value + "\n";
}

TEST(RenderScaling, RenderedQueriesSelectExactlyTheServicesPodsAndCountEachPodOnce) {
  const std::string tool = promtool();
  ASSERT_FALSE(tool.empty()) << "promtool not found; scripts/bootstrap.sh installs the prometheus package";
  const auto objects = render_scaling(examples_with());
  const Json& t = object_at(objects, "keda/scaledobject-customer-service-customer-service-llm.yaml").manifest["spec"]["triggers"];
  auto query = [&](const char* name) {
    for (const auto& trigger : t) {
      if (trigger["name"] == name) return trigger["metadata"]["query"].get<std::string>();
    }
    ADD_FAILURE() << "no trigger " << name;
    return std::string();
  };
  // Waiting: 3 + 2 + 5 over both pods' engines. Hold at 1 per replica: the 2 pods (10 /
  // 2 >= 1); at 6 per replica: 0. p95 TTFT of the service's pod alone: 1.95s (the
  // sibling's fast requests would pull it to 1.45). KV cache: 0.5 for the pod exporting
  // both names, 0.25 for the one exporting only the deprecated name: 0.75, not 1.25.
  std::string test = "rule_files: []\nevaluation_interval: 1m\ntests:\n  - interval: 1m\n    input_series:" +
                     std::string(kSeries) + "    promql_expr_test:\n";
  test += expr_test(query("queue-depth"), "10");
  test += expr_test(query("queue-depth-scale-down"), "2");
  test += expr_test(queue_hold_query(kLlmPods, 6), "0");
  test += expr_test(query("ttft-p95"), "1.95");
  test += expr_test(query("kv-cache"), "0.75");
  // Requests finished: 2/s and 1/s on two engines and reasons of the service's pod; the
  // sibling's and the other namespace's pods are not counted.
  test += expr_test(request_rate_query(kLlmPods, Duration{std::chrono::minutes(2)}), "3");

  // The guarded TTFT query: no request in the window (the histogram is there, flat) is 0;
  // no series at all (the pods are not scraped) is an empty result, which KEDA with
  // ignoreNullValues "false" reports as an error.
  constexpr const char* kIdle = R"(
      - series: 'vllm:time_to_first_token_seconds_bucket{namespace="customer-service",pod="customer-service-llm-predictor-5d8f7c9b4-x2k9p",le="1"}'
        values: '7x10'
      - series: 'vllm:time_to_first_token_seconds_bucket{namespace="customer-service",pod="customer-service-llm-predictor-5d8f7c9b4-x2k9p",le="+Inf"}'
        values: '9x10'
      - series: 'vllm:time_to_first_token_seconds_count{namespace="customer-service",pod="customer-service-llm-predictor-5d8f7c9b4-x2k9p"}'
        values: '9x10'
)";
  test += "  - interval: 1m\n    input_series:" + std::string(kIdle) + "    promql_expr_test:\n";
  test += expr_test(query("ttft-p95"), "0");
  test += "  - interval: 1m\n    input_series:\n      - series: 'up{job=\"other\"}'\n        values: '1x10'\n"
          "    promql_expr_test:\n      - expr: " +
          Json(query("ttft-p95")).dump() + "\n        eval_time: 5m\n        exp_samples: []\n";

  const fs::path dir = fs::temp_directory_path() / ("gpubank-scaling-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "queries_test.yaml") << test;
  const std::string cmd = tool + " test rules " + (dir / "queries_test.yaml").string() + " > " +
                          (dir / "out.txt").string() + " 2>&1";
  const int rc = std::system(cmd.c_str());
  std::ifstream out(dir / "out.txt");
  const std::string output((std::istreambuf_iterator<char>(out)), std::istreambuf_iterator<char>());
  EXPECT_EQ(rc, 0) << output << "\n" << test;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace gpubank::render
