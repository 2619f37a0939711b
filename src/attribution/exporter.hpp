// `gpubank exporter`, the node agent: GPU samples attributed to team, person and workload
// without any Kubernetes credentials and without any I/O on the scrape path.
//
//   refresh thread, every `interval`:  upstream samples (dcgm-exporter or NVML),
//                                      the metadata snapshot (metasync, verified),
//                                      the last PodResources answer (its own thread)
//                                      -> enrich() -> the page, swapped in atomically
//   GET /metrics                       the last page + the exporter's self-metrics
//   GET /healthz, /readyz              ready once a page exists
//
// A failing input never empties the page: upstream down keeps the last page (and says how
// old it is), a missing or rejected snapshot keeps the last good one (samples are still
// exported, mapping_status="unknown" when nothing is known), PodResources down keeps its
// last answer. Self-metrics (gpubank_exporter_*): refresh duration, upstream errors,
// PodResources age and errors, snapshot age, generation and rejections, samples by
// mapping_status, unresolved devices, upstream labels removed.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <stop_token>
#include <string>

#include "attribution/enrich.hpp"
#include "attribution/sources.hpp"
#include "core/expected.hpp"
#include "node/pod_resources_cache.hpp"

namespace gpubank::attribution {

struct ExporterOptions {
  NodeInfo node{};
  std::chrono::milliseconds interval{5000};
  std::string listen_address = "0.0.0.0";
  int port = 9410;  // 0: any free port (tests)
  std::function<void(const std::string&)> log{};
  // Wall clock for the snapshot's age (tests give their own).
  std::function<std::int64_t()> now_ms{};
};

// The page compressed as /metrics serves it to a client that accepts gzip (once per
// refresh, not per scrape); empty when zlib fails (the text is served then).
[[nodiscard]] std::string gzip_page(const std::string& text);

class Exporter {
 public:
  // `pod_resources` may be null (no kubelet socket: every held device is unknown, every
  // sample "unallocated"); `snapshots` may be null (nothing is attributed).
  [[nodiscard]] static Expected<std::unique_ptr<Exporter>> create(ExporterOptions options,
                                                                  std::unique_ptr<UpstreamSource> upstream,
                                                                  std::unique_ptr<SnapshotSource> snapshots,
                                                                  std::unique_ptr<node::PodResourcesCache> pod_resources);
  ~Exporter();
  Exporter(const Exporter&) = delete;
  Exporter& operator=(const Exporter&) = delete;

  // Binds the port, starts the refresh and PodResources threads, serves until `stop`.
  [[nodiscard]] Expected<bool> run(std::stop_token stop);
  // One refresh on the caller's thread (tests; the first page before serving).
  void refresh();
  [[nodiscard]] int port() const;
  // What GET /metrics answers now.
  [[nodiscard]] std::string page() const;

  struct Impl;

 private:
  explicit Exporter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpubank::attribution
