#include "twin/run/summary.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

namespace gpubank::twin::run {

std::int64_t percentile(std::vector<std::int64_t> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(values.size())));
  return values[std::clamp<std::size_t>(rank, 1, values.size()) - 1];
}

namespace {
double hours(std::int64_t gpu_ms) { return static_cast<double>(gpu_ms) / 3.6e6; }
}  // namespace

Summary summarize(const RunResult& r) {
  std::map<std::string, GroupSummary> by_group;
  std::map<std::string, std::vector<std::int64_t>> waits;
  for (const auto& g : r.groups) {
    GroupSummary& s = by_group[g.business_group];
    s.business_group = g.business_group;
    s.used_gpu_hours += hours(g.used_gpu_ms);
    s.borrowed_gpu_hours += hours(g.borrowed_gpu_ms);
    s.lent_gpu_hours += hours(g.lent_gpu_ms);
    s.loss_gpu_hours += hours(g.loss_gpu_ms);
    s.workloads += g.workloads;
    s.admitted += g.admitted;
    s.reclaims += g.reclaims;
    s.stops += g.stops;
    auto& w = waits[g.business_group];
    w.insert(w.end(), g.waits_ms.begin(), g.waits_ms.end());
  }
  Summary out;
  for (auto& [name, s] : by_group) {
    const auto& w = waits[name];
    s.wait_p50_ms = percentile(w, 50);
    s.wait_p90_ms = percentile(w, 90);
    s.wait_p99_ms = percentile(w, 99);
    out.groups.push_back(s);
  }
  if (r.cluster.units > 0) {
    ClusterSummary c;
    c.gpus = r.cluster.units;
    c.hours = static_cast<double>(r.end) / 3.6e6;
    const double capacity_milli_ms = static_cast<double>(r.cluster.units) * 1000.0 * static_cast<double>(r.end);
    c.allocation_rate = capacity_milli_ms > 0 ? static_cast<double>(r.cluster.allocated_milli_ms) / capacity_milli_ms : 0;
    c.idle_gpu_hours = (capacity_milli_ms - static_cast<double>(r.cluster.allocated_milli_ms)) / 1000.0 / 3.6e6;
    c.samples = r.cluster.samples;
    c.fragmentation_rate = r.cluster.free_unit_samples > 0 ? static_cast<double>(r.cluster.stranded_unit_samples) /
                                                                 static_cast<double>(r.cluster.free_unit_samples)
                                                           : 0;
    out.cluster = c;
  }
  return out;
}

nlohmann::ordered_json summary_json(const Summary& s) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  auto groups = nlohmann::ordered_json::array();
  for (const auto& g : s.groups) {
    groups.push_back({{"businessGroup", g.business_group},
                      {"usedGpuHours", g.used_gpu_hours},
                      {"borrowedGpuHours", g.borrowed_gpu_hours},
                      {"lentGpuHours", g.lent_gpu_hours},
                      {"workloads", g.workloads},
                      {"admitted", g.admitted},
                      {"queueWaitSeconds", {{"p50", g.wait_p50_ms / 1000.0}, {"p90", g.wait_p90_ms / 1000.0}, {"p99", g.wait_p99_ms / 1000.0}}},
                      {"reclaims", g.reclaims},
                      {"stops", g.stops},
                      {"recomputeLossGpuHours", g.loss_gpu_hours}});
  }
  j["groups"] = std::move(groups);
  if (s.cluster) {
    j["cluster"] = {{"gpus", s.cluster->gpus},
                    {"hours", s.cluster->hours},
                    {"allocationRate", s.cluster->allocation_rate},
                    {"idleGpuHours", s.cluster->idle_gpu_hours},
                    {"fragmentationRate", s.cluster->fragmentation_rate},
                    {"fragmentationSamples", s.cluster->samples}};
  }
  return j;
}

std::string summary_text(const Summary& s) {
  std::string out;
  char line[320];
  std::snprintf(line, sizeof line, "%-20s %12s %12s %12s %9s %9s %10s %10s %10s %8s %6s %10s\n", "GROUP", "USED GPU-H",
                "BORROWED", "LENT", "ARRIVED", "ADMITTED", "WAIT P50", "WAIT P90", "WAIT P99", "RECLAIMS", "STOPS",
                "LOSS GPU-H");
  out += line;
  auto secs = [](std::int64_t ms) {
    char b[32];
    std::snprintf(b, sizeof b, "%.0fs", static_cast<double>(ms) / 1000.0);
    return std::string(b);
  };
  for (const auto& g : s.groups) {
    std::snprintf(line, sizeof line, "%-20s %12.1f %12.1f %12.1f %9lld %9lld %10s %10s %10s %8lld %6lld %10.1f\n",
                  g.business_group.c_str(), g.used_gpu_hours, g.borrowed_gpu_hours, g.lent_gpu_hours,
                  static_cast<long long>(g.workloads), static_cast<long long>(g.admitted), secs(g.wait_p50_ms).c_str(),
                  secs(g.wait_p90_ms).c_str(), secs(g.wait_p99_ms).c_str(), static_cast<long long>(g.reclaims),
                  static_cast<long long>(g.stops), g.loss_gpu_hours);
    out += line;
  }
  if (s.cluster) {
    std::snprintf(line, sizeof line,
                  "\nCluster: %lld GPUs over %.1f h, allocation %.1f%%, idle %.0f GPU-hours, fragmentation %.1f%% of free "
                  "GPUs unusable by the waiting shapes (%lld hourly samples)\n",
                  static_cast<long long>(s.cluster->gpus), s.cluster->hours, 100.0 * s.cluster->allocation_rate,
                  s.cluster->idle_gpu_hours, 100.0 * s.cluster->fragmentation_rate,
                  static_cast<long long>(s.cluster->samples));
    out += line;
  }
  return out;
}

}  // namespace gpubank::twin::run
