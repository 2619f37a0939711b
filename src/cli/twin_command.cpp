// gpubank twin: the cluster twin's commands, one subcommand each.
#include <CLI/CLI.hpp>

#include <vector>

#include "cli/command.hpp"

namespace gpubank::cli {

Command add_twin_command(CLI::App& app) {
  CLI::App* twin = app.add_subcommand("twin", "The cluster twin: Kueue's admission in virtual time, without a cluster");
  twin->require_subcommand(1);
  const std::vector<Command> commands{add_twin_admit_command(*twin), add_twin_kueue_perf_command(*twin),
                                      add_twin_fragment_command(*twin), add_twin_run_command(*twin),
                                      add_twin_serving_command(*twin), add_twin_preview_command(*twin)};
  return {twin, [commands] {
            for (const auto& c : commands) {
              if (c.app->parsed()) return c.action();
            }
            return 2;
          }};
}

}  // namespace gpubank::cli
