#include "api/platform_http.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <set>

#include "core/escape.hpp"
#include "governance/reclaim_approval.hpp"

namespace gpubank::api::http {


void send_json(httplib::Response& res, const Json& body, int status) {
  res.status = status;
  res.set_content(body.dump() + "\n", "application/json");
}

void send_error(httplib::Response& res, int status, const std::string& field, const std::string& rule,
                const std::string& message) {
  Json j = Json::object();
  j["error"] = message;
  if (!field.empty()) j["field"] = field;
  j["rule"] = rule;
  send_json(res, j, status);
}

std::optional<QueryError> check_known(const Params& params, std::initializer_list<std::string_view> known) {
  std::set<std::string> seen;
  for (const auto& [key, value] : params) {
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      std::string list;
      for (auto k : known) list += (list.empty() ? "" : ", ") + std::string(k);
      return QueryError{key, "query.unknown-parameter",
                        "unknown query parameter \"" + key.substr(0, 64) + "\"; known: " + (list.empty() ? "none" : list)};
    }
    if (!seen.insert(key).second) return QueryError{key, "query.duplicate-parameter", key + " is given more than once"};
    if (value.size() > kMaxParam) {
      return QueryError{key, "query.too-long", key + " is " + std::to_string(value.size()) + " bytes; the limit is 253"};
    }
  }
  return std::nullopt;
}

std::optional<QueryError> read_int(const Params& params, const std::string& key, std::int64_t lo, std::int64_t hi,
                                   std::int64_t& out) {
  const auto it = params.find(key);
  if (it == params.end()) return std::nullopt;
  const std::string& v = it->second;
  std::int64_t value = 0;
  bool ok = !v.empty() && v.size() <= 18;
  for (char c : v) ok = ok && c >= '0' && c <= '9';
  if (ok) value = std::stoll(v);
  if (!ok || value < lo || value > hi) {
    return QueryError{key, "query.out-of-range",
                      key + " must be an integer from " + std::to_string(lo) + " to " + std::to_string(hi) + ", got \"" +
                          v.substr(0, 32) + "\""};
  }
  out = value;
  return std::nullopt;
}

std::string param(const Params& params, const std::string& key) {
  const auto it = params.find(key);
  return it == params.end() ? std::string() : it->second;
}

std::size_t body_limit(std::string_view path) {
  return path.starts_with("/api/v1/proposals") ? kMaxDocumentBody : kMaxBody;
}

std::int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The value of one cookie of the Cookie header ("a=b; c=d"); empty when absent.
std::string cookie_value(const httplib::Request& req, std::string_view name) {
  const std::string header = req.get_header_value("Cookie");
  std::size_t pos = 0;
  while (pos < header.size()) {
    std::size_t end = header.find(';', pos);
    if (end == std::string::npos) end = header.size();
    std::string_view part(header.data() + pos, end - pos);
    while (!part.empty() && part.front() == ' ') part.remove_prefix(1);
    if (part.size() > name.size() && part.starts_with(name) && part[name.size()] == '=') {
      return std::string(part.substr(name.size() + 1));
    }
    pos = end + 1;
  }
  return {};
}

bool is_write(const httplib::Request& req) { return req.method != "GET" && req.method != "HEAD"; }

