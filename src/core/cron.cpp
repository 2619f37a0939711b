#include "core/cron.hpp"

#include <array>
#include <cstddef>
#include <initializer_list>
#include <limits>
#include <utility>

namespace gpubank {

namespace {

// The top bit of a field marks "*" or "?" (robfig's starBit).
constexpr std::uint64_t kStarBit = std::uint64_t{1} << 63;

// Appending, rather than chaining operator+, keeps GCC 12's -Wrestrict false positive on
// `"literal" + std::string` quiet in optimised builds.
std::string concat(std::initializer_list<std::string_view> parts) {
  std::size_t size = 0;
  for (std::string_view p : parts) size += p.size();
  std::string out;
  out.reserve(size);
  for (std::string_view p : parts) out += p;
  return out;
}

// ---------------------------------------------------------------------------------------
// Parsing
// ---------------------------------------------------------------------------------------

struct FieldBounds {
  const char* label;
  std::uint64_t min, max;
  // Names for min, min+1, ... (empty where the field has none).
  const std::string_view* names;
  std::size_t name_count;
};

constexpr std::array<std::string_view, 12> kMonthNames = {
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"};
constexpr std::array<std::string_view, 7> kWeekdayNames = {"sun", "mon", "tue", "wed",
                                                           "thu", "fri", "sat"};

constexpr FieldBounds kMinute{"minute", 0, 59, nullptr, 0};
constexpr FieldBounds kHour{"hour", 0, 23, nullptr, 0};
constexpr FieldBounds kDayOfMonth{"day-of-month", 1, 31, nullptr, 0};
constexpr FieldBounds kMonth{"month", 1, 12, kMonthNames.data(), kMonthNames.size()};
constexpr FieldBounds kDayOfWeek{"day-of-week", 0, 6, kWeekdayNames.data(),
                                 kWeekdayNames.size()};

bool ascii_iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    char c = a[i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c != b[i]) return false;
  }
  return true;
}

// Splits `s` on `sep` keeping empty pieces, like Go's strings.Split.
template <class F>
void split_keep_empty(std::string_view s, char sep, F&& piece) {
  std::size_t start = 0;
  for (;;) {
    std::size_t at = s.find(sep, start);
    if (at == std::string_view::npos) {
      piece(s.substr(start));
      return;
    }
    piece(s.substr(start, at - start));
    start = at + 1;
  }
}

std::size_t count_char(std::string_view s, char c) {
  std::size_t n = 0;
  for (char x : s) n += x == c ? 1 : 0;
  return n;
}

// robfig's mustParseInt: Go's strconv.Atoi (optional sign, decimal digits, int64 range),
// then negative values refused.
Expected<std::uint64_t> parse_uint(std::string_view text) {
  auto fail = [&](const char* why) {
    return Unexpected{concat({"failed to parse int from ", text, ": ", why})};
  };
  std::string_view digits = text;
  bool negative = false;
  if (!digits.empty() && (digits.front() == '+' || digits.front() == '-')) {
    negative = digits.front() == '-';
    digits.remove_prefix(1);
  }
  if (digits.empty()) return fail("invalid syntax");
  // Go's ParseUint stops at the first bad digit or at uint64 overflow, whichever comes
  // first; ParseInt then applies the int64 range.
  std::uint64_t value = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return fail("invalid syntax");
    auto d = static_cast<std::uint64_t>(c - '0');
    if (value > (std::numeric_limits<std::uint64_t>::max() - d) / 10) {
      return fail("value out of range");
    }
    value = value * 10 + d;
  }
  const std::uint64_t int64_magnitude = std::uint64_t{1} << 63;
  if (negative ? value > int64_magnitude : value >= int64_magnitude) {
    return fail("value out of range");
  }
  if (negative && value != 0) {
    // Print the value as Go does ("negative number (-12) not allowed: -12").
    return Unexpected{
        concat({"negative number (-", std::to_string(value), ") not allowed: ", text})};
  }
  return value;
}

// robfig's parseIntOrName: names first (case-insensitively), then a number.
Expected<std::uint64_t> parse_value(std::string_view text, const FieldBounds& b) {
  for (std::size_t i = 0; i < b.name_count; ++i) {
    if (ascii_iequals(text, b.names[i])) return b.min + i;
  }
  return parse_uint(text);
}

std::uint64_t bits_between(std::uint64_t lo, std::uint64_t hi, std::uint64_t step) {
  std::uint64_t bits = 0;
  // hi <= 59, so `i += step` cannot wrap even for step near 2^63.
  for (std::uint64_t i = lo; i <= hi; i += step) bits |= std::uint64_t{1} << i;
  return bits;
}

