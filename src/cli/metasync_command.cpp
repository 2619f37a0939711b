// `gpubank metasync`: one list/watch of the cluster's pods, turned into a signed metadata
// snapshot per node (src/attribution/metasync.hpp) for the attribution exporters, which hold
// no Kubernetes credentials. Runs until SIGINT/SIGTERM (exit 0) or until the pods informer
// fails (exit 1: Kubernetes restarts it with fresh credentials). Usage errors exit 2.
#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include <csignal>
#include <filesystem>
#include <iostream>
#include <stop_token>
#include <thread>

#include "attribution/metasync.hpp"
#include "cli/command.hpp"
#include "cli/signals.hpp"
#include "core/duration.hpp"
#include "core/log_format.hpp"
#include "k8s/client_config.hpp"

namespace gpubank::cli {
namespace {

struct MetasyncCommandOptions {
  std::string kubeconfig;
  std::string context;
  std::string hmac_key_file;
  std::string listen;
  std::string out_dir;
  std::string tombstone = "5m";
  int health_port = -1;
  std::string log_level = "info";
};

// "ADDR:PORT", "[::1]:PORT" or ":PORT" (loopback); nullopt when malformed.
std::optional<std::pair<std::string, int>> parse_listen(const std::string& text) {
  const std::size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon + 1 >= text.size()) return std::nullopt;
  std::string host = text.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  if (host.empty()) host = "127.0.0.1";
  int port = 0;
  for (const char c : text.substr(colon + 1)) {
    if (c < '0' || c > '9' || port > 65535) return std::nullopt;
    port = port * 10 + (c - '0');
  }
  if (port > 65535) return std::nullopt;
  return std::pair{host, port};
}

int usage_error(const std::string& message) {
  std::cerr << "gpubank metasync: " << message << '\n';
  return 2;
}

int run_metasync(const MetasyncCommandOptions& opt) {
  attribution::MetasyncOptions options;
  auto key = attribution::read_hmac_key_file(opt.hmac_key_file);
  if (!key) return usage_error("--hmac-key-file: " + key.error());
  options.hmac_key = std::move(*key);
  if (opt.listen.empty() && opt.out_dir.empty()) {
    return usage_error("nothing to serve: give --listen ADDR:PORT, --out-dir DIR or both");
  }
  if (!opt.listen.empty()) {
    const auto listen = parse_listen(opt.listen);
    if (!listen) return usage_error("--listen: \"" + opt.listen + "\" is not ADDR:PORT");
    options.listen_address = listen->first;
    options.listen_port = listen->second;
  }
  if (!opt.out_dir.empty() && !std::filesystem::is_directory(opt.out_dir)) {
    return usage_error("--out-dir: " + opt.out_dir + " is not a directory");
  }
  options.out_dir = opt.out_dir;
  auto tombstone = Duration::parse(opt.tombstone);
  if (!tombstone) return usage_error("--tombstone: " + tombstone.error());
  if (tombstone->negative()) return usage_error("--tombstone: must not be negative");
  options.tombstone = std::chrono::milliseconds(tombstone->milliseconds());
  options.health_port = opt.health_port;

  k8s::LoadOptions load;
  load.kubeconfig = opt.kubeconfig;
  load.resolve.context = opt.context;
  auto config = k8s::load_client_config(load, k8s::Environment::from_process());
  if (!config) {
    std::cerr << "gpubank metasync: " << config.error() << '\n';
    return 1;
  }
  spdlog::set_level(spdlog::level::from_str(opt.log_level));
  spdlog::set_formatter(escaping_log_formatter());
  options.log = [](const std::string& line) { spdlog::warn("{}", line); };

  StopOnSignal signals;  // before any thread starts

  auto metasync = attribution::Metasync::create(std::move(*config), std::move(options));
  if (!metasync) {
    std::cerr << "gpubank metasync: " << metasync.error() << '\n';
    return 1;
  }
  auto started = (*metasync)->start();
  if (!started) {
    std::cerr << "gpubank metasync: " << started.error() << '\n';
    return 1;
  }
  if ((*metasync)->port() >= 0) {
    spdlog::info("serving /v1/nodes/<node>/snapshot, /healthz, /readyz and /metrics on port {}", (*metasync)->port());
  }
  if ((*metasync)->health_port() >= 0) spdlog::info("serving /healthz, /readyz and /metrics on port {}", (*metasync)->health_port());
  if (!opt.out_dir.empty()) spdlog::info("writing one snapshot per node to {}", opt.out_dir);

  const Expected<bool> result = signals.run([&](std::stop_token stop) { return (*metasync)->run(stop); });
  (*metasync)->stop();
  if (!result) {
    std::cerr << "gpubank metasync: " << result.error() << '\n';
    return 1;
  }
  return 0;
}

}  // namespace

Command add_metasync_command(CLI::App& app) {
  auto opt = std::make_shared<MetasyncCommandOptions>();
  CLI::App* cmd = app.add_subcommand(
      "metasync",
      "Watch the cluster's pods (one list/watch, read-only) and publish, per node, a metadata snapshot signed with "
      "HMAC-SHA256: each pod's UID with its allowlisted attribution (business group, owner, cost centre, queue, "
      "workload type and top-level owner, model), pinned when the pod was first seen, and deleted pods as tombstones "
      "for --tombstone. The attribution exporters read it over HTTP (GET /v1/nodes/<node>/snapshot, ETag and "
      "If-None-Match) or from --out-dir, and need no Kubernetes credentials. Exits 0 on SIGINT/SIGTERM, 1 when the "
      "API server cannot be used, 2 on usage errors.");
  cmd->footer(
      "Connection: --kubeconfig, else KUBECONFIG, else in-cluster service account, else ~/.kube/config. The key file "
      "holds at least 32 bytes (trailing whitespace is not part of the key), e.g. `openssl rand -hex 32 > key`; the "
      "exporters get the same file. Design, label sources and wire format: docs/attribution.md.");
  cmd->add_option("--kubeconfig", opt->kubeconfig, "kubeconfig file (default: the loading order below)");
  cmd->add_option("--context", opt->context, "kubeconfig context (default: current-context)");
  cmd->add_option("--hmac-key-file", opt->hmac_key_file, "file with the shared HMAC key (at least 32 bytes)")->required();
  cmd->add_option("--listen", opt->listen, "serve snapshots, /healthz, /readyz and /metrics on ADDR:PORT (port 0: any)");
  cmd->add_option("--out-dir", opt->out_dir, "write <node>.json per node into this existing directory, atomically");
  cmd->add_option("--tombstone", opt->tombstone, "how long a deleted or finished pod stays in its snapshot (default 5m)");
  cmd->add_option("--health-port", opt->health_port, "port of /healthz, /readyz and /metrics alone (-1: none, the default)")
      ->check(CLI::Range(-1, 65535));
  cmd->add_option("--log-level", opt->log_level, "trace, debug, info, warn, error (default info)");
  return {cmd, [opt] { return run_metasync(*opt); }};
}

}  // namespace gpubank::cli
