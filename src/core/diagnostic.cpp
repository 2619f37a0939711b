#include "core/diagnostic.hpp"

#include <algorithm>

#include "core/escape.hpp"

namespace gpubank {

const char* to_string(Severity severity) {
  return severity == Severity::Error ? "error" : "warning";
}

// Every part may hold input (file names, object names, quoted values), so each is escaped:
// the line stays one line, and no input can forge another diagnostic or reach the terminal.
std::string Diagnostic::to_string() const {
  std::string out;
  if (!file.empty()) {
    out += escape_text(file);
    if (pos.line > 0) {
      out += ':' + std::to_string(pos.line);
      if (pos.column > 0) out += ':' + std::to_string(pos.column);
    }
    out += ": ";
  }
  out += gpubank::to_string(severity);
  out += ": ";
  if (!kind.empty()) {
    out += escape_text(kind);
    if (!name.empty()) out += '/' + escape_text(name);
    out += ": ";
  }
  if (!path.empty()) out += escape_text(path) + ": ";
  out += escape_text(message);
  if (!rule.empty()) out += " [" + escape_text(rule) + "]";
  return out;
}

bool has_errors(const Diagnostics& diagnostics) {
  return std::any_of(diagnostics.begin(), diagnostics.end(),
                     [](const Diagnostic& d) { return d.severity == Severity::Error; });
}

}  // namespace gpubank
