#include "document/characters.hpp"

#include <cstdio>

#include "core/escape.hpp"
#include "core/utf8.hpp"

namespace gpubank::doc {
namespace {

constexpr std::string_view kUtf8Bom = "\xEF\xBB\xBF";

bool c_printable(std::uint32_t cp) {
  return cp == 0x09 || cp == 0x0A || cp == 0x0D || (cp >= 0x20 && cp <= 0x7E) || cp == 0x85 ||
         (cp >= 0xA0 && cp <= 0xD7FF) || (cp >= 0xE000 && cp <= 0xFFFD) || (cp >= 0x10000 && cp <= 0x10FFFF);
}

std::string hex_byte(unsigned char byte) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "0x%02X", static_cast<unsigned>(byte));
  return buf;
}

// A byte order mark of another encoding at the start, named for the message.
std::string_view other_encoding(std::string_view text) {
  if (text.starts_with(std::string_view("\x00\x00\xFE\xFF", 4))) return "UTF-32BE";
  if (text.starts_with(std::string_view("\xFF\xFE\x00\x00", 4))) return "UTF-32LE";
  if (text.starts_with("\xFE\xFF")) return "UTF-16BE";
  if (text.starts_with("\xFF\xFE")) return "UTF-16LE";
  return {};
}

// Walks the text code point by code point, keeping the line and column of each; LF, CR
// and CR LF end a line, as in YAML and JSON.
class Cursor {
 public:
  explicit Cursor(std::string_view text) : text_(text) {}

  [[nodiscard]] bool done() const { return i_ >= text_.size(); }
  [[nodiscard]] std::size_t offset() const { return i_; }
  [[nodiscard]] SourcePos pos() const { return {line_, column_}; }
  [[nodiscard]] unsigned char byte() const { return static_cast<unsigned char>(text_[i_]); }
  // The length of the UTF-8 sequence here, 0 when the byte starts none.
  [[nodiscard]] std::size_t length() const { return utf8_sequence_length(text_, i_); }
  [[nodiscard]] std::uint32_t code_point() const { return utf8_code_point(text_, i_, length()); }

  // Past a leading byte order mark, which takes no column.
  void skip(std::size_t length) { i_ += length; }

  void advance(std::size_t length) {
    const char c = text_[i_];
    i_ += length;
    if (c == '\n' || (c == '\r' && (done() || text_[i_] != '\n'))) {
      ++line_;
      column_ = 1;
    } else if (c != '\r') {
      ++column_;
    }
  }

 private:
  std::string_view text_;
  std::size_t i_ = 0;
  int line_ = 1;
  int column_ = 1;
};

}  // namespace

std::optional<CharacterError> check_yaml_characters(std::string_view text) {
  if (const auto encoding = other_encoding(text); !encoding.empty()) {
    return CharacterError{{1, 1},
                          "the input is " + std::string(encoding) +
                              " (it starts with that byte order mark); gpubank reads YAML and JSON as UTF-8"};
  }
  Cursor at(text);
  if (text.starts_with(kUtf8Bom)) at.skip(kUtf8Bom.size());
  while (!at.done()) {
    const std::size_t length = at.length();
    if (length == 0) {
      return CharacterError{at.pos(), "invalid UTF-8 byte " + hex_byte(at.byte()) + ": YAML input must be UTF-8 text"};
    }
    const std::uint32_t cp = at.code_point();
    if (cp == 0xFEFF) {
      return CharacterError{at.pos(), "invalid character " + describe_code_point(cp) +
                                          ": a byte order mark is allowed only at the start of the input"};
    }
    if (!c_printable(cp)) {
      const bool control = cp < 0x20 || (cp >= 0x7F && cp <= 0x9F);
      return CharacterError{at.pos(), "invalid character " + describe_code_point(cp) +
                                          (control ? ": YAML does not allow control characters"
                                                   : ": YAML does not allow this character")};
    }
    at.advance(length);
  }
  return std::nullopt;
}

std::optional<CharacterError> check_json_characters(std::string_view text) {
  Cursor at(text);
  if (text.starts_with(kUtf8Bom)) at.skip(kUtf8Bom.size());
  while (!at.done()) {
    const unsigned char c = at.byte();
    if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') {
      return CharacterError{at.pos(), "invalid character " + describe_code_point(c) +
                                          ": JSON does not allow control characters (inside strings, write them "
                                          "as \\u escapes)"};
    }
    // Columns count code points; a byte that starts no sequence counts as one.
    const std::size_t length = at.length();
    at.advance(length == 0 ? 1 : length);
  }
  return std::nullopt;
}

}  // namespace gpubank::doc
