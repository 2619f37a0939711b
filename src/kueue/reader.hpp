// Reading Kueue objects from positioned documents with the API server's messages: the
// OpenAPI schema checks of the CRDs (types, enums, patterns, lengths, list sizes, list-map
// keys), their CEL rules, and unknown fields (`kubectl --validate=strict`). Internal to
// src/kueue; decode.cpp describes each kind with these helpers.
//
// Messages are the API server's field.Error bodies, e.g.
//   Invalid value: "number": spec.x in body must be of type integer,string: "number"
//   Unsupported value: "Sometimes": supported values: "Never", "LowerPriority", "Any"
//   Required value
//   Too many: 17: must have at most 16 items
// Paths use "." for fields, "[i]" for list items and "[key]" for map keys.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/diagnostic.hpp"
#include "core/quantity.hpp"
#include "core/timestamp.hpp"
#include "document/decode.hpp"
#include "document/node.hpp"

namespace gpubank::kueue::detail {

// "spec" + "cohortName" -> "spec.cohortName"; "" + "spec" -> "spec".
std::string join(const std::string& path, std::string_view key);
std::string index(const std::string& path, std::size_t i);
std::string map_key(const std::string& path, std::string_view key);

// The JSON type name the API server uses for a node: "string", "integer", ...
std::string_view json_type(const doc::Node& node);
// Go's %q of a string (as field.Error prints string values).
std::string go_quote(std::string_view text);
// field.NotSupported's message: "Unsupported value: <shown>", then ": supported values: "
// and each supported value as strconv.Quote writes it (nothing when there are none).
template <class Range>
std::string unsupported_value(std::string_view shown, const Range& supported) {
  std::string message = "Unsupported value: ";
  message.append(shown);
  bool first = true;
  for (const auto& v : supported) {
    message.append(first ? ": supported values: " : ", ").append(go_quote(v));
    first = false;
  }
  return message;
}
// Go's encoding/json text of a string, and of a list of strings (field.Error prints other
// values so): '<', '>', '&', U+2028 and U+2029 escaped as \uXXXX, bytes that are not UTF-8
// as \ufffd. An empty list is "null": the API server stores it as absent.
std::string go_json(std::string_view text);
std::string go_json(const std::vector<std::string>& values);

// The pattern Kubernetes' generated CRDs use for references to named objects (a DNS-1123
// subdomain), and the one of a DNS-1123 label.
inline constexpr std::string_view kSubdomainPattern =
    "^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$";
inline constexpr std::string_view kLabelPattern = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$";
inline constexpr std::string_view kQuantityPattern =
    "^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$";
bool is_subdomain(std::string_view s);
bool is_dns_label(std::string_view s);
bool matches_quantity_pattern(std::string_view s);

// While it lives, the findings added to `all` are kept; at its end they are put in
// document order (line, then column), so that an object's findings read top to bottom
// whatever order its fields were checked in.
class InFileOrder {
 public:
  explicit InFileOrder(Diagnostics& all) : all_(all), first_(all.size()) {}
  ~InFileOrder();
  InFileOrder(const InFileOrder&) = delete;
  InFileOrder& operator=(const InFileOrder&) = delete;

 private:
  Diagnostics& all_;
  std::size_t first_;
};

class Reader {
 public:
  explicit Reader(doc::DecodeContext& ctx) : ctx_(ctx) {}

  void report(std::string_view rule, SourcePos pos, const std::string& path, std::string message,
              Severity severity = Severity::Error);
  // The field.Error forms.
  void type_error(const doc::Node& node, const std::string& path, std::string_view want);
  void required(SourcePos pos, const std::string& path, std::string_view detail = {});
  void invalid(SourcePos pos, const std::string& path, const std::string& shown_value,
               std::string_view detail, std::string_view rule = doc::kRuleInvalidFormat);
  // A CEL rule of the CRD failed on the node at path.
  void rule_failed(const doc::Node& node, const std::string& path, std::string_view message);
  void record(const std::string& path, SourcePos pos) { ctx_.record(path, pos); }

  [[nodiscard]] std::size_t errors() const { return ctx_.error_count(); }

