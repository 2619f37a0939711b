#include "twin/live/position_history.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <set>

#include "core/timestamp.hpp"
#include "twin/live/gpu_history.hpp"

namespace gpubank::twin::live {
namespace {

using Json = nlohmann::ordered_json;

std::string rfc3339(std::int64_t ms) { return format_rfc3339(Timestamp(std::chrono::milliseconds(ms))); }

// A device share or a GPU count to the tenth (a time-sliced device counts 1/holders).
double tenth(float v) { return std::round(static_cast<double>(v) * 10.0) / 10.0; }

}  // namespace

bool PositionHistory::is_marker(const std::string& kind) {
  static const std::set<std::string, std::less<>> kinds{
      "QuotaChanged",   "LeaseActivated",   "LeaseExpired",        "ReclaimStarted",    "ReclaimNoticeSent",
      "ReclaimVictimStopped", "ReclaimCompleted", "Preempted",      "WorkloadDowngraded", "ReclaimApproved"};
  return kinds.contains(kind);
}

bool PositionHistory::is_pool_marker(const std::string& kind) {
  static const std::set<std::string, std::less<>> kinds{"QuotaChanged",   "LeaseActivated",   "LeaseExpired",
                                                        "ReclaimStarted", "ReclaimCompleted", "GpuUnhealthy",
                                                        "GpuHealthy"};
  return kinds.contains(kind);
}

void PositionHistory::record(const MinuteObservation& minute) {
  if (minute.t_ms <= last_ms_) return;
  last_ms_ = minute.t_ms;
  // Each pool's devices: distinct device ids (a time-sliced device is listed once per holder).
  std::map<std::string, std::set<std::string>> devices;
  for (const DeviceMinute& d : minute.devices) devices[d.pool].insert(d.device);
  for (auto& [pool, samples] : pools_) {
    if (!devices.contains(pool)) devices[pool];  // a pool seen before and empty now: 0
  }
  for (const auto& [pool, ids] : devices) {
    auto& samples = pools_[pool];
    samples.push_back({minute.t_ms, static_cast<std::uint32_t>(ids.size())});
    while (samples.size() > keep_) samples.pop_front();
  }
  std::map<std::pair<std::string, std::string>, Sample> now;
  auto at = [&](const std::string& group, const std::string& pool) -> Sample& {
    Sample& s = now[{group, pool}];
    s.t_ms = minute.t_ms;
    return s;
  };
  for (const QuotaMinute& q : minute.quotas) at(q.business_group, q.pool).guaranteed = static_cast<float>(q.guaranteed);
  for (const DeviceMinute& d : minute.devices) {
    if (d.share > 0 && !d.business_group.empty()) at(d.business_group, d.pool).held += static_cast<float>(d.share);
  }
  for (const LoanMinute& l : minute.loans) {
    at(l.borrower, l.pool).borrowed += static_cast<float>(l.gpus);
    at(l.lender, l.pool).lent += static_cast<float>(l.gpus);
  }
  // A series seen before and absent now records zeros, so a chart falls to 0 rather than
  // holding its last value.
  for (auto& [key, samples] : series_) {
    if (!now.contains(key)) now[key] = Sample{minute.t_ms, 0, 0, 0, 0};
  }
  for (const auto& [key, s] : now) {
    auto& samples = series_[key];
    samples.push_back(s);
    while (samples.size() > keep_) samples.pop_front();
  }
}

Json PositionHistory::json(const std::string& group, std::int64_t from_ms, std::int64_t to_ms,
                           std::span<const run::Event> events,
                           const std::function<std::int64_t(std::int64_t)>& unix_ms) const {
  Json out = Json::object();
  out["businessGroup"] = group;
  out["from"] = rfc3339(from_ms);
  out["to"] = rfc3339(to_ms);
  out["stepSeconds"] = 60;
  Json pools = Json::array();
  std::set<std::string> pool_names;
  for (auto it = series_.lower_bound({group, ""}); it != series_.end() && it->first.first == group; ++it) {
    const auto& list = it->second;
    Json minutes = Json::array();
    bool any = false;
    auto s = std::lower_bound(list.begin(), list.end(), from_ms, [](const Sample& x, std::int64_t t) { return x.t_ms < t; });
    for (; s != list.end() && s->t_ms <= to_ms; ++s) {
      any |= s->guaranteed > 0 || s->held > 0 || s->borrowed > 0 || s->lent > 0;
      minutes.push_back(Json{{"t", rfc3339(s->t_ms)},
                             {"guaranteed", tenth(s->guaranteed)},
                             {"held", tenth(s->held)},
                             {"borrowed", tenth(s->borrowed)},
                             {"lent", tenth(s->lent)}});
    }
    if (!any) continue;  // a pool it has nothing in over the range
    pool_names.insert(it->first.second);
    pools.push_back(Json{{"pool", it->first.second}, {"minutes", std::move(minutes)}});
  }
  out["pools"] = std::move(pools);
  Json markers = Json::array();
  for (const run::Event& e : events) {
    if (!is_marker(e.kind)) continue;
    // Its own workloads' and policies' events: a reclaim it starts as a lender, the notices
    // and stops its borrowing workloads get, its leases and quota changes.
    if (e.business_group != group) continue;
    const std::int64_t t = unix_ms(e.t);
    if (t < from_ms || t > to_ms) continue;
    markers.push_back(marker_json(e, t));
  }
  out["markers"] = std::move(markers);
  return out;
}

Json PositionHistory::pool_json(const std::string& pool, std::int64_t from_ms, std::int64_t to_ms,
                                std::span<const run::Event> events,
                                const std::function<std::int64_t(std::int64_t)>& unix_ms) const {
  Json out = Json::object();
  out["pool"] = pool;
  out["from"] = rfc3339(from_ms);
  out["to"] = rfc3339(to_ms);
  out["stepSeconds"] = 60;
  // Each group's holding in the pool by minute.
  std::map<std::int64_t, std::map<std::string, float>> held;
  for (const auto& [key, list] : series_) {
    if (key.second != pool) continue;
    auto s = std::lower_bound(list.begin(), list.end(), from_ms, [](const Sample& x, std::int64_t t) { return x.t_ms < t; });
    for (; s != list.end() && s->t_ms <= to_ms; ++s) {
      if (s->held > 0) held[s->t_ms][key.first] += s->held;
    }
  }
  Json minutes = Json::array();
  if (const auto it = pools_.find(pool); it != pools_.end()) {
    const auto& list = it->second;
    auto s = std::lower_bound(list.begin(), list.end(), from_ms, [](const PoolSample& x, std::int64_t t) { return x.t_ms < t; });
    for (; s != list.end() && s->t_ms <= to_ms; ++s) {
      Json groups = Json::object();
      float total = 0;
      if (const auto h = held.find(s->t_ms); h != held.end()) {
        for (const auto& [group, gpus] : h->second) {
          groups[group] = tenth(gpus);
          total += gpus;
        }
      }
      minutes.push_back(Json{{"t", rfc3339(s->t_ms)}, {"devices", s->devices}, {"held", tenth(total)}, {"groups", std::move(groups)}});
    }
  }
  out["minutes"] = std::move(minutes);
  Json markers = Json::array();
  for (const run::Event& e : events) {
    if (e.pool != pool || !is_pool_marker(e.kind)) continue;
    const std::int64_t t = unix_ms(e.t);
    if (t < from_ms || t > to_ms) continue;
    markers.push_back(marker_json(e, t));
  }
  out["markers"] = std::move(markers);
  return out;
}

}  // namespace gpubank::twin::live
