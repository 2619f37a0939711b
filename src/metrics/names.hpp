// Prometheus' naming rules, shared by the registry, the writer and the parser.
//
// From Prometheus' data model (docs/concepts/data_model.md) as the text format 0.0.4 can
// carry them: metric names match [a-zA-Z_:][a-zA-Z0-9_:]*, label names
// [a-zA-Z_][a-zA-Z0-9_]* (no colon: colons are for recording rules' metric names), and
// label names beginning with "__" are reserved for Prometheus' own use. Prometheus 3
// accepts any UTF-8 name when it is quoted, which 0.0.4 cannot express, so such names are
// refused here. Label values and HELP text are UTF-8, as Prometheus' scrape parser requires.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace gpubank::metrics {

// Rule ids; every error of the metrics library ends with one in brackets.
inline constexpr std::string_view kRuleMetricName = "metrics.metric-name";
inline constexpr std::string_view kRuleLabelName = "metrics.label-name";
inline constexpr std::string_view kRuleReservedLabel = "metrics.reserved-label";
inline constexpr std::string_view kRuleUtf8 = "metrics.utf8";

[[nodiscard]] bool is_metric_name(std::string_view name);
[[nodiscard]] bool is_label_name(std::string_view name);  // the pattern only; see check_label_name

// Each returns nothing when the name is valid, else a sentence that names it and the rule:
//   metric name "9lives" is invalid: metric names match [a-zA-Z_:][a-zA-Z0-9_:]* [metrics.metric-name]
[[nodiscard]] std::optional<std::string> check_metric_name(std::string_view name);
// Also refuses the reserved "__" prefix.
[[nodiscard]] std::optional<std::string> check_label_name(std::string_view name);
// Well-formed UTF-8 (core/utf8.hpp); `what` says whose text it is ("the HELP text of x").
[[nodiscard]] std::optional<std::string> check_utf8(std::string_view text, std::string_view what);

// "[rule]" appended to a sentence.
[[nodiscard]] std::string with_rule(std::string message, std::string_view rule);

}  // namespace gpubank::metrics
