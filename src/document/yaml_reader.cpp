#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <charconv>
#include <cmath>
#include <limits>
#include <optional>
#include <sstream>
#include <algorithm>
#include <map>
#include <vector>

#include "document/characters.hpp"
#include "document/reader.hpp"
#include "document/yaml_scalar.hpp"

namespace gpubank::doc {
namespace {

SourcePos position(const YAML::Mark& mark) {
  if (mark.is_null()) return {};
  return {mark.line + 1, mark.column + 1};
}

constexpr std::string_view kCoreTagPrefix = "tag:yaml.org,2002:";

double parse_double(std::string_view s) {
  if (s.starts_with('+')) s.remove_prefix(1);
  double v = 0;
  const bool negative = s.starts_with('-');
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  (void)ptr;
  if (ec == std::errc::result_out_of_range) {
    // from_chars leaves v untouched; tiny magnitudes underflow to zero, huge ones overflow.
    const auto e = s.find_first_of("eE");
    const bool tiny = e != std::string_view::npos && s.substr(e + 1).starts_with('-');
    v = tiny ? 0.0 : HUGE_VAL;
    if (negative) v = -v;
  }
  return v;
}

void set_int(Node& n, std::string_view s) {
  n.type = NodeType::Int;
  int base = 10;
  std::string_view digits = s;
  bool neg = false;
  if (s.starts_with("0o")) {
    base = 8;
    digits = s.substr(2);
  } else if (s.starts_with("0x")) {
    base = 16;
    digits = s.substr(2);
  } else if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    neg = s[0] == '-';
    digits = s.substr(1);
  }
  // Parse the magnitude as unsigned so INT64_MIN is representable.
  std::uint64_t magnitude = 0;
  auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), magnitude, base);
  const bool parsed = ec == std::errc() && ptr == digits.data() + digits.size();
  const std::uint64_t limit = neg ? std::uint64_t{1} << 63 : (std::uint64_t{1} << 63) - 1;
  n.integer_fits = parsed && magnitude <= limit;
  if (n.integer_fits) {
    n.integer = neg ? static_cast<std::int64_t>(0 - magnitude) : static_cast<std::int64_t>(magnitude);
    n.number = static_cast<double>(n.integer);
  } else {
    n.integer = neg ? INT64_MIN : INT64_MAX;
    n.number = parse_double(s);
  }
}

void set_float(Node& n, std::string_view s) {
  n.type = NodeType::Float;
  if (s.ends_with("inf") || s.ends_with("Inf") || s.ends_with("INF")) {
    n.number = s.starts_with('-') ? -HUGE_VAL : HUGE_VAL;
  } else if (s.ends_with("nan") || s.ends_with("NaN") || s.ends_with("NAN")) {
    n.number = std::numeric_limits<double>::quiet_NaN();
  } else {
    n.number = parse_double(s);
  }
}

// Builds positioned trees straight from yaml-cpp's parser events: one pass, no yaml-cpp
// node graph, and the limits apply as the tree grows (an alias is copied only while the
// node budget allows it, which stops "billion laughs" expansion early).
class TreeBuilder : public YAML::EventHandler {
 public:
  TreeBuilder(const std::string& file, Diagnostics& diagnostics, const ReadLimits& limits)
      : file_(file), diagnostics_(diagnostics), limits_(limits) {}

  // Call before each document; the tree of the last document is root().
  void reset() {
    root_ = Node{};
    stack_.clear();
    anchors_.clear();
  }
  [[nodiscard]] Node take_root() { return std::move(root_); }
  [[nodiscard]] bool failed() const { return failed_; }
  [[nodiscard]] std::optional<YAML::Mark> document_start() const { return document_start_; }

