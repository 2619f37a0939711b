#include "core/timezone.hpp"

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace gpubank {
namespace {

using std::chrono::hours;
using std::chrono::minutes;

date::sys_seconds utc(int y, unsigned m, unsigned d) {
  return date::sys_days{date::year{y} / date::month{m} / date::day{d}};
}

TEST(TimeZone, FindsIanaZones) {
  for (std::string_view name : {"Asia/Shanghai", "Europe/Berlin", "UTC", "America/New_York",
                                "America/Port-au-Prince", "Etc/GMT+5", "Etc/GMT-14",
                                "America/Argentina/Buenos_Aires", "Australia/Lord_Howe"}) {
    auto zone = find_time_zone(name);
    ASSERT_TRUE(zone.ok()) << name << ": " << zone.error();
    EXPECT_EQ((*zone)->name(), name);
  }
}

TEST(TimeZone, OffsetsComeFromTheTzDatabase) {
  auto shanghai = find_time_zone("Asia/Shanghai");
  ASSERT_TRUE(shanghai.ok());
  EXPECT_EQ((*shanghai)->get_info(utc(2026, 7, 1)).offset, hours{8});
  auto berlin = find_time_zone("Europe/Berlin");
  ASSERT_TRUE(berlin.ok());
  EXPECT_EQ((*berlin)->get_info(utc(2026, 1, 15)).offset, hours{1});
  EXPECT_EQ((*berlin)->get_info(utc(2026, 7, 15)).offset, hours{2});
  auto lord_howe = find_time_zone("Australia/Lord_Howe");
  ASSERT_TRUE(lord_howe.ok());
  EXPECT_EQ((*lord_howe)->get_info(utc(2026, 1, 15)).offset, hours{11});
  EXPECT_EQ((*lord_howe)->get_info(utc(2026, 7, 15)).offset, hours{10} + minutes{30});
}

TEST(TimeZone, RejectsWhatIsNotAPlainZoneName) {
  for (std::string_view name :
       {"", "Local", "localtime", "Mars/Olympus", "utc", "asia/shanghai", "Asia/Shanghai ",
        " UTC", "../etc/passwd", "Europe/../UTC", "/usr/share/zoneinfo/UTC", "/UTC",
        "Asia\\Shanghai", "Asia/Shanghai\n", "Europe", "Europe/", "posixrules",
        "posix/UTC", "right/UTC", "zone.tab", "tzdata.zi", "+VERSION", "Factory",
        "Asia/Shanghai;rm"}) {
    auto zone = find_time_zone(name);
    ASSERT_FALSE(zone.ok()) << '"' << name << "\" was accepted";
    EXPECT_EQ(zone.error(), "unknown time zone \"" + std::string(name) + "\"");
  }
  constexpr std::string_view with_nul{"UTC\0", 4};
  EXPECT_FALSE(find_time_zone(with_nul).ok());
}

TEST(TimeZone, ErrorMessageQuotesTheName) {
  auto zone = find_time_zone("Mars/Olympus");
  ASSERT_FALSE(zone.ok());
  EXPECT_EQ(zone.error(), "unknown time zone \"Mars/Olympus\"");
}

// Many threads looking zones up at once; 0 when every thread saw the same zones.
int concurrent_lookups() {
  constexpr std::array<std::string_view, 6> names = {"Asia/Shanghai",       "Europe/Berlin",
                                                     "America/New_York",    "UTC",
                                                     "Australia/Lord_Howe", "Mars/Olympus"};
  constexpr int kThreads = 8;
  std::array<std::array<const date::time_zone*, names.size()>, kThreads> seen{};
  std::atomic<int> failures{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      while (!go.load()) std::this_thread::yield();
      for (int round = 0; round < 50; ++round) {
        for (std::size_t n = 0; n < names.size(); ++n) {
          // Each thread starts at a different name so that first loads overlap.
          const std::size_t k = (n + static_cast<std::size_t>(i)) % names.size();
          auto zone = find_time_zone(names[k]);
          if (zone.ok() != (names[k] != "Mars/Olympus")) ++failures;
          if (!zone.ok()) continue;
          (void)(*zone)->get_info(utc(2026, 3, 29));
          auto& slot = seen[static_cast<std::size_t>(i)][k];
          if (slot != nullptr && slot != *zone) ++failures;
          slot = *zone;
        }
      }
    });
  }
  go = true;
  for (auto& t : threads) t.join();
  for (std::size_t i = 1; i < seen.size(); ++i) {
    if (seen[i] != seen[0]) ++failures;
  }
  return failures.load() == 0 ? 0 : 1;
}

// Run in a freshly started process, so that the very first tz database load and each
// zone's lazy file parse happen under contention: the "threadsafe" death-test style
// re-executes the test binary for the child instead of forking this initialised one.
TEST(TimeZoneDeathTest, ConcurrentFirstLookupsAgree) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(std::exit(concurrent_lookups()), ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace gpubank
