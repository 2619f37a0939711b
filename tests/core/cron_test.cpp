#include "core/cron.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "core/timezone.hpp"

namespace gpubank {
namespace {

using std::chrono::seconds;
using std::chrono::sys_seconds;

const date::time_zone& zone(std::string_view name) {
  auto z = find_time_zone(name);
  if (!z) throw std::runtime_error(z.error());
  return **z;
}

// "2012-03-11T00:00:00-0500" (hand-parsed: date::parse trips GCC 12's -Wmaybe-uninitialized
// at -O3).
sys_seconds at(std::string_view text) {
  auto num = [&](std::size_t pos, std::size_t len) {
    int v = 0;
    for (std::size_t i = pos; i < pos + len; ++i) {
      if (i >= text.size() || text[i] < '0' || text[i] > '9') {
        throw std::runtime_error("bad test time " + std::string(text));
      }
      v = v * 10 + (text[i] - '0');
    }
    return v;
  };
  if (text.size() != 24 || (text[19] != '+' && text[19] != '-')) {
    throw std::runtime_error("bad test time " + std::string(text));
  }
  const date::sys_days day = date::year{num(0, 4)} / date::month{unsigned(num(5, 2))} /
                             date::day{unsigned(num(8, 2))};
  const seconds local = std::chrono::hours{num(11, 2)} + std::chrono::minutes{num(14, 2)} +
                        seconds{num(17, 2)};
  const seconds offset = std::chrono::hours{num(20, 2)} + std::chrono::minutes{num(22, 2)};
  return day + local - (text[19] == '-' ? -offset : offset);
}

// The instant as local time with offset in `z`, or "never".
std::string show(std::optional<sys_seconds> t, const date::time_zone& z) {
  if (!t) return "never";
  return date::format("%FT%T%z", date::make_zoned(&z, *t));
}

CronSchedule must_parse(std::string_view expr) {
  auto s = CronSchedule::parse(expr);
  if (!s) throw std::runtime_error(s.error());
  return *s;
}

struct NextCase {
  const char* zone;
  const char* after;
  const char* expr;
  const char* want;  // local time with offset in `zone`, or "never"
};

void check_table(const std::vector<NextCase>& cases) {
  for (const NextCase& c : cases) {
    SCOPED_TRACE(std::string(c.zone) + " after " + c.after + " \"" + c.expr + "\"");
    auto s = CronSchedule::parse(c.expr);
    ASSERT_TRUE(s.ok()) << s.error();
    const date::time_zone& z = zone(c.zone);
    EXPECT_EQ(show(s->next(at(c.after), z), z), c.want);
  }
}

// ---------------------------------------------------------------------------------------
// Syntax, in UTC (2012-07-09 is a Monday).
// ---------------------------------------------------------------------------------------

TEST(CronNext, Steps) {
  check_table({
      {"UTC", "2012-07-09T14:45:00+0000", "*/15 * * * *", "2012-07-09T15:00:00+0000"},
      {"UTC", "2012-07-09T14:59:59+0000", "0/15 * * * *", "2012-07-09T15:00:00+0000"},
      {"UTC", "2012-07-09T15:00:00+0000", "0/15 * * * *", "2012-07-09T15:15:00+0000"},
      {"UTC", "2012-07-09T15:45:00+0000", "20-35/15 * * * *", "2012-07-09T16:20:00+0000"},
      {"UTC", "2012-07-09T15:20:00+0000", "20-35/15 * * * *", "2012-07-09T15:35:00+0000"},
      // "a/n" is "a-max/n": 50 and 55
      {"UTC", "2012-07-09T10:50:00+0000", "50/5 * * * *", "2012-07-09T10:55:00+0000"},
      {"UTC", "2012-07-09T10:56:00+0000", "50/5 * * * *", "2012-07-09T11:50:00+0000"},
      // a step larger than the range leaves only its start
      {"UTC", "2012-07-09T10:56:00+0000", "7/60 * * * *", "2012-07-09T11:07:00+0000"},
      {"UTC", "2012-07-09T10:56:00+0000", "0 */7 * * *", "2012-07-09T14:00:00+0000"},
      {"UTC", "2012-07-09T22:00:00+0000", "0 */7 * * *", "2012-07-10T00:00:00+0000"},
      {"UTC", "2012-07-09T23:35:51+0000", "20-35/15 1/2 * * *", "2012-07-10T01:20:00+0000"},
      {"UTC", "2012-07-09T23:35:51+0000", "20-35/15 10-12 * * *", "2012-07-10T10:20:00+0000"},
      {"UTC", "2012-07-09T23:35:51+0000", "20-35/15 1/2 */2 * *", "2012-07-11T01:20:00+0000"},
      {"UTC", "2012-07-09T23:35:51+0000", "20-35/15 * 9-20 * *", "2012-07-10T00:20:00+0000"},
      {"UTC", "2012-07-09T23:35:51+0000", "20-35/15 * 9-20 Jul *", "2012-07-10T00:20:00+0000"},
  });
}

TEST(CronNext, ListsRangesAndWrapping) {
  check_table({
      {"UTC", "2012-07-09T10:00:00+0000", "1,5-7/2,3 * * * *", "2012-07-09T10:01:00+0000"},
      {"UTC", "2012-07-09T10:01:00+0000", "1,5-7/2,3 * * * *", "2012-07-09T10:03:00+0000"},
      {"UTC", "2012-07-09T10:03:00+0000", "1,5-7/2,3 * * * *", "2012-07-09T10:05:00+0000"},
      {"UTC", "2012-07-09T10:05:00+0000", "1,5-7/2,3 * * * *", "2012-07-09T10:07:00+0000"},
      {"UTC", "2012-07-09T10:07:00+0000", "1,5-7/2,3 * * * *", "2012-07-09T11:01:00+0000"},
      // empty list elements are dropped, as Go's strings.FieldsFunc does
      {"UTC", "2012-07-09T10:01:00+0000", "1,,2 * * * *", "2012-07-09T10:02:00+0000"},
      // leading zeros and a plus sign are numbers to Go's strconv.Atoi
      {"UTC", "2012-07-09T10:01:00+0000", "05 +3 * * *", "2012-07-10T03:05:00+0000"},
      {"UTC", "2012-07-09T23:46:00+0000", "*/15 * * * *", "2012-07-10T00:00:00+0000"},
      {"UTC", "2012-07-09T23:45:00+0000", "20-35/15 * * * *", "2012-07-10T00:20:00+0000"},
      {"UTC", "2012-07-09T23:35:00+0000", "0 0 9 Apr-Oct ?", "2012-08-09T00:00:00+0000"},
      {"UTC", "2012-07-09T23:35:00+0000", "0 0 * Feb Mon", "2013-02-04T00:00:00+0000"},
      {"UTC", "2012-12-31T23:59:45+0000", "* * * * *", "2013-01-01T00:00:00+0000"},
      {"UTC", "2012-12-31T23:59:00+0000", "* * * * *", "2013-01-01T00:00:00+0000"},
      {"UTC", "2012-12-31T23:58:59+0000", "* * * * *", "2012-12-31T23:59:00+0000"},
      {"UTC", "2026-12-31T23:59:00+0000", "59 23 31 12 *", "2027-12-31T23:59:00+0000"},
  });
}

TEST(CronNext, MonthEndsAndLeapYears) {
  check_table({
      {"UTC", "2026-01-31T12:00:00+0000", "0 12 31 * *", "2026-03-31T12:00:00+0000"},
      {"UTC", "2026-03-31T12:00:00+0000", "0 12 31 * *", "2026-05-31T12:00:00+0000"},
      {"UTC", "2026-01-30T00:00:00+0000", "0 0 30 * *", "2026-03-30T00:00:00+0000"},
      {"UTC", "2023-03-01T00:00:00+0000", "0 0 29 2 *", "2024-02-29T00:00:00+0000"},
      {"UTC", "2024-02-29T00:00:00+0000", "0 0 29 2 *", "2028-02-29T00:00:00+0000"},
      {"UTC", "2012-07-09T23:35:00+0000", "0 0 29 Feb ?", "2016-02-29T00:00:00+0000"},
      // 2100 is not a leap year: the next 29 February after 2096 is in 2104, beyond the
      // five-year horizon
      {"UTC", "2096-03-01T00:00:00+0000", "0 0 29 2 *", "never"},
      {"UTC", "2099-06-01T00:00:00+0000", "0 0 28 2 *", "2100-02-28T00:00:00+0000"},
      // never fires
      {"UTC", "2026-01-01T00:00:00+0000", "0 0 30 2 *", "never"},
      {"UTC", "2012-07-09T23:35:00+0000", "0 0 31 Apr ?", "never"},
      {"UTC", "2012-07-09T23:35:00+0000", "0 0 31 4,6,9,11 *", "never"},
      // a field that lists nothing (robfig accepts ",") never matches
      {"UTC", "2026-01-01T00:00:00+0000", ", * * * *", "never"},
      {"UTC", "2026-01-01T00:00:00+0000", "0 0 , * *", "never"},
      // the horizon: up to the end of the fifth calendar year after the year of the first
      // candidate second (after + 1s)
      {"UTC", "2099-03-01T00:00:00+0000", "0 0 29 2 *", "2104-02-29T00:00:00+0000"},
      {"UTC", "2098-12-31T23:59:59+0000", "0 0 29 2 *", "2104-02-29T00:00:00+0000"},
      {"UTC", "2098-12-31T23:59:58+0000", "0 0 29 2 *", "never"},
  });
}

TEST(CronNext, DayOfMonthOrDayOfWeek) {
  check_table({
      // both restricted: either may match
      {"UTC", "2012-07-14T00:00:00+0000", "0 0 1,15 * Sun", "2012-07-15T00:00:00+0000"},
      {"UTC", "2012-06-14T12:00:00+0000", "0 0 1,15 * Sun", "2012-06-15T00:00:00+0000"},
      {"UTC", "2012-07-29T00:00:00+0000", "0 0 1,15 * Sun", "2012-08-01T00:00:00+0000"},
      {"UTC", "2012-07-22T00:00:00+0000", "0 0 1,15 * Sun", "2012-07-29T00:00:00+0000"},
      {"UTC", "2012-07-14T00:00:00+0000", "0 0 */10 * Sun", "2012-07-15T00:00:00+0000"},
      {"UTC", "2012-07-09T23:35:00+0000", "0 0 */5 Apr,Aug,Oct Mon", "2012-08-01T00:00:00+0000"},
      {"UTC", "2012-07-09T23:35:00+0000", "0 0 */5 Oct Mon", "2012-10-01T00:00:00+0000"},
      // "*/2" is a restriction (step > 1 clears the star): Monday the 2nd matches through
      // the day of week although 2 is even
      {"UTC", "2012-07-01T00:00:00+0000", "0 0 */2 * Mon", "2012-07-02T00:00:00+0000"},
      // "1-31" is a restriction too, so every day matches
      {"UTC", "2012-07-02T00:00:00+0000", "0 0 1-31 * Mon", "2012-07-03T00:00:00+0000"},
      // "*", "?" and "*/1" are stars: then both must match
      {"UTC", "2012-07-02T00:00:00+0000", "0 0 * * Mon", "2012-07-09T00:00:00+0000"},
      {"UTC", "2012-07-02T00:00:00+0000", "0 0 ? * Mon", "2012-07-09T00:00:00+0000"},
      {"UTC", "2012-07-02T00:00:00+0000", "0 0 */1 * Mon", "2012-07-09T00:00:00+0000"},
      {"UTC", "2012-07-09T00:00:00+0000", "0 0 1,15 * *", "2012-07-15T00:00:00+0000"},
      {"UTC", "2012-07-09T00:00:00+0000", "0 0 1,15 * ?", "2012-07-15T00:00:00+0000"},
      {"UTC", "2012-07-09T00:00:00+0000", "0 0 1,15 * */1", "2012-07-15T00:00:00+0000"},
      // "Mon/2" is Mon, Wed, Fri, restricted; with "*" day of month: Friday 1 Feb 2013
      {"UTC", "2012-07-09T23:35:00+0000", "0 0 * Feb Mon/2", "2013-02-01T00:00:00+0000"},
      // restricted day of week with "*/2" day of month
      {"UTC", "2012-07-14T00:00:00+0000", "0 0 */2 * Sun", "2012-07-15T00:00:00+0000"},
      {"UTC", "2012-07-15T00:00:00+0000", "0 0 */2 * Sun", "2012-07-17T00:00:00+0000"},
  });
}

TEST(CronNext, Names) {
  check_table({
      {"UTC", "2026-03-31T09:00:00+0000", "0 9 * jan-MAR mon-FRI", "2027-01-01T09:00:00+0000"},
      {"UTC", "2026-03-30T09:00:00+0000", "0 9 * Jan-Mar Mon-Fri", "2026-03-31T09:00:00+0000"},
      {"UTC", "2026-05-05T00:00:00+0000", "0 0 1 DEC *", "2026-12-01T00:00:00+0000"},
      {"UTC", "2026-05-05T00:00:00+0000", "0 0 * * sat,SUN", "2026-05-09T00:00:00+0000"},
      {"UTC", "2026-05-09T00:00:00+0000", "0 0 * * sat,SUN", "2026-05-10T00:00:00+0000"},
      // names and numbers mix; "SUN-5" is Sunday to Friday
      {"UTC", "2026-05-08T12:00:00+0000", "0 12 * * SUN-5", "2026-05-10T12:00:00+0000"},
      {"UTC", "2026-05-05T00:00:00+0000", "0 0 1 jan/6 *", "2026-07-01T00:00:00+0000"},
      {"UTC", "2026-07-01T00:00:00+0000", "0 0 1 jan/6 *", "2027-01-01T00:00:00+0000"},
  });
}

TEST(CronNext, Descriptors) {
  check_table({
      {"UTC", "2026-05-05T10:30:00+0000", "@yearly", "2027-01-01T00:00:00+0000"},
      {"UTC", "2026-05-05T10:30:00+0000", "@annually", "2027-01-01T00:00:00+0000"},
      {"UTC", "2026-05-05T10:30:00+0000", "@monthly", "2026-06-01T00:00:00+0000"},
      {"UTC", "2026-05-05T10:30:00+0000", "@weekly", "2026-05-10T00:00:00+0000"},
      {"UTC", "2026-05-10T00:00:00+0000", "@weekly", "2026-05-17T00:00:00+0000"},
      {"UTC", "2026-05-05T10:30:00+0000", "@daily", "2026-05-06T00:00:00+0000"},
      {"UTC", "2026-05-05T10:30:00+0000", "@midnight", "2026-05-06T00:00:00+0000"},
      {"UTC", "2026-05-05T10:30:00+0000", "@hourly", "2026-05-05T11:00:00+0000"},
      {"Asia/Shanghai", "2026-05-05T10:30:00+0800", "@daily", "2026-05-06T00:00:00+0800"},
  });
}

TEST(CronNext, WhitespaceSeparatesFields) {
  check_table({
      {"UTC", "2026-05-05T10:30:00+0000", "  0\t12  * *   *  ", "2026-05-05T12:00:00+0000"},
      {"UTC", "2026-05-05T10:30:00+0000", "0\n12\r*\v*\f*", "2026-05-05T12:00:00+0000"},
      // Go's strings.Fields splits on Unicode white space too (here NO-BREAK SPACE and
      // IDEOGRAPHIC SPACE)
      {"UTC", "2026-05-05T10:30:00+0000", "0\u00a012 * *\u3000*", "2026-05-05T12:00:00+0000"},
  });
}

// ---------------------------------------------------------------------------------------
// Time zones and DST.
// ---------------------------------------------------------------------------------------

// robfig's own spec_test.go cases, in five fields.
TEST(CronNext, NewYorkSpringForward2012) {
  check_table({
      {"America/New_York", "2012-03-11T00:00:00-0500", "30 2 11 Mar *",
       "2013-03-11T02:30:00-0400"},
      // 02:30 does not exist on 11 March: the next day's
      {"America/New_York", "2012-03-11T00:00:00-0500", "30 2 * * *",
       "2012-03-12T02:30:00-0400"},
      // hourly: 02:00 is skipped
      {"America/New_York", "2012-03-11T00:00:00-0500", "0 * * * *",
       "2012-03-11T01:00:00-0500"},
      {"America/New_York", "2012-03-11T01:00:00-0500", "0 * * * *",
       "2012-03-11T03:00:00-0400"},
      {"America/New_York", "2012-03-11T03:00:00-0400", "0 * * * *",
       "2012-03-11T04:00:00-0400"},
      {"America/New_York", "2012-03-11T04:00:00-0400", "0 * * * *",
       "2012-03-11T05:00:00-0400"},
      // 1am nightly
      {"America/New_York", "2012-03-11T00:00:00-0500", "0 1 * * *",
       "2012-03-11T01:00:00-0500"},
      {"America/New_York", "2012-03-11T01:00:00-0500", "0 1 * * *",
       "2012-03-12T01:00:00-0400"},
      // 2am nightly: skipped
      {"America/New_York", "2012-03-11T00:00:00-0500", "0 2 * * *",
       "2012-03-12T02:00:00-0400"},
      // every 15 minutes across the gap: 01:45 EST is followed by 03:00 EDT
      {"America/New_York", "2012-03-11T01:45:00-0500", "*/15 * * * *",
       "2012-03-11T03:00:00-0400"},
  });
}

TEST(CronNext, NewYorkFallBack2012) {
  check_table({
      {"America/New_York", "2012-11-04T00:00:00-0400", "30 2 04 Nov *",
       "2012-11-04T02:30:00-0500"},
      {"America/New_York", "2012-11-04T01:45:00-0400", "30 1 04 Nov *",
       "2012-11-04T01:30:00-0500"},
      // 01:30 happens twice and fires twice
      {"America/New_York", "2012-11-04T00:00:00-0400", "30 1 * * *",
       "2012-11-04T01:30:00-0400"},
      {"America/New_York", "2012-11-04T01:30:00-0400", "30 1 * * *",
       "2012-11-04T01:30:00-0500"},
      {"America/New_York", "2012-11-04T01:30:00-0500", "30 1 * * *",
       "2012-11-05T01:30:00-0500"},
      // hourly: both 01:00s
      {"America/New_York", "2012-11-04T00:00:00-0400", "0 * * * *",
       "2012-11-04T01:00:00-0400"},
      {"America/New_York", "2012-11-04T01:00:00-0400", "0 * * * *",
       "2012-11-04T01:00:00-0500"},
      {"America/New_York", "2012-11-04T01:00:00-0500", "0 * * * *",
       "2012-11-04T02:00:00-0500"},
      // 1am nightly runs twice
      {"America/New_York", "2012-11-04T00:00:00-0400", "0 1 * * *",
       "2012-11-04T01:00:00-0400"},
      {"America/New_York", "2012-11-04T01:00:00-0400", "0 1 * * *",
       "2012-11-04T01:00:00-0500"},
      {"America/New_York", "2012-11-04T01:00:00-0500", "0 1 * * *",
       "2012-11-05T01:00:00-0500"},
      // 2am and 3am nightly run once
      {"America/New_York", "2012-11-04T00:00:00-0400", "0 2 * * *",
       "2012-11-04T02:00:00-0500"},
      {"America/New_York", "2012-11-04T02:00:00-0500", "0 2 * * *",
       "2012-11-05T02:00:00-0500"},
      {"America/New_York", "2012-11-04T00:00:00-0400", "0 3 * * *",
       "2012-11-04T03:00:00-0500"},
      {"America/New_York", "2012-11-04T03:00:00-0500", "0 3 * * *",
       "2012-11-05T03:00:00-0500"},
      // monthly
      {"America/New_York", "2012-11-04T00:00:00-0400", "0 3 3 * *",
       "2012-12-03T03:00:00-0500"},
  });
}

TEST(CronNext, BerlinDst2026) {
  check_table({
      // 29 March: 02:00 CET becomes 03:00 CEST, 02:30 does not exist that day
      {"Europe/Berlin", "2026-03-28T12:00:00+0100", "30 2 * * *", "2026-03-30T02:30:00+0200"},
      {"Europe/Berlin", "2026-03-29T00:00:00+0100", "0 2 * * *", "2026-03-30T02:00:00+0200"},
      {"Europe/Berlin", "2026-03-29T01:00:00+0100", "0 * * * *", "2026-03-29T03:00:00+0200"},
      {"Europe/Berlin", "2026-03-29T00:00:00+0100", "0 3 * * *", "2026-03-29T03:00:00+0200"},
      // 25 October: 03:00 CEST becomes 02:00 CET, 02:30 happens twice
      {"Europe/Berlin", "2026-10-25T00:00:00+0200", "30 2 * * *", "2026-10-25T02:30:00+0200"},
      {"Europe/Berlin", "2026-10-25T02:30:00+0200", "30 2 * * *", "2026-10-25T02:30:00+0100"},
      {"Europe/Berlin", "2026-10-25T02:30:00+0100", "30 2 * * *", "2026-10-26T02:30:00+0100"},
      {"Europe/Berlin", "2026-10-25T02:00:00+0200", "0 * * * *", "2026-10-25T02:00:00+0100"},
      {"Europe/Berlin", "2026-10-25T02:00:00+0100", "0 * * * *", "2026-10-25T03:00:00+0100"},
      // a weekday schedule straddling the change
      {"Europe/Berlin", "2026-03-27T09:00:00+0100", "0 9 * * 1-5", "2026-03-30T09:00:00+0200"},
  });
}

TEST(CronNext, ShanghaiHasNoDst) {
  check_table({
      // Friday evening to Monday morning
      {"Asia/Shanghai", "2026-05-08T19:00:00+0800", "30 8 * * 1-5", "2026-05-11T08:30:00+0800"},
      {"Asia/Shanghai", "2026-05-11T08:30:00+0800", "30 8 * * 1-5", "2026-05-12T08:30:00+0800"},
      {"Asia/Shanghai", "2026-03-28T12:00:00+0800", "30 2 * * *", "2026-03-29T02:30:00+0800"},
      {"Asia/Shanghai", "2026-10-25T02:30:00+0800", "30 2 * * *", "2026-10-26T02:30:00+0800"},
      // midnight Shanghai is 16:00 UTC the day before
      {"Asia/Shanghai", "2026-12-31T15:59:59+0000", "0 0 1 1 *", "2027-01-01T00:00:00+0800"},
      {"Asia/Shanghai", "2026-12-31T16:00:00+0000", "0 0 1 1 *", "2028-01-01T00:00:00+0800"},
  });
}

TEST(CronNext, SaoPauloMidnightGap) {
  check_table({
      // robfig issue 157: DST began at midnight on 2018-11-04 (00:00 -03 became 01:00 -02);
      // robfig's "0 0 9 10 * ?" and "0 0 9 22 * ?" in five fields
      {"America/Sao_Paulo", "2018-10-17T05:00:00-0400", "0 9 10 * *",
       "2018-11-10T09:00:00-0200"},
      {"America/Sao_Paulo", "2018-02-14T05:00:00-0500", "0 9 22 * *",
       "2018-02-22T09:00:00-0300"},
      // a midnight job skips the day without a midnight
      {"America/Sao_Paulo", "2018-11-03T12:00:00-0300", "0 0 * * *",
       "2018-11-05T00:00:00-0200"},
      // the day loop walking across it keeps to midnight
      {"America/Sao_Paulo", "2018-11-02T12:00:00-0300", "0 0 * * 1",
       "2018-11-05T00:00:00-0200"},
      {"America/Sao_Paulo", "2018-11-03T12:00:00-0300", "0 1 * * *",
       "2018-11-04T01:00:00-0200"},
  });
}

TEST(CronNext, LordHoweHalfHourDst) {
  check_table({
      // 2012-10-07 02:00 +1030 became 02:30 +11: 02:15 does not exist, 02:45 does
      {"Australia/Lord_Howe", "2012-10-06T12:00:00+1030", "15 2 * * *",
       "2012-10-08T02:15:00+1100"},
      {"Australia/Lord_Howe", "2012-10-06T12:00:00+1030", "45 2 * * *",
       "2012-10-07T02:45:00+1100"},
      {"Australia/Lord_Howe", "2012-10-07T01:00:00+1030", "0 * * * *",
       "2012-10-07T03:00:00+1100"},
      // 2013-04-07 02:00 +11 became 01:30 +1030: 01:45 happens twice, 01:00 once
      {"Australia/Lord_Howe", "2013-04-07T00:00:00+1100", "45 1 * * *",
       "2013-04-07T01:45:00+1100"},
      {"Australia/Lord_Howe", "2013-04-07T01:45:00+1100", "45 1 * * *",
       "2013-04-07T01:45:00+1030"},
      {"Australia/Lord_Howe", "2013-04-07T01:45:00+1030", "45 1 * * *",
       "2013-04-08T01:45:00+1030"},
      {"Australia/Lord_Howe", "2013-04-07T01:00:00+1100", "0 1 * * *",
       "2013-04-08T01:00:00+1030"},
  });
}

// Where robfig's Next would never return, next() says "no time".
TEST(CronNext, SkippedCalendarDayGivesNoTimeInsteadOfHanging) {
  check_table({
      // Pacific/Apia went from 2011-12-29 23:59:59 -10 straight to 2011-12-31 00:00 +14
      {"Pacific/Apia", "2011-12-29T12:00:00-1000", "0 12 * * 6", "never"},
      {"Pacific/Kiritimati", "1994-12-30T12:00:00-1000", "0 0 1 * 1", "never"},
      // schedules whose day matches on the way are unaffected
      {"Pacific/Apia", "2011-12-29T12:00:00-1000", "0 12 * * *", "2011-12-31T12:00:00+1400"},
  });
}

// Chaining next() over a year: hourly in New York fires once per real hour (no 02:00 in
// March, two 01:00s in November), a 02:30 daily job in Berlin fires 365 - 1 + 1 times.
TEST(CronNext, ChainsOverAWholeYear) {
  {
    const date::time_zone& ny = zone("America/New_York");
    CronSchedule hourly = must_parse("0 * * * *");
    sys_seconds t = at("2026-01-01T00:00:00-0500");
    const sys_seconds end = at("2027-01-01T00:00:00-0500");
    int fires = 0;
    for (;;) {
      auto n = hourly.next(t, ny);
      ASSERT_TRUE(n.has_value());
      if (*n >= end) break;
      ASSERT_EQ(*n - t, seconds{3600}) << show(t, ny);
      t = *n;
      ++fires;
    }
    EXPECT_EQ(fires, 365 * 24 - 1);  // the last fire is `end` itself
  }
  {
    const date::time_zone& berlin = zone("Europe/Berlin");
    CronSchedule daily = must_parse("30 2 * * *");
    sys_seconds t = at("2026-01-01T00:00:00+0100");
    const sys_seconds end = at("2027-01-01T00:00:00+0100");
    int fires = 0;
    for (;;) {
      auto n = daily.next(t, berlin);
      ASSERT_TRUE(n.has_value());
      ASSERT_GT(*n, t);
      if (*n >= end) break;
      t = *n;
      ++fires;
    }
    EXPECT_EQ(fires, 365);
  }
}

TEST(CronNext, OutOfRangeInstantsGiveNoTime) {
  const CronSchedule s = must_parse("* * * * *");
  const date::time_zone& utc = zone("UTC");
  EXPECT_FALSE(s.next(sys_seconds{seconds{std::numeric_limits<std::int64_t>::max()}}, utc));
  EXPECT_FALSE(s.next(sys_seconds{seconds{std::numeric_limits<std::int64_t>::min()}}, utc));
  EXPECT_EQ(show(s.next(at("9999-12-31T23:58:00+0000"), utc), utc), "9999-12-31T23:59:00+0000");
  EXPECT_EQ(show(s.next(at("0001-01-01T00:00:00+0000"), utc), utc), "0001-01-01T00:01:00+0000");
}

// ---------------------------------------------------------------------------------------
// Parsing.
// ---------------------------------------------------------------------------------------

constexpr std::uint64_t kStar = std::uint64_t{1} << 63;

std::uint64_t bits(std::initializer_list<unsigned> values) {
  std::uint64_t b = 0;
  for (unsigned v : values) b |= std::uint64_t{1} << v;
  return b;
}

std::uint64_t span(unsigned lo, unsigned hi) {
  std::uint64_t b = 0;
  for (unsigned v = lo; v <= hi; ++v) b |= std::uint64_t{1} << v;
  return b;
}

TEST(CronParse, FieldBits) {
  auto s = must_parse("* ? */1 */2 1-5");
  EXPECT_EQ(s.text(), "* ? */1 */2 1-5");
  EXPECT_EQ(s.fields().minute, span(0, 59) | kStar);
  EXPECT_EQ(s.fields().hour, span(0, 23) | kStar);
  EXPECT_EQ(s.fields().day_of_month, span(1, 31) | kStar);
  EXPECT_EQ(s.fields().month, bits({1, 3, 5, 7, 9, 11}));
  EXPECT_EQ(s.fields().day_of_week, span(1, 5));

  s = must_parse("5-7/2,1 0/6 31/1 JaN,dEc MON/2");
  EXPECT_EQ(s.fields().minute, bits({1, 5, 7}));
  EXPECT_EQ(s.fields().hour, bits({0, 6, 12, 18}));
  EXPECT_EQ(s.fields().day_of_month, bits({31}));
  EXPECT_EQ(s.fields().month, bits({1, 12}));
  EXPECT_EQ(s.fields().day_of_week, bits({1, 3, 5}));

  s = must_parse("59 23 1-31 1-12 0-6");
  EXPECT_EQ(s.fields().day_of_month, span(1, 31));  // a full range is not a star
  EXPECT_EQ(s.fields().day_of_week, span(0, 6));

  s = must_parse("*/60 ?/24 */31 */12 */7");  // steps as large as the field
  EXPECT_EQ(s.fields().minute, bits({0}));
  EXPECT_EQ(s.fields().hour, bits({0}));
  EXPECT_EQ(s.fields().day_of_month, bits({1}));
  EXPECT_EQ(s.fields().month, bits({1}));
  EXPECT_EQ(s.fields().day_of_week, bits({0}));

  s = must_parse(", 1,,2 ,3, * *");
  EXPECT_EQ(s.fields().minute, 0U);
  EXPECT_EQ(s.fields().hour, bits({1, 2}));
  EXPECT_EQ(s.fields().day_of_month, bits({3}));
}

TEST(CronParse, Descriptors) {
  const std::uint64_t all_dom = span(1, 31) | kStar, all_month = span(1, 12) | kStar,
                      all_dow = span(0, 6) | kStar;
  struct D {
    const char* text;
    CronSchedule::Fields want;
  };
  for (const D& d : {
           D{"@yearly", {bits({0}), bits({0}), bits({1}), bits({1}), all_dow}},
           D{"@annually", {bits({0}), bits({0}), bits({1}), bits({1}), all_dow}},
           D{"@monthly", {bits({0}), bits({0}), bits({1}), all_month, all_dow}},
           D{"@weekly", {bits({0}), bits({0}), all_dom, all_month, bits({0})}},
           D{"@daily", {bits({0}), bits({0}), all_dom, all_month, all_dow}},
           D{"@midnight", {bits({0}), bits({0}), all_dom, all_month, all_dow}},
           D{"@hourly", {bits({0}), span(0, 23) | kStar, all_dom, all_month, all_dow}},
       }) {
    SCOPED_TRACE(d.text);
    auto s = must_parse(d.text);
    EXPECT_EQ(s.fields().minute, d.want.minute);
    EXPECT_EQ(s.fields().hour, d.want.hour);
    EXPECT_EQ(s.fields().day_of_month, d.want.day_of_month);
    EXPECT_EQ(s.fields().month, d.want.month);
    EXPECT_EQ(s.fields().day_of_week, d.want.day_of_week);
    EXPECT_EQ(s.text(), d.text);
  }
}

TEST(CronParse, Errors) {
  struct E {
    const char* expr;
    const char* message;
  };
  for (const E& e : {
           E{"", "empty expression"},
           E{"   ", "expected exactly 5 fields, found 0"},
           E{"* * * *", "expected exactly 5 fields, found 4"},
           E{"* * * * * *", "expected exactly 5 fields, found 6"},
           E{"0 0 0 1 * *", "expected exactly 5 fields, found 6"},
           E{"xyz", "expected exactly 5 fields, found 1"},
           E{" @daily", "expected exactly 5 fields, found 1"},
           E{"61 * * * *", "minute: end of range (61) above maximum (59)"},
           E{"60 0 * * *", "minute: end of range (60) above maximum (59)"},
           E{"0 60 * * *", "hour: end of range (60) above maximum (23)"},
           E{"* 24 * * *", "hour: end of range (24) above maximum (23)"},
           E{"* * 0 * *", "day-of-month: beginning of range (0) below minimum (1)"},
           E{"* * 32 * *", "day-of-month: end of range (32) above maximum (31)"},
           E{"* * 0-5 * *", "day-of-month: beginning of range (0) below minimum (1)"},
           E{"* * * 0 *", "month: beginning of range (0) below minimum (1)"},
           E{"* * * 13 *", "month: end of range (13) above maximum (12)"},
           E{"* * * * 7", "day-of-week: end of range (7) above maximum (6)"},
           E{"* * * * 1-7", "day-of-week: end of range (7) above maximum (6)"},
           E{"5-3 * * * *", "minute: beginning of range (5) beyond end of range (3)"},
           E{"70/2 * * * *", "minute: beginning of range (70) beyond end of range (59)"},
           E{"* * * DEC-JAN *", "month: beginning of range (12) beyond end of range (1)"},
           E{"*/0 * * * *", "minute: step of range should be a positive number: */0"},
           E{"15/0 * * * *", "minute: step of range should be a positive number: 15/0"},
           E{"1-2-3 * * * *", "minute: too many hyphens: 1-2-3"},
           E{"5--5 * * * *", "minute: too many hyphens: 5--5"},
           E{"*/2/3 * * * *", "minute: too many slashes: */2/3"},
           E{"*//2 * * * *", "minute: too many slashes: *//2"},
           E{"x * * * *", "minute: failed to parse int from x: invalid syntax"},
           E{"* 5 j * *", "day-of-month: failed to parse int from j: invalid syntax"},
           E{"* * * * XYZ", "day-of-week: failed to parse int from XYZ: invalid syntax"},
           E{"* * * JANUARY *", "month: failed to parse int from JANUARY: invalid syntax"},
           E{"* * * jan-x *", "month: failed to parse int from x: invalid syntax"},
           E{"* * * * MON/TUE", "day-of-week: failed to parse int from TUE: invalid syntax"},
           E{"1- * * * *", "minute: failed to parse int from : invalid syntax"},
           E{"1.5 * * * *", "minute: failed to parse int from 1.5: invalid syntax"},
           E{"*/-12 * * * *", "minute: negative number (-12) not allowed: -12"},
           E{"99999999999999999999 * * * *",
             "minute: failed to parse int from 99999999999999999999: value out of range"},
           E{"9223372036854775808 * * * *",
             "minute: failed to parse int from 9223372036854775808: value out of range"},
           E{"9223372036854775807 * * * *",
             "minute: end of range (9223372036854775807) above maximum (59)"},
           E{"0 0 1 1 * extra", "expected exactly 5 fields, found 6"},
           // the first bad field is the one reported
           E{"61 24 * * *", "minute: end of range (61) above maximum (59)"},
           // deliberate rejections
           E{"*-5 * * * *", "minute: \"*-\" ranges are not supported: *-5"},
           E{"* * ?-3 * *", "day-of-month: \"?-\" ranges are not supported: ?-3"},
           E{"TZ=UTC 0 * * * *",
             "TZ= and CRON_TZ= prefixes are not supported; the policy sets the time zone"},
           E{"CRON_TZ=Asia/Shanghai 0 8 * * *",
             "TZ= and CRON_TZ= prefixes are not supported; the policy sets the time zone"},
           E{"@every 1h",
             "@every is not supported; a fixed interval is not a calendar window"},
           E{"@every",
             "@every is not supported; a fixed interval is not a calendar window"},
           // descriptors are exact
           E{"@DAILY", "unrecognized descriptor: @DAILY"},
           E{"@daily ", "unrecognized descriptor: @daily "},
           E{"@reboot", "unrecognized descriptor: @reboot"},
           E{"@", "unrecognized descriptor: @"},
       }) {
    auto s = CronSchedule::parse(e.expr);
    ASSERT_FALSE(s.ok()) << '"' << e.expr << "\" was accepted";
    EXPECT_EQ(s.error(), "cron \"" + std::string(e.expr) + "\": " + e.message);
  }
}

// ---------------------------------------------------------------------------------------
// Property: in zones with a fixed offset, next() is the first matching minute found by a
// plain scan. The expressions come with the bit sets they should parse to, built
// independently of the parser.
// ---------------------------------------------------------------------------------------

struct Generated {
  std::string text;
  CronSchedule::Fields want;
};

class ExpressionGenerator {
 public:
  explicit ExpressionGenerator(std::uint64_t seed) : rng_(seed) {}

