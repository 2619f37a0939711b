#include "governance/rankings.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <sstream>
#include <tuple>

#include "document/decode.hpp"
#include "governance/text.hpp"
#include "metrics/histogram.hpp"
#include "policy/schema.hpp"

namespace gpubank::governance {
namespace {

using Json = nlohmann::ordered_json;

std::optional<double> ratio(double num, double den) {
  if (!(den > 0)) return std::nullopt;
  return num / den;
}

std::string percent(const std::optional<double>& v) { return v ? fixed(*v * 100, 1) + "%" : "-"; }

void optional_ratio(Json& j, const char* key, const std::optional<double>& v) {
  j[key] = v ? Json(*v) : Json(nullptr);
}

}  // namespace

std::vector<Kpi> kpis(const Showback& s, const Answers& answers) {
  std::map<std::pair<std::string, std::string>, Kpi> by;  // (pool, group)
  auto at = [&](const std::string& pool, const std::string& group) -> Kpi& {
    Kpi& k = by[{pool, group}];
    k.pool = pool;
    k.business_group = group;
    return k;
  };
  for (const ShowbackRow& r : s.rows) {
    for (Kpi* k : {&at(r.pool, ""), &at(r.pool, r.business_group)}) {
      k->gpu_model = r.gpu_model;
      k->allocated_gpu_hours += r.allocated_gpu_hours;
      k->low_utilization_gpu_hours += r.low_utilization_gpu_hours;
      k->effective_gpu_hours += r.effective_gpu_hours;
      k->measured_gpu_hours += r.measured_gpu_hours;
      if (r.workload_type == "inference") {
        k->inference_cost += r.cost;
        k->effective_tokens += r.effective_tokens;
      }
    }
  }
  if (const auto c = answers.find("capacity"); c != answers.end()) {
    for (const serving::PromSample& x : c->second) {
      if (!std::isfinite(x.value) || x.value < 0) continue;
      Kpi& k = at(label(x, "pool"), "");
      k.gpu_model = label(x, "gpu_model");
      k.available_gpu_hours += x.value / 60.0;
    }
  }
  if (const auto q = answers.find("quota"); q != answers.end()) {
    for (const serving::PromSample& x : q->second) {
      if (!std::isfinite(x.value) || x.value < 0 || label(x, "business_group").empty()) continue;
      Kpi& k = at(label(x, "pool"), label(x, "business_group"));
      if (label(x, "kind") == "guaranteed") k.available_gpu_hours += x.value / 60.0;
      if (label(x, "kind") == "borrowable") k.borrowable_gpu_hours += x.value / 60.0;
    }
  }
  for (const auto& [key, loans] : s.loans) {
    if (key.first.empty()) continue;
    at(key.second, key.first).borrowed_gpu_hours += loans.borrowed_gpu_hours;
    at(key.second, "").borrowed_gpu_hours += loans.borrowed_gpu_hours;
    at(key.second, key.first).recompute_loss_gpu_hours += loans.recompute_loss_gpu_hours;
    at(key.second, "").recompute_loss_gpu_hours += loans.recompute_loss_gpu_hours;
  }
  // Queue wait: the ClusterQueue `<group>-<pool>` of each group KPI.
  std::map<std::string, std::vector<metrics::Bucket>> wait_buckets;
  std::map<std::string, double> wait_sum, wait_count;
  auto each = [&](const char* name, auto&& f) {
    if (const auto a = answers.find(name); a != answers.end()) {
      for (const serving::PromSample& x : a->second) {
        if (std::isfinite(x.value) && x.value >= 0) f(x);
      }
    }
  };
  each("queue_wait_buckets", [&](const serving::PromSample& x) {
    const std::string le = label(x, "le");
    const double bound = le == "+Inf" ? std::numeric_limits<double>::infinity() : std::strtod(le.c_str(), nullptr);
    wait_buckets[label(x, "cluster_queue")].push_back({bound, x.value});
  });
  each("queue_wait_sum", [&](const serving::PromSample& x) { wait_sum[label(x, "cluster_queue")] += x.value; });
  each("queue_wait_count", [&](const serving::PromSample& x) { wait_count[label(x, "cluster_queue")] += x.value; });
  for (auto& [key, k] : by) {
    if (k.business_group.empty()) continue;
    const std::string queue = k.business_group + "-" + k.pool;
    const auto count = wait_count.find(queue);
    if (count == wait_count.end() || !(count->second > 0)) continue;
    k.admissions = count->second;
    k.queue_wait_mean_seconds = wait_sum[queue] / count->second;
    if (const auto b = wait_buckets.find(queue); b != wait_buckets.end()) {
      const double p90 = metrics::bucket_quantile(0.9, b->second);
      if (std::isfinite(p90)) k.queue_wait_p90_seconds = p90;
    }
  }

  std::vector<Kpi> out;
  for (auto& [key, k] : by) {
    k.allocation_rate = ratio(k.allocated_gpu_hours, k.available_gpu_hours);
    // A pool's borrowable is the sum of its groups'.
    k.borrow_rate = ratio(k.borrowed_gpu_hours, k.borrowable_gpu_hours);
    k.idle_waste_share = ratio(k.low_utilization_gpu_hours, k.allocated_gpu_hours);
    k.effective_utilization = ratio(k.effective_gpu_hours, k.measured_gpu_hours);
    k.inference_unit_cost = ratio(k.inference_cost, k.effective_tokens / 1e6);
    out.push_back(k);
  }
  // Pools' borrowable = their groups' (filled after the groups were read).
  for (Kpi& pool : out) {
    if (!pool.business_group.empty()) continue;
    double borrowable = 0;
    for (const Kpi& g : out) {
      if (g.pool == pool.pool && !g.business_group.empty()) borrowable += g.borrowable_gpu_hours;
    }
    pool.borrowable_gpu_hours = borrowable;
    pool.borrow_rate = ratio(pool.borrowed_gpu_hours, borrowable);
  }
  return out;
}

std::vector<LeaderboardEntry> leaderboard(const Showback& s, const policy::PlatformGuardrailsSpec& g,
                                          double min_gpu_hours) {
  auto sharing_of = [&](const std::string& pool) -> std::string {
    for (const policy::Pool& p : g.pools) {
      if (p.name == pool) return std::string(doc::enum_name(p.sharing));
    }
    return "unknown";
  };
  std::map<std::pair<std::string, std::string>, LeaderboardEntry> by;  // (class, group)
  for (const ShowbackRow& r : s.rows) {
    const std::string device_class =
        r.gpu_model + "/" + (r.partition.empty() ? "full" : r.partition) + "/" + sharing_of(r.pool);
    LeaderboardEntry& e = by[{device_class, r.business_group}];
    e.device_class = device_class;
    e.business_group = r.business_group;
    e.allocated_gpu_hours += r.allocated_gpu_hours;
    e.low_utilization_gpu_hours += r.low_utilization_gpu_hours;
    e.serving_floor_gpu_hours += r.serving_floor_gpu_hours;
    e.low_utilization_cost += r.low_utilization_cost;
  }
  std::map<std::string, std::vector<LeaderboardEntry>> classes;
  for (auto& [key, e] : by) {
    // Serving floors are retention: the share is of the hours that could be waste.
    const double judged = e.allocated_gpu_hours - e.serving_floor_gpu_hours;
    e.idle_waste_share = judged > 0 ? e.low_utilization_gpu_hours / judged : 0;
    classes[key.first].push_back(e);
  }
  std::vector<LeaderboardEntry> out;
  for (auto& [device_class, entries] : classes) {
    auto ranked = [&](const LeaderboardEntry& e) {
      return e.business_group != "unknown" && e.allocated_gpu_hours - e.serving_floor_gpu_hours >= min_gpu_hours;
    };
    std::stable_sort(entries.begin(), entries.end(), [&](const LeaderboardEntry& a, const LeaderboardEntry& b) {
      const bool ra = ranked(a);
      const bool rb = ranked(b);
      if (ra != rb) return ra;
      if (ra && a.idle_waste_share != b.idle_waste_share) return a.idle_waste_share > b.idle_waste_share;
      if (ra && a.low_utilization_gpu_hours != b.low_utilization_gpu_hours) {
        return a.low_utilization_gpu_hours > b.low_utilization_gpu_hours;
      }
      return a.business_group < b.business_group;
    });
    int rank = 0;
    for (LeaderboardEntry& e : entries) {
      if (ranked(e)) e.rank = ++rank;
      out.push_back(e);
    }
  }
  return out;
}

Json to_json(const std::vector<Kpi>& kpis) {
  Json out = Json::array();
  for (const Kpi& k : kpis) {
    Json j{{"pool", k.pool}};
    if (!k.business_group.empty()) j["businessGroup"] = k.business_group;
    j["gpuModel"] = k.gpu_model;
    j["allocatedGpuHours"] = k.allocated_gpu_hours;
    j["availableGpuHours"] = k.available_gpu_hours;
    j["borrowedGpuHours"] = k.borrowed_gpu_hours;
    j["borrowableGpuHours"] = k.borrowable_gpu_hours;
    j["lowUtilizationGpuHours"] = k.low_utilization_gpu_hours;
    optional_ratio(j, "allocationRate", k.allocation_rate);
    optional_ratio(j, "borrowRate", k.borrow_rate);
    j["recomputeLossGpuHours"] = k.recompute_loss_gpu_hours;
    optional_ratio(j, "idleWasteShare", k.idle_waste_share);
    j["effectiveGpuHours"] = k.effective_gpu_hours;
    j["measuredGpuHours"] = k.measured_gpu_hours;
    optional_ratio(j, "effectiveUtilization", k.effective_utilization);
    if (k.inference_cost > 0 || k.effective_tokens > 0) {
      j["inferenceCost"] = k.inference_cost;
      j["effectiveTokens"] = k.effective_tokens;
      optional_ratio(j, "inferenceUnitCostPerMillionTokens", k.inference_unit_cost);
    }
    if (k.queue_wait_mean_seconds) {
      j["admissions"] = k.admissions;
      j["queueWaitMeanSeconds"] = *k.queue_wait_mean_seconds;
      optional_ratio(j, "queueWaitP90Seconds", k.queue_wait_p90_seconds);
    }
    out.push_back(std::move(j));
  }
  return out;
}

Json to_json(const std::vector<LeaderboardEntry>& board) {
  Json out = Json::array();
  for (const LeaderboardEntry& e : board) {
    out.push_back(Json{{"deviceClass", e.device_class},
                       {"rank", e.rank ? Json(*e.rank) : Json(nullptr)},
                       {"businessGroup", e.business_group},
                       {"allocatedGpuHours", e.allocated_gpu_hours},
                       {"lowUtilizationGpuHours", e.low_utilization_gpu_hours},
                       {"idleWasteShare", e.idle_waste_share},
                       {"servingFloorGpuHours", e.serving_floor_gpu_hours},
                       {"lowUtilizationCost", e.low_utilization_cost}});
  }
  return out;
}

std::string kpi_table(const std::vector<Kpi>& kpis) {
  std::vector<std::vector<std::string>> cells{{"POOL", "GROUP", "GPU", "ALLOCATED", "AVAILABLE", "ALLOCATION",
                                               "BORROWED", "BORROW RATE", "RECOMPUTE", "IDLE WASTE", "WASTE SHARE", "EFFECTIVE",
                                               "PER 1M TOKENS", "WAIT P90 S"}};
  for (const Kpi& k : kpis) {
    cells.push_back({k.pool, k.business_group.empty() ? "(pool)" : k.business_group, k.gpu_model,
                     fixed(k.allocated_gpu_hours, 2), fixed(k.available_gpu_hours, 2), percent(k.allocation_rate),
                     fixed(k.borrowed_gpu_hours, 2), percent(k.borrow_rate), fixed(k.recompute_loss_gpu_hours, 2),
                     fixed(k.low_utilization_gpu_hours, 2),
                     percent(k.idle_waste_share), percent(k.effective_utilization),
                     k.inference_unit_cost ? fixed(*k.inference_unit_cost, 2) : std::string("-"),
                     k.queue_wait_p90_seconds ? fixed(*k.queue_wait_p90_seconds, 0) : std::string("-")});
  }
  return render_columns(cells, 3);
}

std::string leaderboard_table(const std::vector<LeaderboardEntry>& board, const std::string& currency) {
  std::vector<std::vector<std::string>> cells{{"DEVICES", "RANK", "GROUP", "GPU-HOURS", "LOW-UTIL", "WASTE SHARE",
                                               "FLOOR", "WASTE " + currency}};
  for (const LeaderboardEntry& e : board) {
    cells.push_back({e.device_class, e.rank ? std::to_string(*e.rank) : "-", e.business_group,
                     fixed(e.allocated_gpu_hours, 2), fixed(e.low_utilization_gpu_hours, 2),
                     percent(e.idle_waste_share), fixed(e.serving_floor_gpu_hours, 2), fixed(e.low_utilization_cost, 2)});
  }
  return render_columns(cells, 3);
}

std::string kpi_csv(const std::vector<Kpi>& kpis) {
  std::ostringstream out;
  out << "pool,business_group,gpu_model,allocated_gpu_hours,available_gpu_hours,allocation_rate,borrowed_gpu_hours,"
         "borrowable_gpu_hours,borrow_rate,recompute_loss_gpu_hours,low_utilization_gpu_hours,idle_waste_share,effective_gpu_hours,"
         "measured_gpu_hours,effective_utilization,inference_cost,effective_tokens,inference_unit_cost,admissions,"
         "queue_wait_mean_seconds,queue_wait_p90_seconds\n";
  auto opt = [](const std::optional<double>& v) { return v ? fixed(*v, 6) : std::string(); };
  for (const Kpi& k : kpis) {
    out << k.pool << ',' << k.business_group << ',' << k.gpu_model << ',' << fixed(k.allocated_gpu_hours, 4) << ','
        << fixed(k.available_gpu_hours, 4) << ',' << opt(k.allocation_rate) << ',' << fixed(k.borrowed_gpu_hours, 4)
        << ',' << fixed(k.borrowable_gpu_hours, 4) << ',' << opt(k.borrow_rate) << ','
        << fixed(k.recompute_loss_gpu_hours, 4) << ',' << fixed(k.low_utilization_gpu_hours, 4) << ',' << opt(k.idle_waste_share) << ','
        << fixed(k.effective_gpu_hours, 4) << ',' << fixed(k.measured_gpu_hours, 4) << ','
        << opt(k.effective_utilization) << ',' << fixed(k.inference_cost, 2) << ',' << fixed(k.effective_tokens, 0)
        << ',' << opt(k.inference_unit_cost) << ',' << fixed(k.admissions, 0) << ',' << opt(k.queue_wait_mean_seconds)
        << ',' << opt(k.queue_wait_p90_seconds) << '\n';
  }
  return out.str();
}

std::string leaderboard_csv(const std::vector<LeaderboardEntry>& board) {
  std::ostringstream out;
  out << "device_class,rank,business_group,allocated_gpu_hours,low_utilization_gpu_hours,idle_waste_share,"
         "serving_floor_gpu_hours,low_utilization_cost\n";
  for (const LeaderboardEntry& e : board) {
    out << e.device_class << ',' << (e.rank ? std::to_string(*e.rank) : std::string()) << ',' << e.business_group << ','
        << fixed(e.allocated_gpu_hours, 4) << ',' << fixed(e.low_utilization_gpu_hours, 4) << ','
        << fixed(e.idle_waste_share, 6) << ',' << fixed(e.serving_floor_gpu_hours, 4) << ','
        << fixed(e.low_utilization_cost, 2) << '\n';
  }
  return out.str();
}

}  // namespace gpubank::governance
