#include "document/node.hpp"

#include <nlohmann/json.hpp>

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

std::string preview(const Node& node) {
  constexpr std::size_t kMax = 40;
  switch (node.type) {
    case NodeType::String: {
      std::string s = node.text.size() > kMax ? node.text.substr(0, kMax) + "..." : node.text;
      return '"' + s + '"';
    }
    case NodeType::Null: return "null";
    case NodeType::Sequence: return "a list";
    case NodeType::Mapping: return "an object";
    default: return node.text.size() > kMax ? node.text.substr(0, kMax) + "..." : node.text;
  }
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

nlohmann::json to_json(const Node& node) {
  switch (node.type) {
    case NodeType::Null: return nullptr;
    case NodeType::Bool: return node.boolean;
    case NodeType::Int:
      if (node.integer_fits) return node.integer;
      return node.number;
    case NodeType::Float: return node.number;
    case NodeType::String: return node.text;
    case NodeType::Sequence: {
      auto out = nlohmann::json::array();
      for (const auto& item : node.items) out.push_back(to_json(item));
      return out;
    }
    case NodeType::Mapping: {
      auto out = nlohmann::json::object();
      for (const auto& e : node.entries) out[e.key] = to_json(e.value);
      return out;
    }
  }
  return nullptr;
}

}  // namespace gpubank::doc
