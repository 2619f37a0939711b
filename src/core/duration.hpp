// Go-style durations ("90s", "10m", "1h30m", "1500ms"), the notation Kubernetes and the
// policy API use. Parsing follows Go's time.ParseDuration except that a unit is always
// required (the policy API allows no bare numbers, not even "0").
#pragma once

#include <chrono>
#include <compare>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/expected.hpp"

namespace gpubank {

class Duration {
 public:
  constexpr Duration() = default;
  constexpr explicit Duration(std::chrono::nanoseconds value) : value_(value) {}

  // Accepts an optional sign, then one or more <decimal number><unit> pairs, units
  // ns, us (or µs), ms, s, m, h. Fractions are allowed ("1.5h"). Errors name the
  // offending part, e.g. `missing unit in duration "10"`. Overflow beyond Go's
  // int64-nanosecond range is an error.
  static Expected<Duration> parse(std::string_view text);

  // Canonical, round-trippable form: non-zero components largest first without
  // padding, "1h30m", "1s500ms", "-2m", "0s" for zero. parse(to_string()) == *this.
  [[nodiscard]] std::string to_string() const;

  [[nodiscard]] constexpr std::chrono::nanoseconds nanoseconds() const { return value_; }
  // Truncated towards zero, like Go's Duration.Milliseconds().
  [[nodiscard]] constexpr std::int64_t milliseconds() const {
    return std::chrono::duration_cast<std::chrono::milliseconds>(value_).count();
  }
  [[nodiscard]] constexpr bool negative() const { return value_.count() < 0; }

  friend constexpr auto operator<=>(const Duration&, const Duration&) = default;

 private:
  std::chrono::nanoseconds value_{0};
};

}  // namespace gpubank
