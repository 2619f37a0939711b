// The real kubectl's server-side apply against the fake API server, which starts without
// the gpubank kinds: the shipped CRDs (deploy/crds/) must make them exist, an example
// policy must apply, a second field manager must get kubectl's conflict error and
// --force-conflicts must take the field over; a status condition set through the status
// subresource must satisfy `kubectl wait`.
//
// --validate=false everywhere: kubectl's default validation downloads the OpenAPI schema,
// which the fake does not serve ("error validating data: failed to download openapi: the
// server could not find the requested resource"). The server-side apply request is the
// same with or without it (only its fieldValidation parameter differs, which the fake
// ignores).
#include <gtest/gtest.h>

#include "fake_client.hpp"
#include "kubectl_fixture.hpp"
#include "k8s/apply.hpp"
#include "support/paths.hpp"

namespace gpubank::k8s {
// The alias src/k8s/watch_event.hpp declares (a unity build may include it after this file).
using Json = nlohmann::json;
namespace {

using namespace testing;

class KubectlApply : public KubectlFixture {
 protected:
  void SetUp() override {
    FakeApiServer::Options options;
    options.gpubank_kinds = false;
    if (!start(options)) GTEST_SKIP() << "kubectl is not on PATH: these tests run the real kubectl against the fake API server";
    // -k: deploy/crds is a kustomization (deploy/base builds on it), which `-f` on the
    // directory would try to apply as an object.
    const auto crds = kubectl({"apply", "--server-side", "--validate=false", "-k",
                               gpubank::testing::source_dir() + "/deploy/crds"});
    ASSERT_EQ(crds.status, 0) << crds.err;
    ASSERT_NE(crds.out.find("customresourcedefinition.apiextensions.k8s.io/gpuquotapolicies.platform.gpubank.dev serverside-applied"),
              std::string::npos) << crds.out;
    // The first GPUQuotaPolicy of the examples, and the same with another guarantee.
    const std::string all = read_file(gpubank::testing::examples_dir() + "/policies/10-quotas.yaml");
    policy_ = all.substr(0, all.find("\n---\n") + 1);
    ASSERT_NE(policy_.find("guaranteed: 32"), std::string::npos) << policy_;
    std::string changed = policy_;
    changed.replace(changed.find("guaranteed: 32"), 14, "guaranteed: 24");
    policy_file_ = put(dir_.path(), "policy.yaml", policy_);
    changed_file_ = put(dir_.path(), "changed.yaml", changed);
  }

  Json stored() {
    const auto objects = fake_->objects("gpuquotapolicies");
    return objects.size() == 1 ? objects[0] : Json();
  }

