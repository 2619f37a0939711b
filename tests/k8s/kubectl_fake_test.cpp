// The real kubectl against the fake API server: the fake must speak the protocol well
// enough for the real client (discovery, /version, list), and what kubectl shows must be
// what the fake holds. CI without kubectl skips these with a message.
#include <gtest/gtest.h>

#include "fake_client.hpp"
#include "fixture.hpp"
#include "kubectl_fixture.hpp"
#include "payloads.hpp"
#include "support/process.hpp"

namespace gpubank::k8s {
// The alias src/k8s/watch_event.hpp declares (a unity build may include it after this file).
using Json = nlohmann::json;
namespace {

using namespace testing;

class KubectlAgainstFake : public KubectlFixture {
 protected:
  void SetUp() override {
    if (!start({})) GTEST_SKIP() << "kubectl is not on PATH: these tests run the real kubectl against the fake API server";
    fake_->put("nodes", node_json("gpu-node-1"));
    fake_->put("pods", pod_json("team-a", "train-0"));
    fake_->put("pods", pod_json("team-b", "train-1", "gpu-node-2"));
    fake_->put("workloads", workload_json("team-a", "job-train-3c1d2"));
    fake_->put("workloads", workload_json("team-b", "job-eval-9f0aa", 4));
    fake_->put("clusterqueues", cluster_queue_json("team-a-cq"));
  }

  static void expect_items(const gpubank::testing::ProcessResult& r, const std::vector<Json>& expected) {
    ASSERT_EQ(r.status, 0) << r.err;
    const Json out = Json::parse(r.out);
    ASSERT_TRUE(out["items"].is_array()) << r.out;
    EXPECT_EQ(out["items"], Json(expected));
  }
};

TEST_F(KubectlAgainstFake, GetRawVersion) {
  const auto r = kubectl({"get", "--raw", "/version"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(Json::parse(r.out)["gitVersion"], "v1.32.0-fake");
}

TEST_F(KubectlAgainstFake, ApiResourcesComeFromDiscovery) {
  const auto r = kubectl({"api-resources", "-o", "name"});
  ASSERT_EQ(r.status, 0) << r.err;
  for (const char* name : {"pods", "nodes", "workloads.kueue.x-k8s.io", "clusterqueues.kueue.x-k8s.io",
                           "localqueues.kueue.x-k8s.io", "gpuquotapolicies.platform.gpubank.dev",
                           "capacityleases.platform.gpubank.dev"}) {
    EXPECT_NE(r.out.find(std::string(name) + "\n"), std::string::npos) << name << " missing from:\n" << r.out;
  }
}

TEST_F(KubectlAgainstFake, GetPodsAllNamespaces) {
  expect_items(kubectl({"get", "pods", "-A", "-o", "json", "--show-managed-fields"}), fake_->objects("pods"));
}

TEST_F(KubectlAgainstFake, GetWorkloadsAndClusterQueues) {
  expect_items(kubectl({"get", "workloads.kueue.x-k8s.io", "-A", "-o", "json", "--show-managed-fields"}), fake_->objects("workloads"));
  expect_items(kubectl({"get", "clusterqueues", "-o", "json", "--show-managed-fields"}), fake_->objects("clusterqueues"));
  expect_items(kubectl({"get", "nodes", "-o", "json", "--show-managed-fields"}), fake_->objects("nodes"));
}

TEST_F(KubectlAgainstFake, AWrongTokenIsUnauthorized) {
  const auto r = kubectl({"get", "pods", "-A", "-o", "json"}, write_kubeconfig("wrong"));
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("You must be logged in to the server"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace gpubank::k8s
