#include "core/quantity.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <limits>
#include <random>

namespace gpubank {
namespace {

using Format = Quantity::Format;
using ::testing::HasSubstr;

constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();

Quantity q(const char* text) {
  const auto parsed = Quantity::parse(text);
  EXPECT_TRUE(parsed.ok()) << text << ": " << parsed.error();
  return parsed.ok() ? *parsed : Quantity{};
}

struct Valid {
  const char* text;
  const char* canonical;  // what Kubernetes' String() prints
  Format format;
};

// Expectations derived from apimachinery's quantity_test.go (TestQuantityParse,
// TestQuantityString, TestQuantityParseEmit) and the Quantity documentation.
class QuantityValid : public ::testing::TestWithParam<Valid> {};

TEST_P(QuantityValid, ParsesAndPrintsCanonically) {
  const Valid& c = GetParam();
  const Quantity parsed = q(c.text);
  EXPECT_EQ(parsed.to_string(), c.canonical) << c.text;
  EXPECT_EQ(parsed.format(), c.format) << c.text;
  // The canonical form means the same value and is its own canonical form.
  const Quantity again = q(c.canonical);
  EXPECT_EQ(again, parsed) << c.text;
  EXPECT_EQ(again.to_string(), c.canonical) << c.text;
}

TEST_P(QuantityValid, SignsAreSymmetric) {
  const Valid& c = GetParam();
  const Quantity positive = q(c.text);
  const Quantity plus = q((std::string("+") + c.text).c_str());
  const Quantity minus = q((std::string("-") + c.text).c_str());
  EXPECT_EQ(plus, positive);
  EXPECT_EQ(plus.to_string(), c.canonical);
  EXPECT_EQ(minus.format(), c.format) << c.text;
  EXPECT_EQ(minus, Quantity{} - positive);
  const std::string negated = positive.is_zero() ? "0" : std::string("-") + c.canonical;
  EXPECT_EQ(minus.to_string(), negated) << c.text;
}

constexpr auto kSI = Format::DecimalSI;
constexpr auto kBin = Format::BinarySI;
constexpr auto kExp = Format::DecimalExponent;

INSTANTIATE_TEST_SUITE_P(
    Kubernetes, QuantityValid,
    ::testing::Values(
        // Zero keeps the format of its suffix but always prints as "0".
        Valid{"0", "0", kSI}, Valid{"0n", "0", kSI}, Valid{"0m", "0", kSI},
        Valid{"0Ki", "0", kBin}, Valid{"0G", "0", kSI}, Valid{"0Ti", "0", kBin},
        Valid{"000", "0", kSI}, Valid{"0.000", "0", kSI}, Valid{"0e9", "0", kExp},
        Valid{"1", "1", kSI},
        // Binary suffixes.
        Valid{"1Ki", "1Ki", kBin}, Valid{"8Ki", "8Ki", kBin}, Valid{"7Mi", "7Mi", kBin},
        Valid{"6Gi", "6Gi", kBin}, Valid{"5Ti", "5Ti", kBin}, Valid{"4Pi", "4Pi", kBin},
        Valid{"3Ei", "3Ei", kBin}, Valid{"10Ti", "10Ti", kBin}, Valid{"100Ti", "100Ti", kBin},
        Valid{"1024Mi", "1Gi", kBin}, Valid{"1.5Gi", "1536Mi", kBin},
        Valid{"0.5Mi", "512Ki", kBin}, Valid{"512Ki", "512Ki", kBin},
        Valid{"1023Ki", "1023Ki", kBin}, Valid{"1025Ki", "1025Ki", kBin},
        Valid{"8192Ei", "9223372036854775807", kBin},  // capped at 2^63-1 like Kubernetes
        // Decimal suffixes.
        Valid{"5n", "5n", kSI}, Valid{"4u", "4u", kSI}, Valid{"3m", "3m", kSI},
        Valid{"9", "9", kSI}, Valid{"8k", "8k", kSI}, Valid{"50k", "50k", kSI},
        Valid{"7M", "7M", kSI}, Valid{"6G", "6G", kSI}, Valid{"5T", "5T", kSI},
        Valid{"40T", "40T", kSI}, Valid{"300T", "300T", kSI}, Valid{"2P", "2P", kSI},
        Valid{"1E", "1E", kSI}, Valid{"12E", "12E", kSI}, Valid{"1000", "1k", kSI},
        Valid{"1000M", "1G", kSI}, Valid{"1500m", "1500m", kSI}, Valid{"1.5", "1500m", kSI},
        Valid{"0.5", "500m", kSI}, Valid{"1000E", "1e21", kSI}, Valid{"5000E", "5e21", kSI},
        Valid{"1000000E", "1e24", kSI},
        // Exponents.
        Valid{"1E-3", "1e-3", kExp}, Valid{"1e3", "1e3", kExp}, Valid{"1E6", "1e6", kExp},
        Valid{"1e9", "1e9", kExp}, Valid{"1E12", "1e12", kExp}, Valid{"1e15", "1e15", kExp},
        Valid{"1E18", "1e18", kExp}, Valid{"1e14", "100e12", kExp},
        Valid{"1e13", "10e12", kExp}, Valid{"1e+3", "1e3", kExp}, Valid{"1e0", "1", kExp},
        Valid{"1e-9", "1e-9", kExp}, Valid{"80e-3", "80e-3", kExp},
        Valid{"300e6", "300e6", kExp}, Valid{"1e21", "1e21", kExp},
        // Things that look like floating point.
        Valid{"100.035k", "100035", kSI}, Valid{"0.001", "1m", kSI},
        Valid{"0.0005k", "500m", kSI}, Valid{"0.005", "5m", kSI}, Valid{"0.05", "50m", kSI},
        Valid{"0.00050k", "500m", kSI}, Valid{"0.00500", "5m", kSI},
        Valid{"0.5e0", "500e-3", kExp}, Valid{"0.5e-1", "50e-3", kExp},
        Valid{"0.5e-2", "5e-3", kExp}, Valid{"10.035M", "10035k", kSI},
        Valid{"1.2e3", "1200", kExp}, Valid{"1.3E+6", "1300e3", kExp},
        Valid{"1.40e9", "1400e6", kExp}, Valid{"1.53E12", "1530e9", kExp},
        Valid{"1.6e15", "1600e12", kExp}, Valid{"1.7E18", "1700e15", kExp},
        Valid{"9.01", "9010m", kSI}, Valid{"8.1k", "8100", kSI},
        Valid{"7.123456M", "7123456", kSI}, Valid{"6.987654321G", "6987654321", kSI},
        Valid{"5.444T", "5444G", kSI}, Valid{"40.1T", "40100G", kSI},
        Valid{"300.2T", "300200G", kSI}, Valid{"2.5P", "2500T", kSI},
        Valid{"1.01E", "1010P", kSI},
        // Below 1n: rounded up (away from zero) to whole nanos.
        Valid{"3.001n", "4n", kSI}, Valid{"1.1E-9", "2e-9", kExp},
        Valid{"0.0000000001", "1n", kSI}, Valid{"0.0000000005", "1n", kSI},
        Valid{"0.00000000050", "1n", kSI}, Valid{"0.5e-9", "1e-9", kExp},
        Valid{"0.9n", "1n", kSI}, Valid{"0.1n", "1n", kSI}, Valid{"0.00000012345", "124n", kSI},
        Valid{"0.00000012354", "124n", kSI}, Valid{"1e-1000", "1e-9", kExp},
        Valid{"9Ei", "9223372036854775807", kBin},
        Valid{"9223372036854775807Ki", "9223372036854775807", kBin},
        // Fractional binary values print as DecimalSI; below 1 they become DecimalSI.
        Valid{"100.035Ki", "102435840m", kBin}, Valid{"0.05Gi", "53687091200m", kBin},
        Valid{"0.025Ti", "27487790694400m", kBin}, Valid{".001Ki", "1024m", kBin},
        Valid{".000001Ki", "1024u", kSI}, Valid{".000000001Ki", "1024n", kSI},
        Valid{"0.000000000001Ki", "2n", kSI}, Valid{"0.0001Ki", "102400u", kSI},
        // Written by trolls.
        Valid{".001", "1m", kSI}, Valid{".0001k", "100m", kSI}, Valid{"1.", "1", kSI},
        Valid{"1.G", "1G", kSI}, Valid{"007", "7", kSI},
        // The storage limit, 2^127-1 nanos.
        Valid{"170141183460469231731687303715884105727n",
              "170141183460469231731687303715884105727n", kSI},
        Valid{"100000000000000000000000000000", "100e27", kSI}));

struct Invalid {
  const char* text;
  const char* message;
};

class QuantityInvalid : public ::testing::TestWithParam<Invalid> {};

TEST_P(QuantityInvalid, IsRejectedWithReason) {
  const auto parsed = Quantity::parse(GetParam().text);
  ASSERT_FALSE(parsed.ok()) << GetParam().text << " parsed as " << parsed->to_string();
  EXPECT_THAT(parsed.error(), HasSubstr(GetParam().message));
}

INSTANTIATE_TEST_SUITE_P(
    All, QuantityInvalid,
    ::testing::Values(
        Invalid{"", R"(quantity "": empty string)"},
        Invalid{"1.5x", R"(quantity "1.5x": unknown suffix "x")"},
        Invalid{"1.1.M", R"(quantity "1.1.M": unknown suffix ".M")"},
        Invalid{"1+1.0M", R"(unknown suffix "+1.0M")"},
        Invalid{"0.1mi", R"(unknown suffix "mi")"}, Invalid{"0.1am", R"(unknown suffix "am")"},
        Invalid{"aoeu", R"(quantity "aoeu": expected a number before "aoeu")"},
        Invalid{".5i", R"(unknown suffix "i")"}, Invalid{"1i", R"(unknown suffix "i")"},
        Invalid{"-3.01i", R"(unknown suffix "i")"}, Invalid{"-3.01e-", R"(unknown suffix "e-")"},
        Invalid{" 1", R"(quantity " 1": expected a number before " 1")"},
        Invalid{"1 ", R"(quantity "1 ": unknown suffix " ")"},
        Invalid{"1K", R"(unknown suffix "K")"}, Invalid{"1KI", R"(unknown suffix "KI")"},
        Invalid{"1ki", R"(unknown suffix "ki")"}, Invalid{"1e", R"(unknown suffix "e")"},
        Invalid{"1E+", R"(unknown suffix "E+")"}, Invalid{"1e3.5", R"(unknown suffix "e3.5")"},
        Invalid{"1kk", R"(unknown suffix "kk")"}, Invalid{"1Gi3", R"(unknown suffix "Gi3")"},
        Invalid{"1\xc2\xb5", R"(quantity "1\xc2\xb5": unknown suffix "\xc2\xb5")"},
        // At least one digit, unlike Kubernetes (which reads these as zero).
        Invalid{"-", R"(quantity "-": missing number)"},
        Invalid{"+", R"(quantity "+": missing number)"},
        Invalid{".", R"(quantity ".": missing number)"},
        Invalid{"-.", R"(quantity "-.": missing number)"},
        Invalid{"Ki", R"(quantity "Ki": expected a number before "Ki")"},
        Invalid{"m", R"(expected a number before "m")"},
        Invalid{"--1", R"(expected a number before "-1")"},
        Invalid{"1e99999999999999999999", R"(exponent "99999999999999999999" out of range)"},
        Invalid{"1e-9223372036854775809", "out of range"},
        Invalid{"1e30", R"(quantity "1e30": magnitude too large)"},
        Invalid{"-1e30", "magnitude too large"},
        Invalid{"200000000000000000000000000000", "magnitude too large"},
        Invalid{"170141183460469231731687303715884105728n", "magnitude too large"},
        Invalid{"1e9223372036854775807", "magnitude too large"}));

TEST(Quantity, ConstructorsAndFormats) {
  const struct {
    Quantity value;
    const char* text;
  } cases[] = {
      {Quantity::from_int(1), "1"},
      {Quantity::from_int(1000), "1k"},
      {Quantity::from_int(1234000), "1234k"},
      {Quantity::from_int(1024, kBin), "1Ki"},
      {Quantity::from_int(1024 * 1024, kBin), "1Mi"},
      {Quantity::from_int(5, kBin), "5"},  // below 1024 binary prints as DecimalSI
      {Quantity::from_int(100, kBin), "100"},
      {Quantity::from_int(1025, kBin), "1025"},
      {Quantity::from_int(0, kBin), "0"},
      {Quantity::from_int(1000000, kExp), "1e6"},
      {Quantity::from_int(kMax), "9223372036854775807"},
      {Quantity::from_int(kMin), "-9223372036854775808"},
      {Quantity::from_int(kMin, kBin), "-8Ei"},
      {Quantity::from_milli(1), "1m"},
      {Quantity::from_milli(1000), "1"},
      {Quantity::from_milli(1234000), "1234"},
      {Quantity::from_milli(1024, kBin), "1024m"},
      {Quantity::from_milli(1024 * 1024, kBin), "1048576m"},
      {Quantity::from_milli(500, kBin), "500m"},
      {Quantity::from_milli(1234567, kBin), "1234567m"},
      {Quantity::from_milli(80, kExp), "80e-3"},
      {Quantity::from_milli(1000000, kExp), "1e3"},
      {Quantity::from_milli(-1500), "-1500m"},
      {Quantity{}, "0"},
  };
  for (const auto& c : cases) EXPECT_EQ(c.value.to_string(), c.text);
  EXPECT_EQ(Quantity::from_int(7, kExp).format(), kExp);
  EXPECT_EQ(Quantity{}.format(), kSI);
}

TEST(Quantity, ValueRoundsAwayFromZeroAndClamps) {
  const struct {
    const char* text;
    std::int64_t value;
    std::int64_t milli;
  } cases[] = {
      {"0", 0, 0},
      {"1", 1, 1000},
      {"1.5", 2, 1500},
      {"-1.5", -2, -1500},
      {"0.1", 1, 100},
      {"-0.1", -1, -100},
      {"100m", 1, 100},
      {"1n", 1, 1},
      {"-1n", -1, -1},
      {"0.0001", 1, 1},
      {"1.0001", 2, 1001},
      {"1Gi", 1073741824, 1073741824000},
      {"9223372036854775807", kMax, kMax},
      {"-9223372036854775808", kMin, kMin},
      {"9223372036854775.807", 9223372036854776, kMax},
      {"9223372036854775.808", 9223372036854776, kMax},  // milli clamps
      {"-9223372036854775.809", -9223372036854776, kMin},
      {"1e20", kMax, kMax},
      {"-1e20", kMin, kMin},
      {"9Ei", kMax, kMax},
  };
  for (const auto& c : cases) {
    const Quantity value = q(c.text);
    EXPECT_EQ(value.value(), c.value) << c.text;
    EXPECT_EQ(value.milli_value(), c.milli) << c.text;
  }
}

TEST(Quantity, ArithmeticKeepsTheLeftFormat) {
  EXPECT_EQ((q("1Gi") + q("512Mi")).to_string(), "1536Mi");
  EXPECT_EQ((q("1Ki") + q("1024")).to_string(), "2Ki");
  EXPECT_EQ((q("1024") + q("1Ki")).to_string(), "2048");
  EXPECT_EQ((q("1k") + q("1Ki")).to_string(), "2024");
  EXPECT_EQ((q("1") - q("1500m")).to_string(), "-500m");
  EXPECT_EQ((q("1e3") + q("1k")).to_string(), "2e3");
  EXPECT_EQ((q("100m") + q("0")).to_string(), "100m");
  EXPECT_EQ((q("1Gi") - q("0")).to_string(), "1Gi");
  // As in Kubernetes, a zero left side takes the other's format.
  EXPECT_EQ((q("0") + q("1Gi")).to_string(), "1Gi");
  EXPECT_EQ((q("0") + q("100m")).to_string(), "100m");
  EXPECT_EQ((q("0") - q("1Gi")).to_string(), "-1Gi");
  EXPECT_EQ((Quantity{} + q("1e3")).format(), kExp);
  const Quantity gone = q("1Gi") - q("1Gi");
  EXPECT_TRUE(gone.is_zero());
  EXPECT_EQ(gone.to_string(), "0");
  EXPECT_EQ(gone.format(), kBin);

  Quantity total;
  for (int i = 0; i < 10; ++i) total += q("100m");
  EXPECT_EQ(total, q("1"));
  EXPECT_EQ(total.to_string(), "1");

  // Binary beyond Ei keeps the Ei suffix.
  Quantity big = q("4Ei");
  for (int i = 0; i < 8; ++i) big += big;
  EXPECT_EQ(big.to_string(), "1024Ei");
}

TEST(Quantity, ArithmeticSaturates) {
  const Quantity top = q("170141183460469231731687303715884105727n");
  const Quantity bottom = Quantity{} - top;
  EXPECT_EQ(top + top, top);
  EXPECT_EQ(top + q("1n"), top);
  EXPECT_EQ(bottom - top, bottom);
  EXPECT_EQ(bottom - q("1n"), bottom);
  EXPECT_EQ((bottom - q("1n")).to_string(), "-170141183460469231731687303715884105727n");
  EXPECT_EQ(top + bottom, Quantity{});
  EXPECT_EQ(top - top, Quantity{});
}

TEST(Quantity, ComparesValuesNotFormats) {
  EXPECT_EQ(q("1000m"), q("1"));
  EXPECT_EQ(q("1Ki"), q("1024"));
  EXPECT_EQ(q("1e3"), q("1k"));
  EXPECT_GT(q("1Gi"), q("1G"));
  EXPECT_LT(q("100m"), q("1"));
  EXPECT_LT(q("-1"), q("0"));
  EXPECT_GT(q("10000T"), q("100Gi"));
  EXPECT_TRUE(q("-1m").negative());
  EXPECT_FALSE(q("0").negative());
  EXPECT_TRUE(q("-0").is_zero());
}

TEST(Quantity, MultipliesExactlyAndRoundsAwayFromZeroAt1n) {
  auto q = [](const char* text) { return *Quantity::parse(text); };
  EXPECT_EQ(q("3").multiplied_by(q("250m")), q("750m"));
  EXPECT_EQ(q("4").multiplied_by(q("5Gi")).to_string(), "21474836480");  // the left side's format: DecimalSI
  EXPECT_EQ(q("2Gi").multiplied_by(q("3")).to_string(), "6Gi");
  EXPECT_EQ(q("1.5").multiplied_by(q("-2")), q("-3"));
  EXPECT_EQ(q("-1.5").multiplied_by(q("-2")), q("3"));
  EXPECT_EQ(q("0").multiplied_by(q("-2")), q("0"));
  // 1n * 1n is 1e-18: below 1n, so 1n (away from zero), as Kubernetes rounds a parsed value.
  EXPECT_EQ(q("1n").multiplied_by(q("1n")), q("1n"));
  EXPECT_EQ(q("-1n").multiplied_by(q("1n")), q("-1n"));
  EXPECT_EQ(q("1.000000001").multiplied_by(q("1.000000001")), q("1.000000003"));  // 1.000000002000000001 up
  // Saturation instead of overflow.
  const Quantity huge = q("1e28");
  EXPECT_EQ(huge.multiplied_by(huge), huge.multiplied_by(huge).multiplied_by(q("2")));
  EXPECT_GT(huge.multiplied_by(huge), huge);
  EXPECT_LT(huge.multiplied_by(q("-1e28")), q("-1e28"));
}

TEST(Quantity, RoundTripsThroughText) {
  constexpr std::array<const char*, 21> kSuffixes{
      "",   "n",  "u",  "m",  "k",  "M",   "G",  "T",   "P",   "E",   "Ki",
      "Mi", "Gi", "Ti", "Pi", "Ei", "e-7", "e3", "E11", "e-2", "e20"};
  std::mt19937_64 random(1024);  // fixed seed: the same cases every run
  for (int i = 0; i < 5000; ++i) {
    std::string text = random() % 2 ? "-" : "";
    text += std::to_string(random() >> (random() % 64));
    if (random() % 2) {
      text += '.';
      text += std::to_string(random() % 1'000'000'000);
    }
    text += kSuffixes[random() % kSuffixes.size()];
    const auto parsed = Quantity::parse(text);
    if (!parsed.ok()) {
      EXPECT_THAT(parsed.error(), HasSubstr("magnitude too large")) << text;
      continue;
    }
    const std::string canonical = parsed->to_string();
    const auto again = Quantity::parse(canonical);
    ASSERT_TRUE(again.ok()) << text << " -> " << canonical << ": " << again.error();
    EXPECT_EQ(*again, *parsed) << text << " -> " << canonical;
    EXPECT_EQ(again->to_string(), canonical) << text;
  }
}

}  // namespace
}  // namespace gpubank
