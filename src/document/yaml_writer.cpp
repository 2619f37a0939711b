#include "document/yaml_writer.hpp"

#include <yaml-cpp/yaml.h>

#include "core/escape.hpp"
#include "core/utf8.hpp"
#include "document/yaml_scalar.hpp"

namespace gpubank::doc {
namespace {

// Whether `s` holds a character to write only as an escape: a control character (yaml-cpp
// writes DEL raw even in double quotes, which YAML and our reader refuse), a line or
// paragraph separator (a line break to YAML 1.1 readers such as kubectl's), a
// bidirectional override (which would reorder the text in a reviewer's diff) or a byte
// order mark; or bytes that are not UTF-8.
bool needs_escapes(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t n = utf8_sequence_length(s, i);
    if (n == 0) return true;
    const std::uint32_t cp = utf8_code_point(s, i, n);
    if (escaped_when_echoed(cp) || cp == 0xFEFF) return true;
    i += n;
  }
  return false;
}

// A string scalar (value or key): plain where that reads back as the same string, else in
// double quotes, with every non-ASCII character escaped when it holds one of the above.
void emit_string(YAML::Emitter& out, const std::string& s) {
  if (needs_escapes(s)) {
    out << YAML::EscapeNonAscii << YAML::DoubleQuoted;
  } else if (!plain_reads_as_string(s)) {
    out << YAML::DoubleQuoted;
  }
  out << s;
}

void emit(YAML::Emitter& out, const nlohmann::ordered_json& v) {
  switch (v.type()) {
    case nlohmann::ordered_json::value_t::null:
    case nlohmann::ordered_json::value_t::discarded:
    case nlohmann::ordered_json::value_t::binary:
      out << YAML::Null;
      break;
    case nlohmann::ordered_json::value_t::boolean:
      out << v.get<bool>();
      break;
    case nlohmann::ordered_json::value_t::number_integer:
      out << v.get<std::int64_t>();
      break;
    case nlohmann::ordered_json::value_t::number_unsigned:
      out << v.get<std::uint64_t>();
      break;
    case nlohmann::ordered_json::value_t::number_float:
      // JSON's shortest round-trip form, which YAML reads back as the same float.
      out << v.dump();
      break;
    case nlohmann::ordered_json::value_t::string: {
      emit_string(out, v.get_ref<const std::string&>());
      break;
    }
    case nlohmann::ordered_json::value_t::array:
      if (v.empty()) {
        out << YAML::Flow << YAML::BeginSeq << YAML::EndSeq;
        break;
      }
      out << YAML::BeginSeq;
      for (const auto& item : v) emit(out, item);
      out << YAML::EndSeq;
      break;
    case nlohmann::ordered_json::value_t::object:
      if (v.empty()) {
        out << YAML::Flow << YAML::BeginMap << YAML::EndMap;
        break;
      }
      out << YAML::BeginMap;
      for (const auto& [key, item] : v.items()) {
        out << YAML::Key;
        emit_string(out, key);
        out << YAML::Value;
        emit(out, item);
      }
      out << YAML::EndMap;
      break;
  }
}

}  // namespace

std::string to_yaml(const nlohmann::ordered_json& value) {
  YAML::Emitter out;
  out.SetIndent(2);
  out.SetSeqFormat(YAML::Block);
  out.SetMapFormat(YAML::Block);
  emit(out, value);
  std::string text = out.c_str();
  if (!text.empty() && text.back() != '\n') text += '\n';
  return text;
}

}  // namespace gpubank::doc
