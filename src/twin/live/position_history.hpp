// Each business group's position per pool over the last day, for the portal's group page:
// per virtual minute its guarantee in force, the devices its workloads held, what it
// borrowed and what it lent (the ledger's open loans), as the governance recorder saw them,
// with the run's events that moved them as markers: quota changes in the running day,
// leases, reclaims of its loans and of its workloads, downgrades.
//
// The same per pool for the pool page: its devices, the devices held and by whom.
//
// Bounded: the last `keep_minutes` per (group, pool) and per pool (a day by default: 20
// bytes a minute).
// Pure bookkeeping: no clock of its own.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "twin/live/governance.hpp"
#include "twin/run/engine.hpp"

namespace gpubank::twin::live {

class PositionHistory {
 public:
  explicit PositionHistory(std::size_t keep_minutes = 24 * 60) : keep_(keep_minutes) {}

  // One minute (its quotas, devices and loans). Minutes must come in order; one at or
  // before the last is ignored.
  void record(const MinuteObservation& minute);

  // Group `group`'s pools (those it has a quota in, or held devices or loans in, in the
  // range), each with its minutes in [from_ms, to_ms] (Unix ms), and the markers in range:
  // events of kinds in is_marker() that name the group (its workloads', its policies', and
  // the reclaims it starts as a lender). `unix_ms` turns an event's virtual time into Unix
  // ms.
  [[nodiscard]] nlohmann::ordered_json json(const std::string& group, std::int64_t from_ms, std::int64_t to_ms,
                                            std::span<const run::Event> events,
                                            const std::function<std::int64_t(std::int64_t)>& unix_ms) const;

  // Pool `pool`'s minutes in [from_ms, to_ms]: its devices (capacity as the exporter lists
  // them: whole GPUs or MIG instances), the devices held, and each group's holding; markers:
  // the events in the pool that change what it can give (quota changes, leases, reclaims,
  // XID errors and recoveries). Empty minutes for a pool never seen.
  [[nodiscard]] nlohmann::ordered_json pool_json(const std::string& pool, std::int64_t from_ms, std::int64_t to_ms,
                                                 std::span<const run::Event> events,
                                                 const std::function<std::int64_t(std::int64_t)>& unix_ms) const;

  [[nodiscard]] std::int64_t last_ms() const { return last_ms_; }

  // The event kinds shown as markers on a group's chart, and on a pool's.
  static bool is_marker(const std::string& kind);
  static bool is_pool_marker(const std::string& kind);

 private:
  struct Sample {
    std::int64_t t_ms = 0;
    float guaranteed = 0, held = 0, borrowed = 0, lent = 0;
  };
  std::size_t keep_;
  std::int64_t last_ms_ = 0;
  std::map<std::pair<std::string, std::string>, std::deque<Sample>> series_;  // (group, pool)
  struct PoolSample {
    std::int64_t t_ms = 0;
    std::uint32_t devices = 0;
  };
  std::map<std::string, std::deque<PoolSample>> pools_;
};

}  // namespace gpubank::twin::live
