// The HTTP transport to the API server: synchronous HTTPS (Boost.Beast + OpenSSL) with the
// ClientConfig's trust and credentials, retries, limits and keep-alive.
//
//   - TLS: the config's CA (else the system's roots), its client certificate and key, SNI
//     and verification against tls_server_name (else the host). Plain http only when the
//     ClientConfig's URL is http, which parse_server_url allows for a loopback host alone.
//   - A bearer token from the TokenSource on every request; on 401 the source is expired
//     once and the request sent again (a rotated service-account token).
//   - Writes: server-side apply (PATCH application/apply-patch+yaml, fieldManager from the
//     options, force=true only when asked), merge patches and PUTs (the status
//     subresource), POST (Events) and DELETE with a propagationPolicy.
//   - Retries, for GET and apply (idempotent): 429, 5xx and connection failures, with exponential
//     backoff and jitter (seeded), or the server's Retry-After (seconds, or an HTTP date
//     against the injectable wall clock; http_date.hpp) when it sends one; both capped. Sleeping goes through an injectable function, so tests record the waits
//     instead of waiting. A failed TLS handshake (wrong CA, bad certificate) is not retried:
//     the next attempt would fail the same way. Other writes are retried only on 429 or 503
//     with Retry-After: the server refused them before doing anything.
//   - Limits: connect and read timeouts (failure guards), a response body cap (64 MiB by
//     default) and, for watches, a cap on one line (16 MiB).
//   - One kept-alive connection for plain requests, reused while the server keeps it open; a
//     reused connection that turns out to be closed is replaced once at no cost. A watch uses
//     a connection of its own, closed when the watch ends.
//
//   - Client-side rate limiting (rate_limiter.hpp): with a RateLimiter in the options, every
//     attempt of every request and every watch start first takes a token (and waits for it
//     through the same sleep); the lines of a watch take none. One limiter may be shared by
//     the Transports of a process.
//   - Cancellation: cancel(), from any thread, makes the call in progress return promptly
//     with reason "Cancelled" (a blocked watch included, even when the server sends
//     nothing: its socket's pending operations are cancelled on the Transport's own I/O
//     loop) and every later call fail the same way. Sleeps (backoff, Retry-After, rate
//     limit) end at once too, unless an injected sleep is in use.
//
// Errors carry the HTTP status and, when the server sent a Kubernetes Status object, its
// reason, message and code. Not thread-safe, except cancel() and cancelled(): one Transport
// per thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "k8s/client_config.hpp"
#include "k8s/rate_limiter.hpp"

namespace gpubank::k8s {

// Why a request failed. http_status 0: no HTTP answer (connection, TLS, timeout, a limit).
struct ApiError {
  int http_status = 0;
  std::string reason;   // Status.reason ("Expired", "NotFound", ...) or the transport's own
                        // ("ConnectionFailed", "TLSHandshake", "Timeout", "BodyTooLarge", "LineTooLong",
                        // "Cancelled")
  std::string message;  // Status.message, or what went wrong
  int code = 0;         // Status.code when the server sent one, else http_status
  bool retryable = false;

  [[nodiscard]] std::string describe() const;  // "GET /api/v1/pods: 410 Expired: too old resource version"
  std::string request;                         // "GET /api/v1/pods?limit=500"
};

// A value or an ApiError.
template <class T>
class [[nodiscard]] ApiResult {
 public:
  ApiResult(T value) : state_(std::move(value)) {}          // NOLINT(google-explicit-constructor)
  ApiResult(ApiError error) : state_(std::move(error)) {}   // NOLINT(google-explicit-constructor)
  [[nodiscard]] bool ok() const { return state_.index() == 0; }
  explicit operator bool() const { return ok(); }
  const T& value() const& { return std::get<0>(state_); }
  T& value() & { return std::get<0>(state_); }
  const T& operator*() const& { return value(); }
  const T* operator->() const { return &value(); }
  [[nodiscard]] const ApiError& error() const { return std::get<1>(state_); }

