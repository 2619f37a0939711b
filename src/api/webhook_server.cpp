#include "api/webhook_server.hpp"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <optional>
#include <thread>

#include <pthread.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include "api/webhook_metrics.hpp"
#include "core/process_memory.hpp"
#include "policy/validate.hpp"

namespace gpubank::api {

// The serving certificate (with its chain) and key. Handshakes read the current one
// through OpenSSL's certificate callback, so a renewed certificate is used by every new
// connection as soon as it is loaded, without restarting the server.
class TlsCredentials {
 public:
  static Expected<std::shared_ptr<const TlsCredentials>> load(const std::string& cert_path, const std::string& key_path) {
    auto fail = [&](const std::string& what) -> Expected<std::shared_ptr<const TlsCredentials>> {
      ERR_clear_error();
      return Unexpected{"cannot start TLS with certificate " + cert_path + " and key " + key_path + ": " + what};
    };
    auto creds = std::shared_ptr<TlsCredentials>(new TlsCredentials());
    BIO* cert_bio = BIO_new_file(cert_path.c_str(), "r");
    if (cert_bio == nullptr) return fail("cannot read the certificate file");
    while (X509* x = PEM_read_bio_X509(cert_bio, nullptr, nullptr, nullptr)) creds->chain_.push_back(x);
    BIO_free(cert_bio);
    if (creds->chain_.empty()) return fail("no PEM certificate in the file");
    BIO* key_bio = BIO_new_file(key_path.c_str(), "r");
    if (key_bio == nullptr) return fail("cannot read the key file");
    creds->key_ = PEM_read_bio_PrivateKey(key_bio, nullptr, nullptr, nullptr);
    BIO_free(key_bio);
    if (creds->key_ == nullptr) return fail("no PEM private key in the file");
    if (X509_check_private_key(creds->chain_.front(), creds->key_) != 1) {
      return fail("the key does not belong to the certificate");
    }
    ERR_clear_error();
    return std::shared_ptr<const TlsCredentials>(std::move(creds));
  }

  ~TlsCredentials() {
    for (X509* x : chain_) X509_free(x);
    EVP_PKEY_free(key_);
  }
  TlsCredentials(const TlsCredentials&) = delete;
  TlsCredentials& operator=(const TlsCredentials&) = delete;

  // Puts the certificate, chain and key on one connection.
  bool apply(SSL* ssl) const {
    if (SSL_use_certificate(ssl, chain_.front()) != 1 || SSL_use_PrivateKey(ssl, key_) != 1) return false;
    for (std::size_t i = 1; i < chain_.size(); ++i) {
      if (SSL_add1_chain_cert(ssl, chain_[i]) != 1) return false;
    }
    return true;
  }

 private:
  TlsCredentials() = default;
  std::vector<X509*> chain_;
  EVP_PKEY* key_ = nullptr;
};

namespace {

Timestamp wall_now() { return std::chrono::time_point_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now()); }

double unix_seconds(Timestamp t) { return std::chrono::duration<double>(t.time_since_epoch()).count(); }

// Fixed-width milliseconds, so audit lines sort by time as strings.
std::string audit_time(Timestamp now) {
  return date::format("%FT%TZ", std::chrono::floor<std::chrono::milliseconds>(now));
}

// One audit line; keys in a fixed, readable order.
nlohmann::ordered_json audit_entry(const AdmissionDecision& d, Timestamp now) {
  nlohmann::ordered_json e = {
      {"time", audit_time(now)},
      {"uid", d.uid},
      {"operation", d.operation},
      {"kind", d.kind},
      {"namespace", d.namespace_},
      {"name", d.name},
      {"user", d.user.username},
      {"groups", d.user.groups},
      {"dryRun", d.dry_run},
      {"allowed", d.allowed},
      {"code", d.code},
      {"rules", d.rules},
  };
  if (!d.sub_resource.empty()) e["subResource"] = d.sub_resource;
  if (!d.message.empty()) e["message"] = d.message;
  if (!d.warnings.empty()) e["warnings"] = d.warnings;
  // Mutations are decisions too: which endpoint decided, and the change it made.
  if (d.mutating) e["endpoint"] = "/mutate";
  if (!d.patch.empty()) e["patch"] = nlohmann::ordered_json::parse(d.patch.dump());
  return e;
}

// "UPDATE GPUQuotaPolicy research-training-h100 by rita", or what is known of a request
// that could not be read.
std::string describe(const AdmissionDecision& d) {
  if (d.operation.empty()) return "an unreadable request" + (d.uid.empty() ? "" : " (uid " + d.uid + ")");
  std::string kind = d.kind.substr(d.kind.find('/') + 1);
  std::string name = d.namespace_.empty() ? d.name : d.namespace_ + "/" + d.name;
  return d.operation + " " + kind + " " + name + " by " + d.user.username;
}

}  // namespace

