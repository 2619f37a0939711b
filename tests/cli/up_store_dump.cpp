// up_store_dump: prints every ledger and audit entry of a store, one line each, with its
// seq and content fields (not the audit chain's hashes or other store-assigned columns), so
// that two stores of the same run can be compared with cmp (tests/cli/up_kill.sh).
//
//   up_store_dump STORE
#include <cstdio>
#include <iostream>
#include <string>

#include <nlohmann/json.hpp>

#include "bank/audit.hpp"
#include "bank/ledger.hpp"
#include "store/store.hpp"

namespace {

using namespace gpubank;
using Json = nlohmann::ordered_json;

// The entry as bank::to_json writes it, less what the store assigns besides seq: the hash
// chains depend on how the entries were batched into appends, which a kill changes.
Json content(Json entry) {
  for (const char* assigned : {"prevHash", "auditSeq", "auditHash", "hash"}) entry.erase(assigned);
  return entry;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: up_store_dump STORE\n";
    return 2;
  }
  store::OpenOptions options;
  options.create = false;
  options.read_only = true;
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
    for (const auto& e : *page) std::cout << "ledger " << content(bank::to_json(e)).dump() << '\n';
    after = page->back().seq;
  }
  for (std::int64_t after = 0;;) {
    auto page = s.audit(after, 10'000);
    if (!page) {
      std::cerr << "up_store_dump: " << page.error() << '\n';
      return 1;
    }
    if (page->empty()) break;
    for (const auto& e : *page) std::cout << "audit " << content(bank::to_json(e)).dump() << '\n';
    after = page->back().seq;
  }
  return std::cout.flush() ? 0 : 1;
}
