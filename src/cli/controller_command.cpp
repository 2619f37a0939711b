// `gpubank controller`: the policy reconciler against a cluster (src/controller). This
// slice runs one pass: --dry-run prints what it would change as diffs, --once applies.
#include <CLI/CLI.hpp>

#include <chrono>
#include <iostream>

#include "cli/command.hpp"
#include "controller/policy_reconciler.hpp"
#include "core/timestamp.hpp"
#include "k8s/apply.hpp"
#include "k8s/client_config.hpp"
#include "k8s/transport.hpp"

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
};

std::string now_rfc3339() {
  // Conditions carry whole seconds (metav1.Time).
  const auto now = std::chrono::time_point_cast<std::chrono::seconds>(std::chrono::system_clock::now());
  return format_rfc3339(Timestamp(now));
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
  using A = ObjectResult::Action;
  std::cout << (dry_run ? "dry run: " : "") << report.count(A::Created) << " to create, " << report.count(A::Configured)
            << " to configure, " << report.count(A::Pruned) << " to prune, " << report.count(A::Released)
            << " to release, " << report.count(A::Unchanged) << " unchanged, " << report.count(A::Skipped)
            << " skipped, " << report.failures() << " failed\n";
}

int run_controller(const ControllerCommandOptions& opt) {
  if (!opt.dry_run && !opt.once) {
    std::cerr << "gpubank controller: give --dry-run (show what would change) or --once (apply once and exit); "
                 "the watching, leader-elected controller is not built yet\n";
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
  const controller::ReconcileReport report =
      controller::reconcile_policies(**transport, *mapper, *policies, *live, options, now_rfc3339());
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
  add_output_option(*cmd, opt->format);
  return {cmd, [opt] { return run_controller(*opt); }};
}

}  // namespace gpubank::cli
