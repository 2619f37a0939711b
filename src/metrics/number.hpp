// Numbers in the text exposition format: sample values, bucket bounds and timestamps.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace gpubank::metrics {

// A sample value or bucket bound as gpubank writes it:
// - "NaN", "+Inf", "-Inf" (the spellings of the text format spec and every client);
// - a whole number below 2^53 in magnitude (every such double is exact) as plain digits,
//   "0" for both zeros: "42", "1000000", "-3";
// - anything else as Go's strconv.FormatFloat(v, 'g', -1, 64), what client_golang's
//   writeFloat prints: the shortest digits that read back to the same double, with an
//   exponent when it is below -4 or at least 6 ("0.25", "0.0001", "1e-05",
//   "1.2345675e+06", "1e+20").
// The one difference from client_golang: it prints 1000000 as "1e+06"; whole numbers
// such as GPU-second counters read better in full, and both read back to the same double.
[[nodiscard]] std::string format_value(double value);

// A value as Prometheus' text parser reads it (model/textparse, Go's strconv.ParseFloat
// without the hexadecimal and underscore forms it refuses): an optional sign, decimal
// digits with an optional fraction and exponent ("1", "-2.5", ".5", "1e3", "5."), or
// case-insensitively "inf"/"infinity" with an optional sign and "nan" without one. A
// magnitude beyond the double range is refused; one too small for it reads as zero.
[[nodiscard]] std::optional<double> parse_value(std::string_view text);

// A timestamp (milliseconds since the epoch) as Go's strconv.ParseInt(s, 10, 64) reads it:
// an optional sign and decimal digits that fit an int64.
[[nodiscard]] std::optional<std::int64_t> parse_timestamp(std::string_view text);

}  // namespace gpubank::metrics
