// The node exporter end to end, with the real protocols around it: a fake dcgm-exporter
// (its text over HTTP), a FAKE kubelet (a real PodResources gRPC server on a unix socket), a
// snapshot signed and written as metasync writes it, the exporter serving /metrics, and a
// real Prometheus scraping it: the mission's PromQL checks run through its API.
#include "attribution/exporter.hpp"

#include <gtest/gtest.h>
#include <httplib.h>

#include <mutex>
#include <thread>

#include "support/fake_kubelet.hpp"
#include "support/paths.hpp"
#include "support/prometheus_server.hpp"
#include "support/promtool.hpp"

namespace gpubank::attribution {
namespace {

constexpr const char* kKey = "0123456789abcdef0123456789abcdef-test-key";
constexpr const char* kGpu0 = "GPU-5d6c58a2-7c52-3f4e-9f3a-0b1c2d3e4f50";
constexpr const char* kGpu1 = "GPU-0b4e2f8c-3d1a-4c5b-8e7f-6a5b4c3d2e1f";
constexpr const char* kGpu2 = "GPU-e46a8f8f-eb27-178a-160e-ae0ab04e8dfc";

std::string dcgm_page() {
  std::string text = "# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).\n# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n";
  int i = 0;
  for (const char* uuid : {kGpu0, kGpu1, kGpu2}) {
    text += "DCGM_FI_DEV_GPU_UTIL{gpu=\"" + std::to_string(i) + "\",UUID=\"" + uuid +
            "\",pci_bus_id=\"00000000:18:00.0\",device=\"nvidia" + std::to_string(i) +
            "\",modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"node-a\"} " + std::to_string(30 * i) + "\n";
    ++i;
  }
  return text;
}

// A FAKE dcgm-exporter: its page over HTTP, counting requests; can be turned off.
class FakeDcgmExporter {
 public:
  FakeDcgmExporter() {
    server_.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
      ++requests_;
      if (down_) {
        res.status = 503;
        return;
      }
      std::lock_guard lock(m_);
      res.set_content(page_.empty() ? dcgm_page() : page_, "text/plain; version=0.0.4");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~FakeDcgmExporter() {
    server_.stop();
    thread_.join();
  }
  [[nodiscard]] std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/metrics"; }
  void set_down(bool down) { down_ = down; }
  // What it serves instead of the normal page (empty: the normal page).
  void set_page(std::string page) {
    std::lock_guard lock(m_);
    page_ = std::move(page);
  }
  [[nodiscard]] int requests() const { return requests_; }

 private:
  httplib::Server server_;
  int port_ = -1;
  std::thread thread_;
  std::atomic<bool> down_{false};
  std::mutex m_;
  std::string page_;
  std::atomic<int> requests_{0};
};

PodMeta meta(const std::string& uid, const std::string& ns, const std::string& name, const std::string& group) {
  PodMeta m;
  m.uid = uid;
  m.namespace_name = ns;
  m.name = name;
  m.node = "node-a";
  m.created_ms = 1'700'000'000'000;
  m.business_group = group;
  m.owner_id = "u-7";
  m.workload_type = "training";
  m.workload_kind = "PyTorchJob";
  m.workload = name;
  return m;
}

template <class F>
bool eventually(F done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

class ExporterEndToEnd : public ::testing::Test {
 protected:
  void SetUp() override {
    // gpu0 to search/trainer-0 (known to the snapshot), gpu1 to ads/new-pod (not yet known),
    // gpu2 idle.
    kubelet_.set_list_json(std::string(R"({"podResources": [
      {"name": "trainer-0", "namespace": "search", "containers": [
        {"name": "pytorch", "devices": [{"resourceName": "nvidia.com/gpu", "deviceIds": [")") + kGpu0 + R"("]}]}]},
      {"name": "new-pod", "namespace": "ads", "containers": [
        {"name": "main", "devices": [{"resourceName": "nvidia.com/gpu", "deviceIds": [")" + kGpu1 + R"("]}]}]}]})");
    NodeSnapshot snapshot{"node-a", 4, 1'700'000'100'000, {meta("uid-s", "search", "trainer-0", "search")}};
    snapshot_path_ = (dir_.path() / "node-a.json").string();
    ASSERT_TRUE(write_snapshot_file(snapshot_path_, snapshot, kKey).ok());
  }

