#include "core/escape.hpp"

#include <array>
#include <cstdio>

#include "core/utf8.hpp"

namespace gpubank {
namespace {

constexpr char kHex[] = "0123456789abcdef";

void append_hex_byte(std::string& out, unsigned char byte) {
  out += "\\x";
  out += kHex[byte >> 4];
  out += kHex[byte & 0xF];
}

}  // namespace

bool escaped_when_echoed(std::uint32_t cp) {
  return cp < 0x20 || (cp >= 0x7F && cp <= 0x9F) || cp == 0x2028 || cp == 0x2029 || (cp >= 0x202A && cp <= 0x202E) ||
         (cp >= 0x2066 && cp <= 0x2069);
}

std::string escape_text(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t length = utf8_sequence_length(text, i);
    if (length == 0) {
      append_hex_byte(out, static_cast<unsigned char>(text[i]));
      ++i;
      continue;
    }
    const std::uint32_t cp = utf8_code_point(text, i, length);
    if (!escaped_when_echoed(cp)) {
      out.append(text.substr(i, length));
    } else if (cp == '\n') {
      out += "\\n";
    } else if (cp == '\r') {
      out += "\\r";
    } else if (cp == '\t') {
      out += "\\t";
    } else if (cp <= 0x7F) {
      append_hex_byte(out, static_cast<unsigned char>(cp));
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(cp));
      out += buf;
    }
    i += length;
  }
  return out;
}

std::string_view code_point_name(std::uint32_t cp) {
  static constexpr std::array<std::string_view, 32> kC0{
      "NUL", "SOH", "STX", "ETX", "EOT", "ENQ", "ACK", "BEL", "BS", "TAB", "LF", "VT", "FF", "CR", "SO", "SI",
      "DLE", "DC1", "DC2", "DC3", "DC4", "NAK", "SYN", "ETB", "CAN", "EM", "SUB", "ESC", "FS", "GS", "RS", "US"};
  if (cp < kC0.size()) return kC0[cp];
  switch (cp) {
    case 0x7F: return "DEL";
    case 0x85: return "NEL";
    case 0xFEFF: return "BYTE ORDER MARK";
    case 0x2028: return "LINE SEPARATOR";
    case 0x2029: return "PARAGRAPH SEPARATOR";
    default: break;
  }
  if (cp >= 0x80 && cp <= 0x9F) return "C1 control";
  if (cp >= 0xD800 && cp <= 0xDFFF) return "surrogate";
  if (cp == 0xFFFE || cp == 0xFFFF) return "noncharacter";
  return {};
}

std::string describe_code_point(std::uint32_t cp) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "U+%04X", static_cast<unsigned>(cp));
  std::string out = buf;
  if (const auto name = code_point_name(cp); !name.empty()) {
    out += " (";
    out += name;
    out += ')';
  }
  return out;
}

}  // namespace gpubank
