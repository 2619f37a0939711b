// Kueue's ClusterQueue families: names, labels and buckets of pkg/metrics/metrics.go at
// ff69552, values from a snapshot and from events, removal, refusals, promtool.
#include "twin/telemetry/kueue_metrics.hpp"

#include <gtest/gtest.h>

#include <limits>
#include <stdexcept>

#include "metrics/text_parser.hpp"
#include "support/promtool.hpp"

namespace gpubank::twin::telemetry {
namespace {

template <class T>
T must(Expected<T> e) {
  if (!e) throw std::runtime_error(e.error());
  return std::move(*e);
}

void ok(const metrics::Status& s) { ASSERT_TRUE(s.ok()) << s.error(); }

std::vector<ClusterQueueState> queues() {
  ClusterQueueState a;
  a.name = "search-h100";
  a.cohort = "h100";
  a.pending_active = 3;
  a.pending_inadmissible = 1;
  a.reserving_active = 5;
  a.admitted_active = 4;
  a.resources = {{"h100", "nvidia.com/gpu", 16, 8.0, std::nullopt, 12, 10},
                 {"h100", "cpu", 256, std::nullopt, 64.0, 96.5, 80}};
  a.pending_resources = {{"nvidia.com/gpu", 24}};
  ClusterQueueState b;
  b.name = "ads-h100";
  b.cohort = "h100";
  b.status = "pending";
  b.resources = {{"h100", "nvidia.com/gpu", 8, 0.0, 0.0, 0, 0}};
  return {a, b};
}

struct Fixture {
  metrics::Registry registry;
  std::optional<KueueMetrics> kueue;
};

std::unique_ptr<Fixture> fixture() {
  auto f = std::make_unique<Fixture>();
  f->kueue.emplace(must(KueueMetrics::register_in(f->registry)));
  return f;
}

bool has_line(const std::string& text, const std::string& line) { return text.find(line + "\n") != std::string::npos; }

TEST(KueueMetrics, BucketsAreKueuesExponentialBuckets) {
  // generateExponentialBuckets(16): 1, then 2.5 × 2^i for i = 0..14.
  EXPECT_EQ(kueue_exponential_buckets(16),
            (std::vector<double>{1, 2.5, 5, 10, 20, 40, 80, 160, 320, 640, 1280, 2560, 5120, 10240, 20480, 40960}));
  EXPECT_EQ(kueue_exponential_buckets(14).back(), 10240);
  EXPECT_EQ(kueue_exponential_buckets(14).size(), 14u);
  const auto f = fixture();
  const auto* h = dynamic_cast<const metrics::HistogramFamily*>(f->registry.find("kueue_admission_wait_time_seconds"));
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(h->upper_bounds(), kueue_exponential_buckets(16));
  const auto* q = dynamic_cast<const metrics::HistogramFamily*>(f->registry.find("kueue_quota_reserved_wait_time_seconds"));
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->upper_bounds(), kueue_exponential_buckets(14));
}

TEST(KueueMetrics, FamiliesHaveKueuesNamesLabelsAndHelp) {
  const auto f = fixture();
  using L = std::vector<std::string>;
  const L cq_resource{"cohort", "cluster_queue", "flavor", "resource", "replica_role"};
  const std::vector<std::pair<std::string, L>> expected{
      {"kueue_pending_workloads", {"cluster_queue", "status", "replica_role"}},
      {"kueue_reserving_active_workloads", {"cluster_queue", "replica_role"}},
      {"kueue_admitted_active_workloads", {"cluster_queue", "replica_role"}},
      {"kueue_cluster_queue_status", {"cluster_queue", "status", "replica_role"}},
      {"kueue_cluster_queue_resource_reservation", cq_resource},
      {"kueue_cluster_queue_resource_usage", cq_resource},
      {"kueue_cluster_queue_nominal_quota", cq_resource},
      {"kueue_cluster_queue_borrowing_limit", cq_resource},
      {"kueue_cluster_queue_lending_limit", cq_resource},
      {"kueue_cluster_queue_resource_pending", {"cluster_queue", "resource", "replica_role"}},
      {"kueue_admitted_workloads_total", {"cluster_queue", "priority_class", "replica_role"}},
      {"kueue_admission_wait_time_seconds", {"cluster_queue", "priority_class", "replica_role"}},
      {"kueue_quota_reserved_workloads_total", {"cluster_queue", "priority_class", "replica_role"}},
      {"kueue_quota_reserved_wait_time_seconds", {"cluster_queue", "priority_class", "replica_role"}},
      {"kueue_evicted_workloads_total", {"cluster_queue", "reason", "underlying_cause", "priority_class", "replica_role"}},
      {"kueue_preempted_workloads_total", {"preempting_cluster_queue", "reason", "replica_role"}},
  };
  for (const auto& [name, labels] : expected) {
    const metrics::FamilyBase* family = f->registry.find(name);
    ASSERT_NE(family, nullptr) << name;
    EXPECT_EQ(family->label_names(), labels) << name;
  }
  EXPECT_EQ(f->registry.collect().families.size(), expected.size());
  EXPECT_EQ(f->registry.find("kueue_admitted_workloads_total")->type(), metrics::MetricType::counter);
  EXPECT_EQ(f->registry.find("kueue_cluster_queue_usage"), nullptr);
  // Upstream's HELP, newlines included.
  EXPECT_EQ(f->registry.find("kueue_pending_workloads")->help(),
            "The number of pending workloads, per 'cluster_queue' and 'status'.\n"
            "'status' can have the following values:\n"
            "- \"active\" means that the workloads are in the admission queue.\n"
            "- \"inadmissible\" means there was a failed admission attempt for these workloads and they won't be "
            "retried until cluster conditions, which could make this workload admissible, change");
  EXPECT_EQ(f->registry.find("kueue_cluster_queue_borrowing_limit")->help(),
            "Reports the cluster_queue's resource borrowing limit within all the flavors. If borrowingLimit is unset, "
            "this metric reports +Inf.");
}

TEST(KueueMetrics, GaugesFollowTheSnapshot) {
  const auto f = fixture();
  ok(f->kueue->update(queues()));
  const std::string text = metrics::write_text(f->registry);
  for (const char* line : {
           R"(kueue_pending_workloads{cluster_queue="search-h100",status="active",replica_role="standalone"} 3)",
           R"(kueue_pending_workloads{cluster_queue="search-h100",status="inadmissible",replica_role="standalone"} 1)",
           R"(kueue_pending_workloads{cluster_queue="ads-h100",status="active",replica_role="standalone"} 0)",
           R"(kueue_reserving_active_workloads{cluster_queue="search-h100",replica_role="standalone"} 5)",
           R"(kueue_admitted_active_workloads{cluster_queue="search-h100",replica_role="standalone"} 4)",
           R"(kueue_cluster_queue_status{cluster_queue="search-h100",status="active",replica_role="standalone"} 1)",
           R"(kueue_cluster_queue_status{cluster_queue="search-h100",status="pending",replica_role="standalone"} 0)",
           R"(kueue_cluster_queue_status{cluster_queue="search-h100",status="terminating",replica_role="standalone"} 0)",
           R"(kueue_cluster_queue_status{cluster_queue="ads-h100",status="pending",replica_role="standalone"} 1)",
           R"(kueue_cluster_queue_nominal_quota{cohort="h100",cluster_queue="search-h100",flavor="h100",resource="nvidia.com/gpu",replica_role="standalone"} 16)",
           R"(kueue_cluster_queue_borrowing_limit{cohort="h100",cluster_queue="search-h100",flavor="h100",resource="nvidia.com/gpu",replica_role="standalone"} 8)",
           R"(kueue_cluster_queue_lending_limit{cohort="h100",cluster_queue="search-h100",flavor="h100",resource="nvidia.com/gpu",replica_role="standalone"} +Inf)",
           R"(kueue_cluster_queue_borrowing_limit{cohort="h100",cluster_queue="search-h100",flavor="h100",resource="cpu",replica_role="standalone"} +Inf)",
           R"(kueue_cluster_queue_lending_limit{cohort="h100",cluster_queue="search-h100",flavor="h100",resource="cpu",replica_role="standalone"} 64)",
           R"(kueue_cluster_queue_resource_reservation{cohort="h100",cluster_queue="search-h100",flavor="h100",resource="cpu",replica_role="standalone"} 96.5)",
           R"(kueue_cluster_queue_resource_usage{cohort="h100",cluster_queue="search-h100",flavor="h100",resource="nvidia.com/gpu",replica_role="standalone"} 10)",
           R"(kueue_cluster_queue_resource_pending{cluster_queue="search-h100",resource="nvidia.com/gpu",replica_role="standalone"} 24)",
           R"(kueue_cluster_queue_borrowing_limit{cohort="h100",cluster_queue="ads-h100",flavor="h100",resource="nvidia.com/gpu",replica_role="standalone"} 0)",
       }) {
    EXPECT_TRUE(has_line(text, line)) << line << "\n" << text;
  }
  // A ClusterQueue that is gone loses its gauges.
  std::vector<ClusterQueueState> one = queues();
  one.pop_back();
  ok(f->kueue->update(one));
  const auto e = must(metrics::parse_text(metrics::write_text(f->registry)));
  for (const auto& family : e.families) {
    for (const auto& s : family.samples) {
      for (const auto& l : s.labels) EXPECT_NE(l.value, "ads-h100") << family.name;
    }
  }
  EXPECT_EQ(e.find("kueue_cluster_queue_status")->samples.size(), 3u);
  EXPECT_EQ(e.find("kueue_cluster_queue_nominal_quota")->samples.size(), 2u);
}

TEST(KueueMetrics, EventsCountAndObserve) {
  const auto f = fixture();
  ok(f->kueue->admitted("search-h100", "standard", 3));
  ok(f->kueue->admitted("search-h100", "standard", 0.5));
  ok(f->kueue->admitted("search-h100", "serving", 50'000));  // beyond the last bucket: +Inf only
  ok(f->kueue->quota_reserved("search-h100", "standard", 3));
  ok(f->kueue->evicted("ads-h100", "Preempted", "", "standard"));
  ok(f->kueue->evicted("ads-h100", "Preempted", "", "standard"));
  ok(f->kueue->preempted("search-h100", "InCohortReclamation"));
  const std::string text = metrics::write_text(f->registry);
  for (const char* line : {
           R"(kueue_admitted_workloads_total{cluster_queue="search-h100",priority_class="standard",replica_role="standalone"} 2)",
           R"(kueue_admitted_workloads_total{cluster_queue="search-h100",priority_class="serving",replica_role="standalone"} 1)",
           // 0.5 and 3 s: 1 at le=1, 1 at le=2.5, 2 at le=5.
           R"(kueue_admission_wait_time_seconds_bucket{cluster_queue="search-h100",priority_class="standard",replica_role="standalone",le="1"} 1)",
           R"(kueue_admission_wait_time_seconds_bucket{cluster_queue="search-h100",priority_class="standard",replica_role="standalone",le="2.5"} 1)",
           R"(kueue_admission_wait_time_seconds_bucket{cluster_queue="search-h100",priority_class="standard",replica_role="standalone",le="5"} 2)",
           R"(kueue_admission_wait_time_seconds_sum{cluster_queue="search-h100",priority_class="standard",replica_role="standalone"} 3.5)",
           R"(kueue_admission_wait_time_seconds_count{cluster_queue="search-h100",priority_class="standard",replica_role="standalone"} 2)",
           R"(kueue_admission_wait_time_seconds_bucket{cluster_queue="search-h100",priority_class="serving",replica_role="standalone",le="40960"} 0)",
           R"(kueue_admission_wait_time_seconds_bucket{cluster_queue="search-h100",priority_class="serving",replica_role="standalone",le="+Inf"} 1)",
           R"(kueue_quota_reserved_workloads_total{cluster_queue="search-h100",priority_class="standard",replica_role="standalone"} 1)",
           R"(kueue_quota_reserved_wait_time_seconds_bucket{cluster_queue="search-h100",priority_class="standard",replica_role="standalone",le="10240"} 1)",
           R"(kueue_evicted_workloads_total{cluster_queue="ads-h100",reason="Preempted",underlying_cause="",priority_class="standard",replica_role="standalone"} 2)",
           R"(kueue_preempted_workloads_total{preempting_cluster_queue="search-h100",reason="InCohortReclamation",replica_role="standalone"} 1)",
       }) {
    EXPECT_TRUE(has_line(text, line)) << line << "\n" << text;
  }
  // Counters outlive their ClusterQueue's gauges.
  ok(f->kueue->update({}));
  EXPECT_TRUE(has_line(metrics::write_text(f->registry),
                       R"(kueue_evicted_workloads_total{cluster_queue="ads-h100",reason="Preempted",underlying_cause="",priority_class="standard",replica_role="standalone"} 2)"));
  // Waits that are no durations are refused.
  EXPECT_EQ(f->kueue->admitted("search-h100", "standard", -1).error(),
            "kueue_admission_wait_time_seconds: wait -1.000000 s is not a number >= 0 [telemetry.cluster-queue]");
  EXPECT_FALSE(f->kueue->quota_reserved("search-h100", "standard", std::numeric_limits<double>::quiet_NaN()).ok());
}

TEST(KueueMetrics, RefusalsChangeNothing) {
  const auto f = fixture();
  ok(f->kueue->update(queues()));
  const std::string before = metrics::write_text(f->registry);
  auto refused = [&](std::vector<ClusterQueueState> q) {
    const auto s = f->kueue->update(q);
    EXPECT_FALSE(s.ok());
    EXPECT_EQ(metrics::write_text(f->registry), before);
    return s.ok() ? std::string() : s.error();
  };
  std::vector<ClusterQueueState> q = queues();
  q.push_back(q[0]);
  EXPECT_EQ(refused(q), "kueue metrics: ClusterQueue search-h100 is listed twice [telemetry.cluster-queue]");
  q = queues();
  q[1].status = "stopped";
  EXPECT_EQ(refused(q),
            "kueue metrics: ClusterQueue ads-h100: status \"stopped\" is not one of pending, active, terminating "
            "[telemetry.cluster-queue]");
  q = queues();
  q[0].resources.push_back(q[0].resources[0]);
  EXPECT_EQ(refused(q),
            "kueue metrics: ClusterQueue search-h100: flavor h100 resource nvidia.com/gpu is listed twice "
            "[telemetry.cluster-queue]");
  q = queues();
  q[0].pending_inadmissible = -2;
  EXPECT_NE(refused(q).find("negative"), std::string::npos);
  q = queues();
  q[1].resources[0].flavor = "bad\xc3";
  EXPECT_NE(refused(q).find("[metrics.utf8]"), std::string::npos);
}

TEST(KueueMetrics, PromtoolAcceptsTheExposition) {
  const auto f = fixture();
  ok(f->kueue->update(queues()));
  ok(f->kueue->admitted("search-h100", "standard", 3));
  ok(f->kueue->quota_reserved("search-h100", "standard", 3));
  ok(f->kueue->evicted("ads-h100", "Preempted", "", "standard"));
  ok(f->kueue->preempted("search-h100", "InClusterQueue"));
  const auto promtool = testing::find_promtool();
  ASSERT_TRUE(promtool.has_value()) << testing::kPromtoolMissing;
  testing::ScratchDir dir;
  testing::write_file(dir.path() / "metrics.prom", metrics::write_text(f->registry));
  const auto checked = testing::run_in(dir.path(), promtool->string() + " check metrics < metrics.prom");
  EXPECT_EQ(checked.status, 0) << checked.output;
  EXPECT_EQ(checked.output, "");
}

}  // namespace
}  // namespace gpubank::twin::telemetry
