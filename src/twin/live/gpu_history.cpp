#include "twin/live/gpu_history.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <set>

#include "core/timestamp.hpp"

namespace gpubank::twin::live {

namespace {

using Json = nlohmann::ordered_json;

std::string rfc3339(std::int64_t unix_ms) { return format_rfc3339(Timestamp(std::chrono::milliseconds(unix_ms))); }

// One decimal: the chart needs no more, and a day of minutes stays small.
double tenth(float v) { return static_cast<double>(std::lround(static_cast<double>(v) * 10.0)) / 10.0; }

}  // namespace

Json marker_json(const run::Event& e, std::int64_t t_unix_ms) {
  Json m = Json::object();
  m["t"] = rfc3339(t_unix_ms);
  m["kind"] = e.kind;
  m["object"] = e.object;
  m["businessGroup"] = e.business_group.empty() ? Json(nullptr) : Json(e.business_group);
  m["pool"] = e.pool.empty() ? Json(nullptr) : Json(e.pool);
  m["reason"] = e.reason;
  m["message"] = e.message;
  return m;
}

bool GpuHistory::is_marker(const std::string& kind) {
  static const std::set<std::string, std::less<>> kinds{
      "Placed",          "Preempted",          "ReclaimNoticeSent", "ReclaimVictimStopped", "CheckpointRequested",
      "CheckpointCompleted", "CheckpointFailed", "Finished",        "Deleted",              "Evicted",
      "Failed",          "GpuUnhealthy",       "GpuHealthy",        "WorkloadDowngraded",   "QuotaChanged"};
  return kinds.contains(kind);
}

// A change of a pool's quotas in the running day (run::Simulation::change_policies): a marker
// on every chart of that pool's devices and workloads.
bool GpuHistory::is_policy_change(const run::Event& e, const std::string& pool) {
  return e.kind == "QuotaChanged" && !pool.empty() && e.pool == pool;
}

void GpuHistory::record(const MinuteObservation& minute) {
  if (minute.t_ms <= last_ms_) return;
  last_ms_ = minute.t_ms;
  for (const DeviceMinute& d : minute.devices) {
    auto& samples = devices_[d.device];
    if (!samples.empty() && samples.back().t_ms == minute.t_ms) continue;  // time-sliced: first holder
    std::uint32_t holder = 0;
    if (!d.twin_workload.empty() || !d.workload.empty()) {
      const std::string key = !d.twin_workload.empty() ? d.twin_workload : d.namespace_name + "/" + d.workload;
      const auto [it, fresh] = holder_index_.emplace(key, static_cast<std::uint32_t>(holders_.size()));
      if (fresh) holders_.emplace_back(key, d.business_group);
      holder = it->second;
      devices_of_[holder].insert(d.device);
    }
    samples.push_back({minute.t_ms, static_cast<float>(d.gpu_utilization), static_cast<float>(d.memory_utilization),
                       static_cast<float>(d.power_fraction), holder});
    while (samples.size() > keep_) samples.pop_front();
  }
}

Json GpuHistory::workload_json(const std::string& key, const std::string& pool, std::int64_t from_ms, std::int64_t to_ms,
                              std::span<const run::Event> events,
                              const std::function<std::int64_t(std::int64_t)>& unix_ms) const {
  Json out = Json::object();
  out["workload"] = key;
  out["from"] = rfc3339(from_ms);
  out["to"] = rfc3339(to_ms);
  out["stepSeconds"] = 60;
  Json devices = Json::array();
  // Per minute: the sums over the devices held then, for the mean.
  struct Sum {
    double gpu = 0, memory = 0, power = 0;
    int devices = 0;
  };
  std::map<std::int64_t, Sum> minutes;
  const auto holder = holder_index_.find(key);
  if (holder != holder_index_.end()) {
    if (const auto held = devices_of_.find(holder->second); held != devices_of_.end()) {
      for (const std::string& device : held->second) {
        const auto& list = devices_.at(device);
        Json samples = Json::array();
        auto it = std::lower_bound(list.begin(), list.end(), from_ms, [](const Sample& x, std::int64_t t) { return x.t_ms < t; });
        for (; it != list.end() && it->t_ms <= to_ms; ++it) {
          if (it->holder != holder->second) continue;
          samples.push_back(Json{{"t", rfc3339(it->t_ms)},
                                 {"gpuUtilization", tenth(it->gpu)},
                                 {"memoryUtilization", tenth(it->memory)},
                                 {"powerPercent", tenth(it->power)}});
          Sum& m = minutes[it->t_ms];
          m.gpu += it->gpu;
          m.memory += it->memory;
          m.power += it->power;
          ++m.devices;
        }
        if (!samples.empty()) devices.push_back(Json{{"device", device}, {"samples", std::move(samples)}});
      }
    }
  }
  out["devices"] = std::move(devices);
  Json mean = Json::array();
  for (const auto& [t, m] : minutes) {
    const auto n = static_cast<float>(m.devices);
    mean.push_back(Json{{"t", rfc3339(t)},
                        {"devices", m.devices},
                        {"gpuUtilization", tenth(static_cast<float>(m.gpu) / n)},
                        {"memoryUtilization", tenth(static_cast<float>(m.memory) / n)},
                        {"powerPercent", tenth(static_cast<float>(m.power) / n)}});
  }
  out["mean"] = std::move(mean);
  Json markers = Json::array();
  const std::string object = "Workload/" + key;
  for (const run::Event& e : events) {
    if (!is_marker(e.kind) || (e.object != object && !is_policy_change(e, pool))) continue;
    const std::int64_t t = unix_ms(e.t);
    if (t < from_ms || t > to_ms) continue;
    markers.push_back(marker_json(e, t));
  }
  out["markers"] = std::move(markers);
  return out;
}

Json GpuHistory::json(const std::string& uuid, const std::string& pool, std::int64_t from_ms, std::int64_t to_ms,
                      std::span<const run::Event> events,
                      const std::function<std::int64_t(std::int64_t)>& unix_ms) const {
  Json out = Json::object();
  out["uuid"] = uuid;
  out["from"] = rfc3339(from_ms);
  out["to"] = rfc3339(to_ms);
  out["stepSeconds"] = 60;
  Json devices = Json::array();
  std::set<std::string> holders;
  // The GPU itself, then its MIG instances ("uuid/1", "uuid/2", ...), in slice order.
  std::vector<const std::pair<const std::string, std::deque<Sample>>*> mine;
  for (auto it = devices_.lower_bound(uuid); it != devices_.end() && it->first.starts_with(uuid); ++it) {
    if (it->first == uuid || it->first[uuid.size()] == '/') mine.push_back(&*it);
  }
  std::stable_sort(mine.begin(), mine.end(), [&uuid](const auto* a, const auto* b) {
    auto slice = [&uuid](const std::string& d) { return d.size() > uuid.size() ? std::stoi(d.substr(uuid.size() + 1)) : 0; };
    return slice(a->first) < slice(b->first);
  });
  for (const auto* device : mine) {
    Json samples = Json::array();
    const auto& list = device->second;
    auto it = std::lower_bound(list.begin(), list.end(), from_ms, [](const Sample& s, std::int64_t t) { return s.t_ms < t; });
    for (; it != list.end() && it->t_ms <= to_ms; ++it) {
      Json x = Json::object();
      x["t"] = rfc3339(it->t_ms);
      x["gpuUtilization"] = tenth(it->gpu);
      x["memoryUtilization"] = tenth(it->memory);
      x["powerPercent"] = tenth(it->power);
      if (it->holder != 0) {
        const auto& [key, group] = holders_[it->holder];
        x["workload"] = key;
        x["businessGroup"] = group;
        holders.insert("Workload/" + key);
      } else {
        x["workload"] = nullptr;
      }
      samples.push_back(std::move(x));
    }
    const auto slash = device->first.find('/');
    devices.push_back(Json{{"device", device->first},
                           {"migSlice", slash == std::string::npos ? Json(nullptr) : Json(std::stoi(device->first.substr(slash + 1)))},
                           {"samples", std::move(samples)}});
  }
  out["devices"] = std::move(devices);
  Json markers = Json::array();
  const std::string gpu_object = "GPU/" + uuid;
  for (const run::Event& e : events) {
    if (!is_marker(e.kind)) continue;
    const std::int64_t t = unix_ms(e.t);
    if (t < from_ms || t > to_ms) continue;
    if (e.object != gpu_object && !holders.contains(e.object) && !is_policy_change(e, pool)) continue;
    markers.push_back(marker_json(e, t));
  }
  out["markers"] = std::move(markers);
  return out;
}

}  // namespace gpubank::twin::live
