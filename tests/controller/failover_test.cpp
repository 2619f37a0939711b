// Leader failover with two `gpubank controller --leader-elect` processes against a FAKE API
// server: one leads, the other waits; SIGKILL the leader and the other takes the Lease and
// carries on (a policy changed after the kill is applied). Lease timings are shortened
// with the command's flags; the test waits for the takeover (bounded) and asserts order,
// not speed.
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <chrono>
#include <fstream>
#include <sstream>

#include "cluster_fixture.hpp"
#include "k8s/fixture.hpp"
#include "k8s/fake_client.hpp"
#include "support/promtool.hpp"

extern char** environ;

namespace gpubank::controller {
namespace {

using nlohmann::json;
using k8s::testing::eventually;

struct Child {
  pid_t pid = -1;
  std::string log;
};

class Failover : public testing::ClusterFixture {
 protected:
  void SetUp() override {
    ClusterFixture::SetUp();
    put_policies({gpubank::testing::examples_dir() + "/policies"});
    put_object({{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", "gpubank-system"}}}});
    kubeconfig_ = testing::write_kubeconfig(*fake_, dir_.path());
  }
  void TearDown() override {
    for (Child& c : children_) {
      if (c.pid > 0) {
        kill(c.pid, SIGKILL);
        waitpid(c.pid, nullptr, 0);
      }
    }
  }

  Child& start(const std::string& identity) {
    Child c;
    c.log = (dir_.path() / (identity + ".log")).string();
    const std::vector<std::string> argv{gpubank::testing::binary_dir() + "/cmd/gpubank/gpubank", "controller",
                                        "--kubeconfig", kubeconfig_, "--leader-elect", "--identity", identity,
                                        "--lease-duration", "4", "--renew-deadline", "3", "--retry-period", "1",
                                        "--health-port", "-1"};
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, c.log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
    EXPECT_EQ(posix_spawn(&c.pid, args[0], &actions, nullptr, args.data(), environ), 0);
    posix_spawn_file_actions_destroy(&actions);
    children_.push_back(c);
    return children_.back();
  }

  std::string holder() {
    for (const json& lease : fake_->objects("leases")) {
      if (lease["metadata"]["name"] == "gpubank-controller") return lease["spec"].value("holderIdentity", "");
    }
    return "";
  }
  static std::string read(const std::string& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  std::int64_t quota_of(const std::string& queue) {
    for (const json& q : objects("kueue.x-k8s.io/v1beta2", "ClusterQueue")) {
      if (q["metadata"]["name"] == queue) {
        return q["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0].value("nominalQuota", std::int64_t{-1});
      }
    }
    return -1;
  }

  gpubank::testing::ScratchDir dir_;
  std::string kubeconfig_;
  std::vector<Child> children_;
};

TEST_F(Failover, TheStandbyTakesOverWhenTheLeaderIsKilled) {
  start("replica-a");
  start("replica-b");
  ASSERT_TRUE(eventually([&] { return !holder().empty(); }));
  ASSERT_TRUE(eventually([&] { return quota_of("research-h100-rdma-training") == 8; })) << read(children_[0].log);
  const std::string first = holder();
  Child& leader = children_[first == "replica-a" ? 0 : 1];
  Child& standby = children_[first == "replica-a" ? 1 : 0];
  EXPECT_EQ(read(standby.log).find("pass 1:"), std::string::npos) << "the standby acted:\n" << read(standby.log);

  kill(leader.pid, SIGKILL);
  waitpid(leader.pid, nullptr, 0);
  leader.pid = -1;
  const auto killed = std::chrono::steady_clock::now();
  // A change after the kill: only a new leader can apply it.
  json policy;
  for (const json& p : fake_->objects("gpuquotapolicies")) {
    if (p["metadata"]["name"] == "research-training-h100") policy = p;
  }
  policy["spec"]["guaranteed"] = 6;
  policy["spec"]["borrowLimit"] = 26;
  put_object(policy);

  ASSERT_TRUE(eventually([&] { return holder() != first && !holder().empty(); })) << read(standby.log);
  const auto took_over = std::chrono::steady_clock::now();
  EXPECT_NE(holder(), first);
  ASSERT_TRUE(eventually([&] { return quota_of("research-h100-rdma-training") == 6; })) << read(standby.log);
  EXPECT_NE(read(standby.log).find("leading"), std::string::npos);
  std::cerr << "takeover " << std::chrono::duration_cast<std::chrono::milliseconds>(took_over - killed).count()
            << " ms after SIGKILL with --lease-duration 4\n";
}

TEST_F(Failover, ACleanStopReleasesTheLeaseForAnImmediateTakeover) {
  start("replica-a");
  ASSERT_TRUE(eventually([&] { return holder() == "replica-a"; }));
  start("replica-b");
  kill(children_[0].pid, SIGTERM);
  int status = 0;
  waitpid(children_[0].pid, &status, 0);
  children_[0].pid = -1;
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << read(children_[0].log);
  ASSERT_TRUE(eventually([&] { return holder() == "replica-b"; })) << read(children_[1].log);
}

}  // namespace
}  // namespace gpubank::controller
