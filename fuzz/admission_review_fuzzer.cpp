// Fuzzes the admission webhook's decision functions, review() (POST /validate) and
// review_mutation() (POST /mutate), on AdmissionReview bodies, against a snapshot of
// examples/policies built once, at a fixed request time. Invariants: whenever the body is
// valid JSON whose request.uid is a string, both decisions (and so the responses) carry
// that uid, since the API server discards a response with any other uid; and a patch
// /mutate answers with applies to request.object and sets the priority-class label.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

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

[[noreturn]] void fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "\n%s\n%s\n", what, detail.c_str());
  std::fflush(stderr);
  __builtin_trap();
}

// The body as an independent parser reads it; nullopt when that could differ from what the
// decision read: a body it does not accept, or one with a key twice in some object (the
// decision reads the first, nlohmann keeps the last).
std::optional<nlohmann::json> parse_unambiguous(std::string_view body) {
  std::vector<std::set<std::string>> open_objects;
  bool duplicate = false;
  const nlohmann::json::parser_callback_t track = [&](int, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    using Event = nlohmann::json::parse_event_t;
    if (event == Event::object_start) open_objects.emplace_back();
    if (event == Event::object_end && !open_objects.empty()) open_objects.pop_back();
    if (event == Event::key && !open_objects.empty() && !open_objects.back().insert(parsed.get<std::string>()).second) {
      duplicate = true;
    }
    return true;
  };
  nlohmann::json root = nlohmann::json::parse(body, track, /*allow_exceptions=*/false, /*ignore_comments=*/true);
  if (root.is_discarded() || duplicate) return std::nullopt;
  return root;
}

// The patch of an allowed mutation, applied to request.object as the API server would.
void check_patch(std::string_view body, const api::AdmissionDecision& decision) {
  if (!decision.allowed || decision.patch.empty()) return;
  const auto root = parse_unambiguous(body);
  if (!root) return;
  if (!root->is_object() || !root->contains("request") || !(*root)["request"].is_object() ||
      !(*root)["request"].contains("object")) {
    fail("a patch for a request without an object", decision.patch.dump());
  }
  nlohmann::json patched;
  try {
    patched = (*root)["request"]["object"].patch(decision.patch);
  } catch (const nlohmann::json::exception& e) {
    fail("the mutation's patch does not apply to request.object", decision.patch.dump() + "\n" + e.what());
  }
  const nlohmann::json::json_pointer label("/metadata/labels/kueue.x-k8s.io~1priority-class");
  if (!patched.contains(label) || !patched[label].is_string()) {
    fail("the patched object has no kueue.x-k8s.io/priority-class label", patched.dump());
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  (void)snapshot();  // load before the first input, not inside it
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  static const Timestamp now = *parse_rfc3339("2026-12-01T08:00:00Z");

  const auto uid = expected_uid(body);
  for (const bool mutating : {false, true}) {
    const api::AdmissionDecision decision =
        mutating ? api::review_mutation(snapshot(), body, now) : api::review(snapshot(), body, now);
    // As the webhook server sends it: dump() throws on invalid UTF-8 anywhere in the decision.
    const std::string response = api::review_response(decision).dump();

    // ADMISSION_FUZZER_PRINT=1 shows each response (to check what the seeds exercise).
    static const bool print = std::getenv("ADMISSION_FUZZER_PRINT") != nullptr;
    if (print) std::fprintf(stderr, "%s %s\n", mutating ? "/mutate" : "/validate", response.c_str());

    if (uid && decision.uid != *uid) {
      fail(mutating ? "the mutation's uid differs from request.uid" : "the decision's uid differs from request.uid",
           "decision uid \"" + decision.uid + "\", request.uid \"" + *uid + "\"\nresponse: " + response);
    }
    if (mutating) check_patch(body, decision);
  }
  return 0;
}
