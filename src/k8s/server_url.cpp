#include "k8s/server_url.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>

#include "core/escape.hpp"

namespace gpubank::k8s {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

bool is_ipv4(const std::string& s) {
  std::array<unsigned char, 4> buffer{};
  return inet_pton(AF_INET, s.c_str(), buffer.data()) == 1;
}

bool is_ipv6(const std::string& s) {
  std::array<unsigned char, 16> buffer{};
  return inet_pton(AF_INET6, s.c_str(), buffer.data()) == 1;
}

// RFC 1123 host names: dot-separated labels of letters, digits and '-', not starting or
// ending with '-', each 1..63 characters, 253 in all.
bool is_dns_name(std::string_view s) {
  if (s.empty() || s.size() > 253) return false;
  std::size_t label = 0;
  for (std::size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || s[i] == '.') {
      if (label == 0 || label > 63 || s[i - 1] == '-' || s[i - label] == '-') return false;
      label = 0;
      continue;
    }
    const auto c = static_cast<unsigned char>(s[i]);
    if (!std::isalnum(c) && c != '-') return false;
    ++label;
  }
  return true;
}

}  // namespace

std::string ServerUrl::host_for_url() const {
  return host.find(':') != std::string::npos ? "[" + host + "]" : host;
}

std::string ServerUrl::to_string() const {
  return scheme + "://" + host_for_url() + ":" + std::to_string(port) + base_path;
}

bool is_loopback_host(std::string_view host) {
  const std::string h = lower(host);
  if (h == "localhost" || h == "::1") return true;
  return h.starts_with("127.") && is_ipv4(h);
}

Expected<ServerUrl> parse_server_url(std::string_view text, bool allow_loopback_http) {
  const auto quoted = [&] { return "\"" + escape_text(text) + "\""; };
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u >= 0x7f) {
      return Unexpected{"server " + quoted() + " contains a space, a control character or non-ASCII text"};
    }
  }
  const auto scheme_end = text.find("://");
  if (scheme_end == std::string_view::npos) {
    return Unexpected{"server " + quoted() + " has no scheme: write it as https://host:port"};
  }
  ServerUrl url;
  url.scheme = lower(text.substr(0, scheme_end));
  if (url.scheme != "https" && url.scheme != "http") {
    return Unexpected{"server " + quoted() + " uses scheme \"" + url.scheme + "\": only https is supported"};
  }
  std::string_view rest = text.substr(scheme_end + 3);
  const auto path_start = rest.find_first_of("/?#");
  std::string_view authority = rest.substr(0, path_start);
  std::string_view path = path_start == std::string_view::npos ? std::string_view() : rest.substr(path_start);
  if (path.find_first_of("?#") != std::string_view::npos) {
    return Unexpected{"server " + quoted() + " has a query or a fragment: a server address has neither"};
  }
  if (authority.find('@') != std::string_view::npos) {
    return Unexpected{"server " + quoted() + " carries user information before '@': put credentials in the user entry"};
  }
  std::string_view port_text;
  if (authority.starts_with('[')) {
    const auto close = authority.find(']');
    if (close == std::string_view::npos) return Unexpected{"server " + quoted() + " has an unclosed '[' in its host"};
    url.host = lower(authority.substr(1, close - 1));
    if (!is_ipv6(url.host)) {
      return Unexpected{"server " + quoted() + ": \"" + escape_text(url.host) + "\" in brackets is not an IPv6 address"};
    }
    std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (!after.starts_with(':')) return Unexpected{"server " + quoted() + " has text after its IPv6 address"};
      port_text = after.substr(1);
      if (port_text.empty()) return Unexpected{"server " + quoted() + " has an empty port"};
    }
  } else {
    const auto colon = authority.find(':');
    if (colon != std::string_view::npos && authority.find(':', colon + 1) != std::string_view::npos) {
      return Unexpected{"server " + quoted() + ": an IPv6 address must be written in brackets, https://[::1]:6443"};
    }
    url.host = lower(authority.substr(0, colon));
    if (colon != std::string_view::npos) {
      port_text = authority.substr(colon + 1);
      if (port_text.empty()) return Unexpected{"server " + quoted() + " has an empty port"};
    }
    if (url.host.empty()) return Unexpected{"server " + quoted() + " has no host"};
    if (!is_ipv4(url.host) && !is_dns_name(url.host)) {
      return Unexpected{"server " + quoted() + ": \"" + escape_text(url.host) + "\" is not a valid host name or IPv4 address"};
    }
  }
  if (!port_text.empty()) {
    unsigned value = 0;
    const auto [ptr, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), value);
    if (ec != std::errc() || ptr != port_text.data() + port_text.size() || value < 1 || value > 65535) {
      return Unexpected{"server " + quoted() + ": port \"" + escape_text(port_text) + "\" is not a number in 1..65535"};
    }
    url.port = static_cast<std::uint16_t>(value);
  } else {
    url.port = url.scheme == "https" ? 443 : 80;
  }
  while (path.ends_with('/')) path.remove_suffix(1);
  url.base_path = std::string(path);
  if (url.scheme == "http" && !(allow_loopback_http && is_loopback_host(url.host))) {
    return Unexpected{"server " + quoted() +
                      " uses plain http: only https is supported (plain http is allowed only for a loopback test "
                      "server, when the caller asks for it)"};
  }
  return url;
}

}  // namespace gpubank::k8s
