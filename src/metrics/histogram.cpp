#include "metrics/histogram.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <unordered_map>

#include "metrics/names.hpp"
#include "metrics/number.hpp"

namespace gpubank::metrics {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// time.Duration.Seconds() of a range given in milliseconds, computed as Go does (whole
// seconds plus the nanosecond remainder).
double range_seconds(std::int64_t range_ms) {
  const std::int64_t ns = range_ms * 1'000'000;
  const std::int64_t sec = ns / 1'000'000'000;
  const std::int64_t nsec = ns % 1'000'000'000;
  return static_cast<double>(sec) + static_cast<double>(nsec) / 1e9;
}

// Go's sort.Search: the smallest i in [0, n) with f(i) true, or n, by the same bisection
// (which matters only when f is not monotonic, e.g. with NaN counts).
template <class F>
std::size_t go_search(std::size_t n, F f) {
  std::size_t i = 0;
  std::size_t j = n;
  while (i < j) {
    const std::size_t h = (i + j) >> 1;
    if (!f(h)) {
      i = h + 1;
    } else {
      j = h;
    }
  }
  return i;
}

std::int64_t range_start(Range range) {
  std::int64_t start = 0;
  if (__builtin_sub_overflow(range.at_ms, range.range_ms, &start)) start = std::numeric_limits<std::int64_t>::min();
  return start;
}

}  // namespace

std::span<const Point> select(std::span<const Point> series, Range range) {
  const std::int64_t start = range_start(range);
  const auto first = std::lower_bound(series.begin(), series.end(), start,
                                      [](const Point& p, std::int64_t t) { return p.t_ms < t; });
  const auto last = std::upper_bound(first, series.end(), range.at_ms,
                                     [](std::int64_t t, const Point& p) { return t < p.t_ms; });
  return series.subspan(static_cast<std::size_t>(first - series.begin()), static_cast<std::size_t>(last - first));
}

// promql/functions.go extrapolatedRate, v2.42.0, for float samples.
std::optional<double> extrapolated(RangeFunction function, std::span<const Point> points, Range range) {
  const bool is_counter = function != RangeFunction::delta;
  const bool is_rate = function == RangeFunction::rate;
  if (points.size() < 2) return std::nullopt;

  const Point& first = points.front();
  const Point& last = points.back();
  double result = last.value - first.value;
  if (is_counter) {
    double previous = first.value;
    for (const Point& p : points.subspan(1)) {
      if (p.value < previous) result += previous;  // a reset: the counter restarted from zero
      previous = p.value;
    }
  }

  double duration_to_start = static_cast<double>(first.t_ms - range_start(range)) / 1000;
  const double duration_to_end = static_cast<double>(range.at_ms - last.t_ms) / 1000;
  const double sampled_interval = static_cast<double>(last.t_ms - first.t_ms) / 1000;
  const double average_between_samples = sampled_interval / static_cast<double>(points.size() - 1);

  if (is_counter && result > 0 && first.value >= 0) {
    // Extrapolating further back than where the counter was zero would invent increase.
    const double duration_to_zero = sampled_interval * (first.value / result);
    if (duration_to_zero < duration_to_start) duration_to_start = duration_to_zero;
  }

  // Within 1.1 average intervals of an edge, the series is taken to go on to the edge;
  // otherwise it is taken to start or end half an interval beyond its outer samples.
  const double threshold = average_between_samples * 1.1;
  double extrapolate_to = sampled_interval;
  extrapolate_to += duration_to_start < threshold ? duration_to_start : average_between_samples / 2;
  extrapolate_to += duration_to_end < threshold ? duration_to_end : average_between_samples / 2;

  double factor = extrapolate_to / sampled_interval;
  if (is_rate) factor /= range_seconds(range.range_ms);
  return result * factor;
}

std::optional<double> rate(std::span<const Point> series, Range range) {
  return extrapolated(RangeFunction::rate, select(series, range), range);
}

std::optional<double> increase(std::span<const Point> series, Range range) {
  return extrapolated(RangeFunction::increase, select(series, range), range);
}

std::optional<double> delta(std::span<const Point> series, Range range) {
  return extrapolated(RangeFunction::delta, select(series, range), range);
}

// promql/quantile.go bucketQuantile, coalesceBuckets and ensureMonotonic, v2.42.0.
double bucket_quantile(double q, std::vector<Bucket> buckets) {
  if (std::isnan(q)) return kNaN;
  if (q < 0) return -kInf;
  if (q > 1) return kInf;
  // PromQL never calls it without buckets (the series would not exist).
  if (buckets.empty()) return kNaN;

  std::stable_sort(buckets.begin(), buckets.end(), [](const Bucket& a, const Bucket& b) {
    if (std::isnan(a.upper_bound)) return !std::isnan(b.upper_bound);
    return !std::isnan(b.upper_bound) && a.upper_bound < b.upper_bound;
  });
  if (!std::isinf(buckets.back().upper_bound) || buckets.back().upper_bound < 0) return kNaN;

  // Buckets with the same bound (le="1" and le="1.0" are different series) are one bucket.
  std::size_t kept = 0;
  for (std::size_t i = 1; i < buckets.size(); ++i) {
    if (buckets[i].upper_bound == buckets[kept].upper_bound) {
      buckets[kept].count += buckets[i].count;
    } else {
      buckets[++kept] = buckets[i];
    }
  }
  buckets.resize(kept + 1);

  // Buckets scraped or rated at slightly different moments can break monotonicity; take
  // the envelope.
  double max = buckets[0].count;
  for (std::size_t i = 1; i < buckets.size(); ++i) {
    if (buckets[i].count > max) {
      max = buckets[i].count;
    } else if (buckets[i].count < max) {
      buckets[i].count = max;
    }
  }

  if (buckets.size() < 2) return kNaN;
  const double observations = buckets.back().count;
  if (observations == 0) return kNaN;
  double rank = q * observations;
  const std::size_t b = go_search(buckets.size() - 1, [&](std::size_t i) { return buckets[i].count >= rank; });

  if (b == buckets.size() - 1) return buckets[buckets.size() - 2].upper_bound;
  if (b == 0 && buckets[0].upper_bound <= 0) return buckets[0].upper_bound;
  double bucket_start = 0;
  const double bucket_end = buckets[b].upper_bound;
  double count = buckets[b].count;
  if (b > 0) {
    bucket_start = buckets[b - 1].upper_bound;
    count -= buckets[b - 1].count;
    rank -= buckets[b - 1].count;
  }
  return bucket_start + (bucket_end - bucket_start) * (rank / count);
}