// Who the request speaks for, when it may do what `need` asks and is within its rate (and,
// for a write, once its audit record is in); otherwise the error is sent and none returned.
namespace {

// A header value a proxy may send: printable ASCII without spaces, 1..253 bytes.
bool plain_value(std::string_view v) {
  return !v.empty() && v.size() <= 253 && std::all_of(v.begin(), v.end(), [](char c) { return c > ' ' && c < 0x7f; });
}

// The proxied user, when the proxy is configured and the request carries its user header:
// a principal, or an error already sent (nullopt inside), or no proxy at all (outer nullopt).
std::optional<std::optional<auth::Principal>> from_proxy(const Door& door, const httplib::Request& req,
                                                         httplib::Response& res) {
  if (door.proxy == nullptr || door.proxy->user_header.empty() || !req.has_header(door.proxy->user_header)) {
    return std::nullopt;
  }
  const ProxyAuth& proxy = *door.proxy;
  if (!proxy.trusted_from.contains(req.remote_addr)) {
    send_error(res, 401, proxy.user_header, "auth.untrusted-proxy",
               proxy.user_header + " is believed only from the trusted proxy, not from " + req.remote_addr.substr(0, 64));
    return std::optional<auth::Principal>{};
  }
  policy::UserInfo user;
  user.username = req.get_header_value(proxy.user_header);
  if (!plain_value(user.username) || req.get_header_value_count(proxy.user_header) != 1) {
    send_error(res, 401, proxy.user_header, "auth.invalid-proxy-header",
               proxy.user_header + " must be one printable name of at most 253 bytes");
    return std::optional<auth::Principal>{};
  }
  if (!proxy.groups_header.empty()) {
    const std::string groups = req.get_header_value(proxy.groups_header);
    std::size_t from = 0;
    while (from <= groups.size() && !groups.empty()) {
      std::size_t comma = groups.find(',', from);
      if (comma == std::string::npos) comma = groups.size();
      std::string g = groups.substr(from, comma - from);
      while (!g.empty() && g.front() == ' ') g.erase(g.begin());
      while (!g.empty() && g.back() == ' ') g.pop_back();
      if (!g.empty()) {
        if (!plain_value(g) || user.groups.size() >= 256) {
          send_error(res, 401, proxy.groups_header, "auth.invalid-proxy-header",
                     proxy.groups_header + " must list at most 256 printable names of at most 253 bytes");
          return std::optional<auth::Principal>{};
        }
        user.groups.push_back(std::move(g));
      }
      from = comma + 1;
    }
  }
  std::optional<policy::PlatformGuardrailsSpec> current;
  const policy::PlatformGuardrailsSpec* guardrails = door.guardrails;
  if (guardrails == nullptr && door.current_guardrails) {
    current = door.current_guardrails();
    if (current) guardrails = &*current;
  }
  std::optional<auth::Principal> who = guardrails == nullptr ? std::nullopt : principal_from_proxy(user, *guardrails, proxy.finops);
  if (!who) {
    send_error(res, 403, "", "auth.no-role",
               "user " + user.username + " is neither a platform admin nor an admin or member of a business group in the "
               "guardrails, nor finops");
    return std::optional<auth::Principal>{};
  }
  // A proxy signs browsers in with its own cookie: a write must carry a header no
  // cross-site form can send.
  if (is_write(req) && req.get_header_value("X-Requested-With") != "gpubank") {
    send_error(res, 403, "X-Requested-With", "auth.csrf",
               "a write through the sign-in proxy needs the header X-Requested-With: gpubank");
    return std::optional<auth::Principal>{};
  }
  return who;
}

}  // namespace

