#include "core/diagnostic.hpp"

#include <algorithm>

namespace gpubank {

const char* to_string(Severity severity) {
  return severity == Severity::Error ? "error" : "warning";
}

std::string Diagnostic::to_string() const {
  std::string out;
  if (!file.empty()) {
    out += file;
    if (pos.line > 0) {
      out += ':' + std::to_string(pos.line);
      if (pos.column > 0) out += ':' + std::to_string(pos.column);
    }
    out += ": ";
  }
  out += gpubank::to_string(severity);
  out += ": ";
  if (!kind.empty()) {
    out += kind;
    if (!name.empty()) out += '/' + name;
    out += ": ";
  }
  if (!path.empty()) out += path + ": ";
  out += message;
  if (!rule.empty()) out += " [" + rule + "]";
  return out;
}

bool has_errors(const Diagnostics& diagnostics) {
  return std::any_of(diagnostics.begin(), diagnostics.end(),
                     [](const Diagnostic& d) { return d.severity == Severity::Error; });
}

}  // namespace gpubank
