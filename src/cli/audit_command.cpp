// gpubank audit verify: checks a store's audit hash chain (gapless seqs, every prevHash the
// previous entry's hash, every hash recomputed) and prints the count and the head hash, or
// the first broken seq and why.
#include <CLI/CLI.hpp>

#include <iostream>
#include <vector>

#include "cli/command.hpp"
#include "core/escape.hpp"
#include "store/store.hpp"

namespace gpubank::cli {
namespace {

struct VerifyOptions {
  std::string store;
  Format format = Format::Text;
};

int run_verify(const VerifyOptions& opt) {
  auto opened = store::Store::open(opt.store, store::OpenOptions{.create = false});
  if (!opened) {
    std::cerr << "gpubank audit verify: " << opened.error() << '\n';
    return 1;
  }
  auto report = store::verify_audit(**opened);
  if (!report) {
    std::cerr << "gpubank audit verify: " << report.error() << '\n';
    return 1;
  }
  if (opt.format != Format::Text) {
    nlohmann::ordered_json out{{"store", (*opened)->location()}};
    out.update(bank::to_json(*report));
    print_structured(std::cout, out, opt.format);
  } else if (report->ok) {
    std::cout << "audit chain intact: " << report->entries << " entries";
    if (report->entries > 0) std::cout << ", head " << report->head << " (seq " << report->last_seq << ")";
    std::cout << '\n';
  } else {
    std::cout << "audit chain broken at seq " << report->broken_seq << ": " << escape_text(report->problem) << '\n'
              << report->entries << (report->entries == 1 ? " entry" : " entries") << " before it verified\n";
  }
  return report->ok ? 0 : 1;
}

Command add_audit_verify_command(CLI::App& audit) {
  auto opt = std::make_shared<VerifyOptions>();
  CLI::App* cmd = audit.add_subcommand("verify", "Check a store's audit hash chain; exit 1 naming the first broken seq");
  cmd->add_option("--store", opt->store, "the store: an SQLite file or a postgres:// URL")->required();
  add_output_option(*cmd, opt->format);
  return {cmd, [opt] { return run_verify(*opt); }};
}

}  // namespace

Command add_audit_command(CLI::App& app) {
  CLI::App* audit = app.add_subcommand("audit", "The audit log of a store: verify its hash chain");
  audit->require_subcommand(1);
  const std::vector<Command> commands{add_audit_verify_command(*audit)};
  return {audit, [commands] {
            for (const auto& c : commands) {
              if (c.app->parsed()) return c.action();
            }
            return 2;
          }};
}

}  // namespace gpubank::cli
