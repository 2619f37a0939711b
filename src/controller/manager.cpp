#include "controller/manager.hpp"

#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "bank/audit.hpp"
#include "controller/cluster_ledger.hpp"
#include "controller/desk_enactor.hpp"
#include "controller/metrics.hpp"
#include "controller/policy_watch.hpp"
#include "k8s/apply.hpp"
#include "controller/reclaim.hpp"
#include "controller/reclaim_executor.hpp"
#include "governance/alert_store.hpp"
#include "governance/reclaim_approval.hpp"
#include "k8s/informer.hpp"
#include "policy/types.hpp"
#include "proposals/proposals.hpp"
#include "store/store.hpp"
#include "twin/preview/recorded_work.hpp"

namespace gpubank::controller {
namespace {

using Action = ObjectResult::Action;

std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string audit_action(Action action) {
  switch (action) {
    case Action::Created: return "ObjectCreated";
    case Action::Configured: return "ObjectConfigured";
    case Action::Pruned: return "ObjectPruned";
    case Action::Released: return "ObjectReleased";
    case Action::Failed: return "ObjectApplyFailed";
    case Action::Unchanged:
    case Action::Skipped: break;
  }
  return {};
}

std::string metric_action(Action action) {
  switch (action) {
    case Action::Created: return "created";
    case Action::Configured: return "configured";
    case Action::Pruned: return "pruned";
    case Action::Released: return "released";
    case Action::Failed: return "failed";
    case Action::Unchanged:
    case Action::Skipped: break;
  }
  return {};
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : ",") + s;
  return out;
}

}  // namespace

struct Controller::Impl {
  ControllerOptions options;
  k8s::ClientConfig config;
  std::unique_ptr<k8s::Transport> transport;
  std::unique_ptr<k8s::Transport> desk_transport;  // field manager: options.desk_field_manager
  std::set<std::string> enact_failures_logged;       // "<id>\n<error>" already logged
  k8s::RestMapper mapper;
  std::unique_ptr<k8s::InformerSet> informers;
  std::unique_ptr<k8s::InformerSet> kueue;  // Workloads, ClusterQueues, LocalQueues: graceful reclaim
  std::unique_ptr<k8s::LeaderElector> elector;
  std::unique_ptr<store::Store> store;
  std::unique_ptr<k8s::EventRecorder> recorder;
  std::unique_ptr<ControllerMetrics> metrics;
  // The cluster's ledger (cluster_ledger.hpp), kept by the replica that acts, with a store
  // and the Kueue informers. Dropped (rebuilt from the store at the next pass, under a new
  // writer epoch) when an append fails or leadership changes hands.
  std::optional<ClusterLedger> ledger;
  std::atomic<bool> drop_ledger{false};

  httplib::Server health;
  std::thread health_thread;
  int health_port = -1;

  std::mutex m;
  std::condition_variable cv;
  bool dirty = true;  // the first pass runs as soon as the informers synced
  std::atomic<bool> synced{false};
  std::atomic<bool> alive{false};
  std::atomic<std::size_t> passes{0};
  // Low-utilisation reclaims people approved (governance/reclaim_approval.hpp), read from
  // the store's record: at each pass, and every approval_poll between passes.
  governance::AlertBook alerts;
  std::vector<ApprovedStop> approved;
  std::set<std::string> downgrade_skips_logged;  // "<workload>\n<why>" already logged

  // The finished work recorded for the impact preview (twin/preview/recorded_work.hpp): the
  // ids in the store, read on from recorded_seq at each pass (another leader may have
  // written some).
  std::set<std::string> recorded;
  std::int64_t recorded_seq = 0;

  // The earliest reclaim deadline still running: a pass is due then.
  std::optional<std::chrono::steady_clock::time_point> reclaim_wake;
  // The next lease or tidal boundary: a pass is due then.
  std::optional<std::chrono::steady_clock::time_point> time_wake;

  void log(const std::string& line) const {
    if (options.log) options.log(line);
  }

  void notify() {
    {
      std::lock_guard lock(m);
      dirty = true;
    }
    cv.notify_all();
  }

  [[nodiscard]] bool may_act() const { return !options.leader_elect || (elector && elector->is_leader()); }

