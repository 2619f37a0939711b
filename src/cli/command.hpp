// The gpubank command line: each subcommand registers its options on the CLI11 app and
// returns the action to run when it is chosen. Actions return the process exit code:
// 0 success, 1 failure (invalid input, a server that failed); usage errors are 2 and
// handled by run().
#pragma once

#include <functional>
#include <iosfwd>
#include <optional>
#include <string_view>
#include <vector>
#include <string>

#include <nlohmann/json.hpp>

#include "policy/policy_set.hpp"
#include "twin/cluster/inventory.hpp"

namespace CLI {
class App;
}

namespace gpubank::cli {

using Action = std::function<int()>;

struct Command {
  CLI::App* app;  // the subcommand
  Action action;  // what runs when it was chosen
};

// Output formats of -o/--output.
enum class Format { Text, Json, Yaml };

// Registers "-o,--output" with the given choices on a subcommand.
void add_output_option(CLI::App& command, Format& format, bool allow_text = true);
// Prints a JSON value as JSON (indented) or YAML.
void print_structured(std::ostream& out, const nlohmann::ordered_json& value, Format format);

// The policies at `paths`, read and validated; nullopt after printing every problem and
// "<command>: the policies are invalid" on stderr.
// This replica's name in a Lease and in Events: $POD_NAME, else host_pid (unique on a host).
[[nodiscard]] std::string default_identity();

[[nodiscard]] std::optional<policy::PolicySet> load_valid_policies(const std::vector<std::string>& paths,
                                                                   std::string_view command);
// An Inventory file; nullopt after printing every problem and "<command>: the inventory is
// invalid".
[[nodiscard]] std::optional<twin::cluster::Inventory> load_valid_inventory(const std::string& path,
                                                                          std::string_view command);

Command add_validate_command(CLI::App& app);
Command add_convert_command(CLI::App& app);
Command add_rules_command(CLI::App& app);
Command add_cron_command(CLI::App& app);
Command add_webhook_command(CLI::App& app);
Command add_crds_command(CLI::App& app);
Command add_render_command(CLI::App& app);
Command add_controller_command(CLI::App& app);
// `gpubank twin ...`: the group, and its subcommands (registered on the group).
Command add_twin_command(CLI::App& app);
Command add_twin_admit_command(CLI::App& twin);
Command add_twin_kueue_perf_command(CLI::App& twin);
Command add_twin_fragment_command(CLI::App& twin);
Command add_twin_preview_command(CLI::App& twin);
Command add_twin_run_command(CLI::App& twin);
Command add_twin_serving_command(CLI::App& twin);
// `gpubank schema validate`: objects against CRD and built-in OpenAPI schemas.
Command add_schema_command(CLI::App& app);
// `gpubank bank ledger`: positions, borrow records, pair totals and trails from a store.
Command add_bank_command(CLI::App& app);
// `gpubank audit verify`: a store's audit hash chain.
Command add_audit_command(CLI::App& app);

// `gpubank tidal timeline|freeze|unfreeze`.
Command add_tidal_command(CLI::App& app);

// `gpubank metasync`: per-node signed pod metadata snapshots for the attribution exporters.
Command add_metasync_command(CLI::App& app);
// `gpubank exporter`: the node agent that attributes GPU samples (src/attribution/exporter.hpp).
Command add_exporter_command(CLI::App& app);

// `gpubank serving recommend`: an inference autoscaler on live signals (src/autoscale).
Command add_serving_command(CLI::App& app);

// `gpubank up`: the embedded platform on the twin, served on loopback.
Command add_up_command(CLI::App& app);

// `gpubank scan`: the low-utilisation scanner (src/governance/scanner.hpp).
Command add_scan_command(CLI::App& app);
// `gpubank report showback`: GPU-hours and cost from Prometheus (src/governance/showback.hpp).
Command add_report_command(CLI::App& app);

// `gpubank token create|list|revoke`: API tokens (src/auth/tokens.hpp).
Command add_token_command(CLI::App& app);

// Parses argv and runs the chosen subcommand; returns the exit code.
int run(int argc, char** argv);

}  // namespace gpubank::cli
