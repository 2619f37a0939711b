// List then watch one collection, keeping an ObjectStore current: an informer's core.
//
//   1. List with limit/continue pagination; the store becomes the listed objects at the
//      list's resourceVersion (objects gone since the previous list are reported DELETED).
//   2. Watch from that resourceVersion with allowWatchBookmarks=true and timeoutSeconds.
//      ADDED/MODIFIED/DELETED update the store and go to the handler; BOOKMARK advances the
//      resourceVersion only.
//   3. The server ended the watch (its timeout) or the connection dropped: watch again from
//      the last resourceVersion seen (a drop counts as a failure and waits the transport's
//      backoff first).
//   4. 410 Gone, as the HTTP status of the list or watch or as an ERROR event with code 410
//      (the resourceVersion was compacted away): list again from scratch. A continue token
//      that expired mid-list (410) also restarts the list.
//
// The transport retries 429/5xx itself; run() gives up after max_consecutive_failures
// failures without an event in between, or on a malformed response (named).
//
// Stopping: should_stop is asked between pages and events, which a silent watch never
// reaches; Transport::cancel() from another thread ends a blocked list or watch at once, and
// run() then returns success, as for should_stop.
#pragma once

#include <cstddef>
#include <functional>
#include <string>

#include "k8s/transport.hpp"
#include "k8s/watch_event.hpp"

namespace gpubank::k8s {

struct ListWatchOptions {
  int page_size = 500;               // limit= on each list page
  int watch_timeout_seconds = 300;   // timeoutSeconds= on each watch (client-go: 5-10 min)
  int max_consecutive_failures = 8;
  std::function<bool()> should_stop; // asked after every page and event; true ends run()
  // Called on run()'s thread around each complete list's replace of the store: begin before
  // its first change goes to the handler, end after its last (an informer publishes a
  // relist as one change).
  std::function<void()> on_list_begin;
  std::function<void()> on_list_end;
  // Applied to every listed object and every ADDED/MODIFIED/DELETED object before the store
  // keeps it (client-go's SetTransform): a caller that needs a few fields strips the rest
  // here, so that neither the store nor an informer's cache holds whole objects. It must
  // keep metadata.name and metadata.namespace (the store's key).
  std::function<void(Json&)> transform;
};

struct ListWatchStats {
  std::size_t lists = 0;        // complete lists (the first included)
  std::size_t pages = 0;
  std::size_t watches = 0;      // watches that delivered at least one line
  std::size_t resumes = 0;      // watches restarted after a drop or the server's timeout
  std::size_t gone = 0;         // 410s that forced a re-list
  std::size_t bookmarks = 0;
};

class ListWatch {
 public:
  // `collection`: the list path, e.g. "/api/v1/pods" or
  // "/apis/kueue.x-k8s.io/v1beta2/namespaces/team-a/workloads".
  ListWatch(Transport& transport, std::string collection, ObjectStore::Handler handler = {},
            ListWatchOptions options = {});

  // One complete, paginated list into the store.
  [[nodiscard]] ApiResult<std::monostate> list();
  // List, then watch until should_stop says so or the transport is cancelled (success), or
  // an error is unrecoverable.
  [[nodiscard]] ApiResult<std::monostate> run();

  [[nodiscard]] const ObjectStore& store() const { return store_; }
  [[nodiscard]] const ListWatchStats& stats() const { return stats_; }

 private:
  enum class WatchEnd { Stopped, Ended, Gone, Failed };
  WatchEnd watch_once(ApiError& error);
  [[nodiscard]] bool stop_requested() const {
    return transport_.cancelled() || (options_.should_stop && options_.should_stop());
  }

  Transport& transport_;
  std::string collection_;
  ObjectStore store_;
  ListWatchOptions options_;
  ListWatchStats stats_;
};

}  // namespace gpubank::k8s
