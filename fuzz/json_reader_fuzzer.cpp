// Fuzzes the two JSON readers: read_json (positions on every node, for files) and
// parse_json (no positions, for request bodies). They share one builder and must agree:
// both accept or both reject, and on success they build the same tree. Their messages
// must be UTF-8 whatever the input, and every position read_json records must be where
// its key or value starts in the text.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/diagnostic.hpp"
#include "document/node.hpp"
#include "document/reader.hpp"

namespace {

using namespace gpubank;

[[noreturn]] void disagree(const char* what, const Diagnostics& findings, const Expected<doc::Node>& parsed) {
  std::fprintf(stderr, "\nread_json and parse_json disagree: %s\n", what);
  for (const auto& d : findings) std::fprintf(stderr, "  read_json: %s\n", d.to_string().c_str());
  std::fprintf(stderr, "  parse_json: %s\n", parsed ? "ok" : parsed.error().c_str());
  std::fflush(stderr);
  __builtin_trap();
}

// Byte offsets of read_json's (line, column) positions: columns count code points, and a
// leading UTF-8 byte order mark (which the parser skips) takes no column.
class Positions {
 public:
  explicit Positions(std::string_view text) : text_(text) {
    const std::size_t start = text.starts_with("\xEF\xBB\xBF") ? 3 : 0;
    line_starts_.push_back(start);
    for (std::size_t i = start; i < text.size(); ++i) {
      if (text[i] == '\n') line_starts_.push_back(i + 1);
    }
  }

  // The byte at `pos`, or -1 when it is outside the text.
  [[nodiscard]] int at(SourcePos pos) const {
    if (pos.line < 1 || pos.column < 1 || static_cast<std::size_t>(pos.line) > line_starts_.size()) return -1;
    std::size_t i = line_starts_[static_cast<std::size_t>(pos.line) - 1];
    for (int column = 1; column < pos.column; ++column) {
      if (i >= text_.size() || text_[i] == '\n') return -1;
      ++i;
      while (i < text_.size() && (static_cast<unsigned char>(text_[i]) & 0xC0) == 0x80) ++i;
    }
    return i < text_.size() ? static_cast<unsigned char>(text_[i]) : -1;
  }

 private:
  std::string_view text_;
  std::vector<std::size_t> line_starts_;
};

// Whether a node's recorded position is where its value starts in the text.
bool starts_there(const doc::Node& n, int c) {
  switch (n.type) {
    case doc::NodeType::Null: return c == 'n';
    case doc::NodeType::Bool: return c == (n.boolean ? 't' : 'f');
    case doc::NodeType::Int:
    case doc::NodeType::Float: return c == '-' || (c >= '0' && c <= '9');
    case doc::NodeType::String: return c == '"';
    case doc::NodeType::Sequence: return c == '[';
    case doc::NodeType::Mapping: return c == '{';
  }
  return false;
}

void check_positions(const doc::Node& n, const Positions& text) {
  if (!starts_there(n, text.at(n.pos))) {
    std::fprintf(stderr, "\nread_json put %s %s at %d:%d, where the text has no such value\n", doc::describe(n.type),
                 doc::preview(n).c_str(), n.pos.line, n.pos.column);
    std::fflush(stderr);
    __builtin_trap();
  }
  for (const auto& item : n.items) check_positions(item, text);
  for (const auto& e : n.entries) {
    if (text.at(e.key_pos) != '"') {
      std::fprintf(stderr, "\nread_json put key \"%s\" at %d:%d, where the text has no key\n", e.key.c_str(),
                   e.key_pos.line, e.key_pos.column);
      std::fflush(stderr);
      __builtin_trap();
    }
    check_positions(e.value, text);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  doc::ReadLimits limits;
  limits.max_bytes = std::size_t{64} << 10;
  limits.max_nodes = 20'000;

  std::vector<doc::Document> docs;
  Diagnostics findings;
  doc::read_json(text, "fuzz.json", docs, findings, limits);
  const Expected<doc::Node> parsed = doc::parse_json(text, limits);
  // Messages end up in JSON (validate -o json, webhook responses): dump() throws unless
  // they are UTF-8, even when the input is not.
  for (const auto& d : findings) (void)nlohmann::json(d.to_string()).dump();
  if (!parsed) (void)nlohmann::json(parsed.error()).dump();

  const bool read_ok = !has_errors(findings);
  if (read_ok != parsed.ok()) disagree("one accepts, the other rejects", findings, parsed);
  if (!read_ok) return 0;
  if (docs.size() > 1) disagree("read_json returned more than one document", findings, parsed);
  // read_json leaves out a null document; parse_json returns it.
  const nlohmann::json from_read = docs.empty() ? nlohmann::json(nullptr) : doc::to_json(docs[0].root);
  if (from_read != doc::to_json(*parsed)) disagree("different trees", findings, parsed);
  if (!docs.empty()) check_positions(docs[0].root, Positions(text));
  return 0;
}
