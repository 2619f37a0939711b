// Checks of credential bytes before a transport uses them, so a wrong file is reported at
// start-up with its field instead of as a TLS handshake failure later.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace gpubank::k8s {

// Each returns nothing when the bytes are usable, else a sentence saying why not.

// One or more PEM "CERTIFICATE" blocks, each a valid X.509 certificate (other PEM blocks
// are skipped, as Go's certificate pool does).
[[nodiscard]] std::optional<std::string> check_certificates_pem(std::string_view pem);

// A PEM private key (PKCS#8, PKCS#1 RSA or SEC1 EC), unencrypted, that belongs to the
// first certificate of `certificate_pem` (what Go's tls.X509KeyPair requires).
[[nodiscard]] std::optional<std::string> check_key_pair_pem(std::string_view certificate_pem, std::string_view key_pem);

// A bearer token goes into an HTTP header: after trimming surrounding whitespace it must
// be non-empty visible ASCII without spaces (no line break can split the header).
[[nodiscard]] std::optional<std::string> check_bearer_token(std::string_view token);

// `text` without leading and trailing ASCII whitespace (what client-go does to token and
// namespace files).
[[nodiscard]] std::string_view trim_whitespace(std::string_view text);

}  // namespace gpubank::k8s
