#include "metrics/names.hpp"

#include "core/quote.hpp"

namespace gpubank::metrics {

namespace {

bool is_letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

}  // namespace

bool is_metric_name(std::string_view name) {
  if (name.empty() || !(is_letter(name[0]) || name[0] == ':')) return false;
  for (const char c : name.substr(1)) {
    if (!(is_letter(c) || is_digit(c) || c == ':')) return false;
  }
  return true;
}

bool is_label_name(std::string_view name) {
  if (name.empty() || !is_letter(name[0])) return false;
  for (const char c : name.substr(1)) {
    if (!(is_letter(c) || is_digit(c))) return false;
  }
  return true;
}

// Well-formed UTF-8 as Go's utf8.Valid reads it: no overlong forms, no surrogates, nothing
// above U+10FFFF.
bool is_valid_utf8(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size()) {
    const auto b0 = static_cast<unsigned char>(text[i]);
    if (b0 < 0x80) {
      ++i;
      continue;
    }
    std::size_t n = 0;
    unsigned char lo = 0x80;
    unsigned char hi = 0xBF;
    if (b0 >= 0xC2 && b0 <= 0xDF) {
      n = 1;
    } else if (b0 >= 0xE0 && b0 <= 0xEF) {
      n = 2;
      if (b0 == 0xE0) lo = 0xA0;  // overlong
      if (b0 == 0xED) hi = 0x9F;  // surrogates
    } else if (b0 >= 0xF0 && b0 <= 0xF4) {
      n = 3;
      if (b0 == 0xF0) lo = 0x90;  // overlong
      if (b0 == 0xF4) hi = 0x8F;  // above U+10FFFF
    } else {
      return false;
    }
    if (text.size() - i <= n) return false;
    for (std::size_t k = 1; k <= n; ++k) {
      const auto b = static_cast<unsigned char>(text[i + k]);
      const unsigned char min = k == 1 ? lo : 0x80;
      const unsigned char max = k == 1 ? hi : 0xBF;
      if (b < min || b > max) return false;
    }
    i += n + 1;
  }
  return true;
}

std::string with_rule(std::string message, std::string_view rule) {
  message += " [";
  message += rule;
  message += ']';
  return message;
}

std::optional<std::string> check_metric_name(std::string_view name) {
  if (is_metric_name(name)) return std::nullopt;
  return with_rule("metric name " + quote(name) + " is invalid: metric names match [a-zA-Z_:][a-zA-Z0-9_:]*",
                   kRuleMetricName);
}

std::optional<std::string> check_label_name(std::string_view name) {
  if (!is_label_name(name)) {
    return with_rule("label name " + quote(name) + " is invalid: label names match [a-zA-Z_][a-zA-Z0-9_]*",
                     kRuleLabelName);
  }
  if (name.starts_with("__")) {
    return with_rule("label name " + quote(name) + " is reserved: names beginning with \"__\" are Prometheus' own",
                     kRuleReservedLabel);
  }
  return std::nullopt;
}

std::optional<std::string> check_utf8(std::string_view text, std::string_view what) {
  if (is_valid_utf8(text)) return std::nullopt;
  return with_rule(std::string(what) + " is not valid UTF-8: " + quote(text), kRuleUtf8);
}

}  // namespace gpubank::metrics
