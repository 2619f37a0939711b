// The write path's pure half: where an object lives (a RESTMapper fed by discovery), the
// server-side apply and status requests for it, and the Events a controller records.
//
//   - RestMapper: apiVersion + kind -> group, version, resource (the plural) and scope, from
//     APIResourceList documents (GET /api/v1, /apis/<group>/<version>). The plural is what
//     discovery says, never guessed from the kind ("PlatformGuardrails" ->
//     "platformguardrails", not "platformguardrailses"); a kind discovery does not list is
//     an error.
//   - apply_request / status_patch: the path and body for Transport::apply and
//     Transport::merge_patch.
//   - EventRecorder: events.k8s.io/v1 Events with client-side deduplication like
//     client-go's event series: the same event (regarding, reason, action, type, note)
//     again within the window becomes a PATCH of the first one's series (count,
//     lastObservedTime) instead of a new Event.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "core/expected.hpp"
#include "k8s/transport.hpp"

namespace gpubank::k8s {

struct ResourceMapping {
  std::string group;  // "" for the core group
  std::string version;
  std::string resource;  // the plural: "gpuquotapolicies"
  std::string kind;
  bool namespaced = false;
  bool has_status = false;  // discovery lists "<resource>/status"

  [[nodiscard]] std::string api_version() const { return group.empty() ? version : group + "/" + version; }
  // "/api/v1/namespaces/team-a/pods" or "/apis/<group>/<version>/<resource>" (cluster-scoped,
  // or a namespaced kind with namespace "": every namespace, for list and watch).
  [[nodiscard]] std::string collection_path(std::string_view namespace_name) const;
  // The collection path, then "/<name>".
  [[nodiscard]] std::string object_path(std::string_view namespace_name, std::string_view name) const;
};

class RestMapper {
 public:
  // Adds the resources of one APIResourceList. Subresources ("pods/status") mark their
  // resource; an entry without name, kind or namespaced fails naming the field, and so does
  // a missing or malformed groupVersion.
  [[nodiscard]] Expected<bool> add_discovery(const nlohmann::json& api_resource_list);
  // The mapping for apiVersion ("v1", "platform.gpubank.dev/v1alpha1") and kind.
  [[nodiscard]] Expected<ResourceMapping> find(std::string_view api_version, std::string_view kind) const;
  [[nodiscard]] std::size_t size() const { return by_kind_.size(); }

 private:
  std::map<std::pair<std::string, std::string>, ResourceMapping> by_kind_;  // (apiVersion, kind)
};

// Fills `mapper` from the server: /api/v1 and every group version /apis lists (each
// group's served versions, not only the preferred one).
[[nodiscard]] ApiResult<RestMapper> discover(Transport& transport);

struct WriteTarget {
  ResourceMapping mapping;
  std::string path;  // the object's path
  std::string body;  // JSON
};

// Server-side apply of `object`: apiVersion, kind and metadata.name are required;
// metadata.namespace for a namespaced kind (default_namespace when absent), and an error
// when given for a cluster-scoped one. Server-owned metadata (resourceVersion, uid,
// managedFields, creationTimestamp, generation) and status are left out of the body: an
// apply configuration names only the fields the manager means to own.
[[nodiscard]] Expected<WriteTarget> apply_request(const RestMapper& mapper, const nlohmann::json& object,
                                                  std::string_view default_namespace = "default");

// A merge patch of `object`'s status subresource, {"status": status}; an error when the
// kind has no status subresource.
[[nodiscard]] Expected<WriteTarget> status_patch(const RestMapper& mapper, const nlohmann::json& object,
                                                 const nlohmann::json& status, std::string_view default_namespace = "default");

// ---- Events ----

struct ObjectReference {
  std::string api_version;
  std::string kind;
  std::string namespace_name;  // "" for a cluster-scoped object
  std::string name;
  std::string uid;
};

struct EventSpec {
  ObjectReference regarding;
  std::string type = "Normal";  // "Normal" or "Warning"
  std::string reason;           // UpperCamelCase, <= 128 bytes: "QuotaReclaimed"
  std::string action;           // what was done, <= 128 bytes: "Preempt"
  std::string note;             // human text, cut to 1 KiB (the API's limit)
};

// What to send: POST `path` with `body` (a new Event) or, for a repeat, a merge PATCH of
// the first Event's series at `path`.
struct EventWrite {
  enum class Verb { kCreate, kPatchSeries };
  Verb verb = Verb::kCreate;
  std::string path;
  nlohmann::json body;
};

inline constexpr std::string_view kReportingController = "platform.gpubank.dev/controller";

// The timestamps Events carry: RFC 3339 with microseconds ("2026-01-01T00:00:00.000000Z").
[[nodiscard]] std::string micro_time(std::chrono::system_clock::time_point t);

class EventRecorder {
 public:
  using Clock = std::function<std::chrono::system_clock::time_point()>;

  // `reporting_instance`: this replica (the pod name). The clock is injected (tests). An
  // Event repeated within `window` of its last observation is counted in its series; later,
  // it is a new Event (client-go keeps a series for 6 minutes too).
  EventRecorder(std::string reporting_instance, Clock clock, std::chrono::seconds window = std::chrono::minutes(6));

  // The write for one occurrence; an error names the field and rule (type not
  // Normal/Warning, empty or over-long reason or action, regarding without kind or name).
  [[nodiscard]] Expected<EventWrite> record(const EventSpec& spec);
  // Sends it. A failed series PATCH (the Event expired or was deleted) forgets the series,
  // so the next occurrence creates a new Event.
  [[nodiscard]] ApiResult<Response> emit(Transport& transport, const EventSpec& spec);

  [[nodiscard]] std::size_t cached() const { return series_.size(); }

 private:
  struct Series {
    std::string path;  // the Event's object path
    std::int64_t count = 1;
    std::chrono::system_clock::time_point last;
  };
  using Key = std::tuple<std::string, std::string, std::string, std::string, std::string, std::string, std::string, std::string>;
  static Key key_of(const EventSpec& spec);

  std::string instance_;
  Clock clock_;
  std::chrono::seconds window_;
  std::map<Key, Series> series_;
  std::uint64_t last_nanos_ = 0;
};

}  // namespace gpubank::k8s
