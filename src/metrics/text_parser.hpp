// A parser for the Prometheus text exposition format 0.0.4: what vLLM (prometheus_client),
// dcgm-exporter and Prometheus itself serve on /metrics.
//
// It reads "# HELP" and "# TYPE" lines, comments, and sample lines with labels, escaped
// label values, NaN/+Inf/-Inf and optional timestamps, and groups samples into families:
// a histogram's _bucket/_sum/_count (and _created) series, a counter's _total/_created.
// OpenMetrics' "# EOF" ends the input.
//
// What it accepts follows Prometheus 2.42's scrape parser (model/textparse/promparse.go,
// promlex.l) and the format's specification, stricter in a few places, each refused with
// an error "line L, column C: what is wrong [rule]":
// - the samples of a family must be contiguous, with HELP/TYPE before them, at most one of
//   each (the specification's rule, which expfmt enforces too);
// - label escapes are only \\, \" and \n (expfmt's rule; Prometheus keeps others as they are);
// - a series appears once per family; a histogram bucket has a numeric "le", a summary
//   quantile a numeric "quantile"; label names may not begin with "__";
// - the last line ends with a line feed, as the specification requires.
// Hostile input is bounded by ParseLimits; the parser never crashes and allocates at most
// in proportion to the input it accepted.
#pragma once

#include <cstddef>
#include <string_view>

#include "core/expected.hpp"
#include "metrics/exposition.hpp"

namespace gpubank::metrics {

struct ParseLimits {
  std::size_t max_bytes = std::size_t{16} << 20;  // a vLLM or dcgm-exporter page is tens of KiB
  std::size_t max_lines = 200'000;
  std::size_t max_labels_per_sample = 64;
  std::size_t max_label_value_bytes = 4096;  // unescaped
};

// Rule ids of errors only the parser reports; bad names, repeated labels or series, bucket
// labels and UTF-8 share the writer's ids (names.hpp, exposition.hpp).
inline constexpr std::string_view kRuleTextTooLarge = "metrics.text.too-large";
inline constexpr std::string_view kRuleTextTooManyLines = "metrics.text.too-many-lines";
inline constexpr std::string_view kRuleTextTooManyLabels = "metrics.text.too-many-labels";
inline constexpr std::string_view kRuleTextLabelValueTooLong = "metrics.text.label-value-too-long";
inline constexpr std::string_view kRuleTextUnterminated = "metrics.text.unterminated-label-value";
inline constexpr std::string_view kRuleTextEscape = "metrics.text.escape";
inline constexpr std::string_view kRuleTextValue = "metrics.text.value";
inline constexpr std::string_view kRuleTextTimestamp = "metrics.text.timestamp";
inline constexpr std::string_view kRuleTextSyntax = "metrics.text.syntax";
inline constexpr std::string_view kRuleTextMetadata = "metrics.text.metadata";
inline constexpr std::string_view kRuleTextFamilyOrder = "metrics.text.family-not-contiguous";
inline constexpr std::string_view kRuleTextAfterEof = "metrics.text.after-eof";

// The families in input order, each with its samples in input order.
[[nodiscard]] Expected<Exposition> parse_text(std::string_view text, const ParseLimits& limits = {});

}  // namespace gpubank::metrics
