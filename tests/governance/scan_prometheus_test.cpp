// `gpubank scan` end to end: a real Prometheus holding eight hours of attributed GPU series
// (written as OpenMetrics and turned into TSDB blocks by `promtool tsdb create-blocks-from
// openmetrics`), a real Alertmanager (Debian prometheus-alertmanager) and a webhook
// receiver on loopback, the record in a SQLite store. Four scans, each a new process:
//
//   T1        w-stuck (training, idle) and w-nb (a notebook idle for hours) are detected
//             and their owners notified; w-ckpt is as idle but the bank sent it a checkpoint
//             notice 2 minutes ago (checkpoint grace 20m): not flagged; w-floor is an
//             inference serving floor at 5 %: excluded and counted; w-busy is fine.
//   T1+15m    the scanner restarted: nothing is due, nobody is notified again (w-ckpt is
//             still in its grace).
//   T1+1h     w-nb escalates to its group's admins (notebooks-idle: after 1h); w-ckpt's
//             grace is over and it is flagged.
//   T1+2h     w-stuck recovered at T1+1h: resolved, and Alertmanager stops firing it.
//
// The policies are the examples' (training-default, notebooks-idle) and an inference policy.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <spawn.h>
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/timestamp.hpp"
#include "store/store.hpp"
#include "support/paths.hpp"
#include "support/process.hpp"
#include "support/prometheus_blocks.hpp"
#include "support/prometheus_server.hpp"

