#include "attribution/metasync.hpp"

#include <httplib.h>
#include <sys/stat.h>

#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "metrics/registry.hpp"

namespace gpubank::attribution {

namespace {

using Json = nlohmann::json;

void send_error(httplib::Response& res, int status, const std::string& field, const std::string& rule,
                const std::string& message) {
  const Json body{{"error", message}, {"field", field}, {"rule", rule}};
  res.status = status;
  res.set_content(body.dump() + "\n", "application/json");
}

// httplib's stop() does nothing before the listening loop has started (it would then listen
// for ever): wait for the loop, or for the thread to have ended on its own.
void stop_server(httplib::Server& server, std::thread& thread, const std::atomic<bool>& done) {
  if (!thread.joinable()) return;
  while (!done.load() && !server.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  if (!done.load()) server.stop();
  thread.join();
}

std::int64_t system_now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

std::string snapshot_etag(std::string_view node, std::int64_t generation) {
  return "\"" + std::string(node) + "." + std::to_string(generation) + "\"";
}

bool if_none_match(std::string_view header, std::string_view etag) {
  while (!header.empty()) {
    const std::size_t comma = header.find(',');
    std::string_view tag = header.substr(0, comma);
    header = comma == std::string_view::npos ? std::string_view() : header.substr(comma + 1);
    while (!tag.empty() && (tag.front() == ' ' || tag.front() == '\t')) tag.remove_prefix(1);
    while (!tag.empty() && (tag.back() == ' ' || tag.back() == '\t')) tag.remove_suffix(1);
    if (tag == "*") return true;
    // If-None-Match compares weakly (RFC 9110 13.1.2): W/"x" matches "x".
    if (tag.starts_with("W/")) tag.remove_prefix(2);
    if (tag == etag) return true;
  }
  return false;
}

struct Metasync::Impl {
  MetasyncOptions options;
  std::unique_ptr<k8s::Informer> informer;

  mutable std::mutex m;
  SnapshotBuilder builder;
  struct Encoded {
    std::int64_t generation = 0;
    std::shared_ptr<const std::string> wire;
  };
  std::map<std::string, Encoded, std::less<>> encoded;  // the last served wire per node
  std::set<std::string> dirty;                          // nodes whose file is behind
  bool files_complete = false;                          // every node's file written once listed
  // The informer reports "synced" before it hands the first list's events to the handler:
  // ready only once the builder has had them all.
  std::optional<std::size_t> first_list_size;
  std::size_t events_handled = 0;
  std::uint64_t writes_ok = 0;
  std::uint64_t writes_failed = 0;
  std::map<std::string, std::uint64_t> requests;  // by status code
  std::condition_variable cv;                     // the flusher's
  bool stopping = false;

  std::mutex write_m;  // one flush at a time: files are renamed in generation order

  std::mutex state_m;
  std::condition_variable_any state_cv;  // the informer synced or ended

  httplib::Server server;
  httplib::Server health;
  std::thread server_thread;
  std::thread health_thread;
  std::atomic<bool> server_done{false};
  std::atomic<bool> health_done{false};
  std::thread flusher;
  int port = -1;
  int health_port = -1;
  bool started = false;

  explicit Impl(MetasyncOptions o) : options(std::move(o)), builder(BuilderOptions{options.tombstone}) {}

  std::int64_t now() const { return options.now_ms ? options.now_ms() : system_now_ms(); }
  void log(const std::string& line) const {
    if (options.log) options.log(line);
  }

  // The informer's handler, on its thread.
  void on_event(const k8s::ObjectPtr& before, const k8s::ObjectPtr& after) {
    const std::int64_t t = now();
    std::lock_guard lock(m);
    ++events_handled;
    const auto changed = builder.apply(before.get(), after.get(), t);
    dirty.insert(changed.begin(), changed.end());
  }

  // Expires tombstones, then writes the files that are behind.
  void flush_once() {
    std::lock_guard write_lock(write_m);
    std::vector<NodeSnapshot> to_write;
    bool synced = false;
    {
      std::lock_guard lock(m);
      const auto expired = builder.expire(now());
      dirty.insert(expired.begin(), expired.end());
      synced = listed_locked();
      if (options.out_dir.empty()) {
        dirty.clear();
        return;
      }
      for (const std::string& node : dirty) {
        if (auto s = builder.snapshot(node)) to_write.push_back(std::move(*s));
      }
      dirty.clear();
    }
    std::vector<std::string> failed;
    for (const NodeSnapshot& s : to_write) {
      const std::string path = (std::filesystem::path(options.out_dir) / (s.node + ".json")).string();
      auto written = write_snapshot_file(path, s, options.hmac_key);
      if (!written) {
        log("metasync: " + written.error());
        failed.push_back(s.node);
      }
    }
    std::lock_guard lock(m);
    writes_ok += to_write.size() - failed.size();
    writes_failed += failed.size();
    dirty.insert(failed.begin(), failed.end());  // tried again at the next flush
    if (synced && failed.empty()) files_complete = true;
  }

  void flusher_loop() {
    for (;;) {
      {
        std::unique_lock lock(m);
        cv.wait_for(lock, options.flush_interval, [&] { return stopping; });
        if (stopping) return;
      }
      flush_once();
    }
  }

  void count_request(int status) {
    std::lock_guard lock(m);
    ++requests[std::to_string(status)];
  }

  void serve_snapshot(const httplib::Request& req, httplib::Response& res) {
    const std::string node = req.matches[1];
    if (const auto bad = check_value("node", node)) {
      send_error(res, 400, "node", std::string(to_string(*bad)), "the node name is not a Kubernetes node name");
      count_request(400);
      return;
    }
    std::shared_ptr<const std::string> wire;
    std::string etag;
    {
      std::lock_guard lock(m);
      const std::int64_t generation = builder.generation(node);
      if (generation == 0) {
        ++requests["404"];
        send_error(res, 404, "node", "unknown-node",
                   "metasync knows no pod on node \"" + node + "\" (none scheduled there since it started)");
        return;
      }
      etag = snapshot_etag(node, generation);
      if (if_none_match(req.get_header_value("If-None-Match"), etag)) {
        ++requests["304"];
        res.status = 304;
        res.set_header("ETag", etag);
        return;
      }
      Encoded& e = encoded[node];
      if (e.generation != generation || !e.wire) {
        e.generation = generation;
        e.wire = std::make_shared<const std::string>(encode_snapshot(*builder.snapshot(node), options.hmac_key));
      }
      wire = e.wire;
      ++requests["200"];
    }
    res.status = 200;
    res.set_header("ETag", etag);
    res.set_header("Cache-Control", "no-cache");
    res.set_content(*wire, "application/json");
  }

  void install_health(httplib::Server& s) {
    s.Get("/healthz", [this](const httplib::Request&, httplib::Response& res) {
      const bool alive = informer->running() || !informer->error();
      res.status = alive ? 200 : 500;
      res.set_content(alive ? "ok\n" : "the pods informer ended: " + informer->error()->describe() + "\n", "text/plain");
    });
    s.Get("/readyz", [this](const httplib::Request&, httplib::Response& res) {
      const bool ok = ready();
      res.status = ok ? 200 : 503;
      res.set_content(ok ? "ok\n" : "pods not listed yet\n", "text/plain");
    });
    s.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
      res.set_content(metrics_text(), "text/plain; version=0.0.4");
    });
  }

