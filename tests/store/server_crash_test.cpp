// Durability against the PostgreSQL SERVER crashing: a private server with fsync=on is
// SIGKILLed (the postmaster and every child, as a power cut would stop them) at seeded
// random moments while a thread appends, then restarted on the same data directory (crash
// recovery replays the WAL). Every append the store acknowledged must be there afterwards,
// exactly as acknowledged, with both hash chains intact.
//
// When to kill is decided by counting acknowledged appends, never by time.
#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <mutex>
#include <random>
#include <sstream>
#include <thread>

#include "store/store.hpp"
#include "support/ledger_builder.hpp"
#include "support/postgres_server.hpp"

namespace gpubank::store {
namespace {

using testing::PostgresServer;

// The postmaster's pid, from the first line of its lock file.
pid_t postmaster_pid(const std::string& data) {
  std::ifstream in(data + "/postmaster.pid");
  long pid = 0;
  in >> pid;
  return static_cast<pid_t>(pid);
}

std::vector<pid_t> children_of(pid_t parent) {
  std::vector<pid_t> out;
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return out;
  while (const dirent* d = ::readdir(proc)) {
    const pid_t pid = static_cast<pid_t>(std::atol(d->d_name));
    if (pid <= 0) continue;
    std::ifstream stat("/proc/" + std::string(d->d_name) + "/stat");
    std::string line;
    std::getline(stat, line);
    const auto close = line.rfind(')');  // the command name may hold spaces
    if (close == std::string::npos) continue;
    char state = 0;
    long ppid = 0;
    std::istringstream rest(line.substr(close + 1));
    rest >> state >> ppid;
    if (ppid == parent) out.push_back(pid);
  }
  ::closedir(proc);
  return out;
}

// Whether a process has exited: gone, or a zombie (which holds no memory, shared or not).
bool exited(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return true;
  const auto close = line.rfind(')');
  return close == std::string::npos || line.find(" Z ", close) == close + 1;
}

// SIGKILLs the postmaster and all its children at once: stopped first, so it forks no new
// child between listing them and the kill. Returns when every one of them has exited: a
// backend still attached to the old shared memory makes the next postmaster refuse to start.
// (Waiting on the parent link is not enough: the children are reparented as it dies.)
void kill_server(pid_t postmaster) {
  ::kill(postmaster, SIGSTOP);
  const std::vector<pid_t> children = children_of(postmaster);
  for (pid_t child : children) ::kill(child, SIGKILL);
  ::kill(postmaster, SIGKILL);
  // The first postmaster is our child: reap it, or its pid would look alive to the next one.
  ::waitpid(postmaster, nullptr, 0);
  for (int i = 0; i < 1000; ++i) {
    bool all = true;
    for (pid_t child : children) all = all && exited(child);
    if (all) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

// Starts postgres on the same data directory as its owner, as PostgresServer does.
pid_t restart_server(const PostgresServer& server) {
  const std::string data = server.dir() + "/data";
  struct stat st {};
  if (::stat(data.c_str(), &st) != 0) return -1;
  const std::vector<std::string> argv{PostgresServer::bin_dir() + "/postgres", "-D", data, "-k", server.dir(), "-p",
                                      std::to_string(PostgresServer::kPort), "-c", "listen_addresses=", "-c",
                                      "shared_buffers=16MB", "-c", "max_connections=60", "-c", "logging_collector=off",
                                      "-c", "fsync=on"};
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const std::string log = server.dir() + "/restart.log";
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
      ::dup2(fd, STDOUT_FILENO);
      ::dup2(fd, STDERR_FILENO);
    }
    if (::getuid() != st.st_uid && (::setgroups(0, nullptr) != 0 || ::setgid(st.st_gid) != 0 || ::setuid(st.st_uid) != 0)) {
      ::_exit(126);
    }
    ::prctl(PR_SET_PDEATHSIG, SIGQUIT);
    if (::getppid() != parent) ::_exit(125);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  return pid;
}

pid_t restart_server(const PostgresServer& server);

// Connects once the server is up (crash recovery first), up to 60 s. A restarted server
// (`restarted` > 0) that exits before it accepts connections is started again: a start can
// fail while the killed server's last backends are still being torn down.
std::unique_ptr<Store> open_when_up(const std::string& url, pid_t* restarted = nullptr,
                                    const PostgresServer* server = nullptr) {
  for (int i = 0; i < 3000; ++i) {
    auto store = Store::open(url);
    if (store) return std::move(*store);
    if (restarted != nullptr && server != nullptr && *restarted > 0 && ::waitpid(*restarted, nullptr, WNOHANG) == *restarted) {
      *restarted = restart_server(*server);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return nullptr;
}

TEST(PostgresStore, EveryAcknowledgedAppendSurvivesKillingTheServer) {
  auto server = PostgresServer::start(PostgresServer::Options{.fsync = true});
  ASSERT_TRUE(server) << server.error();
  auto url = (*server)->fresh_url();
  ASSERT_TRUE(url) << url.error();
  const std::string data = (*server)->dir() + "/data";

  std::mt19937 rng(28);
  std::mutex mu;
  std::vector<AppendResult> acknowledged;
  std::int64_t time_ms = 0;  // only the appending thread touches it
  pid_t restarted = -1;
  constexpr int kKills = 4;
  for (int round_index = 0; round_index < kKills; ++round_index) {
    auto store = open_when_up(*url, &restarted, server->get());
    ASSERT_TRUE(store) << "the server did not come back";
    std::atomic<int> acks{0};
    std::thread appender([&] {
      for (int i = 0;; ++i) {
        testing::LedgerBuilder l;
        for (int k = 0; k <= i % 3; ++k) l.quota(++time_ms, "g" + std::to_string(round_index), i * 10 + k);
        for (auto& e : l.entries) e.seq = 0;
        auto r = store->append(l.entries, {{testing::audit_entry(time_ms, "Decision/" + std::to_string(round_index) + "/" +
                                                                               std::to_string(i))}});
        if (!r) return;  // the server is gone (or the commit's outcome unknown: not acknowledged)
        std::lock_guard lock(mu);
        acknowledged.push_back(std::move(*r));
        ++acks;
      }
    });
    const int target = std::uniform_int_distribution<int>(3, 30)(rng);
    for (int waited = 0; acks < target && waited < 3000; ++waited) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    EXPECT_GE(acks.load(), target) << "the appender made no progress";
    kill_server(round_index == 0 ? postmaster_pid(data) : restarted);
    appender.join();
    store.reset();
    restarted = restart_server(**server);
    ASSERT_GT(restarted, 0);
  }

  auto store = open_when_up(*url, &restarted, server->get());
  ASSERT_TRUE(store);
  auto ledger = store->ledger(0, 1'000'000);
  auto audit = store->audit(0, 1'000'000);
  ASSERT_TRUE(ledger && audit);
  ASSERT_GE(acknowledged.size(), static_cast<std::size_t>(kKills * 3));
  for (const AppendResult& a : acknowledged) {
    for (const auto& e : a.ledger) {
      ASSERT_LE(e.seq, static_cast<std::int64_t>(ledger->size())) << "acknowledged ledger seq " << e.seq << " lost";
      EXPECT_EQ((*ledger)[static_cast<std::size_t>(e.seq - 1)], e);
    }
    for (const auto& e : a.audit) {
      ASSERT_LE(e.seq, static_cast<std::int64_t>(audit->size())) << "acknowledged audit seq " << e.seq << " lost";
      EXPECT_EQ((*audit)[static_cast<std::size_t>(e.seq - 1)], e);
    }
  }
  auto report = verify_store(*store);
  ASSERT_TRUE(report) << report.error();
  EXPECT_TRUE(report->ok()) << report->audit.problem << report->ledger.problem;
  EXPECT_EQ(report->ledger.entries, static_cast<std::int64_t>(ledger->size()));

  // Stop the restarted server ourselves (PostgresServer only knows the first one).
  store.reset();
  ::kill(restarted, SIGINT);
  ::waitpid(restarted, nullptr, 0);
}

}  // namespace
}  // namespace gpubank::store
