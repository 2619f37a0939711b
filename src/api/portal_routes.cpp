// The portal's routes of the platform server: browser sessions, the portal's page and
// assets, the policies in force and self-service changes with their impact preview.
#include <httplib.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>

#include "api/portal_routes.hpp"
#include "api/platform_server.hpp"
#include "core/timestamp.hpp"
#include "document/yaml_writer.hpp"
#include "policy/decode.hpp"
#include "portal/assets.hpp"
#include "proposals/proposals.hpp"
#include "twin/live/resume.hpp"
#include "twin/preview/preview.hpp"

namespace gpubank::api::http {

// Browser sessions (auth/gate.hpp): a token traded once for an HttpOnly, SameSite=Strict
// cookie and a CSRF token. No Secure flag: `up` serves plain HTTP on loopback; behind a
// TLS proxy the proxy adds it.
void install_session_routes(httplib::Server& svr, auth::Gate* gate, const Door* door, Json server) {
  auto session_json = [server](const auth::Principal& who, const std::string& csrf, std::int64_t expires_ms) {
    Json j = Json::object();
    j["subject"] = who.subject;
    j["role"] = auth::role_name(who.role);
    if (!who.group.empty()) j["group"] = who.group;
    if (!csrf.empty()) j["csrfToken"] = csrf;
    if (expires_ms > 0) j["expiresAt"] = format_rfc3339(Timestamp(std::chrono::milliseconds(expires_ms)));
    j["server"] = server;
    return j;
  };
  svr.Post("/api/v1/session", [gate, session_json](const httplib::Request& req, httplib::Response& res) {
    if (gate == nullptr) return send_error(res, 401, "", "auth.unauthenticated", "this server has no token store");
    const std::int64_t now = wall_ms();
    // Sign-in attempts per client address: a bound on the work, not on guessing (a token
    // has 256 bits of secret).
    if (const auto wait = gate->throttle("addr:" + req.remote_addr, now)) {
      res.set_header("Retry-After", std::to_string(static_cast<long long>(std::ceil(*wait))));
      return send_error(res, 429, "", "auth.rate-limited", "too many sign-in attempts from this address");
    }
    if (req.body.size() > kMaxBody) return send_error(res, 413, "", "request.too-large", "the body is over 4096 bytes");
    const auto body = nlohmann::json::parse(req.body, nullptr, false);
    if (body.is_discarded() || !body.is_object()) {
      return send_error(res, 400, "", "request.invalid-json", "the body must be a JSON object {\"token\": \"gpb_...\"}");
    }
    for (const auto& [key, value] : body.items()) {
      if (key != "token") {
        return send_error(res, 400, key, "request.unknown-field", "unknown field \"" + key.substr(0, 64) + "\"; known: token");
      }
    }
    if (!body.contains("token") || !body["token"].is_string()) {
      return send_error(res, 400, "token", "request.required", "token (a string, from gpubank token create) is required");
    }
    auto session = gate->open_session(body["token"].get<std::string>(), now);
    if (!session) return send_error(res, 401, "token", "auth.invalid-token", session.error());
    if (auto recorded = gate->record_write(session->principal, "POST", req.path, "", now); !recorded) {
      gate->close_session(session->id);
      return send_error(res, 503, "", "audit.unavailable", "the sign-in was not recorded: " + recorded.error());
    }
    const std::int64_t max_age = std::max<std::int64_t>(1, (session->expires_ms - now) / 1000);
    res.set_header("Set-Cookie", std::string(auth::kSessionCookie) + "=" + session->id +
                                     "; Path=/; HttpOnly; SameSite=Strict; Max-Age=" + std::to_string(max_age));
    send_json(res, session_json(session->principal, session->csrf, session->expires_ms));
  });
  svr.Get("/api/v1/session", [gate, door, session_json](const httplib::Request& req, httplib::Response& res) {
    if (auto e = check_known(req.params, {})) return send_error(res, 400, e->field, e->rule, e->message);
    const std::string id = cookie_value(req, auth::kSessionCookie);
    if (gate != nullptr && !req.has_header("Authorization") && !id.empty()) {
      const auto session = gate->by_session(id, wall_ms());
      if (!session) return send_error(res, 401, "Cookie", "auth.session-ended", "the session has ended: sign in again");
      return send_json(res, session_json(session->principal, session->csrf, session->expires_ms));
    }
    const auto who = admit(door, Need::Read, req, res);
    if (who) send_json(res, session_json(*who, "", 0));
  });
  svr.Delete("/api/v1/session", [gate, door](const httplib::Request& req, httplib::Response& res) {
    const auto who = admit(door, Need::Read, req, res);
    if (!who) return;
    gate->close_session(cookie_value(req, auth::kSessionCookie));
    res.set_header("Set-Cookie", std::string(auth::kSessionCookie) + "=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0");
    res.status = 204;
  });
}

// The portal: its page at / and its assets at /portal/..., built into the binary
// (portal/assets.hpp). They hold no data: every figure comes from the API, after sign-in.
void install_portal_routes(httplib::Server& svr, std::string portal_dir) {
  const std::string dir = std::move(portal_dir);
  auto serve = [dir](const std::string& path, httplib::Response& res) {
    if (!dir.empty()) {
      // Development: the files of --portal-dir, read at each request. Only names made of
      // [A-Za-z0-9_-] segments with a known extension: no "..", no hidden files, no links.
      if (const auto type = portal::content_type_of(path); type && portal::plain_asset_name(path)) {
        const int fd = ::open((dir + "/" + path).c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd >= 0) {
          std::string body;
          char buf[16384];
          for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0 && body.size() < (4u << 20);) body.append(buf, static_cast<std::size_t>(n));
          ::close(fd);
          return res.set_content(body, std::string(*type));
        }
      }
      return send_error(res, 404, "", "api.not-found", "no such path: " + path.substr(0, 200));
    }
    const auto asset = portal::find_asset(path);
    if (!asset) return send_error(res, 404, "", "api.not-found", "no such path: " + path.substr(0, 200));
    res.set_content(std::string(asset->body), std::string(asset->content_type));
  };
  svr.Get("/", [serve](const httplib::Request&, httplib::Response& res) { serve("index.html", res); });
  svr.Get(R"(/portal/([A-Za-z0-9_./-]{1,200}))", [serve](const httplib::Request& req, httplib::Response& res) {
    const std::string path = req.matches[1];
    // Assets are looked up by name in a table, never on disk: ".." finds nothing.
    serve(path, res);
  });
}