namespace gpubank::governance {
namespace {

namespace fs = std::filesystem;
using gpubank::testing::free_port;
using gpubank::testing::run_process;

constexpr std::int64_t kMinute = 60;

struct Workload {
  std::string uid, type, group, owner, ns, kind, name, pool, capacity_role;
  int gpus = 1;
  std::function<double(std::int64_t)> util;  // percent at a minute relative to T1
  double memory = 2;                          // percent
  double power = 10;                          // percent of the limit
  // gpubank_training_steps_total of its pod at a minute relative to T1; none: not reported.
  std::function<double(std::int64_t)> steps = {};
  // The controller's gpubank_last_checkpoint_timestamp_seconds from this minute (relative to T1) on.
  std::optional<std::int64_t> checkpoint_at = {};
  // The job's own gpubank_training_phase state at a minute relative to T1; none: not reported.
  std::function<std::string(std::int64_t)> phase = {};
};

const std::string kInferencePolicy = R"(apiVersion: platform.gpubank.dev/v1alpha1
kind: LowUtilizationPolicy
metadata: {name: inference-idle}
spec:
  match: {workloadType: inference}
  window: 60m
  thresholds: {averageGpuUtilization: 10}
  startupGracePeriod: 10m
  notify: {first: owner, after: 4h, escalateTo: business-group-admin, repeatInterval: 24h}
)";

std::string labels_text(const std::vector<std::pair<std::string, std::string>>& labels) {
  std::string out = "{";
  for (std::size_t i = 0; i < labels.size(); ++i) {
    out += (i ? "," : "") + labels[i].first + "=\"" + labels[i].second + "\"";
  }
  return out + "}";
}

std::string rfc3339_s(std::int64_t s) { return format_rfc3339(Timestamp(std::chrono::seconds(s))); }

class ScanPrometheusTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!prometheus_.available() || !alertmanager_.available()) {
      GTEST_SKIP() << "needs prometheus, promtool and prometheus-alertmanager (scripts/bootstrap.sh installs them)";
    }
    std::string pattern = (fs::temp_directory_path() / "gpubank-scan-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    const std::int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                                 std::chrono::system_clock::now().time_since_epoch()).count();
    t1_ = now / 60 * 60 - 3 * 3600;  // scans at T1 .. T1+2h, all in the past
  }
  void TearDown() override {
    if (hook_) hook_->stop();
    if (hook_thread_.joinable()) hook_thread_.join();
    if (!dir_.empty() && !HasFailure()) fs::remove_all(dir_);
  }

  // Eight hours of samples, a minute apart, ending at T1+3h.
  void write_series(const std::vector<Workload>& workloads) {
    std::ofstream out(dir_ / "series.om");
    const std::int64_t from = t1_ - 5 * 3600;
    const std::int64_t to = t1_ + 3 * 3600;
    auto device_labels = [](const Workload& w, int i, bool attribution_only) {
      std::vector<std::pair<std::string, std::string>> l;
      if (!attribution_only) {
        l = {{"UUID", "GPU-" + w.uid + "-" + std::to_string(i)}, {"gpu", std::to_string(i)}, {"Hostname", "node-1"},
             {"mapping_status", "mapped"}};
      }
      l.insert(l.end(), {{"namespace", w.ns}, {"pod", w.name + "-0"}, {"container", "main"},
                         {"business_group", w.group}, {"owner_id", w.owner}, {"workload_type", w.type},
                         {"workload_kind", w.kind}, {"workload", w.name}, {"workload_uid", w.uid}});
      return l;
    };
    auto family = [&](const std::string& name, const std::function<double(const Workload&, std::int64_t)>& value) {
      out << "# TYPE " << name << " gauge\n";
      for (const Workload& w : workloads) {
        for (int i = 0; i < w.gpus; ++i) {
          const std::string series = name + labels_text(device_labels(w, i, false));
          for (std::int64_t t = from; t <= to; t += kMinute) {
            out << series << ' ' << value(w, (t - t1_) / kMinute) << ' ' << t << '\n';
          }
        }
      }
    };
    family("DCGM_FI_DEV_GPU_UTIL", [](const Workload& w, std::int64_t m) { return w.util(m); });
    family("DCGM_FI_DEV_FB_USED", [](const Workload& w, std::int64_t) { return w.memory * 800; });
    family("DCGM_FI_DEV_FB_FREE", [](const Workload& w, std::int64_t) { return (100 - w.memory) * 800; });
    family("DCGM_FI_DEV_POWER_USAGE", [](const Workload& w, std::int64_t) { return w.power * 7; });
    family("DCGM_FI_DEV_ENFORCED_POWER_LIMIT", [](const Workload&, std::int64_t) { return 700; });
    out << "# TYPE gpubank_gpu_allocation_info gauge\n";
    for (const Workload& w : workloads) {
      for (int i = 0; i < w.gpus; ++i) {
        auto l = device_labels(w, i, true);
        l.insert(l.begin(), {{"node", "node-1"}, {"pool", w.pool}, {"gpu_model", "H100"}, {"partition", "full"},
                             {"gpu_uuid", "GPU-" + w.uid + "-" + std::to_string(i)}});
        if (!w.capacity_role.empty()) l.push_back({"capacity_role", w.capacity_role});
        for (std::int64_t t = from; t <= to; t += kMinute) out << "gpubank_gpu_allocation_info" << labels_text(l) << " 1 " << t << '\n';
      }
    }
    out << "# TYPE gpubank_training_steps counter\n";
    for (const Workload& w : workloads) {
      if (!w.steps) continue;
      const std::string series =
          "gpubank_training_steps_total" + labels_text({{"namespace", w.ns}, {"pod", w.name + "-0"}, {"container", "main"}});
      for (std::int64_t t = from; t <= to; t += kMinute) out << series << ' ' << w.steps((t - t1_) / kMinute) << ' ' << t << '\n';
    }
    // The job's phase as prometheus_client's Enum exports it: every state, 1 for the current.
    out << "# TYPE gpubank_training_phase gauge\n";
    for (const Workload& w : workloads) {
      if (!w.phase) continue;
      for (const char* state : {"loading", "compiling", "training", "evaluating", "checkpointing", "recovering"}) {
        const std::string series = "gpubank_training_phase" +
                                   labels_text({{"gpubank_training_phase", state}, {"namespace", w.ns},
                                                {"pod", w.name + "-0"}, {"container", "main"}});
        for (std::int64_t t = from; t <= to; t += kMinute) {
          out << series << ' ' << (w.phase((t - t1_) / kMinute) == state ? 1 : 0) << ' ' << t << '\n';
        }
      }
    }
    out << "# TYPE gpubank_last_checkpoint_timestamp_seconds gauge\n";
    for (const Workload& w : workloads) {
      if (!w.checkpoint_at) continue;
      const std::string series = "gpubank_last_checkpoint_timestamp_seconds" +
                                 labels_text({{"namespace", w.ns}, {"workload_kind", w.kind}, {"workload", w.name}});
      const std::int64_t at = t1_ + *w.checkpoint_at * kMinute;
      for (std::int64_t t = at; t <= to; t += kMinute) out << series << ' ' << at << ' ' << t << '\n';
    }
    out << "# TYPE gpubank_pod_start_time_seconds gauge\n";
    for (const Workload& w : workloads) {
      const std::string series = "gpubank_pod_start_time_seconds" +
                                 labels_text({{"namespace", w.ns}, {"pod", w.name + "-0"}, {"pod_uid", "pod-" + w.uid},
                                              {"workload_kind", w.kind}, {"workload", w.name}, {"workload_uid", w.uid},
                                              {"business_group", w.group}, {"owner_id", w.owner}});
      for (std::int64_t t = from; t <= to; t += kMinute) out << series << ' ' << from << ' ' << t << '\n';
    }
    out << "# EOF\n";
  }

  void start_prometheus() { ASSERT_EQ(prometheus_.start(dir_, dir_ / "series.om"), ""); }
  // The series, the inference policy, Prometheus, Alertmanager and the webhook.
  void start_all(const std::vector<Workload>& workloads) {
    write_series(workloads);
    std::ofstream(dir_ / "inference.yaml") << kInferencePolicy;
    start_prometheus();
    start_alertmanager();
    start_webhook();
  }
  void start_alertmanager() { ASSERT_EQ(alertmanager_.start(dir_), ""); }

  void start_webhook() {
    hook_ = std::make_unique<httplib::Server>();
    hook_->Post("/notices", [this](const httplib::Request& req, httplib::Response& res) {
      // A slow receiver widens the window in which a killed scan has delivered but not recorded.
      if (slow_hook_) std::this_thread::sleep_for(std::chrono::milliseconds(250));
      std::lock_guard lock(mu_);
      notices_.push_back(nlohmann::json::parse(req.body, nullptr, false));
      res.status = 204;
    });
    hook_port_ = hook_->bind_to_any_port("127.0.0.1");
    hook_thread_ = std::thread([this] { hook_->listen_after_bind(); });
  }

  std::vector<std::string> scan_argv(std::int64_t at, std::optional<int> alertmanager_port = std::nullopt) const {
    return {gpubank::testing::binary_dir() + "/cmd/gpubank/gpubank", "scan", "--prometheus", prometheus_.url(),
            "--policies", gpubank::testing::examples_dir() + "/policies", "--policies", (dir_ / "inference.yaml").string(),
            "--store", (dir_ / "governance.db").string(), "--alertmanager",
            "http://127.0.0.1:" + std::to_string(alertmanager_port.value_or(alertmanager_.port)), "--webhook",
            "http://127.0.0.1:" + std::to_string(hook_port_) + "/notices", "--portal-url", "https://gpubank.example",
            "--alert-ttl", "48h", "--at", rfc3339_s(at), "-o", "json"};
  }

  nlohmann::json scan(std::int64_t at, int expect_status = 0, std::optional<int> alertmanager_port = std::nullopt) {
    const auto r = run_process(scan_argv(at, alertmanager_port));
    EXPECT_EQ(r.status, expect_status) << r.err;
    const nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
    EXPECT_TRUE(j.is_object()) << r.out << r.err;
    return j;
  }

  // (workload_uid, notify) of every alert Alertmanager fires now.
  std::set<std::pair<std::string, std::string>> firing() {
    httplib::Client c("127.0.0.1", alertmanager_.port);
    auto r = c.Get("/api/v2/alerts?active=true&silenced=true&inhibited=true&unprocessed=true");
    EXPECT_TRUE(r && r->status == 200);
    std::set<std::pair<std::string, std::string>> out;
    if (!r) return out;
    for (const auto& a : nlohmann::json::parse(r->body)) {
      out.insert({a["labels"]["workload_uid"].get<std::string>(), a["labels"]["notify"].get<std::string>()});
    }
    return out;
  }

  std::vector<std::pair<std::string, std::string>> alerts_of(const nlohmann::json& scan) {
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& a : scan["alerts"]) out.push_back({a["workload_uid"], a["state"]});
    return out;
  }

  fs::path dir_;
  std::int64_t t1_ = 0;
  gpubank::testing::PrometheusOnBlocks prometheus_;
  gpubank::testing::Alertmanager alertmanager_;
  int hook_port_ = 0;
  std::unique_ptr<httplib::Server> hook_;
  std::thread hook_thread_;
  std::mutex mu_;
  std::vector<nlohmann::json> notices_;
  bool slow_hook_ = false;
};

