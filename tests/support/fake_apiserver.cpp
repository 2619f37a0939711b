#include "support/fake_apiserver.hpp"

#include "support/fake_apply.hpp"
#include "support/tls.hpp"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <sys/socket.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <stdexcept>
#include <thread>

namespace gpubank::testing {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;
using Json = nlohmann::json;

namespace {

struct ResourceType {
  std::string group;  // "" for core
  std::string version;
  std::string plural;
  std::string singular;
  std::string kind;
  bool namespaced;
  std::vector<std::string> short_names;
  bool has_status;  // a status subresource
  bool has_scale = false;  // a scale subresource (autoscaling/v1 Scale over spec.replicas)
  [[nodiscard]] std::string group_version() const { return group.empty() ? version : group + "/" + version; }
  // How the real server names the resource in messages: "pods", "leases.coordination.k8s.io".
  [[nodiscard]] std::string qualified() const { return group.empty() ? plural : plural + "." + group; }
};

std::vector<ResourceType> builtin_types(bool gpubank_kinds) {
  std::vector<ResourceType> types{
      {"", "v1", "pods", "pod", "Pod", true, {"po"}, true},
      {"", "v1", "nodes", "node", "Node", false, {"no"}, true},
      {"", "v1", "namespaces", "namespace", "Namespace", false, {"ns"}, true},
      {"", "v1", "configmaps", "configmap", "ConfigMap", true, {"cm"}, false},
      {"scheduling.k8s.io", "v1", "priorityclasses", "priorityclass", "PriorityClass", false, {"pc"}, false},
      {"batch", "v1", "jobs", "job", "Job", true, {}, true},
      {"apps", "v1", "deployments", "deployment", "Deployment", true, {"deploy"}, true, true},
      {"autoscaling", "v2", "horizontalpodautoscalers", "horizontalpodautoscaler", "HorizontalPodAutoscaler", true, {"hpa"}, true},
      {"events.k8s.io", "v1", "events", "event", "Event", true, {"ev"}, false},
      {"coordination.k8s.io", "v1", "leases", "lease", "Lease", true, {}, false},
      {"apiextensions.k8s.io", "v1", "customresourcedefinitions", "customresourcedefinition", "CustomResourceDefinition", false, {"crd", "crds"}, true},
      {"kueue.x-k8s.io", "v1beta2", "workloads", "workload", "Workload", true, {"wl"}, true},
      {"kueue.x-k8s.io", "v1beta2", "clusterqueues", "clusterqueue", "ClusterQueue", false, {"cq"}, true},
      {"kueue.x-k8s.io", "v1beta2", "localqueues", "localqueue", "LocalQueue", true, {"lq"}, true},
      {"kueue.x-k8s.io", "v1beta2", "cohorts", "cohort", "Cohort", false, {}, true},
  };
  if (gpubank_kinds) {
    const std::vector<ResourceType> gpubank{
        {"platform.gpubank.dev", "v1alpha1", "platformguardrails", "platformguardrails", "PlatformGuardrails", false, {"guardrails"}, true},
        {"platform.gpubank.dev", "v1alpha1", "gpuquotapolicies", "gpuquotapolicy", "GPUQuotaPolicy", false, {"gqp"}, true},
        {"platform.gpubank.dev", "v1alpha1", "inferencescalingpolicies", "inferencescalingpolicy", "InferenceScalingPolicy", false, {"isp"}, true},
        {"platform.gpubank.dev", "v1alpha1", "tidalpolicies", "tidalpolicy", "TidalPolicy", false, {"tidal"}, true},
        {"platform.gpubank.dev", "v1alpha1", "capacityleases", "capacitylease", "CapacityLease", false, {"lease"}, true},
        {"platform.gpubank.dev", "v1alpha1", "lowutilizationpolicies", "lowutilizationpolicy", "LowUtilizationPolicy", false, {}, true},
    };
    types.insert(types.end(), gpubank.begin(), gpubank.end());
  }
  return types;
}

// The fake's own certificate: self-signed, for localhost and 127.0.0.1 (support/tls.hpp).
using Identity = gpubank::testing::PemPair;
Identity make_identity() { return gpubank::testing::localhost_pem("fake-apiserver"); }

Json status_json(int code, const std::string& reason, const std::string& message) {
  return {{"kind", "Status"}, {"apiVersion", "v1"}, {"metadata", Json::object()}, {"status", "Failure"},
          {"message", message}, {"reason", reason}, {"code", code}};
}

// What a change must touch to be a new generation: everything but metadata and status.
Json spec_of(Json o) {
  if (o.is_object()) {
    o.erase("metadata");
    o.erase("status");
  }
  return o;
}

std::string percent_decode(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size()) {
      out += static_cast<char>(std::stoi(std::string(s.substr(i + 1, 2)), nullptr, 16));
      i += 2;
    } else {
      out += s[i] == '+' ? ' ' : s[i];
    }
  }
  return out;
}

