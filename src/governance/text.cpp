#include "governance/text.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace gpubank::governance {

std::string label(const serving::PromSample& s, const std::string& name) {
  const auto it = s.labels.find(name);
  return it == s.labels.end() ? std::string() : it->second;
}

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, std::abs(v) < 5e-13 ? 0.0 : v);
  return buf;
}

std::string render_columns(const std::vector<std::vector<std::string>>& cells, std::size_t first_numeric) {
  if (cells.empty()) return {};
  std::vector<std::size_t> width(cells[0].size(), 0);
  for (const auto& row : cells) {
    for (std::size_t i = 0; i < row.size() && i < width.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  std::ostringstream out;
  for (const auto& row : cells) {
    std::string line;
    for (std::size_t i = 0; i < row.size() && i < width.size(); ++i) {
      if (width[i] == 0) continue;
      const std::string pad(width[i] - row[i].size(), ' ');
      line += (line.empty() ? "" : "  ") + (i >= first_numeric ? pad + row[i] : row[i] + pad);
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out << line << '\n';
  }
  return out.str();
}

}  // namespace gpubank::governance
