// RFC 3339 as Go's time.Parse(time.RFC3339Nano, s) accepts it on its fast path
// (time/format_rfc3339.go parseRFC3339), which is what Kubernetes objects go through.
// Choices where Go is lenient or our type is narrower:
//  * The fraction may have any number of digits, as in Go; digits past the ninth are
//    truncated (Go does the same), so "...:00.1234567891Z" is ...:00.123456789Z.
//  * Go's slow fallback parser also takes a one-digit hour, a ',' before the fraction and
//    zone offsets up to 24:60; those are not RFC 3339 and are rejected here.
//  * Timestamp counts int64 nanoseconds, so only 1677-09-21T00:12:43.145224192Z to
//    2262-04-11T23:47:16.854775807Z fit. Valid RFC 3339 outside that span is an error,
//    and formatting never meets a year outside 0000-9999 (every Timestamp has 4 digits).
#include "core/timestamp.hpp"

#include <date/date.h>

#include <cstdint>
#include <limits>

#include "core/quote.hpp"

namespace gpubank {
namespace {

class Scanner {
 public:
  explicit Scanner(std::string_view text) : text_(text) {}

  // Exactly `width` digits, or -1.
  int digits(std::size_t width) {
    if (text_.size() - pos_ < width) return -1;
    int value = 0;
    for (std::size_t i = 0; i < width; ++i) {
      const char c = text_[pos_ + i];
      if (c < '0' || c > '9') return -1;
      value = value * 10 + (c - '0');
    }
    pos_ += width;
    return value;
  }
  bool literal(char c) {
    if (pos_ >= text_.size() || text_[pos_] != c) return false;
    ++pos_;
    return true;
  }
  [[nodiscard]] bool at_digit() const {
    return pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9';
  }
  [[nodiscard]] bool done() const { return pos_ == text_.size(); }
  [[nodiscard]] std::size_t pos() const { return pos_; }

