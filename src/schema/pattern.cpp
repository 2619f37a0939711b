#include "schema/pattern.hpp"

#include <regex>
#include <string_view>

namespace gpubank::schema::detail {
namespace {

static_assert(sizeof(wchar_t) == 4, "patterns match UTF-32 code points in std::wstring");
#ifndef __GLIBCXX__
#error "patterns need libstdc++'s breadth-first regex executor (regex_constants::__polynomial)"
#endif

constexpr char32_t kReplacement = 0xFFFD;

// Decodes one code point at text[i]; `length` gets the bytes it took (1 for an ill-formed
// byte, which decodes to U+FFFD, as Go's utf8.DecodeRuneInString does).
char32_t decode(std::string_view text, std::size_t i, std::size_t& length) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char b0 = byte(i);
  length = 1;
  if (b0 < 0x80) return b0;
  std::size_t n = 0;
  char32_t cp = 0;
  char32_t min = 0;
  if ((b0 & 0xE0) == 0xC0) {
    n = 1, cp = b0 & 0x1F, min = 0x80;
  } else if ((b0 & 0xF0) == 0xE0) {
    n = 2, cp = b0 & 0x0F, min = 0x800;
  } else if ((b0 & 0xF8) == 0xF0) {
    n = 3, cp = b0 & 0x07, min = 0x10000;
  } else {
    return kReplacement;
  }
  if (i + n >= text.size()) return kReplacement;
  for (std::size_t k = 1; k <= n; ++k) {
    const unsigned char b = byte(i + k);
    if ((b & 0xC0) != 0x80) return kReplacement;
    cp = (cp << 6) | (b & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return kReplacement;
  length = n + 1;
  return cp;
}

bool is_hex(wchar_t c) {
  return (c >= L'0' && c <= L'9') || (c >= L'a' && c <= L'f') || (c >= L'A' && c <= L'F');
}
char32_t hex_value(wchar_t c) {
  if (c >= L'0' && c <= L'9') return static_cast<char32_t>(c - L'0');
  if (c >= L'a' && c <= L'f') return static_cast<char32_t>(c - L'a' + 10);
  return static_cast<char32_t>(c - L'A' + 10);
}
bool is_ascii_alnum(wchar_t c) {
  return (c >= L'0' && c <= L'9') || (c >= L'a' && c <= L'z') || (c >= L'A' && c <= L'Z');
}
std::string narrow(wchar_t c) {
  std::string out;
  const auto cp = static_cast<char32_t>(c);
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else {
    out += "U+";
    static constexpr char kHex[] = "0123456789ABCDEF";
    for (int shift = 16; shift >= 0; shift -= 4) out += kHex[(cp >> shift) & 0xF];
  }
  return out;
}

// RE2 syntax -> ECMAScript (std::wregex), see pattern.hpp.
class Translator {
 public:
  explicit Translator(std::wstring pattern) : p_(std::move(pattern)) {}

  Pattern::Status run() {
    if (p_.starts_with(L"(?i)")) {
      icase_ = true, i_ = 4;
    } else if (p_.starts_with(L"^(?i)")) {
      icase_ = true, i_ = 5, out_ += L'^';
    }
    while (i_ < p_.size() && status_ == Pattern::Status::Ok) {
      const wchar_t c = p_[i_];
      if (c == L'\\') {
        escape();
      } else if (in_class_) {
        class_char(c);
      } else {
        outside(c);
      }
    }
    if (status_ == Pattern::Status::Ok && in_class_) fail(Pattern::Status::Invalid, "missing closing ]");
    return status_;
  }

  [[nodiscard]] const std::wstring& out() const { return out_; }
  [[nodiscard]] bool icase() const { return icase_; }
  [[nodiscard]] const std::string& problem() const { return problem_; }

 private:
  void fail(Pattern::Status status, std::string problem) {
    if (status_ != Pattern::Status::Ok) return;
    status_ = status;
    problem_ = std::move(problem);
  }

  // A code point as a literal of the output, escaped where ECMAScript would read syntax.
  void literal(char32_t cp) {
    if (cp < 0x20 || cp == 0x7F) {
      static constexpr wchar_t kHex[] = L"0123456789abcdef";
      out_ += L"\\u00";
      out_ += kHex[(cp >> 4) & 0xF];
      out_ += kHex[cp & 0xF];
      return;
    }
    const std::wstring_view syntax = in_class_ ? L"\\]^-[" : L"\\^$.|?*+()[]{}";
    if (cp < 0x80 && syntax.find(static_cast<wchar_t>(cp)) != std::wstring_view::npos) out_ += L'\\';
    out_ += static_cast<wchar_t>(cp);
  }

  // One ASCII class, spelled out; `negated` ones cannot be merged into a bracket.
  void ascii_class(std::wstring_view members, bool negated) {
    if (in_class_) {
      if (negated) return fail(Pattern::Status::Unsupported, "a negated class escape inside [...]");
      out_ += members;
      return;
    }
    out_ += negated ? L"[^" : L"[";
    out_ += members;
    out_ += L']';
  }

  void escape() {
    if (i_ + 1 >= p_.size()) return fail(Pattern::Status::Invalid, "trailing backslash at end of expression");
    const wchar_t e = p_[i_ + 1];
    i_ += 2;
    switch (e) {
      case L'd': return ascii_class(L"0-9", false);
      case L'D': return ascii_class(L"0-9", true);
      case L'w': return ascii_class(L"0-9A-Za-z_", false);
      case L'W': return ascii_class(L"0-9A-Za-z_", true);
      case L's': return ascii_class(L"\\t\\n\\f\\r ", false);
      case L'S': return ascii_class(L"\\t\\n\\f\\r ", true);
      case L'b':
      case L'B':
        if (in_class_) return fail(Pattern::Status::Invalid, "invalid escape \\" + narrow(e) + " inside [...]");
        out_ += L'\\';
        out_ += e;
        return;
      case L'A':
      case L'z':
        if (in_class_) return fail(Pattern::Status::Invalid, "invalid escape \\" + narrow(e) + " inside [...]");
        out_ += e == L'A' ? L'^' : L'$';
        return;
      case L'a': return literal(0x07);
      case L'f': return literal(0x0C);
      case L'n': return literal(0x0A);
      case L'r': return literal(0x0D);
      case L't': return literal(0x09);
      case L'v': return literal(0x0B);
      case L'x': return hex();
      case L'Q': return quoted();
      case L'p':
      case L'P': return fail(Pattern::Status::Unsupported, "Unicode class \\" + narrow(e) + " has no ECMAScript equivalent");
      case L'C': return fail(Pattern::Status::Unsupported, "\\C (any byte) has no ECMAScript equivalent");
      default: break;
    }
    if (e >= L'0' && e <= L'9') {
      // RE2 reads \0 and \1NN as octal and a lone \1..\9 as a backreference, which it rejects.
      const bool octal = e == L'0' || (e <= L'7' && i_ < p_.size() && p_[i_] >= L'0' && p_[i_] <= L'7');
      if (octal) return fail(Pattern::Status::Unsupported, "octal escapes are not translated");
      return fail(Pattern::Status::Invalid, "backreferences are not RE2 syntax");
    }
    if (is_ascii_alnum(e)) return fail(Pattern::Status::Invalid, "invalid escape \\" + narrow(e));
    literal(static_cast<char32_t>(e));  // escaped punctuation (and any non-ASCII character)
  }

  void hex() {
    char32_t cp = 0;
    if (i_ < p_.size() && p_[i_] == L'{') {
      std::size_t k = i_ + 1;
      for (; k < p_.size() && is_hex(p_[k]) && cp <= 0x10FFFF; ++k) cp = cp * 16 + hex_value(p_[k]);
      if (k >= p_.size() || p_[k] != L'}' || k == i_ + 1 || cp > 0x10FFFF) {
        return fail(Pattern::Status::Invalid, "invalid \\x{...} escape");
      }
      i_ = k + 1;
    } else {
      if (i_ + 1 >= p_.size() || !is_hex(p_[i_]) || !is_hex(p_[i_ + 1])) {
        return fail(Pattern::Status::Invalid, "invalid \\x escape");
      }
      cp = hex_value(p_[i_]) * 16 + hex_value(p_[i_ + 1]);
      i_ += 2;
    }
    literal(cp);
  }

  void quoted() {
    const std::size_t end = p_.find(L"\\E", i_);
    const std::size_t stop = end == std::wstring::npos ? p_.size() : end;
    for (; i_ < stop; ++i_) literal(static_cast<char32_t>(p_[i_]));
    i_ = end == std::wstring::npos ? stop : stop + 2;
  }

  void class_char(wchar_t c) {
    if (c == L']') {
      in_class_ = false;
      out_ += L']';
      ++i_;
    } else if (c == L'[' && i_ + 1 < p_.size() && p_[i_ + 1] == L':') {
      const std::size_t end = p_.find(L":]", i_ + 2);
      if (end == std::wstring::npos) return fail(Pattern::Status::Invalid, "missing closing :]");
      out_ += p_.substr(i_, end + 2 - i_);  // [:alpha:] and friends: ASCII in both engines
      i_ = end + 2;
    } else if (c == L'-') {
      out_ += L'-';  // a range (or a literal at either end, which both engines accept)
      ++i_;
    } else {
      literal(static_cast<char32_t>(c));
      ++i_;
    }
  }

  void outside(wchar_t c) {
    ++i_;
    switch (c) {
      case L'[':
        in_class_ = true;
        out_ += L'[';
        if (i_ < p_.size() && p_[i_] == L'^') {
          out_ += L'^';
          ++i_;
        }
        // A ']' first in a class is a literal in RE2; in ECMAScript "[]" is an empty class.
        if (i_ < p_.size() && p_[i_] == L']') {
          out_ += L"\\]";
          ++i_;
        }
        return;
      case L'.': out_ += L"[^\\n]"; return;
      case L'(': return group();
      default: out_ += c; return;
    }
  }

  void group() {
    if (i_ >= p_.size() || p_[i_] != L'?') {
      out_ += L'(';
      return;
    }
    const std::wstring_view rest = std::wstring_view(p_).substr(i_ + 1);
    if (rest.starts_with(L":")) {
      out_ += L"(?:";
      i_ += 2;
    } else if (rest.starts_with(L"=") || rest.starts_with(L"!") || rest.starts_with(L"<=") || rest.starts_with(L"<!")) {
      fail(Pattern::Status::Invalid, "look-around is not RE2 syntax");
    } else if (rest.starts_with(L"P<") || rest.starts_with(L"<")) {
      const std::size_t close = p_.find(L'>', i_);
      if (close == std::wstring::npos) return fail(Pattern::Status::Invalid, "invalid named capture");
      out_ += L'(';  // the name does not change what matches
      i_ = close + 1;
    } else {
      fail(Pattern::Status::Unsupported, "flag groups other than a leading (?i) are not translated");
    }
  }

  std::wstring p_;
  std::wstring out_;
  std::size_t i_ = 0;
  bool in_class_ = false;
  bool icase_ = false;
  Pattern::Status status_ = Pattern::Status::Ok;
  std::string problem_;
};

}  // namespace

struct Pattern::Compiled {
  std::wregex regex;
};

std::wstring to_utf32(std::string_view text) {
  std::wstring out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    std::size_t length = 1;
    out += static_cast<wchar_t>(decode(text, i, length));
    i += length;
  }
  return out;
}

std::size_t code_points(std::string_view text) {
  std::size_t count = 0;
  for (std::size_t i = 0; i < text.size(); ++count) {
    std::size_t length = 1;
    (void)decode(text, i, length);
    i += length;
  }
  return count;
}

Pattern Pattern::compile(std::string source) {
  Pattern p;
  p.source_ = std::move(source);
  Translator t(to_utf32(p.source_));
  p.status_ = t.run();
  if (p.status_ != Status::Ok) {
    p.problem_ = t.problem();
    return p;
  }
  auto flags = std::regex_constants::ECMAScript | std::regex_constants::__polynomial;
  if (t.icase()) flags |= std::regex_constants::icase;
  try {
    p.regex_ = std::make_shared<const Compiled>(Compiled{std::wregex(t.out(), flags)});
  } catch (const std::regex_error& e) {
    p.status_ = Status::Unsupported;
    p.problem_ = std::string("std::regex cannot compile it: ") + e.what();
  }
  return p;
}

std::optional<bool> Pattern::search(std::string_view text) const {
  const std::wstring wide = to_utf32(text);
  try {
    return std::regex_search(wide, regex_->regex);
  } catch (const std::regex_error&) {
    return std::nullopt;  // error_complexity or error_stack: not an answer
  }
}

}  // namespace gpubank::schema::detail
