// Fuzzes the ledger and audit JSON decoders and the LedgerBook fold. The input is JSON
// lines; each line that decodes as a LedgerEntry is folded into a book (whatever the fold
// refuses is skipped), each that decodes as an AuditEntry is chained. Checked:
//   - decode(encode(entry)) == entry for both entry types;
//   - a chain built with chain_audit_entry always verifies, and a changed entry never does;
//     the same for the ledger's chain (chain_ledger_entry, LedgerChainVerifier);
//   - the book's answers are sane (no negative borrowable, lending floor, GPU-ms or record
//     count; records inside their range) and the same when the accepted entries are
//     folded again into a fresh book.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "bank/audit.hpp"
#include "bank/ledger.hpp"

namespace {

using namespace gpubank;

[[noreturn]] void fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "\nledger_json_fuzzer: %s: %s\n", what, detail.c_str());
  std::fflush(stderr);
  __builtin_trap();
}

std::string answers(const bank::LedgerBook& book) {
  const std::int64_t last = book.last_time_ms();
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const std::int64_t at : {std::int64_t{-1}, std::int64_t{0}, last / 2, last, bank::kMaxTimeMs}) {
    for (const auto& p : book.positions(at)) {
      if (p.borrowable < 0 || p.lending_floor < 0) fail("negative position", bank::to_json(p).dump());
      out.push_back(bank::to_json(p));
    }
  }
  for (const auto& [from, to] : {std::pair<std::int64_t, std::int64_t>{0, bank::kMaxTimeMs}, {last / 3, last / 2 + 1},
                                 {last, last + 1}}) {
    for (const auto& r : book.records(from, to)) {
      if (r.start_ms >= to || (r.end_ms && *r.end_ms < r.start_ms)) fail("record outside its range", r.id);
      out.push_back(bank::to_json(r));
    }
    for (const auto& t : book.pair_totals(from, to)) {
      if (t.gpu_ms < 0 || t.records <= 0) fail("bad pair total", bank::to_json(t).dump());
      out.push_back(bank::to_json(t));
    }
  }
  std::set<std::string> workloads;
  for (const auto& e : book.entries()) {
    if (!e.workload.empty()) workloads.insert(e.workload);
  }
  for (const auto& w : workloads) {
    for (const auto& e : book.trail(w)) {
      if (e.workload != w) fail("trail entry of another workload", w);
    }
    if (book.trail(w).empty()) fail("workload without a trail", w);
  }
  return out.dump();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > 64 * 1024) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  bank::LedgerBook book;
  std::vector<bank::LedgerEntry> accepted;
  std::vector<bank::AuditEntry> chain;
  std::int64_t next_seq = 1;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    const auto json = nlohmann::json::parse(text.substr(start, end - start), nullptr, false);
    start = end + 1;
    if (json.is_discarded()) continue;

    if (auto entry = bank::ledger_entry_from_json(json)) {
      const auto again = bank::ledger_entry_from_json(nlohmann::json::parse(bank::to_json(*entry).dump()));
      if (!again || !(*again == *entry)) fail("ledger entry round trip", json.dump());
      (void)bank::validate_entry(*entry);
      bank::LedgerEntry e = *entry;
      if (e.seq == 0) e.seq = next_seq;  // unnumbered entries follow the last one
      if (book.apply(e)) {
        accepted.push_back(e);
        if (e.seq < INT64_MAX) next_seq = e.seq + 1;
      }
    }
    if (auto entry = bank::audit_entry_from_json(json)) {
      const auto again = bank::audit_entry_from_json(nlohmann::json::parse(bank::to_json(*entry).dump()));
      if (!again || !(*again == *entry)) fail("audit entry round trip", json.dump());
      (void)bank::validate_audit_entry(*entry);
      (void)bank::verify_chain({&*entry, 1});
      bank::AuditEntry e = *entry;
      bank::chain_audit_entry(e, chain.empty() ? 0 : chain.back().seq, chain.empty() ? "" : chain.back().hash);
      chain.push_back(e);
    }
  }
  // The accepted ledger entries, chained as the store would (renumbered 1, 2, 3, ...).
  std::vector<bank::LedgerEntry> ledger_chain = accepted;
  for (std::size_t i = 0; i < ledger_chain.size(); ++i) {
    bank::chain_ledger_entry(ledger_chain[i], static_cast<std::int64_t>(i), i == 0 ? "" : ledger_chain[i - 1].hash,
                             static_cast<std::int64_t>(chain.size()), chain.empty() ? "" : chain.back().hash);
  }
  bank::LedgerChainVerifier ledger_verifier;
  for (const auto& e : ledger_chain) {
    if (!ledger_verifier.feed(e)) fail("a freshly built ledger chain does not verify", ledger_verifier.report().problem);
  }
  if (!ledger_chain.empty()) {
    ledger_chain.back().gpus += 1;
    bank::LedgerChainVerifier changed;
    bool ok = true;
    for (const auto& e : ledger_chain) ok = changed.feed(e);
    if (ok) fail("a changed ledger entry verifies", bank::to_json(ledger_chain.back()).dump());
  }
  const bank::ChainReport report = bank::verify_chain(chain);
  if (!report.ok) fail("a freshly built chain does not verify", report.problem);
  if (!chain.empty()) {
    chain.front().reason += "!";
    if (bank::verify_chain(chain).ok) fail("a changed entry verifies", chain.front().reason);
  }
  bank::LedgerBook again;
  if (!again.apply_all(accepted)) fail("refolding accepted entries failed", "");
  if (answers(book) != answers(again)) fail("the same entries fold to different answers", "");
  return 0;
}