  Generated next() {
    Generated g;
    if (below(20) == 0) {
      static constexpr const char* kDescriptors[] = {"@yearly", "@monthly", "@weekly",
                                                     "@daily",  "@hourly"};
      g.text = kDescriptors[below(5)];
      g.want = must_parse(g.text).fields();  // checked by CronParse.Descriptors
      return g;
    }
    static constexpr const char* kMonths[] = {"jan", "FEB", "Mar", "apr", "MAY", "jun",
                                              "Jul", "aug", "SEP", "oct", "Nov", "DEC"};
    static constexpr const char* kDays[] = {"SUN", "mon", "Tue", "wed", "THU", "fri", "Sat"};
    g.text = field(0, 59, nullptr, g.want.minute) + ' ' + field(0, 23, nullptr, g.want.hour) +
             ' ' + field(1, 31, nullptr, g.want.day_of_month) + ' ' +
             field(1, 12, kMonths, g.want.month) + ' ' + field(0, 6, kDays, g.want.day_of_week);
    return g;
  }

  std::uint64_t below(std::uint64_t n) { return rng_() % n; }  // deterministic everywhere

 private:
  std::string value(unsigned v, unsigned min, const char* const* names) {
    if (names != nullptr && below(3) == 0) return names[v - min];
    return std::to_string(v);
  }

