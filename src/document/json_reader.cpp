#include <nlohmann/json.hpp>

#include <cstdio>

#include "document/characters.hpp"
#include "document/reader.hpp"

namespace gpubank::doc {
namespace {

// nlohmann::json 3.11 reports no positions for parsed values, so file input is scanned
// once more for where each key and value starts (in the same order the parser reports
// them). The scanner trusts nothing: on malformed input it may produce fewer positions,
// and the parser then rejects the text anyway.
std::vector<SourcePos> scan_positions(std::string_view text) {
  std::vector<SourcePos> out;
  int line = 1;
  int column = 1;
  // The parser skips a byte order mark at the start; it takes no column.
  std::size_t i = text.starts_with("\xEF\xBB\xBF") ? 3 : 0;
  auto advance = [&]() {
    const unsigned char c = static_cast<unsigned char>(text[i++]);
    if (c == '\n') {
      ++line;
      column = 1;
    } else if ((c & 0xC0) != 0x80) {  // count code points, not UTF-8 continuation bytes
      ++column;
    }
  };
  while (i < text.size()) {
    const char c = text[i];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ',' || c == ':' || c == ']' ||
        c == '}') {
      advance();
      continue;
    }
    // Comments, which the parser skips as it does whitespace (ignore_comments): "//" up
    // to and including a line end or NUL, "/*" up to and including "*/".
    if (c == '/' && i + 1 < text.size() && (text[i + 1] == '/' || text[i + 1] == '*')) {
      const bool line_comment = text[i + 1] == '/';
      advance();
      advance();
      while (i < text.size()) {
        const char d = text[i];
        if (line_comment && (d == '\n' || d == '\r' || d == '\0')) {
          advance();
          break;
        }
        if (!line_comment && d == '*' && i + 1 < text.size() && text[i + 1] == '/') {
          advance();
          advance();
          break;
        }
        advance();
      }
      continue;
    }
    // Every other token starts a value or a key: record it, then skip over it.
    out.push_back({line, column});
    if (c == '"') {
      advance();
      while (i < text.size() && text[i] != '"') {
        if (text[i] == '\\' && i + 1 < text.size()) advance();
        advance();
      }
      if (i < text.size()) advance();
    } else if (c == '{' || c == '[') {
      advance();
    } else {
      advance();  // at least one character: a stray '/' is a token of its own
      while (i < text.size() && std::string_view(" \t\r\n,]}:/").find(text[i]) == std::string_view::npos) {
        advance();
      }
    }
  }
  return out;
}

class NodeBuilder : public nlohmann::json_sax<nlohmann::json> {
 public:
  NodeBuilder(const ReadLimits& limits, const std::vector<SourcePos>* positions)
      : limits_(limits), positions_(positions) {}

  bool null() override { return scalar(NodeType::Null, "null"); }
  bool boolean(bool val) override {
    Node* n = add(NodeType::Bool);
    if (n == nullptr) return false;
    n->boolean = val;
    n->text = val ? "true" : "false";
    return true;
  }
  bool number_integer(number_integer_t val) override {
    Node* n = add(NodeType::Int);
    if (n == nullptr) return false;
    n->integer = val;
    n->number = static_cast<double>(val);
    n->text = std::to_string(val);
    return true;
  }
  bool number_unsigned(number_unsigned_t val) override {
    Node* n = add(NodeType::Int);
    if (n == nullptr) return false;
    n->integer_fits = val <= static_cast<number_unsigned_t>(INT64_MAX);
    n->integer = n->integer_fits ? static_cast<std::int64_t>(val) : INT64_MAX;
    n->number = static_cast<double>(val);
    n->text = std::to_string(val);
    return true;
  }
  bool number_float(number_float_t val, const string_t& raw) override {
    Node* n = add(NodeType::Float);
    if (n == nullptr) return false;
    n->number = val;
    n->text = raw;
    return true;
  }
  bool string(string_t& val) override {
    Node* n = add(NodeType::String);
    if (n == nullptr) return false;
    n->text = std::move(val);
    return true;
  }
  bool binary(binary_t& /*val*/) override { return fail("binary values are not JSON"); }
  bool start_object(std::size_t /*elements*/) override {
    Node* n = add(NodeType::Mapping);
    if (n == nullptr) return false;
    return open(n);
  }
  bool key(string_t& val) override {
    Node& map = *stack_.back();
    map.entries.push_back(Entry{std::move(val), next_pos(), {}});
    return true;
  }
  bool end_object() override {
    stack_.pop_back();
    return true;
  }
  bool start_array(std::size_t /*elements*/) override {
    Node* n = add(NodeType::Sequence);
    if (n == nullptr) return false;
    return open(n);
  }
  bool end_array() override {
    stack_.pop_back();
    return true;
  }
  bool parse_error(std::size_t position, const std::string& /*last_token*/,
                   const nlohmann::detail::exception& ex) override {
    error_ = to_utf8(ex.what());  // it quotes the bytes last read, which need not be UTF-8
    // nlohmann's message is "[json.exception.parse_error.101] parse error at line 1,
    // column 9: syntax error while parsing value - ...": keep the part after the id.
    if (auto p = error_.find("] "); p != std::string::npos) error_ = error_.substr(p + 2);
    (void)position;
    return false;
  }