std::optional<double> quantile_of_rate(double q, std::span<const BucketSeries> buckets, Range range) {
  std::vector<Bucket> rated;
  rated.reserve(buckets.size());
  for (const BucketSeries& series : buckets) {
    if (const auto r = rate(series.points, range)) rated.push_back({series.upper_bound, *r});
  }
  if (rated.empty()) return std::nullopt;
  return bucket_quantile(q, std::move(rated));
}

Expected<std::vector<BucketSeries>> bucket_series(std::span<const HistogramSnapshot> snapshots) {
  std::map<double, std::vector<Point>> by_bound;
  for (std::size_t i = 0; i < snapshots.size(); ++i) {
    const HistogramSnapshot& s = snapshots[i];
    if (i > 0 && s.t_ms <= snapshots[i - 1].t_ms) {
      return Unexpected{with_rule("histogram snapshot " + std::to_string(i) + " at " + std::to_string(s.t_ms) +
                                      " ms is not after the one before it (" + std::to_string(snapshots[i - 1].t_ms) +
                                      " ms)",
                                  kRuleSnapshotOrder)};
    }
    for (const Bucket& b : s.buckets) {
      if (std::isnan(b.upper_bound)) {
        return Unexpected{with_rule("histogram snapshot at " + std::to_string(s.t_ms) + " ms has a bucket bounded by NaN",
                                    kRuleBucketLabel)};
      }
      auto& points = by_bound[b.upper_bound];
      if (!points.empty() && points.back().t_ms == s.t_ms) {
        return Unexpected{with_rule("histogram snapshot at " + std::to_string(s.t_ms) + " ms has the bound " +
                                        format_value(b.upper_bound) + " twice",
                                    kRuleDuplicateSeries)};
      }
      points.push_back({s.t_ms, b.count});
    }
  }
  std::vector<BucketSeries> out;
  out.reserve(by_bound.size());
  for (auto& [bound, points] : by_bound) out.push_back({bound, std::move(points)});
  return out;
}

Expected<std::vector<HistogramChild>> histogram_children(const Family& family) {
  if (family.type != MetricType::histogram) {
    return Unexpected{with_rule(family.name + " is a " + std::string(to_string(family.type)) + ", not a histogram",
                                kRuleNotAHistogram)};
  }
  std::vector<HistogramChild> children;
  std::unordered_map<std::string, std::size_t> index;  // labels without le -> child
  const std::string bucket_name = family.name + "_bucket";
  const std::string sum_name = family.name + "_sum";
  const std::string count_name = family.name + "_count";
  // The labels other than le of two samples, in order, are the same: the usual case of
  // one child's series written one after the other, which skips the grouping key.
  const auto same_child = [](const Sample& a, const Sample& b) {
    auto x = a.labels.begin(), y = b.labels.begin();
    while (true) {
      while (x != a.labels.end() && x->name == "le") ++x;
      while (y != b.labels.end() && y->name == "le") ++y;
      if (x == a.labels.end() || y == b.labels.end()) return x == a.labels.end() && y == b.labels.end();
      if (x->name != y->name || x->value != y->value) return false;
      ++x;
      ++y;
    }
  };
  const Sample* previous = nullptr;
  std::size_t previous_child = 0;
  for (const Sample& s : family.samples) {
    const bool is_bucket = s.name == bucket_name;
    if (!is_bucket && s.name != sum_name && s.name != count_name) continue;  // _created
    std::optional<double> le;
    for (const Label& l : s.labels) {
      if (is_bucket && l.name == "le") {
        le = parse_value(l.value);
        if (!le || std::isnan(*le)) {
          return Unexpected{with_rule(series_text(s.name, s.labels) + ": \"le\" is not a number", kRuleBucketLabel)};
        }
      }
    }
    if (is_bucket && !le) {
      return Unexpected{with_rule(series_text(s.name, s.labels) + " has no \"le\" label", kRuleBucketLabel)};
    }
    std::size_t at = 0;
    if (previous != nullptr && same_child(*previous, s)) {
      at = previous_child;
    } else {
      std::vector<Label> labels;
      for (const Label& l : s.labels) {
        if (!(is_bucket && l.name == "le")) labels.push_back(l);
      }
      std::vector<Label> sorted = labels;
      std::sort(sorted.begin(), sorted.end(), [](const Label& a, const Label& b) { return a.name < b.name; });
      const auto [it, inserted] = index.emplace(series_text("", sorted), children.size());
      if (inserted) children.push_back({std::move(labels), {}, std::nullopt, std::nullopt});
      at = it->second;
    }
    previous = &s;
    previous_child = at;
    HistogramChild& child = children[at];
    if (is_bucket) {
      child.buckets.push_back({*le, s.value});
    } else if (s.name == sum_name) {
      child.sum = s.value;
    } else {
      child.count = s.value;
    }
  }
  return children;
}

}  // namespace gpubank::metrics
