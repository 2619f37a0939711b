// Reading YAML and JSON text into positioned documents. Hostile input is bounded: size,
// nesting depth and node count (which also stops YAML alias "billion laughs" expansion)
// are limited, and every failure becomes a diagnostic, never an exception.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "core/diagnostic.hpp"
#include "core/expected.hpp"
#include "document/node.hpp"

namespace gpubank::doc {

// Rule ids of reading errors.
inline constexpr std::string_view kRuleSyntax = "schema.syntax";
inline constexpr std::string_view kRuleTooLarge = "schema.too-large";
inline constexpr std::string_view kRuleUnreadable = "input.unreadable";

struct ReadLimits {
  std::size_t max_bytes = std::size_t{16} << 20;  // per file or request body
  int max_depth = 64;                              // nested lists/objects
  std::size_t max_nodes = 1'000'000;               // after alias expansion
};

struct Document {
  std::string file;
  int index = 0;  // position of the document within its file (YAML "---" streams)
  Node root;
};

// Appends the non-empty documents of a YAML stream (JSON is YAML too, but use read_json
// for .json files: it keeps JSON's grammar and handles every JSON escape).
void read_yaml(std::string_view text, const std::string& file, std::vector<Document>& out,
               Diagnostics& diagnostics, const ReadLimits& limits = {});

// Appends the one JSON value of `text`, with line and column on every node. JSON's
// grammar with two tolerances editors add: /* */ and // comments, and a byte order mark.
void read_json(std::string_view text, const std::string& file, std::vector<Document>& out,
               Diagnostics& diagnostics, const ReadLimits& limits = {});

// One JSON value without positions (request bodies). The error says what and where
// ("syntax error at byte 17: unexpected '}'").
Expected<Node> parse_json(std::string_view text, const ReadLimits& limits = {});

}  // namespace gpubank::doc
