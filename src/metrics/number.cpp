#include "metrics/number.hpp"

#include <array>
#include <charconv>
#include <cmath>
#include <limits>
#include <system_error>

namespace gpubank::metrics {

namespace {

constexpr double kExactIntegerLimit = 9007199254740992.0;  // 2^53

bool equals_ignoring_case(std::string_view text, std::string_view lower) {
  if (text.size() != lower.size()) return false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c != lower[i]) return false;
  }
  return true;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Go's strconv 'g' format with the shortest precision (ftoa.go: %e when the decimal
// exponent is below -4 or at least 6). The shortest round-trip digits come from
// std::to_chars in scientific form, which C++17 defines the same way as Go's algorithm:
// the fewest digits that read back to the same double, the closest of those.
std::string format_shortest(double value) {
  std::array<char, 64> buffer{};
  const auto [end, ec] = std::to_chars(buffer.data(), buffer.data() + buffer.size(), value,
                                       std::chars_format::scientific);
  const std::string_view sci(buffer.data(), ec == std::errc{} ? static_cast<std::size_t>(end - buffer.data()) : 0);
  // sci is "[-]d[.ddd]e±XX".
  const std::size_t e = sci.find('e');
  std::string_view mantissa = sci.substr(0, e);
  int exponent = 0;
  std::from_chars(sci.data() + e + 1 + (sci[e + 1] == '+' ? 1 : 0), sci.data() + sci.size(), exponent);
  if (exponent < -4 || exponent >= 6) return std::string(sci);

  std::string out;
  if (mantissa.front() == '-') {
    out += '-';
    mantissa.remove_prefix(1);
  }
  std::string digits;
  for (const char c : mantissa) {
    if (c != '.') digits += c;
  }
  if (exponent < 0) {
    out += "0.";
    out.append(static_cast<std::size_t>(-exponent - 1), '0');
    out += digits;
    return out;
  }
  const auto integer_digits = static_cast<std::size_t>(exponent) + 1;
  if (digits.size() <= integer_digits) {
    out += digits;
    out.append(integer_digits - digits.size(), '0');
  } else {
    out += digits.substr(0, integer_digits);
    out += '.';
    out += digits.substr(integer_digits);
  }
  return out;
}

}  // namespace

std::string format_value(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  if (value == 0) return "0";
  if (std::abs(value) < kExactIntegerLimit && std::trunc(value) == value) {
    std::array<char, 32> buffer{};
    const auto [end, ec] =
        std::to_chars(buffer.data(), buffer.data() + buffer.size(), static_cast<std::int64_t>(value));
    return std::string(buffer.data(), ec == std::errc{} ? end : buffer.data());
  }
  return format_shortest(value);
}

std::optional<double> parse_value(std::string_view text) {
  bool negative = false;
  std::string_view rest = text;
  if (!rest.empty() && (rest.front() == '+' || rest.front() == '-')) {
    negative = rest.front() == '-';
    rest.remove_prefix(1);
  }
  if (equals_ignoring_case(rest, "inf") || equals_ignoring_case(rest, "infinity")) {
    return negative ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
  }
  if (equals_ignoring_case(text, "nan")) return std::numeric_limits<double>::quiet_NaN();

  // The decimal grammar, checked here so that from_chars sees nothing it reads differently
  // from Go (it would take "nan(...)" or a leading '+' otherwise).
  std::size_t i = 0;
  std::size_t mantissa_digits = 0;
  bool nonzero_digit = false;
  int integer_digits = 0;  // significant digits before the point
  int leading_fraction_zeros = 0;
  while (i < rest.size() && is_digit(rest[i])) {
    if (rest[i] != '0' || nonzero_digit) {
      nonzero_digit = true;
      ++integer_digits;
    }
    ++i;
    ++mantissa_digits;
  }
  if (i < rest.size() && rest[i] == '.') {
    ++i;
    while (i < rest.size() && is_digit(rest[i])) {
      if (rest[i] != '0') nonzero_digit = true;
      if (!nonzero_digit) ++leading_fraction_zeros;
      ++i;
      ++mantissa_digits;
    }
  }
  if (mantissa_digits == 0) return std::nullopt;
  long long exponent = 0;
  if (i < rest.size() && (rest[i] == 'e' || rest[i] == 'E')) {
    ++i;
    bool negative_exponent = false;
    if (i < rest.size() && (rest[i] == '+' || rest[i] == '-')) {
      negative_exponent = rest[i] == '-';
      ++i;
    }
    const std::size_t start = i;
    while (i < rest.size() && is_digit(rest[i])) {
      if (exponent < 1'000'000'000) exponent = exponent * 10 + (rest[i] - '0');
      ++i;
    }
    if (i == start) return std::nullopt;
    if (negative_exponent) exponent = -exponent;
  }
  if (i != rest.size()) return std::nullopt;

  double magnitude = 0;
  const auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), magnitude);
  if (ec == std::errc::result_out_of_range) {
    if (!nonzero_digit) {
      magnitude = 0;
    } else {
      // Out of range either way: too large (Go returns ErrRange, Prometheus refuses the
      // sample) or too small (Go rounds to zero). The decimal exponent of the first
      // significant digit tells which.
      const long long order = integer_digits > 0 ? exponent + integer_digits - 1 : exponent - leading_fraction_zeros - 1;
      if (order > 0) return std::nullopt;
      magnitude = 0;
    }
  } else if (ec != std::errc{} || end != rest.data() + rest.size()) {
    return std::nullopt;
  }
  return negative ? -magnitude : magnitude;
}

std::optional<std::int64_t> parse_timestamp(std::string_view text) {
  std::string_view digits = text;
  bool negative = false;
  if (!digits.empty() && (digits.front() == '+' || digits.front() == '-')) {
    negative = digits.front() == '-';
    digits.remove_prefix(1);
  }
  if (digits.empty()) return std::nullopt;
  for (const char c : digits) {
    if (!is_digit(c)) return std::nullopt;
  }
  // Accumulated negatively so that the int64 minimum fits.
  std::int64_t value = 0;
  for (const char c : digits) {
    const int digit = c - '0';
    if (value < (std::numeric_limits<std::int64_t>::min() + digit) / 10) return std::nullopt;
    value = value * 10 - digit;
  }
  if (!negative) {
    if (value == std::numeric_limits<std::int64_t>::min()) return std::nullopt;
    value = -value;
  }
  return value;
}

}  // namespace gpubank::metrics
