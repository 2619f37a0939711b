// Option checks CLI11 does not make: CLI11 reads "-1" into an unsigned seed as 2^64 - 1 and
// cuts a larger number to 2^64 - 1, and CLI::Range lets NaN through (every comparison with
// NaN is false). A usage error is exit 2 with the option and the rule named.
#pragma once

#include <CLI/CLI.hpp>

namespace gpubank::cli {

// A decimal integer in [0, 18446744073709551615], digits only.
[[nodiscard]] CLI::Validator seed_text();

// A finite number in [lo, hi].
[[nodiscard]] CLI::Validator finite_range(double lo, double hi);

}  // namespace gpubank::cli
