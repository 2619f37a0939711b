#include <CLI/CLI.hpp>

#include <memory>
#include <vector>

#include "cli/command.hpp"

namespace gpubank::cli {

Command add_twin_command(CLI::App& app) {
  CLI::App* twin = app.add_subcommand("twin", "The cluster twin: Kueue admission in virtual time");
  twin->require_subcommand(1);
  auto commands = std::make_shared<std::vector<Command>>();
  commands->push_back(add_twin_kueue_perf_command(*twin));
  return {twin, [commands] {
            for (const auto& command : *commands) {
              if (command.app->parsed()) return command.action();
            }
            return 2;
          }};
}

}  // namespace gpubank::cli
