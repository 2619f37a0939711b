// Metasync against the FAKE API server (tests/support/fake_apiserver.hpp, not a Kubernetes
// API server): real Pod JSON listed and watched, a 410 Gone and a dropped watch injected,
// the snapshot endpoint read over HTTP and the files read from disk.
#include "attribution/metasync.hpp"

#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <condition_variable>
#include <mutex>

#include "attribution/pods.hpp"
#include "k8s/fake_client.hpp"
#include "support/fake_apiserver.hpp"
#include "support/promtool.hpp"  // ScratchDir

namespace gpubank::attribution {
namespace {

using gpubank::testing::FakeApiServer;
using k8s::testing::config_for;
using k8s::testing::eventually;
using k8s::testing::SleepLog;
using testing::Json;
using testing::pod_named;
using testing::with_owner;

const std::string kKey = "0123456789abcdef0123456789abcdef-metasync-test-key";
const std::string kOtherKey = "fedcba9876543210fedcba9876543210-another-test-key";
constexpr std::int64_t kT0 = 1'796'026'400'000;

class MetasyncEndToEnd : public ::testing::Test {
 protected:
  void SetUp() override {
    fake_ = std::make_unique<FakeApiServer>(FakeApiServer::Options{});
    fake_->put("pods", pod_named("uid-master", "llama-ft-master-0", "gpu-node-1"));
    fake_->put("pods", with_owner(pod_named("uid-vllm", "vllm-llama-5f8b9d7c4-x2x9q", "gpu-node-1", "team-ads"),
                                  Json{{"apiVersion", "apps/v1"}, {"kind", "ReplicaSet"}, {"name", "vllm-llama-5f8b9d7c4"},
                                       {"uid", "uid-rs"}},
                                  Json{{"pod-template-hash", "5f8b9d7c4"}, {"platform.gpubank.dev/business-group", "ads"},
                                       {"platform.gpubank.dev/workload-type", "inference"}}));
    fake_->put("pods", pod_named("uid-worker", "llama-ft-worker-0", "gpu-node-2"));
    fake_->put("pods", pod_named("uid-pending", "llama-ft-worker-1", ""));
  }
  void TearDown() override {
    gate_.open();
    if (metasync_) metasync_->stop();
  }

  void start(MetasyncOptions options) {
    options.hmac_key = kKey;
    options.now_ms = [this] { return clock_.load(); };
    options.flush_interval = std::chrono::milliseconds(20);
    // Backoffs recorded, not slept, unless the test holds them.
    if (!options.informer.transport.sleep) options.informer.transport.sleep = sleeps_.sleeper();
    auto m = Metasync::create(config_for(*fake_), std::move(options));
    ASSERT_TRUE(m.ok()) << m.error();
    metasync_ = std::move(*m);
    auto started = metasync_->start();
    ASSERT_TRUE(started.ok()) << started.error();
    auto synced = metasync_->wait_for_sync(std::chrono::seconds(60));
    ASSERT_TRUE(synced.ok()) << synced.error().describe();
    // Synced means listed; the list's events reach the builder right after.
    eventually([&] {
      auto n1 = metasync_->snapshot("gpu-node-1");
      auto n2 = metasync_->snapshot("gpu-node-2");
      return n1 && n1->pods.size() == 2 && n2 && n2->pods.size() == 1;
    });
  }

  httplib::Result get(const std::string& path, const std::string& if_none_match = "") {
    httplib::Client client("127.0.0.1", metasync_->port());
    httplib::Headers headers;
    if (!if_none_match.empty()) headers.emplace("If-None-Match", if_none_match);
    return client.Get(path, headers);
  }

  std::int64_t generation(const std::string& node) {
    auto s = metasync_->snapshot(node);
    return s ? s->generation : 0;
  }

