// Fuzzes the admission webhook's decision function on AdmissionReview bodies, against a
// snapshot of examples/policies built once, at a fixed request time. Invariant: whenever
// the body is valid JSON whose request.uid is a string, the decision (and so the response)
// carries that uid; the API server discards a response with any other uid.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "api/admission.hpp"
#include "core/timestamp.hpp"
#include "policy/policy_set.hpp"

namespace {

using namespace gpubank;

std::string source_dir() {
  const char* dir = std::getenv("GPUBANK_SOURCE_DIR");
  return dir != nullptr ? dir : GPUBANK_DEFAULT_SOURCE_DIR;
}

const api::PolicySnapshot& snapshot() {
  static const std::unique_ptr<api::PolicySnapshot> instance = [] {
    const std::string examples = source_dir() + "/examples/policies";
    policy::PolicySet set = policy::load_policy_set({examples});
    if (set.policies().empty() || has_errors(set.diagnostics())) {
      std::fprintf(stderr, "admission_review_fuzzer: cannot load the policies of %s (set GPUBANK_SOURCE_DIR)\n",
                   examples.c_str());
      std::abort();
    }
    return std::make_unique<api::PolicySnapshot>(std::move(set));
  }();
  return *instance;
}

// request.uid as an independent parser sees it, when the body is valid JSON and it is a
// string. Bodies with a duplicate "request" key at the top, or a duplicate "uid" key one
// level down, have no single answer (JSON leaves duplicates undefined) and are skipped.
std::optional<std::string> expected_uid(std::string_view body) {
  int request_keys = 0;
  int uid_keys = 0;
  const nlohmann::json::parser_callback_t count = [&](int depth, nlohmann::json::parse_event_t event,
                                                      nlohmann::json& parsed) {
    if (event == nlohmann::json::parse_event_t::key) {
      if (depth == 1 && parsed == "request") ++request_keys;
      if (depth == 2 && parsed == "uid") ++uid_keys;
    }
    return true;
  };
  const nlohmann::json root = nlohmann::json::parse(body, count, /*allow_exceptions=*/false);
  if (root.is_discarded() || request_keys > 1 || uid_keys > 1 || !root.is_object()) return std::nullopt;
  const auto request = root.find("request");
  if (request == root.end() || !request->is_object()) return std::nullopt;
  const auto uid = request->find("uid");
  if (uid == request->end() || !uid->is_string()) return std::nullopt;
  return uid->get<std::string>();
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  (void)snapshot();  // load before the first input, not inside it
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  static const Timestamp now = *parse_rfc3339("2026-12-01T08:00:00Z");

  const api::AdmissionDecision decision = api::review(snapshot(), body, now);
  // As the webhook server sends it: dump() throws on invalid UTF-8 anywhere in the decision.
  const std::string response = api::review_response(decision).dump();

  // ADMISSION_FUZZER_PRINT=1 shows each response (to check what the seeds exercise).
  static const bool print = std::getenv("ADMISSION_FUZZER_PRINT") != nullptr;
  if (print) std::fprintf(stderr, "%s\n", response.c_str());

  if (const auto uid = expected_uid(body); uid && decision.uid != *uid) {
    std::fprintf(stderr, "\nadmission decision uid \"%s\" differs from request.uid \"%s\"\nresponse: %s\n",
                 decision.uid.c_str(), uid->c_str(), response.c_str());
    std::fflush(stderr);
    __builtin_trap();
  }
  return 0;
}
