// The webhook over real HTTPS on loopback: TLS handshake, routing, limits, audit.
#include "api/webhook_server.hpp"

#include <httplib.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "support/paths.hpp"
#include "support/tls.hpp"

namespace gpubank::api {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string fixture(const std::string& name) {
  std::ifstream in(gpubank::testing::source_dir() + "/tests/api/data/" + name);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

class WebhookServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/webhook-" + ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    const auto tls = gpubank::testing::make_self_signed(dir_);
    options_.address = "127.0.0.1";
    options_.port = 0;
    options_.tls_cert = tls.cert;
    options_.tls_key = tls.key;
    const std::string examples = gpubank::testing::examples_dir() + "/policies";
    options_.guardrails = examples + "/00-guardrails.yaml";
    options_.policies = {examples};
    options_.audit_log = dir_ + "/audit.jsonl";
    options_.threads = 8;
    auto server = WebhookServer::create(options_);
    ASSERT_TRUE(server) << server.error();
    server_ = std::move(*server);
    auto port = server_->bind();
    ASSERT_TRUE(port) << port.error();
    port_ = *port;
    thread_ = std::thread([this] { server_->serve(); });
    client_ = std::make_unique<httplib::SSLClient>("127.0.0.1", port_);
    client_->enable_server_certificate_verification(true);
    client_->set_ca_cert_path(tls.cert.c_str());
    client_->set_connection_timeout(5);
    // Wait until it answers.
    for (int i = 0; i < 200; ++i) {
      if (auto r = client_->Get("/readyz"); r && r->status == 200) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }

  void TearDown() override {
    if (server_) server_->stop();
    if (thread_.joinable()) thread_.join();
  }

  json post(const std::string& body, int expect_status = 200) {
    auto r = client_->Post("/validate", body, "application/json");
    EXPECT_TRUE(r) << httplib::to_string(r.error());
    if (!r) return json();
    EXPECT_EQ(r->status, expect_status) << r->body;
    EXPECT_EQ(r->get_header_value("Content-Type"), "application/json");
    return json::parse(r->body);
  }

  std::vector<json> audit() const {
    std::ifstream in(options_.audit_log);
    std::vector<json> out;
    for (std::string line; std::getline(in, line);) out.push_back(json::parse(line));
    return out;
  }

  std::string dir_;
  WebhookOptions options_;
  std::unique_ptr<WebhookServer> server_;
  int port_ = 0;
  std::thread thread_;
  std::unique_ptr<httplib::SSLClient> client_;
};

TEST_F(WebhookServerTest, ServesHealthAndReadinessOverVerifiedTls) {
  auto h = client_->Get("/healthz");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
  auto r = client_->Get("/readyz");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  auto missing = client_->Get("/nope");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
}

TEST_F(WebhookServerTest, AnswersAdmissionReviewsAndAuditsEveryDecision) {
  const json allowed = post(fixture("create-quota-by-group-admin.json"));
  EXPECT_EQ(allowed["apiVersion"], "admission.k8s.io/v1");
  EXPECT_EQ(allowed["response"]["uid"], "705ab4f5-6393-11e8-b7cc-42010a800002");
  EXPECT_EQ(allowed["response"]["allowed"], true);

  const json denied = post(fixture("update-quota-over-pool.json"));
  EXPECT_EQ(denied["response"]["uid"], "0df28fbd-5f5f-11e8-bc74-36e6bb280816");
  EXPECT_EQ(denied["response"]["allowed"], false);
  EXPECT_EQ(denied["response"]["status"]["code"], 422);
  EXPECT_NE(denied["response"]["status"]["message"].get<std::string>().find("[quota.sum-exceeds-pool]"),
            std::string::npos);

  const auto entries = audit();
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0]["uid"], "705ab4f5-6393-11e8-b7cc-42010a800002");
  EXPECT_EQ(entries[0]["allowed"], true);
  EXPECT_EQ(entries[0]["user"], "mei.chen");
  EXPECT_EQ(entries[0]["kind"], "platform.gpubank.dev/GPUQuotaPolicy");
  EXPECT_EQ(entries[0]["name"], "customer-service-mig");
  EXPECT_EQ(entries[1]["allowed"], false);
  EXPECT_EQ(entries[1]["user"], "rita");
  EXPECT_EQ(entries[1]["rules"], json({"quota.sum-exceeds-pool", "lease.exceeds-pool"}));
  EXPECT_TRUE(parse_rfc3339(entries[1]["time"].get<std::string>()));
}

