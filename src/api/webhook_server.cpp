#include "api/webhook_server.hpp"

#include <httplib.h>
#include <spdlog/spdlog.h>

#include <chrono>

#include "policy/validate.hpp"

namespace gpubank::api {
namespace {

constexpr std::size_t kMaxReadBytes = std::size_t{16} << 20;  // read, then refuse, up to this size

Timestamp wall_now() { return std::chrono::time_point_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now()); }

nlohmann::json audit_entry(const AdmissionDecision& d, Timestamp now) {
  nlohmann::json e = {
      {"time", format_rfc3339(now)},
      {"uid", d.uid},
      {"operation", d.operation},
      {"kind", d.kind},
      {"namespace", d.namespace_},
      {"name", d.name},
      {"user", d.user.username},
      {"groups", d.user.groups},
      {"dryRun", d.dry_run},
      {"allowed", d.allowed},
      {"code", d.code},
      {"rules", d.rules},
  };
  if (!d.sub_resource.empty()) e["subResource"] = d.sub_resource;
  if (!d.message.empty()) e["message"] = d.message;
  if (!d.warnings.empty()) e["warnings"] = d.warnings;
  return e;
}

}  // namespace

Expected<std::shared_ptr<const PolicySnapshot>> load_snapshot(const WebhookOptions& options,
                                                              std::vector<std::string>& notes) {
  std::vector<std::string> paths{options.guardrails};
  paths.insert(paths.end(), options.policies.begin(), options.policies.end());
  policy::PolicySet set = policy::load_policy_set(paths);
  const Diagnostics findings = policy::check_all(set);
  std::string fatal;
  for (const auto& f : findings) {
    const bool in_guardrails = f.file == options.guardrails || f.kind == "PlatformGuardrails" ||
                               f.rule == "guardrails.missing";
    if (f.severity == Severity::Error && in_guardrails) {
      fatal += "\n  " + f.to_string();
    } else {
      notes.push_back(f.to_string());
    }
  }
  if (!fatal.empty()) return Unexpected{"the guardrails cannot be used:" + fatal};
  if (set.guardrails() == nullptr) return Unexpected{options.guardrails + " holds no PlatformGuardrails"};
  return std::make_shared<const PolicySnapshot>(std::move(set));
}

WebhookServer::WebhookServer(WebhookOptions options, std::unique_ptr<AuditLog> audit,
                             std::shared_ptr<const PolicySnapshot> snapshot)
    : options_(std::move(options)), audit_(std::move(audit)), snapshot_(std::move(snapshot)) {}

WebhookServer::~WebhookServer() { stop(); }

Expected<std::unique_ptr<WebhookServer>> WebhookServer::create(const WebhookOptions& options) {
  std::vector<std::string> notes;
  auto snapshot = load_snapshot(options, notes);
  if (!snapshot) return Unexpected{snapshot.error()};
  for (const auto& n : notes) spdlog::warn("policy: {}", n);
  auto audit = AuditLog::open(options.audit_log);
  if (!audit) return Unexpected{audit.error()};
  std::unique_ptr<WebhookServer> server(new WebhookServer(options, std::move(*audit), std::move(*snapshot)));
  server->server_ = std::make_unique<httplib::SSLServer>(options.tls_cert.c_str(), options.tls_key.c_str());
  if (!server->server_->is_valid()) {
    return Unexpected{"cannot start TLS with certificate " + options.tls_cert + " and key " + options.tls_key +
                      " (missing, unreadable or not a matching PEM pair)"};
  }
  server->install_routes();
  return server;
}

std::shared_ptr<const PolicySnapshot> WebhookServer::snapshot() const {
  std::lock_guard lock(snapshot_mu_);
  return snapshot_;
}

Expected<bool> WebhookServer::reload(std::vector<std::string>& notes) {
  auto fresh = load_snapshot(options_, notes);
  if (!fresh) return Unexpected{fresh.error()};
  std::lock_guard lock(snapshot_mu_);
  snapshot_ = std::move(*fresh);
  return true;
}

void WebhookServer::install_routes() {
  auto& svr = *server_;
  const int threads = options_.threads;
  svr.new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<std::size_t>(threads)); };
  svr.set_payload_max_length(kMaxReadBytes);
  svr.set_keep_alive_max_count(100000);
  svr.set_keep_alive_timeout(60);
  svr.set_read_timeout(10, 0);
  svr.set_write_timeout(10, 0);

  svr.Get("/healthz", [](const httplib::Request&, httplib::Response& res) { res.set_content("ok\n", "text/plain"); });
  svr.Get("/readyz", [this](const httplib::Request&, httplib::Response& res) {
    if (ready_) {
      res.set_content("ok\n", "text/plain");
    } else {
      res.status = 503;
      res.set_content("not ready\n", "text/plain");
    }
  });
  svr.Post("/validate", [this](const httplib::Request& req, httplib::Response& res) {
    const Timestamp now = wall_now();
    const auto snap = snapshot();
    AdmissionDecision decision = review(*snap, req.body, now);
    if (auto written = audit_->append(audit_entry(decision, now)); !written) {
      // Fail closed: a decision nobody can audit is not made.
      decision.allowed = false;
      decision.code = 500;
      decision.reason = "InternalError";
      decision.message = "gpubank could not record the decision in its audit log (" + written.error() + ")";
      decision.warnings.clear();
      spdlog::error("{}", decision.message);
    }
    if (!decision.allowed) {
      spdlog::info("denied {} {} {}/{} for {}: {}", decision.operation, decision.kind, decision.namespace_,
                   decision.name, decision.user.username, decision.message);
    }
    res.set_content(review_response(decision).dump(), "application/json");
  });
  // Errors httplib answers itself (oversized bodies, unknown paths): still a JSON body,
  // and for /validate an AdmissionReview the API server can read.
  svr.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (req.path == "/validate") {
      AdmissionDecision d;
      d.allowed = false;
      d.code = res.status;
      d.reason = res.status == 413 ? "RequestEntityTooLarge" : "BadRequest";
      d.message = res.status == 413 ? "the AdmissionReview is larger than the webhook reads (16 MiB)"
                                    : "the webhook could not read the request (HTTP " + std::to_string(res.status) + ")";
      res.set_content(review_response(d).dump(), "application/json");
    } else {
      res.set_content(nlohmann::json{{"status", res.status}, {"path", req.path}}.dump(), "application/json");
    }
  });
  svr.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    std::string what = "unknown error";
    try {
      std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    spdlog::error("request failed: {}", what);
    AdmissionDecision d;
    d.code = 500;
    d.reason = "InternalError";
    d.message = "internal error: " + what;
    res.status = 500;
    res.set_content(review_response(d).dump(), "application/json");
  });
}

Expected<int> WebhookServer::bind() {
  int port = options_.port;
  if (port == 0) {
    port = server_->bind_to_any_port(options_.address);
  } else if (!server_->bind_to_port(options_.address, port)) {
    port = -1;
  }
  if (port <= 0) {
    return Unexpected{"cannot listen on " + options_.address + ":" + std::to_string(options_.port)};
  }
  return port;
}

bool WebhookServer::serve() {
  ready_ = true;
  const bool ok = server_->listen_after_bind();
  ready_ = false;
  return ok;
}

void WebhookServer::stop() {
  ready_ = false;
  if (server_) server_->stop();
}

}  // namespace gpubank::api
