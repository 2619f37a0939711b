// A real Prometheus serving series written as OpenMetrics text: `promtool tsdb
// create-blocks-from openmetrics` turns the file into TSDB blocks, and Prometheus starts on
// them with nothing to scrape, so instant queries at any time the data covers answer exactly.
// Also a real Alertmanager, for the scanner's notices. Both are Debian packages that
// scripts/bootstrap.sh installs; `available()` is false without them (tests skip, naming them).
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <httplib.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "support/process.hpp"
#include "support/prometheus_server.hpp"

namespace gpubank::testing {

// Starts `binary args...` with stderr to `log`, as a ChildProcess (SIGTERM and reaped at the end).
inline void spawn_logged(ChildProcess& child, const std::filesystem::path& binary, const std::vector<std::string>& args,
                         const std::filesystem::path& log) {
  child.pid = ::fork();
  if (child.pid == 0) {
    FILE* f = std::freopen(log.c_str(), "w", stderr);
    (void)f;
    std::vector<char*> argv{const_cast<char*>(binary.c_str())};
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(binary.c_str(), argv.data());
    ::_exit(127);
  }
}

// Whether `path` on 127.0.0.1:port answered 200 within a minute.
inline bool wait_ready(int port, const char* path) {
  httplib::Client c("127.0.0.1", port);
  for (int i = 0; i < 600; ++i) {
    if (auto r = c.Get(path); r && r->status == 200) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

struct PrometheusOnBlocks {
  std::optional<std::filesystem::path> prometheus = find_on_path("prometheus");
  std::optional<std::filesystem::path> promtool = find_on_path("promtool");
  ChildProcess child;
  int port = 0;

  [[nodiscard]] bool available() const { return prometheus && promtool; }
  [[nodiscard]] std::string url() const { return "http://127.0.0.1:" + std::to_string(port); }

  // Blocks from `openmetrics` into dir/tsdb, then Prometheus on them; an error message, or
  // empty once it is ready.
  std::string start(const std::filesystem::path& dir, const std::filesystem::path& openmetrics) {
    const auto blocks = run_process({promtool->string(), "tsdb", "create-blocks-from", "openmetrics",
                                     openmetrics.string(), (dir / "tsdb").string()});
    if (blocks.status != 0) return "promtool: " + blocks.out + blocks.err;
    std::ofstream(dir / "prometheus.yml") << "global:\n  scrape_interval: 1m\n";
    port = free_port();
    spawn_logged(child, *prometheus,
                 {"--config.file=" + (dir / "prometheus.yml").string(), "--storage.tsdb.path=" + (dir / "tsdb").string(),
                  "--storage.tsdb.retention.time=30d", "--web.listen-address=127.0.0.1:" + std::to_string(port),
                  "--log.level=warn"},
                 dir / "prometheus.log");
    return wait_ready(port, "/-/ready") ? std::string() : "prometheus did not become ready (" + (dir / "prometheus.log").string() + ")";
  }
};

struct Alertmanager {
  std::optional<std::filesystem::path> binary = [] {
    auto b = find_on_path("prometheus-alertmanager");  // Debian's name
    return b ? b : find_on_path("alertmanager");
  }();
  ChildProcess child;
  int port = 0;

  [[nodiscard]] bool available() const { return binary.has_value(); }
  [[nodiscard]] std::string url() const { return "http://127.0.0.1:" + std::to_string(port); }

  // One receiver that sends nowhere: the tests read the alerts back from its API.
  std::string start(const std::filesystem::path& dir) {
    std::ofstream(dir / "alertmanager.yml") << "route:\n  receiver: none\nreceivers:\n- name: none\n";
    port = free_port();
    spawn_logged(child, *binary,
                 {"--config.file=" + (dir / "alertmanager.yml").string(), "--storage.path=" + (dir / "am").string(),
                  "--web.listen-address=127.0.0.1:" + std::to_string(port), "--cluster.listen-address=",
                  "--log.level=warn"},
                 dir / "alertmanager.log");
    return wait_ready(port, "/-/ready") ? std::string() : "alertmanager did not become ready";
  }
};

}  // namespace gpubank::testing
