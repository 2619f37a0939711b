// A positioned document tree: what a YAML or JSON object looks like before it is decoded
// into a typed value. Every node and every mapping key remembers where it came from, so
// decoding errors can name file, line and column. Scalars are typed by YAML 1.2's core
// schema (plain "10" is an integer, quoted "10" a string), the way Kubernetes reads
// manifests.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/diagnostic.hpp"

namespace gpubank::doc {

enum class NodeType { Null, Bool, Int, Float, String, Sequence, Mapping };

struct Entry;

struct Node {
  NodeType type = NodeType::Null;
  SourcePos pos;
  std::string text;             // scalar text as written; the decoded value for strings
  bool boolean = false;         // Bool
  std::int64_t integer = 0;     // Int
  bool integer_fits = true;     // Int: false when the literal is outside int64
  double number = 0;            // Float (and Int, converted)
  std::vector<Node> items;      // Sequence
  std::vector<Entry> entries;   // Mapping, in document order, duplicates kept

  [[nodiscard]] bool is_scalar() const {
    return type != NodeType::Sequence && type != NodeType::Mapping;
  }
  // First entry with that key, or nullptr (also for non-mappings).
  [[nodiscard]] const Node* find(std::string_view key) const;
  // The string value at key when it is a string, else empty.
  [[nodiscard]] std::string_view string_at(std::string_view key) const;
};

struct Entry {
  std::string key;
  SourcePos key_pos;
  Node value;
};

// "a string", "an integer", ... for messages.
[[nodiscard]] const char* describe(NodeType type);
// A short rendering of a scalar for messages: "\"abc\"", "12", "true", "null", "a list".
[[nodiscard]] std::string preview(const Node& node);

// Whether `text` is well-formed UTF-8 (no overlong forms, surrogates or code points
// above U+10FFFF), as nlohmann::json, the YAML writer and Kubernetes require.
[[nodiscard]] bool is_utf8(std::string_view text);
// `text` with every byte that is not part of well-formed UTF-8 replaced by U+FFFD, for
// messages that quote input (parser errors).
[[nodiscard]] std::string to_utf8(std::string_view text);

// Conversions to and from nlohmann::json (no positions on that side).
[[nodiscard]] Node from_json(const nlohmann::json& value);
[[nodiscard]] nlohmann::json to_json(const Node& node);
// The document as ordered JSON, keys in the order written (a duplicated key keeps its last
// value).
[[nodiscard]] nlohmann::ordered_json to_ordered_json(const Node& node);

}  // namespace gpubank::doc
