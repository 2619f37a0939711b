// `gpubank report showback` against a real Prometheus holding a small fixed hour, with the
// arithmetic written out. Prices (examples/policies): H100 3.5 USD per device-hour, A100
// 0.3 per 1g.10gb slice. The period is [T0, T0+60m); the series run from T0-10m to T0+70m.
//
//   search/u1  a   training  2 H100 all hour at 50 %      2 x 60 = 120 min = 2.0 h, low 0       cost 7.00
//   search/u2  b   training  1 H100, 5 % for 30 min, then 80 %  1.0 h, low 0.5 h (< 10 %)     cost 3.50, low 1.75
//   ads/u3     c   training  1 H100 from T0+20m at 2 %    40 min = 0.6667 h, cost 2.3333; low only
//                                                         after training-default's 30m startup
//                                                         grace: T0+51m..T0+59m, 9 min = 0.15 h
//   unknown        a pod without attribution, 1 H100      1.0 h (its own row, never dropped)   cost 3.50
//   research/u4 d  notebook  half of a time-sliced 1g.10gb slice at 1 %: 0.5 h, low 0.5 h (< 5 %) cost 0.15
//   research/u5 e  notebook  the other half                                0.5 h, low 0.5 h    cost 0.15
//   customer-service/u6 f inference serving floor, 2 H100 at 3 %: 2.0 h, all serving floor, low 0  cost 7.00
//                       (Deployment customer-service-llm, whose InferenceScalingPolicy sets ttftP95 1500ms)
//   loans: ads borrows 1 GPU of search's on h100-rdma-training all hour: 1.0 h borrowed / lent
//   recompute loss: ads 0.5 GPU-hours; search 0.25 + 0.1 across a counter reset (x Prometheus'
//                   extrapolation of increase(), written out at the check)
//
// Pools: h100-rdma-training 2 + 1 + 0.6667 + 1 = 4.6667 h (16.3333 USD), h100-inference 2 h
// (7 USD), mig-or-shared-development 1 h (0.30 USD); in all 7.6667 h, 23.6333 USD.
//
// KPIs: devices (gpubank_gpu_info) 8 H100 training, 4 H100 inference, 7 slices: allocation
// rates 4.6667/8 = 0.58333, 2/4 = 0.5, 1/7. Quotas: search guaranteed 4, ads guaranteed 2
// and borrowable 2: search 3/4 = 0.75 allocated, no borrow rate (nothing borrowable); ads
// 0.6667/2 allocated, borrowed 1/2 = 0.5.
// Leaderboard (minimum 0.5 judged GPU-hours): H100/full/exclusive: ads 0.15/0.6667 = 0.225
// first, search 0.5/3 = 0.1667 second, customer-service (all serving floor) and unknown
// unranked; A100/1g.10gb/exclusive: research 1.0/1.0 first.
// Effective hours: a busy device-minute (at or above the governing policy's threshold) for
// training and notebooks, a minute within the TTFT SLO for f. a: 50 % >= 10 all hour, 2.0 h;
// b: 30 min at 80 %, 0.5 h; c: 2 %, 0; d, e: 1 % < 5, 0; unknown: no policy, not measured.
// f's pod serves 100 requests, 1,000 prompt and 500 generated tokens a minute; the requests
// counted at the samples up to T0+40m answer within 0.5 s, later ones in 2.5-5 s. p95 over
// two minutes (rate[2m]) meets 1.5 s at T0+0m..T0+40m (at +41m half the requests are slow:
// p95 4.75 s): 41 minutes x 2 GPUs = 1.3667 h. Tokens 60 x 1,500 = 90,000, effective
// 41 x 1,500 = 61,500. Effective utilisation: h100-rdma-training (2 + 0.5) / 3.6667 =
// 0.6818, search 2.5 / 3, ads 0; h100-inference 1.3667 / 2. Inference unit cost:
// customer-service 7.00 USD / 0.0615 million tokens = 113.82 USD per million.
// Review (examples' quotas): every guarantee is under 30 % used (search 3 of 32 GPUs: lower
// to ceil(3 x 1.2) = 4; ads 0.67 of 16: 1; customer-service 2 of 32 on h100-inference: 3;
// research 1 of 16 slices: 2; the idle ones: 0); ads borrowed all 60 minutes, 1 GPU: raise
// 16 to 17; search's ClusterQueue was inadmissible 30 of 60 minutes (over 25 %); Kueue's
// legacy-team queue has no policy.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>