// One element of a comma-separated list: robfig's getRange, checks in robfig's order so the
// first error reported is the same one.
Expected<std::uint64_t> parse_range(std::string_view expr, const FieldBounds& b) {
  const std::size_t slash = expr.find('/');
  const std::string_view range = expr.substr(0, slash);
  const std::size_t hyphens = count_char(range, '-');
  const std::string_view low = range.substr(0, range.find('-'));

  std::uint64_t start = 0, end = 0, step = 1, extra = 0;
  if (low == "*" || low == "?") {
    // robfig silently ignores anything after "*-"; refused here (see cron.hpp).
    if (hyphens > 0) {
      return Unexpected{concat({"\"", low, "-\" ranges are not supported: ", expr})};
    }
    start = b.min;
    end = b.max;
    extra = kStarBit;
  } else {
    auto s = parse_value(low, b);
    if (!s) return Unexpected{s.error()};
    start = end = *s;
    if (hyphens == 1) {
      auto e = parse_value(range.substr(low.size() + 1), b);
      if (!e) return Unexpected{e.error()};
      end = *e;
    } else if (hyphens > 1) {
      return Unexpected{concat({"too many hyphens: ", expr})};
    }
  }

  if (slash != std::string_view::npos) {
    const std::string_view step_text = expr.substr(slash + 1);
    if (step_text.find('/') != std::string_view::npos) {
      return Unexpected{concat({"too many slashes: ", expr})};
    }
    auto st = parse_uint(step_text);
    if (!st) return Unexpected{st.error()};
    step = *st;
    if (hyphens == 0) end = b.max;  // "a/n" means "a-max/n"
    if (step > 1) extra = 0;        // "*/2" is a restriction, "*/1" still counts as "*"
  }

  if (start < b.min) {
    return Unexpected{concat({"beginning of range (", std::to_string(start),
                              ") below minimum (", std::to_string(b.min), ")"})};
  }
  if (end > b.max) {
    return Unexpected{concat({"end of range (", std::to_string(end), ") above maximum (",
                              std::to_string(b.max), ")"})};
  }
  if (start > end) {
    return Unexpected{concat({"beginning of range (", std::to_string(start),
                              ") beyond end of range (", std::to_string(end), ")"})};
  }
  if (step == 0) {
    return Unexpected{concat({"step of range should be a positive number: ", expr})};
  }
  return bits_between(start, end, step) | extra;
}

// robfig's getField: empty list elements are dropped (Go's strings.FieldsFunc), so "1,,2"
// is "1,2" and "," matches nothing.
Expected<std::uint64_t> parse_field(std::string_view field, const FieldBounds& b) {
  std::uint64_t bits = 0;
  std::string error;
  split_keep_empty(field, ',', [&](std::string_view expr) {
    if (!error.empty() || expr.empty()) return;
    auto r = parse_range(expr, b);
    if (r) {
      bits |= *r;
    } else {
      error = r.error();
    }
  });
  if (!error.empty()) return Unexpected{std::move(error)};
  return bits;
}

// Length of the Unicode white space (Go's unicode.IsSpace, which strings.Fields splits on)
// starting at s[i], in bytes; 0 if none.
std::size_t space_at(std::string_view s, std::size_t i) {
  switch (s[i]) {
    case ' ': case '\t': case '\n': case '\v': case '\f': case '\r':
      return 1;
    default:
      break;
  }
  static constexpr std::array<std::string_view, 19> kWide = {
      "\xC2\x85",     "\xC2\xA0",     "\xE1\x9A\x80", "\xE2\x80\x80", "\xE2\x80\x81",
      "\xE2\x80\x82", "\xE2\x80\x83", "\xE2\x80\x84", "\xE2\x80\x85", "\xE2\x80\x86",
      "\xE2\x80\x87", "\xE2\x80\x88", "\xE2\x80\x89", "\xE2\x80\x8A", "\xE2\x80\xA8",
      "\xE2\x80\xA9", "\xE2\x80\xAF", "\xE2\x81\x9F", "\xE3\x80\x80"};
  const std::string_view rest = s.substr(i);
  for (std::string_view w : kWide) {
    if (rest.starts_with(w)) return w.size();
  }
  return 0;
}

std::string quoted(std::string_view expression) {
  return concat({"cron \"", expression, "\": "});
}

std::uint64_t all_of(const FieldBounds& b) { return bits_between(b.min, b.max, 1) | kStarBit; }

