#include "core/duration.hpp"

#include <array>
#include <cstdint>
#include <optional>

#include "core/quote.hpp"

namespace gpubank {
namespace {

constexpr std::uint64_t kLimit = std::uint64_t{1} << 63;  // |INT64_MIN|

struct Unit {
  std::string_view name;
  std::uint64_t nanos;
};

// "µs" is U+00B5 (micro sign), "μs" U+03BC (Greek mu); Go accepts both.
constexpr std::array<Unit, 8> kUnits{{{"ns", 1},
                                      {"us", 1'000},
                                      {"\xc2\xb5s", 1'000},
                                      {"\xce\xbcs", 1'000},
                                      {"ms", 1'000'000},
                                      {"s", 1'000'000'000},
                                      {"m", 60'000'000'000},
                                      {"h", 3'600'000'000'000}}};

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Go's leadingInt: the leading digits, or nullopt once the value passes 2^63.
std::optional<std::uint64_t> leading_int(std::string_view& s) {
  std::uint64_t x = 0;
  std::size_t i = 0;
  for (; i < s.size() && is_digit(s[i]); ++i) {
    if (x > kLimit / 10) return std::nullopt;
    x = x * 10 + static_cast<std::uint64_t>(s[i] - '0');
    if (x > kLimit) return std::nullopt;
  }
  s.remove_prefix(i);
  return x;
}

// Go's leadingFraction: digits after the point as an integer and its scale (10^digits).
// Digits past what fits in 63 bits are skipped, which truncates the fraction.
struct Fraction {
  std::uint64_t value = 0;
  double scale = 1;
};
Fraction leading_fraction(std::string_view& s) {
  Fraction f;
  bool overflow = false;
  std::size_t i = 0;
  for (; i < s.size() && is_digit(s[i]); ++i) {
    if (overflow) continue;
    if (f.value > (kLimit - 1) / 10) {
      overflow = true;
      continue;
    }
    const std::uint64_t y = f.value * 10 + static_cast<std::uint64_t>(s[i] - '0');
    if (y > kLimit) {
      overflow = true;
      continue;
    }
    f.value = y;
    f.scale *= 10;
  }
  s.remove_prefix(i);
  return f;
}

Unexpected invalid(std::string_view text, std::string_view why) {
  return Unexpected{"invalid duration " + quote(text) + ": " + std::string(why)};
}

}  // namespace

Expected<Duration> Duration::parse(std::string_view text) {
  std::string_view s = text;
  bool neg = false;
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) {
    neg = s[0] == '-';
    s.remove_prefix(1);
  }
  if (s.empty()) return invalid(text, text.empty() ? "empty string" : "missing number");

  std::uint64_t total = 0;  // magnitude, at most 2^63
  while (!s.empty()) {
    if (!(s[0] == '.' || is_digit(s[0]))) {
      return invalid(text, "expected a number at " + quote(s));
    }
    const std::size_t before = s.size();
    const auto whole = leading_int(s);
    if (!whole) return invalid(text, "out of range (the limit is about 2562047h)");
    const bool pre = s.size() != before;
    Fraction frac;
    bool post = false;
    if (!s.empty() && s[0] == '.') {
      s.remove_prefix(1);
      const std::size_t at = s.size();
      frac = leading_fraction(s);
      post = s.size() != at;
    }
    if (!pre && !post) return invalid(text, "number has no digits");

    // The unit runs up to the next number, as in Go, so "1 h" has the unit " h".
    std::size_t n = 0;
    while (n < s.size() && s[n] != '.' && !is_digit(s[n])) ++n;
    if (n == 0) return Unexpected{"missing unit in duration " + quote(text)};
    const std::string_view name = s.substr(0, n);
    s.remove_prefix(n);
    std::uint64_t unit = 0;
    for (const Unit& u : kUnits) {
      if (u.name == name) unit = u.nanos;
    }
    if (unit == 0) {
      return Unexpected{"unknown unit " + quote(name) + " in duration " + quote(text) +
                        " (units are ns, us, ms, s, m, h)"};
    }

    if (*whole > kLimit / unit) return invalid(text, "out of range (the limit is about 2562047h)");
    std::uint64_t v = *whole * unit;
    if (frac.value > 0) {
      // Same double arithmetic as Go, so that every input gives Go's nanosecond: the
      // result is below one unit (<= 3.6e12) and truncated.
      v += static_cast<std::uint64_t>(static_cast<double>(frac.value) *
                                      (static_cast<double>(unit) / frac.scale));
      if (v > kLimit) return invalid(text, "out of range (the limit is about 2562047h)");
    }
    // Both terms are <= 2^63; checking before adding avoids the wrap Go's check misses.
    if (v > kLimit - total) return invalid(text, "out of range (the limit is about 2562047h)");
    total += v;
  }
  if (!neg && total > kLimit - 1) {
    return invalid(text, "out of range (the limit is about 2562047h)");
  }
  // Two's complement negation covers -2^63, whose magnitude has no positive int64.
  const auto bits = neg ? ~total + 1 : total;
  return Duration(std::chrono::nanoseconds(static_cast<std::int64_t>(bits)));
}

std::string Duration::to_string() const {
  const std::int64_t count = value_.count();
  if (count == 0) return "0s";
  // Unsigned magnitude, so that the most negative value has one too.
  std::uint64_t rest = static_cast<std::uint64_t>(count);
  if (count < 0) rest = ~rest + 1;
  std::string out = count < 0 ? "-" : "";
  static constexpr std::array<Unit, 6> kParts{{{"h", 3'600'000'000'000},
                                               {"m", 60'000'000'000},
                                               {"s", 1'000'000'000},
                                               {"ms", 1'000'000},
                                               {"us", 1'000},
                                               {"ns", 1}}};
  for (const Unit& part : kParts) {
    if (rest >= part.nanos) {
      out += std::to_string(rest / part.nanos);
      out += part.name;
      rest %= part.nanos;
    }
  }
  return out;
}

}  // namespace gpubank
