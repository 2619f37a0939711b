#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <charconv>
#include <cmath>
#include <limits>
#include <optional>
#include <sstream>

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

class Converter {
 public:
  Converter(const std::string& file, Diagnostics& diagnostics, const ReadLimits& limits)
      : file_(file), diagnostics_(diagnostics), limits_(limits) {}

  // False when conversion stopped (limits or an unsupported construct).
  bool convert(const YAML::Node& in, Node& out, int depth) {
    if (++nodes_ > limits_.max_nodes) {
      return fail(kRuleTooLarge, position(in.Mark()),
                  "document expands to more than " + std::to_string(limits_.max_nodes) +
                      " nodes (YAML aliases are expanded)");
    }
    if (depth > limits_.max_depth) {
      return fail(kRuleTooLarge, position(in.Mark()),
                  "nesting deeper than " + std::to_string(limits_.max_depth) + " levels");
    }
    out.pos = position(in.Mark());
    const std::string& tag = in.Tag();
    switch (in.Type()) {
      case YAML::NodeType::Undefined:
      case YAML::NodeType::Null:
        out.type = NodeType::Null;
        return true;
      case YAML::NodeType::Scalar:
        return scalar(in, tag, out);
      case YAML::NodeType::Sequence:
        if (!tag_allowed(tag, "seq", out.pos)) return false;
        out.type = NodeType::Sequence;
        out.items.reserve(in.size());
        for (const auto& item : in) {
          out.items.emplace_back();
          if (!convert(item, out.items.back(), depth + 1)) return false;
        }
        return true;
      case YAML::NodeType::Map:
        if (!tag_allowed(tag, "map", out.pos)) return false;
        out.type = NodeType::Mapping;
        out.entries.reserve(in.size());
        for (auto it = in.begin(); it != in.end(); ++it) {
          if (!it->first.IsScalar()) {
            return fail(kRuleSyntax, position(it->first.Mark()), "mapping keys must be strings");
          }
          if (!is_utf8(it->first.Scalar())) {
            return fail(kRuleSyntax, position(it->first.Mark()), "mapping key is not valid UTF-8 text");
          }
          out.entries.push_back(Entry{it->first.Scalar(), position(it->first.Mark()), {}});
          if (!convert(it->second, out.entries.back().value, depth + 1)) return false;
          Node& value = out.entries.back().value;
          // An empty value ("key:") has no position of its own worth showing; use the key's.
          if (value.type == NodeType::Null) value.pos = out.entries.back().key_pos;
        }
        return true;
    }
    return true;
  }

 private:
  bool tag_allowed(const std::string& tag, std::string_view core, SourcePos pos) {
    if (tag.empty() || tag == "?" || tag == "!") return true;
    if (tag.starts_with(kCoreTagPrefix) && std::string_view(tag).substr(kCoreTagPrefix.size()) == core) {
      return true;
    }
    return fail(kRuleSyntax, pos, "unsupported YAML tag \"" + to_utf8(tag) + "\"");
  }

  bool scalar(const YAML::Node& in, const std::string& tag, Node& out) {
    const std::string& s = in.Scalar();
    if (!is_utf8(s)) return fail(kRuleSyntax, out.pos, "value is not valid UTF-8 text");
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
      return fail(kRuleSyntax, out.pos, "unsupported YAML tag \"" + to_utf8(tag) + "\"");
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
      return fail(kRuleSyntax, out.pos, "value \"" + s + "\" does not fit YAML tag \"" + to_utf8(tag) + "\"");
    }
    return true;
  }

  bool fail(std::string_view rule, SourcePos pos, std::string message) {
    Diagnostic d;
    d.rule = rule;
    d.file = file_;
    d.pos = pos;
    d.message = std::move(message);
    diagnostics_.push_back(std::move(d));
    return false;
  }

  const std::string& file_;
  Diagnostics& diagnostics_;
  const ReadLimits& limits_;
  std::size_t nodes_ = 0;
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

// yaml-cpp 0.7's LoadAll never returns on some malformed streams, e.g. a stray ',' at
// block level ("[a]\n,", "--- ,"): the parser reports an empty document without consuming
// the token, again and again, allocating as it goes (jbeder/yaml-cpp#1040, fixed upstream
// after 0.8.0). A first pass over the events finds that case: a document that starts
// where the previous one did.
class DocumentStarts : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark& mark) override { start = mark; }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}

  YAML::Mark start = YAML::Mark::null_mark();
};

// Where the parser stops making progress, if it does. Throws what the parser throws.
std::optional<YAML::Mark> stuck_at(const std::string& text) {
  std::istringstream in(text);
  YAML::Parser parser(in);
  DocumentStarts starts;
  std::optional<int> previous;
  while (parser.HandleNextDocument(starts)) {
    if (previous && starts.start.pos == *previous) return starts.start;
    previous = starts.start.pos;
  }
  return std::nullopt;
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
  std::vector<YAML::Node> docs;
  try {
    const std::string input(text);
    if (const auto stuck = stuck_at(input)) {
      const std::size_t at = static_cast<std::size_t>(stuck->pos);
      const std::string token = at < input.size() ? to_utf8(input.substr(at, 1)) : std::string();
      diagnostics.push_back(Diagnostic{Severity::Error, std::string(kRuleSyntax), file, position(*stuck), {}, {}, {},
                                       "YAML syntax error: unexpected \"" + token + "\""});
      return;
    }
    docs = YAML::LoadAll(input);
  } catch (const YAML::Exception& e) {
    diagnostics.push_back(Diagnostic{Severity::Error, std::string(kRuleSyntax), file, position(e.mark), {}, {}, {},
                                     "YAML syntax error: " + to_utf8(strip_yaml_cpp_prefix(e.what()))});
    return;
  } catch (const std::exception& e) {
    diagnostics.push_back(Diagnostic{Severity::Error, std::string(kRuleSyntax), file, {}, {}, {}, {},
                                     "YAML syntax error: " + to_utf8(e.what())});
    return;
  }
  Converter converter(file, diagnostics, limits);
  int index = 0;
  for (const auto& yaml : docs) {
    Document d{file, index++, {}};
    bool ok = false;
    try {
      ok = converter.convert(yaml, d.root, 0);
    } catch (const std::exception& e) {
      diagnostics.push_back(Diagnostic{Severity::Error, std::string(kRuleSyntax), file, position(yaml.Mark()), {},
                                       {}, {}, "YAML error: " + to_utf8(e.what())});
    }
    if (!ok) return;  // limits are per file: stop at the first breach
    if (d.root.type != NodeType::Null) out.push_back(std::move(d));
  }
}

}  // namespace gpubank::doc