  void OnDocumentStart(const YAML::Mark& mark) override { document_start_ = mark; }
  void OnDocumentEnd() override {}

  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    Node n;
    n.pos = position(mark);
    place(std::move(n), anchor);
  }

  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    if (failed_) return;
    auto it = anchors_.find(anchor);
    if (it == anchors_.end()) return fail(kRuleSyntax, position(mark), "unknown YAML alias");
    const std::size_t size = count(it->second);
    if (nodes_ + size > limits_.max_nodes) {
      return fail(kRuleTooLarge, position(mark),
                  "document expands to more than " + std::to_string(limits_.max_nodes) +
                      " nodes (YAML aliases are expanded)");
    }
    nodes_ += size - 1;  // place() counts the root of the copy
    place(Node(it->second), 0);
  }

  void OnScalar(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                const std::string& value) override {
    if (failed_) return;
    Node n;
    n.pos = position(mark);
    if (!scalar(tag, value, n)) return;
    place(std::move(n), anchor);
  }

  void OnSequenceStart(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    open(mark, tag, "seq", NodeType::Sequence, anchor);
  }
  void OnSequenceEnd() override { close(); }
  void OnMapStart(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    open(mark, tag, "map", NodeType::Mapping, anchor);
  }
  void OnMapEnd() override { close(); }

 private:
  struct Open {
    Node* node;
    YAML::anchor_t anchor;
    bool expecting_key;  // mappings alternate keys and values
  };

  static std::size_t count(const Node& n) {
    std::size_t c = 1;
    for (const auto& i : n.items) c += count(i);
    for (const auto& e : n.entries) c += count(e.value);
    return c;
  }

  // Puts a finished node where the grammar says it goes and returns where it now lives.
  Node* place(Node n, YAML::anchor_t anchor) {
    if (failed_) return nullptr;
    if (++nodes_ > limits_.max_nodes) {
      fail(kRuleTooLarge, n.pos,
           "document has more than " + std::to_string(limits_.max_nodes) +
               " YAML nodes (scalars, sequences and mappings; the reader's limit for this kind of input)");
      return nullptr;
    }
    Node* at = nullptr;
    if (stack_.empty()) {
      root_ = std::move(n);
      at = &root_;
    } else if (Open& top = stack_.back(); top.node->type == NodeType::Sequence) {
      top.node->items.push_back(std::move(n));
      at = &top.node->items.back();
    } else if (top.expecting_key) {
      if (!n.is_scalar() || n.type == NodeType::Null) {
        fail(kRuleSyntax, n.pos, "mapping keys must be strings");
        return nullptr;
      }
      top.node->entries.push_back(Entry{std::move(n.text), n.pos, {}});
      top.expecting_key = false;
      return nullptr;  // keys are not nodes of their own (and cannot be anchored usefully)
    } else {
      Entry& e = top.node->entries.back();
      // An empty value ("key:") has no position of its own worth showing; use the key's.
      if (n.type == NodeType::Null) n.pos = e.key_pos;
      e.value = std::move(n);
      top.expecting_key = true;
      at = &e.value;
    }
    if (anchor != 0 && at->is_scalar()) anchors_[anchor] = *at;
    return at;
  }

  void open(const YAML::Mark& mark, const std::string& tag, std::string_view core, NodeType type,
            YAML::anchor_t anchor) {
    if (failed_) return;
    const SourcePos pos = position(mark);
    if (!tag_allowed(tag, core, pos)) return;
    if (static_cast<int>(stack_.size()) >= limits_.max_depth) {
      return fail(kRuleTooLarge, pos, "nesting deeper than " + std::to_string(limits_.max_depth) + " levels");
    }
    Node n;
    n.type = type;
    n.pos = pos;
    Node* at = place(std::move(n), 0);
    if (at == nullptr) return;
    // Only the innermost open container ever grows, so pointers on the stack stay valid.
    stack_.push_back(Open{at, anchor, true});
  }

  void close() {
    if (failed_ || stack_.empty()) return;
    const Open top = stack_.back();
    stack_.pop_back();
    if (top.anchor != 0) anchors_[top.anchor] = *top.node;
  }

  bool tag_allowed(const std::string& tag, std::string_view core, SourcePos pos) {
    if (tag.empty() || tag == "?" || tag == "!") return true;
    if (tag.starts_with(kCoreTagPrefix) && std::string_view(tag).substr(kCoreTagPrefix.size()) == core) {
      return true;
    }
    fail(kRuleSyntax, pos, "unsupported YAML tag \"" + to_utf8(tag) + "\"");
    return false;
  }

  bool scalar(const std::string& tag, const std::string& s, Node& out) {
    if (!is_utf8(s)) {
      fail(kRuleSyntax, out.pos, "value is not valid UTF-8 text");
      return false;
    }
    out.text = s;
    if (tag == "!") {  // quoted or block scalar: always a string
      out.type = NodeType::String;
      return true;
    }
    if (tag.empty() || tag == "?") {
      bool b = false;
      if (is_null_literal(s)) {
        out.type = NodeType::Null;
      } else if (bool_literal(s, b)) {
        out.type = NodeType::Bool;
        out.boolean = b;
      } else if (is_int_literal(s)) {
        set_int(out, s);
      } else if (is_float_literal(s)) {
        set_float(out, s);
      } else {
        out.type = NodeType::String;
      }
      return true;
    }
    if (!tag.starts_with(kCoreTagPrefix)) {
      fail(kRuleSyntax, out.pos, "unsupported YAML tag \"" + to_utf8(tag) + "\"");
      return false;
    }
    const std::string_view core = std::string_view(tag).substr(kCoreTagPrefix.size());
    bool b = false;
    if (core == "str") {
      out.type = NodeType::String;
    } else if (core == "int" && is_int_literal(s)) {
      set_int(out, s);
    } else if (core == "float" && (is_float_literal(s) || is_int_literal(s))) {
      set_float(out, s);
    } else if (core == "bool" && bool_literal(s, b)) {
      out.type = NodeType::Bool;
      out.boolean = b;
    } else if (core == "null" && is_null_literal(s)) {
      out.type = NodeType::Null;
    } else {
      fail(kRuleSyntax, out.pos, "value \"" + s + "\" does not fit YAML tag \"" + to_utf8(tag) + "\"");
      return false;
    }
    return true;
  }

  void fail(std::string_view rule, SourcePos pos, std::string message) {
    if (failed_) return;  // one finding per file: the first breach
    failed_ = true;
    diagnostics_.push_back(Diagnostic{Severity::Error, std::string(rule), file_, pos, {}, {}, {}, std::move(message)});
  }

  const std::string& file_;
  Diagnostics& diagnostics_;
  const ReadLimits& limits_;
  Node root_;
  std::vector<Open> stack_;
  std::map<YAML::anchor_t, Node> anchors_;
  std::size_t nodes_ = 0;  // across the documents of the file
  bool failed_ = false;
  std::optional<YAML::Mark> document_start_;
};