  // The first list is in the builder.
  bool listed_locked() const { return first_list_size && events_handled >= *first_list_size; }

  bool ready() const {
    std::lock_guard lock(m);
    return listed_locked() && (options.out_dir.empty() || files_complete);
  }

  std::string metrics_text() const {
    metrics::Registry r;
    const k8s::ListWatchStats stats = informer->stats();
    const auto gauge = [&](std::string_view name, std::string_view help, std::vector<std::string> labels = {}) {
      return *r.gauge(name, help, std::move(labels));
    };
    const auto counter = [&](std::string_view name, std::string_view help, std::vector<std::string> labels = {}) {
      return *r.counter(name, help, std::move(labels));
    };
    std::lock_guard lock(m);
    const SnapshotBuilder::Counts c = builder.counts();
    auto* pods = gauge("gpubank_metasync_pods", "Pods metasync knows, by state (tombstone: deleted or finished).", {"state"});
    (void)pods->set({"live"}, static_cast<double>(c.live));
    (void)pods->set({"tombstone"}, static_cast<double>(c.tombstones));
    (void)pods->set({"pending"}, static_cast<double>(c.pending));
    (void)pods->set({"retired"}, static_cast<double>(c.retired));
    (void)gauge("gpubank_metasync_nodes", "Nodes with a snapshot.")->set({}, static_cast<double>(c.nodes));
    auto* generations = gauge("gpubank_metasync_snapshot_generation", "Each node's snapshot generation.", {"node"});
    for (const std::string& node : builder.nodes()) {
      (void)generations->set({node}, static_cast<double>(builder.generation(node)));
    }
    (void)gauge("gpubank_metasync_synced", "1 once the first list of pods is in.")->set({}, listed_locked() ? 1 : 0);
    (void)counter("gpubank_metasync_watch_lists_total", "Complete lists of pods (the first, then re-lists).")
        ->set_total({}, static_cast<double>(stats.lists));
    (void)counter("gpubank_metasync_watch_gone_total", "410 Gone answers that forced a re-list.")
        ->set_total({}, static_cast<double>(stats.gone));
    (void)counter("gpubank_metasync_watch_restarts_total", "Watches started again after a drop or the server's timeout.")
        ->set_total({}, static_cast<double>(stats.resumes));
    auto* dropped = counter("gpubank_metasync_dropped_label_values_total",
                            "Attribution values dropped (left empty), by field and reason.", {"field", "reason"});
    for (const auto& [key, n] : builder.stats().dropped) (void)dropped->set_total({key.first, key.second}, static_cast<double>(n));
    (void)counter("gpubank_metasync_rejected_pods_total", "Pods without a valid uid, name or namespace, ignored.")
        ->set_total({}, static_cast<double>(builder.rejected()));
    auto* writes = counter("gpubank_metasync_snapshot_writes_total", "Snapshot files written, by result.", {"result"});
    (void)writes->set_total({"ok"}, static_cast<double>(writes_ok));
    (void)writes->set_total({"error"}, static_cast<double>(writes_failed));
    auto* served = counter("gpubank_metasync_snapshot_requests_total", "Snapshot requests, by status code.", {"code"});
    for (const auto& [code, n] : requests) (void)served->set_total({code}, static_cast<double>(n));
    return metrics::write_text(r);
  }
};

Metasync::Metasync(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Metasync::~Metasync() { stop(); }

Expected<std::unique_ptr<Metasync>> Metasync::create(k8s::ClientConfig config, MetasyncOptions options) {
  if (options.hmac_key.size() < kMinKeyBytes) {
    return Unexpected{"hmac key: " + std::to_string(options.hmac_key.size()) + " bytes; at least " +
                      std::to_string(kMinKeyBytes) + " are needed"};
  }
  if (options.tombstone.count() < 0) return Unexpected{"tombstone: must not be negative"};
  if (!options.out_dir.empty()) {
    struct stat st {};
    if (::stat(options.out_dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      return Unexpected{"out dir: " + options.out_dir + " is not a directory"};
    }
  }
  auto impl = std::make_unique<Impl>(std::move(options));
  Impl* im = impl.get();
  k8s::InformerOptions informer_options = im->options.informer;
  informer_options.list_watch.transform = [](Json& pod) { prune_pod(pod); };
  auto user_state_change = informer_options.on_state_change;
  informer_options.on_state_change = [im, user_state_change] {
    // On the informer's thread, after the first list was published and before its events
    // are handed out: the snapshot holds exactly the listed pods.
    if (im->informer->has_synced()) {
      const std::size_t listed = im->informer->snapshot()->objects.size();
      std::lock_guard lock(im->m);
      if (!im->first_list_size) im->first_list_size = listed;
    }
    { std::lock_guard lock(im->state_m); }
    im->state_cv.notify_all();
    if (user_state_change) user_state_change();
  };
  auto informer = k8s::Informer::create(std::move(config), "/api/v1/pods", std::move(informer_options));
  if (!informer) return Unexpected{informer.error()};
  im->informer = std::move(*informer);
  // The store reports what changed (before/after), whatever the event's word was.
  im->informer->add_handler([im](k8s::EventType, const k8s::ObjectPtr& before, const k8s::ObjectPtr& after) {
    im->on_event(before, after);
  });
  return std::unique_ptr<Metasync>(new Metasync(std::move(impl)));
}

Expected<bool> Metasync::start() {
  Impl& im = *impl_;
  if (im.started) return true;
  const auto bind = [](httplib::Server& s, const std::string& address, int port, const std::string& what) -> Expected<int> {
    const int bound = port == 0 ? s.bind_to_any_port(address) : (s.bind_to_port(address, port) ? port : -1);
    if (bound < 0) return Unexpected{what + ": cannot listen on " + address + ":" + std::to_string(port)};
    return bound;
  };
  if (im.options.listen_port >= 0) {
    im.server.Get(R"(/v1/nodes/([^/]+)/snapshot)",
                  [&im](const httplib::Request& req, httplib::Response& res) { im.serve_snapshot(req, res); });
    im.install_health(im.server);
    auto port = bind(im.server, im.options.listen_address, im.options.listen_port, "listen");
    if (!port) return Unexpected{port.error()};
    im.port = *port;
  }
  if (im.options.health_port >= 0) {
    im.install_health(im.health);
    auto port = bind(im.health, im.options.health_address, im.options.health_port, "health port");
    if (!port) return Unexpected{port.error()};
    im.health_port = *port;
  }
  if (!im.options.out_dir.empty()) {
    // A metasync killed mid-write leaves its temporary file behind.
    auto removed = remove_stale_temporaries(im.options.out_dir);
    if (!removed) return Unexpected{"out dir: " + removed.error()};
    if (!removed->empty()) {
      im.log("removed " + std::to_string(removed->size()) + " temporary file(s) an earlier metasync left in " +
             im.options.out_dir);
    }
  }
  im.started = true;
  if (im.port >= 0) {
    im.server_thread = std::thread([&im] {
      im.server.listen_after_bind();
      im.server_done = true;
    });
  }
  if (im.health_port >= 0) {
    im.health_thread = std::thread([&im] {
      im.health.listen_after_bind();
      im.health_done = true;
    });
  }
  im.informer->start();
  im.flusher = std::thread([&im] { im.flusher_loop(); });
  return true;
}

Expected<bool> Metasync::run(std::stop_token stop) {
  Impl& im = *impl_;
  std::unique_lock lock(im.state_m);
  for (;;) {
    // Woken by the informer's state changes and by `stop`; the timeout is a guard only.
    im.state_cv.wait_for(lock, stop, std::chrono::seconds(1), [&] { return !im.informer->running(); });
    if (stop.stop_requested()) return true;
    if (!im.informer->running()) {
      if (const auto error = im.informer->error()) return Unexpected{"pods informer: " + error->describe()};
      return true;
    }
  }
}

void Metasync::stop() {
  Impl& im = *impl_;
  im.informer->stop();
  {
    std::lock_guard lock(im.m);
    im.stopping = true;
  }
  im.cv.notify_all();
  if (im.flusher.joinable()) im.flusher.join();
  stop_server(im.server, im.server_thread, im.server_done);
  stop_server(im.health, im.health_thread, im.health_done);
}

int Metasync::port() const { return impl_->port; }
int Metasync::health_port() const { return impl_->health_port; }

k8s::ApiResult<std::monostate> Metasync::wait_for_sync(std::chrono::milliseconds timeout) const {
  return impl_->informer->wait_for_sync(timeout);
}

bool Metasync::ready() const { return impl_->ready(); }

std::optional<NodeSnapshot> Metasync::snapshot(std::string_view node) const {
  std::lock_guard lock(impl_->m);
  return impl_->builder.snapshot(node);
}

void Metasync::flush() { impl_->flush_once(); }

std::string Metasync::metrics_text() const { return impl_->metrics_text(); }

k8s::ListWatchStats Metasync::watch_stats() const { return impl_->informer->stats(); }

}  // namespace gpubank::attribution