  std::unique_ptr<Exporter> make(std::chrono::milliseconds interval = std::chrono::milliseconds(200),
                                 std::vector<std::string>* log = nullptr) {
    auto upstream = dcgm_source(dcgm_.url(), std::chrono::milliseconds(1000));
    EXPECT_TRUE(upstream.ok()) << upstream.error();
    auto client = node::PodResourcesClient::create(node::PodResourcesOptions{.socket = kubelet_.socket_path()});
    EXPECT_TRUE(client.ok()) << client.error();
    auto cache = std::make_unique<node::PodResourcesCache>(std::move(*client), interval);
    ExporterOptions options;
    options.node = NodeInfo{"node-a", "h100-rdma-training", "H100", "full"};
    options.interval = interval;
    options.listen_address = "127.0.0.1";
    options.port = 0;
    options.now_ms = [] { return std::int64_t{1'700'000'160'000}; };
    if (log != nullptr) options.log = [log](const std::string& line) { log->push_back(line); };
    auto exporter = Exporter::create(options, std::move(*upstream), file_snapshot_source(snapshot_path_, kKey), std::move(cache));
    EXPECT_TRUE(exporter.ok()) << exporter.error();
    return std::move(*exporter);
  }

  gpubank::testing::ScratchDir dir_;
  gpubank::testing::FakeKubelet kubelet_;
  FakeDcgmExporter dcgm_;
  std::string snapshot_path_;
};

TEST_F(ExporterEndToEnd, ARealPrometheusCountsSamplesByMappingStatusAndNoGpuHasTwoAttributions) {
  std::unique_ptr<Exporter> exporter = make();
  std::jthread loop([&](std::stop_token stop) { (void)exporter->run(stop); });
  const int port = gpubank::testing::free_port();
  gpubank::testing::ChildProcess prometheus;
  gpubank::testing::start_prometheus(prometheus, dir_.path() / "prometheus", "gpubank-exporter",
                                     {"127.0.0.1:" + std::to_string(exporter->port())}, port);
  ASSERT_GT(prometheus.pid, 0) << "prometheus is not on PATH: install the prometheus package (scripts/bootstrap.sh does)";
  httplib::Client api("127.0.0.1", port);
  api.set_connection_timeout(2);
  std::optional<double> mapped;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(90);
  while (std::chrono::steady_clock::now() < deadline && !mapped) {
    mapped = gpubank::testing::prometheus_query(api, R"(count by (mapping_status) (DCGM_FI_DEV_GPU_UTIL{mapping_status="mapped"}))");
    if (!mapped) std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  ASSERT_TRUE(mapped) << "Prometheus never stored an attributed scrape; see " << (dir_.path() / "prometheus/prometheus.log");
  EXPECT_EQ(*mapped, 1);
  EXPECT_EQ(gpubank::testing::prometheus_query(api, R"(count(DCGM_FI_DEV_GPU_UTIL{mapping_status="unknown"}))"), 1);
  EXPECT_EQ(gpubank::testing::prometheus_query(api, R"(count(DCGM_FI_DEV_GPU_UTIL{mapping_status="unallocated"}))"), 1);
  // No GPU UUID with two attributions at one time (exclusive devices).
  EXPECT_EQ(gpubank::testing::prometheus_query(
                api, R"(count(count by (UUID) (DCGM_FI_DEV_GPU_UTIL{sharing!="time-sliced",pod!=""}) > 1) or vector(0))"),
            0);
  EXPECT_EQ(gpubank::testing::prometheus_query(api, R"(DCGM_FI_DEV_GPU_UTIL{business_group="search"})"), 0);
  EXPECT_EQ(gpubank::testing::prometheus_query(api, R"(count(gpubank_gpu_info))"), 3);
  EXPECT_EQ(gpubank::testing::prometheus_query(api, R"(gpubank_exporter_snapshot_generation)"), 4);
}

TEST_F(ExporterEndToEnd, AScrapeReadsNothingAndAFailingInputKeepsTheLastPage) {
  std::unique_ptr<Exporter> exporter = make(std::chrono::hours(1));  // one refresh at start, then only when asked
  std::jthread loop([&](std::stop_token stop) { (void)exporter->run(stop); });
  httplib::Client client("127.0.0.1", exporter->port());
  ASSERT_TRUE(eventually([&] {
    auto res = client.Get("/readyz");
    return res && res->status == 200;
  }));
  // Attributed at the first refresh (the run reads the kubelet before it).
  ASSERT_NE(exporter->page().find("business_group=\"search\""), std::string::npos) << exporter->page();
  // Scrapes over HTTP touch no input: no upstream request, no kubelet call.
  const int upstream_calls = dcgm_.requests();
  const int kubelet_calls = kubelet_.list_calls();
  for (int i = 0; i < 50; ++i) {
    auto res = client.Get("/metrics");
    ASSERT_TRUE(res);
    ASSERT_EQ(res->status, 200);
    ASSERT_NE(res->body.find("gpubank_gpu_info"), std::string::npos);
  }
  EXPECT_EQ(dcgm_.requests(), upstream_calls);
  EXPECT_EQ(kubelet_.list_calls(), kubelet_calls);

  // Prometheus asks for gzip: it gets the page compressed at the refresh (httplib's client
  // inflates it here), smaller on the wire; q=0 and no header get the text itself.
  const std::string text = exporter->page();
  auto gzip = client.Get("/metrics", {{"Accept-Encoding", "gzip"}});
  ASSERT_TRUE(gzip);
  EXPECT_EQ(gzip->get_header_value("Content-Encoding"), "gzip");
  EXPECT_EQ(gzip->get_header_value("Vary"), "Accept-Encoding");
  EXPECT_LT(std::stoul(gzip->get_header_value("Content-Length")), text.size() / 2);
  EXPECT_EQ(gzip->body, text);
  for (const char* refused : {"gzip;q=0", "identity", "br, deflate"}) {
    auto plain = client.Get("/metrics", {{"Accept-Encoding", refused}});
    ASSERT_TRUE(plain);
    EXPECT_EQ(plain->get_header_value("Content-Encoding"), "") << refused;
    EXPECT_EQ(plain->body, text) << refused;
  }

  // The upstream and the kubelet fail, the snapshot file is corrupted: the page keeps the
  // last good samples and attribution, and the self-metrics say what failed.
  dcgm_.set_down(true);
  kubelet_.set_mode(gpubank::testing::FakeKubelet::Mode::Unavailable);
  gpubank::testing::write_file(snapshot_path_, "{\"snapshot\": \"tampered\", \"hmacSha256\": \"00\"}");
  exporter->refresh();
  const std::string later = exporter->page();
  EXPECT_NE(later.find("business_group=\"search\""), std::string::npos) << later;
  EXPECT_NE(later.find("gpubank_exporter_upstream_errors_total 1"), std::string::npos) << later;
  EXPECT_NE(later.find("gpubank_exporter_snapshot_rejections_total 1"), std::string::npos) << later;
}

TEST_F(ExporterEndToEnd, AMalformedOrOversizedUpstreamPageIsRefusedWithItsReasonAndTheLastPageKept) {
  std::vector<std::string> log;
  std::unique_ptr<Exporter> exporter = make(std::chrono::hours(1), &log);
  std::jthread loop([&](std::stop_token stop) { (void)exporter->run(stop); });
  ASSERT_TRUE(eventually([&] { return exporter->page().find("business_group=\"search\"") != std::string::npos; }));
  dcgm_.set_page("DCGM_FI_DEV_GPU_UTIL{UUID=\"GPU-1\" 5\n");  // an unterminated label set
  exporter->refresh();
  dcgm_.set_page(std::string(17u << 20, '#'));  // over the 16 MiB limit
  exporter->refresh();
  ASSERT_EQ(log.size(), 2U);
  EXPECT_NE(log[0].find("upstream: " + dcgm_.url() + ": "), std::string::npos) << log[0];
  EXPECT_NE(log[0].find("metrics.text"), std::string::npos) << log[0];
  EXPECT_NE(log[1].find("the page is over 16777216 bytes"), std::string::npos) << log[1];
  const std::string page = exporter->page();
  EXPECT_NE(page.find("gpubank_exporter_upstream_errors_total 2"), std::string::npos);
  EXPECT_NE(page.find("business_group=\"search\""), std::string::npos);  // the last good samples, attributed
}

}  // namespace
}  // namespace gpubank::attribution