// ---- the HTTP side: Boost.Beast on Boost.Asio ------------------------------------------------
//
// One io_context runs the HTTPS listener on `threads` threads; every connection is a Session
// on its own strand, so a slow or idle client costs a little memory and no thread. The
// decisions (review() and the audit append, which waits for fdatasync) run on a separate
// pool, so the event loop never waits for the disk. The health listener has its own
// io_context and thread: nothing on the HTTPS side can delay a probe.

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;
using HttpRequest = http::request<http::string_body>;
using HttpResponse = http::response<http::string_body>;
using SslStream = beast::ssl_stream<beast::tcp_stream>;
using Duration = std::chrono::steady_clock::duration;

namespace {

// The server's threads carry names (gpubank-io, gpubank-review, gpubank-health) so that
// `top -H` and /proc/PID/task/*/comm show where its CPU goes (bench/webhook_load reads them).
void name_this_thread_once(const char* name) {
  thread_local bool named = false;
  if (named) return;
  named = true;
  pthread_setname_np(pthread_self(), name);  // at most 15 characters: they are
}

constexpr std::uint32_t kHeaderLimit = 8 * 1024;  // the API server's headers are a few hundred bytes
// A connection's read buffer holds a whole header (Beast parses it in one piece) and reads
// bodies in pieces of up to this size; small, since every waiting connection has one.
constexpr std::size_t kReadBufferLimit = 2 * kHeaderLimit;
constexpr int kListenBacklog = 128;                // connections the kernel holds before accept
// Connections over max_connections that are still answered (429, then closed); beyond these
// a connection is closed as soon as it is accepted.
constexpr int kRefusalLane = 64;
constexpr int kHealthConnections = 16;
constexpr auto kHealthTimeout = std::chrono::seconds(5);
constexpr int kRetryAfterSeconds = 1;

Duration seconds(double s) {
  return std::chrono::duration_cast<Duration>(std::chrono::duration<double>(s));
}

// A body that is counted (by the parser's body_limit) and dropped: the refusal lane reads a
// request to its end, so that the client reads the 429 instead of a connection reset.
struct DiscardBody {
  struct value_type {};
  class reader {
   public:
    template <bool isRequest, class Fields>
    reader(http::header<isRequest, Fields>&, value_type&) {}
    void init(const boost::optional<std::uint64_t>&, beast::error_code& ec) { ec = {}; }
    template <class ConstBufferSequence>
    std::size_t put(const ConstBufferSequence& buffers, beast::error_code& ec) {
      ec = {};
      return net::buffer_size(buffers);
    }
    void finish(beast::error_code& ec) { ec = {}; }
  };
};

std::string_view path_of(std::string_view target) { return target.substr(0, target.find('?')); }

// The endpoints that take an AdmissionReview: POST /validate decides, POST /mutate decides
// and may patch. Both go through the same limits, framing checks, review pool and audit log.
enum class Endpoint { Validate, Mutate };

std::optional<Endpoint> review_endpoint(std::string_view target) {
  const std::string_view path = path_of(target);
  if (path == "/validate") return Endpoint::Validate;
  if (path == "/mutate") return Endpoint::Mutate;
  return std::nullopt;
}

// A denial in AdmissionReview form for what never reached review(): the HTTP status says
// what happened, the body is still one the API server (or a person) can read.
std::string unread_review(int status, const std::string& reason, const std::string& message) {
  AdmissionDecision d;
  d.allowed = false;
  d.code = status;
  d.reason = reason;
  d.message = message;
  return review_response(d).dump();
}

HttpResponse make_response(http::status status, unsigned version, std::string body, const char* type) {
  HttpResponse res{status, version};
  res.set(http::field::content_type, type);
  res.body() = std::move(body);
  return res;
}

}  // namespace

struct WebhookServer::Runtime {
  // Decrements a live-connection counter when the connection ends, however it ends.
  class Slot {
   public:
    explicit Slot(std::atomic<std::int64_t>& counter) : counter_(&counter) { ++*counter_; }
    Slot(Slot&& o) noexcept : counter_(std::exchange(o.counter_, nullptr)) {}
    Slot(const Slot&) = delete;
    Slot& operator=(const Slot&) = delete;
    Slot& operator=(Slot&&) = delete;
    ~Slot() {
      if (counter_ != nullptr) --*counter_;
    }

   private:
    std::atomic<std::int64_t>* counter_;
  };