// ---------------------------------------------------------------------------------------
// Go's time package, the parts SpecSchedule.Next uses, over date/tz. Instants are Unix
// seconds; a GoTime carries the local fields Go's t.Year(), t.Month(), ... would report.
// ---------------------------------------------------------------------------------------

struct ZonePeriod {
  std::int64_t begin = 1, end = 0;  // [begin, end) in Unix seconds; empty until filled
  std::int64_t offset = 0;          // seconds east of UTC
};

struct GoTime {
  std::int64_t unix = 0;
  int year = 0;
  unsigned month = 0, day = 0, hour = 0, minute = 0, second = 0, weekday = 0;
};

std::int64_t floor_div(std::int64_t a, std::int64_t b) {
  std::int64_t q = a / b;
  return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

// Go's norm: moves whole multiples of `base` from lo into hi so 0 <= lo < base.
void go_norm(std::int64_t& hi, std::int64_t& lo, std::int64_t base) {
  std::int64_t carry = floor_div(lo, base);
  hi += carry;
  lo -= carry * base;
}

class GoClock {
 public:
  explicit GoClock(const date::time_zone& zone) : zone_(zone) {}

  // The zone period containing `unix` (Go's loc.lookup); one cached period avoids
  // re-searching date's transition table on every step of a walk.
  const ZonePeriod& lookup(std::int64_t unix) {
    if (unix < cached_.begin || unix >= cached_.end) {
      const date::sys_info info = zone_.get_info(date::sys_seconds{std::chrono::seconds{unix}});
      cached_.begin = info.begin.time_since_epoch().count();
      cached_.end = info.end.time_since_epoch().count();
      cached_.offset = info.offset.count();
    }
    return cached_;
  }

  // t.In(loc): local fields from UTC plus the offset in force at that instant.
  GoTime at(std::int64_t unix) {
    GoTime t;
    t.unix = unix;
    const std::int64_t local = unix + lookup(unix).offset;
    const std::int64_t days = floor_div(local, 86400);
    const std::int64_t secs = local - days * 86400;
    const date::sys_days day{date::days{static_cast<int>(days)}};
    const date::year_month_day ymd{day};
    t.year = static_cast<int>(ymd.year());
    t.month = static_cast<unsigned>(ymd.month());
    t.day = static_cast<unsigned>(ymd.day());
    t.weekday = date::weekday{day}.c_encoding();
    t.hour = static_cast<unsigned>(secs / 3600);
    t.minute = static_cast<unsigned>(secs / 60 % 60);
    t.second = static_cast<unsigned>(secs % 60);
    return t;
  }

  // time.Date(year, month, day, hour, min, sec, 0, loc): fields out of range carry over
  // (month 13 is January of the next year, day 32 runs into the next month), then the
  // offset is chosen exactly as Go does, which decides what non-existent and repeated
  // local times become.
  GoTime make_date(std::int64_t year, std::int64_t month, std::int64_t day, std::int64_t hour,
                   std::int64_t min, std::int64_t sec) {
    std::int64_t m0 = month - 1;
    go_norm(year, m0, 12);
    go_norm(min, sec, 60);
    go_norm(hour, min, 60);
    go_norm(day, hour, 24);
    const date::sys_days first{date::year{static_cast<int>(year)} /
                               date::month{static_cast<unsigned>(m0 + 1)} / 1};
    std::int64_t unix = (first.time_since_epoch().count() + day - 1) * 86400 + hour * 3600 +
                        min * 60 + sec;
    // Go reads the wall clock as if it were UTC, takes that instant's offset, and only if
    // the corrected instant falls outside that offset's period looks the offset up again.
    const ZonePeriod guess = lookup(unix);
    std::int64_t offset = guess.offset;
    if (offset != 0) {
      const std::int64_t utc = unix - offset;
      if (utc < guess.begin || utc >= guess.end) offset = lookup(utc).offset;
      unix -= offset;
    }
    return at(unix);
  }

  // t.AddDate(years, months, days): time.Date on t's local fields.
  GoTime add_date(const GoTime& t, int years, int months, int days) {
    return make_date(std::int64_t{t.year} + years, std::int64_t{t.month} + months,
                     std::int64_t{t.day} + days, t.hour, t.minute, t.second);
  }

  // t.Add(d): absolute.
  GoTime add(const GoTime& t, std::int64_t seconds) { return at(t.unix + seconds); }

  // t.Truncate(d): absolute, on the UTC instant (Go measures from year 1, a whole number of
  // days before the Unix epoch, so flooring Unix seconds is the same).
  GoTime truncate(const GoTime& t, std::int64_t seconds) {
    return at(floor_div(t.unix, seconds) * seconds);
  }

 private:
  const date::time_zone& zone_;
  ZonePeriod cached_;
};

bool has(std::uint64_t bits, unsigned value) { return (bits >> value) & 1U; }

// robfig's hour, minute and second loops after their first pass' reset:
//   do { t = t.Add(unit); if (field(t) == 0) WRAP; } while (!bits[field(t)]);
// Returns true for WRAP. Inside one zone period the local field moves up by exactly one per
// step, so the steps to the next set bit or to the roll-over are taken at once; a step that
// would cross a transition is taken alone, as robfig takes it.
bool step_until(GoClock& go, GoTime& t, std::int64_t unit, unsigned modulus,
                std::uint64_t bits, unsigned GoTime::*field) {
  for (;;) {
    const unsigned v = t.*field;
    unsigned k = 1;
    while (v + k < modulus && !has(bits, v + k)) ++k;
    const std::int64_t target = t.unix + std::int64_t{k} * unit;
    t = target < go.lookup(t.unix).end ? go.at(target) : go.add(t, unit);
    if (t.*field == 0) return true;
    if (has(bits, t.*field)) return false;
  }
}

// robfig's dayMatches: with a "*" or "?" in either day field both must match, otherwise
// either may.
bool day_matches(const CronSchedule::Fields& f, const GoTime& t) {
  const bool dom = has(f.day_of_month, t.day);
  const bool dow = has(f.day_of_week, t.weekday);
  if ((f.day_of_month & kStarBit) != 0 || (f.day_of_week & kStarBit) != 0) return dom && dow;
  return dom || dow;
}

// The span of instants next() accepts: years 1 to 9999, so that five years of search stay
// inside date's calendar and every day count fits an int.
constexpr std::int64_t kMinUnix = -62135596800;  // 0001-01-01T00:00:00Z
constexpr std::int64_t kMaxUnix = 253402300799;  // 9999-12-31T23:59:59Z

}  // namespace

