// store_fill: writes a store for the command-line tests from JSON-lines files of ledger and
// audit entries (one append each), optionally changing one audit row afterwards the way
// someone editing the SQLite file underneath gpubank would (the triggers dropped first).
//
//   store_fill STORE LEDGER.jsonl AUDIT.jsonl [--tamper-audit-seq N]
//
// An existing STORE file (and its -wal/-shm) is replaced.
#include <sqlite3.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "store/store.hpp"

namespace {

using namespace gpubank;

int fail(const std::string& message) {
  std::fprintf(stderr, "store_fill: %s\n", message.c_str());
  return 1;
}

template <class Entry, class Decode>
bool read_lines(const std::string& path, Decode decode, std::vector<Entry>& out, std::string& error) {
  std::ifstream in(path);
  if (!in) return error = "cannot read " + path, false;
  int n = 0;
  for (std::string line; std::getline(in, line);) {
    ++n;
    if (line.empty() || line[0] == '#') continue;
    auto e = decode(nlohmann::json::parse(line));
    if (!e) return error = path + ":" + std::to_string(n) + ": " + e.error(), false;
    out.push_back(*e);
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4 && argc != 6) return fail("usage: store_fill STORE LEDGER.jsonl AUDIT.jsonl [--tamper-audit-seq N]");
  const std::string path = argv[1];
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path + suffix);
  std::vector<bank::LedgerEntry> ledger;
  std::vector<bank::AuditEntry> audit;
  std::string error;
  if (!read_lines(argv[2], bank::ledger_entry_from_json, ledger, error)) return fail(error);
  if (!read_lines(argv[3], bank::audit_entry_from_json, audit, error)) return fail(error);
  {
    auto store = store::Store::open(path);
    if (!store) return fail(store.error());
    auto r = (*store)->append(ledger, audit);
    if (!r) return fail(r.error());
  }
  if (argc == 6) {
    sqlite3* db = nullptr;
    if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) return fail("cannot open " + path);
    const std::string sql = "DROP TRIGGER audit_no_update; UPDATE audit SET decision = 'Rejected' WHERE seq = " +
                            std::string(argv[5]);
    char* message = nullptr;
    const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &message);
    const std::string text = message != nullptr ? message : "";
    sqlite3_free(message);
    sqlite3_close(db);
    if (rc != SQLITE_OK) return fail(text);
  }
  return 0;
}
