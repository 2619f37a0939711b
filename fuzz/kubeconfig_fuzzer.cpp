// Fuzzes kubeconfig parsing and, on what parses, merging and resolving every context.
// Invariants: no crash; a rejected file comes with at least one error, and every error
// names the file, a field path (or a position, for YAML-level errors) and a rule; an
// accepted file has no error; merging one file keeps every entry; a resolved config has
// a server and a namespace. No file is read: the reader fails for every path, so paths in
// the input only produce "unreadable" errors.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "k8s/client_config.hpp"
#include "k8s/kubeconfig.hpp"

using namespace gpubank;
using namespace gpubank::k8s;

namespace {

void check_errors(const Diagnostics& diagnostics, std::size_t from) {
  for (std::size_t i = from; i < diagnostics.size(); ++i) {
    const Diagnostic& d = diagnostics[i];
    if (d.severity != Severity::Error || d.rule.empty() || d.message.empty() || d.file.empty()) __builtin_trap();
    if (d.path.empty() && d.pos.line == 0) __builtin_trap();  // says neither which field nor where
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > 64 * 1024) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  KubeconfigLimits limits;
  limits.max_entries = 64;
  limits.max_nodes = 20'000;
  Diagnostics diagnostics;
  auto config = parse_kubeconfig(text, "fuzz.yaml", "/nonexistent", diagnostics, limits);
  check_errors(diagnostics, 0);
  if (!config) {
    if (!has_errors(diagnostics)) __builtin_trap();  // rejected without saying why
    return 0;
  }
  if (has_errors(diagnostics)) __builtin_trap();  // accepted despite an error
  const MergedKubeconfig merged = merge_kubeconfigs({*config});
  if (merged.contexts.size() != config->contexts.size() || merged.clusters.size() != config->clusters.size() ||
      merged.users.size() != config->users.size()) {
    __builtin_trap();  // names are unique within a file, so one file merges to itself
  }
  const FileReader no_files = [](const std::string& path) -> Expected<std::string> {
    return Unexpected{"cannot read " + path + ": the fuzzer reads no files"};
  };
  for (const auto& [name, context] : merged.contexts) {
    Diagnostics resolve_diagnostics;
    ResolveOptions options;
    options.context = name;
    const auto resolved = resolve_kubeconfig(merged, options, no_files, resolve_diagnostics);
    check_errors(resolve_diagnostics, 0);
    if (resolved.has_value() == has_errors(resolve_diagnostics)) __builtin_trap();
    if (resolved && (resolved->server.host.empty() || resolved->server.port == 0 || resolved->namespace_name.empty())) {
      __builtin_trap();
    }
  }
  return 0;
}
