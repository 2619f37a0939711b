#include "twin/kueue_perf/summary.hpp"

#include <cmath>
#include <cstdio>
#include <sstream>

namespace gpubank::twin::kueue_perf {
namespace {

// Two decimals, so that JSON shows 55.93 rather than 55.928571428571431.
double round2(double v) { return std::round(v * 100.0) / 100.0; }

std::string fixed2(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

// Columns: the first left-aligned, the others right-aligned; two spaces between.
std::string table(const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> width;
  for (const auto& row : rows) {
    width.resize(std::max(width.size(), row.size()), 0);
    for (std::size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (std::size_t i = 0; i < row.size(); ++i) {
      if (i > 0) line += "  ";
      const std::string pad(width[i] - row[i].size(), ' ');
      line += i == 0 ? row[i] + pad : pad + row[i];
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + '\n';
  }
  return out;
}

}  // namespace

nlohmann::ordered_json to_json(const Summary& s) {
  nlohmann::ordered_json out;
  out["fairSharing"] = s.fair_sharing;
  out["clusterQueues"] = s.queues;
  out["workloads"] = {{"total", s.workloads},     {"admitted", s.admitted},   {"finished", s.finished},
                      {"pending", s.pending},     {"evictions", s.evictions}};
  out["virtualTimeMs"] = s.end_ms;
  out["cycles"] = s.cycles;
  out["events"] = s.events;
  auto& queues = out["clusterQueueClasses"] = nlohmann::ordered_json::object();
  for (const auto& c : s.cluster_queue_classes) {
    queues[c.name] = {{"queues", c.queues},
                      {"cpuUsed", c.cpu_used},
                      {"cpuAverageUsage", c.cpu_average_usage},
                      {"cpuMaxUsage", c.cpu_max_usage},
                      {"nominalQuota", c.nominal_quota},
                      {"firstEventTimeMs", c.first_event_ms},
                      {"lastEventTimeMs", c.last_event_ms},
                      {"usagePercent", round2(c.usage_percent)}};
  }
  auto& workloads = out["workloadClasses"] = nlohmann::ordered_json::object();
  for (const auto& c : s.workload_classes) {
    workloads[c.name] = {{"count", c.count},
                         {"admitted", c.admitted},
                         {"finished", c.finished},
                         {"totalEvictions", c.total_evictions},
                         {"averageTimeToAdmissionMs", c.average_time_to_admission_ms},
                         {"p50TimeToAdmissionMs", c.p50_time_to_admission_ms},
                         {"p90TimeToAdmissionMs", c.p90_time_to_admission_ms},
                         {"maxTimeToAdmissionMs", c.max_time_to_admission_ms},
                         {"averageTimeToFinishMs", c.average_time_to_finish_ms}};
  }
  return out;
}

std::string format_text(const Summary& s) {
  std::ostringstream out;
  out << s.workloads << " workloads in " << s.queues << " ClusterQueues, fair sharing "
      << (s.fair_sharing ? "on" : "off") << "; last event at " << s.end_ms << " ms virtual time\n"
      << s.admitted << " admitted, " << s.finished << " finished, " << s.pending << " never finished, "
      << s.evictions << " evictions, " << s.cycles << " scheduling cycles\n\n";

  std::vector<std::vector<std::string>> rows{{"workload class", "count", "admitted", "evictions",
                                              "avg to admission (ms)", "p50 (ms)", "p90 (ms)", "max (ms)",
                                              "avg to finish (ms)"}};
  for (const auto& c : s.workload_classes) {
    rows.push_back({c.name, std::to_string(c.count), std::to_string(c.admitted), std::to_string(c.total_evictions),
                    std::to_string(c.average_time_to_admission_ms), std::to_string(c.p50_time_to_admission_ms),
                    std::to_string(c.p90_time_to_admission_ms), std::to_string(c.max_time_to_admission_ms),
                    std::to_string(c.average_time_to_finish_ms)});
  }
  out << table(rows) << '\n';

  rows = {{"queue class", "queues", "nominal (mCPU)", "avg usage (mCPU)", "max usage (mCPU)", "usage (%)",
           "observed (ms)"}};
  for (const auto& c : s.cluster_queue_classes) {
    rows.push_back({c.name, std::to_string(c.queues), std::to_string(c.nominal_quota),
                    std::to_string(c.cpu_average_usage), std::to_string(c.cpu_max_usage), fixed2(c.usage_percent),
                    std::to_string(c.last_event_ms - c.first_event_ms)});
  }
  out << table(rows);
  return out.str();
}

}  // namespace gpubank::twin::kueue_perf
