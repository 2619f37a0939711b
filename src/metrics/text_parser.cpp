#include "metrics/text_parser.hpp"

#include <algorithm>
#include <cmath>
#include <unordered_map>
#include <utility>

#include "core/quote.hpp"
#include "metrics/names.hpp"
#include "metrics/number.hpp"

namespace gpubank::metrics {

namespace {

// Thrown inside the parser only; parse_text turns it into the error value.
struct Failure {
  std::string message;
};

bool is_blank(char c) { return c == ' ' || c == '\t'; }

std::size_t skip_blanks(std::string_view line, std::size_t i) {
  while (i < line.size() && is_blank(line[i])) ++i;
  return i;
}

// The token at i: everything up to a blank or the end of the line.
std::string_view word_at(std::string_view line, std::size_t i) {
  std::size_t end = i;
  while (end < line.size() && !is_blank(line[end])) ++end;
  return line.substr(i, end - i);
}

std::optional<MetricType> type_named(std::string_view word) {
  if (word == "counter") return MetricType::counter;
  if (word == "gauge") return MetricType::gauge;
  if (word == "histogram") return MetricType::histogram;
  if (word == "summary") return MetricType::summary;
  if (word == "untyped") return MetricType::untyped;
  return std::nullopt;
}

// An unambiguous key for a series: name and labels sorted by name, each part length-prefixed
// (label values may hold any byte, NUL included).
std::string series_key(std::string_view name, std::vector<Label> labels) {
  std::sort(labels.begin(), labels.end(), [](const Label& a, const Label& b) { return a.name < b.name; });
  std::string key;
  const auto put = [&key](std::string_view part) {
    key += std::to_string(part.size());
    key += ':';
    key += part;
  };
  put(name);
  for (const Label& l : labels) {
    put(l.name);
    put(l.value);
  }
  return key;
}

class Parser {
 public:
  Parser(std::string_view text, const ParseLimits& limits) : text_(text), limits_(limits) {}

  Exposition run() {
    if (text_.size() > limits_.max_bytes) too_large();
    std::size_t pos = 0;
    while (pos < text_.size()) {
      ++line_no_;
      if (line_no_ > limits_.max_lines) {
        fail(1, "the input has more than " + std::to_string(limits_.max_lines) + " lines", kRuleTextTooManyLines);
      }
      const std::size_t nl = text_.find('\n', pos);
      if (nl == std::string_view::npos) {
        fail(text_.size() - pos + 1, "the last line does not end with a line feed, as the format requires",
             kRuleTextSyntax);
      }
      parse_line(text_.substr(pos, nl - pos));
      pos = nl + 1;
    }
    return std::move(out_);
  }

 private:
  struct Closed {
    MetricType type;
    std::size_t last_line;
  };

  [[noreturn]] void fail(std::size_t column, const std::string& message, std::string_view rule) const {
    throw Failure{"line " + std::to_string(line_no_) + ", column " + std::to_string(column) + ": " +
                  with_rule(message, rule)};
  }
  // For messages that already end in their rule (from names.hpp).
  [[noreturn]] void fail_ruled(std::size_t column, const std::string& message) const {
    throw Failure{"line " + std::to_string(line_no_) + ", column " + std::to_string(column) + ": " + message};
  }

  [[noreturn]] void too_large() {
    // Where the first byte beyond the limit is.
    const std::string_view allowed = text_.substr(0, limits_.max_bytes);
    line_no_ = static_cast<std::size_t>(std::count(allowed.begin(), allowed.end(), '\n')) + 1;
    const std::size_t last_nl = allowed.rfind('\n');
    const std::size_t column = last_nl == std::string_view::npos ? allowed.size() + 1 : allowed.size() - last_nl;
    fail(column,
         "the input has " + std::to_string(text_.size()) + " bytes, more than the limit of " +
             std::to_string(limits_.max_bytes),
         kRuleTextTooLarge);
  }

  void parse_line(std::string_view line) {
    const std::size_t i = skip_blanks(line, 0);
    if (i == line.size()) return;
    if (after_eof_) fail(i + 1, "nothing may follow \"# EOF\"", kRuleTextAfterEof);
    if (line[i] == '#') {
      parse_comment(line, i);
    } else {
      parse_sample(line, i);
    }
  }

