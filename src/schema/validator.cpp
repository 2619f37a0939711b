// The checks follow k8s.io/kube-openapi's pkg/validation/validate (type, enum, number,
// string, slice, object and schema-props validators, as of its main branch in 2026) and
// the apiextensions-apiserver steps around it: nulls of non-nullable fields are dropped
// before validation, unknown fields are what strict field validation reports, list-type
// uniqueness is structurallisttype.ValidateListSetsAndMaps, and embedded resources are
// schema/objectmeta.Validate. Messages are the bodies of the field errors the API server
// returns ("Required value", "Unsupported value: ...", "Too many: ...").
#include "schema/validator.hpp"

#include <charconv>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <limits>
#include <unordered_map>

#include "core/quote.hpp"

namespace gpubank::schema::detail {
namespace {

constexpr double kMaxJsonInteger = 9007199254740992.0;  // 2^53: larger floats are not "integers"

bool is_integer(const Json& v) {
  if (v.is_number_integer()) {
    return !v.is_number_unsigned() || v.get<std::uint64_t>() <= static_cast<std::uint64_t>(INT64_MAX);
  }
  if (!v.is_number_float()) return false;
  const double d = v.get<double>();
  return std::isfinite(d) && std::trunc(d) == d && std::fabs(d) <= kMaxJsonInteger;
}

std::string format_number(double d) {
  if (std::trunc(d) == d && std::fabs(d) < 1e15) return std::to_string(static_cast<long long>(d));
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, d);
  return std::string(buf, r.ptr);
}

// -1, 0, 1 as v compares with the bound; integers are compared exactly where they can be.
int compare(const Json& v, double bound) {
  if (v.is_number_integer() && std::trunc(bound) == bound && std::fabs(bound) < 9.2e18) {
    const auto b = static_cast<std::int64_t>(bound);
    if (v.is_number_unsigned()) {
      const auto u = v.get<std::uint64_t>();
      if (u > static_cast<std::uint64_t>(INT64_MAX)) return 1;
      const auto i = static_cast<std::int64_t>(u);
      return i < b ? -1 : (i > b ? 1 : 0);
    }
    const auto i = v.get<std::int64_t>();
    return i < b ? -1 : (i > b ? 1 : 0);
  }
  const double d = v.get<double>();
  return d < bound ? -1 : (d > bound ? 1 : 0);
}

std::string invalid(const Json& v, const std::string& detail) { return "Invalid value: " + preview(v) + ": " + detail; }

std::string_view type_name(Type t) {
  switch (t) {
    case Type::Object: return "object";
    case Type::Array: return "array";
    case Type::String: return "string";
    case Type::Integer: return "integer";
    case Type::Number: return "number";
    case Type::Boolean: return "boolean";
    case Type::Unset: break;
  }
  return "any";
}

// Go's time.Parse("2006-01-02", s): four-digit year, two-digit month and day, a real date.
bool is_date(std::string_view s) {
  if (s.size() != 10 || s[4] != '-' || s[7] != '-') return false;
  for (const std::size_t i : {0, 1, 2, 3, 5, 6, 8, 9}) {
    if (s[i] < '0' || s[i] > '9') return false;
  }
  const int year = std::stoi(std::string(s.substr(0, 4)));
  const int month = (s[5] - '0') * 10 + (s[6] - '0');
  const int day = (s[8] - '0') * 10 + (s[9] - '0');
  if (month < 1 || month > 12 || day < 1) return false;
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
  return day <= kDays[month - 1] + (month == 2 && leap ? 1 : 0);
}

bool two_digits(std::string_view s, std::size_t at) {
  return at + 2 <= s.size() && s[at] >= '0' && s[at] <= '9' && s[at + 1] >= '0' && s[at + 1] <= '9';
}

// The zone of a time of day: "z" or "+hh:mm"/"-hh:mm", to the end.
bool is_zone(std::string_view s) {
  if (s == "z") return true;
  return s.size() == 6 && (s[0] == '+' || s[0] == '-') && two_digits(s, 1) && s[3] == ':' && two_digits(s, 4);
}

// kube-openapi's strfmt.IsDateTime: lower-cased, split at 't', a date, then a time of day
// matching ^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$ with
// hours <= 23, minutes and seconds <= 59.
bool is_date_time(std::string_view text) {
  if (text.size() < 4) return false;
  std::string s(text);
  for (char& c : s) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  const std::size_t t = s.find('t');
  if (t == std::string::npos || !is_date(std::string_view(s).substr(0, t))) return false;
  const std::size_t next = s.find('t', t + 1);
  const std::string_view time = std::string_view(s).substr(t + 1, next == std::string::npos ? std::string::npos : next - t - 1);
  if (!two_digits(time, 0) || time.size() < 8 || time[2] != ':' || !two_digits(time, 3) || time[5] != ':' ||
      !two_digits(time, 6)) {
    return false;
  }
  if (time.substr(0, 2) > "23" || time.substr(3, 2) > "59" || time.substr(6, 2) > "59") return false;
  const std::string_view rest = time.substr(8);
  if (is_zone(rest)) return true;
  // A fraction: any one character (the pattern's unescaped '.') and at least one digit.
  if (rest.size() < 2 || rest[0] == '\n') return false;
  std::size_t end = 1;
  while (end < rest.size() && rest[end] >= '0' && rest[end] <= '9') ++end;
  return end > 1 && is_zone(rest.substr(end));
}

// Go's base64.StdEncoding.DecodeString, which skips '\r' and '\n'.
bool is_base64(std::string_view text) {
  std::string s;
  for (const char c : text) {
    if (c != '\r' && c != '\n') s += c;
  }
  if (s.size() % 4 != 0) return false;
  std::size_t padding = 0;
  while (padding < 2 && padding < s.size() && s[s.size() - 1 - padding] == '=') ++padding;
  for (std::size_t i = 0; i + padding < s.size(); ++i) {
    const char c = s[i];
    const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '/';
    if (!ok) return false;
  }
  return true;
}

// JSON text that never throws: ill-formed UTF-8 in a string (possible in objects built in
// code; the file readers refuse it) becomes U+FFFD.
template <class J>
std::string text_of(const J& v) {
  return v.dump(-1, ' ', false, J::error_handler_t::replace);
}

// A canonical text of a value for uniqueness: objects with sorted keys, as Go's
// json.Marshal writes the maps the API server compares.
std::string canonical(const Json& v) {
  if (!v.is_structured()) return text_of(v);
  return text_of(nlohmann::json::parse(text_of(v)));
}

bool prunable_null(const Json& value, const Schema* schema) {
  return value.is_null() && schema != nullptr && !schema->nullable && !schema->default_value;
}

}  // namespace

