// up_store_dump: prints every ledger and audit entry of a store, one line each, with its
// seq and content fields (not the audit chain's hashes or other store-assigned columns), so
// that two stores of the same run can be compared with cmp (tests/cli/up_kill.sh).
//
//   up_store_dump STORE
#include <cstdio>
#include <iostream>
#include <string>

#include <nlohmann/json.hpp>

#include "store/store.hpp"

namespace {

using namespace gpubank;
using Json = nlohmann::ordered_json;

Json ledger_line(const bank::LedgerEntry& e) {
  return Json{{"seq", e.seq},
              {"timeMs", e.time_ms},
              {"kind", std::string(bank::kind_name(e.kind))},
              {"pool", e.pool},
              {"flavor", e.flavor},
              {"businessGroup", e.business_group},
              {"lender", e.lender},
              {"workload", e.workload},
              {"record", e.record},
              {"gpus", e.gpus},
              {"lendingLimit", e.lending_limit},
              {"borrowingLimit", e.borrowing_limit},
              {"reason", e.reason}};
}

Json audit_line(const bank::AuditEntry& e) {
  return Json{{"seq", e.seq},          {"timeMs", e.time_ms},   {"actor", e.actor},
              {"action", e.action},    {"object", e.object},    {"policyVersion", e.policy_version},
              {"decision", e.decision}, {"reason", e.reason},    {"numbers", e.numbers}};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: up_store_dump STORE\n";
    return 2;
  }
  store::OpenOptions options;
  options.create = false;
  auto opened = store::Store::open(argv[1], options);
  if (!opened) {
    std::cerr << "up_store_dump: " << opened.error() << '\n';
    return 1;
  }
  store::Store& s = **opened;
  for (std::int64_t after = 0;;) {
    auto page = s.ledger(after, 10'000);
    if (!page) {
      std::cerr << "up_store_dump: " << page.error() << '\n';
      return 1;
    }
    if (page->empty()) break;
    for (const auto& e : *page) std::cout << "ledger " << ledger_line(e).dump() << '\n';
    after = page->back().seq;
  }
  for (std::int64_t after = 0;;) {
    auto page = s.audit(after, 10'000);
    if (!page) {
      std::cerr << "up_store_dump: " << page.error() << '\n';
      return 1;
    }
    if (page->empty()) break;
    for (const auto& e : *page) std::cout << "audit " << audit_line(e).dump() << '\n';
    after = page->back().seq;
  }
  return std::cout.flush() ? 0 : 1;
}
