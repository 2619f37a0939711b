// VllmScraper over real loopback HTTP: vLLM pages (one replica each, as real pods serve
// them) become one reading whose rates appear with the second scrape; targets that are
// down, refuse the token, stall, trickle bytes, send too much (compressed or not) or send
// something that is not a vLLM page are named in `unread`, and only when every target
// fails is the reading an error.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "autoscale/vllm_scrape.hpp"
#include "governance/prometheus_client.hpp"
#include "vllm_page.hpp"

namespace gpubank::autoscale {
namespace {

using testing::VllmPageServer;

constexpr std::int64_t kScrapeT0 = 1'796'000'000'000;

// A loopback listener that answers every connection with `respond` (in its own thread).
class RawServer {
 public:
  explicit RawServer(std::function<void(int fd, const std::atomic<bool>& stop)> respond) : respond_(std::move(respond)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    socklen_t len = sizeof addr;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    ::listen(fd_, 8);
    thread_ = std::thread([this] {
      while (!stop_) {
        const int c = ::accept(fd_, nullptr, nullptr);
        if (c < 0) return;
        respond_(c, stop_);
        ::close(c);
      }
    });
  }
  ~RawServer() {
    stop_ = true;
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    thread_.join();
  }
  [[nodiscard]] std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/metrics"; }

