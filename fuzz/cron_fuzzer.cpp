// Fuzzes cron parsing and evaluation: the input's first line is parsed; a schedule that
// parses is evaluated from fixed instants around DST changes in a few zones (UTC, a one
// hour shift, Lord Howe's half-hour shift). Successive activations must strictly increase.
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include <date/tz.h>

#include "core/cron.hpp"
#include "core/timezone.hpp"

namespace {

using namespace gpubank;
using std::chrono::sys_seconds;

constexpr int kSteps = 6;

const date::time_zone& zone(const char* name) {
  auto z = find_time_zone(name);
  if (!z) {
    std::fprintf(stderr, "cron_fuzzer: %s\n", z.error().c_str());
    std::abort();
  }
  return **z;
}

std::string show(sys_seconds t) { return date::format("%FT%TZ", t); }

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  (void)zone("UTC");
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  text = text.substr(0, text.find('\n'));
  if (text.size() > 256) return 0;
  const auto schedule = CronSchedule::parse(text);
  if (!schedule) return 0;

  static const std::array<const date::time_zone*, 3> zones = {&zone("UTC"), &zone("America/New_York"),
                                                              &zone("Australia/Lord_Howe")};
  // Just before New York's spring-forward and Lord Howe's fall-back (both 2026), and
  // before New York's fall-back.
  static const std::array<sys_seconds, 3> starts = {
      sys_seconds{std::chrono::seconds{1772942400}},  // 2026-03-08T04:00:00Z
      sys_seconds{std::chrono::seconds{1775311200}},  // 2026-04-04T14:00:00Z
      sys_seconds{std::chrono::seconds{1793506800}},  // 2026-11-01T04:20:00Z
  };
  for (const date::time_zone* z : zones) {
    for (const sys_seconds start : starts) {
      sys_seconds previous = start;
      for (int i = 0; i < kSteps; ++i) {
        const auto next = schedule->next(previous, *z);
        if (!next) break;
        if (*next <= previous) {
          std::fprintf(stderr, "\ncron \"%.*s\" in %s: next(%s) = %s, not after it\n", static_cast<int>(text.size()),
                       text.data(), z->name().c_str(), show(previous).c_str(), show(*next).c_str());
          std::fflush(stderr);
          __builtin_trap();
        }
        previous = *next;
      }
    }
  }
  return 0;
}
