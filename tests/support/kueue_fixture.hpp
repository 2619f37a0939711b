// Decoding Kueue objects from YAML text in tests.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "document/reader.hpp"
#include "kueue/decode.hpp"

namespace gpubank::kueue::testing {

struct Decoded {
  ObjectSet set;
  Diagnostics diagnostics;

  [[nodiscard]] std::vector<std::string> messages() const {
    std::vector<std::string> out;
    for (const auto& d : diagnostics) out.push_back(d.path + ": " + d.message);
    return out;
  }
  [[nodiscard]] std::vector<std::string> lines() const {
    std::vector<std::string> out;
    for (const auto& d : diagnostics) out.push_back(d.to_string());
    return out;
  }
};

inline Decoded decode_yaml(std::string_view yaml, const std::string& file = "in.yaml") {
  Decoded out;
  std::vector<doc::Document> docs;
  doc::read_yaml(yaml, file, docs, out.diagnostics);
  out.set = decode_documents(docs, out.diagnostics);
  return out;
}

}  // namespace gpubank::kueue::testing
