#include "api/webhook_server.hpp"

#include <httplib.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <filesystem>

#include "policy/validate.hpp"

namespace gpubank::api {

// The serving certificate (with its chain) and key. Handshakes read the current one
// through OpenSSL's certificate callback, so a renewed certificate is used by every new
// connection as soon as it is loaded, without restarting the server.
class TlsCredentials {
 public:
  static Expected<std::shared_ptr<const TlsCredentials>> load(const std::string& cert_path, const std::string& key_path) {
    auto fail = [&](const std::string& what) -> Expected<std::shared_ptr<const TlsCredentials>> {
      ERR_clear_error();
      return Unexpected{"cannot start TLS with certificate " + cert_path + " and key " + key_path + ": " + what};
    };
    auto creds = std::shared_ptr<TlsCredentials>(new TlsCredentials());
    BIO* cert_bio = BIO_new_file(cert_path.c_str(), "r");
    if (cert_bio == nullptr) return fail("cannot read the certificate file");
    while (X509* x = PEM_read_bio_X509(cert_bio, nullptr, nullptr, nullptr)) creds->chain_.push_back(x);
    BIO_free(cert_bio);
    if (creds->chain_.empty()) return fail("no PEM certificate in the file");
    BIO* key_bio = BIO_new_file(key_path.c_str(), "r");
    if (key_bio == nullptr) return fail("cannot read the key file");
    creds->key_ = PEM_read_bio_PrivateKey(key_bio, nullptr, nullptr, nullptr);
    BIO_free(key_bio);
    if (creds->key_ == nullptr) return fail("no PEM private key in the file");
    if (X509_check_private_key(creds->chain_.front(), creds->key_) != 1) {
      return fail("the key does not belong to the certificate");
    }
    ERR_clear_error();
    return std::shared_ptr<const TlsCredentials>(std::move(creds));
  }

  ~TlsCredentials() {
    for (X509* x : chain_) X509_free(x);
    EVP_PKEY_free(key_);
  }
  TlsCredentials(const TlsCredentials&) = delete;
  TlsCredentials& operator=(const TlsCredentials&) = delete;

  // Puts the certificate, chain and key on one connection.
  bool apply(SSL* ssl) const {
    if (SSL_use_certificate(ssl, chain_.front()) != 1 || SSL_use_PrivateKey(ssl, key_) != 1) return false;
    for (std::size_t i = 1; i < chain_.size(); ++i) {
      if (SSL_add1_chain_cert(ssl, chain_[i]) != 1) return false;
    }
    return true;
  }