  // A transport sleep that a test can hold: closed, every backoff waits until it opens.
  struct Gate {
    std::mutex m;
    std::condition_variable cv;
    bool is_open = true;
    int held = 0;
    std::function<void(std::chrono::milliseconds)> sleeper() {
      return [this](std::chrono::milliseconds) {
        std::unique_lock lock(m);
        ++held;
        cv.notify_all();
        cv.wait(lock, [&] { return is_open; });
        --held;
      };
    }
    void close() {
      std::lock_guard lock(m);
      is_open = false;
    }
    void open() {
      {
        std::lock_guard lock(m);
        is_open = true;
      }
      cv.notify_all();
    }
    bool wait_for_held() {
      std::unique_lock lock(m);
      return cv.wait_for(lock, std::chrono::seconds(60), [&] { return held > 0; });
    }
  };

  std::atomic<std::int64_t> clock_{kT0};
  Gate gate_;
  SleepLog sleeps_;
  std::unique_ptr<FakeApiServer> fake_;
  std::unique_ptr<Metasync> metasync_;
};

TEST_F(MetasyncEndToEnd, ServesSignedSnapshotsWithEtags) {
  start(MetasyncOptions{.listen_port = 0});
  ASSERT_TRUE(fake_->wait_for_open_watches(1));
  const std::size_t api_requests = fake_->requests();
  auto res = get("/v1/nodes/gpu-node-1/snapshot");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  const std::string etag = res->get_header_value("ETag");
  EXPECT_EQ(etag, snapshot_etag("gpu-node-1", generation("gpu-node-1")));
  EXPECT_EQ(res->get_header_value("Content-Type"), "application/json");
  auto decoded = decode_snapshot(res->body, kKey);
  ASSERT_TRUE(decoded.ok()) << decoded.error();
  EXPECT_EQ(decoded->node, "gpu-node-1");
  ASSERT_EQ(decoded->pods.size(), 2u);
  const PodMeta* master = decoded->resolve("team-search", "llama-ft-master-0");
  ASSERT_NE(master, nullptr);
  EXPECT_EQ(master->uid, "uid-master");
  EXPECT_EQ(master->business_group, "search");
  EXPECT_EQ(master->workload_kind, "PyTorchJob");
  const PodMeta* vllm = decoded->resolve("team-ads", "vllm-llama-5f8b9d7c4-x2x9q");
  ASSERT_NE(vllm, nullptr);
  EXPECT_EQ(vllm->business_group, "ads");
  EXPECT_EQ(vllm->workload_kind, "Deployment");
  EXPECT_EQ(vllm->workload, "vllm-llama");
  EXPECT_EQ(vllm->workload_type, "inference");
  // Another key rejects it.
  auto forged = decode_snapshot(res->body, kOtherKey);
  ASSERT_FALSE(forged.ok());
  EXPECT_TRUE(forged.error().starts_with("hmacSha256: does not match")) << forged.error();

  // The same generation: 304, weak comparison and lists included.
  for (const std::string& tag : {etag, "W/" + etag, "\"x\", " + etag, std::string("*")}) {
    auto again = get("/v1/nodes/gpu-node-1/snapshot", tag);
    ASSERT_TRUE(again);
    EXPECT_EQ(again->status, 304) << tag;
    EXPECT_EQ(again->body, "");
    EXPECT_EQ(again->get_header_value("ETag"), etag);
  }
  EXPECT_EQ(get("/v1/nodes/gpu-node-1/snapshot", "\"gpu-node-1.1\"")->status, 200);
  // Serving snapshots asks the API server nothing.
  EXPECT_EQ(fake_->requests(), api_requests);

  // A new pod on the node: a new generation, the old ETag gets the new content.
  fake_->put("pods", pod_named("uid-third", "llama-ft-worker-2", "gpu-node-1"));
  eventually([&] { return metasync_->snapshot("gpu-node-1")->pods.size() == 3; });
  auto changed = get("/v1/nodes/gpu-node-1/snapshot", etag);
  ASSERT_TRUE(changed);
  EXPECT_EQ(changed->status, 200);
  EXPECT_NE(changed->get_header_value("ETag"), etag);
  EXPECT_EQ(decode_snapshot(changed->body, kKey)->pods.size(), 3u);

  auto unknown = get("/v1/nodes/gpu-node-9/snapshot");
  ASSERT_TRUE(unknown);
  EXPECT_EQ(unknown->status, 404);
  const Json error = Json::parse(unknown->body);
  EXPECT_EQ(error["field"], "node");
  EXPECT_EQ(error["rule"], "unknown-node");
  EXPECT_NE(error["error"].get<std::string>().find("gpu-node-9"), std::string::npos);
  auto bad = get("/v1/nodes/-gpu-node-/snapshot");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400);
  EXPECT_EQ(Json::parse(bad->body)["rule"], "bad-character");

