// When tidal windows are active. A window is active at time t exactly when KEDA's cron
// scaler (which gpubank renders windows into) says so: the next end is not after the
// next start, both strictly after t (pkg/scalers/cron_scaler.go, IsActive). So a window
// is active from the last start firing before an end firing until that end; windows are
// half-open, so one may end exactly when another starts.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <vector>

#include <date/tz.h>

#include "core/cron.hpp"

namespace gpubank::policy {

struct WindowSchedule {
  const CronSchedule* start = nullptr;
  const CronSchedule* end = nullptr;
};

struct Interval {
  std::chrono::sys_seconds begin;
  std::chrono::sys_seconds end;
};

// The maximal intervals within [from, to) in which the window is active. `max_firings`
// bounds the work per schedule; when a schedule fires more often, the horizon is
// shortened to what was covered and `truncated_at` says where it stopped.
std::vector<Interval> active_intervals(const WindowSchedule& window, const date::time_zone& zone,
                                       std::chrono::sys_seconds from, std::chrono::sys_seconds to,
                                       std::size_t max_firings = 100'000,
                                       std::optional<std::chrono::sys_seconds>* truncated_at = nullptr);

struct WindowOverlap {
  std::size_t first = 0;   // index of the earlier-listed window
  std::size_t second = 0;  // index of the later-listed window
  std::chrono::sys_seconds at;  // the first moment both are active
};

// The earliest moment two of the windows are active together, searching the fixed
// horizon below (not "now": validation must not depend on the clock).
std::optional<WindowOverlap> find_overlap(const std::vector<WindowSchedule>& windows, const date::time_zone& zone);

// The first local time in the horizon below at which `start` would fire but which does not
// exist in `zone` (a spring-forward gap): robfig's cron, as KEDA runs it, does not fire
// that day (core/cron.hpp), so the window does not open. std::nullopt when there is none.
std::optional<date::local_seconds> start_in_dst_gap(const CronSchedule& start, const date::time_zone& zone);

// The overlap search horizon: four years from 2024-01-01 00:00 local time, which covers a
// leap day, every weekday of every month-day and both DST changes of each year.
inline constexpr int kHorizonStartYear = 2024;
inline constexpr int kHorizonYears = 4;

}  // namespace gpubank::policy
