// gpubank bank ledger: reads a store's ledger afterwards and prints positions per pool and
// group (at the end, or --at), the borrow records overlapping a range, GPU-hours per
// lender/borrower pair over it, or one workload's trail.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <iostream>
#include <optional>
#include <vector>

#include "bank/ledger.hpp"
#include "cli/command.hpp"
#include "core/escape.hpp"
#include "store/store.hpp"

namespace gpubank::cli {
namespace {

using Json = nlohmann::ordered_json;

struct LedgerOptions {
  std::string store;
  std::optional<std::int64_t> at, from, to;
  std::string workload;
  Format format = Format::Text;
};

// A plain text table: columns as wide as their widest cell, two spaces apart. Cells come
// from the store (names, reasons) and are escaped: one row stays one line.
void print_table(std::ostream& out, std::vector<std::vector<std::string>> rows) {
  if (rows.empty()) return;
  for (auto& row : rows) {
    for (auto& cell : row) cell = escape_text(cell);
  }
  std::vector<std::size_t> width(rows[0].size(), 0);
  for (const auto& row : rows) {
    for (std::size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  for (const auto& row : rows) {
    std::string line;
    for (std::size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(width[i] - row[i].size() + 2, ' ');
    }
    out << line << '\n';
  }
}

std::string limit_text(std::int64_t v) { return v < 0 ? "-" : std::to_string(v); }

std::string hours_text(const bank::PairTotal& t) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3f", t.gpu_hours());
  return buf;
}

std::string range_text(std::int64_t from, std::optional<std::int64_t> to) {
  return "[" + std::to_string(from) + ", " + (to ? std::to_string(*to) : std::string("end")) + ") ms";
}

int print_trail(store::Store& store, const LedgerOptions& opt) {
  auto trail = store.ledger_for_workload(opt.workload);
  if (!trail) {
    std::cerr << "gpubank bank ledger: " << trail.error() << '\n';
    return 1;
  }
  if (opt.format != Format::Text) {
    Json entries = Json::array();
    for (const auto& e : *trail) entries.push_back(bank::to_json(e));
    print_structured(std::cout, Json{{"store", store.location()}, {"workload", opt.workload}, {"trail", entries}},
                     opt.format);
    return 0;
  }
  std::cout << "trail of " << escape_text(opt.workload) << ": " << trail->size() << " entries\n";
  std::vector<std::vector<std::string>> rows{
      {"SEQ", "TIME-MS", "KIND", "POOL", "FLAVOR", "GROUP", "LENDER", "RECORD", "GPUS", "REASON"}};
  for (const auto& e : *trail) {
    rows.push_back({std::to_string(e.seq), std::to_string(e.time_ms), std::string(bank::kind_name(e.kind)), e.pool,
                    e.flavor, e.business_group, e.lender.empty() ? "-" : e.lender, e.record.empty() ? "-" : e.record,
                    std::to_string(e.gpus), e.reason.empty() ? "-" : e.reason});
  }
  if (!trail->empty()) print_table(std::cout, rows);
  return 0;
}

int run_ledger(const LedgerOptions& opt) {
  if (opt.from && opt.to && *opt.from >= *opt.to) {
    std::cerr << "gpubank bank ledger: --from must be before --to\n";
    return 2;
  }
  auto opened = store::Store::open(opt.store, store::OpenOptions{.create = false});
  if (!opened) {
    std::cerr << "gpubank bank ledger: " << opened.error() << '\n';
    return 1;
  }
  store::Store& store = **opened;
  if (!opt.workload.empty()) return print_trail(store, opt);

  auto book = store::load_book(store);
  if (!book) {
    std::cerr << "gpubank bank ledger: " << book.error() << '\n';
    return 1;
  }
  const std::int64_t at = opt.at.value_or(book->last_time_ms());
  const std::int64_t from = opt.from.value_or(0);
  const std::int64_t to = opt.to.value_or(bank::kMaxTimeMs);
  const auto positions = book->positions(at);
  const auto records = book->records(from, to);
  const auto totals = book->pair_totals(from, to);

  if (opt.format != Format::Text) {
    Json out{{"store", store.location()},
             {"backend", store.backend()},
             {"entries", book->size()},
             {"lastSeq", book->last_seq()},
             {"lastTimeMs", book->last_time_ms()},
             {"atMs", at}};
    Json p = Json::array();
    for (const auto& x : positions) p.push_back(bank::to_json(x));
    out["positions"] = std::move(p);
    out["range"] = Json{{"fromMs", from}, {"toMs", opt.to ? Json(*opt.to) : Json(nullptr)}};
    Json r = Json::array();
    for (const auto& x : records) r.push_back(bank::to_json(x));
    out["records"] = std::move(r);
    Json t = Json::array();
    for (const auto& x : totals) t.push_back(bank::to_json(x));
    out["pairTotals"] = std::move(t);
    print_structured(std::cout, out, opt.format);
    return 0;
  }

  std::cout << "store " << store.location() << " (" << store.backend() << "): " << book->size()
            << " ledger entries, the last at " << book->last_time_ms() << " ms\n\n";
  std::cout << "positions at " << at << " ms: " << positions.size() << '\n';
  std::vector<std::vector<std::string>> rows{{"POOL", "GROUP", "GUARANTEED", "USED", "BORROWED", "LENT", "LENDING-FLOOR",
                                              "BORROWABLE", "LENDING-LIMIT", "BORROWING-LIMIT"}};
  for (const auto& p : positions) {
    rows.push_back({p.pool, p.business_group, std::to_string(p.guaranteed), std::to_string(p.used),
                    std::to_string(p.borrowed), std::to_string(p.lent), std::to_string(p.lending_floor),
                    std::to_string(p.borrowable), limit_text(p.lending_limit), limit_text(p.borrowing_limit)});
  }
  if (!positions.empty()) print_table(std::cout, rows);

  std::cout << "\nborrow records overlapping " << range_text(from, opt.to) << ": " << records.size() << '\n';
  rows = {{"RECORD", "LENDER", "BORROWER", "POOL", "FLAVOR", "GPUS", "WORKLOAD", "START-MS", "END-MS", "CLOSE-REASON"}};
  for (const auto& r : records) {
    rows.push_back({r.id, r.lender, r.borrower, r.pool, r.flavor, std::to_string(r.gpus), r.workload,
                    std::to_string(r.start_ms), r.end_ms ? std::to_string(*r.end_ms) : "open",
                    r.close_reason.empty() ? "-" : r.close_reason});
  }
  if (!records.empty()) print_table(std::cout, rows);

  std::cout << "\nGPU-hours per pair over " << range_text(from, opt.to) << ": " << totals.size() << '\n';
  rows = {{"LENDER", "BORROWER", "POOL", "GPU-HOURS", "GPU-MS", "RECORDS"}};
  for (const auto& t : totals) {
    rows.push_back({t.lender, t.borrower, t.pool, hours_text(t), std::to_string(t.gpu_ms), std::to_string(t.records)});
  }
  if (!totals.empty()) print_table(std::cout, rows);
  return 0;
}

Command add_bank_ledger_command(CLI::App& bank) {
  auto opt = std::make_shared<LedgerOptions>();
  CLI::App* cmd = bank.add_subcommand(
      "ledger", "Positions, borrow records and GPU-hours per pair from a store's ledger (or one workload's trail)");
  cmd->add_option("--store", opt->store, "the store: an SQLite file or a postgres:// URL")->required();
  const auto time = CLI::Range(std::int64_t{0}, bank::kMaxTimeMs);
  cmd->add_option("--at", opt->at, "positions at this time (ms; default: the last entry's)")->check(time);
  cmd->add_option("--from", opt->from, "records and pair totals from this time (ms, inclusive; default 0)")->check(time);
  cmd->add_option("--to", opt->to, "records and pair totals up to this time (ms, exclusive; default: the end)")
      ->check(time);
  cmd->add_option("--workload", opt->workload, "print this workload's trail (<namespace>/<name>) instead");
  add_output_option(*cmd, opt->format);
  return {cmd, [opt] { return run_ledger(*opt); }};
}

}  // namespace

Command add_bank_command(CLI::App& app) {
  CLI::App* bank = app.add_subcommand("bank", "The resource bank: its durable ledger");
  bank->require_subcommand(1);
  const std::vector<Command> commands{add_bank_ledger_command(*bank)};
  return {bank, [commands] {
            for (const auto& c : commands) {
              if (c.app->parsed()) return c.action();
            }
            return 2;
          }};
}

}  // namespace gpubank::cli
