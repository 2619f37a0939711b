#include "metrics/histogram.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace gpubank::metrics {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// ---- histogram_quantile ----

TEST(BucketQuantile, InterpolatesLinearlyInsideTheBucket) {
  // rank 0.75 * 20 = 15 falls in (1, 2] (counts 10 -> 20): 1 + 1 * 5 / 10.
  EXPECT_EQ(bucket_quantile(0.75, {{1, 10}, {2, 20}, {kInf, 20}}), 1.5);
  // q = 1: the rank is every observation, reached at the top of (1, 2].
  EXPECT_EQ(bucket_quantile(1, {{1, 10}, {2, 20}, {kInf, 20}}), 2);
}

TEST(BucketQuantile, TheLowestBucketStartsAtZeroWhenItsBoundIsPositive) {
  // rank 25 of 100 in (0, 10]: 10 * 25 / 50.
  EXPECT_EQ(bucket_quantile(0.25, {{10, 50}, {20, 100}, {kInf, 100}}), 5);
  // A lowest bound <= 0 is returned as it is.
  EXPECT_EQ(bucket_quantile(0.25, {{-1, 10}, {1, 20}, {kInf, 20}}), -1);
  EXPECT_EQ(bucket_quantile(0.25, {{0, 10}, {1, 20}, {kInf, 20}}), 0);
}

TEST(BucketQuantile, ARankInThePlusInfBucketGivesTheSecondHighestBound) {
  EXPECT_EQ(bucket_quantile(0.9, {{1, 10}, {2, 10}, {kInf, 20}}), 2);
  EXPECT_EQ(bucket_quantile(0.5, {{0.5, 0}, {kInf, 3}}), 0.5);
}

TEST(BucketQuantile, SpecialCases) {
  const std::vector<Bucket> normal = {{1, 10}, {2, 20}, {kInf, 20}};
  EXPECT_TRUE(std::isnan(bucket_quantile(kNaN, normal)));
  EXPECT_EQ(bucket_quantile(-0.1, normal), -kInf);
  EXPECT_EQ(bucket_quantile(1.1, normal), kInf);
  EXPECT_TRUE(std::isnan(bucket_quantile(0.5, {{1, 10}, {2, 20}})));           // no +Inf bucket
  EXPECT_TRUE(std::isnan(bucket_quantile(0.5, {{kInf, 20}})));                 // fewer than two buckets
  EXPECT_TRUE(std::isnan(bucket_quantile(0.5, {{1, 0}, {2, 0}, {kInf, 0}})));  // no observations
  EXPECT_TRUE(std::isnan(bucket_quantile(0.5, {})));
  // q = 0 with an empty lowest bucket interpolates 0 / 0, as Prometheus 2.42 does.
  EXPECT_TRUE(std::isnan(bucket_quantile(0, {{1, 0}, {2, 10}, {kInf, 10}})));
}

TEST(BucketQuantile, SortsMergesEqualBoundsAndForcesMonotonicity) {
  EXPECT_EQ(bucket_quantile(0.75, {{kInf, 20}, {2, 20}, {1, 10}}), 1.5);
  // le="1" and le="1.0" are different series with the same bound: one bucket of 10.
  EXPECT_EQ(bucket_quantile(0.75, {{1, 4}, {2, 20}, {1, 6}, {kInf, 20}}), 1.5);
  // 8 below the 10 of the bucket before it is raised to 10: rank 10 is reached at 1.
  EXPECT_EQ(bucket_quantile(0.5, {{1, 10}, {2, 8}, {3, 20}, {kInf, 20}}), 1);
  // Without the envelope the rank 12 would land in (2, 3] from 8; with it, from 10.
  EXPECT_EQ(bucket_quantile(0.6, {{1, 10}, {2, 8}, {3, 20}, {kInf, 20}}), 2 + 1 * (2.0 / 10));
}

// ---- rate, increase, delta ----

std::vector<Point> linear(std::int64_t from_s, std::int64_t to_s, std::int64_t step_s, double start, double slope) {
  std::vector<Point> points;
  for (std::int64_t t = from_s; t <= to_s; t += step_s) {
    points.push_back({t * 1000, start + slope * static_cast<double>(t - from_s)});
  }
  return points;
}

