// Decoding positioned documents into typed values, and encoding them back, from one
// description of each type's fields.
//
// A type opts in by specialising Schema<T> with
//     template <class V, class S> static void fields(V& v, S& s)
// that calls v.required("key", s.member, checks...) / v.optional(...) for every field.
// The same description drives ObjectReader (decoding, with errors for unknown fields,
// wrong types, missing required fields and failed checks, each carrying the field path
// and position) and ObjectWriter (encoding to JSON in the declared field order). Enums
// specialise EnumNames<T>. Other types specialise Codec<T> directly.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/diagnostic.hpp"
#include "core/duration.hpp"
#include "core/timestamp.hpp"
#include "document/node.hpp"

namespace gpubank::doc {

// Rule ids of decoding errors.
inline constexpr std::string_view kRuleUnknownField = "schema.unknown-field";
inline constexpr std::string_view kRuleDuplicateField = "schema.duplicate-field";
inline constexpr std::string_view kRuleWrongType = "schema.wrong-type";
inline constexpr std::string_view kRuleRequired = "schema.required";
inline constexpr std::string_view kRuleOutOfRange = "schema.out-of-range";
inline constexpr std::string_view kRuleInvalidFormat = "schema.invalid-format";
inline constexpr std::string_view kRuleInvalidEnum = "schema.invalid-enum";

using Json = nlohmann::ordered_json;

// Where each decoded field came from, by field path ("spec.windows[1].start").
class SourceMap {
 public:
  void record(const std::string& path, SourcePos pos) { positions_.emplace(path, pos); }
  // The position of the path, else of its nearest recorded ancestor, else {}.
  [[nodiscard]] SourcePos find(std::string_view path) const;

 private:
  std::unordered_map<std::string, SourcePos> positions_;
};

// What is being decoded, and where findings go.
class DecodeContext {
 public:
  DecodeContext(std::string file, std::string kind, std::string name, Diagnostics& out,
                SourceMap* source_map = nullptr)
      : file_(std::move(file)), kind_(std::move(kind)), name_(std::move(name)), out_(out),
        source_map_(source_map) {}

  void report(std::string_view rule, SourcePos pos, std::string path, std::string message,
              Severity severity = Severity::Error);
  void record(const std::string& path, SourcePos pos) {
    if (source_map_ != nullptr) source_map_->record(path, pos);
  }
  [[nodiscard]] std::size_t error_count() const { return errors_; }

 private:
  std::string file_, kind_, name_;
  Diagnostics& out_;
  SourceMap* source_map_;
  std::size_t errors_ = 0;
};

// One value being decoded: its node, its path and the context.
struct Field {
  DecodeContext& ctx;
  const Node& node;
  std::string path;

