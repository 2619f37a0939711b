// RFC 3339 timestamps ("2026-12-01T08:00:00Z", "2026-12-01T16:00:00.5+08:00").
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "core/expected.hpp"

namespace gpubank {

using Timestamp = std::chrono::sys_time<std::chrono::nanoseconds>;

// Strict RFC 3339 date-time as Go's time.RFC3339Nano parser accepts it (what Kubernetes
// uses): "T" separator, seconds required, optional fraction of 1-9 digits (like Go, more
// are accepted and cut after the ninth), "Z" or "+hh:mm"/"-hh:mm". Calendar ranges are
// checked (no Feb 30, no second 60). Instants outside what int64 nanoseconds hold
// (1677-09-21 to 2262-04-11) are errors.
Expected<Timestamp> parse_rfc3339(std::string_view text);

// UTC with "Z" and the shortest fraction that is exact ("2026-12-01T00:00:00Z",
// "2026-12-01T00:00:00.25Z"). parse_rfc3339(format_rfc3339(t)) == t.
std::string format_rfc3339(Timestamp t);

}  // namespace gpubank