Expected<CronSchedule> CronSchedule::parse(std::string_view expression) {
  const std::string prefix = quoted(expression);
  if (expression.empty()) return Unexpected{concat({prefix, "empty expression"})};
  if (expression.starts_with("TZ=") || expression.starts_with("CRON_TZ=")) {
    return Unexpected{concat(
        {prefix, "TZ= and CRON_TZ= prefixes are not supported; the policy sets the time zone"})};
  }

  CronSchedule s;
  s.text_ = std::string(expression);
  Fields& f = s.fields_;

  if (expression.front() == '@') {
    // Descriptors are matched exactly, as robfig's parseDescriptor does (case-sensitive,
    // no surrounding space).
    if (expression.starts_with("@every")) {
      return Unexpected{concat(
          {prefix, "@every is not supported; a fixed interval is not a calendar window"})};
    }
    f.minute = 1;
    f.hour = 1;
    f.day_of_month = all_of(kDayOfMonth);
    f.month = all_of(kMonth);
    f.day_of_week = all_of(kDayOfWeek);
    if (expression == "@yearly" || expression == "@annually") {
      f.day_of_month = std::uint64_t{1} << 1;
      f.month = std::uint64_t{1} << 1;
    } else if (expression == "@monthly") {
      f.day_of_month = std::uint64_t{1} << 1;
    } else if (expression == "@weekly") {
      f.day_of_week = 1;  // Sunday, without the star bit; day-of-month stays "*"
    } else if (expression == "@daily" || expression == "@midnight") {
      // midnight every day: the defaults above
    } else if (expression == "@hourly") {
      f.hour = all_of(kHour);
    } else {
      return Unexpected{concat({prefix, "unrecognized descriptor: ", expression})};
    }
    return s;
  }

  // Go's strings.Fields: runs of Unicode white space separate fields.
  std::array<std::string_view, 5> fields;
  std::size_t count = 0;
  for (std::size_t i = 0; i < expression.size();) {
    if (std::size_t w = space_at(expression, i); w > 0) {
      i += w;
      continue;
    }
    std::size_t j = i;
    while (j < expression.size() && space_at(expression, j) == 0) ++j;
    if (count < fields.size()) fields[count] = expression.substr(i, j - i);
    ++count;
    i = j;
  }
  if (count != fields.size()) {
    return Unexpected{
        concat({prefix, "expected exactly 5 fields, found ", std::to_string(count)})};
  }

  const std::array<std::pair<const FieldBounds*, std::uint64_t*>, 5> slots = {{
      {&kMinute, &f.minute},
      {&kHour, &f.hour},
      {&kDayOfMonth, &f.day_of_month},
      {&kMonth, &f.month},
      {&kDayOfWeek, &f.day_of_week},
  }};
  for (std::size_t i = 0; i < slots.size(); ++i) {
    auto bits = parse_field(fields[i], *slots[i].first);
    if (!bits) return Unexpected{concat({prefix, slots[i].first->label, ": ", bits.error()})};
    *slots[i].second = *bits;
  }
  return s;
}