std::vector<Workload> standard_workloads() {
  auto idle = [](std::int64_t) { return 1.0; };
  return {
      {"w-busy", "training", "search", "u-busy", "search", "PyTorchJob", "busy", "h100-rdma-training", "", 2,
       [](std::int64_t) { return 85.0; }, 60, 60},
      {"w-ckpt", "training", "research", "u-ckpt", "research", "PyTorchJob", "ckpt", "h100-rdma-training", "", 2, idle},
      {"w-floor", "inference", "customer-service", "u-floor", "customer-service", "InferenceService", "llm",
       "h100-inference", "serving-floor", 4, [](std::int64_t) { return 5.0; }, 30, 20},
      {"w-nb", "notebook", "research", "u-nb", "research", "Pod", "nb", "mig-or-shared-development", "", 1,
       [](std::int64_t) { return 0.0; }},
      {"w-stuck", "training", "search", "u-stuck", "search", "PyTorchJob", "stuck", "h100-rdma-training", "", 1,
       [](std::int64_t m) { return m >= 60 ? 90.0 : 1.0; }},  // recovers at T1+1h
  };
}

TEST_F(ScanPrometheusTest, EveryTransitionWithRealPrometheusAndAlertmanager) {
  const std::vector<Workload> workloads = standard_workloads();
  start_all(workloads);
  if (HasFatalFailure()) return;

  // The bank's checkpoint notice to w-ckpt's Kueue Workload, two minutes before T1.
  {
    auto store = store::Store::open((dir_ / "governance.db").string());
    ASSERT_TRUE(store) << store.error();
    bank::AuditEntry notice;
    notice.time_ms = (t1_ - 2 * kMinute) * 1000;
    notice.actor = "gpubank-controller/c-0";
    notice.action = "ReclaimNoticeSent";
    notice.object = "Workload/research/pytorchjob-ckpt-0f3a9";
    notice.decision = "CheckpointRequested";
    notice.reason = "search reclaims its guarantee";
    notice.numbers = "{}";
    ASSERT_TRUE((*store)->append({}, std::vector<bank::AuditEntry>{notice}));
  }

  // T1.
  nlohmann::json s = scan(t1_);
  EXPECT_EQ(alerts_of(s), (std::vector<std::pair<std::string, std::string>>{{"w-nb", "Notified"}, {"w-stuck", "Notified"}}));
  EXPECT_EQ(s["excluded"], (nlohmann::json{{"checkpoint-grace", 1}, {"serving-floor", 1}}));
  EXPECT_EQ(s["verdicts"], (nlohmann::json{{"excluded", 2}, {"fine", 1}, {"low", 2}}));
  EXPECT_EQ(s["workloads"], 5);
  // notebooks-idle's power threshold adds the sixth, inference-idle the token throughput,
  // training-default the training progress and phase
  EXPECT_EQ(s["queries"].size(), 9u);
  const auto& nb = s["alerts"][0]["evidence"];
  EXPECT_EQ(nb["gpus"], 1);
  EXPECT_EQ(nb["averageGpuUtilization"], 0);
  EXPECT_DOUBLE_EQ(nb["averagePowerFraction"].get<double>(), 10);
  EXPECT_EQ(nb["runningSeconds"], 5 * 3600);
  EXPECT_EQ(nb["lowSeconds"], 30 * 60);  // notebooks-idle's window
  EXPECT_EQ(firing(), (std::set<std::pair<std::string, std::string>>{{"w-nb", "owner"}, {"w-stuck", "owner"}}));
  {
    std::lock_guard lock(mu_);
    ASSERT_EQ(notices_.size(), 2u);
    EXPECT_EQ(notices_[0]["audience"], "owner");
    EXPECT_EQ(notices_[0]["portalUrl"], "https://gpubank.example/workloads/w-nb");
    EXPECT_EQ(notices_[0]["alert"]["evidence"]["ownerId"], "u-nb");
  }

  // T1+15m: a new process reads the record; nothing is due.
  s = scan(t1_ + 15 * kMinute);
  EXPECT_TRUE(s["alerts"].empty()) << s.dump();
  EXPECT_EQ(s["openAlerts"], 2);
  EXPECT_EQ(firing().size(), 2u);
  {
    std::lock_guard lock(mu_);
    EXPECT_EQ(notices_.size(), 2u);
  }

  // T1+1h: the notebook escalates; w-ckpt's checkpoint grace is over.
  s = scan(t1_ + 60 * kMinute);
  EXPECT_EQ(alerts_of(s),
            (std::vector<std::pair<std::string, std::string>>{{"w-ckpt", "Notified"}, {"w-nb", "Escalated"}}));
  EXPECT_EQ(firing(), (std::set<std::pair<std::string, std::string>>{{"w-ckpt", "owner"},
                                                                       {"w-nb", "owner"},
                                                                       {"w-nb", "business-group-admin"},
                                                                       {"w-stuck", "owner"}}));
  // T1+2h: w-stuck has been busy for the whole window: resolved, no longer firing.
  s = scan(t1_ + 120 * kMinute);
  EXPECT_EQ(alerts_of(s), (std::vector<std::pair<std::string, std::string>>{{"w-stuck", "Resolved"}}));
  EXPECT_EQ(s["alerts"][0]["resolution"], "recovered");
  EXPECT_EQ(firing(), (std::set<std::pair<std::string, std::string>>{
                          {"w-ckpt", "owner"}, {"w-nb", "owner"}, {"w-nb", "business-group-admin"}}));
  std::lock_guard lock(mu_);
  ASSERT_EQ(notices_.size(), 5u);  // + w-ckpt's owner, w-nb's admins, w-stuck's resolution
  EXPECT_EQ(notices_[3]["audience"], "business-group-admin");
  EXPECT_EQ(notices_[4]["action"], "Resolved");
}

