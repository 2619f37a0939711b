// PromQL's rate()/increase()/delta() and histogram_quantile() over classic (bucketed)
// histograms, computed the way Prometheus computes them, so that a quantile taken from
// scraped text (the inference autoscaler reads vLLM's /metrics directly) is the number
// `histogram_quantile(0.95, rate(x_bucket[5m]))` gives in Prometheus.
//
// Matched against Prometheus v2.42.0 (the promtool of Debian 12, which the tests run):
// promql/functions.go extrapolatedRate and funcHistogramQuantile, promql/quantile.go
// bucketQuantile, coalesceBuckets and ensureMonotonic, and the range selection of
// promql/engine.go. The same operations in the same order, so results are equal to the
// last bit. Later Prometheus releases differ in three places:
// - 2.49 treats bucket counts that differ by a relative 1e-12 as equal before forcing
//   monotonicity (ensureMonotonicAndIgnoreSmallDeltas);
// - 2.51 caps the distance to the range start at half a sample interval before, not
//   after, limiting extrapolation at the counter's zero point (commit 7f912db);
// - 3.0 selects (start, end] instead of [start, end].
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "core/expected.hpp"
#include "metrics/exposition.hpp"

namespace gpubank::metrics {

// Rule ids of the checks here (and kRuleBucketLabel, kRuleDuplicateSeries of exposition.hpp).
inline constexpr std::string_view kRuleSnapshotOrder = "metrics.snapshot-order";
inline constexpr std::string_view kRuleNotAHistogram = "metrics.not-a-histogram";

// One sample of a series: Prometheus' millisecond timestamp and the value.
struct Point {
  std::int64_t t_ms = 0;
  double value = 0;
  friend bool operator==(const Point&, const Point&) = default;
};

// A range selector `x[range]` evaluated at `at_ms` (an offset is already subtracted from
// at_ms). It selects the points with at_ms - range_ms <= t <= at_ms.
struct Range {
  std::int64_t at_ms = 0;
  std::int64_t range_ms = 0;
};

enum class RangeFunction {
  rate,      // per-second increase of a counter (resets handled)
  increase,  // increase of a counter (resets handled)
  delta,     // difference of a gauge (no resets)
};

// The points of `series` (sorted by strictly increasing time) that the range selects.
[[nodiscard]] std::span<const Point> select(std::span<const Point> series, Range range);

// extrapolatedRate: `points` are what the range selected. Nothing when fewer than two
// points were selected: PromQL then returns no sample for the series.
//
// A counter reset (a value below the previous one) adds the previous value. The change
// between the first and last point is extrapolated to the range's edges when they lie
// within 1.1 average sample intervals of them, otherwise by half an average interval;
// for counters, never beyond the point where the counter would have been zero.
[[nodiscard]] std::optional<double> extrapolated(RangeFunction function, std::span<const Point> points,
                                                 Range range);

// select, then extrapolated.
[[nodiscard]] std::optional<double> rate(std::span<const Point> series, Range range);
[[nodiscard]] std::optional<double> increase(std::span<const Point> series, Range range);
[[nodiscard]] std::optional<double> delta(std::span<const Point> series, Range range);

// A classic histogram bucket: upper bound (le) and the count of observations <= it.
struct Bucket {
  double upper_bound = 0;
  double count = 0;
  friend bool operator==(const Bucket&, const Bucket&) = default;
};

// histogram_quantile(q, ...) for the buckets of one series (one label set without le):
// - q NaN gives NaN, q < 0 gives -Inf, q > 1 gives +Inf;
// - buckets are sorted by bound; without a +Inf bucket the result is NaN;
// - buckets with the same bound are merged (le="1" and le="1.0"), and counts are made
//   monotonic (a count below an earlier bucket's is raised to it);
// - fewer than two buckets, or no observations (+Inf count 0), give NaN;
// - the rank q * count falls into the first bucket whose count reaches it; inside it the
//   result is interpolated linearly from the bucket below's bound (0 for the lowest bucket
//   when its bound is positive; a lowest bound <= 0 is returned as it is);
// - a rank in the +Inf bucket gives the second-highest bound.
// NaN bounds (le="NaN") sort first here; Prometheus leaves their order to its sort.
[[nodiscard]] double bucket_quantile(double q, std::vector<Bucket> buckets);

// The samples of one bucket series over time.
struct BucketSeries {
  double upper_bound = 0;
  std::vector<Point> points;
};

// histogram_quantile(q, rate(x_bucket[range])) for one histogram series: the rate of each
// bucket, then bucket_quantile over the buckets that have one. Nothing when no bucket has
// a rate (PromQL returns no sample).
[[nodiscard]] std::optional<double> quantile_of_rate(double q, std::span<const BucketSeries> buckets, Range range);

// A histogram as one scrape saw it: cumulative buckets (the +Inf one included).
struct HistogramSnapshot {
  std::int64_t t_ms = 0;
  std::vector<Bucket> buckets;
};

// Successive snapshots of one histogram series as one series per bucket bound, sorted by
// bound. Errors: snapshots not in strictly increasing time, a NaN bound, or a bound twice
// in one snapshot. A bound missing from some snapshots simply has no point there.
[[nodiscard]] Expected<std::vector<BucketSeries>> bucket_series(std::span<const HistogramSnapshot> snapshots);

// One series of a parsed histogram family: its labels without "le", its cumulative
// buckets in input order, and _sum / _count when present.
struct HistogramChild {
  std::vector<Label> labels;
  std::vector<Bucket> buckets;
  std::optional<double> sum;
  std::optional<double> count;
};

// The series of a histogram family (as parse_text returns it), in order of first
// appearance, grouped by their labels other than "le" (in any order). Errors: the family
// is not a histogram, or a bucket has no numeric "le".
[[nodiscard]] Expected<std::vector<HistogramChild>> histogram_children(const Family& family);

}  // namespace gpubank::metrics
