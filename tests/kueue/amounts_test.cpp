#include "kueue/amounts.hpp"

#include <gtest/gtest.h>

#include <limits>
#include <random>
#include <string>
#include <vector>

namespace gpubank::kueue {
namespace {

Quantity q(std::string_view text) { return *Quantity::parse(text); }

// resources.ResourceValue: cpu in millicores, the rest in units, rounded up away from zero.
TEST(KueueAmounts, RequestsAsKueueCountsThem) {
  EXPECT_EQ(resource_value("cpu", q("500m")), 500);
  EXPECT_EQ(resource_value("cpu", q("1.5")), 1500);
  EXPECT_EQ(resource_value("cpu", q("100u")), 1);
  EXPECT_EQ(resource_value("cpu", q("-1.5m")), -2);
  EXPECT_EQ(resource_value("memory", q("1Gi")), 1073741824);
  EXPECT_EQ(resource_value("memory", q("1.5")), 2);
  EXPECT_EQ(resource_value("memory", q("100m")), 1);
  EXPECT_EQ(resource_value("nvidia.com/gpu", q("8")), 8);
  EXPECT_EQ(resource_value("cpu", q("1e20")), INT64_MAX);  // SafeMilliValue clamps
}

// resources.AmountFromQuantity: quotas too large for an int64 Amount are Unlimited.
TEST(KueueAmounts, QuotasBecomeUnlimitedWhenTooLarge) {
  EXPECT_EQ(quota_amount("cpu", q("9223372036854774")), 9223372036854774000);
  EXPECT_EQ(quota_amount("cpu", q("9223372036854775")), kUnlimited);
  EXPECT_EQ(quota_amount("cpu", q("1E")), kUnlimited);
  EXPECT_EQ(quota_amount("memory", q("8Ei")), kUnlimited);  // parsed as 2^63-1
  EXPECT_EQ(quota_amount("memory", q("7Ei")), 8070450532247928832);
  EXPECT_EQ(quota_amount("pods", q("110")), 110);
}

// ResourceFormatter.ResourceQuantity(...).String().
TEST(KueueAmounts, FormattedAsKueueWritesStatuses) {
  EXPECT_EQ(format_amount("cpu", 1500), "1500m");
  EXPECT_EQ(format_amount("cpu", 2000), "2");
  EXPECT_EQ(format_amount("cpu", 0), "0");
  EXPECT_EQ(format_amount("memory", 1073741824), "1Gi");
  EXPECT_EQ(format_amount("memory", 1610612736), "1536Mi");
  EXPECT_EQ(format_amount("memory", 1500000000), "1500M");  // binary SI cannot print it: re-read as decimal
  EXPECT_EQ(format_amount("memory", 512), "512");
  EXPECT_EQ(format_amount("ephemeral-storage", 2048), "2Ki");
  EXPECT_EQ(format_amount("hugepages-2Mi", 2097152), "2Mi");
  EXPECT_EQ(format_amount("nvidia.com/gpu", 4), "4");
  EXPECT_EQ(format_amount("pods", 1000), "1k");
  EXPECT_EQ(format_amount("example.com/bytes", 1024), "1024");  // only registered resources print in binary
}

// format_amount prints decimal SI amounts without the 128-bit Quantity; the text must be
// the Quantity's for every int64, including the extremes and every power of ten.
TEST(KueueAmounts, FastDecimalTextIsTheQuantitysText) {
  using twin::Amount;
  std::vector<Amount> amounts{0, 1, -1, 999, 1000, 1001, -1000, std::numeric_limits<Amount>::max(),
                              std::numeric_limits<Amount>::min(), std::numeric_limits<Amount>::min() + 1};
  for (Amount p = 1; p <= std::numeric_limits<Amount>::max() / 10; p *= 10) {
    for (const Amount m : {Amount{1}, Amount{3}, Amount{7}, Amount{9}}) {
      amounts.push_back(p * m);
      amounts.push_back(-p * m);
    }
  }
  std::mt19937_64 rng(7);  // explicit seed: the same values everywhere
  for (int i = 0; i < 20000; ++i) {
    const auto raw = static_cast<Amount>(rng());
    amounts.push_back(raw);
    amounts.push_back(raw / 1000 * 1000);
    amounts.push_back(raw % 100000 * 1000000);
  }
  for (const std::string resource : {"cpu", "nvidia.com/gpu", "pods", "memory", "hugepages-1Gi"}) {
    for (const Amount a : amounts) {
      EXPECT_EQ(format_amount(resource, a), resource_quantity(resource, a).to_string()) << resource << " " << a;
    }
  }
}

TEST(KueueAmounts, RoundTripThroughText) {
  for (const std::string resource : {"cpu", "memory", "nvidia.com/gpu"}) {
    for (const twin::Amount v : {0L, 1L, 999L, 1000L, 1024L, 1500L, 123456789L, 1073741824L, 1500000000L}) {
      EXPECT_EQ(resource_value(resource, q(format_amount(resource, v))), v) << resource << " " << v;
    }
  }
}

}  // namespace
}  // namespace gpubank::kueue
