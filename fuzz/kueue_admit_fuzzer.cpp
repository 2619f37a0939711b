// Fuzzes `gpubank twin admit` on a YAML stream of Kueue objects: read_yaml ->
// kueue::decode_documents -> check -> AdmissionRun on the real admission core (a bounded
// number of cycles) -> the List as JSON. Valid inputs go through the whole quota tree,
// flavor assignment and preemption; invalid ones must only produce findings. Invariants of
// the core are checked after the run: no ClusterQueue or Cohort usage below zero, and
// finishing everything returns every ClusterQueue to zero usage.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/diagnostic.hpp"
#include "document/reader.hpp"
#include "kueue/admit.hpp"
#include "kueue/decode.hpp"
#include "twin/admission/core.hpp"

using namespace gpubank;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::vector<doc::Document> docs;
  Diagnostics diagnostics;
  doc::ReadLimits limits;
  limits.max_bytes = 256 * 1024;
  doc::read_yaml(text, "fuzz.yaml", docs, diagnostics, limits);
  if (has_errors(diagnostics)) return 0;
  const kueue::ObjectSet set = kueue::decode_documents(docs, diagnostics);
  if (has_errors(diagnostics)) return 0;
  kueue::AdmissionRun run(set, diagnostics);
  for (const bool fair_sharing : {false, true}) {
    // With the input's manager Configuration, when it has one.
    const auto options = kueue::AdmissionRun::core_options(set, fair_sharing, "", diagnostics);
    if (!options) __builtin_trap();  // without --feature-gates nothing can conflict
    kueue::CoreInputs in = run.inputs();
    auto core = twin::AdmissionCore::create(*options, std::move(in.flavors), std::move(in.cohorts), std::move(in.queues));
    if (!core) continue;  // e.g. a cohort cycle: reported, not looped on
    Diagnostics load;
    run.load(**core, load);
    (void)run.run(**core, {.cycles = 20});
    (void)run.encode(**core).dump(-1, ' ', false, doc::Json::error_handler_t::strict);
    for (twin::WorkloadId id = 0; id < (*core)->workload_count(); ++id) (*core)->finish(id, 1'000'000);
    for (const auto& name : (*core)->cluster_queue_names()) {
      for (const auto& fr : (*core)->cluster_queue_status(name).flavors_reservation) {
        if (fr.total != 0) __builtin_trap();  // quota leaked
      }
    }
  }
  return 0;
}
