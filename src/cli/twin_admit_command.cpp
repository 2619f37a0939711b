// gpubank twin admit: Kueue's admission over kueue.x-k8s.io/v1beta2 objects, run by the
// twin's admission core; prints the Workloads and ClusterQueues with the status Kueue
// would give them.
#include <CLI/CLI.hpp>

#include <fstream>
#include <iostream>
#include <memory>
#include <optional>

#include "cli/command.hpp"
#include "kueue/admit.hpp"
#include "kueue/decode.hpp"
#include "twin/admission/core.hpp"

namespace gpubank::cli {
namespace {

struct AdmitOptions {
  std::vector<std::string> paths;
  std::uint64_t cycles = 0;  // 0: until stable
  bool until_stable = false;
  bool fair_sharing = false;
  bool reference_search = false;
  std::string feature_gates;
  std::string events;
  Format format = Format::Yaml;
};

void print(const Diagnostics& diagnostics) {
  for (const auto& d : diagnostics) std::cerr << d.to_string() << '\n';
}

int fail(const Diagnostics& diagnostics, const std::string& message) {
  print(diagnostics);
  std::cerr << "gpubank twin admit: " << message << '\n';
  return 1;
}

Expected<std::unique_ptr<twin::AdmissionCore>> make_core(const kueue::AdmissionRun& run, const twin::CoreOptions& options) {
  kueue::CoreInputs in = run.inputs();
  return twin::AdmissionCore::create(options, std::move(in.flavors), std::move(in.cohorts), std::move(in.queues));
}

int run_admit(const AdmitOptions& opt) {
  // The flags alone first: a malformed --feature-gates is a usage error before any input is read.
  if (const auto flags = kueue::AdmissionRun::core_options(opt.fair_sharing, opt.feature_gates); !flags) {
    std::cerr << "gpubank twin admit: " << flags.error() << '\n';
    return 2;
  }
  Diagnostics diagnostics;
  const kueue::ObjectSet set = kueue::load_objects(opt.paths, diagnostics);
  if (has_errors(diagnostics)) {
    print(diagnostics);
    return 1;
  }
  // With the input's manager Configuration, if there is one.
  const auto core_options = kueue::AdmissionRun::core_options(set, opt.fair_sharing, opt.feature_gates, diagnostics);
  if (!core_options) {
    print(diagnostics);
    std::cerr << "gpubank twin admit: " << core_options.error() << '\n';
    return 2;
  }
  twin::CoreOptions chosen = *core_options;
  chosen.reference_search = opt.reference_search;
  kueue::AdmissionRun run(set, diagnostics);
  run.use_options(chosen);
  auto core = make_core(run, chosen);
  if (!core) return fail(diagnostics, core.error());
  run.load(**core, diagnostics);
  kueue::RunOptions options;
  if (opt.cycles > 0) options.cycles = opt.cycles;
  const auto cycles = run.run(**core, options);
  if (!cycles) return fail(diagnostics, cycles.error());
  if (!opt.events.empty()) {
    std::ofstream out(opt.events, std::ios::binary | std::ios::trunc);
    for (const auto& e : run.events()) out << kueue::to_json_line(e, run.timeline()) << '\n';
    out.close();
    if (!out) return fail(diagnostics, "--events: cannot write " + opt.events);
  }
  print(diagnostics);  // warnings only
  print_structured(std::cout, run.encode(**core), opt.format);
  return 0;
}

}  // namespace

Command add_twin_admit_command(CLI::App& twin) {
  auto opt = std::make_shared<AdmitOptions>();
  CLI::App* cmd = twin.add_subcommand(
      "admit",
      "Run Kueue's admission over kueue.x-k8s.io/v1beta2 objects (ResourceFlavor, Cohort, ClusterQueue, LocalQueue, "
      "WorkloadPriorityClass, Workload, AdmissionCheck, v1 Namespace, and the manager's config.kueue.x-k8s.io "
      "Configuration or its kueue-manager-config ConfigMap; files, directories, kubectl -o yaml/json output) and print "
      "the Workloads and "
      "ClusterQueues with the status Kueue would write, as a v1 List. Exits 1 on invalid input (errors on stderr, "
      "nothing on stdout), 2 on usage errors.");
  cmd->footer(
      "Workloads with status.admission and QuotaReserved=True hold their quota; every other one is pending. All "
      "Workloads exist from the start; cycle k runs k ms after the latest creationTimestamp, on a clock whose zero is "
      "the earliest creationTimestamp among the inputs (condition times are printed from it). After each cycle the "
      "workloads preempted in it are released, as Kueue does once their pods are gone, so preemptors are admitted in "
      "a later cycle. By default cycles run until stable: no ClusterQueue has an active head, or cycles stopped "
      "changing anything (a blocked StrictFIFO head stays active forever); at most 1000 cycles plus 10 per Workload "
      "(exit 1 when reached).");
  cmd->add_option("-f,--filename", opt->paths, "files and directories with Kueue objects (.yaml, .yml, .json)")
      ->required()
      ->expected(1, -1);
  auto* cycles = cmd->add_option("--cycles", opt->cycles, "run exactly this many scheduling cycles")
                     ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{10'000'000}));
  cmd->add_flag("--until-stable", opt->until_stable, "run cycles until nothing more can change (the default)")
      ->excludes(cycles);
  cmd->add_flag("--fair-sharing", opt->fair_sharing,
                "admit and preempt with fair sharing, as Kueue's manager setting fairSharing.enable: true");
  cmd->add_flag("--reference-search", opt->reference_search,
                "search for preemption targets the straightforward way, without the core's fast paths "
                "(slower; the decisions are the same, docs/twin-admission.md)");
  cmd->add_option("--feature-gates", opt->feature_gates,
                  "Kueue feature gates that change admission, as the manager takes them, e.g. "
                  "PartialAdmission=false; the twin models PartialAdmission, SchedulingEquivalenceHashing, "
                  "UnadmittedWorkloadsObservability and QuotaCheckStrategy (all on by default, as in Kueue)");
  cmd->add_option("--events", opt->events,
                  "also write the decisions as JSON lines (Admitted, Pending, Preempted; ../shared/spec/events.md)");
  add_output_option(*cmd, opt->format, false);
  return {cmd, [opt] { return run_admit(*opt); }};
}

}  // namespace gpubank::cli
