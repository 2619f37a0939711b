// Decoding documents into policy objects, and encoding them back.
#pragma once

#include <optional>

#include "core/diagnostic.hpp"
#include "document/decode.hpp"
#include "document/node.hpp"
#include "policy/types.hpp"

namespace gpubank::policy {

// Decodes a platform.gpubank.dev object (apiVersion, kind, metadata, spec, status).
// Returns nothing when the object has errors; every error is appended to `out`.
std::optional<PolicyObject> decode_policy(const doc::Node& root, const Origin& origin, Diagnostics& out);

// The canonical encoding: defaults filled in, fields in the API's order, empty optional
// fields left out. decode_policy(encode_policy(x)) describes the same policy as x.
doc::Json encode_policy(const PolicyObject& object);


}  // namespace gpubank::policy