  // Kueue's objects as the informers hold them.
  struct KueueObjects {
    std::vector<nlohmann::json> workloads, cluster_queues, local_queues;
  };
  KueueObjects kueue_objects() const {
    KueueObjects out;
    if (!kueue) return out;
    for (nlohmann::json& o : snapshot_objects(*kueue)) {
      const std::string kind = o.value("kind", "");
      (kind == "Workload" ? out.workloads : kind == "ClusterQueue" ? out.cluster_queues : out.local_queues).push_back(std::move(o));
    }
    return out;
  }

  // The desk's applied proposals the cluster has not taken yet, server-side applied in
  // the desk's order and recorded as enacted (desk_enactor.hpp).
  bool desk_has_work() const {
    if (!options.desk) return false;
    auto view = options.desk->view();
    return view && !to_enact(view->proposals).empty();
  }
  void enact_desk() {
    if (!options.desk) return;
    auto view = options.desk->view();
    if (!view) {
      log("policy desk not read: " + view.error());
      return;
    }
    for (const proposals::Proposal* p : to_enact(view->proposals)) {
      const Enactment e = enact(*desk_transport, mapper, *p);
      if (!e.ok) {
        if (enact_failures_logged.insert(e.id + "\n" + e.error).second) {
          log("desk: proposal " + e.id + " (" + e.object + ") not applied to the cluster: " + e.error);
        }
        metrics->object("failed");
        continue;
      }
      auto noted = options.desk->record_enacted(e.id, "gpubank-controller/" + options.identity, e.resource_version, now_ms());
      log("desk: proposal " + e.id + " applied to the cluster as " + e.object + " (resourceVersion " + e.resource_version +
          ")" + (noted ? "" : "; not recorded: " + noted.error()));
    }
  }

  void pass() {
    const auto started = std::chrono::steady_clock::now();
    enact_desk();
    auto done = [&](std::string_view result) {
      const std::chrono::duration<double> took = std::chrono::steady_clock::now() - started;
      metrics->pass_done(result, took.count(), static_cast<double>(now_ms()) / 1000.0);
    };
    const std::vector<nlohmann::json> policies = snapshot_objects(*informers);
    auto live = list_managed(*transport, mapper);
    if (!live) {
      log("pass skipped: listing managed objects: " + live.error().describe());
      done("skipped");
      return;
    }
    const ClusterPolicies cluster = read_cluster_policies(policies);
    const auto wall = std::chrono::system_clock::now();
    const std::int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(wall.time_since_epoch()).count();
    const KueueObjects objects = kueue_objects();
    const bool valid = !has_errors(cluster.set.diagnostics());
    if (valid) {
      std::vector<std::pair<std::string, std::string>> group_pools;
      for (const policy::PolicyObject& p : cluster.set.policies()) {
        if (p.kind != policy::Kind::GPUQuotaPolicy) continue;
        const auto& q = p.as<policy::GPUQuotaPolicySpec>();
        group_pools.emplace_back(q.business_group, q.resource_pool);
      }
      metrics->declare_quotas(group_pools);
    }
    std::vector<ClusterWorkload> workloads;
    std::optional<ReclaimPlan> plan;
    if (kueue && valid) {
      // Read every checkpoint-completed of a job under notice (GETs of the notices' jobs).
      const auto owners = checkpoint_completions(*transport, mapper, objects.workloads);
      workloads = read_workloads(objects.workloads, objects.cluster_queues, objects.local_queues, owners);
      // The ledger first: the time controls read its positions (the tidal admission hold).
      if (store) ledger_pass(cluster.set, workloads, now);
      if (store) record_work(workloads, now);
      // The checkpoint window the reports leave out of waste: each job holding GPUs with a
      // checkpoint notice or completion.
      std::vector<std::pair<std::vector<std::string>, double>> checkpoints;
      for (const ClusterWorkload& w : workloads) {
        if (!w.admitted || !w.active || w.owner_name.empty()) continue;
        const std::int64_t last = std::max(w.checkpoint_requested_ms.value_or(0), w.checkpoint_completed_ms.value_or(0));
        if (last <= 0) continue;
        const std::string ns = w.key.substr(0, w.key.find('/'));
        checkpoints.push_back({{ns, w.owner_kind, w.owner_name}, static_cast<double>(last) / 1000.0});
      }
      metrics->last_checkpoints(checkpoints);
      // The reclaim is planned before the policy pass, which holds the pool's other
      // borrowers while it runs, and carried out after it.
      if (options.graceful_reclaim) {
        if (store) (void)read_approvals();
        plan = plan_reclaims(cluster.set, workloads, now, approved);
      }
    }
    ReconcileOptions reconcile = options.reconcile;
    reconcile.at = Timestamp(std::chrono::time_point_cast<std::chrono::nanoseconds>(wall));
    reconcile.ledger = ledger ? &ledger->book() : nullptr;
    if (plan) reconcile.reclaiming = plan->reclaiming;
    const ReconcileReport report = reconcile_policies(*transport, mapper, cluster, *live, reconcile, rfc3339_seconds(now));
    for (const std::string& line : report.adjustments) log("at this time: " + line);
    time_wake.reset();
    if (report.next_change) {
      // A lease or tidal boundary: run a pass then (a second late rather than early).
      const auto in = std::chrono::duration_cast<std::chrono::milliseconds>(*report.next_change - *reconcile.at);
      time_wake = std::chrono::steady_clock::now() + std::max(in, std::chrono::milliseconds(0)) + std::chrono::seconds(1);
    }
    record(report, policies);
    reclaim_wake.reset();
    if (plan && report.rendered) carry_out(*plan, objects.workloads, now);
    passes.fetch_add(1);
    done(report.rendered ? "rendered" : "invalid");
    log("pass " + std::to_string(passes.load()) + ": " + (report.rendered ? "rendered" : "policy set invalid") + ", " +
        std::to_string(report.count(Action::Created)) + " created, " + std::to_string(report.count(Action::Configured)) +
        " configured, " + std::to_string(report.count(Action::Pruned)) + " pruned, " +
        std::to_string(report.count(Action::Released)) + " released, " + std::to_string(report.count(Action::Unchanged)) +
        " unchanged, " + std::to_string(report.failures()) + " failed");
  }

