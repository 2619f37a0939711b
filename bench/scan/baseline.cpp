// scan_bench: the baseline, one query per workload asking that workload's signals only, its
// queries, the check of its answers against the scan's facts, and its timed run.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "governance/queries.hpp"
#include "scan/scan_bench.hpp"

namespace gpubank::bench::scan {

BaselineQuery baseline_query(const Cluster& c, std::size_t wi, const std::vector<gov::ScanPolicy>& policies) {
  const Workload& w = c.workloads[wi];
  BaselineQuery q;
  q.workload = wi;
  // Its own series only: by UID, or by kind, namespace and name where the pods carry none.
  const std::string uid = w.has_uid ? "workload_uid=\"" + w.uid + "\""
                                    : "namespace=\"" + w.ns + "\", workload_kind=\"" + w.kind + "\", workload=\"" +
                                          w.name + "\"";
  auto tagged = [](const std::string& expr, const char* signal) {
    return "label_replace(" + expr + ", \"signal\", \"" + signal + "\", \"\", \"\")";
  };
  q.promql = tagged("gpubank_gpu_allocation_info{" + uid + "}", "allocation") + "\nor " +
             tagged("min(gpubank_pod_start_time_seconds{" + uid + "})", "start");
  // A per-workload tool knows the workload's type and pool (its first query would tell it;
  // not counted here) and asks only what the governing policy's thresholds need.
  const gov::ScanPolicy* p = gov::governing_policy(intended_facts(c, wi, {}, c.t1_s), policies);
  if (p == nullptr) return q;
  const std::string win = "[" + gov::promql_duration(p->spec.window) + "]";
  const std::string sel = "{mapping_status=\"mapped\", " + uid + "}";
  if (p->spec.thresholds.average_gpu_utilization) {
    q.util = true;
    q.promql += "\nor " + tagged("avg(100 * avg_over_time(DCGM_FI_PROF_GR_ENGINE_ACTIVE" + sel + win +
                                     ")) or avg(avg_over_time(DCGM_FI_DEV_GPU_UTIL" + sel + win + "))",
                                 "gpu_utilization");
  }
  if (p->spec.thresholds.average_memory_utilization) {
    q.memory = true;
    q.promql += "\nor " + tagged("avg(100 * avg_over_time(DCGM_FI_DEV_FB_USED" + sel + win +
                                     ") / (avg_over_time(DCGM_FI_DEV_FB_USED" + sel + win +
                                     ") + avg_over_time(DCGM_FI_DEV_FB_FREE" + sel + win + ")))",
                                 "memory_utilization");
  }
  if (p->spec.thresholds.average_power_fraction) {
    q.power = true;
    q.promql += "\nor " + tagged("avg(100 * avg_over_time(DCGM_FI_DEV_POWER_USAGE" + sel + win +
                                     ") / avg_over_time(DCGM_FI_DEV_ENFORCED_POWER_LIMIT" + sel + win + "))",
                                 "power_fraction");
  }
  return q;
}

namespace {

// What one baseline answer says against the scan's facts for the workload.
std::optional<std::string> check_baseline(const Cluster& c, const BaselineQuery& q,
                                          const std::vector<serving::PromSample>& samples,
                                          const gov::WorkloadFacts& facts) {
  const Workload& w = c.workloads[q.workload];
  std::size_t holdings = 0;
  for (const Pod& p : w.pods) holdings += p.devices.size();
  std::size_t allocation = 0;
  std::map<std::string, double> signals;
  for (const serving::PromSample& s : samples) {
    const auto it = s.labels.find("signal");
    if (it == s.labels.end()) return "a sample without a signal label";
    if (it->second == "allocation") {
      ++allocation;
    } else {
      signals[it->second] = s.value;
    }
  }
  auto same = [&](const char* name, const std::optional<double>& want) {
    const auto it = signals.find(name);
    return want && it != signals.end() && std::fabs(it->second - *want) <= 1e-9 * std::max(1.0, std::fabs(*want));
  };
  if (allocation != holdings) return std::to_string(allocation) + " allocation series, not " + std::to_string(holdings);
  if (!same("start", facts.started_s)) return std::string("its start differs from the scan's");
  if (q.util && !same("gpu_utilization", facts.gpu_utilization)) return std::string("its GPU utilisation differs");
  if (q.memory && !same("memory_utilization", facts.memory_utilization)) return std::string("its memory utilisation differs");
  if (q.power && !same("power_fraction", facts.power_fraction)) return std::string("its power fraction differs");
  return std::nullopt;
}

}  // namespace

BaselineRun run_baseline(const Context& x, gov::PrometheusClient& via, const std::vector<BaselineQuery>& queries,
                         const std::map<std::string, gov::WorkloadFacts, std::less<>>* facts) {
  BaselineRun b;
  const double cpu0 = process_cpu_seconds(x.prometheus.pid());
  const auto t0 = Clock::now();
  std::size_t failed_checks = 0;
  for (const BaselineQuery& q : queries) {
    if ((b.query_ms.size() & 63) == 0) check_interrupted();
    const auto q0 = Clock::now();
    auto answer = via.query(q.promql, x.t1_ms);
    b.query_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - q0).count());
    if (!answer) throw std::runtime_error("baseline query: " + answer.error());
    b.samples += answer->size();
    if (facts != nullptr) {
      const std::string key = x.c.workloads[q.workload].key();
      const auto it = facts->find(key);
      const auto wrong = it == facts->end() ? std::optional<std::string>("not in the scan")
                                            : check_baseline(x.c, q, *answer, it->second);
      if (wrong && ++failed_checks <= 5) x.failures.push_back("baseline, " + key + ": " + *wrong);
    }
  }
  b.seconds = seconds_since(t0);
  b.prometheus_cpu_s = process_cpu_seconds(x.prometheus.pid()) - cpu0;
  return b;
}

}  // namespace gpubank::bench::scan
