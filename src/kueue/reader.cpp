#include "kueue/reader.hpp"

#include <algorithm>
#include <limits>
#include <tuple>

#include "core/utf8.hpp"
#include "kueue/decode.hpp"

namespace gpubank::kueue::detail {
namespace {

bool is_lower_alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

}  // namespace

std::string join(const std::string& path, std::string_view key) {
  if (path.empty()) return std::string(key);
  return path + "." + std::string(key);
}

std::string index(const std::string& path, std::size_t i) { return path + "[" + std::to_string(i) + "]"; }

std::string map_key(const std::string& path, std::string_view key) { return path + "[" + std::string(key) + "]"; }

std::string_view json_type(const doc::Node& node) {
  switch (node.type) {
    case doc::NodeType::Null: return "null";
    case doc::NodeType::Bool: return "boolean";
    case doc::NodeType::Int: return "integer";
    case doc::NodeType::Float: return "number";
    case doc::NodeType::String: return "string";
    case doc::NodeType::Sequence: return "array";
    case doc::NodeType::Mapping: return "object";
  }
  return "null";
}

std::string go_json(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "\"";
  std::size_t i = 0;
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        case '\b': out += "\\b"; break;
        case '\f': out += "\\f"; break;
        default:
          if (c < 0x20 || c == '<' || c == '>' || c == '&') {
            out += "\\u00";
            out += kHex[c >> 4];
            out += kHex[c & 0xf];
          } else {
            out += static_cast<char>(c);
          }
      }
      ++i;
      continue;
    }
    const std::size_t length = utf8_sequence_length(text, i);
    if (length == 0) {
      out += "\\ufffd";
      ++i;
      continue;
    }
    const std::string_view sequence = text.substr(i, length);
    if (sequence == "\u2028" || sequence == "\u2029") {
      out += sequence == "\u2028" ? "\\u2028" : "\\u2029";
    } else {
      out += sequence;
    }
    i += length;
  }
  return out + "\"";
}

std::string go_json(const std::vector<std::string>& values) {
  if (values.empty()) return "null";  // the API server stores an empty list as absent
  std::string out = "[";
  for (std::size_t i = 0; i < values.size(); ++i) out += (i > 0 ? "," : "") + go_json(values[i]);
  return out + "]";
}

std::string go_quote(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "\"";
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    switch (c) {
      case '"': out += "\\\""; continue;
      case '\\': out += "\\\\"; continue;
      case '\n': out += "\\n"; continue;
      case '\t': out += "\\t"; continue;
      case '\r': out += "\\r"; continue;
      default: break;
    }
    if (byte < 0x20 || byte == 0x7f) {
      out += "\\x";
      out += kHex[byte >> 4];
      out += kHex[byte & 0xf];
    } else {
      out += c;  // documents are valid UTF-8 (the readers check), printed as is like Go
    }
  }
  return out + "\"";
}

bool is_dns_label(std::string_view s) {
  if (s.empty() || !is_lower_alnum(s.front()) || !is_lower_alnum(s.back())) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return is_lower_alnum(c) || c == '-'; });
}

