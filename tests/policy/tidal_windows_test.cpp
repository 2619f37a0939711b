#include "policy/tidal_windows.hpp"

#include <gtest/gtest.h>

#include "core/timestamp.hpp"
#include "core/timezone.hpp"

namespace gpubank::policy {
namespace {

using std::chrono::sys_seconds;

sys_seconds at(const char* rfc3339) { return std::chrono::floor<std::chrono::seconds>(*parse_rfc3339(rfc3339)); }

CronSchedule cron(const char* text) { return *CronSchedule::parse(text); }

TEST(TidalWindows, ActiveFromStartUntilTheNextEndLikeKedasCronScaler) {
  const auto zone = *find_time_zone("Asia/Shanghai");
  const CronSchedule start = cron("30 8 * * 1-5");
  const CronSchedule end = cron("0 20 * * 1-5");
  // Monday 2026-11-30 in Shanghai (+08:00).
  const auto intervals = active_intervals({&start, &end}, *zone, at("2026-11-30T00:00:00+08:00"),
                                          at("2026-12-01T00:00:00+08:00"));
  ASSERT_EQ(intervals.size(), 1u);
  EXPECT_EQ(intervals[0].begin, at("2026-11-30T08:30:00+08:00"));
  EXPECT_EQ(intervals[0].end, at("2026-11-30T20:00:00+08:00"));
}

TEST(TidalWindows, AWindowActiveAtTheHorizonStartIsActiveFromThere) {
  const auto zone = *find_time_zone("UTC");
  const CronSchedule start = cron("0 22 * * *");
  const CronSchedule end = cron("0 6 * * *");
  const auto intervals = active_intervals({&start, &end}, *zone, at("2026-01-01T00:00:00Z"), at("2026-01-02T00:00:00Z"));
  ASSERT_EQ(intervals.size(), 2u);
  EXPECT_EQ(intervals[0].begin, at("2026-01-01T00:00:00Z"));
  EXPECT_EQ(intervals[0].end, at("2026-01-01T06:00:00Z"));
  EXPECT_EQ(intervals[1].begin, at("2026-01-01T22:00:00Z"));
  EXPECT_EQ(intervals[1].end, at("2026-01-02T00:00:00Z"));
}

TEST(TidalWindows, OnlyTheLastStartBeforeAnEndOpensTheWindow) {
  // KEDA asks whether the next end comes before the next start; at 08:00 the next start
  // (10:00) comes first, so the window opens at 10:00.
  const auto zone = *find_time_zone("UTC");
  const CronSchedule start = cron("0 8,10 * * *");
  const CronSchedule end = cron("0 12 * * *");
  const auto intervals = active_intervals({&start, &end}, *zone, at("2026-01-01T00:00:00Z"), at("2026-01-02T00:00:00Z"));
  ASSERT_EQ(intervals.size(), 1u);
  EXPECT_EQ(intervals[0].begin, at("2026-01-01T10:00:00Z"));
  EXPECT_EQ(intervals[0].end, at("2026-01-01T12:00:00Z"));
}

TEST(TidalWindows, TheMissionsDayAndNightWindowsTouchButDoNotOverlap) {
  const auto zone = *find_time_zone("Asia/Shanghai");
  const CronSchedule day_start = cron("30 8 * * 1-5"), day_end = cron("0 20 * * 1-5");
  const CronSchedule night_start = cron("0 20 * * 1-5"), night_end = cron("30 7 * * 2-6");
  EXPECT_FALSE(find_overlap({{&day_start, &day_end}, {&night_start, &night_end}}, *zone));
}

TEST(TidalWindows, FindsTheEarliestOverlapOfAnyPair) {
  const auto zone = *find_time_zone("Europe/Berlin");
  const CronSchedule a_start = cron("0 8 * * *"), a_end = cron("0 12 * * *");
  const CronSchedule b_start = cron("0 13 * * *"), b_end = cron("0 15 * * *");
  const CronSchedule c_start = cron("0 14 * * SAT"), c_end = cron("0 16 * * SAT");
  auto overlap = find_overlap({{&a_start, &a_end}, {&b_start, &b_end}, {&c_start, &c_end}}, *zone);
  ASSERT_TRUE(overlap);
  EXPECT_EQ(overlap->first, 1u);
  EXPECT_EQ(overlap->second, 2u);
  // The first Saturday of the horizon: 2024-01-06, 14:00 CET.
  EXPECT_EQ(overlap->at, at("2024-01-06T14:00:00+01:00"));
}

TEST(TidalWindows, OverlapsThatOnlyHappenOnLeapDaysAreFound) {
  const auto zone = *find_time_zone("UTC");
  const CronSchedule a_start = cron("0 0 * * *"), a_end = cron("0 6 * * *");
  const CronSchedule b_start = cron("0 5 29 2 *"), b_end = cron("0 7 29 2 *");
  auto overlap = find_overlap({{&a_start, &a_end}, {&b_start, &b_end}}, *zone);
  ASSERT_TRUE(overlap);
  EXPECT_EQ(overlap->at, at("2024-02-29T05:00:00Z"));
}

TEST(TidalWindows, VeryFrequentSchedulesShortenTheHorizonInsteadOfRunningAway) {
  const auto zone = *find_time_zone("UTC");
  const CronSchedule start = cron("* * * * *"), end = cron("* * * * *");
  std::optional<sys_seconds> truncated;
  active_intervals({&start, &end}, *zone, at("2026-01-01T00:00:00Z"), at("2030-01-01T00:00:00Z"), 1000, &truncated);
  ASSERT_TRUE(truncated);
  EXPECT_LT(*truncated, at("2026-01-02T00:00:00Z"));
}

}  // namespace
}  // namespace gpubank::policy
