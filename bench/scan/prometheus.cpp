// scan_bench: the real Prometheus, started as a child process and asked over HTTP: the
// TCP_NODELAY client beside the product's, and the process itself.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>

#include "scan/scan_bench.hpp"

namespace gpubank::bench::scan {

namespace {

// A loopback port nobody listens on now (Prometheus needs a number on its command line).
int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  int port = 0;
  if (fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  if (fd >= 0) ::close(fd);
  if (port == 0) throw std::runtime_error("no free loopback port");
  return port;
}

}  // namespace

NoDelayPrometheus::NoDelayPrometheus(int port)
    : url_("http://127.0.0.1:" + std::to_string(port)), client_("127.0.0.1", port) {
  client_.set_tcp_nodelay(true);
  client_.set_keep_alive(true);
  client_.set_read_timeout(120, 0);
}

Expected<std::vector<serving::PromSample>> NoDelayPrometheus::query(const std::string& promql, std::int64_t time_ms) {
  char when[32];
  std::snprintf(when, sizeof when, "%lld.%03lld", static_cast<long long>(time_ms / 1000),
                static_cast<long long>(time_ms % 1000));
  auto res = client_.Post("/api/v1/query", httplib::Params{{"query", promql}, {"time", when}});
  if (!res) return Unexpected{url_ + ": " + httplib::to_string(res.error())};
  last_bytes_ = res->body.size();
  if (res->status != 200) return Unexpected{url_ + ": HTTP " + std::to_string(res->status) + ": " + res->body.substr(0, 2000)};
  return serving::read_prometheus_query(res->body);
}

double Prometheus::start(const fs::path& tsdb, const std::string& config) {
  write_config(config);
  const auto t0 = Clock::now();
  for (int attempt = 0;; ++attempt) {
    port_ = free_port();
    child_.start({binary_.string(), "--config.file=" + (dir_ / "prometheus.yml").string(),
                  "--storage.tsdb.path=" + tsdb.string(), "--storage.tsdb.retention.time=30d",
                  "--web.listen-address=127.0.0.1:" + std::to_string(port_), "--log.level=warn"},
                 dir_ / "prometheus.log");
    if (wait_ready()) return seconds_since(t0);
    const std::string log = tail_of(dir_ / "prometheus.log");
    child_.stop();
    // Another process may have taken the port between free_port() and the bind.
    if (attempt < 2 && log.find("address already in use") != std::string::npos) continue;
    throw std::runtime_error("Prometheus did not become ready; its log ends:\n" + log);
  }
}

void Prometheus::reload(const std::string& config) {
  write_config(config);
  child_.signal(SIGHUP);
}

void Prometheus::write_config(const std::string& config) const {
  std::ofstream out(dir_ / "prometheus.yml");
  out << config;
  if (!out) throw std::runtime_error("cannot write " + (dir_ / "prometheus.yml").string());
}

bool Prometheus::wait_ready() {
  httplib::Client client("127.0.0.1", port_);
  client.set_connection_timeout(1, 0);
  const auto deadline = Clock::now() + std::chrono::minutes(5);
  while (Clock::now() < deadline) {
    check_interrupted();
    if (!child_.running()) return false;
    if (auto r = client.Get("/-/ready"); r && r->status == 200) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

std::string program_version(const fs::path& binary, const fs::path& dir) {
  const fs::path out = dir / "version.txt";
  Child child;
  child.start({binary.string(), "--version"}, out);
  child.wait();
  const std::string text = tail_of(out, 4000);
  fs::remove(out);
  return text.substr(0, text.find('\n'));
}

}  // namespace gpubank::bench::scan
