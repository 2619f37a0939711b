// The node exporter (`gpubank exporter`'s code: attribution::Exporter) on the node issue 30
// sizes: 8 GPUs x 7 MIG instances (1g.10gb) x 30 dcgm-exporter fields = 1,680 device
// samples, every instance held by its own pod, and what it costs next to the alternatives,
// all in one run:
//
//   passthrough  a server that fetches dcgm-exporter's page every interval and serves the
//                text unchanged (no parse, no join): the floor for serving that page, in its
//                best configuration (the exporter's: gzip made once per refresh, no copy
//                per scrape, TCP_NODELAY, 16 server threads, long keep-alive)
//   off          the exporter with attribution off (no snapshot, no PodResources): the page
//                parsed, every device sample labelled mapping_status="unallocated", written
//   on           the exporter as deployed: PodResources from the FAKE kubelet (a real gRPC
//                server on a unix socket), the signed snapshot file that `gpubank metasync`
//                (in this process, watching the FAKE API server's 1,000 Pods) writes
//   naive        the per-scrape design (dcgm-exporter with pod labels): on every GET
//                /metrics, fetch the upstream page, call the kubelet's List, GET each held
//                pod from the API server (keep-alive, no client-side rate limit: the best
//                configuration of that design), join, write
//
// passthrough, off and on each run in a CHILD PROCESS (this program re-executed with
// --child), so their CPU (/proc/<pid>/stat) and resident set (/proc/<pid>/status) are the
// exporter's alone; the fakes, metasync and the scrapers live here. naive runs here (its
// memory is not a figure). Every mode refreshes its inputs every --interval-ms (1,000; the
// exporter's default is 5 s, so this is the costlier setting).
//
// Measured per mode, over --repetitions (3) interleaved repetitions, medians:
//   - scrape latency: --scrapers (10) concurrent keep-alive clients, each GETting /metrics
//     --scrapes (300) times back to back; p50 and p99 over all scrapes of a repetition;
//     every answer is checked (status 200, every device sample present, and for `on` every
//     one mapped to its pod's group);
//   - CPU per scrape: the child's CPU over the scraping window minus its idle refresh CPU
//     over the same time, divided by the scrapes; CPU per refresh: the child's CPU over an
//     idle window (no scrapes) divided by the refreshes in it;
//   - API-server requests per scrape: the fake's request count over the window / scrapes.
// Then the soak: the `on` child scraped once a second by one client for --soak-seconds
// (60 here; `--soak-seconds 3600` for the hour the issue names), its resident set sampled
// every 10 s: the peak (VmHWM), and growth as the median of the later half of the samples
// after the first quarter against the median of the earlier half (a sample that falls in a
// refresh sees its transient working set; medians ignore it, the peak shows it).
//
// Also in process, the refresh's parts on the same page (median of --refresh-iterations):
// parse only, parse + write (what "off" adds to a pass-through), parse + join + write ("on").
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <latch>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>
#include <zlib.h>

#include "attribution/enrich.hpp"
#include "attribution/exporter.hpp"
#include "attribution/labels.hpp"
#include "attribution/metasync.hpp"
#include "attribution/pods.hpp"
#include "attribution/snapshot.hpp"
#include "attribution/sources.hpp"
#include "core/process_memory.hpp"
#include "k8s/transport.hpp"
#include "metrics/text_parser.hpp"
#include "node/pod_resources.hpp"
#include "node/pod_resources_cache.hpp"
#include "support/fake_apiserver.hpp"
#include "support/fake_kubelet.hpp"

