// A kubeconfig for `gpubank` processes under test: the FAKE API server's URL and CA, its
// token, and a namespace for the context.
#pragma once

#include <filesystem>
#include <string>

#include "k8s/fixture.hpp"
#include "support/fake_apiserver.hpp"

namespace gpubank::testing {

// A kubeconfig for `gpubank` processes: the fake's URL and CA, its token, and `ns` as the
// context's namespace.
inline std::string write_kubeconfig(const FakeApiServer& fake, const std::filesystem::path& dir,
                                    const std::string& ns = "gpubank-system") {
  return k8s::testing::put(dir, "kubeconfig", R"(apiVersion: v1
kind: Config
clusters:
- name: fake
  cluster:
    server: )" + fake.url() + R"(
    certificate-authority-data: )" + k8s::testing::base64(fake.ca_pem()) + R"(
users:
- name: tester
  user: {token: fake-token}
contexts:
- name: fake
  context: {cluster: fake, user: tester, namespace: )" + ns + R"(}
current-context: fake
)");
}

}  // namespace gpubank::testing
