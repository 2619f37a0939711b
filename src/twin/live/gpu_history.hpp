// Each device's minutes for the portal's GPU drill-down: the utilisation, memory and power
// the governance recorder saw at every virtual minute (its DeviceMinute, as dcgm-exporter's
// series would show them) and who held the device, with the run's events on the device and
// on its holders as markers (placements, reclaims, checkpoints, stops, XID errors).
//
// Bounded: the last `keep_minutes` per device (a day by default: 24 bytes a minute, about
// 35 KiB per device). Pure bookkeeping: no clock of its own.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <set>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "twin/live/governance.hpp"
#include "twin/run/engine.hpp"

namespace gpubank::twin::live {

// An event as a chart marker ({t, kind, object, businessGroup, pool, reason, message}; null
// for an empty group or pool), t its Unix ms: one shape for every history's markers.
[[nodiscard]] nlohmann::ordered_json marker_json(const run::Event& e, std::int64_t t_unix_ms);

class GpuHistory {
 public:
  explicit GpuHistory(std::size_t keep_minutes = 24 * 60) : keep_(keep_minutes) {}

  // One minute of every device (a device listed more than once, time-sliced, counts once:
  // its first holder). Minutes must come in order; one at or before the last is ignored.
  void record(const MinuteObservation& minute);

  // The devices of GPU `uuid` (the GPU itself, or its MIG instances "uuid/<slice>"), their
  // samples with t in [from_ms, to_ms] (Unix ms), and the markers in that range: the events
  // on "GPU/<uuid>" and on the workloads that held one of the devices in the range, and the
  // policy changes of `pool` (QuotaChanged: a guarantee or limit changed in the running day).
  // `unix_ms` turns an event's virtual time into Unix ms.
  [[nodiscard]] nlohmann::ordered_json json(const std::string& uuid, const std::string& pool, std::int64_t from_ms,
                                            std::int64_t to_ms, std::span<const run::Event> events,
                                            const std::function<std::int64_t(std::int64_t)>& unix_ms) const;

  // A workload's minutes ("namespace/name"): every device it held in [from_ms, to_ms], the
  // minutes it held it, the mean over those devices per minute, and as markers its own
  // events and the policy changes of its `pool`.
  [[nodiscard]] nlohmann::ordered_json workload_json(const std::string& key, const std::string& pool,
                                                     std::int64_t from_ms, std::int64_t to_ms,
                                                     std::span<const run::Event> events,
                                                     const std::function<std::int64_t(std::int64_t)>& unix_ms) const;

  // The newest minute recorded (Unix ms), 0 before any.
  [[nodiscard]] std::int64_t last_ms() const { return last_ms_; }

  // The event kinds shown as markers.
  static bool is_marker(const std::string& kind);
  static bool is_policy_change(const run::Event& e, const std::string& pool);

 private:
  struct Sample {
    std::int64_t t_ms = 0;
    float gpu = 0, memory = 0, power = 0;  // percent
    std::uint32_t holder = 0;              // into holders_; 0: free
  };
  std::size_t keep_;
  std::int64_t last_ms_ = 0;
  std::map<std::string, std::deque<Sample>> devices_;
  std::vector<std::pair<std::string, std::string>> holders_{{"", ""}};  // (workload key, business group)
  std::map<std::string, std::uint32_t> holder_index_;
  std::map<std::uint32_t, std::set<std::string>> devices_of_;  // holder -> devices it held
};

}  // namespace gpubank::twin::live