namespace {

using namespace gpubank;
using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr const char* kNode = "bench-node";
constexpr const char* kKey = "exporter-bench-hmac-key-0123456789abcdef";
constexpr int kGpus = 8;
constexpr int kMigPerGpu = 7;
constexpr int kFieldCount = 30;
constexpr int kOtherPods = 944;  // on other nodes: a 1,000-pod cluster for metasync

// dcgm-exporter's default field set (etc/default-counters.csv and the DCP fields), 30 names.
constexpr const char* kFields[kFieldCount] = {
    "DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_MEM_CLOCK", "DCGM_FI_DEV_MEMORY_TEMP", "DCGM_FI_DEV_GPU_TEMP",
    "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "DCGM_FI_DEV_PCIE_REPLAY_COUNTER",
    "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_MEM_COPY_UTIL", "DCGM_FI_DEV_ENC_UTIL", "DCGM_FI_DEV_DEC_UTIL",
    "DCGM_FI_DEV_XID_ERRORS", "DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_RESERVED",
    "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "DCGM_FI_DEV_VGPU_LICENSE_STATUS", "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
    "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "DCGM_FI_DEV_ROW_REMAP_FAILURE", "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
    "DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_PROF_SM_OCCUPANCY", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "DCGM_FI_PROF_DRAM_ACTIVE",
    "DCGM_FI_PROF_PIPE_FP64_ACTIVE", "DCGM_FI_PROF_PIPE_FP32_ACTIVE", "DCGM_FI_PROF_PIPE_FP16_ACTIVE",
    "DCGM_FI_PROF_PCIE_TX_BYTES", "DCGM_FI_PROF_PCIE_RX_BYTES"};

bool is_counter(std::string_view field) {
  return field == "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION" || field == "DCGM_FI_DEV_PCIE_REPLAY_COUNTER";
}

std::string hex_uuid(const char* prefix, int a, int b) {
  char text[64];
  std::snprintf(text, sizeof text, "%s-%08x-%04x-4%03x-8%03x-%012x", prefix, 0x5d6c58a2 + a * 7919, a & 0xffff, b & 0xfff,
                (a * 31 + b) & 0xfff, 0x0b1c2d3e + a * 101 + b);
  return text;
}
std::string gpu_uuid(int gpu) { return hex_uuid("GPU", gpu, 0); }
std::string mig_uuid(int gpu, int instance) { return hex_uuid("MIG", gpu + 100, instance + 1); }
unsigned gpu_instance_id(int instance) { return 7 + static_cast<unsigned>(instance); }  // H100 1g.10gb GIs 7-13
int pod_index(int gpu, int instance) { return gpu * kMigPerGpu + instance; }
std::string pod_name(int i) { return "infer-" + std::to_string(i); }
std::string pod_namespace(int i) { return "tenant-" + std::to_string(i % 8); }
std::string pod_group(int i) { return "group-" + std::to_string(i % 8); }

// What NVML reports for the node (the exporter takes the MIG inventory from NVML).
std::vector<node::GpuDevice> inventory() {
  std::vector<node::GpuDevice> out;
  for (int g = 0; g < kGpus; ++g) {
    node::GpuDevice d;
    d.index = static_cast<unsigned>(g);
    d.uuid = gpu_uuid(g);
    d.name = "NVIDIA H100 80GB HBM3";
    char bus[32];
    std::snprintf(bus, sizeof bus, "00000000:%02X:00.0", 0x18 + g * 0x11);
    d.pci_bus_id = bus;
    d.minor = static_cast<unsigned>(g);
    d.memory_total = 85'520'809'984;
    d.compute_major = 9;
    d.architecture = 9;
    d.numa_node = g / 4;
    d.mig_enabled = true;
    for (int m = 0; m < kMigPerGpu; ++m) {
      d.mig.push_back(node::MigDevice{mig_uuid(g, m), gpu_instance_id(m), 0, "1g.10gb", 10'737'418'240});
    }
    out.push_back(std::move(d));
  }
  return out;
}

// dcgm-exporter's page for the node: labels in its order (gpu, UUID, pci_bus_id, device,
// modelName, GPU_I_PROFILE, GPU_I_ID, Hostname, DCGM_FI_DRIVER_VERSION).
std::string upstream_page() {
  const auto devices = inventory();
  std::string text;
  for (int f = 0; f < kFieldCount; ++f) {
    const std::string field = kFields[f];
    text += "# HELP " + field + " " + field + " as DCGM reports it.\n";
    text += "# TYPE " + field + (is_counter(field) ? " counter\n" : " gauge\n");
    for (const auto& d : devices) {
      for (const auto& m : d.mig) {
        text += field + "{gpu=\"" + std::to_string(d.index) + "\",UUID=\"" + d.uuid + "\",pci_bus_id=\"" + d.pci_bus_id +
                "\",device=\"nvidia" + std::to_string(d.index) + "\",modelName=\"" + d.name +
                "\",GPU_I_PROFILE=\"1g.10gb\",GPU_I_ID=\"" + std::to_string(m.gpu_instance) + "\",Hostname=\"" + kNode +
                "\",DCGM_FI_DRIVER_VERSION=\"580.159.04\"} " + std::to_string((f * 37 + d.index * 11 + m.gpu_instance) % 97) +
                "\n";
      }
    }
  }
  return text;
}
constexpr int kDeviceSamples = kGpus * kMigPerGpu * kFieldCount;

// The kubelet's List: one pod per MIG instance, container "server".
std::string kubelet_list_json() {
  Json pods = Json::array();
  for (int g = 0; g < kGpus; ++g) {
    for (int m = 0; m < kMigPerGpu; ++m) {
      const int i = pod_index(g, m);
      pods.push_back({{"name", pod_name(i)},
                      {"namespace", pod_namespace(i)},
                      {"containers",
                       {{{"name", "server"},
                         {"devices", {{{"resourceName", "nvidia.com/mig-1g.10gb"}, {"deviceIds", {mig_uuid(g, m)}}}}}}}}});
    }
  }
  return Json{{"podResources", pods}}.dump();
}

// The API server's pods: the node's 56 and 944 elsewhere, as real Pod JSON.
void populate(testing::FakeApiServer& fake) {
  for (int i = 0; i < kGpus * kMigPerGpu; ++i) {
    Json pod = attribution::testing::pod_named("uid-" + std::to_string(i), pod_name(i), kNode, pod_namespace(i));
    pod["metadata"]["labels"]["platform.gpubank.dev/business-group"] = pod_group(i);
    fake.put("pods", std::move(pod));
  }
  for (int i = 0; i < kOtherPods; ++i) {
    fake.put("pods", attribution::testing::pod_named("uid-other-" + std::to_string(i), "other-" + std::to_string(i),
                                                     "node-" + std::to_string(i % 120), "team-" + std::to_string(i % 30)));
  }
}

k8s::ClientConfig config_for(const testing::FakeApiServer& fake) {
  k8s::ClientConfig config;
  auto url = k8s::parse_server_url(fake.url(), true);
  if (!url) throw std::runtime_error("fake API server URL: " + url.error());
  config.server = *url;
  config.ca_pem = fake.ca_pem();
  config.token = std::make_shared<k8s::StaticTokenSource>("fake-token");
  config.namespace_name = "default";
  return config;
}

std::string gunzip(const std::string& bytes) {
  z_stream z{};
  if (inflateInit2(&z, 15 + 16) != Z_OK) return {};
  std::string out;
  char buffer[1 << 16];
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  z.avail_in = static_cast<uInt>(bytes.size());
  int rc = Z_OK;
  while (rc == Z_OK) {
    z.next_out = reinterpret_cast<Bytef*>(buffer);
    z.avail_out = sizeof buffer;
    rc = inflate(&z, Z_NO_FLUSH);
    out.append(buffer, sizeof buffer - z.avail_out);
  }
  inflateEnd(&z);
  return rc == Z_STREAM_END ? out : std::string{};
}

// ---------------------------------------------------------------------------------------
// The children.

// The exporter's upstream, with the inventory NVML would report (no GPU here).
class InventoryUpstream : public attribution::UpstreamSource {
 public:
  explicit InventoryUpstream(std::unique_ptr<attribution::UpstreamSource> inner) : inner_(std::move(inner)) {}
  Expected<metrics::Exposition> read() override { return inner_->read(); }
  std::vector<node::GpuDevice> inventory() const override { return ::inventory(); }

 private:
  std::unique_ptr<attribution::UpstreamSource> inner_;
};

struct ChildArgs {
  std::string mode, upstream, socket, snapshot;
  int interval_ms = 1000;
};

// Serves until its stdin closes (the parent ends it so), printing "port N" first.
int run_child(const ChildArgs& a) {
  const std::chrono::milliseconds interval(a.interval_ms);
  if (a.mode == "passthrough") {
    // Its best configuration: the text and its gzip made once per refresh, as the exporter
    // does, served without a copy.
    httplib::Server server;
    struct Page {
      std::string text, gzip;
    };
    std::atomic<std::shared_ptr<const Page>> page{std::make_shared<const Page>()};
    return_freed_memory_promptly();
    server.set_tcp_nodelay(true);
    server.new_task_queue = [] { return new httplib::ThreadPool(16); };
    server.set_keep_alive_max_count(10'000);
    server.Get("/metrics", [&](const httplib::Request& req, httplib::Response& res) {
      std::shared_ptr<const Page> p = page.load();
      const bool gzip = req.get_header_value("Accept-Encoding").find("gzip") != std::string::npos;
      const std::string& body = gzip ? p->gzip : p->text;
      if (gzip) res.set_header("Content-Encoding", "gzip");
      res.set_content_provider(body.size(), "text/plain; version=0.0.4; charset=utf-8",
                               [p, bytes = body.data()](std::size_t offset, std::size_t length, httplib::DataSink& sink) {
                                 return sink.write(bytes + offset, length);
                               });
    });
    const int port = server.bind_to_any_port("127.0.0.1");
    std::atomic<bool> stop{false};
    std::thread refresher([&] {
      const auto at = a.upstream.find("/metrics");
      httplib::Client client(a.upstream.substr(0, at));
      while (!stop) {
        if (auto res = client.Get("/metrics"); res && res->status == 200) {
          auto next = std::make_shared<Page>();
          next->text = std::move(res->body);
          next->gzip = attribution::gzip_page(next->text);
          page.store(std::move(next));
        }
        for (int slept = 0; slept < a.interval_ms && !stop; slept += 10) std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    });
    std::thread http([&] { server.listen_after_bind(); });
    std::this_thread::sleep_for(interval);  // the first page
    std::cout << "port " << port << std::endl;
    char c;
    while (::read(0, &c, 1) > 0) {
    }
    stop = true;
    server.stop();
    http.join();
    refresher.join();
    return 0;
  }
  auto dcgm = attribution::dcgm_source(a.upstream, std::chrono::milliseconds(5000));
  if (!dcgm) {
    std::cerr << "child: " << dcgm.error() << '\n';
    return 1;
  }
  std::unique_ptr<attribution::SnapshotSource> snapshots;
  std::unique_ptr<node::PodResourcesCache> pod_resources;
  if (a.mode == "on") {
    snapshots = attribution::file_snapshot_source(a.snapshot, kKey);
    auto client = node::PodResourcesClient::create(node::PodResourcesOptions{a.socket, std::chrono::milliseconds(5000)});
    if (!client) {
      std::cerr << "child: " << client.error() << '\n';
      return 1;
    }
    pod_resources = std::make_unique<node::PodResourcesCache>(std::move(*client), interval);
  }
  attribution::ExporterOptions options;
  options.node = attribution::NodeInfo{kNode, "h100-mig", "H100", "1g.10gb"};
  options.interval = interval;
  options.listen_address = "127.0.0.1";
  options.port = 0;
  options.log = [](const std::string& line) { std::cerr << "child exporter: " << line << '\n'; };
  auto exporter = attribution::Exporter::create(options, std::make_unique<InventoryUpstream>(std::move(*dcgm)),
                                                std::move(snapshots), std::move(pod_resources));
  if (!exporter) {
    std::cerr << "child: " << exporter.error() << '\n';
    return 1;
  }
  std::jthread runner([&](std::stop_token stop) { (void)(*exporter)->run(stop); });
  httplib::Client probe("127.0.0.1", (*exporter)->port());
  for (int i = 0; i < 500; ++i) {
    if (auto res = probe.Get("/readyz"); res && res->status == 200) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::cout << "port " << (*exporter)->port() << std::endl;
  char c;
  while (::read(0, &c, 1) > 0) {
  }
  runner.request_stop();
  runner.join();
  return 0;
}

class Child {
 public:
  Child(const std::string& self, const ChildArgs& a) {
    int in[2], out[2];
    if (::pipe(in) != 0 || ::pipe(out) != 0) throw std::runtime_error("pipe failed");
    pid_ = ::fork();
    if (pid_ < 0) throw std::runtime_error("fork failed");
    if (pid_ == 0) {
      ::dup2(in[0], 0);
      ::dup2(out[1], 1);
      ::close(in[1]);
      ::close(out[0]);
      const std::string interval = std::to_string(a.interval_ms);
      ::execl(self.c_str(), self.c_str(), "--child", a.mode.c_str(), a.upstream.c_str(), a.socket.c_str(),
              a.snapshot.c_str(), interval.c_str(), static_cast<char*>(nullptr));
      std::_Exit(127);
    }
    ::close(in[0]);
    ::close(out[1]);
    stdin_ = in[1];
    std::string line;
    char c;
    while (::read(out[0], &c, 1) == 1 && c != '\n') line += c;
    ::close(out[0]);
    if (line.rfind("port ", 0) != 0) throw std::runtime_error("child " + a.mode + " did not start: '" + line + "'");
    port_ = std::stoi(line.substr(5));
  }
  ~Child() {
    ::close(stdin_);
    int status = 0;
    ::waitpid(pid_, &status, 0);
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  [[nodiscard]] int port() const { return port_; }
  [[nodiscard]] pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  int stdin_ = -1;
  int port_ = -1;
};

// ---------------------------------------------------------------------------------------
// /proc readings of a process.

double cpu_seconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto close = text.rfind(')');
  std::istringstream rest(text.substr(close + 2));
  std::string field;
  std::vector<std::string> fields;
  while (rest >> field) fields.push_back(field);
  // Fields after the command: state is 3rd overall, utime 14th, stime 15th.
  const double ticks = static_cast<double>(::sysconf(_SC_CLK_TCK));
  return (std::stod(fields.at(11)) + std::stod(fields.at(12))) / ticks;
}

double status_mib(pid_t pid, const std::string& key) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key + ":", 0) == 0) return std::stod(line.substr(key.size() + 1)) / 1024.0;
  }
  return 0;
}

// ---------------------------------------------------------------------------------------
// Scraping.

struct ScrapeResult {
  std::vector<double> latencies_ms;
  std::vector<std::string> failures;
  double wall_s = 0;
  std::size_t wire_bytes = 0;  // of a checked answer, as sent (gzip)
};

// What every answer must hold: every device sample, and for `on` each attributed.
std::string check_page(const std::string& body, bool attributed) {
  const std::string marker = "DCGM_FI_PROF_SM_ACTIVE{";
  std::size_t samples = 0;
  std::size_t mapped = 0;
  for (std::size_t at = body.find(marker); at != std::string::npos; at = body.find(marker, at + 1)) {
    ++samples;
    const auto end = body.find('\n', at);
    const std::string_view line(body.data() + at, end - at);
    if (line.find("mapping_status=\"mapped\"") != std::string_view::npos &&
        line.find("business_group=\"group-") != std::string_view::npos) {
      ++mapped;
    }
  }
  if (samples != static_cast<std::size_t>(kGpus * kMigPerGpu)) {
    return "DCGM_FI_PROF_SM_ACTIVE has " + std::to_string(samples) + " samples, not " + std::to_string(kGpus * kMigPerGpu);
  }
  if (attributed && mapped != samples) return std::to_string(samples - mapped) + " DCGM_FI_PROF_SM_ACTIVE samples not mapped";
  return {};
}

ScrapeResult scrape(int port, int scrapers, int scrapes, bool attributed, std::chrono::milliseconds pace = {}) {
  ScrapeResult result;
  std::mutex m;
  // Every scraper connects (one untimed scrape) before any is timed: httplib listens with a
  // backlog of 5, and ten connections opened at one instant lose SYNs that the kernel only
  // retransmits after a second. A Prometheus keeps its connection; the figure is the scrape.
  std::latch connected(scrapers);
  Clock::time_point started;
  std::once_flag start_once;
  std::vector<std::thread> threads;
  for (int s = 0; s < scrapers; ++s) {
    threads.emplace_back([&, s] {
      httplib::Client client("127.0.0.1", port);
      client.set_keep_alive(true);
      client.set_read_timeout(std::chrono::seconds(60));
      // As Prometheus scrapes: asking for gzip. The bytes are timed as they arrive; only the
      // checked answers are inflated, outside the timing.
      client.set_decompress(false);
      const httplib::Headers headers{{"Accept-Encoding", "gzip"}};
      (void)client.Get("/metrics", headers);
      connected.arrive_and_wait();
      std::call_once(start_once, [&] { started = Clock::now(); });
      std::vector<double> mine;
      std::vector<std::string> failed;
      std::size_t wire_bytes = 0;
      auto next = Clock::now();
      for (int i = 0; i < scrapes; ++i) {
        if (pace.count() > 0) {
          std::this_thread::sleep_until(next);
          next += pace;
        }
        const auto t0 = Clock::now();
        auto res = client.Get("/metrics", headers);
        const auto t1 = Clock::now();
        if (!res || res->status != 200) {
          failed.push_back("scraper " + std::to_string(s) + ": " +
                           (res ? "HTTP " + std::to_string(res->status) : httplib::to_string(res.error())));
          continue;
        }
        if (i % 25 == 0 || i + 1 == scrapes) {
          const bool gzipped = res->get_header_value("Content-Encoding") == "gzip";
          if (auto why = check_page(gzipped ? gunzip(res->body) : res->body, attributed); !why.empty()) failed.push_back(why);
          wire_bytes = res->body.size();
        }
        mine.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
      }
      std::lock_guard lock(m);
      result.latencies_ms.insert(result.latencies_ms.end(), mine.begin(), mine.end());
      result.failures.insert(result.failures.end(), failed.begin(), failed.end());
      result.wire_bytes = std::max(result.wire_bytes, wire_bytes);
    });
  }
  for (auto& t : threads) t.join();
  result.wall_s = std::chrono::duration<double>(Clock::now() - started).count();
  return result;
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto rank = static_cast<std::size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(rank, v.size() - 1)];
}
double median(std::vector<double> v) { return percentile(std::move(v), 0.5); }

// ---------------------------------------------------------------------------------------
// The naive design, in this process.

class NaiveExporter {
 public:
  NaiveExporter(std::string upstream_url, std::string socket, k8s::ClientConfig config)
      : upstream_(std::move(upstream_url)), socket_(std::move(socket)), config_(std::move(config)) {
    server_.new_task_queue = [] { return new httplib::ThreadPool(16); };
    server_.set_tcp_nodelay(true);
    server_.set_keep_alive_max_count(10'000);
    server_.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
      auto page = scrape_once();
      if (!page) {
        res.status = 500;
        res.set_content(page.error(), "text/plain");
        return;
      }
      res.set_content(std::move(*page), "text/plain; version=0.0.4; charset=utf-8");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~NaiveExporter() {
    server_.stop();
    thread_.join();
  }
  [[nodiscard]] int port() const { return port_; }

 private:
  Expected<std::string> scrape_once() {
    // One keep-alive connection per server thread to each input: the best this design does.
    thread_local std::unique_ptr<k8s::Transport> api;
    thread_local std::unique_ptr<node::PodResourcesClient> kubelet;
    thread_local std::unique_ptr<httplib::Client> dcgm;
    if (!api) {
      auto t = k8s::Transport::create(config_, k8s::TransportOptions{});
      if (!t) return Unexpected{t.error()};
      api = std::move(*t);
      auto k = node::PodResourcesClient::create(node::PodResourcesOptions{socket_, std::chrono::milliseconds(5000)});
      if (!k) return Unexpected{k.error()};
      kubelet = std::move(*k);
      dcgm = std::make_unique<httplib::Client>(upstream_.substr(0, upstream_.find("/metrics")));
      dcgm->set_keep_alive(true);
    }
    auto res = dcgm->Get("/metrics");
    if (!res || res->status != 200) return Unexpected{std::string("upstream failed")};
    auto exposition = metrics::parse_text(res->body);
    if (!exposition) return Unexpected{exposition.error()};
    auto held = kubelet->list();
    if (!held) return Unexpected{held.error()};
    attribution::NodeSnapshot snapshot{kNode, 1, 0, {}};
    std::map<std::pair<std::string, std::string>, bool> seen;
    for (const auto& d : *held) {
      if (!seen.emplace(std::make_pair(d.namespace_name, d.pod), true).second) continue;
      auto pod = api->get("/api/v1/namespaces/" + d.namespace_name + "/pods/" + d.pod);
      if (!pod) return Unexpected{pod.error().describe()};
      auto meta = attribution::pod_meta_from_json(Json::parse(pod->body));
      if (meta) snapshot.pods.push_back(std::move(*meta));
    }
    std::sort(snapshot.pods.begin(), snapshot.pods.end(), [](const auto& a, const auto& b) { return a.uid < b.uid; });
    const auto devices = inventory();
    auto joined = attribution::enrich(*exposition, *held, &snapshot, devices, attribution::NodeInfo{kNode, "h100-mig", "H100", "1g.10gb"});
    return metrics::write_text(joined.exposition);
  }

  std::string upstream_;
  std::string socket_;
  k8s::ClientConfig config_;
  httplib::Server server_;
  int port_ = -1;
  std::thread thread_;
};

// ---------------------------------------------------------------------------------------

struct Options {
  int scrapers = 10;
  int scrapes = 300;
  int naive_scrapes = 20;
  int repetitions = 3;
  int interval_ms = 1000;
  int idle_seconds = 5;
  int soak_seconds = 60;
  int paced_seconds = 20;
  int refresh_iterations = 30;
  std::string summary;
};

bool parse_options(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&](int& out) {
      if (i + 1 >= argc) return false;
      try {
        out = std::stoi(argv[++i]);
      } catch (const std::exception&) {
        return false;
      }
      return out > 0;
    };
    bool ok = true;
    if (arg == "--help" || arg == "-h") {
      std::cout << "usage: exporter_bench [--scrapers N] [--scrapes N] [--naive-scrapes N] [--repetitions N]\n"
                   "                      [--interval-ms N] [--idle-seconds N] [--paced-seconds N] [--soak-seconds N]\n"
                   "                      [--refresh-iterations N] [--summary FILE]\n"
                   "The node exporter on 8 GPUs x 7 MIG instances x 30 fields: scrape latency, CPU, memory and\n"
                   "API-server requests against a pass-through server, attribution off, and the naive per-scrape design.\n";
      std::exit(0);
    } else if (arg == "--scrapers") {
      ok = value(o.scrapers);
    } else if (arg == "--scrapes") {
      ok = value(o.scrapes);
    } else if (arg == "--naive-scrapes") {
      ok = value(o.naive_scrapes);
    } else if (arg == "--repetitions") {
      ok = value(o.repetitions);
    } else if (arg == "--interval-ms") {
      ok = value(o.interval_ms);
    } else if (arg == "--idle-seconds") {
      ok = value(o.idle_seconds);
    } else if (arg == "--paced-seconds") {
      ok = value(o.paced_seconds);
    } else if (arg == "--soak-seconds") {
      ok = value(o.soak_seconds);
    } else if (arg == "--refresh-iterations") {
      ok = value(o.refresh_iterations);
    } else if (arg == "--summary" && i + 1 < argc) {
      o.summary = argv[++i];
    } else {
      ok = false;
    }
    if (!ok) {
      std::cerr << "exporter_bench: bad or unknown option " << arg << " (--help lists them)\n";
      return false;
    }
  }
  return true;
}

std::string fixed(double v, int digits) {
  std::ostringstream s;
  s.setf(std::ios::fixed);
  s.precision(digits);
  s << v;
  return s.str();
}

std::string load_average() {
  std::ifstream in("/proc/loadavg");
  std::string a, b, c;
  in >> a >> b >> c;
  return a + " " + b + " " + c;
}

struct ModeRun {
  double p50 = 0, p99 = 0, max = 0;
  double paced_p50 = 0, paced_p99 = 0;
  double rss_anon_mib = 0, rss_file_mib = 0;
  double wire_bytes = 0;
  double cpu_ms_per_scrape = 0;
  double cpu_ms_per_refresh = 0;
  double api_requests_per_scrape = 0;
  double rss_mib = 0;
  double page_bytes = 0;
};

// The refresh's parts in process: median milliseconds of each.
struct RefreshCost {
  double parse_ms = 0, parse_write_ms = 0, off_ms = 0, on_ms = 0;
};

RefreshCost refresh_cost(const std::string& page, const std::string& kubelet_json, const attribution::NodeSnapshot& snapshot,
                         int iterations) {
  std::vector<node::DeviceAllocation> held;
  for (const auto& p : Json::parse(kubelet_json)["podResources"]) {
    for (const auto& c : p["containers"]) {
      for (const auto& d : c["devices"]) {
        for (const auto& id : d["deviceIds"]) {
          held.push_back(node::DeviceAllocation{p["namespace"], p["name"], c["name"], d["resourceName"], id, {}, {}, {}, {}});
        }
      }
    }
  }
  const auto devices = inventory();
  const attribution::NodeInfo info{kNode, "h100-mig", "H100", "1g.10gb"};
  auto time_ms = [&](auto&& f) {
    std::vector<double> t;
    for (int i = 0; i < iterations; ++i) {
      const auto t0 = Clock::now();
      f();
      t.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    }
    return median(t);
  };
  RefreshCost c;
  std::size_t sink = 0;
  c.parse_ms = time_ms([&] { sink += metrics::parse_text(page)->families.size(); });
  c.parse_write_ms = time_ms([&] { sink += metrics::write_text(*metrics::parse_text(page))->size(); });
  c.off_ms = time_ms([&] {
    auto e = metrics::parse_text(page);
    sink += metrics::write_text(attribution::enrich(*e, {}, nullptr, devices, info).exposition)->size();
  });
  c.on_ms = time_ms([&] {
    auto e = metrics::parse_text(page);
    sink += metrics::write_text(attribution::enrich(*e, held, &snapshot, devices, info).exposition)->size();
  });
  if (sink == 0) std::cerr << "exporter_bench: nothing written\n";
  return c;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 7 && std::string(argv[1]) == "--child") {
    return run_child(ChildArgs{argv[2], argv[3], argv[4], argv[5], std::atoi(argv[6])});
  }
  Options o;
  if (!parse_options(argc, argv, o)) return 2;
  ::signal(SIGPIPE, SIG_IGN);
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  const std::string load_before = load_average();
  std::vector<std::string> failures;
  std::ostringstream out;
  try {
    // The fakes and metasync.
    const std::string page = upstream_page();
    httplib::Server dcgm;
    std::atomic<int> dcgm_requests{0};
    dcgm.Get("/metrics", [&](const httplib::Request&, httplib::Response& res) {
      ++dcgm_requests;
      res.set_content(page, "text/plain; version=0.0.4");
    });
    const int dcgm_port = dcgm.bind_to_any_port("127.0.0.1");
    std::thread dcgm_thread([&] { dcgm.listen_after_bind(); });
    const std::string upstream_url = "http://127.0.0.1:" + std::to_string(dcgm_port) + "/metrics";

    testing::FakeKubelet kubelet;
    const std::string kubelet_json = kubelet_list_json();
    kubelet.set_list_json(kubelet_json);

    testing::FakeApiServer api(testing::FakeApiServer::Options{});
    populate(api);
    const auto dir = std::filesystem::temp_directory_path() / ("exporter_bench." + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    attribution::MetasyncOptions mo;
    mo.hmac_key = kKey;
    mo.out_dir = dir.string();
    auto metasync = attribution::Metasync::create(config_for(api), mo);
    if (!metasync) throw std::runtime_error("metasync: " + metasync.error());
    if (auto s = (*metasync)->start(); !s) throw std::runtime_error("metasync: " + s.error());
    if (auto s = (*metasync)->wait_for_sync(std::chrono::seconds(60)); !s) throw std::runtime_error("metasync did not sync");
    const std::string snapshot_path = (dir / (std::string(kNode) + ".json")).string();
    std::optional<attribution::NodeSnapshot> snapshot;
    for (int i = 0; i < 3000 && !snapshot; ++i) {
      (*metasync)->flush();
      if (auto s = attribution::read_snapshot_file(snapshot_path, kKey); s && s->pods.size() == kGpus * kMigPerGpu) {
        snapshot = std::move(*s);
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    }
    if (!snapshot) throw std::runtime_error("metasync wrote no snapshot of the node's 56 pods");
    std::cerr << "exporter_bench: metasync wrote " << snapshot_path << " (" << snapshot->pods.size() << " pods of the node, "
              << api.objects("pods").size() << " in the cluster)\n";

    const RefreshCost cost = refresh_cost(page, kubelet_json, *snapshot, o.refresh_iterations);

    // Modes.
    const char* modes[] = {"passthrough", "off", "on"};
    std::map<std::string, std::vector<ModeRun>> runs;
    for (int rep = 0; rep < o.repetitions; ++rep) {
      for (const char* mode : modes) {
        Child child(self, ChildArgs{mode, upstream_url, kubelet.socket_path(), snapshot_path, o.interval_ms});
        // Warm-up, then an idle window for the refresh cost.
        (void)scrape(child.port(), 1, 5, false);
        std::this_thread::sleep_for(std::chrono::milliseconds(o.interval_ms));
        const double idle0 = cpu_seconds(child.pid());
        const int dcgm0 = dcgm_requests;
        const auto idle_started = Clock::now();
        std::this_thread::sleep_for(std::chrono::seconds(o.idle_seconds));
        const double idle_s = std::chrono::duration<double>(Clock::now() - idle_started).count();
        const double idle_cpu = cpu_seconds(child.pid()) - idle0;
        const int refreshes = std::max(1, dcgm_requests - dcgm0);
        const std::size_t api0 = api.requests();
        const double cpu0 = cpu_seconds(child.pid());
        ScrapeResult r = scrape(child.port(), o.scrapers, o.scrapes, std::string(mode) == "on");
        const double cpu = cpu_seconds(child.pid()) - cpu0;
        const double scrapes = static_cast<double>(r.latencies_ms.size());
        ModeRun m;
        m.p50 = percentile(r.latencies_ms, 0.5);
        m.p99 = percentile(r.latencies_ms, 0.99);
        m.max = percentile(r.latencies_ms, 1.0);
        m.cpu_ms_per_refresh = idle_cpu * 1000.0 / refreshes;
        m.cpu_ms_per_scrape = std::max(0.0, cpu - idle_cpu / idle_s * r.wall_s) * 1000.0 / std::max(1.0, scrapes);
        // Every scrape in the window: the timed ones and each scraper's untimed first.
        m.api_requests_per_scrape = static_cast<double>(api.requests() - api0) / (scrapes + o.scrapers);
        m.rss_mib = status_mib(child.pid(), "VmRSS");
        m.rss_anon_mib = status_mib(child.pid(), "RssAnon");
        m.rss_file_mib = status_mib(child.pid(), "RssFile");
        m.wire_bytes = static_cast<double>(r.wire_bytes);
        // Paced: every scraper once a second, all at the same moment (a burst of 10).
        ScrapeResult paced = scrape(child.port(), o.scrapers, o.paced_seconds, std::string(mode) == "on",
                                    std::chrono::milliseconds(1000));
        m.paced_p50 = percentile(paced.latencies_ms, 0.5);
        m.paced_p99 = percentile(paced.latencies_ms, 0.99);
        for (const auto& f : paced.failures) failures.push_back(std::string(mode) + " (paced): " + f);
        httplib::Client c("127.0.0.1", child.port());
        if (auto res = c.Get("/metrics")) m.page_bytes = static_cast<double>(res->body.size());
        for (const auto& f : r.failures) failures.push_back(std::string(mode) + ": " + f);
        std::cerr << "exporter_bench: repetition " << rep + 1 << " " << mode << ": p50 " << fixed(m.p50, 2) << " ms, p99 "
                  << fixed(m.p99, 2) << " ms over " << r.latencies_ms.size() << " scrapes (paced: p50 " << fixed(m.paced_p50, 2)
                  << ", p99 " << fixed(m.paced_p99, 2) << " ms); CPU/scrape "
                  << fixed(m.cpu_ms_per_scrape, 3) << " ms, CPU/refresh " << fixed(m.cpu_ms_per_refresh, 2) << " ms ("
                  << refreshes << " refreshes idle), RSS " << fixed(m.rss_mib, 1) << " MiB (anonymous " << fixed(m.rss_anon_mib, 1)
                  << ", file " << fixed(m.rss_file_mib, 1) << "), page " << m.page_bytes << " bytes, " << m.wire_bytes << " gzipped, API requests/scrape " << m.api_requests_per_scrape << '\n';
        runs[mode].push_back(m);
      }
      // The naive design: fewer scrapes, it is slow.
      NaiveExporter naive(upstream_url, kubelet.socket_path(), config_for(api));
      (void)scrape(naive.port(), 1, 2, true);
      const std::size_t api0 = api.requests();
      ScrapeResult r = scrape(naive.port(), o.scrapers, o.naive_scrapes, true);
      ModeRun m;
      m.p50 = percentile(r.latencies_ms, 0.5);
      m.p99 = percentile(r.latencies_ms, 0.99);
      m.max = percentile(r.latencies_ms, 1.0);
      m.api_requests_per_scrape =
          static_cast<double>(api.requests() - api0) / (static_cast<double>(r.latencies_ms.size()) + o.scrapers);
      for (const auto& f : r.failures) failures.push_back("naive: " + f);
      std::cerr << "exporter_bench: repetition " << rep + 1 << " naive: p50 " << fixed(m.p50, 2) << " ms, p99 " << fixed(m.p99, 2)
                << " ms over " << r.latencies_ms.size() << " scrapes, API requests/scrape " << m.api_requests_per_scrape << '\n';
      runs["naive"].push_back(m);
    }

    // The soak: the deployed exporter scraped once a second.
    std::vector<std::pair<int, double>> rss;
    double hwm = 0, soak_anon = 0, soak_file = 0;
    int soak_refreshes = 1;
    double soak_cpu = 0;
    {
      Child child(self, ChildArgs{"on", upstream_url, kubelet.socket_path(), snapshot_path, o.interval_ms});
      const double cpu0 = cpu_seconds(child.pid());
      const int dcgm0 = dcgm_requests;
      std::atomic<bool> done{false};
      std::thread sampler([&] {
        for (int t = 0; !done; ++t) {
          if (t % 10 == 0) rss.emplace_back(t, status_mib(child.pid(), "VmRSS"));
          std::this_thread::sleep_for(std::chrono::seconds(1));
        }
      });
      ScrapeResult r = scrape(child.port(), 1, o.soak_seconds, true, std::chrono::milliseconds(1000));
      done = true;
      sampler.join();
      rss.emplace_back(o.soak_seconds, status_mib(child.pid(), "VmRSS"));
      hwm = status_mib(child.pid(), "VmHWM");
      soak_anon = status_mib(child.pid(), "RssAnon");
      soak_file = status_mib(child.pid(), "RssFile");
      soak_cpu = cpu_seconds(child.pid()) - cpu0;
      soak_refreshes = std::max(1, dcgm_requests - dcgm0);
      for (const auto& f : r.failures) failures.push_back("soak: " + f);
      std::cerr << "exporter_bench: soak of " << o.soak_seconds << " s: " << r.latencies_ms.size() << " scrapes, p99 "
                << fixed(percentile(r.latencies_ms, 0.99), 2) << " ms\n";
    }
    (*metasync)->stop();
    dcgm.stop();
    dcgm_thread.join();
    std::filesystem::remove_all(dir);

    // The table.
    auto med = [&](const std::string& mode, double ModeRun::*field) {
      std::vector<double> v;
      for (const auto& m : runs[mode]) v.push_back(m.*field);
      return median(v);
    };
    const double base_p50 = med("passthrough", &ModeRun::p50);
    const double base_p99 = med("passthrough", &ModeRun::p99);
    out << "exporter_bench: 8 GPUs x 7 MIG instances x 30 fields = " << kDeviceSamples << " device samples ("
        << page.size() << " bytes upstream), 56 pods on the node, 1,000 in the cluster; " << o.scrapers
        << " concurrent scrapers x " << o.scrapes << " scrapes (naive: x " << o.naive_scrapes << "), refresh every "
        << o.interval_ms << " ms; medians of " << o.repetitions << " repetitions\n";
    out << "load average before: " << load_before << ", after: " << load_average() << "\n\n";
    out << "| mode | p50 ms | p99 ms | p99 / passthrough | paced p50 ms | paced p99 ms | CPU ms per scrape | CPU ms per refresh "
           "| RSS MiB (anonymous + file) | page bytes (gzip on the wire) | API requests per scrape |\n";
    out << "|---|---:|---:|---:|---:|---:|---:|---:|---|---|---:|\n";
    for (const char* mode : {"passthrough", "off", "on", "naive"}) {
      const bool child = std::string(mode) != "naive";
      out << "| " << mode << " | " << fixed(med(mode, &ModeRun::p50), 2) << " | " << fixed(med(mode, &ModeRun::p99), 2) << " | "
          << fixed(med(mode, &ModeRun::p99) / base_p99, 2) << "x | "
          << (child ? fixed(med(mode, &ModeRun::paced_p50), 2) : "-") << " | "
          << (child ? fixed(med(mode, &ModeRun::paced_p99), 2) : "-") << " | "
          << (child ? fixed(med(mode, &ModeRun::cpu_ms_per_scrape), 3) : "-") << " | "
          << (child ? fixed(med(mode, &ModeRun::cpu_ms_per_refresh), 2) : "-") << " | "
          << (child ? fixed(med(mode, &ModeRun::rss_mib), 1) + " (" + fixed(med(mode, &ModeRun::rss_anon_mib), 1) + " + " +
                          fixed(med(mode, &ModeRun::rss_file_mib), 1) + ")"
                    : "-")
          << " | "
          << (child ? std::to_string(static_cast<long>(med(mode, &ModeRun::page_bytes))) + " (" +
                          std::to_string(static_cast<long>(med(mode, &ModeRun::wire_bytes))) + ")"
                    : "-")
          << " | " << fixed(med(mode, &ModeRun::api_requests_per_scrape), 2) << " |\n";
    }
    (void)base_p50;
    out << "\nrefresh parts in process (median of " << o.refresh_iterations << "): parse " << fixed(cost.parse_ms, 2)
        << " ms, parse+write " << fixed(cost.parse_write_ms, 2) << " ms, off (parse+join+write) " << fixed(cost.off_ms, 2)
        << " ms, on " << fixed(cost.on_ms, 2) << " ms; on / parse+write " << fixed(cost.on_ms / cost.parse_write_ms, 2)
        << "x, on / off " << fixed(cost.on_ms / cost.off_ms, 2) << "x\n";
    out << "\nsoak (`on`, one scrape a second for " << o.soak_seconds << " s): RSS MiB";
    for (const auto& [t, mib] : rss) out << " t=" << t << "s " << fixed(mib, 1);
    // Growth: the median of the later half of the samples after the first quarter (warm-up)
    // against the median of the earlier half; a sample that falls in a refresh catches its
    // transient working set, which medians ignore and the peak (VmHWM) shows.
    std::vector<double> settled;
    for (const auto& [t, mib] : rss) {
      if (t * 4 >= o.soak_seconds) settled.push_back(mib);
    }
    const std::size_t half = settled.size() / 2;
    const double earlier = median(std::vector<double>(settled.begin(), settled.begin() + static_cast<std::ptrdiff_t>(half)));
    const double later = median(std::vector<double>(settled.begin() + static_cast<std::ptrdiff_t>(half), settled.end()));
    out << " (at the end: anonymous " << fixed(soak_anon, 1) << ", file " << fixed(soak_file, 1) << "); peak (VmHWM) "
        << fixed(hwm, 1) << " MiB; median of the earlier settled half " << fixed(earlier, 1) << " MiB, of the later "
        << fixed(later, 1) << " MiB: growth " << fixed(later - earlier, 2) << " MiB; CPU " << fixed(soak_cpu / o.soak_seconds * 100.0, 2) << " % of a core, "
        << fixed(soak_cpu * 1000.0 / soak_refreshes, 1) << " ms per refresh (" << soak_refreshes << " refreshes)\n";
  } catch (const std::exception& e) {
    std::cerr << "exporter_bench: " << e.what() << '\n';
    return 1;
  }
  for (const auto& f : failures) std::cerr << "exporter_bench: FAILED: " << f << '\n';
  std::cout << out.str();
  if (!o.summary.empty()) {
    std::ofstream file(o.summary);
    file << out.str();
  }
  return failures.empty() ? 0 : 1;
}
