#include "core/timestamp.hpp"

#include <date/date.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <random>

namespace gpubank {
namespace {

using std::chrono::nanoseconds;
using ::testing::HasSubstr;

Timestamp at(int y, unsigned m, unsigned d, std::int64_t h = 0, std::int64_t min = 0,
             std::int64_t s = 0, std::int64_t ns = 0) {
  return Timestamp(date::sys_days(date::year{y} / m / d)) + std::chrono::hours(h) +
         std::chrono::minutes(min) + std::chrono::seconds(s) + nanoseconds(ns);
}

constexpr std::int64_t kMaxNs = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t kMinNs = std::numeric_limits<std::int64_t>::min();

struct Valid {
  const char* text;
  Timestamp when;
};

class TimestampValid : public ::testing::TestWithParam<Valid> {};

TEST_P(TimestampValid, Parses) {
  const auto parsed = parse_rfc3339(GetParam().text);
  ASSERT_TRUE(parsed.ok()) << GetParam().text << ": " << parsed.error();
  EXPECT_EQ(*parsed, GetParam().when) << GetParam().text << " gave " << format_rfc3339(*parsed);
}

INSTANTIATE_TEST_SUITE_P(
    All, TimestampValid,
    ::testing::Values(
        Valid{"2026-12-01T08:00:00Z", at(2026, 12, 1, 8)},
        Valid{"2026-12-01T16:00:00.5+08:00", at(2026, 12, 1, 8, 0, 0, 500'000'000)},
        Valid{"2026-12-01T02:30:00-05:30", at(2026, 12, 1, 8)},
        Valid{"2026-12-01T08:00:00+00:00", at(2026, 12, 1, 8)},
        Valid{"2026-12-01T08:00:00-00:00", at(2026, 12, 1, 8)},
        Valid{"2026-12-01T00:30:00+23:59", at(2026, 11, 30, 0, 31)},
        Valid{"2006-01-02T15:04:05Z", at(2006, 1, 2, 15, 4, 5)},
        Valid{"2006-01-02T15:04:05.999999999Z", at(2006, 1, 2, 15, 4, 5, 999'999'999)},
        Valid{"2006-01-02T15:04:05.000000001Z", at(2006, 1, 2, 15, 4, 5, 1)},
        Valid{"2006-01-02T15:04:05.1Z", at(2006, 1, 2, 15, 4, 5, 100'000'000)},
        Valid{"2006-01-02T15:04:05.120Z", at(2006, 1, 2, 15, 4, 5, 120'000'000)},
        // Go takes more than nine digits and drops the rest.
        Valid{"2006-01-02T15:04:05.1234567891Z", at(2006, 1, 2, 15, 4, 5, 123'456'789)},
        Valid{"2006-01-02T15:04:05.99999999999999Z", at(2006, 1, 2, 15, 4, 5, 999'999'999)},
        Valid{"2024-02-29T23:59:59Z", at(2024, 2, 29, 23, 59, 59)},
        Valid{"2000-02-29T00:00:00Z", at(2000, 2, 29)},
        Valid{"1970-01-01T00:00:00Z", Timestamp{}},
        Valid{"1969-12-31T23:59:59.999999999Z", Timestamp(nanoseconds(-1))},
        Valid{"1970-01-01T01:00:00+01:00", Timestamp{}},
        Valid{"2262-04-11T23:47:16.854775807Z", Timestamp(nanoseconds(kMaxNs))},
        Valid{"1677-09-21T00:12:43.145224192Z", Timestamp(nanoseconds(kMinNs))},
        Valid{"2262-04-12T00:47:16.854775807+01:00", Timestamp(nanoseconds(kMaxNs))}));

struct Invalid {
  const char* text;
  const char* message;
};

class TimestampInvalid : public ::testing::TestWithParam<Invalid> {};

TEST_P(TimestampInvalid, IsRejectedWithReason) {
  const auto parsed = parse_rfc3339(GetParam().text);
  ASSERT_FALSE(parsed.ok()) << GetParam().text << " parsed as " << format_rfc3339(*parsed);
  EXPECT_THAT(parsed.error(), HasSubstr(GetParam().message));
  EXPECT_THAT(parsed.error(), HasSubstr("timestamp"));
}

INSTANTIATE_TEST_SUITE_P(
    All, TimestampInvalid,
    ::testing::Values(
        Invalid{"", R"(timestamp "": expected a 4-digit year at offset 0)"},
        Invalid{"2026-12-01", "expected 'T' between date and time at offset 10"},
        Invalid{"2026-12-01t08:00:00Z", "expected 'T' between date and time"},
        Invalid{"2026-12-01 08:00:00Z", "expected 'T' between date and time"},
        Invalid{"2026-12-01T08:00:00z", "expected 'Z' or a +hh:mm/-hh:mm offset at offset 19"},
        Invalid{"2026-12-01T08:00:00", "expected 'Z' or a +hh:mm/-hh:mm offset"},
        Invalid{"2026-12-01T08:00Z", "expected ':' after the minute"},
        Invalid{"2026-12-01T8:00:00Z", "expected a 2-digit hour"},
        Invalid{"26-12-01T08:00:00Z", "expected a 4-digit year"},
        Invalid{"+2026-12-01T08:00:00Z", "expected a 4-digit year"},
        Invalid{"12026-12-01T08:00:00Z", "expected '-' after the year"},
        Invalid{"2026-1-01T08:00:00Z", "expected a 2-digit month"},
        Invalid{"2026/12/01T08:00:00Z", "expected '-' after the year"},
        Invalid{"2026-12-01T08:00:00,5Z", "expected 'Z' or a +hh:mm/-hh:mm offset"},
        Invalid{"2026-12-01T08:00:00.Z", "expected digits after '.'"},
        Invalid{"2026-12-01T08:00:00+0800", "expected ':' in the offset"},
        Invalid{"2026-12-01T08:00:00+08", "expected ':' in the offset"},
        Invalid{"2026-12-01T08:00:00+8:00", "expected a 2-digit offset hour"},
        Invalid{"2026-12-01T08:00:00+08:0", "expected a 2-digit offset minute"},
        Invalid{"2026-12-01T08:00:00ZZ", "expected the end at offset 20"},
        Invalid{"2026-12-01T08:00:00Z ", "expected the end"},
        Invalid{" 2026-12-01T08:00:00Z", "expected a 4-digit year"},
        Invalid{"2026-12-01T08:00:00+24:00", "offset hour 24 out of range 0-23"},
        Invalid{"2026-12-01T08:00:00-08:60", "offset minute 60 out of range 0-59"},
        Invalid{"2026-00-01T08:00:00Z", "month 0 out of range 1-12"},
        Invalid{"2026-13-01T08:00:00Z", "month 13 out of range 1-12"},
        Invalid{"2026-12-00T08:00:00Z", "day 0 out of range 1-31"},
        Invalid{"2026-04-31T08:00:00Z", "day 31 out of range 1-30"},
        Invalid{"2023-02-29T08:00:00Z", "day 29 out of range 1-28"},
        Invalid{"1900-02-29T08:00:00Z", "day 29 out of range 1-28"},
        Invalid{"2026-12-01T24:00:00Z", "hour 24 out of range 0-23"},
        Invalid{"2026-12-01T08:60:00Z", "minute 60 out of range 0-59"},
        Invalid{"2016-12-31T23:59:60Z", "second 60 out of range 0-59"},
        Invalid{"2262-04-11T23:47:16.854775808Z", "outside the representable range"},
        Invalid{"1677-09-21T00:12:43.145224191Z", "outside the representable range"},
        Invalid{"0000-01-01T00:00:00Z", "outside the representable range"},
        Invalid{"9999-12-31T23:59:59Z", "outside the representable range"},
        Invalid{"2026-12-01T08:00:00\nZ", R"("2026-12-01T08:00:00\x0aZ")"}));

TEST(Timestamp, FormatsUtcWithShortestFraction) {
  EXPECT_EQ(format_rfc3339(at(2026, 12, 1)), "2026-12-01T00:00:00Z");
  EXPECT_EQ(format_rfc3339(at(2026, 12, 1, 0, 0, 0, 250'000'000)), "2026-12-01T00:00:00.25Z");
  EXPECT_EQ(format_rfc3339(at(2026, 12, 1, 8, 5, 9, 1)), "2026-12-01T08:05:09.000000001Z");
  EXPECT_EQ(format_rfc3339(at(2026, 12, 1, 23, 59, 59, 999'999'999)),
            "2026-12-01T23:59:59.999999999Z");
  EXPECT_EQ(format_rfc3339(at(2026, 12, 1, 0, 0, 0, 100'000'000)), "2026-12-01T00:00:00.1Z");
  EXPECT_EQ(format_rfc3339(Timestamp{}), "1970-01-01T00:00:00Z");
  EXPECT_EQ(format_rfc3339(Timestamp(nanoseconds(-1))), "1969-12-31T23:59:59.999999999Z");
  EXPECT_EQ(format_rfc3339(Timestamp(nanoseconds(kMaxNs))), "2262-04-11T23:47:16.854775807Z");
  EXPECT_EQ(format_rfc3339(Timestamp(nanoseconds(kMinNs))), "1677-09-21T00:12:43.145224192Z");
  EXPECT_EQ(format_rfc3339(*parse_rfc3339("2026-12-01T16:00:00.5+08:00")),
            "2026-12-01T08:00:00.5Z");
}

TEST(Timestamp, RoundTripsThroughText) {
  std::vector<std::int64_t> values{0, 1, -1, kMaxNs, kMinNs, 951'782'400'000'000'000};
  std::mt19937_64 random(3339);  // fixed seed: the same cases every run
  for (int i = 0; i < 2000; ++i) {
    const auto bits = static_cast<std::int64_t>(random());
    values.push_back(bits);
    values.push_back(bits / 1'000'000'000 * 1'000'000'000);  // whole seconds
    values.push_back(bits / 1'000'000 * 1'000'000);          // whole milliseconds
  }
  for (const std::int64_t v : values) {
    const Timestamp t{nanoseconds(v)};
    const std::string text = format_rfc3339(t);
    const auto parsed = parse_rfc3339(text);
    ASSERT_TRUE(parsed.ok()) << v << ": " << parsed.error();
    EXPECT_EQ(*parsed, t) << text;
  }
}

}  // namespace
}  // namespace gpubank