 private:
  std::string_view text_;
  std::size_t pos_ = 0;
};

Unexpected bad(std::string_view text, const std::string& why) {
  return Unexpected{"invalid RFC 3339 timestamp " + quote(text) + ": " + why};
}

std::string range(const char* field, int value, const char* limits) {
  return field + (' ' + std::to_string(value)) + " out of range " + limits;
}

void append_padded(std::string& out, long long value, int width) {
  const std::string digits = std::to_string(value);
  if (static_cast<int>(digits.size()) < width) out.append(width - digits.size(), '0');
  out += digits;
}

}  // namespace

Expected<Timestamp> parse_rfc3339(std::string_view text) {
  Scanner in(text);
  // Expects the layout piece by piece, so that the error names the first wrong part.
  const auto expected = [&](const char* what) {
    return bad(text, std::string("expected ") + what + " at offset " + std::to_string(in.pos()) +
                         " (layout YYYY-MM-DDTHH:MM:SS[.fraction](Z|+hh:mm|-hh:mm))");
  };
  const int year = in.digits(4);
  if (year < 0) return expected("a 4-digit year");
  if (!in.literal('-')) return expected("'-' after the year");
  const int month = in.digits(2);
  if (month < 0) return expected("a 2-digit month");
  if (!in.literal('-')) return expected("'-' after the month");
  const int day = in.digits(2);
  if (day < 0) return expected("a 2-digit day");
  if (!in.literal('T')) return expected("'T' between date and time");
  const int hour = in.digits(2);
  if (hour < 0) return expected("a 2-digit hour");
  if (!in.literal(':')) return expected("':' after the hour");
  const int minute = in.digits(2);
  if (minute < 0) return expected("a 2-digit minute");
  if (!in.literal(':')) return expected("':' after the minute");
  const int second = in.digits(2);
  if (second < 0) return expected("2-digit seconds");

  std::int64_t nanos = 0;
  if (in.literal('.')) {
    if (!in.at_digit()) return expected("digits after '.'");
    int scale = 1'000'000'000;  // ten times what the next digit is worth, in ns
    while (in.at_digit()) {
      const int digit = in.digits(1);
      scale /= 10;  // reaches 0 after the ninth digit: Go drops the rest
      nanos += std::int64_t{digit} * scale;
    }
  }

  int offset_minutes = 0;
  if (!in.literal('Z')) {
    int sign = 0;
    if (in.literal('+')) sign = 1;
    else if (in.literal('-')) sign = -1;
    else return expected("'Z' or a +hh:mm/-hh:mm offset");
    const int oh = in.digits(2);
    if (oh < 0) return expected("a 2-digit offset hour");
    if (!in.literal(':')) return expected("':' in the offset");
    const int om = in.digits(2);
    if (om < 0) return expected("a 2-digit offset minute");
    if (oh > 23) return bad(text, range("offset hour", oh, "0-23"));
    if (om > 59) return bad(text, range("offset minute", om, "0-59"));
    offset_minutes = sign * (oh * 60 + om);
  }
  if (!in.done()) return expected("the end");

  if (month < 1 || month > 12) return bad(text, range("month", month, "1-12"));
  const date::year_month_day ymd{date::year{year}, date::month{static_cast<unsigned>(month)},
                                 date::day{static_cast<unsigned>(day)}};
  if (!ymd.ok()) {
    const unsigned last = static_cast<unsigned>((ymd.year() / ymd.month() / date::last).day());
    return bad(text, range("day", day, ("1-" + std::to_string(last) + " for that month").c_str()));
  }
  if (hour > 23) return bad(text, range("hour", hour, "0-23"));
  if (minute > 59) return bad(text, range("minute", minute, "0-59"));
  if (second > 59) return bad(text, range("second", second, "0-59 (no leap seconds)"));

  const std::int64_t days = date::sys_days(ymd).time_since_epoch().count();
  const std::int64_t seconds =
      days * 86'400 + hour * 3'600 + minute * 60 + second - std::int64_t{offset_minutes} * 60;
  // In 128 bits: near the lower limit seconds * 10^9 alone leaves int64 though the sum fits.
  __extension__ using I128 = __int128;
  const I128 total = I128{seconds} * 1'000'000'000 + nanos;
  if (total < std::numeric_limits<std::int64_t>::min() ||
      total > std::numeric_limits<std::int64_t>::max()) {
    return bad(text, "outside the representable range 1677-09-21 to 2262-04-11");
  }
  return Timestamp(std::chrono::nanoseconds(static_cast<std::int64_t>(total)));
}

std::string format_rfc3339(Timestamp t) {
  // Floored division by hand: instants before 1970 belong to the day before, and
  // floor<days> would overflow converting that day back to nanoseconds near the minimum.
  constexpr std::int64_t kNanosPerDay = 86'400'000'000'000;
  std::int64_t days = t.time_since_epoch().count() / kNanosPerDay;
  std::int64_t since_midnight = t.time_since_epoch().count() % kNanosPerDay;
  if (since_midnight < 0) {
    since_midnight += kNanosPerDay;
    --days;
  }
  const date::year_month_day ymd{date::sys_days(date::days(days))};
  const std::int64_t secs = since_midnight / 1'000'000'000;
  std::int64_t nanos = since_midnight % 1'000'000'000;

  std::string out;
  out.reserve(30);
  append_padded(out, static_cast<int>(ymd.year()), 4);
  out += '-';
  append_padded(out, static_cast<unsigned>(ymd.month()), 2);
  out += '-';
  append_padded(out, static_cast<unsigned>(ymd.day()), 2);
  out += 'T';
  append_padded(out, secs / 3'600, 2);
  out += ':';
  append_padded(out, secs / 60 % 60, 2);
  out += ':';
  append_padded(out, secs % 60, 2);
  if (nanos != 0) {
    int width = 9;
    while (nanos % 10 == 0) {
      nanos /= 10;
      --width;
    }
    out += '.';
    append_padded(out, nanos, width);
  }
  out += 'Z';
  return out;
}

}  // namespace gpubank
