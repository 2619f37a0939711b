// `gpubank serving autoscale` as an operator runs it: the binary, a kubeconfig pointing at a
// FAKE API server (real HTTPS on loopback; no kube-apiserver can run here), and a vLLM page
// served on loopback read with --scrape. The examples' embeddings service (a Deployment)
// with 200 requests waiting asks for ceil(200 / 32) = 7 replicas, 6 within one sync's
// scale-up rate limit from 2.
#include <gtest/gtest.h>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "k8s/fixture.hpp"
#include "support/fake_apiserver.hpp"
#include "support/kubeconfig.hpp"
#include "support/paths.hpp"
#include "support/process.hpp"
#include "vllm_page.hpp"

namespace gpubank::autoscale {
namespace {

using gpubank::testing::FakeApiServer;
using gpubank::testing::ProcessResult;
using Json = nlohmann::json;

class ServingAutoscaleCommand : public ::testing::Test {
 protected:
  void SetUp() override {
    kubeconfig_ = gpubank::testing::write_kubeconfig(fake_, dir_.path(), "default");
    fake_.put("deployments", {{"metadata", {{"name", "embeddings"}, {"namespace", "customer-service"}}},
                              {"spec", {{"replicas", 2}, {"selector", {{"matchLabels", {{"app", "embeddings"}}}}}}},
                              {"status", {{"replicas", 2}, {"readyReplicas", 2}}}});
  }

  ProcessResult gpubank(std::vector<std::string> args, const std::string& kubeconfig = "", const std::string& pod_name = "") {
    std::vector<std::string> argv{gpubank::testing::binary_dir() + "/cmd/gpubank/gpubank", "serving", "autoscale"};
    if (!args.empty() && args[0] != "--help") {
      argv.insert(argv.end(), {"--policies", gpubank::testing::examples_dir() + "/policies", "--kubeconfig",
                               kubeconfig.empty() ? kubeconfig_ : kubeconfig});
    }
    argv.insert(argv.end(), args.begin(), args.end());
    return gpubank::testing::run_process(
        argv, {{"KUBECONFIG", std::nullopt},
               {"HOME", dir_.path().string()},
               {"POD_NAME", pod_name.empty() ? std::nullopt : std::optional<std::string>(pod_name)}});
  }
  int replicas() const {
    for (const auto& d : fake_.objects("deployments")) return d["spec"]["replicas"].get<int>();
    return -1;
  }

