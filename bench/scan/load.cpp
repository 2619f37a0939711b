// scan_bench: loading the series into Prometheus, scraped from this program page by page
// (--loader scrape) or as TSDB blocks that promtool made of one OpenMetrics file (--loader promtool).
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "scan/scan_bench.hpp"

namespace gpubank::bench::scan {

namespace {

using Json = nlohmann::json;

std::uintmax_t directory_bytes(const fs::path& dir) {
  std::uintmax_t total = 0;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (it->is_regular_file(ec)) total += it->file_size(ec);
  }
  return total;
}

// One node exporter shard: serves the page of step `page` to whoever scrapes it.
struct Shard {
  httplib::Server server;
  std::thread thread;
  std::atomic<int> page{0};
  std::atomic<std::uint64_t> scrapes{0};
  int port = 0;
};

}  // namespace

LoadReport load_by_scraping(const Cluster& c, Prometheus& prometheus, const fs::path& tsdb, const Options& o) {
  LoadReport r;
  r.how = "scraped";
  std::vector<std::unique_ptr<Shard>> shards;
  for (int s = 0; s < c.shards; ++s) {
    auto shard = std::make_unique<Shard>();
    Shard* self = shard.get();
    shard->server.Get("/metrics", [&c, self, s](const httplib::Request&, httplib::Response& res) {
      ++self->scrapes;
      int k = std::min(self->page.load(), c.steps - 1);
      // Prometheus drops scraped samples over 10 minutes ahead of its clock: a page not yet
      // due is held back (the previous one, already committed, is served again).
      const std::int64_t now =
          std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
      while (k > 0 && c.ts(k) > now + kMaxAhead) --k;
      // Not text/plain: httplib would gzip it for Prometheus (which asks for gzip), spending
      // this program's CPU on a loopback transfer.
      res.set_content(render_page(c, s, k), "application/openmetrics-text; version=1.0.0; charset=utf-8");
    });
    shard->port = shard->server.bind_to_any_port("127.0.0.1");
    if (shard->port <= 0) throw std::runtime_error("cannot listen on loopback");
    shard->thread = std::thread([self] { self->server.listen_after_bind(); });
    shards.push_back(std::move(shard));
  }
  // Stop and join the servers on every way out of here.
  struct StopAll {
    std::vector<std::unique_ptr<Shard>>& shards;
    ~StopAll() {
      for (auto& s : shards) {
        s->server.stop();
        if (s->thread.joinable()) s->thread.join();
      }
    }
  } stop_all{shards};

  const double interval = o.scrape_interval_ms / 1000.0;
  std::string config = "global:\n  scrape_interval: " + std::to_string(o.scrape_interval_ms) +
                       "ms\n  scrape_timeout: " + std::to_string(o.scrape_interval_ms) +
                       "ms\nscrape_configs:\n- job_name: gpu-nodes\n  static_configs:\n  - targets:\n";
  for (const auto& s : shards) config += "    - 127.0.0.1:" + std::to_string(s->port) + "\n";
  r.prometheus_ready_s = prometheus.start(tsdb, config);
  const double cpu0 = process_cpu_seconds(prometheus.pid());
  std::cerr << "scan_bench: Prometheus ready in " << fixed(r.prometheus_ready_s, 1) << " s; serving " << c.steps
            << " pages on each of " << c.shards << " shards, scraped every " << fixed(interval, 3) << " s\n";

  NoDelayPrometheus client(prometheus.port());
  const auto t0 = Clock::now();
  {
    const std::int64_t now =
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
    r.paced_s = static_cast<double>(std::max<std::int64_t>(0, c.ts(c.steps - 1) - kMaxAhead - now));
  }
  auto progress_at = t0;
  auto last_progress = t0;
  int done_min = -1;
  for (;;) {
    check_interrupted();
    if (!prometheus.running()) throw std::runtime_error("Prometheus ended; its log ends:\n" + prometheus.log_tail());
    auto answer = client.query("max by (shard) (max_over_time(scan_bench_page[1d]))", c.ts(c.steps - 1) * 1000);
    if (!answer) throw std::runtime_error("the marker query failed: " + answer.error());
    int lowest = c.steps;
    std::vector<int> committed(static_cast<std::size_t>(c.shards), -1);
    for (const serving::PromSample& s : *answer) {
      const auto it = s.labels.find("shard");
      if (it == s.labels.end()) continue;
      const int shard = std::stoi(it->second);
      if (shard >= 0 && shard < c.shards) committed[static_cast<std::size_t>(shard)] = static_cast<int>(s.value);
    }
    for (int s = 0; s < c.shards; ++s) {
      const int k = committed[static_cast<std::size_t>(s)];
      Shard& shard = *shards[static_cast<std::size_t>(s)];
      if (k >= shard.page.load() && k + 1 < c.steps) shard.page.store(k + 1);
      lowest = std::min(lowest, k);
    }
    if (lowest > done_min) {
      done_min = lowest;
      last_progress = Clock::now();
    }
    if (lowest == c.steps - 1) break;
    if (seconds_since(last_progress) > 180) {
      throw std::runtime_error("no shard progressed for 3 minutes (at page " + std::to_string(lowest + 1) + " of " +
                               std::to_string(c.steps) + "); Prometheus' log ends:\n" + prometheus.log_tail());
    }
    if (seconds_since(progress_at) > 10) {
      progress_at = Clock::now();
      std::cerr << "scan_bench: loading: every shard has " << lowest + 1 << " of " << c.steps << " pages after "
                << fixed(seconds_since(t0), 0) << " s\n";
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  r.load_s = seconds_since(t0);
  r.prometheus_cpu_s = process_cpu_seconds(prometheus.pid()) - cpu0;
  for (const auto& s : shards) r.scrapes += s->scrapes.load();

  // No more scrapes: a configuration without targets, confirmed by the targets API.
  prometheus.reload("global:\n  scrape_interval: 1m\n");
  httplib::Client api("127.0.0.1", prometheus.port());
  for (int i = 0;; ++i) {
    check_interrupted();
    auto res = api.Get("/api/v1/targets?state=active");
    if (res && res->status == 200) {
      const Json j = Json::parse(res->body, nullptr, false);
      if (j.is_object() && j["data"]["activeTargets"].is_array() && j["data"]["activeTargets"].empty()) break;
    }
    if (i > 600) throw std::runtime_error("Prometheus kept its scrape targets after a reload");
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  r.prometheus_rss_mib = rss_mib(prometheus.pid());
  r.tsdb_bytes = directory_bytes(tsdb);
  return r;
}

LoadReport load_with_promtool(const Cluster& c, Prometheus& prometheus, const fs::path& promtool, const fs::path& dir,
                              const fs::path& tsdb) {
  LoadReport r;
  r.how = "promtool";
  const fs::path file = dir / "series.om";
  auto t0 = Clock::now();
  r.file_bytes = write_openmetrics(c, file);
  r.write_s = seconds_since(t0);
  std::cerr << "scan_bench: wrote " << fixed(static_cast<double>(r.file_bytes) / (1 << 30), 2) << " GiB of OpenMetrics in "
            << fixed(r.write_s, 1) << " s; promtool tsdb create-blocks-from openmetrics...\n";
  t0 = Clock::now();
  {
    Child tool;
    tool.start({promtool.string(), "tsdb", "create-blocks-from", "openmetrics", "-q", file.string(), tsdb.string()},
               dir / "promtool.log");
    while (tool.running()) {
      if (g_interrupted) {
        tool.stop();
        fs::remove(file);
        throw Interrupted();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    const int status = tool.wait();
    rusage usage{};
    if (::getrusage(RUSAGE_CHILDREN, &usage) == 0) r.promtool_peak_mib = static_cast<double>(usage.ru_maxrss) / 1024.0;
    fs::remove(file);
    if (status != 0) {
      throw std::runtime_error("promtool failed (exit " + std::to_string(status) + "):\n" + tail_of(dir / "promtool.log"));
    }
  }
  r.promtool_s = seconds_since(t0);
  r.tsdb_bytes = directory_bytes(tsdb);
  r.prometheus_ready_s = prometheus.start(tsdb, "global:\n  scrape_interval: 1m\n");
  r.prometheus_rss_mib = rss_mib(prometheus.pid());
  return r;
}

}  // namespace gpubank::bench::scan
