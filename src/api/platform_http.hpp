// What the platform server's routes share (platform_server.cpp, portal_routes.cpp): JSON
// answers and errors, query checks, and the gate in front of every route (who the request
// speaks for, its rate, its role, the audit record of a write). Internal to src/api.
#pragma once

#include <httplib.h>

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "api/access.hpp"
#include "core/expected.hpp"
#include "api/platform_server.hpp"
#include "auth/gate.hpp"

namespace gpubank::api::http {

using Json = nlohmann::ordered_json;
inline constexpr std::size_t kMaxParam = 253;
inline constexpr std::int64_t kMaxLimit = 1000;
inline constexpr std::size_t kMaxBody = 4096;
inline constexpr std::size_t kMaxDocumentBody = 80 * 1024;  // a 64 KiB policy document in JSON
// The body limit of a path: kMaxDocumentBody under /api/v1/proposals, else kMaxBody.
std::size_t body_limit(std::string_view path);

void send_json(httplib::Response& res, const Json& body, int status = 200);
// {"error": message, "field": field (when not empty), "rule": rule}
void send_error(httplib::Response& res, int status, const std::string& field, const std::string& rule,
                const std::string& message);
// Unknown, repeated or over-long query parameters.
std::optional<QueryError> check_known(const Params& params, std::initializer_list<std::string_view> known);
std::optional<QueryError> read_int(const Params& params, const std::string& key, std::int64_t lo, std::int64_t hi,
                                   std::int64_t& out);
std::string param(const Params& params, const std::string& key);

std::int64_t wall_ms();
// The value of one cookie of the Cookie header; empty when absent.
std::string cookie_value(const httplib::Request& req, std::string_view name);
bool is_write(const httplib::Request& req);

// Who the request speaks for, when it may do what `need` asks and is within its rate (and,
// for a write with `record`, once its audit record is in); otherwise the error is sent and
// none returned.
// What admit() checks a request against: the token gate, and the trusted proxy with the
// guardrails that give its users their roles (both optional).
struct Door {
  auth::Gate* gate = nullptr;
  const ProxyAuth* proxy = nullptr;
  const policy::PlatformGuardrailsSpec* guardrails = nullptr;
  // Where the guardrails change while serving (the cluster's PlatformGuardrails): read at
  // each proxied request when `guardrails` is null.
  std::function<std::optional<policy::PlatformGuardrailsSpec>()> current_guardrails;
};

std::optional<auth::Principal> admit(const Door* door, Need need, const httplib::Request& req, httplib::Response& res,
                                     bool record = true);

using Guarded = std::function<void(const httplib::Request&, httplib::Response&, const auth::Principal&)>;
// The handler behind admit(); `audited` false for a POST that changes nothing (a preview).
httplib::Server::Handler guard(const Door* door, Need need, Guarded handler, bool audited = true);

// A decision on a low-utilisation ReclaimCandidate (governance/reclaim_approval.hpp): only a
// platform-admin or a group-admin decides (403 governance.decision-forbidden otherwise);
// the body {"decision": "approve" | "reject", "reason", "downgradeTo"} is checked field by
// field. The error is sent and none returned otherwise.
struct DecisionBody {
  bool approve = false;
  std::string reason, downgrade_to;
};
std::optional<DecisionBody> read_decision(const httplib::Request& req, httplib::Response& res, const auth::Principal& who);
// A decision the rules refused: a refused downgradeTo class is a field error (422), the rest
// a conflict with the alert's state (409).
void send_decision_error(httplib::Response& res, const std::string& error);

// Binds `svr` to address:port (0: any free port); the port, or why not.
Expected<int> bind_server(httplib::Server& svr, const std::string& address, int port);

// 403 naming the group when a scoped principal asks for another group's details.
bool other_group(httplib::Response& res, const auth::Principal& who, const std::string& group, const char* what);

}  // namespace gpubank::api::http