  enum class Lane { Serve, Refuse, Health };

  // One connection: (TLS handshake), then requests one after another. The first request
  // must be complete within request_timeout of the accept; later ones may be preceded by up
  // to idle_timeout of silence, then have request_timeout from their first byte.
  template <class Stream>
  class Session : public std::enable_shared_from_this<Session<Stream>> {
   public:
    Session(Runtime& rt, Stream stream, Lane lane, std::atomic<std::int64_t>& counter)
        : rt_(rt), stream_(std::move(stream)), lane_(lane), slot_(counter) {}

    void start() {
      lowest().expires_after(lane_ == Lane::Health ? Duration(kHealthTimeout) : rt_.request_timeout);
      if constexpr (std::is_same_v<Stream, SslStream>) {
        stream_.async_handshake(net::ssl::stream_base::server,
                                [self = this->shared_from_this()](beast::error_code ec) {
                                  if (ec) return self->fail(ec, Phase::Reading);
                                  self->read_request();
                                });
      } else {
        read_request();
      }
    }

   private:
    beast::tcp_stream& lowest() { return beast::get_lowest_layer(stream_); }
    Duration request_timeout() const {
      return lane_ == Lane::Health ? Duration(kHealthTimeout) : rt_.request_timeout;
    }

    // Waits (idle_timeout) for the next request's first byte, unless some are buffered or
    // this is the connection's first request (whose deadline runs from the accept).
    void wait_for_request() {
      if (buffer_.size() > 0) {
        lowest().expires_after(request_timeout());
        return read_request();
      }
      lowest().expires_after(lane_ == Lane::Health ? Duration(kHealthTimeout) : rt_.idle_timeout);
      stream_.async_read_some(buffer_.prepare(4096), [self = this->shared_from_this()](beast::error_code ec,
                                                                                       std::size_t n) {
        if (ec) return self->fail(ec, Phase::Idle);
        self->buffer_.commit(n);
        self->lowest().expires_after(self->request_timeout());
        self->read_request();
      });
    }

    void read_request() {
      if (lane_ == Lane::Refuse) {
        discard_.emplace();
        discard_->header_limit(kHeaderLimit);
        discard_->body_limit(kMaxReadBytes);
        http::async_read(stream_, buffer_, *discard_,
                         [self = this->shared_from_this()](beast::error_code ec, std::size_t) {
                           if (ec) return self->fail(ec, Phase::Reading);
                           self->respond(self->rt_.too_busy(self->discard_->get().version()), true);
                         });
        return;
      }
      parser_.emplace();
      parser_->header_limit(kHeaderLimit);
      parser_->body_limit(lane_ == Lane::Health ? 4096 : kMaxReadBytes);
      http::async_read(stream_, buffer_, *parser_, [self = this->shared_from_this()](beast::error_code ec, std::size_t) {
        self->on_request(ec);
      });
    }

    void on_request(beast::error_code ec) {
      if (ec == http::error::body_limit || ec == http::error::header_limit) {
        // Stop reading here: the rest of the body is never read, the connection closes.
        const bool body = ec == http::error::body_limit;
        if (body) ++rt_.too_large;
        rt_.metrics().rejected(body ? Rejection::TooLarge : Rejection::HeadersTooLarge);
        // (A Content-Length above the limit fails the header itself: its start line is read.)
        const bool review = review_endpoint(parser_->get().target()).has_value();
        const unsigned version = parser_->get().version() == 10 ? 10 : 11;
        const auto status = body ? http::status::payload_too_large : http::status::request_header_fields_too_large;
        std::string message = body ? "the request body is larger than the webhook reads (" +
                                         std::to_string(kMaxReadBytes >> 20) + " MiB)"
                                   : "the request headers are larger than the webhook reads (8 KiB)";
        std::string text = review ? unread_review(static_cast<int>(status),
                                                    body ? "RequestEntityTooLarge" : "BadRequest", message)
                                    : nlohmann::json{{"status", static_cast<int>(status)}, {"message", message}}.dump();
        return respond(make_response(status, version, std::move(text), "application/json"), true);
      }
      if (ec == http::error::end_of_stream) return close();
      if (ec && ec.category() == http::make_error_code(http::error::bad_target).category()) {
        // Not HTTP/1.x we can read: say so once and close.
        rt_.metrics().rejected(Rejection::Malformed);
        return respond(make_response(http::status::bad_request, 11,
                                     nlohmann::json{{"status", 400}, {"message", ec.message()}}.dump(),
                                     "application/json"),
                       true);
      }
      if (ec) return fail(ec, Phase::Reading);
      HttpRequest req = parser_->release();
      const auto endpoint = review_endpoint(req.target());
      if (lane_ == Lane::Health || !endpoint || req.method() != http::verb::post) {
        HttpResponse res = rt_.answer_plain(req, lane_ == Lane::Health);
        return respond(std::move(res), !req.keep_alive());
      }
      if (auto refusal = rt_.check_framing(req)) {
        const bool close_after = !refusal->keep_alive() || !req.keep_alive();
        return respond(std::move(*refusal), close_after);
      }
      // Decide off the event loop; come back to this connection's strand to answer.
      net::post(rt_.review_pool, [self = this->shared_from_this(), req = std::move(req), endpoint = *endpoint]() mutable {
        name_this_thread_once("gpubank-review");
        HttpResponse res = self->rt_.decide(req, endpoint);
        const bool close_after = !req.keep_alive();
        net::post(self->stream_.get_executor(), [self, res = std::move(res), close_after]() mutable {
          self->respond(std::move(res), close_after);
        });
      });
    }

