// A real Prometheus (Debian's prometheus package, which scripts/bootstrap.sh installs)
// started by a test to scrape loopback targets, and PromQL instant queries against it.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <httplib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/process.hpp"

namespace gpubank::testing {

// A loopback port nobody listens on now.
inline int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  const int port = ntohs(addr.sin_port);
  ::close(fd);
  return port;
}

// A child process, stopped with SIGTERM and reaped when this goes away.
struct ChildProcess {
  pid_t pid = -1;
  ChildProcess() = default;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess() {
    if (pid > 0) {
      ::kill(pid, SIGTERM);
      int status = 0;
      ::waitpid(pid, &status, 0);
    }
  }
};

// The value of a one-series instant query, or nullopt while Prometheus has none.
inline std::optional<double> prometheus_query(httplib::Client& prometheus, const std::string& promql) {
  auto r = prometheus.Get("/api/v1/query?query=" + httplib::detail::encode_query_param(promql));
  if (!r || r->status != 200) return std::nullopt;
  const nlohmann::json j = nlohmann::json::parse(r->body, nullptr, false);
  if (!j.is_object() || j.value("status", "") != "success") return std::nullopt;
  const auto& result = j["data"]["result"];
  if (!result.is_array() || result.size() != 1) return std::nullopt;
  return std::stod(result[0]["value"][1].get<std::string>());
}

// Prometheus scraping `targets` ("127.0.0.1:<port>") every second as job `job`, its data
// and log under `dir`; `port` is its web port. `pid` is -1 when prometheus is missing.
inline void start_prometheus(ChildProcess& child, const std::filesystem::path& dir, const std::string& job,
                             const std::vector<std::string>& targets, int port) {
  const auto binary = find_on_path("prometheus");
  if (!binary) return;
  std::filesystem::create_directories(dir);
  const std::string config = (dir / "prometheus.yml").string();
  std::ofstream out(config);
  out << "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
         "scrape_configs:\n- job_name: "
      << job << "\n  honor_labels: true\n  metrics_path: /metrics\n  static_configs:\n  - targets: [";
  for (std::size_t i = 0; i < targets.size(); ++i) out << (i ? ", " : "") << "'" << targets[i] << "'";
  out << "]\n";
  out.close();
  const std::string config_arg = "--config.file=" + config;
  const std::string storage_arg = "--storage.tsdb.path=" + (dir / "data").string();
  const std::string listen_arg = "--web.listen-address=127.0.0.1:" + std::to_string(port);
  const std::string log = (dir / "prometheus.log").string();
  child.pid = ::fork();
  if (child.pid == 0) {
    FILE* f = std::freopen(log.c_str(), "w", stderr);
    (void)f;
    ::execl(binary->c_str(), binary->c_str(), config_arg.c_str(), storage_arg.c_str(), listen_arg.c_str(),
            "--log.level=warn", static_cast<char*>(nullptr));
    ::_exit(127);
  }
}

}  // namespace gpubank::testing