TEST(Rate, SelectsBothEdgesOfTheRange) {
  const auto series = linear(0, 300, 15, 0, 1);
  EXPECT_EQ(select(series, {300'000, 300'000}).size(), 21U);  // 0 s and 300 s included
  EXPECT_EQ(select(series, {299'999, 300'000}).size(), 20U);
  EXPECT_EQ(select(series, {-1, 300'000}).size(), 0U);
}

TEST(Rate, SamplesOnBothEdgesNeedNoExtrapolation) {
  const auto series = linear(0, 300, 15, 0, 1);
  EXPECT_EQ(increase(series, {300'000, 300'000}), 300);
  EXPECT_EQ(rate(series, {300'000, 300'000}), 1);
}

TEST(Rate, ExtrapolatesToEdgesWithinOneAndATenthIntervals) {
  // Window [10 s, 310 s]: samples 15 s .. 300 s (increase 285), 5 s and 10 s from the
  // edges (under 1.1 * 15 s): extrapolated over the whole 300 s.
  const auto series = linear(0, 300, 15, 0, 1);
  EXPECT_NEAR(*increase(series, {310'000, 300'000}), 300, 1e-12);
}

TEST(Rate, ExtrapolatesHalfAnIntervalWhereTheSeriesStartsOrEnds) {
  // A gauge from 60 s to 120 s in the window [0, 120 s]: 60 s from the start, so only
  // 7.5 s (half an interval) is added: 60 * 67.5 / 60.
  const auto series = linear(60, 120, 15, 5, 1);
  EXPECT_EQ(delta(series, {120'000, 120'000}), 67.5);
  // The same window ending 60 s after the last sample.
  EXPECT_EQ(delta(series, {180'000, 180'000}), 60 * 75.0 / 60);
}

TEST(Rate, ACounterIsNotExtrapolatedBelowZero) {
  // The counter was 5 at 60 s, rising 1/s: zero 5 s earlier. The start extrapolates 5 s,
  // not 7.5 s: increase 65, the counter's whole value.
  const auto series = linear(60, 120, 15, 5, 1);
  EXPECT_NEAR(*increase(series, {120'000, 120'000}), 65, 1e-12);
  EXPECT_NEAR(*rate(series, {120'000, 120'000}), 65.0 / 120, 1e-15);
  // Where the zero point lies before the start's extrapolation, it does not matter.
  EXPECT_EQ(increase(linear(60, 120, 15, 500, 1), {120'000, 120'000}), 67.5);
}

TEST(Rate, CounterResetsAddTheValueBeforeTheReset) {
  const std::vector<Point> series = {{0, 10}, {10'000, 20}, {20'000, 5}, {30'000, 15}};
  // 15 - 10 + 20 = 25 over samples that span the whole window.
  EXPECT_EQ(increase(series, {30'000, 30'000}), 25);
  // A gauge has no resets.
  EXPECT_EQ(delta(series, {30'000, 30'000}), 5);
}

TEST(Rate, FewerThanTwoSamplesGiveNothing) {
  const std::vector<Point> one = {{60'000, 3}};
  EXPECT_FALSE(rate(one, {60'000, 300'000}).has_value());
  EXPECT_FALSE(rate({}, {60'000, 300'000}).has_value());
  EXPECT_FALSE(rate(linear(0, 300, 15, 0, 1), {600'000, 200'000}).has_value());
}

// ---- from snapshots ----

TEST(BucketSeries, TurnsSnapshotsIntoOneSeriesPerBound) {
  const std::vector<HistogramSnapshot> snapshots = {
      {0, {{0.5, 1}, {1, 2}, {kInf, 3}}},
      {15'000, {{kInf, 5}, {0.5, 2}, {1, 4}}},
      {30'000, {{0.5, 4}, {kInf, 9}}},  // the 1 s bucket missed this scrape
  };
  const auto series = bucket_series(snapshots);
  ASSERT_TRUE(series.ok()) << series.error();
  ASSERT_EQ(series->size(), 3U);
  EXPECT_EQ((*series)[0].upper_bound, 0.5);
  EXPECT_EQ((*series)[0].points, (std::vector<Point>{{0, 1}, {15'000, 2}, {30'000, 4}}));
  EXPECT_EQ((*series)[1].points, (std::vector<Point>{{0, 2}, {15'000, 4}}));
  EXPECT_TRUE(std::isinf((*series)[2].upper_bound));

  // Rates over [0, 30 s]: 0.5 s bucket 3/30; 1 s bucket 2 over 15 s, its last sample 15 s
  // (under 1.1 intervals) from the end, so extrapolated to 4/30; +Inf 6/30. p50: rank 3/30
  // is reached at the top of (0, 0.5].
  const auto p50 = quantile_of_rate(0.5, *series, {30'000, 30'000});
  ASSERT_TRUE(p50.has_value());
  EXPECT_NEAR(*p50, 0.5, 1e-15);
}

TEST(BucketSeries, RefusesSnapshotsOutOfOrderOrWithRepeatedBounds) {
  const std::vector<HistogramSnapshot> out_of_order = {{15'000, {{kInf, 1}}}, {15'000, {{kInf, 2}}}};
  EXPECT_EQ(bucket_series(out_of_order).error(),
            "histogram snapshot 1 at 15000 ms is not after the one before it (15000 ms) [metrics.snapshot-order]");
  const std::vector<HistogramSnapshot> repeated = {{0, {{1, 1}, {1, 2}, {kInf, 2}}}};
  EXPECT_EQ(bucket_series(repeated).error(),
            "histogram snapshot at 0 ms has the bound 1 twice [metrics.duplicate-series]");
  const std::vector<HistogramSnapshot> nan = {{0, {{kNaN, 1}, {kInf, 2}}}};
  EXPECT_EQ(bucket_series(nan).error(), "histogram snapshot at 0 ms has a bucket bounded by NaN [metrics.bucket-label]");
}

TEST(QuantileOfRate, NothingWhenNoBucketHasARate) {
  const std::vector<BucketSeries> series = {{1, {{0, 1}}}, {kInf, {{0, 2}}}};
  EXPECT_FALSE(quantile_of_rate(0.95, series, {0, 300'000}).has_value());
}

TEST(HistogramChildren, OnlyForHistograms) {
  const Family gauge{"g", MetricType::gauge, "", {}};
  EXPECT_EQ(histogram_children(gauge).error(), "g is a gauge, not a histogram [metrics.not-a-histogram]");
  Family h{"h", MetricType::histogram, "", {}};
  h.samples.push_back({"h_bucket", {{"pool", "a"}}, 1, std::nullopt});
  EXPECT_EQ(histogram_children(h).error(), "h_bucket{pool=\"a\"} has no \"le\" label [metrics.bucket-label]");
}

TEST(HistogramChildren, GroupsByTheLabelsOtherThanLeInAnyOrder) {
  Family h{"h", MetricType::histogram, "", {}};
  h.samples.push_back({"h_bucket", {{"pool", "a"}, {"le", "1"}, {"zone", "x"}}, 1, std::nullopt});
  h.samples.push_back({"h_bucket", {{"zone", "x"}, {"le", "+Inf"}, {"pool", "a"}}, 2, std::nullopt});
  h.samples.push_back({"h_count", {{"pool", "a"}, {"zone", "x"}}, 2, std::nullopt});
  h.samples.push_back({"h_created", {{"pool", "a"}, {"zone", "x"}}, 1.7e9, std::nullopt});
  h.samples.push_back({"h_sum", {{"pool", "b"}}, 0.5, std::nullopt});
  const auto children = histogram_children(h);
  ASSERT_TRUE(children.ok()) << children.error();
  ASSERT_EQ(children->size(), 2U);
  EXPECT_EQ((*children)[0].labels, (std::vector<Label>{{"pool", "a"}, {"zone", "x"}}));
  EXPECT_EQ((*children)[0].buckets, (std::vector<Bucket>{{1, 1}, {kInf, 2}}));
  EXPECT_EQ((*children)[0].count, 2.0);
  EXPECT_FALSE((*children)[0].sum.has_value());
  EXPECT_EQ((*children)[1].sum, 0.5);
  EXPECT_TRUE((*children)[1].buckets.empty());
}

}  // namespace
}  // namespace gpubank::metrics
