// IANA time zones from the system tz database (Debian's tzdata), through Howard Hinnant's
// date/tz library.
#pragma once

#include <string_view>

#include <date/tz.h>

#include "core/expected.hpp"

namespace gpubank {

// "Asia/Shanghai", "Europe/Berlin", "UTC". Unknown names, "Local" and "localtime" (the
// host's own zone), and anything that is not a plain zone name are errors
// (`unknown time zone "Mars/Olympus"`). Safe to call from many threads at once.
Expected<const date::time_zone*> find_time_zone(std::string_view name);

}  // namespace gpubank
