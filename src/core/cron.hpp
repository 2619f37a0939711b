// Five-field cron expressions with the semantics of robfig/cron v3's standard parser,
// which KEDA's cron scaler uses: the windows gpubank renders into KEDA must fire exactly
// when gpubank's own tidal controller and twin think they fire.
//
// Syntax: "minute hour day-of-month month day-of-week" with *, ?, lists (a,b), ranges
// (a-b), steps (*/n, a-b/n, a/n = a-max/n), month names JAN..DEC and weekday names
// SUN..SAT (case-insensitive), weekdays 0-6 with 0 = Sunday; and the descriptors
// @yearly @annually @monthly @weekly @daily @midnight @hourly.
// When both day-of-month and day-of-week are restricted (neither starts with * or ?),
// a day matches if either matches; otherwise both must match.
//
// Deliberately rejected although robfig accepts them: "TZ=" / "CRON_TZ=" prefixes (the
// policy carries its own time zone), "@every <duration>" (a fixed interval from whenever
// the evaluator started is not a calendar window), and "*-n" ranges (robfig reads them
// as "*", which is never what was meant).
//
// DST: next() reproduces SpecSchedule.Next exactly, including Go's normalisation of
// non-existent and repeated local times. The consequences, as robfig has them:
//   - a local time inside a spring-forward gap does not exist, so it does not fire that
//     day (02:30 in America/New_York on 2012-03-11: the next firing is the next day's);
//   - a local time inside a fall-back overlap exists twice and fires twice (01:30 EDT
//     and 01:30 EST on 2012-11-04);
//   - hourly schedules skip the missing hour and fire in both repeated hours.
// Where robfig's Next never returns (a zone that skipped a whole calendar day, e.g.
// Pacific/Apia on 2011-12-30, leaves its day loop stuck), next() answers std::nullopt.
// Offsets come from date/tz, which reads the tzfile transitions only: for instants after
// the last listed transition (2037 in Debian's files) it keeps the last offset, where Go
// would apply the file's POSIX TZ rule, so DST zones can differ from KEDA after 2037.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <date/tz.h>

#include "core/expected.hpp"

namespace gpubank {

class CronSchedule {
 public:
  // An empty schedule that never fires; parse() makes real ones.
  CronSchedule() = default;

  // Errors quote the expression and name the field, with robfig's wording, e.g.
  // `cron "61 * * * *": minute: end of range (61) above maximum (59)`.
  static Expected<CronSchedule> parse(std::string_view expression);

  // The first activation strictly after `after`, in `zone`; std::nullopt when none exists
  // within five years of it (robfig's zero time), e.g. "0 0 30 2 *", and for instants
  // outside the years 1 to 9999. Allocates nothing.
  [[nodiscard]] std::optional<std::chrono::sys_seconds> next(std::chrono::sys_seconds after,
                                                             const date::time_zone& zone) const;

  // The expression as written.
  [[nodiscard]] const std::string& text() const { return text_; }

  // Bit sets, bit i set when value i matches; the top bit marks a "*" or "?" field.
  struct Fields {
    std::uint64_t minute = 0, hour = 0, day_of_month = 0, month = 0, day_of_week = 0;
  };
  [[nodiscard]] const Fields& fields() const { return fields_; }

 private:
  Fields fields_;
  std::string text_;
};

}  // namespace gpubank
