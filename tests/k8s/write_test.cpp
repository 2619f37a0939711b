// The write path against the fake API server: server-side apply (create, update, no-op,
// conflicts between managers, force), the status subresource, generation, DELETE, Events
// and their series, CRDs extending discovery, the watch events writes cause, and which
// failed writes the transport retries.
#include <gtest/gtest.h>

#include "fixture.hpp"
#include "fake_client.hpp"
#include "k8s/apply.hpp"

namespace gpubank::k8s {
// The alias src/k8s/watch_event.hpp declares (a unity build may include it after this file).
using Json = nlohmann::json;
namespace {

using namespace testing;
using namespace std::chrono_literals;

Json quota(int guaranteed, const std::string& name = "search-team-h100") {
  return {{"apiVersion", "platform.gpubank.dev/v1alpha1"},
          {"kind", "GPUQuotaPolicy"},
          {"metadata", {{"name", name}}},
          {"spec", {{"businessGroup", "search"}, {"resourcePool", "h100"}, {"guaranteed", guaranteed}}}};
}

class Writes : public ::testing::Test {
 protected:
  void SetUp() override { start({}); }

  void start(FakeApiServer::Options options) {
    fake_ = std::make_unique<FakeApiServer>(std::move(options));
    client_ = client("gpubank");
    refresh_mapper();
  }

  std::unique_ptr<Transport> client(const std::string& manager) {
    TransportOptions options;
    options.field_manager = manager;
    return make_transport(config_for(*fake_), sleeps_, options);
  }

  void refresh_mapper() {
    auto m = discover(*client_);
    ASSERT_TRUE(m.ok()) << m.error().describe();
    mapper_ = *m;
  }

  Json apply(Transport& t, const Json& object, bool force = false) {
    auto req = apply_request(mapper_, object);
    EXPECT_TRUE(req.ok()) << (req.ok() ? "" : req.error());
    if (!req.ok()) return Json();
    auto res = t.apply(req->path, req->body, force);
    EXPECT_TRUE(res.ok()) << (res.ok() ? "" : res.error().describe());
    return res.ok() ? Json::parse(res->body) : Json();
  }