// Training progress decides where a job reports it: a job hung in a collective (GPUs at
// 97 %, no step for 90 minutes) is low, an input-bound one (3 %, a step a minute) is not; a
// job without the counter is judged by its utilisation. The showback of the same hour
// agrees: the hung job's 2 GPU-hours are low and none effective, the slow job's hour is
// effective and not low, the silent idle job's hour low but for its checkpoint window: the
// controller reports a checkpoint notice at T1-10m, and training-default's 20-minute
// checkpoint grace leaves the period's minutes T1-10m..T1-1m (10 of its 60: `to` is
// exclusive) out.
TEST_F(ScanPrometheusTest, TrainingProgressDecidesWhereAJobReportsIt) {
  const std::vector<Workload> workloads{
      {"w-hung", "training", "search", "u-hung", "search", "PyTorchJob", "hung", "h100-rdma-training", "", 2,
       [](std::int64_t) { return 97.0; }, 60, 60, [](std::int64_t m) { return 10.0 * static_cast<double>(std::min<std::int64_t>(m, -90) + 300); }},
      {"w-slow", "training", "search", "u-slow", "search", "PyTorchJob", "slow", "h100-rdma-training", "", 1,
       [](std::int64_t) { return 3.0; }, 2, 10, [](std::int64_t m) { return static_cast<double>(m + 300); }},
      {"w-idle", "training", "research", "u-idle", "research", "PyTorchJob", "idle", "h100-rdma-training", "", 1,
       [](std::int64_t) { return 1.0; }, 2, 10, {}, -10},
  };
  start_all(workloads);
  if (HasFatalFailure()) return;

  nlohmann::json s = scan(t1_);
  EXPECT_EQ(s["queries"].size(), 9u);  // + training_progress, training_phase
  EXPECT_EQ(alerts_of(s), (std::vector<std::pair<std::string, std::string>>{{"w-hung", "Notified"}, {"w-idle", "Notified"}}));
  ASSERT_EQ(s["alerts"].size(), 2u);
  const auto& hung = s["alerts"][0]["evidence"];
  EXPECT_EQ(hung["reason"], "no training steps in 1h at GPU utilisation 97.0%");
  EXPECT_EQ(hung["trainingSteps"], 0);
  EXPECT_EQ(s["alerts"][1]["evidence"]["reason"], "GPU utilisation 1.0% < 10.0%, memory utilisation 2.0% < 15.0%");
  EXPECT_FALSE(s["alerts"][1]["evidence"].contains("trainingSteps"));
  {
    std::lock_guard lock(mu_);
    std::map<std::string, std::string> actions;
    for (const auto& n : notices_) actions[n["alert"]["workloadUid"]] = n["suggestedAction"];
    EXPECT_TRUE(actions["w-hung"].starts_with("The job made no training step in the window: look for a hang"))
        << actions["w-hung"];
    EXPECT_TRUE(actions["w-idle"].starts_with("Check the data pipeline")) << actions["w-idle"];
  }

  const auto r = gpubank::testing::run_process(
      {gpubank::testing::binary_dir() + "/cmd/gpubank/gpubank", "report", "showback", "--prometheus", prometheus_.url(),
       "--policies", gpubank::testing::examples_dir() + "/policies", "--from", rfc3339_s(t1_ - 3600), "--to",
       rfc3339_s(t1_), "--level", "workload", "--format", "json"});
  ASSERT_EQ(r.status, 0) << r.err;
  const nlohmann::json report = nlohmann::json::parse(r.out);
  std::map<std::string, std::pair<double, double>> low_and_effective;
  for (const auto& row : report["rows"]) {
    low_and_effective[row.value("workloadUid", "")] = {row["lowUtilizationGpuHours"].get<double>(),
                                                       row["effectiveGpuHours"].get<double>()};
  }
  using P = std::pair<double, double>;
  EXPECT_EQ(low_and_effective,
            (std::map<std::string, P>{{"w-hung", P{2, 0}}, {"w-idle", P{50.0 / 60, 0}}, {"w-slow", P{0, 1}}}))
      << r.out;
}