std::string_view json_type(const Json& v) {
  switch (v.type()) {
    case Json::value_t::object: return "object";
    case Json::value_t::array: return "array";
    case Json::value_t::string: return "string";
    case Json::value_t::boolean: return "boolean";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned: return is_integer(v) ? "integer" : "number";
    case Json::value_t::number_float: return "number";
    default: return "null";
  }
}

std::string preview(const Json& v) {
  constexpr std::size_t kMax = 64;
  if (v.is_string()) {
    const auto& s = v.get_ref<const std::string&>();
    if (s.size() <= kMax) return quote(s);
    std::size_t cut = kMax;
    while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;  // a whole code point
    return quote(std::string_view(s).substr(0, cut)) + "... (" + std::to_string(s.size()) + " bytes)";
  }
  if (v.is_object()) return "object";
  if (v.is_array()) return "array";
  return text_of(v);
}

// Appends a path segment for its lifetime.
class Validator::Segment {
 public:
  Segment(std::string& path, std::string_view field) : path_(path), size_(path.size()) {
    if (!path_.empty()) path_ += '.';
    path_ += field;
  }
  Segment(std::string& path, std::size_t index) : path_(path), size_(path.size()) {
    path_ += '[' + std::to_string(index) + ']';
  }
  // A map entry: "metadata.labels[team]".
  static Segment key(std::string& path, std::string_view key) { return Segment(path, key, true); }
  ~Segment() { path_.resize(size_); }
  Segment(const Segment&) = delete;
  Segment& operator=(const Segment&) = delete;

 private:
  Segment(std::string& path, std::string_view key, bool) : path_(path), size_(path.size()) {
    path_ += '[';
    path_ += key;
    path_ += ']';
  }
  std::string& path_;
  std::size_t size_;
};

Validator::Validator(const Schema& object_meta, Result& result)
    : object_meta_(object_meta), result_(result), out_(&result.violations) {}

void Validator::add(std::string_view rule, std::string message) {
  out_->push_back({path_, std::string(rule), std::move(message)});
}

void Validator::not_checked(std::string what, std::string rule, std::string reason) {
  result_.not_checked.push_back({path_, std::move(what), std::move(rule), std::move(reason)});
}

void Validator::resource(const Schema& schema, const Json& object, const MetaRules& meta) {
  if (!object.is_object()) return add("type", "Invalid value: \"" + std::string(json_type(object)) + "\": must be of type object");
  this->object(schema, object, true, &meta);
  junctors(schema, object);
  cel(schema);
}