 private:
  TlsCredentials() = default;
  std::vector<X509*> chain_;
  EVP_PKEY* key_ = nullptr;
};

namespace {

constexpr std::size_t kMaxReadBytes = std::size_t{16} << 20;  // read, then refuse, up to this size

Timestamp wall_now() { return std::chrono::time_point_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now()); }

// Fixed-width milliseconds, so audit lines sort by time as strings.
std::string audit_time(Timestamp now) {
  return date::format("%FT%TZ", std::chrono::floor<std::chrono::milliseconds>(now));
}

// One audit line; keys in a fixed, readable order.
nlohmann::ordered_json audit_entry(const AdmissionDecision& d, Timestamp now) {
  nlohmann::ordered_json e = {
      {"time", audit_time(now)},
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

// "UPDATE GPUQuotaPolicy research-training-h100 by rita", or what is known of a request
// that could not be read.
std::string describe(const AdmissionDecision& d) {
  if (d.operation.empty()) return "an unreadable request" + (d.uid.empty() ? "" : " (uid " + d.uid + ")");
  std::string kind = d.kind.substr(d.kind.find('/') + 1);
  std::string name = d.namespace_.empty() ? d.name : d.namespace_ + "/" + d.name;
  return d.operation + " " + kind + " " + name + " by " + d.user.username;
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
                             std::shared_ptr<const PolicySnapshot> snapshot, std::shared_ptr<const TlsCredentials> tls)
    : options_(std::move(options)), audit_(std::move(audit)), snapshot_(std::move(snapshot)), tls_(std::move(tls)) {}

WebhookServer::~WebhookServer() { stop(); }

Expected<std::unique_ptr<WebhookServer>> WebhookServer::create(const WebhookOptions& options) {
  std::vector<std::string> notes;
  auto snapshot = load_snapshot(options, notes);
  if (!snapshot) return Unexpected{snapshot.error()};
  for (const auto& n : notes) spdlog::warn("policy: {}", n);
  auto tls = TlsCredentials::load(options.tls_cert, options.tls_key);
  if (!tls) return Unexpected{tls.error()};
  auto audit = AuditLog::open(options.audit_log);
  if (!audit) return Unexpected{audit.error()};
  std::unique_ptr<WebhookServer> server(
      new WebhookServer(options, std::move(*audit), std::move(*snapshot), std::move(*tls)));
  server->fingerprint_ = server->inputs_fingerprint();
  WebhookServer* self = server.get();
  server->server_ = std::make_unique<httplib::SSLServer>([self](SSL_CTX& ctx) {
    SSL_CTX_set_min_proto_version(&ctx, TLS1_2_VERSION);
    SSL_CTX_set_options(&ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_SESSION_RESUMPTION_ON_RENEGOTIATION);
    SSL_CTX_set_cert_cb(
        &ctx,
        [](SSL* ssl, void* arg) -> int {
          const auto creds = static_cast<WebhookServer*>(arg)->tls();
          return creds && creds->apply(ssl) ? 1 : 0;
        },
        self);
    return true;
  });
  if (!server->server_->is_valid()) return Unexpected{"cannot create the TLS context"};
  server->install_routes();
  return server;
}

std::shared_ptr<const TlsCredentials> WebhookServer::tls() const {
  std::lock_guard lock(snapshot_mu_);
  return tls_;
}

// Size and modification time of every input file, in a fixed order.
std::string WebhookServer::inputs_fingerprint() const {
  namespace fs = std::filesystem;
  std::string out;
  auto add = [&](const fs::path& p) {
    std::error_code ec;
    const auto size = fs::file_size(p, ec);
    const auto time = fs::last_write_time(p, ec);
    out += p.string() + ":" + std::to_string(ec ? 0 : size) + ":" +
           std::to_string(ec ? 0 : time.time_since_epoch().count()) + "\n";
  };
  std::vector<std::string> roots{options_.tls_cert, options_.tls_key, options_.guardrails};
  roots.insert(roots.end(), options_.policies.begin(), options_.policies.end());
  for (const auto& root : roots) {
    std::error_code ec;
    if (!fs::is_directory(root, ec)) {
      add(root);
      continue;
    }
    std::vector<fs::path> files;
    for (fs::recursive_directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
      if (it->is_regular_file(ec)) files.push_back(it->path());
    }
    std::sort(files.begin(), files.end());
    for (const auto& f : files) add(f);
  }
  return out;
}

Expected<bool> WebhookServer::reload_if_changed(std::vector<std::string>& notes, bool& reloaded) {
  reloaded = false;
  if (inputs_fingerprint() == fingerprint_) return true;
  reloaded = true;
  return reload(notes);
}

std::shared_ptr<const PolicySnapshot> WebhookServer::snapshot() const {
  std::lock_guard lock(snapshot_mu_);
  return snapshot_;
}

Expected<bool> WebhookServer::reload(std::vector<std::string>& notes) {
  fingerprint_ = inputs_fingerprint();  // a failed load is not retried until files change again
  auto fresh = load_snapshot(options_, notes);
  auto tls = TlsCredentials::load(options_.tls_cert, options_.tls_key);
  {
    std::lock_guard lock(snapshot_mu_);
    if (fresh) snapshot_ = std::move(*fresh);
    if (tls) tls_ = std::move(*tls);
  }
  if (!fresh && !tls) return Unexpected{fresh.error() + "; " + tls.error()};
  if (!fresh) return Unexpected{fresh.error() + " (the TLS certificate was reloaded)"};
  if (!tls) return Unexpected{tls.error() + " (the policies were reloaded)"};
  return true;
}

void WebhookServer::install_routes() {
  auto& svr = *server_;
  const int threads = options_.threads;
  svr.new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<std::size_t>(threads)); };
  svr.set_payload_max_length(kMaxReadBytes);
  // Answers go out in more than one TLS record; without this, Nagle's algorithm and the
  // client's delayed ACK add about 40 ms to every request.
  svr.set_tcp_nodelay(true);
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
    if (!decision.allowed) spdlog::info("denied {}: {}", describe(decision), decision.message);
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
  svr.set_exception_handler([this](const httplib::Request& req, httplib::Response& res, std::exception_ptr ep) {
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
    if (req.path == "/validate") {
      // Still audited: a request that got no decision is a denial like any other.
      if (auto written = audit_->append(audit_entry(d, wall_now())); !written) {
        spdlog::error("{}", written.error());
      }
    }
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