#include <nlohmann/json.hpp>

#include "core/timestamp.hpp"
#include "support/paths.hpp"
#include "support/process.hpp"
#include "support/prometheus_blocks.hpp"

namespace gpubank::governance {
namespace {

namespace fs = std::filesystem;
using Labels = std::vector<std::pair<std::string, std::string>>;

std::string labels_text(const Labels& labels) {
  std::string out = "{";
  for (std::size_t i = 0; i < labels.size(); ++i) out += (i ? "," : "") + labels[i].first + "=\"" + labels[i].second + "\"";
  return out + "}";
}

struct Holder {
  std::string uid, group, owner, type, pool, model, partition, role;
  std::string pod;
  std::string kind = "Job";
  std::string workload;  // empty: "job-<uid>"
  [[nodiscard]] std::string workload_name() const { return workload.empty() ? "job-" + uid : workload; }
};

class ShowbackPrometheusTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!prometheus_.available()) GTEST_SKIP() << "needs prometheus and promtool (scripts/bootstrap.sh installs them)";
    std::string pattern = (fs::temp_directory_path() / "gpubank-showback-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    const std::int64_t now =
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
    t0_ = now / 3600 * 3600 - 3 * 3600;  // a whole hour, in the past
  }
  void TearDown() override {
    if (!dir_.empty() && !HasFailure()) fs::remove_all(dir_);
  }

  // A device held by `holders` (more than one: time-sliced), from minute `first` (relative
  // to T0) to T0+70m, with utilisation util(minute) in percent.
  struct Device {
    std::string uuid, instance;
    std::vector<Holder> holders;
    std::int64_t first = -10;
    std::function<double(std::int64_t)> util;
    bool mapped = true;
  };