    void respond(HttpResponse res, bool close_after) {
      res_ = std::move(res);
      res_.keep_alive(!close_after);
      res_.prepare_payload();
      lowest().expires_after(request_timeout());
      http::async_write(stream_, res_, [self = this->shared_from_this(), close_after](beast::error_code ec, std::size_t) {
        if (ec) return self->fail(ec, Phase::Writing);
        if (close_after) return self->close();
        self->wait_for_request();
      });
    }

    // Where a connection was when it failed: a deadline while a request (or the TLS
    // handshake before it) is read refuses that request; one between requests only ends
    // a kept-alive connection.
    enum class Phase { Reading, Idle, Writing };

    void fail(beast::error_code ec, Phase phase) {
      if (ec == beast::error::timeout) {
        ++rt_.timed_out;
        if (phase == Phase::Reading) rt_.metrics().rejected(Rejection::Timeout);
      }
      close();
    }

    void close() {
      beast::error_code ignored;
      lowest().socket().shutdown(tcp::socket::shutdown_both, ignored);
      lowest().close();
    }

    Runtime& rt_;
    Stream stream_;
    Lane lane_;
    Slot slot_;
    beast::flat_buffer buffer_{kReadBufferLimit};
    std::optional<http::request_parser<http::string_body>> parser_;
    std::optional<http::request_parser<DiscardBody>> discard_;
    HttpResponse res_;
  };

  static Expected<std::unique_ptr<Runtime>> create(WebhookServer& server) {
    const WebhookOptions& o = server.options_;
    auto bad = [](const std::string& field, const std::string& rule) -> Expected<std::unique_ptr<Runtime>> {
      return Unexpected{"webhook option " + field + ": " + rule};
    };
    if (o.threads < 1) return bad("threads", "must be at least 1");
    if (o.review_threads < 1) return bad("review_threads", "must be at least 1");
    if (o.max_connections < 1) return bad("max_connections", "must be at least 1");
    if (!(o.request_timeout > 0)) return bad("request_timeout", "must be more than 0 seconds");
    if (!(o.idle_timeout > 0)) return bad("idle_timeout", "must be more than 0 seconds");
    if (o.health_port < -1 || o.health_port > 65535) return bad("health_port", "must be -1 (none) or 0 to 65535");
    try {
      return std::unique_ptr<Runtime>(new Runtime(server));
    } catch (const std::exception& e) {
      return Unexpected{std::string("cannot create the TLS context: ") + e.what()};
    }
  }

  explicit Runtime(WebhookServer& s)
      : server(s),
        request_timeout(seconds(s.options_.request_timeout)),
        idle_timeout(seconds(s.options_.idle_timeout)),
        review_pool(static_cast<std::size_t>(s.options_.review_threads)) {
    SSL_CTX* ctx = tls_context.native_handle();
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
    // Every handshake takes the credentials loaded last: a renewed certificate serves new
    // connections as soon as reload() has read it.
    SSL_CTX_set_cert_cb(
        ctx,
        [](SSL* ssl, void* arg) -> int {
          const auto creds = static_cast<WebhookServer*>(arg)->tls();
          return creds && creds->apply(ssl) ? 1 : 0;
        },
        &server);
  }

  ~Runtime() {
    stop();
    review_pool.join();  // decisions under way finish; their answers are dropped
    acceptor.reset();
    health_acceptor.reset();
  }