std::string strip_yaml_cpp_prefix(std::string msg) {
  // yaml-cpp's what() repeats the position: "yaml-cpp: error at line 3, column 5: ..."
  constexpr std::string_view prefix = "yaml-cpp: error at line ";
  if (msg.starts_with(prefix)) {
    auto colon = msg.find(": ", prefix.size());
    if (colon != std::string::npos) msg = msg.substr(colon + 2);
  }
  return msg;
}

}  // namespace

void read_yaml(std::string_view text, const std::string& file, std::vector<Document>& out,
               Diagnostics& diagnostics, const ReadLimits& limits) {
  if (text.size() > limits.max_bytes) {
    diagnostics.push_back(Diagnostic{Severity::Error, std::string(kRuleTooLarge), file, {}, {}, {}, {},
                                     "input is " + std::to_string(text.size()) + " bytes, above the limit of " +
                                         std::to_string(limits.max_bytes)});
    return;
  }
  if (const auto bad = check_yaml_characters(text)) {
    diagnostics.push_back(Diagnostic{Severity::Error, std::string(kRuleSyntax), file, bad->pos, {}, {}, {}, bad->message});
    return;
  }
  const std::string input(text);
  std::istringstream in(input);
  TreeBuilder builder(file, diagnostics, limits);
  // A file that cannot be read completely contributes no documents at all.
  const std::size_t first = out.size();
  auto drop_partial = [&] { out.erase(out.begin() + static_cast<std::ptrdiff_t>(first), out.end()); };
  try {
    YAML::Parser parser(in);
    std::optional<int> previous_start;
    for (int index = 0;; ++index) {
      builder.reset();
      if (!parser.HandleNextDocument(builder)) break;
      if (builder.failed()) return drop_partial();
      // yaml-cpp 0.7 never finishes some malformed streams, e.g. a stray ',' at block level
      // ("[a]\n,", "--- ,"): it reports an empty document without consuming the token,
      // again and again (jbeder/yaml-cpp#1040, fixed after 0.8.0). A document that starts
      // where the previous one did is that case.
      const auto start = builder.document_start();
      if (start && previous_start && start->pos == *previous_start) {
        const auto at = static_cast<std::size_t>(start->pos);
        const std::string token = at < input.size() ? to_utf8(input.substr(at, 1)) : std::string();
        diagnostics.push_back(Diagnostic{Severity::Error, std::string(kRuleSyntax), file, position(*start), {}, {},
                                         {}, "YAML syntax error: unexpected \"" + token + "\""});
        return drop_partial();
      }
      if (start) previous_start = start->pos;
      Node root = builder.take_root();
      if (root.type != NodeType::Null) out.push_back(Document{file, index, std::move(root)});
    }
  } catch (const YAML::Exception& e) {
    diagnostics.push_back(Diagnostic{Severity::Error, std::string(kRuleSyntax), file, position(e.mark), {}, {}, {},
                                     "YAML syntax error: " + to_utf8(strip_yaml_cpp_prefix(e.what()))});
    drop_partial();
  } catch (const std::exception& e) {
    diagnostics.push_back(Diagnostic{Severity::Error, std::string(kRuleSyntax), file, {}, {}, {}, {},
                                     "YAML syntax error: " + to_utf8(e.what())});
    drop_partial();
  }
}

}  // namespace gpubank::doc