std::vector<std::string> split(std::string_view s, char sep) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= s.size()) {
    const std::size_t end = std::min(s.find(sep, start), s.size());
    if (end > start) out.emplace_back(s.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

std::string key_of(const Json& o) {
  const auto& m = o.at("metadata");
  const std::string ns = m.value("namespace", "");
  return ns.empty() ? m.at("name").get<std::string>() : ns + "/" + m.at("name").get<std::string>();
}

struct LogEntry {
  std::uint64_t rv;
  std::string plural;  // "" for a bookmark (every resource)
  std::string type;
  Json object;
};

}  // namespace

struct FakeApiServer::Impl {
  Options options;
  std::vector<ResourceType> types;  // built-in, then those of applied CRDs (under m)
  Identity identity;
  net::io_context ioc;
  tcp::acceptor acceptor{ioc};
  std::unique_ptr<net::ssl::context> tls;
  std::uint16_t port = 0;
  std::thread accept_thread;

  mutable std::mutex m;
  std::condition_variable cv;
  bool stopping = false;
  std::map<std::string, std::map<std::string, Json>> store;  // plural -> key -> object
  std::uint64_t rv = 1000;
  std::uint64_t compacted = 0;
  std::uint64_t uid_counter = 0;
  std::vector<LogEntry> log;
  int fail_count = 0;
  int fail_status = 0;
  std::optional<std::string> fail_retry_after;  // the header's value, as sent
  std::optional<int> drop_after;
  std::map<std::string, std::pair<int, Json>> patch_refusals;  // path -> status, body
  std::map<std::string, std::size_t> patches_refused;          // path -> count
  std::uint64_t end_generation = 0;
  std::size_t request_count = 0;
  std::size_t unauthorized_count = 0;
  std::size_t connection_count = 0;
  std::vector<std::string> target_log;
  std::vector<std::thread> threads;
  std::set<int> open_fds;
  std::size_t open_watch_count = 0;  // watches whose header went out and that have not ended
  mutable std::condition_variable watch_cv;

  const ResourceType* find_type(const std::string& group, const std::string& version, const std::string& plural) const {
    for (const auto& t : types) {
      if (t.group == group && t.version == version && t.plural == plural) return &t;
    }
    return nullptr;
  }

  const ResourceType& type_named(const std::string& plural) const {
    for (const auto& t : types) {
      if (t.plural == plural) return t;
    }
    throw std::invalid_argument("fake API server: no resource \"" + plural + "\"");
  }

  // ---- HTTP ----

  template <class Stream>
  void write_json(Stream& s, const http::request<http::string_body>& req, int status, const Json& body,
                  const std::optional<std::string>& retry_after = std::nullopt) {
    http::response<http::string_body> res{static_cast<http::status>(status), req.version()};
    res.set(http::field::content_type, "application/json");
    if (retry_after) res.set(http::field::retry_after, *retry_after);
    res.keep_alive(req.keep_alive());
    res.body() = body.dump();
    res.prepare_payload();
    http::write(s, res);
  }

  bool authenticated(const http::request<http::string_body>& req, SSL* ssl) {
    const auto auth = req[http::field::authorization];
    if (auth.size() > 7 && auth.substr(0, 7) == "Bearer ") {
      std::lock_guard lock(m);
      return options.tokens.contains(std::string(auth.substr(7)));
    }
    if (ssl != nullptr) {
      X509* peer = SSL_get1_peer_certificate(ssl);
      const bool ok = peer != nullptr && SSL_get_verify_result(ssl) == X509_V_OK;
      X509_free(peer);
      return ok;
    }
    return false;
  }

  Json discovery_resources(const std::string& gv) {
    Json resources = Json::array();
    for (const auto& t : types) {
      if (t.group_version() != gv) continue;
      resources.push_back({{"name", t.plural}, {"singularName", t.singular}, {"namespaced", t.namespaced}, {"kind", t.kind},
                           {"verbs", {"create", "delete", "get", "list", "patch", "update", "watch"}},
                           {"shortNames", t.short_names}});
      if (t.has_status) {
        resources.push_back({{"name", t.plural + "/status"}, {"singularName", ""}, {"namespaced", t.namespaced},
                             {"kind", t.kind}, {"verbs", {"get", "patch", "update"}}});
      }
      if (t.has_scale) {
        resources.push_back({{"name", t.plural + "/scale"}, {"singularName", ""}, {"namespaced", t.namespaced},
                             {"group", "autoscaling"}, {"version", "v1"}, {"kind", "Scale"},
                             {"verbs", {"get", "patch", "update"}}});
      }
    }
    return {{"kind", "APIResourceList"}, {"apiVersion", "v1"}, {"groupVersion", gv}, {"resources", resources}};
  }

  static Json group_json(const std::string& group, const std::vector<std::string>& versions) {
    Json list = Json::array();
    for (const auto& v : versions) list.push_back({{"groupVersion", group + "/" + v}, {"version", v}});
    return {{"name", group}, {"versions", list}, {"preferredVersion", list[0]}};
  }

  std::optional<Json> discovery(const std::vector<std::string>& parts) {
    std::lock_guard lock(m);
    if (parts.size() == 1 && parts[0] == "version") {
      return Json{{"major", "1"}, {"minor", "32"}, {"gitVersion", "v1.32.0-fake"}, {"gitCommit", "fake"},
                  {"gitTreeState", "clean"}, {"buildDate", "2026-01-01T00:00:00Z"}, {"goVersion", "go1.23"},
                  {"compiler", "gc"}, {"platform", "linux/amd64"}};
    }
    if (parts.size() == 1 && parts[0] == "api") {
      return Json{{"kind", "APIVersions"}, {"versions", {"v1"}},
                  {"serverAddressByClientCIDRs", {{{"clientCIDR", "0.0.0.0/0"}, {"serverAddress", "127.0.0.1:" + std::to_string(port)}}}}};
    }
    if (parts.size() == 2 && parts[0] == "api" && parts[1] == "v1") return discovery_resources("v1");
    std::map<std::string, std::vector<std::string>> groups;  // group -> versions, first preferred
    for (const auto& t : types) {
      auto& versions = groups[t.group];
      if (!t.group.empty() && std::find(versions.begin(), versions.end(), t.version) == versions.end()) {
        versions.push_back(t.version);
      }
    }
    groups.erase("");
    if (parts.size() == 1 && parts[0] == "apis") {
      Json list = Json::array();
      for (const auto& [g, v] : groups) list.push_back(group_json(g, v));
      return Json{{"kind", "APIGroupList"}, {"apiVersion", "v1"}, {"groups", list}};
    }
    if (parts.size() == 2 && parts[0] == "apis" && groups.contains(parts[1])) {
      Json g = group_json(parts[1], groups[parts[1]]);
      g["kind"] = "APIGroup";
      g["apiVersion"] = "v1";
      return g;
    }
    if (parts.size() == 3 && parts[0] == "apis" && groups.contains(parts[1]) &&
        std::find(groups[parts[1]].begin(), groups[parts[1]].end(), parts[2]) != groups[parts[1]].end()) {
      return discovery_resources(parts[1] + "/" + parts[2]);
    }
    return std::nullopt;
  }

  template <class Stream>
  bool handle(Stream& s, const http::request<http::string_body>& req, SSL* ssl, int fd) {
    const std::string target(req.target());
    {
      std::lock_guard lock(m);
      ++request_count;
      target_log.push_back(target);
      if (fail_count > 0) {
        --fail_count;
        const int status = fail_status;
        const auto after = fail_retry_after;
        const char* reason = status == 429   ? "TooManyRequests"
                             : status == 410 ? "Expired"
                             : status == 503 ? "ServiceUnavailable"
                                             : "InternalError";
        write_json(s, req, status, status_json(status, reason, "fault injected by the fake API server"), after);
        return req.keep_alive();
      }
    }
    if (!authenticated(req, ssl)) {
      std::lock_guard lock(m);
      ++unauthorized_count;
      write_json(s, req, 401, status_json(401, "Unauthorized", "Unauthorized"));
      return req.keep_alive();
    }
    const auto q = target.find('?');
    if (req.method() == http::verb::patch) {
      std::unique_lock lock(m);
      const auto refusal = patch_refusals.find(target.substr(0, q));
      if (refusal != patch_refusals.end()) {
        ++patches_refused[refusal->first];
        const auto [status, body] = refusal->second;
        lock.unlock();
        write_json(s, req, status, body);
        return req.keep_alive();
      }
    }
    const auto parts = split(std::string_view(target).substr(0, q), '/');
    std::map<std::string, std::string> query;
    if (q != std::string::npos) {
      for (const auto& kv : split(std::string_view(target).substr(q + 1), '&')) {
        const auto eq = kv.find('=');
        query[percent_decode(kv.substr(0, eq))] = eq == std::string::npos ? "" : percent_decode(kv.substr(eq + 1));
      }
    }
    if (auto doc = req.method() == http::verb::get ? discovery(parts) : std::nullopt) {
      write_json(s, req, 200, *doc);
      return req.keep_alive();
    }
    // /api/v1/... or /apis/<g>/<v>/...
    std::string group, version;
    std::size_t i = 0;
    if (parts.size() >= 2 && parts[0] == "api") {
      version = parts[1];
      i = 2;
    } else if (parts.size() >= 3 && parts[0] == "apis") {
      group = parts[1];
      version = parts[2];
      i = 3;
    }
    std::string ns;
    if (i != 0 && parts.size() >= i + 3 && parts[i] == "namespaces") {
      ns = parts[i + 1];
      i += 2;
    }
    std::optional<ResourceType> type;  // a copy: an applied CRD may grow `types`
    if (i != 0 && parts.size() > i) {
      std::lock_guard lock(m);
      if (const ResourceType* t = find_type(group, version, parts[i])) type = *t;
    }
    const bool status_path = type && parts.size() == i + 3 && parts[i + 2] == "status" && type->has_status;
    const bool scale_path = type && parts.size() == i + 3 && parts[i + 2] == "scale" && type->has_scale;
    if (!type || (parts.size() > i + 2 && !status_path && !scale_path) || (!ns.empty() && !type->namespaced) ||
        (type->namespaced && ns.empty() && req.method() != http::verb::get)) {
      write_json(s, req, 404, status_json(404, "NotFound", "the server could not find the requested resource"));
      return req.keep_alive();
    }
    if (scale_path) {
      const auto [code, body] = scale(req, *type, ns, parts[i + 1], query);
      write_json(s, req, code, body);
      return req.keep_alive();
    }
    if (req.method() != http::verb::get) {
      const auto [code, body] = write(req, *type, ns, parts.size() > i + 1 ? parts[i + 1] : "",
                                      status_path ? "status" : "", query);
      write_json(s, req, code, body);
      return req.keep_alive();
    }
    if (parts.size() >= i + 2) {  // one object (or its status: the same object)
      const std::string key = ns.empty() ? parts[i + 1] : ns + "/" + parts[i + 1];
      std::unique_lock lock(m);
      const auto& objects = store[type->plural];
      const auto it = objects.find(key);
      if (it == objects.end()) {
        const Json body = status_json(404, "NotFound", type->qualified() + " \"" + parts[i + 1] + "\" not found");
        lock.unlock();
        write_json(s, req, 404, body);
      } else {
        const Json body = it->second;
        lock.unlock();
        write_json(s, req, 200, body);
      }
      return req.keep_alive();
    }
    if (query["watch"] == "true" || query["watch"] == "1") {
      watch(s, req, *type, ns, query, fd);
      return false;
    }
    list(s, req, *type, ns, query);
    return req.keep_alive();
  }

  // ---- writes (under m) ----

  // Stores `updated` (null: deletes) in place of `old` (null: absent): resourceVersion for
  // any change, generation for a change outside metadata and status, the watch event. A
  // write that changes nothing (a repeated apply) keeps the resourceVersion and sends no
  // event. Returns the stored object.
  Json commit(const ResourceType& type, const std::string& key, const Json& old, Json updated) {
    auto& objects = store[type.plural];
    if (updated.is_null()) {
      Json gone = old;
      objects.erase(key);
      gone["metadata"]["resourceVersion"] = std::to_string(++rv);
      log.push_back({rv, type.plural, "DELETED", gone});
      cv.notify_all();
      return gone;
    }
    if (updated == old) return old;
    auto& meta = updated["metadata"];
    updated["kind"] = type.kind;
    updated["apiVersion"] = type.group_version();
    if (old.is_null()) {
      char uid[40];
      std::snprintf(uid, sizeof uid, "fa4e0000-0000-4000-8000-%012llu", static_cast<unsigned long long>(++uid_counter));
      meta["uid"] = uid;
      meta["creationTimestamp"] = options.now;
      meta["generation"] = 1;
      if (type.plural == "customresourcedefinitions") accept_crd(updated);
    } else {
      meta["uid"] = old["metadata"]["uid"];
      meta["creationTimestamp"] = old["metadata"]["creationTimestamp"];
      const std::int64_t generation = old["metadata"].value("generation", std::int64_t{1});
      meta["generation"] = spec_of(old) == spec_of(updated) ? generation : generation + 1;
    }
    meta["resourceVersion"] = std::to_string(++rv);
    log.push_back({rv, type.plural, old.is_null() ? "ADDED" : "MODIFIED", updated});
    objects[key] = updated;
    if (type.plural == "customresourcedefinitions") register_crd(updated);
    cv.notify_all();
    return updated;
  }

  // A new CRD is accepted at once: the conditions `kubectl wait --for=condition=Established`
  // looks for (the real server checks names for clashes first).
  void accept_crd(Json& crd) const {
    const Json names = crd["spec"].value("names", Json::object());
    crd["status"] = {{"acceptedNames", names},
                     {"storedVersions", Json::array()},
                     {"conditions",
                      {{{"type", "NamesAccepted"}, {"status", "True"}, {"reason", "NoConflicts"},
                        {"message", "no conflicts found"}, {"lastTransitionTime", options.now}},
                       {{"type", "Established"}, {"status", "True"}, {"reason", "InitialNamesAccepted"},
                        {"message", "the initial names have been accepted"}, {"lastTransitionTime", options.now}}}}};
    for (const auto& v : crd["spec"].value("versions", Json::array())) {
      if (v.value("storage", false)) crd["status"]["storedVersions"].push_back(v.value("name", ""));
    }
  }

  // The CRD's served versions become resources: in discovery, listable, applicable.
  void register_crd(const Json& crd) {
    const Json& spec = crd["spec"];
    const Json names = spec.value("names", Json::object());
    for (const auto& v : spec.value("versions", Json::array())) {
      if (!v.value("served", false)) continue;
      ResourceType t{spec.value("group", ""),
                     v.value("name", ""),
                     names.value("plural", ""),
                     names.value("singular", ""),
                     names.value("kind", ""),
                     spec.value("scope", "") == "Namespaced",
                     names.value("shortNames", std::vector<std::string>{}),
                     v.contains("subresources") && v["subresources"].contains("status")};
      std::erase_if(types, [&](const ResourceType& e) { return e.group == t.group && e.version == t.version && e.plural == t.plural; });
      types.push_back(std::move(t));
    }
  }

  static Json bad_request(const std::string& message) { return status_json(400, "BadRequest", message); }

  // metav1.FormatLabelSelector: a LabelSelector as the selector string, requirements sorted
  // by key ("app=x,tier in (a,b)"), as the scale subresource's status.selector gives it.
  static std::string selector_text(const Json& selector) {
    std::vector<std::pair<std::string, std::string>> parts;  // key, requirement
    const Json labels = selector.value("matchLabels", Json::object());
    for (const auto& [k, v] : labels.items()) {
      parts.emplace_back(k, k + "=" + v.get<std::string>());
    }
    for (const auto& e : selector.value("matchExpressions", Json::array())) {
      const std::string key = e.value("key", "");
      const std::string op = e.value("operator", "");
      std::vector<std::string> values = e.value("values", std::vector<std::string>{});
      std::sort(values.begin(), values.end());
      std::string list;
      for (const auto& v : values) list += (list.empty() ? "" : ",") + v;
      if (op == "In") parts.emplace_back(key, key + " in (" + list + ")");
      if (op == "NotIn") parts.emplace_back(key, key + " notin (" + list + ")");
      if (op == "Exists") parts.emplace_back(key, key);
      if (op == "DoesNotExist") parts.emplace_back(key, "!" + key);
    }
    std::stable_sort(parts.begin(), parts.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    std::string out;
    for (const auto& [k, r] : parts) out += (out.empty() ? "" : ",") + r;
    return out;
  }

  // The object's autoscaling/v1 Scale: spec.replicas (1 when unset, the Deployment
  // default), status.replicas and the selector.
  static Json scale_of(const Json& object) {
    const Json& meta = object["metadata"];
    Json m = Json::object();
    for (const char* k : {"name", "namespace", "uid", "resourceVersion", "creationTimestamp"}) {
      if (meta.contains(k)) m[k] = meta[k];
    }
    const Json spec = object.value("spec", Json::object());
    const Json status = object.value("status", Json::object());
    return {{"kind", "Scale"},
            {"apiVersion", "autoscaling/v1"},
            {"metadata", m},
            {"spec", {{"replicas", spec.value("replicas", 1)}}},
            {"status", {{"replicas", status.value("replicas", 0)},
                        {"selector", selector_text(spec.value("selector", Json::object()))}}}};
  }

  // GET, PUT and merge PATCH of `type`'s object's scale subresource: a write changes the
  // object's spec.replicas alone; PUT checks a given resourceVersion as PUT does.
  std::pair<int, Json> scale(const http::request<http::string_body>& req, const ResourceType& type, const std::string& ns,
                             const std::string& name, std::map<std::string, std::string>& query) {
    std::lock_guard lock(m);
    const std::string key = ns.empty() ? name : ns + "/" + name;
    auto& objects = store[type.plural];
    const auto found = objects.find(key);
    if (found == objects.end()) {
      return {404, status_json(404, "NotFound", type.qualified() + " \"" + name + "\" not found")};
    }
    const Json live = found->second;
    const Json current = scale_of(live);
    if (req.method() == http::verb::get) return {200, current};
    const Json body = Json::parse(req.body(), nullptr, false);
    if (!body.is_object()) return {400, bad_request("the fake API server reads JSON object bodies only")};
    Json wanted;
    if (req.method() == http::verb::put) {
      const std::string expected = body.value("metadata", Json::object()).value("resourceVersion", "");
      if (!expected.empty() && expected != live["metadata"].value("resourceVersion", "")) {
        return {409, status_json(409, "Conflict", "Operation cannot be fulfilled on " + type.qualified() + " \"" + name +
                                                      "\": the object has been modified; please apply your changes to the latest version and try again")};
      }
      wanted = body;
    } else if (req.method() == http::verb::patch &&
               std::string(req[http::field::content_type]).starts_with("application/merge-patch+json")) {
      wanted = ssa::merge_patch(current, body);
    } else {
      return {405, status_json(405, "MethodNotAllowed", "the fake's scale subresource takes GET, PUT and merge PATCH")};
    }
    const Json replicas = wanted.value("spec", Json::object()).value("replicas", Json());
    if (!replicas.is_number_integer() || replicas.get<std::int64_t>() < 0 || replicas.get<std::int64_t>() > INT32_MAX) {
      return {422, status_json(422, "Invalid", "Scale.autoscaling \"" + name + "\" is invalid: spec.replicas: Invalid value: " +
                                                   replicas.dump() + ": must be greater than or equal to 0")};
    }
    Json next = live;
    next["spec"]["replicas"] = replicas;
    const ssa::Actor actor{query["fieldManager"], "scale", type.group_version(), options.now};
    if (next == live) return {200, current};
    return {200, scale_of(commit(type, key, live, ssa::record_update(live, std::move(next), actor)))};
  }

  // POST, PUT, PATCH and DELETE of `type`'s object `name` (empty: the collection), or of its
  // status when `subresource` is "status". The answer's status code and body.
  std::pair<int, Json> write(const http::request<http::string_body>& req, const ResourceType& type, const std::string& ns,
                             const std::string& name, const std::string& subresource,
                             std::map<std::string, std::string>& query) {
    std::lock_guard lock(m);
    const std::string content_type(req[http::field::content_type]);
    const std::string manager = query["fieldManager"];
    const ssa::Actor actor{manager, subresource, type.group_version(), options.now};
    Json body;
    if (req.method() != http::verb::delete_) {
      // The real server takes YAML for apply too; the fake reads JSON (what kubectl sends).
      body = Json::parse(req.body(), nullptr, false);
      if (!body.is_object()) return {400, bad_request("the fake API server reads JSON object bodies only")};
    }
    if (req.method() == http::verb::post) {
      if (!name.empty()) return {405, status_json(405, "MethodNotAllowed", "POST goes to a collection")};
      const std::string object_name = body["metadata"].value("name", "");
      if (object_name.empty()) {
        return {422, status_json(422, "Invalid", type.kind + ".metadata.name: Required value (the fake has no generateName)")};
      }
      if (type.namespaced) body["metadata"]["namespace"] = ns;
      const std::string key = ns.empty() ? object_name : ns + "/" + object_name;
      if (store[type.plural].contains(key)) {
        return {409, status_json(409, "AlreadyExists", type.qualified() + " \"" + object_name + "\" already exists")};
      }
      body.erase("status");
      body["metadata"].erase("managedFields");
      return {201, commit(type, key, Json(), ssa::record_update(Json(), body, actor))};
    }
    if (name.empty()) return {405, status_json(405, "MethodNotAllowed", "write an object, not a collection")};
    const std::string key = ns.empty() ? name : ns + "/" + name;
    auto& objects = store[type.plural];
    const auto found = objects.find(key);
    const Json live = found == objects.end() ? Json() : found->second;
    const auto not_found = [&] {
      return std::pair<int, Json>{404, status_json(404, "NotFound", type.qualified() + " \"" + name + "\" not found")};
    };
    if (req.method() == http::verb::delete_) {
      // DeleteOptions.propagationPolicy is accepted and ignored: no garbage collector.
      if (live.is_null()) return not_found();
      const Json gone = commit(type, key, live, Json());
      return {200, {{"kind", "Status"}, {"apiVersion", "v1"}, {"metadata", Json::object()}, {"status", "Success"},
                    {"details", {{"name", name}, {"group", type.group}, {"kind", type.plural}, {"uid", gone["metadata"]["uid"]}}}}};
    }
    const bool apply = req.method() == http::verb::patch && content_type.starts_with("application/apply-patch");
    if (apply) {
      if (manager.empty()) return {400, bad_request("PATCH: fieldManager is required for apply patch")};
      if (body.value("apiVersion", "") != type.group_version() || body.value("kind", "") != type.kind) {
        return {400, bad_request("apply: apiVersion and kind must be " + type.group_version() + " " + type.kind)};
      }
      if (body["metadata"].value("name", "") != name) {
        return {400, bad_request("apply: metadata.name \"" + body["metadata"].value("name", "") + "\" does not match the path's \"" + name + "\"")};
      }
      if (live.is_null() && !subresource.empty()) return not_found();
      const std::string& force = query["force"];
      auto outcome = ssa::apply(live, body, actor, force == "true" || force == "1");
      if (!outcome.conflicts.empty()) return {409, ssa::conflict_status(outcome.conflicts, type.group, type.kind, name)};
      Json& meta = outcome.object["metadata"];
      meta["name"] = name;
      if (type.namespaced) meta["namespace"] = ns;
      return {live.is_null() ? 201 : 200, commit(type, key, live, std::move(outcome.object))};
    }
    if (live.is_null()) return not_found();
    Json updated;
    if (req.method() == http::verb::patch) {
      if (!content_type.starts_with("application/merge-patch+json")) {
        return {415, status_json(415, "UnsupportedMediaType", "the fake takes apply and merge patches only, not " + content_type)};
      }
      // A resourceVersion in the patch is a precondition, as on the real server.
      const std::string expected = body.value("metadata", Json::object()).value("resourceVersion", "");
      if (!expected.empty() && expected != live["metadata"].value("resourceVersion", "")) {
        return {409, status_json(409, "Conflict", "Operation cannot be fulfilled on " + type.qualified() + " \"" + name +
                                                      "\": the object has been modified; please apply your changes to the latest version and try again")};
      }
      updated = ssa::merge_patch(live, body);
    } else if (req.method() == http::verb::put) {
      const std::string expected = body["metadata"].value("resourceVersion", "");
      if (!expected.empty() && expected != live["metadata"].value("resourceVersion", "")) {
        return {409, status_json(409, "Conflict", "Operation cannot be fulfilled on " + type.qualified() + " \"" + name +
                                                      "\": the object has been modified; please apply your changes to the latest version and try again")};
      }
      updated = body;
    } else {
      return {405, status_json(405, "MethodNotAllowed", "the fake does not take " + std::string(req.method_string()))};
    }
    // The status subresource writes status alone; the main resource everything but status
    // (and the server's metadata).
    Json next = live;
    if (subresource == "status") {
      if (updated.contains("status")) {
        next["status"] = updated["status"];
      } else {
        next.erase("status");
      }
    } else {
      for (const auto& [k, v] : updated.items()) {
        if (k != "status" && k != "metadata") next[k] = v;
      }
      for (const auto& [k, v] : live.items()) {
        if (k != "status" && k != "metadata" && !updated.contains(k)) next.erase(k);
      }
      for (const char* field : {"labels", "annotations"}) {
        if (updated["metadata"].contains(field)) {
          next["metadata"][field] = updated["metadata"][field];
        } else {
          next["metadata"].erase(field);
        }
      }
    }
    if (next == live) return {200, live};
    return {200, commit(type, key, live, ssa::record_update(live, std::move(next), actor))};
  }

  template <class Stream>
  void list(Stream& s, const http::request<http::string_body>& req, const ResourceType& type, const std::string& ns,
            std::map<std::string, std::string>& query) {
    std::unique_lock lock(m);
    std::uint64_t list_rv = rv;
    std::string after;
    if (!query["continue"].empty()) {
      const std::string& token = query["continue"];
      const auto bar = token.find('|');
      list_rv = bar == std::string::npos ? 0 : std::stoull(token.substr(0, bar));
      if (bar == std::string::npos || list_rv < compacted) {
        lock.unlock();
        write_json(s, req, 410,
                   status_json(410, "Expired",
                               "The provided continue parameter is too old to display a consistent list result. You "
                               "can start a new list without the continue parameter."));
        return;
      }
      after = token.substr(bar + 1);
    }
    const std::size_t limit = query["limit"].empty() ? 0 : std::stoul(query["limit"]);
    Json items = Json::array();
    std::string last;
    bool more = false;
    for (auto it = store[type.plural].upper_bound(after); it != store[type.plural].end(); ++it) {
      if (!ns.empty() && it->second["metadata"].value("namespace", "") != ns) continue;
      if (limit != 0 && items.size() == limit) {
        more = true;
        break;
      }
      items.push_back(it->second);
      last = it->first;
    }
    lock.unlock();
    Json metadata{{"resourceVersion", std::to_string(list_rv)}};
    if (more) metadata["continue"] = std::to_string(list_rv) + "|" + last;
    write_json(s, req, 200,
               {{"kind", type.kind + "List"}, {"apiVersion", type.group_version()}, {"metadata", metadata}, {"items", items}});
  }

  static std::string event_line(const std::string& type, const Json& object) {
    return Json{{"type", type}, {"object", object}}.dump() + "\n";
  }

  template <class Stream>
  void watch(Stream& s, const http::request<http::string_body>& req, const ResourceType& type, const std::string& ns,
             std::map<std::string, std::string>& query, int fd) {
    http::response<http::empty_body> res{http::status::ok, req.version()};
    res.set(http::field::content_type, "application/json");
    res.chunked(true);
    http::response_serializer<http::empty_body> sr{res};
    beast::error_code ec;
    http::write_header(s, sr, ec);
    if (ec) return;
    const bool bookmarks = query["allowWatchBookmarks"] == "true";
    const int timeout = query["timeoutSeconds"].empty() ? 1800 : std::stoi(query["timeoutSeconds"]);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout);
    const std::string from = query["resourceVersion"];
    auto relevant = [&](const Json& o) { return ns.empty() || o["metadata"].value("namespace", "") == ns; };

    // Counted open under the same lock that takes end_watches()'s generation and the pending
    // drop: a test that saw "a watch is open" and then ends watches or arms a drop always
    // reaches this watch, never one that has yet to read them. Declared before the lock so
    // that it is released after it.
    struct OpenWatch {
      Impl& im;
      bool counted = false;
      ~OpenWatch() {
        if (!counted) return;
        std::lock_guard guard(im.m);
        --im.open_watch_count;
        im.watch_cv.notify_all();
      }
    } open_watch{*this};
    std::unique_lock lock(m);
    const std::uint64_t generation = end_generation;
    std::optional<int> drop = std::exchange(drop_after, std::nullopt);
    ++open_watch_count;
    open_watch.counted = true;
    watch_cv.notify_all();
    int sent = 0;
    std::string batch;
    std::size_t next = 0;
    if (from.empty() || from == "0") {
      for (const auto& [key, o] : store[type.plural]) {
        if (relevant(o)) batch += event_line("ADDED", o);
      }
      next = log.size();
    } else if (std::stoull(from) < compacted) {
      batch = event_line("ERROR", status_json(410, "Expired", "too old resource version: " + from + " (" +
                                                                   std::to_string(compacted) + ")"));
      lock.unlock();
      net::write(s, http::make_chunk(net::buffer(batch)), ec);
      if (!ec) net::write(s, http::make_chunk_last(), ec);
      return;
    } else {
      const std::uint64_t r = std::stoull(from);
      next = static_cast<std::size_t>(
          std::partition_point(log.begin(), log.end(), [r](const LogEntry& e) { return e.rv <= r; }) - log.begin());
    }
    while (true) {
      for (; next < log.size(); ++next) {
        const LogEntry& e = log[next];
        if (e.plural.empty()) {
          if (bookmarks) {
            batch += event_line("BOOKMARK", {{"kind", type.kind}, {"apiVersion", type.group_version()},
                                             {"metadata", {{"resourceVersion", std::to_string(e.rv)}}}});
          }
        } else if (e.plural == type.plural && relevant(e.object)) {
          if (drop && sent == *drop) break;
          batch += event_line(e.type, e.object);
          ++sent;
        }
      }
      lock.unlock();
      if (!batch.empty()) net::write(s, http::make_chunk(net::buffer(batch)), ec);
      batch.clear();
      if (ec) return;
      if (drop && sent == *drop) {
        ::shutdown(fd, SHUT_RDWR);  // cut: no final chunk, no TLS close_notify
        return;
      }
      lock.lock();
      cv.wait_until(lock, deadline, [&] { return stopping || next < log.size() || end_generation != generation; });
      if (stopping) return;
      if (next < log.size()) continue;
      if (end_generation != generation || std::chrono::steady_clock::now() >= deadline) break;
    }
    lock.unlock();
    net::write(s, http::make_chunk_last(), ec);
  }

  template <class Stream>
  void serve(Stream& s, SSL* ssl, int fd) {
    beast::flat_buffer buffer;
    beast::error_code ec;
    while (true) {
      http::request<http::string_body> req;
      http::read(s, buffer, req, ec);
      if (ec) return;
      try {
        if (!handle(s, req, ssl, fd)) return;
      } catch (const std::exception&) {
        return;  // the client went away mid-write
      }
    }
  }

  void connection(tcp::socket socket) {
    const int fd = socket.native_handle();
    if (options.tls) {
      beast::ssl_stream<tcp::socket> stream(std::move(socket), *tls);
      beast::error_code ec;
      stream.handshake(net::ssl::stream_base::server, ec);
      if (!ec) serve(stream, stream.native_handle(), fd);
      std::lock_guard lock(m);
      open_fds.erase(fd);
      stream.next_layer().close(ec);
    } else {
      beast::error_code ec;
      serve(socket, nullptr, fd);
      std::lock_guard lock(m);
      open_fds.erase(fd);
      socket.close(ec);
    }
  }

  void accept_loop() {
    while (true) {
      beast::error_code ec;
      tcp::socket socket(ioc);
      acceptor.accept(socket, ec);
      std::lock_guard lock(m);
      if (stopping) return;
      if (ec) continue;
      ++connection_count;
      open_fds.insert(socket.native_handle());
      threads.emplace_back([this, sock = std::move(socket)]() mutable { connection(std::move(sock)); });
    }
  }
};

FakeApiServer::FakeApiServer(Options options) : impl_(std::make_unique<Impl>()) {
  Impl& im = *impl_;
  im.options = std::move(options);
  im.types = builtin_types(im.options.gpubank_kinds);
  im.identity = make_identity();
  if (im.options.tls) {
    im.tls = std::make_unique<net::ssl::context>(net::ssl::context::tls_server);
    im.tls->use_certificate_chain(net::buffer(im.identity.cert));
    im.tls->use_private_key(net::buffer(im.identity.key), net::ssl::context::pem);
    if (!im.options.client_ca_pem.empty()) {
      im.tls->add_certificate_authority(net::buffer(im.options.client_ca_pem));
      im.tls->set_verify_mode(net::ssl::verify_peer);  // asked for, not required: tokens work too
      // Tell the client which CA to present a certificate for (Go's client needs the list).
      STACK_OF(X509_NAME)* names = sk_X509_NAME_new_null();
      BIO* bio = BIO_new_mem_buf(im.options.client_ca_pem.data(), static_cast<int>(im.options.client_ca_pem.size()));
      X509* ca = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
      if (ca != nullptr) sk_X509_NAME_push(names, X509_NAME_dup(X509_get_subject_name(ca)));
      X509_free(ca);
      BIO_free(bio);
      SSL_CTX_set_client_CA_list(im.tls->native_handle(), names);
    }
  }
  const tcp::endpoint endpoint(net::ip::make_address("127.0.0.1"), 0);
  im.acceptor.open(endpoint.protocol());
  im.acceptor.set_option(tcp::acceptor::reuse_address(true));
  im.acceptor.bind(endpoint);
  im.acceptor.listen();
  im.port = im.acceptor.local_endpoint().port();
  im.accept_thread = std::thread([&im] { im.accept_loop(); });
}

FakeApiServer::~FakeApiServer() {
  Impl& im = *impl_;
  {
    std::lock_guard lock(im.m);
    im.stopping = true;
    for (const int fd : im.open_fds) ::shutdown(fd, SHUT_RDWR);
  }
  im.cv.notify_all();
  {  // wake the blocking accept
    beast::error_code ec;
    tcp::socket poke(im.ioc);
    poke.connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), im.port), ec);
  }
  im.accept_thread.join();
  for (auto& t : im.threads) t.join();
}

