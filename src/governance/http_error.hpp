// What the scanner's HTTP clients (Prometheus, the notifiers) share: httplib's error codes
// in words ("Connection" alone says little), a URL split into base and path, timeouts.
#pragma once

#include <httplib.h>

#include <chrono>
#include <string>
#include <string_view>

#include "core/expected.hpp"

namespace gpubank::governance {

inline std::string describe(httplib::Error error) {
  switch (error) {
    case httplib::Error::Connection: return "could not connect";
    case httplib::Error::ConnectionTimeout: return "timed out connecting";
    case httplib::Error::Read: return "reading the answer failed or timed out";
    case httplib::Error::Write: return "sending the request failed or timed out";
    case httplib::Error::SSLConnection: return "TLS handshake failed";
    default: return httplib::to_string(error);
  }
}

// "http://host:port/path/" -> {"http://host:port", "/path"} (no trailing slash; empty when
// none). Only http://: these clients speak to in-cluster services.
struct HttpEndpoint {
  std::string base;
  std::string path;
};
inline Expected<HttpEndpoint> split_http_url(const std::string& url, std::string_view flag) {
  const std::string_view scheme = "http://";
  if (!url.starts_with(scheme)) return Unexpected{std::string(flag) + ": " + url + ": must be an http:// URL"};
  const auto slash = url.find('/', scheme.size());
  if (slash == scheme.size() || url.size() == scheme.size()) {
    return Unexpected{std::string(flag) + ": " + url + ": names no host"};
  }
  if (slash == std::string::npos) return HttpEndpoint{url, ""};
  std::string path = url.substr(slash);
  while (!path.empty() && path.back() == '/') path.pop_back();
  return HttpEndpoint{url.substr(0, slash), path};
}

// One timeout for connecting, reading and writing; TCP_NODELAY, or Nagle and delayed ACKs add
// ~40 ms to every request (bench/scan_bench).
inline void configure_client(httplib::Client& c, std::chrono::milliseconds timeout) {
  const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(timeout);
  const auto micros = std::chrono::duration_cast<std::chrono::microseconds>(timeout - seconds);
  c.set_connection_timeout(seconds.count(), static_cast<time_t>(micros.count()));
  c.set_read_timeout(seconds.count(), static_cast<time_t>(micros.count()));
  c.set_write_timeout(seconds.count(), static_cast<time_t>(micros.count()));
  c.set_tcp_nodelay(true);
}

}  // namespace gpubank::governance
