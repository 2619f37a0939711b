// Fuzzes `gpubank twin run` on a scenario file: parse_scenario -> run_scenario over the
// example policies (virtual time bounded to a week). Invalid scenarios must only produce
// findings; valid ones run through admission, attribution, reclaim and leases, and the
// ledger they leave must balance: every usage and borrow record opened is closed at most
// once, GPUs never go negative, and two runs give the same result.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>
#include <string_view>

#include "policy/policy_set.hpp"
#include "twin/run/engine.hpp"
#include "twin/run/scenario.hpp"

using namespace gpubank;

namespace {

const policy::PolicySet& policies() {
  static const policy::PolicySet set = [] {
    const char* env = std::getenv("GPUBANK_SOURCE_DIR");
    const std::string root = env != nullptr ? env : GPUBANK_DEFAULT_SOURCE_DIR;
    return policy::load_policy_set({root + "/examples/policies"});
  }();
  return set;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > 64 * 1024) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  Diagnostics diagnostics;
  twin::run::ScenarioLimits limits;
  limits.max_workloads = 64;
  const auto scenario = twin::run::parse_scenario(text, "fuzz.yaml", diagnostics, limits);
  if (!scenario) {
    if (!has_errors(diagnostics)) __builtin_trap();  // rejected without saying why
    return 0;
  }
  twin::run::RunOptions options;
  options.until = 7LL * 24 * 3600 * 1000;
  const auto result = twin::run::run_scenario(policies(), *scenario, options);
  if (!result.ok()) return 0;
  std::map<std::string, std::int64_t> usage, borrows;
  for (const auto& e : result.ledger) {
    if (e.gpus < 0) __builtin_trap();
    switch (e.kind) {
      case bank::LedgerKind::UsageStarted: usage[e.workload] += 1; break;
      case bank::LedgerKind::UsageEnded:
        if (--usage[e.workload] < 0) __builtin_trap();
        break;
      case bank::LedgerKind::BorrowOpened: borrows[e.record] += 1; break;
      case bank::LedgerKind::BorrowClosed:
        if (--borrows[e.record] != 0) __builtin_trap();
        break;
      case bank::LedgerKind::QuotaSet: break;
    }
  }
  const auto again = twin::run::run_scenario(policies(), *scenario, options);
  if (twin::run::result_json(again).dump() != twin::run::result_json(result).dump()) __builtin_trap();
  return 0;
}