std::string FakeApiServer::url() const {
  return std::string(impl_->options.tls ? "https" : "http") + "://127.0.0.1:" + std::to_string(impl_->port);
}
const std::string& FakeApiServer::ca_pem() const { return impl_->identity.cert; }

Json FakeApiServer::put(const std::string& resource, Json object) {
  std::lock_guard lock(impl_->m);
  const ResourceType type = impl_->type_named(resource);
  Impl& im = *impl_;
  auto& meta = object["metadata"];
  if (!meta.contains("name")) throw std::invalid_argument("fake API server: object without metadata.name");
  if (type.namespaced && !meta.contains("namespace")) meta["namespace"] = "default";
  object["kind"] = type.kind;
  object["apiVersion"] = type.group_version();
  const std::string key = key_of(object);
  auto& objects = im.store[type.plural];
  const auto old = objects.find(key);
  if (old != objects.end()) {
    meta["uid"] = old->second["metadata"]["uid"];
    meta["creationTimestamp"] = old->second["metadata"]["creationTimestamp"];
    // As the write path counts it: a new generation for a change outside metadata and status.
    const std::int64_t generation = old->second["metadata"].value("generation", std::int64_t{1});
    meta["generation"] = spec_of(old->second) == spec_of(object) ? generation : generation + 1;
  } else {
    if (!meta.contains("generation")) meta["generation"] = 1;
    if (!meta.contains("uid")) {
      char uid[40];
      std::snprintf(uid, sizeof uid, "fa4e0000-0000-4000-8000-%012llu", static_cast<unsigned long long>(++im.uid_counter));
      meta["uid"] = uid;
    }
    if (!meta.contains("creationTimestamp")) meta["creationTimestamp"] = "2026-01-01T00:00:00Z";
  }
  meta["resourceVersion"] = std::to_string(++im.rv);
  im.log.push_back({im.rv, type.plural, old == objects.end() ? "ADDED" : "MODIFIED", object});
  objects[key] = object;
  im.cv.notify_all();
  return object;
}

