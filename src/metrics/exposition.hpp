// Metric families and samples as the Prometheus text exposition format 0.0.4 carries them
// (https://prometheus.io/docs/instrumenting/exposition_formats/), and the writer.
//
// The same values come out of the parser (text_parser.hpp) and out of a Registry
// (registry.hpp), so parse_text(write_text(x)) == x can be checked directly.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/expected.hpp"

namespace gpubank::metrics {

// Prometheus' TYPE line values. The registry makes no summaries, but the parser reads them.
enum class MetricType { counter, gauge, histogram, summary, untyped };

[[nodiscard]] std::string_view to_string(MetricType type);

struct Label {
  std::string name;
  std::string value;
  friend bool operator==(const Label&, const Label&) = default;
};

struct Sample {
  std::string name;           // the family's name plus its suffix ("_bucket", "_total", ...), if any
  std::vector<Label> labels;  // as written (the registry writes its label names in declared order, "le" last)
  double value = 0;
  std::optional<std::int64_t> timestamp_ms;

  // NaN equals NaN here: a sample that reads back unchanged is the same sample.
  friend bool operator==(const Sample& a, const Sample& b);
};

struct Family {
  std::string name;
  MetricType type = MetricType::untyped;  // untyped when no TYPE line names it
  std::string help;                       // unescaped; empty when there is no HELP line
  std::vector<Sample> samples;
  friend bool operator==(const Family&, const Family&) = default;
};

struct Exposition {
  std::vector<Family> families;

  [[nodiscard]] const Family* find(std::string_view name) const;
  friend bool operator==(const Exposition&, const Exposition&) = default;
};

// Whether a sample named `sample` belongs to the family `family` of type `type`, the way
// Prometheus names the series of each type:
//   counter    family, family_total, family_created, and <family without _total>_created
//              (0.0.4 clients name the family after the _total series, OpenMetrics without it)
//   gauge, untyped   family
//   histogram  family_bucket, family_sum, family_count, family_created
//   summary    family, family_sum, family_count, family_created
[[nodiscard]] bool belongs_to(MetricType type, std::string_view family, std::string_view sample);

// Rule ids of the writer's checks (names: see names.hpp).
inline constexpr std::string_view kRuleSampleName = "metrics.sample-name";
inline constexpr std::string_view kRuleDuplicateLabel = "metrics.duplicate-label";
inline constexpr std::string_view kRuleDuplicateSeries = "metrics.duplicate-series";
inline constexpr std::string_view kRuleBucketLabel = "metrics.bucket-label";
inline constexpr std::string_view kRuleDuplicateFamily = "metrics.duplicate-family";

// Renders text format 0.0.4, in the order given: per family "# HELP" (when there is help
// text), "# TYPE", then one line per sample, `name{label="value",...} value [timestamp]`.
// HELP text escapes '\' and newline, label values '\', '"' and newline; values are
// written by format_value. Refuses what would not read back as written, naming the family,
// the sample and the rule: invalid or reserved names, a sample name that does not belong
// to its family, repeated label names or series, a histogram bucket without a numeric
// "le", a family named twice, text that is not UTF-8.
[[nodiscard]] Expected<std::string> write_text(const Exposition& exposition);

// "name{a=\"x\",b=\"y\"}" as the text format writes it, for messages.
[[nodiscard]] std::string series_text(std::string_view name, const std::vector<Label>& labels);

}  // namespace gpubank::metrics
