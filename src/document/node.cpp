#include "document/node.hpp"

#include <nlohmann/json.hpp>

#include "core/utf8.hpp"

namespace gpubank::doc {

const Node* Node::find(std::string_view key) const {
  if (type != NodeType::Mapping) return nullptr;
  for (const auto& e : entries) {
    if (e.key == key) return &e.value;
  }
  return nullptr;
}

std::string_view Node::string_at(std::string_view key) const {
  const Node* n = find(key);
  return n != nullptr && n->type == NodeType::String ? std::string_view(n->text)
                                                      : std::string_view();
}

const char* describe(NodeType type) {
  switch (type) {
    case NodeType::Null: return "null";
    case NodeType::Bool: return "a boolean";
    case NodeType::Int: return "an integer";
    case NodeType::Float: return "a number";
    case NodeType::String: return "a string";
    case NodeType::Sequence: return "a list";
    case NodeType::Mapping: return "an object";
  }
  return "a value";
}

namespace {

// At most `max` bytes of `text`, "..." when cut; never cuts a UTF-8 sequence in two
// (messages end up in JSON, which must be valid UTF-8).
std::string shortened(const std::string& text, std::size_t max) {
  if (text.size() <= max) return text;
  std::size_t cut = max;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return text.substr(0, cut) + "...";
}

}  // namespace

std::string preview(const Node& node) {
  constexpr std::size_t kMax = 40;
  switch (node.type) {
    case NodeType::String: return '"' + shortened(node.text, kMax) + '"';
    case NodeType::Null: return "null";
    case NodeType::Sequence: return "a list";
    case NodeType::Mapping: return "an object";
    default: return shortened(node.text, kMax);
  }
}

bool is_utf8(std::string_view text) { return gpubank::is_utf8(text); }

std::string to_utf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t n = utf8_sequence_length(text, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";  // U+FFFD
      ++i;
    } else {
      out.append(text.substr(i, n));
      i += n;
    }
  }
  return out;
}

Node from_json(const nlohmann::json& value) {
  Node n;
  switch (value.type()) {
    case nlohmann::json::value_t::null:
    case nlohmann::json::value_t::discarded: n.type = NodeType::Null; break;
    case nlohmann::json::value_t::boolean:
      n.type = NodeType::Bool;
      n.boolean = value.get<bool>();
      n.text = n.boolean ? "true" : "false";
      break;
    case nlohmann::json::value_t::number_integer:
      n.type = NodeType::Int;
      n.integer = value.get<std::int64_t>();
      n.number = static_cast<double>(n.integer);
      n.text = std::to_string(n.integer);
      break;
    case nlohmann::json::value_t::number_unsigned: {
      const auto u = value.get<std::uint64_t>();
      n.type = NodeType::Int;
      n.integer_fits = u <= static_cast<std::uint64_t>(INT64_MAX);
      n.integer = n.integer_fits ? static_cast<std::int64_t>(u) : INT64_MAX;
      n.number = static_cast<double>(u);
      n.text = std::to_string(u);
      break;
    }
    case nlohmann::json::value_t::number_float:
      n.type = NodeType::Float;
      n.number = value.get<double>();
      n.text = value.dump();
      break;
    case nlohmann::json::value_t::string:
      n.type = NodeType::String;
      n.text = value.get<std::string>();
      break;
    case nlohmann::json::value_t::array:
      n.type = NodeType::Sequence;
      n.items.reserve(value.size());
      for (const auto& item : value) n.items.push_back(from_json(item));
      break;
    case nlohmann::json::value_t::object:
      n.type = NodeType::Mapping;
      n.entries.reserve(value.size());
      for (const auto& [k, v] : value.items()) n.entries.push_back(Entry{k, {}, from_json(v)});
      break;
    case nlohmann::json::value_t::binary: n.type = NodeType::Null; break;
  }
  return n;
}

namespace {

template <class J>
J to_json_as(const Node& node) {
  switch (node.type) {
    case NodeType::Null: return nullptr;
    case NodeType::Bool: return node.boolean;
    case NodeType::Int:
      if (node.integer_fits) return node.integer;
      return node.number;
    case NodeType::Float: return node.number;
    case NodeType::String: return node.text;
    case NodeType::Sequence: {
      auto out = J::array();
      for (const auto& item : node.items) out.push_back(to_json_as<J>(item));
      return out;
    }
    case NodeType::Mapping: {
      auto out = J::object();
      for (const auto& e : node.entries) out[e.key] = to_json_as<J>(e.value);
      return out;
    }
  }
  return nullptr;
}

}  // namespace

nlohmann::json to_json(const Node& node) { return to_json_as<nlohmann::json>(node); }

nlohmann::ordered_json to_ordered_json(const Node& node) { return to_json_as<nlohmann::ordered_json>(node); }

}  // namespace gpubank::doc
