// Fuzzes the policy pipeline on a YAML stream: read_yaml -> PolicySet::add -> check_all
// -> the validation report as text and JSON (dump() throws on text that is not UTF-8).
// Then checks that the canonical encoding of every decoded policy round-trips:
//   encode_policy(p) -> to_yaml -> read_yaml -> decode_policy -> encode_policy
// must read back without errors and re-encode to the identical JSON. A difference is a
// real bug (`gpubank convert` relies on it), so it traps.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "policy_input.hpp"

#include "core/diagnostic.hpp"
#include "core/timestamp.hpp"
#include "document/reader.hpp"
#include "document/yaml_writer.hpp"
#include "policy/decode.hpp"
#include "policy/policy_set.hpp"
#include "policy/report.hpp"
#include "policy/validate.hpp"

namespace {

using namespace gpubank;

std::string shown(const doc::Json& value) {
  return value.dump(2, ' ', false, doc::Json::error_handler_t::replace);
}

[[noreturn]] void round_trip_failure(const char* what, const policy::PolicyObject& p, const doc::Json& first,
                                     const std::string& yaml, const Diagnostics& findings) {
  std::fprintf(stderr, "\nround-trip failure (%s) for %s\n--- encoded JSON:\n%s\n--- as YAML:\n%s", what,
               p.ref().c_str(), shown(first).c_str(), yaml.c_str());
  for (const auto& d : findings) std::fprintf(stderr, "--- finding: %s\n", d.to_string().c_str());
  std::fflush(stderr);
  __builtin_trap();
}

void check_round_trip(const policy::PolicyObject& p) {
  const doc::Json first = policy::encode_policy(p);
  (void)first.dump();  // `gpubank convert -o json`
  const std::string yaml = doc::to_yaml(first);

  std::vector<doc::Document> docs;
  Diagnostics findings;
  doc::read_yaml(yaml, "round-trip.yaml", docs, findings);  // default limits: the output may be larger
  if (has_errors(findings)) round_trip_failure("re-reading the YAML", p, first, yaml, findings);
  if (docs.size() != 1) round_trip_failure("not one document", p, first, yaml, findings);

  auto again = policy::decode_policy(docs[0].root, policy::Origin{"round-trip.yaml", {}, 0}, findings);
  if (!again || has_errors(findings)) round_trip_failure("re-decoding", p, first, yaml, findings);

  const doc::Json second = policy::encode_policy(*again);
  if (second != first) {
    std::fprintf(stderr, "--- re-encoded JSON:\n%s\n", shown(second).c_str());
    round_trip_failure("re-encoding differs", p, first, yaml, findings);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  policy::PolicySet set = fuzz::read_policies(text);
  const policy::ValidationOptions options = fuzz::validation_options();
  const Diagnostics all = policy::check_all(set, options);
  // As `gpubank validate -o json` prints them: dump() throws on text that is not UTF-8.
  const policy::ValidationReport report = policy::build_report(set, all);
  (void)policy::to_text(report);
  (void)policy::to_json(report).dump();

  for (const auto& p : set.policies()) check_round_trip(p);
  return 0;
}