  SleepLog sleeps_;
  std::unique_ptr<FakeApiServer> fake_;
  std::unique_ptr<Transport> client_;
  RestMapper mapper_;
};

TEST_F(Writes, ApplyCreatesUpdatesAndANoOpKeepsTheResourceVersion) {
  const Json created = apply(*client_, quota(32));
  EXPECT_EQ(created["metadata"]["generation"], 1);
  EXPECT_EQ(created["spec"]["guaranteed"], 32);
  EXPECT_EQ(created["metadata"]["managedFields"][0]["manager"], "gpubank");
  EXPECT_EQ(created["metadata"]["managedFields"][0]["operation"], "Apply");
  const std::uint64_t rv = fake_->resource_version();
  EXPECT_EQ(created["metadata"]["resourceVersion"], std::to_string(rv));

  const Json again = apply(*client_, quota(32));
  EXPECT_EQ(again, created);
  EXPECT_EQ(fake_->resource_version(), rv);

  const Json updated = apply(*client_, quota(40));
  EXPECT_EQ(updated["spec"]["guaranteed"], 40);
  EXPECT_EQ(updated["metadata"]["generation"], 2);
  EXPECT_EQ(updated["metadata"]["resourceVersion"], std::to_string(rv + 1));
  EXPECT_EQ(updated["metadata"]["uid"], created["metadata"]["uid"]);
}

TEST_F(Writes, AnotherManagersValueConflictsUntilForced) {
  (void)apply(*client_, quota(32));
  auto other = client("other");
  auto req = apply_request(mapper_, quota(8));
  ASSERT_TRUE(req.ok());
  auto clash = other->apply(req->path, req->body);
  ASSERT_FALSE(clash.ok());
  EXPECT_EQ(clash.error().http_status, 409);
  EXPECT_EQ(clash.error().reason, "Conflict");
  EXPECT_FALSE(clash.error().retryable);
  EXPECT_EQ(clash.error().message,
            "Apply failed with 1 conflict: conflict with \"gpubank\" using platform.gpubank.dev/v1alpha1: .spec.guaranteed "
            "[causes: .spec.guaranteed: conflict with \"gpubank\" using platform.gpubank.dev/v1alpha1]");
  EXPECT_EQ(fake_->objects("gpuquotapolicies")[0]["spec"]["guaranteed"], 32);

  auto forced = other->apply(req->path, req->body, /*force=*/true);
  ASSERT_TRUE(forced.ok()) << forced.error().describe();
  const Json object = Json::parse(forced->body);
  EXPECT_EQ(object["spec"]["guaranteed"], 8);
  // businessGroup and resourcePool had the same value: shared. guaranteed moved to "other".
  const auto& mf = object["metadata"]["managedFields"];
  ASSERT_EQ(mf.size(), 2u);
  EXPECT_EQ(mf[0]["fieldsV1"], Json::parse(R"({"f:spec": {"f:businessGroup": {}, "f:resourcePool": {}}})"));
  EXPECT_EQ(mf[1]["manager"], "other");
  EXPECT_EQ(mf[1]["fieldsV1"], Json::parse(R"({"f:spec": {"f:businessGroup": {}, "f:guaranteed": {}, "f:resourcePool": {}}})"));
  // gpubank, applying its old value again, now conflicts with "other".
  auto back = client_->apply(req->path, apply_request(mapper_, quota(32))->body);
  ASSERT_FALSE(back.ok());
  EXPECT_NE(back.error().message.find("conflict with \"other\""), std::string::npos) << back.error().describe();
}

TEST_F(Writes, AFieldDroppedFromTheConfigurationIsRemoved) {
  Json q = quota(32);
  q["spec"]["borrowLimit"] = 16;
  (void)apply(*client_, q);
  const Json after = apply(*client_, quota(32));
  EXPECT_FALSE(after["spec"].contains("borrowLimit")) << after.dump();
  EXPECT_EQ(after["metadata"]["generation"], 2);
}

TEST_F(Writes, StatusAndSpecAreWrittenApart) {
  const Json created = apply(*client_, quota(32));
  const Json object = fake_->objects("gpuquotapolicies")[0];
  auto patch = status_patch(mapper_, object, Json{{"conditions", {{{"type", "Ready"}, {"status", "True"}}}}});
  ASSERT_TRUE(patch.ok()) << patch.error();
  EXPECT_EQ(patch->path, "/apis/platform.gpubank.dev/v1alpha1/gpuquotapolicies/search-team-h100/status");
  // Status writes carry spec changes that must not land.
  Json body = Json::parse(patch->body);
  body["spec"] = {{"guaranteed", 1}};
  auto res = client_->merge_patch(patch->path, body.dump());
  ASSERT_TRUE(res.ok()) << res.error().describe();
  Json stored = Json::parse(res->body);
  EXPECT_EQ(stored["spec"], created["spec"]);
  EXPECT_EQ(stored["status"]["conditions"][0]["type"], "Ready");
  EXPECT_EQ(stored["metadata"]["generation"], 1);  // status is not spec
  EXPECT_NE(stored["metadata"]["resourceVersion"], created["metadata"]["resourceVersion"]);
  const Json& mf = stored["metadata"]["managedFields"];
  ASSERT_EQ(mf.size(), 2u);
  EXPECT_EQ(mf[1]["operation"], "Update");
  EXPECT_EQ(mf[1]["subresource"], "status");

  // A PUT of the main resource leaves status alone.
  Json replaced = stored;
  replaced["spec"]["guaranteed"] = 48;
  replaced["status"] = {{"conditions", Json::array()}};
  auto put = client_->replace(patch->path.substr(0, patch->path.size() - 7), replaced.dump());
  ASSERT_TRUE(put.ok()) << put.error().describe();
  stored = Json::parse(put->body);
  EXPECT_EQ(stored["spec"]["guaranteed"], 48);
  EXPECT_EQ(stored["status"]["conditions"][0]["type"], "Ready");
  EXPECT_EQ(stored["metadata"]["generation"], 2);

  // A stale resourceVersion on PUT is a 409 too, without causes.
  auto stale = client_->replace(patch->path, replaced.dump());
  ASSERT_FALSE(stale.ok());
  EXPECT_EQ(stale.error().http_status, 409);
  EXPECT_NE(stale.error().message.find("the object has been modified"), std::string::npos);
}

TEST_F(Writes, EveryWriteIsAWatchEventAndANoOpIsNone) {
  const std::string from = std::to_string(fake_->resource_version());
  const Json created = apply(*client_, quota(32));
  (void)apply(*client_, quota(32));  // no-op: no event
  auto patch = status_patch(mapper_, created, Json{{"phase", "Active"}});
  ASSERT_TRUE(client_->merge_patch(patch->path, patch->body).ok());
  auto gone = client_->remove(apply_request(mapper_, created)->path, "Foreground");
  ASSERT_TRUE(gone.ok()) << gone.error().describe();
  EXPECT_EQ(Json::parse(gone->body)["status"], "Success");
  EXPECT_TRUE(fake_->objects("gpuquotapolicies").empty());
  auto missing = client_->remove(apply_request(mapper_, created)->path);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().http_status, 404);

  std::vector<Json> events;
  auto watched = client_->stream("/apis/platform.gpubank.dev/v1alpha1/gpuquotapolicies?watch=true&resourceVersion=" + from,
                                 [&](std::string_view line) {
                                   events.push_back(Json::parse(line));
                                   return events.size() < 3;
                                 });
  ASSERT_TRUE(watched.ok()) << watched.error().describe();
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0]["type"], "ADDED");
  EXPECT_EQ(events[1]["type"], "MODIFIED");
  EXPECT_EQ(events[1]["object"]["status"]["phase"], "Active");
  EXPECT_EQ(events[2]["type"], "DELETED");
  EXPECT_EQ(events[2]["object"]["metadata"]["resourceVersion"], std::to_string(fake_->resource_version()));
}