  void write(const std::vector<Device>& devices) {
    std::ofstream out(dir_ / "series.om");
    auto each_minute = [&](const Device& d, const std::function<void(std::int64_t, std::int64_t)>& f) {
      for (std::int64_t m = d.first; m <= 70; ++m) f(m, t0_ + m * 60);
    };
    auto holder_labels = [](const Holder& h) {
      Labels l{{"namespace", h.group.empty() ? "default" : h.group}, {"pod", h.pod}, {"container", "main"}};
      if (!h.group.empty()) {
        l.insert(l.end(), {{"business_group", h.group}, {"owner_id", h.owner}, {"workload_type", h.type},
                           {"workload_kind", h.kind}, {"workload", h.workload_name()}, {"workload_uid", h.uid}});
      }
      if (!h.role.empty()) l.push_back({"capacity_role", h.role});
      return l;
    };
    out << "# TYPE DCGM_FI_PROF_GR_ENGINE_ACTIVE gauge\n";
    for (const Device& d : devices) {
      for (const Holder& h : d.holders) {
        Labels l{{"UUID", d.uuid}, {"Hostname", "node-1"}, {"mapping_status", d.mapped ? "mapped" : "unknown"}};
        if (!d.instance.empty()) l.push_back({"GPU_I_ID", d.instance});
        if (d.holders.size() > 1) l.push_back({"sharing", "time-sliced"});
        for (const auto& x : holder_labels(h)) l.push_back(x);
        each_minute(d, [&](std::int64_t m, std::int64_t t) {
          out << "DCGM_FI_PROF_GR_ENGINE_ACTIVE" << labels_text(l) << ' ' << d.util(m) / 100 << ' ' << t << '\n';
        });
      }
    }
    out << "# TYPE gpubank_gpu_allocation_info gauge\n";
    for (const Device& d : devices) {
      for (const Holder& h : d.holders) {
        Labels l{{"node", "node-1"}, {"pool", h.pool}, {"gpu_model", h.model}, {"partition", h.partition},
                 {"gpu_uuid", d.uuid}};
        if (!d.instance.empty()) l.push_back({"gpu_instance", d.instance});
        for (const auto& x : holder_labels(h)) l.push_back(x);
        each_minute(d, [&](std::int64_t, std::int64_t t) { out << "gpubank_gpu_allocation_info" << labels_text(l) << " 1 " << t << '\n'; });
      }
    }
    out << "# TYPE gpubank_pod_start_time_seconds gauge\n";
    for (const Device& d : devices) {
      for (const Holder& h : d.holders) {
        if (h.group.empty()) continue;
        Labels l{{"namespace", h.group}, {"pod", h.pod}, {"pod_uid", "pod-" + h.uid}, {"workload_kind", h.kind},
                 {"workload", h.workload_name()}, {"workload_uid", h.uid}};
        const std::int64_t start = d.first > -10 ? t0_ + d.first * 60 : t0_ - 5 * 3600;
        each_minute(d, [&](std::int64_t, std::int64_t t) {
          out << "gpubank_pod_start_time_seconds" << labels_text(l) << ' ' << start << ' ' << t << '\n';
        });
      }
    }
    out << "# TYPE gpubank_gpu_info gauge\n";
    for (const auto& [pool, model, partition, n] :
         {std::tuple{"h100-rdma-training", "H100", "full", 8}, std::tuple{"h100-inference", "H100", "full", 4},
          std::tuple{"mig-or-shared-development", "A100", "1g.10gb", 7}}) {
      for (int i = 0; i < n; ++i) {
        const std::string series = "gpubank_gpu_info" + labels_text({{"node", "node-1"}, {"pool", pool},
                                                                     {"gpu_model", model}, {"partition", partition},
                                                                     {"gpu_uuid", std::string(pool) + "-" + std::to_string(i)}});
        for (std::int64_t m = -10; m <= 70; ++m) out << series << " 1 " << t0_ + m * 60 << '\n';
      }
    }
    out << "# TYPE gpubank_quota_gpus gauge\n";
    for (const auto& [group, kind, value] : {std::tuple{"search", "guaranteed", 4}, std::tuple{"search", "borrowable", 0},
                                             std::tuple{"ads", "guaranteed", 2}, std::tuple{"ads", "borrowable", 2}}) {
      const std::string series = "gpubank_quota_gpus" + labels_text({{"business_group", group},
                                                                       {"pool", "h100-rdma-training"}, {"kind", kind}});
      for (std::int64_t m = -10; m <= 70; ++m) out << series << ' ' << value << ' ' << t0_ + m * 60 << '\n';
    }
    // Kueue: search's ClusterQueue has inadmissible work for the first 30 minutes; a queue
    // no policy renders.
    out << "# TYPE kueue_pending_workloads gauge\n";
    for (std::int64_t m = -10; m <= 70; ++m) {
      out << "kueue_pending_workloads{cluster_queue=\"search-h100-rdma-training\",status=\"inadmissible\"} "
          << (m >= 0 && m < 30 ? 2 : 0) << ' ' << t0_ + m * 60 << '\n';
    }
    out << "# TYPE kueue_cluster_queue_nominal_quota gauge\n";
    for (const char* queue : {"search-h100-rdma-training", "legacy-team"}) {
      for (std::int64_t m = -10; m <= 70; ++m) {
        out << "kueue_cluster_queue_nominal_quota{cluster_queue=\"" << queue
            << "\",flavor=\"h100\",resource=\"nvidia.com/gpu\"} 8 " << t0_ + m * 60 << '\n';
      }
    }
    // Kueue admitted 10 of search's workloads on h100-rdma-training during the hour: nine
    // after 30 s each, one after 1,200 s (counted at the samples of minutes 1..10).
    out << "# TYPE kueue_admission_wait_time_seconds_bucket gauge\n";
    for (const auto& [le, per] : {std::pair{"60", 1}, std::pair{"1800", 1}, std::pair{"+Inf", 1}}) {
      for (std::int64_t m = -10; m <= 70; ++m) {
        const std::int64_t admitted = std::clamp<std::int64_t>(m, 0, 10);
        const std::int64_t fast = std::min<std::int64_t>(admitted, 9);
        const std::int64_t value = std::string(le) == "60" ? fast : admitted * per;
        out << "kueue_admission_wait_time_seconds_bucket{cluster_queue=\"search-h100-rdma-training\","
            << "priority_class=\"batch\",le=\"" << le << "\"} " << value << ' ' << t0_ + m * 60 << '\n';
      }
    }
    out << "# TYPE kueue_admission_wait_time_seconds_sum gauge\n";
    for (std::int64_t m = -10; m <= 70; ++m) {
      const std::int64_t admitted = std::clamp<std::int64_t>(m, 0, 10);
      out << "kueue_admission_wait_time_seconds_sum{cluster_queue=\"search-h100-rdma-training\",priority_class=\"batch\"} "
          << 30 * std::min<std::int64_t>(admitted, 9) + (admitted == 10 ? 1200 : 0) << ' ' << t0_ + m * 60 << '\n';
    }
    out << "# TYPE kueue_admission_wait_time_seconds_count gauge\n";
    for (std::int64_t m = -10; m <= 70; ++m) {
      out << "kueue_admission_wait_time_seconds_count{cluster_queue=\"search-h100-rdma-training\",priority_class=\"batch\"} "
          << std::clamp<std::int64_t>(m, 0, 10) << ' ' << t0_ + m * 60 << '\n';
    }
    out << "# TYPE gpubank_bank_loan_gpus gauge\n";
    for (std::int64_t m = -10; m <= 70; ++m) {
      out << "gpubank_bank_loan_gpus{lender=\"search\",borrower=\"ads\",pool=\"h100-rdma-training\"} 1 " << t0_ + m * 60 << '\n';
    }
    // Recompute loss (the controller's counter): ads loses 0.5 GPU-hours at T0+30m; search
    // 0.25 at T0+10m, then the controller restarts (the counter resets at T0+40m) and it
    // loses 0.1 more at T0+50m.
    out << "# TYPE gpubank_recompute_loss_gpu_hours_total gauge\n";
    for (std::int64_t m = -10; m <= 70; ++m) {
      out << "gpubank_recompute_loss_gpu_hours_total{business_group=\"ads\",pool=\"h100-rdma-training\"} "
          << (m >= 30 ? 0.5 : 0.0) << ' ' << t0_ + m * 60 << '\n';
    }
    for (std::int64_t m = -10; m <= 70; ++m) {
      const double v = m < 10 ? 0.0 : m < 40 ? 0.25 : m < 50 ? 0.0 : 0.1;
      out << "gpubank_recompute_loss_gpu_hours_total{business_group=\"search\",pool=\"h100-rdma-training\"} " << v
          << ' ' << t0_ + m * 60 << '\n';
    }
    // vLLM on f's pod, labelled as a PodMonitor scrape labels it: 100 requests, 1,000 prompt
    // and 500 generated tokens a minute; those counted up to T0+40m fast, later ones slow.
    const std::string pod = R"(namespace="customer-service",pod="f-0",model_name="customer-service-llm")";
    out << "# TYPE vllm:prompt_tokens_total gauge\n";
    for (std::int64_t m = -10; m <= 70; ++m) {
      out << "vllm:prompt_tokens_total{" << pod << "} " << 1000 * (m + 10) << ' ' << t0_ + m * 60 << '\n';
    }
    out << "# TYPE vllm:generation_tokens_total gauge\n";
    for (std::int64_t m = -10; m <= 70; ++m) {
      out << "vllm:generation_tokens_total{" << pod << "} " << 500 * (m + 10) << ' ' << t0_ + m * 60 << '\n';
    }
    out << "# TYPE vllm:time_to_first_token_seconds_bucket gauge\n";
    for (const char* le : {"0.25", "0.5", "1.0", "2.5", "5.0", "+Inf"}) {
      const double bound = std::string(le) == "+Inf" ? 1e9 : std::stod(le);
      for (std::int64_t m = -10; m <= 70; ++m) {
        const std::int64_t fast = 100 * (std::min<std::int64_t>(m, 40) + 10);
        const std::int64_t slow = 100 * std::max<std::int64_t>(0, m - 40);
        const std::int64_t count = (bound >= 0.5 ? fast : 0) + (bound >= 5.0 ? slow : 0);
        out << "vllm:time_to_first_token_seconds_bucket{" << pod << ",le=\"" << le << "\"} " << count << ' '
            << t0_ + m * 60 << '\n';
      }
    }
    out << "# EOF\n";
  }