bool is_subdomain(std::string_view s) {
  // Labels separated by single dots (the CRD pattern; no length limit per label there).
  std::size_t start = 0;
  while (true) {
    const std::size_t dot = s.find('.', start);
    if (!is_dns_label(s.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start))) {
      return false;
    }
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

bool matches_quantity_pattern(std::string_view s) {
  std::size_t i = 0;
  // A number: digits with an optional fraction, or a fraction alone.
  const auto number = [&]() {
    const std::size_t begin = i;
    while (i < s.size() && is_digit(s[i])) ++i;
    const bool whole = i > begin;
    if (i < s.size() && s[i] == '.') {
      ++i;
      const std::size_t fraction = i;
      while (i < s.size() && is_digit(s[i])) ++i;
      return whole || i > fraction;
    }
    return whole;
  };
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
  if (!number()) return false;
  const std::string_view suffix = s.substr(i);
  if (suffix.empty()) return true;
  if (suffix.size() == 2 && suffix[1] == 'i' && std::string_view("KMGTPE").find(suffix[0]) != std::string_view::npos) {
    return true;
  }
  if (suffix.size() == 1 && std::string_view("numkMGTPE").find(suffix[0]) != std::string_view::npos) return true;
  if (suffix[0] == 'e' || suffix[0] == 'E') {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    return number() && i == s.size();
  }
  return false;
}

void Reader::report(std::string_view rule, SourcePos pos, const std::string& path, std::string message,
                    Severity severity) {
  ctx_.report(rule, pos, path, std::move(message), severity);
}

void Reader::type_error(const doc::Node& node, const std::string& path, std::string_view want) {
  const std::string got(json_type(node));
  report(doc::kRuleWrongType, node.pos, path,
         "Invalid value: \"" + got + "\": " + path + " in body must be of type " + std::string(want) + ": \"" +
             got + "\"");
}

void Reader::required(SourcePos pos, const std::string& path, std::string_view detail) {
  std::string message = "Required value";
  if (!detail.empty()) message += ": " + std::string(detail);
  report(doc::kRuleRequired, pos, path, message);
}

void Reader::invalid(SourcePos pos, const std::string& path, const std::string& shown_value, std::string_view detail,
                     std::string_view rule) {
  report(rule, pos, path, "Invalid value: " + shown_value + ": " + std::string(detail));
}

void Reader::rule_failed(const doc::Node& node, const std::string& path, std::string_view message) {
  report(kRuleValidationRule, node.pos, path,
         "Invalid value: \"" + std::string(json_type(node)) + "\": " + std::string(message));
}

MapReader::MapReader(Reader& r, const doc::Node& node, std::string path, bool strict)
    : reader(r), node_(node), path_(std::move(path)), strict_(strict) {
  if (node.type != doc::NodeType::Mapping) {
    r.type_error(node, path_.empty() ? "<root>" : path_, "object");
    return;
  }
  ok_ = true;
  if (!strict_) return;
  for (std::size_t i = 0; i < node.entries.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      if (node.entries[j].key == node.entries[i].key) {
        const std::string p = join(path_, node.entries[i].key);
        r.report(doc::kRuleDuplicateField, node.entries[i].key_pos, p, "duplicate field " + go_quote(p));
        break;
      }
    }
  }
}

const doc::Node* MapReader::get(std::string_view key) {
  known_.push_back(key);
  if (!ok_) return nullptr;
  const doc::Node* n = node_.find(key);
  if (n == nullptr || n->type == doc::NodeType::Null) return nullptr;
  reader.record(child(key), n->pos);
  return n;
}

void MapReader::accept(std::initializer_list<std::string_view> keys) {
  for (auto k : keys) known_.push_back(k);
}

void MapReader::accept_not_modelled(std::initializer_list<std::string_view> keys, std::string_view rule,
                                    std::string_view what) {
  for (auto k : keys) {
    known_.push_back(k);
    if (!ok_) continue;
    const doc::Node* n = node_.find(k);
    if (n == nullptr || n->type == doc::NodeType::Null) continue;
    reader.report(rule, n->pos, child(k),
                  "not modelled by the twin: " + std::string(what) + "; its admission decisions ignore this field",
                  Severity::Warning);
  }
}

void MapReader::missing(std::string_view key, std::string_view detail) {
  reader.required(node_.pos, child(key), detail);
}

std::optional<std::string> MapReader::required_string(std::string_view key) {
  if (!ok_) return std::nullopt;
  const doc::Node* n = get(key);
  if (n == nullptr) {
    missing(key);
    return std::nullopt;
  }
  return read_string(reader, n, child(key));
}

void MapReader::finish() {
  if (!ok_ || !strict_) return;
  for (const auto& e : node_.entries) {
    if (std::find(known_.begin(), known_.end(), e.key) != known_.end()) continue;
    const std::string p = join(path_, e.key);
    reader.report(doc::kRuleUnknownField, e.key_pos, p, "unknown field " + go_quote(p));
  }
}

std::optional<std::string> read_string(Reader& r, const doc::Node* n, const std::string& path) {
  if (n == nullptr) return std::nullopt;
  if (n->type != doc::NodeType::String) {
    r.type_error(*n, path, "string");
    return std::nullopt;
  }
  return n->text;
}

std::optional<bool> read_bool(Reader& r, const doc::Node* n, const std::string& path) {
  if (n == nullptr) return std::nullopt;
  if (n->type != doc::NodeType::Bool) {
    r.type_error(*n, path, "boolean");
    return std::nullopt;
  }
  return n->boolean;
}

