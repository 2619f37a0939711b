// Fuzzes Retry-After (k8s/http_date.hpp) and leader election's pure half
// (k8s/leader_election.hpp). The input is text:
//   line 1: a Retry-After value;
//   line 2: this replica's identity;
//   line 3: three integers: when the Lease was observed and how long ago that is (local
//           milliseconds), and the wall clock (seconds since 1970);
//   the rest: a Lease object (JSON).
// Invariants: no crash. Retry-After: a value is never negative; all digits is those
// seconds; a date parses to the same instant when written back as IMF-fixdate, is zero when
// not after now and otherwise its distance from now rounded up. Lease: the record read from
// a Lease and written back as a spec reads the same (times to the microsecond);
// decide_lease creates when there is no Lease, waits only for another holder's unexpired
// lease and never past its duration, stops waiting once that has passed, and otherwise
// writes a record naming us with our duration and the wall time, counting a transition
// exactly when the holder changes; released_record clears the holder and keeps the count.
#include <charconv>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <string_view>

#include "k8s/http_date.hpp"
#include "k8s/leader_election.hpp"

using namespace gpubank::k8s;
using namespace std::chrono;

namespace {

std::string_view next_line(std::string_view& rest) {
  const std::size_t nl = rest.find('\n');
  const std::string_view line = rest.substr(0, nl);
  rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
  return line;
}

// Integers from a line, each clamped to +-10^12 (no overflow in the arithmetic below).
void numbers(std::string_view line, std::int64_t* out, int n) {
  for (int i = 0; i < n; ++i) {
    while (!line.empty() && line.front() == ' ') line.remove_prefix(1);
    std::int64_t v = 0;
    const auto [end, ec] = std::from_chars(line.data(), line.data() + line.size(), v);
    if (ec == std::errc()) line.remove_prefix(static_cast<std::size_t>(end - line.data()));
    constexpr std::int64_t kMax = 1'000'000'000'000;
    out[i] = v < -kMax ? -kMax : (v > kMax ? kMax : v);
    if (ec != std::errc()) return;
  }
}

std::string imf_fixdate(system_clock::time_point t) {
  static constexpr const char* kDays[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
  static constexpr const char* kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                            "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  const auto day = floor<days>(t);
  const year_month_day ymd(day);
  const hh_mm_ss hms(floor<seconds>(t - day));
  char buf[64];
  std::snprintf(buf, sizeof buf, "%s, %02u %s %04d %02lld:%02lld:%02lld GMT",
                kDays[weekday(day).c_encoding()], static_cast<unsigned>(ymd.day()),
                kMonths[static_cast<unsigned>(ymd.month()) - 1], static_cast<int>(ymd.year()),
                static_cast<long long>(hms.hours().count()), static_cast<long long>(hms.minutes().count()),
                static_cast<long long>(hms.seconds().count()));
  return buf;
}

void check_retry_after(std::string_view value, system_clock::time_point now) {
  const auto wait = parse_retry_after(value, now);
  if (wait && *wait < milliseconds(0)) __builtin_trap();
  if (!value.empty() && value.find_first_not_of("0123456789") == std::string_view::npos && value.size() < 12) {
    std::int64_t s = 0;
    for (const char c : value) s = s * 10 + (c - '0');
    if (!wait || *wait != seconds(s)) __builtin_trap();
  }
  const auto date = parse_http_date(value, now);
  if (!date) return;  // malformed, or beyond 2262 (Retry-After still reads those)
  if (date->time_since_epoch() % seconds(1) != system_clock::duration(0)) __builtin_trap();
  const year_month_day ymd(floor<days>(*date));
  if (static_cast<int>(ymd.year()) >= 0 && static_cast<int>(ymd.year()) <= 9999) {
    const auto again = parse_http_date(imf_fixdate(*date), now);
    if (!again || *again != *date) __builtin_trap();
  }
  const auto from_value = parse_retry_after(value, now);
  if (!from_value) __builtin_trap();  // a date alone is a valid Retry-After
  const milliseconds expected = *date <= now ? milliseconds(0) : ceil<milliseconds>(*date - now);
  if (*from_value != expected) __builtin_trap();
}

std::optional<system_clock::time_point> micros(std::optional<system_clock::time_point> t) {
  if (!t) return t;
  return time_point_cast<system_clock::duration>(floor<microseconds>(*t));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view rest(reinterpret_cast<const char*>(data), size);
  const std::string_view retry_after = next_line(rest);
  const std::string identity(next_line(rest));
  std::int64_t n[3] = {0, 0, 0};
  numbers(next_line(rest), n, 3);
  const steady_clock::time_point observed_at{milliseconds(n[0])};
  const steady_clock::time_point now = observed_at + milliseconds(n[1] < 0 ? -n[1] : n[1]);  // never before it
  const system_clock::time_point wall{seconds(n[2] % 9'000'000'000)};  // within what nanoseconds hold

  check_retry_after(retry_after, wall);

  const Json lease = Json::parse(rest, nullptr, false);
  auto record = lease_record(lease);
  if (!record.ok()) {
    if (record.error().empty()) __builtin_trap();
    return 0;
  }
  // The spec written back reads the same, times to the microsecond.
  LeaseRecord truncated = *record;
  truncated.acquire_time = micros(truncated.acquire_time);
  truncated.renew_time = micros(truncated.renew_time);
  const auto back = lease_record(Json{{"spec", lease_spec(*record)}});
  if (!back.ok() || !(*back == truncated)) __builtin_trap();

  LeaderElectionOptions options;
  options.identity = identity;
  options.name = "gpubank-controller";
  options.namespace_name = "gpubank-system";
  (void)validate(options);
  LeaseObservation observed;
  observed.exists = lease.is_object() && lease.contains("spec");
  observed.record = *record;
  observed.observed_at = observed_at;
  const auto d = decide_lease(observed, now, wall, options);
  const auto wall_us = time_point_cast<system_clock::duration>(floor<microseconds>(wall));
  const LeaseRecord& old = observed.record;
  if (!observed.exists) {
    if (d.action != LeaseAction::kCreate || d.record.holder_identity != identity || d.record.lease_transitions != 0) {
      __builtin_trap();
    }
  } else if (d.action == LeaseAction::kCreate) {
    __builtin_trap();
  }
  if (d.action == LeaseAction::kWait) {
    if (old.holder_identity.empty() || old.holder_identity == identity) __builtin_trap();
    if (d.expires_in <= steady_clock::duration(0) || d.expires_in > seconds(old.lease_duration_seconds)) __builtin_trap();
    if (observed_at + seconds(old.lease_duration_seconds) <= now) __builtin_trap();
    // Once the lease has run out by our clock, we stop waiting.
    if (decide_lease(observed, now + d.expires_in, wall, options).action == LeaseAction::kWait) __builtin_trap();
  } else {
    if (d.record.holder_identity != identity) __builtin_trap();
    if (d.record.lease_duration_seconds != options.lease_duration.count()) __builtin_trap();
    if (d.record.renew_time != wall_us) __builtin_trap();
    if (d.action == LeaseAction::kUpdate) {
      const bool ours = old.holder_identity == identity;
      if (d.renewal != ours) __builtin_trap();
      const int next = ours || old.lease_transitions == std::numeric_limits<int>::max() ? old.lease_transitions
                                                                                         : old.lease_transitions + 1;
      if (d.record.lease_transitions != next) __builtin_trap();
      if (!ours && d.record.acquire_time != wall_us) __builtin_trap();
      if (ours && old.acquire_time && d.record.acquire_time != old.acquire_time) __builtin_trap();
    }
  }
  const LeaseRecord released = released_record(old, wall);
  if (!released.holder_identity.empty() || released.lease_transitions != old.lease_transitions ||
      released.lease_duration_seconds != 1) {
    __builtin_trap();
  }
  // observe() moves the time only for a change.
  const auto same = observe(observed, observed.exists, old, "1", Json(), now);
  if (same.observed_at != observed_at) __builtin_trap();
  return 0;
}