  // "# HELP name text", "# TYPE name type", "# EOF", or any other comment. As in
  // Prometheus' lexer, HELP and TYPE need a blank after '#' and after the keyword;
  // "#HELP x" is a comment.
  void parse_comment(std::string_view line, std::size_t hash) {
    const std::size_t k = skip_blanks(line, hash + 1);
    if (k == hash + 1) return;
    const std::string_view keyword = word_at(line, k);
    if (keyword == "EOF" && skip_blanks(line, k + 3) == line.size()) {
      after_eof_ = true;
      return;
    }
    if ((keyword != "HELP" && keyword != "TYPE") || k + 4 == line.size()) return;
    const std::size_t name_at = skip_blanks(line, k + 4);
    const std::string_view name = word_at(line, name_at);
    if (name.empty()) fail(name_at + 1, "expected a metric name after " + std::string(keyword), kRuleMetricName);
    if (auto bad = check_metric_name(name)) fail_ruled(name_at + 1, *bad);
    const std::size_t after_name = name_at + name.size();

    Family& family = family_for_metadata(name, name_at + 1);
    if (keyword == "HELP") {
      if (help_line_ != 0) {
        fail(name_at + 1, "a second HELP line for " + std::string(name) + " (the first is on line " +
                              std::to_string(help_line_) + ")",
             kRuleTextMetadata);
      }
      help_line_ = line_no_;
      // One blank separates the name from the text; the rest is the text (Prometheus' lexer).
      const std::size_t text_at = std::min(after_name + 1, line.size());
      family.help = unescape_help(line.substr(text_at), text_at);
      if (auto bad = check_utf8(family.help, "the HELP text of " + std::string(name))) fail_ruled(text_at + 1, *bad);
    } else {
      if (type_line_ != 0) {
        fail(name_at + 1, "a second TYPE line for " + std::string(name) + " (the first is on line " +
                              std::to_string(type_line_) + ")",
             kRuleTextMetadata);
      }
      type_line_ = line_no_;
      const std::size_t type_at = skip_blanks(line, after_name);
      const std::string_view word = word_at(line, type_at);
      if (word.empty()) fail(type_at + 1, "expected a metric type after " + std::string(name), kRuleTextMetadata);
      const auto type = type_named(word);
      if (!type) {
        fail(type_at + 1, "unknown metric type " + quote(word) + " (counter, gauge, histogram, summary or untyped)",
             kRuleTextMetadata);
      }
      const std::size_t rest = skip_blanks(line, type_at + word.size());
      if (rest != line.size()) fail(rest + 1, "unexpected text after the metric type", kRuleTextSyntax);
      family.type = *type;
    }
    last_line_ = line_no_;
  }

  std::string unescape_help(std::string_view raw, std::size_t offset) const {
    std::string out;
    out.reserve(raw.size());
    for (std::size_t i = 0; i < raw.size(); ++i) {
      if (raw[i] != '\\') {
        out += raw[i];
        continue;
      }
      if (i + 1 < raw.size() && raw[i + 1] == '\\') {
        out += '\\';
      } else if (i + 1 < raw.size() && raw[i + 1] == 'n') {
        out += '\n';
      } else {
        fail(offset + i + 1, "invalid escape " + quote(raw.substr(i, 2)) + " in HELP text (only \\\\ and \\n)",
             kRuleTextEscape);
      }
      ++i;
    }
    return out;
  }

  // The family a HELP or TYPE line describes: the current one, or a new one.
  Family& family_for_metadata(std::string_view name, std::size_t column) {
    if (has_current_ && out_.families.back().name == name) {
      Family& family = out_.families.back();
      if (!family.samples.empty()) {
        fail(column, "HELP and TYPE of " + std::string(name) + " must come before its samples, which begin on line " +
                         std::to_string(first_sample_line_),
             kRuleTextMetadata);
      }
      return family;
    }
    if (const auto it = closed_.find(std::string(name)); it != closed_.end()) not_contiguous(column, name, it->second);
    return start_family(std::string(name), MetricType::untyped);
  }

  [[noreturn]] void not_contiguous(std::size_t column, std::string_view family, const Closed& closed) const {
    fail(column, "family " + std::string(family) + " continues after another family began; its lines ended on line " +
                     std::to_string(closed.last_line) + ", and a family's lines must be together",
         kRuleTextFamilyOrder);
  }

  Family& start_family(std::string name, MetricType type) {
    if (has_current_) {
      const Family& previous = out_.families.back();
      closed_[previous.name] = Closed{previous.type, last_line_};
    }
    out_.families.push_back(Family{std::move(name), type, {}, {}});
    has_current_ = true;
    help_line_ = 0;
    type_line_ = 0;
    first_sample_line_ = 0;
    series_.clear();
    return out_.families.back();
  }