std::optional<std::int64_t> read_int64(Reader& r, const doc::Node* n, const std::string& path) {
  if (n == nullptr) return std::nullopt;
  if (n->type != doc::NodeType::Int) {
    r.type_error(*n, path, "integer");
    return std::nullopt;
  }
  if (!n->integer_fits) {
    r.invalid(n->pos, path, n->text, path + " in body must be of type int64: " + go_quote(n->text),
              doc::kRuleOutOfRange);
    return std::nullopt;
  }
  return n->integer;
}

std::optional<std::int32_t> read_int32(Reader& r, const doc::Node* n, const std::string& path) {
  const auto wide = read_int64(r, n, path);
  if (!wide) return std::nullopt;
  if (*wide < std::numeric_limits<std::int32_t>::min() || *wide > std::numeric_limits<std::int32_t>::max()) {
    r.invalid(n->pos, path, n->text, path + " in body must be of type int32: " + go_quote(n->text),
              doc::kRuleOutOfRange);
    return std::nullopt;
  }
  return static_cast<std::int32_t>(*wide);
}

std::optional<Quantity> read_quantity(Reader& r, const doc::Node* n, const std::string& path) {
  if (n == nullptr) return std::nullopt;
  if (n->type != doc::NodeType::Int && n->type != doc::NodeType::String) {
    r.type_error(*n, path, "integer,string");
    return std::nullopt;
  }
  if (n->type == doc::NodeType::String && !matches_quantity_pattern(n->text)) {
    r.invalid(n->pos, path, go_quote(n->text),
              path + " in body should match '" + std::string(kQuantityPattern) + "'");
    return std::nullopt;
  }
  auto parsed = Quantity::parse(n->text);
  if (!parsed) {
    r.invalid(n->pos, path, go_quote(n->text), parsed.error());
    return std::nullopt;
  }
  return *parsed;
}

std::optional<Timestamp> read_time(Reader& r, const doc::Node* n, const std::string& path) {
  const auto text = read_string(r, n, path);
  if (!text) return std::nullopt;
  auto parsed = parse_rfc3339(*text);
  if (!parsed) {
    r.invalid(n->pos, path, go_quote(*text), path + " in body must be of type date-time: " + go_quote(*text));
    return std::nullopt;
  }
  return *parsed;
}

std::optional<std::string> read_enum(Reader& r, const doc::Node* n, const std::string& path,
                                     std::initializer_list<std::string_view> values) {
  auto text = read_string(r, n, path);
  if (!text) return std::nullopt;
  if (std::find(values.begin(), values.end(), *text) != values.end()) return text;
  r.report(doc::kRuleInvalidEnum, n->pos, path, unsupported_value(go_quote(*text), values));
  return std::nullopt;
}

std::optional<std::string> read_bounded_string(Reader& r, const doc::Node* n, const std::string& path,
                                               std::size_t min_length, std::size_t max_length) {
  auto text = read_string(r, n, path);
  if (!text) return std::nullopt;
  bool ok = true;
  if (text->size() > max_length) {
    r.report(doc::kRuleOutOfRange, n->pos, path,
             "Too long: may not be more than " + std::to_string(max_length) + " bytes");
    ok = false;
  }
  if (text->size() < min_length) {
    r.invalid(n->pos, path, go_quote(*text),
              path + " in body should be at least " + std::to_string(min_length) + " chars long",
              doc::kRuleOutOfRange);
    ok = false;
  }
  if (!ok) return std::nullopt;
  return text;
}

std::optional<std::string> read_reference(Reader& r, const doc::Node* n, const std::string& path,
                                          std::size_t max_length) {
  auto text = read_bounded_string(r, n, path, 0, max_length);
  if (!text) return std::nullopt;
  if (!is_subdomain(*text)) {
    r.invalid(n->pos, path, go_quote(*text), path + " in body should match '" + std::string(kSubdomainPattern) + "'");
    return std::nullopt;
  }
  return text;
}

std::vector<std::string> read_strings(Reader& r, const doc::Node* n, const std::string& path) {
  std::vector<std::string> out;
  if (const doc::Node* list = list_node(r, n, path, 0, -1)) {
    for (std::size_t i = 0; i < list->items.size(); ++i) {
      if (auto v = read_string(r, &list->items[i], index(path, i))) out.push_back(std::move(*v));
    }
  }
  return out;
}

