#include "attribution/builder.hpp"

#include <gtest/gtest.h>
// The memory test counts with ASan's allocator (the asan preset, what CI runs); builds
// without it (the release preset, gcc) skip that one test.
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define GPUBANK_ASAN_COUNTS 1
#endif
#elif defined(__SANITIZE_ADDRESS__)
#define GPUBANK_ASAN_COUNTS 1
#endif
#if defined(GPUBANK_ASAN_COUNTS) && __has_include(<sanitizer/allocator_interface.h>)
#include <sanitizer/allocator_interface.h>
#else
#undef GPUBANK_ASAN_COUNTS
#endif

#include <cstdio>

#include "attribution/pods.hpp"
#include "k8s/watch_event.hpp"

namespace gpubank::attribution {
namespace {

using testing::Json;
using testing::pod_named;
using testing::pytorch_master;

constexpr std::int64_t kMinute = 60'000;
constexpr std::int64_t kT0 = 1'796'026'400'000;

std::vector<std::string> nodes(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}

const PodMeta* find(const NodeSnapshot& s, const std::string& uid) {
  for (const PodMeta& p : s.pods) {
    if (p.uid == uid) return &p;
  }
  return nullptr;
}

TEST(SnapshotBuilder, PinsAttributionAcrossALabelChange) {
  SnapshotBuilder b;
  Json pod = pod_named("uid-1", "llama-ft-master-0", "gpu-node-17");
  EXPECT_EQ(b.upsert(pod, kT0), std::vector<std::string>{"gpu-node-17"});
  const std::int64_t gen = b.generation("gpu-node-17");
  // A re-organisation: the team is renamed and the owner changes, while the pod runs.
  pod["metadata"]["labels"]["platform.gpubank.dev/business-group"] = "search-and-ads";
  pod["metadata"]["labels"]["platform.gpubank.dev/owner-id"] = "u99999";
  pod["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "other-queue";
  EXPECT_TRUE(b.upsert(pod, kT0 + kMinute).empty());
  auto s = b.snapshot("gpu-node-17");
  ASSERT_TRUE(s);
  ASSERT_EQ(s->pods.size(), 1u);
  EXPECT_EQ(s->pods[0].business_group, "search");
  EXPECT_EQ(s->pods[0].owner_id, "u12345");
  EXPECT_EQ(s->pods[0].queue, "search-train");
  EXPECT_EQ(s->generation, gen);
  // A new pod of the same job, created after the re-organisation, carries the new group.
  Json later = pod;
  later["metadata"]["uid"] = "uid-2";
  later["metadata"]["name"] = "llama-ft-worker-0";
  b.upsert(later, kT0 + 2 * kMinute);
  s = b.snapshot("gpu-node-17");
  EXPECT_EQ(find(*s, "uid-2")->business_group, "search-and-ads");
  EXPECT_EQ(find(*s, "uid-1")->business_group, "search");
}

// The low-utilisation exception follows the pod (it says nothing of who owns it): added,
// extended and withdrawn while the pod runs, each a new generation. A malformed value is
// no exception.
TEST(SnapshotBuilder, KeepRunningUntilFollowsTheRunningPod) {
  SnapshotBuilder b;
  Json pod = pod_named("uid-1", "llama-ft-master-0", "gpu-node-17");
  b.upsert(pod, kT0);
  const std::int64_t gen = b.generation("gpu-node-17");
  pod["metadata"]["annotations"]["platform.gpubank.dev/keep-running-until"] = "2026-12-05T18:00:00Z";
  EXPECT_EQ(b.upsert(pod, kT0 + kMinute), std::vector<std::string>{"gpu-node-17"});
  EXPECT_GT(b.generation("gpu-node-17"), gen);
  EXPECT_EQ(b.snapshot("gpu-node-17")->pods[0].keep_running_until, "1796493600");
  EXPECT_TRUE(b.upsert(pod, kT0 + 2 * kMinute).empty());  // unchanged: no new generation
  pod["metadata"]["annotations"]["platform.gpubank.dev/keep-running-until"] = "tomorrow";
  EXPECT_EQ(b.upsert(pod, kT0 + 3 * kMinute), std::vector<std::string>{"gpu-node-17"});
  EXPECT_EQ(b.snapshot("gpu-node-17")->pods[0].keep_running_until, "");
  pod["metadata"]["annotations"]["platform.gpubank.dev/keep-running-until"] = "2026-12-06T00:00:00Z";
  b.upsert(pod, kT0 + 4 * kMinute);
  pod["metadata"]["annotations"].erase("platform.gpubank.dev/keep-running-until");
  EXPECT_EQ(b.upsert(pod, kT0 + 5 * kMinute), std::vector<std::string>{"gpu-node-17"});
  EXPECT_EQ(b.snapshot("gpu-node-17")->pods[0].keep_running_until, "");
  EXPECT_EQ(b.snapshot("gpu-node-17")->pods[0].business_group, "search");  // the rest stays pinned
}

TEST(SnapshotBuilder, PendingPodJoinsItsNodeWhenScheduled) {
  SnapshotBuilder b;
  Json pod = pod_named("uid-p", "eval-0", "");
  EXPECT_TRUE(b.upsert(pod, kT0).empty());
  EXPECT_EQ(b.counts().pending, 1u);
  EXPECT_EQ(b.generation("gpu-node-3"), 0);
  // Scheduled, and relabelled on the way: the node changes, the attribution does not.
  pod["spec"]["nodeName"] = "gpu-node-3";
  pod["metadata"]["labels"]["platform.gpubank.dev/business-group"] = "maps";
  EXPECT_EQ(b.upsert(pod, kT0 + 1000), std::vector<std::string>{"gpu-node-3"});
  auto s = b.snapshot("gpu-node-3");
  ASSERT_TRUE(s);
  ASSERT_EQ(s->pods.size(), 1u);
  EXPECT_EQ(s->pods[0].node, "gpu-node-3");
  EXPECT_EQ(s->pods[0].business_group, "search");
  EXPECT_EQ(b.counts().pending, 0u);
  EXPECT_EQ(b.counts().live, 1u);
  // A pending pod deleted before it was scheduled was in no snapshot: nothing to keep.
  EXPECT_TRUE(b.upsert(pod_named("uid-q", "eval-1", ""), kT0).empty());
  EXPECT_TRUE(b.remove("uid-q", kT0 + 1).empty());
  EXPECT_EQ(b.counts().pending, 0u);
}

TEST(SnapshotBuilder, TombstoneThenCleanUp) {
  SnapshotBuilder b(BuilderOptions{std::chrono::minutes(5)});
  b.upsert(pod_named("uid-1", "a", "gpu-node-1"), kT0);
  b.upsert(pod_named("uid-2", "b", "gpu-node-1"), kT0);
  const std::int64_t g0 = b.generation("gpu-node-1");
  EXPECT_EQ(b.remove("uid-1", kT0 + kMinute), std::vector<std::string>{"gpu-node-1"});
  const std::int64_t g1 = b.generation("gpu-node-1");
  EXPECT_GT(g1, g0);
  auto s = b.snapshot("gpu-node-1");
  ASSERT_EQ(s->pods.size(), 2u);
  ASSERT_TRUE(find(*s, "uid-1")->deleted_ms);
  EXPECT_EQ(*find(*s, "uid-1")->deleted_ms, kT0 + kMinute);
  EXPECT_EQ(find(*s, "uid-1")->business_group, "search");  // its last samples still count for it
  EXPECT_EQ(b.counts().tombstones, 1u);
  // A repeated DELETED changes nothing.
  EXPECT_TRUE(b.remove("uid-1", kT0 + 2 * kMinute).empty());
  // Not yet: one millisecond short of the period.
  EXPECT_TRUE(b.expire(kT0 + 6 * kMinute - 1).empty());
  EXPECT_EQ(b.generation("gpu-node-1"), g1);
  EXPECT_EQ(b.expire(kT0 + 6 * kMinute), std::vector<std::string>{"gpu-node-1"});
  s = b.snapshot("gpu-node-1");
  ASSERT_EQ(s->pods.size(), 1u);
  EXPECT_EQ(s->pods[0].uid, "uid-2");
  EXPECT_GT(s->generation, g1);
  EXPECT_EQ(b.counts().tombstones, 0u);
  EXPECT_TRUE(b.expire(kT0 + 60 * kMinute).empty());
  // The node stays known (and its generation keeps growing) once empty.
  b.remove("uid-2", kT0 + 61 * kMinute);
  b.expire(kT0 + 70 * kMinute);
  s = b.snapshot("gpu-node-1");
  ASSERT_TRUE(s);
  EXPECT_TRUE(s->pods.empty());
}

TEST(SnapshotBuilder, FinishedPodIsATombstoneAndDoesNotComeBack) {
  SnapshotBuilder b;
  Json pod = pod_named("uid-job", "eval-1128-x7k2p", "gpu-node-2");
  b.upsert(pod, kT0);
  pod["status"]["phase"] = "Succeeded";
  EXPECT_EQ(b.upsert(pod, kT0 + kMinute), std::vector<std::string>{"gpu-node-2"});
  EXPECT_EQ(*b.snapshot("gpu-node-2")->pods[0].deleted_ms, kT0 + kMinute);
  b.expire(kT0 + 6 * kMinute);
  EXPECT_TRUE(b.snapshot("gpu-node-2")->pods.empty());
  EXPECT_EQ(b.counts().retired, 1u);
  // The API server still lists it: its events (a re-list's too) do not bring it back.
  const std::int64_t gen = b.generation("gpu-node-2");
  EXPECT_TRUE(b.upsert(pod, kT0 + 7 * kMinute).empty());
  EXPECT_EQ(b.generation("gpu-node-2"), gen);
  EXPECT_TRUE(b.snapshot("gpu-node-2")->pods.empty());
  // Its deletion forgets it.
  EXPECT_TRUE(b.remove("uid-job", kT0 + 8 * kMinute).empty());
  EXPECT_EQ(b.counts().retired, 0u);
}

TEST(SnapshotBuilder, GenerationBumpsOnlyWhenContentChanges) {
  SnapshotBuilder b;
  Json a = pod_named("uid-a", "a", "gpu-node-1");
  Json c = pod_named("uid-c", "c", "gpu-node-2");
  EXPECT_EQ(nodes(b.apply(nullptr, &a, kT0)), std::vector<std::string>{"gpu-node-1"});
  b.apply(nullptr, &c, kT0);
  const std::int64_t g1 = b.generation("gpu-node-1"), g2 = b.generation("gpu-node-2");
  EXPECT_EQ(g1, kT0);  // max(0 + 1, now)
  // Status changes, a label change, the same object again: no new generation.
  Json a2 = a;
  a2["status"]["conditions"][2]["status"] = "False";
  a2["metadata"]["resourceVersion"] = "48213999";
  a2["metadata"]["labels"]["platform.gpubank.dev/cost-center"] = "cc-9";
  EXPECT_TRUE(b.apply(&a, &a2, kT0 + 5).empty());
  EXPECT_TRUE(b.apply(&a2, &a2, kT0 + 6).empty());
  EXPECT_EQ(b.generation("gpu-node-1"), g1);
  // A new pod on node 1 bumps node 1 only, at least by one even when the clock stands still.
  Json d = pod_named("uid-d", "d", "gpu-node-1");
  EXPECT_EQ(b.apply(nullptr, &d, kT0), std::vector<std::string>{"gpu-node-1"});
  EXPECT_EQ(b.generation("gpu-node-1"), g1 + 1);
  EXPECT_EQ(b.generation("gpu-node-2"), g2);
  EXPECT_EQ(b.snapshot("gpu-node-1")->produced_ms, kT0);
  // Across a restart of metasync the generation still grows: it follows the clock.
  SnapshotBuilder restarted;
  restarted.apply(nullptr, &a, kT0 + kMinute);
  EXPECT_GT(restarted.generation("gpu-node-1"), b.generation("gpu-node-1"));
}

TEST(SnapshotBuilder, ReusedNameAndCrossNodeRecreationAreNewUids) {
  SnapshotBuilder b;
  Json old_pod = pod_named("uid-old", "notebook-0", "gpu-node-1");
  b.apply(nullptr, &old_pod, kT0);
  b.apply(&old_pod, nullptr, kT0 + kMinute);
  // Re-created under the same name on another node by another team.
  Json fresh = pod_named("uid-new", "notebook-0", "gpu-node-2");
  fresh["metadata"]["labels"]["platform.gpubank.dev/business-group"] = "maps";
  fresh["metadata"]["labels"]["platform.gpubank.dev/owner-id"] = "u777";
  EXPECT_EQ(b.apply(nullptr, &fresh, kT0 + kMinute + 1), std::vector<std::string>{"gpu-node-2"});
  const auto n1 = b.snapshot("gpu-node-1");
  const auto n2 = b.snapshot("gpu-node-2");
  ASSERT_EQ(n1->pods.size(), 1u);
  ASSERT_EQ(n2->pods.size(), 1u);
  EXPECT_EQ(n1->pods[0].uid, "uid-old");
  EXPECT_EQ(n1->pods[0].business_group, "search");
  EXPECT_TRUE(n1->pods[0].deleted_ms);
  EXPECT_EQ(n2->pods[0].uid, "uid-new");
  EXPECT_EQ(n2->pods[0].business_group, "maps");
  EXPECT_EQ(n2->pods[0].owner_id, "u777");
  EXPECT_EQ(n2->resolve("team-search", "notebook-0")->uid, "uid-new");
  // Same name, same node, new UID: the tombstone keeps the old attribution, resolve() the new.
  Json again = pod_named("uid-third", "notebook-0", "gpu-node-2");
  again["metadata"]["labels"]["platform.gpubank.dev/business-group"] = "ads";
  b.apply(&fresh, nullptr, kT0 + 2 * kMinute);
  b.apply(nullptr, &again, kT0 + 2 * kMinute);
  const auto n2b = b.snapshot("gpu-node-2");
  EXPECT_EQ(find(*n2b, "uid-new")->business_group, "maps");
  EXPECT_EQ(n2b->resolve("team-search", "notebook-0")->uid, "uid-third");
  EXPECT_EQ(n2b->resolve("team-search", "notebook-0")->business_group, "ads");
}

// A re-list after 410 Gone: the informer's store diff reports a name deleted and re-created
// while the watch was down as one MODIFIED (before: the old UID).
TEST(SnapshotBuilder, RelistThroughTheInformersStore) {
  SnapshotBuilder b;
  k8s::ObjectStore store([&](k8s::EventType, const Json* before, const Json* after) { b.apply(before, after, kT0); });
  const Json a = pod_named("uid-a", "worker-0", "gpu-node-1");
  const Json c = pod_named("uid-c", "worker-1", "gpu-node-1");
  const Json e = pod_named("uid-e", "worker-2", "gpu-node-2");
  store.replace({a, c, e}, "100");
  const std::int64_t g1 = b.generation("gpu-node-1"), g2 = b.generation("gpu-node-2");
  // The same list again (a 410 Gone with nothing changed): no generation moves.
  store.replace({a, c, e}, "200");
  EXPECT_EQ(b.generation("gpu-node-1"), g1);
  EXPECT_EQ(b.generation("gpu-node-2"), g2);
  // worker-0 re-created (new UID) and worker-1 deleted while the watch was down.
  Json a2 = pod_named("uid-a2", "worker-0", "gpu-node-1");
  a2["metadata"]["labels"]["platform.gpubank.dev/business-group"] = "ads";
  SnapshotBuilder::Counts before = b.counts();
  EXPECT_EQ(before.live, 3u);
  store.replace({a2, e}, "300");
  const auto s = b.snapshot("gpu-node-1");
  ASSERT_EQ(s->pods.size(), 3u);
  EXPECT_TRUE(find(*s, "uid-a")->deleted_ms);
  EXPECT_EQ(find(*s, "uid-a")->business_group, "search");
  EXPECT_TRUE(find(*s, "uid-c")->deleted_ms);
  EXPECT_FALSE(find(*s, "uid-a2")->deleted_ms);
  EXPECT_EQ(find(*s, "uid-a2")->business_group, "ads");
  EXPECT_EQ(b.generation("gpu-node-2"), g2);
}

TEST(SnapshotBuilder, RejectedPodsAreCountedAndDroppedValuesCountedOnce) {
  SnapshotBuilder b;
  Json bad = pytorch_master();
  bad["metadata"].erase("uid");
  EXPECT_TRUE(b.upsert(bad, kT0).empty());
  EXPECT_EQ(b.rejected(), 1u);
  EXPECT_EQ(b.last_rejection(), "metadata.uid: missing");
  Json email = pod_named("uid-e", "e", "gpu-node-1");
  email["metadata"]["labels"]["platform.gpubank.dev/owner-id"] = "bob@example.com";
  b.upsert(email, kT0);
  b.upsert(email, kT0 + 1);  // a MODIFIED: the pod is known, not parsed (nor counted) again
  EXPECT_EQ(b.stats().of("owner_id", DropReason::Email), 1u);
  EXPECT_EQ(b.snapshot("gpu-node-1")->pods[0].owner_id, "");
}

// Heap bytes per pod (ASan's allocator counts exactly what was requested), for
// docs/attribution.md: a whole pod as nlohmann::json, the same pruned, and the builder's
// PodMeta with its indexes.
TEST(SnapshotBuilder, MemoryPerPod) {
#ifndef GPUBANK_ASAN_COUNTS
  GTEST_SKIP() << "needs AddressSanitizer's allocator counters (the asan preset)";
#else
  constexpr int kPods = 400;
  std::vector<Json> pods;
  for (int i = 0; i < kPods; ++i) {
    Json p = pytorch_master();
    p["metadata"]["uid"] = "1f0e2d3c-4b5a-4978-8a6b-" + std::to_string(100'000'000'000 + i);
    p["metadata"]["name"] = "llama-ft-worker-" + std::to_string(i);
    p["spec"]["nodeName"] = "gpu-node-" + std::to_string(i % 250);
    pods.push_back(std::move(p));
  }
  const auto measure = [&](const auto& make) {
    const std::size_t before = __sanitizer_get_current_allocated_bytes();
    auto kept = make();
    const std::size_t after = __sanitizer_get_current_allocated_bytes();
    return static_cast<double>(after - before) / kPods;
  };
  const double whole = measure([&] { return std::vector<Json>(pods); });
  const double pruned = measure([&] {
    std::vector<Json> v(pods);
    for (Json& p : v) prune_pod(p);
    return v;
  });
  const double builder = measure([&] {
    auto b = std::make_unique<SnapshotBuilder>();
    for (const Json& p : pods) b->upsert(p, kT0);
    return b;
  });
  std::printf("memory per pod: whole object %.0f B, pruned %.0f B, builder %.0f B\n", whole, pruned, builder);
  RecordProperty("whole_bytes_per_pod", static_cast<int>(whole));
  RecordProperty("pruned_bytes_per_pod", static_cast<int>(pruned));
  RecordProperty("builder_bytes_per_pod", static_cast<int>(builder));
  EXPECT_LT(pruned * 4, whole);
  EXPECT_LT(builder, 2048);
#endif
}

}  // namespace
}  // namespace gpubank::attribution
