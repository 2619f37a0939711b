#include "k8s/list_watch.hpp"

namespace gpubank::k8s {

namespace {

std::string with_query(const std::string& path, const std::string& query) {
  return path + (path.find('?') == std::string::npos ? "?" : "&") + query;
}

ApiError malformed(const std::string& what, const std::string& request) {
  return client_error("MalformedResponse", what, request);
}

}  // namespace

ListWatch::ListWatch(Transport& transport, std::string collection, ObjectStore::Handler handler,
                     ListWatchOptions options)
    : transport_(transport), collection_(std::move(collection)), store_(std::move(handler)), options_(std::move(options)) {}

ApiResult<std::monostate> ListWatch::list() {
  // A continue token that expires mid-list (410) restarts the list once from the top, as
  // client-go's pager falls back to a full list.
  for (int restart = 0;; ++restart) {
    std::vector<Json> items;
    std::string resource_version;
    std::string token;
    bool expired = false;
    do {
      std::string target = with_query(collection_, "limit=" + std::to_string(options_.page_size));
      if (!token.empty()) target += "&continue=" + query_escape(token);
      auto res = transport_.get(target);
      if (!res.ok()) {
        if (res.error().http_status == 410 && !token.empty() && restart == 0) {
          ++stats_.gone;
          expired = true;
          break;
        }
        return res.error();
      }
      auto page = parse_list_page(res->body);
      if (!page.ok()) return malformed(page.error(), "GET " + target);
      ++stats_.pages;
      // The first page's resourceVersion is the list's: later pages are served at it.
      if (resource_version.empty()) resource_version = page->resource_version;
      for (auto& item : page->items) {
        if (options_.transform) options_.transform(item);
        items.push_back(std::move(item));
      }
      token = page->continue_token;
    } while (!token.empty());
    if (expired) continue;
    if (options_.on_list_begin) options_.on_list_begin();
    store_.replace(items, std::move(resource_version));
    ++stats_.lists;  // before on_list_end: its stats count the list it ends
    if (options_.on_list_end) options_.on_list_end();
    return std::monostate{};
  }
}

ListWatch::WatchEnd ListWatch::watch_once(ApiError& error) {
  const std::string target = with_query(collection_, "watch=true&allowWatchBookmarks=true&resourceVersion=" +
                                                         query_escape(store_.resource_version()) +
                                                         "&timeoutSeconds=" + std::to_string(options_.watch_timeout_seconds));
  WatchEnd end = WatchEnd::Ended;
  bool counted = false;
  auto res = transport_.stream(target, [&](std::string_view line) {
    if (!counted) {
      counted = true;
      ++stats_.watches;
    }
    auto event = parse_watch_event(line);
    if (!event.ok()) {
      error = malformed(event.error(), "GET " + target);
      end = WatchEnd::Failed;
      return false;
    }
    if (event->type == EventType::Error) {
      if (error_code(*event) == 410) {
        end = WatchEnd::Gone;
      } else {
        error = error_from_response(error_code(*event), event->object.dump());
        error.request = "GET " + target;
        error.retryable = true;
        end = WatchEnd::Failed;
      }
      return false;
    }
    if (event->type == EventType::Bookmark) ++stats_.bookmarks;
    if (options_.transform && event->type != EventType::Bookmark) options_.transform(event->object);
    store_.apply(*event);
    if (stop_requested()) {
      end = WatchEnd::Stopped;
      return false;
    }
    return true;
  });
  if (!res.ok()) {
    if (res.error().http_status == 410) return WatchEnd::Gone;
    error = res.error();
    return WatchEnd::Failed;
  }
  return end;
}

ApiResult<std::monostate> ListWatch::run() {
  bool need_list = true;
  int failures = 0;
  while (!stop_requested()) {
    if (need_list) {
      auto listed = list();
      if (!listed.ok()) {
        if (listed.error().reason == "Cancelled") break;  // Transport::cancel(): stopped
        return listed.error();
      }
      need_list = false;
      if (stop_requested()) break;
    }
    const std::size_t applied = store_.events_applied();
    ApiError error;
    switch (watch_once(error)) {
      case WatchEnd::Stopped: return std::monostate{};
      case WatchEnd::Ended:
        ++stats_.resumes;
        failures = 0;
        break;
      case WatchEnd::Gone:
        ++stats_.gone;
        need_list = true;
        break;
      case WatchEnd::Failed:
        if (error.reason == "Cancelled") return std::monostate{};
        if (store_.events_applied() != applied) failures = 0;
        if (!error.retryable || ++failures >= options_.max_consecutive_failures) return error;
        ++stats_.resumes;
        transport_.backoff(failures - 1);
        break;
    }
  }
  return std::monostate{};
}

}  // namespace gpubank::k8s
