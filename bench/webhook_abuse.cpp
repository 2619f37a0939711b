// Abuse test of the admission webhook (issue 28: "the webhook must not be a way to stop the
// cluster"). The real api::WebhookServer runs in a child process, so that its peak memory
// (VmHWM) is its own, over HTTPS on 127.0.0.1 with its default limits. After a quiet
// phase (--quiet-seconds), for --seconds it is attacked by
//   slow loris   --loris TLS connections (200) that trickle header bytes, one byte per
//                connection every 100 ms, and reconnect when the server closes them
//   chunked      one connection streaming a chunked body of --chunked-mib (1024) in 64 KiB
//                chunks from one buffer (never held in memory), again whenever cut off
//   gzip bomb    --bomb-mib (1024) of zeros gzip'ed (about a thousandth of that), posted
//                with Content-Encoding: gzip over and over on a kept-alive connection
// while a normal client, connected before the attack, posts an AdmissionReview every
// 10 ms on its kept-alive connection, and a prober GETs /healthz on the plain-HTTP health
// listener every 100 ms. Reported: the normal client's and the prober's latency in both
// phases, what each attacker got, the server's counters and its peak RSS. Exit status 1
// when a normal request or a probe failed.
#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/webhook_server.hpp"
#include "self_signed_cert.hpp"

namespace {

namespace fs = std::filesystem;
namespace api = gpubank::api;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

struct Options {
  int seconds = 20;
  int quiet_seconds = 5;
  int loris = 200;
  std::int64_t chunked_mib = 1024;
  std::int64_t bomb_mib = 1024;
  std::string examples = GPUBANK_SOURCE_DIR "/examples/policies";
  std::string review = GPUBANK_SOURCE_DIR "/tests/api/data/create-quota-by-group-admin.json";
  std::string work_dir;
  std::string summary;
};

const char* const kUsage =
    "usage: webhook_abuse [--seconds=20] [--quiet-seconds=5] [--loris=200] [--chunked-mib=1024]\n"
    "                     [--bomb-mib=1024] [--work-dir=DIR] [--summary=FILE]\n";

bool parse_options(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::cout << kUsage;
      std::exit(0);
    }
    const auto eq = arg.find('=');
    if (eq == std::string::npos) return false;
    const std::string key = arg.substr(0, eq);
    const std::string value = arg.substr(eq + 1);
    try {
      if (key == "--seconds") o.seconds = std::stoi(value);
      else if (key == "--quiet-seconds") o.quiet_seconds = std::stoi(value);
      else if (key == "--loris") o.loris = std::stoi(value);
      else if (key == "--chunked-mib") o.chunked_mib = std::stoll(value);
      else if (key == "--bomb-mib") o.bomb_mib = std::stoll(value);
      else if (key == "--work-dir") o.work_dir = value;
      else if (key == "--summary") o.summary = value;
      else return false;
    } catch (const std::exception&) {
      return false;
    }
  }
  return o.seconds > 0 && o.quiet_seconds >= 0 && o.loris >= 0 && o.chunked_mib > 0 && o.bomb_mib > 0;
}

// ---- a byte-level TLS client (what a client library will not send) -----------------------