bool FakeApiServer::remove(const std::string& resource, const std::string& namespace_name, const std::string& name) {
  std::lock_guard lock(impl_->m);
  const ResourceType type = impl_->type_named(resource);
  Impl& im = *impl_;
  auto& objects = im.store[type.plural];
  const auto it = objects.find(namespace_name.empty() ? name : namespace_name + "/" + name);
  if (it == objects.end()) return false;
  Json object = std::move(it->second);
  objects.erase(it);
  object["metadata"]["resourceVersion"] = std::to_string(++im.rv);
  im.log.push_back({im.rv, type.plural, "DELETED", std::move(object)});
  im.cv.notify_all();
  return true;
}

std::vector<Json> FakeApiServer::objects(const std::string& resource) const {
  std::lock_guard lock(impl_->m);
  const ResourceType type = impl_->type_named(resource);
  std::vector<Json> out;
  const auto it = impl_->store.find(type.plural);
  if (it != impl_->store.end()) {
    for (const auto& [key, o] : it->second) out.push_back(o);
  }
  return out;
}

std::uint64_t FakeApiServer::resource_version() const {
  std::lock_guard lock(impl_->m);
  return impl_->rv;
}

void FakeApiServer::compact() {
  std::lock_guard lock(impl_->m);
  impl_->compacted = impl_->rv;
}

