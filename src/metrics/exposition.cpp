#include "metrics/exposition.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <unordered_set>

#include "core/quote.hpp"
#include "metrics/names.hpp"
#include "metrics/number.hpp"

namespace gpubank::metrics {

std::string_view to_string(MetricType type) {
  switch (type) {
    case MetricType::counter: return "counter";
    case MetricType::gauge: return "gauge";
    case MetricType::histogram: return "histogram";
    case MetricType::summary: return "summary";
    case MetricType::untyped: return "untyped";
  }
  return "untyped";
}

bool operator==(const Sample& a, const Sample& b) {
  const bool same_value = a.value == b.value || (std::isnan(a.value) && std::isnan(b.value));
  return same_value && a.name == b.name && a.labels == b.labels && a.timestamp_ms == b.timestamp_ms;
}

const Family* Exposition::find(std::string_view name) const {
  for (const Family& f : families) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

namespace {

bool has_suffix(std::string_view sample, std::string_view family, std::string_view suffix) {
  return sample.size() == family.size() + suffix.size() && sample.starts_with(family) && sample.ends_with(suffix);
}

void append_escaped(std::string& out, std::string_view text, bool quotes) {
  for (const char c : text) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '"':
        if (quotes) out += '\\';
        out += c;
        break;
      default: out += c;
    }
  }
}

void append_series(std::string& out, std::string_view name, const std::vector<Label>& labels) {
  out += name;
  if (labels.empty()) return;
  out += '{';
  for (std::size_t i = 0; i < labels.size(); ++i) {
    if (i > 0) out += ',';
    out += labels[i].name;
    out += "=\"";
    append_escaped(out, labels[i].value, true);
    out += '"';
  }
  out += '}';
}

// Why a family cannot be written as it is, or nothing.
std::optional<std::string> check_family(const Family& family) {
  const std::string where = "family " + family.name + ": ";
  if (auto bad = check_metric_name(family.name)) return where + *bad;
  if (auto bad = check_utf8(family.help, "its HELP text")) return where + *bad;
  std::unordered_set<std::string> series;
  for (const Sample& s : family.samples) {
    if (!belongs_to(family.type, family.name, s.name)) {
      return where + with_rule("sample " + quote(s.name) + " is not a series of a " + std::string(to_string(family.type)) +
                                   " named " + family.name,
                               kRuleSampleName);
    }
    std::set<std::string_view> names;
    for (const Label& l : s.labels) {
      if (auto bad = check_label_name(l.name)) return where + "sample " + s.name + ": " + *bad;
      if (!names.insert(l.name).second) {
        return where + with_rule("sample " + s.name + " has the label " + l.name + " twice", kRuleDuplicateLabel);
      }
      if (auto bad = check_utf8(l.value, "the value of label " + l.name)) return where + "sample " + s.name + ": " + *bad;
    }
    if (family.type == MetricType::histogram && s.name.ends_with("_bucket")) {
      const auto le = std::find_if(s.labels.begin(), s.labels.end(), [](const Label& l) { return l.name == "le"; });
      if (le == s.labels.end() || !parse_value(le->value) || std::isnan(*parse_value(le->value))) {
        return where + with_rule(series_text(s.name, s.labels) + " has no numeric \"le\" label: every bucket names its upper bound",
                                 kRuleBucketLabel);
      }
    }
    std::vector<Label> sorted = s.labels;
    std::sort(sorted.begin(), sorted.end(), [](const Label& a, const Label& b) { return a.name < b.name; });
    if (!series.insert(series_text(s.name, sorted)).second) {
      return where + with_rule(series_text(s.name, s.labels) + " appears twice", kRuleDuplicateSeries);
    }
  }
  return std::nullopt;
}

}  // namespace

bool belongs_to(MetricType type, std::string_view family, std::string_view sample) {
  switch (type) {
    case MetricType::gauge:
    case MetricType::untyped: return sample == family;
    case MetricType::counter:
      return sample == family || has_suffix(sample, family, "_total") || has_suffix(sample, family, "_created") ||
             (family.ends_with("_total") && has_suffix(sample, family.substr(0, family.size() - 6), "_created"));
    case MetricType::histogram:
      return has_suffix(sample, family, "_bucket") || has_suffix(sample, family, "_sum") ||
             has_suffix(sample, family, "_count") || has_suffix(sample, family, "_created");
    case MetricType::summary:
      return sample == family || has_suffix(sample, family, "_sum") || has_suffix(sample, family, "_count") ||
             has_suffix(sample, family, "_created");
  }
  return false;
}

std::string series_text(std::string_view name, const std::vector<Label>& labels) {
  std::string out;
  append_series(out, name, labels);
  return out;
}

Expected<std::string> write_text(const Exposition& exposition) {
  std::set<std::string_view> names;
  std::string out;
  for (const Family& family : exposition.families) {
    if (auto bad = check_family(family)) return Unexpected{*bad};
    if (!names.insert(family.name).second) {
      return Unexpected{with_rule("family " + family.name + " is listed twice: a family's samples are written together",
                                  kRuleDuplicateFamily)};
    }
    if (!family.help.empty()) {
      out += "# HELP ";
      out += family.name;
      out += ' ';
      append_escaped(out, family.help, false);
      out += '\n';
    }
    out += "# TYPE ";
    out += family.name;
    out += ' ';
    out += to_string(family.type);
    out += '\n';
    for (const Sample& s : family.samples) {
      append_series(out, s.name, s.labels);
      out += ' ';
      out += format_value(s.value);
      if (s.timestamp_ms) {
        out += ' ';
        out += std::to_string(*s.timestamp_ms);
      }
      out += '\n';
    }
  }
  return out;
}

}  // namespace gpubank::metrics
