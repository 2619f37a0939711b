// Behaviour follows k8s.io/apimachinery/pkg/api/resource (quantity.go, suffix.go, amount.go).
// Where this differs from Kubernetes, it is on purpose:
//  * A number needs at least one digit: Kubernetes takes "", "-", "." and even a bare
//    suffix such as "Ki" as zero (only the empty string is rejected there).
//  * An exponent is an int64; Kubernetes truncates it to int32 ("1e4294967296" is 1 there),
//    here a larger one is an error.
//  * Values are kept at nano precision in 128 bits, so a decimal quantity is limited to
//    about 1.7e29 in magnitude (Kubernetes has no limit); beyond that parse fails.
#include "core/quantity.hpp"

#include <array>
#include <limits>
#include <optional>
#include <utility>

#include "core/quote.hpp"

namespace gpubank {
namespace {

__extension__ using I128 = __int128;
__extension__ using U128 = unsigned __int128;

constexpr U128 kMaxMagnitude = (U128{1} << 127) - 1;  // nano_ stays within +-this
constexpr U128 kNano = 1'000'000'000;
// Kubernetes caps parsed BinarySI quantities at 2^63-1 (so "8Ei" is 9223372036854775807).
constexpr U128 kBinaryCap = U128{std::numeric_limits<std::int64_t>::max()} * kNano;

constexpr std::array<std::pair<std::string_view, int>, 10> kDecimalSuffixes{{{"n", -9},
                                                                           {"u", -6},
                                                                           {"m", -3},
                                                                           {"", 0},
                                                                           {"k", 3},
                                                                           {"M", 6},
                                                                           {"G", 9},
                                                                           {"T", 12},
                                                                           {"P", 15},
                                                                           {"E", 18}}};
// Index i is 1024^(i+1).
constexpr std::array<std::string_view, 6> kBinarySuffixes{"Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// a * b, or nullopt when above kMaxMagnitude.
std::optional<U128> times(U128 a, U128 b) {
  U128 r = 0;
  if (__builtin_mul_overflow(a, b, &r) || r > kMaxMagnitude) return std::nullopt;
  return r;
}

std::optional<U128> parse_digits(std::string_view digits) {
  U128 v = 0;
  for (const char c : digits) {
    const auto shifted = times(v, 10);
    if (!shifted || *shifted > kMaxMagnitude - static_cast<U128>(c - '0')) return std::nullopt;
    v = *shifted + static_cast<U128>(c - '0');
  }
  return v;
}

// ceil(digits * factor * 10^shift) for a digit string without leading zeros, or nullopt
// when above kMaxMagnitude. Rounding up is Kubernetes' rule for precision below 1n.
std::optional<U128> scale(std::string_view digits, U128 factor, I128 shift) {
  if (shift >= 0) {
    if (shift > 38) return std::nullopt;  // digits >= 1, and 10^39 is too large
    auto v = parse_digits(digits);
    if (v) v = times(*v, factor);
    for (I128 i = 0; v && i < shift; ++i) v = times(*v, 10);
    return v;
  }
  // head.tail with `-shift` digits after the point: head * factor + ceil(tail * factor).
  const I128 places = -shift;
  const std::size_t head_len =
      places < static_cast<I128>(digits.size()) ? digits.size() - static_cast<std::size_t>(places)
                                                : 0;
  auto head = parse_digits(digits.substr(0, head_len));
  if (head) head = times(*head, factor);
  if (!head) return std::nullopt;
  // The tail from its last digit, dividing by ten per place: nested floor divisions equal
  // one floor division, and any remainder means the exact value lies above the floor.
  U128 acc = 0;
  bool inexact = false;
  for (std::size_t i = digits.size(); i > head_len; --i) {
    const U128 t = acc + static_cast<U128>(digits[i - 1] - '0') * factor;
    inexact = inexact || t % 10 != 0;
    acc = t / 10;
  }
  // Places left of the digits hold zeros; once acc is 0 the rest changes nothing.
  for (I128 left = places - static_cast<I128>(digits.size() - head_len); left > 0 && acc != 0;
       --left) {
    inexact = inexact || acc % 10 != 0;
    acc /= 10;
  }
  const U128 tail = acc + (inexact ? 1 : 0);
  if (*head > kMaxMagnitude - tail) return std::nullopt;
  return *head + tail;
}

// Optional sign and at least one digit, all of `text`; nullopt when malformed, and
// `overflow` set when well formed but outside int64.
std::optional<std::int64_t> parse_exponent(std::string_view text, bool& overflow) {
  bool neg = false;
  if (!text.empty() && (text[0] == '+' || text[0] == '-')) {
    neg = text[0] == '-';
    text.remove_prefix(1);
  }
  if (text.empty()) return std::nullopt;
  U128 magnitude = 0;
  for (const char c : text) {
    if (!is_digit(c)) return std::nullopt;
    if (magnitude <= U128{1} << 64) magnitude = magnitude * 10 + static_cast<U128>(c - '0');
  }
  if (magnitude > static_cast<U128>(std::numeric_limits<std::int64_t>::max()) + (neg ? 1 : 0)) {
    overflow = true;
    return std::nullopt;
  }
  const auto value = static_cast<I128>(magnitude);
  return static_cast<std::int64_t>(neg ? -value : value);
}

std::string to_decimal(U128 v) {
  std::string digits;
  do {
    digits.insert(digits.begin(), static_cast<char>('0' + static_cast<int>(v % 10)));
    v /= 10;
  } while (v != 0);
  return digits;
}

// nano / unit rounded away from zero, as Kubernetes' Value and MilliValue round, and
// clamped to int64.
std::int64_t round_away(I128 nano, I128 unit) {
  I128 q = nano / unit;
  if (nano % unit != 0) q += nano < 0 ? -1 : 1;
  constexpr I128 kMin = std::numeric_limits<std::int64_t>::min();
  constexpr I128 kMax = std::numeric_limits<std::int64_t>::max();
  return static_cast<std::int64_t>(q < kMin ? kMin : q > kMax ? kMax : q);
}

// a + b, saturated at +-kMaxMagnitude.
I128 saturating_add(I128 a, I128 b) {
  constexpr auto kMax = static_cast<I128>(kMaxMagnitude);
  I128 r = 0;
  if (__builtin_add_overflow(a, b, &r)) return a < 0 ? -kMax : kMax;
  return r < -kMax ? -kMax : r;
}

}  // namespace

Quantity Quantity::from_int(std::int64_t value, Format format) {
  Quantity q;
  q.nano_ = static_cast<I128>(value) * static_cast<I128>(kNano);
  q.format_ = format;
  return q;
}

Quantity Quantity::from_milli(std::int64_t milli, Format format) {
  Quantity q;
  q.nano_ = static_cast<I128>(milli) * 1'000'000;
  q.format_ = format;
  return q;
}

Expected<Quantity> Quantity::parse(std::string_view text) {
  const auto fail = [&](const std::string& why) {
    return Unexpected{"quantity " + quote(text) + ": " + why};
  };
  if (text.empty()) return fail("empty string");

  std::string_view s = text;
  bool neg = false;
  if (s[0] == '+' || s[0] == '-') {
    neg = s[0] == '-';
    s.remove_prefix(1);
  }
  const auto take_digits = [&s] {
    std::size_t n = 0;
    while (n < s.size() && is_digit(s[n])) ++n;
    const std::string_view digits = s.substr(0, n);
    s.remove_prefix(n);
    return digits;
  };
  const std::string_view whole = take_digits();
  std::string_view fraction;
  if (!s.empty() && s[0] == '.') {
    s.remove_prefix(1);
    fraction = take_digits();  // "1." and ".5" are numbers, as in Kubernetes
  }
  if (whole.empty() && fraction.empty()) {
    return fail(s.empty() ? "missing number" : "expected a number before " + quote(s));
  }

  // The suffix is the rest: a decimal or binary SI suffix, or an exponent.
  const std::string_view suffix = s;
  Quantity q;
  std::int64_t exponent = 0;  // decimal
  U128 factor = 1;            // binary
  bool known = false;
  for (const auto& [name, exp] : kDecimalSuffixes) {
    if (suffix == name) {
      q.format_ = Format::DecimalSI;
      exponent = exp;
      known = true;
    }
  }
  for (std::size_t i = 0; i < kBinarySuffixes.size(); ++i) {
    if (suffix == kBinarySuffixes[i]) {
      q.format_ = Format::BinarySI;
      factor = U128{1} << (10 * (i + 1));
      known = true;
    }
  }
  if (!known && suffix.size() > 1 && (suffix[0] == 'e' || suffix[0] == 'E')) {
    bool overflow = false;
    const auto parsed = parse_exponent(suffix.substr(1), overflow);
    if (overflow) return fail("exponent " + quote(suffix.substr(1)) + " out of range");
    if (parsed) {
      q.format_ = Format::DecimalExponent;
      exponent = *parsed;
      known = true;
    }
  }
  if (!known) {
    return fail("unknown suffix " + quote(suffix) +
                " (expected one of n u m k M G T P E, Ki Mi Gi Ti Pi Ei, or e<exponent>)");
  }

  std::string digits = std::string(whole).append(fraction);
  digits.erase(0, digits.find_first_not_of('0'));  // npos: all zeros, erased entirely
  if (digits.empty()) return q;                    // zero keeps the suffix's format

  const I128 shift = I128{9} + exponent - static_cast<I128>(fraction.size());
  auto magnitude = scale(digits, factor, shift);
  if (q.format_ == Format::BinarySI) {
    if (!magnitude || *magnitude > kBinaryCap) magnitude = kBinaryCap;
    // Below one a binary suffix cannot print, so Kubernetes switches it to DecimalSI.
    if (*magnitude < kNano) q.format_ = Format::DecimalSI;
  } else if (!magnitude) {
    return fail("magnitude too large (the limit is about 1.7e29)");
  }
  q.nano_ = neg ? -static_cast<I128>(*magnitude) : static_cast<I128>(*magnitude);
  return q;
}

std::string Quantity::to_string() const {
  if (nano_ == 0) return "0";
  U128 magnitude = nano_ < 0 ? static_cast<U128>(-nano_) : static_cast<U128>(nano_);
  std::string out = nano_ < 0 ? "-" : "";

  // BinarySI prints with 1024^k only for whole numbers of at least 1024; anything else
  // would need rounding or a confusing "512" next to "1Ki", so it falls back to DecimalSI.
  if (format_ == Format::BinarySI && magnitude >= 1024 * kNano && magnitude % kNano == 0) {
    U128 mantissa = magnitude / kNano;
    std::size_t k = 0;
    while (k < kBinarySuffixes.size() && mantissa % 1024 == 0) {
      mantissa /= 1024;
      ++k;
    }
    out += to_decimal(mantissa);
    if (k > 0) out += kBinarySuffixes[k - 1];
    return out;
  }

  // Largest power of 1000 that keeps the mantissa whole; nano_ counts 10^-9.
  int exponent = -9;
  while (magnitude % 1000 == 0) {
    magnitude /= 1000;
    exponent += 3;
  }
  out += to_decimal(magnitude);
  if (format_ == Format::DecimalExponent) {
    if (exponent != 0) out += 'e' + std::to_string(exponent);
    return out;
  }
  for (const auto& [name, exp] : kDecimalSuffixes) {
    if (exp == exponent) return out + std::string(name);
  }
  // DecimalSI ends at E (10^18); Kubernetes writes larger values as "1e21".
  return out + 'e' + std::to_string(exponent);
}

std::int64_t Quantity::value() const { return round_away(nano_, static_cast<I128>(kNano)); }

std::int64_t Quantity::milli_value() const { return round_away(nano_, 1'000'000); }

Quantity& Quantity::operator+=(const Quantity& other) {
  if (nano_ == 0) format_ = other.format_;  // Kubernetes: a zero takes the other's format
  nano_ = saturating_add(nano_, other.nano_);
  return *this;
}

Quantity Quantity::multiplied_by(const Quantity& factor) const {
  auto magnitude = [](I128 v) { return v < 0 ? static_cast<U128>(-v) : static_cast<U128>(v); };  // |v| < 2^127
  const U128 a = magnitude(nano_), b = magnitude(factor.nano_);
  // (whole * 10^9 + frac) * b / 10^9 = whole * b + ceil(frac * b / 10^9), in nano units.
  U128 product = kMaxMagnitude;
  const auto high = times(a / kNano, b);
  const auto low = times(a % kNano, b);
  if (high && low) {
    const U128 rounded = *low / kNano + (*low % kNano != 0 ? 1 : 0);
    if (*high <= kMaxMagnitude - rounded) product = *high + rounded;
  }
  Quantity out;
  out.format_ = format_;
  out.nano_ = (nano_ < 0) != (factor.nano_ < 0) ? -static_cast<I128>(product) : static_cast<I128>(product);
  return out;
}

Quantity& Quantity::operator-=(const Quantity& other) {
  if (nano_ == 0) format_ = other.format_;
  nano_ = saturating_add(nano_, -other.nano_);  // -other.nano_ cannot overflow: |nano_| < 2^127
  return *this;
}

}  // namespace gpubank
