#include "k8s/transport.hpp"

#include "k8s/http_date.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <mutex>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>

namespace gpubank::k8s {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;
using Json = nlohmann::json;

std::string ApiError::describe() const {
  std::string out = request.empty() ? std::string() : request + ": ";
  if (http_status != 0) out += std::to_string(http_status) + " ";
  out += reason;
  if (!message.empty()) out += ": " + message;
  return out;
}

std::chrono::milliseconds backoff_delay(const RetryPolicy& policy, int retry, double random01) {
  const double base = static_cast<double>(policy.initial_delay.count()) * std::pow(2.0, std::min(retry, 30));
  const double stretched = base * (1.0 + policy.jitter * std::clamp(random01, 0.0, 1.0));
  const double capped = std::min(stretched, static_cast<double>(policy.max_delay.count()));
  return std::chrono::milliseconds(static_cast<std::int64_t>(capped));
}

ApiError error_from_response(int http_status, std::string_view body) {
  ApiError e;
  e.http_status = http_status;
  e.code = http_status;
  e.retryable = http_status == 429 || http_status >= 500;
  const auto status = nlohmann::json::parse(body, nullptr, false);
  if (status.is_object() && status.value("kind", "") == "Status") {
    if (status.contains("reason") && status["reason"].is_string()) e.reason = status["reason"].get<std::string>();
    if (status.contains("message") && status["message"].is_string()) e.message = status["message"].get<std::string>();
    if (status.contains("code") && status["code"].is_number_integer()) e.code = status["code"].get<int>();
    // A 409 from server-side apply (and a 422) lists what conflicted in details.causes: the
    // field and the manager that owns it. The message may summarise them; the causes are
    // what a caller needs to decide whether to force, so they are always spelled out.
    const auto details = status.find("details");
    if (details != status.end() && details->is_object() && details->contains("causes") &&
        (*details)["causes"].is_array()) {
      std::string causes;
      for (const auto& c : (*details)["causes"]) {
        if (!c.is_object()) continue;
        const std::string field = c.contains("field") && c["field"].is_string() ? c["field"].get<std::string>() : "";
        const std::string text = c.contains("message") && c["message"].is_string() ? c["message"].get<std::string>() : "";
        causes += (causes.empty() ? "" : "; ") + (field.empty() ? text : field + ": " + text);
      }
      if (!causes.empty()) e.message += (e.message.empty() ? "" : " ") + ("[causes: " + causes + "]");
    }
  }
  if (e.reason.empty()) e.reason = std::string(http::obsolete_reason(static_cast<http::status>(http_status)));
  if (e.message.empty() && !body.empty()) {
    // Not a Status (a proxy's HTML page, say): its start, printable bytes only.
    std::string head;
    for (const char c : body.substr(0, 200)) head += (c >= 0x20 && c < 0x7f) ? c : '.';
    e.message = "response body: " + head;
  }
  return e;
}

ApiError client_error(std::string reason, std::string message, std::string request) {
  ApiError e;
  e.reason = std::move(reason);
  e.message = std::move(message);
  e.request = std::move(request);
  return e;
}

std::string query_escape(std::string_view value) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (const char c : value) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u) != 0 || c == '-' || c == '_' || c == '.' || c == '~') {
      out += c;
    } else {
      out += '%';
      out += kHex[u >> 4];
      out += kHex[u & 15];
    }
  }
  return out;
}

namespace {

using SslStream = beast::ssl_stream<beast::tcp_stream>;

}  // namespace

// Which failures a request may be sent again after.
enum class Retry {
  kIdempotent,       // GET, server-side apply: 429, 5xx, connection failures
  kOnlyWhenRefused,  // other writes: 429/503 with Retry-After (refused before the handler)
};

struct Transport::WriteRequest {
  http::verb method;
  std::string target;
  std::string body;
  std::string content_type;
  Retry retry;
};

