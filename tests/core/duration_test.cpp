#include "core/duration.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <random>

namespace gpubank {
namespace {

using std::chrono::nanoseconds;
using ::testing::HasSubstr;

constexpr std::int64_t kNs = 1;
constexpr std::int64_t kUs = 1'000;
constexpr std::int64_t kMs = 1'000'000;
constexpr std::int64_t kS = 1'000'000'000;
constexpr std::int64_t kM = 60 * kS;
constexpr std::int64_t kH = 60 * kM;
constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();

struct Valid {
  const char* text;
  std::int64_t nanos;
};

// Expectations follow Go's time.ParseDuration (the cases of its format_test.go), minus
// the unit-less "0" that Go allows.
class DurationValid : public ::testing::TestWithParam<Valid> {};

TEST_P(DurationValid, Parses) {
  const auto parsed = Duration::parse(GetParam().text);
  ASSERT_TRUE(parsed.ok()) << GetParam().text << ": " << parsed.error();
  EXPECT_EQ(parsed->nanoseconds().count(), GetParam().nanos) << GetParam().text;
}

INSTANTIATE_TEST_SUITE_P(
    Go, DurationValid,
    ::testing::Values(
        Valid{"0s", 0}, Valid{"-0s", 0}, Valid{"+0ns", 0}, Valid{"0h0m", 0}, Valid{"5s", 5 * kS},
        Valid{"30s", 30 * kS}, Valid{"1478s", 1478 * kS}, Valid{"-5s", -5 * kS},
        Valid{"+5s", 5 * kS}, Valid{"5.0s", 5 * kS}, Valid{"5.6s", 5 * kS + 600 * kMs},
        Valid{"5.s", 5 * kS}, Valid{".5s", 500 * kMs}, Valid{"1.0s", kS}, Valid{"1.00s", kS},
        Valid{"1.004s", kS + 4 * kMs}, Valid{"1.0040s", kS + 4 * kMs},
        Valid{"100.00100s", 100 * kS + kMs}, Valid{"10ns", 10 * kNs}, Valid{"11us", 11 * kUs},
        Valid{"12\u00b5s", 12 * kUs}, Valid{"12\u03bcs", 12 * kUs}, Valid{"13ms", 13 * kMs},
        Valid{"14s", 14 * kS}, Valid{"15m", 15 * kM}, Valid{"16h", 16 * kH},
        Valid{"3h30m", 3 * kH + 30 * kM}, Valid{"10.5s4m", 4 * kM + 10 * kS + 500 * kMs},
        Valid{"-2m3.4s", -(2 * kM + 3 * kS + 400 * kMs)},
        Valid{"1h2m3s4ms5us6ns", kH + 2 * kM + 3 * kS + 4 * kMs + 5 * kUs + 6 * kNs},
        Valid{"39h9m14.425s", 39 * kH + 9 * kM + 14 * kS + 425 * kMs},
        Valid{"1.5h", kH + 30 * kM}, Valid{"90m", 90 * kM}, Valid{"1500ms", 1500 * kMs},
        Valid{"52763797000ns", 52763797000}, Valid{"007s", 7 * kS}, Valid{"1h1h", 2 * kH},
        // Beyond nanosecond precision Go truncates (through its float64 scaling).
        Valid{"1.0000000001s", kS}, Valid{"1.9999999999s", kS + 999'999'999},
        Valid{"0.3ns", 0}, Valid{"1.5ns", 1}, Valid{"-1.5ns", -1},
        Valid{"0.3333333333333333333h", 20 * kM},
        Valid{"0.100000000000000000000h", 6 * kM},
        Valid{"0.830103483285477580700h", 49 * kM + 48 * kS + 372'539'827},
        Valid{"9007199254740993ns", (std::int64_t{1} << 53) + 1},
        // The int64 limits, and Go's way of writing them.
        Valid{"9223372036854775807ns", kMax}, Valid{"9223372036854775.807us", kMax},
        Valid{"9223372036s854ms775us807ns", kMax}, Valid{"2562047h47m16.854775807s", kMax},
        Valid{"-9223372036854775808ns", kMin}, Valid{"-9223372036854775.808us", kMin},
        Valid{"-9223372036s854ms775us808ns", kMin},
        Valid{"-2562047h47m16.854775808s", kMin}));

struct Invalid {
  const char* text;
  const char* message;  // a part of the error
};

class DurationInvalid : public ::testing::TestWithParam<Invalid> {};

TEST_P(DurationInvalid, IsRejectedWithReason) {
  const auto parsed = Duration::parse(GetParam().text);
  ASSERT_FALSE(parsed.ok()) << GetParam().text << " parsed as "
                            << parsed->nanoseconds().count();
  EXPECT_THAT(parsed.error(), HasSubstr(GetParam().message));
}

INSTANTIATE_TEST_SUITE_P(
    All, DurationInvalid,
    ::testing::Values(
        Invalid{"", R"(invalid duration "": empty string)"},
        Invalid{"0", R"(missing unit in duration "0")"},
        Invalid{"10", R"(missing unit in duration "10")"},
        Invalid{"-0", R"(missing unit in duration "-0")"},
        Invalid{"1.5", R"(missing unit in duration "1.5")"},
        Invalid{"1h30", R"(missing unit in duration "1h30")"},
        Invalid{"-", R"(invalid duration "-": missing number)"},
        Invalid{"+", R"(invalid duration "+": missing number)"},
        Invalid{"s", R"(invalid duration "s": expected a number at "s")"},
        Invalid{".", R"(invalid duration ".": number has no digits)"},
        Invalid{"-.", R"(invalid duration "-.": number has no digits)"},
        Invalid{".s", R"(invalid duration ".s": number has no digits)"},
        Invalid{"+.s", R"(invalid duration "+.s": number has no digits)"},
        Invalid{"1d", R"(unknown unit "d" in duration "1d")"},
        Invalid{"1hh", R"(unknown unit "hh" in duration "1hh")"},
        Invalid{"1H", R"(unknown unit "H" in duration "1H")"},
        Invalid{"1 h", R"(unknown unit " h" in duration "1 h")"},
        Invalid{" 1h", R"(invalid duration " 1h": expected a number at " 1h")"},
        Invalid{"1h ", R"(unknown unit "h " in duration "1h ")"},
        Invalid{"1h-1m", R"(unknown unit "h-" in duration "1h-1m")"},
        Invalid{"--1h", R"(invalid duration "--1h": expected a number)"},
        Invalid{"1.2.3s", R"(missing unit in duration "1.2.3s")"},
        Invalid{"\x85\x85", R"(invalid duration "\x85\x85")"},
        Invalid{"1\"s", R"(unknown unit "\"s" in duration "1\"s")"},
        Invalid{"9223372036854775808ns", R"(invalid duration "9223372036854775808ns")"},
        Invalid{"9223372036854775.808us", R"(invalid duration "9223372036854775.808us")"},
        Invalid{"9223372036854ms775us808ns", "invalid duration"},
        Invalid{"-9223372036854775809ns", "invalid duration"},
        Invalid{"2562048h", R"(invalid duration "2562048h": out of range)"},
        Invalid{"99999999999999999999s", "out of range"},
        // Go's own check misses this one: 2^63 + 2^63 wraps to 0 in its uint64 sum.
        Invalid{"-9223372036854775808ns9223372036854775808ns", "out of range"}));

TEST(Duration, FormatsCompactCanonicalForm) {
  const struct {
    std::int64_t nanos;
    const char* text;
  } cases[] = {
      {0, "0s"},
      {1, "1ns"},
      {999, "999ns"},
      {kUs, "1us"},
      {1500 * kMs, "1s500ms"},
      {90 * kM, "1h30m"},
      {2 * kM, "2m"},
      {-2 * kM, "-2m"},
      {kH + kS, "1h1s"},
      {25 * kH, "25h"},
      {kH + 2 * kM + 3 * kS + 4 * kMs + 5 * kUs + 6, "1h2m3s4ms5us6ns"},
      {kMax, "2562047h47m16s854ms775us807ns"},
      {kMin, "-2562047h47m16s854ms775us808ns"},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(Duration(nanoseconds(c.nanos)).to_string(), c.text);
  }
}

TEST(Duration, RoundTripsThroughText) {
  std::vector<std::int64_t> values{0, 1, -1, kMax, kMin, kMax - 1, kMin + 1, kUs, kMs, kS,
                                   kM, kH, -kH, 86'400 * kS, kH - 1, kS + 1};
  std::mt19937_64 random(20260101);  // fixed seed: the same cases every run
  for (int i = 0; i < 2000; ++i) {
    const auto bits = static_cast<std::int64_t>(random());
    values.push_back(bits);
    values.push_back(bits >> (i % 63));  // small magnitudes too
  }
  for (const std::int64_t v : values) {
    const Duration d{nanoseconds(v)};
    const auto parsed = Duration::parse(d.to_string());
    ASSERT_TRUE(parsed.ok()) << v << ": " << parsed.error();
    EXPECT_EQ(*parsed, d) << d.to_string();
  }
}

TEST(Duration, Accessors) {
  EXPECT_EQ(Duration::parse("1.9999s")->milliseconds(), 1999);
  EXPECT_EQ(Duration::parse("-1.9999s")->milliseconds(), -1999);  // towards zero
  EXPECT_TRUE(Duration::parse("-1ns")->negative());
  EXPECT_FALSE(Duration::parse("0s")->negative());
  EXPECT_LT(*Duration::parse("59m"), *Duration::parse("1h"));
  EXPECT_EQ(*Duration::parse("60m"), *Duration::parse("1h"));
}

}  // namespace
}  // namespace gpubank
