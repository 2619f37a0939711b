// One finding about an input: where it is (file, line, column, object, field path), which
// stable rule it breaks, and a sentence a person can act on.
#pragma once

#include <string>
#include <vector>

namespace gpubank {

enum class Severity { Error, Warning };

struct SourcePos {
  int line = 0;    // 1-based; 0 when unknown (input that came without positions)
  int column = 0;  // 1-based
  friend bool operator==(const SourcePos&, const SourcePos&) = default;
};

struct Diagnostic {
  Severity severity = Severity::Error;
  std::string rule;     // stable id, e.g. "quota.sum-exceeds-pool"
  std::string file;     // empty when the input was not a file
  SourcePos pos;
  std::string kind;     // object kind, e.g. "GPUQuotaPolicy"; empty for file-level findings
  std::string name;     // object name
  std::string path;     // field path, e.g. "spec.windows[1].start"
  std::string message;  // one sentence, with the numbers that matter

  // "file:line:col: error: Kind/name: path: message [rule]", leaving out the parts that
  // are unknown.
  [[nodiscard]] std::string to_string() const;
};

using Diagnostics = std::vector<Diagnostic>;

[[nodiscard]] bool has_errors(const Diagnostics& diagnostics);
[[nodiscard]] const char* to_string(Severity severity);

}  // namespace gpubank