  bool watches_approvals() const { return store && kueue && options.graceful_reclaim; }

  // Reads the decisions recorded since the last read; true when the approved set changed.
  bool read_approvals() {
    if (auto read = governance::refresh(*store, alerts); !read) {
      log("approved reclaims not read: " + read.error());
      return false;
    }
    std::vector<ApprovedStop> now;
    for (const governance::ApprovedReclaim& a : governance::approved_reclaims(alerts)) {
      now.push_back({a.workload_uid, a.alert_id, a.approver, a.downgrade_to});
    }
    const bool changed = now.size() != approved.size() ||
                         !std::equal(now.begin(), now.end(), approved.begin(), [](const auto& x, const auto& y) {
                           return x.owner_uid == y.owner_uid && x.alert_id == y.alert_id;
                         });
    approved = std::move(now);
    return changed;
  }

  // The ledger from the admitted Workloads (cluster_ledger.hpp): resumed from the store
  // under a writer epoch of its own (which fences any other producer), then one append
  // per pass with what changed.
  void ledger_pass(const policy::PolicySet& set, const std::vector<ClusterWorkload>& workloads, std::int64_t now) {
    if (drop_ledger.exchange(false) && ledger) {
      ledger.reset();
      metrics->ledger_dropped();
    }
    if (!ledger) {
      auto epoch = store->acquire_writer("gpubank-controller/" + options.identity);
      if (!epoch) {
        log("ledger not kept: " + epoch.error());
        metrics->ledger_append_failed();
        return;
      }
      auto book = store::load_book(*store);
      if (!book) {
        log("ledger not kept: reading the store: " + book.error());
        metrics->ledger_append_failed();
        return;
      }
      log("keeping the ledger as writer epoch " + std::to_string(*epoch) + " (" + std::to_string(book->size()) +
          " entries stored)");
      ledger = ClusterLedger::resume(std::move(*book), std::to_string(*epoch) + "-");
      metrics->ledger_appended({}, ledger->book());
    }
    const std::vector<GroupQuota> quotas =
        group_quotas(set, Timestamp(std::chrono::duration_cast<Timestamp::duration>(std::chrono::milliseconds(now))));
    LedgerPass pass = ledger->observe(quotas, workloads, now);
    for (const std::string& s : pass.skipped) log("ledger: left out " + s);
    std::vector<bank::LedgerEntry> stored;
    for (std::size_t i = 0; i < pass.entries.size(); i += store::kMaxBatch) {
      const std::size_t n = std::min(store::kMaxBatch, pass.entries.size() - i);
      auto appended = store->append(std::span(pass.entries).subspan(i, n), {});
      if (!appended) {
        // Batches before this one are stored: rebuilding from the store picks them up.
        log("ledger entries not stored: " + appended.error());
        metrics->ledger_append_failed();
        ledger.reset();
        metrics->ledger_dropped();
        return;
      }
      stored.insert(stored.end(), appended->ledger.begin(), appended->ledger.end());
    }
    if (auto committed = ledger->commit(std::move(pass), stored); !committed) {
      log("ledger: the stored entries do not fold (" + committed.error() + "); rebuilding from the store");
      ledger.reset();
      metrics->ledger_dropped();
      return;
    }
    if (!stored.empty()) metrics->ledger_appended(stored, ledger->book());
  }

