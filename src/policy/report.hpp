// The per-object verdicts of a validation run, for people (text) and tools (JSON/YAML).
#pragma once

#include <string>
#include <vector>

#include "core/diagnostic.hpp"
#include "document/decode.hpp"
#include "policy/policy_set.hpp"

namespace gpubank::policy {

enum class Verdict { Valid, Invalid, Skipped };

struct ObjectVerdict {
  std::string kind;
  std::string name;
  std::string namespace_;
  Origin origin;
  Verdict verdict = Verdict::Valid;
  Diagnostics findings;
};

struct ValidationReport {
  std::vector<ObjectVerdict> objects;
  Diagnostics unattached;  // findings about files or the whole set
  int errors = 0;
  int warnings = 0;

  [[nodiscard]] bool ok() const { return errors == 0; }
};

// One finding as JSON: severity, rule, file/line/column, kind, name, path, message (the
// fields that are set).
[[nodiscard]] doc::Json finding_json(const Diagnostic& d);

// Groups findings by the object they are about (same file, kind and name).
ValidationReport build_report(const PolicySet& set, const Diagnostics& findings);

doc::Json to_json(const ValidationReport& report);
// One line per object, its findings indented below it, then a summary line.
std::string to_text(const ValidationReport& report);

}  // namespace gpubank::policy