  std::string policy_;
  std::string policy_file_;
  std::string changed_file_;
};

TEST_F(KubectlApply, TheShippedCrdsMakeTheSixKindsExist) {
  const auto crds = kubectl({"get", "crd", "-o", "name"});
  ASSERT_EQ(crds.status, 0) << crds.err;
  for (const char* plural : {"platformguardrails", "gpuquotapolicies", "inferencescalingpolicies", "tidalpolicies",
                             "capacityleases", "lowutilizationpolicies"}) {
    EXPECT_NE(crds.out.find(std::string("customresourcedefinition.apiextensions.k8s.io/") + plural + ".platform.gpubank.dev\n"),
              std::string::npos) << plural << " missing from:\n" << crds.out;
  }
  const auto established = kubectl({"wait", "--for=condition=Established", "--timeout=30s", "crd/gpuquotapolicies.platform.gpubank.dev"});
  EXPECT_EQ(established.status, 0) << established.err;
  const auto resources = kubectl({"api-resources", "--api-group=platform.gpubank.dev", "-o", "name"});
  ASSERT_EQ(resources.status, 0) << resources.err;
  EXPECT_NE(resources.out.find("tidalpolicies.platform.gpubank.dev\n"), std::string::npos) << resources.out;
}

TEST_F(KubectlApply, ApplyConflictAndForce) {
  const auto applied = kubectl({"apply", "--server-side", "--validate=false", "-f", policy_file_});
  ASSERT_EQ(applied.status, 0) << applied.err;
  EXPECT_EQ(applied.out, "gpuquotapolicy.platform.gpubank.dev/search-team-h100 serverside-applied\n");
  EXPECT_EQ(stored()["spec"]["guaranteed"], 32);
  EXPECT_EQ(stored()["metadata"]["managedFields"][0]["manager"], "kubectl");
  const std::string rv = stored()["metadata"]["resourceVersion"];

  const auto again = kubectl({"apply", "--server-side", "--validate=false", "-f", policy_file_});
  ASSERT_EQ(again.status, 0) << again.err;
  EXPECT_EQ(stored()["metadata"]["resourceVersion"], rv);  // a no-op

  const auto clash = kubectl({"apply", "--server-side", "--validate=false", "--field-manager", "other", "-f", changed_file_});
  EXPECT_NE(clash.status, 0);
  EXPECT_NE(clash.err.find("Apply failed with 1 conflict: conflict with \"kubectl\" using platform.gpubank.dev/v1alpha1: .spec.guaranteed"),
            std::string::npos) << clash.err;
  EXPECT_NE(clash.err.find("--force-conflicts"), std::string::npos) << clash.err;  // kubectl's own advice
  EXPECT_EQ(stored()["spec"]["guaranteed"], 32);

  const auto forced = kubectl({"apply", "--server-side", "--validate=false", "--field-manager", "other",
                               "--force-conflicts", "-f", changed_file_});
  ASSERT_EQ(forced.status, 0) << forced.err;
  EXPECT_EQ(stored()["spec"]["guaranteed"], 24);
  EXPECT_EQ(stored()["metadata"]["generation"], 2);
  const auto shown = kubectl({"get", "gpuquotapolicy", "search-team-h100", "-o", "json", "--show-managed-fields"});
  ASSERT_EQ(shown.status, 0) << shown.err;
  const Json object = Json::parse(shown.out);
  const Json& mf = object["metadata"]["managedFields"];
  ASSERT_EQ(mf.size(), 2u) << shown.out;
  EXPECT_EQ(mf[1]["manager"], "other");
  EXPECT_TRUE(mf[1]["fieldsV1"]["f:spec"].contains("f:guaranteed")) << mf;
  EXPECT_FALSE(mf[0]["fieldsV1"]["f:spec"].contains("f:guaranteed")) << mf;
}

TEST_F(KubectlApply, WaitSeesAConditionSetThroughTheStatusSubresource) {
  ASSERT_EQ(kubectl({"apply", "--server-side", "--validate=false", "-f", policy_file_}).status, 0);
  SleepLog sleeps;
  auto client = make_transport(config_for(*fake_), sleeps);
  auto mapper = discover(*client);
  ASSERT_TRUE(mapper.ok()) << mapper.error().describe();
  auto patch = status_patch(*mapper, stored(),
                            Json{{"conditions", {{{"type", "Ready"}, {"status", "True"}, {"reason", "Admitted"},
                                                  {"message", "quota in force"}, {"lastTransitionTime", "2026-01-01T00:00:00Z"}}}}});
  ASSERT_TRUE(patch.ok()) << patch.error();
  auto res = client->merge_patch(patch->path, patch->body);
  ASSERT_TRUE(res.ok()) << res.error().describe();
  const auto waited = kubectl({"wait", "--for=condition=Ready", "--timeout=30s", "gpuquotapolicy/search-team-h100"});
  EXPECT_EQ(waited.status, 0) << waited.err;
  EXPECT_EQ(waited.out, "gpuquotapolicy.platform.gpubank.dev/search-team-h100 condition met\n");
}

}  // namespace
}  // namespace gpubank::k8s
