// Base64 as kubeconfig files carry it (the *-data fields): what Go's encoding/json does for
// []byte fields, which is how kubectl reads them.
#pragma once

#include <string>
#include <string_view>

#include "core/expected.hpp"

namespace gpubank::k8s {

// Decodes standard base64 (RFC 4648 section 4: A-Z a-z 0-9 + /) with '=' padding to a
// multiple of four characters, skipping CR and LF anywhere (Go's decoder ignores them, so
// wrapped PEM-style lines decode there too). Anything else is an error naming the first
// offending character and its offset: URL-safe '-' and '_', spaces, missing or misplaced
// padding, a truncated final group.
[[nodiscard]] Expected<std::string> decode_base64(std::string_view text);

}  // namespace gpubank::k8s