  // One WorkloadRecorded audit entry per Workload that finished after holding quota, once.
  // Its start: QuotaReserved's time, else the ledger's UsageStarted (Kueue may have
  // cleared the condition), else nothing is recorded.
  void record_work(const std::vector<ClusterWorkload>& workloads, std::int64_t now) {
    std::vector<twin::preview::WorkloadRecord> stored;
    if (auto read = twin::preview::read_records(*store, recorded_seq, stored); !read) {
      log("finished work not recorded: reading the store: " + read.error());
      return;
    }
    for (const auto& r : stored) recorded.insert(r.id());
    std::vector<bank::AuditEntry> entries;
    std::vector<std::string> ids;
    for (const ClusterWorkload& w : workloads) {
      if (!w.finished || w.finished_ms == 0 || w.gpus_per_pod <= 0) continue;
      std::int64_t started = w.quota_reserved_ms;
      if (started == 0 && ledger) {
        for (const bank::LedgerEntry& e : ledger->book().trail(w.key)) {
          if (e.kind == bank::LedgerKind::UsageStarted) started = e.time_ms;
        }
      }
      if (started == 0) continue;
      const twin::preview::WorkloadRecord r = work_record(w, started);
      if (recorded.contains(r.id())) continue;
      entries.push_back(twin::preview::audit_entry(r, "gpubank-controller/" + options.identity, now));
      ids.push_back(r.id());
    }
    if (entries.empty()) return;
    if (auto appended = store::append_in_batches(*store, {}, entries); !appended) {
      log("finished work not recorded: " + appended.error());
      return;  // read again at the next pass: what was stored is found there
    }
    recorded.insert(ids.begin(), ids.end());
  }

