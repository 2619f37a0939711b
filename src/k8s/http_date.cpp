#include "k8s/http_date.hpp"

#include <array>
#include <cstdint>
#include <limits>
#include <string_view>

namespace gpubank::k8s {

namespace {

using namespace std::chrono;

constexpr std::array<std::string_view, 7> kDays{"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"};
constexpr std::array<std::string_view, 7> kLongDays{"Monday", "Tuesday", "Wednesday", "Thursday",
                                                    "Friday", "Saturday", "Sunday"};
constexpr std::array<std::string_view, 12> kMonths{"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                   "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

// A cursor over the value; every read either matches and advances or fails.
struct Cursor {
  std::string_view s;

  bool literal(std::string_view text) {
    if (!s.starts_with(text)) return false;
    s.remove_prefix(text.size());
    return true;
  }
  template <std::size_t N>
  bool one_of(const std::array<std::string_view, N>& names, int& index) {
    for (std::size_t i = 0; i < N; ++i) {
      if (s.starts_with(names[i])) {
        s.remove_prefix(names[i].size());
        index = static_cast<int>(i);
        return true;
      }
    }
    return false;
  }
  // Exactly `n` digits.
  bool digits(int n, int& out) {
    if (s.size() < static_cast<std::size_t>(n)) return false;
    int v = 0;
    for (int i = 0; i < n; ++i) {
      const char c = s[static_cast<std::size_t>(i)];
      if (c < '0' || c > '9') return false;
      v = v * 10 + (c - '0');
    }
    s.remove_prefix(static_cast<std::size_t>(n));
    out = v;
    return true;
  }
};

// hour ":" minute ":" second, in range (a leap second's 60 allowed).
bool time_of_day(Cursor& c, int& h, int& m, int& sec) {
  return c.digits(2, h) && c.literal(":") && c.digits(2, m) && c.literal(":") && c.digits(2, sec) && h <= 23 &&
         m <= 59 && sec <= 60;
}

// In whole seconds: years up to 9999 fit, where system_clock's nanoseconds end in 2262.
std::optional<sys_seconds> make_time(int year, int month, int day, int h, int m, int sec) {
  const year_month_day date{std::chrono::year(year), std::chrono::month(static_cast<unsigned>(month)),
                            std::chrono::day(static_cast<unsigned>(day))};
  if (!date.ok()) return std::nullopt;
  return sys_days(date) + hours(h) + minutes(m) + seconds(sec);
}

// "Sun, 06 Nov 1994 08:49:37 GMT"
std::optional<sys_seconds> imf_fixdate(Cursor c) {
  int wd = 0, day = 0, month = 0, year = 0, h = 0, m = 0, sec = 0;
  if (!(c.one_of(kDays, wd) && c.literal(", ") && c.digits(2, day) && c.literal(" ") && c.one_of(kMonths, month) &&
        c.literal(" ") && c.digits(4, year) && c.literal(" ") && time_of_day(c, h, m, sec) && c.literal(" GMT") &&
        c.s.empty())) {
    return std::nullopt;
  }
  return make_time(year, month + 1, day, h, m, sec);
}

// "Sunday, 06-Nov-94 08:49:37 GMT"
std::optional<sys_seconds> rfc850(Cursor c, system_clock::time_point now) {
  int wd = 0, day = 0, month = 0, yy = 0, h = 0, m = 0, sec = 0;
  if (!(c.one_of(kLongDays, wd) && c.literal(", ") && c.digits(2, day) && c.literal("-") && c.one_of(kMonths, month) &&
        c.literal("-") && c.digits(2, yy) && c.literal(" ") && time_of_day(c, h, m, sec) && c.literal(" GMT") &&
        c.s.empty())) {
    return std::nullopt;
  }
  // RFC 9110 5.6.7: a two-digit year more than 50 years in the future is the most recent
  // past year with those digits. So the year lands in (this year - 50, this year + 50]:
  // "05" read in 2060 is 2105, not 2005. Years, not instants, are what the rule compares.
  const int this_year = static_cast<int>(year_month_day(floor<days>(now)).year());
  int year = this_year - this_year % 100 + yy;
  if (year > this_year + 50) {
    year -= 100;
  } else if (year <= this_year - 50) {
    year += 100;
  }
  return make_time(year, month + 1, day, h, m, sec);
}

// "Sun Nov  6 08:49:37 1994"
std::optional<sys_seconds> asctime_date(Cursor c) {
  int wd = 0, day = 0, month = 0, year = 0, h = 0, m = 0, sec = 0;
  if (!(c.one_of(kDays, wd) && c.literal(" ") && c.one_of(kMonths, month) && c.literal(" "))) return std::nullopt;
  if (c.literal(" ")) {
    if (!c.digits(1, day)) return std::nullopt;
  } else if (!c.digits(2, day)) {
    return std::nullopt;
  }
  if (!(c.literal(" ") && time_of_day(c, h, m, sec) && c.literal(" ") && c.digits(4, year) && c.s.empty())) {
    return std::nullopt;
  }
  return make_time(year, month + 1, day, h, m, sec);
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::optional<sys_seconds> http_date_seconds(std::string_view text, system_clock::time_point now) {
  if (auto t = imf_fixdate(Cursor{text})) return t;
  if (auto t = rfc850(Cursor{text}, now)) return t;
  return asctime_date(Cursor{text});
}

}  // namespace

std::optional<system_clock::time_point> parse_http_date(std::string_view text, system_clock::time_point now) {
  const auto t = http_date_seconds(text, now);
  if (!t) return std::nullopt;
  constexpr auto kMax = floor<seconds>(system_clock::duration::max()) - seconds(1);
  constexpr auto kMin = ceil<seconds>(system_clock::duration::min()) + seconds(1);
  if (t->time_since_epoch() > kMax || t->time_since_epoch() < kMin) return std::nullopt;
  return time_point_cast<system_clock::duration>(*t);
}

std::optional<milliseconds> parse_retry_after(std::string_view value, system_clock::time_point now) {
  value = trim(value);
  if (value.empty()) return std::nullopt;
  if (value.find_first_not_of("0123456789") == std::string_view::npos) {
    // delay-seconds: 1*DIGIT. A value past what fits is a very long wait, not an error (the
    // caller caps it).
    constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max() / 1000 / 10;
    std::int64_t seconds = 0;
    for (const char c : value) {
      seconds = seconds * 10 + (c - '0');
      if (seconds > kMax) return duration_cast<milliseconds>(std::chrono::seconds(kMax));
    }
    return duration_cast<milliseconds>(std::chrono::seconds(seconds));
  }
  const auto date = http_date_seconds(value, now);
  if (!date) return std::nullopt;
  // ceil(date - now) in milliseconds without nanoseconds (a date in 9999 overflows them):
  // the date is whole seconds, so it is date - floor(now) to the millisecond.
  const milliseconds wait = duration_cast<milliseconds>(date->time_since_epoch()) -
                            floor<milliseconds>(now.time_since_epoch());
  return wait > milliseconds(0) ? wait : milliseconds(0);
}

}  // namespace gpubank::k8s