std::optional<auth::Principal> admit(const Door* door, Need need, const httplib::Request& req, httplib::Response& res,
                                     bool record) {
  auth::Gate* gate = door == nullptr ? nullptr : door->gate;
  if (gate == nullptr) {
    send_error(res, 401, "", "auth.unauthenticated", "this server has no token store: it admits nobody");
    return std::nullopt;
  }
  const std::int64_t now = wall_ms();
  std::optional<auth::Principal> who;
  if (auto proxied = from_proxy(*door, req, res)) {
    if (!*proxied) return std::nullopt;
    who = std::move(*proxied);
  } else if (req.has_header("Authorization")) {
    who = gate->by_token(req.get_header_value("Authorization"), now);
    if (!who) {
      res.set_header("WWW-Authenticate", R"(Bearer realm="gpubank", error="invalid_token")");
      send_error(res, 401, "Authorization", "auth.invalid-token",
                 "the bearer token is not valid (unknown, revoked, expired or malformed)");
      return std::nullopt;
    }
  } else if (const std::string id = cookie_value(req, auth::kSessionCookie); !id.empty()) {
    auto session = gate->by_session(id, now);
    if (!session) {
      send_error(res, 401, "Cookie", "auth.session-ended",
                 "the session has ended (signed out, expired, its token revoked, or the server restarted): sign in again");
      return std::nullopt;
    }
    if (is_write(req) && !auth::Gate::csrf_matches(*session, req.get_header_value("X-CSRF-Token"))) {
      send_error(res, 403, "X-CSRF-Token", "auth.csrf",
                 "a write from a browser session needs the session's token in the X-CSRF-Token header");
      return std::nullopt;
    }
    who = session->principal;
  } else {
    res.set_header("WWW-Authenticate", R"(Bearer realm="gpubank")");
    send_error(res, 401, "", "auth.unauthenticated",
               "sign in: send \"Authorization: Bearer <token>\" (gpubank token create) or open a session");
    return std::nullopt;
  }
  if (const auto wait = gate->throttle(who->token_id, now)) {
    res.set_header("Retry-After", std::to_string(static_cast<long long>(std::ceil(*wait))));
    send_error(res, 429, "", "auth.rate-limited", "too many requests for this token: retry after the Retry-After seconds");
    return std::nullopt;
  }
  if (!allowed(who->role, need)) {
    send_error(res, 403, "", "auth.forbidden",
               "role " + std::string(auth::role_name(who->role)) + " may not " + req.method + " " + req.path.substr(0, 200) +
                   ": it needs " + std::string(need_name(need)) + " access (" + roles_allowed(need) + ")");
    return std::nullopt;
  }
  if (record && is_write(req)) {
    if (auto recorded = gate->record_write(*who, req.method, req.path, req.body, now); !recorded) {
      send_error(res, 503, "", "audit.unavailable", "the write was not carried out: its audit record failed: " + recorded.error());
      return std::nullopt;
    }
  }
  return who;
}

httplib::Server::Handler guard(const Door* door, Need need, Guarded handler, bool audited) {
  return [door, need, audited, handler = std::move(handler)](const httplib::Request& req, httplib::Response& res) {
    if (req.body.size() > body_limit(req.path)) {
      return send_error(res, 413, "", "request.too-large",
                        "the body is over " + std::to_string(body_limit(req.path)) + " bytes");
    }
    const auto who = admit(door, need, req, res, audited);
    if (who) handler(req, res, *who);
  };
}

// 403 naming the group when a scoped principal asks for another group's details.
bool other_group(httplib::Response& res, const auth::Principal& who, const std::string& group, const char* what) {
  const auto scope = scope_of(who);
  if (!scope || *scope == group) return false;
  send_error(res, 403, "businessGroup", "auth.other-group",
             std::string(auth::role_name(who.role)) + " of " + *scope + " may not read " + what + " of " +
                 escape_text(group.substr(0, 63)));
  return true;
}


