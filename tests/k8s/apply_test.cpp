// The write path's pure half: the RESTMapper from discovery documents, apply and status
// requests, Events and their series (with an injected clock), and the fake's managed-fields
// bookkeeping on its own.
#include <gtest/gtest.h>

#include "k8s/apply.hpp"
#include "support/fake_apply.hpp"

namespace gpubank::k8s {
// The alias src/k8s/watch_event.hpp declares (a unity build may include it after this file).
using Json = nlohmann::json;
namespace {

using namespace std::chrono_literals;

Json gpubank_discovery() {
  return Json::parse(R"({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "platform.gpubank.dev/v1alpha1",
    "resources": [
      {"name": "platformguardrails", "singularName": "platformguardrail", "namespaced": false, "kind": "PlatformGuardrails", "verbs": ["get"]},
      {"name": "platformguardrails/status", "singularName": "", "namespaced": false, "kind": "PlatformGuardrails", "verbs": ["get"]},
      {"name": "gpuquotapolicies", "singularName": "gpuquotapolicy", "namespaced": false, "kind": "GPUQuotaPolicy", "verbs": ["get"]}]})");
}

Json core_discovery() {
  return Json::parse(R"({"kind": "APIResourceList", "groupVersion": "v1", "resources": [
      {"name": "pods", "namespaced": true, "kind": "Pod"}, {"name": "pods/status", "namespaced": true, "kind": "Pod"},
      {"name": "nodes", "namespaced": false, "kind": "Node"}]})");
}

RestMapper mapper() {
  RestMapper m;
  EXPECT_TRUE(m.add_discovery(gpubank_discovery()).ok());
  EXPECT_TRUE(m.add_discovery(core_discovery()).ok());
  return m;
}

TEST(RestMapper, PluralsAndScopeComeFromDiscovery) {
  const RestMapper m = mapper();
  EXPECT_EQ(m.size(), 4u);
  auto g = m.find("platform.gpubank.dev/v1alpha1", "PlatformGuardrails");
  ASSERT_TRUE(g.ok()) << g.error();
  EXPECT_EQ(g->resource, "platformguardrails");  // not a guessed "platformguardrailses"
  EXPECT_FALSE(g->namespaced);
  EXPECT_TRUE(g->has_status);
  EXPECT_EQ(g->object_path("ignored", "base"), "/apis/platform.gpubank.dev/v1alpha1/platformguardrails/base");
  auto q = m.find("platform.gpubank.dev/v1alpha1", "GPUQuotaPolicy");
  ASSERT_TRUE(q.ok());
  EXPECT_FALSE(q->has_status);
  auto pod = m.find("v1", "Pod");
  ASSERT_TRUE(pod.ok());
  EXPECT_EQ(pod->object_path("team-a", "train-0"), "/api/v1/namespaces/team-a/pods/train-0");
  auto missing = m.find("platform.gpubank.dev/v1alpha1", "TidalPolicy");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error(),
            "no resource for kind TidalPolicy in platform.gpubank.dev/v1alpha1: discovery does not list it (is its CRD installed?)");
}

TEST(RestMapper, MalformedDiscoveryNamesTheField) {
  RestMapper m;
  auto no_gv = m.add_discovery(Json::parse(R"({"resources": []})"));
  ASSERT_FALSE(no_gv.ok());
  EXPECT_EQ(no_gv.error(), "discovery: groupVersion: missing or not a string");
  auto bad_gv = m.add_discovery(Json::parse(R"({"groupVersion": "a/b/c", "resources": []})"));
  ASSERT_FALSE(bad_gv.ok());
  EXPECT_EQ(bad_gv.error(), "discovery: groupVersion: \"a/b/c\" is not <version> or <group>/<version>");
  auto no_scope = m.add_discovery(Json::parse(R"({"groupVersion": "v1", "resources": [{"name": "pods", "kind": "Pod"}]})"));
  ASSERT_FALSE(no_scope.ok());
  EXPECT_EQ(no_scope.error(), "discovery v1: resources[0].namespaced: missing or not a boolean");
  EXPECT_EQ(m.size(), 0u);  // a failed document adds nothing
}

TEST(ApplyRequest, PathAndBodyWithoutServerFields) {
  const Json object = Json::parse(R"({"apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "p", "resourceVersion": "7", "uid": "u", "managedFields": [], "labels": {"a": "b"}},
    "spec": {"nodeName": "n"}, "status": {"phase": "Running"}})");
  auto req = apply_request(mapper(), object, "team-a");
  ASSERT_TRUE(req.ok()) << req.error();
  EXPECT_EQ(req->path, "/api/v1/namespaces/team-a/pods/p");
  EXPECT_EQ(Json::parse(req->body), Json::parse(R"({"apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "p", "namespace": "team-a", "labels": {"a": "b"}}, "spec": {"nodeName": "n"}})"));
}

