// `gpubank controller` as a user runs it: the binary, a kubeconfig pointing at a FAKE API
// server (cluster_fixture.hpp) that holds the example policies; and the real kubectl
// waiting on the conditions it sets (skipped, saying so, where kubectl is missing).
#include <gtest/gtest.h>

#include "cluster_fixture.hpp"
#include "k8s/fixture.hpp"
#include "support/process.hpp"

namespace gpubank::controller {
namespace {

using nlohmann::json;
using gpubank::testing::ProcessResult;
using gpubank::testing::run_process;

class ControllerCommand : public testing::ClusterFixture {
 protected:
  void SetUp() override {
    ClusterFixture::SetUp();
    put_policies({gpubank::testing::examples_dir() + "/policies"});
    kubeconfig_ = testing::write_kubeconfig(*fake_, dir_.path());
  }

  ProcessResult gpubank(std::vector<std::string> args) {
    args.insert(args.begin(), {gpubank::testing::binary_dir() + "/cmd/gpubank/gpubank", "controller",
                               "--kubeconfig", kubeconfig_});
    return run_process(args, {{"KUBECONFIG", std::nullopt}, {"HOME", dir_.path().string()}});
  }

  gpubank::testing::ScratchDir dir_;
  std::string kubeconfig_;
};

TEST_F(ControllerCommand, DryRunPrintsDiffsAndWritesNothingThenOnceApplies) {
  const auto before = fake_->resource_version();
  const ProcessResult preview = gpubank({"--dry-run"});
  ASSERT_EQ(preview.status, 0) << preview.err;
  EXPECT_EQ(fake_->resource_version(), before);
  EXPECT_NE(preview.out.find("would-create clusterqueue.kueue.x-k8s.io/search-h100-rdma-training\n--- /dev/null\n"
                             "+++ desired/clusterqueue.kueue.x-k8s.io/search-h100-rdma-training\n"),
            std::string::npos)
      << preview.out;
  EXPECT_NE(preview.out.find("skipped kueue/configmap-kueue-manager-config.yaml"), std::string::npos);

  const ProcessResult once = gpubank({"--once", "-o", "json"});
  ASSERT_EQ(once.status, 0) << once.err;
  const json report = json::parse(once.out);
  EXPECT_TRUE(report["rendered"].get<bool>());
  EXPECT_FALSE(report["dryRun"].get<bool>());
  std::size_t created = 0;
  for (const json& o : report["objects"]) created += o["action"] == "created" ? 1U : 0U;
  EXPECT_GT(created, 40U);

  // A second pass: nothing to do.
  const ProcessResult again = gpubank({"--dry-run"});
  ASSERT_EQ(again.status, 0) << again.err;
  EXPECT_NE(again.out.find("dry run: 0 to create, 0 to configure, 0 to prune, 0 to release,"), std::string::npos)
      << again.out;
}

TEST_F(ControllerCommand, AnInvalidSetExitsOneAndSaysWhy) {
  json policy = fake_->objects("gpuquotapolicies").front();
  policy["spec"]["guaranteed"] = 4000;
  policy["spec"]["maxCapacity"] = 4000;
  put_object(policy);
  const ProcessResult r = gpubank({"--once"});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("the cluster's policy set is invalid: nothing was applied"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("Rendered=False (PolicySetInvalid"), std::string::npos) << r.out;
}

TEST_F(ControllerCommand, UsageErrorsExitTwo) {
  EXPECT_EQ(gpubank({"--dry-run", "--once"}).status, 2);
  EXPECT_EQ(gpubank({"--leader-elect", "--lease-duration", "5", "--renew-deadline", "5"}).status, 2);
  EXPECT_EQ(gpubank({"--once", "--backend", "slurm"}).status, 2);
  const ProcessResult missing = run_process(
      {gpubank::testing::binary_dir() + "/cmd/gpubank/gpubank", "controller", "--once", "--kubeconfig", "/nonexistent/kc"}, {});
  EXPECT_EQ(missing.status, 1);
  EXPECT_NE(missing.err.find("/nonexistent/kc"), std::string::npos) << missing.err;
}

// kubectl wait --for=condition=Applied: what a GitOps pipeline runs after a sync.
TEST_F(ControllerCommand, KubectlWaitsForTheAppliedCondition) {
  const auto kubectl = gpubank::testing::find_on_path("kubectl");
  if (!kubectl) GTEST_SKIP() << "kubectl is not on PATH: the real-client check cannot run (CI has no kubectl)";
  ASSERT_EQ(gpubank({"--once"}).status, 0);
  for (const std::vector<std::string>& what : {std::vector<std::string>{"gpuquotapolicies.platform.gpubank.dev/search-team-h100"},
                                                std::vector<std::string>{"tidalpolicies.platform.gpubank.dev", "--all"}}) {
    std::vector<std::string> args{kubectl->string(), "--kubeconfig=" + kubeconfig_,
                                  "--cache-dir=" + (dir_.path() / "cache").string(), "wait", "--for=condition=Applied",
                                  "--timeout=30s"};
    args.insert(args.end(), what.begin(), what.end());
    const ProcessResult wait = run_process(args, {{"HOME", dir_.path().string()}, {"KUBECONFIG", std::nullopt}});
    EXPECT_EQ(wait.status, 0) << wait.out << wait.err;
    EXPECT_NE(wait.out.find("condition met"), std::string::npos) << wait.out;
  }
}

}  // namespace
}  // namespace gpubank::controller
