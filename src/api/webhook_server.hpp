// The admission webhook's HTTPS server: POST /validate (AdmissionReview), GET /healthz
// and /readyz. Decisions come from review() (admission.hpp); every decision is written to
// the audit log before it is answered, and a decision that cannot be recorded is a denial.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "api/admission.hpp"
#include "api/audit_log.hpp"
#include "core/expected.hpp"

namespace httplib {
class SSLServer;
}

namespace gpubank::api {

// A certificate chain and its private key, loaded from PEM files and checked to match.
class TlsCredentials;

struct WebhookOptions {
  std::string address = "0.0.0.0";
  int port = 8443;  // 0: any free port (tests)
  std::string tls_cert;
  std::string tls_key;
  std::string guardrails;             // file with the PlatformGuardrails
  std::vector<std::string> policies;  // files and directories with the other policies
  std::string audit_log = "gpubank-audit.jsonl";
  int threads = 64;  // one per concurrent connection the API server keeps open
};

// Loads guardrails and policies into a snapshot. Errors in the guardrails are fatal (the
// webhook cannot judge anything without them); findings in other policies are returned
// as warnings in `notes` and those policies stay as they are.
Expected<std::shared_ptr<const PolicySnapshot>> load_snapshot(const WebhookOptions& options,
                                                              std::vector<std::string>& notes);

class WebhookServer {
 public:
  static Expected<std::unique_ptr<WebhookServer>> create(const WebhookOptions& options);
  ~WebhookServer();

  // Binds the listening socket; returns the port (useful with port 0).
  Expected<int> bind();
  // Serves until stop(); returns false if the server failed.
  bool serve();
  void stop();
  // Re-reads guardrails, policies and the TLS certificate and key; what fails to load
  // keeps its previous version (and the error says so).
  Expected<bool> reload(std::vector<std::string>& notes);
  // reload() when any input file changed since the last load (size, time or set of
  // files), e.g. a ConfigMap update or a certificate renewed by cert-manager.
  Expected<bool> reload_if_changed(std::vector<std::string>& notes, bool& reloaded);

  [[nodiscard]] std::shared_ptr<const PolicySnapshot> snapshot() const;

 private:
  WebhookServer(WebhookOptions options, std::unique_ptr<AuditLog> audit, std::shared_ptr<const PolicySnapshot> snapshot,
                std::shared_ptr<const TlsCredentials> tls);
  void install_routes();
  std::string inputs_fingerprint() const;
  std::shared_ptr<const TlsCredentials> tls() const;

  WebhookOptions options_;
  std::unique_ptr<AuditLog> audit_;
  mutable std::mutex snapshot_mu_;
  std::shared_ptr<const PolicySnapshot> snapshot_;
  std::shared_ptr<const TlsCredentials> tls_;  // guarded by snapshot_mu_
  std::string fingerprint_;                    // of the inputs last loaded
  std::unique_ptr<httplib::SSLServer> server_;
  std::atomic<bool> ready_{false};
};

}  // namespace gpubank::api
