// The admission webhook's HTTPS server: POST /validate and POST /mutate (AdmissionReview),
// GET /healthz, /readyz and /metrics. Decisions come from review() and review_mutation()
// (admission.hpp); every decision is written to the audit log before it is answered, and
// a decision that cannot be recorded is a denial.
//
// Nobody can stop it by talking to it (issue 28): bodies are bounded however they are
// framed, every request has one deadline from its first byte to its last, connections
// are counted and the ones over the limit are answered 429, and liveness and readiness
// are also served on a plain-HTTP listener of their own that saturation of the main one
// cannot starve. docs/webhook.md explains each limit. Both listeners also serve GET
// /metrics (webhook_metrics.hpp) for Prometheus.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "api/admission.hpp"
#include "api/audit_log.hpp"
#include "core/expected.hpp"

namespace gpubank::api {

// A certificate chain and its private key, loaded from PEM files and checked to match.
class TlsCredentials;
class WebhookMetrics;

struct WebhookOptions {
  std::string address = "0.0.0.0";
  int port = 8443;  // 0: any free port (tests)
  std::string tls_cert;
  std::string tls_key;
  std::string guardrails;             // file with the PlatformGuardrails
  std::vector<std::string> policies;  // files and directories with the other policies
  // The policies come from the cluster (replace_policies, fed by informers) instead of the
  // files: `policies` is ignored, and the guardrails file is used only while the cluster
  // holds no PlatformGuardrails (so the first one can be judged).
  bool cluster_policies = false;
  std::string audit_log = "gpubank-audit.jsonl";
  int threads = 2;          // event-loop threads: accept, TLS, HTTP parsing and writing
  int review_threads = 16;  // decisions and audit appends (these wait for the disk)
  int max_connections = 256;   // served at once; the next ones are answered 429
  double request_timeout = 10;  // seconds from a request's first byte to its last
  double idle_timeout = 120;    // seconds a kept-alive connection may wait between requests
  // Plain-HTTP /healthz and /readyz for the kubelet, and /metrics for Prometheus, apart
  // from the HTTPS listener.
  std::string health_address = "0.0.0.0";
  int health_port = 8081;  // 0: any free port (tests); -1: none
  std::string version = "unknown";  // gpubank_build_info{version}: the api library cannot see the CLI's
};

// The largest body the server reads: the API server's 3 MiB object limit plus the
// AdmissionReview around it. Larger bodies get HTTP 413 and the connection is closed.
inline constexpr std::uint64_t kMaxReadBytes = std::uint64_t{4} << 20;

// What the server has done since it started (for tests, benchmarks and logs).
struct WebhookStats {
  std::int64_t open_connections = 0;  // on the HTTPS listener, refused ones included
  std::int64_t accepted = 0;
  std::int64_t refused = 0;   // answered 429 (over max_connections)
  std::int64_t dropped = 0;   // closed unanswered (over the refusal lane too)
  std::int64_t timed_out = 0;  // closed at a deadline (request, idle or handshake)
  std::int64_t too_large = 0;  // answered 413
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

  // Binds the listening sockets; returns the HTTPS port (useful with port 0).
  Expected<int> bind();
  // The health listener's port after bind(); -1 when there is none.
  [[nodiscard]] int health_port() const;
  // Serves until stop(); returns false if the server failed.
  bool serve();
  void stop();
  // Re-reads guardrails, policies and the TLS certificate and key; what fails to load
  // keeps its previous version (and the error says so).
  Expected<bool> reload(std::vector<std::string>& notes);
  // reload() when any input file changed since the last load (size, time or set of
  // files), e.g. a ConfigMap update or a certificate renewed by cert-manager.
  Expected<bool> reload_if_changed(std::vector<std::string>& notes, bool& reloaded);

  // The cluster's policy set (cluster_policies): validated as the files are (errors in the
  // guardrails are fatal: the previous snapshot stays and the error says why; other
  // findings come back in `notes`), then swapped in for the next request.
  Expected<bool> replace_policies(policy::PolicySet cluster, std::vector<std::string>& notes);
  [[nodiscard]] std::shared_ptr<const PolicySnapshot> snapshot() const;
  [[nodiscard]] WebhookStats stats() const;
  // What GET /metrics serves (text format 0.0.4).
  [[nodiscard]] std::string metrics_text() const;

  // The event loops, listeners and connections (webhook_server.cpp).
  struct Runtime;

 private:
  WebhookServer(WebhookOptions options, std::unique_ptr<AuditLog> audit, std::shared_ptr<const PolicySnapshot> snapshot,
                std::shared_ptr<const TlsCredentials> tls);
  std::string inputs_fingerprint() const;
  std::shared_ptr<const TlsCredentials> tls() const;

  WebhookOptions options_;
  std::unique_ptr<AuditLog> audit_;
  mutable std::mutex snapshot_mu_;
  std::shared_ptr<const PolicySnapshot> snapshot_;
  std::shared_ptr<const TlsCredentials> tls_;  // guarded by snapshot_mu_
  std::string fingerprint_;                    // of the inputs last loaded
  std::atomic<bool> ready_{false};
  std::unique_ptr<WebhookMetrics> metrics_;  // before runtime_: its connections record into it
  std::unique_ptr<Runtime> runtime_;  // last: it is stopped and joined before the rest goes
};

}  // namespace gpubank::api