  nlohmann::json report(const std::string& level, const std::string& which = "showback") {
    std::vector<std::string> extra;
    if (which == "showback") extra = {"--level", level};
    if (which == "leaderboard") extra = {"--min-gpu-hours", "0.5"};
    if (which == "review") extra = {"--timeout", "60s"};
    const auto r = gpubank::testing::run_process({gpubank::testing::binary_dir() + "/cmd/gpubank/gpubank", "report", which,
                                "--prometheus", prometheus_.url(), "--policies",
                                gpubank::testing::examples_dir() + "/policies", "--from",
                                format_rfc3339(Timestamp(std::chrono::seconds(t0_))), "--to",
                                format_rfc3339(Timestamp(std::chrono::seconds(t0_ + 3600))), "--format", "json",
                                extra.size() > 0 ? extra[0] : "--timeout", extra.size() > 1 ? extra[1] : "60s"});
    EXPECT_EQ(r.status, 0) << r.err;
    nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
    if (which != "showback") return j.is_array() ? j : nlohmann::json::array();  // kpis, leaderboard, review
    return j.is_object() ? j : nlohmann::json{{"rows", nlohmann::json::array()}, {"totals", nlohmann::json::array()}};
  }

  fs::path dir_;
  std::int64_t t0_ = 0;
  gpubank::testing::PrometheusOnBlocks prometheus_;
};