namespace {

ApiError transport_error(std::string reason, std::string message, bool retryable) {
  ApiError e;
  e.reason = std::move(reason);
  e.message = std::move(message);
  e.retryable = retryable;
  return e;
}

std::string mib(std::size_t bytes) {
  return bytes % (1u << 20) == 0 ? std::to_string(bytes >> 20) + " MiB" : std::to_string(bytes) + " bytes";
}

// One connection: TLS or, for a loopback fake, plain TCP.
struct Connection {
  std::unique_ptr<SslStream> tls;
  std::unique_ptr<beast::tcp_stream> plain;
  beast::flat_buffer buffer;
  bool used = false;  // has carried a request already (a keep-alive reuse may find it closed)

  beast::tcp_stream& lowest() { return tls ? beast::get_lowest_layer(*tls) : *plain; }
  void close() {
    beast::error_code ignored;
    lowest().socket().shutdown(tcp::socket::shutdown_both, ignored);
    lowest().close();
  }
};

}  // namespace

struct Transport::Impl {
  ClientConfig config;
  TransportOptions options;
  net::io_context ioc;
  net::ssl::context tls_context{net::ssl::context::tls_client};
  std::unique_ptr<Connection> idle;  // the kept-alive connection for plain requests
  std::mt19937_64 random;
  std::size_t requests = 0;
  std::size_t connections = 0;

  // Runs one asynchronous operation on `c` to completion: the stream's expiry gives
  // synchronous calls their timeouts. `current` tells a cancel() (a handler posted to this
  // loop, so it runs here, on this thread) which socket to cancel.
  template <class Start>
  beast::error_code run(Connection& c, Start&& start) {
    if (cancelled.load()) return net::error::operation_aborted;
    beast::error_code result = net::error::would_block;
    current = &c;
    std::forward<Start>(start)([&result](beast::error_code ec, auto&&...) { result = ec; });
    ioc.restart();
    ioc.run();
    current = nullptr;
    return result;
  }

  // Cancellation: the flag is set before the cancelling handler is posted, and run() looks
  // at it before it starts anything, so a cancel() is never lost between two operations.
  std::atomic<bool> cancelled{false};
  Connection* current = nullptr;  // only touched on the Transport's thread
  std::mutex sleep_m;
  std::condition_variable sleep_cv;
  std::chrono::nanoseconds throttled{0};

  static ApiError cancelled_error() { return transport_error("Cancelled", "the transport was cancelled", false); }

  template <class F>
  auto with_stream(Connection& c, F&& f) {
    if (c.tls) return f(*c.tls);
    return f(*c.plain);
  }

  ApiError from_ec(const beast::error_code& ec, std::string_view during) {
    if (cancelled.load()) return cancelled_error();
    if (ec == beast::error::timeout) {
      return transport_error("Timeout", std::string(during) + " timed out", true);
    }
    if (ec == http::error::body_limit) {
      return transport_error("BodyTooLarge",
                             "response body is larger than the " + mib(options.max_body_bytes) +
                                 " limit (TransportOptions::max_body_bytes)",
                             false);
    }
    return transport_error("ConnectionFailed", std::string(during) + ": " + ec.message(), true);
  }

  ApiResult<std::unique_ptr<Connection>> connect() {
    auto c = std::make_unique<Connection>();
    beast::error_code ec;
    tcp::resolver resolver(ioc);
    const auto endpoints = resolver.resolve(config.server.host, std::to_string(config.server.port), ec);
    if (ec) return transport_error("ConnectionFailed", "resolving " + config.server.host + ": " + ec.message(), true);
    ++connections;
    if (config.server.scheme == "https") {
      c->tls = std::make_unique<SslStream>(ioc, tls_context);
    } else {
      c->plain = std::make_unique<beast::tcp_stream>(ioc);
    }
    c->lowest().expires_after(options.connect_timeout);
    ec = run(*c, [&](auto handler) { c->lowest().async_connect(endpoints, [handler](beast::error_code e, const auto&) mutable { handler(e); }); });
    if (ec) return from_ec(ec, "connecting to " + config.server.host_for_url() + ":" + std::to_string(config.server.port));
    if (c->tls) {
      const std::string& name = config.tls_server_name.empty() ? config.server.host : config.tls_server_name;
      beast::error_code parse_ec;
      (void)net::ip::make_address(name, parse_ec);
      const bool is_ip = !parse_ec;
      // SNI carries DNS names only (RFC 6066); an IP address is verified but not sent.
      if (!is_ip && SSL_set_tlsext_host_name(c->tls->native_handle(), name.c_str()) != 1) {
        return transport_error("TLSHandshake", "cannot set SNI name " + name, false);
      }
      if (!config.insecure_skip_tls_verify) c->tls->set_verify_callback(net::ssl::host_name_verification(name));
      c->lowest().expires_after(options.connect_timeout);
      ec = run(*c, [&](auto handler) { c->tls->async_handshake(net::ssl::stream_base::client, handler); });
      if (ec == beast::error::timeout) return from_ec(ec, "TLS handshake");
      if (ec) {
        return transport_error("TLSHandshake", "TLS handshake with " + name + ": " + ec.message(), false);
      }
    }
    return c;
  }