namespace {

// A JSON object body with only `known` fields, each a string of at most `max` bytes
// (or, for "hours", an integer); the error is sent and false returned otherwise.
bool read_body(const httplib::Request& req, httplib::Response& res, std::initializer_list<std::string_view> known,
               nlohmann::json& out) {
  out = nlohmann::json::parse(req.body.empty() ? std::string("{}") : req.body, nullptr, false);
  if (out.is_discarded() || !out.is_object()) {
    send_error(res, 400, "", "request.invalid-json", "the body must be a JSON object");
    return false;
  }
  for (const auto& [key, value] : out.items()) {
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      std::string list;
      for (auto k : known) list += (list.empty() ? "" : ", ") + std::string(k);
      send_error(res, 400, key, "request.unknown-field", "unknown field \"" + key.substr(0, 64) + "\"; known: " + list);
      return false;
    }
    if (key == "hours") {
      if (!value.is_number_integer()) {
        send_error(res, 400, key, "request.wrong-type", "hours must be an integer");
        return false;
      }
    } else if (!value.is_string()) {
      send_error(res, 400, key, "request.wrong-type", key + " must be a string");
      return false;
    }
  }
  return true;
}

// A refused proposal or preview: the first error as every error answer carries it
// ("error", "field", "rule"), then every finding.
Json refusal_json(const Diagnostics& findings) {
  Json out = Json::object();
  for (const Diagnostic& d : findings) {
    if (d.severity != Severity::Error) continue;
    out["error"] = (d.kind.empty() ? std::string() : d.kind + "/" + d.name + ": ") + d.message;
    if (!d.path.empty()) out["field"] = d.path;
    out["rule"] = d.rule;
    break;
  }
  out["refused"] = true;
  Json list = Json::array();
  for (const Diagnostic& d : findings) list.push_back(proposals::to_json(d));
  out["findings"] = std::move(list);
  return out;
}