  void parse_sample(std::string_view line, std::size_t start) {
    std::size_t end = start;
    while (end < line.size() && !is_blank(line[end]) && line[end] != '{') ++end;
    const std::string_view name = line.substr(start, end - start);
    if (name.empty()) fail(start + 1, "expected a metric name, found '{'", kRuleMetricName);
    if (auto bad = check_metric_name(name)) fail_ruled(start + 1, *bad);

    std::vector<Label> labels;
    std::size_t i = skip_blanks(line, end);
    if (i < line.size() && line[i] == '{') i = skip_blanks(line, parse_labels(line, i + 1, labels));

    const std::string_view value_text = word_at(line, i);
    if (value_text.empty()) fail(i + 1, "expected a value after " + series_text(name, labels), kRuleTextValue);
    const auto value = parse_value(value_text);
    if (!value) fail(i + 1, "value " + quote(value_text) + " is not a number", kRuleTextValue);

    Sample sample{std::string(name), std::move(labels), *value, std::nullopt};
    i = skip_blanks(line, i + value_text.size());
    if (i < line.size()) {
      const std::string_view ts_text = word_at(line, i);
      sample.timestamp_ms = parse_timestamp(ts_text);
      if (!sample.timestamp_ms) {
        fail(i + 1, "timestamp " + quote(ts_text) + " is not an int64 of milliseconds since the epoch",
             kRuleTextTimestamp);
      }
      i = skip_blanks(line, i + ts_text.size());
      if (i < line.size()) fail(i + 1, "unexpected text after the timestamp", kRuleTextSyntax);
    }
    add_sample(std::move(sample), start + 1);
  }

  // Reads `name="value",...}` from i (just after '{'); returns the index after '}'.
  std::size_t parse_labels(std::string_view line, std::size_t i, std::vector<Label>& labels) {
    while (true) {
      i = skip_blanks(line, i);
      if (i == line.size()) fail(i + 1, "the label set is not closed: expected a label name or '}'", kRuleTextSyntax);
      if (line[i] == '}') return i + 1;

      std::size_t end = i;
      while (end < line.size() && !is_blank(line[end]) && line[end] != '=' && line[end] != ',' && line[end] != '}' &&
             line[end] != '"') {
        ++end;
      }
      const std::string_view name = line.substr(i, end - i);
      if (name.empty()) {
        fail(i + 1, "expected a label name, found " + quote(line.substr(i, 1)), kRuleLabelName);
      }
      if (auto bad = check_label_name(name)) fail_ruled(i + 1, *bad);
      if (labels.size() == limits_.max_labels_per_sample) {
        fail(i + 1, "a sample has more than " + std::to_string(limits_.max_labels_per_sample) + " labels",
             kRuleTextTooManyLabels);
      }
      for (const Label& l : labels) {
        if (l.name == name) {
          fail(i + 1, "label " + std::string(name) + " appears twice in one sample", kRuleDuplicateLabel);
        }
      }

      i = skip_blanks(line, end);
      if (i == line.size() || line[i] != '=') {
        fail(i + 1, "expected '=' after label name " + std::string(name), kRuleTextSyntax);
      }
      i = skip_blanks(line, i + 1);
      if (i == line.size() || line[i] != '"') {
        fail(i + 1, "expected '\"' to open the value of label " + std::string(name), kRuleTextSyntax);
      }
      const std::size_t open = i;
      std::string value;
      std::size_t q = open + 1;
      bool closed = false;
      for (; q < line.size(); ++q) {
        char c = line[q];
        if (c == '"') {
          closed = true;
          break;
        }
        if (c == '\\') {
          if (q + 1 == line.size()) break;  // a backslash cannot end the line inside a value
          const char e = line[q + 1];
          if (e == '\\' || e == '"') {
            c = e;
          } else if (e == 'n') {
            c = '\n';
          } else {
            fail(q + 1,
                 "invalid escape " + quote(line.substr(q, 2)) + " in the value of label " + std::string(name) +
                     " (only \\\\, \\\" and \\n)",
                 kRuleTextEscape);
          }
          ++q;
        }
        if (value.size() == limits_.max_label_value_bytes) {
          fail(open + 1,
               "the value of label " + std::string(name) + " is longer than " +
                   std::to_string(limits_.max_label_value_bytes) + " bytes",
               kRuleTextLabelValueTooLong);
        }
        value += c;
      }
      if (!closed) {
        fail(open + 1,
             "the value of label " + std::string(name) + " is not terminated: a '\"' on the same line must close it",
             kRuleTextUnterminated);
      }
      if (auto bad = check_utf8(value, "the value of label " + std::string(name))) fail_ruled(open + 1, *bad);
      labels.push_back({std::string(name), std::move(value)});

      i = skip_blanks(line, q + 1);
      if (i < line.size() && line[i] == ',') {
        ++i;
      } else if (i == line.size() || line[i] != '}') {
        fail(i + 1, "expected ',' or '}' after the value of label " + labels.back().name, kRuleTextSyntax);
      }
    }
  }

