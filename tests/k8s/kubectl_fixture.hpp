// The real kubectl against a fake API server: a generated kubeconfig (the fake's CA and a
// token), kubectl's cache and HOME in a scratch directory. CI without kubectl skips.
#pragma once

#include <gtest/gtest.h>

#include "fixture.hpp"
#include "support/fake_apiserver.hpp"
#include "support/process.hpp"

namespace gpubank::k8s::testing {

class KubectlFixture : public ::testing::Test {
 protected:
  // Starts the fake; false (the test is skipped) without kubectl on PATH.
  bool start(gpubank::testing::FakeApiServer::Options options) {
    kubectl_ = gpubank::testing::find_on_path("kubectl");
    if (!kubectl_) return false;
    fake_ = std::make_unique<gpubank::testing::FakeApiServer>(std::move(options));
    kubeconfig_ = write_kubeconfig("fake-token");
    return true;
  }

  std::string write_kubeconfig(const std::string& token) {
    return put(dir_.path(), "kubeconfig-" + token, R"(apiVersion: v1
kind: Config
clusters:
- name: fake
  cluster:
    server: )" + fake_->url() + R"(
    certificate-authority-data: )" + base64(fake_->ca_pem()) + R"(
users:
- name: tester
  user:
    token: )" + token + R"(
contexts:
- name: fake
  context: {cluster: fake, user: tester}
current-context: fake
)");
  }

  gpubank::testing::ProcessResult kubectl(std::vector<std::string> args, const std::string& kubeconfig = "") {
    args.insert(args.begin(), {kubectl_->string(), "--kubeconfig=" + (kubeconfig.empty() ? kubeconfig_ : kubeconfig),
                               "--cache-dir=" + (dir_.path() / "cache").string(), "--request-timeout=60s"});
    return gpubank::testing::run_process(args, {{"HOME", (dir_.path() / "home").string()}, {"KUBECONFIG", std::nullopt}});
  }

  ScratchDir dir_;
  std::optional<std::filesystem::path> kubectl_;
  std::unique_ptr<gpubank::testing::FakeApiServer> fake_;
  std::string kubeconfig_;
};

}  // namespace gpubank::k8s::testing
