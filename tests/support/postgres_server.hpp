// A private PostgreSQL server for tests and benchmarks: the Debian `postgresql` package's
// binaries, a data directory under /tmp, listening only on a Unix socket in that directory.
//
// initdb runs once per machine into a template (/tmp/gpubank-pg<major>-template, created
// under a file lock and renamed into place, so concurrent test processes share it); each
// server copies the template and starts `postgres` directly as a child process with
// PR_SET_PDEATHSIG, so it dies with the process that started it even when that process is
// killed. initdb and postgres refuse to run as root: as root they run as the `postgres`
// user (in a directory it owns), as anyone else as that user.
//
// Missing binaries are an error that says what to install; callers must fail, not skip.
#pragma once

#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <pqxx/pqxx>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/expected.hpp"

namespace gpubank::testing {

class PostgresServer {
 public:
  static constexpr const char* kDefaultBin = "/usr/lib/postgresql/15/bin";
  static constexpr int kPort = 5432;  // only names the socket file inside our own directory

  struct Options {
    bool fsync = false;  // tests: off (faster, and a killed client is not a crashed server)
  };

  // The directory of initdb and postgres: $GPUBANK_PG_BIN or kDefaultBin.
  static std::string bin_dir() {
    const char* env = std::getenv("GPUBANK_PG_BIN");
    return env != nullptr && *env != '\0' ? env : kDefaultBin;
  }

