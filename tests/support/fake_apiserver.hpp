// A FAKE Kubernetes API server for tests: Boost.Beast on loopback, TLS with a certificate
// generated at start-up, speaking enough of the real HTTP protocol for the transport,
// list/watch and the real kubectl:
//
//   - discovery: /api, /apis, /api/v1, /apis/<group>, /apis/<group>/<version> (legacy,
//     not aggregated: kubectl falls back to it) for core v1 pods/nodes/namespaces,
//     events.k8s.io/v1 events, coordination.k8s.io/v1 leases (namespaced, no status),
//     apps/v1 deployments (with the scale subresource: GET, PUT and merge PATCH of an
//     autoscaling/v1 Scale that reads and writes spec.replicas; status.selector in
//     FormatLabelSelector's spelling), autoscaling/v2 horizontalpodautoscalers,
//     apiextensions.k8s.io/v1 customresourcedefinitions,
//     kueue.x-k8s.io/v1beta2 workloads/clusterqueues/localqueues/cohorts and (unless
//     Options::gpubank_kinds is false) platform.gpubank.dev/v1alpha1's six kinds, with
//     "<plural>/status" entries for the kinds that have the subresource; /version;
//   - CRDs: an applied (or POSTed) CustomResourceDefinition is Established at once and its
//     served versions join discovery, list, watch and the write path;
//   - GET of a collection (all namespaces or one) and of one object; list with limit and
//     continue; watch (watch=true) as chunked JSON lines from a resourceVersion, with
//     BOOKMARK events when the test asks for one and allowWatchBookmarks is set;
//   - writes: server-side apply (PATCH application/apply-patch+yaml, fieldManager required,
//     force) with managedFields kept per leaf path and 409 Conflict worded as the real
//     server words it (support/fake_apply.hpp says what is simplified); JSON merge patch
//     (a resourceVersion in it is a precondition: a stale one is 409 Conflict) and PUT
//     of an object or of its status subresource (status writes change status alone,
//     object writes everything but status; PUT checks a given resourceVersion: a stale one
//     is 409 Conflict, worded as the real server words it, "Operation cannot be fulfilled
//     on leases.coordination.k8s.io \"x\": the object has been modified; please apply your
//     changes to the latest version and try again"); POST to a collection (metadata.name
//     required: no generateName; an existing name is 409 AlreadyExists); DELETE
//     (propagationPolicy ignored: no garbage collector, no finalizers). Every change bumps resourceVersion and
//     sends a watch event; a write that changes nothing (a repeated apply) neither;
//     generation starts at 1 and grows on changes outside metadata and status;
//   - resourceVersion: one counter for the whole server; the fake assigns resourceVersion,
//     uid and creationTimestamp to objects the test puts in;
//   - 410 Gone: after compact(), a watch from an older resourceVersion gets an ERROR event
//     with a 410 Status (as the real server sends it), a list with a continue token from
//     before it gets HTTP 410;
//   - faults on demand: the next N requests answered with a status (429 with Retry-After in
//     seconds or any text, such as an HTTP date; 500, ...), the next watch dropped
//     (connection closed, no final chunk) after K events; PATCHes of one object's path
//     refused with a given status and Status body, as an admission webhook's denial comes
//     back (403 or 422, "admission webhook \"x\" denied the request: ..."), counted;
//   - state for tests to wait on (condition variables, no polling): the watches open now;
//   - authentication: a bearer token from the accepted set or a client certificate signed
//     by the client CA; otherwise 401 with a Status.
//
// What it does NOT do: YAML bodies (JSON only, which is what kubectl sends), strategic
// merge or JSON patches, OpenAPI schemas (no validation, defaulting or pruning; kubectl
// needs --validate=false), admission, dry-run; no label or field selectors; list pages are
// cut from the current state, not from a snapshot at the first page's resourceVersion;
// resourceVersion on a list is ignored (always the newest); no aggregated discovery,
// protobuf, HTTP/2 or authorization (an authenticated caller may read and write
// everything).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace gpubank::testing {

class FakeApiServer {
 public:
  struct Options {
    std::set<std::string> tokens{"fake-token"};  // accepted bearer tokens
    std::string client_ca_pem;                   // client certificates it trusts; empty: none
    bool tls = true;                             // false: plain http on loopback
    // The six platform.gpubank.dev kinds built in; false: they exist once their CRDs
    // (deploy/crds/) are applied.
    bool gpubank_kinds = true;
    std::string now = "2026-01-01T00:00:00Z";  // creationTimestamp, managedFields times
  };

  explicit FakeApiServer(Options options);
  ~FakeApiServer();
  FakeApiServer(const FakeApiServer&) = delete;
  FakeApiServer& operator=(const FakeApiServer&) = delete;

  [[nodiscard]] std::string url() const;           // "https://127.0.0.1:PORT"
  [[nodiscard]] const std::string& ca_pem() const; // the server certificate (self-signed)

  // Stores `object` in `resource` ("pods", "nodes", "workloads", "clusterqueues", ...),
  // assigning resourceVersion (and uid, creationTimestamp when missing); ADDED or MODIFIED
  // goes to watchers. Returns the stored object.
  nlohmann::json put(const std::string& resource, nlohmann::json object);
  // Deletes it (DELETED to watchers); false when absent.
  bool remove(const std::string& resource, const std::string& namespace_name, const std::string& name);
  // The objects of `resource`, in key order: what a client's cache must end up equal to.
  [[nodiscard]] std::vector<nlohmann::json> objects(const std::string& resource) const;
  [[nodiscard]] std::uint64_t resource_version() const;

  // Forget history: watches from an older resourceVersion and continue tokens from before
  // now get 410 Gone.
  void compact();
  // A BOOKMARK at the current resourceVersion to every watch that allows them.
  void bookmark();
  // The next `count` requests are answered with `status` (and Retry-After when given).
  void fail_next(int count, int status, std::optional<int> retry_after_seconds = std::nullopt);
  // The same with Retry-After exactly as given: an HTTP date, or something malformed.
  void fail_next_with_retry_after(int count, int status, std::string retry_after);
  // Every PATCH of `path` ("/apis/batch/v1/namespaces/ns/jobs/name", no query) is answered
  // with `status` and `body` (a Kubernetes Status: kind, apiVersion, status, message, reason,
  // code) and changes nothing, after authentication, as an admission refusal is; status 0
  // takes the rule away. Other methods and paths are served as usual.
  void refuse_patches(const std::string& path, int status, nlohmann::json body);
  // How many PATCHes of `path` were refused so far.
  [[nodiscard]] std::size_t refused_patches(const std::string& path) const;
  // The next watch is cut (connection closed without the final chunk) after `events` events.
  void drop_next_watch_after(int events);
  // Ends every open watch cleanly (the final chunk), as the server's timeoutSeconds does.
  void end_watches();

  // Watches being served now: the response header sent, the watch not ended (a client that
  // went away is noticed at the next write).
  [[nodiscard]] std::size_t open_watches() const;
  // Waits until at least `count` watches are open; false after `timeout` (a hang guard).
  bool wait_for_open_watches(std::size_t count, std::chrono::milliseconds timeout = std::chrono::seconds(60)) const;

  [[nodiscard]] std::size_t requests() const;
  [[nodiscard]] std::size_t unauthorized() const;
  [[nodiscard]] std::size_t connections() const;
  [[nodiscard]] std::vector<std::string> targets() const;  // request targets, in order

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpubank::testing