class RawTls {
 public:
  RawTls(SSL_CTX* ctx, int port, int receive_timeout_ms = 5000) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    timeval tv{receive_timeout_ms / 1000, (receive_timeout_ms % 1000) * 1000};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<std::uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) return;
    ssl_ = SSL_new(ctx);
    SSL_set_fd(ssl_, fd_);
    ok_ = SSL_connect(ssl_) == 1;
  }
  ~RawTls() {
    if (ssl_ != nullptr) SSL_free(ssl_);
    if (fd_ >= 0) ::close(fd_);
  }
  RawTls(const RawTls&) = delete;
  RawTls& operator=(const RawTls&) = delete;

  [[nodiscard]] bool ok() const { return ok_; }
  bool send(std::string_view bytes) {
    while (ok_ && !bytes.empty()) {
      const int n = SSL_write(ssl_, bytes.data(), static_cast<int>(bytes.size()));
      if (n <= 0) ok_ = false;
      else bytes.remove_prefix(static_cast<std::size_t>(n));
    }
    return ok_;
  }
  // The status of one response (0: none), reading its body to the end.
  int response_status() {
    if (ssl_ == nullptr) return 0;
    std::string in;
    char buf[16384];
    while (true) {
      const int n = SSL_read(ssl_, buf, sizeof buf);
      if (n <= 0) {
        ok_ = false;
        break;
      }
      in.append(buf, static_cast<std::size_t>(n));
      const auto end = in.find("\r\n\r\n");
      if (end == std::string::npos) continue;
      const auto cl = in.find("Content-Length: ");
      const std::size_t length = cl != std::string::npos && cl < end ? std::stoul(in.substr(cl + 16)) : 0;
      if (in.size() >= end + 4 + length) break;
    }
    return in.rfind("HTTP/1.1 ", 0) == 0 ? std::stoi(in.substr(9, 3)) : 0;
  }

 private:
  SSL* ssl_ = nullptr;
  int fd_ = -1;
  bool ok_ = false;
};

// ---- the server, in a child process ----------------------------------------------------

struct Child {
  pid_t pid = -1;
  int port = 0;
  int health_port = 0;
  int stats_fd = -1;  // the child writes its WebhookStats here when it stops
};

// Forks before any thread exists; the child serves until SIGTERM.
Child start_server(const std::string& dir, const Options& o) {
  int ports[2];
  int stats[2];
  if (pipe(ports) != 0 || pipe(stats) != 0) return {};
  const pid_t pid = fork();
  if (pid == 0) {
    ::close(ports[0]);
    ::close(stats[0]);
    sigset_t term;
    sigemptyset(&term);
    sigaddset(&term, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &term, nullptr);
    spdlog::set_level(spdlog::level::warn);
    api::WebhookOptions options;  // the defaults, but for the addresses
    options.address = "127.0.0.1";
    options.port = 0;
    options.health_address = "127.0.0.1";
    options.health_port = 0;
    options.tls_cert = dir + "/tls.crt";
    options.tls_key = dir + "/tls.key";
    options.audit_log = dir + "/audit.jsonl";
    options.guardrails = o.examples + "/00-guardrails.yaml";
    for (const auto& e : fs::directory_iterator(o.examples)) {
      if (e.path().extension() == ".yaml" && e.path().filename() != "00-guardrails.yaml") {
        options.policies.push_back(e.path().string());
      }
    }
    std::sort(options.policies.begin(), options.policies.end());
    auto server = api::WebhookServer::create(options);
    if (!server) {
      std::cerr << "webhook_abuse (server): " << server.error() << '\n';
      _exit(1);
    }
    auto port = (*server)->bind();
    if (!port) {
      std::cerr << "webhook_abuse (server): " << port.error() << '\n';
      _exit(1);
    }
    const int bound[2] = {*port, (*server)->health_port()};
    if (write(ports[1], bound, sizeof bound) != sizeof bound) _exit(1);
    api::WebhookServer* srv = server->get();
    std::thread stopper([srv, term] {
      int sig = 0;
      sigwait(&term, &sig);
      srv->stop();
    });
    srv->serve();
    stopper.join();
    const api::WebhookStats s = srv->stats();
    const std::string line = nlohmann::json{{"accepted", s.accepted},   {"refused", s.refused},
                                            {"dropped", s.dropped},     {"timed_out", s.timed_out},
                                            {"too_large", s.too_large}}
                                 .dump();
    if (write(stats[1], line.data(), line.size()) < 0) _exit(1);
    _exit(0);
  }
  ::close(ports[1]);
  ::close(stats[1]);
  Child c;
  c.pid = pid;
  c.stats_fd = stats[0];
  int bound[2] = {0, 0};
  if (pid > 0 && read(ports[0], bound, sizeof bound) == sizeof bound) {
    c.port = bound[0];
    c.health_port = bound[1];
  }
  ::close(ports[0]);
  return c;
}

