#include <CLI/CLI.hpp>

#include <algorithm>
#include <iostream>
#include <map>

#include "cli/command.hpp"
#include "cli/version.hpp"
#include "document/yaml_writer.hpp"
#include "policy/validate.hpp"

namespace gpubank::cli {

void add_output_option(CLI::App& command, Format& format, bool allow_text) {
  std::map<std::string, Format> choices{{"json", Format::Json}, {"yaml", Format::Yaml}};
  if (allow_text) choices.emplace("text", Format::Text);
  command.add_option("-o,--output", format, allow_text ? "output format: text, json or yaml" : "output format: json or yaml")
      ->transform(CLI::CheckedTransformer(choices, CLI::ignore_case))
      ->capture_default_str();
}

std::optional<policy::PolicySet> load_valid_policies(const std::vector<std::string>& paths, std::string_view command) {
  policy::PolicySet set = policy::load_policy_set(paths);
  Diagnostics diagnostics = set.diagnostics();
  const Diagnostics checks = policy::validate(set);
  diagnostics.insert(diagnostics.end(), checks.begin(), checks.end());
  if (!has_errors(diagnostics)) return set;
  for (const auto& d : diagnostics) std::cerr << d.to_string() << '\n';
  std::cerr << "gpubank " << command << ": the policies are invalid\n";
  return std::nullopt;
}

std::optional<twin::cluster::Inventory> load_valid_inventory(const std::string& path, std::string_view command) {
  Diagnostics diagnostics;
  auto inventory = twin::cluster::load_inventory(path, diagnostics);
  if (inventory) return inventory;
  for (const auto& d : diagnostics) std::cerr << d.to_string() << '\n';
  std::cerr << "gpubank " << command << ": the inventory is invalid\n";
  return std::nullopt;
}

void print_structured(std::ostream& out, const nlohmann::ordered_json& value, Format format) {
  if (format == Format::Yaml) {
    out << doc::to_yaml(value);
  } else {
    out << value.dump(2) << '\n';
  }
}

int run(int argc, char** argv) {
  CLI::App app{"gpubank: a GPU resource bank and tidal inference platform for shared Kubernetes clusters"};
  app.set_version_flag("--version", std::string("gpubank ") + kVersion);
  app.require_subcommand(1);
  app.fallthrough(false);

  const Command commands[] = {
      add_validate_command(app), add_convert_command(app), add_rules_command(app),
      add_cron_command(app),     add_webhook_command(app), add_crds_command(app),
      add_render_command(app),   add_schema_command(app),  add_twin_command(app),
      add_bank_command(app),     add_audit_command(app),    add_up_command(app), add_tidal_command(app),
  };

  // CLI11 would only say "A subcommand is required" for a misspelt command.
  if (argc > 1 && argv[1][0] != '-') {
    const std::string_view first = argv[1];
    const bool known = std::any_of(std::begin(commands), std::end(commands),
                                   [&](const Command& c) { return c.app->get_name() == first; });
    if (!known) {
      std::cerr << "gpubank: unknown command \"" << first << "\"\nRun with --help for the list of commands.\n";
      return 2;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);  // prints the message and the hint to use --help
    return 2;
  }
  for (const auto& command : commands) {
    if (command.app->parsed()) {
      try {
        return command.action();
      } catch (const std::exception& e) {
        std::cerr << "gpubank: " << e.what() << '\n';
        return 1;
      }
    }
  }
  return 2;
}

}  // namespace gpubank::cli
