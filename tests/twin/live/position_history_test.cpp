// The group page's minutes (twin/live/position_history.hpp): per group and pool its
// guarantee, the devices it held (time-sliced ones by share), what it borrowed and lent;
// zeros once a position is gone; bounded; markers of its own events only.
#include "twin/live/position_history.hpp"
#include "twin/live/service_history.hpp"

#include <gtest/gtest.h>

namespace gpubank::twin::live {
namespace {

constexpr std::int64_t kStart = 1'764'547'200'000;  // 2025-12-01T00:00:00Z
constexpr std::int64_t kMinute = 60'000;

MinuteObservation position_minute(std::int64_t i, double search_guarantee, int search_devices, double loan) {
  MinuteObservation m;
  m.t_ms = kStart + i * kMinute;
  m.quotas = {{"search", "h100", search_guarantee, 0}, {"ads", "h100", 8, 0}};
  for (int d = 0; d < search_devices; ++d) {
    DeviceMinute x;
    x.device = "GPU-" + std::to_string(d);
    x.pool = "h100";
    x.business_group = "search";
    x.share = 1;
    m.devices.push_back(x);
  }
  DeviceMinute shared;  // time-sliced between two of ads's pods: half each
  shared.device = "GPU-s";
  shared.pool = "h100";
  shared.business_group = "ads";
  shared.share = 0.5;
  m.devices.push_back(shared);
  m.devices.push_back(shared);
  DeviceMinute free_device;
  free_device.device = "GPU-f";
  free_device.pool = "h100";
  m.devices.push_back(free_device);
  if (loan > 0) m.loans = {{"ads", "search", "h100", loan}};
  return m;
}

run::Event position_event(std::int64_t minute, std::string kind, std::string object, std::string group, std::string pool) {
  run::Event e;
  e.t = minute * kMinute;
  e.kind = std::move(kind);
  e.object = std::move(object);
  e.business_group = std::move(group);
  e.pool = std::move(pool);
  e.message = e.kind;
  return e;
}

TEST(PositionHistory, EachGroupsGuaranteeHoldingsAndLoansPerPoolAndMinute) {
  PositionHistory h;
  h.record(position_minute(0, 16, 20, 4));
  h.record(position_minute(1, 16, 12, 0));
  h.record(position_minute(1, 99, 99, 99));  // the same minute again: ignored
  h.record(position_minute(2, 8, 12, 0));
  const auto unix_ms = [](std::int64_t t) { return kStart + t; };
  const auto search = h.json("search", kStart, kStart + 10 * kMinute, {}, unix_ms);
  ASSERT_EQ(search["pools"].size(), 1U);
  const auto& m = search["pools"][0]["minutes"];
  ASSERT_EQ(m.size(), 3U);
  EXPECT_EQ(m[0]["guaranteed"], 16.0);
  EXPECT_EQ(m[0]["held"], 20.0);
  EXPECT_EQ(m[0]["borrowed"], 4.0);
  EXPECT_EQ(m[0]["lent"], 0.0);
  EXPECT_EQ(m[1]["borrowed"], 0.0);
  EXPECT_EQ(m[2]["guaranteed"], 8.0);
  const auto ads = h.json("ads", kStart, kStart + 10 * kMinute, {}, unix_ms);
  const auto& a = ads["pools"][0]["minutes"];
  EXPECT_EQ(a[0]["held"], 1.0) << "two halves of one time-sliced device";
  EXPECT_EQ(a[0]["lent"], 4.0);
  // The range asked for, both ends included.
  EXPECT_EQ(h.json("search", kStart + kMinute, kStart + 2 * kMinute, {}, unix_ms)["pools"][0]["minutes"].size(), 2U);
  // A group with nothing anywhere in the range lists no pool.
  EXPECT_TRUE(h.json("nobody", kStart, kStart + 10 * kMinute, {}, unix_ms)["pools"].empty());
}

TEST(PositionHistory, APositionThatEndsFallsToZeroAndTheDayIsBounded) {
  PositionHistory h(3);
  h.record(position_minute(0, 16, 2, 0));
  MinuteObservation empty;
  empty.t_ms = kStart + kMinute;
  h.record(empty);
  const auto unix_ms = [](std::int64_t t) { return kStart + t; };
  auto j = h.json("search", kStart, kStart + 10 * kMinute, {}, unix_ms);
  ASSERT_EQ(j["pools"][0]["minutes"].size(), 2U);
  EXPECT_EQ(j["pools"][0]["minutes"][1]["guaranteed"], 0.0);
  EXPECT_EQ(j["pools"][0]["minutes"][1]["held"], 0.0);
  for (std::int64_t i = 2; i < 6; ++i) h.record(position_minute(i, 16, 2, 0));
  j = h.json("search", kStart, kStart + 10 * kMinute, {}, unix_ms);
  EXPECT_EQ(j["pools"][0]["minutes"].size(), 3U) << "the last three minutes only";
  EXPECT_EQ(j["pools"][0]["minutes"][0]["t"], "2025-12-01T00:03:00Z");
}

TEST(PositionHistory, MarkersAreTheGroupsOwnQuotaLeaseAndReclaimEvents) {
  PositionHistory h;
  h.record(position_minute(0, 16, 2, 0));
  const std::vector<run::Event> events{
      position_event(1, "QuotaChanged", "GPUQuotaPolicy/search-h100", "search", "h100"),
      position_event(1, "QuotaChanged", "GPUQuotaPolicy/ads-h100", "ads", "h100"),             // another group's
      position_event(2, "ReclaimNoticeSent", "Workload/search/train", "search", "h100"),
      position_event(2, "Admitted", "Workload/search/train", "search", "h100"),                // not a marker kind
      position_event(90, "LeaseActivated", "CapacityLease/search-burst", "search", "h100"),   // out of range
  };
  const auto j = h.json("search", kStart, kStart + 10 * kMinute, events, [](std::int64_t t) { return kStart + t; });
  ASSERT_EQ(j["markers"].size(), 2U) << j["markers"].dump();
  EXPECT_EQ(j["markers"][0]["kind"], "QuotaChanged");
  EXPECT_EQ(j["markers"][0]["pool"], "h100");
  EXPECT_EQ(j["markers"][0]["t"], "2025-12-01T00:01:00Z");
  EXPECT_EQ(j["markers"][1]["kind"], "ReclaimNoticeSent");
  EXPECT_TRUE(PositionHistory::is_marker("LeaseExpired"));
  EXPECT_FALSE(PositionHistory::is_marker("Admitted"));
}

// A pool's minutes: its devices (a time-sliced device once), the devices held and by whom;
// markers: the pool's quota, lease, reclaim and XID events, not its workloads' own.
TEST(PositionHistory, APoolsDevicesAndHoldersPerMinuteWithItsOwnEvents) {
  PositionHistory h;
  h.record(position_minute(0, 16, 20, 4));
  h.record(position_minute(1, 16, 12, 0));
  const std::vector<run::Event> events{
      position_event(1, "QuotaChanged", "GPUQuotaPolicy/search-h100", "search", "h100"),
      position_event(1, "GpuUnhealthy", "GPU/GPU-3", "", "h100"),
      position_event(1, "ReclaimNoticeSent", "Workload/search/train", "search", "h100"),  // a workload's
      position_event(1, "QuotaChanged", "GPUQuotaPolicy/ads-l40s", "ads", "l40s"),       // another pool's
  };
  const auto j = h.pool_json("h100", kStart, kStart + 10 * kMinute, events, [](std::int64_t t) { return kStart + t; });
  ASSERT_EQ(j["minutes"].size(), 2U);
  EXPECT_EQ(j["minutes"][0]["devices"], 22) << "20 of search's, one time-sliced, one free";
  EXPECT_EQ(j["minutes"][0]["held"], 21.0);
  EXPECT_EQ(j["minutes"][0]["groups"]["search"], 20.0);
  EXPECT_EQ(j["minutes"][0]["groups"]["ads"], 1.0);
  EXPECT_EQ(j["minutes"][1]["devices"], 14);
  ASSERT_EQ(j["markers"].size(), 2U) << j["markers"].dump();
  EXPECT_EQ(j["markers"][0]["kind"], "QuotaChanged");
  EXPECT_EQ(j["markers"][1]["kind"], "GpuUnhealthy");
  EXPECT_TRUE(h.pool_json("l40s", kStart, kStart + kMinute, {}, [](std::int64_t t) { return t; })["minutes"].empty());
}

// A service's minutes as the recorder read its vLLM series (no TTFT in a minute without
// requests), and its own, its policy's and its pool's quota events as markers.
TEST(ServiceHistory, AServicesReplicasTtftAndItsEvents) {
  ServiceHistory h;
  for (std::int64_t i = 0; i < 3; ++i) {
    MinuteObservation m;
    m.t_ms = kStart + i * kMinute;
    ServingMinute s;
    s.namespace_name = "cs";
    s.workload_kind = "InferenceService";
    s.workload = "llm";
    s.pods = static_cast<int>(2 + i);
    s.idle_pods = 1;
    s.tokens_per_minute = 1200;
    if (i > 0) s.ttft_p95_s = 0.25 * static_cast<double>(i);
    m.serving = {s};
    h.record(m);
  }
  run::Event scaled = position_event(1, "ScaleUpRequested", "InferenceService/cs/llm", "cs", "h100");
  run::Event tidal = position_event(2, "PrewarmStarted", "TidalPolicy/day", "cs", "h100");
  tidal.related = {"InferenceScalingPolicy/llm"};
  const std::vector<run::Event> events{scaled, tidal,
                                       position_event(2, "ReplicaReady", "InferenceService/cs/other", "cs", "h100")};
  const auto j = h.json("cs", "llm", "InferenceService/cs/llm", "InferenceScalingPolicy/llm", "h100", kStart,
                        kStart + 10 * kMinute, events, [](std::int64_t t) { return kStart + t; });
  ASSERT_EQ(j["minutes"].size(), 3U);
  EXPECT_EQ(j["minutes"][0]["replicas"], 2);
  EXPECT_TRUE(j["minutes"][0]["ttftP95Seconds"].is_null());
  EXPECT_EQ(j["minutes"][2]["ttftP95Seconds"], 0.5);
  EXPECT_EQ(j["minutes"][2]["idleReplicas"], 1);
  ASSERT_EQ(j["markers"].size(), 2U) << j["markers"].dump();
  EXPECT_EQ(j["markers"][0]["kind"], "ScaleUpRequested");
  EXPECT_EQ(j["markers"][1]["kind"], "PrewarmStarted");
  EXPECT_TRUE(h.json("other-ns", "llm", "", "", "", kStart, kStart + kMinute, {}, [](std::int64_t t) { return t; })["minutes"].empty());
}

}  // namespace
}  // namespace gpubank::twin::live
