// What the API does to the running twin is an input of the run: journalled before it takes
// effect, and a restart that applies the journal at the same virtual times regenerates the
// same ledger and audit entries (the store's replay then matches instead of finding
// "another run"). The journal itself refuses what this code would not have written, and an
// edited entry breaks its chain.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "governance/alerts.hpp"
#include "policy/policy_set.hpp"
#include "support/paths.hpp"
#include "twin/cluster/inventory.hpp"
#include "twin/live/interventions.hpp"
#include "twin/live/platform.hpp"
#include "twin/live/resume.hpp"

namespace gpubank::twin::live {
namespace {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "gpubank-interventions-XXXXXX").string();
    if (::mkdtemp(pattern.data()) != nullptr) path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  [[nodiscard]] const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

Intervention at(VirtualTime t, InterventionAction action, std::string actor = "api:pat") {
  Intervention i;
  i.t = t;
  i.actor = std::move(actor);
  i.action = std::move(action);
  return i;
}

TEST(Interventions, EachKindRoundTripsThroughItsAuditEntry) {
  const std::vector<Intervention> all = {
      at(0, GpuHealthChange{"GPU-1", false, 79, 0}),
      at(60'000, GpuHealthChange{"GPU-1", true, 0, 0}),
      at(61'000, GpuHealthChange{"GPU-2", false, 48, 3}),
      at(120'000, TidalFreeze{"weekday-serving-training", true, "incident 42"}),
      at(180'000, TidalFreeze{"weekday-serving-training", false, ""}),
      at(240'000, ModelLoadFaults{"customer-service-llm", 2}),
      at(300'000, ReclaimDecisionRequest{"uid-7", true, "idle since noon", ""}),
      at(360'000, ReclaimDecisionRequest{"uid-8", true, "", "batch-low"}),
  };
  for (const Intervention& i : all) {
    const bank::AuditEntry e = intervention_entry(i, 1'700'000'000'000);
    EXPECT_FALSE(bank::validate_audit_entry(e).has_value()) << e.action;
    auto back = intervention_from_entry(e);
    ASSERT_TRUE(back) << e.action << ": " << back.error();
    EXPECT_EQ(*back, i) << e.action;
  }
}

TEST(Interventions, TheDecoderRefusesWhatThisCodeWouldNotWriteNamingTheField) {
  const bank::AuditEntry good = intervention_entry(at(5, GpuHealthChange{"GPU-1", false, 79, 0}), 1);
  struct Case {
    const char* what;
    std::function<void(bank::AuditEntry&)> edit;
    const char* error;
  };
  const std::vector<Case> cases = {
      {"another action", [](auto& e) { e.action = "Intervention.Reboot"; }, "action: \"Intervention.Reboot\" is not an intervention"},
      {"not journalled", [](auto& e) { e.decision = "Admitted"; }, "decision: \"Journalled\" is required"},
      {"no actor", [](auto& e) { e.actor.clear(); }, "actor: 1 to 512 bytes"},
      {"not JSON", [](auto& e) { e.numbers = "{"; }, "numbers: a JSON object is required"},
      {"xid out of range", [](auto& e) { e.numbers = R"({"virtualMs":5,"uuid":"GPU-1","healthy":false,"xid":1001,"eccDoubleBit":0})"; },
       "numbers.xid: an integer from 1 to 1000 when unhealthy"},
      {"xid on a recovery", [](auto& e) { e.numbers = R"({"virtualMs":5,"uuid":"GPU-1","healthy":true,"xid":79,"eccDoubleBit":0})"; },
       "numbers.xid: an integer from 0 to 0 when healthy"},
      {"a negative time", [](auto& e) { e.numbers = R"({"virtualMs":-1,"uuid":"GPU-1","healthy":false,"xid":79,"eccDoubleBit":0})"; },
       "numbers.virtualMs: an integer from 0 to"},
      {"a field it never writes", [](auto& e) { e.numbers = R"({"virtualMs":5,"uuid":"GPU-1","healthy":false,"xid":79,"eccDoubleBit":0,"x":1})"; },
       "numbers.x: not a field of this intervention"},
      {"another object", [](auto& e) { e.object = "GPU/GPU-2"; }, "object: GPU/GPU-1 is required"},
      {"a string for a flag", [](auto& e) { e.numbers = R"({"virtualMs":5,"uuid":"GPU-1","healthy":"no","xid":79,"eccDoubleBit":0})"; },
       "numbers.healthy: true or false is required"},
  };
  for (const Case& c : cases) {
    bank::AuditEntry e = good;
    c.edit(e);
    auto decoded = intervention_from_entry(e);
    ASSERT_FALSE(decoded) << c.what;
    EXPECT_NE(decoded.error().find(c.error), std::string::npos) << c.what << ": " << decoded.error();
  }
  // The same rules before anything is journalled.
  EXPECT_FALSE(check_intervention(at(0, ModelLoadFaults{"customer-service-llm", 0})));
  EXPECT_FALSE(check_intervention(at(0, ModelLoadFaults{"", 1})));
  EXPECT_FALSE(check_intervention(at(0, ReclaimDecisionRequest{std::string(300, 'u'), true, "", ""})));
  EXPECT_TRUE(check_intervention(at(0, ModelLoadFaults{"customer-service-llm", 1000})));
}

TEST(Interventions, TheJournalKeepsThemAcrossReopeningInTheOrderTheyApply) {
  TempDir dir;
  const std::string location = (dir.path() / "interventions.db").string();
  {
    auto journal = InterventionJournal::open(location);
    ASSERT_TRUE(journal) << journal.error();
    EXPECT_TRUE((*journal)->recorded().empty());
    // Journalled at 120 s, then one at 60 s (a restart's live call before a replayed one).
    for (Intervention i : {at(120'000, ModelLoadFaults{"customer-service-llm", 1}), at(60'000, GpuHealthChange{"GPU-1", false, 79, 0}),
                           at(120'000, TidalFreeze{"weekday-serving-training", true, "x"})}) {
      auto appended = (*journal)->append(i, 1'000);
      ASSERT_TRUE(appended) << appended.error();
      EXPECT_GT(i.seq, 0);
    }
    Intervention bad = at(0, ModelLoadFaults{"customer-service-llm", 0});
    EXPECT_FALSE((*journal)->append(bad, 1'000));  // refused, and not written
  }
  auto reopened = InterventionJournal::open(location);
  ASSERT_TRUE(reopened) << reopened.error();
  const auto recorded = (*reopened)->recorded();
  ASSERT_EQ(recorded.size(), 3u);
  EXPECT_EQ(recorded[0].t, 60'000);
  EXPECT_EQ(recorded[1].seq, 1);  // same time: journal order
  EXPECT_EQ(recorded[2].seq, 3);
  EXPECT_TRUE(std::holds_alternative<TidalFreeze>(recorded[2].action));
}

// An attacker with the file turns a recovery into nothing by editing its entry: the chain
// breaks and the journal does not open (a start refuses to replay an edited history).
TEST(Interventions, AnEditedJournalEntryIsCaught) {
  TempDir dir;
  const std::string location = (dir.path() / "interventions.db").string();
  {
    auto journal = InterventionJournal::open(location);
    ASSERT_TRUE(journal) << journal.error();
    Intervention a = at(60'000, GpuHealthChange{"GPU-1", false, 79, 0});
    Intervention b = at(120'000, GpuHealthChange{"GPU-1", true, 0, 0});
    ASSERT_TRUE((*journal)->append(a, 1));
    ASSERT_TRUE((*journal)->append(b, 2));
  }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(location.c_str(), &db), SQLITE_OK);
  std::vector<std::string> triggers;
  sqlite3_stmt* names = nullptr;
  sqlite3_prepare_v2(db, "SELECT name FROM sqlite_master WHERE type='trigger'", -1, &names, nullptr);
  while (sqlite3_step(names) == SQLITE_ROW) triggers.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(names, 0)));
  sqlite3_finalize(names);
  for (const auto& t : triggers) sqlite3_exec(db, ("DROP TRIGGER " + t).c_str(), nullptr, nullptr, nullptr);
  ASSERT_EQ(sqlite3_exec(db, R"sql(UPDATE audit SET numbers = replace(numbers, '"virtualMs":120000', '"virtualMs":99999999') WHERE seq = 2)sql",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  EXPECT_EQ(sqlite3_changes(db), 1) << "the edit must land, or the test tests nothing";
  sqlite3_close(db);
  auto reopened = InterventionJournal::open(location);
  ASSERT_FALSE(reopened);
  EXPECT_NE(reopened.error().find("the journal's chain is broken at entry 2"), std::string::npos) << reopened.error();
}

// ---- the platform ---------------------------------------------------------------------------

run::RunOptions cluster_run() {
  Diagnostics d;
  auto inventory = cluster::load_inventory(testing::source_dir() + "/examples/inventory/example.yaml", d);
  EXPECT_TRUE(inventory.has_value());
  run::RunOptions run;
  run.inventory = std::make_shared<const cluster::Inventory>(std::move(*inventory));
  return run;
}

DayOptions journal_day(std::int64_t hours, bool governance) {
  DayOptions o;
  o.seed = 1;
  o.hours = hours;
  o.serving_load = 0.05;
  o.governance = governance;
  o.start = *parse_rfc3339("2026-11-30T16:00:00Z");  // 00:00 in Shanghai: the night's training
  return o;
}

// The platform's journal kept in `journal` (numbered as the store would), for a replay.
void keep_journal(Platform& p, std::vector<Intervention>& journal) {
  p.set_journal([&journal](Intervention& i) {
    i.seq = static_cast<std::int64_t>(journal.size()) + 1;
    journal.push_back(i);
    return Expected<bool>(true);
  });
}

// The audit log's content fields, as a replay compares them.
void expect_same_audit(std::span<const bank::AuditEntry> a, std::span<const bank::AuditEntry> b) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(audit_difference(a[i], b[i]), "") << "audit entry " << i + 1;
  }
}

void expect_same_ledger(std::span<const bank::LedgerEntry> a, std::span<const bank::LedgerEntry> b) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(ledger_difference(a[i], b[i]), "") << "ledger entry " << i + 1;
  }
}

// A GPU with a workload on it in the pool, now.
std::string busy_gpu(const Platform& p, const std::string& pool) {
  for (const Json& g : p.gpus_json(pool)) {
    if (!g["workloads"].empty()) return g["uuid"].get<std::string>();
  }
  return {};
}

TEST(PlatformInterventions, ARestartThatAppliesTheJournalRegeneratesTheSameRun) {
  auto live = Platform::create(policy::load_policy_set({testing::source_dir() + "/examples/policies"}), journal_day(3, false),
                               cluster_run());
  ASSERT_TRUE(live) << live.error();
  Platform& p = **live;
  std::vector<Intervention> journal;
  keep_journal(p, journal);
  // Paced like 60x: steps of 7 s, interventions at odd moments between them.
  std::string gpu;
  while (p.now() < p.end()) {
    ASSERT_TRUE(p.advance_to(std::min(p.end(), p.now() + 7'000))) << p.error();
    if (gpu.empty() && p.now() >= 1'800'000) gpu = busy_gpu(p, "h100-rdma-training");
    if (!gpu.empty() && journal.empty()) {
      ASSERT_TRUE(p.set_gpu_health(gpu, false, 79, "api:pat")) << p.error();
      ASSERT_TRUE(p.freeze_tidal("weekday-serving-training", true, "api:pat", "incident 42"));
      ASSERT_TRUE(p.fail_model_loads("customer-service-llm", 2, "api:pat"));
      // Refused by the run, journalled all the same: the replay refuses it again.
      EXPECT_FALSE(p.set_gpu_health("GPU-00000000-0000-0000-0000-000000000000", false, 79, "api:pat"));
    }
    if (p.now() >= 7'200'000 && journal.size() == 4) {
      ASSERT_TRUE(p.set_gpu_health(gpu, true, 0, "api:pat"));
      ASSERT_TRUE(p.freeze_tidal("weekday-serving-training", false, "api:pat", ""));
    }
  }
  ASSERT_EQ(journal.size(), 6u) << "no training GPU held a job";
  bool xid_audited = false;
  for (const bank::AuditEntry& e : p.audit()) xid_audited |= e.action == "GpuUnhealthy" && e.actor == "api:pat";
  EXPECT_TRUE(xid_audited);

  // The restart: the same inputs and the journal, replayed in minute steps as gpubank up
  // replays, and in one jump.
  for (const VirtualTime step : {VirtualTime{60'000}, VirtualTime{3 * 3'600'000}}) {
    auto again = Platform::create(policy::load_policy_set({testing::source_dir() + "/examples/policies"}),
                                  journal_day(3, false), cluster_run());
    ASSERT_TRUE(again) << again.error();
    Platform& q = **again;
    q.schedule(journal);
    while (q.now() < q.end()) ASSERT_TRUE(q.advance_to(std::min(q.end(), q.now() + step))) << q.error();
    EXPECT_EQ(q.scheduled_left(), 0u);
    EXPECT_EQ(q.scheduled_refused(), 1u) << "the unknown GPU, refused again";
    expect_same_audit(p.audit(), q.audit());
    expect_same_ledger(p.ledger(), q.ledger());
    ASSERT_EQ(p.events().size(), q.events().size());
  }

  // Without the journal the run is another one: the comparison above can fail.
  auto bare = Platform::create(policy::load_policy_set({testing::source_dir() + "/examples/policies"}), journal_day(3, false),
                               cluster_run());
  ASSERT_TRUE(bare) << bare.error();
  while ((*bare)->now() < (*bare)->end()) ASSERT_TRUE((*bare)->advance_to((*bare)->end()));
  EXPECT_NE((*bare)->audit().size(), p.audit().size());
}

TEST(PlatformInterventions, AJournalFailureAppliesNothing) {
  auto live = Platform::create(policy::load_policy_set({testing::source_dir() + "/examples/policies"}), journal_day(1, false),
                               cluster_run());
  ASSERT_TRUE(live) << live.error();
  Platform& p = **live;
  ASSERT_TRUE(p.advance_to(1'800'000));
  p.set_journal([](Intervention&) { return Expected<bool>(Unexpected{std::string("disk full")}); });
  const std::size_t audited = p.audit().size();
  const std::string gpu = busy_gpu(p, "h100-rdma-training");
  ASSERT_FALSE(gpu.empty());
  auto refused = p.set_gpu_health(gpu, false, 79, "api:pat");
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error(), "not journalled, nothing changed: disk full");
  EXPECT_EQ(p.audit().size(), audited);
  EXPECT_TRUE((*p.gpu_json(gpu))["healthy"].get<bool>());
}


// The example policies with a LowUtilizationPolicy that finds the night's training jobs
// (busy, but below 99 % on average) low after ten minutes, and escalates every quarter of
// an hour: borrowing groups' jobs become ReclaimCandidates within about an hour.
policy::PolicySet policies_flagging_training(const fs::path& dir) {
  std::ofstream(dir / "50-low-utilization.yaml") << R"(apiVersion: platform.gpubank.dev/v1alpha1
kind: LowUtilizationPolicy
metadata: {name: training-strict}
spec:
  match: {workloadType: training}
  window: 10m
  thresholds: {averageGpuUtilization: 99}
  startupGracePeriod: 5m
  notify: {first: owner, after: 15m, escalateTo: business-group-admin, repeatInterval: 6h}
)";
  std::vector<std::string> paths;
  for (const char* f : {"00-guardrails.yaml", "10-quotas.yaml", "20-inference.yaml", "30-tidal.yaml", "40-leases.yaml"}) {
    paths.push_back(testing::source_dir() + "/examples/policies/" + f);
  }
  paths.push_back((dir / "50-low-utilization.yaml").string());
  return policy::load_policy_set(paths);
}

TEST(PlatformInterventions, AnApprovedReclaimStopsTheWorkloadAfterItsCheckpointAndTheReplayAgrees) {
  TempDir dir;
  auto live = Platform::create(policies_flagging_training(dir.path()), journal_day(4, true), cluster_run());
  ASSERT_TRUE(live) << live.error();
  Platform& p = **live;
  std::vector<Intervention> journal;
  keep_journal(p, journal);
  // Until two candidates are open: one to approve, one to reject.
  std::vector<std::string> candidates;
  while (p.now() < p.end() && candidates.size() < 2) {
    ASSERT_TRUE(p.advance_to(std::min(p.end(), p.now() + 60'000))) << p.error();
    candidates.clear();
    for (const auto& [uid, a] : p.governance()->open_alerts()) {
      if (a.state == governance::AlertState::ReclaimCandidate) candidates.push_back(uid);
    }
  }
  ASSERT_GE(candidates.size(), 2u) << "no candidates by " << p.now() / 60'000 << " min";
  const std::string approved = candidates[0], rejected = candidates[1];
  const std::string key = *p.governance()->twin_workload(approved);
  const governance::Alert before = p.governance()->open_alerts().at(approved);
  EXPECT_GT(before.evidence.group_borrowed_gpus, 0);

  ASSERT_TRUE(p.decide_reclaim(rejected, false, "it is tuning", "api:ada")) << p.error();
  ASSERT_TRUE(p.decide_reclaim(approved, true, "idle on borrowed GPUs", "api:ada"));
  // Final: a second decision is refused before it is journalled (it changes nothing).
  auto again = p.decide_reclaim(approved, false, "", "api:pat");
  ASSERT_FALSE(again);
  EXPECT_NE(again.error().find("alert.decision: already approved by api:ada"), std::string::npos) << again.error();
  EXPECT_EQ(journal.size(), 2u);
  EXPECT_EQ(p.governance()->open_alerts().at(rejected).decision->approved, false);

  // The decision is audited with the decider; the notice follows with its group's grace.
  const VirtualTime decided_at = p.now();
  std::vector<std::string> kinds;
  for (const run::Event& e : p.events()) {
    if (e.t >= decided_at && e.object == "Workload/" + key) kinds.push_back(e.kind + "/" + e.reason);
  }
  ASSERT_GE(kinds.size(), 2u);
  EXPECT_EQ(kinds[0], "ReclaimApproved/ReclaimApproved");
  EXPECT_EQ(kinds[1], "ReclaimNoticeSent/ReclaimApproved");
  bool audited = false;
  for (const bank::AuditEntry& e : p.audit()) audited |= e.action == "ReclaimApproved" && e.actor == "api:ada";
  EXPECT_TRUE(audited);

  // Stopped on its checkpoint (or at the grace's end), deactivated, never requeued; the
  // scanner resolves the alert "reclaimed".
  while (p.now() < p.end()) ASSERT_TRUE(p.advance_to(std::min(p.end(), p.now() + 60'000)));
  EXPECT_EQ((*p.workload_json(key))["state"], "Deactivated");
  std::string stop;
  for (const run::Event& e : p.events()) {
    if (e.object == "Workload/" + key && e.t >= decided_at && e.kind == "ReclaimVictimStopped") stop = e.reason;
    if (e.object == "Workload/" + key && e.t > decided_at) { EXPECT_NE(e.kind, "Admitted") << "requeued after an approved reclaim"; }
  }
  EXPECT_EQ(stop, "ApprovedLowUtilization");
  bool resolved = false;
  for (const governance::Alert& a : p.governance()->resolved_alerts()) {
    if (a.workload_uid == approved) {
      resolved = true;
      EXPECT_EQ(a.resolution, "reclaimed");
    }
  }
  EXPECT_TRUE(resolved);
  EXPECT_FALSE(p.governance()->open_alerts().contains(approved));

  // The restart replays the two decisions at their minute.
  ASSERT_EQ(journal.size(), 2u);
  auto replay = Platform::create(policies_flagging_training(dir.path()), journal_day(4, true), cluster_run());
  ASSERT_TRUE(replay) << replay.error();
  Platform& q = **replay;
  q.schedule(journal);
  while (q.now() < q.end()) ASSERT_TRUE(q.advance_to(std::min(q.end(), q.now() + 60'000))) << q.error();
  EXPECT_EQ(q.scheduled_refused(), 0u);
  expect_same_audit(p.audit(), q.audit());
  expect_same_ledger(p.ledger(), q.ledger());
  EXPECT_EQ((*q.workload_json(key))["state"], "Deactivated");
}


// An approved downgrade instead of a reclaim goes through the journal like a reclaim: a
// class the guardrails do not open to training is refused before it is journalled, naming
// the rule; the approved one is recorded on the alert, audited, and keeps the workload
// running (never stopped for the approval). The day's borrowing training jobs run at
// batch-low, the lowest class open to training in the examples, so the run says it lowers
// nothing (DowngradeSkipped, as the controller skips it); SimulationControls.
// AnApprovedDowngradeMakesTheWorkloadPreemptibleByItsPeers shows one that lowers. The
// replay agrees.
TEST(PlatformInterventions, AnApprovedDowngradeIsJournalledAndKeepsTheWorkloadRunning) {
  TempDir dir;
  auto live = Platform::create(policies_flagging_training(dir.path()), journal_day(4, true), cluster_run());
  ASSERT_TRUE(live) << live.error();
  Platform& p = **live;
  std::vector<Intervention> journal;
  keep_journal(p, journal);
  std::string candidate;
  while (p.now() < p.end() && candidate.empty()) {
    ASSERT_TRUE(p.advance_to(std::min(p.end(), p.now() + 60'000))) << p.error();
    for (const auto& [uid, a] : p.governance()->open_alerts()) {
      if (a.state == governance::AlertState::ReclaimCandidate && p.governance()->twin_workload(uid)) {
        candidate = uid;
        break;
      }
    }
  }
  ASSERT_FALSE(candidate.empty()) << "no candidate by " << p.now() / 60'000 << " min";
  const std::string key = *p.governance()->twin_workload(candidate);
  const std::string from_class = (*p.workload_json(key)).value("priorityClass", "");
  // The alert offers what a form may choose.
  const auto listed = p.governance()->alerts_json()["open"];
  for (const auto& a : listed) {
    if (a["workloadUid"] != candidate) continue;
    ASSERT_TRUE(a.contains("downgradeOptions")) << a.dump();
    const auto options = a["downgradeOptions"].get<std::vector<std::string>>();
    EXPECT_NE(std::find(options.begin(), options.end(), "batch-low"), options.end());
    EXPECT_EQ(std::find(options.begin(), options.end(), "notebook"), options.end()) << "not open to training";
    EXPECT_EQ(std::find(options.begin(), options.end(), "inference-critical"), options.end()) << "not preemptible";
  }

  auto refused = p.decide_reclaim(candidate, true, "", "api:ada", "notebook");
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().find("governance.downgrade-class-not-allowed"), std::string::npos) << refused.error();
  EXPECT_TRUE(journal.empty());
  EXPECT_FALSE(p.governance()->open_alerts().at(candidate).decision);

  ASSERT_TRUE(p.decide_reclaim(candidate, true, "keep it, below the others", "api:ada", "batch-low")) << p.error();
  ASSERT_EQ(journal.size(), 1u);
  EXPECT_EQ(std::get<ReclaimDecisionRequest>(journal[0].action).downgrade_to, "batch-low");
  const VirtualTime decided_at = p.now();
  std::vector<std::string> kinds;
  for (const run::Event& e : p.events()) {
    if (e.t >= decided_at && e.object == "Workload/" + key) kinds.push_back(e.kind + "/" + e.reason);
  }
  const std::string done = from_class == "batch-low" ? "DowngradeSkipped" : "WorkloadDowngraded";
  EXPECT_EQ(kinds, (std::vector<std::string>{"DowngradeApproved/DowngradeApproved", done + "/DowngradeApproved"}))
      << from_class;
  bool audited = false;
  for (const bank::AuditEntry& e : p.audit()) audited |= e.action == "DowngradeApproved" && e.actor == "api:ada";
  EXPECT_TRUE(audited);
  const governance::Alert& decided = p.governance()->open_alerts().at(candidate);
  ASSERT_TRUE(decided.decision);
  EXPECT_EQ(decided.decision->downgrade_to, "batch-low");
  EXPECT_EQ((*p.workload_json(key))["state"], "Running");

  while (p.now() < p.end()) ASSERT_TRUE(p.advance_to(std::min(p.end(), p.now() + 60'000)));
  for (const run::Event& e : p.events()) {
    // A lender's reclaim may still take it back (it runs on borrowed GPUs); an approval never does.
    if (e.object == "Workload/" + key && e.t > decided_at) { EXPECT_NE(e.reason, "ApprovedLowUtilization"); }
  }
  EXPECT_NE((*p.workload_json(key))["state"], "Deactivated");

  auto replay = Platform::create(policies_flagging_training(dir.path()), journal_day(4, true), cluster_run());
  ASSERT_TRUE(replay) << replay.error();
  Platform& q = **replay;
  q.schedule(journal);
  while (q.now() < q.end()) ASSERT_TRUE(q.advance_to(std::min(q.end(), q.now() + 60'000))) << q.error();
  EXPECT_EQ(q.scheduled_refused(), 0u);
  expect_same_audit(p.audit(), q.audit());
  expect_same_ledger(p.ledger(), q.ledger());
}

// An approved self-service change to a GPUQuotaPolicy takes effect in the running day: the
// guarantee and limits change in place, later audit entries carry the new version, the
// replay applies it at the same minute; a change to another kind is refused with the reason.
TEST(PlatformInterventions, APolicyChangeTakesEffectInTheRunningDayAndReplays) {
  const std::string less = R"(apiVersion: platform.gpubank.dev/v1alpha1
kind: GPUQuotaPolicy
metadata: {name: ads-training-h100}
spec:
  businessGroup: ads
  resourcePool: h100-rdma-training
  guaranteed: 8
  borrowLimit: 8
  maxCapacity: 16
  reclaimPolicy: {gracePeriod: 5m, onlyPreempt: [checkpointable]}
)";
  auto live = Platform::create(policy::load_policy_set({testing::source_dir() + "/examples/policies"}), journal_day(2, false),
                               cluster_run());
  ASSERT_TRUE(live) << live.error();
  Platform& p = **live;
  std::vector<Intervention> journal;
  keep_journal(p, journal);
  ASSERT_TRUE(p.advance_to(1'800'000));
  const std::string version_before = p.result().policy_version;
  ASSERT_TRUE(p.apply_policy_change("00000000000000a1", less, "api:pat")) << p.error();
  EXPECT_NE(policy_version(p.policies()), policy_version(policy::load_policy_set({testing::source_dir() + "/examples/policies"})));
  bool changed = false;
  for (const run::Event& e : p.events()) {
    if (e.kind != "QuotaChanged") continue;
    changed = true;
    EXPECT_EQ(e.object, "GPUQuotaPolicy/ads-training-h100");
    EXPECT_EQ(e.numbers["guaranteed"], 8);
    EXPECT_EQ(e.numbers["previousGuaranteed"], 16);
    EXPECT_EQ(e.numbers["graceSeconds"], 300);
  }
  EXPECT_TRUE(changed);
  for (const Json& g : p.groups_json()) {
    if (g["name"] != "ads") continue;
    for (const Json& pos : g["positions"]) {
      if (pos["pool"] == "h100-rdma-training") { EXPECT_EQ(pos["guaranteed"], 8) << pos.dump(); }
    }
  }
  EXPECT_NE(p.result().policy_version, version_before);
  // A TidalPolicy is what the serving controllers were built from: refused, with the reason.
  std::ifstream tidal(testing::source_dir() + "/examples/policies/30-tidal.yaml");
  std::string tidal_text((std::istreambuf_iterator<char>(tidal)), std::istreambuf_iterator<char>());
  const auto dash = tidal_text.find("\n---");
  if (dash != std::string::npos) tidal_text.resize(dash);
  const std::string tidal_changed = std::regex_replace(tidal_text, std::regex("prewarmBefore: [0-9a-z]+"), "prewarmBefore: 7m");
  ASSERT_NE(tidal_changed, tidal_text) << "the edit must land";
  auto refused = p.apply_policy_change("00000000000000a2", tidal_changed, "api:pat");
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().find("applies at the next start"), std::string::npos) << refused.error();
  while (p.now() < p.end()) ASSERT_TRUE(p.advance_to(std::min(p.end(), p.now() + 60'000)));

  auto replay = Platform::create(policy::load_policy_set({testing::source_dir() + "/examples/policies"}),
                                 journal_day(2, false), cluster_run());
  ASSERT_TRUE(replay) << replay.error();
  Platform& q = **replay;
  q.schedule(journal);
  while (q.now() < q.end()) ASSERT_TRUE(q.advance_to(std::min(q.end(), q.now() + 60'000))) << q.error();
  expect_same_audit(p.audit(), q.audit());
  expect_same_ledger(p.ledger(), q.ledger());
  EXPECT_EQ(q.applied_proposals(), std::vector<std::string>{"00000000000000a1"});
}

}  // namespace
}  // namespace gpubank::twin::live