  // A sample that does not belong to the current family starts one named after it, unless
  // an earlier family claims it (or its name: family names are unique).
  void check_not_closed(std::string_view sample, std::size_t column) const {
    static constexpr std::string_view kSuffixes[] = {"_bucket", "_sum", "_count", "_total", "_created"};
    const auto check = [&](std::string_view family) {
      const auto it = closed_.find(std::string(family));
      if (it != closed_.end() && (family == sample || belongs_to(it->second.type, family, sample))) {
        not_contiguous(column, family, it->second);
      }
    };
    check(sample);
    for (const std::string_view suffix : kSuffixes) {
      if (sample.size() > suffix.size() && sample.ends_with(suffix)) {
        const std::string_view base = sample.substr(0, sample.size() - suffix.size());
        check(base);
        if (suffix == "_created") check(std::string(base) + "_total");
      }
    }
  }

  void check_bound_label(const Sample& sample, std::string_view label, std::size_t column) const {
    const auto it = std::find_if(sample.labels.begin(), sample.labels.end(),
                                 [&](const Label& l) { return l.name == label; });
    if (it == sample.labels.end()) {
      fail(column, series_text(sample.name, sample.labels) + " has no \"" + std::string(label) + "\" label",
           kRuleBucketLabel);
    }
    const auto bound = parse_value(it->value);
    if (!bound || std::isnan(*bound)) {
      fail(column, "\"" + std::string(label) + "\" value " + quote(it->value) + " of " + sample.name + " is not a number",
           kRuleBucketLabel);
    }
  }

  void add_sample(Sample sample, std::size_t column) {
    if (has_current_ && out_.families.back().name == sample.name &&
        !belongs_to(out_.families.back().type, sample.name, sample.name)) {
      const std::string& h = sample.name;
      fail(column,
           "sample " + quote(h) + " is not a series of the histogram " + h + " (" + h + "_bucket, " + h + "_sum, " + h +
               "_count, " + h + "_created)",
           kRuleSampleName);
    }
    if (!has_current_ || !belongs_to(out_.families.back().type, out_.families.back().name, sample.name)) {
      check_not_closed(sample.name, column);
      start_family(sample.name, MetricType::untyped);
    }
    Family& family = out_.families.back();
    if (family.type == MetricType::histogram && sample.name.ends_with("_bucket")) {
      check_bound_label(sample, "le", column);
    }
    if (family.type == MetricType::summary && sample.name == family.name) check_bound_label(sample, "quantile", column);
    const auto [it, inserted] = series_.emplace(series_key(sample.name, sample.labels), line_no_);
    if (!inserted) {
      fail(column,
           series_text(sample.name, sample.labels) + " appears twice (first on line " + std::to_string(it->second) + ")",
           kRuleDuplicateSeries);
    }
    if (family.samples.empty()) first_sample_line_ = line_no_;
    family.samples.push_back(std::move(sample));
    last_line_ = line_no_;
  }

  std::string_view text_;
  const ParseLimits& limits_;
  Exposition out_;
  std::size_t line_no_ = 0;
  bool after_eof_ = false;
  // The current family is out_.families.back() when has_current_.
  bool has_current_ = false;
  std::size_t help_line_ = 0;
  std::size_t type_line_ = 0;
  std::size_t first_sample_line_ = 0;
  std::size_t last_line_ = 0;
  std::unordered_map<std::string, std::size_t> series_;  // of the current family: key -> line
  std::unordered_map<std::string, Closed> closed_;
};

}  // namespace

Expected<Exposition> parse_text(std::string_view text, const ParseLimits& limits) {
  try {
    return Parser(text, limits).run();
  } catch (const Failure& failure) {
    return Unexpected{failure.message};
  }
}

}  // namespace gpubank::metrics
