// Small helpers the governance reports share: a sample's label, fixed-point numbers, and
// aligned text tables.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "serving/signals.hpp"

namespace gpubank::governance {

// The value of label `name` of a Prometheus sample, empty when it has none.
[[nodiscard]] std::string label(const serving::PromSample& s, const std::string& name);

// `v` with `decimals` digits after the point; a negative zero or a rounding residue below
// 5e-13 prints as 0.
[[nodiscard]] std::string fixed(double v, int decimals);

// Rows of cells as aligned columns, two spaces apart: columns from `first_numeric` on are
// right-aligned, empty columns left out, trailing blanks trimmed.
[[nodiscard]] std::string render_columns(const std::vector<std::vector<std::string>>& cells, std::size_t first_numeric);

}  // namespace gpubank::governance
