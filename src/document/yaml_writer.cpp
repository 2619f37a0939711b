#include "document/yaml_writer.hpp"

#include <yaml-cpp/yaml.h>

#include "document/yaml_scalar.hpp"

namespace gpubank::doc {
namespace {

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
      const auto& s = v.get_ref<const std::string&>();
      if (!plain_reads_as_string(s)) out << YAML::DoubleQuoted;
      out << s;
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
        if (!plain_reads_as_string(key)) out << YAML::DoubleQuoted;
        out << key << YAML::Value;
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
