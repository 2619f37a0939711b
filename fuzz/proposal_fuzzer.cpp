// Fuzzes a proposed policy change as the portal's API receives it: the document text goes
// through parse_document, then, when it decodes, the authority check for a group-admin, a
// viewer and a platform-admin, the approval rule against the object in force, and the set
// with the change. Whatever the input: no crash, no undefined
// behaviour, and the rules' own promises hold (only the four self-service kinds come out;
// a platform-admin is never held for approval; a viewer is never allowed; every finding
// names a rule).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "proposals/proposals.hpp"

using namespace gpubank;

namespace {

[[noreturn]] void fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "\nproposal_fuzzer: %s\n%s\n", what, detail.substr(0, 2000).c_str());
  std::fflush(stderr);
  __builtin_trap();
}

const policy::PolicySet& examples() {
  static const policy::PolicySet set = [] {
    const char* dir = std::getenv("GPUBANK_SOURCE_DIR");
    return policy::load_policy_set({std::string(dir != nullptr ? dir : GPUBANK_DEFAULT_SOURCE_DIR) + "/examples/policies"});
  }();
  return set;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  Diagnostics findings;
  const auto object = proposals::parse_document(text, findings);
  for (const Diagnostic& d : findings) {
    if (d.rule.empty()) fail("a finding without a rule", d.to_string());
  }
  if (!object) {
    if (!has_errors(findings)) fail("refused without an error", text);
    return 0;
  }
  if (object->kind != policy::Kind::GPUQuotaPolicy && object->kind != policy::Kind::InferenceScalingPolicy &&
      object->kind != policy::Kind::TidalPolicy && object->kind != policy::Kind::CapacityLease) {
    fail("a kind that is not self-service came out", text);
  }
  const policy::PolicySet& in_force = examples();
  const auth::Principal admin{"pat", auth::Role::PlatformAdmin, "", "t1"};
  const auth::Principal group_admin{"ada", auth::Role::GroupAdmin, "ads", "t2"};
  const auth::Principal viewer{"vic", auth::Role::Viewer, "ads", "t3"};
  if (proposals::check_authority(admin, *object, in_force)) fail("a platform-admin was refused", text);
  if (!proposals::check_authority(viewer, *object, in_force)) fail("a viewer was allowed", text);
  (void)proposals::check_authority(group_admin, *object, in_force);
  const policy::PolicyObject* current = in_force.find(object->kind, object->name());
  if (proposals::approval_need(admin, current, *object).needed) fail("a platform-admin's change waits", text);
  const auto need = proposals::approval_need(group_admin, current, *object);
  if (need.reason.empty()) fail("an approval decision without a reason", text);
  // The set with the change (validating it is policy_decoder_fuzzer's and
  // policy_render_fuzzer's ground, and too slow here: a tenth of a second per input).
  const policy::PolicySet changed = proposals::with_change(in_force, *object);
  if (changed.find(object->kind, object->name()) == nullptr) fail("the change is not in the changed set", text);
  return 0;
}
