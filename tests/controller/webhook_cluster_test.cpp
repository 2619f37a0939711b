// The webhook judging against the cluster's policies (--policies-from-cluster): a
// PolicyWatch on a FAKE API server (cluster_fixture.hpp) feeds WebhookServer::replace_policies,
// so a cross-object rule (guarantees within a pool add up to at most its capacity) sees
// the policies created with kubectl, and follows their deletion.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>

#include "api/webhook_server.hpp"
#include "cluster_fixture.hpp"
#include "controller/policy_watch.hpp"
#include "core/timestamp.hpp"
#include "k8s/fake_client.hpp"
#include "k8s/fixture.hpp"
#include "support/tls.hpp"

namespace gpubank::controller {
namespace {

using nlohmann::json;
using k8s::testing::eventually;

json review_of(const json& object, const json& old_object) {
  return {{"apiVersion", "admission.k8s.io/v1"},
          {"kind", "AdmissionReview"},
          {"request",
           {{"uid", "review-1"},
            {"kind", {{"group", "platform.gpubank.dev"}, {"version", "v1alpha1"}, {"kind", object["kind"]}}},
            {"name", object["metadata"]["name"]},
            {"operation", old_object.is_null() ? "CREATE" : "UPDATE"},
            {"userInfo", {{"username", "ops"}, {"groups", {"gpubank-platform-admins", "system:authenticated"}}}},
            {"object", object},
            {"oldObject", old_object}}}};
}

class WebhookClusterView : public testing::ClusterFixture {
 protected:
  void SetUp() override {
    ClusterFixture::SetUp();
    put_policies({gpubank::testing::examples_dir() + "/policies"});
    const auto pem = gpubank::testing::localhost_pem("webhook");
    options_.tls_cert = k8s::testing::put(dir_.path(), "tls.crt", pem.cert);
    options_.tls_key = k8s::testing::put(dir_.path(), "tls.key", pem.key);
    options_.guardrails = gpubank::testing::examples_dir() + "/policies/00-guardrails.yaml";
    options_.audit_log = (dir_.path() / "audit.jsonl").string();
    options_.cluster_policies = true;
    options_.port = 0;
    options_.health_port = -1;
    auto server = api::WebhookServer::create(options_);
    ASSERT_TRUE(server.ok()) << server.error();
    server_ = std::move(*server);
    api::WebhookServer* srv = server_.get();
    auto watch = PolicyWatch::create(
        testing::config_for(*fake_),
        [this, srv](ClusterPolicies cluster) {
          std::vector<std::string> notes;
          ASSERT_TRUE(srv->replace_policies(std::move(cluster.set), notes).ok());
          deliveries_.fetch_add(1);
        },
        std::chrono::milliseconds(5));
    ASSERT_TRUE(watch.ok()) << watch.error();
    watch_ = std::move(*watch);
    ASSERT_TRUE(watch_->start(std::chrono::seconds(60)).ok());
  }
  void TearDown() override {
    if (watch_) watch_->stop();
  }

  api::AdmissionDecision decide(const json& object, const json& old_object = nullptr) {
    return api::review(*server_->snapshot(), review_of(object, old_object).dump(), *parse_rfc3339("2026-11-30T09:00:00Z"));
  }

  gpubank::testing::ScratchDir dir_;
  api::WebhookOptions options_;
  std::unique_ptr<api::WebhookServer> server_;
  std::unique_ptr<PolicyWatch> watch_;
  std::atomic<int> deliveries_{0};
};

// 64 GPUs of h100-rdma-training hold 32 + 16 + 8 guaranteed in the examples: raising
// search's 32 to 48 does not fit while ads-training-h100 exists, and fits once that is
// deleted from the cluster (with kubectl, say: the webhook never saw that request).
TEST_F(WebhookClusterView, CrossObjectRulesSeeTheClustersPoliciesAndFollowThem) {
  EXPECT_EQ(deliveries_.load(), 1);
  EXPECT_EQ(server_->snapshot()->set().policies().size(), 19U);
  json old;
  for (const json& p : fake_->objects("gpuquotapolicies")) {
    if (p["metadata"]["name"] == "search-team-h100") old = p;
  }
  ASSERT_FALSE(old.is_null());
  json raised = old;
  raised["spec"]["guaranteed"] = 48;
  raised["spec"]["borrowLimit"] = 0;
  raised["spec"]["maxCapacity"] = 48;
  const api::AdmissionDecision before = decide(raised, old);
  EXPECT_FALSE(before.allowed);
  EXPECT_NE(std::find(before.rules.begin(), before.rules.end(), "quota.sum-exceeds-pool"), before.rules.end())
      << before.message << " rules: " << ::testing::PrintToString(before.rules);

  ASSERT_TRUE(fake_->remove("gpuquotapolicies", "", "ads-training-h100"));
  ASSERT_TRUE(eventually([&] { return server_->snapshot()->set().policies().size() == 18U; }));
  const api::AdmissionDecision after = decide(raised, old);
  EXPECT_TRUE(after.allowed) << after.message;
}

// Until the cluster holds a PlatformGuardrails, the file's stand in, so the first one can
// be judged; then the cluster's are used.
TEST_F(WebhookClusterView, TheGuardrailsFileStandsInUntilTheClusterHasGuardrails) {
  ASSERT_TRUE(fake_->remove("platformguardrails", "", "platform"));
  // 18 from the cluster and the file's guardrails.
  ASSERT_TRUE(eventually([&] { return deliveries_.load() >= 2; }));
  EXPECT_EQ(server_->snapshot()->set().policies().size(), 19U);
  ASSERT_NE(server_->snapshot()->set().guardrails(), nullptr);
  EXPECT_EQ(server_->snapshot()->set().guardrails()->metadata.name, "platform");
}

}  // namespace
}  // namespace gpubank::controller