  // Graceful reclaim (reclaim.hpp): carry out the plan, record each step as an Event on
  // the Workload and an audit entry.
  void carry_out(const ReclaimPlan& plan, const std::vector<nlohmann::json>& workloads, std::int64_t now) {
    if (plan.next_deadline_ms) {
      reclaim_wake = std::chrono::steady_clock::now() + std::chrono::milliseconds(std::max<std::int64_t>(0, *plan.next_deadline_ms - now));
    }
    for (const auto& [where, gpus] : plan.uncovered) {
      log("reclaim: " + where + " needs " + std::to_string(gpus) + " more GPUs than eligible victims hold");
    }
    for (const auto& [workload, why] : plan.downgrades_skipped) {
      // Once per workload and reason: the plan says it again at every pass.
      if (downgrade_skips_logged.insert(workload + "\n" + why).second) log("downgrade of " + workload + " not done: " + why);
    }
    if (plan.steps.empty()) return;
    std::map<std::string, nlohmann::json> by_key;
    for (const nlohmann::json& w : workloads) {
      by_key[w["metadata"].value("namespace", "") + "/" + w["metadata"].value("name", "")] = w;
    }
    std::vector<bank::AuditEntry> entries;
    for (const ReclaimOutcome& o : execute_reclaims(*transport, mapper, plan, by_key, now)) {
      const ReclaimStep& step = o.step;
      const std::string reason = step.kind == ReclaimStep::Kind::Notice  ? "ReclaimNoticeSent"
                                 : step.kind == ReclaimStep::Kind::Stop  ? "ReclaimVictimStopped"
                                 : step.kind == ReclaimStep::Kind::Resume ? "Resumed"
                                 : step.kind == ReclaimStep::Kind::Downgrade ? "WorkloadDowngraded"
                                                                          : "ReclaimCancelled";
      // A note (done in part, such as a downgrade of spec.priority alone) is said in the
      // log, the Event and the audit entry; the step is done all the same.
      const std::string note = o.error.empty() && !o.note.empty() ? "; " + o.note : "";
      log("reclaim: " + reason + " " + step.workload + (o.error.empty() ? note : " FAILED: " + o.error));
      metrics->reclaim_step(step_name(step.kind), o.error.empty() ? step.reason : "Failed");
      if (step.kind == ReclaimStep::Kind::Stop && o.error.empty() && step.recompute_loss_gpu_ms) {
        metrics->recompute_loss(step.victim_group, step.pool, *step.recompute_loss_gpu_ms);
      }
      const auto w = by_key.find(step.workload);
      if (w != by_key.end() && o.error.empty()) {
        k8s::EventSpec event;
        event.regarding = {w->second.value("apiVersion", ""), "Workload", w->second["metadata"].value("namespace", ""),
                           w->second["metadata"].value("name", ""), w->second["metadata"].value("uid", "")};
        event.type = step.kind == ReclaimStep::Kind::Stop ? "Warning" : "Normal";
        event.reason = reason;
        event.action = std::string(step_name(step.kind));
        event.note = step.message + note + " [" + step.reason + "]";
        if (auto sent = recorder->emit(*transport, event); !sent) log("event not recorded: " + sent.error().describe());
      }
      if (!store) continue;
      bank::AuditEntry e;
      e.time_ms = now;
      e.actor = "gpubank-controller/" + options.identity;
      e.action = reason;
      e.object = ("Workload/" + step.workload).substr(0, bank::kMaxAuditFieldLength);
      e.decision = o.error.empty() ? step.reason : "Failed";
      e.reason = (o.error.empty() ? step.message + note : step.message + "; failed: " + o.error).substr(0, bank::kMaxAuditReasonLength);
      nlohmann::json numbers{{"gpus", step.gpus}, {"lender", step.lender}, {"pool", step.pool},
                             {"deadlineMs", step.deadline_ms}};
      if (step.kind == ReclaimStep::Kind::Stop && step.recompute_loss_gpu_ms) {
        numbers["recomputeLossGpuHours"] = static_cast<double>(*step.recompute_loss_gpu_ms) / 3.6e6;
      }
      if (step.kind == ReclaimStep::Kind::Downgrade) {
        numbers["priorityClass"] = step.priority_class;
        numbers["priority"] = step.priority;
      }
      e.numbers = numbers.dump();
      entries.push_back(std::move(e));
    }
    if (!entries.empty()) {
      if (auto appended = store::append_in_batches(*store, {}, entries); !appended) {
        log("audit entries not stored: " + appended.error());
      }
    }
  }