  static Expected<tcp::acceptor> listen(net::io_context& ioc, const std::string& address, int port) {
    auto fail = [&](const std::string& why) -> Expected<tcp::acceptor> {
      return Unexpected{"cannot listen on " + address + ":" + std::to_string(port) + ": " + why};
    };
    beast::error_code ec;
    const auto ip = net::ip::make_address(address, ec);
    if (ec) return fail("not an IP address");
    const tcp::endpoint endpoint(ip, static_cast<unsigned short>(port));
    tcp::acceptor acceptor(ioc);
    acceptor.open(endpoint.protocol(), ec);
    if (!ec) acceptor.set_option(net::socket_base::reuse_address(true), ec);
    if (!ec) acceptor.bind(endpoint, ec);
    if (!ec) acceptor.listen(kListenBacklog, ec);
    if (ec) return fail(ec.message());
    return acceptor;
  }

  Expected<int> bind() {
    const WebhookOptions& o = server.options_;
    auto main = listen(ioc, o.address, o.port);
    if (!main) return Unexpected{main.error()};
    if (o.health_port >= 0) {
      auto health = listen(health_ioc, o.health_address, o.health_port);
      if (!health) return Unexpected{health.error() + " (health listener)"};
      health_acceptor.emplace(std::move(*health));
      health_port = health_acceptor->local_endpoint().port();
    }
    acceptor.emplace(std::move(*main));
    return static_cast<int>(acceptor->local_endpoint().port());
  }

  void accept() {
    acceptor->async_accept(net::make_strand(ioc), [this](beast::error_code ec, tcp::socket socket) {
      if (ec == net::error::operation_aborted || !acceptor->is_open()) return;
      if (!ec) {
        ++accepted;
        beast::error_code ignored;
        socket.set_option(tcp::no_delay(true), ignored);  // answers are more than one TLS record
        if (open_connections < server.options_.max_connections) {
          start_session(std::move(socket), Lane::Serve, open_connections);
        } else if (refusing < kRefusalLane) {
          start_session(std::move(socket), Lane::Refuse, refusing);
        } else {
          ++dropped;
          socket.close(ignored);
        }
      }
      accept();
    });
  }

  void start_session(tcp::socket socket, Lane lane, std::atomic<std::int64_t>& counter) {
    std::make_shared<Session<SslStream>>(*this, SslStream(std::move(socket), tls_context), lane, counter)->start();
  }

  void accept_health() {
    health_acceptor->async_accept(health_ioc, [this](beast::error_code ec, tcp::socket socket) {
      if (ec == net::error::operation_aborted || !health_acceptor->is_open()) return;
      if (!ec) {
        if (health_connections < kHealthConnections) {
          std::make_shared<Session<beast::tcp_stream>>(*this, beast::tcp_stream(std::move(socket)), Lane::Health,
                                                       health_connections)
              ->start();
        } else {
          beast::error_code ignored;
          socket.close(ignored);
        }
      }
      accept_health();
    });
  }

  bool serve() {
    if (!acceptor) return false;
    accept();
    std::thread health_thread;
    if (health_acceptor) {
      accept_health();
      health_thread = std::thread([this] {
        name_this_thread_once("gpubank-health");
        health_ioc.run();
      });
    }
    // Every event-loop thread is the server's own (the caller only waits), so each carries
    // its name and the caller's thread keeps the process's.
    std::vector<std::thread> workers;
    for (int i = 0; i < std::max(1, server.options_.threads); ++i) {
      workers.emplace_back([this] {
        name_this_thread_once("gpubank-io");
        ioc.run();
      });
    }
    for (auto& w : workers) w.join();
    health_ioc.stop();
    if (health_thread.joinable()) health_thread.join();
    return true;
  }

  void stop() {
    ioc.stop();
    health_ioc.stop();
  }

  // 429 with Retry-After: the API server's client waits that long and sends the request
  // again within the webhook's timeout (docs/webhook.md, "When it is full").
  HttpResponse too_busy(unsigned version) {
    ++refused;
    metrics().rejected(Rejection::OverCapacity);
    HttpResponse res = make_response(
        http::status::too_many_requests, version,
        unread_review(429, "TooManyRequests",
                      "the webhook is serving " + std::to_string(server.options_.max_connections) +
                          " connections, its limit; retry after " + std::to_string(kRetryAfterSeconds) + " s"),
        "application/json");
    res.set(http::field::retry_after, std::to_string(kRetryAfterSeconds));
    return res;
  }

  WebhookMetrics& metrics() { return *server.metrics_; }

