// gpubank twin run: a timed scenario (workloads arriving, running, checkpointing) on the
// admission core plus the bank, in virtual time: borrowing, graceful reclaim, the ledger.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <algorithm>
#include <memory>
#include <span>

#include "cli/command.hpp"
#include "core/duration.hpp"
#include "policy/validate.hpp"
#include "metrics/exposition.hpp"
#include "store/store.hpp"
#include "twin/run/engine.hpp"
#include "twin/run/metrics.hpp"

namespace gpubank::cli {
namespace {

struct RunCommandOptions {
  std::vector<std::string> policies;
  std::string workloads;
  std::string until;
  std::string events;
  std::string metrics;
  std::string store;
  Format format = Format::Text;
};

void print(const Diagnostics& diagnostics) {
  for (const auto& d : diagnostics) std::cerr << d.to_string() << '\n';
}

std::string hours(double h) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", h);
  return buf;
}

void print_text(std::ostream& out, const twin::run::RunResult& r) {
  out << "Run ended at t=" << r.end / 1000 << " s (" << r.events.size() << " events, " << r.ledger.size()
      << " ledger entries, " << r.audit.size() << " audit entries)\n\n";
  char line[256];
  std::snprintf(line, sizeof line, "%-28s %-16s %10s %6s %9s %6s %11s %9s\n", "POOL", "GROUP", "GUARANTEED", "USED",
                "BORROWED", "LENT", "BORROWABLE", "FLOOR");
  out << line;
  for (const auto& p : r.positions) {
    std::snprintf(line, sizeof line, "%-28s %-16s %10lld %6lld %9lld %6lld %11lld %9lld\n", p.pool.c_str(),
                  p.business_group.c_str(), static_cast<long long>(p.guaranteed), static_cast<long long>(p.used),
                  static_cast<long long>(p.borrowed), static_cast<long long>(p.lent),
                  static_cast<long long>(p.borrowable), static_cast<long long>(p.lending_floor));
    out << line;
  }
  out << "\nReclaims: " << r.reclaims.size() << '\n';
  for (const auto& rc : r.reclaims) {
    out << "  " << rc.id << ": " << rc.lender << " in " << rc.pool << ", demand " << rc.demand << " GPUs, t="
        << rc.started / 1000 << " s -> " << (rc.ended ? std::to_string(*rc.ended / 1000) + " s" : "open") << ", "
        << rc.result << '\n';
    for (const auto& v : rc.victims) {
      out << "    " << v.workload << " (" << v.gpus << " GPUs, " << v.victim_class << "): notice " << v.notice / 1000
          << " s";
      if (v.checkpoint_completed) out << ", checkpoint " << *v.checkpoint_completed / 1000 << " s";
      if (v.checkpoint_failed) out << ", checkpoint failed " << *v.checkpoint_failed / 1000 << " s";
      if (v.stopped) out << ", stopped " << *v.stopped / 1000 << " s";
      if (v.finished) out << ", finished " << *v.finished / 1000 << " s";
      if (v.released) out << ", notice withdrawn " << *v.released / 1000 << " s";
      out << ", loss " << hours(static_cast<double>(v.loss_gpu_ms) / 3.6e6) << " GPU-h\n";
    }
  }
  out << "\nRecomputation loss: " << hours(static_cast<double>(r.recompute_loss_gpu_ms) / 3.6e6)
      << " GPU-hours; checkpoints: " << r.checkpoints_ok << " completed, " << r.checkpoints_failed << " failed\n";
}

int run(const RunCommandOptions& opt) {
  const policy::PolicySet set = policy::load_policy_set(opt.policies);
  Diagnostics diagnostics = set.diagnostics();
  const Diagnostics checks = policy::validate(set);
  diagnostics.insert(diagnostics.end(), checks.begin(), checks.end());
  if (has_errors(diagnostics)) {
    print(diagnostics);
    std::cerr << "gpubank twin run: the policies are invalid\n";
    return 1;
  }
  auto scenario = twin::run::load_scenario(opt.workloads, diagnostics);
  if (!scenario) {
    print(diagnostics);
    std::cerr << "gpubank twin run: the scenario is invalid\n";
    return 1;
  }
  twin::run::RunOptions options;
  if (!opt.until.empty()) {
    auto until = Duration::parse(opt.until);
    if (!until || until->negative()) {
      std::cerr << "gpubank twin run: --until: " << (until ? "must not be negative" : until.error()) << '\n';
      return 2;
    }
    options.until = until->milliseconds();
  }
  std::unique_ptr<store::Store> db;
  if (!opt.store.empty()) {
    auto opened = store::Store::open(opt.store);
    if (!opened) {
      std::cerr << "gpubank twin run: --store: " << opened.error() << '\n';
      return 1;
    }
    db = std::move(opened.value());
    auto head = db->head();
    if (!head) {
      std::cerr << "gpubank twin run: --store: " << head.error() << '\n';
      return 1;
    }
    if (head->ledger_seq > 0 || head->audit_seq > 0) {
      // A run's virtual clock starts at 0; the ledger's times never go back.
      std::cerr << "gpubank twin run: --store: " << opt.store << " already holds " << head->ledger_seq
                << " ledger and " << head->audit_seq << " audit entries; a run needs an empty store\n";
      return 1;
    }
    // Each instant's entries are durable before the run goes on, as the controller appends them.
    options.on_instant = [&db](std::span<const bank::LedgerEntry> ledger,
                               std::span<const bank::AuditEntry> audit) -> Expected<bool> {
      for (std::size_t l = 0, a = 0; l < ledger.size() || a < audit.size();) {
        const std::size_t nl = std::min(ledger.size() - l, store::kMaxBatch / 2);
        const std::size_t na = std::min(audit.size() - a, store::kMaxBatch / 2);
        auto appended = db->append(ledger.subspan(l, nl), audit.subspan(a, na));
        if (!appended) return Unexpected{appended.error()};
        l += nl;
        a += na;
      }
      return true;
    };
  }
  std::cerr << "gpubank twin run: " << scenario->workloads.size() << " workloads\n";
  const auto result = twin::run::run_scenario(set, *scenario, options);
  if (!result.ok()) {
    print(result.diagnostics);
    std::cerr << "gpubank twin run: the scenario does not fit the policies\n";
    return 1;
  }
  if (!opt.events.empty()) {
    std::ofstream out(opt.events, std::ios::binary | std::ios::trunc);
    for (const auto& e : result.events) out << twin::run::event_json(e, result.start).dump() << '\n';
    out.close();
    if (!out) {
      std::cerr << "gpubank twin run: --events: cannot write " << opt.events << '\n';
      return 1;
    }
  }
  if (!opt.metrics.empty()) {
    metrics::Registry registry;
    if (auto exported = twin::run::export_metrics(result, registry); !exported) {
      std::cerr << "gpubank twin run: " << exported.error() << '\n';
      return 1;
    }
    std::ofstream out(opt.metrics, std::ios::binary | std::ios::trunc);
    out << metrics::write_text(registry);
    out.close();
    if (!out) {
      std::cerr << "gpubank twin run: --metrics: cannot write " << opt.metrics << '\n';
      return 1;
    }
  }
  if (opt.format == Format::Text) {
    print_text(std::cout, result);
  } else {
    auto json = twin::run::result_json(result);
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const auto& e : result.events) list.push_back(twin::run::event_json(e, result.start));
    json["events"] = std::move(list);
    print_structured(std::cout, json, opt.format);
  }
  return 0;
}

}  // namespace

