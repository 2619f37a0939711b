// What the webhook's server tests share (webhook_server_test.cpp, webhook_metrics_test.cpp):
// a server on loopback with a self-signed certificate and the example policies, an HTTPS
// client that verifies it, a byte-level TLS client, and the fixtures under tests/api/data.
#pragma once

#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/webhook_server.hpp"
#include "support/paths.hpp"
#include "support/tls.hpp"

namespace gpubank::api {

namespace fs = std::filesystem;
using nlohmann::json;

inline std::string fixture(const std::string& name) {
  std::ifstream in(gpubank::testing::source_dir() + "/tests/api/data/" + name);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// A TLS client at the byte level (no certificate check), for what a well-behaved client
// library will not send: trickled headers, bodies without a length, endless chunks.
class RawTlsClient {
 public:
  explicit RawTlsClient(int port, int receive_timeout_s = 10) {
    ctx_ = SSL_CTX_new(TLS_client_method());
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    timeval tv{receive_timeout_s, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<std::uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) return;
    ssl_ = SSL_new(ctx_);
    SSL_set_fd(ssl_, fd_);
    connected_ = SSL_connect(ssl_) == 1;
  }
  ~RawTlsClient() {
    if (ssl_ != nullptr) SSL_free(ssl_);
    if (fd_ >= 0) ::close(fd_);
    SSL_CTX_free(ctx_);
  }
  RawTlsClient(const RawTlsClient&) = delete;
  RawTlsClient& operator=(const RawTlsClient&) = delete;

  [[nodiscard]] bool connected() const { return connected_; }
  bool send(std::string_view bytes) {
    while (!bytes.empty()) {
      const int n = SSL_write(ssl_, bytes.data(), static_cast<int>(bytes.size()));
      if (n <= 0) return false;
      bytes.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
  }
  // Everything the server sends until it closes the connection or stops for
  // receive_timeout_s, or until `enough` bytes.
  std::string receive(std::size_t enough = std::size_t{1} << 20) {
    std::string out;
    char buf[16384];
    while (out.size() < enough) {
      const int n = SSL_read(ssl_, buf, sizeof buf);
      if (n <= 0) break;
      out.append(buf, static_cast<std::size_t>(n));
      if (const auto end = out.find("\r\n\r\n"); end != std::string::npos) {
        // Stop after one whole response.
        const auto cl = out.find("Content-Length: ");
        if (cl != std::string::npos && cl < end) {
          const std::size_t length = std::stoul(out.substr(cl + 16));
          if (out.size() >= end + 4 + length) break;
        }
      }
    }
    return out;
  }

 private:
  SSL_CTX* ctx_ = nullptr;
  SSL* ssl_ = nullptr;
  int fd_ = -1;
  bool connected_ = false;
};

inline int status_of(const std::string& response) {
  if (response.rfind("HTTP/1.1 ", 0) != 0) return 0;
  return std::stoi(response.substr(9, 3));
}

inline json body_of(const std::string& response) {
  const auto end = response.find("\r\n\r\n");
  return end == std::string::npos ? json() : json::parse(response.substr(end + 4), nullptr, false);
}

class WebhookServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::signal(SIGPIPE, SIG_IGN);  // writes to connections the server closed fail instead
    dir_ = ::testing::TempDir() + "/webhook-" + ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    tls_ = gpubank::testing::make_self_signed(dir_);
    options_.address = "127.0.0.1";
    options_.port = 0;
    options_.tls_cert = tls_.cert;
    options_.tls_key = tls_.key;
    const std::string examples = gpubank::testing::examples_dir() + "/policies";
    options_.guardrails = examples + "/00-guardrails.yaml";
    options_.policies = {examples};
    options_.audit_log = dir_ + "/audit.jsonl";
    options_.threads = 2;
    options_.health_address = "127.0.0.1";
    options_.health_port = 0;
    start();
  }

  // (Re)starts the server with options_.
  void start() {
    if (server_) server_->stop();
    if (thread_.joinable()) thread_.join();
    server_.reset();
    auto server = WebhookServer::create(options_);
    ASSERT_TRUE(server) << server.error();
    server_ = std::move(*server);
    auto port = server_->bind();
    ASSERT_TRUE(port) << port.error();
    port_ = *port;
    thread_ = std::thread([this] { server_->serve(); });
    client_ = std::make_unique<httplib::SSLClient>("127.0.0.1", port_);
    client_->enable_server_certificate_verification(true);
    client_->set_ca_cert_path(tls_.cert.c_str());
    client_->set_connection_timeout(5);
    // Wait until it answers.
    for (int i = 0; i < 200; ++i) {
      if (auto r = client_->Get("/readyz"); r && r->status == 200) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }

  // The server counts a connection closed at a deadline after the client has seen it close.
  bool eventually_timed_out(std::int64_t at_least) {
    for (int i = 0; i < 500 && server_->stats().timed_out < at_least; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return server_->stats().timed_out >= at_least;
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
  gpubank::testing::TlsFiles tls_;
  WebhookOptions options_;
  std::unique_ptr<WebhookServer> server_;
  int port_ = 0;
  std::thread thread_;
  std::unique_ptr<httplib::SSLClient> client_;
};

}  // namespace gpubank::api