// The job's own phase (gpubank_training_phase): w-eval made no step in the hour (its steps
// stopped long before) and idles at 3 %, but has said "evaluating" since T1-15m: excluded as
// job-phase, and the showback of the hour before T1 leaves those 15 minutes out of its low
// hours (45 of 60). w-loading has said "loading" for its whole life: a load that fills the
// window is judged, low, and the evidence says so; its hour is all low.
TEST_F(ScanPrometheusTest, AJobsOwnPhaseExcusesItsOverheadUnlessItFillsTheWindow) {
  const std::vector<Workload> workloads{
      {"w-eval", "training", "search", "u-eval", "search", "PyTorchJob", "eval", "h100-rdma-training", "", 1,
       [](std::int64_t) { return 3.0; }, 2, 10, [](std::int64_t m) { return static_cast<double>(std::min<std::int64_t>(m, -120) + 300); },
       std::nullopt, [](std::int64_t m) { return std::string(m >= -15 ? "evaluating" : "training"); }},
      {"w-loading", "training", "research", "u-load", "research", "PyTorchJob", "loading", "h100-rdma-training", "", 1,
       [](std::int64_t) { return 1.0; }, 2, 10, {}, std::nullopt, [](std::int64_t) { return std::string("loading"); }},
  };
  start_all(workloads);
  if (HasFatalFailure()) return;

  nlohmann::json s = scan(t1_);
  EXPECT_EQ(s["queries"].size(), 9u);
  EXPECT_EQ(s["excluded"], (nlohmann::json{{"job-phase", 1}})) << s.dump();
  EXPECT_EQ(alerts_of(s), (std::vector<std::pair<std::string, std::string>>{{"w-loading", "Notified"}}));
  ASSERT_EQ(s["alerts"].size(), 1u);
  EXPECT_EQ(s["alerts"][0]["evidence"]["reason"],
            "GPU utilisation 1.0% < 10.0%, memory utilisation 2.0% < 15.0% (in loading for the whole 1h)");

  const auto r = gpubank::testing::run_process(
      {gpubank::testing::binary_dir() + "/cmd/gpubank/gpubank", "report", "showback", "--prometheus", prometheus_.url(),
       "--policies", gpubank::testing::examples_dir() + "/policies", "--from", rfc3339_s(t1_ - 3600), "--to",
       rfc3339_s(t1_), "--level", "workload", "--format", "json"});
  ASSERT_EQ(r.status, 0) << r.err;
  const nlohmann::json report = nlohmann::json::parse(r.out);
  std::map<std::string, double> low;
  for (const auto& row : report["rows"]) low[row.value("workloadUid", "")] = row["lowUtilizationGpuHours"].get<double>();
  EXPECT_EQ(low, (std::map<std::string, double>{{"w-eval", 45.0 / 60}, {"w-loading", 1}})) << r.out;
}

