// The trusted-proxy sign-in flags `gpubank up` and `gpubank controller --api-port` share
// (api/access.hpp's ProxyAuth): an OIDC reverse proxy's user and groups headers, believed
// only from its addresses.
#pragma once

#include <CLI/CLI.hpp>

#include <optional>
#include <string>
#include <vector>

#include "api/access.hpp"

namespace gpubank::cli {

struct ProxyOptions {
  std::string user_header, groups_header;
  std::vector<std::string> from{"127.0.0.1", "::1"};
  std::vector<std::string> finops_subjects;
};

inline void add_proxy_options(CLI::App& cmd, ProxyOptions& opt) {
  cmd.add_option("--trust-proxy-user-header", opt.user_header,
                 "believe this header (e.g. X-Forwarded-User) as the signed-in user when the request comes from "
                 "--trust-proxy-from: sign-in by an OIDC reverse proxy; roles come from the guardrails' subjects");
  cmd.add_option("--trust-proxy-groups-header", opt.groups_header,
                 "the proxy's header listing the user's groups, comma-separated (e.g. X-Forwarded-Groups)");
  cmd.add_option("--trust-proxy-from", opt.from, "the proxy's addresses as this server sees them (default 127.0.0.1 ::1)")
      ->expected(1, -1);
  cmd.add_option("--finops-subject", opt.finops_subjects,
                 "subjects (user:NAME, group:NAME) a proxied user gets the finops role by")
      ->expected(1, -1);
}

// The proxy to believe; none without --trust-proxy-user-header.
[[nodiscard]] inline std::optional<api::ProxyAuth> proxy_auth(const ProxyOptions& opt) {
  if (opt.user_header.empty()) return std::nullopt;
  api::ProxyAuth proxy;
  proxy.user_header = opt.user_header;
  proxy.groups_header = opt.groups_header;
  proxy.trusted_from = {opt.from.begin(), opt.from.end()};
  proxy.finops = {opt.finops_subjects.begin(), opt.finops_subjects.end()};
  return proxy;
}

}  // namespace gpubank::cli