Json findings_json(const Diagnostics& findings) {
  Json out = Json::array();
  for (const Diagnostic& d : findings) out.push_back(proposals::to_json(d));
  return out;
}

// Whether `who` may see the proposal: its group's, or every one for finops and platform-admin.
bool may_see(const auth::Principal& who, const proposals::Proposal& p) {
  const auto scope = scope_of(who);
  return !scope || *scope == p.business_group || *scope == p.author_group;
}

}  // namespace

// The policies in force and self-service changes (proposals/proposals.hpp), with the
// impact preview (twin/preview) of a change before it is proposed.
void install_policy_routes(httplib::Server& svr, const Door* door, proposals::Desk* desk, PolicyHost host) {
  const Door* gate = door;
  auto no_desk = [](httplib::Response& res) {
    send_error(res, 404, "", "proposals.off", "this server takes no policy changes");
  };
  auto h = std::make_shared<PolicyHost>(std::move(host));
  auto refresh = [h, desk] {
    if (h->refresh && desk != nullptr) h->refresh(*desk);
  };
  svr.Get("/api/v1/policies", guard(gate, Need::Read, [desk, no_desk, h, refresh](const httplib::Request& req, httplib::Response& res, const auth::Principal&) {
    if (auto e = check_known(req.params, {})) return send_error(res, 400, e->field, e->rule, e->message);
    if (desk == nullptr) return no_desk(res);
    refresh();
    auto view = desk->view();
    if (!view) return send_error(res, 500, "", "proposals.store", view.error());
    Json out = Json::object();
    out["version"] = view->version;
    if (h->running_version) {
      if (auto running = h->running_version()) out["runningVersion"] = *running;
    }
    Json items = Json::array();
    for (const policy::PolicyObject& o : view->in_force.policies()) {
      items.push_back(Json::parse(policy::encode_policy(o).dump()));
    }
    out["items"] = std::move(items);
    send_json(res, out);
  }));
  svr.Get(R"(/api/v1/policies/([A-Za-z]{1,40})/([a-z0-9-]{1,63}))", guard(gate, Need::Read, [desk, no_desk, refresh](const httplib::Request& req, httplib::Response& res, const auth::Principal&) {
    if (auto e = check_known(req.params, {})) return send_error(res, 400, e->field, e->rule, e->message);
    if (desk == nullptr) return no_desk(res);
    refresh();
    const auto kind = policy::kind_from_name(std::string(req.matches[1]));
    if (!kind) return send_error(res, 404, "", "api.not-found", "no policy kind " + std::string(req.matches[1]));
    auto view = desk->view();
    if (!view) return send_error(res, 500, "", "proposals.store", view.error());
    const policy::PolicyObject* o = view->in_force.find(*kind, std::string(req.matches[2]));
    if (o == nullptr) return send_error(res, 404, "", "api.not-found", "no " + std::string(req.matches[1]) + "/" + std::string(req.matches[2]));
    Json out = Json::object();
    out["version"] = view->version;
    const Json object = Json::parse(policy::encode_policy(*o).dump());
    out["object"] = object;
    out["yaml"] = doc::to_yaml(object);
    send_json(res, out);
  }));

  // The impact preview: the policies in force against them with the proposed document, on
  // the work the host gives for `hours` (the platform's day, or the cluster's recorded
  // work). It changes nothing, so it is not audited; one runs at a time.
  svr.Post("/api/v1/proposals/preview", guard(gate, Need::Read, [h, desk, no_desk, refresh](const httplib::Request& req, httplib::Response& res, const auth::Principal& who) {
    if (desk == nullptr) return no_desk(res);
    nlohmann::json body;
    if (!read_body(req, res, {"document", "hours"}, body)) return;
    if (!body.contains("document")) return send_error(res, 400, "document", "request.required", "document (the proposed policy, YAML) is required");
    const std::optional<PreviewRange> range = h->preview_range ? h->preview_range() : std::nullopt;
    if (!range) return send_error(res, 404, "", "preview.off", h->preview_off.empty() ? "this server runs no impact preview" : h->preview_off);
    refresh();
    const std::int64_t hours = body.value("hours", range->default_hours);
    if (hours < 1 || hours > range->max_hours) {
      return send_error(res, 400, "hours", "request.out-of-range",
                        "hours must be from 1 to " + std::to_string(range->max_hours) + " (" + range->what + ")");
    }
    auto view = desk->view();
    if (!view) return send_error(res, 500, "", "proposals.store", view.error());
    Diagnostics findings;
    auto object = proposals::parse_document(body["document"].get<std::string>(), findings);
    if (object) {
      if (auto refused = proposals::check_authority(who, *object, view->in_force)) findings.push_back(*refused);
    }
    if (!object || has_errors(findings)) {
      const bool forbidden = std::any_of(findings.begin(), findings.end(),
                                         [](const Diagnostic& d) { return d.rule.starts_with("auth."); });
      return send_json(res, refusal_json(findings), forbidden ? 403 : 422);
    }
    bool idle = false;
    if (!h->previewing->compare_exchange_strong(idle, true)) {
      res.set_header("Retry-After", "5");
      return send_error(res, 429, "", "preview.busy", "another impact preview is running; try again in a few seconds");
    }
    auto work = h->preview_work(hours, view->in_force);
    if (!work) {
      *h->previewing = false;
      return send_error(res, 503, "", "preview.no-work", work.error());
    }
    auto preview = twin::preview::run_preview(view->in_force, proposals::with_change(view->in_force, *object), *work);
    *h->previewing = false;
    if (!preview) return send_error(res, 422, "", "preview.failed", preview.error());
    Json out = twin::preview::to_json(*preview);
    const policy::PolicyObject* current = view->in_force.find(object->kind, object->name());
    const auto need = proposals::approval_need(who, current, *object);
    out["needsApproval"] = need.needed;
    out["approvalReason"] = need.reason;
    send_json(res, out, preview->refused ? 422 : 200);
  }, /*audited=*/false));

  svr.Get("/api/v1/proposals", guard(gate, Need::Read, [desk, no_desk](const httplib::Request& req, httplib::Response& res, const auth::Principal& who) {
    if (auto e = check_known(req.params, {"state"})) return send_error(res, 400, e->field, e->rule, e->message);
    if (desk == nullptr) return no_desk(res);
    const std::string state = param(req.params, "state");
    if (!state.empty() && state != "Pending" && state != "Applied" && state != "Rejected") {
      return send_error(res, 400, "state", "query.invalid-enum", "state must be one of Pending, Applied, Rejected");
    }
    auto view = desk->view();
    if (!view) return send_error(res, 500, "", "proposals.store", view.error());
    Json items = Json::array();
    for (auto it = view->proposals.rbegin(); it != view->proposals.rend(); ++it) {
      if (!may_see(who, *it)) continue;
      if (!state.empty() && proposals::state_name(it->state) != state) continue;
      items.push_back(proposals::to_json(*it));
    }
    send_json(res, Json{{"version", view->version}, {"items", std::move(items)}});
  }));
  svr.Get(R"(/api/v1/proposals/([0-9a-f]{16}))", guard(gate, Need::Read, [desk, no_desk](const httplib::Request& req, httplib::Response& res, const auth::Principal& who) {
    if (auto e = check_known(req.params, {})) return send_error(res, 400, e->field, e->rule, e->message);
    if (desk == nullptr) return no_desk(res);
    auto view = desk->view();
    if (!view) return send_error(res, 500, "", "proposals.store", view.error());
    for (const auto& p : view->proposals) {
      if (p.id != std::string(req.matches[1])) continue;
      if (!may_see(who, p)) return send_error(res, 403, "", "auth.other-group", "the proposal is another group's");
      return send_json(res, proposals::to_json(p));
    }
    send_error(res, 404, "", "api.not-found", "no proposal " + std::string(req.matches[1]));
  }));
  auto take_effect = [h](const proposals::Proposal& p, const auth::Principal& who, Json& out) {
    if (h->take_effect) out[h->effect_field] = h->take_effect(p, who);
  };
  svr.Post("/api/v1/proposals", guard(gate, Need::Read, [desk, no_desk, take_effect, refresh](const httplib::Request& req, httplib::Response& res, const auth::Principal& who) {
    if (desk == nullptr) return no_desk(res);
    refresh();
    nlohmann::json body;
    if (!read_body(req, res, {"document", "comment"}, body)) return;
    if (!body.contains("document")) return send_error(res, 400, "document", "request.required", "document (the proposed policy, YAML) is required");
    auto submitted = desk->submit(who, body["document"].get<std::string>(), body.value("comment", ""), wall_ms());
    if (!submitted) return send_error(res, 503, "", "proposals.store", submitted.error());
    if (has_errors(submitted->findings)) {
      const Json out = refusal_json(submitted->findings);
      const bool forbidden = std::any_of(submitted->findings.begin(), submitted->findings.end(),
                                         [](const Diagnostic& d) { return d.rule.starts_with("auth."); });
      return send_json(res, out, forbidden ? 403 : 422);
    }
    Json out = proposals::to_json(submitted->proposal);
    out["findings"] = findings_json(submitted->findings);
    if (submitted->proposal.state == proposals::State::Applied) take_effect(submitted->proposal, who, out);
    send_json(res, out, 201);
  }));
  svr.Post(R"(/api/v1/proposals/([0-9a-f]{16})/(approve|reject))", guard(gate, Need::Operate, [desk, no_desk, take_effect, refresh](const httplib::Request& req, httplib::Response& res, const auth::Principal& who) {
    if (desk == nullptr) return no_desk(res);
    refresh();
    nlohmann::json body;
    if (!read_body(req, res, {"comment"}, body)) return;
    auto decided = desk->decide(who, std::string(req.matches[1]), req.matches[2] == "approve", body.value("comment", ""), wall_ms());
    if (!decided) {
      const std::string& e = decided.error();
      const std::string rule = e.substr(0, e.find(':'));
      const int status = rule == "proposal.unknown" ? 404 : rule.starts_with("auth.") ? 403 : rule.starts_with("proposal.") ? 409 : 503;
      return send_error(res, status, "", status == 503 ? "proposals.store" : rule, e);
    }
    Json out = proposals::to_json(*decided);
    if (decided->state == proposals::State::Applied) take_effect(*decided, who, out);
    send_json(res, out);
  }));
}

}  // namespace gpubank::api::http

