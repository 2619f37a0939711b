#include "core/timezone.hpp"

#include <chrono>
#include <exception>
#include <string>
#include <utility>

namespace gpubank {

namespace {

Unexpected unknown(std::string_view name) {
  std::string message = "unknown time zone \"";
  message += name;
  message += '"';
  return Unexpected{std::move(message)};
}

// IANA names are ASCII letters, digits and "_+-/" ("America/Port-au-Prince",
// "Etc/GMT+5"). Everything else, and any path trickery, is refused before the name
// reaches date/tz, which maps names onto files under /usr/share/zoneinfo.
bool plausible_zone_name(std::string_view name) {
  if (name.empty() || name.front() == '/' || name.find("..") != std::string_view::npos) {
    return false;
  }
  for (char c : name) {
    bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '+' || c == '-' || c == '/';
    if (!ok) return false;
  }
  // Go's "Local" and Debian's zoneinfo/localtime symlink both mean "whatever machine this
  // runs on", so the same policy would fire at different instants on different hosts.
  return name != "Local" && name != "localtime";
}

}  // namespace

Expected<const date::time_zone*> find_time_zone(std::string_view name) {
  if (!plausible_zone_name(name)) return unknown(name);
  try {
    // Thread safety: date::get_tzdb_list() is a function-local static (initialised once,
    // thread-safely, by the C++ runtime) and never reloaded by gpubank; the tzdb is then
    // read-only. With USE_OS_TZDB each zone's file is parsed lazily under a std::call_once.
    const date::time_zone* zone = date::locate_zone(name);
    // Force that lazy parse now so a damaged zone file is reported here, as an unknown
    // zone, instead of as an exception out of a later lookup.
    (void)zone->get_info(date::sys_seconds{});
    return zone;
  } catch (const std::exception&) {
    return unknown(name);
  }
}

}  // namespace gpubank