  static Expected<std::unique_ptr<PostgresServer>> start() { return start(Options{}); }
  static Expected<std::unique_ptr<PostgresServer>> start(const Options& options) {
    const std::string bin = bin_dir();
    for (const char* tool : {"initdb", "postgres"}) {
      if (::access((bin + "/" + tool).c_str(), X_OK) != 0) {
        return Unexpected{"PostgreSQL server binaries not found (" + bin + "/" + tool +
                          " is missing): install the Debian package `postgresql` (scripts/bootstrap.sh installs it) "
                          "or point GPUBANK_PG_BIN at the directory of initdb and postgres"};
      }
    }
    auto creds = Credentials::resolve();
    if (!creds) return Unexpected{creds.error()};
    auto tmpl = ensure_template(bin, *creds);
    if (!tmpl) return Unexpected{tmpl.error()};

    char pattern[] = "/tmp/gpubank-pg-XXXXXX";
    if (::mkdtemp(pattern) == nullptr) return Unexpected{std::string("mkdtemp: ") + std::strerror(errno)};
    auto server = std::unique_ptr<PostgresServer>(new PostgresServer(pattern));
    if (creds->switch_user && ::chown(pattern, creds->uid, creds->gid) != 0) {
      return Unexpected{std::string("chown ") + pattern + ": " + std::strerror(errno)};
    }
    const std::string data = server->dir_ + "/data";
    // cp -a keeps the owner (postgres) and the 0700 mode the server insists on.
    if (int rc = run({"/bin/cp", "-a", *tmpl, data}, nullptr, server->dir_ + "/cp.log"); rc != 0) {
      return Unexpected{"copying the PostgreSQL template failed (exit " + std::to_string(rc) + "): " +
                        read_tail(server->dir_ + "/cp.log")};
    }
    const std::string log = server->dir_ + "/postgres.log";
    std::vector<std::string> argv{bin + "/postgres",
                                  "-D", data,
                                  "-k", server->dir_,
                                  "-p", std::to_string(kPort),
                                  "-c", "listen_addresses=",
                                  "-c", "shared_buffers=16MB",
                                  "-c", "max_connections=60",
                                  "-c", "logging_collector=off",
                                  "-c", std::string("fsync=") + (options.fsync ? "on" : "off")};
    pid_t pid = -1;
    if (int rc = run(argv, creds->switch_user ? &*creds : nullptr, log, &pid); rc != 0) {
      return Unexpected{"cannot start postgres: " + read_tail(log)};
    }
    server->pid_ = pid;
    // Ready when it accepts a connection.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    std::string last_error;
    while (true) {
      int status = 0;
      if (::waitpid(pid, &status, WNOHANG) == pid) {
        server->pid_ = -1;
        return Unexpected{"postgres exited while starting: " + read_tail(log)};
      }
      try {
        pqxx::connection c(server->url("postgres"));
        break;
      } catch (const std::exception& e) {
        last_error = e.what();
      }
      if (std::chrono::steady_clock::now() > deadline) {
        return Unexpected{"postgres did not accept connections within 60 s: " + last_error + "\n" + read_tail(log)};
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return server;
  }

  ~PostgresServer() {
    if (pid_ > 0) {
      ::kill(pid_, SIGINT);  // fast shutdown
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
      int status = 0;
      while (::waitpid(pid_, &status, WNOHANG) == 0) {
        if (std::chrono::steady_clock::now() > deadline) {
          ::kill(pid_, SIGKILL);
          ::waitpid(pid_, &status, 0);
          break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    }
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  PostgresServer(const PostgresServer&) = delete;
  PostgresServer& operator=(const PostgresServer&) = delete;

  // A libpq URL for a database of this server (user gpubank, trust authentication).
  [[nodiscard]] std::string url(const std::string& database) const {
    return "postgresql://gpubank@/" + database + "?host=" + dir_ + "&port=" + std::to_string(kPort);
  }

  // A URL that reaches an empty namespace of its own: a fresh schema of the `postgres`
  // database, selected by search_path in the URL's options (CREATE SCHEMA costs a
  // fraction of CREATE DATABASE, which copies a template). Everything the store creates
  // lands in that schema.
  Expected<std::string> fresh_url() {
    static std::atomic<int> counter{0};
    const std::string name = "gpubank_" + std::to_string(::getpid()) + "_" + std::to_string(++counter);
    try {
      pqxx::connection c(url("postgres"));
      pqxx::nontransaction n(c);
      n.exec("CREATE SCHEMA " + name);
    } catch (const std::exception& e) {
      return Unexpected{std::string("CREATE SCHEMA failed: ") + e.what()};
    }
    return url("postgres") + "&options=-c%20search_path%3D" + name;
  }

  [[nodiscard]] const std::string& dir() const { return dir_; }

 private:
  struct Credentials {
    bool switch_user = false;
    uid_t uid = 0;
    gid_t gid = 0;
    static Expected<Credentials> resolve() {
      Credentials c;
      if (::geteuid() != 0) return c;
      const passwd* pw = ::getpwnam("postgres");
      if (pw == nullptr) {
        return Unexpected{"running as root, and there is no `postgres` user to run the server as: install the Debian "
                          "package `postgresql` (scripts/bootstrap.sh installs it)"};
      }
      c.switch_user = true;
      c.uid = pw->pw_uid;
      c.gid = pw->pw_gid;
      return c;
    }
  };

  explicit PostgresServer(std::string dir) : dir_(std::move(dir)) {}

  static std::string read_tail(const std::string& path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    std::string text = ss.str();
    return text.size() > 2000 ? text.substr(text.size() - 2000) : text;
  }

  // Runs argv (as `as` when given) with stdout and stderr in log_path. With pid_out the child
  // is left running (and dies with this thread: PR_SET_PDEATHSIG) and 0 is returned;
  // otherwise its exit status.
  static int run(const std::vector<std::string>& argv, const Credentials* as, const std::string& log_path,
                 pid_t* pid_out = nullptr) {
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    const int log = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (log < 0) return 127;
    if (as != nullptr && ::fchown(log, as->uid, as->gid) != 0) {
      ::close(log);
      return 127;
    }
    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    if (pid < 0) {
      ::close(log);
      return 127;
    }
    if (pid == 0) {
      // Only async-signal-safe calls from here on.
      ::dup2(log, STDOUT_FILENO);
      ::dup2(log, STDERR_FILENO);
      const int null = ::open("/dev/null", O_RDONLY);
      if (null >= 0) ::dup2(null, STDIN_FILENO);
      if (as != nullptr) {
        if (::setgroups(0, nullptr) != 0 || ::setgid(as->gid) != 0 || ::setuid(as->uid) != 0) ::_exit(126);
      }
      if (pid_out != nullptr) {
        // After setuid, which clears it. SIGQUIT: postgres' immediate shutdown.
        ::prctl(PR_SET_PDEATHSIG, SIGQUIT);
        if (::getppid() != parent) ::_exit(125);
      }
      ::execv(args[0], args.data());
      ::_exit(127);
    }
    ::close(log);
    if (pid_out != nullptr) {
      *pid_out = pid;
      return 0;
    }
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }

  // The initdb'd template data directory, created once per machine and PostgreSQL binary
  // directory.
  static Expected<std::string> ensure_template(const std::string& bin, const Credentials& creds) {
    std::string key = std::to_string(std::hash<std::string>{}(bin) % 100000);
    const std::string base = "/tmp/gpubank-pg-template-" + std::to_string(::geteuid()) + "-" + key;
    const std::string done = base + "/data/PG_VERSION";
    if (::access(done.c_str(), R_OK) == 0) return base + "/data";
    const std::string lock_path = base + ".lock";
    const int lock = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (lock < 0) return Unexpected{"cannot open " + lock_path + ": " + std::strerror(errno)};
    ::flock(lock, LOCK_EX);
    struct Unlock {
      int fd;
      ~Unlock() {
        ::flock(fd, LOCK_UN);
        ::close(fd);
      }
    } unlock{lock};
    if (::access(done.c_str(), R_OK) == 0) return base + "/data";  // another process made it
    std::error_code ec;
    std::filesystem::remove_all(base, ec);
    const std::string work = base + ".tmp-" + std::to_string(::getpid());
    std::filesystem::remove_all(work, ec);
    if (::mkdir(work.c_str(), 0700) != 0) return Unexpected{"mkdir " + work + ": " + std::strerror(errno)};
    if (creds.switch_user && ::chown(work.c_str(), creds.uid, creds.gid) != 0) {
      return Unexpected{"chown " + work + ": " + std::strerror(errno)};
    }
    const std::string log = work + "/initdb.log";
    const int rc = run({bin + "/initdb", "-D", work + "/data", "-U", "gpubank", "-A", "trust", "-E", "UTF8",
                        "--locale=C", "--no-sync", "--no-instructions"},
                       creds.switch_user ? &creds : nullptr, log);
    if (rc != 0) {
      const std::string tail = read_tail(log);
      std::filesystem::remove_all(work, ec);
      return Unexpected{"initdb failed (exit " + std::to_string(rc) + "): " + tail};
    }
    if (::rename(work.c_str(), base.c_str()) != 0) return Unexpected{"rename " + work + ": " + std::strerror(errno)};
    return base + "/data";
  }

  std::string dir_;
  pid_t pid_ = -1;
};

// One server per process, started on first use and stopped at exit.
inline Expected<PostgresServer*> shared_postgres_server() {
  static std::mutex mu;
  static std::unique_ptr<PostgresServer> server;
  static std::string error;
  std::lock_guard lock(mu);
  if (server) return server.get();
  if (!error.empty()) return Unexpected{error};
  auto started = PostgresServer::start();
  if (!started) {
    error = started.error();
    return Unexpected{error};
  }
  server = std::move(*started);
  return server.get();
}

}  // namespace gpubank::testing
