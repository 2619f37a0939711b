// The running controller (manager.hpp) in process, against a FAKE API server
// (cluster_fixture.hpp): it reconciles when a gpubank resource changes, records Events and
// audit entries, answers its health endpoints and stops on request.
#include "controller/manager.hpp"

#include <gtest/gtest.h>
#include <httplib.h>

#include <thread>

#include "cluster_fixture.hpp"
#include "k8s/fake_client.hpp"
#include "store/store.hpp"
#include "support/promtool.hpp"  // ScratchDir

namespace gpubank::controller {
namespace {

using nlohmann::json;
using k8s::testing::eventually;

class ControllerLoop : public testing::ClusterFixture {
 protected:
  void SetUp() override {
    ClusterFixture::SetUp();
    put_policies({gpubank::testing::examples_dir() + "/policies"});
  }

  std::unique_ptr<Controller> make(ControllerOptions options) {
    options.identity = "replica-a";
    options.health_port = 0;
    options.health_address = "127.0.0.1";
    options.debounce = std::chrono::milliseconds(10);
    options.reconcile.default_namespace = "gpubank-system";
    auto c = Controller::create(testing::config_for(*fake_), std::move(options));
    EXPECT_TRUE(c.ok()) << (c.ok() ? "" : c.error());
    return c.ok() ? std::move(*c) : nullptr;
  }

  bool queue_exists(const std::string& name) {
    for (const json& q : objects("kueue.x-k8s.io/v1beta2", "ClusterQueue")) {
      if (q["metadata"]["name"] == name) return true;
    }
    return false;
  }
};

TEST_F(ControllerLoop, ReconcilesEveryChangeRecordsItAndStopsOnRequest) {
  gpubank::testing::ScratchDir dir;
  ControllerOptions options;
  options.store = (dir.path() / "audit.db").string();
  auto controller = make(options);
  ASSERT_NE(controller, nullptr);
  Expected<bool> result = true;
  std::jthread loop([&](std::stop_token stop) { result = controller->run(stop); });

  ASSERT_TRUE(eventually([&] { return controller->passes() >= 1; }));
  EXPECT_TRUE(queue_exists("research-h100-rdma-training"));
  httplib::Client health("127.0.0.1", controller->health_port());
  auto ready = health.Get("/readyz");
  ASSERT_TRUE(ready);
  EXPECT_EQ(ready->status, 200);
  EXPECT_EQ(health.Get("/healthz")->status, 200);

  // A deleted policy: its queue goes, without any restart.
  ASSERT_TRUE(fake_->remove("gpuquotapolicies", "", "research-training-h100"));
  ASSERT_TRUE(eventually([&] { return !queue_exists("research-h100-rdma-training"); }));

  // Events on the resources whose status changed.
  bool applied_event = false;
  for (const json& e : fake_->objects("events")) {
    applied_event |= e["reason"] == "Applied" && e["regarding"]["kind"] == "GPUQuotaPolicy" &&
                     e["reportingInstance"] == "replica-a";
  }
  EXPECT_TRUE(applied_event);

  loop.request_stop();
  loop.join();
  ASSERT_TRUE(result.ok()) << result.error();

  // One audit entry per object created and pruned, in a chain that verifies.
  auto store = store::Store::open(options.store, {.create = false, .read_only = true});
  ASSERT_TRUE(store.ok()) << store.error();
  auto entries = (*store)->audit(0, 100000);
  ASSERT_TRUE(entries.ok());
  std::size_t created = 0;
  std::size_t pruned = 0;
  for (const bank::AuditEntry& e : *entries) {
    EXPECT_EQ(e.actor, "gpubank-controller/replica-a");
    created += e.action == "ObjectCreated" ? 1U : 0U;
    if (e.action == "ObjectPruned") {
      ++pruned;
      EXPECT_EQ(e.decision, "pruned");
    }
  }
  EXPECT_GT(created, 40U);
  EXPECT_GE(pruned, 1U);
  auto verified = store::verify_audit(**store);
  ASSERT_TRUE(verified.ok());
  EXPECT_TRUE(verified->ok);
}

TEST_F(ControllerLoop, AnUnchangedClusterGetsNoWritesAfterTheFirstPass) {
  ControllerOptions options;
  options.resync_period = std::chrono::milliseconds(50);  // many passes
  auto controller = make(options);
  ASSERT_NE(controller, nullptr);
  std::jthread loop([&](std::stop_token stop) { (void)controller->run(stop); });
  // The first pass writes objects and statuses; the status writes wake the informers, and
  // the pass after them must find nothing to do.
  ASSERT_TRUE(eventually([&] { return controller->passes() >= 3; }));
  const auto version = fake_->resource_version();
  const std::size_t passes = controller->passes();
  ASSERT_TRUE(eventually([&] { return controller->passes() >= passes + 3; }));
  EXPECT_EQ(fake_->resource_version(), version) << "a pass over an unchanged cluster wrote to it";
}

}  // namespace
}  // namespace gpubank::controller
