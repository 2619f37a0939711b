// Quoting of user input inside error messages.
#pragma once

#include <string>
#include <string_view>

namespace gpubank {

// `text` in double quotes, the way Go's time package quotes input in its errors: '"' and
// '\' get a backslash, and control characters and every byte outside printable ASCII are
// written as \xNN, so that no input can break a message across lines or a terminal.
inline std::string quote(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size() + 2);
  out += '"';
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte >= 0x7f) {
      out += "\\x";
      out += kHex[byte >> 4];
      out += kHex[byte & 0xf];
    } else {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
  }
  out += '"';
  return out;
}

}  // namespace gpubank