  // GET /healthz, /readyz and /metrics, and what is not a route.
  HttpResponse answer_plain(const HttpRequest& req, bool health_only) {
    const std::string_view path = path_of(req.target());
    if (path == "/healthz" || path == "/readyz" || path == "/metrics") {
      if (req.method() != http::verb::get) {
        HttpResponse res = make_response(http::status::method_not_allowed, req.version(),
                                         nlohmann::json{{"status", 405}, {"path", path}}.dump(), "application/json");
        res.set(http::field::allow, "GET");
        return res;
      }
      if (path == "/metrics") {
        return make_response(http::status::ok, req.version(), server.metrics_text(), kMetricsContentType.data());
      }
      const bool ok = path == "/healthz" || server.ready_;
      return make_response(ok ? http::status::ok : http::status::service_unavailable, req.version(),
                           ok ? "ok\n" : "not ready\n", "text/plain");
    }
    if (!health_only && review_endpoint(path)) {
      HttpResponse res = make_response(
          http::status::method_not_allowed, req.version(),
          unread_review(405, "MethodNotAllowed", "POST an AdmissionReview to " + std::string(path)), "application/json");
      res.set(http::field::allow, "POST");
      return res;
    }
    return make_response(http::status::not_found, req.version(),
                         nlohmann::json{{"status", 404}, {"path", path}}.dump(), "application/json");
  }

  // A /validate or /mutate request the webhook will not decide because of how it is
  // framed; nullopt when it may be decided.
  std::optional<HttpResponse> check_framing(const HttpRequest& req) {
    const auto encoding = req[http::field::content_encoding];
    if (!encoding.empty() && !beast::iequals(encoding, "identity")) {
      // The API server never compresses what it sends; a compressed body could unpack to
      // any size, so none is unpacked.
      HttpResponse res = make_response(
          http::status::unsupported_media_type, req.version(),
          unread_review(415, "UnsupportedMediaType",
                        "Content-Encoding " + std::string(encoding) + " is not accepted: send the AdmissionReview "
                        "uncompressed"),
          "application/json");
      res.set(http::field::accept_encoding, "identity");
      metrics().rejected(Rejection::UnsupportedEncoding);
      return res;
    }
    const bool chunked = req.chunked();
    const bool has_length = req.find(http::field::content_length) != req.end();
    if (!chunked && !has_length) {
      // HTTP/1.1 reads such a body as empty and the rest as the next request: say what is
      // missing and close instead.
      HttpResponse res = make_response(
          http::status::length_required, req.version(),
          unread_review(411, "LengthRequired",
                        "a POST to " + std::string(path_of(req.target())) +
                            " needs Content-Length or chunked encoding"),
          "application/json");
      res.keep_alive(false);
      metrics().rejected(Rejection::LengthRequired);
      return res;
    }
    return std::nullopt;
  }

