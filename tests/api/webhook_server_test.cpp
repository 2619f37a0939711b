// The webhook over real HTTPS on loopback: TLS handshake, routing, limits, audit.
#include "api/webhook_server.hpp"

#include <openssl/evp.h>

#include <gtest/gtest.h>

#include "api/webhook_fixture.hpp"

namespace gpubank::api {
namespace {

TEST_F(WebhookServerTest, ServesHealthAndReadinessOnThePlainHttpHealthListenerToo) {
  ASSERT_GT(server_->health_port(), 0);
  httplib::Client health("127.0.0.1", server_->health_port());
  auto h = health.Get("/healthz");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
  auto r = health.Get("/readyz?verbose");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  // Decisions are made over TLS only.
  auto v = health.Post("/validate", "{}", "application/json");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->status, 404);
}

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

// POST /mutate over the same server: the patch comes back base64-encoded, the mutation is
// audited on the same hash chain as the decisions of /validate.
TEST_F(WebhookServerTest, MutateAnswersWithAJsonPatchAndAuditsIt) {
  const std::string review = fixture("create-inference-pod-without-class.json");
  auto r = client_->Post("/mutate?timeout=5s", review, "application/json");
  ASSERT_TRUE(r) << httplib::to_string(r.error());
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(r->get_header_value("Content-Type"), "application/json");
  const json answer = json::parse(r->body);
  EXPECT_EQ(answer["apiVersion"], "admission.k8s.io/v1");
  EXPECT_EQ(answer["kind"], "AdmissionReview");
  const json& response = answer["response"];
  EXPECT_EQ(response["uid"], "3c9e1f0a-7b2d-4e58-a1c6-9d0f2b4e8a17");
  EXPECT_EQ(response["allowed"], true);
  EXPECT_EQ(response["patchType"], "JSONPatch");
  const std::string encoded = response["patch"];
  std::string decoded(encoded.size() / 4 * 3, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(decoded.data()),
                                reinterpret_cast<const unsigned char*>(encoded.data()), static_cast<int>(encoded.size()));
  ASSERT_GT(n, 0) << encoded;
  decoded.resize(static_cast<std::size_t>(n));
  while (!decoded.empty() && decoded.back() == '\0') decoded.pop_back();  // the padding's zero bytes
  const json patch = json::parse(decoded);
  const json pod = json::parse(review)["request"]["object"];
  EXPECT_EQ(pod.patch(patch)["metadata"]["labels"]["kueue.x-k8s.io/priority-class"], "inference-critical");

  // A pod that names its class: allowed, no patch. And /validate on the same connection.
  json with_class = json::parse(review);
  with_class["request"]["uid"] = "with-class";
  with_class["request"]["object"]["spec"]["priorityClassName"] = "inference-critical";
  auto unchanged = client_->Post("/mutate", with_class.dump(), "application/json");
  ASSERT_TRUE(unchanged);
  EXPECT_EQ(json::parse(unchanged->body)["response"], json({{"uid", "with-class"}, {"allowed", true}}));
  EXPECT_EQ(post(review)["response"]["allowed"], true);  // the controller's copy passes validation
  // Malformed: the same denial as /validate, through the same path.
  auto garbage = client_->Post("/mutate", "{\"apiVersion\": ", "application/json");
  ASSERT_TRUE(garbage);
  EXPECT_EQ(garbage->status, 200);
  EXPECT_EQ(json::parse(garbage->body)["response"]["status"]["code"], 400);
  // Only POST.
  auto get = client_->Get("/mutate");
  ASSERT_TRUE(get);
  EXPECT_EQ(get->status, 405);
  EXPECT_EQ(get->get_header_value("Allow"), "POST");

  const auto entries = audit();
  ASSERT_EQ(entries.size(), 4u);
  EXPECT_EQ(entries[0]["endpoint"], "/mutate");
  EXPECT_EQ(entries[0]["allowed"], true);
  EXPECT_EQ(entries[0]["kind"], "/Pod");
  EXPECT_EQ(entries[0]["user"], "system:serviceaccount:kube-system:replicaset-controller");
  EXPECT_EQ(entries[0]["rules"], json({"priority.protected-needs-class"}));
  EXPECT_EQ(entries[0]["patch"], patch);
  EXPECT_EQ(entries[1]["endpoint"], "/mutate");
  EXPECT_FALSE(entries[1].contains("patch"));
  EXPECT_FALSE(entries[2].contains("endpoint"));  // /validate's entries are as they were
  EXPECT_EQ(entries[3]["endpoint"], "/mutate");
  EXPECT_EQ(entries[3]["allowed"], false);
  const auto verified = verify_audit_log(options_.audit_log);
  ASSERT_TRUE(verified) << verified.error();
  EXPECT_TRUE(verified->ok()) << verified->chain.problem;
  EXPECT_EQ(verified->chain.entries, 4);
}

// The limits are the endpoint's too: a POST to /mutate without a length is refused, and
// one above what the server reads is cut off with a denying AdmissionReview.
TEST_F(WebhookServerTest, MutateHasTheSameLimits) {
  {
    RawTlsClient raw(port_);
    ASSERT_TRUE(raw.connected());
    ASSERT_TRUE(raw.send("POST /mutate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\r\n"));
    const std::string answer = raw.receive();
    EXPECT_EQ(status_of(answer), 411) << answer;
    EXPECT_NE(body_of(answer)["response"]["status"]["message"].get<std::string>().find("a POST to /mutate needs"),
              std::string::npos)
        << answer;
  }
  RawTlsClient raw(port_);
  ASSERT_TRUE(raw.connected());
  ASSERT_TRUE(raw.send("POST /mutate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                       "Content-Length: 17825792\r\n\r\n"));
  const std::string answer = raw.receive();
  EXPECT_EQ(status_of(answer), 413) << answer;
  EXPECT_EQ(body_of(answer)["kind"], "AdmissionReview");
  EXPECT_TRUE(audit().empty());
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

  // Beyond what the server reads at all: refused on the header, unread, the body still ours.
  RawTlsClient raw(port_);
  ASSERT_TRUE(raw.connected());
  ASSERT_TRUE(raw.send("POST /validate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                       "Content-Length: 17825792\r\n\r\n"));
  const std::string answer = raw.receive();
  EXPECT_EQ(status_of(answer), 413) << answer;
  const json huge = body_of(answer);
  ASSERT_TRUE(huge.is_object()) << answer;
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

// ---- issue 28: the webhook must not be a way to stop the cluster ---------------------------

// A chunked body far above the limit: the server answers 413 and closes once it has read
// the limit, long before the client has sent everything (the client's write fails, or it
// reads the answer early). Before, the whole body was read first.
TEST_F(WebhookServerTest, AnEndlessChunkedBodyIsCutOffAtTheLimit) {
  RawTlsClient raw(port_);
  ASSERT_TRUE(raw.connected());
  ASSERT_TRUE(raw.send("POST /validate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                       "Transfer-Encoding: chunked\r\n\r\n"));
  const std::string chunk = "10000\r\n" + std::string(0x10000, ' ') + "\r\n";  // 64 KiB
  const std::size_t total = std::size_t{256} << 20;
  std::size_t sent = 0;
  while (sent < total && raw.send(chunk)) sent += 0x10000;
  EXPECT_LT(sent, total) << "the server read all of a 256 MiB body";
  const std::string answer = raw.receive();
  if (!answer.empty()) {
    EXPECT_EQ(status_of(answer), 413) << answer.substr(0, 200);
  }
  EXPECT_GE(server_->stats().too_large, 1);
  EXPECT_EQ(post(fixture("create-quota-by-group-admin.json"))["response"]["allowed"], true);
}

// A POST without Content-Length or chunked framing has, in HTTP/1.1, no body: the rest
// would be read as the next request. The server asks for a length and closes.
TEST_F(WebhookServerTest, ABodyWithoutALengthIsRefusedWith411) {
  RawTlsClient raw(port_);
  ASSERT_TRUE(raw.connected());
  ASSERT_TRUE(raw.send("POST /validate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\r\n"));
  const std::string answer = raw.receive();
  EXPECT_EQ(status_of(answer), 411) << answer;
  EXPECT_NE(answer.find("Connection: close"), std::string::npos) << answer;
  EXPECT_TRUE(audit().empty());
}

// Headers beyond 8 KiB are not read on: 431, and the connection is closed.
TEST_F(WebhookServerTest, OversizedHeadersAreRefusedWith431) {
  RawTlsClient raw(port_);
  ASSERT_TRUE(raw.connected());
  ASSERT_TRUE(raw.send("POST /validate HTTP/1.1\r\nHost: localhost\r\nX-Big: " + std::string(10000, 'x') +
                       "\r\nContent-Length: 2\r\n\r\n{}"));
  const std::string answer = raw.receive();
  EXPECT_EQ(status_of(answer), 431) << answer;
  EXPECT_EQ(body_of(answer)["response"]["allowed"], false);
  EXPECT_TRUE(audit().empty());
}

// A compressed body (here the start of a gzip bomb) is refused, never unpacked; the
// connection stays usable.
TEST_F(WebhookServerTest, ACompressedBodyIsRefusedWith415AndNotUnpacked) {
  RawTlsClient raw(port_);
  ASSERT_TRUE(raw.connected());
  const std::string gzip("\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03\xed\xc1\x01\x0d\x00\x00\x00", 17);
  ASSERT_TRUE(raw.send("POST /validate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                       "Content-Encoding: gzip\r\nContent-Length: " +
                       std::to_string(gzip.size()) + "\r\n\r\n" + gzip));
  const std::string answer = raw.receive();
  EXPECT_EQ(status_of(answer), 415) << answer;
  EXPECT_NE(answer.find("Accept-Encoding: identity"), std::string::npos) << answer;
  EXPECT_EQ(body_of(answer)["response"]["allowed"], false);
  // Same connection, plain body: decided.
  const std::string review = fixture("create-quota-by-group-admin.json");
  ASSERT_TRUE(raw.send("POST /validate?timeout=10s HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                       "Content-Length: " + std::to_string(review.size()) + "\r\n\r\n" + review));
  const std::string decided = raw.receive();
  EXPECT_EQ(status_of(decided), 200) << decided;
  EXPECT_EQ(body_of(decided)["response"]["allowed"], true);
  EXPECT_EQ(audit().size(), 1u);
}

// Headers trickled a byte at a time: before, each byte restarted a 10 s read timeout and
// the connection (and its thread) was held forever. Now the whole request has one
// deadline (2 s here); meanwhile other clients are answered.
TEST_F(WebhookServerTest, ASlowLorisIsClosedAtTheRequestDeadline) {
  options_.request_timeout = 2;
  start();
  RawTlsClient raw(port_);
  ASSERT_TRUE(raw.connected());
  const std::string headers = "POST /validate HTTP/1.1\r\nHost: localhost\r\nX-Padding: " + std::string(200, 'a');
  const auto begin = std::chrono::steady_clock::now();
  std::size_t i = 0;
  bool open = true;
  while (open && std::chrono::steady_clock::now() - begin < std::chrono::seconds(12)) {
    open = raw.send(std::string_view(headers).substr(i++ % headers.size(), 1));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (i % 5 == 0) {
      EXPECT_EQ(post(fixture("create-quota-by-group-admin.json"))["response"]["allowed"], true);
    }
  }
  EXPECT_FALSE(open) << "still open after 12 s of trickled headers";
  EXPECT_TRUE(eventually_timed_out(1));
}

// Between requests a kept-alive connection waits under the idle timeout, not the request
// deadline: the API server reuses its connections for up to 90 s, so the server keeps
// them longer (120 s by default; 3.5 s here) and the client is the one that closes them.
TEST_F(WebhookServerTest, AKeptAliveConnectionMayIdleLongerThanARequestMayTakeButNotForever) {
  options_.request_timeout = 1.5;
  options_.idle_timeout = 3.5;
  start();
  RawTlsClient raw(port_, 20);
  ASSERT_TRUE(raw.connected());
  const std::string review = fixture("create-quota-by-group-admin.json");
  const std::string request = "POST /validate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                              "Content-Length: " + std::to_string(review.size()) + "\r\n\r\n" + review;
  ASSERT_TRUE(raw.send(request));
  EXPECT_EQ(status_of(raw.receive()), 200);
  std::this_thread::sleep_for(std::chrono::milliseconds(2000));  // longer than a request may take
  ASSERT_TRUE(raw.send(request));
  EXPECT_EQ(status_of(raw.receive()), 200);
  // Then idle past the idle timeout: the server closes (well before the client's 20 s).
  const auto begin = std::chrono::steady_clock::now();
  EXPECT_EQ(raw.receive(), "");
  EXPECT_LT(std::chrono::steady_clock::now() - begin, std::chrono::seconds(15));
  EXPECT_TRUE(eventually_timed_out(1));
}

// Every slot taken (by connections that send nothing): the next connection gets 429 with
// Retry-After, which the API server's client waits for and retries; the health listener
// and a kept-alive connection opened earlier still get answers.
TEST_F(WebhookServerTest, OverTheConnectionLimitTheNextOneGets429AndHealthStillAnswers) {
  options_.max_connections = 4;
  options_.request_timeout = 30;  // the idle ones keep their slots for the whole test
  start();
  httplib::SSLClient kept("127.0.0.1", port_);
  kept.enable_server_certificate_verification(false);
  kept.set_keep_alive(true);
  const std::string review = fixture("create-quota-by-group-admin.json");
  auto first = kept.Post("/validate", review, "application/json");
  ASSERT_TRUE(first);
  ASSERT_EQ(first->status, 200);
  client_.reset();  // the fixture's client would hold a slot too
  std::vector<std::unique_ptr<RawTlsClient>> idle;
  for (int i = 0; i < 3; ++i) {
    idle.push_back(std::make_unique<RawTlsClient>(port_));
    ASSERT_TRUE(idle.back()->connected());
  }
  for (int i = 0; i < 500 && server_->stats().open_connections < 4; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(server_->stats().open_connections, 4);

  RawTlsClient extra(port_);
  ASSERT_TRUE(extra.connected());
  ASSERT_TRUE(extra.send("POST /validate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                         "Content-Length: " + std::to_string(review.size()) + "\r\n\r\n" + review));
  const std::string answer = extra.receive();
  EXPECT_EQ(status_of(answer), 429) << answer;
  EXPECT_NE(answer.find("Retry-After: 1"), std::string::npos) << answer;
  EXPECT_NE(answer.find("Connection: close"), std::string::npos) << answer;
  EXPECT_EQ(server_->stats().refused, 1);

  httplib::Client health("127.0.0.1", server_->health_port());
  for (const char* path : {"/healthz", "/readyz"}) {
    auto h = health.Get(path);
    ASSERT_TRUE(h) << path;
    EXPECT_EQ(h->status, 200) << path;
  }
  auto again = kept.Post("/validate", review, "application/json");
  ASSERT_TRUE(again);
  EXPECT_EQ(again->status, 200);
  EXPECT_EQ(audit().size(), 2u);  // the refused one was never decided
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