namespace gpubank::api {

using http::Json;

// The twin's host: a change in force goes into the running day too (journalled as an
// intervention): {"applied": true} or {"applied": false, "reason": why it waits for the next
// start}; a preview replays the platform's day.
void PlatformServer::install_policy_routes() {
  http::PolicyHost host;
  host.running_version = [this]() -> std::optional<std::string> {
    std::lock_guard lock(mu_);
    return twin::live::policy_version(platform_->policies());
  };
  host.effect_field = "running";
  host.take_effect = [this](const proposals::Proposal& p, const auth::Principal& who) {
    std::lock_guard lock(mu_);
    auto done = platform_->apply_policy_change(p.id, p.document, "api:" + who.subject);
    Json j{{"applied", static_cast<bool>(done)}};
    if (!done) j["reason"] = done.error();
    advance_locked(platform_->now());
    return j;
  };
  host.preview_range = [this]() -> std::optional<http::PreviewRange> {
    std::lock_guard lock(mu_);
    const std::int64_t hours = platform_->day().hours;
    return http::PreviewRange{std::min<std::int64_t>(24, hours), hours, "the day's hours"};
  };
  // The platform's day (its seed, start and serving load), its first `hours`.
  host.preview_work = [this](std::int64_t hours, const policy::PolicySet&) -> Expected<twin::preview::Work> {
    twin::preview::Work work;
    {
      std::lock_guard lock(mu_);
      work.day = platform_->day();
    }
    work.day.hours = hours;
    work.day.governance = false;
    work.day.serving_model = twin::live::DayOptions::ServingModel::Fluid;  // days in seconds (twin/inference/fluid.hpp)
    work.inventory = options_.inventory;
    return work;
  };
  http::install_policy_routes(*server_, door_.get(), options_.desk.get(), std::move(host));
}

}  // namespace gpubank::api
