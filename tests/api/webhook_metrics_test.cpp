// GET /metrics of the webhook: real AdmissionReviews over loopback HTTPS, then the page
// read with gpubank's own parser (exact counts per label set), checked by the real
// promtool, and scraped by a real Prometheus. Durations are wall-clock: only their counts
// are asserted.
#include "api/webhook_metrics.hpp"

#include <signal.h>
#include <sys/wait.h>

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <optional>
#include <set>

#include "api/webhook_fixture.hpp"
#include "metrics/text_parser.hpp"
#include "support/process.hpp"
#include "support/prometheus_server.hpp"
#include "support/promtool.hpp"

namespace gpubank::api {
namespace {

using Labels = std::map<std::string, std::string>;

const Labels kNoLabels;

metrics::Exposition parse_page(const std::string& text) {
  auto parsed = metrics::parse_text(text);
  EXPECT_TRUE(parsed.ok()) << parsed.error() << "\n" << text;
  return parsed.ok() ? *parsed : metrics::Exposition{};
}

// The samples named `name` whose labels are exactly `labels`: their value, nullopt if none.
std::optional<double> value(const metrics::Exposition& page, const std::string& name, const Labels& labels) {
  for (const auto& family : page.families) {
    for (const auto& sample : family.samples) {
      if (sample.name != name) continue;
      Labels have;
      for (const auto& l : sample.labels) have[l.name] = l.value;
      if (have == labels) return sample.value;
    }
  }
  return std::nullopt;
}

std::vector<const metrics::Sample*> samples(const metrics::Exposition& page, const std::string& name) {
  std::vector<const metrics::Sample*> out;
  for (const auto& family : page.families) {
    for (const auto& sample : family.samples) {
      if (sample.name == name) out.push_back(&sample);
    }
  }
  return out;
}

Labels decision(const char* endpoint, const char* kind, const char* operation, const char* result) {
  return {{"endpoint", endpoint}, {"kind", kind}, {"operation", operation}, {"result", result}};
}

class WebhookMetricsTest : public WebhookServerTest {
 protected:
  // GET /metrics on the plain-HTTP health listener, as the ServiceMonitor scrapes it.
  std::string scrape_text() {
    httplib::Client health("127.0.0.1", server_->health_port());
    auto r = health.Get("/metrics");
    EXPECT_TRUE(r) << "no answer from the health listener";
    if (!r) return {};
    EXPECT_EQ(r->status, 200) << r->body;
    EXPECT_EQ(r->get_header_value("Content-Type"), kMetricsContentType);
    return r->body;
  }
  metrics::Exposition scrape() { return parse_page(scrape_text()); }

  // The example quota's CREATE as written by someone who may not create it.
  static std::string quota_by_stranger() {
    json review = json::parse(fixture("create-quota-by-group-admin.json"));
    review["request"]["userInfo"] = {{"username", "mallory.outsider"}, {"groups", {"system:authenticated"}}};
    return review.dump();
  }

  // A kind nobody configured the webhook for, with a name and kind chosen by the client.
  static std::string unknown_kind() {
    json review = json::parse(fixture("create-quota-by-group-admin.json"));
    review["request"]["kind"] = {{"group", "example.com"}, {"version", "v1"}, {"kind", "Evil\"Kind{x}"}};
    review["request"]["name"] = "client-chosen-name-7f3a";
    review["request"]["object"]["apiVersion"] = "example.com/v1";
    review["request"]["object"]["kind"] = "Evil\"Kind{x}";
    review["request"]["object"]["metadata"]["name"] = "client-chosen-name-7f3a";
    return review.dump();
  }

