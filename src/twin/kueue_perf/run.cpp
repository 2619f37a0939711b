// The one place that builds the real admission core, in its own translation unit: code
// that only simulates over a given core (tests with a test double) links without it.
#include "twin/kueue_perf/runner.hpp"

namespace gpubank::twin::kueue_perf {

Expected<Summary> run(const Scenario& scenario, const RunOptions& options) {
  auto core = AdmissionCore::create(options.core, scenario.flavors, {}, scenario.queue_specs);
  if (!core) return Unexpected{"the admission core rejected the generated objects: " + core.error()};
  return simulate(scenario, **core, options);
}

}  // namespace gpubank::twin::kueue_perf
