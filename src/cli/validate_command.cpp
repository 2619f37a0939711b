#include <CLI/CLI.hpp>

#include <iostream>

#include "cli/command.hpp"
#include "policy/authorize.hpp"
#include "policy/report.hpp"
#include "policy/rules.hpp"
#include "policy/validate.hpp"

namespace gpubank::cli {
namespace {

struct ValidateOptions {
  std::vector<std::string> paths;
  Format format = Format::Text;
  std::string as_user;
  std::vector<std::string> as_groups;
  std::string now;
};

// With --as: the findings a webhook would add for that user (authorization).
void check_authorization(const policy::PolicySet& set, const policy::UserInfo& user, Diagnostics& findings) {
  const policy::PlatformGuardrailsSpec* guardrails = set.guardrails_spec();
  for (const auto& o : set.policies()) {
    const auto auth = policy::authorize_write(user, o, guardrails, set);
    if (auth.allowed) continue;
    findings.push_back(Diagnostic{Severity::Error, std::string(auth.rule), o.origin.file, o.origin.pos,
                                  std::string(policy::kind_name(o.kind)), o.name(), {}, auth.message});
  }
}

int run_validate(const ValidateOptions& opt) {
  const policy::PolicySet set = policy::load_policy_set(opt.paths);
  policy::ValidationOptions options;
  if (!opt.now.empty()) {
    auto now = parse_rfc3339(opt.now);
    if (!now) {
      std::cerr << "gpubank validate: --now: " << now.error() << '\n';
      return 2;
    }
    options.now = *now;
  }
  Diagnostics findings = policy::check_all(set, options);
  if (!opt.as_user.empty()) check_authorization(set, policy::UserInfo{opt.as_user, opt.as_groups}, findings);
  const policy::ValidationReport report = policy::build_report(set, findings);
  if (opt.format == Format::Text) {
    std::cout << policy::to_text(report);
  } else {
    print_structured(std::cout, policy::to_json(report), opt.format);
  }
  return report.ok() ? 0 : 1;
}

}  // namespace

Command add_validate_command(CLI::App& app) {
  auto opt = std::make_shared<ValidateOptions>();
  CLI::App* cmd = app.add_subcommand(
      "validate",
      "Check policy files and directories as one policy set against the platform guardrails; also checks "
      "workload manifests (pods, jobs, ...) for reserved labels and priority classes. Exits 1 on any error.");
  cmd->add_option("paths", opt->paths, "files and directories (read recursively: .yaml, .yml, .json)")->required();
  add_output_option(*cmd, opt->format);
  cmd->add_option("--as", opt->as_user,
                  "also check that this user (as the API server reports it) may write every policy");
  cmd->add_option("--as-group", opt->as_groups, "a group of the --as user (repeatable)");
  cmd->add_option("--now", opt->now, "RFC 3339 time to measure leases without a start from (default: not checked)");
  return {cmd, [opt] { return run_validate(*opt); }};
}

}  // namespace gpubank::cli
