// gpubank twin run: a timed scenario (workloads arriving, running, checkpointing) on the
// admission core plus the bank, in virtual time: borrowing, graceful reclaim, the ledger.
#include <CLI/CLI.hpp>
#include <sys/resource.h>

#include <chrono>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <algorithm>
#include <memory>
#include <span>

#include "cli/command.hpp"
#include "cli/validators.hpp"
#include "core/duration.hpp"
#include "policy/validate.hpp"
#include "metrics/exposition.hpp"
#include "store/store.hpp"
#include "twin/run/engine.hpp"
#include "twin/run/metrics.hpp"
#include "twin/run/summary.hpp"
#include "twin/live/platform.hpp"
#include "twin/trace/alibaba_replay.hpp"
#include "document/loader.hpp"
#include "document/reader.hpp"
#include "twin/cluster/inventory.hpp"
#include <variant>

namespace gpubank::cli {
namespace {

struct RunCommandOptions {
  std::vector<std::string> policies;
  std::string workloads;
  std::string trace;      // alibaba:<pods.csv>
  std::string inventory;  // a YAML file or alibaba:<nodes.csv>
  std::int64_t days = 0;
  std::int64_t replicate = 1;
  std::uint64_t seed = 1;
  std::string groups = "team-a=4,team-b=3,team-c=2,team-d=1";
  std::string shared_model = "T4";
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
  out << "Run ended at t=" << r.end / 1000 << " s (" << r.event_count << " events, " << r.ledger_count
      << " ledger entries, " << r.audit_count << " audit entries)\n\n";
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

// "name=weight,name=weight" (weights 1..1e9).
std::optional<std::vector<twin::trace::GroupWeight>> parse_groups(const std::string& text, std::string& error) {
  std::vector<twin::trace::GroupWeight> out;
  std::size_t from = 0;
  while (from <= text.size()) {
    const std::size_t comma = text.find(',', from);
    const std::string item = text.substr(from, comma == std::string::npos ? std::string::npos : comma - from);
    const std::size_t eq = item.find('=');
    twin::trace::GroupWeight g;
    g.name = item.substr(0, eq);
    try {
      std::size_t used = 0;
      if (eq == std::string::npos) throw std::invalid_argument("no weight");
      g.weight = std::stoll(item.substr(eq + 1), &used);
      if (used != item.size() - eq - 1) throw std::invalid_argument("trailing");
    } catch (const std::exception&) {
      error = "each group is name=weight with an integer weight, got \"" + item + "\"";
      return std::nullopt;
    }
    out.push_back(std::move(g));
    if (comma == std::string::npos) break;
    from = comma + 1;
  }
  return out;
}

// A trace replay's inputs: the cluster, the policies (generated unless --policies), the
// workloads. Returns the exit code on failure.
struct TraceInputs {
  std::shared_ptr<const twin::cluster::Inventory> inventory;
  policy::PolicySet policies;
  twin::run::Scenario scenario;
  std::string mapping_text;
  nlohmann::ordered_json mapping_json;
};

void read_policy_text(const std::string& yaml, policy::PolicySet& set) {
  std::vector<doc::Document> docs;
  doc::read_yaml(yaml, "trace-policies.yaml", docs, set.diagnostics());
  for (const auto& d : docs) set.add(d.root, d.file, d.index);
}

// The replay's cluster, and its generated policies unless --policies names others.
TraceInputs trace_inputs(const RunCommandOptions& opt, twin::cluster::Inventory inventory, const std::string& generated) {
  TraceInputs in;
  in.inventory = std::make_shared<const twin::cluster::Inventory>(std::move(inventory));
  if (opt.policies.empty()) {
    read_policy_text(generated, in.policies);
  } else {
    in.policies = policy::load_policy_set(opt.policies);
  }
  return in;
}

std::variant<TraceInputs, int> load_philly(const RunCommandOptions& opt, const std::string& folder) {
  constexpr std::size_t kMaxTraceBytes = 256u << 20;
  const std::string vc_path = folder + "/philly_vc.csv";
  const std::string sequence_path = folder + "/philly_node_sequence.csv";
  auto vc_text = doc::read_file(vc_path, kMaxTraceBytes);
  auto sequence_text = vc_text ? doc::read_file(sequence_path, kMaxTraceBytes) : Expected<std::string>(vc_text);
  if (!vc_text || !sequence_text) {
    std::cerr << "gpubank twin run: --trace philly: " << (vc_text ? sequence_text.error() : vc_text.error()) << '\n';
    return 1;
  }
  if (!opt.inventory.empty()) {
    std::cerr << "gpubank twin run: --trace philly: the cluster is generated from philly_vc.csv; drop --inventory\n";
    return 2;
  }
  twin::trace::PhillyReplayOptions options;
  options.scenario.seed = opt.seed;
  if (opt.days > 0) options.scenario.days = opt.days;
  Diagnostics diagnostics;
  auto replay = twin::trace::philly_replay(*vc_text, vc_path, *sequence_text, sequence_path, options, diagnostics);
  if (!replay) {
    print(diagnostics);
    std::cerr << "gpubank twin run: the trace cannot be replayed\n";
    return 1;
  }
  TraceInputs in = trace_inputs(opt, std::move(replay->inventory), replay->policy_yaml);
  in.mapping_text = "virtual clusters: " + std::to_string(replay->vcs) + "\nnodes: " + std::to_string(replay->nodes) +
                    "\nminutes without a sample: " + std::to_string(replay->missing_minutes) +
                    "\nworkloads: " + std::to_string(replay->scenario.workloads.size()) + "\n";
  in.mapping_json = {{"virtualClusters", replay->vcs},
                     {"nodes", replay->nodes},
                     {"missingMinutes", replay->missing_minutes},
                     {"workloads", static_cast<std::int64_t>(replay->scenario.workloads.size())}};
  in.scenario = std::move(replay->scenario);
  return in;
}

std::variant<TraceInputs, int> load_trace(const RunCommandOptions& opt) {
  const auto colon = opt.trace.find(':');
  const std::string kind = colon == std::string::npos ? std::string() : opt.trace.substr(0, colon);
  const std::string path = colon == std::string::npos ? std::string() : opt.trace.substr(colon + 1);
  if (kind == "philly" && !path.empty()) return load_philly(opt, path);
  if (kind != "alibaba" || path.empty()) {
    std::cerr << "gpubank twin run: --trace: expected alibaba:<pod list csv> or philly:<folder>, got \"" << opt.trace
              << "\"\n";
    return 2;
  }
  if (opt.inventory.rfind("alibaba:", 0) != 0) {
    std::cerr << "gpubank twin run: --trace alibaba: needs --inventory alibaba:<openb_node_list_gpu_node.csv>\n";
    return 2;
  }
  const std::string nodes_path = opt.inventory.substr(8);
  constexpr std::size_t kMaxTraceBytes = 256u << 20;
  auto pods_text = doc::read_file(path, kMaxTraceBytes);
  if (!pods_text) {
    std::cerr << "gpubank twin run: --trace: " << pods_text.error() << '\n';
    return 1;
  }
  auto nodes_text = doc::read_file(nodes_path, kMaxTraceBytes);
  if (!nodes_text) {
    std::cerr << "gpubank twin run: --inventory: " << nodes_text.error() << '\n';
    return 1;
  }
  std::string error;
  auto groups = parse_groups(opt.groups, error);
  if (!groups) {
    std::cerr << "gpubank twin run: --groups: " << error << '\n';
    return 2;
  }
  twin::trace::AlibabaReplayOptions options;
  options.mapping.seed = opt.seed;
  options.mapping.groups = std::move(*groups);
  options.mapping.replication = opt.replicate;
  if (opt.days > 0) options.mapping.days = opt.days;
  options.shared_model = opt.shared_model;
  Diagnostics diagnostics;
  auto replay = twin::trace::alibaba_replay(*pods_text, path, *nodes_text, nodes_path, options, diagnostics);
  if (!replay) {
    print(diagnostics);
    std::cerr << "gpubank twin run: the trace cannot be replayed\n";
    return 1;
  }
  TraceInputs in = trace_inputs(opt, std::move(replay->inventory), replay->policy_yaml);
  in.scenario = std::move(replay->scenario);
  in.mapping_text = twin::trace::to_text(replay->report);
  in.mapping_json = {{"podsRead", replay->report.pods_read},
                     {"podsMapped", replay->report.pods_mapped},
                     {"workloads", replay->report.workloads},
                     {"fallbackRunTime", replay->report.fallback_run_time},
                     {"skipped", replay->report.skipped}};
  return in;
}

// --trace azure-llm:<csv>: the embedded platform's days (the policies' seeded work, the
// inference services' replicas) with the trace's requests, repeated over each day on the
// diurnal curve, driving the services (src/twin/live, docs/up.md): what `gpubank up
// --llm-trace` serves, run to the end without a server.
int run_llm_trace(const RunCommandOptions& opt, const std::string& path) {
  const std::vector<std::string> paths = opt.policies.empty() ? std::vector<std::string>{"examples/policies"} : opt.policies;
  policy::PolicySet set = policy::load_policy_set(paths);
  Diagnostics diagnostics = set.diagnostics();
  const Diagnostics checks = policy::validate(set);
  diagnostics.insert(diagnostics.end(), checks.begin(), checks.end());
  if (has_errors(diagnostics)) {
    print(diagnostics);
    std::cerr << "gpubank twin run: the policies are invalid\n";
    return 1;
  }
  const std::string inventory_path = opt.inventory.empty() ? "examples/inventory/example.yaml" : opt.inventory;
  Diagnostics inventory_diagnostics;
  auto inventory = twin::cluster::load_inventory(inventory_path, inventory_diagnostics);
  if (!inventory) {
    print(inventory_diagnostics);
    std::cerr << "gpubank twin run: the inventory is invalid\n";
    return 1;
  }
  twin::run::RunOptions run_options;
  run_options.inventory = std::make_shared<const twin::cluster::Inventory>(std::move(*inventory));
  twin::live::DayOptions day;
  day.seed = opt.seed;
  day.start = *parse_rfc3339("2026-11-30T16:00:00Z");  // gpubank up's default: midnight in Asia/Shanghai
  day.hours = 24 * std::max<std::int64_t>(1, opt.days);
  day.llm_trace = path;
  auto platform = twin::live::Platform::create(std::move(set), day, run_options);
  if (!platform) {
    std::cerr << "gpubank twin run: " << platform.error() << '\n';
    return 1;
  }
  auto& p = *platform.value();
  twin::VirtualTime until = p.end();
  if (!opt.until.empty()) {
    auto d = Duration::parse(opt.until);
    if (!d || d->negative()) {
      std::cerr << "gpubank twin run: --until: " << (d ? "must not be negative" : d.error()) << '\n';
      return 2;
    }
    until = std::min(until, d->milliseconds());
  }
  if (!p.advance_to(until)) {
    std::cerr << "gpubank twin run: the run stopped: " << p.error() << '\n';
    return 1;
  }
  if (!opt.events.empty()) {
    std::ofstream events_out(opt.events, std::ios::binary | std::ios::trunc);
    for (const auto& e : p.events()) events_out << twin::run::event_json(e, p.start()).dump() << '\n';
    events_out.close();
    if (!events_out) {
      std::cerr << "gpubank twin run: --events: cannot write " << opt.events << '\n';
      return 1;
    }
  }
  nlohmann::ordered_json json = nlohmann::ordered_json::object();
  json["start"] = format_rfc3339(p.start());
  json["end"] = p.now();
  json["summary"] = p.summary_json();
  json["services"] = p.services_json();
  if (opt.format == Format::Text) {
    for (const auto& s : json["services"]) {
      std::cout << s["policy"].get<std::string>() << ": " << s["arrived"] << " requests, " << s["finished"]
                << " finished, " << s["cut"] << " cut, " << s["rejected"] << " rejected, TTFT p95 over the last "
                << s["ttftWindowSeconds"] << " s: " << s["ttftP95Seconds"] << " s\n";
    }
    std::cout << '\n' << json["summary"].dump(2) << '\n';
  } else {
    print_structured(std::cout, json, opt.format);
  }
  return 0;
}

// Options a trace kind has no use for are refused (exit 2), not ignored: a user who asks for
// --replicate 8 on a trace that cannot replicate must not read a run of one copy as eight.
bool refuse_unused(const CLI::App& cmd, const std::string& kind,
                   std::initializer_list<std::pair<const char*, const char*>> unused) {
  for (const auto& [name, why] : unused) {
    if (cmd.count(name) == 0) continue;
    std::cerr << "gpubank twin run: " << name << " does nothing with --trace " << kind << ": " << why << "; drop it\n";
    return true;
  }
  return false;
}

int run(const RunCommandOptions& opt, const CLI::App& cmd) {
  const auto wall_start = std::chrono::steady_clock::now();  // the whole command: reading, mapping, running
  if (opt.trace.empty() == opt.workloads.empty()) {
    std::cerr << "gpubank twin run: give exactly one of --workloads and --trace\n";
    return 2;
  }
  if (opt.trace.empty() && opt.policies.empty()) {
    std::cerr << "gpubank twin run: --policies is required with --workloads\n";
    return 2;
  }
  if (!opt.trace.empty() && !opt.metrics.empty()) {
    std::cerr << "gpubank twin run: --metrics is not available with --trace (the run keeps no event log in memory)\n";
    return 2;
  }
  const std::string kind = opt.trace.substr(0, opt.trace.find(':'));
  if (kind == "azure-llm" &&
      refuse_unused(cmd, kind,
                    {{"--store", "the platform's days keep their ledger and audit log in memory (gpubank up --store "
                                 "persists them)"},
                     {"--groups", "the business groups are the policies' (--policies)"},
                     {"--replicate", "the request trace is repeated over each day by the diurnal curve, not copied"},
                     {"--shared-model", "it is the Alibaba mapping's shared pool"}})) {
    return 2;
  }
  if (kind == "philly" &&
      refuse_unused(cmd, kind,
                    {{"--groups", "the business groups are the trace's virtual clusters"},
                     {"--replicate", "the Philly replay does not copy jobs"},
                     {"--shared-model", "it is the Alibaba mapping's shared pool"}})) {
    return 2;
  }
  if (opt.trace.rfind("azure-llm:", 0) == 0 && opt.trace.size() > 10) return run_llm_trace(opt, opt.trace.substr(10));
  std::optional<TraceInputs> trace;
  if (!opt.trace.empty()) {
    auto loaded = load_trace(opt);
    if (auto* code = std::get_if<int>(&loaded)) return *code;
    trace = std::move(std::get<TraceInputs>(loaded));
    std::cerr << trace->mapping_text;
  }
  const policy::PolicySet set = trace ? std::move(trace->policies) : policy::load_policy_set(opt.policies);
  Diagnostics diagnostics = set.diagnostics();
  const Diagnostics checks = policy::validate(set);
  diagnostics.insert(diagnostics.end(), checks.begin(), checks.end());
  if (has_errors(diagnostics)) {
    print(diagnostics);
    std::cerr << "gpubank twin run: the policies are invalid\n";
    return 1;
  }
  std::optional<twin::run::Scenario> scenario;
  if (trace) {
    scenario = std::move(trace->scenario);
  } else {
    scenario = twin::run::load_scenario(opt.workloads, diagnostics);
  }
  if (!scenario) {
    print(diagnostics);
    std::cerr << "gpubank twin run: the scenario is invalid\n";
    return 1;
  }
  twin::run::RunOptions options;
  if (trace) {
    options.inventory = trace->inventory;
    options.retain = false;  // half a million workloads: events go to --events as they happen
  } else if (!opt.inventory.empty()) {
    Diagnostics inventory_diagnostics;
    auto inventory = opt.inventory.rfind("alibaba:", 0) == 0
                         ? [&]() -> std::optional<twin::cluster::Inventory> {
                             auto text = doc::read_file(opt.inventory.substr(8), 256u << 20);
                             if (!text) {
                               inventory_diagnostics.push_back(Diagnostic{Severity::Error, "inventory.unreadable",
                                                                          opt.inventory.substr(8), {}, {}, {}, "",
                                                                          text.error()});
                               return std::nullopt;
                             }
                             return twin::cluster::alibaba_inventory(*text, opt.inventory.substr(8),
                                                                     inventory_diagnostics);
                           }()
                         : twin::cluster::load_inventory(opt.inventory, inventory_diagnostics);
    if (!inventory) {
      print(inventory_diagnostics);
      std::cerr << "gpubank twin run: the inventory is invalid\n";
      return 1;
    }
    options.inventory = std::make_shared<const twin::cluster::Inventory>(std::move(*inventory));
  }
  std::ofstream events_out;
  if (!opt.events.empty()) {
    events_out.open(opt.events, std::ios::binary | std::ios::trunc);
    if (!events_out) {
      std::cerr << "gpubank twin run: --events: cannot write " << opt.events << '\n';
      return 1;
    }
    const Timestamp start = scenario->start.value_or(Timestamp{});
    options.on_event = [&events_out, start](const twin::run::Event& e) {
      events_out << twin::run::event_json(e, start).dump() << '\n';
    };
  }
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
    // The run is the store's one producer: a second one that starts appending fences this
    // one (its next append fails, nothing is counted twice), and the epoch prefixes the
    // borrow record ids so they are unique in the store whoever wrote them.
    auto epoch = db->acquire_writer("gpubank twin run");
    if (!epoch) {
      std::cerr << "gpubank twin run: --store: " << epoch.error() << '\n';
      return 1;
    }
    options.record_prefix = std::to_string(*epoch) + "-";
    // Each instant's entries are durable before the run goes on, as the controller appends them.
    options.on_instant = [&db](std::span<const bank::LedgerEntry> ledger,
                               std::span<const bank::AuditEntry> audit) -> Expected<bool> {
      return store::append_in_batches(*db, ledger, audit);
    };
  }
  std::cerr << "gpubank twin run: " << scenario->workloads.size() << " workloads\n";
  const auto result = twin::run::run_scenario(set, *scenario, options);
  const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  // Progress on stderr (stdout stays a pure function of the inputs); the time includes
  // reading and mapping the inputs.
  std::fprintf(stderr, "gpubank twin run: %lld events in %.3f s (%.0f events/s), peak memory %.1f MiB\n",
               static_cast<long long>(result.event_count), wall_s,
               wall_s > 0 ? static_cast<double>(result.event_count) / wall_s : 0.0,
               static_cast<double>(usage.ru_maxrss) / 1024.0);
  if (!result.ok()) {
    print(result.diagnostics);
    std::cerr << "gpubank twin run: the scenario does not fit the policies\n";
    return 1;
  }
  if (!opt.events.empty()) {
    events_out.close();
    if (!events_out) {
      std::cerr << "gpubank twin run: --events: cannot write " << opt.events << '\n';
      return 1;
    }
  }
  const auto summary = twin::run::summarize(result);
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
    std::cout << '\n' << twin::run::summary_text(summary);
  } else if (trace) {
    // A trace's run: no per-workload lists (hundreds of thousands), the summary and counts.
    nlohmann::ordered_json json = nlohmann::ordered_json::object();
    json["start"] = format_rfc3339(result.start);
    json["end"] = result.end;
    json["policyVersion"] = result.policy_version;
    json["mapping"] = trace->mapping_json;
    json["counts"] = {{"events", result.event_count}, {"ledger", result.ledger_count}, {"audit", result.audit_count},
                      {"reclaims", static_cast<std::int64_t>(result.reclaims.size())}};
    json["summary"] = twin::run::summary_json(summary);
    print_structured(std::cout, json, opt.format);
  } else {
    auto json = twin::run::result_json(result);
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const auto& e : result.events) list.push_back(twin::run::event_json(e, result.start));
    json["events"] = std::move(list);
    json["summary"] = twin::run::summary_json(summary);
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
  cmd->add_option("--policies", opt->policies,
                  "policy files and directories (PlatformGuardrails, GPUQuotaPolicy, ...); with --trace, default: "
                  "generated to fit the trace's cluster (src/twin/trace/policies.hpp)")
      ->expected(1, -1);
  cmd->add_option("--workloads", opt->workloads, "the scenario file (YAML); or --trace");
  cmd->add_option("--trace", opt->trace,
                  "replay a trace instead: alibaba:<openb_pod_list_*.csv> (with --inventory alibaba:<node list>) or "
                  "philly:<folder with philly_vc.csv and philly_node_sequence.csv>, or azure-llm:<csv> (the policies' "
                  "inference services serve its requests over --days days of the seeded work of gpubank up); mapping rules in "
                  "src/twin/trace/alibaba_scenario.hpp, philly.hpp and alibaba_replay.hpp");
  cmd->add_option("--inventory", opt->inventory,
                  "place workloads on a cluster: an inventory YAML (examples/inventory/) or alibaba:<node list csv>");
  cmd->add_option("--days", opt->days, "with --trace: only pods created in the first N days")->check(CLI::Range(1, 366));
  cmd->add_option("--replicate", opt->replicate, "with --trace: K seeded copies of the trace (K x the pods)")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--seed", opt->seed, "with --trace: the seed of the mapping (groups, checkpointable, copies)")
      ->check(seed_text());
  cmd->add_option("--groups", opt->groups,
                  "with --trace: business groups and weights, name=weight,... (default team-a=4,team-b=3,team-c=2,team-d=1)");
  cmd->add_option("--shared-model", opt->shared_model,
                  "with --trace alibaba: the GPU model whose nodes form the shared pool (default T4)");
  cmd->add_option("--until", opt->until, "stop at this virtual time (a duration such as 12h); default: when all is done");
  cmd->add_option("--events", opt->events, "also write the event log as JSON lines (../shared/spec/events.md)");
  cmd->add_option("--store", opt->store,
                  "persist the ledger and the audit log, instant by instant, to a new store: an SQLite file or a "
                  "postgres:// URL (read it with `gpubank bank ledger` and `gpubank audit verify`)");
  cmd->add_option("--metrics", opt->metrics,
                  "also write the bank's metrics at the end of the run (Prometheus text format 0.0.4)");
  add_output_option(*cmd, opt->format);
  return {cmd, [opt, cmd] { return run(*opt, *cmd); }};
}

}  // namespace gpubank::cli