TEST_F(WebhookServerTest, MalformedAndOversizedBodiesGetAnAdmissionReviewDenialNotA500) {
  const json garbage = post("{\"apiVersion\": ");
  EXPECT_EQ(garbage["kind"], "AdmissionReview");
  EXPECT_EQ(garbage["response"]["allowed"], false);
  EXPECT_EQ(garbage["response"]["status"]["code"], 400);

  std::string big = R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"big","x":")";
  big += std::string((std::size_t{3} << 20) + 10, 'a') + "\"}}";
  const json too_large = post(big);
  EXPECT_EQ(too_large["response"]["uid"], "big");
  EXPECT_EQ(too_large["response"]["status"]["code"], 413);

  // Beyond what the server reads at all: httplib refuses it, the body is still ours.
  const json huge = post(std::string((std::size_t{17} << 20), ' '), 413);
  EXPECT_EQ(huge["kind"], "AdmissionReview");
  EXPECT_EQ(huge["response"]["allowed"], false);

  EXPECT_EQ(audit().size(), 2u);  // the unread one never reached a decision
}

TEST_F(WebhookServerTest, ManyConcurrentConnectionsAllGetTheirOwnAnswers) {
  const std::string body = fixture("create-pod-with-forged-labels.json");
  std::vector<std::thread> clients;
  std::atomic<int> ok{0};
  for (int c = 0; c < 16; ++c) {
    clients.emplace_back([&, c] {
      httplib::SSLClient client("127.0.0.1", port_);
      client.enable_server_certificate_verification(false);
      for (int i = 0; i < 10; ++i) {
        json j = json::parse(body);
        const std::string uid = "c" + std::to_string(c) + "-" + std::to_string(i);
        j["request"]["uid"] = uid;
        auto r = client.Post("/validate", j.dump(), "application/json");
        if (r && r->status == 200 && json::parse(r->body)["response"]["uid"] == uid) ++ok;
      }
    });
  }
  for (auto& t : clients) t.join();
  EXPECT_EQ(ok.load(), 160);
  EXPECT_EQ(audit().size(), 160u);
}

TEST_F(WebhookServerTest, ReloadSwapsThePoliciesAndKeepsTheOldOnesOnFailure) {
  std::vector<std::string> notes;
  ASSERT_TRUE(server_->reload(notes));
  const auto before = server_->snapshot();
  // Point the guardrails at a broken file: the reload fails and the snapshot stays.
  std::ofstream(dir_ + "/broken.yaml") << "apiVersion: platform.gpubank.dev/v1alpha1\nkind: PlatformGuardrails\n";
  WebhookOptions broken = options_;
  broken.guardrails = dir_ + "/broken.yaml";
  broken.policies.clear();
  std::vector<std::string> ignored;
  EXPECT_FALSE(load_snapshot(broken, ignored));
  EXPECT_EQ(server_->snapshot(), before);
}

