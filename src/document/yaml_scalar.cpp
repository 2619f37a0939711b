#include "document/yaml_scalar.hpp"

namespace gpubank::doc {
namespace {

bool all_of(std::string_view s, bool (*pred)(char)) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!pred(c)) return false;
  }
  return true;
}
bool is_dec(char c) { return c >= '0' && c <= '9'; }
bool is_oct(char c) { return c >= '0' && c <= '7'; }
bool is_hex(char c) { return is_dec(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
std::string_view unsigned_part(std::string_view s) {
  return !s.empty() && (s[0] == '+' || s[0] == '-') ? s.substr(1) : s;
}

}  // namespace

bool is_null_literal(std::string_view s) {
  return s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL";
}
bool bool_literal(std::string_view s, bool& value) {
  if (s == "true" || s == "True" || s == "TRUE") return value = true, true;
  if (s == "false" || s == "False" || s == "FALSE") return value = false, true;
  return false;
}
// [-+]?[0-9]+ | 0o[0-7]+ | 0x[0-9a-fA-F]+
bool is_int_literal(std::string_view s) {
  if (s.starts_with("0o")) return all_of(s.substr(2), is_oct);
  if (s.starts_with("0x")) return all_of(s.substr(2), is_hex);
  return all_of(unsigned_part(s), is_dec);
}

// [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)? | [-+]?\.inf | \.nan (three spellings)
bool is_float_literal(std::string_view s) {
  const std::string_view u = unsigned_part(s);
  if (u == ".inf" || u == ".Inf" || u == ".INF") return true;
  if (s == ".nan" || s == ".NaN" || s == ".NAN") return true;
  std::size_t i = 0;
  std::size_t int_digits = 0;
  std::size_t frac_digits = 0;
  while (i < u.size() && is_dec(u[i])) ++i, ++int_digits;
  if (i < u.size() && u[i] == '.') {
    ++i;
    while (i < u.size() && is_dec(u[i])) ++i, ++frac_digits;
  }
  if (int_digits == 0 && frac_digits == 0) return false;
  if (i < u.size() && (u[i] == 'e' || u[i] == 'E')) {
    ++i;
    if (i < u.size() && (u[i] == '+' || u[i] == '-')) ++i;
    return all_of(u.substr(i), is_dec);
  }
  return i == u.size();
}

bool plain_reads_as_string(std::string_view s) {
  // Control characters: CR and LF are line breaks to a YAML reader (a plain scalar folds or
  // ends there; yaml-cpp's emitter writes a lone CR plain all the same), and the others are
  // not printable YAML. Only a double-quoted scalar carries them, escaped.
  for (const char c : s) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return false;
  }
  bool ignored = false;
  if (is_null_literal(s) || bool_literal(s, ignored) || is_int_literal(s) || is_float_literal(s)) return false;
  // YAML 1.1 readers (go-yaml v2 behind kubectl and sigs.k8s.io/yaml) also take these
  // as booleans; a string that reads back as one elsewhere is not a safe plain scalar.
  static constexpr std::string_view yaml11_bools[] = {"y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO",
                                                      "on", "On", "ON", "off", "Off", "OFF"};
  for (auto b : yaml11_bools) {
    if (s == b) return false;
  }
  return true;
}

}  // namespace gpubank::doc