  // Events on the resources whose status changed; audit entries for the objects changed.
  void record(const ReconcileReport& report, const std::vector<nlohmann::json>& policies) {
    std::map<std::string, const nlohmann::json*> by_key;
    for (const nlohmann::json& p : policies) {
      by_key.emplace(p.value("kind", "") + "/" + p["metadata"].value("name", ""), &p);
    }
    for (const PolicyResult& p : report.policies) {
      if (!p.status_written) continue;
      const auto it = by_key.find(p.resource);
      if (it == by_key.end()) continue;
      // The condition that says most: the first False one, else Applied.
      const Condition* shown = nullptr;
      for (const Condition& c : p.conditions) {
        if (!c.status && shown == nullptr) shown = &c;
      }
      if (shown == nullptr && !p.conditions.empty()) shown = &p.conditions.back();
      if (shown == nullptr) continue;
      const nlohmann::json& object = *it->second;
      k8s::EventSpec event;
      event.regarding = {object.value("apiVersion", ""), object.value("kind", ""), "",
                         object["metadata"].value("name", ""), object["metadata"].value("uid", "")};
      event.type = shown->status ? "Normal" : "Warning";
      event.reason = shown->reason;
      event.action = "Reconcile";
      event.note = shown->type + ": " + shown->message;
      if (auto sent = recorder->emit(*transport, event); !sent) log("event not recorded: " + sent.error().describe());
    }
    for (const ObjectResult& r : report.objects) {
      if (const std::string name = metric_action(r.action); !name.empty()) metrics->object(name);
    }
    if (!store) return;
    std::vector<bank::AuditEntry> entries;
    const std::int64_t time = now_ms();
    for (const ObjectResult& r : report.objects) {
      const std::string action = audit_action(r.action);
      if (action.empty()) continue;
      bank::AuditEntry e;
      e.time_ms = time;
      e.actor = "gpubank-controller/" + options.identity;
      e.action = action;
      e.object = r.object.substr(0, bank::kMaxAuditFieldLength);
      e.policy_version = join(r.sources).substr(0, bank::kMaxAuditFieldLength);
      e.decision = std::string(action_name(r.action, false));
      e.reason = (r.message.empty() ? std::string("server-side apply by ") + options.reconcile.plan.field_manager : r.message)
                     .substr(0, bank::kMaxAuditReasonLength);
      e.numbers = "{}";
      entries.push_back(std::move(e));
    }
    if (entries.empty()) return;
    if (auto appended = store::append_in_batches(*store, {}, entries); !appended) {
      log("audit entries not stored: " + appended.error());
    }
  }
};

