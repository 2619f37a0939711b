// A scenario as the YAML `gpubank twin run` reads (src/twin/run/scenario.hpp): what a
// trace mapping produced, written out so it can be kept, diffed, edited and replayed with
// `gpubank twin run <file>`. Fields at their defaults are left out; parse_scenario of the
// text gives the same scenario back.
#pragma once

#include <string>

#include "twin/run/scenario.hpp"

namespace gpubank::twin::trace {

[[nodiscard]] std::string scenario_yaml(const run::Scenario& scenario);

}  // namespace gpubank::twin::trace
