// `gpubank metasync` as a user runs it: the binary, a kubeconfig pointing at a FAKE API
// server, a key file; usage errors name the flag and exit 2.
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <chrono>
#include <thread>

#include "attribution/pods.hpp"
#include "attribution/snapshot.hpp"
#include "k8s/fixture.hpp"
#include "support/fake_apiserver.hpp"
#include "support/paths.hpp"
#include "support/process.hpp"

namespace gpubank::attribution {
namespace {

using gpubank::testing::FakeApiServer;
using gpubank::testing::ProcessResult;
using gpubank::testing::run_process;
using testing::pod_named;

const std::string kKey(64, 'k');

class MetasyncCommand : public ::testing::Test {
 protected:
  void SetUp() override {
    fake_ = std::make_unique<FakeApiServer>(FakeApiServer::Options{});
    kubeconfig_ = k8s::testing::put(dir_.path(), "kubeconfig", R"(apiVersion: v1
kind: Config
clusters:
- name: fake
  cluster:
    server: )" + fake_->url() + R"(
    certificate-authority-data: )" + k8s::testing::base64(fake_->ca_pem()) + R"(
users:
- name: tester
  user: {token: fake-token}
contexts:
- name: fake
  context: {cluster: fake, user: tester}
current-context: fake
)");
    key_file_ = k8s::testing::put(dir_.path(), "key", kKey + "\n");
  }

  std::vector<std::string> command(std::vector<std::string> args) {
    args.insert(args.begin(), {gpubank::testing::binary_dir() + "/cmd/gpubank/gpubank", "metasync"});
    return args;
  }
  ProcessResult gpubank(std::vector<std::string> args) {
    return run_process(command(std::move(args)), {{"KUBECONFIG", std::nullopt}, {"HOME", dir_.path().string()}});
  }

  gpubank::testing::ScratchDir dir_;
  std::unique_ptr<FakeApiServer> fake_;
  std::string kubeconfig_;
  std::string key_file_;
};

TEST_F(MetasyncCommand, HelpAndUsageErrorsNameTheFlag) {
  const ProcessResult help = gpubank({"--help"});
  EXPECT_EQ(help.status, 0);
  EXPECT_NE(help.out.find("--hmac-key-file"), std::string::npos) << help.out;
  EXPECT_NE(help.out.find("--tombstone"), std::string::npos);

  const std::string short_key = k8s::testing::put(dir_.path(), "short", "0123456789\n");
  const std::string empty_key = k8s::testing::put(dir_.path(), "empty", "");
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"--kubeconfig", kubeconfig_, "--out-dir", dir_.path().string()}, "--hmac-key-file is required"},
      {{"--kubeconfig", kubeconfig_, "--hmac-key-file", short_key, "--out-dir", dir_.path().string()},
       "gpubank metasync: --hmac-key-file: hmac key file: " + short_key + " holds 10 bytes; at least 32 are needed"},
      {{"--kubeconfig", kubeconfig_, "--hmac-key-file", empty_key, "--out-dir", dir_.path().string()},
       "gpubank metasync: --hmac-key-file: hmac key file: " + empty_key + " is empty"},
      {{"--kubeconfig", kubeconfig_, "--hmac-key-file", key_file_},
       "gpubank metasync: nothing to serve: give --listen ADDR:PORT, --out-dir DIR or both"},
      {{"--kubeconfig", kubeconfig_, "--hmac-key-file", key_file_, "--listen", "localhost"},
       "gpubank metasync: --listen: \"localhost\" is not ADDR:PORT"},
      {{"--kubeconfig", kubeconfig_, "--hmac-key-file", key_file_, "--out-dir", "/nonexistent/dir"},
       "gpubank metasync: --out-dir: /nonexistent/dir is not a directory"},
      {{"--kubeconfig", kubeconfig_, "--hmac-key-file", key_file_, "--out-dir", dir_.path().string(), "--tombstone", "5"},
       "gpubank metasync: --tombstone: "},
      {{"--kubeconfig", kubeconfig_, "--hmac-key-file", key_file_, "--out-dir", dir_.path().string(), "--tombstone", "-1m"},
       "gpubank metasync: --tombstone: must not be negative"},
  };
  for (const Case& c : cases) {
    const ProcessResult r = gpubank(c.args);
    EXPECT_EQ(r.status, 2) << c.message << "\n" << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << r.err;
  }
  const ProcessResult no_config = gpubank({"--kubeconfig", "/nonexistent/kc", "--hmac-key-file", key_file_, "--listen", "127.0.0.1:0"});
  EXPECT_EQ(no_config.status, 1) << no_config.err;
}

TEST_F(MetasyncCommand, WritesSignedFilesAndStopsOnSigterm) {
  fake_->put("pods", pod_named("uid-master", "llama-ft-master-0", "gpu-node-1"));
  const auto out = dir_.path() / "out";
  std::filesystem::create_directories(out);
  const std::string log = (dir_.path() / "metasync.log").string();
  std::vector<std::string> args = command({"--kubeconfig", kubeconfig_, "--hmac-key-file", key_file_, "--out-dir",
                                           out.string(), "--tombstone", "1m", "--listen", "127.0.0.1:0"});
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  pid_t pid = 0;
  ASSERT_EQ(posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ), 0);
  posix_spawn_file_actions_destroy(&actions);

  // The file appears once the pods are listed (a hang guard, not a speed test).
  const std::string file = (out / "gpu-node-1.json").string();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  Expected<NodeSnapshot> read = Unexpected{"not written"};
  while (std::chrono::steady_clock::now() < deadline) {
    read = read_snapshot_file(file, kKey);  // the newline of the key file is not part of the key
    if (read.ok()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE(read.ok()) << read.error() << "\n" << gpubank::testing::read_file(log);
  ASSERT_EQ(read->pods.size(), 1u);
  EXPECT_EQ(read->pods[0].uid, "uid-master");
  EXPECT_EQ(read->pods[0].business_group, "search");
  EXPECT_FALSE(read_snapshot_file(file, kKey + "\n").ok());

  kill(pid, SIGTERM);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status)) << gpubank::testing::read_file(log);
  EXPECT_EQ(WEXITSTATUS(status), 0) << gpubank::testing::read_file(log);
}

}  // namespace
}  // namespace gpubank::attribution