std::optional<std::map<std::string, std::string>> read_string_map(Reader& r, const doc::Node* n,
                                                                  const std::string& path) {
  if (n == nullptr) return std::nullopt;
  if (n->type != doc::NodeType::Mapping) {
    r.type_error(*n, path, "object");
    return std::nullopt;
  }
  std::map<std::string, std::string> out;
  bool ok = true;
  for (const auto& e : n->entries) {
    const std::string p = map_key(path, e.key);
    r.record(p, e.value.pos);
    if (e.value.type == doc::NodeType::Null) continue;
    auto v = read_string(r, &e.value, p);
    if (!v) {
      ok = false;
      continue;
    }
    if (!out.emplace(e.key, *v).second) {
      r.report(doc::kRuleDuplicateField, e.key_pos, p, "duplicate field " + go_quote(join(path, e.key)));
      ok = false;
    }
  }
  if (!ok) return std::nullopt;
  return out;
}

std::optional<std::map<std::string, Quantity>> read_quantity_map(Reader& r, const doc::Node* n,
                                                                 const std::string& path) {
  if (n == nullptr) return std::nullopt;
  if (n->type != doc::NodeType::Mapping) {
    r.type_error(*n, path, "object");
    return std::nullopt;
  }
  std::map<std::string, Quantity> out;
  bool ok = true;
  for (const auto& e : n->entries) {
    const std::string p = map_key(path, e.key);
    r.record(p, e.value.pos);
    if (e.value.type == doc::NodeType::Null) continue;
    auto q = read_quantity(r, &e.value, p);
    if (!q) {
      ok = false;
      continue;
    }
    if (!out.emplace(e.key, *q).second) {
      r.report(doc::kRuleDuplicateField, e.key_pos, p, "duplicate field " + go_quote(join(path, e.key)));
      ok = false;
    }
  }
  if (!ok) return std::nullopt;
  return out;
}

const doc::Node* list_node(Reader& r, const doc::Node* n, const std::string& path, long min_items, long max_items) {
  if (n == nullptr) return nullptr;
  if (n->type != doc::NodeType::Sequence) {
    r.type_error(*n, path, "array");
    return nullptr;
  }
  const auto size = static_cast<long>(n->items.size());
  bool ok = true;
  if (max_items >= 0 && size > max_items) {
    r.report(doc::kRuleOutOfRange, n->pos, path,
             "Too many: " + std::to_string(size) + ": must have at most " + std::to_string(max_items) + " items");
    ok = false;
  }
  if (size < min_items) {
    r.invalid(n->pos, path, std::to_string(size),
              path + " in body should have at least " + std::to_string(min_items) + " items", doc::kRuleOutOfRange);
    ok = false;
  }
  for (std::size_t i = 0; i < n->items.size(); ++i) r.record(index(path, i), n->items[i].pos);
  return ok ? n : nullptr;
}

bool check_max_properties(Reader& r, const doc::Node& n, const std::string& path, std::size_t max) {
  if (n.type != doc::NodeType::Mapping || n.entries.size() <= max) return true;
  r.report(doc::kRuleOutOfRange, n.pos, path,
           "Too many: " + std::to_string(n.entries.size()) + ": must have at most " + std::to_string(max) + " items");
  return false;
}

void check_unique_keys(Reader& r, const doc::Node& list, const std::string& path, const std::vector<std::string>& keys,
                       std::string_view key) {
  for (std::size_t i = 0; i < keys.size() && i < list.items.size(); ++i) {
    if (std::find(keys.begin(), keys.begin() + static_cast<long>(i), keys[i]) == keys.begin() + static_cast<long>(i)) {
      continue;
    }
    r.report(kRuleDuplicateValue, list.items[i].pos, index(path, i),
             "Duplicate value: map[string]interface {}{" + go_quote(key) + ":" + go_quote(keys[i]) + "}");
  }
}

InFileOrder::~InFileOrder() {
  std::stable_sort(all_.begin() + static_cast<long>(first_), all_.end(), [](const Diagnostic& a, const Diagnostic& b) {
    return std::tie(a.pos.line, a.pos.column) < std::tie(b.pos.line, b.pos.column);
  });
}

bool check_minimum(Reader& r, const doc::Node& n, const std::string& path, std::int64_t value, std::int64_t minimum) {
  if (value >= minimum) return true;
  r.invalid(n.pos, path, std::to_string(value),
            path + " in body should be greater than or equal to " + std::to_string(minimum), doc::kRuleOutOfRange);
  return false;
}

}  // namespace gpubank::kueue::detail