void harden(httplib::Server& svr) {
  // Bodies: 4 KiB, a policy document's routes 64 KiB (and a little for its JSON wrapping).
  // The declared length is checked before the body is read; a chunked body is counted as
  // it arrives up to the larger limit and checked against its route's by guard().
  svr.set_payload_max_length(kMaxDocumentBody);
  svr.set_pre_routing_handler([](const httplib::Request& req, httplib::Response& res) {
    const std::size_t limit = body_limit(req.path);
    if (req.has_header("Content-Length")) {
      const std::string length = req.get_header_value("Content-Length");
      const bool digits = !length.empty() && length.size() <= 18 &&
                          std::all_of(length.begin(), length.end(), [](char c) { return c >= '0' && c <= '9'; });
      if (digits && std::stoull(length) > limit) {
        send_error(res, 413, "", "request.too-large", "the body is over " + std::to_string(limit) + " bytes");
        return httplib::Server::HandlerResponse::Handled;
      }
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  svr.set_tcp_nodelay(true);
  svr.set_read_timeout(10, 0);
  svr.set_write_timeout(10, 0);
  // On every answer: scripts and styles from this origin only (the portal has no inline
  // script), never framed, never sniffed, never cached, no referrer.
  svr.set_default_headers({
      {"Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                                  "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"},
      {"X-Content-Type-Options", "nosniff"},
      {"X-Frame-Options", "DENY"},
      {"Referrer-Policy", "no-referrer"},
      {"Cache-Control", "no-store"},
      {"Cross-Origin-Opener-Policy", "same-origin"},
      {"Cross-Origin-Resource-Policy", "same-origin"},
  });
}

std::optional<DecisionBody> read_decision(const httplib::Request& req, httplib::Response& res, const auth::Principal& who) {
  if (who.role != auth::Role::PlatformAdmin && who.role != auth::Role::GroupAdmin) {
    send_error(res, 403, "", "governance.decision-forbidden",
               "role " + std::string(auth::role_name(who.role)) +
                   " may not decide on a reclaim: a platform-admin, or a group-admin of the alert's group, decides");
    return std::nullopt;
  }
  const auto body = nlohmann::json::parse(req.body, nullptr, false);
  if (body.is_discarded() || !body.is_object()) {
    send_error(res, 400, "", "request.invalid-json", "the body must be a JSON object");
    return std::nullopt;
  }
  for (const auto& [key, value] : body.items()) {
    if (key != "decision" && key != "reason" && key != "downgradeTo") {
      send_error(res, 400, key, "request.unknown-field", "unknown field \"" + key.substr(0, 64) + "\"; known: decision, reason, downgradeTo");
      return std::nullopt;
    }
  }
  if (!body.contains("decision") || !body["decision"].is_string() ||
      (body["decision"] != "approve" && body["decision"] != "reject")) {
    send_error(res, 400, "decision", "request.out-of-range", "decision must be \"approve\" or \"reject\"");
    return std::nullopt;
  }
  DecisionBody out;
  out.approve = body["decision"] == "approve";
  if (body.contains("reason")) {
    if (!body["reason"].is_string() || body["reason"].get<std::string>().size() > governance::kMaxDecisionReasonLength) {
      send_error(res, 400, "reason", "request.out-of-range",
                 "reason must be a string of at most " + std::to_string(governance::kMaxDecisionReasonLength) + " bytes");
      return std::nullopt;
    }
    out.reason = body["reason"].get<std::string>();
  }
  if (body.contains("downgradeTo")) {
    if (!body["downgradeTo"].is_string() || body["downgradeTo"].get<std::string>().empty() ||
        body["downgradeTo"].get<std::string>().size() > 253) {
      send_error(res, 400, "downgradeTo", "request.out-of-range", "downgradeTo must be a WorkloadPriorityClass name of 1 to 253 bytes");
      return std::nullopt;
    }
    if (!out.approve) {
      send_error(res, 400, "downgradeTo", "request.out-of-range", "downgradeTo goes only with decision approve");
      return std::nullopt;
    }
    out.downgrade_to = body["downgradeTo"].get<std::string>();
  }
  return out;
}

void send_decision_error(httplib::Response& res, const std::string& e) {
  // "downgradeTo: governance.downgrade-<rule>: ..." (governance/reclaim_approval.cpp): the
  // class is refused, a field error.
  constexpr std::string_view kField = "downgradeTo: ";
  if (e.rfind(kField, 0) == 0) {
    const std::string rest = e.substr(kField.size());
    const auto colon = rest.find(": ");
    return send_error(res, 422, "downgradeTo", colon == std::string::npos ? "governance.downgrade" : rest.substr(0, colon),
                      colon == std::string::npos ? rest : rest.substr(colon + 2));
  }
  send_error(res, 409, "", "api.conflict", e);
}

Expected<int> bind_server(httplib::Server& svr, const std::string& address, int port) {
  if (port == 0) {
    const int any = svr.bind_to_any_port(address);
    if (any < 0) return Unexpected{"cannot bind " + address + " to any port"};
    return any;
  }
  if (!svr.bind_to_port(address, port)) {
    return Unexpected{"cannot bind " + address + ":" + std::to_string(port) + " (in use?)"};
  }
  return port;
}

}  // namespace gpubank::api::http
