// The pure half of list/watch: parsing a watch line (a WatchEvent, one JSON object per
// line), the object store an informer keeps, and resourceVersion bookkeeping. No I/O, so
// that it is unit-tested and fuzzed apart from the transport (list_watch.hpp).
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/expected.hpp"

namespace gpubank::k8s {

using Json = nlohmann::json;

enum class EventType { Added, Modified, Deleted, Bookmark, Error };
[[nodiscard]] std::string_view to_string(EventType type);

struct WatchEvent {
  EventType type = EventType::Added;
  Json object;                  // the object; for Error, the Status
  std::string resource_version; // metadata.resourceVersion ("" for Error)
  std::string key;              // "namespace/name" or "name" ("" for Bookmark and Error)
};

// Parses one watch line: {"type": "ADDED"|"MODIFIED"|"DELETED"|"BOOKMARK"|"ERROR",
// "object": {...}}. Refused, with the field named: not JSON, not an object, an unknown or
// missing type, an object that is not an object, an object without metadata.name
// (ADDED/MODIFIED/DELETED) or metadata.resourceVersion (all but ERROR).
[[nodiscard]] Expected<WatchEvent> parse_watch_event(std::string_view line);

// One page of a list response (PodList, WorkloadList, ...): its items, the list's
// metadata.resourceVersion and metadata.continue. Refused, naming the field: not a JSON
// object, items not a list or holding a non-object, a missing resourceVersion.
struct ListPage {
  std::vector<Json> items;
  std::string resource_version;
  std::string continue_token;
};
[[nodiscard]] Expected<ListPage> parse_list_page(std::string_view body);

// The store key of an object: "namespace/name", or "name" when cluster-scoped; "" when it
// has no metadata.name.
[[nodiscard]] std::string object_key(const Json& object);

// The code of an ERROR event's Status (410 for an expired resourceVersion), or 0.
[[nodiscard]] int error_code(const WatchEvent& event);

// An informer's cache: the objects by key and the resourceVersion to resume a watch from.
// Every change is reported to the handler with the object before and after (null when
// none), so a caller's view is always the store's.
class ObjectStore {
 public:
  using Handler = std::function<void(EventType type, const Json* before, const Json* after)>;

  explicit ObjectStore(Handler handler = {}) : handler_(std::move(handler)) {}

  // A full list: the store becomes `items` at `resource_version`. Objects that were cached
  // and are no longer listed are reported DELETED, new ones ADDED, changed ones MODIFIED
  // (a re-list after 410 Gone misses no deletion).
  void replace(const std::vector<Json>& items, std::string resource_version);

  // A watch event. ADDED/MODIFIED store the object, DELETED removes it; all three and
  // BOOKMARK advance the resourceVersion. ERROR changes nothing (the caller decides). The
  // handler hears what changed in the store, not the event's word: an ADDED for a cached
  // key (a re-sent event after a resume) is reported MODIFIED, a MODIFIED for an unknown
  // key ADDED, a DELETED for an unknown key nothing. resource_version() is the event's
  // already while the handler runs.
  void apply(const WatchEvent& event);

  [[nodiscard]] const std::map<std::string, Json>& objects() const { return objects_; }
  [[nodiscard]] const std::string& resource_version() const { return resource_version_; }
  [[nodiscard]] std::size_t events_applied() const { return events_applied_; }

 private:
  void report(EventType type, const Json* before, const Json* after) const {
    if (handler_) handler_(type, before, after);
  }
  Handler handler_;
  std::map<std::string, Json> objects_;
  std::string resource_version_;
  std::size_t events_applied_ = 0;
};

}  // namespace gpubank::k8s
