#include "api/cluster_server.hpp"

#include <httplib.h>

#include <algorithm>
#include <limits>
#include <set>

#include "api/platform_http.hpp"
#include "api/portal_routes.hpp"
#include "core/timestamp.hpp"
#include "governance/reclaim_approval.hpp"
#include "store/store.hpp"

namespace gpubank::api {

using namespace http;  // NOLINT: the routes' shared vocabulary

namespace {

const std::set<std::string> kWorkloadStates{"Pending", "Running", "Finished", "Deactivated"};

}  // namespace

ClusterServer::ClusterServer(ClusterServerOptions options)
    : options_(std::move(options)), server_(std::make_unique<httplib::Server>()), door_(std::make_unique<Door>()) {
  httplib::Server& svr = *server_;
  harden(svr);
  door_->gate = options_.gate.get();
  if (options_.proxy) {
    door_->proxy = &*options_.proxy;
    auto cluster_policies = options_.cluster_policies;
    door_->current_guardrails = [cluster_policies]() -> std::optional<policy::PlatformGuardrailsSpec> {
      if (!cluster_policies) return std::nullopt;
      const policy::PolicySet set = cluster_policies();
      if (const auto* g = set.guardrails_spec()) return *g;
      return std::nullopt;
    };
  }
  const Door* gate = door_.get();
  svr.Get("/healthz", [](const httplib::Request&, httplib::Response& res) { res.set_content("ok\n", "text/plain"); });
  // The portal's pages with data on a cluster; the others are the twin's (`gpubank up`).
  install_session_routes(svr, options_.gate.get(), door_.get(),
                         Json{{"kind", "controller"},
                              {"pages", Json::array({"overview", "groups", "bank", "governance", "policies", "changes"})},
                              {"preview", options_.preview_inventory != nullptr}});
  install_portal_routes(svr, options_.portal_dir);

  // The whole snapshot reads every Workload; the routes that need only the policies ask
  // for those alone.
  auto snapshot = [this] { return options_.snapshot ? options_.snapshot() : controller::ClusterSnapshot{}; };
  auto policies_now = [this] { return options_.cluster_policies ? options_.cluster_policies() : policy::PolicySet{}; };
  auto positioned = [this, policies_now](httplib::Response& res, bool pools) {
    auto positions = this->positions();
    if (!positions) return send_error(res, 503, "", "ledger.unavailable", "the ledger was not read: " + positions.error());
    const policy::PolicySet policies = policies_now();
    send_json(res, pools ? controller::pools_view(policies, *positions) : controller::groups_view(policies, *positions));
  };
  svr.Get("/api/v1/pools", guard(gate, Need::Read, [positioned](const httplib::Request& req, httplib::Response& res, const auth::Principal&) {
    if (auto e = check_known(req.params, {})) return send_error(res, 400, e->field, e->rule, e->message);
    positioned(res, true);
  }));
  svr.Get("/api/v1/groups", guard(gate, Need::Read, [positioned](const httplib::Request& req, httplib::Response& res, const auth::Principal&) {
    if (auto e = check_known(req.params, {})) return send_error(res, 400, e->field, e->rule, e->message);
    positioned(res, false);
  }));
  svr.Get("/api/v1/queues", guard(gate, Need::Read, [snapshot](const httplib::Request& req, httplib::Response& res, const auth::Principal&) {
    if (auto e = check_known(req.params, {})) return send_error(res, 400, e->field, e->rule, e->message);
    send_json(res, controller::queues_view(snapshot().cluster_queues));
  }));
  // A scoped principal reads its own group's workloads: the filter defaults to its group,
  // and another group is 403 (as on `gpubank up`).
  svr.Get("/api/v1/workloads", guard(gate, Need::Read, [snapshot](const httplib::Request& req, httplib::Response& res, const auth::Principal& who) {
    if (auto e = check_known(req.params, {"businessGroup", "pool", "state"})) return send_error(res, 400, e->field, e->rule, e->message);
    controller::WorkloadQuery q{param(req.params, "businessGroup"), param(req.params, "pool"), param(req.params, "state")};
    if (!q.state.empty() && !kWorkloadStates.contains(q.state)) {
      return send_error(res, 400, "state", "query.invalid-enum", "state must be one of Pending, Running, Finished, Deactivated");
    }
    if (const auto scope = scope_of(who)) {
      if (q.business_group.empty()) q.business_group = *scope;
      if (other_group(res, who, q.business_group, "the workloads")) return;
    }
    send_json(res, controller::workloads_view(snapshot().workloads, q));
  }));
  svr.Get(R"(/api/v1/workloads/([^/]{1,253})/([^/]{1,253}))", guard(gate, Need::Read, [snapshot](const httplib::Request& req, httplib::Response& res, const auth::Principal& who) {
    if (auto e = check_known(req.params, {})) return send_error(res, 400, e->field, e->rule, e->message);
    const std::string key = std::string(req.matches[1]) + "/" + std::string(req.matches[2]);
    for (const controller::ClusterWorkload& w : snapshot().workloads) {
      if (w.key != key) continue;
      if (other_group(res, who, w.group, "the details of a workload")) return;
      return send_json(res, controller::workload_view(w));
    }
    send_error(res, 404, "", "api.not-found", "no workload " + key.substr(0, 300));
  }));
  svr.Get("/api/v1/ledger", guard(gate, Need::Read, [this](const httplib::Request& req, httplib::Response& res, const auth::Principal& who) {
    if (auto e = check_known(req.params, {"after", "limit"})) return send_error(res, 400, e->field, e->rule, e->message);
    std::int64_t after = 0;
    std::int64_t limit = 100;
    if (auto e = read_int(req.params, "after", 0, std::numeric_limits<std::int64_t>::max() / 2, after)) {
      return send_error(res, 400, e->field, e->rule, e->message);
    }
    if (auto e = read_int(req.params, "limit", 1, kMaxLimit, limit)) return send_error(res, 400, e->field, e->rule, e->message);
    Json page{{"items", Json::array()}, {"next", after}, {"more", false}};
    if (store_) {
      std::lock_guard lock(ledger_mu_);
      auto entries = store_->ledger(after, static_cast<std::size_t>(limit) + 1);
      if (!entries) return send_error(res, 503, "", "ledger.unavailable", "the ledger was not read: " + entries.error());
      for (const bank::LedgerEntry& e : *entries) {
        if (static_cast<std::int64_t>(page["items"].size()) == limit) {
          page["more"] = true;
          break;
        }
        Json j = Json(bank::to_json(e));
        j["seq"] = e.seq;
        page["items"].push_back(std::move(j));
        page["next"] = e.seq;
      }
    }
    if (const auto scope = scope_of(who)) scope_ledger(page, *scope);
    send_json(res, page);
  }));

  svr.Get("/api/v1/reclaims", guard(gate, Need::Read, [this, snapshot](const httplib::Request& req, httplib::Response& res, const auth::Principal& who) {
    if (auto e = check_known(req.params, {"limit"})) return send_error(res, 400, e->field, e->rule, e->message);
    std::int64_t limit = 100;
    if (auto e = read_int(req.params, "limit", 1, kMaxLimit, limit)) return send_error(res, 400, e->field, e->rule, e->message);
    auto steps = reclaim_steps();
    if (!steps) return send_error(res, 503, "", "audit.unavailable", "the reclaims were not read: " + steps.error());
    const auto scope = scope_of(who);
    Json all = controller::reclaims_view(*steps, snapshot().workloads,
                                         scope ? std::numeric_limits<std::size_t>::max() : static_cast<std::size_t>(limit));
    if (scope) scope_reclaims(all, *scope, static_cast<std::size_t>(limit));
    send_json(res, Json{{"items", std::move(all)}});
  }));
  // Low-utilisation alerts as `gpubank scan --store` recorded them; a decision is recorded
  // the way `gpubank scan approve` records it, and the controller acts on it.
  svr.Get("/api/v1/governance/alerts", guard(gate, Need::Read, [this, policies_now](const httplib::Request& req, httplib::Response& res, const auth::Principal& who) {
    if (auto e = check_known(req.params, {})) return send_error(res, 400, e->field, e->rule, e->message);
    const policy::PolicySet policies = policies_now();
    Json open = Json::array();
    {
      std::lock_guard lock(ledger_mu_);
      if (store_) {
        if (auto read = governance::refresh(*store_, alerts_); !read) {
          return send_error(res, 503, "", "audit.unavailable", "the alerts were not read: " + read.error());
        }
      }
      for (const auto& [uid, a] : alerts_.open) {
        Json j = governance::to_json(a);
        if (a.state == governance::AlertState::ReclaimCandidate && !a.decision) {
          j["downgradeOptions"] = governance::downgrade_options(a, policies);
        }
        open.push_back(std::move(j));
      }
    }
    // The scans are `gpubank scan`'s (another process): their counts are not known here.
    Json out{{"scannedAt", nullptr}, {"source", "store"}, {"open", std::move(open)}, {"resolved", Json::array()}};
    if (const auto scope = scope_of(who)) scope_alerts(out, *scope);
    send_json(res, out);
  }));
  svr.Post(R"(/api/v1/governance/alerts/([^/]{1,253})/decision)", guard(gate, Need::Read, [this, policies_now](const httplib::Request& req, httplib::Response& res, const auth::Principal& who) {
    const std::string uid = req.matches[1];
    const auto decision = read_decision(req, res, who);
    if (!decision) return;
    if (!store_) return send_error(res, 404, "", "governance.off", "this controller has no store");
    const policy::PolicySet policies = policies_now();
    std::lock_guard lock(ledger_mu_);
    if (auto read = governance::refresh(*store_, alerts_); !read) {
      return send_error(res, 503, "", "audit.unavailable", "the alerts were not read: " + read.error());
    }
    const auto alert = alerts_.open.find(uid);
    // A scoped caller learns nothing of another group's alerts, not even that one is open.
    if (alert == alerts_.open.end() || (scope_of(who) && alert->second.evidence.business_group != *scope_of(who))) {
      return send_error(res, 404, "", "api.not-found", "no open low-utilisation alert for workload " + uid.substr(0, 253));
    }
    governance::DecisionRequest request;
    request.workload_uid = uid;
    request.approve = decision->approve;
    request.user.username = "api:" + who.subject;
    request.reason = decision->reason;
    request.downgrade_to = decision->downgrade_to;
    const std::int64_t now = options_.now_ms ? options_.now_ms() : wall_ms();
    auto t = governance::decide_with_authority(alerts_.open, request, policies, now);
    if (!t) return send_decision_error(res, t.error());
    const std::vector<governance::Transition> transitions{*t};
    if (auto recorded = governance::record(*store_, alerts_, transitions, now); !recorded) {
      return send_error(res, 503, "", "audit.unavailable", "the decision was not recorded: " + recorded.error());
    }
    if (options_.changed) options_.changed();  // the controller reads approvals at its next pass
    const auto after = alerts_.open.find(uid);
    send_json(res, after != alerts_.open.end() ? governance::to_json(after->second) : Json::object());
  }));

  // The portal's pages read times against a clock; on a cluster it is the wall clock, and
  // the ledger's times are Unix ms (so its start is the epoch).
  svr.Get("/api/v1/clock", guard(gate, Need::Read, [this](const httplib::Request& req, httplib::Response& res, const auth::Principal&) {
    if (auto e = check_known(req.params, {})) return send_error(res, 400, e->field, e->rule, e->message);
    const std::int64_t now = options_.now_ms ? options_.now_ms() : wall_ms();
    send_json(res, Json{{"time", format_rfc3339(Timestamp(std::chrono::milliseconds(now)))},
                        {"start", "1970-01-01T00:00:00Z"},
                        {"virtualTimeMs", now},
                        {"paused", false},
                        {"speed", 1},
                        {"finished", false},
                        {"clock", "wall"}});
  }));

  PolicyHost host;
  auto cluster = options_.cluster_policies;
  host.refresh = [cluster](proposals::Desk& desk) {
    if (cluster) desk.rebase(cluster());
  };
  host.effect_field = "cluster";
  auto changed = options_.changed;
  host.take_effect = [changed](const proposals::Proposal&, const auth::Principal&) {
    if (changed) changed();
    return Json{{"state", "queued"},
                {"message", "the controller server-side applies it at its next pass; the proposal shows \"enacted\" "
                            "once the cluster took it"}};
  };
  host.preview_off =
      "no impact preview here: start the controller with --preview-inventory FILE (the cluster's nodes as the twin "
      "models them), or preview the change with gpubank up or gpubank twin preview";
  if (options_.preview_inventory) {
    host.preview_range = [] { return std::optional<PreviewRange>(PreviewRange{24, 168, "the recorded week"}); };
    host.preview_work = [this, snapshot](std::int64_t hours, const policy::PolicySet& in_force) -> Expected<twin::preview::Work> {
      auto recorded = records();
      if (!recorded) return Unexpected{"the recorded work was not read: " + recorded.error()};
      const std::int64_t to = options_.now_ms ? options_.now_ms() : wall_ms();
      const std::int64_t from = to - hours * 3'600'000;
      // The cluster's Workloads not finished yet: running (quota reserved) or pending.
      std::vector<twin::preview::WorkloadRecord> live;
      for (const controller::ClusterWorkload& w : snapshot().workloads) {
        if (w.finished || !w.active || w.gpus_per_pod <= 0) continue;
        // Admitted at an unknown time (no QuotaReserved time): since its creation.
        live.push_back(controller::work_record(w, w.admitted ? std::max<std::int64_t>(w.admitted_at_ms, 1) : 0));
      }
      twin::preview::Work work;
      work.scenario = twin::preview::replay_scenario(*recorded, live, from, to, twin::preview::priority_classes(in_force));
      const std::size_t n = work.scenario->workloads.size();
      work.scenario_name = "the cluster's work of the last " + std::to_string(hours) + " h (" + std::to_string(n) +
                           (n == 1 ? " workload" : " workloads") + ", recorded and on the cluster now)";
      work.inventory = options_.preview_inventory;
      return work;
    };
  }
  install_policy_routes(svr, door_.get(), options_.desk.get(), std::move(host));
}

ClusterServer::~ClusterServer() { stop(); }

Expected<bool> ClusterServer::open() {
  if (options_.store.empty()) return true;
  auto opened = store::Store::open(options_.store);
  if (!opened) return Unexpected{opened.error()};
  store_ = std::move(*opened);
  return true;
}

Expected<std::vector<bank::Position>> ClusterServer::positions() {
  std::lock_guard lock(ledger_mu_);
  if (!store_) return std::vector<bank::Position>{};
  for (;;) {
    auto entries = store_->ledger(ledger_seq_, 10'000);
    if (!entries) return Unexpected{entries.error()};
    if (entries->empty()) break;
    if (auto applied = book_.apply_all(*entries); !applied) {
      // A book that no longer folds (the store was replaced): start again from nothing.
      book_ = bank::LedgerBook{};
      ledger_seq_ = 0;
      return Unexpected{applied.error()};
    }
    ledger_seq_ = entries->back().seq;
  }
  return book_.positions();
}

Expected<bool> ClusterServer::refresh_audit_locked() {
  if (!store_) return true;
  return store::read_audit_after(*store_, audit_seq_, [&](const bank::AuditEntry& e) -> std::optional<std::string> {
    if (controller::is_reclaim_step(e)) reclaim_steps_.push_back(e);
    if (e.action != twin::preview::kWorkloadRecorded) return std::nullopt;
    auto r = twin::preview::record_from_json(nlohmann::json::parse(e.numbers, nullptr, false));
    if (!r) return "workload record at seq " + std::to_string(e.seq) + ": " + r.error();
    records_.push_back(std::move(*r));
    return std::nullopt;
  });
}

Expected<std::vector<twin::preview::WorkloadRecord>> ClusterServer::records() {
  std::lock_guard lock(ledger_mu_);
  if (auto read = refresh_audit_locked(); !read) return Unexpected{read.error()};
  return records_;
}

Expected<std::vector<bank::AuditEntry>> ClusterServer::reclaim_steps() {
  std::lock_guard lock(ledger_mu_);
  if (auto read = refresh_audit_locked(); !read) return Unexpected{read.error()};
  return reclaim_steps_;
}

Expected<int> ClusterServer::bind() { return bind_server(*server_, options_.address, options_.port); }

void ClusterServer::start() {
  thread_ = std::thread([this] { server_->listen_after_bind(); });
}

void ClusterServer::stop() {
  server_->stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace gpubank::api
