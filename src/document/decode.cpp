#include "document/decode.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>

namespace gpubank::doc {

SourcePos SourceMap::find(std::string_view path) const {
  std::string p(path);
  while (!p.empty()) {
    if (auto it = positions_.find(p); it != positions_.end()) return it->second;
    const auto cut = p.find_last_of(".[");
    if (cut == std::string::npos) break;
    p.resize(cut);
  }
  return {};
}

void DecodeContext::report(std::string_view rule, SourcePos pos, std::string path,
                           std::string message, Severity severity) {
  if (severity == Severity::Error) ++errors_;
  out_.push_back(Diagnostic{severity, std::string(rule), file_, pos, kind_, name_, std::move(path),
                            std::move(message)});
}

void Field::wrong_type(std::string_view expected) const {
  std::string got = describe(node.type);
  if (node.is_scalar() && node.type != NodeType::Null) got += " " + preview(node);
  error(kRuleWrongType, "expected " + std::string(expected) + ", got " + got);
}

std::string allowed_list(const std::string_view* names, std::size_t count) {
  std::string out;
  for (std::size_t i = 0; i < count; ++i) {
    if (i > 0) out += i + 1 == count ? " or " : ", ";
    out += '"' + std::string(names[i]) + '"';
  }
  return out;
}

std::optional<std::string> DnsLabel::operator()(const std::string& v) const {
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (v.empty()) return "must not be empty";
  if (v.size() > 63) return "\"" + v + "\" is longer than 63 characters";
  const bool chars_ok = std::all_of(v.begin(), v.end(), [&](char c) { return alnum(c) || c == '-'; });
  if (!chars_ok || !alnum(v.front()) || !alnum(v.back())) {
    return "\"" + v +
           "\" is not a DNS-1123 label: use lower-case letters, digits and '-', starting and ending "
           "with a letter or digit";
  }
  return std::nullopt;
}

namespace {

// Levenshtein distance, for "did you mean" hints on unknown fields.
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      const bool same = std::tolower(static_cast<unsigned char>(a[i - 1])) ==
                        std::tolower(static_cast<unsigned char>(b[j - 1]));
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (same ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

}  // namespace

ObjectReader::ObjectReader(const Field& f) : field_(f) {
  if (f.node.type != NodeType::Mapping) {
    f.wrong_type("an object");
    ok_ = false;
    return;
  }
  is_object_ = true;
  for (std::size_t i = 0; i < f.node.entries.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      if (f.node.entries[j].key == f.node.entries[i].key) {
        const auto& e = f.node.entries[i];
        f.ctx.report(kRuleDuplicateField, e.key_pos, f.path.empty() ? e.key : f.path + "." + e.key,
                     "duplicate key \"" + e.key + "\"");
        ok_ = false;
        break;
      }
    }
  }
}

bool ObjectReader::finish() {
  if (!is_object_) return false;
  for (const auto& e : field_.node.entries) {
    if (std::find(expected_.begin(), expected_.end(), e.key) != expected_.end()) continue;
    std::string message = "unknown field \"" + e.key + "\"";
    std::string_view best;
    std::size_t best_distance = 3;  // suggest only close matches
    for (auto candidate : expected_) {
      const std::size_t d = edit_distance(e.key, candidate);
      if (d < best_distance) {
        best_distance = d;
        best = candidate;
      }
    }
    if (!best.empty()) message += "; did you mean \"" + std::string(best) + "\"?";
    field_.ctx.report(kRuleUnknownField, e.key_pos, field_.path.empty() ? e.key : field_.path + "." + e.key,
                      message);
    ok_ = false;
  }
  return ok_;
}

bool Codec<std::string>::decode(const Field& f, std::string& out) {
  if (f.node.type != NodeType::String) {
    f.wrong_type("a string");
    return false;
  }
  out = f.node.text;
  return true;
}

bool Codec<bool>::decode(const Field& f, bool& out) {
  if (f.node.type != NodeType::Bool) {
    f.wrong_type("a boolean");
    return false;
  }
  out = f.node.boolean;
  return true;
}

bool Codec<std::int64_t>::decode(const Field& f, std::int64_t& out) {
  if (f.node.type != NodeType::Int) {
    f.wrong_type("an integer");
    return false;
  }
  if (!f.node.integer_fits) {
    f.error(kRuleOutOfRange, "integer " + f.node.text + " is out of range");
    return false;
  }
  out = f.node.integer;
  return true;
}

bool Codec<int>::decode(const Field& f, int& out) {
  std::int64_t wide = 0;
  if (!Codec<std::int64_t>::decode(f, wide)) return false;
  if (wide < std::numeric_limits<int>::min() || wide > std::numeric_limits<int>::max()) {
    f.error(kRuleOutOfRange, "integer " + f.node.text + " is out of range for a 32-bit integer");
    return false;
  }
  out = static_cast<int>(wide);
  return true;
}

bool Codec<double>::decode(const Field& f, double& out) {
  if (f.node.type != NodeType::Int && f.node.type != NodeType::Float) {
    f.wrong_type("a number");
    return false;
  }
  if (f.node.number != f.node.number || f.node.number == HUGE_VAL || f.node.number == -HUGE_VAL) {
    f.error(kRuleOutOfRange, "number " + f.node.text + " is not finite");
    return false;
  }
  out = f.node.number;
  return true;
}

bool Codec<Duration>::decode(const Field& f, Duration& out) {
  if (f.node.type != NodeType::String) {
    f.wrong_type("a duration string such as \"10m\" or \"1h30m\"");
    return false;
  }
  auto parsed = Duration::parse(f.node.text);
  if (!parsed) {
    f.error(kRuleInvalidFormat, parsed.error());
    return false;
  }
  out = *parsed;
  return true;
}

bool Codec<Timestamp>::decode(const Field& f, Timestamp& out) {
  if (f.node.type != NodeType::String) {
    f.wrong_type("an RFC 3339 time string such as \"2026-12-01T08:00:00Z\"");
    return false;
  }
  auto parsed = parse_rfc3339(f.node.text);
  if (!parsed) {
    f.error(kRuleInvalidFormat, parsed.error());
    return false;
  }
  out = *parsed;
  return true;
}

}  // namespace gpubank::doc