  http::request<http::string_body> request_for(const WriteRequest& w, bool watch) {
    http::request<http::string_body> req{w.method, config.server.base_path + w.target, 11};
    const bool default_port = (config.server.scheme == "https" && config.server.port == 443) ||
                              (config.server.scheme == "http" && config.server.port == 80);
    req.set(http::field::host, default_port ? config.server.host_for_url()
                                            : config.server.host_for_url() + ":" + std::to_string(config.server.port));
    req.set(http::field::user_agent, options.user_agent);
    req.set(http::field::accept, "application/json");
    req.keep_alive(!watch);
    if (w.method != http::verb::get && w.method != http::verb::delete_) {
      req.set(http::field::content_type, w.content_type);
      req.body() = w.body;
    } else if (!w.body.empty()) {
      req.set(http::field::content_type, "application/json");
      req.body() = w.body;
    }
    req.prepare_payload();
    return req;
  }

  // The bearer token, or an error when the source has none.
  std::optional<ApiError> authorize(http::request<http::string_body>& req) {
    if (!config.token) return std::nullopt;
    auto token = config.token->token();
    if (!token.ok()) return transport_error("Unauthorized", "no bearer token: " + token.error(), false);
    req.set(http::field::authorization, "Bearer " + *token);
    return std::nullopt;
  }

  // Sends the request on `c` and reads the whole response (capped).
  ApiResult<Response> exchange(Connection& c, const http::request<http::string_body>& req, bool& close_after) {
    ++requests;
    c.lowest().expires_after(options.read_timeout);
    auto ec = with_stream(c, [&](auto& s) { return run(c, [&](auto handler) { http::async_write(s, req, handler); }); });
    if (ec) return from_ec(ec, "sending the request");
    http::response_parser<http::string_body> parser;
    parser.body_limit(options.max_body_bytes);
    parser.header_limit(64 * 1024);
    ec = with_stream(c, [&](auto& s) { return run(c, [&](auto handler) { http::async_read(s, c.buffer, parser, handler); }); });
    if (ec) return from_ec(ec, "reading the response");
    auto& res = parser.get();
    close_after = !res.keep_alive();
    Response out;
    out.status = static_cast<int>(res.result_int());
    out.content_type = std::string(res[http::field::content_type]);
    out.body = std::move(res.body());
    last_retry_after = retry_after(res[http::field::retry_after]);
    return out;
  }

  // Retry-After in seconds (what the API server sends) or as an HTTP date; nullopt when
  // absent or malformed (the backoff applies).
  std::optional<std::chrono::milliseconds> retry_after(std::string_view value) const {
    return parse_retry_after(value, options.now ? options.now() : std::chrono::system_clock::now());
  }

  std::optional<std::chrono::milliseconds> last_retry_after;

  // One attempt on the kept-alive connection (or a new one); a reused connection the
  // server had closed is replaced once.
  ApiResult<Response> attempt_plain(const http::request<http::string_body>& req) {
    for (int fresh = 0;; ++fresh) {
      if (!idle) {
        auto c = connect();
        if (!c.ok()) return c.error();
        idle = std::move(c.value());
      }
      const bool reused = idle->used;
      idle->used = true;
      bool close_after = false;
      auto res = exchange(*idle, req, close_after);
      if (!res.ok()) {
        idle->close();
        idle.reset();
        if (reused && fresh == 0 && res.error().reason == "ConnectionFailed") continue;
        return res;
      }
      if (close_after) {
        idle->close();
        idle.reset();
      }
      return res;
    }
  }

