// The API server's address: parsed and checked once, so the transport gets a scheme, a
// host and a port it can use as they are.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/expected.hpp"

namespace gpubank::k8s {

struct ServerUrl {
  std::string scheme;     // "https", or "http" for a loopback fake when allowed
  std::string host;       // DNS name or IP address; IPv6 without brackets ("::1")
  std::uint16_t port = 0; // explicit, or 443 / 80 by scheme
  std::string base_path;  // "" or "/k8s/clusters/c-1" (API paths go below it), no trailing '/'

  // "https://[::1]:6443/base": what requests are built from.
  [[nodiscard]] std::string to_string() const;
  // The host as it goes into a URL or a Host header: IPv6 in brackets.
  [[nodiscard]] std::string host_for_url() const;
  friend bool operator==(const ServerUrl&, const ServerUrl&) = default;
};

// Whether `host` (no brackets) is localhost, 127.0.0.0/8 or ::1.
[[nodiscard]] bool is_loopback_host(std::string_view host);

// Parses "https://host[:port][/path]". Refused: other schemes; plain http unless
// `allow_loopback_http` and the host is loopback (a fake API server in tests: bearer tokens
// must never cross a network in clear); user information ("user@host"), queries and
// fragments (a server address has none); an empty or malformed host, an IPv6 address
// without brackets or with a zone; a port outside 1..65535; spaces and control characters.
// The scheme and host compare case-insensitively and are stored lower-case.
[[nodiscard]] Expected<ServerUrl> parse_server_url(std::string_view text, bool allow_loopback_http = false);

}  // namespace gpubank::k8s
