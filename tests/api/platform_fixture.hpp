// `gpubank up`'s HTTP shell in process, on loopback, with its token gate on a real SQLite
// store in a fresh directory: the fixture of the platform API's tests. `client_` speaks as
// a platform-admin; token() issues others.
#pragma once

#include <gtest/gtest.h>
#include <httplib.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "api/platform_server.hpp"
#include "auth/gate.hpp"
#include "policy/policy_set.hpp"
#include "support/paths.hpp"
#include "twin/cluster/inventory.hpp"

namespace gpubank::api {

class PlatformServerTest : public ::testing::Test {
 protected:
  // gpubank up records governance every virtual minute; it roughly doubles what a day costs
  // under the sanitizers, so only the suite that reads it turns it on.
  [[nodiscard]] virtual bool with_governance() const { return false; }
  [[nodiscard]] virtual auth::GateOptions gate_options() const { return {}; }
  virtual void adjust(PlatformServerOptions& /*options*/) const {}

  static std::int64_t wall_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
  }

  void SetUp() override {
    std::string pattern = (std::filesystem::temp_directory_path() / "gpubank-platform-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    auto gate = auth::Gate::open((dir_ / "auth.db").string(), gate_options());
    ASSERT_TRUE(gate) << gate.error();
    gate_ = std::shared_ptr<auth::Gate>(std::move(*gate));
    admin_token_ = token(auth::Role::PlatformAdmin, "", "pat");

    Diagnostics d;
    auto inventory = twin::cluster::load_inventory(testing::source_dir() + "/examples/inventory/example.yaml", d);
    ASSERT_TRUE(inventory);
    twin::run::RunOptions run;
    run.inventory = std::make_shared<const twin::cluster::Inventory>(std::move(*inventory));
    twin::live::DayOptions day;
    day.start = *parse_rfc3339("2026-11-30T16:00:00Z");
    day.hours = 12;  // 00:00-12:00 in Shanghai: the night and the daytime serving
    day.serving_load = 0.05;  // the API is under test, not the serving model
    day.governance = with_governance();
    policy::PolicySet policies = policy::load_policy_set({testing::source_dir() + "/examples/policies"});
    auto desk = proposals::Desk::open((dir_ / "auth.db").string(), policies.policies_only());
    ASSERT_TRUE(desk) << desk.error();
    const auto inventory_for_previews = run.inventory;
    auto platform = twin::live::Platform::create(std::move(policies), day, run);
    ASSERT_TRUE(platform) << platform.error();
    PlatformServerOptions options;
    options.port = 0;
    options.paused = true;  // the test moves the clock itself
    options.gate = gate_;
    options.desk = std::shared_ptr<proposals::Desk>(std::move(*desk));
    options.inventory = inventory_for_previews;
    adjust(options);
    server_ = std::make_unique<PlatformServer>(std::move(platform.value()), options);
    auto port = server_->bind();
    ASSERT_TRUE(port) << port.error();
    port_ = *port;
    client_ = client(admin_token_);
    thread_ = std::thread([this] { server_->serve(); });
    for (int i = 0; i < 1000 && !client_->Get("/readyz"); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  void TearDown() override {
    if (server_) server_->stop();
    if (thread_.joinable()) thread_.join();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  // A token of `role` (a group for viewer and group-admin), recorded in the gate's store.
  std::string token(auth::Role role, const std::string& group, const std::string& subject) {
    auto issued = gate_->issue(auth::GrantRequest{subject, role, group, "test", std::nullopt}, wall_ms());
    EXPECT_TRUE(issued) << issued.error();
    return issued ? issued->token : std::string();
  }
  // A client speaking with `bearer` (none: anonymous).
  std::unique_ptr<httplib::Client> client(const std::string& bearer) const {
    auto c = std::make_unique<httplib::Client>("127.0.0.1", port_);
    // A step of hours runs the day (and its serving) inside the request: seconds under the
    // sanitizers. Only a bound on waiting, nothing is timed.
    c->set_read_timeout(300, 0);
    if (!bearer.empty()) c->set_bearer_token_auth(bearer);
    return c;
  }

  nlohmann::json get(const std::string& path, int expected_status = 200) {
    auto res = client_->Get(path);
    EXPECT_TRUE(res);
    if (!res) return nullptr;
    EXPECT_EQ(res->status, expected_status) << path << ": " << res->body;
    return nlohmann::json::parse(res->body, nullptr, false);
  }
  nlohmann::json post_clock(const std::string& body, int expected_status = 200) {
    auto res = client_->Post("/api/v1/clock", body, "application/json");
    EXPECT_TRUE(res);
    if (!res) return nullptr;
    EXPECT_EQ(res->status, expected_status) << body << ": " << res->body;
    return nlohmann::json::parse(res->body, nullptr, false);
  }

  std::filesystem::path dir_;
  std::shared_ptr<auth::Gate> gate_;
  std::string admin_token_;
  int port_ = 0;
  std::unique_ptr<PlatformServer> server_;
  std::unique_ptr<httplib::Client> client_;
  std::thread thread_;
};

}  // namespace gpubank::api