Controller::Controller(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Controller::~Controller() {
  if (impl_->health_thread.joinable()) {
    impl_->health.stop();
    impl_->health_thread.join();
  }
  if (impl_->informers) impl_->informers->stop();
  if (impl_->kueue) impl_->kueue->stop();
}

Expected<std::unique_ptr<Controller>> Controller::create(k8s::ClientConfig config, ControllerOptions options) {
  auto impl = std::make_unique<Impl>();
  impl->options = std::move(options);
  impl->config = config;
  k8s::TransportOptions transport_options;
  transport_options.field_manager = impl->options.reconcile.plan.field_manager;
  auto transport = k8s::Transport::create(config, transport_options);
  if (!transport) return Unexpected{transport.error()};
  impl->transport = std::move(*transport);
  if (impl->options.desk) {
    k8s::TransportOptions desk_options;
    desk_options.field_manager = impl->options.desk_field_manager;
    auto desk_transport = k8s::Transport::create(config, desk_options);
    if (!desk_transport) return Unexpected{desk_transport.error()};
    impl->desk_transport = std::move(*desk_transport);
  }
  auto mapper = k8s::discover(*impl->transport);
  if (!mapper) return Unexpected{"discovery: " + mapper.error().describe()};
  impl->mapper = std::move(*mapper);
  auto informers = k8s::InformerSet::create(config, impl->mapper, policy_kinds(),
                                            k8s::InformerOptions{.on_state_change = [raw = impl.get()] { raw->notify(); }});
  if (!informers) {
    return Unexpected{informers.error() + " (install the CRDs first: kubectl apply --server-side -k deploy/crds)"};
  }
  impl->informers = std::move(*informers);
  for (const auto& [kind, informer] : impl->informers->informers()) {
    informer->add_handler([raw = impl.get()](k8s::EventType, const k8s::ObjectPtr&, const k8s::ObjectPtr&) { raw->notify(); });
  }
  // Graceful reclaim and the ledger need Kueue's kinds (the Kueue backend, Kueue installed).
  if (impl->options.reconcile.backend == render::Backend::Kueue) {
    const std::vector<k8s::InformedKind> kinds{{"kueue.x-k8s.io/v1beta2", "Workload"},
                                               {"kueue.x-k8s.io/v1beta2", "ClusterQueue"},
                                               {"kueue.x-k8s.io/v1beta2", "LocalQueue"}};
    bool installed = true;
    for (const auto& k : kinds) installed = installed && impl->mapper.find(k.api_version, k.kind).ok();
    if (installed) {
      auto kueue = k8s::InformerSet::create(config, impl->mapper, kinds,
                                            k8s::InformerOptions{.on_state_change = [raw = impl.get()] { raw->notify(); }});
      if (!kueue) return Unexpected{"Kueue informers: " + kueue.error()};
      impl->kueue = std::move(*kueue);
      for (const auto& [kind, informer] : impl->kueue->informers()) {
        informer->add_handler([raw = impl.get()](k8s::EventType, const k8s::ObjectPtr&, const k8s::ObjectPtr&) { raw->notify(); });
      }
    } else {
      impl->log("graceful reclaim and the ledger off: Kueue's Workload, ClusterQueue or LocalQueue kind is not in discovery");
    }
  }
  auto metrics = ControllerMetrics::create();
  if (!metrics) return Unexpected{metrics.error()};
  impl->metrics = std::move(*metrics);
  impl->metrics->set_leader(!impl->options.leader_elect);
  impl->recorder = std::make_unique<k8s::EventRecorder>(impl->options.identity, [] { return std::chrono::system_clock::now(); });
  if (impl->options.leader_elect) {
    k8s::LeaderElectionOptions election = impl->options.election;
    election.identity = impl->options.identity;
    if (election.namespace_name.empty()) election.namespace_name = config.namespace_name;
    Impl* raw = impl.get();
    k8s::LeaderCallbacks callbacks;
    callbacks.on_started_leading = [raw] {
      raw->log("leading (lease " + raw->options.election.name + ")");
      raw->drop_ledger = true;  // resume from the store: the last leader may have appended since
      raw->metrics->set_leader(true);
      raw->notify();
    };
    callbacks.on_stopped_leading = [raw] {
      raw->log("stopped leading");
      raw->drop_ledger = true;
      raw->metrics->set_leader(false);
    };
    callbacks.on_new_leader = [raw](const std::string& holder) {
      raw->log(holder.empty() ? "the lease was released" : "leader is " + holder);
    };
    auto elector = k8s::LeaderElector::create(config, election, callbacks);
    if (!elector) return Unexpected{"leader election: " + elector.error()};
    impl->elector = std::move(*elector);
  }
  if (!impl->options.store.empty()) {
    auto store = store::Store::open(impl->options.store);
    if (!store) return Unexpected{"--store: " + store.error()};
    impl->store = std::move(*store);
  }
  if (impl->options.health_port >= 0) {
    Impl* raw = impl.get();
    impl->health.Get("/healthz", [raw](const httplib::Request&, httplib::Response& res) {
      res.status = raw->alive ? 200 : 503;
      res.set_content(raw->alive ? "ok\n" : "not running\n", "text/plain");
    });
    impl->health.Get("/readyz", [raw](const httplib::Request&, httplib::Response& res) {
      res.status = raw->synced ? 200 : 503;
      res.set_content(raw->synced ? "ok\n" : "informers not synced\n", "text/plain");
    });
    impl->health.Get("/metrics", [raw](const httplib::Request&, httplib::Response& res) {
      res.set_content(raw->metrics->text(), "text/plain; version=0.0.4; charset=utf-8");
    });
    const int port = impl->options.health_port == 0
                         ? impl->health.bind_to_any_port(impl->options.health_address)
                         : (impl->health.bind_to_port(impl->options.health_address, impl->options.health_port)
                                ? impl->options.health_port
                                : -1);
    if (port < 0) {
      return Unexpected{"--health-port: cannot listen on " + impl->options.health_address + ":" +
                        std::to_string(impl->options.health_port)};
    }
    impl->health_port = port;
    impl->health_thread = std::thread([raw] { raw->health.listen_after_bind(); });
  }
  return std::unique_ptr<Controller>(new Controller(std::move(impl)));
}

Expected<bool> Controller::run(std::stop_token stop) {
  Impl& im = *impl_;
  im.alive = true;
  std::stop_callback wake(stop, [&im] { im.cv.notify_all(); });
  im.informers->start();
  if (im.kueue) im.kueue->start();
  std::jthread election;
  auto finish = [&](Expected<bool> result) {
    if (election.joinable()) {
      election.request_stop();
      election.join();
    }
    im.informers->stop();
    if (im.kueue) im.kueue->stop();
    im.alive = false;
    return result;
  };
  for (;;) {
    auto synced = im.informers->wait_for_sync(std::chrono::seconds(1));
    if (synced && im.kueue) synced = im.kueue->wait_for_sync(std::chrono::seconds(1));
    if (synced) break;
    if (stop.stop_requested()) return finish(true);
    if (synced.error().reason != "Timeout") return finish(Unexpected{"informers: " + synced.error().describe()});
  }
  im.synced = true;
  im.metrics->set_synced(true);
  im.log("informers synced");
  if (im.elector) {
    election = std::jthread([&im](std::stop_token s) { im.elector->run(s); });
  }
  auto next_resync = std::chrono::steady_clock::now() + im.options.resync_period;
  auto next_approval_read = std::chrono::steady_clock::now() + im.options.approval_poll;
  while (!stop.stop_requested()) {
    {
      std::unique_lock lock(im.m);
      auto due = next_resync;
      for (const auto& at : {im.reclaim_wake, im.time_wake}) {
        if (at) due = std::min(due, *at);
      }
      if (im.watches_approvals() || im.options.desk) due = std::min(due, next_approval_read);
      im.cv.wait_until(lock, due, [&] { return stop.stop_requested() || im.dirty; });
    }
    if (stop.stop_requested()) break;
    // An approval is an entry in the store, not a change the informers see: read the new
    // ones, and run a pass only when the approved set changed (or something else is due).
    const auto woke = std::chrono::steady_clock::now();
    if ((im.watches_approvals() || im.options.desk) && woke >= next_approval_read) {
      next_approval_read = woke + im.options.approval_poll;
      const bool approvals = im.watches_approvals() && im.may_act() && im.read_approvals();
      if (approvals || (im.may_act() && im.desk_has_work())) {
        std::lock_guard lock(im.m);
        im.dirty = true;
      }
    }
    {
      std::lock_guard lock(im.m);
      const auto reached = [&](const auto& at) { return at && woke >= *at; };
      if (!im.dirty && woke < next_resync && !reached(im.reclaim_wake) && !reached(im.time_wake)) continue;
    }
    auto dead = im.informers->errors();
    if (im.kueue) {
      auto more = im.kueue->errors();
      dead.insert(dead.end(), more.begin(), more.end());
    }
    if (!dead.empty()) {
      return finish(Unexpected{"informer for " + dead.front().first.kind + " stopped: " + dead.front().second.describe()});
    }
    if (!im.may_act()) {
      std::lock_guard lock(im.m);
      im.dirty = false;  // the leader handles it; a takeover starts with a pass (on_started_leading)
      next_resync = std::chrono::steady_clock::now() + im.options.resync_period;
      continue;
    }
    // Coalesce a burst: wait the debounce once, then take everything that arrived.
    {
      std::unique_lock lock(im.m);
      im.cv.wait_for(lock, im.options.debounce, [&] { return stop.stop_requested(); });
      im.dirty = false;
    }
    if (stop.stop_requested()) break;
    im.pass();
    next_resync = std::chrono::steady_clock::now() + im.options.resync_period;
  }
  return finish(true);
}

int Controller::health_port() const { return impl_->health_port; }
std::size_t Controller::passes() const { return impl_->passes.load(); }
bool Controller::leading() const { return impl_->may_act(); }

policy::PolicySet Controller::cluster_policies() const {
  if (!impl_->synced) return {};
  return read_cluster_policies(snapshot_objects(*impl_->informers)).set;
}

ClusterSnapshot Controller::snapshot() const {
  ClusterSnapshot out;
  if (!impl_->synced) return out;
  out.policies = read_cluster_policies(snapshot_objects(*impl_->informers)).set;
  if (impl_->kueue) {
    out.kueue = true;
    const Impl::KueueObjects objects = impl_->kueue_objects();
    out.workloads = read_workloads(objects.workloads, objects.cluster_queues, objects.local_queues);
    out.cluster_queues = objects.cluster_queues;
  }
  return out;
}

void Controller::wake() { impl_->notify(); }

}  // namespace gpubank::controller