double hours(const nlohmann::json& row) { return row["allocatedGpuHours"].get<double>(); }

TEST_F(ShowbackPrometheusTest, HandComputedHourAddsUpFromOwnersToGroupsToPools) {
  const Holder a{"a", "search", "u1", "training", "h100-rdma-training", "H100", "full", "", "a-0", "Job", ""};
  const Holder b{"b", "search", "u2", "training", "h100-rdma-training", "H100", "full", "", "b-0", "Job", ""};
  const Holder c{"c", "ads", "u3", "training", "h100-rdma-training", "H100", "full", "", "c-0", "Job", ""};
  const Holder anon{"", "", "", "", "h100-rdma-training", "H100", "full", "", "mystery-0", "Job", ""};
  const Holder d{"d", "research", "u4", "notebook", "mig-or-shared-development", "A100", "1g.10gb", "", "d-0", "Job", ""};
  const Holder e{"e", "research", "u5", "notebook", "mig-or-shared-development", "A100", "1g.10gb", "", "e-0", "Job", ""};
  const Holder f{"f", "customer-service", "u6", "inference", "h100-inference", "H100", "full", "serving-floor", "f-0",
                 "Deployment", "customer-service-llm"};
  auto at = [](double v) { return [v](std::int64_t) { return v; }; };
  write({{"GPU-a0", "", {a}, -10, at(50)},
         {"GPU-a1", "", {a}, -10, at(50)},
         {"GPU-b0", "", {b}, -10, [](std::int64_t m) { return m < 30 ? 5.0 : 80.0; }},
         {"GPU-c0", "", {c}, 20, at(2)},
         {"GPU-x0", "", {anon}, -10, at(0), false},
         {"GPU-mig", "3", {d, e}, -10, at(1)},
         {"GPU-f0", "", {f}, -10, at(3)},
         {"GPU-f1", "", {f}, -10, at(3)}});
  ASSERT_EQ(prometheus_.start(dir_, dir_ / "series.om"), "");

  const nlohmann::json w = report("workload");
  ASSERT_EQ(w["rows"].size(), 7u) << w.dump();
  std::map<std::string, nlohmann::json> by_uid;
  for (const auto& r : w["rows"]) by_uid[r.value("workloadUid", std::string("unknown"))] = r;
  EXPECT_NEAR(hours(by_uid["a"]), 2.0, 1e-9);
  EXPECT_NEAR(by_uid["a"]["lowUtilizationGpuHours"].get<double>(), 0, 1e-9);
  EXPECT_NEAR(by_uid["a"]["cost"].get<double>(), 7.0, 1e-9);
  EXPECT_NEAR(hours(by_uid["b"]), 1.0, 1e-9);
  EXPECT_NEAR(by_uid["b"]["lowUtilizationGpuHours"].get<double>(), 0.5, 1e-9);
  EXPECT_NEAR(by_uid["b"]["lowUtilizationCost"].get<double>(), 1.75, 1e-9);
  EXPECT_NEAR(hours(by_uid["c"]), 40.0 / 60, 1e-9);
  EXPECT_NEAR(by_uid["c"]["lowUtilizationGpuHours"].get<double>(), 9.0 / 60, 1e-9);  // after its startup grace
  EXPECT_EQ(by_uid["unknown"]["businessGroup"], "unknown");
  EXPECT_NEAR(hours(by_uid["unknown"]), 1.0, 1e-9);
  EXPECT_NEAR(hours(by_uid["d"]), 0.5, 1e-9);
  EXPECT_NEAR(by_uid["d"]["lowUtilizationGpuHours"].get<double>(), 0.5, 1e-9);
  EXPECT_NEAR(by_uid["d"]["cost"].get<double>(), 0.15, 1e-9);
  EXPECT_NEAR(hours(by_uid["e"]), 0.5, 1e-9);
  EXPECT_NEAR(hours(by_uid["f"]), 2.0, 1e-9);
  EXPECT_NEAR(by_uid["f"]["servingFloorGpuHours"].get<double>(), 2.0, 1e-9);
  EXPECT_NEAR(by_uid["f"]["lowUtilizationGpuHours"].get<double>(), 0, 1e-9);

  // Effective hours and tokens.
  auto effective = [&](const std::string& uid) { return by_uid[uid]["effectiveGpuHours"].get<double>(); };
  auto measured = [&](const std::string& uid) { return by_uid[uid]["measuredGpuHours"].get<double>(); };
  EXPECT_NEAR(effective("a"), 2.0, 1e-9);
  EXPECT_NEAR(effective("b"), 0.5, 1e-9);
  EXPECT_NEAR(effective("c"), 0, 1e-9);
  EXPECT_NEAR(measured("c"), 40.0 / 60, 1e-9);
  EXPECT_NEAR(effective("d"), 0, 1e-9);
  EXPECT_NEAR(measured("d"), 0.5, 1e-9);
  EXPECT_NEAR(measured("unknown"), 0, 1e-9);
  EXPECT_NEAR(effective("f"), 82.0 / 60, 1e-6);
  EXPECT_NEAR(measured("f"), 2.0, 1e-9);
  EXPECT_NEAR(by_uid["f"]["tokens"].get<double>(), 90000, 1e-3);
  EXPECT_NEAR(by_uid["f"]["effectiveTokens"].get<double>(), 61500, 1e-3);
  EXPECT_FALSE(by_uid["a"].contains("tokens"));

  // Totals per pool and overall.
  std::map<std::string, nlohmann::json> totals;
  for (const auto& t : w["totals"]) totals[t.value("pool", std::string("all"))] = t;
  EXPECT_NEAR(hours(totals["h100-rdma-training"]), 2 + 1 + 40.0 / 60 + 1, 1e-9);
  EXPECT_NEAR(totals["h100-rdma-training"]["cost"].get<double>(), (2 + 1 + 40.0 / 60 + 1) * 3.5, 1e-9);
  EXPECT_NEAR(hours(totals["h100-inference"]), 2.0, 1e-9);
  EXPECT_NEAR(hours(totals["mig-or-shared-development"]), 1.0, 1e-9);
  EXPECT_NEAR(hours(totals["all"]), 7 + 2.0 / 3, 1e-9);
  EXPECT_NEAR(totals["all"]["cost"].get<double>(), 23.6 + 0.1 / 3, 1e-9);

  // Owners add up to their group, groups (and unknown) to the pool.
  const nlohmann::json o = report("owner");
  nlohmann::json g = report("group");
  std::map<std::string, double> owners_by_group;
  for (const auto& r : o["rows"]) owners_by_group[r["businessGroup"].get<std::string>() + "/" + r["pool"].get<std::string>()] += hours(r);
  double pool_sum = 0;
  for (const auto& r : g["rows"]) {
    const std::string key = r["businessGroup"].get<std::string>() + "/" + r["pool"].get<std::string>();
    EXPECT_NEAR(owners_by_group[key], hours(r), 1e-9) << key;
    if (r["pool"] == "h100-rdma-training") pool_sum += hours(r);
  }
  EXPECT_NEAR(pool_sum, hours(totals["h100-rdma-training"]), 1e-9);
  ASSERT_EQ(g["loans"].size(), 2u);
  // Recompute loss is increase() over the period: evaluated at T0+60m-1ms, the samples at
  // T0..T0+59m (3,540 s apart) extrapolate to the window's end (59.999 s further) and not
  // before the first one (the counter is 0 there). search's counter reset is bridged:
  // 0.25 + 0.1.
  const double extrapolated = 3599.999 / 3540;
  const auto loss = [](const nlohmann::json& loans) { return loans["recomputeLossGpuHours"].get<double>(); };
  EXPECT_NEAR(loss(g["loans"][0]), 0.5 * extrapolated, 1e-9);
  EXPECT_NEAR(loss(g["loans"][1]), 0.35 * extrapolated, 1e-9);
  g["loans"][0].erase("recomputeLossGpuHours");
  g["loans"][1].erase("recomputeLossGpuHours");
  EXPECT_EQ(g["loans"][0], (nlohmann::json{{"businessGroup", "ads"}, {"pool", "h100-rdma-training"},
                                           {"borrowedGpuHours", 1.0}, {"lentGpuHours", 0.0}}));
  EXPECT_EQ(g["loans"][1], (nlohmann::json{{"businessGroup", "search"}, {"pool", "h100-rdma-training"},
                                           {"borrowedGpuHours", 0.0}, {"lentGpuHours", 1.0}}));

  // KPIs.
  std::map<std::string, nlohmann::json> kpi;
  for (const auto& k : report("", "kpis")) kpi[k["pool"].get<std::string>() + "/" + k.value("businessGroup", "")] = k;
  EXPECT_NEAR(kpi["h100-rdma-training/"]["allocationRate"].get<double>(), (4 + 2.0 / 3) / 8, 1e-9);
  EXPECT_NEAR(kpi["h100-inference/"]["allocationRate"].get<double>(), 0.5, 1e-9);
  EXPECT_NEAR(kpi["mig-or-shared-development/"]["allocationRate"].get<double>(), 1.0 / 7, 1e-9);
  EXPECT_NEAR(kpi["h100-rdma-training/search"]["allocationRate"].get<double>(), 0.75, 1e-9);
  EXPECT_TRUE(kpi["h100-rdma-training/search"]["borrowRate"].is_null());
  EXPECT_NEAR(kpi["h100-rdma-training/ads"]["allocationRate"].get<double>(), (2.0 / 3) / 2, 1e-9);
  EXPECT_NEAR(kpi["h100-rdma-training/ads"]["borrowRate"].get<double>(), 0.5, 1e-9);
  EXPECT_NEAR(kpi["h100-rdma-training/ads"]["idleWasteShare"].get<double>(), 0.15 / (2.0 / 3), 1e-9);
  EXPECT_TRUE(kpi["h100-inference/customer-service"]["allocationRate"].is_null());  // no guarantee known
  EXPECT_NEAR(kpi["h100-rdma-training/"]["effectiveUtilization"].get<double>(), 2.5 / (3 + 2.0 / 3), 1e-9);
  EXPECT_NEAR(kpi["h100-rdma-training/search"]["effectiveUtilization"].get<double>(), 2.5 / 3, 1e-9);
  EXPECT_NEAR(kpi["h100-rdma-training/ads"]["effectiveUtilization"].get<double>(), 0, 1e-9);
  EXPECT_NEAR(kpi["h100-inference/"]["effectiveUtilization"].get<double>(), 82.0 / 60 / 2, 1e-6);
  EXPECT_NEAR(kpi["h100-inference/customer-service"]["inferenceUnitCostPerMillionTokens"].get<double>(),
              7.0 / 0.0615, 1e-6);
  EXPECT_FALSE(kpi["h100-rdma-training/search"].contains("inferenceUnitCostPerMillionTokens"));
  // Queue wait: whatever Prometheus extrapolates scales the buckets, the sum and the count
  // alike, so the mean (9 x 30 + 1,200) / 10 = 147 s and the p90 (rank 9 of 10: the top of
  // the 0-60 s bucket) are exact.
  EXPECT_NEAR(kpi["h100-rdma-training/search"]["queueWaitMeanSeconds"].get<double>(), 147, 1e-6);
  EXPECT_NEAR(kpi["h100-rdma-training/search"]["queueWaitP90Seconds"].get<double>(), 60, 1e-6);
  EXPECT_FALSE(kpi["h100-rdma-training/ads"].contains("queueWaitMeanSeconds"));
  EXPECT_NEAR(kpi["h100-rdma-training/ads"]["recomputeLossGpuHours"].get<double>(), 0.5 * 3599.999 / 3540, 1e-9);
  EXPECT_NEAR(kpi["h100-rdma-training/"]["recomputeLossGpuHours"].get<double>(), 0.85 * 3599.999 / 3540, 1e-9);

  // The leaderboard.
  std::vector<std::tuple<std::string, nlohmann::json, std::string>> board;
  for (const auto& entry : report("", "leaderboard")) {
    board.emplace_back(entry["deviceClass"], entry["rank"], entry["businessGroup"]);
  }
  EXPECT_EQ(board, (std::vector<std::tuple<std::string, nlohmann::json, std::string>>{
                       {"A100/1g.10gb/exclusive", 1, "research"},
                       {"H100/full/exclusive", 1, "ads"},
                       {"H100/full/exclusive", 2, "search"},
                       {"H100/full/exclusive", nullptr, "customer-service"},
                       {"H100/full/exclusive", nullptr, "unknown"}}));

  // The review.
  std::vector<std::pair<std::string, std::string>> findings;
  std::map<std::string, nlohmann::json> by_subject;
  for (const auto& finding : report("", "review")) {
    // Lease findings depend on the date the test runs (the examples' leases have dates):
    // review_test.cpp checks them over a fixed period.
    if (finding["kind"].get<std::string>().starts_with("lease-")) continue;
    findings.emplace_back(finding["kind"], finding["subject"]);
    by_subject[finding["kind"].get<std::string>() + " " + finding["subject"].get<std::string>()] = finding;
  }
  EXPECT_EQ(findings, (std::vector<std::pair<std::string, std::string>>{
                          {"borrowed-most-of-the-time", "ads on h100-rdma-training"},
                          {"guarantee-unused", "ads on h100-rdma-training"},
                          {"guarantee-unused", "ads on mig-or-shared-development"},
                          {"guarantee-unused", "customer-service on h100-inference"},
                          {"guarantee-unused", "customer-service on l40s-inference"},
                          {"guarantee-unused", "research on h100-rdma-training"},
                          {"guarantee-unused", "research on mig-or-shared-development"},
                          {"guarantee-unused", "search on h100-rdma-training"},
                          {"guarantee-unused", "search on mig-or-shared-development"},
                          {"pending-long", "ClusterQueue search-h100-rdma-training"},
                          {"queue-without-policy", "ClusterQueue legacy-team"}}));
  const auto& unused = by_subject["guarantee-unused search on h100-rdma-training"];
  EXPECT_EQ(unused["policy"], "GPUQuotaPolicy/search-team-h100");
  EXPECT_EQ(unused["evidence"]["suggestedGuaranteed"], 4);
  EXPECT_EQ(by_subject["guarantee-unused research on mig-or-shared-development"]["evidence"]["suggestedGuaranteed"], 2);
  EXPECT_EQ(by_subject["guarantee-unused customer-service on h100-inference"]["evidence"]["suggestedGuaranteed"], 3);
  const auto& borrowed = by_subject["borrowed-most-of-the-time ads on h100-rdma-training"];
  EXPECT_EQ(borrowed["policy"], "GPUQuotaPolicy/ads-training-h100");
  EXPECT_EQ(borrowed["evidence"]["suggestedGuaranteed"], 17);
  EXPECT_NEAR(by_subject["pending-long ClusterQueue search-h100-rdma-training"]["evidence"]["inadmissibleShare"]
                  .get<double>(),
              0.5, 1e-9);
}

}  // namespace
}  // namespace gpubank::governance