// Alertmanager down at the first scan: the alerts are detected and recorded, the notices
// are not (exit 1, listed as undelivered); the next scan delivers and records them, once.
TEST_F(ScanPrometheusTest, ANoticeThatCouldNotBeDeliveredIsDeliveredByTheNextScan) {
  write_series(standard_workloads());
  std::ofstream(dir_ / "inference.yaml") << kInferencePolicy;
  start_prometheus();
  start_alertmanager();
  start_webhook();
  if (HasFatalFailure()) return;

  nlohmann::json s = scan(t1_, 1, free_port());  // nobody listens there
  EXPECT_EQ(alerts_of(s), (std::vector<std::pair<std::string, std::string>>{{"w-ckpt", "Detected"},
                                                                              {"w-nb", "Detected"},
                                                                              {"w-stuck", "Detected"}}));
  ASSERT_EQ(s["undelivered"].size(), 3u);
  EXPECT_EQ(s["undelivered"][0], (nlohmann::json{{"workload_uid", "w-ckpt"}, {"action", "Notified"}, {"audience", "owner"}}));
  EXPECT_TRUE(s["deliveryErrors"][0].get<std::string>().find("could not connect") != std::string::npos) << s.dump();
  EXPECT_TRUE(firing().empty());

  s = scan(t1_ + 5 * kMinute);
  EXPECT_EQ(alerts_of(s), (std::vector<std::pair<std::string, std::string>>{{"w-ckpt", "Notified"},
                                                                              {"w-nb", "Notified"},
                                                                              {"w-stuck", "Notified"}}));
  EXPECT_EQ(firing().size(), 3u);
  s = scan(t1_ + 10 * kMinute);
  EXPECT_TRUE(s["alerts"].empty()) << s.dump();
  std::lock_guard lock(mu_);
  // The webhook took the first scan's notices too (it was up); the second scan sent them
  // again with Alertmanager's: delivery is at least once, recording exactly once.
  EXPECT_EQ(notices_.size(), 6u);
}

