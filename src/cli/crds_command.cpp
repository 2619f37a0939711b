#include <CLI/CLI.hpp>

#include <iostream>

#include "cli/command.hpp"
#include "policy/crd.hpp"

namespace gpubank::cli {

Command add_crds_command(CLI::App& app) {
  auto format = std::make_shared<Format>(Format::Yaml);
  CLI::App* cmd = app.add_subcommand(
      "crds", "Print the CustomResourceDefinitions of the policy API (kubectl apply -f -), generated from the "
              "same field descriptions gpubank decodes with");
  add_output_option(*cmd, *format, false);
  return {cmd, [format] {
            const auto crds = policy::custom_resource_definitions();
            if (*format == Format::Json) {
              print_structured(std::cout, {{"apiVersion", "v1"}, {"kind", "List"}, {"items", crds}}, Format::Json);
              return 0;
            }
            bool first = true;
            for (const auto& crd : crds) {
              if (!first) std::cout << "---\n";
              first = false;
              print_structured(std::cout, crd, Format::Yaml);
            }
            return 0;
          }};
}

}  // namespace gpubank::cli
