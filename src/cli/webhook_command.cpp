#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include <cerrno>
#include <csignal>
#include <ctime>
#include <iostream>
#include <atomic>
#include <thread>

#include "api/webhook_server.hpp"
#include "controller/policy_watch.hpp"
#include "k8s/client_config.hpp"
#include "cli/command.hpp"
#include "cli/validators.hpp"
#include "cli/version.hpp"
#include "core/log_format.hpp"

namespace gpubank::cli {
namespace {

struct WebhookCommandOptions {
  api::WebhookOptions server;
  std::string log_level = "info";
  int reload_interval = 30;  // seconds between checks of the input files; 0: only on SIGHUP
  bool policies_from_cluster = false;
  std::string kubeconfig;
  std::string context;
};

void report_reload(const Expected<bool>& result, const std::vector<std::string>& notes, const char* why) {
  for (const auto& n : notes) spdlog::warn("policy: {}", n);
  if (result) {
    spdlog::info("reloaded policies and TLS certificate ({})", why);
  } else {
    spdlog::error("reload ({}) kept what failed to load: {}", why, result.error());
  }
}

int run_webhook(WebhookCommandOptions opt) {
  opt.server.cluster_policies = opt.policies_from_cluster;
  opt.server.version = kVersion;  // gpubank_build_info on /metrics
  spdlog::set_level(spdlog::level::from_str(opt.log_level));
  // Every line the server logs (and webhook_server.cpp's) escapes the input it quotes.
  spdlog::set_formatter(escaping_log_formatter());
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
  spdlog::info("serving https://{}:{}/validate and /mutate (audit log {})", opt.server.address, *port,
               opt.server.audit_log);
  if (const int health = (*server)->health_port(); health >= 0) {
    spdlog::info("serving http://{}:{}/healthz, /readyz and /metrics", opt.server.health_address, health);
  }

  api::WebhookServer* srv = server->get();
  // --policies-from-cluster: informers on the six gpubank kinds feed every change to the
  // server; it serves only once the cluster's set is in (a webhook judging against the
  // guardrails file alone would let a change break a rule with objects it cannot see).
  std::unique_ptr<controller::PolicyWatch> watch;
  if (opt.policies_from_cluster) {
    k8s::LoadOptions load;
    load.kubeconfig = opt.kubeconfig;
    load.resolve.context = opt.context;
    auto config = k8s::load_client_config(load, k8s::Environment::from_process());
    if (!config) {
      std::cerr << "gpubank webhook: " << config.error() << '\n';
      return 1;
    }
    auto created = controller::PolicyWatch::create(*config, [srv](controller::ClusterPolicies cluster) {
      const std::size_t count = cluster.resources.size();
      std::vector<std::string> notes;
      auto replaced = srv->replace_policies(std::move(cluster.set), notes);
      for (const auto& n : notes) spdlog::warn("policy: {}", n);
      if (replaced) {
        spdlog::info("policies from the cluster: {} resources", count);
      } else {
        spdlog::error("the cluster's policies were not taken (the previous ones stay): {}", replaced.error());
      }
    });
    if (!created) {
      std::cerr << "gpubank webhook: --policies-from-cluster: " << created.error() << '\n';
      return 1;
    }
    watch = std::move(*created);
    if (auto started = watch->start(std::chrono::seconds(60)); !started) {
      std::cerr << "gpubank webhook: --policies-from-cluster: " << started.error() << '\n';
      return 1;
    }
  }
  controller::PolicyWatch* watched = watch.get();
  std::atomic<bool> watch_failed{false};
  const int interval = opt.reload_interval;
  std::thread signal_thread([srv, signals, interval, watched, &watch_failed] {
    while (true) {
      // Wait for a signal; every `interval` seconds look for changed input files (a
      // ConfigMap update, a certificate renewed by cert-manager).
      timespec timeout{interval > 0 ? interval : (watched != nullptr ? 10 : 3600), 0};
      const int sig = sigtimedwait(&signals, nullptr, &timeout);
      if (sig < 0) {
        if (watched != nullptr) {
          if (const auto dead = watched->errors(); !dead.empty()) {
            // Judging against a set that no longer follows the cluster would be wrong
            // silently: stop, and let Kubernetes restart the pod.
            spdlog::error("the cluster's policies are no longer watched: {}", dead.front());
            watch_failed = true;
            srv->stop();
            return;
          }
        }
        if (errno == EAGAIN && interval > 0) {
          std::vector<std::string> notes;
          bool reloaded = false;
          auto result = srv->reload_if_changed(notes, reloaded);
          if (reloaded) report_reload(result, notes, "input files changed");
        }
        continue;
      }
      if (sig == SIGHUP) {
        std::vector<std::string> notes;
        report_reload(srv->reload(notes), notes, "SIGHUP");
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
  if (watch) watch->stop();
  return ok && !watch_failed ? 0 : 1;
}

}  // namespace

Command add_webhook_command(CLI::App& app) {
  auto opt = std::make_shared<WebhookCommandOptions>();
  CLI::App* cmd = app.add_subcommand(
      "webhook",
      "Serve the validating admission webhook over HTTPS: POST /validate (admission.k8s.io/v1 AdmissionReview), "
      "and the mutating one: POST /mutate (the default priority class of protected workloads, as a JSON Patch); "
      "GET /healthz, /readyz and /metrics (Prometheus text format; also over plain HTTP on --health-port). SIGHUP, or a change of the files, reloads "
      "the policies and the certificate.");
  auto& s = opt->server;
  cmd->add_option("--tls-cert", s.tls_cert, "PEM certificate (chain) the server presents")->required();
  cmd->add_option("--tls-key", s.tls_key, "PEM private key of the certificate")->required();
  cmd->add_option("--guardrails", s.guardrails, "file with the PlatformGuardrails")->required();
  cmd->add_option("--policies", s.policies, "files or directories with the policies in force (repeatable)");
  cmd->add_flag("--policies-from-cluster", opt->policies_from_cluster,
                "judge against the cluster's gpubank resources (watched) instead of --policies; --guardrails stands in "
                "until the cluster holds a PlatformGuardrails")
      ->excludes("--policies");
  cmd->add_option("--kubeconfig", opt->kubeconfig, "with --policies-from-cluster: kubeconfig file (default: the loading order)");
  cmd->add_option("--context", opt->context, "with --policies-from-cluster: kubeconfig context");
  cmd->add_option("--address", s.address, "address to listen on")->capture_default_str();
  cmd->add_option("--port", s.port, "port to listen on (0: any free port)")->check(CLI::Range(0, 65535))->capture_default_str();
  cmd->add_option("--audit-log", s.audit_log, "JSON-lines file every decision is appended to")->capture_default_str();
  cmd->add_option("--threads", s.threads, "event-loop threads: accept, TLS, HTTP parsing and writing")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  cmd->add_option("--review-threads", s.review_threads,
                  "threads that decide requests and append them to the audit log (they wait for the disk)")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  cmd->add_option("--max-connections", s.max_connections,
                  "HTTPS connections served at once; further ones are answered 429 with Retry-After")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  cmd->add_option("--request-timeout", s.request_timeout,
                  "seconds a request may take from its first byte to its last (a new connection: from the accept, "
                  "TLS handshake included)")
      ->check(finite_range(0.1, 300))
      ->capture_default_str();
  cmd->add_option("--idle-timeout", s.idle_timeout,
                  "seconds a kept-alive connection may wait for its next request (above the API server's 90)")
      ->check(finite_range(1, 3600))
      ->capture_default_str();
  cmd->add_option("--health-address", s.health_address, "address of the plain-HTTP /healthz, /readyz and /metrics listener")
      ->capture_default_str();
  cmd->add_option("--health-port", s.health_port,
                  "port of the plain-HTTP /healthz, /readyz and /metrics listener (-1: none; the HTTPS port serves them too)")
      ->check(CLI::Range(-1, 65535))
      ->capture_default_str();
  cmd->add_option("--reload-interval", opt->reload_interval,
                  "seconds between checks for changed policy and certificate files (0: reload only on SIGHUP)")
      ->check(CLI::Range(0, 86400))
      ->capture_default_str();
  cmd->add_option("--log-level", opt->log_level, "trace, debug, info, warn, error")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error"}))
      ->capture_default_str();
  return {cmd, [opt] { return run_webhook(*opt); }};
}

}  // namespace gpubank::cli
