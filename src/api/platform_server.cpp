#include "api/platform_server.hpp"

#include <httplib.h>

#include <chrono>
#include <cmath>
#include <set>

#include "api/access.hpp"
#include "api/platform_http.hpp"
#include "api/portal_routes.hpp"
#include "core/duration.hpp"
#include "core/escape.hpp"
#include "core/timestamp.hpp"
#include "governance/alerts.hpp"
#include "governance/reclaim_approval.hpp"

namespace gpubank::api {

using namespace http;  // NOLINT: the routes' shared vocabulary

namespace {

// The notable events of the timeline, one readable line each.
bool notable(const std::string& kind) {
  static const std::set<std::string> kinds{"Admitted", "Preempted", "BorrowStarted", "BorrowEnded", "ReclaimStarted",
                                           "ReclaimNoticeSent", "CheckpointCompleted", "CheckpointFailed",
                                           "ReclaimVictimStopped", "ReclaimCompleted", "ReclaimCancelled",
                                           "ReclaimBlocked", "Resumed", "LeaseApproved", "LeaseRejected",
                                           "LeaseActivated", "LeaseExpired", "Deleted", "Evicted", "Deactivated"};
  return kinds.contains(kind);
}

}  // namespace

QueryResult<twin::live::Page> parse_page(const Params& params) {
  twin::live::Page page;
  if (auto e = read_int(params, "after", 0, std::numeric_limits<std::int32_t>::max(), page.after)) return *e;
  if (auto e = read_int(params, "limit", 1, kMaxLimit, page.limit)) return *e;
  return page;
}

QueryResult<twin::live::EventFilter> parse_event_filter(const Params& params) {
  if (auto e = check_known(params, {"kind", "businessGroup", "pool", "object", "after", "limit"})) return *e;
  auto page = parse_page(params);
  if (auto* e = std::get_if<QueryError>(&page)) return *e;
  twin::live::EventFilter f;
  f.page = std::get<twin::live::Page>(page);
  f.kind = param(params, "kind");
  f.business_group = param(params, "businessGroup");
  f.pool = param(params, "pool");
  f.object = param(params, "object");
  return f;
}

QueryResult<GovernanceQuery> parse_governance_query(const Params& params,
                                                    std::initializer_list<std::string_view> known) {
  if (auto e = check_known(params, known)) return *e;
  GovernanceQuery q;
  for (const char* key : {"from", "to"}) {
    const auto it = params.find(key);
    if (it == params.end()) continue;
    const auto t = parse_rfc3339(it->second);
    if (!t) {
      return QueryError{key, "query.invalid-time",
                        std::string(key) + " must be an RFC 3339 time (2026-11-30T16:00:00Z), got \"" +
                            escape_text(it->second.substr(0, 40)) + "\""};
    }
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t->time_since_epoch()).count();
    if (ms < 0) return QueryError{key, "query.out-of-range", std::string(key) + " must not be before 1970"};
    (std::string_view(key) == "from" ? q.from_ms : q.to_ms) = ms;
  }
  if (q.from_ms && q.to_ms && *q.to_ms <= *q.from_ms) {
    return QueryError{"to", "query.empty-period", "to must be after from"};
  }
  if (const auto it = params.find("level"); it != params.end()) {
    const auto level = governance::showback_level(it->second);
    if (!level) {
      return QueryError{"level", "query.invalid-enum",
                        "level must be one of group, owner, workload, got \"" + escape_text(it->second.substr(0, 32)) +
                            "\""};
    }
    q.level = *level;
  }
  if (const auto it = params.find("minGpuHours"); it != params.end()) {
    const std::string& v = it->second;
    double value = -1;
    std::size_t used = 0;
    try {
      value = std::stod(v, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (v.empty() || used != v.size() || !std::isfinite(value) || value < 0 || value > 1e6) {
      return QueryError{"minGpuHours", "query.out-of-range",
                        "minGpuHours must be a number from 0 to 1000000, got \"" + escape_text(v.substr(0, 32)) + "\""};
    }
    q.min_gpu_hours = value;
  }
  return q;
}

QueryResult<twin::live::WorkloadFilter> parse_workload_filter(const Params& params) {
  if (auto e = check_known(params, {"businessGroup", "pool", "state"})) return *e;
  twin::live::WorkloadFilter f;
  f.business_group = param(params, "businessGroup");
  f.pool = param(params, "pool");
  f.state = param(params, "state");
  // Every state twin::run::WorkloadOutcome::state takes (Deactivated: waitForPodsReady's
  // requeuing limit was reached).
  static const std::set<std::string> states{"Waiting",   "Pending",   "Placing",  "Starting",   "Running",
                                             "Checkpointing", "Requeuing", "Finished", "Deactivated", "Deleted"};
  if (!f.state.empty() && !states.contains(f.state)) {
    return QueryError{"state", "query.invalid-enum",
                      "state must be one of Waiting, Pending, Placing, Starting, Running, Checkpointing, Requeuing, "
                      "Finished, Deactivated, Deleted, got \"" + escape_text(f.state.substr(0, 32)) + "\""};
  }
  return f;
}

PlatformServer::PlatformServer(std::unique_ptr<twin::live::Platform> platform, PlatformServerOptions options,
                               std::function<void(const std::string&)> timeline,
                               std::function<void(const twin::live::Platform&)> after_advance)
    : platform_(std::move(platform)),
      options_(std::move(options)),
      timeline_(std::move(timeline)),
      after_advance_(std::move(after_advance)),
      server_(std::make_unique<httplib::Server>()),
      door_(std::make_unique<http::Door>()),
      paused_(options_.paused),
      speed_(options_.speed) {
  timeline_seen_ = platform_->events().size();
  install_routes();
}

PlatformServer::~PlatformServer() {
  stop();
  if (clock_.joinable()) clock_.join();
}

void PlatformServer::with_platform(const std::function<void(twin::live::Platform&)>& f) {
  std::lock_guard lock(mu_);
  f(*platform_);
}

Expected<int> PlatformServer::bind() { return bind_server(*server_, options_.address, options_.port); }

bool PlatformServer::serve() {
  // The clock starts once the server listens: a day that ends at once may stop the
  // server from the clock thread, and a stop before listening would be lost.
  clock_ = std::thread([this] {
    while (!server_->is_running()) {
      {
        std::lock_guard lock(mu_);
        if (stopping_) return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ready_ = true;
    clock_loop();
  });
  const bool ok = server_->listen_after_bind();
  stop();
  if (clock_.joinable()) clock_.join();
  return ok;
}

void PlatformServer::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  server_->stop();
}

void PlatformServer::advance_locked(twin::VirtualTime target) {
  platform_->advance_to(target);
  // Only events whose instant the store committed (a failed append hides its instant's).
  const auto events = platform_->events();
  if (timeline_) {
    for (; timeline_seen_ < events.size(); ++timeline_seen_) {
      const auto& e = events[timeline_seen_];
      if (!notable(e.kind)) continue;
      const std::string when = format_rfc3339(platform_->start() + std::chrono::milliseconds(e.t));
      std::string where;
      if (!e.business_group.empty()) where = e.business_group + (e.pool.empty() ? "" : "@" + e.pool);
      timeline_(when + "  " + e.kind + "  " + e.object + (where.empty() ? "" : "  [" + where + "]") + "  " + e.message);
    }
  } else {
    timeline_seen_ = events.size();
  }
  if (after_advance_) after_advance_(*platform_);
}

void PlatformServer::clock_loop() {
  using Clock = std::chrono::steady_clock;
  auto last = Clock::now();
  std::unique_lock lock(mu_);
  if (after_advance_) after_advance_(*platform_);  // a resumed day may be over already
  while (!stopping_) {
    const auto now = Clock::now();
    const double wall_ms = std::chrono::duration<double, std::milli>(now - last).count();
    last = now;
    if (!paused_ && platform_->now() < platform_->end()) {
      if (speed_ <= 0) {
        // As fast as possible, a few instants at a time so requests get the lock in between.
        const auto slice_end = Clock::now() + std::chrono::milliseconds(20);
        while (Clock::now() < slice_end && platform_->now() < platform_->end()) {
          advance_locked(std::min(platform_->end(), platform_->now() + 60'000));
        }
        lock.unlock();
        std::this_thread::yield();
        lock.lock();
        continue;
      }
      const auto step = static_cast<twin::VirtualTime>(std::llround(wall_ms * speed_));
      if (step > 0) advance_locked(platform_->now() + step);
    }
    wake_.wait_for(lock, std::chrono::milliseconds(50), [this] { return stopping_; });
  }
}

void PlatformServer::install_routes() {
  auto& svr = *server_;
  harden(svr);

  svr.Get("/healthz", [this](const httplib::Request&, httplib::Response& res) {
    std::lock_guard lock(mu_);
    const std::string error = platform_->error();
    if (error.empty()) {
      res.set_content("ok\n", "text/plain");
    } else {
      res.status = 500;
      res.set_content("the run stopped: " + error + "\n", "text/plain");
    }
  });
  svr.Get("/readyz", [this](const httplib::Request&, httplib::Response& res) {
    res.status = ready_ ? 200 : 503;
    res.set_content(ready_ ? "ok\n" : "starting\n", "text/plain");
  });
  door_->gate = options_.gate.get();
  if (options_.proxy) door_->proxy = &*options_.proxy;
  {
    std::lock_guard lock(mu_);
    if (const auto* g = platform_->policies().guardrails_spec()) guardrails_ = *g;
  }
  if (guardrails_) door_->guardrails = &*guardrails_;
  const Door* gate = door_.get();
  svr.Get("/metrics", guard(gate, Need::Metrics, [this](const httplib::Request&, httplib::Response& res, const auth::Principal&) {
    std::lock_guard lock(mu_);
    auto text = platform_->metrics_text();
    if (!text) {
      res.status = 500;
      res.set_content("metrics: " + text.error() + "\n", "text/plain");
      return;
    }
    res.set_content(*text, "text/plain; version=0.0.4; charset=utf-8");
  }));

  // Read-only views with no parameters.
  auto plain = [this, gate](const char* path, Json (twin::live::Platform::*view)() const) {
    server_->Get(path, guard(gate, Need::Read, [this, view](const httplib::Request& req, httplib::Response& res, const auth::Principal&) {
      if (auto e = check_known(req.params, {})) return send_error(res, 400, e->field, e->rule, e->message);
      std::lock_guard lock(mu_);
      send_json(res, ((*platform_).*view)());
    }));
  };
  plain("/api/v1/pools", &twin::live::Platform::pools_json);
  plain("/api/v1/groups", &twin::live::Platform::groups_json);
  plain("/api/v1/queues", &twin::live::Platform::queues_json);
  plain("/api/v1/services", &twin::live::Platform::services_json);
  plain("/api/v1/summary", &twin::live::Platform::summary_json);

  svr.Get("/api/v1/clock", guard(gate, Need::Read, [this](const httplib::Request& req, httplib::Response& res, const auth::Principal&) {
    if (auto e = check_known(req.params, {})) return send_error(res, 400, e->field, e->rule, e->message);
    std::lock_guard lock(mu_);
    Json j = platform_->clock_json();
    j["paused"] = paused_;
    j["speed"] = speed_ <= 0 ? Json("max") : Json(speed_);
    send_json(res, j);
  }));
  svr.Post("/api/v1/clock", guard(gate, Need::Operate, [this](const httplib::Request& req, httplib::Response& res, const auth::Principal&) {
    const auto body = nlohmann::json::parse(req.body, nullptr, false);
    if (body.is_discarded() || !body.is_object()) {
      return send_error(res, 400, "", "request.invalid-json", "the body must be a JSON object");
    }
    for (const auto& [key, value] : body.items()) {
      if (key != "action" && key != "step" && key != "speed") {
        return send_error(res, 400, key, "request.unknown-field",
                          "unknown field \"" + key.substr(0, 64) + "\"; known: action, step, speed");
      }
    }
    std::string action;
    if (body.contains("action")) {
      if (!body["action"].is_string()) return send_error(res, 400, "action", "request.wrong-type", "action must be a string");
      action = body["action"].get<std::string>();
      if (action != "pause" && action != "resume" && action != "step") {
        return send_error(res, 400, "action", "request.invalid-enum",
                          "action must be one of pause, resume, step, got \"" + action.substr(0, 32) + "\"");
      }
    }
    std::optional<twin::VirtualTime> step;
    if (body.contains("step")) {
      if (action != "step") return send_error(res, 400, "step", "request.invalid-combination", "step needs action: step");
      if (!body["step"].is_string()) {
        return send_error(res, 400, "step", "request.wrong-type", "step must be a duration string such as \"10m\"");
      }
      auto d = Duration::parse(body["step"].get<std::string>());
      if (!d || d->milliseconds() <= 0 || d->milliseconds() > 7LL * 24 * 3'600'000) {
        return send_error(res, 400, "step", "request.out-of-range",
                          "step must be a positive duration of at most 168h" + (d ? std::string() : ": " + d.error()));
      }
      step = d->milliseconds();
    } else if (action == "step") {
      return send_error(res, 400, "step", "request.required", "action step needs step (a duration such as \"10m\")");
    }
    std::optional<double> speed;
    if (body.contains("speed")) {
      const auto& s = body["speed"];
      if (s.is_string() && s.get<std::string>() == "max") {
        speed = 0;
      } else if (s.is_number() && std::isfinite(s.get<double>()) && s.get<double>() > 0 && s.get<double>() <= 1e6) {
        speed = s.get<double>();
      } else {
        return send_error(res, 400, "speed", "request.out-of-range", "speed must be a number in (0, 1000000] or \"max\"");
      }
    }
    std::lock_guard lock(mu_);
    if (speed) speed_ = *speed;
    if (action == "pause") paused_ = true;
    if (action == "resume") paused_ = false;
    if (step) {
      paused_ = true;  // stepping is for a paused clock: it stays paused after the step
      advance_locked(platform_->now() + *step);
    }
    Json j = platform_->clock_json();
    j["paused"] = paused_;
    j["speed"] = speed_ <= 0 ? Json("max") : Json(speed_);
    send_json(res, j);
  }));

  // A scoped principal (viewer, group-admin) reads its own group's workloads and events:
  // the filter defaults to its group, and another group is 403.
  svr.Get("/api/v1/workloads", guard(gate, Need::Read, [this](const httplib::Request& req, httplib::Response& res, const auth::Principal& who) {
    auto f = parse_workload_filter(req.params);
    if (auto* e = std::get_if<QueryError>(&f)) return send_error(res, 400, e->field, e->rule, e->message);
    auto& filter = std::get<twin::live::WorkloadFilter>(f);
    if (const auto scope = scope_of(who)) {
      if (filter.business_group.empty()) filter.business_group = *scope;
      if (other_group(res, who, filter.business_group, "the workloads")) return;
    }
    std::lock_guard lock(mu_);
    send_json(res, platform_->workloads_json(filter));
  }));
  svr.Get(R"(/api/v1/workloads/([^/]+)/([^/]+))", guard(gate, Need::Read, [this](const httplib::Request& req, httplib::Response& res, const auth::Principal& who) {
    if (auto e = check_known(req.params, {})) return send_error(res, 400, e->field, e->rule, e->message);
    const std::string key = std::string(req.matches[1]) + "/" + std::string(req.matches[2]);
    std::lock_guard lock(mu_);
    auto j = platform_->workload_json(key);
    if (!j) return send_error(res, 404, "", "api.not-found", "no workload " + key.substr(0, 300));
    if (other_group(res, who, j->value("businessGroup", ""), "the details of a workload")) return;
    send_json(res, *j);
  }));
  svr.Get("/api/v1/events", guard(gate, Need::Read, [this](const httplib::Request& req, httplib::Response& res, const auth::Principal& who) {
    auto f = parse_event_filter(req.params);
    if (auto* e = std::get_if<QueryError>(&f)) return send_error(res, 400, e->field, e->rule, e->message);
    auto& filter = std::get<twin::live::EventFilter>(f);
    if (const auto scope = scope_of(who)) {
      if (filter.business_group.empty()) filter.business_group = *scope;
      if (other_group(res, who, filter.business_group, "the events")) return;
    }
    std::lock_guard lock(mu_);
    send_json(res, platform_->events_json(filter));
  }));
  auto paged = [this, gate](const char* path, Need need, Json (twin::live::Platform::*view)(const twin::live::Page&) const) {
    server_->Get(path, guard(gate, need, [this, view](const httplib::Request& req, httplib::Response& res, const auth::Principal& who) {
      if (auto e = check_known(req.params, {"after", "limit"})) return send_error(res, 400, e->field, e->rule, e->message);
      auto page = parse_page(req.params);
      if (auto* e = std::get_if<QueryError>(&page)) return send_error(res, 400, e->field, e->rule, e->message);
      std::lock_guard lock(mu_);
      Json j = ((*platform_).*view)(std::get<twin::live::Page>(page));
      if (const auto scope = scope_of(who)) scope_ledger(j, *scope);
      send_json(res, j);
    }));
  };
  // Governance in virtual time (twin/live/governance.hpp).
  svr.Get("/api/v1/governance/alerts", guard(gate, Need::Read, [this](const httplib::Request& req, httplib::Response& res, const auth::Principal& who) {
    if (auto e = check_known(req.params, {})) return send_error(res, 400, e->field, e->rule, e->message);
    std::lock_guard lock(mu_);
    const twin::live::TwinGovernance* g = platform_->governance();
    if (g == nullptr) return send_error(res, 404, "", "governance.off", "this platform runs without governance");
    Json j = g->alerts_json();
    if (const auto scope = scope_of(who)) scope_alerts(j, *scope);
    send_json(res, j);
  }));
  // A decision on a ReclaimCandidate (governance/reclaim_approval.hpp's rules): a
  // platform-admin, or a group-admin of the alert's group. Body {"decision": "approve" |
  // "reject", "reason": "...", "downgradeTo": "<WorkloadPriorityClass>"}. Journalled and
  // applied as an intervention (an approved workload is stopped after its checkpoint or
  // grace and deactivated; an approved downgrade keeps running at the class's priority);
  // audited with the caller.
  svr.Post(R"(/api/v1/governance/alerts/([^/]{1,253})/decision)", guard(gate, Need::Read, [this](const httplib::Request& req, httplib::Response& res, const auth::Principal& who) {
    const std::string uid = req.matches[1];
    const auto decision = read_decision(req, res, who);
    if (!decision) return;
    std::lock_guard lock(mu_);
    const twin::live::TwinGovernance* g = platform_->governance();
    if (g == nullptr) return send_error(res, 404, "", "governance.off", "this platform runs without governance");
    const auto alert = g->open_alerts().find(uid);
    // A scoped caller learns nothing of another group's alerts, not even that one is open.
    if (alert == g->open_alerts().end() ||
        (scope_of(who) && alert->second.evidence.business_group != *scope_of(who))) {
      return send_error(res, 404, "", "api.not-found", "no open low-utilisation alert for workload " + uid.substr(0, 253));
    }
    auto done = platform_->decide_reclaim(uid, decision->approve, decision->reason, "api:" + who.subject, decision->downgrade_to);
    if (!done) {
      if (done.error().rfind("not journalled", 0) == 0) return send_error(res, 503, "", "api.journal", done.error());
      return send_decision_error(res, done.error());
    }
    advance_locked(platform_->now());
    const auto after = g->open_alerts().find(uid);
    send_json(res, after != g->open_alerts().end() ? governance::to_json(after->second) : Json::object());
  }));
  enum class Report { Showback, Kpis, Leaderboard, Review };
  // The parameters each report takes are checked by its route (parse_governance_query).
  auto report = [this](httplib::Response& res, Report kind, const QueryResult<GovernanceQuery>& parsed,
                       const auth::Principal& who) {
    if (const auto* e = std::get_if<QueryError>(&parsed)) return send_error(res, 400, e->field, e->rule, e->message);
    const GovernanceQuery& q = std::get<GovernanceQuery>(parsed);
    // Below the group level a showback names people and workloads: costs access, cut to
    // the own group for a group-admin.
    if (kind == Report::Showback && q.level != governance::ShowbackLevel::Group && !allowed(who.role, Need::Costs)) {
      return send_error(res, 403, "level", "auth.forbidden",
                        "role " + std::string(auth::role_name(who.role)) + " may read the showback by group only: owner "
                        "and workload levels need costs access (" + roles_allowed(Need::Costs) + ")");
    }
    std::lock_guard lock(mu_);
    const twin::live::TwinGovernance* g = platform_->governance();
    if (g == nullptr) return send_error(res, 404, "", "governance.off", "this platform runs without governance");
    const auto last = g->last_minute_ms();
    const std::int64_t from = q.from_ms.value_or(platform_->unix_ms(0));
    // Only minutes that have passed: the sample at the last minute stands for a minute that
    // has only begun.
    const std::int64_t to = q.to_ms.value_or(last ? *last : platform_->unix_ms(0));
    auto period = governance::showback_period(from, to);
    if (!period) {
      return send_error(res, 400, q.to_ms ? "to" : "", "query.empty-period",
                        q.to_ms || q.from_ms ? period.error() : "no whole virtual minute has passed yet");
    }
    Json out = Json::object();
    out["from"] = format_rfc3339(Timestamp(std::chrono::milliseconds(period->from_ms)));
    out["to"] = format_rfc3339(Timestamp(std::chrono::milliseconds(period->to_ms)));
    if (kind == Report::Showback) {
      auto s = g->showback(*period);
      if (!s) return send_error(res, 500, "", "governance.internal", s.error());
      Json report_json = governance::to_json(*s, q.level);  // items() of a temporary would dangle
      if (const auto scope = scope_of(who); scope && q.level != governance::ShowbackLevel::Group) {
        scope_showback(report_json, *scope);
      }
      for (auto& [k, v] : report_json.items()) out[k] = std::move(v);
    } else if (kind == Report::Kpis) {
      auto k = g->kpis(*period);
      if (!k) return send_error(res, 500, "", "governance.internal", k.error());
      out["kpis"] = governance::to_json(*k);
    } else if (kind == Report::Review) {
      auto findings = g->review(*period);
      if (!findings) return send_error(res, 500, "", "governance.internal", findings.error());
      out["findings"] = governance::to_json(*findings);
    } else {
      auto b = g->leaderboard(*period, q.min_gpu_hours);
      if (!b) return send_error(res, 500, "", "governance.internal", b.error());
      out["minGpuHours"] = q.min_gpu_hours;
      out["leaderboard"] = governance::to_json(*b);
    }
    send_json(res, out);
  };
  svr.Get("/api/v1/governance/showback", guard(gate, Need::Read, [report](const httplib::Request& req, httplib::Response& res, const auth::Principal& who) {
    report(res, Report::Showback, parse_governance_query(req.params, {"from", "to", "level"}), who);
  }));
  svr.Get("/api/v1/governance/kpis", guard(gate, Need::Read, [report](const httplib::Request& req, httplib::Response& res, const auth::Principal& who) {
    report(res, Report::Kpis, parse_governance_query(req.params, {"from", "to"}), who);
  }));
  // The quota review names every group's findings: the platform's and FinOps' view.
  svr.Get("/api/v1/governance/review", guard(gate, Need::Audit, [report](const httplib::Request& req, httplib::Response& res, const auth::Principal& who) {
    report(res, Report::Review, parse_governance_query(req.params, {"from", "to"}), who);
  }));
  svr.Get("/api/v1/governance/leaderboard", guard(gate, Need::Read, [report](const httplib::Request& req, httplib::Response& res, const auth::Principal& who) {
    report(res, Report::Leaderboard, parse_governance_query(req.params, {"from", "to", "minGpuHours"}), who);
  }));

  svr.Get("/api/v1/gpus", guard(gate, Need::Read, [this](const httplib::Request& req, httplib::Response& res, const auth::Principal& who) {
    if (auto e = check_known(req.params, {"pool"})) return send_error(res, 400, e->field, e->rule, e->message);
    std::lock_guard lock(mu_);
    Json j = platform_->gpus_json(param(req.params, "pool"));
    if (const auto scope = scope_of(who)) scope_gpus(j, *scope);
    send_json(res, j);
  }));
  svr.Get(R"(/api/v1/gpus/([^/]+))", guard(gate, Need::Read, [this](const httplib::Request& req, httplib::Response& res, const auth::Principal& who) {
    if (auto e = check_known(req.params, {})) return send_error(res, 400, e->field, e->rule, e->message);
    const std::string uuid = req.matches[1];
    std::lock_guard lock(mu_);
    auto j = platform_->gpu_json(uuid);
    if (!j) return send_error(res, 404, "", "api.not-found", "no GPU " + uuid.substr(0, 64));
    if (const auto scope = scope_of(who)) scope_gpus(*j, *scope);
    send_json(res, *j);
  }));
  // The GPU's minutes and markers (twin/live/gpu_history.hpp): ?from=&to= RFC 3339, by
  // default the 6 hours up to the last minute recorded, at most 24 hours.
  // The range of a history request (from, to), or an error answered; called under mu_.
  auto history_range = [this](const httplib::Request& req, httplib::Response& res) -> std::optional<std::pair<std::int64_t, std::int64_t>> {
    const auto parsed = parse_governance_query(req.params, {"from", "to"});
    if (const auto* e = std::get_if<QueryError>(&parsed)) {
      send_error(res, 400, e->field, e->rule, e->message);
      return std::nullopt;
    }
    const GovernanceQuery& q = std::get<GovernanceQuery>(parsed);
    constexpr std::int64_t kHourMs = 3'600'000;
    const std::int64_t to = q.to_ms.value_or(std::max(platform_->gpu_history_last_ms(), platform_->unix_ms(0)));
    const std::int64_t from = q.from_ms.value_or(to - 6 * kHourMs);
    if (to <= from) {
      send_error(res, 400, "to", "query.empty-period", "to must be after from");
      return std::nullopt;
    }
    if (to - from > 24 * kHourMs) {
      send_error(res, 400, "to", "query.range-too-long", "from .. to may span at most 24 hours (the history kept)");
      return std::nullopt;
    }
    return std::pair{from, to};
  };
  svr.Get(R"(/api/v1/workloads/([^/]+)/([^/]+)/history)", guard(gate, Need::Read, [this, history_range](const httplib::Request& req, httplib::Response& res, const auth::Principal& who) {
    const std::string key = std::string(req.matches[1]) + "/" + std::string(req.matches[2]);
    std::lock_guard lock(mu_);
    const auto range = history_range(req, res);
    if (!range) return;
    auto j = platform_->workload_history_json(key, range->first, range->second);
    if (!j) return send_error(res, 404, "", "api.not-found", "no workload " + key.substr(0, 300));
    if (other_group(res, who, j->value("businessGroup", ""), "the history of a workload")) return;
    send_json(res, *j);
  }));
  // The histories of a named thing (twin/live/position_history.hpp, service_history.hpp):
  // `fetch` gives its JSON for the range or nullopt (404 naming `what`); `scope` cuts it for
  // a caller scoped to a group.
  using HistoryOf = std::optional<Json> (twin::live::Platform::*)(const std::string&, std::int64_t, std::int64_t) const;
  auto history_route = [this, &svr, gate, history_range](const char* pattern, HistoryOf fetch, std::string what,
                                                         void (*scope)(Json&, const std::string&)) {
    svr.Get(pattern, guard(gate, Need::Read, [this, history_range, fetch, what, scope](const httplib::Request& req, httplib::Response& res, const auth::Principal& who) {
      const std::string name = req.matches[1];
      std::lock_guard lock(mu_);
      const auto range = history_range(req, res);
      if (!range) return;
      auto j = (platform_.get()->*fetch)(name, range->first, range->second);
      if (!j) return send_error(res, 404, "", "api.not-found", "no " + what + " " + name.substr(0, 253));
      if (const auto group = scope_of(who); group && scope != nullptr) scope(*j, *group);
      send_json(res, *j);
    }));
  };
  // A business group's position per pool per minute: the groups' positions are open to every
  // role, as /api/v1/groups is; another group's workload events lose their name and text for
  // a scoped caller.
  history_route(R"(/api/v1/groups/([^/]{1,253})/history)", &twin::live::Platform::group_history_json, "business group",
                &scope_group_history);
  // A pool's devices and who held them per minute, open to every role; the markers are
  // pool-level (quota, lease, reclaim, XID) events.
  history_route(R"(/api/v1/pools/([^/]{1,253})/history)", &twin::live::Platform::pool_history_json, "pool", nullptr);
  // An inference service's replicas, TTFT p95 and tokens per minute, by its
  // InferenceScalingPolicy's name: services are open to every role, as /api/v1/services is.
  history_route(R"(/api/v1/services/([^/]{1,253})/history)", &twin::live::Platform::service_history_json,
                "InferenceScalingPolicy", nullptr);
  // What an LLM gateway reads to queue or shed load (docs/serving.md, "Capacity signals for
  // the gateway"): open to every role, as /api/v1/services is.
  svr.Get(R"(/api/v1/services/([^/]{1,253})/capacity)", guard(gate, Need::Read, [this](const httplib::Request& req, httplib::Response& res, const auth::Principal&) {
    if (auto e = check_known(req.params, {})) return send_error(res, 400, e->field, e->rule, e->message);
    const std::string policy = req.matches[1];
    std::lock_guard lock(mu_);
    auto j = platform_->service_capacity_json(policy);
    if (!j) {
      return send_error(res, 404, "", "api.not-found", "no inference service for InferenceScalingPolicy " + policy.substr(0, 253));
    }
    send_json(res, *j);
  }));
  svr.Get(R"(/api/v1/gpus/([^/]+)/history)", guard(gate, Need::Read, [this, history_range](const httplib::Request& req, httplib::Response& res, const auth::Principal& who) {
    const std::string uuid = req.matches[1];
    std::lock_guard lock(mu_);
    const auto range = history_range(req, res);
    if (!range) return;
    const auto [from, to] = *range;
    auto j = platform_->gpu_history_json(uuid, from, to);
    if (!j) return send_error(res, 404, "", "api.not-found", "no GPU " + uuid.substr(0, 64));
    if (const auto scope = scope_of(who)) scope_gpu_history(*j, *scope);
    send_json(res, *j);
  }));
  svr.Post(R"(/api/v1/gpus/([^/]+)/health)", guard(gate, Need::Operate, [this](const httplib::Request& req, httplib::Response& res, const auth::Principal& who) {
    const std::string uuid = req.matches[1];
    const auto body = nlohmann::json::parse(req.body, nullptr, false);
    if (body.is_discarded() || !body.is_object()) {
      return send_error(res, 400, "", "request.invalid-json", "the body must be a JSON object");
    }
    for (const auto& [key, value] : body.items()) {
      if (key != "healthy" && key != "xid" && key != "eccDoubleBit") {
        return send_error(res, 400, key, "request.unknown-field",
                          "unknown field \"" + key.substr(0, 64) + "\"; known: healthy, xid, eccDoubleBit");
      }
    }
    if (!body.contains("healthy") || !body["healthy"].is_boolean()) {
      return send_error(res, 400, "healthy", "request.required", "healthy (true or false) is required");
    }
    const bool healthy = body["healthy"].get<bool>();
    int xid = 0;
    if (body.contains("xid")) {
      if (!body["xid"].is_number_integer() || body["xid"].get<std::int64_t>() < 1 || body["xid"].get<std::int64_t>() > 1000) {
        return send_error(res, 400, "xid", "request.out-of-range", "xid must be an integer from 1 to 1000");
      }
      xid = static_cast<int>(body["xid"].get<std::int64_t>());
    }
    std::int64_t ecc = 0;
    if (body.contains("eccDoubleBit")) {
      if (!body["eccDoubleBit"].is_number_integer() || body["eccDoubleBit"].get<std::int64_t>() < 0 ||
          body["eccDoubleBit"].get<std::int64_t>() > 1'000'000 || healthy) {
        return send_error(res, 400, "eccDoubleBit", "request.out-of-range",
                          "eccDoubleBit must be an integer from 0 to 1000000, with healthy: false");
      }
      ecc = body["eccDoubleBit"].get<std::int64_t>();
    }
    if (!healthy && xid == 0) xid = ecc > 0 ? 48 : 79;  // "Double Bit ECC Error" / "GPU has fallen off the bus"
    std::lock_guard lock(mu_);
    if (!platform_->gpu_json(uuid)) return send_error(res, 404, "", "api.not-found", "no GPU " + uuid.substr(0, 64));
    auto done = platform_->set_gpu_health(uuid, healthy, xid, "api:" + who.subject, ecc);
    if (!done) {
      const bool journal = done.error().rfind("not journalled", 0) == 0;  // the store of interventions failed
      return send_error(res, journal ? 503 : 409, "", journal ? "api.journal" : "api.conflict", done.error());
    }
    advance_locked(platform_->now());  // the timeline and the clock file see the change
    send_json(res, *platform_->gpu_json(uuid));
  }));
  // Manual tidal freeze: pins the replicas of the TidalPolicy's services (`gpubank tidal
  // freeze|unfreeze`); body {"reason": "..."} optional; audited with the caller.
  svr.Post(R"(/api/v1/tidal/([^/]+)/(freeze|unfreeze))", guard(gate, Need::Operate, [this](const httplib::Request& req, httplib::Response& res, const auth::Principal& who) {
    const std::string policy = req.matches[1];
    const bool freeze = req.matches[2] == "freeze";
    std::string reason;
    if (!req.body.empty()) {
      const auto body = nlohmann::json::parse(req.body, nullptr, false);
      if (body.is_discarded() || !body.is_object()) {
        return send_error(res, 400, "", "request.invalid-json", "the body must be a JSON object");
      }
      for (const auto& [key, value] : body.items()) {
        if (key != "reason") {
          return send_error(res, 400, key, "request.unknown-field", "unknown field \"" + key.substr(0, 64) + "\"; known: reason");
        }
        if (!value.is_string() || value.get<std::string>().size() > 256) {
          return send_error(res, 400, "reason", "request.out-of-range", "reason must be a string of at most 256 bytes");
        }
        reason = value.get<std::string>();
      }
    }
    if (policy.size() > 253) return send_error(res, 400, "", "request.out-of-range", "the policy name is over 253 bytes");
    std::lock_guard lock(mu_);
    auto done = platform_->freeze_tidal(policy, freeze, "api:" + who.subject, reason.empty() ? "manual" : reason);
    if (!done) {
      const bool unknown = done.error().rfind("no TidalPolicy", 0) == 0;
      const bool journal = done.error().rfind("not journalled", 0) == 0;
      return send_error(res, unknown ? 404 : journal ? 503 : 409, "",
                        unknown ? "api.not-found" : journal ? "api.journal" : "api.conflict", done.error());
    }
    advance_locked(platform_->now());
    send_json(res, platform_->services_json());
  }));
  // Fault injection for a service: {"modelLoadFailures": n} makes the next n replicas to
  // finish loading fail to load their model; audited with the caller.
  svr.Post(R"(/api/v1/services/([^/]+)/faults)", guard(gate, Need::Operate, [this](const httplib::Request& req, httplib::Response& res, const auth::Principal& who) {
    const std::string policy = req.matches[1];
    const auto body = nlohmann::json::parse(req.body, nullptr, false);
    if (body.is_discarded() || !body.is_object()) {
      return send_error(res, 400, "", "request.invalid-json", "the body must be a JSON object");
    }
    for (const auto& [key, value] : body.items()) {
      if (key != "modelLoadFailures") {
        return send_error(res, 400, key, "request.unknown-field",
                          "unknown field \"" + key.substr(0, 64) + "\"; known: modelLoadFailures");
      }
    }
    if (!body.contains("modelLoadFailures") || !body["modelLoadFailures"].is_number_integer() ||
        body["modelLoadFailures"].get<std::int64_t>() < 1 || body["modelLoadFailures"].get<std::int64_t>() > 1000) {
      return send_error(res, 400, "modelLoadFailures", "request.out-of-range",
                        "modelLoadFailures must be an integer from 1 to 1000");
    }
    std::lock_guard lock(mu_);
    auto done = platform_->fail_model_loads(policy, static_cast<int>(body["modelLoadFailures"].get<std::int64_t>()),
                                            "api:" + who.subject);
    if (!done) {
      const bool unknown = done.error().rfind("no inference service", 0) == 0;
      const bool journal = done.error().rfind("not journalled", 0) == 0;
      return send_error(res, unknown ? 404 : journal ? 503 : 409, "",
                        unknown ? "api.not-found" : journal ? "api.journal" : "api.conflict", done.error());
    }
    advance_locked(platform_->now());
    send_json(res, platform_->services_json());
  }));
  // Reclaims, newest first: a scoped principal sees those its group started as lender or
  // whose victims include its workloads; another group's victims keep group, class and
  // times, not their names.
  svr.Get("/api/v1/reclaims", guard(gate, Need::Read, [this](const httplib::Request& req, httplib::Response& res, const auth::Principal& who) {
    if (auto e = check_known(req.params, {"limit"})) return send_error(res, 400, e->field, e->rule, e->message);
    std::int64_t limit = 100;
    if (auto e = read_int(req.params, "limit", 1, kMaxLimit, limit)) return send_error(res, 400, e->field, e->rule, e->message);
    Json all;
    {
      std::lock_guard lock(mu_);
      all = platform_->reclaims_json(static_cast<std::size_t>(scope_of(who) ? std::numeric_limits<std::int64_t>::max() : limit));
    }
    if (const auto scope = scope_of(who)) scope_reclaims(all, *scope, static_cast<std::size_t>(limit));
    send_json(res, Json{{"items", std::move(all)}});
  }));
  paged("/api/v1/ledger", Need::Read, &twin::live::Platform::ledger_json);
  paged("/api/v1/audit", Need::Audit, &twin::live::Platform::audit_json);
  install_session_routes(svr, options_.gate.get(), door_.get(), Json{{"kind", "twin"}});
  install_portal_routes(svr, options_.portal_dir);
  install_policy_routes();

  svr.set_error_handler([gate](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    if (res.status == 404) {
      // Which paths exist is no one's business before they sign in.
      if (!admit(gate, Need::Read, req, res, /*record=*/false)) return;
      send_error(res, 404, "", "api.not-found", "no such path: " + req.path.substr(0, 200));
    } else if (res.status == 413) {
      send_error(res, 413, "", "request.too-large", "the body is over " + std::to_string(body_limit(req.path)) + " bytes");
    }
  });
}

}  // namespace gpubank::api