 private:
  doc::DecodeContext& ctx_;
};

// One mapping being read: each get() marks its key as known; finish() reports the keys
// nobody asked for (unless the object is lenient).
class MapReader {
 public:
  MapReader(Reader& r, const doc::Node& node, std::string path, bool strict = true);

  [[nodiscard]] bool ok() const { return ok_; }
  [[nodiscard]] const doc::Node& node() const { return node_; }
  [[nodiscard]] const std::string& path() const { return path_; }
  [[nodiscard]] std::string child(std::string_view key) const { return join(path_, key); }
  // The value of key, or nullptr when absent or null (the API server drops nulls of
  // non-nullable fields before validating).
  const doc::Node* get(std::string_view key);
  // Keys accepted as they are, without being read.
  void accept(std::initializer_list<std::string_view> keys);
  // Keys Kueue acts on that the twin does not model: accepted, and each one present (not
  // null) is a warning `rule` at its path saying so, with `what` (what Kueue would do).
  void accept_not_modelled(std::initializer_list<std::string_view> keys, std::string_view rule, std::string_view what);
  // `required` on a missing key: "Required value" at the key's path.
  void missing(std::string_view key, std::string_view detail = {});
  // A string field the schema requires: read, or reported missing (nullopt either way
  // when absent or not a string, or when this node is not a mapping).
  std::optional<std::string> required_string(std::string_view key);
  void finish();

  Reader& reader;

 private:
  const doc::Node& node_;
  std::string path_;
  bool strict_;
  bool ok_ = false;
  std::vector<std::string_view> known_;
};

// Typed reads: each reports what is wrong and returns nullopt; absent (nullptr) nodes
// return nullopt without a report.
std::optional<std::string> read_string(Reader& r, const doc::Node* n, const std::string& path);
std::optional<bool> read_bool(Reader& r, const doc::Node* n, const std::string& path);
std::optional<std::int64_t> read_int64(Reader& r, const doc::Node* n, const std::string& path);
std::optional<std::int32_t> read_int32(Reader& r, const doc::Node* n, const std::string& path);
// x-kubernetes-int-or-string with the quantity pattern.
std::optional<Quantity> read_quantity(Reader& r, const doc::Node* n, const std::string& path);
std::optional<Timestamp> read_time(Reader& r, const doc::Node* n, const std::string& path);
// An enum string; unsupported values list the supported ones in the CRD's order.
std::optional<std::string> read_enum(Reader& r, const doc::Node* n, const std::string& path,
                                     std::initializer_list<std::string_view> values);
// A string that must match kSubdomainPattern and be at most max_length bytes.
std::optional<std::string> read_reference(Reader& r, const doc::Node* n, const std::string& path,
                                          std::size_t max_length = 253);
// A string checked against a maximum and minimum length.
std::optional<std::string> read_bounded_string(Reader& r, const doc::Node* n, const std::string& path,
                                               std::size_t min_length, std::size_t max_length);
// A list of strings, each checked for its type only; absent: empty.
std::vector<std::string> read_strings(Reader& r, const doc::Node* n, const std::string& path);
std::optional<std::map<std::string, std::string>> read_string_map(Reader& r, const doc::Node* n,
                                                                  const std::string& path);
std::optional<std::map<std::string, Quantity>> read_quantity_map(Reader& r, const doc::Node* n,
                                                                 const std::string& path);

// Checks a node is a list with at most max_items (and at least min_items) items; returns
// nullptr (after reporting) when not. max_items < 0: unbounded.
const doc::Node* list_node(Reader& r, const doc::Node* n, const std::string& path, long min_items,
                           long max_items);
// The size check of maxProperties on a map.
bool check_max_properties(Reader& r, const doc::Node& n, const std::string& path, std::size_t max);
// listType=map with a single key `key`: every later duplicate of an earlier key value is
// reported ("Duplicate value: map[string]interface {}{"name":"x"}").
void check_unique_keys(Reader& r, const doc::Node& list, const std::string& path,
                       const std::vector<std::string>& keys, std::string_view key);

// A check of an integer's minimum.
bool check_minimum(Reader& r, const doc::Node& n, const std::string& path, std::int64_t value,
                   std::int64_t minimum);

}  // namespace gpubank::kueue::detail
