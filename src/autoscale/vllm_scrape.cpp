#include "autoscale/vllm_scrape.hpp"

#include <httplib.h>

#include <algorithm>
#include <chrono>

#include "governance/http_error.hpp"

namespace gpubank::autoscale {
namespace {

struct Target {
  std::string url;
  std::string path;
  std::string host_port;
  std::unique_ptr<httplib::Client> client;
};

class HttpVllmScraper final : public VllmScraper {
 public:
  HttpVllmScraper(std::vector<Target> targets, ScrapeClientOptions options)
      : targets_(std::move(targets)), options_(std::move(options)), window_(options_.rate_window_ms) {}

  Expected<SignalReading> read(std::int64_t now_ms) override {
    SignalReading out;
    serving::Scrape merged;
    merged.t_ms = now_ms;
    for (auto& t : targets_) {
      auto page = fetch(t);
      if (!page) {
        out.unread.push_back(t.url + ": " + page.error());
        continue;
      }
      serving::ScrapeOptions opts = options_.page;
      if (opts.replica_label.empty()) opts.page_replica = t.host_port;
      auto scrape = serving::read_vllm_text(*page, now_ms, opts);
      if (!scrape) {
        out.unread.push_back(t.url + ": " + scrape.error());
        continue;
      }
      for (auto& r : scrape->replicas) merged.replicas.push_back(std::move(r));
    }
    if (out.unread.size() == targets_.size()) {
      std::string why = "no vLLM target could be read: " + out.unread.front();
      if (out.unread.size() > 1) why += " (and " + std::to_string(out.unread.size() - 1) + " more)";
      return Unexpected{why};
    }
    std::sort(merged.replicas.begin(), merged.replicas.end(),
              [](const auto& a, const auto& b) { return a.replica < b.replica; });
    for (std::size_t i = 1; i < merged.replicas.size(); ++i) {
      if (merged.replicas[i].replica == merged.replicas[i - 1].replica) {
        return Unexpected{"replica " + merged.replicas[i].replica + " is on two targets' pages; each replica must be scraped once"};
      }
    }
    for (const auto& r : merged.replicas) {
      if (r.running || r.waiting) out.loads.push_back({r.replica, r.running.value_or(0) + r.waiting.value_or(0)});
    }
    if (auto added = window_.add(std::move(merged)); !added) return Unexpected{added.error()};
    out.observation = window_.observe();
    return out;
  }

 private:
  Expected<std::string> fetch(Target& t) {
    std::string body;
    bool too_large = false;
    bool too_slow = false;
    const auto deadline = std::chrono::steady_clock::now() + options_.timeout;
    httplib::Headers headers{{"Accept", "text/plain;version=0.0.4"}};
    if (!options_.bearer_token.empty()) headers.emplace("Authorization", "Bearer " + options_.bearer_token);
    auto res = t.client->Get(t.path, headers, [&](const char* data, std::size_t n) {
      if (std::chrono::steady_clock::now() > deadline) {
        too_slow = true;
        return false;
      }
      if (body.size() + n > options_.max_bytes) {
        too_large = true;
        return false;
      }
      body.append(data, n);
      return true;
    });
    if (too_large) return Unexpected{"the page is over " + std::to_string(options_.max_bytes) + " bytes"};
    if (too_slow) {
      return Unexpected{"the page took longer than " + std::to_string(options_.timeout.count()) + " ms to arrive"};
    }
    if (!res) return Unexpected{governance::describe(res.error())};
    if (res->status != 200) return Unexpected{"HTTP " + std::to_string(res->status)};
    return body;
  }

  std::vector<Target> targets_;
  ScrapeClientOptions options_;
  serving::SignalWindow window_;
};

}  // namespace

Expected<std::unique_ptr<VllmScraper>> VllmScraper::create(std::vector<std::string> urls, ScrapeClientOptions options) {
  if (urls.empty()) return Unexpected{std::string("--scrape: give at least one vLLM /metrics URL")};
  std::vector<Target> targets;
  for (auto& url : urls) {
    auto e = governance::split_http_url(url, "--scrape");
    if (!e) return Unexpected{e.error()};
    Target t;
    t.url = url;
    t.path = e->path.empty() ? "/metrics" : e->path;
    t.host_port = e->base.substr(std::string_view("http://").size());
    t.client = std::make_unique<httplib::Client>(e->base);
    governance::configure_client(*t.client, options.timeout);
    t.client->set_keep_alive(true);
    targets.push_back(std::move(t));
  }
  return std::unique_ptr<VllmScraper>(new HttpVllmScraper(std::move(targets), std::move(options)));
}

}  // namespace gpubank::autoscale
