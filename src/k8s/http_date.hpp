// HTTP dates and Retry-After (RFC 9110 sections 5.6.7 and 10.2.3), pure.
//
// Retry-After is either delay-seconds ("120") or an HTTP-date. A recipient must accept all
// three date forms:
//   IMF-fixdate  "Sun, 06 Nov 1994 08:49:37 GMT"   (the one senders must use)
//   RFC 850      "Sunday, 06-Nov-94 08:49:37 GMT"  (obsolete; a two-digit year that would
//                                                   be more than 50 years ahead of now is
//                                                   taken as the most recent such past year)
//   asctime      "Sun Nov  6 08:49:37 1994"        (obsolete; the day padded with a space)
// Dates are GMT. The day name must be a real one (it is not checked against the date, as
// most recipients do not); the day must exist in its month (no 31 Nov); a second of 60 (a
// leap second) is read as the next minute.
#pragma once

#include <chrono>
#include <optional>
#include <string_view>

namespace gpubank::k8s {

// An HTTP-date in any of the three forms; nullopt when malformed, or past what
// system_clock holds (2262). `now` decides the century of an RFC 850 date.
[[nodiscard]] std::optional<std::chrono::system_clock::time_point> parse_http_date(
    std::string_view text, std::chrono::system_clock::time_point now);

// The wait a Retry-After value asks for at `now`: delay-seconds as given (huge values
// saturate rather than fail), a date as its distance from now rounded up to the
// millisecond (any year up to 9999), a date in the past as zero (retry at once). nullopt
// when malformed or empty: the caller falls back to its backoff. Surrounding spaces and
// tabs are ignored.
[[nodiscard]] std::optional<std::chrono::milliseconds> parse_retry_after(std::string_view value,
                                                                         std::chrono::system_clock::time_point now);

}  // namespace gpubank::k8s
