#include "cli/validators.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <string>

namespace gpubank::cli {

namespace {
std::string number(double v) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%g", v);
  return buffer;
}
}  // namespace

CLI::Validator seed_text() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        std::uint64_t value = 0;
        const char* end = text.data() + text.size();
        const auto [ptr, ec] = std::from_chars(text.data(), end, value);
        // from_chars takes digits only into an unsigned value: no sign, no space, no overflow.
        if (ec != std::errc{} || ptr != end) {
          return "a seed is a whole number from 0 to 18446744073709551615, got \"" + text + "\"";
        }
        return {};
      },
      "SEED", "seed");
}

CLI::Validator finite_range(double lo, double hi) {
  return CLI::Validator(
      [lo, hi](std::string& text) -> std::string {
        double value = 0;
        const char* end = text.data() + text.size();
        const auto [ptr, ec] = std::from_chars(text.data(), end, value);
        if (text.empty() || ec != std::errc{} || ptr != end || !std::isfinite(value) || value < lo || value > hi) {
          return "must be a number in [" + number(lo) + ", " + number(hi) + "], got \"" +
                 text + "\"";
        }
        return {};
      },
      "FLOAT in [" + number(lo) + " - " + number(hi) + "]", "finite range");
}

}  // namespace gpubank::cli
