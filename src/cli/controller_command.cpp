// `gpubank controller`: the policy reconciler against a cluster (src/controller).
// --dry-run prints what one pass would change as diffs, --once applies one pass, and
// without either it keeps running (informers, optional leader election, manager.hpp).
#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <iostream>
#include <stop_token>
#include <thread>

#include "api/cluster_server.hpp"
#include "auth/gate.hpp"
#include "cli/command.hpp"
#include "cli/proxy_options.hpp"
#include "cli/signals.hpp"
#include "controller/manager.hpp"
#include "controller/policy_reconciler.hpp"
#include "core/log_format.hpp"
#include "core/timestamp.hpp"
#include "k8s/apply.hpp"
#include "k8s/client_config.hpp"
#include "k8s/transport.hpp"
#include "proposals/proposals.hpp"
#include "twin/cluster/inventory.hpp"

namespace gpubank::cli {
namespace {

using Json = nlohmann::ordered_json;
using controller::ObjectResult;

struct ControllerCommandOptions {
  std::string kubeconfig;
  std::string context;
  std::string namespace_name;
  std::string backend = "kueue";
  std::string field_manager = "gpubank";
  bool dry_run = false;
  bool once = false;
  bool force_conflicts = false;
  bool manage_kueue_config = false;
  Format format = Format::Text;
  // The running controller.
  bool leader_elect = false;
  std::string leader_election_namespace;
  std::string leader_election_id = "gpubank-controller";
  std::string identity;
  int lease_duration = 15;
  int renew_deadline = 10;
  int retry_period = 2;
  int health_port = 8081;
  int resync_period = 600;
  std::string store;
  // The portal and its API (api/cluster_server.hpp).
  int api_port = -1;
  std::string api_address = "0.0.0.0";
  std::string portal_dir;
  std::string preview_inventory;
  ProxyOptions proxy;
  std::string desk_field_manager = "gpubank-portal";
  std::string log_level = "info";
};

int run_loop(const ControllerCommandOptions& opt, k8s::ClientConfig config, render::Backend backend) {
  spdlog::set_level(spdlog::level::from_str(opt.log_level));
  spdlog::set_formatter(escaping_log_formatter());
  // SIGINT/SIGTERM stop the controller (a leader releases its Lease).
  StopOnSignal signals;  // before any thread starts

  controller::ControllerOptions options;
  options.reconcile.backend = backend;
  options.reconcile.plan.field_manager = opt.field_manager;
  options.reconcile.plan.manage_kueue_config = opt.manage_kueue_config;
  options.reconcile.force_conflicts = opt.force_conflicts;
  options.reconcile.default_namespace = config.namespace_name;
  options.identity = opt.identity.empty() ? default_identity() : opt.identity;
  options.leader_elect = opt.leader_elect;
  options.election.name = opt.leader_election_id;
  options.election.namespace_name = opt.leader_election_namespace;
  options.election.lease_duration = std::chrono::seconds(opt.lease_duration);
  options.election.renew_deadline = std::chrono::seconds(opt.renew_deadline);
  options.election.retry_period = std::chrono::seconds(opt.retry_period);
  options.resync_period = std::chrono::seconds(opt.resync_period);
  options.store = opt.store;
  options.health_port = opt.health_port;
  options.log = [](const std::string& line) { spdlog::info("{}", line); };
  // The portal's tokens and policy desk live in the store; the cluster's objects are the
  // policies in force (proposals::Truth::Cluster).
  std::shared_ptr<auth::Gate> gate;
  std::shared_ptr<proposals::Desk> desk;
  if (opt.api_port >= 0) {
    auto opened = auth::Gate::open(opt.store);
    if (!opened) {
      std::cerr << "gpubank controller: --store: " << opened.error() << '\n';
      return 1;
    }
    gate = std::move(*opened);
    auto book = proposals::Desk::open(opt.store, policy::PolicySet{}, proposals::Truth::Cluster);
    if (!book) {
      std::cerr << "gpubank controller: --store: " << book.error() << '\n';
      return 1;
    }
    desk = std::move(*book);
    options.desk = desk;
    options.desk_field_manager = opt.desk_field_manager;
  }
  auto controller = controller::Controller::create(std::move(config), std::move(options));
  if (!controller) {
    std::cerr << "gpubank controller: " << controller.error() << '\n';
    return 1;
  }
  if ((*controller)->health_port() >= 0) spdlog::info("serving http://0.0.0.0:{}/healthz and /readyz", (*controller)->health_port());
  std::unique_ptr<api::ClusterServer> portal;
  if (opt.api_port >= 0) {
    api::ClusterServerOptions server;
    server.address = opt.api_address;
    server.port = opt.api_port;
    server.gate = gate;
    server.desk = desk;
    server.portal_dir = opt.portal_dir;
    server.proxy = proxy_auth(opt.proxy);
    controller::Controller* raw = controller->get();
    server.cluster_policies = [raw] { return raw->cluster_policies(); };
    server.changed = [raw] { raw->wake(); };
    server.snapshot = [raw] { return raw->snapshot(); };
    server.store = opt.store;
    if (!opt.preview_inventory.empty()) {
      auto inventory = load_valid_inventory(opt.preview_inventory, "controller --preview-inventory");
      if (!inventory) return 1;
      server.preview_inventory = std::make_shared<const twin::cluster::Inventory>(std::move(*inventory));
    }
    portal = std::make_unique<api::ClusterServer>(std::move(server));
    if (auto opened = portal->open(); !opened) {
      std::cerr << "gpubank controller: --store: " << opened.error() << '\n';
      return 1;
    }
    auto port = portal->bind();
    if (!port) {
      std::cerr << "gpubank controller: --api-port: " << port.error() << '\n';
      return 1;
    }
    // Tests and scripts read the port from this line when they ask for port 0.
    spdlog::info("serving the portal and API at http://{}:{}/", opt.api_address, *port);
    portal->start();
  }
  const Expected<bool> result = signals.run([&](std::stop_token stop) { return (*controller)->run(stop); });
  if (portal) portal->stop();
  if (!result) {
    std::cerr << "gpubank controller: " << result.error() << '\n';
    return 1;
  }
  return 0;
}

Json report_json(const controller::ReconcileReport& report, bool dry_run) {
  Json out;
  out["dryRun"] = dry_run;
  out["rendered"] = report.rendered;
  out["objects"] = Json::array();
  for (const ObjectResult& r : report.objects) {
    Json o{{"action", controller::action_name(r.action, dry_run)}, {"object", r.object}, {"path", r.path}};
    if (!r.sources.empty()) o["sources"] = r.sources;
    if (!r.message.empty()) o["message"] = r.message;
    if (!r.diff.empty()) o["diff"] = r.diff;
    out["objects"].push_back(std::move(o));
  }
  out["policies"] = Json::array();
  for (const controller::PolicyResult& p : report.policies) {
    Json conditions = Json::array();
    for (const controller::Condition& c : p.conditions) {
      conditions.push_back({{"type", c.type}, {"status", c.status ? "True" : "False"}, {"reason", c.reason}, {"message", c.message}});
    }
    Json entry{{"resource", p.resource}, {"conditions", std::move(conditions)}, {"statusWritten", p.status_written}};
    if (!p.error.empty()) entry["error"] = p.error;
    out["policies"].push_back(std::move(entry));
  }
  out["activeLeases"] = report.active_leases;
  out["adjustments"] = report.adjustments;
  if (report.next_change) out["nextChange"] = format_rfc3339(*report.next_change);
  out["diagnostics"] = Json::array();
  for (const Diagnostic& d : report.diagnostics) out["diagnostics"].push_back(d.to_string());
  return out;
}

void print_text(const controller::ReconcileReport& report, bool dry_run) {
  for (const Diagnostic& d : report.diagnostics) std::cout << d.to_string() << '\n';
  for (const ObjectResult& r : report.objects) {
    if (r.action == ObjectResult::Action::Unchanged) continue;
    std::cout << controller::action_name(r.action, dry_run) << ' ' << r.object;
    if (!r.message.empty()) std::cout << ": " << r.message;
    std::cout << '\n' << r.diff;
  }
  for (const controller::PolicyResult& p : report.policies) {
    std::cout << p.resource << ':';
    for (const controller::Condition& c : p.conditions) {
      std::cout << ' ' << c.type << '=' << (c.status ? "True" : "False");
      if (!c.status) std::cout << " (" << c.reason << ": " << c.message << ')';
    }
    if (!p.error.empty()) std::cout << " status not written: " << p.error;
    std::cout << '\n';
  }
  for (const std::string& line : report.adjustments) std::cout << "at this time: " << line << '\n';
  if (report.next_change) std::cout << "next lease or tidal change: " << format_rfc3339(*report.next_change) << '\n';
  using A = ObjectResult::Action;
  std::cout << (dry_run ? "dry run: " : "") << report.count(A::Created) << " to create, " << report.count(A::Configured)
            << " to configure, " << report.count(A::Pruned) << " to prune, " << report.count(A::Released)
            << " to release, " << report.count(A::Unchanged) << " unchanged, " << report.count(A::Skipped)
            << " skipped, " << report.failures() << " failed\n";
}

int run_controller(const ControllerCommandOptions& opt) {
  if (opt.dry_run && opt.once) {
    std::cerr << "gpubank controller: --dry-run and --once exclude each other\n";
    return 2;
  }
  if (opt.api_port >= 0 && (opt.dry_run || opt.once)) {
    std::cerr << "gpubank controller: --api-port serves the portal of a running controller, not of --dry-run or --once\n";
    return 2;
  }
  if (!opt.preview_inventory.empty() && opt.api_port < 0) {
    std::cerr << "gpubank controller: --preview-inventory is the portal's (--api-port)\n";
    return 2;
  }
  if (opt.api_port >= 0 && opt.store.empty()) {
    std::cerr << "gpubank controller: --api-port needs --store (the portal's tokens and policy desk are kept there)\n";
    return 2;
  }
  if (opt.leader_elect && (opt.lease_duration <= opt.renew_deadline || opt.renew_deadline <= opt.retry_period ||
                           opt.retry_period <= 0)) {
    std::cerr << "gpubank controller: leader election needs --lease-duration > --renew-deadline > --retry-period > 0\n";
    return 2;
  }
  const auto backend = render::backend_from_name(opt.backend);
  if (!backend) {
    std::cerr << "gpubank controller: --backend: \"" << opt.backend << "\" is not kueue or volcano\n";
    return 2;
  }
  k8s::LoadOptions load;
  load.kubeconfig = opt.kubeconfig;
  load.resolve.context = opt.context;
  load.resolve.namespace_override = opt.namespace_name;
  auto config = k8s::load_client_config(load, k8s::Environment::from_process());
  if (!config) {
    std::cerr << "gpubank controller: " << config.error() << '\n';
    return 1;
  }
  if (!opt.dry_run && !opt.once) return run_loop(opt, std::move(*config), *backend);
  const std::string default_namespace = config->namespace_name;
  k8s::TransportOptions transport_options;
  transport_options.field_manager = opt.field_manager;
  auto transport = k8s::Transport::create(std::move(*config), transport_options);
  if (!transport) {
    std::cerr << "gpubank controller: " << transport.error() << '\n';
    return 1;
  }
  auto mapper = k8s::discover(**transport);
  if (!mapper) {
    std::cerr << "gpubank controller: discovery: " << mapper.error().describe() << '\n';
    return 1;
  }
  auto policies = controller::list_policies(**transport, *mapper);
  if (!policies) {
    std::cerr << "gpubank controller: listing gpubank resources: " << policies.error().describe() << '\n';
    return 1;
  }
  auto live = controller::list_managed(**transport, *mapper);
  if (!live) {
    std::cerr << "gpubank controller: listing managed objects: " << live.error().describe() << '\n';
    return 1;
  }
  controller::ReconcileOptions options;
  options.backend = *backend;
  options.plan.field_manager = opt.field_manager;
  options.plan.manage_kueue_config = opt.manage_kueue_config;
  options.force_conflicts = opt.force_conflicts;
  options.dry_run = opt.dry_run;
  options.default_namespace = default_namespace;
  options.at = Timestamp(std::chrono::time_point_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now()));
  const controller::ReconcileReport report =
      controller::reconcile_policies(**transport, *mapper, *policies, *live, options,
                                  format_rfc3339(Timestamp(std::chrono::floor<std::chrono::seconds>(*options.at))));
  if (opt.format == Format::Text) {
    print_text(report, opt.dry_run);
  } else {
    print_structured(std::cout, report_json(report, opt.dry_run), opt.format);
  }
  if (!report.rendered) {
    std::cerr << "gpubank controller: the cluster's policy set is invalid: nothing was applied\n";
    return 1;
  }
  if (report.failures() > 0) {
    std::cerr << "gpubank controller: " << report.failures() << " change(s) failed\n";
    return 1;
  }
  return 0;
}

}  // namespace