  void error(std::string_view rule, std::string message) const {
    ctx.report(rule, node.pos, path, std::move(message));
  }
  // "expected an integer, got a string \"ten\"" under schema.wrong-type.
  void wrong_type(std::string_view expected) const;
  [[nodiscard]] Field child(const Node& n, std::string child_path) const {
    return Field{ctx, n, std::move(child_path)};
  }
};

template <class T>
struct Codec;  // static bool decode(const Field&, T&); static Json encode(const T&);
template <class T>
struct Schema;  // template <class V, class S> static void fields(V&, S&);
template <class T>
struct EnumNames;  // static constexpr std::array<std::pair<T, std::string_view>, N> values;

template <class T>
concept HasSchema = requires { sizeof(Schema<T>); };
template <class T>
concept IsEnumWithNames = std::is_enum_v<T> && requires { EnumNames<T>::values; };

template <class T>
struct IsOptional : std::false_type {};
template <class T>
struct IsOptional<std::optional<T>> : std::true_type {};

// ---- checks: callables returning an error message for a bad value --------------------

struct AtLeast {
  std::int64_t min;
  std::string_view rule = kRuleOutOfRange;
  template <class T>
  std::optional<std::string> operator()(const T& v) const {
    if (static_cast<std::int64_t>(v) >= min) return std::nullopt;
    return "must be at least " + std::to_string(min) + ", got " + std::to_string(v);
  }
};

struct Between {
  std::int64_t min, max;
  std::string_view rule = kRuleOutOfRange;
  template <class T>
  std::optional<std::string> operator()(const T& v) const {
    if (v >= static_cast<T>(min) && v <= static_cast<T>(max)) return std::nullopt;
    return "must be between " + std::to_string(min) + " and " + std::to_string(max) + ", got " +
           format_number(v);
  }
  template <class T>
  static std::string format_number(const T& v) {
    if constexpr (std::is_floating_point_v<T>) {
      return Json(v).dump();
    } else {
      return std::to_string(v);
    }
  }
};

struct Positive {
  std::string_view rule = kRuleOutOfRange;
  std::optional<std::string> operator()(double v) const {
    if (v > 0) return std::nullopt;
    return "must be greater than 0, got " + Json(v).dump();
  }
  std::optional<std::string> operator()(const Duration& v) const {
    if (v.nanoseconds().count() > 0) return std::nullopt;
    return "must be a positive duration, got " + v.to_string();
  }
};

struct NonNegative {
  std::string_view rule = kRuleOutOfRange;
  std::optional<std::string> operator()(const Duration& v) const {
    if (!v.negative()) return std::nullopt;
    return "must not be negative, got " + v.to_string();
  }
};

struct NotEmpty {
  std::string_view rule = kRuleRequired;
  template <class T>
  std::optional<std::string> operator()(const T& v) const {
    if (!v.empty()) return std::nullopt;
    return "must not be empty";
  }
};

// RFC 1123 label: lower-case alphanumerics and '-', starting and ending alphanumeric,
// at most 63 characters (Kubernetes' DNS-1123 label, the rule for metadata.name).
struct DnsLabel {
  std::string_view rule = kRuleInvalidFormat;
  std::optional<std::string> operator()(const std::string& v) const;
};

// ---- decoding ------------------------------------------------------------------------

template <class T>
bool decode_object(const Field& f, T& out);
template <class T>
Json encode_object(const T& value);
template <class T>
bool decode_enum(const Field& f, T& out);

template <class T>
bool decode_value(const Field& f, T& out) {
  if constexpr (HasSchema<T>) {
    return decode_object(f, out);
  } else if constexpr (IsEnumWithNames<T>) {
    return decode_enum(f, out);
  } else {
    return Codec<T>::decode(f, out);
  }
}

template <class T>
Json encode_value(const T& v) {
  if constexpr (HasSchema<T>) {
    return encode_object(v);
  } else if constexpr (IsEnumWithNames<T>) {
    for (const auto& [value, name] : EnumNames<T>::values) {
      if (value == v) return std::string(name);
    }
    return nullptr;
  } else {
    return Codec<T>::encode(v);
  }
}

std::string allowed_list(const std::string_view* names, std::size_t count);

template <class T>
bool decode_enum(const Field& f, T& out) {
  if (f.node.type != NodeType::String) {
    f.wrong_type("a string");
    return false;
  }
  for (const auto& [value, name] : EnumNames<T>::values) {
    if (name == f.node.text) {
      out = value;
      return true;
    }
  }
  std::array<std::string_view, EnumNames<T>::values.size()> names{};
  for (std::size_t i = 0; i < names.size(); ++i) names[i] = EnumNames<T>::values[i].second;
  f.error(kRuleInvalidEnum, "unsupported value \"" + f.node.text + "\": must be one of " +
                                allowed_list(names.data(), names.size()));
  return false;
}

template <class T>
std::string_view enum_name(T v) {
  for (const auto& [value, name] : EnumNames<T>::values) {
    if (value == v) return name;
  }
  return "?";
}

// Decodes the fields of a mapping through Schema<T>.
class ObjectReader {
 public:
  explicit ObjectReader(const Field& f);

  [[nodiscard]] bool is_object() const { return is_object_; }

  template <class T, class... Checks>
  void required(std::string_view key, T& out, Checks... checks) {
    member(key, out, true, checks...);
  }
  template <class T, class... Checks>
  void optional(std::string_view key, T& out, Checks... checks) {
    member(key, out, false, checks...);
  }
  // Marks a key as known without decoding it (fields read elsewhere).
  void known(std::string_view key) { expected_.push_back(key); }
  // The node of a key, or nullptr; marks the key as known.
  const Node* raw(std::string_view key) {
    expected_.push_back(key);
    return field_.node.find(key);
  }

  // Reports fields nobody asked for. Returns true when the object decoded cleanly.
  bool finish();
  [[nodiscard]] const Field& field() const { return field_; }

 private:
  template <class T, class... Checks>
  void member(std::string_view key, T& out, bool is_required, Checks... checks) {
    expected_.push_back(key);
    if (!is_object_) return;
    const Node* n = field_.node.find(key);
    const std::string path = field_.path.empty() ? std::string(key) : field_.path + "." + std::string(key);
    if (n == nullptr || n->type == NodeType::Null) {
      if (is_required) {
        field_.ctx.report(kRuleRequired, field_.node.pos, path, "required field is missing");
        ok_ = false;
      }
      return;
    }
    const Field child = field_.child(*n, path);
    field_.ctx.record(path, n->pos);
    if constexpr (IsOptional<T>::value) {
      typename T::value_type value{};
      if (!decode_value(child, value) || !run_checks(child, value, checks...)) {
        ok_ = false;
        return;
      }
      out = std::move(value);
    } else {
      if (!decode_value(child, out) || !run_checks(child, out, checks...)) ok_ = false;
    }
  }