 private:
  std::variant<T, ApiError> state_;
};

struct Response {
  int status = 0;
  std::string content_type;
  std::string body;
};

struct RetryPolicy {
  int max_attempts = 5;  // attempts in all, the first included (the 401 re-send is free)
  std::chrono::milliseconds initial_delay{500};
  std::chrono::milliseconds max_delay{30'000};        // backoff cap
  std::chrono::milliseconds max_retry_after{60'000};  // cap on a server's Retry-After (seconds or date)
  double jitter = 0.2;  // each delay is stretched by a random factor in [1, 1 + jitter)
  std::uint64_t seed = 0x6770'7562'616e'6b;
};

struct TransportOptions {
  std::chrono::milliseconds connect_timeout{10'000};
  std::chrono::milliseconds read_timeout{60'000};         // a plain request, whole
  std::chrono::milliseconds watch_idle_timeout{330'000};  // a watch: the longest silence
  std::size_t max_body_bytes = std::size_t{64} << 20;
  std::size_t max_watch_line_bytes = std::size_t{16} << 20;
  RetryPolicy retry;
  // Every wait (backoff, Retry-After, rate limit). Empty: a real wait that cancel() ends.
  std::function<void(std::chrono::milliseconds)> sleep;
  // The wall clock a Retry-After date is measured against. Empty: the system clock.
  std::function<std::chrono::system_clock::time_point()> now;
  // Client-side rate limit, shared or not. Null: none (the controller always sets one).
  std::shared_ptr<RateLimiter> rate_limiter;
  std::string user_agent = "gpubank";
  std::string field_manager = "gpubank";  // fieldManager on every write
};

// The delay before retry number `retry` (0 for the first), from the policy alone: initial
// * 2^retry, stretched by jitter drawn from `random01` (a number in [0, 1)), capped at
// max_delay. Pure, for tests.
[[nodiscard]] std::chrono::milliseconds backoff_delay(const RetryPolicy& policy, int retry, double random01);

// A Kubernetes Status object in `body` as an ApiError for `http_status`; without one, a
// message from the status line and the body's first bytes.
[[nodiscard]] ApiError error_from_response(int http_status, std::string_view body);

// An error the client found itself (no HTTP status): a malformed answer, a kind discovery
// does not map, ...
[[nodiscard]] ApiError client_error(std::string reason, std::string message, std::string request = {});

// Query parameters in a request target, each escaped.
[[nodiscard]] std::string query_escape(std::string_view value);

class Transport {
 public:
  // Fails when the TLS material does not load (naming which).
  [[nodiscard]] static Expected<std::unique_ptr<Transport>> create(ClientConfig config, TransportOptions options = {});
  ~Transport();
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;

  // GET `target` (a path below the server's base path, with its query), expecting JSON. Any
  // 2xx is a success; other statuses are errors after the retries above.
  [[nodiscard]] ApiResult<Response> get(std::string_view target);

  // A streaming GET for a watch: each newline-terminated line of the body goes to `on_line`
  // as it arrives (empty lines skipped); `on_line` returns false to stop, which closes the
  // connection. Retries apply until the server answers 200; after that, a broken
  // connection or a timeout ends the call with an error (the caller resumes from what it
  // saw). Returns normally when the server ends the body or on_line stops.
  [[nodiscard]] ApiResult<std::monostate> stream(std::string_view target,
                                                 const std::function<bool(std::string_view line)>& on_line);

  // Writes. `path` is an object's (or, for create, a collection's) path below the base
  // path, without a query; any 2xx is a success. A Status in an error answer becomes the
  // ApiError, its details.causes (a 409's conflicting fields and managers) in the message.
  //
  // Server-side apply of `body` (JSON or YAML) as the field manager; `force` takes over the
  // fields other managers own instead of failing with 409 Conflict.
  [[nodiscard]] ApiResult<Response> apply(std::string_view path, std::string body, bool force = false);
  // A JSON merge patch (RFC 7386), e.g. of ".../status".
  [[nodiscard]] ApiResult<Response> merge_patch(std::string_view path, std::string body);
  // PUT: replaces the object (or its status, at ".../status").
  [[nodiscard]] ApiResult<Response> replace(std::string_view path, std::string body);
  // POST to a collection (an Event).
  [[nodiscard]] ApiResult<Response> create(std::string_view collection_path, std::string body);
  // DELETE with DeleteOptions.propagationPolicy ("Background", "Foreground", "Orphan").
  [[nodiscard]] ApiResult<Response> remove(std::string_view path, std::string_view propagation_policy = "Background");

  // Waits the backoff for retry number `retry` (0 first) through the injected sleep: for
  // callers that retry on their own (a watch resumed after a drop).
  void backoff(int retry);

  // Thread-safe: ends the call in progress and fails every later one with reason
  // "Cancelled". Final: a cancelled Transport stays cancelled.
  void cancel();
  [[nodiscard]] bool cancelled() const;

  // Requests sent, connections opened (tests check keep-alive with these).
  [[nodiscard]] std::size_t requests_sent() const;
  [[nodiscard]] std::size_t connections_opened() const;
  // The rate limiter's waits so far, in all.
  [[nodiscard]] std::chrono::nanoseconds throttled() const;
  [[nodiscard]] const ClientConfig& config() const;

 private:
  struct Impl;
  struct WriteRequest;
  ApiResult<Response> send(const WriteRequest& w);
  [[nodiscard]] std::string with_field_manager(std::string_view target) const;
  explicit Transport(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpubank::k8s
