// Shared by the controller's portal tests (portal_desk_test.cpp, portal_access_test.cpp): a
// FAKE API server with the example policies (cluster_fixture.hpp), a running controller
// with a policy desk on a SQLite store, and its portal server (api/cluster_server.hpp) on a
// free loopback port.
#pragma once

#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "api/cluster_server.hpp"
#include "auth/gate.hpp"
#include "cluster_fixture.hpp"
#include "controller/manager.hpp"
#include "k8s/fake_client.hpp"
#include "proposals/proposals.hpp"
#include "support/promtool.hpp"  // ScratchDir

namespace gpubank::controller::testing {

using nlohmann::json;
using k8s::testing::eventually;

// A Kueue v1beta2 Workload of research's h100-rdma-training queue: one pod of 8 GPUs of a
// training job, its quota reserved at `reserved` (RFC 3339) and, when `finished` is not
// empty, finished then; otherwise also Admitted at `reserved`.
inline json research_workload(const std::string& name, const std::string& reserved, const std::string& finished = "") {
  json container{{"name", "trainer"}, {"image", "trainer:1"}};
  container["resources"]["requests"]["nvidia.com/gpu"] = "8";
  json pod_set{{"name", "main"}, {"count", 1}};
  pod_set["template"]["metadata"]["labels"] = {{"platform.gpubank.dev/workload-type", "training"}};
  pod_set["template"]["spec"]["containers"] = json::array({container});
  json w{{"apiVersion", "kueue.x-k8s.io/v1beta2"}, {"kind", "Workload"}};
  w["metadata"] = {{"name", name}, {"namespace", "research"}};
  w["spec"] = {{"queueName", "h100-rdma-training"}, {"priority", 0}, {"podSets", json::array({pod_set})}};
  w["status"]["admission"] = {{"clusterQueue", "research-h100-rdma-training"}};
  auto condition = [](const char* type, const char* reason, const std::string& at) {
    return json{{"type", type}, {"status", "True"}, {"reason", reason}, {"lastTransitionTime", at}, {"message", ""}};
  };
  w["status"]["conditions"] = json::array({condition("QuotaReserved", "QuotaReserved", reserved),
                                           finished.empty() ? condition("Admitted", "Admitted", reserved)
                                                            : condition("Finished", "Succeeded", finished)});
  return w;
}

inline std::int64_t wall_now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

class ControllerPortal : public ClusterFixture {
 protected:
  void SetUp() override {
    ClusterFixture::SetUp();
    put_policies({gpubank::testing::examples_dir() + "/policies"});
    store_ = (dir_.path() / "gpubank.db").string();
    auto gate = auth::Gate::open(store_);
    ASSERT_TRUE(gate.ok()) << gate.error();
    gate_ = std::move(*gate);
    auto desk = proposals::Desk::open(store_, policy::PolicySet{}, proposals::Truth::Cluster);
    ASSERT_TRUE(desk.ok()) << desk.error();
    desk_ = std::move(*desk);

    ControllerOptions options;
    options.identity = "replica-a";
    options.health_port = -1;
    options.debounce = std::chrono::milliseconds(10);
    options.reconcile.default_namespace = "gpubank-system";
    options.store = store_;
    options.desk = desk_;
    auto c = Controller::create(config_for(*fake_), std::move(options));
    ASSERT_TRUE(c.ok()) << c.error();
    controller_ = std::move(*c);

    api::ClusterServerOptions server;
    server.address = "127.0.0.1";
    server.port = 0;
    server.gate = gate_;
    server.desk = desk_;
    Controller* raw = controller_.get();
    server.cluster_policies = [raw] { return raw->cluster_policies(); };
    server.changed = [raw] { raw->wake(); };
    server.snapshot = [raw] { return raw->snapshot(); };
    server.store = store_;
    configure(server);
    server_ = std::make_unique<api::ClusterServer>(std::move(server));
    auto opened = server_->open();
    ASSERT_TRUE(opened.ok()) << opened.error();
    auto port = server_->bind();
    ASSERT_TRUE(port.ok()) << port.error();
    port_ = *port;
    server_->start();
    loop_ = std::jthread([this](std::stop_token stop) { (void)controller_->run(stop); });
    ASSERT_TRUE(eventually([&] { return controller_->passes() >= 1; }));
  }
  // What a derived suite adds to the server's options.
  virtual void configure(api::ClusterServerOptions&) {}

  void TearDown() override {
    if (loop_.joinable()) {
      loop_.request_stop();
      loop_.join();
    }
    if (server_) server_->stop();
  }

  std::string token(auth::Role role, const std::string& group, const std::string& subject) {
    auto issued = gate_->issue(auth::GrantRequest{subject, role, group, "test", std::nullopt}, wall_now_ms());
    EXPECT_TRUE(issued) << issued.error();
    return issued ? issued->token : std::string();
  }
  httplib::Result call(const std::string& bearer, const std::string& method, const std::string& path,
                       const std::string& body = "") {
    httplib::Client c("127.0.0.1", port_);
    c.set_read_timeout(60, 0);
    c.set_bearer_token_auth(bearer);
    return method == "GET" ? c.Get(path) : c.Post(path, body, "application/json");
  }
  json quota(const std::string& name) {
    for (const json& q : objects("platform.gpubank.dev/v1alpha1", "GPUQuotaPolicy")) {
      if (q["metadata"]["name"] == name) return q;
    }
    return nullptr;
  }
  // The nvidia.com/gpu quota of a rendered ClusterQueue, as Kueue reads it.
  json gpu_quota(const std::string& queue) {
    for (const json& q : objects("kueue.x-k8s.io/v1beta2", "ClusterQueue")) {
      if (q["metadata"]["name"] != queue) continue;
      for (const json& group : q["spec"]["resourceGroups"]) {
        for (const json& flavor : group["flavors"]) {
          for (const json& r : flavor["resources"]) {
            if (r["name"] == "nvidia.com/gpu") return r;
          }
        }
      }
    }
    return nullptr;
  }
  // The research group's quota policy as the API shows it, with `from` replaced by `to`
  // ("$" in `to`: a new line at the indentation of `from`'s line).
  std::string edited_document(const std::string& bearer, const std::string& from, std::string to) {
    auto res = call(bearer, "GET", "/api/v1/policies/GPUQuotaPolicy/research-training-h100");
    EXPECT_TRUE(res);
    if (!res) return {};
    EXPECT_EQ(res->status, 200) << res->body;
    std::string yaml = json::parse(res->body)["yaml"].get<std::string>();
    const auto at = yaml.find(from);
    EXPECT_NE(at, std::string::npos) << yaml;
    if (at == std::string::npos) return {};
    const std::size_t line = yaml.rfind('\n', at) + 1;
    const std::string indent = yaml.substr(line, at - line);
    for (std::size_t d; (d = to.find('$')) != std::string::npos;) to.replace(d, 1, "\n" + indent);
    yaml.replace(at, from.size(), to);
    return json{{"document", yaml}, {"comment", "test"}}.dump();
  }

  gpubank::testing::ScratchDir dir_;
  std::string store_;
  std::shared_ptr<auth::Gate> gate_;
  std::shared_ptr<proposals::Desk> desk_;
  std::unique_ptr<Controller> controller_;
  std::unique_ptr<api::ClusterServer> server_;
  int port_ = 0;
  std::jthread loop_;
};

}  // namespace gpubank::controller::testing