  EXPECT_EQ(get("/healthz")->status, 200);
  EXPECT_EQ(get("/readyz")->status, 200);
  auto metrics = get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_NE(metrics->body.find("gpubank_metasync_pods{state=\"live\"} 4"), std::string::npos) << metrics->body;
  EXPECT_NE(metrics->body.find("gpubank_metasync_pods{state=\"pending\"} 1"), std::string::npos);
  EXPECT_NE(metrics->body.find("gpubank_metasync_snapshot_generation{node=\"gpu-node-2\"}"), std::string::npos);
  EXPECT_NE(metrics->body.find("gpubank_metasync_snapshot_requests_total{code=\"304\"} 4"), std::string::npos);
  EXPECT_NE(metrics->body.find("gpubank_metasync_synced 1"), std::string::npos);
}

// 410 Gone: metasync is held in its backoff after a cut watch (a closed gate in its
// transport's sleep) while the fake changes a pod's status only (node 1), re-creates a pod
// under the same name with a new UID (node 2) and compacts its history; let go, it resumes
// from a compacted resourceVersion, gets 410 and lists again.
TEST_F(MetasyncEndToEnd, GoneAndDroppedWatchMakeNoNewGenerations) {
  gate_.close();
  fake_->drop_next_watch_after(0);  // the first watch is cut as soon as it starts
  MetasyncOptions options{.listen_port = 0};
  options.informer.transport.sleep = gate_.sleeper();
  start(std::move(options));
  ASSERT_TRUE(gate_.wait_for_held());
  const std::int64_t g1 = generation("gpu-node-1"), g2 = generation("gpu-node-2");
  const std::string etag1 = get("/v1/nodes/gpu-node-1/snapshot")->get_header_value("ETag");
  clock_ += 60'000;  // a change now would show in the generation

  Json master = pod_named("uid-master", "llama-ft-master-0", "gpu-node-1");
  master["status"]["conditions"][2]["status"] = "False";
  master["metadata"]["labels"]["platform.gpubank.dev/business-group"] = "re-organised";
  fake_->put("pods", master);
  ASSERT_TRUE(fake_->remove("pods", "team-search", "llama-ft-worker-0"));
  Json recreated = pod_named("uid-worker-again", "llama-ft-worker-0", "gpu-node-2");
  recreated["metadata"]["labels"]["platform.gpubank.dev/business-group"] = "maps";
  fake_->put("pods", recreated);
  fake_->compact();
  gate_.open();
  eventually([&] { return metasync_->watch_stats().gone >= 1 && metasync_->watch_stats().lists >= 2; });
  eventually([&] { return metasync_->snapshot("gpu-node-2")->pods.size() == 2; });
  EXPECT_EQ(generation("gpu-node-1"), g1);
  EXPECT_EQ(get("/v1/nodes/gpu-node-1/snapshot", etag1)->status, 304);
  EXPECT_EQ(metasync_->snapshot("gpu-node-1")->resolve("team-search", "llama-ft-master-0")->business_group, "search");
  // The name re-created while the watch was down: the old UID a tombstone, the new one live.
  const auto node2 = metasync_->snapshot("gpu-node-2");
  EXPECT_GT(node2->generation, g2);
  const PodMeta* now = node2->resolve("team-search", "llama-ft-worker-0");
  ASSERT_NE(now, nullptr);
  EXPECT_EQ(now->uid, "uid-worker-again");
  EXPECT_EQ(now->business_group, "maps");
  for (const PodMeta& p : node2->pods) {
    if (p.uid == "uid-worker") {
      EXPECT_TRUE(p.deleted_ms);
      EXPECT_EQ(p.business_group, "search");
    }
  }

  // A dropped watch: cut after one event (the connection closed, no final chunk).
  const std::int64_t g2b = generation("gpu-node-2");
  ASSERT_TRUE(fake_->wait_for_open_watches(1));
  const std::size_t resumes = metasync_->watch_stats().resumes;
  fake_->drop_next_watch_after(1);
  fake_->end_watches();
  ASSERT_TRUE(eventually([&] { return metasync_->watch_stats().resumes > resumes && fake_->open_watches() == 1; }));
  fake_->put("pods", pod_named("uid-node3", "llama-ft-worker-3", "gpu-node-3"));
  eventually([&] { return metasync_->snapshot("gpu-node-3").has_value(); });
  eventually([&] { return metasync_->watch_stats().resumes > resumes + 1 && fake_->open_watches() == 1; });
  EXPECT_EQ(generation("gpu-node-1"), g1);
  EXPECT_EQ(generation("gpu-node-2"), g2b);
  EXPECT_EQ(get("/v1/nodes/gpu-node-1/snapshot", etag1)->status, 304);

  const std::string metrics = metasync_->metrics_text();
  EXPECT_NE(metrics.find("gpubank_metasync_watch_gone_total 1"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("gpubank_metasync_watch_lists_total 2"), std::string::npos) << metrics;
}

TEST_F(MetasyncEndToEnd, FilesTombstonesAndExpiry) {
  gpubank::testing::ScratchDir out;
  start(MetasyncOptions{.health_port = 0, .out_dir = out.path().string()});
  EXPECT_EQ(metasync_->port(), -1);
  eventually([&] { return metasync_->ready(); });
  const std::string file = (out.path() / "gpu-node-2.json").string();
  auto first = read_snapshot_file(file, kKey);
  ASSERT_TRUE(first.ok()) << first.error();
  ASSERT_EQ(first->pods.size(), 1u);
  EXPECT_EQ(first->pods[0].uid, "uid-worker");
  EXPECT_FALSE(read_snapshot_file(file, kOtherKey).ok());
  {
    httplib::Client health("127.0.0.1", metasync_->health_port());
    EXPECT_EQ(health.Get("/readyz")->status, 200);
    EXPECT_EQ(health.Get("/v1/nodes/gpu-node-2/snapshot")->status, 404);  // not served on the health port
  }

  // Deleted: a tombstone in the file for the tombstone period.
  clock_ += 1000;
  ASSERT_TRUE(fake_->remove("pods", "team-search", "llama-ft-worker-0"));
  eventually([&] { return metasync_->snapshot("gpu-node-2")->pods[0].deleted_ms.has_value(); });
  metasync_->flush();
  auto tomb = read_snapshot_file(file, kKey);
  ASSERT_TRUE(tomb.ok()) << tomb.error();
  ASSERT_EQ(tomb->pods.size(), 1u);
  EXPECT_EQ(tomb->pods[0].deleted_ms, kT0 + 1000);
  EXPECT_EQ(tomb->pods[0].business_group, "search");
  EXPECT_GT(tomb->generation, first->generation);

  // After five minutes the tombstone goes.
  clock_ += 5 * 60'000;
  metasync_->flush();
  auto after = read_snapshot_file(file, kKey);
  ASSERT_TRUE(after.ok()) << after.error();
  EXPECT_TRUE(after->pods.empty());
  EXPECT_GT(after->generation, tomb->generation);
  const std::string metrics = metasync_->metrics_text();
  EXPECT_NE(metrics.find("gpubank_metasync_pods{state=\"tombstone\"} 0"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("gpubank_metasync_snapshot_writes_total{result=\"error\"} 0"), std::string::npos);
}

TEST_F(MetasyncEndToEnd, RefusesAShortKeyAndAMissingDirectory) {
  MetasyncOptions options;
  options.hmac_key = "short";
  auto m = Metasync::create(config_for(*fake_), options);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error(), "hmac key: 5 bytes; at least 32 are needed");
  options.hmac_key = kKey;
  options.out_dir = "/nonexistent/metasync";
  m = Metasync::create(config_for(*fake_), options);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error(), "out dir: /nonexistent/metasync is not a directory");
}

}  // namespace
}  // namespace gpubank::attribution
