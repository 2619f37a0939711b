// The controller's portal on a cluster (api/cluster_server.hpp) against a FAKE API server
// (cluster_fixture.hpp): a group admin proposes a change of its GPUQuotaPolicy through the
// same API as `gpubank up`'s, a platform administrator approves it, and the controller
// server-side applies it (controller/desk_enactor.hpp) as its own field manager; the policy
// reconciler then renders the new ClusterQueue. Roles, the stale check against the
// cluster's object and the record of every step are checked on the way.
#include <gtest/gtest.h>
#include <httplib.h>

#include <thread>

#include "portal_fixture.hpp"
#include "controller/desk_enactor.hpp"
#include "controller/manager.hpp"
#include "k8s/fake_client.hpp"
#include "proposals/proposals.hpp"
#include "governance/alert_store.hpp"
#include "governance/reclaim_approval.hpp"
#include "store/store.hpp"
#include "support/process.hpp"
#include "support/promtool.hpp"  // ScratchDir
#include "twin/cluster/inventory.hpp"
#include "twin/preview/recorded_work.hpp"

namespace gpubank::controller {
namespace {

using nlohmann::json;
using k8s::testing::eventually;
using testing::ControllerPortal;

TEST_F(ControllerPortal, AnApprovedChangeIsServerSideAppliedAndRendered) {
  const std::string author = token(auth::Role::GroupAdmin, "research", "rae");
  const std::string admin = token(auth::Role::PlatformAdmin, "", "pat");
  const std::string outsider = token(auth::Role::Viewer, "ads", "ann");
  ASSERT_EQ(gpu_quota("research-h100-rdma-training").value("borrowingLimit", json()), json(24));

  // The session says which server this is and which pages it has data for.
  auto session = call(author, "GET", "/api/v1/session");
  ASSERT_TRUE(session);
  ASSERT_EQ(session->status, 200) << session->body;
  EXPECT_EQ(json::parse(session->body)["server"],
            (json{{"kind", "controller"}, {"pages", json::array({"overview", "groups", "bank", "governance", "policies", "changes"})}, {"preview", false}}));

  // Anonymous: 401; the impact preview is off here, with its reason.
  httplib::Client anonymous("127.0.0.1", port_);
  EXPECT_EQ(anonymous.Get("/api/v1/policies")->status, 401);
  json preview_body = json::parse(edited_document(author, "maxCapacity: 32", "maxCapacity: 30"));
  preview_body.erase("comment");
  auto preview = call(author, "POST", "/api/v1/proposals/preview", preview_body.dump());
  ASSERT_TRUE(preview);
  EXPECT_EQ(preview->status, 404);
  EXPECT_EQ(json::parse(preview->body)["rule"], "preview.off");

  // A lower cap gives back: applied at once by the group's own admin.
  auto proposed = call(author, "POST", "/api/v1/proposals", edited_document(author, "maxCapacity: 32", "maxCapacity: 24"));
  ASSERT_TRUE(proposed);
  ASSERT_EQ(proposed->status, 201) << proposed->body;
  const json given = json::parse(proposed->body);
  EXPECT_EQ(given["state"], "Applied") << given.dump();
  EXPECT_EQ(given["cluster"]["state"], "queued");
  const std::string id = given["id"];

  // The controller applies it as its own field manager; the reconciler renders it.
  ASSERT_TRUE(eventually([&] { return quota("research-training-h100")["spec"].value("maxCapacity", 0) == 24; }));
  bool portal_owns_it = false;
  const json applied = quota("research-training-h100");
  for (const json& m : applied["metadata"]["managedFields"]) {
    portal_owns_it |= m["manager"] == "gpubank-portal" && m["operation"] == "Apply";
  }
  EXPECT_TRUE(portal_owns_it) << applied["metadata"]["managedFields"].dump();
  ASSERT_TRUE(eventually([&] { return gpu_quota("research-h100-rdma-training").value("borrowingLimit", json()) == json(16); }));
  ASSERT_TRUE(eventually([&] {
    auto res = call(author, "GET", "/api/v1/proposals/" + id);
    return res && res->status == 200 && json::parse(res->body).contains("enacted");
  }));
  const json enacted = json::parse(call(author, "GET", "/api/v1/proposals/" + id)->body)["enacted"];
  EXPECT_EQ(enacted["by"], "gpubank-controller/replica-a");
  EXPECT_FALSE(enacted["resourceVersion"].get<std::string>().empty());

  // A change that takes more waits for a platform administrator; another group's viewer
  // cannot see it, and the author cannot approve it.
  auto more = call(author, "POST", "/api/v1/proposals", edited_document(author, "maxCapacity: 24", "maxCapacity: 28"));
  ASSERT_TRUE(more);
  ASSERT_EQ(more->status, 201) << more->body;
  const json pending = json::parse(more->body);
  ASSERT_EQ(pending["state"], "Pending");
  const std::string pending_id = pending["id"];
  EXPECT_EQ(call(outsider, "GET", "/api/v1/proposals/" + pending_id)->status, 403);
  EXPECT_EQ(call(author, "POST", "/api/v1/proposals/" + pending_id + "/approve", "{}")->status, 403);
  EXPECT_EQ(quota("research-training-h100")["spec"].value("maxCapacity", 0), 24);

  auto approved = call(admin, "POST", "/api/v1/proposals/" + pending_id + "/approve", R"({"comment": "holiday"})");
  ASSERT_TRUE(approved);
  ASSERT_EQ(approved->status, 200) << approved->body;
  EXPECT_EQ(json::parse(approved->body)["state"], "Applied");
  ASSERT_TRUE(eventually([&] { return gpu_quota("research-h100-rdma-training").value("borrowingLimit", json()) == json(20); }));

  // Each step is in the store's chained record: proposed, applied (twice), approved and
  // enacted twice, by the controller.
  auto store = store::Store::open(store_, {.create = false, .read_only = true});
  ASSERT_TRUE(store.ok()) << store.error();
  auto entries = (*store)->audit(0, 100000);
  ASSERT_TRUE(entries.ok());
  std::map<std::string, int> count;
  for (const bank::AuditEntry& e : *entries) {
    ++count[e.action];
    if (e.action == proposals::kEnacted) {
      EXPECT_EQ(e.actor, "gpubank-controller/replica-a");
    }
  }
  ASSERT_TRUE(eventually([&] {
    auto again = (*store)->audit(0, 100000);
    int n = 0;
    for (const bank::AuditEntry& e : *again) n += e.action == proposals::kEnacted ? 1 : 0;
    return n == 2;
  }));
  EXPECT_EQ(count[std::string(proposals::kProposed)], 2);
  EXPECT_EQ(count[std::string(proposals::kApproved)], 1);
  EXPECT_EQ(count[std::string(proposals::kApplied)], 2);
  auto verified = store::verify_audit(**store);
  ASSERT_TRUE(verified.ok());
  EXPECT_TRUE(verified->ok);
}

TEST_F(ControllerPortal, AnEditOnTheClusterMakesAPendingChangeStale) {
  const std::string author = token(auth::Role::GroupAdmin, "research", "rae");
  const std::string admin = token(auth::Role::PlatformAdmin, "", "pat");
  // Lending newly capped takes more from the cohort: it waits for approval.
  auto more = call(author, "POST", "/api/v1/proposals", edited_document(author, "borrowLimit: 24", "borrowLimit: 24$lendingLimit: 4"));
  ASSERT_TRUE(more);
  ASSERT_EQ(more->status, 201) << more->body;
  const std::string id = json::parse(more->body)["id"];

  // Someone edits the object with kubectl meanwhile: the cluster is the truth, and the
  // proposal's diff no longer describes the change.
  json edited = quota("research-training-h100");
  edited["spec"]["fairShareWeight"] = 3;
  put_object(edited);
  ASSERT_TRUE(eventually([&] {
    auto res = call(author, "GET", "/api/v1/policies/GPUQuotaPolicy/research-training-h100");
    return res && json::parse(res->body)["object"]["spec"].value("fairShareWeight", 0) == 3;
  }));
  auto approved = call(admin, "POST", "/api/v1/proposals/" + id + "/approve", "{}");
  ASSERT_TRUE(approved);
  EXPECT_EQ(approved->status, 409) << approved->body;
  EXPECT_EQ(json::parse(approved->body)["rule"], "proposal.stale");
  EXPECT_FALSE(quota("research-training-h100")["spec"].contains("lendingLimit"));
}

// The enactor alone: a document that does not map to a served kind fails with the
// reason, and nothing pending or rejected is ever applied.
TEST_F(ControllerPortal, OnlyAppliedProposalsAreEnacted) {
  std::vector<proposals::Proposal> list(3);
  list[0].id = "a";
  list[0].state = proposals::State::Pending;
  list[0].applied_document = "{}";
  list[1].id = "b";
  list[1].state = proposals::State::Applied;
  list[1].applied_document = R"({"apiVersion": "platform.gpubank.dev/v1alpha1", "kind": "NoSuchKind", "metadata": {"name": "x"}})";
  list[2].id = "c";
  list[2].state = proposals::State::Applied;
  list[2].applied_document = "{}";
  list[2].enacted_ms = 1;
  const auto todo = to_enact(list);
  ASSERT_EQ(todo.size(), 1U);
  EXPECT_EQ(todo[0]->id, "b");
  const Enactment e = enact(*transport_, mapper_, *todo[0]);
  EXPECT_FALSE(e.ok);
  EXPECT_NE(e.error.find("NoSuchKind"), std::string::npos) << e.error;
}

// The bank's views of the cluster: the ledger the controller writes from Kueue's Workloads
// gives the positions, the ClusterQueues the queues; scoped roles see their own group's.
TEST_F(ControllerPortal, TheClusterViewsAnswerWhatTheLedgerAndTheQueuesSay) {
  const std::string author = token(auth::Role::GroupAdmin, "research", "rae");
  const std::string admin = token(auth::Role::PlatformAdmin, "", "pat");
  const std::string outsider = token(auth::Role::Viewer, "ads", "ann");
  // Kueue admitted one research job of one 8-GPU pod.
  put_object(testing::research_workload("train-a", "2026-01-01T00:00:00Z"));

  auto get = [&](const std::string& bearer, const std::string& path, int status = 200) {
    auto res = call(bearer, "GET", path);
    EXPECT_TRUE(res);
    if (!res) return json();
    EXPECT_EQ(res->status, status) << path << ": " << res->body;
    return json::parse(res->body, nullptr, false);
  };
  auto research_position = [&](const json& groups) {
    for (const json& g : groups) {
      if (g["name"] != "research") continue;
      for (const json& p : g["positions"]) {
        if (p["pool"] == "h100-rdma-training") return p;
      }
    }
    return json();
  };
  ASSERT_TRUE(eventually([&] { return research_position(get(author, "/api/v1/groups")).value("used", 0) == 8; }));
  const json position = research_position(get(author, "/api/v1/groups"));
  EXPECT_EQ(position["guaranteed"], 8);
  for (const json& pool : get(author, "/api/v1/pools")) {
    if (pool["name"] == "h100-rdma-training") {
      EXPECT_GE(pool["used"].get<int>(), 8);
    }
  }

  // Its workload: the group's admin sees it; another group's viewer gets 403 asking for
  // it and an empty list by default.
  const json mine = get(author, "/api/v1/workloads");
  ASSERT_EQ(mine.size(), 1U) << mine.dump();
  EXPECT_EQ(mine[0]["workload"], "research/train-a");
  EXPECT_EQ(mine[0]["state"], "Running");
  EXPECT_EQ(mine[0]["gpus"], 8);
  EXPECT_EQ(mine[0]["clusterQueue"], "research-h100-rdma-training");
  EXPECT_EQ(get(author, "/api/v1/workloads?state=Running").size(), 1U);
  EXPECT_EQ(get(author, "/api/v1/workloads?state=Pending").size(), 0U);
  get(author, "/api/v1/workloads?state=Sleeping", 400);
  get(outsider, "/api/v1/workloads?businessGroup=research", 403);
  EXPECT_EQ(get(outsider, "/api/v1/workloads").size(), 0U);
  get(outsider, "/api/v1/workloads/research/train-a", 403);
  EXPECT_EQ(get(admin, "/api/v1/workloads/research/train-a")["gpus"], 8);
  get(admin, "/api/v1/workloads/research/nothing", 404);

  // The queue as rendered, with Kueue's status (none from the fake: zero).
  bool queue = false;
  for (const json& q : get(outsider, "/api/v1/queues")) {
    if (q["clusterQueue"] != "research-h100-rdma-training") continue;
    queue = true;
    EXPECT_EQ(q["businessGroup"], "research");
    EXPECT_EQ(q["nominalQuota"], 8);
    EXPECT_EQ(q["borrowingLimit"], 24);
    EXPECT_EQ(q["resource"], "nvidia.com/gpu");
  }
  EXPECT_TRUE(queue);

  // The ledger: the usage is there for the administrator and the group, not for others.
  auto names_usage = [](const json& page) {
    for (const json& e : page["items"]) {
      if (e.value("kind", "") == "UsageStarted" && e.value("workload", "") == "research/train-a") return true;
    }
    return false;
  };
  const json all = get(admin, "/api/v1/ledger?limit=1000");
  EXPECT_TRUE(names_usage(all)) << all.dump();
  EXPECT_TRUE(names_usage(get(author, "/api/v1/ledger?limit=1000")));
  EXPECT_FALSE(names_usage(get(outsider, "/api/v1/ledger?limit=1000")));
  const json first = get(admin, "/api/v1/ledger?limit=1");
  ASSERT_EQ(first["items"].size(), 1U);
  EXPECT_TRUE(first["more"].get<bool>());
  const json second = get(admin, "/api/v1/ledger?limit=1&after=" + std::to_string(first["next"].get<std::int64_t>()));
  EXPECT_GT(second["items"][0]["seq"].get<std::int64_t>(), first["items"][0]["seq"].get<std::int64_t>());
  get(admin, "/api/v1/ledger?limit=0", 400);
  get(admin, "/api/v1/ledger?after=-1", 400);
  get(admin, "/api/v1/ledger?order=desc", 400);
}

// The impact preview on a cluster: the controller records each Workload that finishes
// (once), and the portal's preview replays the recorded work of the last hours on the
// inventory it was given.
class ControllerPortalPreview : public ControllerPortal {
 protected:
  void configure(api::ClusterServerOptions& server) override {
    Diagnostics diagnostics;
    auto inventory = twin::cluster::load_inventory(gpubank::testing::examples_dir() + "/inventory/example.yaml", diagnostics);
    ASSERT_TRUE(inventory);
    server.preview_inventory = std::make_shared<const twin::cluster::Inventory>(std::move(*inventory));
    // The window ends at 06:00 on the fake's day (its objects are created at 00:00).
    server.now_ms = [] { return std::int64_t{1'767'225'600'000} + 6 * 3'600'000; };
  }
};

TEST_F(ControllerPortalPreview, FinishedWorkIsRecordedOnceAndReplayedByThePreview) {
  const std::string author = token(auth::Role::GroupAdmin, "research", "rae");
  // A research job of one 8-GPU pod that held quota from 00:10 to 02:10 and finished.
  put_object(testing::research_workload("done-a", "2026-01-01T00:10:00Z", "2026-01-01T02:10:00Z"));

  auto records = [&] {
    auto store = store::Store::open(store_, {.create = false, .read_only = true});
    EXPECT_TRUE(store.ok());
    std::vector<twin::preview::WorkloadRecord> out;
    std::int64_t seq = 0;
    if (store.ok()) {
      EXPECT_TRUE(twin::preview::read_records(**store, seq, out));
    }
    return out;
  };
  ASSERT_TRUE(eventually([&] { return !records().empty(); }));
  const auto first = records();
  ASSERT_EQ(first.size(), 1U);
  EXPECT_EQ(first[0].key, "research/done-a");
  EXPECT_EQ(first[0].business_group, "research");
  EXPECT_EQ(first[0].gpus_per_pod, 8);
  EXPECT_EQ(first[0].finished_ms - first[0].started_ms, 2 * 3'600'000);
  // More passes record nothing twice.
  const std::size_t passes = controller_->passes();
  controller_->wake();
  ASSERT_TRUE(eventually([&] { return controller_->passes() > passes; }));
  EXPECT_EQ(records().size(), 1U);

  json body = json::parse(edited_document(author, "maxCapacity: 32", "maxCapacity: 24"));
  body.erase("comment");
  body["hours"] = 169;
  auto res = call(author, "POST", "/api/v1/proposals/preview", body.dump());
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400) << res->body;
  body["hours"] = 24;
  res = call(author, "POST", "/api/v1/proposals/preview", body.dump());
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  const json preview = json::parse(res->body);
  EXPECT_NE(preview["work"].get<std::string>().find("(1 workload,"), std::string::npos) << preview["work"];
  bool research = false;
  for (const json& g : preview["groups"]) {
    if (g["businessGroup"] != "research" || g["pool"] != "h100-rdma-training") continue;
    research = true;
    EXPECT_EQ(g["current"]["workloads"], 1) << g.dump();
    EXPECT_NEAR(g["current"]["usedGpuHours"].get<double>(), 16.0, 0.5) << g.dump();
  }
  EXPECT_TRUE(research) << preview.dump();
  // The session tells the portal a preview is here.
  EXPECT_EQ(json::parse(call(author, "GET", "/api/v1/session")->body)["server"]["preview"], true);