  Node take_root() { return std::move(root_); }
  [[nodiscard]] const std::string& error() const { return error_; }
  [[nodiscard]] bool limit_hit() const { return limit_hit_; }

 private:
  SourcePos next_pos() {
    if (positions_ == nullptr || next_ >= positions_->size()) return {};
    return (*positions_)[next_++];
  }

  bool scalar(NodeType type, const char* text) {
    Node* n = add(type);
    if (n == nullptr) return false;
    n->text = text;
    return true;
  }

  // Places a new node where the grammar says it goes: the root, the pending key's value,
  // or the end of the open list. Only the innermost open container ever grows, so the
  // pointers on the stack stay valid.
  Node* add(NodeType type) {
    if (++nodes_ > limits_.max_nodes) {
      fail("more than " + std::to_string(limits_.max_nodes) + " values");
      return nullptr;
    }
    Node* n = nullptr;
    if (stack_.empty()) {
      n = &root_;
    } else if (Node& top = *stack_.back(); top.type == NodeType::Mapping) {
      n = &top.entries.back().value;
    } else {
      top.items.emplace_back();
      n = &top.items.back();
    }
    n->type = type;
    n->pos = next_pos();
    return n;
  }

  bool open(Node* n) {
    if (static_cast<int>(stack_.size()) >= limits_.max_depth) {
      return fail("nesting deeper than " + std::to_string(limits_.max_depth) + " levels");
    }
    stack_.push_back(n);
    return true;
  }

  bool fail(std::string message) {
    limit_hit_ = true;
    error_ = std::move(message);
    return false;
  }

  const ReadLimits& limits_;
  const std::vector<SourcePos>* positions_;
  std::size_t next_ = 0;
  Node root_;
  std::vector<Node*> stack_;
  std::size_t nodes_ = 0;
  std::string error_;
  bool limit_hit_ = false;
};

std::string too_large_message(std::size_t size, std::size_t limit) {
  return "input is " + std::to_string(size) + " bytes, above the limit of " + std::to_string(limit);
}

}  // namespace

void read_json(std::string_view text, const std::string& file, std::vector<Document>& out,
               Diagnostics& diagnostics, const ReadLimits& limits) {
  if (text.size() > limits.max_bytes) {
    diagnostics.push_back(Diagnostic{Severity::Error, std::string(kRuleTooLarge), file, {}, {}, {}, {},
                                     too_large_message(text.size(), limits.max_bytes)});
    return;
  }
  if (const auto bad = check_json_characters(text)) {
    diagnostics.push_back(Diagnostic{Severity::Error, std::string(kRuleSyntax), file, bad->pos, {}, {}, {}, bad->message});
    return;
  }
  const std::vector<SourcePos> positions = scan_positions(text);
  NodeBuilder builder(limits, &positions);
  const bool ok = nlohmann::json::sax_parse(text, &builder, nlohmann::json::input_format_t::json, true, true);
  if (!ok) {
    Diagnostic d;
    d.rule = builder.limit_hit() ? kRuleTooLarge : kRuleSyntax;
    d.file = file;
    std::string message = builder.error();
    // nlohmann says "parse error at line L, column C: ..."; move the place into pos.
    int line = 0;
    int column = 0;
    if (std::sscanf(message.c_str(), "parse error at line %d, column %d", &line, &column) == 2) {
      d.pos = {line, column};
      if (auto colon = message.find(": "); colon != std::string::npos) message = message.substr(colon + 2);
    }
    d.message = builder.limit_hit() ? message : "JSON syntax error: " + message;
    diagnostics.push_back(std::move(d));
    return;
  }
  Document d{file, 0, builder.take_root()};
  if (d.root.type != NodeType::Null) out.push_back(std::move(d));
}

Expected<Node> parse_json(std::string_view text, const ReadLimits& limits) {
  if (text.size() > limits.max_bytes) return Unexpected{too_large_message(text.size(), limits.max_bytes)};
  if (const auto bad = check_json_characters(text)) {
    return Unexpected{"parse error at line " + std::to_string(bad->pos.line) + ", column " +
                      std::to_string(bad->pos.column) + ": " + bad->message};
  }
  NodeBuilder builder(limits, nullptr);
  const bool ok = nlohmann::json::sax_parse(text, &builder, nlohmann::json::input_format_t::json, true, true);
  if (!ok) return Unexpected{builder.error().empty() ? std::string("malformed JSON") : builder.error()};
  return builder.take_root();
}

}  // namespace gpubank::doc