void Validator::cel(const Schema& s) {
  for (const auto& rule : s.validations) {
    not_checked("x-kubernetes-validations", rule.rule,
                rule.transition ? "CEL transition rule (runs on updates only); CEL is not evaluated"
                                : "CEL is not evaluated");
  }
}

void Validator::value(const Schema& s, const Json& v, bool structural) {
  if (!type(s, v)) return;
  if (v.is_null()) return;  // nullable (or untyped)
  format(s, v);
  if (!s.enumeration.empty() && std::find(s.enumeration.begin(), s.enumeration.end(), v) == s.enumeration.end()) {
    std::string supported;
    for (const auto& e : s.enumeration) supported += (supported.empty() ? "" : ", ") + preview(e);
    add("enum", "Unsupported value: " + preview(v) + ": supported values: " + supported);
  }
  if (v.is_number()) number(s, v);
  if (v.is_string()) string(s, v.get_ref<const std::string&>());
  if (v.is_array()) array(s, v, structural);
  if (v.is_object()) {
    static const MetaRules kEmbedded{.name = NameRule::PathSegment, .max_name_length = 0, .name_reason = {},
                                     .name_required = false, .namespaced = false};
    object(s, v, structural, structural && s.embedded_resource ? &kEmbedded : nullptr);
  }
  junctors(s, v);
  if (structural) cel(s);
}

bool Validator::type(const Schema& s, const Json& v) {
  if (v.is_null()) {
    if (s.nullable || (s.type == Type::Unset && !s.int_or_string)) return true;
    add("type", "Invalid value: \"null\": must be of type " +
                    std::string(s.int_or_string ? "integer or string" : type_name(s.type)));
    return false;
  }
  bool ok = true;
  if (s.int_or_string) {
    ok = v.is_string() || is_integer(v);
  } else {
    switch (s.type) {
      case Type::Unset: break;
      case Type::Object: ok = v.is_object(); break;
      case Type::Array: ok = v.is_array(); break;
      case Type::String: ok = v.is_string(); break;
      case Type::Integer: ok = is_integer(v); break;
      case Type::Number: ok = v.is_number(); break;
      case Type::Boolean: ok = v.is_boolean(); break;
    }
  }
  if (!ok) {
    const std::string_view want = s.int_or_string ? "integer or string" : type_name(s.type);
    add("type", "Invalid value: \"" + std::string(json_type(v)) + "\": must be of type " + std::string(want));
  }
  return ok;
}

void Validator::format(const Schema& s, const Json& v) {
  if (s.format == Format::None) return;
  if (v.is_number() && (s.type == Type::Integer || s.type == Type::Number)) {
    // kube-openapi's numberValidator (since January 2026) checks that a value fits its format.
    // (int64 and double need no check: every value that passes the type fits them.)
    bool fits = true;
    if (s.type == Type::Integer && s.format == Format::Int32) {
      fits = compare(v, -2147483648.0) >= 0 && compare(v, 2147483647.0) <= 0;
    } else if (s.type == Type::Number && s.format == Format::Float) {
      fits = std::fabs(v.get<double>()) <= FLT_MAX;
    }
    if (!fits) add("format", invalid(v, "must be of type " + std::string(type_name(s.type)) + " with format " + s.format_name));
    return;
  }
  if (!v.is_string()) return;
  const auto& text = v.get_ref<const std::string&>();
  switch (s.format) {
    case Format::DateTime:
      if (!is_date_time(text)) add("format", invalid(v, "must be of type date-time (RFC 3339, e.g. 2026-01-02T15:04:05Z)"));
      break;
    case Format::Date:
      if (!is_date(text)) add("format", invalid(v, "must be of type date (e.g. 2026-01-02)"));
      break;
    case Format::Byte:
      if (!is_base64(text)) add("format", invalid(v, "must be of type byte (standard base64 with padding)"));
      break;
    case Format::Other:
      not_checked("format", s.format_name, "the API server checks this string format; gpubank does not");
      break;
    default: break;
  }
}

