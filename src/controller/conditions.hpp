// status.conditions as Kubernetes API conventions define them (metav1.Condition): type,
// status True/False/Unknown, reason (UpperCamelCase), message, observedGeneration and
// lastTransitionTime, which moves only when the status flips. `kubectl wait
// --for=condition=Applied` and GitOps health checks read them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace gpubank::controller {

struct Condition {
  std::string type;    // "Accepted", "Rendered", "Applied"
  bool status = false;  // True / False (gpubank never reports Unknown: it either knows or says why not)
  std::string reason;   // "Valid", "PolicySetInvalid", "ApplyFailed", ...
  std::string message;  // one sentence, capped at 32 KiB (the API's limit) on a character boundary

  friend bool operator==(const Condition&, const Condition&) = default;
};

// The conditions after setting `desired` on `existing` (a status.conditions array, or null):
// conditions of other types are kept as they are (another controller's), each desired
// type is replaced, its lastTransitionTime kept when its status did not change and set to
// `now` (RFC 3339) when it did or it is new. Order: existing types first, new ones after.
[[nodiscard]] nlohmann::json merge_conditions(const nlohmann::json& existing, const std::vector<Condition>& desired,
                                              std::int64_t observed_generation, std::string_view now);

// The status merge patch that brings `object` to these conditions and observedGeneration,
// or nothing when its status already says exactly that (so writing status does not wake
// the controller's own watch into an endless loop).
[[nodiscard]] std::optional<nlohmann::json> status_update(const nlohmann::json& object, const std::vector<Condition>& desired,
                                                          std::int64_t generation, std::string_view now);

// The message cut to `limit` bytes without splitting a UTF-8 character.
[[nodiscard]] std::string cap_message(std::string message, std::size_t limit = 32768);

}  // namespace gpubank::controller
