#include <CLI/CLI.hpp>

#include <algorithm>
#include <iomanip>
#include <iostream>

#include "cli/command.hpp"
#include "policy/rules.hpp"

namespace gpubank::cli {

Command add_rules_command(CLI::App& app) {
  auto format = std::make_shared<Format>(Format::Text);
  CLI::App* cmd = app.add_subcommand("rules", "List every validation rule with its stable id and scope");
  add_output_option(*cmd, *format);
  return {cmd, [format] {
            if (*format == Format::Text) {
              std::size_t width = 0;  // the longest id, plus a gap
              for (const auto& r : policy::all_rules()) width = std::max(width, r.id.size() + 2);
              for (const auto& r : policy::all_rules()) {
                std::cout << std::left << std::setw(static_cast<int>(width)) << r.id << std::setw(11)
                          << policy::scope_name(r.scope) << r.summary << '\n';
              }
              return 0;
            }
            nlohmann::ordered_json out = nlohmann::ordered_json::array();
            for (const auto& r : policy::all_rules()) {
              out.push_back({{"id", r.id}, {"scope", policy::scope_name(r.scope)}, {"summary", r.summary}});
            }
            print_structured(std::cout, out, *format);
            return 0;
          }};
}

}  // namespace gpubank::cli