  // A request line that no HTTP/1.x parser reads, or headers above the limit, and so on:
  // the status the server answered a raw request with.
  int raw_status(const std::string& request) {
    RawTlsClient raw(port_);
    EXPECT_TRUE(raw.connected());
    if (!raw.connected()) return 0;
    EXPECT_TRUE(raw.send(request));
    return status_of(raw.receive());
  }
};

TEST_F(WebhookMetricsTest, CountsEveryDecisionByEndpointKindOperationAndResult) {
  for (int i = 0; i < 3; ++i) EXPECT_EQ(post(fixture("create-quota-by-group-admin.json"))["response"]["allowed"], true);
  for (int i = 0; i < 2; ++i) {
    const json denied = post(quota_by_stranger());
    EXPECT_EQ(denied["response"]["allowed"], false);
    EXPECT_EQ(denied["response"]["status"]["code"], 403) << denied.dump();
  }
  const json garbage = post("{\"apiVersion\": ");
  EXPECT_EQ(garbage["response"]["status"]["code"], 400);
  const json unknown = post(unknown_kind());
  EXPECT_EQ(unknown["response"]["status"]["code"], 400);
  auto mutated = client_->Post("/mutate", fixture("create-inference-pod-without-class.json"), "application/json");
  ASSERT_TRUE(mutated);
  EXPECT_EQ(json::parse(mutated->body)["response"]["allowed"], true);

  const std::string text = scrape_text();
  const metrics::Exposition page = parse_page(text);
  const std::string requests = "gpubank_webhook_requests_total";
  EXPECT_EQ(value(page, requests, decision("validate", "GPUQuotaPolicy", "CREATE", "allowed")), 3);
  EXPECT_EQ(value(page, requests, decision("validate", "GPUQuotaPolicy", "CREATE", "denied")), 2);
  EXPECT_EQ(value(page, requests, decision("validate", "other", "other", "error")), 1);  // unreadable
  EXPECT_EQ(value(page, requests, decision("validate", "other", "CREATE", "error")), 1);  // unknown kind
  EXPECT_EQ(value(page, requests, decision("mutate", "Pod", "CREATE", "allowed")), 1);
  EXPECT_EQ(samples(page, requests).size(), 5u) << text;

  // One observation per decision; the values are wall-clock and not checked.
  const std::string count = "gpubank_webhook_request_duration_seconds_count";
  EXPECT_EQ(value(page, count, {{"endpoint", "validate"}}), 7);
  EXPECT_EQ(value(page, count, {{"endpoint", "mutate"}}), 1);
  EXPECT_EQ(value(page, "gpubank_webhook_request_duration_seconds_bucket", {{"endpoint", "validate"}, {"le", "+Inf"}}),
            7);

  // Nothing was refused before a decision, and every reason is there from the start.
  for (const char* reason : {"too_large", "headers_too_large", "malformed", "unsupported_encoding", "length_required",
                             "timeout", "over_capacity"}) {
    EXPECT_EQ(value(page, "gpubank_webhook_rejected_requests_total", {{"reason", reason}}), 0) << reason;
  }
  EXPECT_EQ(value(page, "gpubank_webhook_audit_append_failures_total", kNoLabels), 0);

  // What the client chose never becomes a label value.
  for (const char* secret : {"mallory", "mei.chen", "client-chosen-name", "Evil", "customer-service-mig",
                             "example.com"}) {
    EXPECT_EQ(text.find(secret), std::string::npos) << secret << " leaked into:\n" << text;
  }
}

TEST_F(WebhookMetricsTest, RequestsRefusedBeforeADecisionAreCountedOncePerReason) {
  const std::string post_validate = "POST /validate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n";
  EXPECT_EQ(raw_status(post_validate + "Content-Length: 17825792\r\n\r\n"), 413);
  EXPECT_EQ(raw_status(post_validate + "\r\n"), 411);
  EXPECT_EQ(raw_status(post_validate + "Content-Encoding: gzip\r\nContent-Length: 2\r\n\r\n{}"), 415);
  EXPECT_EQ(raw_status(post_validate + "X-Padding: " + std::string(9000, 'a') + "\r\n\r\n"), 431);
  EXPECT_EQ(raw_status("not http at all\r\n\r\n"), 400);

  const metrics::Exposition page = scrape();
  const std::string rejected = "gpubank_webhook_rejected_requests_total";
  for (const char* reason : {"too_large", "length_required", "unsupported_encoding", "headers_too_large", "malformed"}) {
    EXPECT_EQ(value(page, rejected, {{"reason", reason}}), 1) << reason;
  }
  EXPECT_EQ(value(page, rejected, {{"reason", "timeout"}}), 0);
  EXPECT_EQ(value(page, rejected, {{"reason", "over_capacity"}}), 0);
  // The same figure as WebhookStats, and no decision at all.
  EXPECT_EQ(value(page, rejected, {{"reason", "too_large"}}), server_->stats().too_large);
  EXPECT_TRUE(samples(page, "gpubank_webhook_requests_total").empty());
  EXPECT_TRUE(audit().empty());
}

TEST_F(WebhookMetricsTest, ConnectionsOverTheLimitAndRequestsPastTheDeadlineAreCounted) {
  options_.max_connections = 1;
  options_.request_timeout = 2;
  start();
  client_.reset();  // it would hold the one slot
  const std::string review = fixture("create-quota-by-group-admin.json");
  // start()'s readiness probes are closed before the slot is taken.
  for (int i = 0; i < 500 && server_->stats().open_connections > 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(server_->stats().open_connections, 0);
  {
    // Takes the only slot and sends half a request: closed at the deadline.
    RawTlsClient slow(port_);
    ASSERT_TRUE(slow.connected());
    ASSERT_TRUE(slow.send("POST /validate HTTP/1.1\r\nHost: localhost\r\n"));
    for (int i = 0; i < 500 && server_->stats().open_connections < 1; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ASSERT_EQ(server_->stats().open_connections, 1);
    RawTlsClient extra(port_);
    ASSERT_TRUE(extra.connected());
    ASSERT_TRUE(extra.send("POST /validate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                           "Content-Length: " + std::to_string(review.size()) + "\r\n\r\n" + review));
    EXPECT_EQ(status_of(extra.receive()), 429);
    EXPECT_EQ(slow.receive(), "");  // closed by the server
  }
  ASSERT_TRUE(eventually_timed_out(1));
  const metrics::Exposition page = scrape();
  const std::string rejected = "gpubank_webhook_rejected_requests_total";
  EXPECT_EQ(value(page, rejected, {{"reason", "over_capacity"}}), 1);
  EXPECT_EQ(value(page, rejected, {{"reason", "timeout"}}), 1);
  const WebhookStats stats = server_->stats();
  EXPECT_EQ(value(page, "gpubank_webhook_connections_accepted_total", kNoLabels), stats.accepted);
  EXPECT_EQ(value(page, "gpubank_webhook_connections_dropped_total", kNoLabels), stats.dropped);
  EXPECT_EQ(value(page, "gpubank_webhook_open_connections", kNoLabels), stats.open_connections);
}

TEST_F(WebhookMetricsTest, ServedOnBothListenersWithBuildInfoAndReloadsAndPromtoolAcceptsThePage) {
  options_.version = "1.2.3-test";
  start();
  EXPECT_EQ(post(fixture("create-quota-by-group-admin.json"))["response"]["allowed"], true);
  std::vector<std::string> notes;
  ASSERT_TRUE(server_->reload(notes));
  // A key that cannot be read: the reload fails and the previous certificate stays.
  fs::rename(options_.tls_key, options_.tls_key + ".away");
  EXPECT_FALSE(server_->reload(notes));
  fs::rename(options_.tls_key + ".away", options_.tls_key);

  const std::string text = scrape_text();
  const metrics::Exposition page = parse_page(text);
  EXPECT_EQ(value(page, "gpubank_build_info", {{"version", "1.2.3-test"}}), 1);
  EXPECT_EQ(value(page, "gpubank_webhook_policy_reload_total", {{"result", "success"}}), 1);
  EXPECT_EQ(value(page, "gpubank_webhook_policy_reload_total", {{"result", "failure"}}), 1);
  const auto loaded = value(page, "gpubank_webhook_policy_last_reload_success_timestamp_seconds", kNoLabels);
  ASSERT_TRUE(loaded);
  EXPECT_GT(*loaded, 1.7e9);  // a Unix time in seconds, not milliseconds or 0
  EXPECT_LT(*loaded, 1e10);
  const metrics::Family* requests = page.find("gpubank_webhook_requests_total");
  ASSERT_NE(requests, nullptr);
  EXPECT_EQ(requests->type, metrics::MetricType::counter);
  EXPECT_FALSE(requests->help.empty());

  // The HTTPS listener serves the same page (its /healthz is there too); only GET.
  auto over_tls = client_->Get("/metrics");
  ASSERT_TRUE(over_tls);
  EXPECT_EQ(over_tls->status, 200);
  EXPECT_EQ(over_tls->get_header_value("Content-Type"), kMetricsContentType);
  const metrics::Exposition tls_page = parse_page(over_tls->body);
  EXPECT_EQ(value(tls_page, "gpubank_build_info", {{"version", "1.2.3-test"}}), 1);
  EXPECT_EQ(value(tls_page, "gpubank_webhook_requests_total", decision("validate", "GPUQuotaPolicy", "CREATE", "allowed")),
            1);
  httplib::Client health("127.0.0.1", server_->health_port());
  auto posted = health.Post("/metrics", "", "text/plain");
  ASSERT_TRUE(posted);
  EXPECT_EQ(posted->status, 405);
  EXPECT_EQ(posted->get_header_value("Allow"), "GET");

  // The real promtool parses and lints the page: no complaint at all.
  const auto promtool = gpubank::testing::find_promtool();
  ASSERT_TRUE(promtool.has_value()) << gpubank::testing::kPromtoolMissing;
  gpubank::testing::ScratchDir dir;
  gpubank::testing::write_file(dir.path() / "webhook.prom", text);
  const auto checked = gpubank::testing::run_in(dir.path(), promtool->string() + " check metrics < webhook.prom");
  EXPECT_EQ(checked.status, 0) << checked.output << "\n" << text;
  EXPECT_EQ(checked.output, "") << text;
}

// ---- a real Prometheus scraping the health listener ------------------------------------

using gpubank::testing::ChildProcess;
using gpubank::testing::free_port;
std::optional<double> query(httplib::Client& prometheus, const std::string& promql) {
  return gpubank::testing::prometheus_query(prometheus, promql);
}

// deploy/components/monitoring's ServiceMonitor, reduced to a static target: Prometheus
// scrapes GET /metrics on the health port, and PromQL reads the decisions back. The
// timeouts only bound waiting for a real process.
TEST_F(WebhookMetricsTest, ARealPrometheusScrapesTheHealthPortAndPromqlReadsTheCounters) {
  const auto prometheus_binary = gpubank::testing::find_on_path("prometheus");
  ASSERT_TRUE(prometheus_binary) << "prometheus is not on PATH: install the prometheus package (scripts/bootstrap.sh "
                                    "does) so that a real Prometheus can scrape the webhook";
  for (int i = 0; i < 3; ++i) EXPECT_EQ(post(fixture("create-quota-by-group-admin.json"))["response"]["allowed"], true);
  for (int i = 0; i < 2; ++i) EXPECT_EQ(post(quota_by_stranger())["response"]["allowed"], false);

  const fs::path dir = fs::path(dir_) / "prometheus";
  fs::create_directories(dir);
  const std::string config = (dir / "prometheus.yml").string();
  std::ofstream(config) << "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                           "scrape_configs:\n- job_name: gpubank-webhook\n  metrics_path: /metrics\n"
                           "  static_configs:\n  - targets: ['127.0.0.1:"
                        << server_->health_port() << "']\n";
  const int port = free_port();
  const std::string config_arg = "--config.file=" + config;
  const std::string storage_arg = "--storage.tsdb.path=" + (dir / "data").string();
  const std::string listen_arg = "--web.listen-address=127.0.0.1:" + std::to_string(port);
  const std::string log = (dir / "prometheus.log").string();
  ChildProcess prometheus;
  prometheus.pid = ::fork();
  ASSERT_GE(prometheus.pid, 0);
  if (prometheus.pid == 0) {
    FILE* f = std::freopen(log.c_str(), "w", stderr);
    (void)f;
    ::execl(prometheus_binary->c_str(), prometheus_binary->c_str(), config_arg.c_str(), storage_arg.c_str(),
            listen_arg.c_str(), "--log.level=warn", static_cast<char*>(nullptr));
    ::_exit(127);
  }

  httplib::Client api("127.0.0.1", port);
  api.set_connection_timeout(2);
  const std::string allowed =
      R"(gpubank_webhook_requests_total{job="gpubank-webhook",endpoint="validate",kind="GPUQuotaPolicy",)"
      R"(operation="CREATE",result="allowed"})";
  std::optional<double> seen;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(90);
  while (std::chrono::steady_clock::now() < deadline) {
    seen = query(api, allowed);
    if (seen) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  ASSERT_TRUE(seen) << "Prometheus never stored a scrape of the webhook; see " << log;
  EXPECT_EQ(*seen, 3);
  EXPECT_EQ(query(api, R"(sum(gpubank_webhook_requests_total{result="denied"}))"), 2);
  EXPECT_EQ(query(api, R"(up{job="gpubank-webhook"})"), 1);
  EXPECT_EQ(query(api, R"(gpubank_build_info{job="gpubank-webhook"})"), 1);
}

}  // namespace
}  // namespace gpubank::api