  std::string element(unsigned min, unsigned max, const char* const* names,
                      std::uint64_t& bits) {
    auto pick = [&] { return min + static_cast<unsigned>(below(max - min + 1)); };
    auto set = [&](unsigned lo, unsigned hi, unsigned step) {
      for (unsigned v = lo; v <= hi; v += step) bits |= std::uint64_t{1} << v;
    };
    switch (below(8)) {
      case 0: {  // *
        set(min, max, 1);
        bits |= kStar;
        return below(2) == 0 ? "*" : "?";
      }
      case 1: {  // */n
        unsigned step = 1 + static_cast<unsigned>(below(max - min + 2));
        set(min, max, step);
        if (step == 1) bits |= kStar;
        return "*/" + std::to_string(step);
      }
      case 2: {  // a-b
        unsigned a = pick(), b = pick();
        if (a > b) std::swap(a, b);
        set(a, b, 1);
        return value(a, min, names) + '-' + value(b, min, names);
      }
      case 3: {  // a-b/n
        unsigned a = pick(), b = pick();
        if (a > b) std::swap(a, b);
        unsigned step = 1 + static_cast<unsigned>(below(max - min + 1));
        set(a, b, step);
        return value(a, min, names) + '-' + value(b, min, names) + '/' + std::to_string(step);
      }
      case 4: {  // a/n
        unsigned a = pick();
        unsigned step = 1 + static_cast<unsigned>(below(max - min + 1));
        set(a, max, step);
        return value(a, min, names) + '/' + std::to_string(step);
      }
      default: {  // a
        unsigned a = pick();
        set(a, a, 1);
        return value(a, min, names);
      }
    }
  }

