#include "metrics/names.hpp"

#include "core/quote.hpp"
#include "core/utf8.hpp"

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
  if (is_utf8(text)) return std::nullopt;
  return with_rule(std::string(what) + " is not valid UTF-8: " + quote(text), kRuleUtf8);
}

}  // namespace gpubank::metrics
