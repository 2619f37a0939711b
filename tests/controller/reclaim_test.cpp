// Graceful reclaim: the planner (pure) on the example policies, and the whole protocol on
// a FAKE API server (cluster_fixture.hpp) where the test plays Kueue's part: it reserves
// and releases quota on Workloads as Kueue would, following the controller's deactivation.
#include "controller/reclaim.hpp"

#include <gtest/gtest.h>
#include <httplib.h>

#include <thread>

#include "cluster_fixture.hpp"
#include "controller/manager.hpp"
#include "governance/alert_store.hpp"
#include "governance/reclaim_approval.hpp"
#include "k8s/fake_client.hpp"
#include "policy/policy_set.hpp"
#include "render/render.hpp"
#include "store/store.hpp"
#include "support/promtool.hpp"

namespace gpubank::controller {
namespace {

using nlohmann::json;
using Kind = ReclaimStep::Kind;

constexpr std::int64_t kNow = 1'800'000'000'000;  // ms

const policy::PolicySet& examples() {
  static const policy::PolicySet set = policy::load_policy_set({gpubank::testing::examples_dir() + "/policies"});
  return set;
}

ClusterWorkload running(const std::string& key, const std::string& group, std::int64_t gpus, std::int64_t admitted_at,
                        std::vector<std::string> traits = {}, std::string type = "training") {
  ClusterWorkload w;
  w.key = key;
  w.group = group;
  w.pool = "h100-rdma-training";
  w.cluster_queue = group + "-h100-rdma-training";
  w.gpus = gpus;
  w.admitted = true;
  w.admitted_at_ms = admitted_at;
  w.traits = std::move(traits);
  w.workload_type = std::move(type);
  return w;
}
ClusterWorkload pending(const std::string& key, const std::string& group, std::int64_t gpus) {
  ClusterWorkload w = running(key, group, gpus, 0);
  w.admitted = false;
  w.created_ms = kNow - 1000;
  return w;
}

// h100-rdma-training: 64 GPUs; search guaranteed 32, ads 16 (lends only to checkpointable
// work, grace 10m), research 8. search runs 32 of its own and 16 more borrowed from ads'
// idle guarantee; research runs its 8. ads now needs 16.
std::vector<ClusterWorkload> borrowed_state(bool checkpointable = true) {
  return {running("search/base", "search", 32, 1),
          running("search/big", "search", 16, 2, checkpointable ? std::vector<std::string>{"training", "checkpointable"}
                                                                 : std::vector<std::string>{"training"}),
          running("research/r", "research", 8, 3), pending("ads/train", "ads", 16)};
}

TEST(ReclaimPlan, ALendersDemandSendsANoticeToTheBorrowerOnItsGpus) {
  const ReclaimPlan plan = plan_reclaims(examples(), borrowed_state(), kNow);
  ASSERT_EQ(plan.steps.size(), 1U);
  const ReclaimStep& s = plan.steps[0];
  EXPECT_EQ(s.kind, Kind::Notice);
  EXPECT_EQ(s.workload, "search/big");
  EXPECT_EQ(s.lender, "ads");
  EXPECT_EQ(s.gpus, 16);
  EXPECT_EQ(s.deadline_ms, kNow + 10 * 60 * 1000);  // ads-training-h100: gracePeriod 10m
  EXPECT_EQ(plan.next_deadline_ms, kNow + kCheckpointPollMs);
  EXPECT_TRUE(plan.uncovered.empty());
}

TEST(ReclaimPlan, WhileALenderReclaimsThePoolsOtherGroupsBorrowNothing) {
  const ReclaimPlan plan = plan_reclaims(examples(), borrowed_state(), kNow);
  ASSERT_EQ(plan.reclaiming.size(), 1U);
  EXPECT_EQ(plan.reclaiming.at("h100-rdma-training"), (std::set<std::string>{"ads"}));
  render::RenderResult rendered = render::render(examples(), render::RenderOptions{});
  ASSERT_TRUE(rendered.ok());
  const std::vector<std::string> held = hold_borrowing_during_reclaims(rendered.objects, plan.reclaiming);
  std::map<std::string, render::Json> limits;  // ClusterQueue -> its h100-rdma-training resources
  for (const render::RenderedObject& o : rendered.objects) {
    if (o.manifest.value("kind", "") != "ClusterQueue") continue;
    for (const render::Json& group : o.manifest["spec"]["resourceGroups"]) {
      for (const render::Json& f : group["flavors"]) {
        if (f["name"] == "h100-rdma-training") limits[o.manifest["metadata"]["name"]] = f["resources"][0];
      }
    }
  }
  ASSERT_TRUE(limits.contains("search-h100-rdma-training"));
  EXPECT_EQ(limits["search-h100-rdma-training"]["borrowingLimit"], 0);
  EXPECT_EQ(limits["research-h100-rdma-training"]["borrowingLimit"], 0);
  EXPECT_NE(limits["ads-h100-rdma-training"]["borrowingLimit"], 0);  // the lender itself
  EXPECT_EQ(held.size(), limits.size() - 1);
  // A stopped victim keeps the hold while its lender waits; once the lender runs, it ends.
  std::vector<ClusterWorkload> state = borrowed_state();
  state[1].admitted = false;
  state[1].active = false;
  state[1].reclaim_for = "ads";
  state[1].reclaimed_ms = kNow - 1000;
  EXPECT_EQ(plan_reclaims(examples(), state, kNow).reclaiming.at("h100-rdma-training"), (std::set<std::string>{"ads"}));
  state[3].admitted = true;
  EXPECT_TRUE(plan_reclaims(examples(), state, kNow).reclaiming.empty());
}

TEST(ReclaimPlan, OnlyPreemptIsHonouredAndWhatCannotBeCoveredIsReported) {
  // ads lends only to checkpointable work: a borrower that is not is never its victim.
  const ReclaimPlan plan = plan_reclaims(examples(), borrowed_state(/*checkpointable=*/false), kNow);
  EXPECT_TRUE(plan.steps.empty());
  ASSERT_EQ(plan.uncovered.count("h100-rdma-training/ads"), 1U);
  EXPECT_GT(plan.uncovered.at("h100-rdma-training/ads"), 0);
}

TEST(ReclaimPlan, ANoticeStopsOnCheckpointOrGraceAndIsWithdrawnWithoutDemand) {
  std::vector<ClusterWorkload> state = borrowed_state();
  state[1].reclaim_for = "ads";
  state[1].checkpoint_requested_ms = kNow;
  state[1].reclaim_deadline_ms = kNow + 600'000;
  // Under way: nothing new, a look again at the next poll.
  ReclaimPlan plan = plan_reclaims(examples(), state, kNow + 1000);
  EXPECT_TRUE(plan.steps.empty());
  EXPECT_EQ(plan.next_deadline_ms, kNow + 1000 + kCheckpointPollMs);
  // The job checkpointed.
  state[1].checkpoint_completed_ms = kNow + 2000;
  plan = plan_reclaims(examples(), state, kNow + 3000);
  ASSERT_EQ(plan.steps.size(), 1U);
  EXPECT_EQ(plan.steps[0].kind, Kind::Stop);
  EXPECT_EQ(plan.steps[0].reason, "CheckpointCompleted");
  // The second since its checkpoint is lost, on 16 GPUs, and it is search's loss.
  EXPECT_EQ(plan.steps[0].victim_group, "search");
  EXPECT_EQ(plan.steps[0].recompute_loss_gpu_ms, 16 * 1000);
  // A completion from before the request does not count; the grace does. The work since
  // that older checkpoint is lost.
  state[1].checkpoint_completed_ms = kNow - 1;
  plan = plan_reclaims(examples(), state, kNow + 600'000);
  ASSERT_EQ(plan.steps.size(), 1U);
  EXPECT_EQ(plan.steps[0].reason, "GraceExpired");
  EXPECT_EQ(plan.steps[0].recompute_loss_gpu_ms, 16 * 600'001);
  // No checkpoint ever: everything since its admission.
  state[1].checkpoint_completed_ms.reset();
  state[1].admitted_at_ms = kNow - 3'600'000;
  plan = plan_reclaims(examples(), state, kNow + 600'000);
  ASSERT_EQ(plan.steps.size(), 1U);
  EXPECT_EQ(plan.steps[0].recompute_loss_gpu_ms, 16 * 4'200'000);
  // Neither time known (a Workload without QuotaReserved's time): the loss is unknown, not 0.
  state[1].admitted_at_ms = 0;
  plan = plan_reclaims(examples(), state, kNow + 600'000);
  ASSERT_EQ(plan.steps.size(), 1U);
  EXPECT_FALSE(plan.steps[0].recompute_loss_gpu_ms.has_value());
  state[1].admitted_at_ms = 2;
  // The lender's demand went away (its job was deleted): the notice is withdrawn.
  state.pop_back();
  plan = plan_reclaims(examples(), state, kNow + 3000);
  ASSERT_EQ(plan.steps.size(), 1U);
  EXPECT_EQ(plan.steps[0].kind, Kind::Cancel);
}

TEST(ReclaimPlan, AStoppedVictimResumesOnceItsLenderNeedsNothing) {
  std::vector<ClusterWorkload> state = borrowed_state();
  state[1].admitted = false;
  state[1].active = false;
  state[1].reclaim_for = "ads";
  state[1].reclaimed_ms = kNow;
  // ads' workload is still waiting for Kueue: the victim stays stopped.
  EXPECT_TRUE(plan_reclaims(examples(), state, kNow + 1000).steps.empty());
  // Kueue admitted it: the victim is queued again.
  state[3].admitted = true;
  state[3].admitted_at_ms = kNow + 1500;
  const ReclaimPlan plan = plan_reclaims(examples(), state, kNow + 2000);
  ASSERT_EQ(plan.steps.size(), 1U);
  EXPECT_EQ(plan.steps[0].kind, Kind::Resume);
  EXPECT_EQ(plan.steps[0].workload, "search/big");
}

TEST(ReclaimPlan, ProtectedWorkloadsAreNeverVictimsAndFreeQuotaComesFirst) {
  std::vector<ClusterWorkload> state = borrowed_state();
  state[1].workload_type = "inference";  // protected by the guardrails
  EXPECT_TRUE(plan_reclaims(examples(), state, kNow).steps.empty());
  // With 8 GPUs of the pool unused, a demand of 8 needs no reclaim at all.
  state = borrowed_state();
  state[3].gpus = 8;
  EXPECT_TRUE(plan_reclaims(examples(), state, kNow).steps.empty());
}

TEST(ReclaimPlan, APriorityClassThatIsNotPreemptibleIsNeverAVictim) {
  const policy::PlatformGuardrailsSpec* g = examples().guardrails_spec();
  ASSERT_NE(g, nullptr);
  const auto fixed = std::find_if(g->priorities.begin(), g->priorities.end(),
                                  [](const policy::PriorityRule& r) { return !r.preemptible; });
  if (fixed == g->priorities.end()) GTEST_SKIP() << "the example guardrails declare no preemptible: false class";
  std::vector<ClusterWorkload> state = borrowed_state();
  state[1].priority_class = fixed->name;
  EXPECT_TRUE(plan_reclaims(examples(), state, kNow).steps.empty());
  state[1].priority_class.clear();
  EXPECT_EQ(plan_reclaims(examples(), state, kNow).steps.size(), 1U);
}

TEST(ReclaimPlan, TheSameInputsGiveTheSameSteps) {
  std::vector<ClusterWorkload> state = borrowed_state();
  state.push_back(running("search/other", "search", 8, 5, {"training", "checkpointable"}));
  const ReclaimPlan a = plan_reclaims(examples(), state, kNow);
  std::reverse(state.begin(), state.end());
  const ReclaimPlan b = plan_reclaims(examples(), state, kNow);
  ASSERT_EQ(a.steps.size(), b.steps.size());
  for (std::size_t i = 0; i < a.steps.size(); ++i) {
    EXPECT_EQ(a.steps[i].workload, b.steps[i].workload);
    EXPECT_EQ(a.steps[i].message, b.steps[i].message);
  }
}

TEST(ReclaimPlan, AnApprovedLowUtilisationReclaimStopsItsWorkloadAndIsNeverWithdrawnOrResumed) {
  // research/r (owner UID job-r) idles on its own 8 GPUs; nobody needs them.
  std::vector<ClusterWorkload> state = borrowed_state();
  state.pop_back();  // ads needs nothing
  state[2].owner_uid = "job-r";
  EXPECT_TRUE(plan_reclaims(examples(), state, kNow).steps.empty());  // no approval, nothing
  const std::vector<ApprovedStop> approved{{"job-r", 3, "sam", ""}, {"job-gone", 1, "sam", ""}};
  ReclaimPlan plan = plan_reclaims(examples(), state, kNow, approved);
  ASSERT_EQ(plan.steps.size(), 1U);
  EXPECT_EQ(plan.steps[0].kind, Kind::Notice);
  EXPECT_EQ(plan.steps[0].workload, "research/r");
  EXPECT_EQ(plan.steps[0].lender, kApprovedLowUtilization);
  EXPECT_EQ(plan.steps[0].reason, "ReclaimApproved");
  // research-training-h100: gracePeriod 15m.
  EXPECT_EQ(plan.steps[0].deadline_ms, kNow + 15 * 60 * 1000);
  EXPECT_EQ(plan.steps[0].message,
            "sam approved the reclaim of research/r (8 GPUs of h100-rdma-training, low-utilisation alert 3); it is asked "
            "to checkpoint and stops within 900 s");
  EXPECT_TRUE(plan.reclaiming.empty());  // nobody's borrowing is held for it

  // Under way without demand from anyone: not withdrawn; stopped at the grace's end.
  state[2].reclaim_for = std::string(kApprovedLowUtilization);
  state[2].checkpoint_requested_ms = kNow;
  state[2].reclaim_deadline_ms = kNow + 600'000;
  plan = plan_reclaims(examples(), state, kNow + 1000, approved);
  EXPECT_TRUE(plan.steps.empty());
  EXPECT_EQ(plan.next_deadline_ms, kNow + 1000 + kCheckpointPollMs);
  plan = plan_reclaims(examples(), state, kNow + 600'000, approved);
  ASSERT_EQ(plan.steps.size(), 1U);
  EXPECT_EQ(plan.steps[0].kind, Kind::Stop);
  EXPECT_EQ(plan.steps[0].reason, "GraceExpired");
  EXPECT_EQ(plan.steps[0].message, "research/r did not report a checkpoint within its grace period; it stops and frees 8 "
                                   "GPUs of h100-rdma-training (an approved low-utilisation reclaim)");
  // Stopped: it stays stopped (no lender to wait for); its owner reactivates the job.
  state[2].admitted = false;
  state[2].active = false;
  state[2].reclaimed_ms = kNow + 600'000;
  EXPECT_TRUE(plan_reclaims(examples(), state, kNow + 700'000, approved).steps.empty());
}

TEST(ReclaimPlan, AnApprovedDowngradeLowersThePriorityOnceAndNeverStopsTheWorkload) {
  // research/r (owner UID job-r, priority training-standard = 10000) idles on 8 GPUs.
  std::vector<ClusterWorkload> state = borrowed_state();
  state.pop_back();
  state[2].owner_uid = "job-r";
  state[2].priority = 10000;
  state[2].priority_class = "training-standard";
  const std::vector<ApprovedStop> approved{{"job-r", 3, "sam", "batch-low"}};
  ReclaimPlan plan = plan_reclaims(examples(), state, kNow, approved);
  ASSERT_EQ(plan.steps.size(), 1U);
  const ReclaimStep& s = plan.steps[0];
  EXPECT_EQ(s.kind, Kind::Downgrade);
  EXPECT_EQ(s.workload, "research/r");
  EXPECT_EQ(s.priority_class, "batch-low");
  EXPECT_EQ(s.priority, 1000);
  EXPECT_EQ(s.reason, "DowngradeApproved");
  EXPECT_EQ(s.message, "sam approved the downgrade of research/r (8 GPUs of h100-rdma-training, low-utilisation alert 3) "
                       "from priority 10000 to batch-low (1000); it keeps running, preemptible by work above it");
  EXPECT_FALSE(plan.next_deadline_ms);  // no grace: nothing to wait for
  EXPECT_TRUE(plan.reclaiming.empty());

  // Done: nothing more, however long it idles.
  state[2].priority = 1000;
  state[2].priority_class = "batch-low";
  state[2].downgraded_to = "batch-low";
  EXPECT_TRUE(plan_reclaims(examples(), state, kNow + 3'600'000, approved).steps.empty());
  EXPECT_TRUE(plan_reclaims(examples(), state, kNow, approved).downgrades_skipped.empty());
  // Raised again (someone edited it back): downgraded again.
  state[2].priority = 10000;
  plan = plan_reclaims(examples(), state, kNow, approved);
  ASSERT_EQ(plan.steps.size(), 1U);
  EXPECT_EQ(plan.steps[0].kind, Kind::Downgrade);
  // Already below the class: not raised to it, and said why.
  state[2].priority = 500;
  state[2].downgraded_to.clear();
  plan = plan_reclaims(examples(), state, kNow, approved);
  EXPECT_TRUE(plan.steps.empty());
  EXPECT_EQ(plan.downgrades_skipped.at("research/r"), "its priority 500 is not above batch-low's 1000");
  // A class the guardrails no longer list is not applied.
  state[2].priority = 10000;
  plan = plan_reclaims(examples(), state, kNow, {{"job-r", 3, "sam", "gold"}});
  EXPECT_TRUE(plan.steps.empty());
  EXPECT_EQ(plan.downgrades_skipped.at("research/r"), "priority class gold is no longer among the guardrails' priorities");
}

// ---- End to end on the fake ----

class ReclaimEndToEnd : public testing::ClusterFixture {
 protected:
  void SetUp() override {
    ClusterFixture::SetUp();
    put_policies({gpubank::testing::examples_dir() + "/policies"});
  }

  json job(const std::string& ns, const std::string& name) {
    return put_object({{"apiVersion", "batch/v1"},
                       {"kind", "Job"},
                       {"metadata", {{"name", name}, {"namespace", ns}, {"uid", "job-" + name}}},
                       {"spec", {{"parallelism", 1}}}});
  }
  json workload(const std::string& ns, const std::string& name, const std::string& queue, std::int64_t pods,
                bool admitted, bool checkpointable) {
    json container{{"name", "trainer"}, {"image", "trainer:1"}};
    container["resources"]["requests"]["nvidia.com/gpu"] = "8";
    json pod_set{{"name", "main"}, {"count", pods}};
    pod_set["template"]["metadata"]["labels"] = {{"platform.gpubank.dev/workload-type", "training"},
                                                 {"platform.gpubank.dev/checkpointable", checkpointable ? "true" : "false"}};
    pod_set["template"]["spec"]["containers"] = json::array({container});
    json owner{{"apiVersion", "batch/v1"}, {"kind", "Job"}, {"name", name}, {"uid", "job-" + name}, {"controller", true}};
    json w{{"apiVersion", "kueue.x-k8s.io/v1beta2"}, {"kind", "Workload"}};
    w["metadata"] = {{"name", name}, {"namespace", ns}};
    w["metadata"]["ownerReferences"] = json::array({owner});
    w["spec"] = {{"queueName", queue}, {"priority", 0}};
    w["spec"]["podSets"] = json::array({pod_set});
    if (admitted) admit(w, ns == "search-training" ? "search-h100-rdma-training" : ns + "-h100-rdma-training");
    return put_object(w);
  }
  // Kueue's part: reserve quota and admit.
  static void admit(json& w, const std::string& cluster_queue) {
    w["status"]["admission"] = {{"clusterQueue", cluster_queue}};
    w["status"]["conditions"] = {{{"type", "QuotaReserved"}, {"status", "True"}, {"reason", "QuotaReserved"},
                                  {"lastTransitionTime", "2026-01-01T00:00:00Z"}, {"message", ""}},
                                 {{"type", "Admitted"}, {"status", "True"}, {"reason", "Admitted"},
                                  {"lastTransitionTime", "2026-01-01T00:00:00Z"}, {"message", ""}}};
  }
  json get(const std::string& resource, const std::string& ns, const std::string& name) {
    for (const json& o : fake_->objects(resource)) {
      if (o["metadata"]["name"] == name && o["metadata"].value("namespace", "") == ns) return o;
    }
    return json();
  }
  static std::string annotation(const json& o, std::string_view key) {
    if (!o.is_object() || !o["metadata"].contains("annotations")) return "";
    return o["metadata"]["annotations"].value(std::string(key), "");
  }
  // A controller that reads approvals from a store in `dir` every 50 ms.
  static ControllerOptions approval_options(const gpubank::testing::ScratchDir& dir) {
    ControllerOptions options;
    options.identity = "replica-a";
    options.health_port = -1;
    options.debounce = std::chrono::milliseconds(10);
    options.approval_poll = std::chrono::milliseconds(50);
    options.reconcile.default_namespace = "gpubank-system";
    options.store = (dir.path() / "audit.db").string();
    return options;
  }
  // research/r for a downgrade: its Job, labelled kueue.x-k8s.io/priority-class `label`
  // (none when empty), and its admitted v1beta2 Workload at priority 10000 whose
  // spec.priorityClassRef is `ref`.
  void job_r_of_class(const std::string& label, const json& ref) {
    json j = job("research", "r");
    if (!label.empty()) {
      j["metadata"]["labels"][std::string(kKueuePriorityClassLabel)] = label;
      put_object(j);
    }
    json w = workload("research", "r", "h100-rdma-training", 1, true, true);
    w["spec"]["priority"] = 10000;
    w["spec"]["priorityClassRef"] = ref;
    put_object(w);
  }
  static json wpc_ref(const std::string& name) {
    return {{"group", "kueue.x-k8s.io"}, {"kind", "WorkloadPriorityClass"}, {"name", name}};
  }
  static constexpr const char* kJobR = "/apis/batch/v1/namespaces/research/jobs/r";
  // A Status as the API server sends a refusal.
  static json refusal(int code, const std::string& reason, const std::string& message) {
    return {{"kind", "Status"}, {"apiVersion", "v1"}, {"metadata", json::object()}, {"status", "Failure"},
            {"message", message}, {"reason", reason}, {"details", {{"name", "r"}, {"group", "batch"}, {"kind", "jobs"}}},
            {"code", code}};
  }
  // "<reason>: <note>" of the Events about research/r, in order.
  std::vector<std::string> events_of_r() {
    std::vector<std::string> out;
    for (const json& e : fake_->objects("events")) {
      if (e["regarding"].value("name", "") == "r") out.push_back(e.value("reason", "") + ": " + e.value("note", ""));
    }
    return out;
  }
  // "<action> <decision>: <reason>" of the audit entries about research/r, in order.
  static std::vector<std::string> audit_of_r(const std::string& location) {
    auto store = store::Store::open(location, {.create = false, .read_only = true});
    EXPECT_TRUE(store.ok()) << (store.ok() ? "" : store.error());
    if (!store.ok()) return {};
    auto entries = (*store)->audit(0, 100000);
    EXPECT_TRUE(entries.ok());
    if (!entries.ok()) return {};
    std::vector<std::string> out;
    for (const bank::AuditEntry& e : *entries) {
      if (e.object == "Workload/research/r") out.push_back(e.action + " " + e.decision + ": " + e.reason);
    }
    return out;
  }
  // The scanner's record: job-r (research/r, 8 GPUs of training) became a reclaim
  // candidate; rita, research's admin, approves a reclaim (or a downgrade to the class).
  static void approve_job_r(const std::string& location, const std::string& downgrade_to) {
    auto store = store::Store::open(location);
    ASSERT_TRUE(store.ok()) << store.error();
    governance::Alert a;
    a.id = 1;
    a.workload_uid = "job-r";
    a.policy = "training-idle";
    a.state = governance::AlertState::ReclaimCandidate;
    a.evidence.business_group = "research";
    a.evidence.workload_type = "training";
    a.evidence.workload_kind = "Job";
    a.evidence.namespace_name = "research";
    a.evidence.workload = "r";
    a.evidence.gpus = 8;
    governance::AlertBook book;
    const governance::Transition candidate{governance::AlertState::Escalated, a, "ReclaimCandidate", std::nullopt};
    ASSERT_TRUE(governance::record(**store, book, std::span(&candidate, 1), kNow));
    auto decided = governance::decide(book, {"job-r", true, {"rita", {"research-admins"}}, "idle all week", downgrade_to},
                                      examples(), kNow);
    ASSERT_TRUE(decided.ok()) << decided.error();
    ASSERT_TRUE(governance::record(**store, book, std::span(&*decided, 1), kNow));
  }
};

TEST_F(ReclaimEndToEnd, NoticeCheckpointStopAdmitAndResumeEachWithItsEventAndAuditEntry) {
  gpubank::testing::ScratchDir dir;
  ControllerOptions options;
  options.identity = "replica-a";
  options.health_port = 0;
  options.health_address = "127.0.0.1";
  options.debounce = std::chrono::milliseconds(10);
  options.reconcile.default_namespace = "gpubank-system";
  options.store = (dir.path() / "audit.db").string();
  auto created = Controller::create(testing::config_for(*fake_), options);
  ASSERT_TRUE(created.ok()) << created.error();
  std::unique_ptr<Controller> controller = std::move(*created);
  std::jthread loop([&](std::stop_token stop) { (void)controller->run(stop); });
  ASSERT_TRUE(k8s::testing::eventually([&] { return controller->passes() >= 1; }));

  // search runs 32 GPUs of its own and 16 borrowed; research its 8; ads asks for 16.
  job("search-training", "base");
  job("search-training", "big");
  job("research", "r");
  job("ads-training", "train");
  workload("search-training", "base", "h100-rdma-training", 4, true, true);
  workload("search-training", "big", "h100-rdma-training", 2, true, true);
  workload("research", "r", "h100-rdma-training", 1, true, false);
  workload("ads-training", "train", "h100-rdma-training", 2, false, false);

  // 1. The notice: the job is asked to checkpoint, the Workload records the reclaim.
  ASSERT_TRUE(k8s::testing::eventually(
      [&] { return annotation(get("workloads", "search-training", "big"), kReclaimFor) == "ads"; }));
  json big = get("workloads", "search-training", "big");
  EXPECT_FALSE(annotation(get("jobs", "search-training", "big"), kCheckpointRequested).empty());
  EXPECT_FALSE(annotation(big, kReclaimDeadline).empty());
  EXPECT_TRUE(annotation(get("jobs", "search-training", "base"), kCheckpointRequested).empty());

  // While ads reclaims, the pool's other groups borrow nothing new.
  ASSERT_TRUE(k8s::testing::eventually([&] {
    const json cq = get("clusterqueues", "", "research-h100-rdma-training");
    return cq.is_object() && cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0].value("borrowingLimit", -1) == 0;
  }));

  // The ledger kept from the admitted Workloads: on /metrics, search borrows ads' 16 idle
  // GPUs (ads lends only to checkpointable work, which search/big is); the text passes the
  // real promtool's check.
  httplib::Client health("127.0.0.1", controller->health_port());
  std::string scraped;
  ASSERT_TRUE(k8s::testing::eventually([&] {
    auto res = health.Get("/metrics");
    scraped = res ? res->body : "";
    // The step is counted after the Workload's patch is sent, so the notice seen on the
    // Workload does not mean the counter moved yet: wait for both.
    return scraped.find(R"(gpubank_bank_loan_gpus{pool="h100-rdma-training",lender="ads",borrower="search"} 16)") !=
               std::string::npos &&
           scraped.find(R"(gpubank_controller_reclaim_steps_total{step="Notice",reason="CheckpointRequested"} 1)") !=
               std::string::npos;
  })) << scraped;
  EXPECT_NE(scraped.find(R"(gpubank_quota_gpus{business_group="search",pool="h100-rdma-training",kind="borrowed"} 16)"),
            std::string::npos);
  EXPECT_NE(scraped.find("gpubank_controller_leader 1"), std::string::npos);
  // The checkpoint window the reports leave out of waste: the job under notice, by the
  // labels attribution gives its pods.
  ASSERT_TRUE(k8s::testing::eventually([&] {
    auto res = health.Get("/metrics");
    scraped = res ? res->body : "";
    return scraped.find(R"(gpubank_last_checkpoint_timestamp_seconds{namespace="search-training",workload_kind="Job",)"
                        R"(workload="big"})") != std::string::npos;
  })) << scraped;
  EXPECT_EQ(scraped.find(R"(gpubank_last_checkpoint_timestamp_seconds{namespace="search-training",workload_kind="Job",)"
                         R"(workload="base"})"),
            std::string::npos);
  const auto promtool = gpubank::testing::find_promtool();
  ASSERT_TRUE(promtool) << gpubank::testing::kPromtoolMissing;
  gpubank::testing::write_file(dir.path() / "controller.prom", scraped);
  const auto lint = gpubank::testing::run_in(dir.path(), promtool->string() + " check metrics < controller.prom");
  // Exit 3 is promtool's lint about the contract's "gpu_hours" names (docs/metrics-contract.md).
  EXPECT_TRUE(lint.status == 0 || lint.status == 3) << lint.output;
  EXPECT_EQ(lint.output.find("error"), std::string::npos) << lint.output;

  // 2. The job reports its checkpoint; 3. gpubank deactivates the Workload.
  json big_job = get("jobs", "search-training", "big");
  big_job["metadata"]["annotations"][std::string(kCheckpointCompleted)] = "2099-01-01T00:00:00Z";
  put_object(big_job);
  ASSERT_TRUE(k8s::testing::eventually([&] {
    const json w = get("workloads", "search-training", "big");
    return w["spec"].contains("active") && w["spec"]["active"] == false;
  }));
  EXPECT_FALSE(annotation(get("workloads", "search-training", "big"), kReclaimedAt).empty());

  // 4. Kueue's part: the inactive Workload loses its quota; ads' workload is admitted.
  big = get("workloads", "search-training", "big");
  big["status"]["conditions"] = {{{"type", "QuotaReserved"}, {"status", "False"}, {"reason", "Inactive"},
                                  {"lastTransitionTime", "2026-01-01T00:01:00Z"}, {"message", ""}},
                                 {{"type", "Evicted"}, {"status", "True"}, {"reason", "InactiveWorkload"},
                                  {"lastTransitionTime", "2026-01-01T00:01:00Z"}, {"message", ""}}};
  big["status"].erase("admission");
  put_object(big);
  json train = get("workloads", "ads-training", "train");
  admit(train, "ads-h100-rdma-training");
  put_object(train);

  // 5. The victim resumes: active again, the reclaim's annotations gone.
  ASSERT_TRUE(k8s::testing::eventually([&] {
    const json w = get("workloads", "search-training", "big");
    return w["spec"]["active"] == true && annotation(w, kReclaimFor).empty();
  }));
  EXPECT_TRUE(annotation(get("jobs", "search-training", "big"), kCheckpointRequested).empty());
  // The reclaim is over: research may borrow again.
  ASSERT_TRUE(k8s::testing::eventually([&] {
    const json cq = get("clusterqueues", "", "research-h100-rdma-training");
    return cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0].value("borrowingLimit", -1) > 0;
  }));
  loop.request_stop();
  loop.join();
  auto final_scrape = health.Get("/metrics");
  ASSERT_TRUE(final_scrape);
  EXPECT_NE(final_scrape->body.find(R"(gpubank_checkpoint_total{result="completed"} 1)"), std::string::npos);
  EXPECT_NE(final_scrape->body.find(R"(gpubank_controller_reclaim_steps_total{step="Stop",reason="CheckpointCompleted"} 1)"),
            std::string::npos);
  EXPECT_NE(final_scrape->body.find(R"(gpubank_controller_reclaim_steps_total{step="Resume",reason="LenderIdle"} 1)"),
            std::string::npos);
  // The victim checkpointed "after" the stop (its job's clock says 2099): nothing lost, and
  // every group's series exists from the start, at 0.
  EXPECT_NE(final_scrape->body.find(R"(gpubank_recompute_loss_gpu_hours_total{business_group="search",pool="h100-rdma-training"} 0)"),
            std::string::npos)
      << final_scrape->body;
  EXPECT_NE(final_scrape->body.find(R"(gpubank_recompute_loss_gpu_hours_total{business_group="ads",pool="h100-rdma-training"} 0)"),
            std::string::npos);
  // The loan ended with the stop: no loan series is left.
  EXPECT_EQ(final_scrape->body.find("gpubank_bank_loan_gpus{"), std::string::npos) << final_scrape->body;

  std::vector<std::string> reasons;
  for (const json& e : fake_->objects("events")) {
    if (e["regarding"].value("kind", "") == "Workload") reasons.push_back(e.value("reason", ""));
  }
  EXPECT_NE(std::find(reasons.begin(), reasons.end(), "ReclaimNoticeSent"), reasons.end());
  EXPECT_NE(std::find(reasons.begin(), reasons.end(), "ReclaimVictimStopped"), reasons.end());
  EXPECT_NE(std::find(reasons.begin(), reasons.end(), "Resumed"), reasons.end());
  auto store = store::Store::open(options.store, {.create = false, .read_only = true});
  ASSERT_TRUE(store.ok());
  auto entries = (*store)->audit(0, 100000);
  ASSERT_TRUE(entries.ok());
  std::vector<std::string> actions;
  for (const bank::AuditEntry& e : *entries) {
    if (e.object == "Workload/search-training/big") actions.push_back(e.action + ":" + e.decision);
  }
  EXPECT_EQ(actions, (std::vector<std::string>{"ReclaimNoticeSent:CheckpointRequested",
                                               "ReclaimVictimStopped:CheckpointCompleted", "Resumed:LenderIdle"}));

  // The ledger: the victim's usage and its loan from ads both end as Reclaimed; ads' own
  // workload starts within its guarantee and borrows nothing.
  auto book = store::load_book(**store);
  ASSERT_TRUE(book.ok()) << book.error();
  std::vector<std::string> trail;
  for (const bank::LedgerEntry& e : book->trail("search-training/big")) {
    trail.push_back(std::string(bank::kind_name(e.kind)) + " " + e.lender + " " + std::to_string(e.gpus) + " " + e.reason);
  }
  EXPECT_EQ(trail, (std::vector<std::string>{"UsageStarted  16 ", "BorrowOpened ads 16 ", "BorrowClosed ads 16 Reclaimed",
                                             "UsageEnded  16 Reclaimed"}));
  std::vector<std::string> ads;
  for (const bank::LedgerEntry& e : book->trail("ads-training/train")) ads.push_back(std::string(bank::kind_name(e.kind)));
  EXPECT_EQ(ads, (std::vector<std::string>{"UsageStarted"}));
}

// `gpubank scan approve` records the decision in the store the controller reads: the
// controller finds it at its next look (approval_poll), notices the Workload of the approved
// job, and stops it once the job reports its checkpoint. No informer event is involved.
TEST_F(ReclaimEndToEnd, AReclaimApprovedInTheStoreStopsTheWorkloadAfterItsCheckpoint) {
  gpubank::testing::ScratchDir dir;
  const ControllerOptions options = approval_options(dir);
  job("research", "r");
  workload("research", "r", "h100-rdma-training", 1, true, true);
  auto created = Controller::create(testing::config_for(*fake_), options);
  ASSERT_TRUE(created.ok()) << created.error();
  std::unique_ptr<Controller> controller = std::move(*created);
  std::jthread loop([&](std::stop_token stop) { (void)controller->run(stop); });
  ASSERT_TRUE(k8s::testing::eventually([&] { return controller->passes() >= 1; }));
  EXPECT_TRUE(annotation(get("workloads", "research", "r"), kReclaimFor).empty());

  approve_job_r(options.store, "");
  if (HasFatalFailure()) return;
  ASSERT_TRUE(k8s::testing::eventually(
      [&] { return annotation(get("workloads", "research", "r"), kReclaimFor) == kApprovedLowUtilization; }));
  EXPECT_FALSE(annotation(get("jobs", "research", "r"), kCheckpointRequested).empty());
  json r_job = get("jobs", "research", "r");
  r_job["metadata"]["annotations"][std::string(kCheckpointCompleted)] = "2099-01-01T00:00:00Z";
  put_object(r_job);
  ASSERT_TRUE(k8s::testing::eventually([&] {
    const json w = get("workloads", "research", "r");
    return w["spec"].contains("active") && w["spec"]["active"] == false;
  }));
  loop.request_stop();
  loop.join();
  std::vector<std::string> reasons;
  for (const json& e : fake_->objects("events")) {
    if (e["regarding"].value("name", "") == "r") reasons.push_back(e.value("reason", "") + " " + e.value("note", ""));
  }
  ASSERT_FALSE(reasons.empty());
  EXPECT_NE(reasons[0].find("rita approved the reclaim of research/r"), std::string::npos) << reasons[0];
}

// An approved downgrade: the Workload (v1beta2, referring to the WorkloadPriorityClass
// training-standard) gets batch-low's value and reference, the job's
// kueue.x-k8s.io/priority-class label follows, and the Workload keeps running.
TEST_F(ReclaimEndToEnd, ADowngradeApprovedInTheStoreMovesTheWorkloadAndItsJobToTheLowerClass) {
  gpubank::testing::ScratchDir dir;
  const ControllerOptions options = approval_options(dir);
  json j = job("research", "r");
  j["metadata"]["labels"][std::string(kKueuePriorityClassLabel)] = "training-standard";
  put_object(j);
  json w = workload("research", "r", "h100-rdma-training", 1, true, true);
  w["spec"]["priority"] = 10000;
  w["spec"]["priorityClassRef"] = {{"group", "kueue.x-k8s.io"}, {"kind", "WorkloadPriorityClass"}, {"name", "training-standard"}};
  put_object(w);
  auto created = Controller::create(testing::config_for(*fake_), options);
  ASSERT_TRUE(created.ok()) << created.error();
  std::unique_ptr<Controller> controller = std::move(*created);
  std::jthread loop([&](std::stop_token stop) { (void)controller->run(stop); });
  ASSERT_TRUE(k8s::testing::eventually([&] { return controller->passes() >= 1; }));
  approve_job_r(options.store, "batch-low");
  if (HasFatalFailure()) return;
  ASSERT_TRUE(k8s::testing::eventually(
      [&] { return annotation(get("workloads", "research", "r"), kDowngradedTo) == "batch-low"; }));
  const int passes_then = static_cast<int>(controller->passes());
  ASSERT_TRUE(k8s::testing::eventually([&] { return static_cast<int>(controller->passes()) >= passes_then + 2; }));
  loop.request_stop();
  loop.join();
  const json after = get("workloads", "research", "r");
  EXPECT_EQ(after["spec"]["priority"], 1000);
  EXPECT_EQ(after["spec"]["priorityClassRef"],
            (json{{"group", "kueue.x-k8s.io"}, {"kind", "WorkloadPriorityClass"}, {"name", "batch-low"}}));
  EXPECT_FALSE(after["spec"].contains("active") && after["spec"]["active"] == false);  // still running
  EXPECT_TRUE(annotation(after, kReclaimFor).empty());
  EXPECT_EQ(get("jobs", "research", "r")["metadata"]["labels"][std::string(kKueuePriorityClassLabel)], "batch-low");
  std::vector<std::string> reasons;
  for (const json& e : fake_->objects("events")) {
    if (e["regarding"].value("name", "") == "r") reasons.push_back(e.value("reason", "") + ": " + e.value("note", ""));
  }
  // One downgrade, however many passes ran after it.
  ASSERT_EQ(reasons.size(), 1U) << ::testing::PrintToString(reasons);
  EXPECT_EQ(reasons[0], "WorkloadDowngraded: rita approved the downgrade of research/r (8 GPUs of h100-rdma-training, "
                        "low-utilisation alert 1) from priority 10000 to batch-low (1000); it keeps running, preemptible "
                        "by work above it [DowngradeApproved]");
}

constexpr std::string_view kDowngradeMessage =
    "rita approved the downgrade of research/r (8 GPUs of h100-rdma-training, low-utilisation alert 1) from priority "
    "10000 to batch-low (1000); it keeps running, preemptible by work above it";

// Kueue before the newest: its job webhook refuses a change of the job's
// kueue.x-k8s.io/priority-class label while the job runs (403, controller-runtime's
// admission.Denied). The controller lowers spec.priority alone: the Workload keeps its
// class, as the job's label does, so Kueue's reconciler (which compares the class name)
// has nothing to put back; the Event and the audit entry say so, and the downgrade is done
// once, not retried at every pass.
TEST_F(ReclaimEndToEnd, AnOlderKueueThatRefusesTheJobLabelGetsTheLowerPriorityAloneAndKeepsItsClass) {
  gpubank::testing::ScratchDir dir;
  ControllerOptions options = approval_options(dir);
  options.resync_period = std::chrono::milliseconds(100);  // passes keep coming
  job_r_of_class("training-standard", wpc_ref("training-standard"));
  const std::string denied = "admission webhook \"vjob.kb.io\" denied the request: "
                             "metadata.labels[kueue.x-k8s.io/priority-class]: Invalid value: \"batch-low\": field is immutable";
  fake_->refuse_patches(kJobR, 403, refusal(403, "Forbidden", denied));
  auto created = Controller::create(testing::config_for(*fake_), options);
  ASSERT_TRUE(created.ok()) << created.error();
  std::unique_ptr<Controller> controller = std::move(*created);
  std::jthread loop([&](std::stop_token stop) { (void)controller->run(stop); });
  ASSERT_TRUE(k8s::testing::eventually([&] { return controller->passes() >= 1; }));
  approve_job_r(options.store, "batch-low");
  if (HasFatalFailure()) return;
  ASSERT_TRUE(k8s::testing::eventually(
      [&] { return annotation(get("workloads", "research", "r"), kDowngradedTo) == "batch-low"; }));
  const std::size_t passes_then = controller->passes();
  ASSERT_TRUE(k8s::testing::eventually([&] { return controller->passes() >= passes_then + 3; }));
  loop.request_stop();
  loop.join();

  const json after = get("workloads", "research", "r");
  EXPECT_EQ(after["spec"]["priority"], 1000);
  EXPECT_EQ(after["spec"]["priorityClassRef"], wpc_ref("training-standard"));
  EXPECT_FALSE(after["spec"].contains("active") && after["spec"]["active"] == false);  // still running
  EXPECT_EQ(get("jobs", "research", "r")["metadata"]["labels"][std::string(kKueuePriorityClassLabel)], "training-standard");
  // One try at the label: the downgraded-to annotation ends the plan's downgrade.
  EXPECT_EQ(fake_->refused_patches(kJobR), 1U);
  const std::string note = "; the admission webhook refused the job's kueue.x-k8s.io/priority-class label (403: " +
                           denied + "), so only spec.priority was lowered and the Workload keeps the priority class "
                           "training-standard";
  const std::vector<std::string> events = events_of_r();
  ASSERT_EQ(events.size(), 1U) << ::testing::PrintToString(events);
  EXPECT_EQ(events[0], "WorkloadDowngraded: " + std::string(kDowngradeMessage) + note + " [DowngradeApproved]");
  // Done, not failed: the audit entry has the approval's decision and says the same.
  EXPECT_EQ(audit_of_r(options.store),
            (std::vector<std::string>{"WorkloadDowngraded DowngradeApproved: " + std::string(kDowngradeMessage) + note}));
}

// A webhook that answers with an Invalid StatusError comes back as 422: the same fallback.
// A long message is shortened in the note, at a UTF-8 sequence's start (the Event is sent:
// its JSON holds well-formed UTF-8 only).
TEST_F(ReclaimEndToEnd, AJobLabelRefusedWith422IsTheSameFallbackWithTheServersMessageShortened) {
  gpubank::testing::ScratchDir dir;
  const ControllerOptions options = approval_options(dir);
  job_r_of_class("training-standard", wpc_ref("training-standard"));
  std::string denied = "admission webhook \"vjob.kb.io\" denied the request: Job.batch \"r\" is invalid: "
                       "metadata.labels[kueue.x-k8s.io/priority-class]: Invalid value: \"batch-low\": field is immutable";
  // Then 2-byte characters (from byte 180 on), so the cut falls inside one.
  denied += ", notes: ";
  while (denied.size() < 600) denied += "\u00e9";
  fake_->refuse_patches(kJobR, 422, refusal(422, "Invalid", denied));
  auto created = Controller::create(testing::config_for(*fake_), options);
  ASSERT_TRUE(created.ok()) << created.error();
  std::unique_ptr<Controller> controller = std::move(*created);
  std::jthread loop([&](std::stop_token stop) { (void)controller->run(stop); });
  ASSERT_TRUE(k8s::testing::eventually([&] { return controller->passes() >= 1; }));
  approve_job_r(options.store, "batch-low");
  if (HasFatalFailure()) return;
  ASSERT_TRUE(k8s::testing::eventually(
      [&] { return annotation(get("workloads", "research", "r"), kDowngradedTo) == "batch-low"; }));
  ASSERT_TRUE(k8s::testing::eventually([&] { return !events_of_r().empty(); }));
  loop.request_stop();
  loop.join();
  const json after = get("workloads", "research", "r");
  EXPECT_EQ(after["spec"]["priority"], 1000);
  EXPECT_EQ(after["spec"]["priorityClassRef"], wpc_ref("training-standard"));
  const std::vector<std::string> events = events_of_r();
  ASSERT_EQ(events.size(), 1U) << ::testing::PrintToString(events);
  EXPECT_NE(events[0].find("the admission webhook refused the job's kueue.x-k8s.io/priority-class label (422: " +
                           denied.substr(0, 100)),
            std::string::npos)
      << events[0];
  EXPECT_NE(events[0].find("...), so only spec.priority was lowered"), std::string::npos) << events[0];
  EXPECT_EQ(events[0].find(denied), std::string::npos);  // not all of it
  EXPECT_LT(events[0].size(), 1024U);
}

// Any other refusal of the job's label (here RBAC's 403: no admission webhook in it) keeps
// the Workload as it was: nothing is downgraded, no Event, and every pass tries again.
TEST_F(ReclaimEndToEnd, AJobLabelForbiddenByRbacLeavesTheWorkloadAsItWasAndIsTriedAgain) {
  gpubank::testing::ScratchDir dir;
  ControllerOptions options = approval_options(dir);
  options.resync_period = std::chrono::milliseconds(100);
  job_r_of_class("training-standard", wpc_ref("training-standard"));
  fake_->refuse_patches(kJobR, 403,
                        refusal(403, "Forbidden",
                                "jobs.batch \"r\" is forbidden: User \"system:serviceaccount:gpubank-system:gpubank\" "
                                "cannot patch resource \"jobs\" in API group \"batch\" in the namespace \"research\""));
  auto created = Controller::create(testing::config_for(*fake_), options);
  ASSERT_TRUE(created.ok()) << created.error();
  std::unique_ptr<Controller> controller = std::move(*created);
  std::jthread loop([&](std::stop_token stop) { (void)controller->run(stop); });
  ASSERT_TRUE(k8s::testing::eventually([&] { return controller->passes() >= 1; }));
  approve_job_r(options.store, "batch-low");
  if (HasFatalFailure()) return;
  ASSERT_TRUE(k8s::testing::eventually([&] { return fake_->refused_patches(kJobR) >= 3; }));
  loop.request_stop();
  loop.join();
  const json after = get("workloads", "research", "r");
  EXPECT_EQ(after["spec"]["priority"], 10000);
  EXPECT_EQ(after["spec"]["priorityClassRef"], wpc_ref("training-standard"));
  EXPECT_TRUE(annotation(after, kDowngradedTo).empty());
  EXPECT_TRUE(events_of_r().empty()) << ::testing::PrintToString(events_of_r());
  const std::vector<std::string> audit = audit_of_r(options.store);
  ASSERT_GE(audit.size(), 2U);
  EXPECT_EQ(audit[0].rfind("WorkloadDowngraded Failed: " + std::string(kDowngradeMessage) + "; failed: ", 0), 0U)
      << audit[0];
  EXPECT_NE(audit[0].find("is forbidden"), std::string::npos) << audit[0];
}

// A v1beta2 Workload that refers to a pod PriorityClass (scheduling.k8s.io): its reference's
// name is immutable while quota is reserved (Kueue's CRD), and Kueue's job reconciler does
// not read the job's label for it. Only spec.priority changes; the reference and the job
// are left as they are.
TEST_F(ReclaimEndToEnd, AWorkloadOfAPodPriorityClassGetsTheLowerPriorityAloneAndItsReferenceAndJobAreLeftAlone) {
  gpubank::testing::ScratchDir dir;
  const ControllerOptions options = approval_options(dir);
  const json pod_ref{{"group", "scheduling.k8s.io"}, {"kind", "PriorityClass"}, {"name", "training-standard"}};
  job_r_of_class("", pod_ref);
  const json job_before = get("jobs", "research", "r");
  auto created = Controller::create(testing::config_for(*fake_), options);
  ASSERT_TRUE(created.ok()) << created.error();
  std::unique_ptr<Controller> controller = std::move(*created);
  std::jthread loop([&](std::stop_token stop) { (void)controller->run(stop); });
  ASSERT_TRUE(k8s::testing::eventually([&] { return controller->passes() >= 1; }));
  approve_job_r(options.store, "batch-low");
  if (HasFatalFailure()) return;
  ASSERT_TRUE(k8s::testing::eventually(
      [&] { return annotation(get("workloads", "research", "r"), kDowngradedTo) == "batch-low"; }));
  ASSERT_TRUE(k8s::testing::eventually([&] { return !events_of_r().empty(); }));
  loop.request_stop();
  loop.join();
  const json after = get("workloads", "research", "r");
  EXPECT_EQ(after["spec"]["priority"], 1000);
  EXPECT_EQ(after["spec"]["priorityClassRef"], pod_ref);
  EXPECT_FALSE(after["spec"].contains("priorityClassName"));
  EXPECT_EQ(get("jobs", "research", "r"), job_before);  // not patched: same resourceVersion
  const std::vector<std::string> events = events_of_r();
  ASSERT_EQ(events.size(), 1U) << ::testing::PrintToString(events);
  EXPECT_EQ(events[0], "WorkloadDowngraded: " + std::string(kDowngradeMessage) + " [DowngradeApproved]");
}

}  // namespace
}  // namespace gpubank::controller
