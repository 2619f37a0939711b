// The GPU drill-down's minutes (twin/live/gpu_history.hpp): what a device showed at each
// minute and who held it, bounded; the range asked for; a GPU's MIG instances in slice
// order; markers from the GPU's own events and its holders' only.
#include "twin/live/gpu_history.hpp"

#include <gtest/gtest.h>

namespace gpubank::twin::live {
namespace {

constexpr std::int64_t kT0 = 1'764'547'200'000;  // 2025-12-01T00:00:00Z
constexpr std::int64_t kMin = 60'000;

DeviceMinute gpu_minute(const std::string& device, const std::string& holder, double util) {
  DeviceMinute d;
  d.device = device;
  if (!holder.empty()) {
    d.twin_workload = holder;
    d.business_group = holder.substr(0, holder.find('/'));
    d.share = 1;
  }
  d.gpu_utilization = util;
  d.memory_utilization = util / 2;
  d.power_fraction = util / 3;
  return d;
}

MinuteObservation history_minute(std::int64_t i, std::vector<DeviceMinute> devices) {
  MinuteObservation m;
  m.t_ms = kT0 + i * kMin;
  m.devices = std::move(devices);
  return m;
}

run::Event history_event(std::int64_t minute, std::string kind, std::string object, std::string group = "") {
  run::Event e;
  e.t = minute * kMin;  // virtual ms; unix_ms below adds kT0
  e.kind = std::move(kind);
  e.object = std::move(object);
  e.business_group = std::move(group);
  e.message = e.kind + " " + e.object;
  return e;
}

TEST(GpuHistory, KeepsEachDevicesMinutesWithTheirHolderWithinTheRangeAndTheBound) {
  GpuHistory h(5);
  for (std::int64_t i = 0; i < 8; ++i) {
    h.record(history_minute(i, {gpu_minute("GPU-a", i < 4 ? "ads/train" : "", 10.0 * static_cast<double>(i)),
                                gpu_minute("GPU-a", "search/other", 99),  // time-sliced: first holder counts
                                gpu_minute("GPU-b", "", 0)}));
  }
  h.record(history_minute(3, {gpu_minute("GPU-a", "x/late", 1)}));  // out of order: ignored
  EXPECT_EQ(h.last_ms(), kT0 + 7 * kMin);
  const auto unix_ms = [](std::int64_t t) { return kT0 + t; };
  const auto j = h.json("GPU-a", "pool-a", kT0, kT0 + 100 * kMin, {}, unix_ms);
  ASSERT_EQ(j["devices"].size(), 1U);
  const auto& samples = j["devices"][0]["samples"];
  ASSERT_EQ(samples.size(), 5U) << "the last 5 minutes only";
  EXPECT_EQ(samples[0]["t"], "2025-12-01T00:03:00Z");
  EXPECT_EQ(samples[0]["workload"], "ads/train");
  EXPECT_EQ(samples[0]["businessGroup"], "ads");
  EXPECT_EQ(samples[0]["gpuUtilization"], 30.0);
  EXPECT_EQ(samples[0]["memoryUtilization"], 15.0);
  EXPECT_EQ(samples[0]["powerPercent"], 10.0);
  EXPECT_TRUE(samples[1]["workload"].is_null());
  // A range inside: minutes 5 and 6.
  const auto part = h.json("GPU-a", "pool-a", kT0 + 5 * kMin, kT0 + 6 * kMin, {}, unix_ms);
  EXPECT_EQ(part["devices"][0]["samples"].size(), 2U);
  EXPECT_EQ(part["from"], "2025-12-01T00:05:00Z");
  // Another GPU whose UUID starts the same is not this one's.
  h.record(history_minute(9, {gpu_minute("GPU-ab", "", 0)}));
  EXPECT_EQ(h.json("GPU-a", "pool-a", kT0, kT0 + 100 * kMin, {}, unix_ms)["devices"].size(), 1U);
}

TEST(GpuHistory, ListsMigInstancesInSliceOrderAndMarksTheGpusAndItsHoldersEvents) {
  GpuHistory h;
  for (std::int64_t i = 0; i < 3; ++i) {
    h.record(history_minute(i, {gpu_minute("GPU-m/10", "", 0), gpu_minute("GPU-m/2", "ads/nb", 20),
                                gpu_minute("GPU-m/1", "", 0), gpu_minute("GPU-z", "search/job", 90)}));
  }
  const std::vector<run::Event> events{
      history_event(1, "Placed", "Workload/ads/nb", "ads"),
      history_event(1, "Placed", "Workload/search/job", "search"),   // another GPU's holder
      history_event(2, "GpuUnhealthy", "GPU/GPU-m"),
      history_event(2, "GpuUnhealthy", "GPU/GPU-z"),
      history_event(2, "Admitted", "Workload/ads/nb", "ads"),        // not a marker kind
      history_event(50, "Preempted", "Workload/ads/nb", "ads"),      // out of range
  };
  const auto j = h.json("GPU-m", "mig-pool", kT0, kT0 + 10 * kMin, events, [](std::int64_t t) { return kT0 + t; });
  ASSERT_EQ(j["devices"].size(), 3U);
  EXPECT_EQ(j["devices"][0]["device"], "GPU-m/1");
  EXPECT_EQ(j["devices"][1]["device"], "GPU-m/2");
  EXPECT_EQ(j["devices"][2]["device"], "GPU-m/10");
  EXPECT_EQ(j["devices"][1]["migSlice"], 2);
  ASSERT_EQ(j["markers"].size(), 2U) << j["markers"].dump();
  EXPECT_EQ(j["markers"][0]["object"], "Workload/ads/nb");
  EXPECT_EQ(j["markers"][0]["t"], "2025-12-01T00:01:00Z");
  EXPECT_EQ(j["markers"][1]["kind"], "GpuUnhealthy");
  EXPECT_TRUE(j["markers"][1]["businessGroup"].is_null());
  EXPECT_TRUE(GpuHistory::is_marker("ReclaimVictimStopped"));
  EXPECT_FALSE(GpuHistory::is_marker("Admitted"));
}

TEST(GpuHistory, AWorkloadsMinutesAreItsDevicesWhileItHeldThemAndTheirMean) {
  GpuHistory h;
  for (std::int64_t i = 0; i < 4; ++i) {
    h.record(history_minute(i, {gpu_minute("GPU-a", "ads/train", 40), gpu_minute("GPU-b", i < 2 ? "ads/train" : "search/x", 80)}));
  }
  std::vector<run::Event> events{history_event(1, "Preempted", "Workload/ads/train", "ads"),
                                 history_event(1, "Preempted", "Workload/search/x", "search"),
                                 history_event(2, "QuotaChanged", "GPUQuotaPolicy/search-h100", "search"),
                                 history_event(3, "QuotaChanged", "GPUQuotaPolicy/ads-l40s", "ads")};
  events[2].pool = "h100";  // a change in its pool, whoever's: a marker on its chart
  events[3].pool = "l40s";  // another pool's: not
  const auto j = h.workload_json("ads/train", "h100", kT0, kT0 + 10 * kMin, events, [](std::int64_t t) { return kT0 + t; });
  ASSERT_EQ(j["devices"].size(), 2U);
  EXPECT_EQ(j["devices"][0]["samples"].size(), 4U);
  EXPECT_EQ(j["devices"][1]["samples"].size(), 2U) << "GPU-b went to search/x at minute 2";
  ASSERT_EQ(j["mean"].size(), 4U);
  EXPECT_EQ(j["mean"][0]["gpuUtilization"], 60.0);
  EXPECT_EQ(j["mean"][0]["devices"], 2);
  EXPECT_EQ(j["mean"][3]["gpuUtilization"], 40.0);
  ASSERT_EQ(j["markers"].size(), 2U) << j["markers"].dump();
  EXPECT_EQ(j["markers"][0]["kind"], "Preempted");
  EXPECT_EQ(j["markers"][1]["kind"], "QuotaChanged");
  EXPECT_TRUE(h.workload_json("nobody/here", "h100", kT0, kT0 + kMin, events, [](std::int64_t t) { return t; })["devices"].empty());
}

}  // namespace
}  // namespace gpubank::twin::live
