#include "attribution/exporter.hpp"

#include <httplib.h>
#include <zlib.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "core/process_memory.hpp"
#include "metrics/registry.hpp"

namespace gpubank::attribution {
namespace {

std::int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

constexpr std::size_t kServerThreads = 16;
constexpr std::size_t kKeepAliveRequests = 10'000;

// The page as served: its text, and the same gzip-compressed once per refresh, because every
// Prometheus scrape asks for gzip and compressing a page of a megabyte on each scrape would
// cost more CPU than the rest of the scrape (measured by bench/exporter_bench).
struct Page {
  std::string text;
  std::string gzip;  // empty: not compressed (serve the text)
};

// Whether an Accept-Encoding header allows gzip: a "gzip" (or "*") token without q=0.
bool accepts_gzip(std::string_view header) {
  while (!header.empty()) {
    const std::size_t comma = header.find(',');
    std::string_view item = header.substr(0, comma);
    header = comma == std::string_view::npos ? std::string_view{} : header.substr(comma + 1);
    const std::size_t semicolon = item.find(';');
    std::string_view token = item.substr(0, semicolon);
    while (!token.empty() && (token.front() == ' ' || token.front() == '\t')) token.remove_prefix(1);
    while (!token.empty() && (token.back() == ' ' || token.back() == '\t')) token.remove_suffix(1);
    if (token != "gzip" && token != "*") continue;
    if (semicolon == std::string_view::npos) return true;
    std::string params(item.substr(semicolon + 1));
    std::erase_if(params, [](char c) { return c == ' ' || c == '\t'; });
    if (params.rfind("q=", 0) == 0) {
      const std::string_view q = std::string_view(params).substr(2);
      if (q.find_first_not_of("0.") == std::string_view::npos) continue;  // q=0, q=0.0, ...
    }
    return true;
  }
  return false;
}

}  // namespace

struct Exporter::Impl {
  ExporterOptions options;
  std::unique_ptr<UpstreamSource> upstream;
  std::unique_ptr<SnapshotSource> snapshots;
  std::unique_ptr<node::PodResourcesCache> pod_resources;

  httplib::Server server;
  int port = -1;

  std::mutex refresh_mutex;  // one refresh at a time
  // What a scrape reads: one pointer load.
  std::atomic<std::shared_ptr<const Page>> page{std::make_shared<const Page>()};
  std::atomic<bool> has_page{false};

  // Self-metrics, guarded by refresh_mutex (written by a refresh, rendered into its page).
  std::shared_ptr<const NodeSnapshot> snapshot;
  std::optional<metrics::Exposition> last_upstream_exposition;
  std::int64_t last_upstream_ms = 0;
  std::uint64_t upstream_errors = 0;
  std::uint64_t snapshot_rejections = 0;
  std::uint64_t refreshes = 0;
  double last_refresh_seconds = 0;
  // The join's per-refresh counts, summed over refreshes: Prometheus counters never go back.
  EnrichStats totals;

  std::int64_t now() const { return options.now_ms ? options.now_ms() : wall_ms(); }
  void log(const std::string& line) const {
    if (options.log) options.log(line);
  }

  void refresh() {
    std::lock_guard lock(refresh_mutex);
    const auto started = std::chrono::steady_clock::now();
    ++refreshes;
    if (auto read = upstream->read()) {
      last_upstream_exposition = std::move(*read);
      last_upstream_ms = now();
    } else {
      ++upstream_errors;
      log("upstream: " + read.error());
    }
    if (snapshots) {
      if (auto read = snapshots->read()) {
        snapshot = read->snapshot;
      } else {
        ++snapshot_rejections;
        log("snapshot: " + read.error() + " (keeping the last good one)");
      }
    }
    std::shared_ptr<const node::PodResourcesState> held = pod_resources ? pod_resources->state() : nullptr;
    static const std::vector<node::DeviceAllocation> kNone;
    const std::vector<node::DeviceAllocation>& allocations = held && held->devices ? *held->devices : kNone;
    if (!last_upstream_exposition) return;  // nothing to attribute yet: keep serving the last page
    const std::vector<node::GpuDevice> inventory = upstream->inventory();
    EnrichResult result = enrich(*last_upstream_exposition, allocations, snapshot.get(), inventory, options.node);
    for (const std::string& u : result.unresolved) log("cannot place device " + u);
    last_refresh_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    totals.unresolved_devices += result.stats.unresolved_devices;
    totals.upstream_labels_removed += result.stats.upstream_labels_removed;
    totals.upstream_duplicates += result.stats.upstream_duplicates;
    totals.values_dropped += result.stats.values_dropped;
    totals.holder_collisions += result.stats.holder_collisions;
    add_self_metrics(result, held.get());
    auto text = metrics::write_text(result.exposition);
    if (!text) {
      log("page not replaced: " + text.error());
      return;
    }
    auto next = std::make_shared<Page>();
    next->text = std::move(*text);
    next->gzip = gzip_page(next->text);
    page.store(std::move(next));
    has_page = true;
  }