Command add_controller_command(CLI::App& app) {
  auto opt = std::make_shared<ControllerCommandOptions>();
  CLI::App* cmd = app.add_subcommand(
      "controller",
      "Carry out the cluster's gpubank policies: read the six gpubank resources from the API server, validate and "
      "render them as `gpubank render` does, server-side apply the engines' objects (field manager gpubank), prune "
      "what an earlier pass applied and this one no longer renders, and set each resource's Accepted, Rendered and "
      "Applied conditions. Exits 1 when the policy set is invalid (nothing is applied) or a change failed, 2 on "
      "usage errors.");
  cmd->footer(
      "Connection: --kubeconfig, else KUBECONFIG, else in-cluster service account, else ~/.kube/config. "
      "--dry-run lists what a pass would create, configure, prune or release, with a unified diff of the fields "
      "gpubank applies (live against desired), and writes nothing. Kueue's manager ConfigMap is applied only with "
      "--manage-kueue-config. Design and limits: docs/controller.md.");
  cmd->add_option("--kubeconfig", opt->kubeconfig, "kubeconfig file (default: the loading order below)");
  cmd->add_option("--context", opt->context, "kubeconfig context (default: current-context)");
  cmd->add_option("-n,--namespace", opt->namespace_name, "namespace for namespaced objects that name none");
  cmd->add_option("--backend", opt->backend, "queueing engine: kueue (default) or volcano");
  cmd->add_option("--field-manager", opt->field_manager, "server-side apply field manager (default gpubank)");
  cmd->add_flag("--dry-run", opt->dry_run, "show what one pass would change, as diffs, and write nothing");
  cmd->add_flag("--once", opt->once, "run one pass, apply it and exit");
  cmd->add_flag("--force-conflicts", opt->force_conflicts,
                "take over fields another field manager owns instead of failing with 409 Conflict");
  cmd->add_flag("--manage-kueue-config", opt->manage_kueue_config,
                "also apply Kueue's manager ConfigMap (it replaces the installed configuration; Kueue reads it at start)");
  cmd->add_flag("--leader-elect", opt->leader_elect,
                "act only while holding the coordination.k8s.io Lease (run two replicas; one acts)");
  cmd->add_option("--leader-election-namespace", opt->leader_election_namespace,
                  "namespace of the Lease (default: the client's namespace)");
  cmd->add_option("--leader-election-id", opt->leader_election_id, "name of the Lease (default gpubank-controller)");
  cmd->add_option("--identity", opt->identity, "this replica's name in the Lease and Events (default: $POD_NAME, else host_pid)");
  cmd->add_option("--lease-duration", opt->lease_duration, "seconds a standby waits before taking an unrenewed Lease (default 15)")
      ->check(CLI::Range(1, 3600));
  cmd->add_option("--renew-deadline", opt->renew_deadline, "seconds a leader may fail to renew before it stops acting (default 10)")
      ->check(CLI::Range(1, 3600));
  cmd->add_option("--retry-period", opt->retry_period, "seconds between Lease tries (default 2)")->check(CLI::Range(1, 3600));
  cmd->add_option("--health-port", opt->health_port, "port of /healthz and /readyz (plain HTTP; -1: none; default 8081)")
      ->check(CLI::Range(-1, 65535));
  cmd->add_option("--resync-period", opt->resync_period, "seconds between passes when nothing changes (default 600)")
      ->check(CLI::Range(1, 86400));
  cmd->add_option("--store", opt->store, "SQLite file or postgresql:// URL for the audit entries of every change (default: none)");
  cmd->add_option("--api-port", opt->api_port,
                  "serve the portal and its API here (plain HTTP: put TLS in front; -1: none, the default; 0: any free port); "
                  "needs --store, where gpubank token create keeps the tokens")
      ->check(CLI::Range(-1, 65535));
  cmd->add_option("--api-address", opt->api_address, "address the portal listens on (default 0.0.0.0)");
  cmd->add_option("--portal-dir", opt->portal_dir, "development: serve the portal's files from this directory");
  cmd->add_option("--preview-inventory", opt->preview_inventory,
                  "the cluster's nodes as the twin models them (an Inventory file, as examples/inventory/example.yaml): "
                  "turns on the portal's impact preview, which replays the work the controller recorded");
  add_proxy_options(*cmd, opt->proxy);
  cmd->add_option("--desk-field-manager", opt->desk_field_manager,
                  "field manager of the approved policy changes the controller applies (default gpubank-portal)");
  cmd->add_option("--log-level", opt->log_level, "trace, debug, info, warn, error (default info)");
  add_output_option(*cmd, opt->format);
  return {cmd, [opt] { return run_controller(*opt); }};
}

}  // namespace gpubank::cli
