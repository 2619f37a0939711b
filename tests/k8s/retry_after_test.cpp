// Retry-After: seconds and the three HTTP-date forms (RFC 9110) against an injected "now",
// dates in the past, malformed values that fall back to the backoff; and the same through
// the fake API server and the transport.
#include <gtest/gtest.h>

#include "fake_client.hpp"
#include "fixture.hpp"
#include "k8s/http_date.hpp"

namespace gpubank::k8s {
namespace {

using namespace testing;
using namespace std::chrono;

// 1994-11-06T08:49:37Z, RFC 9110's example.
constexpr system_clock::time_point kExample{seconds(784'111'777)};
constexpr system_clock::time_point k2026{seconds(1'767'225'600)};  // 2026-01-01T00:00:00Z

system_clock::time_point at(int y, unsigned mo, unsigned d, int h = 0, int mi = 0, int s = 0) {
  return sys_days(year_month_day{year(y), month(mo), day(d)}) + hours(h) + minutes(mi) + seconds(s);
}

TEST(HttpDate, TheThreeFormsOfRfc9110) {
  EXPECT_EQ(parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT", k2026), kExample);
  EXPECT_EQ(parse_http_date("Sunday, 06-Nov-94 08:49:37 GMT", at(2000, 1, 1)), kExample);
  EXPECT_EQ(parse_http_date("Sun Nov  6 08:49:37 1994", k2026), kExample);
  EXPECT_EQ(parse_http_date("Thu Dec 31 23:59:59 2026", k2026), at(2026, 12, 31, 23, 59, 59));
  // The day name is read, not checked against the date (as most recipients do).
  EXPECT_EQ(parse_http_date("Mon, 06 Nov 1994 08:49:37 GMT", k2026), kExample);
  // A leap second is the next minute's first.
  EXPECT_EQ(parse_http_date("Wed, 31 Dec 2025 23:59:60 GMT", k2026), k2026);
  EXPECT_EQ(parse_http_date("Thu, 29 Feb 2024 12:00:00 GMT", k2026), at(2024, 2, 29, 12));
}

TEST(HttpDate, Rfc850YearsAreAtMostFiftyYearsAhead) {
  // RFC 9110: a two-digit year that would be more than 50 years in the future is the most
  // recent past year with those digits.
  EXPECT_EQ(parse_http_date("Friday, 01-Jan-76 00:00:00 GMT", k2026), at(2076, 1, 1));
  EXPECT_EQ(parse_http_date("Saturday, 01-Jan-77 00:00:00 GMT", k2026), at(1977, 1, 1));
  EXPECT_EQ(parse_http_date("Thursday, 01-Jan-26 00:00:00 GMT", k2026), k2026);
  EXPECT_EQ(parse_http_date("Sunday, 01-Jan-05 00:00:00 GMT", at(2060, 6, 1)), at(2105, 1, 1));
  EXPECT_EQ(parse_http_date("Friday, 01-Jan-99 00:00:00 GMT", at(2060, 6, 1)), at(2099, 1, 1));
}

TEST(HttpDate, MalformedDatesAreRefused) {
  for (const char* bad : {
           "",
           "Sun, 06 Nov 1994 08:49:37",         // no GMT
           "Sun, 06 Nov 1994 08:49:37 UTC",     // only GMT
           "sun, 06 Nov 1994 08:49:37 GMT",     // case-sensitive
           "Sun, 06 nov 1994 08:49:37 GMT",
           "Sun, 6 Nov 1994 08:49:37 GMT",      // two-digit day in IMF-fixdate
           "Sun, 31 Nov 1994 08:49:37 GMT",     // no 31 November
           "Sun, 29 Feb 2023 08:49:37 GMT",     // not a leap year
           "Sun, 06 Nov 1994 24:00:00 GMT",
           "Sun, 06 Nov 1994 08:60:00 GMT",
           "Sun, 06 Nov 1994 08:49:61 GMT",
           "Sun, 06 Nov 1994 08:49:37 GMT ",    // trailing bytes (trimming is Retry-After's)
           "Sun, 06 Nov 94 08:49:37 GMT",       // a two-digit year needs the RFC 850 form
           "Sun, 06-Nov-94 08:49:37 GMT",       // RFC 850 takes the long day name
           "Sunday, 06-Nov-1994 08:49:37 GMT",
           "Sun Nov 6 08:49:37 1994",           // asctime pads the day with a space
           "Sun Nov 06 08:49:37 1994 GMT",
           "Sun, 06 Nov 1994 08:49 GMT",
           "Funday, 06-Nov-94 08:49:37 GMT",
           "2026-01-01T00:00:00Z",
       }) {
    EXPECT_FALSE(parse_http_date(bad, k2026).has_value()) << '"' << bad << '"';
  }
}

TEST(RetryAfter, SecondsDatesAndWhatIsMalformed) {
  EXPECT_EQ(parse_retry_after("120", k2026), seconds(120));
  EXPECT_EQ(parse_retry_after("0", k2026), seconds(0));
  EXPECT_EQ(parse_retry_after(" \t7 ", k2026), seconds(7));
  // Too large for any integer: a very long wait (the transport caps it), not an error.
  EXPECT_GT(*parse_retry_after("99999999999999999999999999", k2026), hours(24 * 365));
  // A date: its distance from now, rounded up to the millisecond.
  EXPECT_EQ(parse_retry_after("Thu, 01 Jan 2026 00:01:30 GMT", k2026), seconds(90));
  EXPECT_EQ(parse_retry_after("Thu, 01 Jan 2026 00:00:02 GMT", k2026 + milliseconds(700)), milliseconds(1300));
  EXPECT_EQ(parse_retry_after("Thu, 01 Jan 2026 00:00:02 GMT", k2026 + microseconds(1'999'999)), milliseconds(1));
  // Beyond what system_clock holds (2262): no time point, but still a (long) wait.
  EXPECT_FALSE(parse_http_date("Fri, 31 Dec 9999 23:59:59 GMT", k2026).has_value());
  EXPECT_EQ(parse_retry_after("Fri, 31 Dec 9999 23:59:59 GMT", k2026),
            duration_cast<milliseconds>(sys_days(year(10000) / 1 / 1) - seconds(1) - floor<seconds>(k2026)));
  // A date in the past, or now: retry at once.
  EXPECT_EQ(parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT", k2026), milliseconds(0));
  EXPECT_EQ(parse_retry_after("Thu, 01 Jan 2026 00:00:00 GMT", k2026), milliseconds(0));
  for (const char* bad : {"", "   ", "-5", "+5", "1.5", "5s", "soon", "0x10", "Thu, 01 Jan 2026 00:00:00 UTC"}) {
    EXPECT_FALSE(parse_retry_after(bad, k2026).has_value()) << '"' << bad << '"';
  }
}

struct DatedTransport {
  FakeApiServer fake{{}};
  SleepLog sleeps;
  std::unique_ptr<Transport> t;
  DatedTransport() {
    TransportOptions options;
    options.now = [] { return k2026; };
    options.retry.jitter = 0;
    options.retry.max_retry_after = seconds(60);
    t = make_transport(config_for(fake), sleeps, options);
  }
};

TEST(RetryAfter, DatesThroughTheFakeServer) {
  DatedTransport d;
  d.fake.fail_next_with_retry_after(1, 429, "Thu, 01 Jan 2026 00:00:30 GMT");
  ASSERT_TRUE(d.t->get("/version").ok());
  d.fake.fail_next_with_retry_after(1, 503, "Thursday, 01-Jan-26 00:00:45 GMT");
  ASSERT_TRUE(d.t->get("/version").ok());
  d.fake.fail_next_with_retry_after(1, 429, "Sun Nov  6 08:49:37 1994");  // the past: at once
  ASSERT_TRUE(d.t->get("/version").ok());
  d.fake.fail_next_with_retry_after(1, 429, "Fri, 01 Jan 2027 00:00:00 GMT");  // capped
  ASSERT_TRUE(d.t->get("/version").ok());
  d.fake.fail_next_with_retry_after(1, 429, "in a while");  // malformed: the backoff
  ASSERT_TRUE(d.t->get("/version").ok());
  EXPECT_EQ(d.sleeps.get(), (std::vector<milliseconds>{seconds(30), seconds(45), milliseconds(0), seconds(60),
                                                       milliseconds(500)}));
}

TEST(RetryAfter, AWriteIsRetriedOnlyWhenTheRefusalCarriesAValidRetryAfter) {
  DatedTransport d;
  const std::string event = R"({"metadata":{"name":"e1","namespace":"default"},"reason":"Test"})";
  d.fake.fail_next_with_retry_after(1, 503, "Thu, 01 Jan 2026 00:00:05 GMT");
  auto created = d.t->create("/apis/events.k8s.io/v1/namespaces/default/events", event);
  ASSERT_TRUE(created.ok()) << created.error().describe();
  EXPECT_EQ(d.sleeps.get(), (std::vector<milliseconds>{seconds(5)}));
  // Malformed: as if there were none, and a POST without Retry-After is not sent again.
  d.fake.fail_next_with_retry_after(1, 503, "Thu, 01 Jan 2026 00:00:05");
  auto refused = d.t->create("/apis/events.k8s.io/v1/namespaces/default/events",
                             R"({"metadata":{"name":"e2","namespace":"default"},"reason":"Test"})");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().http_status, 503);
  EXPECT_EQ(d.sleeps.get().size(), 1u);
}

}  // namespace
}  // namespace gpubank::k8s
