#include "policy/report.hpp"

#include <map>
#include <tuple>

#include "core/escape.hpp"

namespace gpubank::policy {
namespace {

const char* verdict_name(Verdict v) {
  switch (v) {
    case Verdict::Valid: return "valid";
    case Verdict::Invalid: return "invalid";
    case Verdict::Skipped: return "skipped";
  }
  return "?";
}


std::string where(const Origin& o) {
  if (o.file.empty()) return "-";
  return escape_text(o.file) + (o.pos.line > 0 ? ":" + std::to_string(o.pos.line) : "");
}

}  // namespace

doc::Json finding_json(const Diagnostic& d) {
  doc::Json j = doc::Json::object();
  j["severity"] = to_string(d.severity);
  j["rule"] = d.rule;
  if (!d.file.empty()) j["file"] = d.file;
  if (d.pos.line > 0) {
    j["line"] = d.pos.line;
    j["column"] = d.pos.column;
  }
  if (!d.kind.empty()) j["kind"] = d.kind;
  if (!d.name.empty()) j["name"] = d.name;
  if (!d.path.empty()) j["path"] = d.path;
  j["message"] = d.message;
  return j;
}

ValidationReport build_report(const PolicySet& set, const Diagnostics& findings) {
  ValidationReport report;
  using Key = std::tuple<std::string, std::string, std::string>;
  std::map<Key, std::vector<std::size_t>> by_object;
  for (const auto& e : set.entries()) {
    ObjectVerdict v;
    v.kind = e.kind;
    v.name = e.name;
    v.namespace_ = e.namespace_;
    v.origin = e.origin;
    v.verdict = e.category == ObjectEntry::Category::Skipped ? Verdict::Skipped : Verdict::Valid;
    if (e.category == ObjectEntry::Category::Rejected) v.verdict = Verdict::Invalid;
    by_object[{e.origin.file, e.kind, e.name}].push_back(report.objects.size());
    report.objects.push_back(std::move(v));
  }
  for (const auto& f : findings) {
    (f.severity == Severity::Error ? report.errors : report.warnings) += 1;
    auto it = f.kind.empty() ? by_object.end() : by_object.find({f.file, f.kind, f.name});
    if (it == by_object.end()) {
      report.unattached.push_back(f);
      continue;
    }
    for (std::size_t i : it->second) {
      ObjectVerdict& v = report.objects[i];
      v.findings.push_back(f);
      if (f.severity == Severity::Error) v.verdict = Verdict::Invalid;
    }
  }
  return report;
}

doc::Json to_json(const ValidationReport& report) {
  doc::Json objects = doc::Json::array();
  int valid = 0;
  int invalid = 0;
  int skipped = 0;
  for (const auto& v : report.objects) {
    doc::Json o = doc::Json::object();
    o["kind"] = v.kind;
    o["name"] = v.name;
    if (!v.namespace_.empty()) o["namespace"] = v.namespace_;
    if (!v.origin.file.empty()) o["file"] = v.origin.file;
    if (v.origin.pos.line > 0) o["line"] = v.origin.pos.line;
    o["verdict"] = verdict_name(v.verdict);
    doc::Json fs = doc::Json::array();
    for (const auto& f : v.findings) fs.push_back(finding_json(f));
    o["findings"] = std::move(fs);
    objects.push_back(std::move(o));
    (v.verdict == Verdict::Valid ? valid : v.verdict == Verdict::Invalid ? invalid : skipped) += 1;
  }
  doc::Json unattached = doc::Json::array();
  for (const auto& f : report.unattached) unattached.push_back(finding_json(f));
  doc::Json out = doc::Json::object();
  out["valid"] = report.ok();
  out["objects"] = std::move(objects);
  out["findings"] = std::move(unattached);
  out["summary"] = {{"objects", report.objects.size()}, {"valid", valid},     {"invalid", invalid},
                    {"skipped", skipped},               {"errors", report.errors}, {"warnings", report.warnings}};
  return out;
}

std::string to_text(const ValidationReport& report) {
  std::string out;
  int valid = 0;
  int invalid = 0;
  int skipped = 0;
  for (const auto& f : report.unattached) out += f.to_string() + "\n";
  for (const auto& v : report.objects) {
    // Names come from the input: escaped, as in Diagnostic::to_string.
    const std::string object = (v.kind.empty() ? std::string("?") : escape_text(v.kind)) + "/" +
                               (v.namespace_.empty() ? "" : escape_text(v.namespace_) + "/") +
                               (v.name.empty() ? "?" : escape_text(v.name));
    std::string verdict = verdict_name(v.verdict);
    if (v.verdict == Verdict::Skipped) verdict += " (not a gpubank policy or workload)";
    out += verdict + "  " + object + "  " + where(v.origin) + "\n";
    for (const auto& f : v.findings) out += "  " + f.to_string() + "\n";
    (v.verdict == Verdict::Valid ? valid : v.verdict == Verdict::Invalid ? invalid : skipped) += 1;
  }
  out += "\n" + std::to_string(report.objects.size()) + " objects: " + std::to_string(valid) + " valid, " +
         std::to_string(invalid) + " invalid, " + std::to_string(skipped) + " skipped; " +
         std::to_string(report.errors) + " errors, " + std::to_string(report.warnings) + " warnings\n";
  return out;
}

}  // namespace gpubank::policy