// `gpubank scan --every 1s`: a service that scans each second at the real time (the series
// reach now) until SIGTERM, which ends it with status 0. Several scans, one notice each.
TEST_F(ScanPrometheusTest, AsAServiceItScansEverySecondAndStopsOnSigterm) {
  write_series(standard_workloads());
  std::ofstream(dir_ / "inference.yaml") << kInferencePolicy;
  start_prometheus();
  start_alertmanager();
  start_webhook();
  if (HasFatalFailure()) return;

  std::vector<std::string> args = scan_argv(0);
  const auto at = std::find(args.begin(), args.end(), "--at");
  ASSERT_NE(at, args.end());
  *at = "--every";
  *(at + 1) = "1s";
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const std::string out = (dir_ / "every.out").string();
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = 0;
  ASSERT_EQ(posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ), 0);
  posix_spawn_file_actions_destroy(&actions);
  // Until three scans have printed (each -o json output is one object), at most a minute.
  int scans = 0;
  for (int i = 0; i < 600 && scans < 3; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    std::ifstream in(out);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    scans = 0;
    for (std::size_t p = text.find("\"openAlerts\""); p != std::string::npos; p = text.find("\"openAlerts\"", p + 1)) ++scans;
  }
  EXPECT_GE(scans, 3);
  ::kill(pid, SIGTERM);
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;

  // The notebook (idle throughout) was notified once, however many scans ran.
  std::lock_guard lock(mu_);
  int nb = 0;
  for (const auto& n : notices_) nb += n["alert"]["workloadUid"] == "w-nb" ? 1 : 0;
  EXPECT_EQ(nb, 1);
}

