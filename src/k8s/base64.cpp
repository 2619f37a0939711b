// Hand-written rather than OpenSSL's EVP_DecodeUpdate: that decoder skips spaces and tabs,
// accepts a missing final padding in some states and reports failure without a position,
// so it would accept kubeconfigs kubectl rejects and could not say where the data is bad.
// Go's rules are small enough to state exactly here.
#include "k8s/base64.hpp"

#include <array>
#include <cstdint>

#include "core/escape.hpp"

namespace gpubank::k8s {
namespace {

constexpr std::int8_t kInvalid = -1;

constexpr std::array<std::int8_t, 256> make_table() {
  std::array<std::int8_t, 256> t{};
  for (auto& v : t) v = kInvalid;
  constexpr std::string_view alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  for (std::size_t i = 0; i < alphabet.size(); ++i) {
    t[static_cast<unsigned char>(alphabet[i])] = static_cast<std::int8_t>(i);
  }
  return t;
}
constexpr auto kTable = make_table();

std::string describe_byte(char c) {
  const auto u = static_cast<unsigned char>(c);
  if (u >= 0x20 && u < 0x7f) return "'" + std::string(1, c) + "'";
  return escape_text(std::string(1, c));  // \x00, \t, or \xNN for a stray UTF-8 byte
}

Unexpected bad(std::string what, std::size_t offset) {
  return Unexpected{what + " at offset " + std::to_string(offset)};
}

}  // namespace

Expected<std::string> decode_base64(std::string_view text) {
  std::string out;
  out.reserve(text.size() / 4 * 3);
  std::array<std::uint32_t, 4> group{};
  std::size_t filled = 0;   // characters in the current group, padding included
  std::size_t padding = 0;  // '=' seen in the current group
  bool finished = false;    // a padded group ended the data
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\r' || c == '\n') continue;
    if (finished) return bad("unexpected " + describe_byte(c) + " after the final padding", i);
    if (c == '=') {
      if (filled < 2) return bad("misplaced padding '='", i);
      ++padding;
      ++filled;
    } else {
      const std::int8_t v = kTable[static_cast<unsigned char>(c)];
      if (v == kInvalid) return bad("invalid base64 character " + describe_byte(c), i);
      if (padding > 0) return bad("data after padding '='", i);
      group[filled++] = static_cast<std::uint32_t>(v);
    }
    if (filled < 4) continue;
    const std::uint32_t bits = group[0] << 18 | group[1] << 12 | group[2] << 6 | group[3];
    out.push_back(static_cast<char>(bits >> 16 & 0xff));
    if (padding < 2) out.push_back(static_cast<char>(bits >> 8 & 0xff));
    if (padding < 1) out.push_back(static_cast<char>(bits & 0xff));
    finished = padding > 0;
    group = {};
    filled = 0;
    padding = 0;
  }
  if (filled != 0) {
    return Unexpected{"truncated base64: the data ends inside a group of four characters (missing '=' padding?)"};
  }
  return out;
}

}  // namespace gpubank::k8s
