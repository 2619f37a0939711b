// A Kubernetes quantity in a YAML field: an integer (2), or a string or float that
// Quantity::parse reads ("500m", "80Gi", 1.5). The decoders of the formats that carry
// quantities (the kueue-perf generator, the twin's inventory) share it, so they accept and
// reject the same spellings with the same messages.
#pragma once

#include "core/quantity.hpp"
#include "document/decode.hpp"

namespace gpubank::doc {

inline bool decode_quantity(const Field& f, Quantity& out, std::string_view example = "2 or \"500m\"") {
  if (f.node.type == NodeType::Int) {
    if (!f.node.integer_fits) {
      f.error(kRuleOutOfRange, "integer " + f.node.text + " is out of range");
      return false;
    }
    out = Quantity::from_int(f.node.integer);
    return true;
  }
  if (f.node.type != NodeType::String && f.node.type != NodeType::Float) {
    f.wrong_type("a quantity such as " + std::string(example));
    return false;
  }
  auto parsed = Quantity::parse(f.node.text);
  if (!parsed) {
    f.error(kRuleInvalidFormat, parsed.error());
    return false;
  }
  out = *parsed;
  return true;
}

}  // namespace gpubank::doc