// The crash test: `gpubank scan` SIGKILLed at seeded random moments (while it queries,
// records, or waits on a slow webhook), until eight have died (at most 48 scans) over two and a half hours of scans,
// then one scan left to finish. The record must stay a verifiable chain; no workload may have two open
// alerts or an alert notified twice; and every Notified in the record must have reached the
// webhook before it was recorded (delivery at least once, record exactly once).
TEST_F(ScanPrometheusTest, KilledAtRandomMomentsTheRecordNeverNotifiesTwiceOrLosesANotice) {
  write_series(standard_workloads());
  std::ofstream(dir_ / "inference.yaml") << kInferencePolicy;
  start_prometheus();
  start_alertmanager();
  slow_hook_ = true;
  start_webhook();
  if (HasFatalFailure()) return;

  // Kills land anywhere from start-up to the end; the notices of a scan take a second to
  // deliver (250 ms each), so many land between delivery and record. The first scans repeat
  // T1, whose notices stay due until one scan records them.
  // A scan with nothing left to deliver finishes in a few hundred milliseconds, faster on a
  // fast machine: the kill window shrinks to the duration of the last scan that finished by
  // itself, and the scans go on (at least 16, at most 48) until eight of them have been killed.
  std::mt19937 random(20261204);
  int window_ms = 2000;
  int killed = 0;
  int spawned = 0;
  for (; spawned < 48 && (killed < 8 || spawned < 16); ++spawned) {
    const int step = std::clamp(spawned - 6, 0, 9);
    const std::vector<std::string> args = scan_argv(t1_ + step * 15 * kMinute);
    std::vector<char*> argv;
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
    pid_t pid = 0;
    ASSERT_EQ(posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ), 0);
    posix_spawn_file_actions_destroy(&actions);
    const int delay = std::uniform_int_distribution<int>(window_ms / 10, window_ms)(random);
    const auto started = std::chrono::steady_clock::now();
    int status = 0;
    bool exited = false;
    while (std::chrono::steady_clock::now() - started < std::chrono::milliseconds(delay)) {
      if (::waitpid(pid, &status, WNOHANG) == pid) {
        exited = true;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    if (exited) {
      const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started);
      window_ms = std::max(20, static_cast<int>(took.count()));
      continue;
    }
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
    if (WIFSIGNALED(status)) ++killed;
  }
  const nlohmann::json last = scan(t1_ + 10 * 15 * kMinute);
  EXPECT_TRUE(last.is_object());

  auto store = store::Store::open((dir_ / "governance.db").string());
  ASSERT_TRUE(store) << store.error();
  const auto verified = store::verify_store(**store);
  ASSERT_TRUE(verified) << verified.error();
  EXPECT_TRUE(verified->ok()) << verified->audit.problem;
  const auto audit = (*store)->audit(0, 100000);
  ASSERT_TRUE(audit);
  std::map<std::pair<std::string, std::int64_t>, int> notified;  // (workload, alert id) -> records
  std::map<std::string, std::set<std::int64_t>> open;           // workload -> open alert ids
  for (const bank::AuditEntry& e : *audit) {
    const nlohmann::json a = nlohmann::json::parse(e.numbers);
    const std::pair<std::string, std::int64_t> key{a["workloadUid"].get<std::string>(), a["id"].get<std::int64_t>()};
    if (e.action == "LowUtilizationNotified") ++notified[key];
    if (e.decision == "Resolved") {
      open[key.first].erase(key.second);
    } else {
      open[key.first].insert(key.second);
    }
  }
  for (const auto& [key, n] : notified) EXPECT_EQ(n, 1) << key.first << " alert " << key.second;
  for (const auto& [uid, ids] : open) EXPECT_LE(ids.size(), 1u) << uid;
  EXPECT_FALSE(notified.empty());
  std::set<std::pair<std::string, std::int64_t>> delivered;
  {
    std::lock_guard lock(mu_);
    for (const auto& n : notices_) {
      if (n.is_object() && n["action"] == "Notified") {
        delivered.insert({n["alert"]["workloadUid"].get<std::string>(), n["alert"]["id"].get<std::int64_t>()});
      }
    }
  }
  for (const auto& [key, n] : notified) EXPECT_TRUE(delivered.contains(key)) << key.first << " alert " << key.second;
  RecordProperty("killed", killed);
  EXPECT_GE(killed, 3) << "scans must die before they finish, or the test tests little";
  std::printf("scans killed: %d of %d\n", killed, spawned);
}

}  // namespace
}  // namespace gpubank::governance