std::int64_t status_kib(pid_t pid, const std::string& field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(field + ":", 0) == 0) return std::stoll(line.substr(field.size() + 1));
  }
  return -1;
}

// ---- measurements ----------------------------------------------------------------------

struct Latencies {
  std::vector<double> ms;
  int failures = 0;
};

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto i = static_cast<std::size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

std::string row(const std::string& what, const Latencies& l) {
  std::ostringstream s;
  s.setf(std::ios::fixed);
  s.precision(2);
  s << "| " << what << " | " << l.ms.size() << " | " << l.failures << " | " << percentile(l.ms, 0.5) << " | "
    << percentile(l.ms, 0.9) << " | " << percentile(l.ms, 0.99) << " | "
    << (l.ms.empty() ? 0.0 : *std::max_element(l.ms.begin(), l.ms.end())) << " |\n";
  return s.str();
}

std::string gzip_zeros(std::int64_t mib) {
  z_stream z{};
  if (deflateInit2(&z, 9, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY) != Z_OK) return {};
  const std::string zeros(std::size_t{1} << 20, '\0');
  std::string out;
  char buf[65536];
  for (std::int64_t i = 0; i < mib; ++i) {
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(zeros.data()));
    z.avail_in = static_cast<uInt>(zeros.size());
    const int flush = i + 1 == mib ? Z_FINISH : Z_NO_FLUSH;
    do {
      z.next_out = reinterpret_cast<Bytef*>(buf);
      z.avail_out = sizeof buf;
      deflate(&z, flush);
      out.append(buf, sizeof buf - z.avail_out);
    } while (z.avail_out == 0);
  }
  deflateEnd(&z);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!parse_options(argc, argv, o)) {
    std::cerr << kUsage;
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);  // writes to connections the server closed fail instead
  const std::string base = o.work_dir.empty() ? (std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") : o.work_dir;
  std::string dir_template = base + "/webhook-abuse-XXXXXX";
  if (mkdtemp(dir_template.data()) == nullptr) {
    std::cerr << "webhook_abuse: cannot create a directory in " << base << '\n';
    return 1;
  }
  const std::string dir = dir_template;
  if (const std::string err = gpubank::bench::write_self_signed_cert(dir + "/tls.crt", dir + "/tls.key"); !err.empty()) {
    std::cerr << "webhook_abuse: " << err << '\n';
    return 1;
  }
  std::ifstream review_file(o.review);
  const std::string review((std::istreambuf_iterator<char>(review_file)), std::istreambuf_iterator<char>());
  if (review.empty()) {
    std::cerr << "webhook_abuse: cannot read " << o.review << '\n';
    return 1;
  }

  Child server = start_server(dir, o);
  if (server.pid <= 0 || server.port <= 0) {
    std::cerr << "webhook_abuse: the server did not start\n";
    return 1;
  }
  const std::int64_t idle_rss_kib = status_kib(server.pid, "VmRSS");
  const std::string bomb = gzip_zeros(o.bomb_mib);

  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  std::atomic<bool> attacking{false};
  std::atomic<bool> done{false};

  // The normal client and the prober: one sample list per phase.
  Latencies normal[2];
  Latencies probes[2];
  std::thread normal_client([&] {
    httplib::SSLClient client("127.0.0.1", server.port);
    client.enable_server_certificate_verification(false);
    client.set_keep_alive(true);
    client.set_tcp_nodelay(true);  // as Go clients such as the API server have it
    client.set_read_timeout(15, 0);
    auto next = Clock::now();
    while (!done) {
      const auto t0 = Clock::now();
      auto r = client.Post("/validate", review, "application/json");
      const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
      Latencies& l = normal[attacking ? 1 : 0];
      const bool ok = r && r->status == 200 &&
                      nlohmann::json::parse(r->body, nullptr, false).value("/response/allowed"_json_pointer, false);
      if (ok) l.ms.push_back(ms);
      else ++l.failures;
      next += 10ms;
      std::this_thread::sleep_until(next);
    }
  });
  std::thread prober([&] {
    auto next = Clock::now();
    while (!done) {
      httplib::Client health("127.0.0.1", server.health_port);  // a new connection per probe, as the kubelet's
      health.set_tcp_nodelay(true);
      health.set_read_timeout(5, 0);
      const auto t0 = Clock::now();
      auto r = health.Get("/healthz");
      const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
      Latencies& l = probes[attacking ? 1 : 0];
      if (r && r->status == 200) l.ms.push_back(ms);
      else ++l.failures;
      next += 100ms;
      std::this_thread::sleep_until(next);
    }
  });
  std::this_thread::sleep_for(std::chrono::seconds(o.quiet_seconds));
  attacking = true;
  const auto attack_start = Clock::now();

  std::atomic<std::int64_t> loris_closed{0};
  std::atomic<int> loris_open{0};
  std::thread loris([&] {
    const std::string header = "POST /validate HTTP/1.1\r\nHost: localhost\r\nX-Slow: " + std::string(4096, 'x');
    std::vector<std::unique_ptr<RawTls>> conns;
    std::vector<std::size_t> sent;
    for (int i = 0; i < o.loris && !done; ++i) {
      conns.push_back(std::make_unique<RawTls>(ctx, server.port));
      sent.push_back(0);
    }
    loris_open = static_cast<int>(conns.size());
    while (!done) {
      for (std::size_t i = 0; i < conns.size() && !done; ++i) {
        if (!conns[i]->send(std::string_view(header).substr(sent[i]++ % header.size(), 1))) {
          ++loris_closed;
          conns[i] = std::make_unique<RawTls>(ctx, server.port);
          sent[i] = 0;
        }
      }
      std::this_thread::sleep_for(100ms);
    }
  });

  struct ChunkedAttempt {
    std::int64_t bytes;
    int status;
  };
  std::vector<ChunkedAttempt> chunked_attempts;
  std::thread chunked([&] {
    const std::string chunk = "10000\r\n" + std::string(0x10000, 'a') + "\r\n";
    const std::int64_t total = o.chunked_mib << 20;
    while (!done) {
      RawTls c(ctx, server.port);
      std::int64_t bytes = 0;
      if (c.send("POST /validate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                 "Transfer-Encoding: chunked\r\n\r\n")) {
        while (!done && bytes < total && c.send(chunk)) bytes += 0x10000;
      }
      if (bytes >= total) c.send("0\r\n\r\n");
      chunked_attempts.push_back({bytes, c.response_status()});
      std::this_thread::sleep_for(100ms);
    }
  });

  std::vector<int> bomb_statuses;
  std::thread bomber([&] {
    std::unique_ptr<RawTls> c;
    const std::string head = "POST /validate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                             "Content-Encoding: gzip\r\nContent-Length: " +
                             std::to_string(bomb.size()) + "\r\n\r\n";
    while (!done) {
      if (!c || !c->ok()) c = std::make_unique<RawTls>(ctx, server.port);
      const int status = c->send(head) && c->send(bomb) ? c->response_status() : 0;
      bomb_statuses.push_back(status);
      std::this_thread::sleep_for(100ms);
    }
  });

  std::this_thread::sleep_until(attack_start + std::chrono::seconds(o.seconds));
  const std::int64_t peak_rss_kib = status_kib(server.pid, "VmHWM");
  const std::int64_t end_rss_kib = status_kib(server.pid, "VmRSS");
  done = true;
  for (std::thread* t : {&normal_client, &prober, &loris, &chunked, &bomber}) t->join();
  kill(server.pid, SIGTERM);
  std::string stats_text;
  char buf[512];
  for (ssize_t n; (n = read(server.stats_fd, buf, sizeof buf)) > 0;) stats_text.append(buf, static_cast<std::size_t>(n));
  int wait_status = 0;
  waitpid(server.pid, &wait_status, 0);
  SSL_CTX_free(ctx);
  const nlohmann::json stats = nlohmann::json::parse(stats_text, nullptr, false);

  std::int64_t chunked_max = 0;
  int chunked_413 = 0;
  for (const auto& a : chunked_attempts) {
    chunked_max = std::max(chunked_max, a.bytes);
    if (a.status == 413) ++chunked_413;
  }
  const auto bombs_415 = std::count(bomb_statuses.begin(), bomb_statuses.end(), 415);

  std::ostringstream s;
  s.setf(std::ios::fixed);
  s.precision(2);
  s << "Server: api::WebhookServer in a child process with its default limits (" << api::WebhookOptions{}.threads
    << " event-loop threads, " << api::WebhookOptions{}.review_threads << " review threads, "
    << api::WebhookOptions{}.max_connections << " connections, " << api::WebhookOptions{}.request_timeout
    << " s request deadline), HTTPS on 127.0.0.1 (RSA 2048 self-signed), health listener on 127.0.0.1.\n";
  s << "Load: " << o.quiet_seconds << " s quiet, then " << o.seconds << " s of attack: " << o.loris
    << " slow-loris connections (a header byte each per 100 ms, reconnecting), a " << o.chunked_mib
    << " MiB chunked body (streamed, again when cut off), a gzip bomb (" << o.bomb_mib << " MiB of zeros in "
    << bomb.size() << " bytes, posted again every 100 ms). Throughout: one kept-alive client posting an "
    << "AdmissionReview every 10 ms, one prober GETting /healthz on the health listener every 100 ms "
    << "(a new connection each).\n\n";
  s << "| Client | Answers | Failures | p50 (ms) | p90 (ms) | p99 (ms) | Max (ms) |\n|---|---:|---:|---:|---:|---:|---:|\n";
  s << row("POST /validate, quiet", normal[0]) << row("POST /validate, under attack", normal[1]);
  s << row("GET /healthz (health listener), quiet", probes[0])
    << row("GET /healthz (health listener), under attack", probes[1]);
  s << "\n| Attacker | What it got |\n|---|---|\n";
  s << "| slow loris | " << loris_open.load() << " connections opened, " << loris_closed.load()
    << " closed by the server at the request deadline (and reopened) |\n";
  s << "| chunked body | " << chunked_attempts.size() << " attempts, at most " << (chunked_max >> 20)
    << " MiB sent before the server stopped reading (limit " << (api::kMaxReadBytes >> 20) << " MiB; the rest "
    << "sat in socket buffers), " << chunked_413 << " read the 413 before the reset |\n";
  s << "| gzip bomb | " << bomb_statuses.size() << " posts, " << bombs_415 << " answered 415 |\n";
  s << "\nServer counters: " << (stats.is_discarded() ? std::string("(not reported)") : stats.dump()) << ".\n";
  s << "Server memory: VmRSS " << idle_rss_kib / 1024 << " MiB after start, VmHWM (peak) " << peak_rss_kib / 1024
    << " MiB, VmRSS " << end_rss_kib / 1024 << " MiB at the end of the attack.\n\n";
  const double p99 = percentile(normal[1].ms, 0.99);
  const bool p99_met = !normal[1].ms.empty() && normal[1].failures == 0 && p99 < 10.0;
  const bool rss_met = peak_rss_kib > 0 && peak_rss_kib < 64 * 1024;
  s << "**Target: POST /validate p99 < 10 ms under attack, no failures: " << (p99_met ? "met" : "NOT met") << "** (p99 "
    << p99 << " ms, " << normal[1].failures << " failures). **Target: server peak RSS < 64 MiB: "
    << (rss_met ? "met" : "NOT met") << "** (" << peak_rss_kib / 1024 << " MiB).\n";
  std::cout << s.str();
  if (!o.summary.empty()) std::ofstream(o.summary) << s.str();
  fs::remove_all(dir);
  const bool failed = normal[0].failures + normal[1].failures + probes[0].failures + probes[1].failures > 0 ||
                      !WIFEXITED(wait_status) || WEXITSTATUS(wait_status) != 0;
  return failed ? 1 : 0;
}
