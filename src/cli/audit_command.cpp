// gpubank audit verify / head: the hash chains of a store (the audit log and the ledger, each
// naming the other) or of the webhook's JSON-lines audit log.
//
//   verify  checks the chains (gapless seqs, every prevHash the previous hash, every hash
//           recomputed, the ledger's links into the audit log) and, with --expect /
//           --expect-ledger, that an anchor kept elsewhere is still in the chain: exit 1
//           naming the first broken seq, or the anchor that is missing or differs.
//   head    prints the heads as SEQ:HASH anchors, to keep outside the store.
//
// Both open the store read-only and never migrate it.
#include <CLI/CLI.hpp>

#include <iostream>
#include <vector>

#include "api/audit_log.hpp"
#include "cli/command.hpp"
#include "core/escape.hpp"
#include "store/store.hpp"

namespace gpubank::cli {
namespace {

struct AuditOptions {
  std::string store;
  std::string jsonl;
  std::string expect;
  std::string expect_ledger;
  Format format = Format::Text;
};

// Exactly one of --store and --jsonl; a usage error (2) otherwise.
bool check_source(const AuditOptions& opt, const char* command) {
  if (opt.store.empty() == opt.jsonl.empty()) {
    std::cerr << "gpubank audit " << command << ": "
              << (opt.store.empty() ? "--store is required (or --jsonl FILE for a webhook audit log)"
                                    : "--store and --jsonl exclude each other")
              << '\n';
    return false;
  }
  return true;
}

Expected<std::unique_ptr<store::Store>> open_read_only(const std::string& location) {
  return store::Store::open(location, store::OpenOptions{.create = false, .read_only = true});
}

std::string anchor_text(std::int64_t seq, const std::string& hash) { return std::to_string(seq) + ":" + hash; }

void print_chain(const char* name, const bank::ChainReport& r) {
  if (r.ok) {
    std::cout << name << " chain intact: " << r.entries << (r.entries == 1 ? " entry" : " entries");
    if (r.entries > 0) std::cout << ", head " << r.head << " (seq " << r.last_seq << ")";
    std::cout << '\n';
  } else {
    std::cout << name << " chain broken at seq " << r.broken_seq << ": " << escape_text(r.problem) << '\n'
              << r.entries << (r.entries == 1 ? " entry" : " entries") << " before it verified\n";
  }
}

int verify_jsonl(const AuditOptions& opt) {
  std::optional<bank::Anchor> anchor;
  if (!opt.expect.empty()) {
    auto parsed = bank::parse_anchor(opt.expect);
    if (!parsed) return std::cerr << "gpubank audit verify: --expect: " << parsed.error() << '\n', 1;
    anchor = *parsed;
  }
  auto report = api::verify_audit_log(opt.jsonl, anchor);
  if (!report) return std::cerr << "gpubank audit verify: " << report.error() << '\n', 1;
  if (opt.format != Format::Text) {
    nlohmann::ordered_json out{{"jsonl", opt.jsonl}};
    out.update(bank::to_json(report->chain));
    if (!report->torn_tail.empty()) out["tornTail"] = report->torn_tail;
    if (!report->anchor_problem.empty()) out["anchorProblem"] = report->anchor_problem;
    out["intact"] = report->ok();
    print_structured(std::cout, out, opt.format);
  } else {
    print_chain("audit log", report->chain);
    if (!report->torn_tail.empty()) std::cout << escape_text(report->torn_tail) << '\n';
    if (!report->anchor_problem.empty()) std::cout << escape_text(report->anchor_problem) << '\n';
  }
  return report->ok() ? 0 : 1;
}

int run_verify(const AuditOptions& opt) {
  if (!check_source(opt, "verify")) return 2;
  if (!opt.jsonl.empty()) {
    if (!opt.expect_ledger.empty()) {
      std::cerr << "gpubank audit verify: --expect-ledger needs --store (a JSON-lines log has no ledger)\n";
      return 2;
    }
    return verify_jsonl(opt);
  }
  store::VerifyOptions anchors;
  for (const auto& [flag, text, into] : {std::tuple{"--expect", &opt.expect, &anchors.audit_anchor},
                                         std::tuple{"--expect-ledger", &opt.expect_ledger, &anchors.ledger_anchor}}) {
    if (text->empty()) continue;
    auto parsed = bank::parse_anchor(*text);
    if (!parsed) return std::cerr << "gpubank audit verify: " << flag << ": " << parsed.error() << '\n', 1;
    *into = *parsed;
  }
  auto opened = open_read_only(opt.store);
  if (!opened) return std::cerr << "gpubank audit verify: " << opened.error() << '\n', 1;
  auto report = store::verify_store(**opened, anchors);
  if (!report) return std::cerr << "gpubank audit verify: " << report.error() << '\n', 1;
  if (opt.format != Format::Text) {
    nlohmann::ordered_json out{{"store", (*opened)->location()}, {"intact", report->ok()}};
    out["audit"] = bank::to_json(report->audit);
    out["ledger"] = bank::to_json(report->ledger);
    if (!report->audit_anchor_problem.empty()) out["auditAnchorProblem"] = report->audit_anchor_problem;
    if (!report->ledger_anchor_problem.empty()) out["ledgerAnchorProblem"] = report->ledger_anchor_problem;
    print_structured(std::cout, out, opt.format);
  } else {
    print_chain("audit", report->audit);
    print_chain("ledger", report->ledger);
    for (const std::string* problem : {&report->audit_anchor_problem, &report->ledger_anchor_problem}) {
      if (!problem->empty()) std::cout << escape_text(*problem) << '\n';
    }
    if (anchors.audit_anchor && report->audit_anchor_problem.empty()) std::cout << "audit anchor " << opt.expect << " found\n";
    if (anchors.ledger_anchor && report->ledger_anchor_problem.empty()) {
      std::cout << "ledger anchor " << opt.expect_ledger << " found\n";
    }
  }
  return report->ok() ? 0 : 1;
}

int run_head(const AuditOptions& opt) {
  if (!check_source(opt, "head")) return 2;
  nlohmann::ordered_json out;
  if (!opt.jsonl.empty()) {
    auto head = api::audit_log_head(opt.jsonl);
    if (!head) return std::cerr << "gpubank audit head: " << head.error() << '\n', 1;
    out = {{"jsonl", opt.jsonl}, {"audit", {{"seq", head->seq}, {"hash", head->hash}}}};
  } else {
    auto opened = open_read_only(opt.store);
    if (!opened) return std::cerr << "gpubank audit head: " << opened.error() << '\n', 1;
    auto head = (*opened)->head();
    if (!head) return std::cerr << "gpubank audit head: " << head.error() << '\n', 1;
    out = {{"store", (*opened)->location()},
           {"audit", {{"seq", head->audit_seq}, {"hash", head->audit_hash}}},
           {"ledger", {{"seq", head->ledger_seq}, {"hash", head->ledger_hash}}}};
  }
  if (opt.format != Format::Text) {
    print_structured(std::cout, out, opt.format);
    return 0;
  }
  for (const char* chain : {"audit", "ledger"}) {
    if (!out.contains(chain)) continue;
    const auto& h = out[chain];
    const auto seq = h["seq"].get<std::int64_t>();
    std::cout << chain << ' ' << (seq == 0 ? std::string("(empty)") : anchor_text(seq, h["hash"].get<std::string>()))
              << '\n';
  }
  return 0;
}

void add_source_options(CLI::App& cmd, AuditOptions& opt) {
  cmd.add_option("--store", opt.store, "the store: an SQLite file or a postgres:// URL (opened read-only)");
  cmd.add_option("--jsonl", opt.jsonl, "a webhook's JSON-lines audit log instead of a store");
  add_output_option(cmd, opt.format);
}

Command add_audit_verify_command(CLI::App& audit) {
  auto opt = std::make_shared<AuditOptions>();
  CLI::App* cmd = audit.add_subcommand("verify", "Check a store's audit hash chain; exit 1 naming the first broken seq");
  add_source_options(*cmd, *opt);
  cmd->add_option("--expect", opt->expect,
                  "SEQ:HASH of the audit chain (from `audit head`, kept elsewhere): fail unless the chain holds it");
  cmd->add_option("--expect-ledger", opt->expect_ledger, "SEQ:HASH of the ledger chain: fail unless it holds it");
  return {cmd, [opt] { return run_verify(*opt); }};
}

Command add_audit_head_command(CLI::App& audit) {
  auto opt = std::make_shared<AuditOptions>();
  CLI::App* cmd =
      audit.add_subcommand("head", "Print the heads of a store's audit and ledger chains as SEQ:HASH anchors");
  add_source_options(*cmd, *opt);
  return {cmd, [opt] { return run_head(*opt); }};
}

}  // namespace

Command add_audit_command(CLI::App& app) {
  CLI::App* audit = app.add_subcommand("audit", "The audit log of a store: verify its hash chains, print their heads");
  audit->require_subcommand(1);
  const std::vector<Command> commands{add_audit_verify_command(*audit), add_audit_head_command(*audit)};
  return {audit, [commands] {
            for (const auto& c : commands) {
              if (c.app->parsed()) return c.action();
            }
            return 2;
          }};
}

}  // namespace gpubank::cli