  void add_self_metrics(EnrichResult& result, const node::PodResourcesState* held) {
    metrics::Registry r;
    auto gauge = [&](const char* name, const char* help, double value) {
      if (auto f = r.gauge(name, help)) (void)(*f)->set({}, value);
    };
    auto counter = [&](const char* name, const char* help, double value) {
      if (auto f = r.counter(name, help)) (void)(*f)->inc({}, value);
    };
    const std::int64_t t = now();
    counter("gpubank_exporter_refreshes_total", "Refreshes of the page (upstream, snapshot, PodResources, join).",
            static_cast<double>(refreshes));
    gauge("gpubank_exporter_refresh_duration_seconds", "Wall-clock time of the last refresh.", last_refresh_seconds);
    counter("gpubank_exporter_upstream_errors_total", "Upstream reads that failed (the last good samples are kept).",
            static_cast<double>(upstream_errors));
    gauge("gpubank_exporter_upstream_age_seconds", "Age of the upstream samples on this page.",
          static_cast<double>(t - last_upstream_ms) / 1000.0);
    counter("gpubank_exporter_snapshot_rejections_total",
            "Snapshot reads that failed or were rejected (bad signature, malformed, older); the last good one is kept.",
            static_cast<double>(snapshot_rejections));
    gauge("gpubank_exporter_snapshot_generation", "Generation of the metadata snapshot in use (0: none).",
          snapshot ? static_cast<double>(snapshot->generation) : 0.0);
    gauge("gpubank_exporter_snapshot_age_seconds", "Age of the metadata snapshot in use (-1: none).",
          snapshot ? static_cast<double>(t - snapshot->produced_ms) / 1000.0 : -1.0);
    gauge("gpubank_exporter_podresources_age_seconds", "Age of the last good PodResources answer (-1: none).",
          held != nullptr && held->age() ? std::chrono::duration<double>(*held->age()).count() : -1.0);
    counter("gpubank_exporter_podresources_errors_total", "PodResources List calls that failed.",
            held != nullptr ? static_cast<double>(held->errors) : 0.0);
    counter("gpubank_exporter_unresolved_devices_total",
            "Held device IDs a refresh could not place on a GPU (MIG without NVML, unknown forms), summed over refreshes.",
            static_cast<double>(totals.unresolved_devices));
    counter("gpubank_exporter_upstream_labels_removed_total",
            "Upstream labels the join decides (pod, namespace, attribution) removed from samples, summed over refreshes.",
            static_cast<double>(totals.upstream_labels_removed));
    counter("gpubank_exporter_upstream_duplicates_total",
            "Upstream device samples equal to an earlier one once the join's labels are removed (dropped), summed over refreshes.",
            static_cast<double>(totals.upstream_duplicates));
    counter("gpubank_exporter_dropped_label_values_total", "Snapshot values refused by the allowlist's rules, summed over refreshes.",
            static_cast<double>(totals.values_dropped));
    counter("gpubank_exporter_holder_collisions_total",
            "Device samples not written because another holder of the device had the same labels once refused values were "
            "dropped, summed over refreshes.",
            static_cast<double>(totals.holder_collisions));
    if (auto f = r.gauge("gpubank_exporter_samples", "Device samples on the page by mapping_status.", {"mapping_status"})) {
      for (const char* status : {"mapped", "unknown", "unallocated", "mig-parent"}) {
        const auto it = result.stats.by_status.find(status);
        (void)(*f)->set({status}, it == result.stats.by_status.end() ? 0.0 : static_cast<double>(it->second));
      }
    }
    const metrics::Exposition self = r.collect();
    for (const metrics::Family& f : self.families) result.exposition.families.push_back(f);
  }
};

std::string gzip_page(const std::string& text) {
  z_stream z{};
  if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) return {};
  std::string out(deflateBound(&z, static_cast<uLong>(text.size())), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in = static_cast<uInt>(text.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  const int done = deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return done == Z_STREAM_END ? out : std::string{};
}

Exporter::Exporter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Exporter::~Exporter() { impl_->server.stop(); }

Expected<std::unique_ptr<Exporter>> Exporter::create(ExporterOptions options, std::unique_ptr<UpstreamSource> upstream,
                                                     std::unique_ptr<SnapshotSource> snapshots,
                                                     std::unique_ptr<node::PodResourcesCache> pod_resources) {
  if (!upstream) return Unexpected{"exporter: no upstream source"};
  auto impl = std::make_unique<Impl>();
  impl->options = std::move(options);
  impl->upstream = std::move(upstream);
  impl->snapshots = std::move(snapshots);
  impl->pod_resources = std::move(pod_resources);
  Impl* raw = impl.get();
  // A node agent's memory is budgeted (bench/exporter_bench): each refresh frees the last
  // page's parse and join, which mimalloc would otherwise keep per thread.
  return_freed_memory_promptly();
  // The page goes out as headers and a body in two writes; with Nagle's algorithm the body
  // waited for the client's delayed ACK, 40 ms a scrape.
  impl->server.set_tcp_nodelay(true);
  // Prometheus keeps its connections alive and httplib holds a thread per open connection:
  // enough threads for every scraper a node sees at once (two Prometheus replicas, a
  // federation, a debugging curl), so that none waits for another's keep-alive to expire.
  impl->server.new_task_queue = [] { return new httplib::ThreadPool(kServerThreads); };
  // httplib closes a keep-alive connection after 5 requests by default: scrapers in step
  // then reconnect at the same moment, overflow httplib's listen backlog of 5 and wait 1 s
  // for the kernel to retransmit their SYN (seen as 1,005 ms p99s in the benchmark).
  impl->server.set_keep_alive_max_count(kKeepAliveRequests);
  impl->server.Get("/metrics", [raw](const httplib::Request& req, httplib::Response& res) {
    constexpr const char* kType = "text/plain; version=0.0.4; charset=utf-8";
    std::shared_ptr<const Page> page = raw->page.load();
    const bool gzip = !page->gzip.empty() && accepts_gzip(req.get_header_value("Accept-Encoding"));
    const std::string& body = gzip ? page->gzip : page->text;
    res.set_header("Vary", "Accept-Encoding");
    if (body.empty()) {
      res.set_content("", kType);
      return;
    }
    if (gzip) res.set_header("Content-Encoding", "gzip");
    // Served from the refresh's own bytes, without a copy; a provider of known length is
    // also never compressed again by httplib (which would gzip the text on every scrape).
    res.set_content_provider(body.size(), kType,
                             [page, bytes = body.data()](std::size_t offset, std::size_t length, httplib::DataSink& sink) {
                               return sink.write(bytes + offset, length);
                             });
  });
  impl->server.Get("/healthz", [](const httplib::Request&, httplib::Response& res) { res.set_content("ok\n", "text/plain"); });
  impl->server.Get("/readyz", [raw](const httplib::Request&, httplib::Response& res) {
    res.status = raw->has_page ? 200 : 503;
    res.set_content(raw->has_page ? "ok\n" : "no page yet\n", "text/plain");
  });
  const int port = impl->options.port == 0
                       ? impl->server.bind_to_any_port(impl->options.listen_address)
                       : (impl->server.bind_to_port(impl->options.listen_address, impl->options.port) ? impl->options.port : -1);
  if (port < 0) {
    return Unexpected{"--listen: cannot listen on " + impl->options.listen_address + ":" + std::to_string(impl->options.port)};
  }
  impl->port = port;
  return std::unique_ptr<Exporter>(new Exporter(std::move(impl)));
}

Expected<bool> Exporter::run(std::stop_token stop) {
  Impl& im = *impl_;
  if (im.pod_resources) {
    im.pod_resources->refresh();  // the first page already knows the node's allocations
    im.pod_resources->start();
  }
  std::thread http([&im] { im.server.listen_after_bind(); });
  std::mutex m;
  std::condition_variable_any cv;
  while (!stop.stop_requested()) {
    im.refresh();
    std::unique_lock lock(m);
    cv.wait_for(lock, stop, im.options.interval, [] { return false; });
  }
  im.server.stop();
  http.join();
  if (im.pod_resources) im.pod_resources->stop();
  return true;
}

void Exporter::refresh() { impl_->refresh(); }
int Exporter::port() const { return impl_->port; }
std::string Exporter::page() const { return impl_->page.load()->text; }

}  // namespace gpubank::attribution