  template <class T, class... Checks>
  static bool run_checks(const Field& f, const T& value, Checks... checks) {
    bool ok = true;
    // One finding per field is enough: stop at the first failing check.
    ((ok = ok && run_check(f, value, checks)), ...);
    return ok;
  }

  template <class T, class Check>
  static bool run_check(const Field& f, const T& value, const Check& check) {
    if (auto message = check(value)) {
      f.error(check.rule, *message);
      return false;
    }
    return true;
  }

  const Field& field_;
  bool is_object_ = false;
  bool ok_ = true;
  std::vector<std::string_view> expected_;
};

// Encodes fields through Schema<T>: required fields always, optional ones when set.
class ObjectWriter {
 public:
  template <class T, class... Checks>
  void required(std::string_view key, const T& value, Checks...) {
    put(key, value, false);
  }
  template <class T, class... Checks>
  void optional(std::string_view key, const T& value, Checks...) {
    put(key, value, true);
  }
  void known(std::string_view) {}
  Json take() { return std::move(out_); }

 private:
  template <class T>
  void put(std::string_view key, const T& value, bool omit_empty) {
    if constexpr (IsOptional<T>::value) {
      if (value) out_[std::string(key)] = encode_value(*value);
    } else if constexpr (requires { value.empty(); }) {
      // Optional empty strings, lists and maps are left out, as Go's omitempty does.
      if (!omit_empty || !value.empty()) out_[std::string(key)] = encode_value(value);
    } else {
      out_[std::string(key)] = encode_value(value);
    }
  }
  Json out_ = Json::object();
};

template <class T>
bool decode_object(const Field& f, T& out) {
  ObjectReader reader(f);
  if (!reader.is_object()) return false;
  Schema<T>::fields(reader, out);
  return reader.finish();
}

template <class T>
Json encode_object(const T& value) {
  ObjectWriter writer;
  Schema<T>::fields(writer, value);
  return writer.take();
}

// ---- codecs for the common types -----------------------------------------------------

template <>
struct Codec<std::string> {
  static bool decode(const Field& f, std::string& out);
  static Json encode(const std::string& v) { return v; }
};
template <>
struct Codec<bool> {
  static bool decode(const Field& f, bool& out);
  static Json encode(bool v) { return v; }
};
template <>
struct Codec<std::int64_t> {
  static bool decode(const Field& f, std::int64_t& out);
  static Json encode(std::int64_t v) { return v; }
};
template <>
struct Codec<int> {
  static bool decode(const Field& f, int& out);
  static Json encode(int v) { return v; }
};
template <>
struct Codec<double> {
  static bool decode(const Field& f, double& out);
  static Json encode(double v) { return v; }
};
template <>
struct Codec<Duration> {
  static bool decode(const Field& f, Duration& out);
  static Json encode(const Duration& v) { return v.to_string(); }
};
template <>
struct Codec<Timestamp> {
  static bool decode(const Field& f, Timestamp& out);
  static Json encode(const Timestamp& v) { return format_rfc3339(v); }
};

template <class T>
struct Codec<std::vector<T>> {
  static bool decode(const Field& f, std::vector<T>& out) {
    if (f.node.type != NodeType::Sequence) {
      f.wrong_type("a list");
      return false;
    }
    bool ok = true;
    out.clear();
    out.reserve(f.node.items.size());
    for (std::size_t i = 0; i < f.node.items.size(); ++i) {
      const std::string path = f.path + "[" + std::to_string(i) + "]";
      f.ctx.record(path, f.node.items[i].pos);
      T value{};
      if (decode_value(f.child(f.node.items[i], path), value)) {
        out.push_back(std::move(value));
      } else {
        ok = false;
      }
    }
    return ok;
  }
  static Json encode(const std::vector<T>& v) {
    Json out = Json::array();
    for (const auto& item : v) out.push_back(encode_value(item));
    return out;
  }
};

// Maps with string keys ("nodeLabels", "limits"); keys in sorted order, duplicates are
// errors.
template <class T>
struct Codec<std::map<std::string, T>> {
  static bool decode(const Field& f, std::map<std::string, T>& out) {
    if (f.node.type != NodeType::Mapping) {
      f.wrong_type("an object");
      return false;
    }
    bool ok = true;
    out.clear();
    for (const auto& e : f.node.entries) {
      const std::string path = f.path + "." + e.key;
      f.ctx.record(path, e.value.pos);
      if (out.contains(e.key)) {
        f.ctx.report(kRuleDuplicateField, e.key_pos, path, "duplicate key \"" + e.key + "\"");
        ok = false;
        continue;
      }
      T value{};
      if (decode_value(f.child(e.value, path), value)) {
        out.emplace(e.key, std::move(value));
      } else {
        ok = false;
      }
    }
    return ok;
  }
  static Json encode(const std::map<std::string, T>& v) {
    Json out = Json::object();
    for (const auto& [k, item] : v) out[k] = encode_value(item);
    return out;
  }
};

}  // namespace gpubank::doc
