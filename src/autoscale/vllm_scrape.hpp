// Reading vLLM's /metrics over HTTP, as Prometheus scrapes it: one GET per replica, each
// bounded by a timeout for the whole answer (a server that trickles bytes cannot hold the
// sync), a size limit applied after any decompression, an optional bearer token. The pages
// go through serving::read_vllm_text; a window of the last rate window's scrapes gives the
// rates (TTFT p95, finished requests), so the first sync has none (the autoscaler holds on
// them) and the second, a sync period later, has them.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "autoscale/live_autoscaler.hpp"
#include "core/expected.hpp"
#include "serving/signals.hpp"

namespace gpubank::autoscale {

struct ScrapeClientOptions {
  std::chrono::milliseconds timeout{5000};  // the whole answer of one target
  std::size_t max_bytes = std::size_t{32} << 20;
  std::string bearer_token;
  // model_name: only that model's series. replica_label: the label naming replicas when one
  // page carries several (the twin's); "" for vLLM itself (one replica per page, named by
  // its URL's host:port).
  serving::ScrapeOptions page;
  std::int64_t rate_window_ms = 120'000;
};

class VllmScraper {
 public:
  // Errors: a URL that is not http://host[:port][/path], no URL.
  static Expected<std::unique_ptr<VllmScraper>> create(std::vector<std::string> urls, ScrapeClientOptions options);
  virtual ~VllmScraper() = default;

  // Scrapes every target at now_ms (Unix ms, after the previous call's). A target that
  // fails (connection, timeout, HTTP status, size, a page read_vllm_text refuses) is left
  // out and named in `unread`; when every target fails the reading is an error.
  virtual Expected<SignalReading> read(std::int64_t now_ms) = 0;
};

}  // namespace gpubank::autoscale