  gpubank::testing::ScratchDir dir_;
  FakeApiServer fake_{FakeApiServer::Options{}};
  std::string kubeconfig_;
  testing::VllmPageServer page_{200, 64, 0.3, 50, 50'000};
};

TEST_F(ServingAutoscaleCommand, SetsTheDeploymentsReplicasAndSaysWhy) {
  const auto help = gpubank({"--help"});
  EXPECT_EQ(help.status, 0);
  EXPECT_NE(help.out.find("--dry-run"), std::string::npos);
  EXPECT_NE(help.out.find("--kubeconfig"), std::string::npos);

  // --dry-run first: decided, not written.
  const auto dry = gpubank({"--policy", "customer-service-embeddings", "--scrape", page_.url(), "--dry-run", "-o", "json"});
  ASSERT_EQ(dry.status, 0) << dry.err;
  const Json planned = Json::parse(dry.out);
  EXPECT_EQ(planned["current"], 2);
  EXPECT_EQ(planned["recommendation"]["raw"], 7);
  EXPECT_EQ(planned["target"], 6);
  EXPECT_EQ(planned["written"], false);
  EXPECT_EQ(replicas(), 2);

  const auto run = gpubank({"--policy", "customer-service-embeddings", "--scrape", page_.url()});
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_NE(run.out.find("Deployment customer-service/embeddings: 2 -> 6, written"), std::string::npos) << run.out;
  EXPECT_EQ(replicas(), 6);
}

TEST_F(ServingAutoscaleCommand, WithListenItReadsThePoolFromWatchesAndStatesTheCapacity) {
  // One L40S node of the pool (8 devices), the two replicas on it, and a training pod of
  // another group beside them.
  fake_.put("nodes", {{"metadata",
                       {{"name", "l-0"},
                        {"labels", {{"platform.gpubank.dev/pool", "l40s-inference"}, {"nvidia.com/gpu.product", "NVIDIA-L40S"}}}}},
                      {"status", {{"allocatable", {{"nvidia.com/gpu", "8"}}}, {"capacity", {{"nvidia.com/gpu", "8"}}}}}});
  for (const char* name : {"embeddings-a", "embeddings-b"}) {
    fake_.put("pods", {{"metadata", {{"name", name}, {"namespace", "customer-service"}, {"labels", {{"app", "embeddings"}}}}},
                       {"spec", {{"nodeName", "l-0"},
                                 {"containers", {{{"name", "vllm"}, {"resources", {{"limits", {{"nvidia.com/gpu", "1"}}}}}}}}}},
                       {"status", {{"phase", "Running"}, {"conditions", {{{"type", "Ready"}, {"status", "True"}}}}}}});
  }
  const auto run = gpubank({"--policy", "customer-service-embeddings", "--scrape", page_.url(), "--listen", "127.0.0.1:0",
                            "--dry-run", "-o", "json"});
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_NE(run.err.find("serving /api/v1/services/customer-service-embeddings/capacity and /metrics on 127.0.0.1:"),
            std::string::npos)
      << run.err;
  const Json out = Json::parse(run.out);
  ASSERT_TRUE(out.contains("capacity")) << out.dump();
  EXPECT_EQ(out["capacity"]["replicas"]["ready"], 2);
  EXPECT_EQ(out["capacity"]["queueDepth"], 200);
  EXPECT_EQ(out["capacity"]["scaleOut"]["possible"], true);
  EXPECT_EQ(out["capacity"]["scaleOut"]["readySeconds"], 90);  // the embeddings' modelLoadTime: 6 devices free
  const auto bad = gpubank({"--policy", "customer-service-embeddings", "--scrape", page_.url(), "--listen", "nowhere"});
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("--listen: \"nowhere\" is not ADDR:PORT"), std::string::npos) << bad.err;
}

TEST_F(ServingAutoscaleCommand, WithLeaderElectionOnlyTheLeasesHolderWrites) {
  // Another replica holds the Lease (and renews it, by what this one sees: an hour).
  fake_.put("leases", {{"metadata", {{"name", "gpubank-serving-customer-service-embeddings"}, {"namespace", "default"}}},
                       {"spec", {{"holderIdentity", "autoscaler-1"},
                                 {"leaseDurationSeconds", 3600},
                                 {"acquireTime", "2026-12-07T10:00:00.000000Z"},
                                 {"renewTime", "2026-12-07T10:00:00.000000Z"}}}});
  const auto standby = gpubank({"--policy", "customer-service-embeddings", "--scrape", page_.url(), "--leader-elect",
                                "--every", "200ms", "--syncs", "3", "-o", "json"},
                               "", "autoscaler-0");
  ASSERT_EQ(standby.status, 0) << standby.err;
  // It decides as the leader would (its windows stay warm for a takeover) and writes nothing.
  EXPECT_EQ(std::count(standby.out.begin(), standby.out.end(), '\n'), 3);
  for (std::size_t start = 0; start < standby.out.size();) {
    const std::size_t end = standby.out.find('\n', start);
    const Json line = Json::parse(standby.out.substr(start, end - start));
    EXPECT_EQ(line["standby"], true) << line.dump();
    EXPECT_EQ(line["written"], false);
    EXPECT_EQ(line["target"], 6);
    start = end + 1;
  }
  EXPECT_EQ(replicas(), 2);
  EXPECT_TRUE(fake_.objects("events").empty());

  // The Lease released: this replica takes it before its first sync and scales.
  fake_.remove("leases", "default", "gpubank-serving-customer-service-embeddings");
  const auto leading = gpubank({"--policy", "customer-service-embeddings", "--scrape", page_.url(), "--leader-elect",
                                "--every", "100ms", "--syncs", "1", "-o", "json"},
                               "", "autoscaler-0");
  ASSERT_EQ(leading.status, 0) << leading.err;
  EXPECT_NE(leading.err.find("leading"), std::string::npos) << leading.err;
  EXPECT_NE(leading.out.find(R"("written":true)"), std::string::npos) << leading.out;
  EXPECT_EQ(replicas(), 6);
  // Stopped cleanly, it gave the Lease up for the next replica.
  const auto leases = fake_.objects("leases");
  ASSERT_EQ(leases.size(), 1u);
  EXPECT_EQ(leases[0]["spec"].value("holderIdentity", "?"), "");

  const auto once = gpubank({"--policy", "customer-service-embeddings", "--scrape", page_.url(), "--leader-elect"});
  EXPECT_EQ(once.status, 2);
  EXPECT_NE(once.err.find("--leader-elect needs --every"), std::string::npos) << once.err;
}

TEST_F(ServingAutoscaleCommand, RefusesBesideAnotherAutoscalerAndWhenTheClusterIsUnreachable) {
  fake_.put("horizontalpodautoscalers",
            {{"metadata", {{"name", "keda-hpa-customer-service-embeddings"}, {"namespace", "customer-service"}}},
             {"spec", {{"scaleTargetRef", {{"apiVersion", "apps/v1"}, {"kind", "Deployment"}, {"name", "embeddings"}}}}}});
  const auto beside = gpubank({"--policy", "customer-service-embeddings", "--scrape", page_.url(), "-o", "yaml"});
  EXPECT_EQ(beside.status, 1);
  EXPECT_NE(beside.err.find("Deployment customer-service/embeddings is scaled by HorizontalPodAutoscaler "
                            "customer-service/keda-hpa-customer-service-embeddings"),
            std::string::npos)
      << beside.err;
  EXPECT_NE(beside.out.find("written: false"), std::string::npos) << beside.out;
  EXPECT_EQ(replicas(), 2);

  // An API server that is not there: the workload cannot be read, nothing is decided.
  std::string gone = k8s::testing::put(dir_.path(), "gone", R"(apiVersion: v1
kind: Config
clusters:
- name: gone
  cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}
users:
- name: tester
  user: {token: t}
contexts:
- name: gone
  context: {cluster: gone, user: tester}
current-context: gone
)");
  const auto unreachable = gpubank({"--policy", "customer-service-embeddings", "--scrape", page_.url(), "--timeout", "1s"}, gone);
  EXPECT_EQ(unreachable.status, 1);
  EXPECT_NE(unreachable.err.find("GET Deployment customer-service/embeddings scale: "), std::string::npos) << unreachable.err;
}

TEST_F(ServingAutoscaleCommand, UsageErrorsExitTwoAndNameTheFlag) {
  const auto no_source = gpubank({"--policy", "customer-service-embeddings"});
  EXPECT_EQ(no_source.status, 2);
  EXPECT_NE(no_source.err.find("give --prometheus URL or --scrape URL"), std::string::npos) << no_source.err;
  const auto unknown = gpubank({"--policy", "nope", "--scrape", page_.url()});
  EXPECT_EQ(unknown.status, 2);
  EXPECT_NE(unknown.err.find("--policy nope: no such InferenceScalingPolicy"), std::string::npos) << unknown.err;
  const auto every = gpubank({"--policy", "customer-service-embeddings", "--scrape", page_.url(), "--every", "0s"});
  EXPECT_EQ(every.status, 2);
  EXPECT_NE(every.err.find("--every: must be positive"), std::string::npos) << every.err;
  EXPECT_EQ(replicas(), 2);
}

}  // namespace
}  // namespace gpubank::autoscale
