#include "attribution/exporter.hpp"

#include <httplib.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "metrics/registry.hpp"

namespace gpubank::attribution {
namespace {

std::int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
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
  std::atomic<std::shared_ptr<const std::string>> page{std::make_shared<const std::string>()};
  std::atomic<bool> has_page{false};

  // Self-metrics, guarded by refresh_mutex (written by a refresh, rendered into its page).
  std::shared_ptr<const NodeSnapshot> snapshot;
  std::optional<metrics::Exposition> last_upstream_exposition;
  std::int64_t last_upstream_ms = 0;
  std::uint64_t upstream_errors = 0;
  std::uint64_t snapshot_rejections = 0;
  std::uint64_t refreshes = 0;
  double last_refresh_seconds = 0;

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
    add_self_metrics(result, held.get());
    auto text = metrics::write_text(result.exposition);
    if (!text) {
      log("page not replaced: " + text.error());
      return;
    }
    page.store(std::make_shared<const std::string>(std::move(*text)));
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
            "Held device IDs this refresh could not place on a GPU (MIG without NVML, unknown forms).",
            static_cast<double>(result.stats.unresolved_devices));
    counter("gpubank_exporter_upstream_labels_removed_total",
            "Upstream labels the join decides (pod, namespace, attribution) removed from samples.",
            static_cast<double>(result.stats.upstream_labels_removed));
    counter("gpubank_exporter_dropped_label_values_total", "Snapshot values refused by the allowlist's rules.",
            static_cast<double>(result.stats.values_dropped));
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
  impl->server.Get("/metrics", [raw](const httplib::Request&, httplib::Response& res) {
    res.set_content(*raw->page.load(), "text/plain; version=0.0.4; charset=utf-8");
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
std::string Exporter::page() const { return *impl_->page.load(); }

}  // namespace gpubank::attribution
