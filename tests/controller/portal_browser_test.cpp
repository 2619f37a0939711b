// The controller's portal in headless Chromium (Debian chromium + chromium-driver): a
// `gpubank controller --api-port 0 --preview-inventory ...` process against a FAKE API
// server holding the example policies and one finished research job, driven by
// tests/portal/cluster_portal_test.py as a group admin and a platform administrator (an
// impact preview of the recorded work, a change given back at once, one approved, both
// server-side applied).
// The fake's object is checked after: the values the portal showed are the cluster's.
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>

#include "auth/gate.hpp"
#include "core/timestamp.hpp"
#include "portal_fixture.hpp"
#include "k8s/fake_client.hpp"
#include "support/process.hpp"
#include "support/promtool.hpp"  // ScratchDir

extern char** environ;

namespace gpubank::controller {
namespace {

using nlohmann::json;
using k8s::testing::eventually;

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// An RFC 3339 time `ago` before the wall clock, in whole seconds.
std::string before_now(std::chrono::minutes ago) {
  return format_rfc3339(std::chrono::time_point_cast<std::chrono::seconds>(std::chrono::system_clock::now() - ago));
}

class ControllerPortalBrowser : public testing::ClusterFixture {
 protected:
  // Objects are created three hours ago, so the work below is inside the preview's window.
  [[nodiscard]] testing::FakeApiServer::Options fake_options() const override {
    testing::FakeApiServer::Options options;
    options.now = before_now(std::chrono::minutes(180));
    return options;
  }
  void TearDown() override {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      waitpid(pid_, nullptr, 0);
    }
  }
  pid_t pid_ = -1;
};

TEST_F(ControllerPortalBrowser, AGroupAdminsChangeReachesTheClusterThroughThePortal) {
  for (const char* tool : {"chromium", "chromedriver"}) {
    ASSERT_TRUE(gpubank::testing::find_on_path(tool)) << tool << " is not installed (scripts/bootstrap.sh installs it)";
  }
  put_policies({gpubank::testing::examples_dir() + "/policies"});
  // A research job of one 8-GPU pod that ran from 2 h 50 min to 1 h ago: the recorded work
  // the editor's impact preview replays.
  put_object(testing::research_workload("done-a", before_now(std::chrono::minutes(170)), before_now(std::chrono::minutes(60))));
  gpubank::testing::ScratchDir dir;
  const std::string kubeconfig = testing::write_kubeconfig(*fake_, dir.path());
  const std::string store = (dir.path() / "gpubank.db").string();
  std::string author, admin;
  {
    auto gate = auth::Gate::open(store);
    ASSERT_TRUE(gate.ok()) << gate.error();
    const std::int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                                 std::chrono::system_clock::now().time_since_epoch()).count();
    auto a = (*gate)->issue(auth::GrantRequest{"rae", auth::Role::GroupAdmin, "research", "test", std::nullopt}, now);
    auto p = (*gate)->issue(auth::GrantRequest{"pat", auth::Role::PlatformAdmin, "", "test", std::nullopt}, now);
    ASSERT_TRUE(a && p);
    author = a->token;
    admin = p->token;
  }
  const std::string log = (dir.path() / "controller.log").string();
  const std::vector<std::string> argv{gpubank::testing::binary_dir() + "/cmd/gpubank/gpubank", "controller",
                                      "--kubeconfig", kubeconfig, "--identity", "replica-a", "--health-port", "-1",
                                      "--store", store, "--api-port", "0", "--api-address", "127.0.0.1",
                                      "--preview-inventory", gpubank::testing::examples_dir() + "/inventory/example.yaml"};
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  ASSERT_EQ(posix_spawn(&pid_, args[0], &actions, nullptr, args.data(), environ), 0);
  posix_spawn_file_actions_destroy(&actions);

  // The port it chose, from its log; then its first pass (the informers synced).
  std::string port;
  const std::regex serving(R"(serving the portal and API at http://127\.0\.0\.1:([0-9]+)/)");
  ASSERT_TRUE(eventually([&] {
    std::smatch m;
    const std::string text = slurp(log);
    if (!std::regex_search(text, m, serving)) return false;
    port = m[1];
    return text.find("pass 1:") != std::string::npos;
  })) << slurp(log);

  std::vector<std::string> browser{"/usr/bin/python3", gpubank::testing::source_dir() + "/tests/portal/cluster_portal_test.py",
                                   "--base-url", "http://127.0.0.1:" + port, "--group-admin-token", author, "--admin-token", admin};
  // scripts/screenshots.sh: the controller's pages as docs/screenshots/cluster-*.png.
  if (const char* shots = std::getenv("GPUBANK_SCREENSHOTS"); shots != nullptr && *shots != '\0') {
    browser.insert(browser.end(), {"--screenshots", shots});
  }
  const auto result = gpubank::testing::run_process(browser);
  EXPECT_EQ(result.status, 0) << result.out << result.err << "\ncontroller log:\n" << slurp(log);
  std::cerr << result.out;

  // The cluster holds the approved value, applied by the portal's field manager.
  json policy;
  for (const json& p : objects("platform.gpubank.dev/v1alpha1", "GPUQuotaPolicy")) {
    if (p["metadata"]["name"] == "research-training-h100") policy = p;
  }
  ASSERT_FALSE(policy.is_null());
  EXPECT_EQ(policy["spec"].value("maxCapacity", 0), 28);
  bool portal = false;
  for (const json& m : policy["metadata"]["managedFields"]) portal |= m["manager"] == "gpubank-portal";
  EXPECT_TRUE(portal) << policy["metadata"]["managedFields"].dump();
}

}  // namespace
}  // namespace gpubank::controller