  // The same record from the command line: gpubank twin preview --store.
  const std::string gpubank = gpubank::testing::binary_dir() + "/cmd/gpubank/gpubank";
  const std::string policies = gpubank::testing::examples_dir() + "/policies";
  const std::string inventory = gpubank::testing::examples_dir() + "/inventory/example.yaml";
  const auto cli = gpubank::testing::run_process({gpubank, "twin", "preview", "--current", policies, "--proposed", policies,
                                                  "--inventory", inventory, "--store", store_, "--hours", "24", "--until",
                                                  "2026-01-01T06:00:00Z", "--quiet", "-o", "json"});
  ASSERT_EQ(cli.status, 0) << cli.err;
  const json answer = json::parse(cli.out);
  EXPECT_NE(answer["work"].get<std::string>().find("(1 workload)"), std::string::npos) << answer["work"];
  for (const json& g : answer["groups"]) {
    if (g["businessGroup"] == "research" && g["pool"] == "h100-rdma-training") {
      EXPECT_NEAR(g["current"]["usedGpuHours"].get<double>(), 16.0, 0.5) << g.dump();
    }
  }
  const auto both = gpubank::testing::run_process({gpubank, "twin", "preview", "--current", policies, "--proposed", policies,
                                                   "--store", store_, "--workloads", inventory});
  EXPECT_EQ(both.status, 2) << both.err;
  EXPECT_NE(both.err.find("--store replays the recorded work"), std::string::npos) << both.err;
  gpubank::testing::ScratchDir empty;
  const std::string none = (empty.path() / "none.db").string();
  ASSERT_TRUE(store::Store::open(none).ok());
  const auto nothing = gpubank::testing::run_process({gpubank, "twin", "preview", "--current", policies, "--proposed",
                                                      policies, "--inventory", inventory, "--store", none});
  EXPECT_EQ(nothing.status, 1);
  EXPECT_NE(nothing.err.find("no recorded work"), std::string::npos) << nothing.err;
}

// Low-utilisation alerts on a cluster: what `gpubank scan --store` recorded is listed (cut to
// the caller's group), and a decision made in the portal is recorded as `gpubank scan
// approve` records it, so the controller acts on it.
TEST_F(ControllerPortal, AReclaimCandidateIsDecidedThroughThePortal) {
  {
    auto store = store::Store::open(store_);
    ASSERT_TRUE(store.ok()) << store.error();
    governance::AlertBook book;
    ASSERT_TRUE(governance::refresh(**store, book));
    governance::Alert a;
    a.id = 1;
    a.workload_uid = "job-r";
    a.policy = "training-idle";
    a.state = governance::AlertState::ReclaimCandidate;
    a.detected_ms = testing::wall_now_ms() - 5 * 3'600'000;
    a.low_since_ms = a.detected_ms - 3'600'000;
    a.notified_ms = a.detected_ms;
    a.escalated_ms = a.detected_ms + 2 * 3'600'000;
    a.evidence.business_group = "research";
    a.evidence.owner_id = "u-r";
    a.evidence.namespace_name = "research";
    a.evidence.workload_kind = "PyTorchJob";
    a.evidence.workload = "r";
    a.evidence.workload_type = "training";
    a.evidence.gpus = 8;
    const std::vector<governance::Transition> seeded{{governance::AlertState::Escalated, a, "ReclaimCandidate", std::nullopt}};
    ASSERT_TRUE(governance::record(**store, book, seeded, testing::wall_now_ms()));
  }
  const std::string author = token(auth::Role::GroupAdmin, "research", "rae");
  const std::string viewer = token(auth::Role::Viewer, "research", "vic");
  const std::string other_admin = token(auth::Role::GroupAdmin, "ads", "ada");
  auto alerts = [&](const std::string& bearer) {
    auto res = call(bearer, "GET", "/api/v1/governance/alerts");
    EXPECT_TRUE(res && res->status == 200);
    return res ? json::parse(res->body) : json();
  };
  const json mine = alerts(author);
  ASSERT_EQ(mine["open"].size(), 1U) << mine.dump();
  EXPECT_EQ(mine["open"][0]["state"], "ReclaimCandidate");
  EXPECT_FALSE(mine["open"][0]["downgradeOptions"].empty());
  EXPECT_TRUE(alerts(other_admin)["open"].empty());

  const std::string path = "/api/v1/governance/alerts/job-r/decision";
  EXPECT_EQ(call(viewer, "POST", path, R"({"decision": "approve"})")->status, 403);
  EXPECT_EQ(call(other_admin, "POST", path, R"({"decision": "approve"})")->status, 404);
  EXPECT_EQ(call(author, "POST", path, R"({"decision": "maybe"})")->status, 400);
  EXPECT_EQ(call(author, "POST", path, R"({"decision": "reject", "downgradeTo": "batch-low"})")->status, 400);
  auto refused = call(author, "POST", path, R"({"decision": "approve", "downgradeTo": "no-such-class"})");
  EXPECT_EQ(refused->status, 422) << refused->body;
  EXPECT_EQ(json::parse(refused->body)["field"], "downgradeTo");
  auto approved = call(author, "POST", path, R"({"decision": "approve", "reason": "idle for hours"})");
  ASSERT_TRUE(approved);
  ASSERT_EQ(approved->status, 200) << approved->body;
  EXPECT_EQ(json::parse(approved->body)["decision"]["verdict"], "Approved") << approved->body;
  EXPECT_EQ(call(author, "POST", path, R"({"decision": "reject"})")->status, 409);

  // In the store as the controller reads it: an approved reclaim of job-r.
  auto store = store::Store::open(store_, {.create = false, .read_only = true});
  ASSERT_TRUE(store.ok());
  governance::AlertBook book;
  ASSERT_TRUE(governance::refresh(**store, book));
  const auto approved_list = governance::approved_reclaims(book);
  ASSERT_EQ(approved_list.size(), 1U);
  EXPECT_EQ(approved_list[0].workload_uid, "job-r");
  EXPECT_EQ(approved_list[0].approver, "api:rae");
}

// A CapacityLease asked for in the portal: new, so it waits; once approved the controller
// applies it and writes the approval (approver, spec hash) to its status subresource, as
// `gpubank bank approve` does, with the author in the requested-by annotation.
TEST_F(ControllerPortal, AnApprovedLeaseReachesTheClusterWithItsApproval) {
  const std::string author = token(auth::Role::GroupAdmin, "research", "rae");
  const std::string admin = token(auth::Role::PlatformAdmin, "", "pat");
  const std::string lease = R"(apiVersion: platform.gpubank.dev/v1alpha1
kind: CapacityLease
metadata: {name: research-paper-deadline}
spec:
  businessGroup: research
  resourcePool: h100-rdma-training
  type: TemporaryQuota
  extraGuaranteed: 4
  start: "2026-12-20T00:00:00Z"
  end: "2026-12-20T08:00:00Z"
  reason: Final experiments before the paper deadline
)";
  auto asked = call(author, "POST", "/api/v1/proposals", json{{"document", lease}, {"comment", "deadline"}}.dump());
  ASSERT_TRUE(asked);
  ASSERT_EQ(asked->status, 201) << asked->body;
  const json pending = json::parse(asked->body);
  ASSERT_EQ(pending["state"], "Pending") << pending.dump();
  auto find_lease = [&] {
    for (const json& l : objects("platform.gpubank.dev/v1alpha1", "CapacityLease")) {
      if (l["metadata"]["name"] == "research-paper-deadline") return l;
    }
    return json();
  };
  EXPECT_TRUE(find_lease().is_null());
  auto approved = call(admin, "POST", "/api/v1/proposals/" + pending["id"].get<std::string>() + "/approve", "{}");
  ASSERT_TRUE(approved);
  ASSERT_EQ(approved->status, 200) << approved->body;
  ASSERT_TRUE(eventually([&] {
    const json l = find_lease();
    return !l.is_null() && l.contains("status") && l["status"].contains("approval");
  }));
  const json l = find_lease();
  EXPECT_EQ(l["status"]["approval"]["approvedBy"], "user:pat") << l.dump();
  EXPECT_FALSE(l["status"]["approval"].value("specHash", "").empty());
  EXPECT_EQ(l["metadata"]["annotations"].value(std::string(policy::kAnnotationRequestedBy), ""), "user:rae") << l.dump();
  EXPECT_EQ(l["spec"]["extraGuaranteed"], 4);
}

}  // namespace
}  // namespace gpubank::controller