Command add_twin_run_command(CLI::App& twin) {
  auto opt = std::make_shared<RunCommandOptions>();
  CLI::App* cmd = twin.add_subcommand(
      "run",
      "Run a timed scenario in virtual time on Kueue's admission (the policies rendered as `gpubank render` does) plus "
      "the bank: borrowing attributed to lenders, graceful reclaim with checkpoints, the ledger and the event log. "
      "Exits 1 on invalid input, 2 on usage errors.");
  cmd->footer(
      "The scenario file lists workloads: name, businessGroup, resourcePool, gpus (per pod), pods, workloadType, "
      "checkpointable, checkpointInterval, checkpointDuration, checkpointFails, priorityClass, arrivalTime, runTime, "
      "startupTime, labels. See src/twin/run/scenario.hpp and examples/scenarios/.");
  cmd->add_option("--policies", opt->policies, "policy files and directories (PlatformGuardrails, GPUQuotaPolicy, ...)")
      ->required()
      ->expected(1, -1);
  cmd->add_option("--workloads", opt->workloads, "the scenario file (YAML)")->required();
  cmd->add_option("--until", opt->until, "stop at this virtual time (a duration such as 12h); default: when all is done");
  cmd->add_option("--events", opt->events, "also write the event log as JSON lines (../shared/spec/events.md)");
  cmd->add_option("--store", opt->store,
                  "persist the ledger and the audit log, instant by instant, to a new store: an SQLite file or a "
                  "postgres:// URL (read it with `gpubank bank ledger` and `gpubank audit verify`)");
  cmd->add_option("--metrics", opt->metrics,
                  "also write the bank's metrics at the end of the run (Prometheus text format 0.0.4)");
  add_output_option(*cmd, opt->format);
  return {cmd, [opt] { return run(*opt); }};
}

}  // namespace gpubank::cli