TEST_F(Writes, RepeatedEventsBecomeOneEventWithASeries) {
  std::chrono::system_clock::time_point now{std::chrono::seconds(1'767'225'600)};
  EventRecorder recorder("gpubank-0", [&] { return now; });
  EventSpec spec;
  spec.regarding = {"platform.gpubank.dev/v1alpha1", "GPUQuotaPolicy", "", "search-team-h100", "uid-1"};
  spec.type = "Warning";
  spec.reason = "QuotaExceeded";
  spec.action = "Admit";
  spec.note = "team-b asked for 16 GPUs over its quota";
  for (int i = 0; i < 3; ++i) {
    auto res = recorder.emit(*client_, spec);
    ASSERT_TRUE(res.ok()) << res.error().describe();
    now += 5s;
  }
  const auto events = fake_->objects("events");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0]["metadata"]["namespace"], "default");
  EXPECT_EQ(events[0]["reportingController"], "platform.gpubank.dev/controller");
  EXPECT_EQ(events[0]["series"], Json::parse(R"({"count": 3, "lastObservedTime": "2026-01-01T00:00:10.000000Z"})"));

  // The Event deleted behind the recorder's back (expired): the series is forgotten and the
  // next occurrence creates a new Event.
  ASSERT_TRUE(fake_->remove("events", "default", events[0]["metadata"]["name"]));
  EXPECT_FALSE(recorder.emit(*client_, spec).ok());
  ASSERT_TRUE(recorder.emit(*client_, spec).ok());
  EXPECT_EQ(fake_->objects("events").size(), 1u);
}

TEST_F(Writes, OnlyIdempotentWritesAreRetriedOnServerErrors) {
  const Json created = apply(*client_, quota(32));
  const std::string path = apply_request(mapper_, created)->path;
  // Apply: retried after a 500.
  fake_->fail_next(1, 500);
  const std::size_t before = fake_->requests();
  ASSERT_TRUE(client_->apply(path, apply_request(mapper_, quota(33))->body).ok());
  EXPECT_EQ(fake_->requests() - before, 2u);
  EXPECT_EQ(sleeps_.get().size(), 1u);
  // A merge patch: not retried after a 500 (it may have been done).
  fake_->fail_next(1, 500);
  auto patched = client_->merge_patch(path + "/status", R"({"status": {"phase": "x"}})");
  ASSERT_FALSE(patched.ok());
  EXPECT_EQ(patched.error().http_status, 500);
  EXPECT_FALSE(patched.error().retryable);
  EXPECT_EQ(sleeps_.get().size(), 1u);
  // POST: retried after a 503 with Retry-After (refused before the handler), not without.
  fake_->fail_next(1, 503);
  const Json event{{"apiVersion", "events.k8s.io/v1"}, {"kind", "Event"}, {"metadata", {{"name", "e1"}}}};
  EXPECT_FALSE(client_->create("/apis/events.k8s.io/v1/namespaces/default/events", event.dump()).ok());
  fake_->fail_next(1, 503, 2);
  auto posted = client_->create("/apis/events.k8s.io/v1/namespaces/default/events", event.dump());
  ASSERT_TRUE(posted.ok()) << posted.error().describe();
  EXPECT_EQ(posted->status, 201);
  ASSERT_EQ(sleeps_.get().size(), 2u);
  EXPECT_EQ(sleeps_.get()[1], 2000ms);
  auto twice = client_->create("/apis/events.k8s.io/v1/namespaces/default/events", event.dump());
  ASSERT_FALSE(twice.ok());
  EXPECT_EQ(twice.error().reason, "AlreadyExists");
}

TEST_F(Writes, AppliedCrdsExtendDiscovery) {
  FakeApiServer::Options options;
  options.gpubank_kinds = false;
  start(options);
  auto absent = apply_request(mapper_, quota(32));
  ASSERT_FALSE(absent.ok());
  const Json crd = Json::parse(R"({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "gpuquotapolicies.platform.gpubank.dev"},
    "spec": {"group": "platform.gpubank.dev", "scope": "Cluster",
      "names": {"kind": "GPUQuotaPolicy", "plural": "gpuquotapolicies", "singular": "gpuquotapolicy", "listKind": "GPUQuotaPolicyList"},
      "versions": [{"name": "v1alpha1", "served": true, "storage": true, "subresources": {"status": {}},
                    "schema": {"openAPIV3Schema": {"type": "object"}}}]}})");
  const Json stored = apply(*client_, crd);
  EXPECT_EQ(stored["status"]["conditions"][1]["type"], "Established");
  refresh_mapper();
  auto mapping = mapper_.find("platform.gpubank.dev/v1alpha1", "GPUQuotaPolicy");
  ASSERT_TRUE(mapping.ok()) << mapping.error();
  EXPECT_TRUE(mapping->has_status);
  EXPECT_EQ(apply(*client_, quota(32))["spec"]["guaranteed"], 32);
  auto list = client_->get("/apis/platform.gpubank.dev/v1alpha1/gpuquotapolicies");
  ASSERT_TRUE(list.ok());
  EXPECT_EQ(Json::parse(list->body)["items"].size(), 1u);
}

}  // namespace
}  // namespace gpubank::k8s
