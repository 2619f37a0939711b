// The embedded platform with its inference services and Kueue's queue metrics, on the
// example policies and cluster, advanced as `gpubank up --speed max` does (60 s steps).
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <set>

#include "metrics/exposition.hpp"
#include "metrics/text_parser.hpp"
#include "policy/policy_set.hpp"
#include "support/paths.hpp"
#include "support/promtool.hpp"
#include "twin/cluster/inventory.hpp"
#include "twin/live/platform.hpp"

namespace gpubank::twin::live {
namespace {

constexpr std::int64_t kHour = 3'600'000;

// These tests are of the serving model, its metrics and Kueue's: they run the replicas
// planned from the tidal floors (elastic_test.cpp has the autoscaler's day).
DayOptions day(std::uint64_t seed) {
  DayOptions o;
  o.seed = seed;
  o.serving_control = DayOptions::ServingControl::Planned;
  o.start = *parse_rfc3339("2026-11-30T16:00:00Z");  // 00:00 on Tuesday 1 December in Asia/Shanghai
  return o;
}

std::unique_ptr<Platform> make_platform(DayOptions options) {
  Diagnostics d;
  auto inventory = cluster::load_inventory(testing::source_dir() + "/examples/inventory/example.yaml", d);
  EXPECT_TRUE(inventory.has_value());
  run::RunOptions run;
  run.inventory = std::make_shared<const cluster::Inventory>(std::move(*inventory));
  auto created = Platform::create(policy::load_policy_set({testing::source_dir() + "/examples/policies"}), options, run);
  EXPECT_TRUE(created) << (created ? "" : created.error());
  return created ? std::move(*created) : nullptr;
}

// Advances in steps of a minute, as the HTTP shell does at --speed max.
void run_to(Platform& p, std::int64_t t) {
  while (p.now() < t) ASSERT_TRUE(p.advance_to(std::min(t, p.now() + 60'000))) << p.error();
}

std::string label(const metrics::Sample& s, std::string_view name) {
  for (const auto& l : s.labels) {
    if (l.name == name) return l.value;
  }
  return {};
}

std::vector<const metrics::Sample*> samples(const metrics::Exposition& e, std::string_view family,
                                            std::string_view sample_name) {
  std::vector<const metrics::Sample*> out;
  if (const auto* f = e.find(family); f != nullptr) {
    for (const auto& s : f->samples) {
      if (s.name == sample_name) out.push_back(&s);
    }
  }
  return out;
}

// Mean DCGM_FI_DEV_GPU_UTIL over the devices a pod holds.
double utilisation_of(const metrics::Exposition& e, const std::string& pod) {
  double sum = 0;
  int n = 0;
  for (const auto* s : samples(e, "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_GPU_UTIL")) {
    if (label(*s, "pod") != pod) continue;
    sum += s->value;
    ++n;
  }
  return n > 0 ? sum / n : -1;
}

struct Scrape {
  std::string text;
  metrics::Exposition exposition;
  Json services, queues;
};

// One platform for the suite: scraped at 03:00 and at 10:00 Shanghai (the day is ~2 s).
class PlatformServing : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    platform_ = make_platform(day(1)).release();
    ASSERT_NE(platform_, nullptr);
    night_ = new Scrape(scrape_at(3 * kHour));
    peak_ = new Scrape(scrape_at(10 * kHour));
  }
  static void TearDownTestSuite() {
    delete night_;
    delete peak_;
    delete platform_;
  }
  static Scrape scrape_at(std::int64_t t) {
    Scrape s;
    run_to(*platform_, t);
    auto text = platform_->metrics_text();
    EXPECT_TRUE(text) << (text ? "" : text.error());
    if (!text) return s;
    s.text = *text;
    auto parsed = metrics::parse_text(s.text);
    EXPECT_TRUE(parsed) << (parsed ? "" : parsed.error());
    if (parsed) s.exposition = std::move(*parsed);
    s.services = platform_->services_json();
    s.queues = platform_->queues_json();
    return s;
  }
  static const Json* service(const Scrape& s, const std::string& policy) {
    for (const auto& j : s.services) {
      if (j["policy"] == policy) return &j;
    }
    return nullptr;
  }

  static Platform* platform_;
  static Scrape* night_;
  static Scrape* peak_;
};

Platform* PlatformServing::platform_ = nullptr;
Scrape* PlatformServing::night_ = nullptr;
Scrape* PlatformServing::peak_ = nullptr;

// /metrics at 10:00 as the nodes' exporters write it (node_agents.hpp): each device sample
// carries a mapping_status; every held device is known to metasync (the twin has no cache
// misses); a device that is not shared is attributed to one pod at a time; and
// gpubank_gpu_allocation_info has one series per attributed device sample, gpubank_gpu_info
// one per device.
TEST_F(PlatformServing, EveryDeviceSampleComesOutOfTheExportersJoin) {
  std::map<std::string, std::set<std::string>> pods_of_device;  // devices not shared
  std::set<std::string> devices;
  std::map<std::string, std::size_t> by_status;
  for (const auto* s : samples(peak_->exposition, "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_POWER_USAGE")) {
    const std::string device = label(*s, "UUID") + "/" + label(*s, "GPU_I_ID");
    const std::string status = label(*s, "mapping_status");
    devices.insert(device);
    ++by_status[status];
    ASSERT_FALSE(status.empty()) << device;
    EXPECT_NE(status, "unknown") << label(*s, "pod");
    if (status != "mapped") continue;
    EXPECT_FALSE(label(*s, "business_group").empty()) << device;
    EXPECT_FALSE(label(*s, "owner_id").empty()) << device;
    EXPECT_FALSE(label(*s, "pod_uid").empty()) << device;
    EXPECT_TRUE(label(*s, "workload_kind") == "Job" || label(*s, "workload_kind") == "Deployment") << device;
    if (label(*s, "sharing") != "time-sliced") pods_of_device[device].insert(label(*s, "pod_uid"));
  }
  EXPECT_GT(by_status["mapped"], 0U);
  EXPECT_GT(by_status["unallocated"], 0U);
  for (const auto& [device, uids] : pods_of_device) EXPECT_EQ(uids.size(), 1U) << device;
  EXPECT_EQ(samples(peak_->exposition, "gpubank_gpu_allocation_info", "gpubank_gpu_allocation_info").size(),
            by_status["mapped"]);
  EXPECT_EQ(samples(peak_->exposition, "gpubank_gpu_info", "gpubank_gpu_info").size(), devices.size());

  // The governance labels the low-utilisation scanner reads: the planned replicas are the
  // serving floor by construction, the day's training jobs checkpoint; and one start time
  // per pod holding a device, its admission in the day's virtual time.
  std::set<std::string> holding_pods;
  for (const auto* s : samples(peak_->exposition, "gpubank_gpu_allocation_info", "gpubank_gpu_allocation_info")) {
    if (label(*s, "workload_kind") == "Deployment") {
      EXPECT_EQ(label(*s, "capacity_role"), "serving-floor") << label(*s, "pod");
    }
    if (label(*s, "workload_type") == "training") {
      EXPECT_EQ(label(*s, "checkpointable"), "true") << label(*s, "pod");
    }
    EXPECT_EQ(label(*s, "keep_running_until"), "") << label(*s, "pod");
    EXPECT_FALSE(label(*s, "workload_uid").empty() && label(*s, "workload_kind") == "Job") << label(*s, "pod");
    holding_pods.insert(label(*s, "namespace") + "/" + label(*s, "pod"));
  }
  const auto starts = samples(peak_->exposition, "gpubank_pod_start_time_seconds", "gpubank_pod_start_time_seconds");
  EXPECT_EQ(starts.size(), holding_pods.size());
  // The pod's creation is the admission that started it: the first one's, or a later one
  // for a workload admitted again (its pods are new pods).
  std::map<std::string, std::pair<double, int>> admitted;  // workload -> (first admission, admissions)
  for (const auto& w : platform_->workloads_json({})) {
    if (!w["firstAdmitted"].is_string()) continue;
    const auto first = parse_rfc3339(w["firstAdmitted"].get<std::string>());
    ASSERT_TRUE(first) << w.dump();
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(first->time_since_epoch()).count();
    admitted[w["workload"]] = {static_cast<double>(ms) / 1000.0, w["admissions"].get<int>()};  // as the exporter divides
  }
  int readmitted = 0;
  for (const auto* s : starts) {
    const std::string pod = label(*s, "namespace") + "/" + label(*s, "pod");
    EXPECT_TRUE(holding_pods.contains(pod)) << pod;
    const auto it = admitted.find(pod.substr(0, pod.rfind('-')));
    ASSERT_NE(it, admitted.end()) << pod;
    if (it->second.second == 1) {
      EXPECT_EQ(s->value, it->second.first) << pod;
    } else {
      ++readmitted;
      EXPECT_GT(s->value, it->second.first) << pod;
      EXPECT_LE(s->value, 1'796'054'400.0 + 10 * 3600) << pod;  // not after the scrape (10:00)
    }
  }
  RecordProperty("readmitted_pods", readmitted);
}

TEST_F(PlatformServing, TheLlmServiceHasSixReadyReplicasServingAtTenOClock) {
  const Json* llm = service(*peak_, "customer-service-llm");
  ASSERT_NE(llm, nullptr);
  // The daytime floor is 6: replica 1 all day, replicas 2-6 from 08:00 (30 min prewarm)
  // and ready 6 min (modelLoadTime) later.
  ASSERT_EQ((*llm)["replicas"].size(), 6u);
  std::set<std::string> pods;
  for (const auto& r : (*llm)["replicas"]) {
    EXPECT_EQ(r["state"], "ready");
    pods.insert(r["replica"].get<std::string>());
  }
  // The engine agrees: these are its Running replica workloads.
  std::set<std::string> running;
  for (const auto& w : platform_->workloads_json({"customer-service", "h100-inference", "Running"})) {
    const std::string key = w["workload"];
    if (key.find("/customer-service-llm-r") == std::string::npos) continue;
    running.insert(key.substr(key.find('/') + 1) + "-0");
  }
  EXPECT_EQ(pods, running);
  // Every replica has its running/waiting gauges and a TTFT histogram that has counted.
  for (const auto& pod : pods) {
    int gauges = 0;
    for (const auto* family : {"vllm:num_requests_running", "vllm:num_requests_waiting"}) {
      for (const auto* s : samples(peak_->exposition, family, family)) {
        if (label(*s, "replica") == pod && label(*s, "model_name") == "customer-service-llm") ++gauges;
      }
    }
    EXPECT_EQ(gauges, 2) << pod;
    double count = -1;
    for (const auto* s :
         samples(peak_->exposition, "vllm:time_to_first_token_seconds", "vllm:time_to_first_token_seconds_count")) {
      if (label(*s, "replica") == pod) count = s->value;
    }
    EXPECT_GT(count, 0) << pod;
  }
  // The peak (curve 1.0 at 10:00) is 6 x 3.744 requests/s; the p95 TTFT of the last five
  // minutes is well under the policy's 1.5 s target.
  EXPECT_NEAR((*llm)["peakRequestsPerSecond"].get<double>(), 6 * 3.7436, 0.01);
  ASSERT_TRUE((*llm)["ttftP95Seconds"].is_number());
  EXPECT_LT((*llm)["ttftP95Seconds"].get<double>(), 1.5);
  EXPECT_GT((*llm)["arrived"].get<std::int64_t>(), 0);
  EXPECT_EQ((*llm)["routerWaiting"], 0);
  std::cout << "customer-service-llm at 10:00: " << llm->dump() << '\n';
}

TEST_F(PlatformServing, PendingWorkloadsOfKueueMatchTheQueuesView) {
  for (const Scrape* s : {night_, peak_}) {
    double active = 0;
    int series = 0;
    for (const auto* x : samples(s->exposition, "kueue_pending_workloads", "kueue_pending_workloads")) {
      if (label(*x, "status") == "active") {
        active += x->value;
        ++series;
      }
    }
    std::int64_t pending = 0;
    for (const auto& q : s->queues) pending += q["pendingWorkloads"].get<std::int64_t>();
    EXPECT_EQ(series, static_cast<int>(s->queues.size()));
    EXPECT_EQ(active, static_cast<double>(pending));
  }
  // Admissions were counted by queue; the cohort of a queue is its pool.
  double admitted = 0;
  for (const auto* x : samples(peak_->exposition, "kueue_admitted_workloads_total", "kueue_admitted_workloads_total")) {
    admitted += x->value;
  }
  std::int64_t events = 0;
  for (const auto& e : platform_->result().events) events += e.kind == "Admitted" ? 1 : 0;
  EXPECT_EQ(admitted, static_cast<double>(events));
  for (const auto* x :
       samples(peak_->exposition, "kueue_cluster_queue_nominal_quota", "kueue_cluster_queue_nominal_quota")) {
    bool found = false;
    for (const auto& q : peak_->queues) {
      if (q["clusterQueue"] == label(*x, "cluster_queue")) {
        found = true;
        EXPECT_EQ(label(*x, "cohort"), q["pool"].get<std::string>());
        EXPECT_EQ(x->value, q["nominalQuota"].get<double>());
      }
    }
    EXPECT_TRUE(found) << label(*x, "cluster_queue");
  }
}

TEST_F(PlatformServing, InferenceGpuUtilisationFollowsTheLoad) {
  // The embeddings service keeps its one replica all day, so its GPU sees the curve:
  // 0.20 of the peak at 03:00, 1.0 at 10:00, where the planned load is its reference rate,
  // half of what full steps finish (kEmbedReferenceBusy): measured 16 % and 46 %.
  const Json* embeddings = service(*peak_, "customer-service-embeddings");
  ASSERT_NE(embeddings, nullptr);
  ASSERT_EQ((*embeddings)["replicas"].size(), 1u);
  const std::string pod = (*embeddings)["replicas"][0]["replica"];
  const double night = utilisation_of(night_->exposition, pod);
  const double peak = utilisation_of(peak_->exposition, pod);
  ASSERT_GE(night, 0);
  EXPECT_GT(peak, 2 * night) << "03:00 " << night << " %, 10:00 " << peak << " %";
  EXPECT_GT(peak, night + 20) << "03:00 " << night << " %, 10:00 " << peak << " %";
  // The LLM's all-day replica carries the night alone: at 03:00 it serves 0.2 x 22.5 = 4.5
  // requests/s, more than one of six replicas at the peak (3.7/s), so its GPUs are busier
  // at night than each of the six at 10:00 (the tidal floor of 1 is below the curve's
  // trough; with planned replicas nothing adds one).
  const Json* llm_night = service(*night_, "customer-service-llm");
  ASSERT_NE(llm_night, nullptr);
  ASSERT_EQ((*llm_night)["replicas"].size(), 1u);
  const std::string all_day = (*llm_night)["replicas"][0]["replica"];
  std::cout << "GPU utilisation %: embeddings 03:00 " << night << ", 10:00 " << peak << "; LLM all-day replica 03:00 "
            << utilisation_of(night_->exposition, all_day) << ", 10:00 " << utilisation_of(peak_->exposition, all_day)
            << '\n';
  EXPECT_GT(utilisation_of(night_->exposition, all_day), 0);
}

TEST_F(PlatformServing, PromtoolParsesTheWholeExposition) {
  const auto promtool = testing::find_promtool();
  ASSERT_TRUE(promtool) << testing::kPromtoolMissing;
  testing::ScratchDir dir;
  testing::write_file(dir.path() / "metrics.prom", peak_->text);
  const auto r = testing::run_in(dir.path(), promtool->string() + " check metrics < metrics.prom");
  // promtool's linter objects to vLLM's colons and names (exit 3 for lint only); a parse
  // error is exit 1 with "error while linting".
  EXPECT_NE(r.status, 1) << r.output;
  EXPECT_EQ(r.output.find("error while linting"), std::string::npos) << r.output;
  EXPECT_NE(peak_->text.find("vllm:kv_cache_usage_perc{"), std::string::npos);
  EXPECT_NE(peak_->text.find("kueue_admission_wait_time_seconds_bucket{"), std::string::npos);
  EXPECT_NE(peak_->text.find("gpubank_inference_requests_cut_total{"), std::string::npos);
}

TEST(PlatformServingDeterminism, SameSeedSameMetricsTextByteForByte) {
  // (Another seed giving another day is Day.SameSeedSameEventLogByteForByte's.)
  DayOptions light = day(5);
  light.serving_load = 0.1;  // determinism does not need the full load
  auto a = make_platform(light);
  auto b = make_platform(light);
  ASSERT_TRUE(a && b);
  for (auto* p : {a.get(), b.get()}) run_to(*p, 9 * kHour + 30 * 60'000);
  const auto ta = a->metrics_text();
  const auto tb = b->metrics_text();
  ASSERT_TRUE(ta && tb);
  EXPECT_EQ(*ta, *tb);
  EXPECT_EQ(a->services_json().dump(), b->services_json().dump());
}

TEST(PlatformServingDay, DaytimeReplicasLeaveAtTwentyAndTheirRequestsAreCut) {
  auto p = make_platform(day(2));
  ASSERT_TRUE(p);
  run_to(*p, 20 * kHour + 60'000);
  const auto services = p->services_json();
  const Json* llm = nullptr;
  for (const auto& s : services) {
    if (s["policy"] == "customer-service-llm") llm = &s;
  }
  ASSERT_NE(llm, nullptr);
  // Replicas 2-6 were deleted at 20:00 (the daytime window's end): one left.
  EXPECT_EQ((*llm)["replicas"].size(), 1u);
  // At 19:59 (curve 0.85) the five held ~19 requests/s x ~5 s in flight: some were cut.
  EXPECT_GT((*llm)["cut"].get<std::int64_t>(), 0);
  EXPECT_GT((*llm)["finished"].get<std::int64_t>(), 500'000);
  std::cout << "customer-service-llm at 20:01: " << (*llm).dump() << '\n';
}

TEST(PlatformServingTrace, TheAzureTraceDrivesTheServicesWhenGiven) {
  DayOptions o = day(1);
  o.start = *parse_rfc3339("2026-12-01T02:00:00Z");  // 10:00 in Shanghai
  o.hours = 1;
  o.llm_trace = testing::shared_dir() + "/traces/azure-llm-2023/AzureLLMInferenceTrace_conv.csv";
  auto p = make_platform(o);
  ASSERT_TRUE(p);
  const auto stats = p->serving().stats();
  ASSERT_EQ(stats.size(), 2u);
  // Scale 22.46 / 5.379 = 4.18 at curve 1.0 (10:00): each request of the recorded hour is
  // taken 4 or 5 times: 4.18 x 19,366 = 80,866 expected, within a few hundred.
  EXPECT_EQ(stats[0].policy, "customer-service-llm");
  EXPECT_NEAR(stats[0].expected_requests, stats[0].peak_rps * 3600, 0.01 * stats[0].peak_rps * 3600);
  o.llm_trace = "/nonexistent/trace.csv";
  Diagnostics d;
  auto inventory = cluster::load_inventory(testing::source_dir() + "/examples/inventory/example.yaml", d);
  run::RunOptions run;
  run.inventory = std::make_shared<const cluster::Inventory>(std::move(*inventory));
  auto missing = Platform::create(policy::load_policy_set({testing::source_dir() + "/examples/policies"}), o, run);
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().find("/nonexistent/trace.csv"), std::string::npos);
}

}  // namespace
}  // namespace gpubank::twin::live

namespace gpubank::twin::live {
namespace {

// The autoscaler reads Serving::scrape_of; it must be exactly what a scrape of the
// services' pages reads (serving::read_vllm of the exposition), for both serving models,
// through a day's replicas loading, serving, draining and leaving.
TEST(PlatformServingScrape, TheDirectScrapeIsWhatReadingThePagesGives) {
  for (const auto model : {DayOptions::ServingModel::Requests, DayOptions::ServingModel::Fluid}) {
    DayOptions o = day(3);
    o.serving_control = DayOptions::ServingControl::Autoscaler;
    o.serving_model = model;
    o.hours = 12;
    o.serving_load = model == DayOptions::ServingModel::Requests ? 0.3 : 1.0;
    auto p = make_platform(o);
    ASSERT_NE(p, nullptr);
    serving::ScrapeOptions options;
    options.replica_label = "replica";
    options.itl = false;
    inference::VllmExpositionOptions page;
    page.autoscaling_signals_only = true;
    int compared = 0, with_replicas = 0;
    for (std::int64_t t = 20 * 60'000; t <= o.hours * kHour; t += 20 * 60'000) {
      run_to(*p, t);
      for (const std::string& policy : p->serving().policies()) {
        auto read = serving::read_vllm(p->serving().exposition_of(policy, page), t, options);
        ASSERT_TRUE(read) << read.error();
        EXPECT_EQ(p->serving().scrape_of(policy, t), *read) << policy << " at " << t;
        ++compared;
        with_replicas += read->replicas.empty() ? 0 : 1;
      }
    }
    EXPECT_GT(compared, 60);
    EXPECT_GT(with_replicas, 30);
  }
}

}  // namespace
}  // namespace gpubank::twin::live