TEST_F(WebhookServerTest, ARenewedCertificateIsServedToNewConnectionsAfterReload) {
  // Renew: a new key pair in place of the old files (as cert-manager does).
  const std::string renewed_dir = dir_ + "/renewed";
  fs::create_directories(renewed_dir);
  const auto renewed = gpubank::testing::make_self_signed(renewed_dir);
  auto trusting_only_new = [&] {
    httplib::SSLClient c("127.0.0.1", port_);
    c.enable_server_certificate_verification(true);
    c.set_ca_cert_path(renewed.cert.c_str());
    auto r = c.Get("/healthz");
    return r && r->status == 200;
  };
  EXPECT_FALSE(trusting_only_new());
  fs::copy_file(renewed.cert, options_.tls_cert, fs::copy_options::overwrite_existing);
  fs::copy_file(renewed.key, options_.tls_key, fs::copy_options::overwrite_existing);
  std::vector<std::string> notes;
  bool reloaded = false;
  ASSERT_TRUE(server_->reload_if_changed(notes, reloaded));
  EXPECT_TRUE(reloaded);
  EXPECT_TRUE(trusting_only_new());
  // Nothing changed since: no reload.
  ASSERT_TRUE(server_->reload_if_changed(notes, reloaded));
  EXPECT_FALSE(reloaded);
}

TEST_F(WebhookServerTest, AChangedPolicyFileIsPickedUp) {
  // Serve from a writable copy of the policies, then raise a guarantee in it.
  const std::string policies = dir_ + "/policies";
  fs::create_directories(policies);
  for (const auto& e : fs::directory_iterator(gpubank::testing::examples_dir() + "/policies")) {
    if (e.path().filename() != "00-guardrails.yaml") fs::copy_file(e.path(), policies / e.path().filename());
  }
  server_->stop();
  thread_.join();
  options_.policies = {policies};
  options_.port = 0;
  auto server = WebhookServer::create(options_);
  ASSERT_TRUE(server) << server.error();
  server_ = std::move(*server);
  ASSERT_TRUE(server_->bind());
  thread_ = std::thread([this] { server_->serve(); });
  const auto before = server_->snapshot();
  std::ofstream(policies + "/60-extra.yaml") << R"(apiVersion: platform.gpubank.dev/v1alpha1
kind: GPUQuotaPolicy
metadata: {name: customer-service-mig}
spec: {businessGroup: customer-service, resourcePool: mig-or-shared-development, guaranteed: 2}
)";
  std::vector<std::string> notes;
  bool reloaded = false;
  ASSERT_TRUE(server_->reload_if_changed(notes, reloaded));
  EXPECT_TRUE(reloaded);
  EXPECT_NE(server_->snapshot(), before);
  EXPECT_NE(server_->snapshot()->set().find(policy::Kind::GPUQuotaPolicy, "customer-service-mig"), nullptr);
}

TEST(WebhookServerCreate, RefusesUnusableCertificatesAndGuardrails) {
  const std::string dir = ::testing::TempDir() + "/webhook-create";
  fs::create_directories(dir);
  WebhookOptions options;
  options.tls_cert = dir + "/missing.pem";
  options.tls_key = dir + "/missing.key";
  options.guardrails = gpubank::testing::examples_dir() + "/policies/00-guardrails.yaml";
  options.audit_log = dir + "/audit.jsonl";
  auto server = WebhookServer::create(options);
  ASSERT_FALSE(server);
  EXPECT_NE(server.error().find("cannot start TLS"), std::string::npos);
  EXPECT_NE(server.error().find("cannot read the certificate file"), std::string::npos) << server.error();

  // A certificate with somebody else's key.
  fs::create_directories(dir + "/a");
  fs::create_directories(dir + "/b");
  const auto a = gpubank::testing::make_self_signed(dir + "/a");
  const auto b = gpubank::testing::make_self_signed(dir + "/b");
  options.tls_cert = a.cert;
  options.tls_key = b.key;
  server = WebhookServer::create(options);
  ASSERT_FALSE(server);
  EXPECT_NE(server.error().find("the key does not belong to the certificate"), std::string::npos) << server.error();
  options.tls_key = a.key;

  options.guardrails = gpubank::testing::examples_dir() + "/invalid/guardrails.limit-range.yaml";
  server = WebhookServer::create(options);
  ASSERT_FALSE(server);
  EXPECT_NE(server.error().find("guardrails.limit-range"), std::string::npos) << server.error();
}

}  // namespace
}  // namespace gpubank::api