void Validator::number(const Schema& s, const Json& v) {
  if (s.multiple_of) {
    const double f = *s.multiple_of;
    bool multiple = true;
    if (is_integer(v) && v.is_number_integer() && std::trunc(f) == f && f < 9.2e18) {
      multiple = v.get<std::int64_t>() % static_cast<std::int64_t>(f) == 0;
    } else {
      const double d = v.get<double>();
      const double m = f < 1 ? 1 / f * d : d / f;
      multiple = std::isfinite(m) && std::trunc(m) == m && std::fabs(m) <= kMaxJsonInteger;
    }
    if (!multiple) add("multipleOf", invalid(v, "should be a multiple of " + format_number(f)));
  }
  if (s.minimum) {
    const int c = compare(v, *s.minimum);
    if (c < 0 || (s.exclusive_minimum && c == 0)) {
      add("minimum", invalid(v, std::string(s.exclusive_minimum ? "should be greater than " : "should be greater than or equal to ") +
                                    format_number(*s.minimum)));
    }
  }
  if (s.maximum) {
    const int c = compare(v, *s.maximum);
    if (c > 0 || (s.exclusive_maximum && c == 0)) {
      add("maximum", invalid(v, std::string(s.exclusive_maximum ? "should be less than " : "should be less than or equal to ") +
                                    format_number(*s.maximum)));
    }
  }
}

void Validator::string(const Schema& s, const std::string& v) {
  // As kube-openapi's stringValidator: maxLength, minLength, pattern; the first failure ends it.
  if (s.max_length || s.min_length) {
    const auto length = static_cast<std::int64_t>(code_points(v));
    if (s.max_length && length > *s.max_length) {
      return add("maxLength", "Too long: may not be more than " + std::to_string(*s.max_length) + " characters (" +
                                  std::to_string(length) + ")");
    }
    if (s.min_length && length < *s.min_length) {
      return add("minLength", invalid(Json(v), "should be at least " + std::to_string(*s.min_length) + " characters long"));
    }
  }
  if (!s.pattern) return;
  if (s.pattern->status() != Pattern::Status::Ok) {
    return not_checked("pattern", s.pattern->source(), s.pattern->problem());
  }
  const std::optional<bool> match = s.pattern->search(v);
  if (!match) return not_checked("pattern", s.pattern->source(), "std::regex gave up on this value");
  if (!*match) add("pattern", invalid(Json(v), "should match '" + s.pattern->source() + "'"));
}

void Validator::array(const Schema& s, const Json& v, bool structural) {
  if (s.items) {
    for (std::size_t i = 0; i < v.size(); ++i) {
      Segment at(path_, i);
      value(*s.items, v[i], structural);
    }
  }
  const auto size = static_cast<std::int64_t>(v.size());
  if (s.min_items && size < *s.min_items) {
    add("minItems", invalid(Json(size), "should have at least " + std::to_string(*s.min_items) + " items"));
  }
  if (s.max_items && size > *s.max_items) {
    add("maxItems", "Too many: " + std::to_string(size) + ": must have at most " + std::to_string(*s.max_items) + " items");
  }
  if (structural && s.list_type != ListType::Atomic) list_type(s, v);
}

void Validator::list_type(const Schema& s, const Json& v) {
  std::vector<std::string> keys;
  std::vector<Json> shown;  // what a duplicate is reported as
  keys.reserve(v.size());
  if (s.list_type == ListType::Set) {
    for (const auto& item : v) keys.push_back(canonical(item));
  } else {
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (!v[i].is_object() && !v[i].is_null()) {
        Segment at(path_, i);
        return add("x-kubernetes-list-type", invalid(v[i], "must be an object for an array of list-type map"));
      }
    }
    for (const auto& item : v) {
      // A key the item leaves out is compared by its default, as the server defaults first.
      Json key = Json::object();
      for (const auto& k : s.list_map_keys) {
        const auto it = item.is_object() ? item.find(k) : item.end();
        const Schema* field = s.items != nullptr ? s.items->property(k) : nullptr;
        if (item.is_object() && it != item.end()) {
          key[k] = *it;
        } else if (field != nullptr && field->default_value) {
          key[k] = *field->default_value;
        }
      }
      keys.push_back(canonical(key));
      shown.push_back(std::move(key));
    }
  }
  std::unordered_map<std::string_view, int> seen;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (++seen[keys[i]] != 2) continue;  // each duplicated value once, at its second place
    Segment at(path_, i);
    const Json& dup = s.list_type == ListType::Set ? v[i] : shown[i];
    add("x-kubernetes-list-type", "Duplicate value: " + (dup.is_structured() ? text_of(dup) : preview(dup)));
  }
}

