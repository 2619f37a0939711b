#include <CLI/CLI.hpp>

#include <iostream>

#include "cli/command.hpp"
#include "policy/decode.hpp"
#include "policy/policy_set.hpp"

namespace gpubank::cli {
namespace {

struct ConvertOptions {
  std::vector<std::string> paths;
  Format format = Format::Yaml;
};

int run_convert(const ConvertOptions& opt) {
  const policy::PolicySet set = policy::load_policy_set(opt.paths);
  bool failed = false;
  for (const auto& d : set.diagnostics()) {
    std::cerr << d.to_string() << '\n';
    failed = failed || d.severity == Severity::Error;
  }
  if (failed) return 1;
  doc::Json items = doc::Json::array();
  for (const auto& o : set.policies()) items.push_back(policy::encode_policy(o));
  if (opt.format == Format::Yaml) {
    // A YAML stream, one document per policy, as kubectl apply -f takes it.
    bool first = true;
    for (const auto& item : items) {
      if (!first) std::cout << "---\n";
      first = false;
      print_structured(std::cout, item, Format::Yaml);
    }
  } else {
    print_structured(std::cout, doc::Json{{"apiVersion", "v1"}, {"kind", "List"}, {"items", items}}, Format::Json);
  }
  return 0;
}

}  // namespace

Command add_convert_command(CLI::App& app) {
  auto opt = std::make_shared<ConvertOptions>();
  CLI::App* cmd = app.add_subcommand(
      "convert", "Print policies in canonical form (defaults filled in, fields in API order) as YAML or JSON");
  cmd->add_option("paths", opt->paths, "files and directories with policies")->required();
  add_output_option(*cmd, opt->format, false);
  return {cmd, [opt] { return run_convert(*opt); }};
}

}  // namespace gpubank::cli