void FakeApiServer::bookmark() {
  std::lock_guard lock(impl_->m);
  impl_->log.push_back({impl_->rv, "", "BOOKMARK", Json()});
  impl_->cv.notify_all();
}

void FakeApiServer::fail_next(int count, int status, std::optional<int> retry_after_seconds) {
  std::lock_guard lock(impl_->m);
  impl_->fail_count = count;
  impl_->fail_status = status;
  impl_->fail_retry_after =
      retry_after_seconds ? std::optional<std::string>(std::to_string(*retry_after_seconds)) : std::nullopt;
}

void FakeApiServer::fail_next_with_retry_after(int count, int status, std::string retry_after) {
  std::lock_guard lock(impl_->m);
  impl_->fail_count = count;
  impl_->fail_status = status;
  impl_->fail_retry_after = std::move(retry_after);
}

void FakeApiServer::refuse_patches(const std::string& path, int status, nlohmann::json body) {
  std::lock_guard lock(impl_->m);
  if (status == 0) {
    impl_->patch_refusals.erase(path);
  } else {
    impl_->patch_refusals[path] = {status, std::move(body)};
  }
}

std::size_t FakeApiServer::refused_patches(const std::string& path) const {
  std::lock_guard lock(impl_->m);
  const auto it = impl_->patches_refused.find(path);
  return it == impl_->patches_refused.end() ? 0 : it->second;
}

void FakeApiServer::drop_next_watch_after(int events) {
  std::lock_guard lock(impl_->m);
  impl_->drop_after = events;
}

void FakeApiServer::end_watches() {
  std::lock_guard lock(impl_->m);
  ++impl_->end_generation;
  impl_->cv.notify_all();
}

std::size_t FakeApiServer::open_watches() const {
  std::lock_guard lock(impl_->m);
  return impl_->open_watch_count;
}

bool FakeApiServer::wait_for_open_watches(std::size_t count, std::chrono::milliseconds timeout) const {
  std::unique_lock lock(impl_->m);
  return impl_->watch_cv.wait_for(lock, timeout, [&] { return impl_->open_watch_count >= count; });
}

std::size_t FakeApiServer::requests() const {
  std::lock_guard lock(impl_->m);
  return impl_->request_count;
}
std::size_t FakeApiServer::unauthorized() const {
  std::lock_guard lock(impl_->m);
  return impl_->unauthorized_count;
}
std::size_t FakeApiServer::connections() const {
  std::lock_guard lock(impl_->m);
  return impl_->connection_count;
}
std::vector<std::string> FakeApiServer::targets() const {
  std::lock_guard lock(impl_->m);
  return impl_->target_log;
}

}  // namespace gpubank::testing