 private:
  std::function<void(int, const std::atomic<bool>&)> respond_;
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

void sleep_unless(const std::atomic<bool>& stop, int ms) {
  for (int i = 0; i < ms / 10 && !stop; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
}

ScrapeClientOptions options(std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
  ScrapeClientOptions o;
  o.timeout = timeout;
  o.page.model_name = "chat";
  o.page.replica_label = "";
  o.page.itl = false;
  return o;
}

TEST(VllmScraper, ReplicasOnTheirOwnPagesMakeOneReadingWithRatesFromTheSecondScrape) {
  VllmPageServer a(12, 30, 0.5, 10, 400'000), b(4, 20, 0.25, 10, 400'000);
  auto scraper = VllmScraper::create({a.url(), b.url()}, options());
  ASSERT_TRUE(scraper.ok()) << scraper.error();
  const auto first = (*scraper)->read(kScrapeT0);
  ASSERT_TRUE(first.ok()) << first.error();
  EXPECT_TRUE(first->unread.empty());
  EXPECT_EQ(first->observation.replicas_reporting, 2);
  EXPECT_EQ(first->observation.queue_depth, 16);
  EXPECT_EQ(first->observation.running, 50);
  EXPECT_DOUBLE_EQ(*first->observation.kv_cache_usage, 0.375);
  EXPECT_FALSE(first->observation.ttft_p95_s);   // one scrape: no rate yet
  EXPECT_FALSE(first->observation.request_rate);
  ASSERT_EQ(first->loads.size(), 2u);  // named by host:port, in name order
  for (const auto& l : first->loads) EXPECT_EQ(l.in_flight, l.replica == a.address() ? 42 : 24) << l.replica;

  const auto second = (*scraper)->read(kScrapeT0 + 15'000);
  ASSERT_TRUE(second.ok()) << second.error();
  ASSERT_TRUE(second->observation.request_rate);
  // 10 more finished per replica in 15 s, extrapolated as PromQL's rate() does over the
  // window's two samples: above 0, and the TTFT p95 falls in vLLM's 0.4 s bucket... 0.5 s.
  EXPECT_GT(*second->observation.request_rate, 0);
  ASSERT_TRUE(second->observation.ttft_p95_s);
  EXPECT_GT(*second->observation.ttft_p95_s, 0.3);
  EXPECT_LE(*second->observation.ttft_p95_s, 0.5);
}

TEST(VllmScraper, TheBearerTokenIsSentAndARefusalIsNamed) {
  VllmPageServer guarded(1, 1, 0.1, 1, 100'000, "s3cret"), open(2, 2, 0.2, 1, 100'000);
  auto without = VllmScraper::create({guarded.url(), open.url()}, options());
  ASSERT_TRUE(without.ok());
  const auto r = (*without)->read(kScrapeT0);
  ASSERT_TRUE(r.ok()) << r.error();
  ASSERT_EQ(r->unread.size(), 1u);
  EXPECT_EQ(r->unread[0], guarded.url() + ": HTTP 401");
  EXPECT_EQ(r->observation.replicas_reporting, 1);

  auto o = options();
  o.bearer_token = "s3cret";
  auto with = VllmScraper::create({guarded.url()}, o);
  ASSERT_TRUE(with.ok());
  const auto ok = (*with)->read(kScrapeT0);
  ASSERT_TRUE(ok.ok()) << ok.error();
  EXPECT_EQ(ok->observation.queue_depth, 1);
}

TEST(VllmScraper, EveryTargetDownIsAnErrorNamingThem) {
  VllmPageServer gone(1, 1, 0.1, 1, 100'000);
  const std::string url = gone.url();
  gone.stop();
  auto scraper = VllmScraper::create({url, url + "x"}, options(std::chrono::milliseconds(500)));
  ASSERT_TRUE(scraper.ok());
  const auto r = (*scraper)->read(kScrapeT0);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("no vLLM target could be read: " + url + ": could not connect"), std::string::npos) << r.error();
  EXPECT_NE(r.error().find("(and 1 more)"), std::string::npos) << r.error();
}

TEST(VllmScraper, AStalledOrTricklingServerCannotHoldTheSync) {
  RawServer stalled([](int, const std::atomic<bool>& stop) { sleep_unless(stop, 3000); });
  RawServer trickle([](int fd, const std::atomic<bool>& stop) {
    const std::string head = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n";
    if (::send(fd, head.data(), head.size(), MSG_NOSIGNAL) < 0) return;
    for (int i = 0; i < 300 && !stop; ++i) {  // a comment line every 20 ms, for 6 s
      const std::string chunk = "2\r\n#\n\r\n";
      if (::send(fd, chunk.data(), chunk.size(), MSG_NOSIGNAL) < 0) return;
      sleep_unless(stop, 20);
    }
  });
  VllmPageServer healthy(3, 3, 0.3, 1, 100'000);
  auto scraper = VllmScraper::create({stalled.url(), trickle.url(), healthy.url()}, options(std::chrono::milliseconds(400)));
  ASSERT_TRUE(scraper.ok());
  const auto r = (*scraper)->read(kScrapeT0);
  ASSERT_TRUE(r.ok()) << r.error();
  ASSERT_EQ(r->unread.size(), 2u);
  EXPECT_EQ(r->unread[0], stalled.url() + ": reading the answer failed or timed out");
  EXPECT_EQ(r->unread[1], trickle.url() + ": the page took longer than 400 ms to arrive");
  EXPECT_EQ(r->observation.replicas_reporting, 1);
  EXPECT_EQ(r->observation.queue_depth, 3);
}

// The Prometheus client the recommender queries has the same whole-answer bound.
TEST(PrometheusClientTimeout, ATricklingPrometheusCannotHoldTheSync) {
  RawServer trickle([](int fd, const std::atomic<bool>& stop) {
    char request[4096];
    if (::recv(fd, request, sizeof request, 0) <= 0) return;
    const std::string head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
    if (::send(fd, head.data(), head.size(), MSG_NOSIGNAL) < 0) return;
    for (int i = 0; i < 300 && !stop; ++i) {  // a space every 20 ms, for 6 s
      const std::string chunk = "1\r\n \r\n";
      if (::send(fd, chunk.data(), chunk.size(), MSG_NOSIGNAL) < 0) return;
      sleep_unless(stop, 20);
    }
  });
  const std::string url = trickle.url().substr(0, trickle.url().size() - std::string("/metrics").size());
  auto client = governance::PrometheusClient::create(url, std::chrono::milliseconds(400));
  ASSERT_TRUE(client.ok()) << client.error();
  const auto r = (*client)->query("sum(vllm:num_requests_waiting)", kScrapeT0);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), url + ": the answer took longer than 400 ms to arrive");
}

TEST(VllmScraper, APageOverTheLimitIsRefusedAfterDecompression) {
  httplib::Server server;
  const std::string big(4 << 20, '#');  // comment bytes: a valid page, only too long
  std::string gzipped;
  {
    httplib::detail::gzip_compressor gz;
    ASSERT_TRUE(gz.compress(big.data(), big.size(), true, [&](const char* d, std::size_t n) {
      gzipped.append(d, n);
      return true;
    }));
  }
  server.Get("/metrics", [&](const httplib::Request&, httplib::Response& res) {
    res.set_header("Content-Encoding", "gzip");
    res.set_content(gzipped, "text/plain");
  });
  server.Get("/plain", [&](const httplib::Request&, httplib::Response& res) { res.set_content(big, "text/plain"); });
  server.Get("/html", [&](const httplib::Request&, httplib::Response& res) {
    res.set_content("<html><body>login</body></html>", "text/html");
  });
  const int port = server.bind_to_any_port("127.0.0.1");
  std::thread t([&] { server.listen_after_bind(); });
  while (!server.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const std::string base = "http://127.0.0.1:" + std::to_string(port);
  auto o = options();
  o.max_bytes = 1 << 20;
  auto scraper = VllmScraper::create({base + "/metrics", base + "/plain", base + "/html"}, o);
  ASSERT_TRUE(scraper.ok());
  EXPECT_LT(gzipped.size(), o.max_bytes);  // small on the wire, four times the limit unpacked
  const auto r = (*scraper)->read(kScrapeT0);
  scraper->reset();  // its keep-alive connections closed, the server stops at once
  server.stop();
  t.join();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find(base + "/metrics: the page is over 1048576 bytes"), std::string::npos) << r.error();
}

TEST(VllmScraper, SomethingThatIsNotAVllmPageIsNamedWithTheParsersRule) {
  VllmPageServer fine(1, 1, 0.1, 1, 100'000);
  httplib::Server server;
  server.Get("/metrics", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("vllm:num_requests_waiting{model_name=\"chat\",engine=\"0\"} -4\n", "text/plain");
  });
  const int port = server.bind_to_any_port("127.0.0.1");
  std::thread t([&] { server.listen_after_bind(); });
  while (!server.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const std::string bad = "http://127.0.0.1:" + std::to_string(port) + "/metrics";
  auto scraper = VllmScraper::create({bad, fine.url()}, options());
  ASSERT_TRUE(scraper.ok());
  const auto r = (*scraper)->read(kScrapeT0);
  scraper->reset();  // its keep-alive connections closed, the server stops at once
  server.stop();
  t.join();
  ASSERT_TRUE(r.ok()) << r.error();
  ASSERT_EQ(r->unread.size(), 1u);
  EXPECT_NE(r->unread[0].find(bad + ": "), std::string::npos);
  EXPECT_NE(r->unread[0].find("serving.signal-value"), std::string::npos) << r->unread[0];
}

TEST(VllmScraper, BadUrlsAreRefusedUpFront) {
  EXPECT_FALSE(VllmScraper::create({}, options()).ok());
  const auto https = VllmScraper::create({"https://10.0.0.1:8000/metrics"}, options());
  ASSERT_FALSE(https.ok());
  EXPECT_NE(https.error().find("must be an http:// URL"), std::string::npos) << https.error();
  EXPECT_FALSE(VllmScraper::create({"http:///metrics"}, options()).ok());
}

}  // namespace
}  // namespace gpubank::autoscale
