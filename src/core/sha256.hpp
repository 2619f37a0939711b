// SHA-256 digests (OpenSSL's EVP), shared by the renderer's source hashes and the audit
// log's hash chain.
#pragma once

#include <string>
#include <string_view>

namespace gpubank {

// Lowercase hex sha256 of a text (64 characters).
[[nodiscard]] std::string sha256_hex(std::string_view text);

}  // namespace gpubank