  // POST /validate and /mutate: decide, audit, answer (on the review pool).
  HttpResponse decide(const HttpRequest& req, Endpoint endpoint) {
    const auto started = std::chrono::steady_clock::now();
    const bool mutating = endpoint == Endpoint::Mutate;
    auto record = [&](const AdmissionDecision& d) {
      metrics().decision(mutating, d, std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
    };
    AdmissionDecision decision;
    try {
      const Timestamp now = wall_now();
      const auto snap = server.snapshot();
      decision = endpoint == Endpoint::Mutate ? review_mutation(*snap, req.body(), now) : review(*snap, req.body(), now);
      if (auto written = server.audit_->append(audit_entry(decision, now)); !written) {
        // Fail closed: a decision (or a patch) nobody can audit is not made.
        metrics().audit_failure();
        decision.allowed = false;
        decision.code = 500;
        decision.reason = "InternalError";
        decision.message = "gpubank could not record the decision in its audit log (" + written.error() + ")";
        decision.warnings.clear();
        decision.patch = nlohmann::json::array();
        spdlog::error("{}", decision.message);
      }
      if (!decision.allowed) spdlog::info("denied {}: {}", describe(decision), decision.message);
      if (!decision.patch.empty()) spdlog::debug("patched {}: {}", describe(decision), decision.patch.dump());
      HttpResponse res =
          make_response(http::status::ok, req.version(), review_response(decision).dump(), "application/json");
      record(decision);  // once the answer exists: a throw above is recorded (once) below
      return res;
    } catch (const std::exception& e) {
      spdlog::error("request failed: {}", e.what());
      AdmissionDecision d;
      d.mutating = mutating;
      d.code = 500;
      d.reason = "InternalError";
      d.message = std::string("internal error: ") + e.what();
      // Still audited: a request that got no decision is a denial like any other.
      if (auto written = server.audit_->append(audit_entry(d, wall_now())); !written) {
        metrics().audit_failure();
        spdlog::error("{}", written.error());
      }
      record(d);
      return make_response(http::status::internal_server_error, req.version(), review_response(d).dump(),
                           "application/json");
    }
  }

  WebhookServer& server;
  const Duration request_timeout;
  const Duration idle_timeout;
  std::atomic<std::int64_t> open_connections{0};
  std::atomic<std::int64_t> refusing{0};
  std::atomic<std::int64_t> health_connections{0};
  std::atomic<std::int64_t> accepted{0};
  std::atomic<std::int64_t> refused{0};
  std::atomic<std::int64_t> dropped{0};
  std::atomic<std::int64_t> timed_out{0};
  std::atomic<std::int64_t> too_large{0};
  int health_port = -1;
  // Connections hold the counters above and the TLS context, so those outlive the
  // io_contexts, whose destruction frees the connections still queued in them.
  net::ssl::context tls_context{net::ssl::context::tls_server};
  net::io_context ioc;
  net::io_context health_ioc{1};
  std::optional<tcp::acceptor> acceptor;
  std::optional<tcp::acceptor> health_acceptor;
  // Joined in ~Runtime before anything else goes: its tasks hold connections.
  net::thread_pool review_pool;
};

namespace {

// A snapshot of `set` when its guardrails can be used (`origin` names where they came from).
Expected<std::shared_ptr<const PolicySnapshot>> snapshot_of(policy::PolicySet set, const std::string& guardrails_file,
                                                            const std::string& origin, std::vector<std::string>& notes) {
  const Diagnostics findings = policy::check_all(set);
  std::string fatal;
  for (const auto& f : findings) {
    const bool in_guardrails = (!guardrails_file.empty() && f.file == guardrails_file) || f.kind == "PlatformGuardrails" ||
                               f.rule == "guardrails.missing";
    if (f.severity == Severity::Error && in_guardrails) {
      fatal += "\n  " + f.to_string();
    } else {
      notes.push_back(f.to_string());
    }
  }
  if (!fatal.empty()) return Unexpected{"the guardrails cannot be used:" + fatal};
  if (set.guardrails() == nullptr) return Unexpected{origin + " holds no PlatformGuardrails"};
  return std::make_shared<const PolicySnapshot>(std::move(set));
}

}  // namespace

Expected<std::shared_ptr<const PolicySnapshot>> load_snapshot(const WebhookOptions& options,
                                                              std::vector<std::string>& notes) {
  std::vector<std::string> paths{options.guardrails};
  if (!options.cluster_policies) paths.insert(paths.end(), options.policies.begin(), options.policies.end());
  return snapshot_of(policy::load_policy_set(paths), options.guardrails, options.guardrails, notes);
}

Expected<bool> WebhookServer::replace_policies(policy::PolicySet cluster, std::vector<std::string>& notes) {
  std::string origin = "the cluster";
  if (cluster.guardrails() == nullptr) {
    // Bootstrap: until the cluster holds a PlatformGuardrails, the file's stand in.
    const policy::PolicySet file = policy::load_policy_set({options_.guardrails});
    if (const policy::PolicyObject* g = file.guardrails(); g != nullptr) {
      cluster.add(*g);
      origin = "the cluster (guardrails from " + options_.guardrails + ")";
    }
  }
  auto fresh = snapshot_of(std::move(cluster), std::string(), origin, notes);
  if (!fresh) {
    metrics_->reload(false, 0);
    return Unexpected{fresh.error()};
  }
  std::lock_guard lock(snapshot_mu_);
  snapshot_ = std::move(*fresh);
  metrics_->reload(true, unix_seconds(wall_now()));
  return true;
}

WebhookServer::WebhookServer(WebhookOptions options, std::unique_ptr<AuditLog> audit,
                             std::shared_ptr<const PolicySnapshot> snapshot, std::shared_ptr<const TlsCredentials> tls)
    : options_(std::move(options)), audit_(std::move(audit)), snapshot_(std::move(snapshot)), tls_(std::move(tls)) {}

Expected<std::unique_ptr<WebhookServer>> WebhookServer::create(const WebhookOptions& options) {
  return_freed_memory_promptly();  // its load comes in bursts (process_memory.hpp)
  std::vector<std::string> notes;
  auto snapshot = load_snapshot(options, notes);
  if (!snapshot) return Unexpected{snapshot.error()};
  for (const auto& n : notes) spdlog::warn("policy: {}", n);
  auto tls = TlsCredentials::load(options.tls_cert, options.tls_key);
  if (!tls) return Unexpected{tls.error()};
  auto audit = AuditLog::open(options.audit_log);
  if (!audit) return Unexpected{audit.error()};
  std::unique_ptr<WebhookServer> server(
      new WebhookServer(options, std::move(*audit), std::move(*snapshot), std::move(*tls)));
  server->fingerprint_ = server->inputs_fingerprint();
  try {
    server->metrics_ = std::make_unique<WebhookMetrics>(options.version);
  } catch (const std::exception& e) {
    return Unexpected{std::string("cannot create the metrics: ") + e.what()};
  }
  server->metrics_->policies_loaded(unix_seconds(wall_now()));
  auto runtime = Runtime::create(*server);
  if (!runtime) return Unexpected{runtime.error()};
  server->runtime_ = std::move(*runtime);
  return server;
}

std::shared_ptr<const TlsCredentials> WebhookServer::tls() const {
  std::lock_guard lock(snapshot_mu_);
  return tls_;
}

// Size and modification time of every input file, in a fixed order.
std::string WebhookServer::inputs_fingerprint() const {
  namespace fs = std::filesystem;
  std::string out;
  auto add = [&](const fs::path& p) {
    std::error_code ec;
    const auto size = fs::file_size(p, ec);
    const auto time = fs::last_write_time(p, ec);
    out += p.string() + ":" + std::to_string(ec ? 0 : size) + ":" +
           std::to_string(ec ? 0 : time.time_since_epoch().count()) + "\n";
  };
  std::vector<std::string> roots{options_.tls_cert, options_.tls_key};
  if (!options_.cluster_policies) {
    roots.push_back(options_.guardrails);
    roots.insert(roots.end(), options_.policies.begin(), options_.policies.end());
  }
  for (const auto& root : roots) {
    std::error_code ec;
    if (!fs::is_directory(root, ec)) {
      add(root);
      continue;
    }
    std::vector<fs::path> files;
    for (fs::recursive_directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
      if (it->is_regular_file(ec)) files.push_back(it->path());
    }
    std::sort(files.begin(), files.end());
    for (const auto& f : files) add(f);
  }
  return out;
}

Expected<bool> WebhookServer::reload_if_changed(std::vector<std::string>& notes, bool& reloaded) {
  reloaded = false;
  if (inputs_fingerprint() == fingerprint_) return true;
  reloaded = true;
  return reload(notes);
}

std::shared_ptr<const PolicySnapshot> WebhookServer::snapshot() const {
  std::lock_guard lock(snapshot_mu_);
  return snapshot_;
}

Expected<bool> WebhookServer::reload(std::vector<std::string>& notes) {
  fingerprint_ = inputs_fingerprint();  // a failed load is not retried until files change again
  if (options_.cluster_policies) {
    // The policies follow the cluster (replace_policies); only the certificate is a file.
    auto tls = TlsCredentials::load(options_.tls_cert, options_.tls_key);
    metrics_->reload(tls.ok(), 0);
    if (!tls) return Unexpected{tls.error()};
    std::lock_guard lock(snapshot_mu_);
    tls_ = std::move(*tls);
    return true;
  }
  auto fresh = load_snapshot(options_, notes);
  auto tls = TlsCredentials::load(options_.tls_cert, options_.tls_key);
  {
    std::lock_guard lock(snapshot_mu_);
    if (fresh) snapshot_ = std::move(*fresh);
    if (tls) tls_ = std::move(*tls);
  }
  metrics_->reload(fresh.ok() && tls.ok(), fresh ? unix_seconds(wall_now()) : 0);
  if (!fresh && !tls) return Unexpected{fresh.error() + "; " + tls.error()};
  if (!fresh) return Unexpected{fresh.error() + " (the TLS certificate was reloaded)"};
  if (!tls) return Unexpected{tls.error() + " (the policies were reloaded)"};
  return true;
}

WebhookServer::~WebhookServer() {
  stop();
  runtime_.reset();  // joins the review pool while the audit log and snapshot still exist
}

Expected<int> WebhookServer::bind() { return runtime_->bind(); }

int WebhookServer::health_port() const { return runtime_->health_port; }

bool WebhookServer::serve() {
  ready_ = true;
  const bool ok = runtime_->serve();
  ready_ = false;
  return ok;
}

void WebhookServer::stop() {
  ready_ = false;
  if (runtime_) runtime_->stop();
}

WebhookStats WebhookServer::stats() const {
  const Runtime& rt = *runtime_;
  WebhookStats s;
  s.open_connections = rt.open_connections + rt.refusing;
  s.accepted = rt.accepted;
  s.refused = rt.refused;
  s.dropped = rt.dropped;
  s.timed_out = rt.timed_out;
  s.too_large = rt.too_large;
  return s;
}

std::string WebhookServer::metrics_text() const { return metrics_->render(stats()); }

}  // namespace gpubank::api