TEST(ApplyRequest, ErrorsNameTheFieldAndRule) {
  const RestMapper m = mapper();
  auto no_name = apply_request(m, Json::parse(R"({"apiVersion": "v1", "kind": "Node", "metadata": {}})"));
  ASSERT_FALSE(no_name.ok());
  EXPECT_EQ(no_name.error(), "object: metadata.name: missing or empty (apply needs a name)");
  auto scoped = apply_request(m, Json::parse(R"({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n", "namespace": "x"}})"));
  ASSERT_FALSE(scoped.ok());
  EXPECT_EQ(scoped.error(), "object: metadata.namespace: Node is cluster-scoped, but the object names namespace \"x\"");
  auto no_status = status_patch(m, Json::parse(R"({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}})"),
                                Json::object());
  ASSERT_FALSE(no_status.ok());
  EXPECT_EQ(no_status.error(), "object: Node has no status subresource in discovery (nodes/status)");
  auto ok = status_patch(m, Json::parse(R"({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}})"),
                         Json{{"phase", "Failed"}});
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->path, "/api/v1/namespaces/default/pods/p/status");
  EXPECT_EQ(ok->body, R"({"status":{"phase":"Failed"}})");
}

TEST(MicroTime, Rfc3339WithMicroseconds) {
  const std::chrono::system_clock::time_point t{std::chrono::microseconds(1'767'225'600'123'456)};
  EXPECT_EQ(micro_time(t), "2026-01-01T00:00:00.123456Z");
  EXPECT_EQ(micro_time(std::chrono::system_clock::time_point{}), "1970-01-01T00:00:00.000000Z");
}

struct FakeClock {
  std::chrono::system_clock::time_point now{std::chrono::seconds(1'767'225'600)};
  EventRecorder::Clock clock() {
    return [this] { return now; };
  }
};

EventSpec reclaimed(const std::string& note = "reclaimed 8 GPUs from team-b") {
  EventSpec s;
  s.regarding = {"platform.gpubank.dev/v1alpha1", "GPUQuotaPolicy", "", "search-team-h100", "uid-1"};
  s.type = "Normal";
  s.reason = "QuotaReclaimed";
  s.action = "Reclaim";
  s.note = note;
  return s;
}

TEST(EventRecorder, BuildsAnEventsV1Event) {
  FakeClock clock;
  EventRecorder r("gpubank-0", clock.clock());
  auto w = r.record(reclaimed());
  ASSERT_TRUE(w.ok()) << w.error();
  EXPECT_EQ(w->verb, EventWrite::Verb::kCreate);
  EXPECT_EQ(w->path, "/apis/events.k8s.io/v1/namespaces/default/events");  // cluster-scoped: default
  EXPECT_EQ(w->body, Json::parse(R"({"apiVersion": "events.k8s.io/v1", "kind": "Event",
    "metadata": {"name": "search-team-h100.18867251edfa0000", "namespace": "default"},
    "eventTime": "2026-01-01T00:00:00.000000Z", "reportingController": "platform.gpubank.dev/controller",
    "reportingInstance": "gpubank-0", "action": "Reclaim", "reason": "QuotaReclaimed", "type": "Normal",
    "note": "reclaimed 8 GPUs from team-b",
    "regarding": {"apiVersion": "platform.gpubank.dev/v1alpha1", "kind": "GPUQuotaPolicy", "name": "search-team-h100", "uid": "uid-1"}})"));
}

TEST(EventRecorder, RepeatsWithinTheWindowCountInTheSeries) {
  FakeClock clock;
  EventRecorder r("gpubank-0", clock.clock(), 360s);
  auto first = r.record(reclaimed());
  ASSERT_TRUE(first.ok());
  const std::string path = first->path + "/" + first->body["metadata"]["name"].get<std::string>();
  clock.now += 10s;
  auto second = r.record(reclaimed());
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->verb, EventWrite::Verb::kPatchSeries);
  EXPECT_EQ(second->path, path);
  EXPECT_EQ(second->body, Json::parse(R"({"series": {"count": 2, "lastObservedTime": "2026-01-01T00:00:10.000000Z"}})"));
  clock.now += 300s;  // within the window of the last observation, not of the first
  auto third = r.record(reclaimed());
  EXPECT_EQ(third->body["series"]["count"], 3);
  auto other = r.record(reclaimed("reclaimed 4 GPUs from team-c"));  // another note: another event
  EXPECT_EQ(other->verb, EventWrite::Verb::kCreate);
  EXPECT_NE(other->body["metadata"]["name"], first->body["metadata"]["name"]);  // same instant, unique name
  EXPECT_EQ(r.cached(), 2u);
  clock.now += 361s;
  auto later = r.record(reclaimed());
  EXPECT_EQ(later->verb, EventWrite::Verb::kCreate);
  EXPECT_EQ(r.cached(), 1u);  // the expired series are forgotten
}

TEST(EventRecorder, NoteIsCutAtOneKibOnACharacterBoundary) {
  FakeClock clock;
  EventRecorder r("gpubank-0", clock.clock());
  std::string note(1023, 'x');
  note += "\xc3\xa9tail";  // a two-byte character across the limit
  auto w = r.record(reclaimed(note));
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->body["note"].get<std::string>(), std::string(1023, 'x'));
}

TEST(EventRecorder, InvalidEventsNameTheRule) {
  FakeClock clock;
  EventRecorder r("gpubank-0", clock.clock());
  auto spec = reclaimed();
  spec.type = "Error";
  EXPECT_EQ(r.record(spec).error(), "event type: \"Error\" is neither Normal nor Warning");
  spec = reclaimed();
  spec.reason.clear();
  EXPECT_EQ(r.record(spec).error(), "event reason: must be 1 to 128 bytes");
  spec = reclaimed();
  spec.regarding.name.clear();
  EXPECT_EQ(r.record(spec).error(), "event regarding: kind and name are required");
}

// ---- the fake's bookkeeping, without HTTP ----

namespace ssa = gpubank::testing::ssa;

TEST(FakeManagedFields, FieldsV1RoundTripsLeafPaths) {
  const Json config = Json::parse(R"({"spec": {"a": 1, "b": {"c": [1, 2]}, "e": {}}})");
  const auto paths = ssa::leaves(config);
  EXPECT_EQ(paths, (std::set<ssa::Path>{{"spec", "a"}, {"spec", "b", "c"}, {"spec", "e"}}));
  const Json f = ssa::fields_v1(paths);
  EXPECT_EQ(f, Json::parse(R"({"f:spec": {"f:a": {}, "f:b": {"f:c": {}}, "f:e": {}}})"));
  EXPECT_EQ(ssa::paths_of(f), paths);
}

TEST(FakeManagedFields, ApplyOwnsConflictsForcesAndDrops) {
  const ssa::Actor a{"a", "", "v1", "t1"};
  const ssa::Actor b{"b", "", "v1", "t2"};
  auto created = ssa::apply(Json(), Json::parse(R"({"spec": {"x": 1, "y": 2}})"), a, false);
  ASSERT_TRUE(created.conflicts.empty());
  // b applies the same value of x (shared) and a new z: no conflict.
  auto shared = ssa::apply(created.object, Json::parse(R"({"spec": {"x": 1, "z": 3}})"), b, false);
  ASSERT_TRUE(shared.conflicts.empty());
  // b applies another y: a conflict with a, nothing written.
  auto clash = ssa::apply(shared.object, Json::parse(R"({"spec": {"y": 5}})"), b, false);
  ASSERT_EQ(clash.conflicts.size(), 1u);
  EXPECT_EQ(clash.conflicts[0].manager, "a");
  EXPECT_EQ(ssa::path_text(clash.conflicts[0].path), ".spec.y");
  EXPECT_EQ(clash.object, shared.object);
  const Json status = ssa::conflict_status(clash.conflicts, "g", "K", "n");
  EXPECT_EQ(status["message"], "Apply failed with 1 conflict: conflict with \"a\" using v1: .spec.y");
  // Forced: y moves to b; b no longer names x and z, but a still owns x, so only z goes.
  auto forced = ssa::apply(shared.object, Json::parse(R"({"spec": {"y": 5}})"), b, true);
  EXPECT_TRUE(forced.conflicts.empty());  // forced: written, nothing to report
  EXPECT_EQ(forced.object["spec"], Json::parse(R"({"x": 1, "y": 5})"));
  const auto& mf = forced.object["metadata"]["managedFields"];
  ASSERT_EQ(mf.size(), 2u);
  EXPECT_EQ(mf[0]["manager"], "a");
  EXPECT_EQ(mf[0]["fieldsV1"], Json::parse(R"({"f:spec": {"f:x": {}}})"));
  EXPECT_EQ(mf[1]["fieldsV1"], Json::parse(R"({"f:spec": {"f:y": {}}})"));
}

TEST(FakeManagedFields, UpdatesTakeChangedLeaves) {
  const ssa::Actor a{"a", "", "v1", "t1"};
  const ssa::Actor u{"ctl", "status", "v1", "t2"};
  auto created = ssa::apply(Json(), Json::parse(R"({"spec": {"x": 1}})"), a, false).object;
  Json next = created;
  next["status"] = {{"phase", "Ready"}};
  const Json updated = ssa::record_update(created, next, u);
  const auto& mf = updated["metadata"]["managedFields"];
  ASSERT_EQ(mf.size(), 2u);
  EXPECT_EQ(mf[1], Json::parse(R"({"manager": "ctl", "operation": "Update", "subresource": "status", "apiVersion": "v1",
    "time": "t2", "fieldsType": "FieldsV1", "fieldsV1": {"f:status": {"f:phase": {}}}})"));
  EXPECT_EQ(ssa::merge_patch(Json::parse(R"({"a": 1, "b": {"c": 2}})"), Json::parse(R"({"a": null, "b": {"d": 3}})")),
            Json::parse(R"({"b": {"c": 2, "d": 3}})"));
}

}  // namespace
}  // namespace gpubank::k8s