// A transcription of robfig's SpecSchedule.Next (spec.go) onto GoClock, with the seconds
// field fixed at "0". Each loop looks for its field's next matching value; a loop that
// rolls its field over to the start goes back to WRAP, since the fields above it changed.
std::optional<std::chrono::sys_seconds> CronSchedule::next(std::chrono::sys_seconds after,
                                                           const date::time_zone& zone) const {
  const std::int64_t after_unix = after.time_since_epoch().count();
  if (after_unix < kMinUnix || after_unix > kMaxUnix) return std::nullopt;
  const Fields& f = fields_;
  constexpr std::uint64_t kValues = ~kStarBit;
  // Fields with no values at all ("," parses to nothing, as in robfig) never match; robfig
  // would find that out by walking five years, the answer is the same.
  if ((f.minute & kValues) == 0 || (f.hour & kValues) == 0 || (f.month & kValues) == 0) {
    return std::nullopt;
  }
  constexpr std::uint64_t kSecond = 1;  // the standard parser's seconds field, "0"

  GoClock go(zone);
  // "Start at the earliest possible time (the upcoming second)".
  GoTime t = go.at(after_unix + 1);
  bool added = false;
  const int year_limit = t.year + 5;
  // The one place next() departs from robfig: where a zone skipped a whole calendar day
  // (Pacific/Kiritimati 1994-12-31, Pacific/Apia 2011-12-30) Go's time.Date maps that day's
  // midnight back onto the previous one, robfig's day loop stops advancing and Next never
  // returns. Month and day steps fail to advance only across gaps of half a day or more,
  // so dozens of them mean that loop, and the answer is "no time", not a hang.
  int stalls = 0;
  constexpr int kMaxStalls = 64;

  for (;;) {  // WRAP
    if (t.year > year_limit) return std::nullopt;  // robfig's zero time

    bool wrapped = false;
    while (!has(f.month, t.month)) {
      if (!added) {
        added = true;
        t = go.make_date(t.year, t.month, 1, 0, 0, 0);
      }
      const std::int64_t before = t.unix;
      t = go.add_date(t, 0, 1, 0);
      if (t.unix <= before && ++stalls > kMaxStalls) return std::nullopt;
      if (t.month == 1) {
        wrapped = true;
        break;
      }
    }
    if (wrapped) continue;

    while (!day_matches(f, t)) {
      if (!added) {
        added = true;
        t = go.make_date(t.year, t.month, t.day, 0, 0, 0);
      }
      const std::int64_t before = t.unix;
      t = go.add_date(t, 0, 0, 1);
      // robfig's fix for zones where midnight does not exist (Sao Paulo's DST began at
      // 00:00): pull a 23:00 forward and a 01:00 back to the day's midnight.
      if (t.hour != 0) {
        if (t.hour > 12) {
          t = go.add(t, (24 - std::int64_t{t.hour}) * 3600);
        } else {
          t = go.add(t, -std::int64_t{t.hour} * 3600);
        }
      }
      if (t.unix <= before && ++stalls > kMaxStalls) return std::nullopt;
      if (t.day == 1) {
        wrapped = true;
        break;
      }
    }
    if (wrapped) continue;

    if (!has(f.hour, t.hour)) {
      if (!added) {
        added = true;
        t = go.make_date(t.year, t.month, t.day, t.hour, 0, 0);
      }
      if (step_until(go, t, 3600, 24, f.hour, &GoTime::hour)) continue;
    }

    if (!has(f.minute, t.minute)) {
      if (!added) {
        added = true;
        t = go.truncate(t, 60);
      }
      if (step_until(go, t, 60, 60, f.minute, &GoTime::minute)) continue;
    }

    // Usually reached at second 1 (`after` is on a whole minute); the local second is
    // otherwise 0 except under offsets with seconds (local mean time before ~1900).
    if (!has(kSecond, t.second)) {
      if (!added) {
        added = true;
        t = go.truncate(t, 1);
      }
      if (step_until(go, t, 1, 60, kSecond, &GoTime::second)) continue;
    }

    return std::chrono::sys_seconds{std::chrono::seconds{t.unix}};
  }
}

}  // namespace gpubank