  std::string field(unsigned min, unsigned max, const char* const* names, std::uint64_t& bits) {
    std::string text = element(min, max, names, bits);
    for (std::uint64_t extra = below(4) == 0 ? 1 + below(3) : 0; extra > 0; --extra) {
      text += ',' + element(min, max, names, bits);
    }
    return text;
  }

  std::mt19937_64 rng_;
};

// Scans local minutes (at a fixed UTC offset) from just after `after`, skipping whole
// months, days and hours that cannot match, up to the end of the fifth year after the
// start's year.
std::optional<sys_seconds> scan(const CronSchedule::Fields& f, sys_seconds after,
                                seconds offset) {
  using date::days;
  auto has = [](std::uint64_t bits, unsigned v) { return ((bits >> v) & 1U) != 0; };
  const date::local_seconds start{(after + offset).time_since_epoch()};
  date::local_seconds t = date::floor<std::chrono::minutes>(start) + std::chrono::minutes{1};
  const int limit = int(date::year_month_day{date::floor<days>(start + seconds{1})}.year()) + 5;
  for (;;) {
    const auto day = date::floor<days>(t);
    const date::year_month_day ymd{day};
    if (int(ymd.year()) > limit) return std::nullopt;
    const auto time = date::make_time(t - day);
    if (!has(f.month, unsigned(ymd.month()))) {
      t = date::local_days{(ymd.year() / ymd.month() / 1) + date::months{1}};
      continue;
    }
    const bool dom = has(f.day_of_month, unsigned(ymd.day()));
    const bool dow = has(f.day_of_week, date::weekday{day}.c_encoding());
    const bool star = ((f.day_of_month | f.day_of_week) & kStar) != 0;
    if (!(star ? dom && dow : dom || dow)) {
      t = day + days{1};
      continue;
    }
    if (!has(f.hour, unsigned(time.hours().count()))) {
      t = date::floor<std::chrono::hours>(t) + std::chrono::hours{1};
      continue;
    }
    if (!has(f.minute, unsigned(time.minutes().count()))) {
      t += std::chrono::minutes{1};
      continue;
    }
    return sys_seconds{(t - offset).time_since_epoch()};
  }
}

void check_against_scan(std::string_view zone_name, std::uint64_t seed, int count,
                        sys_seconds from, sys_seconds to) {
  const date::time_zone& z = zone(zone_name);
  ExpressionGenerator gen(seed);
  const auto span_s = static_cast<std::uint64_t>((to - from).count());
  int never = 0;
  for (int i = 0; i < count; ++i) {
    Generated g = gen.next();
    const sys_seconds after = from + seconds{static_cast<std::int64_t>(gen.below(span_s))};
    SCOPED_TRACE("\"" + g.text + "\" after " + show(after, z));
    auto s = CronSchedule::parse(g.text);
    ASSERT_TRUE(s.ok()) << s.error();
    ASSERT_EQ(s->fields().minute, g.want.minute);
    ASSERT_EQ(s->fields().hour, g.want.hour);
    ASSERT_EQ(s->fields().day_of_month, g.want.day_of_month);
    ASSERT_EQ(s->fields().month, g.want.month);
    ASSERT_EQ(s->fields().day_of_week, g.want.day_of_week);
    const seconds offset = z.get_info(after).offset;
    const auto want = scan(g.want, after, offset);
    ASSERT_EQ(show(s->next(after, z), z), show(want, z));
    never += want ? 0 : 1;
  }
  // The generator should mostly produce schedules that fire.
  EXPECT_LT(never, count / 10);
}

TEST(CronProperty, MatchesMinuteScanInUtc) {
  check_against_scan("UTC", 20260501, 3000, at("1995-01-01T00:00:00+0000"),
                     at("2035-01-01T00:00:00+0000"));
}

TEST(CronProperty, MatchesMinuteScanInShanghai) {
  // Asia/Shanghai has kept +08:00 since 1991.
  check_against_scan("Asia/Shanghai", 86, 1000, at("1995-01-01T00:00:00+0800"),
                     at("2030-01-01T00:00:00+0800"));
}

}  // namespace
}  // namespace gpubank
