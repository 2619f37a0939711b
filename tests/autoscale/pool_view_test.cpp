// The pool as node and pod objects show it (pool_view), the replicas by phase, the
// capacity a gateway reads (live_capacity), and the server that hands it out over real
// loopback HTTP (CapacityServer).
#include <gtest/gtest.h>

#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "autoscale/capacity_server.hpp"
#include "autoscale/pool_view.hpp"
#include "support/policy_fixture.hpp"
#include "support/promtool.hpp"

namespace gpubank::autoscale {
namespace {

using Json = nlohmann::json;

// The examples: customer-service-llm is TP=4 on h100-inference (32 guaranteed, nodes
// labelled platform.gpubank.dev/pool: h100-inference); search and ads are training groups.
const policy::PolicySet& examples() {
  static const policy::PolicySet set = gpubank::testing::examples_plus();
  return set;
}

const policy::InferenceScalingPolicySpec& llm() {
  for (const auto& p : examples().policies()) {
    if (p.name() == "customer-service-llm") return p.as<policy::InferenceScalingPolicySpec>();
  }
  throw std::logic_error("no customer-service-llm in the examples");
}

Json node(const std::string& name, const std::string& pool, int allocatable, int capacity, bool cordoned = false) {
  Json n = {{"metadata",
             {{"name", name},
              {"labels", {{"platform.gpubank.dev/pool", pool}, {"nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"}}}}},
            {"status", {{"allocatable", {{"nvidia.com/gpu", std::to_string(allocatable)}}},
                        {"capacity", {{"nvidia.com/gpu", std::to_string(capacity)}}}}}};
  if (cordoned) n["spec"]["unschedulable"] = true;
  return n;
}

Json pod(const std::string& ns, const std::string& name, const std::string& node, Json gpus, std::string phase = "Running",
         bool ready = true) {
  Json p = {{"metadata", {{"name", name}, {"namespace", ns}, {"labels", {{"app", name.substr(0, name.find('-'))}}}}},
            {"spec", {{"containers", {{{"name", "main"}, {"resources", {{"limits", {{"nvidia.com/gpu", gpus}}}}}}}}}},
            {"status", {{"phase", phase}}}};
  if (!node.empty()) p["spec"]["nodeName"] = node;
  if (ready) p["status"]["conditions"] = {{{"type", "Ready"}, {"status", "True"}}};
  return p;
}

TEST(PodDevices, IsTheKubeletsEffectiveRequest) {
  Json p = pod("x", "a-0", "n", "2");
  EXPECT_EQ(pod_devices(p, "nvidia.com/gpu"), 2);
  p["spec"]["containers"].push_back({{"name", "side"}, {"resources", {{"requests", {{"nvidia.com/gpu", 1}}}}}});
  EXPECT_EQ(pod_devices(p, "nvidia.com/gpu"), 3);  // containers add up
  p["spec"]["initContainers"] = {{{"name", "warm"}, {"resources", {{"limits", {{"nvidia.com/gpu", "4"}}}}}}};
  EXPECT_EQ(pod_devices(p, "nvidia.com/gpu"), 4);  // an init container asking for more sets it
  EXPECT_EQ(pod_devices(p, "nvidia.com/mig-1g.10gb"), 0);
  // Not a whole number of devices (the API server refuses these for extended resources).
  for (const Json& bad : {Json("500m"), Json("1.5"), Json(-1), Json("1Ki"), Json("99999999999")}) {
    EXPECT_EQ(pod_devices(pod("x", "a-0", "n", bad), "nvidia.com/gpu"), 0) << bad.dump();
  }
}

TEST(PoolView, NodesOfThePoolLessWhatTheirPodsHoldWithBorrowersAndTheQuota) {
  ClusterObjects o;
  o.nodes = {node("h-0", "h100-inference", 8, 8), node("h-1", "h100-inference", 7, 8),  // one device unhealthy
             node("h-2", "h100-inference", 8, 8, /*cordoned=*/true), node("t-0", "h100-rdma-training", 8, 8),
             {{"metadata", {{"name", "unlabelled"}}}}};
  o.nodes.back()["metadata"]["labels"] = {{"platform.gpubank.dev/pool", "h100-inference"}};  // not the product label
  o.pods = {pod("customer-service", "llm-0", "h-0", "4"),
            pod("customer-service", "llm-1", "h-1", "4"),
            pod("search", "train-0", "h-0", "2"),  // another group's: a borrower here
            pod("search", "done-0", "h-1", "3", "Succeeded"),  // finished: holds nothing
            pod("search", "queued-0", "", "8", "Pending", false),  // not on a node: holds nothing
            pod("ads", "train-1", "t-0", "8")};  // another pool
  auto view = pool_view(examples(), llm(), o);
  ASSERT_TRUE(view.ok()) << view.error();
  ASSERT_EQ(view->nodes.size(), 3u);
  EXPECT_EQ(view->nodes[0].name, "h-0");
  EXPECT_EQ(view->nodes[0].free, 2);
  EXPECT_EQ(view->nodes[0].held_by_borrowers, 2);
  EXPECT_EQ(view->nodes[1].free, 3);
  EXPECT_EQ(view->nodes[1].unhealthy, 1);
  EXPECT_EQ(view->nodes[1].gpus, 8);
  EXPECT_EQ(view->nodes[2].free, 0);  // cordoned
  EXPECT_EQ(view->quota.guaranteed, 32);
  EXPECT_EQ(view->quota.used, 8);
  EXPECT_EQ(view->quota.lent, 2);  // search guarantees nothing here: its 2 are borrowed
  EXPECT_EQ(view->quota.cohort_free, 5);

  auto spec = llm();
  spec.resource_pool = "nowhere";
  EXPECT_EQ(pool_view(examples(), spec, o).error(), "resourcePool nowhere is not in the PlatformGuardrails");
}

TEST(ReplicaPhases, FromTheWorkloadsPods) {
  Json draining = pod("cs", "llm-3", "h-0", "4");
  draining["metadata"]["deletionTimestamp"] = "2026-12-07T10:00:00Z";
  const std::vector<Json> pods{pod("cs", "llm-0", "h-0", "4"), pod("cs", "llm-1", "h-1", "4", "Running", false),
                               pod("cs", "llm-2", "", "4", "Pending", false), draining,
                               pod("cs", "llm-4", "h-1", "4", "Failed", false)};
  EXPECT_EQ(replica_phases(pods), (ReplicaPhases{1, 1, 1, 1}));
}

TEST(LiveCapacity, SaysWhetherAReplicaShapeFitsAndWhenItWouldServe) {
  ClusterObjects o;
  o.nodes = {node("h-0", "h100-inference", 8, 8), node("h-1", "h100-inference", 8, 8)};
  o.pods = {pod("customer-service", "llm-0", "h-0", "4"), pod("customer-service", "llm-1", "h-1", "4"),
            pod("search", "train-0", "h-0", "2"), pod("search", "train-1", "h-1", "2")};
  auto view = pool_view(examples(), llm(), o);
  ASSERT_TRUE(view.ok());
  LiveCapacityInputs in;
  in.policy = "customer-service-llm";
  in.spec = &llm();
  in.phases = {2, 0, 0, 0};
  serving::Observation seen;
  seen.queue_depth = 12;
  seen.request_rate = 3.5;
  in.observation = seen;
  in.pool = *view;
  // 2 free on each node: a TP=4 replica needs 2 back from search's borrowers on one node.
  auto c = live_capacity(examples(), in);
  EXPECT_EQ(c.ready, 2);
  EXPECT_EQ(c.queue_depth, 12);
  EXPECT_EQ(c.arrival_rps, 3.5);
  EXPECT_FALSE(c.headroom_rps);  // the policy states no requests per second per replica
  EXPECT_TRUE(c.scale_out_possible);
  ASSERT_TRUE(c.scale_out_ready_seconds);
  EXPECT_GT(*c.scale_out_ready_seconds, 6 * 60.0);  // the borrowers' grace, then the 6-minute load
  // A replica still waiting for GPUs takes them first: the next one no longer fits.
  in.phases.requested = 1;
  o.pods.pop_back();  // h-1: 4 free, which the waiting replica takes
  in.pool = *pool_view(examples(), llm(), o);
  c = live_capacity(examples(), in);
  EXPECT_EQ(c.requested, 1);
  EXPECT_TRUE(c.scale_out_possible);  // h-0's borrower can still be taken back
  // With a rate target, the headroom is ready x target - the finished rate.
  auto rated = llm();
  rated.scale_up.requests_per_second_per_replica = 2.0;
  in.spec = &rated;
  c = live_capacity(examples(), in);
  ASSERT_TRUE(c.headroom_rps);
  EXPECT_DOUBLE_EQ(*c.headroom_rps, 0.5);
}

TEST(CapacityServer, ServesTheLastSyncAndRefusesWhatIsNotARead) {
  auto server = CapacityServer::start("127.0.0.1", 0, "customer-service-llm");
  ASSERT_TRUE(server.ok()) << server.error();
  httplib::Client client("127.0.0.1", (*server)->port());
  auto before = client.Get("/api/v1/services/customer-service-llm/capacity");
  ASSERT_TRUE(before);
  EXPECT_EQ(before->status, 503);
  EXPECT_NE(before->body.find("no sync has run yet"), std::string::npos);

  ScaleSync sync;
  sync.target = 5;
  serving::Capacity c;
  c.policy = "customer-service-llm";
  c.ready = 3;
  c.loading = 1;
  c.queue_depth = 7;
  c.scale_out_possible = true;
  c.scale_out_ready_seconds = 360;
  c.borrowable_gpus = 8;
  sync.capacity = c;
  (*server)->publish(sync, 1'796'695'200'000);
  auto got = client.Get("/api/v1/services/customer-service-llm/capacity");
  ASSERT_TRUE(got);
  EXPECT_EQ(got->status, 200);
  const Json body = Json::parse(got->body);
  EXPECT_EQ(body["replicas"]["ready"], 3);
  EXPECT_EQ(body["scaleOut"]["possible"], true);
  EXPECT_EQ(body["scaleOut"]["readySeconds"], 360);
  EXPECT_EQ(got->get_header_value("Cache-Control"), "no-store");

  auto other = client.Get("/api/v1/services/billing/capacity");
  ASSERT_TRUE(other);
  EXPECT_EQ(other->status, 404);
  auto post = client.Post("/api/v1/services/customer-service-llm/capacity", std::string(8192, 'x'), "application/json");
  ASSERT_TRUE(post);
  EXPECT_TRUE(post->status == 405 || post->status == 413) << post->status;
  auto small_post = client.Post("/metrics", "x", "text/plain");
  ASSERT_TRUE(small_post);
  EXPECT_EQ(small_post->status, 405);
  EXPECT_EQ(small_post->get_header_value("Allow"), "GET, HEAD");
  auto unknown = client.Get("/api/v1/services");
  ASSERT_TRUE(unknown);
  EXPECT_EQ(unknown->status, 404);
  EXPECT_NE(unknown->body.find("no such path"), std::string::npos);

  auto metrics = client.Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_EQ(metrics->status, 200);
  EXPECT_NE(metrics->body.find(R"(gpubank_service_replicas{policy="customer-service-llm",phase="ready"} 3)"), std::string::npos)
      << metrics->body;
  EXPECT_NE(metrics->body.find(R"(gpubank_serving_autoscale_target_replicas{policy="customer-service-llm"} 5)"),
            std::string::npos);
  EXPECT_NE(metrics->body.find(R"(gpubank_serving_autoscale_last_sync_timestamp_seconds{policy="customer-service-llm"} 1796695200)"),
            std::string::npos)
      << metrics->body;
  // Prometheus' own checker reads it.
  const auto promtool = gpubank::testing::find_promtool();
  ASSERT_TRUE(promtool) << gpubank::testing::kPromtoolMissing;
  gpubank::testing::ScratchDir dir;
  gpubank::testing::write_file(dir.path() / "metrics.prom", metrics->body);
  const auto checked = gpubank::testing::run_in(dir.path(), promtool->string() + " check metrics < metrics.prom");
  EXPECT_EQ(checked.status, 0) << checked.output;
}

// A connection to 127.0.0.1:port that sends `bytes` and then nothing (a slowloris).
class StalledClient {
 public:
  StalledClient(int port, const std::string& bytes) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<std::uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
                 ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size());
  }
  ~StalledClient() { ::close(fd_); }
  StalledClient(const StalledClient&) = delete;
  StalledClient& operator=(const StalledClient&) = delete;
  [[nodiscard]] bool connected() const { return connected_; }
  // The server has not closed it (nothing to read yet, no end of stream).
  [[nodiscard]] bool still_open() const {
    char c = 0;
    const ssize_t n = ::recv(fd_, &c, 1, MSG_DONTWAIT | MSG_PEEK);
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
  }

 private:
  int fd_ = -1;
  bool connected_ = false;
};

TEST(CapacityServer, ClientsThatStallDoNotStarveTheOthers) {
  auto server = CapacityServer::start("127.0.0.1", 0, "customer-service-llm");
  ASSERT_TRUE(server.ok()) << server.error();
  std::vector<std::unique_ptr<StalledClient>> stalled;
  for (int i = 0; i < 16; ++i) {
    // Half a request line, or headers that never end.
    stalled.push_back(std::make_unique<StalledClient>((*server)->port(), i % 2 == 0 ? "GET /metr" : "GET /metrics HTTP/1.1\r\nHost: x\r\n"));
    ASSERT_TRUE(stalled.back()->connected());
  }
  httplib::Client client("127.0.0.1", (*server)->port());
  auto health = client.Get("/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  // Served while every stalled client still holds its connection (the server's 10 s read
  // timeout has not freed a worker for it).
  for (const auto& s : stalled) EXPECT_TRUE(s->still_open());
}

}  // namespace
}  // namespace gpubank::autoscale
