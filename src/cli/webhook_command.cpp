#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include <csignal>
#include <iostream>
#include <thread>

#include "api/webhook_server.hpp"
#include "cli/command.hpp"

namespace gpubank::cli {
namespace {

struct WebhookCommandOptions {
  api::WebhookOptions server;
  std::string log_level = "info";
};

int run_webhook(const WebhookCommandOptions& opt) {
  spdlog::set_level(spdlog::level::from_str(opt.log_level));
  // Signals go to one thread that waits for them: SIGHUP reloads policies, SIGINT and
  // SIGTERM stop the server gracefully. Blocked here so every server thread inherits it.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGHUP);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  auto server = api::WebhookServer::create(opt.server);
  if (!server) {
    std::cerr << "gpubank webhook: " << server.error() << '\n';
    return 1;
  }
  auto port = (*server)->bind();
  if (!port) {
    std::cerr << "gpubank webhook: " << port.error() << '\n';
    return 1;
  }
  spdlog::info("serving https://{}:{}/validate (audit log {})", opt.server.address, *port, opt.server.audit_log);

  api::WebhookServer* srv = server->get();
  std::thread signal_thread([srv, signals] {
    while (true) {
      int sig = 0;
      if (sigwait(&signals, &sig) != 0) continue;
      if (sig == SIGHUP) {
        std::vector<std::string> notes;
        auto reloaded = srv->reload(notes);
        for (const auto& n : notes) spdlog::warn("policy: {}", n);
        if (reloaded) {
          spdlog::info("policies reloaded");
        } else {
          spdlog::error("reload failed, keeping the previous policies: {}", reloaded.error());
        }
        continue;
      }
      spdlog::info("signal {}: shutting down", sig);
      srv->stop();
      return;
    }
  });
  const bool ok = srv->serve();
  // serve() returns on stop(); make sure the signal thread ends if the server failed.
  if (signal_thread.joinable()) {
    if (!ok) pthread_kill(signal_thread.native_handle(), SIGTERM);
    signal_thread.join();
  }
  return ok ? 0 : 1;
}

}  // namespace

Command add_webhook_command(CLI::App& app) {
  auto opt = std::make_shared<WebhookCommandOptions>();
  CLI::App* cmd = app.add_subcommand(
      "webhook",
      "Serve the validating admission webhook over HTTPS: POST /validate (admission.k8s.io/v1 AdmissionReview), "
      "GET /healthz and /readyz. SIGHUP reloads the policies.");
  auto& s = opt->server;
  cmd->add_option("--tls-cert", s.tls_cert, "PEM certificate (chain) the server presents")->required();
  cmd->add_option("--tls-key", s.tls_key, "PEM private key of the certificate")->required();
  cmd->add_option("--guardrails", s.guardrails, "file with the PlatformGuardrails")->required();
  cmd->add_option("--policies", s.policies, "files or directories with the policies in force (repeatable)");
  cmd->add_option("--address", s.address, "address to listen on")->capture_default_str();
  cmd->add_option("--port", s.port, "port to listen on (0: any free port)")->check(CLI::Range(0, 65535))->capture_default_str();
  cmd->add_option("--audit-log", s.audit_log, "JSON-lines file every decision is appended to")->capture_default_str();
  cmd->add_option("--threads", s.threads, "worker threads (one per open connection)")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  cmd->add_option("--log-level", opt->log_level, "trace, debug, info, warn, error")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error"}))
      ->capture_default_str();
  return {cmd, [opt] { return run_webhook(*opt); }};
}

}  // namespace gpubank::cli
