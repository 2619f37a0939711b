#include "metrics/number.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace gpubank::metrics {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

TEST(FormatValue, SpecialValuesUseTheTextFormatsSpellings) {
  EXPECT_EQ(format_value(std::numeric_limits<double>::quiet_NaN()), "NaN");
  EXPECT_EQ(format_value(kInf), "+Inf");
  EXPECT_EQ(format_value(-kInf), "-Inf");
  EXPECT_EQ(format_value(0.0), "0");
  EXPECT_EQ(format_value(-0.0), "0");
}

TEST(FormatValue, WholeNumbersBelowTwoToThe53AreWrittenInFull) {
  EXPECT_EQ(format_value(1), "1");
  EXPECT_EQ(format_value(-3), "-3");
  EXPECT_EQ(format_value(1000000), "1000000");  // client_golang: 1e+06
  EXPECT_EQ(format_value(9007199254740991.0), "9007199254740991");
  // 2^53 and beyond are not all exact: Go's shortest form.
  EXPECT_EQ(format_value(9007199254740992.0), "9.007199254740992e+15");
  EXPECT_EQ(format_value(1e20), "1e+20");
}

TEST(FormatValue, OtherNumbersAreGosShortestGFormat) {
  // strconv.FormatFloat(v, 'g', -1, 64): exponent form below 1e-4 and from 1e6.
  EXPECT_EQ(format_value(0.25), "0.25");
  EXPECT_EQ(format_value(0.1), "0.1");
  EXPECT_EQ(format_value(0.0001), "0.0001");
  EXPECT_EQ(format_value(0.00001), "1e-05");
  EXPECT_EQ(format_value(2.5568e-05), "2.5568e-05");
  EXPECT_EQ(format_value(123456.5), "123456.5");
  EXPECT_EQ(format_value(1234567.5), "1.2345675e+06");
  EXPECT_EQ(format_value(-0.005), "-0.005");
  EXPECT_EQ(format_value(1.0 / 3), "0.3333333333333333");
  EXPECT_EQ(format_value(27.403271826000023), "27.403271826000022");  // the closest shortest digits
  EXPECT_EQ(format_value(999999.5), "999999.5");
  EXPECT_EQ(format_value(0.00012345), "0.00012345");
  EXPECT_EQ(format_value(1e-300), "1e-300");
  EXPECT_EQ(format_value(5e-324), "5e-324");
}

TEST(FormatValue, EveryFormattedValueReadsBackExactly) {
  for (const double v : {0.1, 1.0 / 3, 2.0 / 3 * 1e7, 1e-7, 123.456, 6.02214076e23, -4.9e-324, 1.7976931348623157e308,
                         9007199254740993.0, 0.30000000000000004}) {
    const auto back = parse_value(format_value(v));
    ASSERT_TRUE(back.has_value()) << format_value(v);
    EXPECT_EQ(*back, v) << format_value(v);
  }
}

TEST(ParseValue, AcceptsWhatGosParseFloatAcceptsInTheTextFormat) {
  EXPECT_EQ(parse_value("1"), 1.0);
  EXPECT_EQ(parse_value("-2.5"), -2.5);
  EXPECT_EQ(parse_value("+2.5"), 2.5);
  EXPECT_EQ(parse_value(".5"), 0.5);
  EXPECT_EQ(parse_value("5."), 5.0);
  EXPECT_EQ(parse_value("1e3"), 1000.0);
  EXPECT_EQ(parse_value("1E-3"), 0.001);
  EXPECT_EQ(parse_value("5.3374734336e+010"), 53374734336.0);  // prometheus_client's spelling
  EXPECT_EQ(parse_value("0.000000"), 0.0);                      // dcgm-exporter's %f
  EXPECT_EQ(parse_value("+Inf"), kInf);
  EXPECT_EQ(parse_value("-Inf"), -kInf);
  EXPECT_EQ(parse_value("inf"), kInf);
  EXPECT_EQ(parse_value("Infinity"), kInf);
  EXPECT_EQ(parse_value("-infinity"), -kInf);
  ASSERT_TRUE(parse_value("NaN").has_value());
  EXPECT_TRUE(std::isnan(*parse_value("NaN")));
  EXPECT_TRUE(std::isnan(*parse_value("nan")));
  EXPECT_EQ(parse_value("4.9e-324"), 4.9e-324);  // subnormal
  EXPECT_EQ(parse_value("1e-400"), 0.0);         // Go rounds underflow to zero
  EXPECT_EQ(parse_value("-1e-400"), -0.0);
  EXPECT_EQ(parse_value("0e999999"), 0.0);
}

TEST(ParseValue, RefusesWhatPrometheusRefuses) {
  for (const char* text : {"", "+", "-", ".", "e3", "1e", "1e+", "abc", "1.2.3", "0x1p3", "0x10", "1_000", "+NaN",
                           "-nan", "nan(1)", "infin", "1e400", "-1e400", "1,5", " 1", "1 ", "１"}) {
    EXPECT_FALSE(parse_value(text).has_value()) << text;
  }
}

TEST(ParseTimestamp, AcceptsInt64Milliseconds) {
  EXPECT_EQ(parse_timestamp("1750428341123"), 1750428341123);
  EXPECT_EQ(parse_timestamp("-5"), -5);
  EXPECT_EQ(parse_timestamp("+7"), 7);
  EXPECT_EQ(parse_timestamp("9223372036854775807"), std::numeric_limits<std::int64_t>::max());
  EXPECT_EQ(parse_timestamp("-9223372036854775808"), std::numeric_limits<std::int64_t>::min());
  for (const char* text : {"", "-", "1.5", "1e3", "9223372036854775808", "-9223372036854775809", "12a", "NaN"}) {
    EXPECT_FALSE(parse_timestamp(text).has_value()) << text;
  }
}

}  // namespace
}  // namespace gpubank::metrics