void Validator::object(const Schema& s, const Json& v, bool structural, const MetaRules* meta) {
  std::int64_t present = 0;
  for (const auto& [key, child] : v.items()) {
    if (meta != nullptr && (key == "apiVersion" || key == "kind" || key == "metadata")) {
      ++present;
      continue;  // resource_fields
    }
    const Schema* property = s.property(key);
    const Schema* field = property != nullptr ? property : s.additional.get();
    if (prunable_null(child, field)) continue;  // the server drops it before validating
    ++present;
    if (property != nullptr) {
      Segment at(path_, key);
      value(*property, child, structural);
    } else if (field != nullptr) {
      Segment at = Segment::key(path_, key);
      value(*field, child, structural);
    } else if (structural && !s.additional_allowed && !s.preserve_unknown_fields) {
      Segment at(path_, key);
      add("unknown-field", "unknown field " + quote(path_));
    }
  }
  if (meta != nullptr) resource_fields(s, v, *meta, path_.empty());
  for (const auto& name : s.required) {
    const Schema* property = s.property(name);
    const auto it = v.find(name);
    if (it != v.end() && !prunable_null(*it, property)) continue;
    if (property != nullptr && property->default_value) continue;  // defaulted before validation
    Segment at(path_, name);
    add("required", "Required value");
  }
  if (s.min_properties && present < *s.min_properties) {
    add("minProperties", invalid(Json(present), "should have at least " + std::to_string(*s.min_properties) + " properties"));
  }
  if (s.max_properties && present > *s.max_properties) {
    add("maxProperties",
        "Too many: " + std::to_string(present) + ": must have at most " + std::to_string(*s.max_properties) + " properties");
  }
}

void Validator::resource_fields(const Schema& s, const Json& v, const MetaRules& meta, bool root) {
  for (const char* name : {"apiVersion", "kind"}) {
    Segment at(path_, name);
    const auto it = v.find(name);
    if (it == v.end()) {
      if (!root) add("required", "Required value");
      continue;
    }
    if (const Schema* declared = s.property(name)) value(*declared, *it, true);
    if (!it->is_string()) {
      add("embedded-resource", invalid(*it, "must be a string"));
      continue;
    }
    const auto& text = it->get_ref<const std::string&>();
    if (text.empty()) {
      add("embedded-resource", invalid(*it, "must not be empty"));
    } else if (name == std::string_view("apiVersion") && std::count(text.begin(), text.end(), '/') > 1) {
      add("embedded-resource", invalid(*it, "unexpected GroupVersion string: " + text));
    } else if (name == std::string_view("kind")) {
      std::string lower = text;
      for (char& c : lower) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
      if (auto problem = check_dns1035_label(lower)) {
        add("embedded-resource", invalid(*it, "may have mixed case, but should otherwise match: " + *problem));
      }
    }
  }
  Segment at(path_, "metadata");
  const auto it = v.find("metadata");
  if (it == v.end() || it->is_null()) {
    if (root) check_object_meta(Json::object(), path_, meta, *out_);
    return;
  }
  value(object_meta_, *it, true);
  // A CRD may restrict metadata.name and generateName further (e.g. a maxLength).
  if (const Schema* declared = s.property("metadata")) value(*declared, *it, false);
  check_object_meta(*it, path_, meta, *out_);
}

std::vector<Violation> Validator::branch(const Schema& s, const Json& v) {
  std::vector<Violation> found;
  std::vector<Violation>* saved = out_;
  out_ = &found;
  value(s, v, false);
  out_ = saved;
  return found;
}

void Validator::junctors(const Schema& s, const Json& v) {
  for (const auto& b : s.all_of) value(b, v, false);
  if (!s.any_of.empty()) {
    std::vector<Violation> best;
    bool matched = false;
    for (const auto& b : s.any_of) {
      auto found = branch(b, v);
      if (found.empty()) {
        matched = true;
        break;
      }
      if (best.empty() || found.size() < best.size()) best = std::move(found);
    }
    if (!matched) {
      add("anyOf", "Invalid value: " + preview(v) + ": must validate at least one schema (anyOf)");
      out_->insert(out_->end(), best.begin(), best.end());
    }
  }
  if (!s.one_of.empty()) {
    std::vector<Violation> best;
    std::size_t valid = 0;
    for (const auto& b : s.one_of) {
      auto found = branch(b, v);
      if (found.empty()) {
        ++valid;
      } else if (best.empty() || found.size() < best.size()) {
        best = std::move(found);
      }
    }
    if (valid != 1) {
      add("oneOf", "Invalid value: " + preview(v) + ": must validate one and only one schema (oneOf); " +
                       (valid == 0 ? std::string("found none valid") : "found " + std::to_string(valid) + " valid"));
      if (valid == 0) out_->insert(out_->end(), best.begin(), best.end());
    }
  }
  if (s.not_schema && branch(*s.not_schema, v).empty()) {
    add("not", "Invalid value: " + preview(v) + ": must not validate the schema (not)");
  }
}

}  // namespace gpubank::schema::detail
