// `gpubank metasync` as a user runs it: the binary, a kubeconfig pointing at a FAKE API
// server, a key file; usage errors name the flag and exit 2.
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <map>
#include <random>
#include <thread>

#include "attribution/pods.hpp"
#include "attribution/snapshot.hpp"
#include "k8s/fixture.hpp"
#include "support/fake_apiserver.hpp"
#include "support/kubeconfig.hpp"
#include "support/paths.hpp"
#include "support/process.hpp"

namespace gpubank::attribution {
namespace {

using gpubank::testing::FakeApiServer;
using gpubank::testing::ProcessResult;
using gpubank::testing::run_process;
using testing::Json;
using testing::pod_named;

const std::string kKey(64, 'k');

class MetasyncCommand : public ::testing::Test {
 protected:
  void SetUp() override {
    fake_ = std::make_unique<FakeApiServer>(FakeApiServer::Options{});
    kubeconfig_ = gpubank::testing::write_kubeconfig(*fake_, dir_.path(), "default");
    key_file_ = k8s::testing::put(dir_.path(), "key", kKey + "\n");
  }

  std::vector<std::string> command(std::vector<std::string> args) {
    args.insert(args.begin(), {gpubank::testing::binary_dir() + "/cmd/gpubank/gpubank", "metasync"});
    return args;
  }
  // `gpubank metasync ARGS` in the background, stdout and stderr appended to `log`; -1 when
  // it cannot be started.
  pid_t spawn(std::vector<std::string> args, const std::string& log) {
    args = command(std::move(args));
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
    pid_t pid = 0;
    const int failed = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    return failed == 0 ? pid : -1;
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
  const pid_t pid = spawn({"--kubeconfig", kubeconfig_, "--hmac-key-file", key_file_, "--out-dir", out.string(),
                           "--tombstone", "1m", "--listen", "127.0.0.1:0"},
                          log);
  ASSERT_GT(pid, 0);

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

// The crash test: metasync SIGKILLed at random moments while the pods keep changing (so it
// keeps rewriting its files), many times, with the seed printed. After every kill each
// <node>.json in the directory is whole and verifies with the key, no node's generation
// goes back, and at most the killed process's own temporary file is left: the next start
// removes it. A last run then writes exactly the API server's final state.
TEST_F(MetasyncCommand, KilledAtRandomMomentsLeavesOnlyWholeSignedFiles) {
  constexpr int kNodes = 3;
  constexpr int kPodsPerNode = 10;
  for (int i = 0; i < kNodes * kPodsPerNode; ++i) {
    fake_->put("pods", pod_named("uid-" + std::to_string(i), "pod-" + std::to_string(i), "gpu-node-" + std::to_string(i % kNodes)));
  }
  const auto out = dir_.path() / "out";
  std::filesystem::create_directories(out);
  const std::string log = (dir_.path() / "metasync.log").string();
  const std::vector<std::string> args{"--kubeconfig", kubeconfig_, "--hmac-key-file", key_file_, "--out-dir", out.string()};

  // The pods keep changing: a new cost centre for one pod after another.
  std::atomic<bool> mutating{true};
  std::atomic<int> changes{0};
  std::thread mutator([&] {
    for (int n = 0; mutating; ++n) {
      const int i = n % (kNodes * kPodsPerNode);
      Json pod = pod_named("uid-" + std::to_string(i), "pod-" + std::to_string(i), "gpu-node-" + std::to_string(i % kNodes));
      pod["metadata"]["labels"]["platform.gpubank.dev/cost-center"] = "cc-" + std::to_string(n);
      fake_->put("pods", std::move(pod));
      ++changes;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  });

  const unsigned seed = 30;
  std::mt19937 random(seed);
  std::uniform_int_distribution<int> delay_ms(0, 400);
  std::map<std::string, std::int64_t> generations;
  int torn_checks = 0;
  std::vector<pid_t> spawned;
  const auto files = [&] {
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(out)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  };
  for (int kill_no = 0; kill_no < 15; ++kill_no) {
    SCOPED_TRACE("seed " + std::to_string(seed) + ", kill " + std::to_string(kill_no));
    const pid_t pid = spawn(args, log);
    ASSERT_GT(pid, 0);
    spawned.push_back(pid);
    if (kill_no == 0) {
      // Every node's file once (a hang guard, not a speed test).
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
      while (files().size() < kNodes && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms(random)));
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFSIGNALED(status)) << gpubank::testing::read_file(log);

    int temporaries = 0;
    for (const std::string& name : files()) {
      if (name.ends_with(".json")) {
        auto read = read_snapshot_file((out / name).string(), kKey);
        ASSERT_TRUE(read.ok()) << name << ": " << read.error();
        ++torn_checks;
        std::int64_t& last = generations[name];
        EXPECT_GE(read->generation, last) << name;
        last = read->generation;
        continue;
      }
      // Only this test's processes' temporaries: each start removes those before it, but a
      // process killed in its first moments (the delay can be 0 ms) may not have got there
      // yet, so an earlier killed process's may still be here. The final clean start below
      // must leave none.
      ++temporaries;
      EXPECT_TRUE(std::any_of(spawned.begin(), spawned.end(), [&](pid_t p) {
        return name.find(".json.tmp-" + std::to_string(p) + "-") != std::string::npos;
      })) << name;
    }
    EXPECT_LE(temporaries, kill_no + 1);
  }
  mutating = false;
  mutator.join();
  EXPECT_EQ(generations.size(), static_cast<std::size_t>(kNodes));
  EXPECT_GE(torn_checks, 15 * kNodes - kNodes);

  // A last run writes the final state: every pod's last cost centre.
  std::map<std::string, std::string> final_cost_center;
  for (const Json& pod : fake_->objects("pods")) {
    final_cost_center[pod["metadata"]["uid"]] = pod["metadata"]["labels"].value("platform.gpubank.dev/cost-center", "");
  }
  const pid_t pid = spawn(args, log);
  ASSERT_GT(pid, 0);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  bool converged = false;
  while (!converged && std::chrono::steady_clock::now() < deadline) {
    converged = true;
    for (int node = 0; node < kNodes && converged; ++node) {
      auto read = read_snapshot_file((out / ("gpu-node-" + std::to_string(node) + ".json")).string(), kKey);
      converged = read.ok() && read->pods.size() == kPodsPerNode;
      for (std::size_t p = 0; converged && p < read->pods.size(); ++p) {
        converged = read->pods[p].cost_center == final_cost_center[read->pods[p].uid];
      }
    }
    // The killed process's temporary is gone too (removed when this one started).
    const auto names = files();
    converged = converged && std::all_of(names.begin(), names.end(), [](const std::string& n) { return n.ends_with(".json"); });
    if (!converged) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(converged) << gpubank::testing::read_file(log);
  for (const std::string& name : files()) EXPECT_TRUE(name.ends_with(".json")) << name << " left after a clean start";
  ::kill(pid, SIGTERM);
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << gpubank::testing::read_file(log);
  std::cerr << "metasync kill test: " << changes << " pod changes over 15 kills\n";
}

}  // namespace
}  // namespace gpubank::attribution