  void sleep_for(std::chrono::milliseconds d) {
    if (options.sleep) {
      options.sleep(d);
    } else {
      std::unique_lock lock(sleep_m);
      sleep_cv.wait_for(lock, d, [this] { return cancelled.load(); });
    }
  }

  // A token from the rate limiter, waiting for it when the bucket is empty.
  void throttle() {
    if (!options.rate_limiter) return;
    const auto wait = options.rate_limiter->reserve();
    if (wait <= std::chrono::nanoseconds::zero()) return;
    throttled += wait;
    sleep_for(std::chrono::ceil<std::chrono::milliseconds>(wait));
  }

  std::chrono::milliseconds delay_before(int retry, const ApiError& error) {
    if (last_retry_after && (error.http_status == 429 || error.http_status >= 500)) {
      return std::min<std::chrono::milliseconds>(*last_retry_after, options.retry.max_retry_after);
    }
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    return backoff_delay(options.retry, retry, unit(random));
  }

  // Whether a failed attempt may be sent again under `rule`.
  bool may_retry(Retry rule, const ApiError& error) const {
    switch (rule) {
      case Retry::kIdempotent:
        return error.retryable;
      case Retry::kOnlyWhenRefused:
        // 429 (priority and fairness) and 503 with Retry-After are sent before the request
        // reaches a handler: the write did not happen, so sending it again cannot do it
        // twice. Any other 5xx or a dropped connection may come after the write was done.
        return (error.http_status == 429 || error.http_status == 503) && last_retry_after.has_value();
    }
    return false;
  }

  // The retry loop around `attempt` (which returns a Response or an error): 401 refresh once,
  // then the failures `w.retry` allows, with backoff.
  template <class Attempt>
  ApiResult<Response> with_retries(const WriteRequest& w, bool watch, Attempt&& attempt) {
    bool refreshed = false;
    const std::string what = std::string(http::to_string(w.method)) + " " + w.target;
    for (int tries = 1;; ++tries) {
      throttle();
      if (cancelled.load()) {
        auto e = cancelled_error();
        e.request = what;
        return e;
      }
      auto req = request_for(w, watch);
      if (auto e = authorize(req)) {
        e->request = what;
        return *e;
      }
      last_retry_after.reset();
      auto res = attempt(req);
      ApiError error;
      if (res.ok()) {
        if (res->status >= 200 && res->status < 300) return res;
        error = error_from_response(res->status, res->body);
        if (res->status == 401 && config.token && !refreshed) {
          // A rotated token: read it again, send again, once.
          refreshed = true;
          config.token->expire();
          --tries;
          continue;
        }
      } else {
        error = res.error();
      }
      error.request = what;
      error.retryable = may_retry(w.retry, error);
      if (!error.retryable || tries >= options.retry.max_attempts) {
        if (error.retryable) error.message += " (gave up after " + std::to_string(tries) + " attempts)";
        return error;
      }
      sleep_for(delay_before(tries - 1, error));  // a cancel() meanwhile ends the loop above
    }
  }
};

