// The admission webhook's Prometheus metrics, served as text format 0.0.4 on GET /metrics
// (docs/metrics-contract.md, "The webhook's series"): decisions by endpoint, kind, operation
// and result, how long they took, requests refused before a decision, connections, policy
// reloads, audit failures and the build.
//
// Recording is cheap on every thread: refusals and reloads are atomics, a decision takes
// one short lock. The metrics::Registry is not thread-safe, so it is only touched under
// that lock, and the scrape renders it there, with the connection figures as of then.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "api/admission.hpp"

namespace gpubank::metrics {
class Registry;
class CounterFamily;
class GaugeFamily;
class HistogramFamily;
}  // namespace gpubank::metrics

namespace gpubank::api {

struct WebhookStats;

// Why a request was answered (or closed) before review() saw it: label `reason` of
// gpubank_webhook_rejected_requests_total.
enum class Rejection {
  TooLarge,             // 413: a body above what the server reads
  HeadersTooLarge,      // 431
  Malformed,            // 400: not HTTP/1.x the server can read
  UnsupportedEncoding,  // 415: a compressed body
  LengthRequired,       // 411: a POST without Content-Length or chunked encoding
  Timeout,              // closed at the request deadline (TLS handshake included)
  OverCapacity,         // 429: over --max-connections
};
inline constexpr std::size_t kRejectionCount = 7;

// The content type of the text format, as Prometheus asks for it.
inline constexpr std::string_view kMetricsContentType = "text/plain; version=0.0.4; charset=utf-8";

// Bounded label values (exposed for tests). Anything the webhook does not know becomes
// "other": kinds, operations and every other string come from the request, and a label
// value per client-chosen string would let any client grow the series without limit.
[[nodiscard]] std::string_view kind_label(std::string_view group_and_kind);  // "apps/Deployment" -> "Deployment"
[[nodiscard]] std::string_view operation_label(std::string_view operation);  // "CREATE" ...
// "allowed"; "denied" (a policy said no); "error" (no judgement: unreadable, too large,
// unsupported kind, or the webhook's own failure).
[[nodiscard]] std::string_view result_label(const AdmissionDecision& decision);
[[nodiscard]] std::string_view rejection_label(Rejection why);

class WebhookMetrics {
 public:
  explicit WebhookMetrics(const std::string& version);
  ~WebhookMetrics();
  WebhookMetrics(const WebhookMetrics&) = delete;
  WebhookMetrics& operator=(const WebhookMetrics&) = delete;

  // One answered review of /validate (mutating = false) or /mutate, and its wall-clock time.
  void decision(bool mutating, const AdmissionDecision& d, double seconds);
  void rejected(Rejection why) { rejections_[static_cast<std::size_t>(why)].fetch_add(1, std::memory_order_relaxed); }
  [[nodiscard]] std::int64_t rejections(Rejection why) const {
    return rejections_[static_cast<std::size_t>(why)].load(std::memory_order_relaxed);
  }
  // A reload of the inputs; `policies_at` (Unix seconds, > 0) when a new policy snapshot
  // was taken.
  void reload(bool success, double policies_at);
  // The policies in force since (Unix seconds): at start, before any reload.
  void policies_loaded(double at);
  void audit_failure() { audit_failures_.fetch_add(1, std::memory_order_relaxed); }

  // The page for GET /metrics, with `stats` as the connection figures.
  [[nodiscard]] std::string render(const WebhookStats& stats) const;

 private:
  std::array<std::atomic<std::int64_t>, kRejectionCount> rejections_{};
  std::atomic<std::int64_t> reload_success_{0};
  std::atomic<std::int64_t> reload_failure_{0};
  std::atomic<std::int64_t> audit_failures_{0};
  std::atomic<double> policies_at_{0};

  mutable std::mutex mu_;  // guards the registry and everything it owns
  std::unique_ptr<metrics::Registry> registry_;
  metrics::CounterFamily* requests_ = nullptr;
  metrics::HistogramFamily* duration_ = nullptr;
  metrics::CounterFamily* rejected_ = nullptr;
  metrics::GaugeFamily* open_connections_ = nullptr;
  metrics::CounterFamily* accepted_ = nullptr;
  metrics::CounterFamily* dropped_ = nullptr;
  metrics::CounterFamily* reloads_ = nullptr;
  metrics::GaugeFamily* reload_time_ = nullptr;
  metrics::CounterFamily* audit_failures_total_ = nullptr;
};

}  // namespace gpubank::api
