#include "k8s/apply.hpp"

#include <algorithm>
#include <cstdio>
#include <ctime>

namespace gpubank::k8s {

using Json = nlohmann::json;

std::string ResourceMapping::collection_path(std::string_view namespace_name) const {
  std::string path = group.empty() ? "/api/" + version : "/apis/" + group + "/" + version;
  if (namespaced && !namespace_name.empty()) path += "/namespaces/" + std::string(namespace_name);
  return path + "/" + resource;
}

std::string ResourceMapping::object_path(std::string_view namespace_name, std::string_view name) const {
  return collection_path(namespace_name) + "/" + std::string(name);
}

namespace {

std::string string_at(const Json& o, const char* key) {
  const auto it = o.find(key);
  return it != o.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace

Expected<bool> RestMapper::add_discovery(const Json& list) {
  if (!list.is_object()) return Unexpected{"discovery: expected an APIResourceList object"};
  const std::string gv = string_at(list, "groupVersion");
  if (gv.empty()) return Unexpected{"discovery: groupVersion: missing or not a string"};
  const auto slash = gv.find('/');
  if (slash != std::string::npos && (slash == 0 || slash + 1 == gv.size() || gv.find('/', slash + 1) != std::string::npos)) {
    return Unexpected{"discovery: groupVersion: \"" + gv + "\" is not <version> or <group>/<version>"};
  }
  const std::string group = slash == std::string::npos ? "" : gv.substr(0, slash);
  const std::string version = slash == std::string::npos ? gv : gv.substr(slash + 1);
  const auto resources = list.find("resources");
  if (resources == list.end() || !resources->is_array()) return Unexpected{"discovery " + gv + ": resources: missing or not a list"};
  std::vector<std::string> with_status;
  std::map<std::pair<std::string, std::string>, ResourceMapping> added;
  for (std::size_t i = 0; i < resources->size(); ++i) {
    const Json& r = (*resources)[i];
    const std::string where = "discovery " + gv + ": resources[" + std::to_string(i) + "]";
    if (!r.is_object()) return Unexpected{where + ": not an object"};
    const std::string name = string_at(r, "name");
    if (name.empty()) return Unexpected{where + ".name: missing or not a string"};
    const auto sub = name.find('/');
    if (sub != std::string::npos) {  // a subresource: "gpuquotapolicies/status"
      if (name.substr(sub + 1) == "status") with_status.push_back(name.substr(0, sub));
      continue;
    }
    const std::string kind = string_at(r, "kind");
    if (kind.empty()) return Unexpected{where + ".kind: missing or not a string"};
    const auto ns = r.find("namespaced");
    if (ns == r.end() || !ns->is_boolean()) return Unexpected{where + ".namespaced: missing or not a boolean"};
    ResourceMapping m;
    m.group = group;
    m.version = version;
    m.resource = name;
    m.kind = kind;
    m.namespaced = ns->get<bool>();
    added[{gv, kind}] = std::move(m);
  }
  for (auto& [key, m] : added) {
    m.has_status = std::find(with_status.begin(), with_status.end(), m.resource) != with_status.end();
    by_kind_[key] = m;
  }
  return true;
}

Expected<ResourceMapping> RestMapper::find(std::string_view api_version, std::string_view kind) const {
  const auto it = by_kind_.find({std::string(api_version), std::string(kind)});
  if (it == by_kind_.end()) {
    return Unexpected{"no resource for kind " + std::string(kind) + " in " + std::string(api_version) +
                      ": discovery does not list it (is its CRD installed?)"};
  }
  return it->second;
}

ApiResult<RestMapper> discover(Transport& transport) {
  RestMapper mapper;
  auto add = [&](const std::string& path) -> std::optional<ApiError> {
    auto res = transport.get(path);
    if (!res.ok()) return res.error();
    const Json doc = Json::parse(res->body, nullptr, false);
    auto added = mapper.add_discovery(doc);
    if (!added.ok()) {
      ApiError e;
      e.http_status = res->status;
      e.reason = "BadDiscovery";
      e.message = added.error();
      e.request = "GET " + path;
      return e;
    }
    return std::nullopt;
  };
  if (auto e = add("/api/v1")) return *e;
  auto groups = transport.get("/apis");
  if (!groups.ok()) return groups.error();
  const Json list = Json::parse(groups->body, nullptr, false);
  if (!list.is_object() || !list.contains("groups") || !list["groups"].is_array()) {
    ApiError e;
    e.http_status = groups->status;
    e.reason = "BadDiscovery";
    e.message = "discovery /apis: groups: missing or not a list";
    e.request = "GET /apis";
    return e;
  }
  for (const auto& g : list["groups"]) {
    if (!g.is_object() || !g.contains("versions") || !g["versions"].is_array()) continue;
    for (const auto& v : g["versions"]) {
      const std::string gv = v.is_object() ? string_at(v, "groupVersion") : "";
      if (gv.empty()) continue;
      if (auto e = add("/apis/" + gv)) return *e;
    }
  }
  return mapper;
}

namespace {

struct Located {
  ResourceMapping mapping;
  std::string namespace_name;
  std::string name;
};

Expected<Located> locate(const RestMapper& mapper, const Json& object, std::string_view default_namespace) {
  if (!object.is_object()) return Unexpected{"object: expected a JSON object"};
  const std::string api_version = string_at(object, "apiVersion");
  const std::string kind = string_at(object, "kind");
  if (api_version.empty()) return Unexpected{"object: apiVersion: missing or not a string"};
  if (kind.empty()) return Unexpected{"object: kind: missing or not a string"};
  const auto meta = object.find("metadata");
  if (meta == object.end() || !meta->is_object()) return Unexpected{"object: metadata: missing or not an object"};
  Located at;
  at.name = string_at(*meta, "name");
  if (at.name.empty()) return Unexpected{"object: metadata.name: missing or empty (apply needs a name)"};
  auto mapping = mapper.find(api_version, kind);
  if (!mapping.ok()) return Unexpected{mapping.error()};
  at.mapping = *mapping;
  at.namespace_name = string_at(*meta, "namespace");
  if (at.mapping.namespaced) {
    if (at.namespace_name.empty()) at.namespace_name = std::string(default_namespace);
  } else if (!at.namespace_name.empty()) {
    return Unexpected{"object: metadata.namespace: " + kind + " is cluster-scoped, but the object names namespace \"" +
                      at.namespace_name + "\""};
  }
  return at;
}

}  // namespace

Expected<WriteTarget> apply_request(const RestMapper& mapper, const Json& object, std::string_view default_namespace) {
  auto at = locate(mapper, object, default_namespace);
  if (!at.ok()) return Unexpected{at.error()};
  Json body = object;
  body.erase("status");
  Json& meta = body["metadata"];
  for (const char* owned : {"resourceVersion", "uid", "managedFields", "creationTimestamp", "generation", "selfLink"}) {
    meta.erase(owned);
  }
  if (at->mapping.namespaced) meta["namespace"] = at->namespace_name;
  return WriteTarget{at->mapping, at->mapping.object_path(at->namespace_name, at->name), body.dump()};
}

Expected<WriteTarget> status_patch(const RestMapper& mapper, const Json& object, const Json& status,
                                   std::string_view default_namespace) {
  auto at = locate(mapper, object, default_namespace);
  if (!at.ok()) return Unexpected{at.error()};
  if (!at->mapping.has_status) {
    return Unexpected{"object: " + at->mapping.kind + " has no status subresource in discovery (" + at->mapping.resource +
                      "/status)"};
  }
  if (!status.is_object()) return Unexpected{"status: expected an object"};
  return WriteTarget{at->mapping, at->mapping.object_path(at->namespace_name, at->name) + "/status",
                     Json{{"status", status}}.dump()};
}

// ---- Events ----

std::string micro_time(std::chrono::system_clock::time_point t) {
  const auto micros = std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
  const std::time_t seconds = static_cast<std::time_t>(micros >= 0 ? micros / 1'000'000 : (micros - 999'999) / 1'000'000);
  const auto fraction = static_cast<long>(micros - static_cast<std::int64_t>(seconds) * 1'000'000);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char buf[96];  // room for any int fields: gcc's -Wformat-truncation counts their widest
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, fraction);
  return buf;
}

namespace {

// Cuts `text` to at most `limit` bytes without splitting a UTF-8 sequence.
std::string cut_utf8(const std::string& text, std::size_t limit) {
  if (text.size() <= limit) return text;
  std::size_t end = limit;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  return text.substr(0, end);
}

constexpr std::size_t kNoteLimit = 1024;   // events.k8s.io/v1 validation: note <= 1 KiB
constexpr std::size_t kShortLimit = 128;   // reason and action

}  // namespace

EventRecorder::EventRecorder(std::string reporting_instance, Clock clock, std::chrono::seconds window)
    : instance_(std::move(reporting_instance)), clock_(std::move(clock)), window_(window) {}

EventRecorder::Key EventRecorder::key_of(const EventSpec& s) {
  // The note is part of the key (client-go's isomorphic key has it too): "scaled to 3" and
  // "scaled to 4" are two events, not one counted twice.
  return {s.regarding.namespace_name, s.regarding.kind, s.regarding.name, s.regarding.uid,
          s.reason,                   s.action,         s.type,           cut_utf8(s.note, kNoteLimit)};
}

Expected<EventWrite> EventRecorder::record(const EventSpec& spec) {
  if (spec.type != "Normal" && spec.type != "Warning") {
    return Unexpected{"event type: \"" + spec.type + "\" is neither Normal nor Warning"};
  }
  if (spec.reason.empty() || spec.reason.size() > kShortLimit) return Unexpected{"event reason: must be 1 to 128 bytes"};
  if (spec.action.empty() || spec.action.size() > kShortLimit) return Unexpected{"event action: must be 1 to 128 bytes"};
  if (spec.regarding.kind.empty() || spec.regarding.name.empty()) {
    return Unexpected{"event regarding: kind and name are required"};
  }
  const auto now = clock_();
  // Forget series not seen within the window: the cache stays bounded by the event rate.
  std::erase_if(series_, [&](const auto& entry) { return now - entry.second.last > window_; });
  const Key key = key_of(spec);
  if (const auto it = series_.find(key); it != series_.end()) {
    Series& s = it->second;
    ++s.count;
    s.last = now;
    return EventWrite{EventWrite::Verb::kPatchSeries, s.path,
                      Json{{"series", {{"count", s.count}, {"lastObservedTime", micro_time(now)}}}}};
  }
  // Cluster-scoped objects' Events go to "default", as client-go puts them.
  const std::string ns = spec.regarding.namespace_name.empty() ? "default" : spec.regarding.namespace_name;
  // client-go's name: the object's name and the time in hex nanoseconds; a repeat of the
  // same instant (an injected clock) moves on by one so that names stay unique.
  auto nanos = static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count());
  if (nanos <= last_nanos_) nanos = last_nanos_ + 1;
  last_nanos_ = nanos;
  char hex[24];
  std::snprintf(hex, sizeof hex, "%llx", static_cast<unsigned long long>(nanos));
  const std::string name = spec.regarding.name + "." + hex;
  Json regarding{{"apiVersion", spec.regarding.api_version}, {"kind", spec.regarding.kind}, {"name", spec.regarding.name}};
  if (!spec.regarding.namespace_name.empty()) regarding["namespace"] = spec.regarding.namespace_name;
  if (!spec.regarding.uid.empty()) regarding["uid"] = spec.regarding.uid;
  Json event{{"apiVersion", "events.k8s.io/v1"},
             {"kind", "Event"},
             {"metadata", {{"name", name}, {"namespace", ns}}},
             {"eventTime", micro_time(now)},
             {"reportingController", kReportingController},
             {"reportingInstance", instance_},
             {"action", spec.action},
             {"reason", spec.reason},
             {"type", spec.type},
             {"note", cut_utf8(spec.note, kNoteLimit)},
             {"regarding", regarding}};
  const std::string collection = "/apis/events.k8s.io/v1/namespaces/" + ns + "/events";
  series_[key] = Series{collection + "/" + name, 1, now};
  return EventWrite{EventWrite::Verb::kCreate, collection, std::move(event)};
}

ApiResult<Response> EventRecorder::emit(Transport& transport, const EventSpec& spec) {
  auto write = record(spec);
  if (!write.ok()) {
    ApiError e;
    e.reason = "Invalid";
    e.message = write.error();
    return e;
  }
  if (write->verb == EventWrite::Verb::kCreate) return transport.create(write->path, write->body.dump());
  auto res = transport.merge_patch(write->path, write->body.dump());
  if (!res.ok()) std::erase_if(series_, [&](const auto& entry) { return entry.second.path == write->path; });
  return res;
}

}  // namespace gpubank::k8s
