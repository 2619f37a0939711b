#include "policy/tidal_windows.hpp"

#include <algorithm>
#include <limits>

namespace gpubank::policy {
namespace {

using std::chrono::sys_seconds;

// Firings strictly after `after`, up to and including the first one past `to`.
std::vector<sys_seconds> firings(const CronSchedule& schedule, const date::time_zone& zone, sys_seconds after,
                                 sys_seconds to, std::size_t max_firings, bool& truncated) {
  std::vector<sys_seconds> out;
  sys_seconds t = after;
  while (true) {
    auto next = schedule.next(t, zone);
    if (!next) break;  // no more firings within robfig's five-year search
    out.push_back(*next);
    if (*next > to) break;
    if (out.size() >= max_firings) {
      truncated = true;
      break;
    }
    t = *next;
  }
  return out;
}

}  // namespace

std::vector<Interval> active_intervals(const WindowSchedule& window, const date::time_zone& zone, sys_seconds from,
                                       sys_seconds to, std::size_t max_firings,
                                       std::optional<sys_seconds>* truncated_at) {
  bool truncated = false;
  const auto starts = firings(*window.start, zone, from - std::chrono::seconds(1), to, max_firings, truncated);
  const auto ends = firings(*window.end, zone, from - std::chrono::seconds(1), to, max_firings, truncated);
  if (truncated) {
    // Only the span both lists fully cover can be judged.
    to = std::min(starts.empty() ? to : starts.back(), ends.empty() ? to : ends.back());
    if (truncated_at != nullptr) *truncated_at = to;
  }

  std::vector<sys_seconds> points{from};
  for (const auto& list : {&starts, &ends}) {
    for (auto p : *list) {
      if (p >= from && p < to) points.push_back(p);
    }
  }
  std::sort(points.begin(), points.end());
  points.erase(std::unique(points.begin(), points.end()), points.end());

  auto first_after = [](const std::vector<sys_seconds>& list, sys_seconds t) -> std::optional<sys_seconds> {
    auto it = std::upper_bound(list.begin(), list.end(), t);
    if (it == list.end()) return std::nullopt;
    return *it;
  };

  std::vector<Interval> out;
  for (std::size_t i = 0; i < points.size(); ++i) {
    const sys_seconds p = points[i];
    const auto next_end = first_after(ends, p);
    const auto next_start = first_after(starts, p);
    // KEDA: active unless the next start comes before the next end.
    const bool active = next_end && (!next_start || *next_end <= *next_start);
    if (!active) continue;
    const sys_seconds until = i + 1 < points.size() ? points[i + 1] : to;
    if (!out.empty() && out.back().end == p) {
      out.back().end = until;
    } else {
      out.push_back({p, until});
    }
  }
  return out;
}

std::optional<WindowOverlap> find_overlap(const std::vector<WindowSchedule>& windows, const date::time_zone& zone) {
  using namespace date;  // NOLINT(google-build-using-namespace): calendar literals
  const auto from = zone.to_sys(local_days{year{kHorizonStartYear} / January / 1}, choose::earliest);
  const auto to = zone.to_sys(local_days{year{kHorizonStartYear + kHorizonYears} / January / 1}, choose::earliest);
  std::vector<std::vector<Interval>> intervals;
  intervals.reserve(windows.size());
  for (const auto& w : windows) intervals.push_back(active_intervals(w, zone, from, to));

  std::optional<WindowOverlap> best;
  for (std::size_t a = 0; a < windows.size(); ++a) {
    for (std::size_t b = a + 1; b < windows.size(); ++b) {
      const auto& x = intervals[a];
      const auto& y = intervals[b];
      std::size_t i = 0;
      std::size_t j = 0;
      while (i < x.size() && j < y.size()) {
        const auto begin = std::max(x[i].begin, y[j].begin);
        const auto end = std::min(x[i].end, y[j].end);
        if (begin < end) {
          if (!best || begin < best->at) best = WindowOverlap{a, b, begin};
          break;  // the earliest overlap of this pair
        }
        if (x[i].end <= y[j].end) {
          ++i;
        } else {
          ++j;
        }
      }
    }
  }
  return best;
}

std::optional<date::local_seconds> start_in_dst_gap(const CronSchedule& start, const date::time_zone& zone) {
  using namespace date;  // NOLINT(google-build-using-namespace): calendar literals
  using std::chrono::minutes;
  const auto has = [](std::uint64_t bits, unsigned v) { return v < 64 && (bits & (std::uint64_t{1} << v)) != 0; };
  constexpr std::uint64_t kStar = std::uint64_t{1} << 63;  // CronSchedule::Fields: "*" or "?"
  const CronSchedule::Fields& f = start.fields();
  const auto fires_at = [&](local_seconds t) {
    const auto day = floor<days>(t);
    const year_month_day ymd{day};
    const hh_mm_ss<std::chrono::seconds> time{t - day};
    const auto minute = static_cast<unsigned>(time.minutes().count());
    const auto hour = static_cast<unsigned>(time.hours().count());
    if (!has(f.minute, minute) || !has(f.hour, hour) || !has(f.month, static_cast<unsigned>(ymd.month()))) return false;
    const bool dom = has(f.day_of_month, static_cast<unsigned>(ymd.day()));
    const bool dow = has(f.day_of_week, weekday{day}.c_encoding());
    return (f.day_of_month & kStar) != 0 || (f.day_of_week & kStar) != 0 ? dom && dow : dom || dow;
  };
  const auto from = zone.to_sys(local_days{year{kHorizonStartYear} / January / 1}, choose::earliest);
  const auto to = zone.to_sys(local_days{year{kHorizonStartYear + kHorizonYears} / January / 1}, choose::earliest);
  for (auto t = from; t < to;) {
    const sys_info before = zone.get_info(t);
    if (before.end >= to || before.end <= t) break;
    const sys_info after = zone.get_info(before.end);
    if (after.offset > before.offset) {
      // Local times from the old offset's view of the transition up to the new one's do not exist.
      const local_seconds gap_begin{before.end.time_since_epoch() + before.offset};
      const local_seconds gap_end{before.end.time_since_epoch() + after.offset};
      for (auto m = gap_begin; m < gap_end; m += minutes(1)) {
        if (fires_at(m)) return m;
      }
    }
    t = before.end;
  }
  return std::nullopt;
}

}  // namespace gpubank::policy