Transport::Transport(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Transport::~Transport() = default;

Expected<std::unique_ptr<Transport>> Transport::create(ClientConfig config, TransportOptions options) {
  auto impl = std::make_unique<Impl>();
  impl->random.seed(options.retry.seed);
  auto& ctx = impl->tls_context;
  beast::error_code ec;
  ctx.set_options(net::ssl::context::default_workarounds | net::ssl::context::no_sslv2 | net::ssl::context::no_sslv3 |
                  net::ssl::context::no_tlsv1 | net::ssl::context::no_tlsv1_1);
  if (config.insecure_skip_tls_verify) {
    ctx.set_verify_mode(net::ssl::verify_none);
  } else {
    ctx.set_verify_mode(net::ssl::verify_peer);
    if (!config.ca_pem.empty()) {
      ctx.add_certificate_authority(net::buffer(config.ca_pem), ec);
      if (ec) return Unexpected{"ca_pem: cannot load the CA certificates: " + ec.message()};
    } else {
      ctx.set_default_verify_paths(ec);
      if (ec) return Unexpected{"cannot load the system's trusted CA certificates: " + ec.message()};
    }
  }
  if (!config.client_certificate_pem.empty()) {
    ctx.use_certificate_chain(net::buffer(config.client_certificate_pem), ec);
    if (ec) return Unexpected{"client_certificate_pem: cannot load the client certificate: " + ec.message()};
    ctx.use_private_key(net::buffer(config.client_key_pem), net::ssl::context::pem, ec);
    if (ec) return Unexpected{"client_key_pem: cannot load the client key: " + ec.message()};
  }
  if (config.server.scheme != "https" && !(config.server.scheme == "http" && is_loopback_host(config.server.host))) {
    return Unexpected{"server: plain http is allowed only to a loopback host, got " + config.server.to_string()};
  }
  impl->config = std::move(config);
  impl->options = std::move(options);
  return std::unique_ptr<Transport>(new Transport(std::move(impl)));
}

ApiResult<Response> Transport::get(std::string_view target) {
  return send({http::verb::get, std::string(target), "", "", Retry::kIdempotent});
}

ApiResult<Response> Transport::send(const WriteRequest& w) {
  return impl_->with_retries(w, false, [this](const auto& req) { return impl_->attempt_plain(req); });
}

std::string Transport::with_field_manager(std::string_view target) const {
  const char sep = target.find('?') == std::string_view::npos ? '?' : '&';
  return std::string(target) + sep + "fieldManager=" + query_escape(impl_->options.field_manager);
}

ApiResult<Response> Transport::apply(std::string_view path, std::string body, bool force) {
  std::string target = with_field_manager(path);
  if (force) target += "&force=true";
  // Server-side apply is idempotent (the same configuration gives the same object), so it
  // is retried like a GET.
  return send({http::verb::patch, std::move(target), std::move(body), "application/apply-patch+yaml", Retry::kIdempotent});
}

ApiResult<Response> Transport::merge_patch(std::string_view path, std::string body) {
  return send({http::verb::patch, with_field_manager(path), std::move(body), "application/merge-patch+json",
               Retry::kOnlyWhenRefused});
}

ApiResult<Response> Transport::replace(std::string_view path, std::string body) {
  return send({http::verb::put, with_field_manager(path), std::move(body), "application/json", Retry::kOnlyWhenRefused});
}

ApiResult<Response> Transport::create(std::string_view collection_path, std::string body) {
  // A POST that timed out may have created the object; sent again it would create a second
  // Event (or fail with AlreadyExists). Only a refusal before the handler is retried.
  return send({http::verb::post, with_field_manager(collection_path), std::move(body), "application/json",
               Retry::kOnlyWhenRefused});
}

ApiResult<Response> Transport::remove(std::string_view path, std::string_view propagation_policy) {
  const Json options{{"kind", "DeleteOptions"}, {"apiVersion", "v1"}, {"propagationPolicy", propagation_policy}};
  return send({http::verb::delete_, std::string(path), options.dump(), "application/json", Retry::kOnlyWhenRefused});
}

ApiResult<std::monostate> Transport::stream(std::string_view target,
                                            const std::function<bool(std::string_view)>& on_line) {
  Impl& im = *impl_;
  std::unique_ptr<Connection> conn;
  std::optional<http::response_parser<http::buffer_body>> parser;
  // Establishing the watch goes through the retry loop; a non-200 answer's body is read
  // (capped) so that its Status comes back as the error.
  const WriteRequest w{http::verb::get, std::string(target), "", "", Retry::kIdempotent};
  auto established = im.with_retries(w, true, [&](const http::request<http::string_body>& req) -> ApiResult<Response> {
    auto c = im.connect();
    if (!c.ok()) return c.error();
    conn = std::move(c.value());
    ++im.requests;
    conn->lowest().expires_after(im.options.read_timeout);
    auto ec = im.with_stream(*conn, [&](auto& s) { return im.run(*conn, [&](auto h) { http::async_write(s, req, h); }); });
    if (ec) return im.from_ec(ec, "sending the watch request");
    parser.emplace();
    // A watch runs for minutes, so its lines are capped instead of its body. Not boost::none:
    // Boost 1.74 compares a Content-Length with the optional and refuses every such body.
    parser->body_limit(std::numeric_limits<std::uint64_t>::max());
    parser->header_limit(64 * 1024);
    ec = im.with_stream(*conn, [&](auto& s) { return im.run(*conn, [&](auto h) { http::async_read_header(s, conn->buffer, *parser, h); }); });
    if (ec) return im.from_ec(ec, "reading the watch response header");
    Response r;
    r.status = static_cast<int>(parser->get().result_int());
    im.last_retry_after = im.retry_after(parser->get()[http::field::retry_after]);
    if (r.status == 200) return r;
    // An error: read its (small) body for the Status.
    std::string body;
    char buf[8192];
    while (!parser->is_done() && body.size() < (1u << 20)) {
      parser->get().body().data = buf;
      parser->get().body().size = sizeof buf;
      ec = im.with_stream(*conn, [&](auto& s) { return im.run(*conn, [&](auto h) { http::async_read_some(s, conn->buffer, *parser, h); }); });
      body.append(buf, sizeof buf - parser->get().body().size);
      if (ec && ec != http::error::need_buffer) break;
    }
    conn->close();
    r.body = std::move(body);
    return r;
  });
  if (!established.ok()) return established.error();

  const std::string what = "GET " + std::string(target);
  std::string pending;
  std::vector<char> buf(64 * 1024);
  while (!parser->is_done()) {
    parser->get().body().data = buf.data();
    parser->get().body().size = buf.size();
    conn->lowest().expires_after(im.options.watch_idle_timeout);
    auto ec = im.with_stream(*conn, [&](auto& s) { return im.run(*conn, [&](auto h) { http::async_read_some(s, conn->buffer, *parser, h); }); });
    const std::size_t n = buf.size() - parser->get().body().size;
    if (ec && ec != http::error::need_buffer) {
      conn->close();
      auto e = im.from_ec(ec, "watch stream");
      e.request = what;
      return e;
    }
    pending.append(buf.data(), n);
    std::size_t start = 0;
    for (std::size_t nl; (nl = pending.find('\n', start)) != std::string::npos; start = nl + 1) {
      std::string_view line(pending.data() + start, nl - start);
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      if (line.empty()) continue;
      if (!on_line(line)) {
        conn->close();
        return std::monostate{};
      }
    }
    pending.erase(0, start);
    if (pending.size() > im.options.max_watch_line_bytes) {
      conn->close();
      auto e = transport_error("LineTooLong",
                               "a watch event is longer than the " + mib(im.options.max_watch_line_bytes) +
                                   " limit (TransportOptions::max_watch_line_bytes)",
                               false);
      e.request = what;
      return e;
    }
  }
  conn->close();
  if (!pending.empty() && !on_line(pending)) return std::monostate{};
  return std::monostate{};
}

void Transport::backoff(int retry) {
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  impl_->sleep_for(backoff_delay(impl_->options.retry, retry, unit(impl_->random)));
}

void Transport::cancel() {
  Impl& im = *impl_;
  {
    std::lock_guard lock(im.sleep_m);  // a sleeper between its check and its wait sees it
    im.cancelled = true;
  }
  im.sleep_cv.notify_all();
  // Runs on the Transport's thread, inside its run() (now, or at its next one): the socket
  // is only ever touched there. A blocked read completes with operation_aborted.
  net::post(im.ioc, [&im] {
    if (im.current != nullptr) {
      beast::error_code ignored;
      im.current->lowest().socket().cancel(ignored);
    }
  });
}

bool Transport::cancelled() const { return impl_->cancelled.load(); }
std::chrono::nanoseconds Transport::throttled() const { return impl_->throttled; }

std::size_t Transport::requests_sent() const { return impl_->requests; }
std::size_t Transport::connections_opened() const { return impl_->connections; }
const ClientConfig& Transport::config() const { return impl_->config; }

}  // namespace gpubank::k8s
